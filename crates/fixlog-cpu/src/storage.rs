//! The CPU backend's data: relations and indexes as stacks of sorted runs, batches as
//! lists of segments.
//!
//! Tuples are stored **row-major**: one `Vec<u32>` per run, `arity` values per row.
//! Whole-tuple operations (sort, dedup, merge, difference, compare) touch one contiguous
//! row, usually within one cache line; sorting moves rows as units; a join's inner
//! loop reads a range of consecutive rows.

use crate::hisa::HashTable;
use crate::rows;
use fixlog_exec::runs::{push_run, RunPolicy};
use fixlog_exec::{ExecError, ExecResult};
use fixlog_logical::Value;
use rayon::prelude::*;
use std::sync::Arc;

/// Each run of a relation or index is at least four times larger than the next (see
/// `fixlog_exec::runs`); host memory is not capped.
pub const RUNS: RunPolicy = RunPolicy::geometric(4);

/// A sorted, duplicate-free array of rows.
#[derive(Debug, Default)]
pub struct Run {
    pub(crate) data: Vec<Value>,
    pub(crate) len: usize,
}

impl Run {
    pub(crate) fn new(arity: usize, data: Vec<Value>) -> Run {
        let len = data.len().checked_div(arity).unwrap_or(0);
        Run { data, len }
    }

    /// The run holding the empty tuple (arity 0).
    pub(crate) fn unit() -> Run {
        Run {
            data: Vec::new(),
            len: 1,
        }
    }
}

/// A relation: disjoint sorted runs, largest first, shrinking geometrically, so adding
/// an iteration's delta costs O(|delta| log) instead of a rewrite of the relation.
#[derive(Debug, Clone)]
pub struct CpuRelation {
    pub(crate) arity: usize,
    /// Disjoint runs, largest first.
    pub(crate) runs: Vec<Arc<Run>>,
}

impl CpuRelation {
    pub fn empty(arity: usize) -> CpuRelation {
        CpuRelation {
            arity,
            runs: Vec::new(),
        }
    }
    pub fn len(&self) -> usize {
        self.runs.iter().map(|r| r.len).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Number of runs (for tests and statistics).
    pub fn run_count(&self) -> usize {
        self.runs.len()
    }
}

/// A piece of a batch.
#[derive(Debug, Default, Clone)]
pub struct Seg {
    pub(crate) data: Vec<Value>,
    pub(crate) rows: usize,
}

/// A batch: segments, one per unit of parallel work of the operator that produced it,
/// in a fixed order: no concatenation copy between operators, and the same segments
/// for any thread count (units are split at fixed row counts).
#[derive(Debug, Clone)]
pub struct CpuBatch {
    pub(crate) arity: usize,
    pub(crate) len: usize,
    pub(crate) segs: Vec<Seg>,
}

impl CpuBatch {
    pub(crate) fn from_segs(arity: usize, segs: Vec<Seg>) -> CpuBatch {
        let segs: Vec<Seg> = segs.into_iter().filter(|s| s.rows > 0).collect();
        let len = segs.iter().map(|s| s.rows).sum();
        CpuBatch { arity, len, segs }
    }
    /// A batch holding `rows` (row-major) as one segment; `len` tuples (needed for
    /// arity 0).
    pub fn from_rows(arity: usize, rows: Vec<Value>, len: usize) -> CpuBatch {
        CpuBatch::from_segs(
            arity,
            vec![Seg {
                data: rows,
                rows: len,
            }],
        )
    }
    /// All rows, row-major, in batch order.
    pub fn rows(&self) -> Vec<Value> {
        self.segs
            .iter()
            .flat_map(|s| s.data.iter().copied())
            .collect()
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn arity(&self) -> usize {
        self.arity
    }
    /// The first `rows` rows and the rest, in batch order. Whole segments move without
    /// copying; only a segment that straddles the cut is split.
    pub(crate) fn split_at(mut self, rows: usize) -> (CpuBatch, CpuBatch) {
        if rows >= self.len {
            let rest = CpuBatch::from_segs(self.arity, Vec::new());
            return (self, rest);
        }
        let mut head = Vec::new();
        let mut taken = 0;
        let mut segs = std::mem::take(&mut self.segs).into_iter();
        for seg in segs.by_ref() {
            if taken + seg.rows <= rows {
                taken += seg.rows;
                head.push(seg);
                if taken == rows {
                    break;
                }
            } else {
                let k = rows - taken;
                let mut data = seg.data;
                let tail = data.split_off(k * self.arity);
                head.push(Seg { data, rows: k });
                let rest_first = Seg {
                    data: tail,
                    rows: seg.rows - k,
                };
                let rest: Vec<Seg> = std::iter::once(rest_first).chain(segs).collect();
                return (
                    CpuBatch::from_segs(self.arity, head),
                    CpuBatch::from_segs(self.arity, rest),
                );
            }
        }
        (
            CpuBatch::from_segs(self.arity, head),
            CpuBatch::from_segs(self.arity, segs.collect()),
        )
    }
}

pub(crate) struct IndexRun {
    pub(crate) run: Arc<Run>,
    pub(crate) table: HashTable,
}

impl IndexRun {
    pub(crate) fn new(run: Arc<Run>, arity: usize, key_len: usize) -> IndexRun {
        let table = HashTable::build(&run.data, arity, run.len, key_len);
        IndexRun { run, table }
    }
}

/// An index: the relation's runs permuted into the index order, each with a hash table
/// from the key prefix to the exact range of rows with that key (HISA). Extending adds
/// the delta as a new run, so it is proportional to the delta; a join probes each run
/// (O(log n) runs). An index whose order is the identity shares the relation's runs.
pub struct CpuIndex {
    pub(crate) arity: usize,
    /// `order[p]`: the relation column stored at position `p` of a row.
    pub(crate) order: Vec<usize>,
    pub(crate) key_len: usize,
    pub(crate) identity: bool,
    pub(crate) runs: Vec<IndexRun>,
}

impl CpuIndex {
    #[inline]
    pub(crate) fn range(&self, r: &IndexRun, key: &[Value]) -> (usize, usize) {
        if self.key_len == 0 {
            (0, r.run.len)
        } else {
            r.table.lookup(&r.run.data, self.arity, key)
        }
    }
    pub fn run_count(&self) -> usize {
        self.runs.len()
    }
    pub fn len(&self) -> usize {
        self.runs.iter().map(|r| r.run.len).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A run too large for the CPU backend's 32-bit row counts is an error, not a wrap.
pub(crate) fn too_big(len: usize) -> ExecResult<()> {
    if len >= u32::MAX as usize {
        Err(ExecError::OutOfMemory(format!(
            "a run of {len} tuples exceeds the CPU backend's 2^32-1 limit"
        )))
    } else {
        Ok(())
    }
}

/// The union of two disjoint runs.
pub(crate) fn union_runs(arity: usize, a: &Run, b: &Run) -> ExecResult<Run> {
    if arity == 0 {
        return Ok(Run::unit());
    }
    let merged = Run::new(arity, rows::union_disjoint(arity, &a.data, &b.data));
    too_big(merged.len)?;
    Ok(merged)
}

/// Appends a run disjoint from `runs` and restores the geometric invariant.
pub(crate) fn add_run(arity: usize, runs: &mut Vec<Arc<Run>>, run: Arc<Run>) -> ExecResult<()> {
    push_run(
        runs,
        run,
        RUNS,
        |r| r.len,
        |below, top| Ok(Arc::new(union_runs(arity, &below, &top)?)),
    )
}

/// Appends an index run disjoint from `runs` and restores the geometric invariant.
pub(crate) fn add_index_run(index: &mut CpuIndex, run: Arc<Run>) -> ExecResult<()> {
    let (arity, key_len) = (index.arity, index.key_len);
    push_run(
        &mut index.runs,
        IndexRun::new(run, arity, key_len),
        RUNS,
        |r| r.run.len,
        |below, top| {
            let merged = union_runs(arity, &below.run, &top.run)?;
            Ok(IndexRun::new(Arc::new(merged), arity, key_len))
        },
    )
}

/// The relation as one run (merging its runs if it has several).
pub(crate) fn single_run(rel: &CpuRelation) -> Arc<Run> {
    match rel.runs.len() {
        0 => Arc::new(Run::default()),
        1 => rel.runs[0].clone(),
        _ => {
            if rel.arity == 0 {
                return Arc::new(Run::unit());
            }
            // Merge smallest first: each row is copied O(log runs) times at most.
            let mut acc: Vec<Value> = rel.runs[rel.runs.len() - 1].data.clone();
            for r in rel.runs[..rel.runs.len() - 1].iter().rev() {
                acc = rows::union_disjoint(rel.arity, &r.data, &acc);
            }
            Arc::new(Run::new(rel.arity, acc))
        }
    }
}

pub(crate) fn permute_rows(data: &[Value], arity: usize, order: &[usize]) -> Vec<Value> {
    let mut out = vec![0; data.len()];
    out.par_chunks_mut(arity * 4096)
        .zip(data.par_chunks(arity * 4096))
        .for_each(|(o, d)| {
            for (orow, drow) in o.chunks_exact_mut(arity).zip(d.chunks_exact(arity)) {
                for (p, &c) in order.iter().enumerate() {
                    orow[p] = drow[c];
                }
            }
        });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_every_row_in_order() {
        let segs = vec![
            Seg {
                data: vec![1, 2, 3],
                rows: 3,
            },
            Seg {
                data: vec![4, 5],
                rows: 2,
            },
            Seg {
                data: vec![6, 7, 8, 9],
                rows: 4,
            },
        ];
        for cut in 0..=10 {
            let b = CpuBatch::from_segs(1, segs.clone());
            let (h, t) = b.split_at(cut);
            assert_eq!(h.len(), cut.min(9));
            assert_eq!(t.len(), 9 - cut.min(9));
            let mut all = h.rows();
            all.extend(t.rows());
            assert_eq!(all, (1..=9).collect::<Vec<_>>());
        }
    }
}
