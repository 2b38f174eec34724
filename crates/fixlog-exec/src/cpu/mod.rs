//! The CPU backend: every operator of [`Backend`] on all cores with rayon.
//!
//! # Storage
//!
//! Tuples are stored **row-major**: one `Vec<u32>` per run, `arity` values per row.
//! - whole-tuple operations (sort, dedup, merge, difference, compare) touch one
//!   contiguous row, usually within one cache line, instead of `arity` scattered arrays;
//! - sorting moves rows as units (the radix scatter copies `arity` words per row);
//! - a join's inner loop reads a range of consecutive rows: one sequential stream.
//!
//! # Relations are small LSM trees
//!
//! A [`CpuRelation`] is a list of disjoint **runs** (sorted, duplicate-free row arrays
//! shared through `Arc`) whose sizes shrink geometrically (each run at least
//! [`GROWTH`] times the next). `merge(full, delta)` — once per iteration of every
//! recursive stratum — appends `delta − full` as a new run and merges only the small
//! runs at the tail, so an iteration costs O(|delta| log) instead of rewriting the whole
//! relation (transitive closure of SF.cedge: 80M tuples, 287 iterations). `difference`
//! gallops through the big runs; `relation_rows` merges the runs once, for output.
//!
//! # Indexes (HISA)
//!
//! A [`CpuIndex`] is the same structure with the rows permuted into the index order,
//! each run carrying a [`hisa::HashTable`] from the key prefix to the exact range of
//! rows with that key. `extend_index` adds the delta as a new run (compacting the tail
//! like the relation), so extending is proportional to the delta; a join probes each run
//! (O(log n) runs). An index whose order is the identity shares the relation's runs
//! instead of copying them.
//!
//! # Batches
//!
//! A [`CpuBatch`] is a list of segments, one per unit of parallel work of the operator
//! that produced it, in a fixed order: no concatenation copy between operators, and
//! the same segments for any thread count (units are split at fixed row counts).
//!
//! # Determinism
//!
//! Every parallel split depends on input sizes only, never on the number of threads,
//! and per-unit outputs are kept in unit order; sets are canonical anyway.

pub mod dedup;
pub mod eval;
pub mod hisa;
pub mod rows;

use crate::backend::{Backend, EvalContext, ExecError, ExecResult};
use eval::{compile_expr, CExpr, Pipeline, Src};
use fixlog_logical::value::{as_f32, as_i32, eval_binary, from_f32, from_i32, value_cmp};
use fixlog_logical::{AggFunc, BinOp, ColType, Value};
use fixlog_plan::{Cond, PExpr};
use hisa::HashTable;
use rayon::prelude::*;
use std::cell::RefCell;
use std::sync::{Arc, Weak};

/// Each run of a relation or index is at least this many times larger than the next.
pub const GROWTH: usize = 4;

/// A sorted, duplicate-free array of rows.
#[derive(Debug, Default)]
pub struct Run {
    data: Vec<Value>,
    len: usize,
}

impl Run {
    fn new(arity: usize, data: Vec<Value>) -> Run {
        let len = data.len().checked_div(arity).unwrap_or(0);
        Run { data, len }
    }
}

#[derive(Debug, Clone)]
pub struct CpuRelation {
    arity: usize,
    /// Disjoint runs, largest first.
    runs: Vec<Arc<Run>>,
    /// Set by `difference(_, b)`: `b`'s runs. These tuples are disjoint from any
    /// relation made of exactly those runs. `Weak` keeps the allocations (not the data)
    /// alive, so a pointer match can never be a reused address.
    disjoint_from: Vec<Weak<Run>>,
}

impl CpuRelation {
    pub fn len(&self) -> usize {
        self.runs.iter().map(|r| r.len).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn disjoint_from_runs_of(&self, other: &CpuRelation) -> bool {
        !other.runs.is_empty()
            && self.disjoint_from.len() == other.runs.len()
            && self
                .disjoint_from
                .iter()
                .zip(&other.runs)
                .all(|(w, r)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(r)))
    }

    /// Number of runs (for tests and statistics).
    pub fn run_count(&self) -> usize {
        self.runs.len()
    }
}

/// A piece of a batch.
#[derive(Debug, Default, Clone)]
pub struct Seg {
    data: Vec<Value>,
    rows: usize,
}

#[derive(Debug, Clone)]
pub struct CpuBatch {
    arity: usize,
    len: usize,
    segs: Vec<Seg>,
}

impl CpuBatch {
    fn from_segs(arity: usize, segs: Vec<Seg>) -> CpuBatch {
        let segs: Vec<Seg> = segs.into_iter().filter(|s| s.rows > 0).collect();
        let len = segs.iter().map(|s| s.rows).sum();
        CpuBatch { arity, len, segs }
    }
    /// A batch holding `rows` (row-major) as one segment.
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
    /// The first `rows` rows and the rest, in batch order. Whole segments move without
    /// copying; only a segment that straddles the cut is split.
    fn split_at(mut self, rows: usize) -> (CpuBatch, CpuBatch) {
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

struct IndexRun {
    run: Arc<Run>,
    table: HashTable,
}

impl IndexRun {
    fn new(run: Arc<Run>, arity: usize, key_len: usize) -> IndexRun {
        let table = HashTable::build(&run.data, arity, run.len, key_len);
        IndexRun { run, table }
    }
}

pub struct CpuIndex {
    arity: usize,
    /// `order[p]`: the relation column stored at position `p` of a row.
    order: Vec<usize>,
    /// `inv[c]`: the position of relation column `c` in a stored row.
    inv: Vec<usize>,
    key_len: usize,
    identity: bool,
    runs: Vec<IndexRun>,
}

impl CpuIndex {
    #[inline]
    fn range(&self, r: &IndexRun, key: &[Value]) -> (usize, usize) {
        if self.key_len == 0 {
            (0, r.run.len)
        } else {
            r.table.lookup(&r.run.data, self.arity, key)
        }
    }
    pub fn run_count(&self) -> usize {
        self.runs.len()
    }
}

/// The CPU backend. Stateless: call its methods inside the rayon pool that should run
/// them (`ThreadPool::install`).
#[derive(Debug, Default, Clone, Copy)]
pub struct CpuBackend;

impl CpuBackend {
    pub fn new() -> CpuBackend {
        CpuBackend
    }
}

// ---- helpers -----------------------------------------------------------------------------

fn too_big(len: usize) -> ExecResult<()> {
    if len >= u32::MAX as usize {
        Err(ExecError::OutOfMemory(format!(
            "a run of {len} tuples exceeds the CPU backend's 2^32-1 limit"
        )))
    } else {
        Ok(())
    }
}

/// Appends `run` and merges the tail while the geometric invariant is broken.
fn push_run(arity: usize, runs: &mut Vec<Arc<Run>>, run: Arc<Run>) {
    if run.len == 0 {
        return;
    }
    runs.push(run);
    while runs.len() >= 2 && runs[runs.len() - 2].len < GROWTH * runs[runs.len() - 1].len {
        let (Some(b), Some(a)) = (runs.pop(), runs.pop()) else {
            break;
        };
        let merged = if arity == 0 {
            Run {
                data: Vec::new(),
                len: 1,
            }
        } else {
            Run::new(arity, rows::union_disjoint(arity, &a.data, &b.data))
        };
        runs.push(Arc::new(merged));
    }
}

/// The relation as one run (merging its runs if it has several).
fn single_run(rel: &CpuRelation) -> Arc<Run> {
    match rel.runs.len() {
        0 => Arc::new(Run::default()),
        1 => rel.runs[0].clone(),
        _ => {
            if rel.arity == 0 {
                return Arc::new(Run {
                    data: Vec::new(),
                    len: 1,
                });
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

/// Units of parallel work over pieces of `(data, rows)`: `(piece, lo, hi)`. The unit
/// size depends on the total only, never on the thread count.
fn work_units(pieces: &[usize]) -> Vec<(usize, usize, usize)> {
    let total: usize = pieces.iter().sum();
    let chunk = (total / 512).clamp(16, 4096);
    let mut units = Vec::new();
    for (p, &n) in pieces.iter().enumerate() {
        let mut lo = 0;
        while lo < n {
            let hi = (lo + chunk).min(n);
            units.push((p, lo, hi));
            lo = hi;
        }
    }
    units
}

/// Runs `f` on every unit in parallel, each appending rows to its own segment, and
/// returns the segments in unit order.
fn map_units<F>(arity: usize, units: &[(usize, usize, usize)], f: F) -> CpuBatch
where
    F: Fn((usize, usize, usize), &mut Vec<Value>) -> usize + Sync,
{
    let segs: Vec<Seg> = units
        .par_iter()
        .map(|&u| {
            let mut data = Vec::new();
            let rows = f(u, &mut data);
            Seg { data, rows }
        })
        .collect();
    CpuBatch::from_segs(arity, segs)
}

fn permute_rows(data: &[Value], arity: usize, order: &[usize]) -> Vec<Value> {
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

/// The rows of an index run in relation column order would be needed only for output;
/// operators read them through `inv`.
fn key_sources(key: &[PExpr]) -> (Vec<CExpr>, Option<Vec<Src>>) {
    let compiled: Vec<CExpr> = key.iter().map(|e| compile_expr(e, &Src::In)).collect();
    let simple = compiled.iter().map(|e| e.as_src()).collect();
    (compiled, simple)
}

/// Evaluates the key of input row `r` into `buf`; false if an expression failed.
#[inline(always)]
fn eval_key(
    r: &[Value],
    compiled: &[CExpr],
    simple: &Option<Vec<Src>>,
    ctx: &EvalContext,
    buf: &mut [Value],
) -> bool {
    if let Some(srcs) = simple {
        for (k, s) in buf.iter_mut().zip(srcs) {
            *k = match *s {
                Src::In(c) => r[c],
                Src::Inner(_) => 0,
                Src::Const(v) => v,
            };
        }
        true
    } else {
        for (k, e) in buf.iter_mut().zip(compiled) {
            match e.eval(r, &[], ctx.symbols) {
                Some(v) => *k = v,
                None => return false,
            }
        }
        true
    }
}

fn check_key(key: &[PExpr], index: &CpuIndex) -> ExecResult<()> {
    if key.len() != index.key_len {
        return Err(ExecError::Backend(format!(
            "join key has {} expressions but the index's key has {} columns",
            key.len(),
            index.key_len
        )));
    }
    Ok(())
}

// ---- the backend -------------------------------------------------------------------------

/// The join loop: for each input row (in parallel over fixed units), every inner row
/// with an equal key is filtered and projected into the unit's output; `window` (one per
/// thread, reset per unit) decides whether each written row stays (see [`dedup`]).
#[allow(clippy::too_many_arguments)]
fn join_rows<W: dedup::RowWindow + 'static>(
    input: &CpuBatch,
    inner: &CpuIndex,
    key: &[PExpr],
    filters: &[Cond],
    project: &[PExpr],
    ctx: &EvalContext,
    window: &'static std::thread::LocalKey<RefCell<W>>,
) -> ExecResult<CpuBatch> {
    check_key(key, inner)?;
    let a = input.arity;
    let w = inner.arity;
    let inv = &inner.inv;
    let map = |c: usize| {
        if c < a {
            Src::In(c)
        } else {
            Src::Inner(inv.get(c - a).copied().unwrap_or(0))
        }
    };
    let pipe = Pipeline::new(filters, project, &map);
    let (kexprs, ksimple) = key_sources(key);
    let sizes: Vec<usize> = input.segs.iter().map(|s| s.rows).collect();
    let units = work_units(&sizes);
    let klen = inner.key_len;
    let ow = project.len();
    Ok(map_units(ow, &units, |(p, lo, hi), out| {
        window.with(|window| {
            let mut window = window.borrow_mut();
            window.reset();
            let data = &input.segs[p].data;
            let mut kbuf = vec![0; klen];
            let mut n = 0;
            for i in lo..hi {
                let r = &data[i * a..i * a + a];
                if !eval_key(r, &kexprs, &ksimple, ctx, &mut kbuf) {
                    continue;
                }
                for ir in &inner.runs {
                    let (s, e) = inner.range(ir, &kbuf);
                    let d = &ir.run.data;
                    for j in s..e {
                        let b = &d[j * w..j * w + w];
                        if pipe.emit(r, b, ctx.symbols, out) {
                            if window.keep(out, ow, n) {
                                n += 1;
                            } else {
                                out.truncate(n * ow);
                            }
                        }
                    }
                }
            }
            n
        })
    }))
}

impl Backend for CpuBackend {
    type Relation = CpuRelation;
    type Index = CpuIndex;
    type Batch = CpuBatch;

    fn name(&self) -> &'static str {
        "cpu"
    }

    /// `rows` in any order, duplicates allowed. For arity 0 the rows cannot say how many
    /// tuples there are: the result is the empty relation (use [`Backend::unit`] and
    /// [`Backend::sort_unique`] for the relation holding the empty tuple).
    fn relation_from_rows(&self, arity: usize, rows: Vec<Value>) -> ExecResult<CpuRelation> {
        if arity == 0 {
            return Ok(self.empty_relation(0));
        }
        if !rows.len().is_multiple_of(arity) {
            return Err(ExecError::Backend(format!(
                "{} values do not make rows of arity {arity}",
                rows.len()
            )));
        }
        let len = rows.len() / arity;
        self.sort_unique(CpuBatch::from_rows(arity, rows, len))
    }

    fn empty_relation(&self, arity: usize) -> CpuRelation {
        CpuRelation {
            arity,
            runs: Vec::new(),
            disjoint_from: Vec::new(),
        }
    }

    fn relation_rows(&self, rel: &CpuRelation) -> Vec<Value> {
        single_run(rel).data.clone()
    }

    fn relation_len(&self, rel: &CpuRelation) -> usize {
        rel.len()
    }

    fn relation_arity(&self, rel: &CpuRelation) -> usize {
        rel.arity
    }

    fn batch_len(&self, batch: &CpuBatch) -> usize {
        batch.len
    }

    fn batch_arity(&self, batch: &CpuBatch) -> usize {
        batch.arity
    }

    fn sort_unique(&self, batch: CpuBatch) -> ExecResult<CpuRelation> {
        let arity = batch.arity;
        let mut rel = self.empty_relation(arity);
        if batch.len == 0 {
            return Ok(rel);
        }
        if arity == 0 {
            rel.runs.push(Arc::new(Run {
                data: Vec::new(),
                len: 1,
            }));
            return Ok(rel);
        }
        let mut data = if batch.segs.len() == 1 {
            batch
                .segs
                .into_iter()
                .next()
                .map(|s| s.data)
                .unwrap_or_default()
        } else {
            rows::concat_parts(batch.segs.into_iter().map(|s| s.data).collect())
        };
        let len = rows::sort_unique(arity, &mut data);
        too_big(len)?;
        rel.runs.push(Arc::new(Run { data, len }));
        Ok(rel)
    }

    fn split_batch(&self, batch: CpuBatch, rows: usize) -> (CpuBatch, CpuBatch) {
        batch.split_at(rows)
    }

    fn concat(&self, arity: usize, batches: Vec<CpuBatch>) -> ExecResult<CpuBatch> {
        let mut segs = Vec::new();
        for b in batches {
            if b.arity != arity {
                return Err(ExecError::Backend(format!(
                    "concat of a batch of arity {} into arity {arity}",
                    b.arity
                )));
            }
            segs.extend(b.segs);
        }
        Ok(CpuBatch::from_segs(arity, segs))
    }

    fn merge(&self, a: &CpuRelation, b: &CpuRelation) -> ExecResult<CpuRelation> {
        let arity = a.arity;
        if b.is_empty() {
            return Ok(a.clone());
        }
        if a.is_empty() {
            return Ok(b.clone());
        }
        if arity == 0 {
            return Ok(a.clone());
        }
        // b − a, appended as a new run of a. Skipped when `b` came from
        // `difference(_, a)` (the semi-naive `merge(full, new − full)`).
        let b1 = single_run(b);
        let new_run = if b.disjoint_from_runs_of(a) {
            b1
        } else {
            let bs: Vec<&[Value]> = a.runs.iter().map(|r| &r.data[..]).collect();
            Arc::new(Run::new(arity, rows::difference_many(arity, &b1.data, &bs)))
        };
        let mut runs = a.runs.clone();
        push_run(arity, &mut runs, new_run);
        if let Some(r) = runs.first() {
            too_big(r.len)?;
        }
        Ok(CpuRelation {
            arity,
            runs,
            disjoint_from: Vec::new(),
        })
    }

    fn difference(&self, a: &CpuRelation, b: &CpuRelation) -> ExecResult<CpuRelation> {
        let arity = a.arity;
        if a.is_empty() || b.is_empty() {
            return Ok(a.clone());
        }
        if arity == 0 {
            return Ok(self.empty_relation(0));
        }
        let a1 = single_run(a);
        let bs: Vec<&[Value]> = b.runs.iter().map(|r| &r.data[..]).collect();
        let run = Arc::new(Run::new(arity, rows::difference_many(arity, &a1.data, &bs)));
        let mut rel = self.empty_relation(arity);
        push_run(arity, &mut rel.runs, run);
        rel.disjoint_from = b.runs.iter().map(Arc::downgrade).collect();
        Ok(rel)
    }

    fn build_index(
        &self,
        rel: &CpuRelation,
        order: &[usize],
        key_len: usize,
    ) -> ExecResult<CpuIndex> {
        let arity = rel.arity;
        let mut sorted_order = order.to_vec();
        sorted_order.sort_unstable();
        if sorted_order != (0..arity).collect::<Vec<_>>() || key_len > arity {
            return Err(ExecError::Backend(format!(
                "index order {order:?} (key {key_len}) is not a permutation of {arity} columns"
            )));
        }
        let mut inv = vec![0; arity];
        for (p, &c) in order.iter().enumerate() {
            inv[c] = p;
        }
        let identity = order.iter().enumerate().all(|(p, &c)| p == c);
        let mut index = CpuIndex {
            arity,
            order: order.to_vec(),
            inv,
            key_len,
            identity,
            runs: Vec::new(),
        };
        if identity || arity == 0 {
            index.runs = rel
                .runs
                .iter()
                .map(|r| IndexRun::new(r.clone(), arity, key_len))
                .collect();
        } else if !rel.is_empty() {
            let mut data: Vec<Value> = if rel.runs.len() == 1 {
                permute_rows(&rel.runs[0].data, arity, order)
            } else {
                let parts = rel
                    .runs
                    .par_iter()
                    .map(|r| permute_rows(&r.data, arity, order))
                    .collect();
                rows::concat_parts(parts)
            };
            rows::sort_distinct(arity, &mut data);
            let run = Arc::new(Run::new(arity, data));
            index.runs.push(IndexRun::new(run, arity, key_len));
        }
        Ok(index)
    }

    fn extend_index(&self, index: &mut CpuIndex, delta: &CpuRelation) -> ExecResult<()> {
        let arity = index.arity;
        if delta.arity != arity {
            return Err(ExecError::Backend(format!(
                "extending an index of arity {arity} with a relation of arity {}",
                delta.arity
            )));
        }
        if delta.is_empty() {
            return Ok(());
        }
        let new_runs: Vec<Arc<Run>> = if arity == 0 {
            if index.runs.is_empty() {
                vec![Arc::new(Run {
                    data: Vec::new(),
                    len: 1,
                })]
            } else {
                Vec::new()
            }
        } else if index.identity {
            delta.runs.clone()
        } else {
            let d = single_run(delta);
            let mut data = permute_rows(&d.data, arity, &index.order);
            rows::sort_distinct(arity, &mut data);
            vec![Arc::new(Run::new(arity, data))]
        };
        let key_len = index.key_len;
        for run in new_runs {
            index.runs.push(IndexRun::new(run, arity, key_len));
            while index.runs.len() >= 2 {
                let n = index.runs.len();
                if index.runs[n - 2].run.len >= GROWTH * index.runs[n - 1].run.len {
                    break;
                }
                let (Some(b), Some(a)) = (index.runs.pop(), index.runs.pop()) else {
                    break;
                };
                let merged = Run::new(arity, rows::union_disjoint(arity, &a.run.data, &b.run.data));
                too_big(merged.len)?;
                index
                    .runs
                    .push(IndexRun::new(Arc::new(merged), arity, key_len));
            }
        }
        Ok(())
    }

    fn index_len(&self, index: &CpuIndex) -> usize {
        index.runs.iter().map(|r| r.run.len).sum()
    }

    fn unit(&self) -> CpuBatch {
        CpuBatch::from_segs(
            0,
            vec![Seg {
                data: Vec::new(),
                rows: 1,
            }],
        )
    }

    fn scan(
        &self,
        rel: &CpuRelation,
        filters: &[Cond],
        project: &[PExpr],
        ctx: &EvalContext,
    ) -> ExecResult<CpuBatch> {
        let arity = rel.arity;
        let pipe = Pipeline::new(filters, project, &Src::In);
        let out_arity = project.len();
        if pipe.is_identity(arity) {
            let segs = rel
                .runs
                .iter()
                .map(|r| Seg {
                    data: r.data.clone(),
                    rows: r.len,
                })
                .collect();
            return Ok(CpuBatch::from_segs(arity, segs));
        }
        let sizes: Vec<usize> = rel.runs.iter().map(|r| r.len).collect();
        let units = work_units(&sizes);
        Ok(map_units(out_arity, &units, |(p, lo, hi), out| {
            let data = &rel.runs[p].data;
            let mut n = 0;
            for i in lo..hi {
                let r = &data[i * arity..i * arity + arity];
                n += pipe.emit(r, &[], ctx.symbols, out) as usize;
            }
            n
        }))
    }

    fn join(
        &self,
        input: &CpuBatch,
        inner: &CpuIndex,
        key: &[PExpr],
        filters: &[Cond],
        project: &[PExpr],
        ctx: &EvalContext,
    ) -> ExecResult<CpuBatch> {
        thread_local! {
            static KEEP_ALL: RefCell<dedup::KeepAll> = const { RefCell::new(dedup::KeepAll) };
        }
        join_rows(input, inner, key, filters, project, ctx, &KEEP_ALL)
    }

    fn join_distinct(
        &self,
        input: &CpuBatch,
        inner: &CpuIndex,
        key: &[PExpr],
        filters: &[Cond],
        project: &[PExpr],
        ctx: &EvalContext,
    ) -> ExecResult<CpuBatch> {
        thread_local! {
            static PACKED: RefCell<dedup::Probed<dedup::PackedWindow>> = RefCell::default();
            static WIDE: RefCell<dedup::Probed<dedup::WindowDedup>> = RefCell::default();
        }
        match project.len() {
            0 => self.join(input, inner, key, filters, project, ctx),
            1 | 2 => join_rows(input, inner, key, filters, project, ctx, &PACKED),
            _ => join_rows(input, inner, key, filters, project, ctx, &WIDE),
        }
    }

    fn antijoin(
        &self,
        input: CpuBatch,
        inner: &CpuIndex,
        key: &[PExpr],
        ctx: &EvalContext,
    ) -> ExecResult<CpuBatch> {
        check_key(key, inner)?;
        let a = input.arity;
        let (kexprs, ksimple) = key_sources(key);
        let sizes: Vec<usize> = input.segs.iter().map(|s| s.rows).collect();
        let units = work_units(&sizes);
        let klen = inner.key_len;
        Ok(map_units(a, &units, |(p, lo, hi), out| {
            let data = &input.segs[p].data;
            let mut kbuf = vec![0; klen];
            let mut n = 0;
            for i in lo..hi {
                let r = &data[i * a..i * a + a];
                // A key that cannot be computed matches nothing: the tuple is kept.
                let found = eval_key(r, &kexprs, &ksimple, ctx, &mut kbuf)
                    && inner.runs.iter().any(|ir| {
                        let (s, e) = inner.range(ir, &kbuf);
                        s < e
                    });
                if !found {
                    out.extend_from_slice(r);
                    n += 1;
                }
            }
            n
        }))
    }

    fn filter(
        &self,
        input: &CpuBatch,
        filters: &[Cond],
        project: &[PExpr],
        ctx: &EvalContext,
    ) -> ExecResult<CpuBatch> {
        let a = input.arity;
        let pipe = Pipeline::new(filters, project, &Src::In);
        if pipe.is_identity(a) {
            return Ok(input.clone());
        }
        let sizes: Vec<usize> = input.segs.iter().map(|s| s.rows).collect();
        let units = work_units(&sizes);
        Ok(map_units(project.len(), &units, |(p, lo, hi), out| {
            let data = &input.segs[p].data;
            let mut n = 0;
            for i in lo..hi {
                let r = &data[i * a..i * a + a];
                n += pipe.emit(r, &[], ctx.symbols, out) as usize;
            }
            n
        }))
    }

    fn with_row_numbers(&self, input: &CpuBatch) -> ExecResult<CpuBatch> {
        let a = input.arity;
        if input.len > u32::MAX as usize {
            return Err(ExecError::OutOfMemory(
                "more than 2^32 tuples to number".to_string(),
            ));
        }
        let mut bases = Vec::with_capacity(input.segs.len());
        let mut acc = 0usize;
        for s in &input.segs {
            bases.push(acc);
            acc += s.rows;
        }
        let segs: Vec<Seg> = input
            .segs
            .par_iter()
            .zip(bases.par_iter())
            .map(|(s, &base)| {
                let mut data = Vec::with_capacity(s.rows * (a + 1));
                for i in 0..s.rows {
                    data.extend_from_slice(&s.data[i * a..i * a + a]);
                    data.push((base + i) as Value);
                }
                Seg { data, rows: s.rows }
            })
            .collect();
        Ok(CpuBatch::from_segs(a + 1, segs))
    }

    fn aggregate(
        &self,
        input: &CpuBatch,
        groups: CpuBatch,
        func: AggFunc,
        ty: ColType,
        filters: &[Cond],
        project: &[PExpr],
        ctx: &EvalContext,
    ) -> ExecResult<CpuBatch> {
        let a = input.arity;
        let n = input.len;
        let ga = groups.arity;
        let need = if func == AggFunc::Count { 1 } else { 2 };
        if ga < need {
            return Err(ExecError::Backend(format!(
                "aggregate groups of arity {ga}; {func:?} needs {need}"
            )));
        }
        // Accumulate sequentially in batch order (floating-point sums are then the same
        // for any thread count).
        let mut acc: Vec<Value> = vec![0; n];
        let mut count: Vec<u64> = vec![0; n];
        let mut fsum: Vec<f64> = if func == AggFunc::Mean {
            vec![0.0; n]
        } else {
            Vec::new()
        };
        let strings = if ty == ColType::Symbol && matches!(func, AggFunc::Min | AggFunc::Max) {
            ctx.symbols.snapshot()
        } else {
            Vec::new()
        };
        for s in &groups.segs {
            for g in s.data.chunks_exact(ga) {
                let i = g[0] as usize;
                if i >= n {
                    return Err(ExecError::Backend(format!(
                        "aggregate group row number {i} out of range ({n} input tuples)"
                    )));
                }
                let c = count[i];
                count[i] += 1;
                if need == 1 {
                    continue;
                }
                let v = g[1];
                match func {
                    AggFunc::Count => {}
                    AggFunc::Sum => {
                        acc[i] = eval_binary(BinOp::Add, ty, acc[i], v).unwrap_or(acc[i]);
                    }
                    AggFunc::Min => {
                        if c == 0 || value_cmp(ty, v, acc[i], &strings).is_lt() {
                            acc[i] = v;
                        }
                    }
                    AggFunc::Max => {
                        if c == 0 || value_cmp(ty, v, acc[i], &strings).is_gt() {
                            acc[i] = v;
                        }
                    }
                    AggFunc::Mean => {
                        fsum[i] += match ty {
                            ColType::Number => as_i32(v) as f64,
                            ColType::Float => as_f32(v) as f64,
                            ColType::Unsigned | ColType::Symbol => v as f64,
                        };
                    }
                }
            }
        }
        let result = |i: usize| -> Option<Value> {
            match func {
                AggFunc::Count => Some(from_i32(count[i] as i32)),
                AggFunc::Sum => Some(if count[i] == 0 {
                    if ty == ColType::Float {
                        from_f32(0.0)
                    } else {
                        0
                    }
                } else {
                    acc[i]
                }),
                AggFunc::Min | AggFunc::Max => (count[i] > 0).then_some(acc[i]),
                AggFunc::Mean => {
                    (count[i] > 0).then(|| from_f32((fsum[i] / count[i] as f64) as f32))
                }
            }
        };
        let map = |c: usize| if c < a { Src::In(c) } else { Src::Inner(0) };
        let pipe = Pipeline::new(filters, project, &map);
        let mut bases = Vec::with_capacity(input.segs.len());
        let mut base = 0usize;
        for s in &input.segs {
            bases.push(base);
            base += s.rows;
        }
        let sizes: Vec<usize> = input.segs.iter().map(|s| s.rows).collect();
        let units = work_units(&sizes);
        Ok(map_units(project.len(), &units, |(p, lo, hi), out| {
            let data = &input.segs[p].data;
            let mut k = 0;
            for i in lo..hi {
                let Some(v) = result(bases[p] + i) else {
                    continue;
                };
                let r = &data[i * a..i * a + a];
                k += pipe.emit(r, &[v], ctx.symbols, out) as usize;
            }
            k
        }))
    }
}

#[cfg(test)]
mod split_tests {
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
