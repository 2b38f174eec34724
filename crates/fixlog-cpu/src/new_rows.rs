//! A join absorbed into a relation that gives back only its new rows, deduplicated per
//! group in a bitmap as it runs (the CPU side of `Backend::join_absorbed`; the CUDA
//! backend's `P_jnew` does the same in shared memory).
//!
//! The last join of a recursive rule mostly derives what the relation holds already
//! (94% of same-generation's rows), and writing those rows out, sorting them and
//! subtracting the relation is most of its time. Where the join writes rows `(x, y)`
//! whose `x` is an input column ([`fixlog_exec::NewRowsShape`]) and the input comes
//! grouped by `x` (a sorted delta or gathered set), a thread takes whole groups: it
//! marks the `y`s the relation holds for `x` in a bitmap over the second column's span
//! (a binary search in each of the relation's runs), then keeps a candidate only where
//! its `y`'s bit was clear, and clears the words it set before the next group. What it
//! writes is new to the relation and written once per group; the units' rows are then
//! sorted and deduplicated as one (an input of several segments may repeat a group).
//! It applies where the second column spans at most [`SPAN_MAX`] values.

use crate::code::KeyCode;
use crate::eval::{Pipeline, Src};
use crate::storage::{self, CpuBatch, CpuIndex, CpuRelation, Seg};
use crate::{budget::Charge, room};
use fixlog_exec::{EvalContext, ExecResult, SecondColumn};
use fixlog_logical::Value;
use rayon::prelude::*;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Widest span of second-column values a thread's bitmap covers (2 MiB of bits).
pub(crate) const SPAN_MAX: u64 = 1 << 24;

/// Fewest input rows per group, on average, for the bitmap to run (and four per run of
/// the relation, whose rows of each group are found by binary search): transitive
/// closure of luxembourg_osm, one or two rows per group, took 8.0 s this way against
/// 3.2 s the ordinary way (2 threads); with the gate, its joins run the ordinary way.
const ROWS_PER_GROUP_MIN: usize = 8;

/// A join of [`fixlog_exec::NewRowsShape`], prepared.
#[derive(Debug)]
pub struct NewRowsJoin {
    /// The input column that is the output's first.
    pub(crate) group: usize,
    pub(crate) second: SecondColumn,
    /// The span of the second column over an index run (keyed by the run's address and
    /// length), computed once per run. A stale entry is harmless: a value outside the
    /// span makes the join run the ordinary way.
    pub(crate) spans: Mutex<Vec<(usize, usize, Value, Value)>>,
}

thread_local! {
    /// A thread's bitmap words and the words it set for the group at hand.
    static BITS: RefCell<(Vec<u64>, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// The pieces of one join, for [`join_new_rows`].
pub(crate) struct JoinParts<'a> {
    pub(crate) key: &'a KeyCode,
    pub(crate) pipe: &'a Pipeline,
    pub(crate) nr: &'a NewRowsJoin,
}

/// The join of `input` with `inner` absorbed into `old`: its new rows (unsorted, a row
/// possibly more than once, none of `old`'s) and the candidates that passed the
/// filters, or `None` where the bitmap does not apply and the caller joins the
/// ordinary way.
pub(crate) fn join_new_rows(
    input: &CpuBatch,
    inner: &CpuIndex,
    parts: JoinParts<'_>,
    old: &CpuRelation,
    ctx: &EvalContext,
) -> ExecResult<Option<(CpuBatch, usize)>> {
    let JoinParts { key, pipe, nr } = parts;
    let a = input.arity;
    if old.arity != 2 || nr.group >= a || input.len == 0 {
        return Ok(None);
    }
    let Some((lo, hi)) = second_span(input, inner, nr) else {
        // No input or no inner row: nothing to join.
        return Ok(Some((CpuBatch::from_segs(2, Vec::new()), 0)));
    };
    let span = hi as u64 - lo as u64 + 1;
    if span > SPAN_MAX {
        return Ok(None);
    }
    let words = span.div_ceil(64) as usize;
    // Groups of a few rows (sparse graphs) pay a binary search in each of `old`'s runs
    // for little: the ordinary way then.
    let groups = group_count(input, nr.group);
    if input.len < groups.saturating_mul(ROWS_PER_GROUP_MIN.max(4 * old.runs.len())) {
        return Ok(None);
    }
    let units = group_units(input, nr.group);
    let w = inner.arity;
    let klen = key.len();
    let held: Vec<Arc<storage::RunData>> = inner.runs.iter().map(|ir| ir.run.data()).collect();
    let olds: Vec<Arc<storage::RunData>> = old.runs.iter().map(|r| r.data()).collect();
    // The output `(a[g], b[p])` without filters: read straight from the rows.
    let plain = match (pipe.filters.is_empty(), pipe.simple.as_deref(), nr.second) {
        (true, Some([Src::In(c), Src::Inner(p)]), SecondColumn::Inner(q))
            if *c == nr.group && *p == q =>
        {
            Some(q)
        }
        _ => None,
    };
    let passed = AtomicUsize::new(0);
    let outside = AtomicBool::new(false);
    let segs: Vec<Seg> = units
        .par_iter()
        .map(|&(p, lo_row, hi_row)| {
            BITS.with(|bits| {
                let mut bits = bits.borrow_mut();
                let (bitmap, set) = &mut *bits;
                if bitmap.len() < words {
                    bitmap.resize(words, 0);
                }
                let data = &input.segs[p].data;
                let mut out = Vec::new();
                let mut charge = Charge::none();
                let (mut n, mut made) = (0usize, 0usize);
                let mut kbuf = vec![0; klen];
                let mut i = lo_row;
                while i < hi_row {
                    let x = data[i * a + nr.group];
                    let mut end = i + 1;
                    while end < hi_row && data[end * a + nr.group] == x {
                        end += 1;
                    }
                    // What `old` holds for x.
                    for d in &olds {
                        let d: &[Value] = d;
                        let rows = d.len() / 2;
                        let s = partition_point(rows, |r| d[r * 2] < x);
                        let e = s + partition_point(rows - s, |r| d[(s + r) * 2] <= x);
                        for r in s..e {
                            let v = (d[r * 2 + 1].wrapping_sub(lo)) as u64;
                            if v < span {
                                mark(bitmap, set, v);
                            }
                        }
                    }
                    for row in i..end {
                        let r = &data[row * a..row * a + a];
                        if !key.eval(r, ctx, &mut kbuf) {
                            continue;
                        }
                        for (ir, d) in inner.runs.iter().zip(&held) {
                            let d: &[Value] = d;
                            let (s, e) = inner.range(ir, d, &kbuf);
                            if let Some(p) = plain {
                                // (x, b[p]) for every inner row: no filter, nothing to
                                // evaluate.
                                made += e - s;
                                for j in s..e {
                                    let y = d[j * w + p];
                                    let v = (y.wrapping_sub(lo)) as u64;
                                    if v >= span {
                                        outside.store(true, Ordering::Relaxed);
                                    } else if mark(bitmap, set, v) {
                                        room(&mut out, &mut charge, 2)?;
                                        out.extend_from_slice(&[x, y]);
                                        n += 1;
                                    }
                                }
                                continue;
                            }
                            for j in s..e {
                                room(&mut out, &mut charge, 2)?;
                                if !pipe.emit(r, &d[j * w..j * w + w], ctx.symbols, &mut out) {
                                    continue;
                                }
                                made += 1;
                                let v = (out[n * 2 + 1].wrapping_sub(lo)) as u64;
                                if v >= span {
                                    outside.store(true, Ordering::Relaxed);
                                    out.truncate(n * 2);
                                } else if mark(bitmap, set, v) {
                                    n += 1;
                                } else {
                                    out.truncate(n * 2);
                                }
                            }
                        }
                    }
                    for &k in set.iter() {
                        bitmap[k as usize] = 0;
                    }
                    set.clear();
                    i = end;
                }
                passed.fetch_add(made, Ordering::Relaxed);
                Ok(Seg::new(out, n, charge))
            })
        })
        .collect::<ExecResult<Vec<Seg>>>()?;
    if outside.load(Ordering::Relaxed) {
        return Ok(None);
    }
    Ok(Some((
        CpuBatch::from_segs(2, segs),
        passed.load(Ordering::Relaxed),
    )))
}

/// Sets bit `v`; whether it was clear. Notes a word that was all clear in `set`.
#[inline(always)]
fn mark(bitmap: &mut [u64], set: &mut Vec<u32>, v: u64) -> bool {
    let (k, bit) = ((v / 64) as usize, 1u64 << (v % 64));
    let word = bitmap[k];
    if word & bit != 0 {
        return false;
    }
    if word == 0 {
        set.push(k as u32);
    }
    bitmap[k] = word | bit;
    true
}

/// The first of `0..n` for which `pred` is false (`pred` true then false).
#[inline]
fn partition_point(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut l, mut h) = (0, n);
    while l < h {
        let m = (l + h) / 2;
        if pred(m) {
            l = m + 1;
        } else {
            h = m;
        }
    }
    l
}

/// How many times the group column changes value along the input (segment starts
/// counted): the groups, where the input is sorted on it.
fn group_count(input: &CpuBatch, g: usize) -> usize {
    let a = input.arity;
    input
        .segs
        .iter()
        .map(|seg| {
            let data = &seg.data;
            (0..seg.rows)
                .into_par_iter()
                .with_min_len(1 << 14)
                .filter(|&i| i == 0 || data[i * a + g] != data[(i - 1) * a + g])
                .count()
        })
        .sum()
}

/// Units of parallel work `(segment, lo, hi)` that end where the group column changes:
/// at least `total / 512` rows each (and 64), so a group is one thread's whole unless
/// it spans segments. They depend on the input only, never on the thread count.
fn group_units(input: &CpuBatch, g: usize) -> Vec<(usize, usize, usize)> {
    let a = input.arity;
    let want = (input.len / 512).max(64);
    let mut units = Vec::new();
    for (p, seg) in input.segs.iter().enumerate() {
        let data = &seg.data;
        let mut lo = 0;
        while lo < seg.rows {
            let mut hi = (lo + want).min(seg.rows);
            while hi < seg.rows && data[hi * a + g] == data[(hi - 1) * a + g] {
                hi += 1;
            }
            units.push((p, lo, hi));
            lo = hi;
        }
    }
    units
}

/// The least and greatest value of the second output column over the candidates (an
/// input column's over the input, an index column's over the index: cached per run),
/// or `None` where there are none.
fn second_span(input: &CpuBatch, inner: &CpuIndex, nr: &NewRowsJoin) -> Option<(Value, Value)> {
    let min_max = |d: &[Value], arity: usize, c: usize, rows: usize| -> Option<(Value, Value)> {
        (0..rows)
            .into_par_iter()
            .with_min_len(1 << 14)
            .map(|r| {
                let v = d[r * arity + c];
                (v, v)
            })
            .reduce_with(|x, y| (x.0.min(y.0), x.1.max(y.1)))
    };
    let widen = |acc: Option<(Value, Value)>, s: Option<(Value, Value)>| match (acc, s) {
        (Some(x), Some(y)) => Some((x.0.min(y.0), x.1.max(y.1))),
        (x, None) => x,
        (None, y) => y,
    };
    let mut span = None;
    match nr.second {
        SecondColumn::Input(c) => {
            for seg in &input.segs {
                span = widen(span, min_max(&seg.data, input.arity, c, seg.rows));
            }
        }
        SecondColumn::Inner(p) => {
            for ir in &inner.runs {
                if ir.run.len == 0 {
                    continue;
                }
                let id = (Arc::as_ptr(&ir.run) as usize, ir.run.len);
                let cached = {
                    let spans = nr.spans.lock().unwrap_or_else(|e| e.into_inner());
                    spans.iter().find(|e| (e.0, e.1) == id).map(|e| (e.2, e.3))
                };
                let s = match cached {
                    Some(s) => Some(s),
                    None => {
                        let d = ir.run.data();
                        let s = min_max(&d, inner.arity, p, ir.run.len);
                        if let Some((l, h)) = s {
                            let mut spans = nr.spans.lock().unwrap_or_else(|e| e.into_inner());
                            // (Entries of runs merged away are dropped now and then.)
                            if spans.len() >= 64 {
                                spans.clear();
                            }
                            spans.push((id.0, id.1, l, h));
                        }
                        s
                    }
                };
                span = widen(span, s);
            }
        }
    }
    span
}
