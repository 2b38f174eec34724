//! The worst-case-optimal join step ([`fixlog_exec::OpSpec::Intersect`]) on the CPU:
//! leapfrog intersection over HISA ranges.
//!
//! For each input row, every atom's key is looked up in every run of the atom's index
//! (an index is a few sorted runs, see [`crate::storage::CpuIndex`]): each run gives the
//! exact range of rows with that key, whose next column (the new variable's) is sorted
//! — the next level of the trie, with repeats when the atom has further columns. An
//! atom's candidate values are the union of its runs' ranges; the operator emits the
//! values common to every atom, found by leapfrogging (Veldhuizen's leapfrog triejoin):
//! keep a target, move every atom to its first value `>= target` (each run's cursor by
//! galloping — exponential then binary search — so a skip over `d` rows costs
//! `O(log d)`), raise the target to any larger value found, and emit it when all atoms
//! agree. An atom's value is the least of its runs' current values, so runs need no
//! merging and the result is exact: a value is emitted iff some run of every atom has
//! it. The work per input row is about the smallest atom's range times the logarithm
//! of the gaps, never the size of a pairwise intermediate result.
//!
//! Rows are processed in parallel over fixed units of the input and the output keeps
//! unit order (deterministic for every thread count, as the joins); each emitted row
//! makes room in its segment through the memory budget first.

use crate::code::{CpuCode, IntersectCode};
use crate::dedup::RowWindow;
use crate::storage::{self, CpuBatch, CpuIndex};
use crate::{map_units, room, work_units};
use fixlog_exec::{EvalContext, ExecResult};
use fixlog_logical::Value;
use std::cell::RefCell;
use std::sync::Arc;

/// A cursor over the sorted values of one column within one run's key range.
struct RunCursor<'d> {
    data: &'d [Value],
    /// Row width and the column read (the one after the key, in stored order).
    width: usize,
    col: usize,
    pos: usize,
    end: usize,
}

impl RunCursor<'_> {
    #[inline(always)]
    fn value_at(&self, row: usize) -> Value {
        self.data[row * self.width + self.col]
    }

    /// The current value, `None` once exhausted.
    #[inline(always)]
    fn current(&self) -> Option<Value> {
        (self.pos < self.end).then(|| self.value_at(self.pos))
    }

    /// Moves to the first row whose value is `>= target` (galloping).
    #[inline]
    fn seek(&mut self, target: Value) {
        if self.pos >= self.end || self.value_at(self.pos) >= target {
            return;
        }
        // Invariant: value(lo) < target; find the first row in (lo, end) that is >=.
        let mut lo = self.pos;
        let mut step = 1;
        let mut hi = loop {
            let probe = lo + step;
            if probe >= self.end {
                break self.end;
            }
            if self.value_at(probe) >= target {
                break probe;
            }
            lo = probe;
            step *= 2;
        };
        // Binary search in (lo, hi]: value(lo) < target, hi is >= or the end.
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.value_at(mid) >= target {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        self.pos = hi;
    }
}

/// Moves every run of one atom (`runs`) to its first value `>= target`; returns the
/// least of them (the atom's candidate), `None` if every run is exhausted.
#[inline]
fn seek_atom(runs: &mut [RunCursor], target: Value) -> Option<Value> {
    let mut least: Option<Value> = None;
    for r in runs {
        r.seek(target);
        if let Some(v) = r.current() {
            least = Some(least.map_or(v, |l| l.min(v)));
        }
    }
    least
}

/// Calls `emit` with every value common to all atoms, in increasing order. `runs` holds
/// the atoms' run cursors; atom `i` owns `runs[atoms[i].0..atoms[i].1]` (non-empty).
#[inline]
fn leapfrog(
    runs: &mut [RunCursor],
    atoms: &[(usize, usize)],
    mut emit: impl FnMut(Value) -> ExecResult<()>,
) -> ExecResult<()> {
    if atoms.is_empty() {
        return Ok(());
    }
    let mut target: Value = 0;
    loop {
        let mut agreed = true;
        for &(lo, hi) in atoms {
            match seek_atom(&mut runs[lo..hi], target) {
                None => return Ok(()),
                Some(v) if v > target => {
                    target = v;
                    agreed = false;
                }
                Some(_) => {}
            }
        }
        if agreed {
            emit(target)?;
            match target.checked_add(1) {
                Some(next) => target = next,
                None => return Ok(()),
            }
        }
    }
}

/// The intersection loop over every input row; `window` as in the join.
pub(crate) fn intersect_rows<W: RowWindow + 'static>(
    input: &CpuBatch,
    indexes: &[&CpuIndex],
    code: &IntersectCode,
    ctx: &EvalContext,
    window: &'static std::thread::LocalKey<RefCell<W>>,
) -> ExecResult<CpuBatch> {
    let a = input.arity;
    let ow = code.out_arity;
    let sizes: Vec<usize> = input.segs.iter().map(|s| s.rows).collect();
    let units = work_units(&sizes);
    // Every run's rows, held for the whole operator (see `spill`).
    let held: Vec<Vec<Arc<storage::RunData>>> = indexes
        .iter()
        .map(|ix| ix.runs.iter().map(|ir| ir.run.data()).collect())
        .collect();
    map_units(ow, &units, |(p, lo, hi), out, charge| {
        window.with(|window| {
            let mut window = window.borrow_mut();
            window.reset();
            let data = &input.segs[p].data;
            let mut keys: Vec<Vec<Value>> =
                code.atoms.iter().map(|at| vec![0; at.key.len()]).collect();
            let mut n = 0;
            // Reused for every row: the run cursors of all atoms, each atom's share of
            // them and its number of candidate rows.
            let mut cursors: Vec<RunCursor> = Vec::new();
            let mut atoms: Vec<(usize, usize, usize)> = Vec::with_capacity(indexes.len());
            let mut spans: Vec<(usize, usize)> = Vec::with_capacity(indexes.len());
            'rows: for i in lo..hi {
                let r = &data[i * a..i * a + a];
                cursors.clear();
                atoms.clear();
                for (((at, ix), runs), kbuf) in
                    code.atoms.iter().zip(indexes).zip(&held).zip(&mut keys)
                {
                    if !at.key.eval(r, ctx, kbuf) {
                        continue 'rows;
                    }
                    let first = cursors.len();
                    let mut rows = 0;
                    for (ir, d) in ix.runs.iter().zip(runs) {
                        let d: &[Value] = d;
                        let (s, e) = ix.range(ir, d, kbuf);
                        if s < e {
                            rows += e - s;
                            cursors.push(RunCursor {
                                data: d,
                                width: ix.arity,
                                col: at.key_len,
                                pos: s,
                                end: e,
                            });
                        }
                    }
                    if rows == 0 {
                        continue 'rows;
                    }
                    atoms.push((rows, first, cursors.len()));
                }
                // The atom with the fewest candidates leads.
                atoms.sort_unstable();
                spans.clear();
                spans.extend(atoms.iter().map(|&(_, lo, hi)| (lo, hi)));
                leapfrog(&mut cursors, &spans, |v| {
                    room(out, charge, ow)?;
                    if code.pipe.emit(r, &[v], ctx.symbols, out) {
                        if window.keep(out, ow, n) {
                            n += 1;
                        } else {
                            out.truncate(n * ow);
                        }
                    }
                    Ok(())
                })?;
            }
            Ok(n)
        })
    })
}

/// Checks an intersection's inputs against its code.
pub(crate) fn check_intersect(
    input: &CpuBatch,
    indexes: &[&CpuIndex],
    code: &CpuCode,
) -> ExecResult<()> {
    let CpuCode::Intersect(ic) = code else {
        return Err(crate::code::wrong_code("intersection", code));
    };
    crate::check_arity("an intersection", ic.input_arity, input.arity)?;
    if indexes.len() != ic.atoms.len() {
        return Err(fixlog_exec::internal(
            "an intersection given a different number of indexes than atoms",
        ));
    }
    for (ix, at) in indexes.iter().zip(&ic.atoms) {
        crate::check_order(ix, &at.order)?;
        if ix.key_len != at.key_len || at.key_len >= ix.arity {
            return Err(fixlog_exec::internal(
                "an intersection given an index with another key",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(values: &[Value]) -> RunCursor<'_> {
        RunCursor {
            data: values,
            width: 1,
            col: 0,
            pos: 0,
            end: values.len(),
        }
    }

    #[test]
    fn leapfrog_intersects_unions_of_runs() {
        let a1 = [1, 3, 3, 5, 7, 9, u32::MAX];
        let a2 = [2, 4, 9];
        let b1 = [0, 3, 4, 4, 8, 9, 10, u32::MAX];
        let c1 = [3, 4, 5, 9, u32::MAX];
        let mut runs = vec![cursor(&a1), cursor(&a2), cursor(&b1), cursor(&c1)];
        let mut got = Vec::new();
        leapfrog(&mut runs, &[(0, 2), (2, 3), (3, 4)], |v| {
            got.push(v);
            Ok(())
        })
        .unwrap();
        assert_eq!(got, vec![3, 4, 9, u32::MAX]);
    }

    #[test]
    fn galloping_seek_finds_the_first_value_not_below() {
        let values: Vec<Value> = (0..1000).map(|i| i * 2).collect();
        for target in [0, 1, 2, 3, 500, 1997, 1998, 1999, 5000] {
            let mut c = cursor(&values);
            c.seek(target);
            let expected = values.iter().position(|&v| v >= target).unwrap_or(1000);
            assert_eq!(c.pos, expected, "target {target}");
        }
    }
}
