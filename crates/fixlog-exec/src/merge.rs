//! Reading several sorted arrays of rows as one sorted sequence, lazily and in parts of
//! bounded size: how a result kept as a relation's runs ([`crate::tuples::RowStore::Runs`])
//! is read in order without merging it into one array first, and how the output
//! writer merges the sorted chunks of an external sort.
//!
//! The order is any total preorder on rows (`cmp`); rows that compare equal are taken
//! from the source with the lower index first, and from one source in their order
//! there. So the merge of the chunks of a stable sort is that stable sort, and the
//! merge of disjoint runs is their union.
//!
//! [`Merge::next_part`] cuts the next part off the sources without copying: for each
//! source a prefix, the rows of the part. A part of at most `max_rows` rows is found
//! with one binary search per source (see [`Merge::next_part`]); [`Part::merged`] then
//! merges the part's prefixes into scratch space (or returns the one prefix there is).
//! Parts are independent, so a caller may cut several and merge them in parallel.

use crate::backend::{ExecError, ExecResult};
use fixlog_logical::Value;
use std::cmp::Ordering;

/// Sorted sources of rows (row-major, `arity` values a row), read as one sorted
/// sequence, part by part.
#[derive(Clone, Debug)]
pub struct Merge<'a> {
    arity: usize,
    /// What is left of each source.
    sources: Vec<&'a [Value]>,
    /// Each source's length.
    lens: Vec<usize>,
}

/// Rows cut off the sources by [`Merge::next_part`]: a prefix of each (in source
/// order; empty where a source has none), whose merge is the part.
#[derive(Clone, Debug)]
pub struct Part<'a> {
    pub slices: Vec<&'a [Value]>,
    rows: usize,
}

impl<'a> Merge<'a> {
    /// The merge of `sources`, each sorted by the order the parts will be merged in
    /// and holding whole rows of `arity` values (`arity > 0`).
    pub fn new(arity: usize, sources: Vec<&'a [Value]>) -> ExecResult<Merge<'a>> {
        if arity == 0 || sources.iter().any(|s| !s.len().is_multiple_of(arity)) {
            return Err(crate::internal(
                "merging sources that are not whole rows of a positive arity",
            ));
        }
        let lens = sources.iter().map(|s| s.len()).collect();
        Ok(Merge {
            arity,
            sources,
            lens,
        })
    }

    /// The values cut off each source so far.
    pub fn positions(&self) -> Vec<usize> {
        self.lens
            .iter()
            .zip(&self.sources)
            .map(|(n, s)| n - s.len())
            .collect()
    }

    pub fn arity(&self) -> usize {
        self.arity
    }

    /// Rows not yet cut off.
    pub fn rows_left(&self) -> usize {
        self.sources.iter().map(|s| s.len()).sum::<usize>() / self.arity
    }

    /// Cuts off the next rows in order: at most `max_rows` of them (or one, if
    /// `max_rows` is 0), and at least one while any are left; `None` when none are.
    ///
    /// With `k` sources that still have rows and `s = max(1, max_rows / k)`, the part
    /// ends at the pivot: the least (by `cmp`, then source index) of the sources'
    /// `s`-th rows. It takes the pivot's source's first `s` rows and from every other
    /// source the rows before the pivot, which are fewer than `s` (its own `s`-th row
    /// comes after the pivot), so the part has between `s` and `k * s` rows. When no
    /// source has `s` rows, the part is everything left (fewer than `k * s` rows).
    pub fn next_part<F>(&mut self, max_rows: usize, cmp: &F) -> Option<Part<'a>>
    where
        F: Fn(&[Value], &[Value]) -> Ordering + ?Sized,
    {
        let a = self.arity;
        let max_rows = max_rows.max(1);
        let active = self.sources.iter().filter(|s| !s.is_empty()).count();
        if active == 0 {
            return None;
        }
        let mut counts: Vec<usize> = self.sources.iter().map(|s| s.len() / a).collect();
        if active == 1 {
            for c in counts.iter_mut() {
                *c = (*c).min(max_rows);
            }
        } else {
            let s = (max_rows / active).max(1);
            let mut pivot: Option<(usize, &[Value])> = None;
            for (r, src) in self.sources.iter().enumerate() {
                if src.len() / a < s {
                    continue;
                }
                let row = &src[(s - 1) * a..s * a];
                // Ties keep the lower source: `r` only grows.
                if pivot.is_none_or(|(_, p)| cmp(row, p) == Ordering::Less) {
                    pivot = Some((r, row));
                }
            }
            if let Some((pr, p)) = pivot {
                for (r, src) in self.sources.iter().enumerate() {
                    counts[r] = match r.cmp(&pr) {
                        Ordering::Equal => s,
                        // Rows equal to the pivot come before it in a lower source ...
                        Ordering::Less => rows_while(src, a, |x| cmp(x, p) != Ordering::Greater),
                        // ... and after it in a higher one.
                        Ordering::Greater => rows_while(src, a, |x| cmp(x, p) == Ordering::Less),
                    };
                }
            }
        }
        let mut rows = 0;
        let slices = self
            .sources
            .iter_mut()
            .zip(&counts)
            .map(|(src, &n)| {
                let (head, tail) = src.split_at(n * a);
                *src = tail;
                rows += n;
                head
            })
            .collect();
        Some(Part { slices, rows })
    }
}

/// The number of leading rows of sorted `rows` for which `pred` holds (`pred` holds
/// for a prefix).
fn rows_while(rows: &[Value], arity: usize, pred: impl Fn(&[Value]) -> bool) -> usize {
    let (mut lo, mut hi) = (0, rows.len() / arity);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(&rows[mid * arity..(mid + 1) * arity]) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Scratch space for [`Part::merged`] (two buffers, reused from part to part).
#[derive(Debug, Default)]
pub struct Scratch {
    a: Vec<Value>,
    b: Vec<Value>,
}

impl Scratch {
    /// Values held (for accounting).
    pub fn capacity(&self) -> usize {
        self.a.capacity() + self.b.capacity()
    }
}

impl<'a> Part<'a> {
    /// Rows in the part.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The part's rows in order: the one non-empty slice itself, or the slices merged
    /// into `scratch` (pairwise, neighbours first, equal rows from the lower source
    /// first). Running out of memory for the scratch space is an error.
    pub fn merged<'s, F>(
        &'s self,
        arity: usize,
        cmp: &F,
        scratch: &'s mut Scratch,
    ) -> ExecResult<&'s [Value]>
    where
        F: Fn(&[Value], &[Value]) -> Ordering + ?Sized,
    {
        let mut live: Vec<&[Value]> = self
            .slices
            .iter()
            .copied()
            .filter(|s| !s.is_empty())
            .collect();
        match live.len() {
            0 => return Ok(&[]),
            1 => return Ok(live[0]),
            _ => {}
        }
        let values = self.rows * arity;
        for buf in [&mut scratch.a, &mut scratch.b] {
            buf.clear();
            buf.try_reserve_exact(values).map_err(|_| {
                ExecError::OutOfMemory(format!(
                    "cannot allocate {} bytes to merge rows",
                    values * std::mem::size_of::<Value>()
                ))
            })?;
        }
        let (mut from, mut into) = (&mut scratch.a, &mut scratch.b);
        // Two ways, both merging neighbours only (so equal rows still come from the
        // lower source first), whichever copies fewer values: from the tail (the last
        // two slices, then each slice before with what is merged), which copies the
        // first slice once: best for a relation's runs, which shrink geometrically;
        // or level by level, log2(slices) copies of everything: best for slices of
        // similar sizes (the chunks of an external sort).
        let levels = usize::BITS - (live.len() - 1).leading_zeros();
        let mut tail_cost = 0;
        let mut suffix = live[live.len() - 1].len();
        for s in live[..live.len() - 1].iter().rev() {
            suffix += s.len();
            tail_cost += suffix;
        }
        if tail_cost <= values * levels as usize {
            let last = live.len() - 1;
            merge_two(arity, live[last - 1], live[last], cmp, into);
            for &s in live[..last - 1].iter().rev() {
                std::mem::swap(&mut from, &mut into);
                into.clear();
                merge_two(arity, s, from, cmp, into);
            }
            let done: &'s Vec<Value> = into;
            return Ok(&done[..]);
        }
        // Level by level: merge neighbours from `src` (slices) into one buffer; then
        // the merged runs of that buffer into the other, until one run is left.
        let mut first = true;
        let mut bounds: Vec<usize> = Vec::new();
        loop {
            let runs: Vec<&[Value]> = if first {
                std::mem::take(&mut live)
            } else {
                bounds.windows(2).map(|w| &from[w[0]..w[1]]).collect()
            };
            if runs.len() == 1 {
                break;
            }
            into.clear();
            let mut next = vec![0];
            for pair in runs.chunks(2) {
                match pair {
                    [x, y] => merge_two(arity, x, y, cmp, into),
                    [x] => into.extend_from_slice(x),
                    _ => {}
                }
                next.push(into.len());
            }
            drop(runs);
            bounds = next;
            std::mem::swap(&mut from, &mut into);
            first = false;
        }
        let done: &'s Vec<Value> = from;
        Ok(&done[..])
    }
}

/// Appends the merge of sorted `x` and `y` to `out` (equal rows: `x`'s first). `out`
/// must have room for both.
fn merge_two<F>(arity: usize, x: &[Value], y: &[Value], cmp: &F, out: &mut Vec<Value>)
where
    F: Fn(&[Value], &[Value]) -> Ordering + ?Sized,
{
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        let (rx, ry) = (&x[i..i + arity], &y[j..j + arity]);
        if cmp(ry, rx) == Ordering::Less {
            out.extend_from_slice(ry);
            j += arity;
        } else {
            out.extend_from_slice(rx);
            i += arity;
        }
    }
    out.extend_from_slice(&x[i..]);
    out.extend_from_slice(&y[j..]);
}

/// The raw order of rows: by `u32` value, column by column (the order of relations).
pub fn raw_order(a: &[Value], b: &[Value]) -> Ordering {
    a.cmp(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (no dependency).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    fn rows_of(v: &[Value], arity: usize) -> Vec<Vec<Value>> {
        v.chunks(arity).map(|r| r.to_vec()).collect()
    }

    fn read_all<F>(m: &mut Merge, max_rows: usize, cmp: &F) -> Vec<Value>
    where
        F: Fn(&[Value], &[Value]) -> Ordering,
    {
        let mut out = Vec::new();
        let mut scratch = Scratch::default();
        while let Some(part) = m.next_part(max_rows, cmp) {
            assert!(part.rows() >= 1);
            assert!(
                part.rows() <= max_rows.max(1),
                "{} > {max_rows}",
                part.rows()
            );
            out.extend_from_slice(part.merged(m.arity(), cmp, &mut scratch).unwrap());
        }
        out
    }

    #[test]
    fn disjoint_runs_merge_into_their_union_in_bounded_parts() {
        let mut rng = Rng(0x9e3779b97f4a7c15);
        for case in 0..200 {
            let arity = 1 + case % 3;
            let k = 1 + case % 7;
            let mut all: Vec<Vec<Value>> = Vec::new();
            for _ in 0..(rng.next() % 400) {
                all.push((0..arity).map(|_| (rng.next() % 20) as Value).collect());
            }
            all.sort();
            all.dedup();
            // Deal the rows out to k runs, each sorted.
            let mut runs: Vec<Vec<Value>> = vec![Vec::new(); k];
            for row in &all {
                runs[(rng.next() % k as u64) as usize].extend_from_slice(row);
            }
            let sources = runs.iter().map(|r| &r[..]).collect();
            let mut m = Merge::new(arity, sources).unwrap();
            assert_eq!(m.rows_left(), all.len());
            let max_rows = 1 + (rng.next() % 50) as usize;
            let got = read_all(&mut m, max_rows, &raw_order);
            assert_eq!(rows_of(&got, arity), all, "case {case}");
            assert_eq!(m.rows_left(), 0);
            let lens: Vec<usize> = runs.iter().map(|r| r.len()).collect();
            assert_eq!(m.positions(), lens);
        }
    }

    #[test]
    fn equal_rows_come_from_the_lower_source_first() {
        // Sorted by the first column only: the second says where a row came from.
        let by_first = |a: &[Value], b: &[Value]| a[0].cmp(&b[0]);
        let mut rng = Rng(12345);
        for case in 0..200 {
            let k = 1 + case % 6;
            let mut runs: Vec<Vec<Value>> = vec![Vec::new(); k];
            for (s, run) in runs.iter_mut().enumerate() {
                let mut keys: Vec<Value> = (0..rng.next() % 60)
                    .map(|_| (rng.next() % 8) as Value)
                    .collect();
                keys.sort();
                for (pos, key) in keys.into_iter().enumerate() {
                    run.extend_from_slice(&[key, (s * 1000 + pos) as Value]);
                }
            }
            // A stable sort of the concatenation is the merge.
            let mut want: Vec<Vec<Value>> = runs.iter().flat_map(|r| rows_of(r, 2)).collect();
            want.sort_by(|a, b| by_first(a, b));
            let sources = runs.iter().map(|r| &r[..]).collect();
            let mut m = Merge::new(2, sources).unwrap();
            let max_rows = (rng.next() % 20) as usize;
            let got = read_all(&mut m, max_rows, &by_first);
            assert_eq!(rows_of(&got, 2), want, "case {case}");
        }
    }

    #[test]
    fn a_single_source_is_read_in_place() {
        let rows: Vec<Value> = (0..100).collect();
        let mut m = Merge::new(2, vec![&rows[..], &[]]).unwrap();
        let mut scratch = Scratch::default();
        let part = m.next_part(10, &raw_order).unwrap();
        let got = part.merged(2, &raw_order, &mut scratch).unwrap();
        assert_eq!(got, &rows[..20]);
        assert_eq!(got.as_ptr(), rows.as_ptr(), "no copy");
        assert_eq!(scratch.capacity(), 0);
        assert!(Merge::new(2, vec![&rows[..3]]).is_err());
        assert!(Merge::new(0, vec![]).is_err());
    }
}
