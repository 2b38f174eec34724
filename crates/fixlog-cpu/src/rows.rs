//! Kernels on row-major arrays of sorted rows: sort + unique, union, difference.
//!
//! Rows are `w` consecutive `u32`s. Every kernel is written once, generic over a const
//! `N`: `N != 0` is the arity known at compile time (1..=8, see `with_arity!`), so row
//! comparisons and copies unroll; `N == 0` means "read the width at run time" (arity 9
//! and up). Arity 0 never reaches these kernels (callers handle it: such a relation
//! holds zero or one empty tuple).
//!
//! Parallel work is always split at positions that do not depend on the number of
//! threads, and every kernel's result is a canonical set, so results are identical for
//! any thread count.

use crate::budget::{self, Charge};
use fixlog_exec::ExecResult;
use rayon::prelude::*;
use std::cmp::Ordering;

/// Runs `$body` with `$N` bound to a const: the arity for 1..=8, 0 (run-time width)
/// otherwise.
macro_rules! with_arity {
    ($arity:expr, $N:ident => $body:expr) => {
        match $arity {
            1 => {
                const $N: usize = 1;
                $body
            }
            2 => {
                const $N: usize = 2;
                $body
            }
            3 => {
                const $N: usize = 3;
                $body
            }
            4 => {
                const $N: usize = 4;
                $body
            }
            5 => {
                const $N: usize = 5;
                $body
            }
            6 => {
                const $N: usize = 6;
                $body
            }
            7 => {
                const $N: usize = 7;
                $body
            }
            8 => {
                const $N: usize = 8;
                $body
            }
            _ => {
                const $N: usize = 0;
                $body
            }
        }
    };
}
pub(crate) use with_arity;

/// Rows per unit of parallel work in the set kernels (a fixed number, so that splits do
/// not depend on the thread count).
pub const PART_ROWS: usize = 1 << 15;
/// Below this many rows, sorting uses a comparison sort.
const RADIX_MIN_ROWS: usize = 1 << 14;
/// Widest radix digit, in bits (2048 buckets: the histograms and the scatter's write
/// fronts stay in L1/L2).
const MAX_DIGIT_BITS: u32 = 11;

#[inline(always)]
pub fn width<const N: usize>(arity: usize) -> usize {
    if N != 0 {
        N
    } else {
        arity
    }
}

#[inline(always)]
pub fn row<const N: usize>(data: &[u32], w: usize, i: usize) -> &[u32] {
    let w = width::<N>(w);
    &data[i * w..i * w + w]
}

#[inline(always)]
pub fn row_cmp<const N: usize>(a: &[u32], b: &[u32], w: usize) -> Ordering {
    let w = width::<N>(w);
    a[..w].cmp(&b[..w])
}

/// The first row index in `lo..hi` whose row is not less than `key`.
#[inline]
pub fn lower_bound<const N: usize>(
    data: &[u32],
    w: usize,
    mut lo: usize,
    mut hi: usize,
    key: &[u32],
) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if row_cmp::<N>(row::<N>(data, w, mid), key, w) == Ordering::Less {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Exponential then binary search: the first index `>= from` in `..hi` whose row is not
/// less than `key`. Cheap when the answer is near `from`.
#[inline]
fn gallop<const N: usize>(data: &[u32], w: usize, from: usize, hi: usize, key: &[u32]) -> usize {
    let mut step = 1;
    let mut lo = from;
    let mut probe = from;
    while probe < hi && row_cmp::<N>(row::<N>(data, w, probe), key, w) == Ordering::Less {
        lo = probe + 1;
        probe = probe.saturating_add(step);
        step *= 2;
    }
    lower_bound::<N>(data, w, lo, probe.min(hi), key)
}

// ---- sort + unique -------------------------------------------------------------------

/// A raw pointer that may be shared by the scatter tasks of a radix pass (each task
/// writes a disjoint set of positions).
#[derive(Clone, Copy)]
struct SendPtr(*mut u32);
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}
impl SendPtr {
    /// Taking `self` makes closures capture the whole (Send) wrapper.
    #[inline(always)]
    fn get(self) -> *mut u32 {
        self.0
    }
}

/// Fixed split of `0..n` into pieces of `size` (last one shorter).
fn pieces(n: usize, size: usize) -> Vec<(usize, usize)> {
    (0..n.div_ceil(size))
        .map(|i| (i * size, ((i + 1) * size).min(n)))
        .collect()
}

/// One radix digit: `(row[col] >> shift) & mask`.
#[derive(Clone, Copy, Debug)]
struct Digit {
    col: usize,
    shift: u32,
    bits: u32,
}

/// The digits an LSD radix sort needs, least significant first: per column (last column
/// first) only the bits that vary over the data, cut into digits of at most
/// [`MAX_DIGIT_BITS`]. A column whose values are all equal costs nothing.
fn plan_digits<const N: usize>(data: &[u32], w: usize) -> Vec<Digit> {
    let w = width::<N>(w);
    let n = data.len() / w;
    let stats = pieces(n, PART_ROWS)
        .into_par_iter()
        .map(|(lo, hi)| {
            let mut or = vec![0u32; w];
            let mut and = vec![u32::MAX; w];
            for i in lo..hi {
                let r = row::<N>(data, w, i);
                for c in 0..w {
                    or[c] |= r[c];
                    and[c] &= r[c];
                }
            }
            (or, and)
        })
        .reduce(
            || (vec![0u32; w], vec![u32::MAX; w]),
            |(mut o1, mut a1), (o2, a2)| {
                for c in 0..w {
                    o1[c] |= o2[c];
                    a1[c] &= a2[c];
                }
                (o1, a1)
            },
        );
    let (or, and) = stats;
    let mut digits = Vec::new();
    for col in (0..w).rev() {
        let varying = or[col] ^ and[col];
        if varying == 0 {
            continue;
        }
        let low = varying.trailing_zeros();
        let high = 32 - varying.leading_zeros();
        let span = high - low;
        let count = span.div_ceil(MAX_DIGIT_BITS);
        let bits = span.div_ceil(count);
        let mut shift = low;
        while shift < high {
            let b = bits.min(high - shift);
            digits.push(Digit {
                col,
                shift,
                bits: b,
            });
            shift += b;
        }
    }
    digits
}

/// Sorts the rows of `data` (row-major, width `w`) with a parallel LSD radix sort.
fn radix_sort<const N: usize>(data: &mut Vec<u32>, w: usize) -> ExecResult<()> {
    let w = width::<N>(w);
    let n = data.len() / w;
    let digits = plan_digits::<N>(data, w);
    if digits.is_empty() {
        return Ok(());
    }
    // Held while sorting; charged to the budget (see `budget`).
    let (mut scratch, _scratch_charge) = budget::try_zeroed(data.len())?;
    let parts = pieces(n, PART_ROWS.max(n.div_ceil(256)));
    let mut src: &mut Vec<u32> = data;
    let mut dst: &mut Vec<u32> = &mut scratch;
    for d in &digits {
        let buckets = 1usize << d.bits;
        let mask = (buckets - 1) as u32;
        let (col, shift) = (d.col, d.shift);
        let s: &[u32] = src;
        let hists: Vec<Vec<usize>> = parts
            .par_iter()
            .map(|&(lo, hi)| {
                let mut h = vec![0usize; buckets];
                for i in lo..hi {
                    h[((s[i * w + col] >> shift) & mask) as usize] += 1;
                }
                h
            })
            .collect();
        // Exclusive prefix over (bucket, part): part p's rows of bucket b go after all
        // rows of smaller buckets and after earlier parts' rows of bucket b.
        let mut offsets = hists;
        let mut total = 0usize;
        for b in 0..buckets {
            for h in offsets.iter_mut() {
                let c = h[b];
                h[b] = total;
                total += c;
            }
        }
        let out = SendPtr(dst.as_mut_ptr());
        parts
            .par_iter()
            .zip(offsets.into_par_iter())
            .for_each(|(&(lo, hi), mut off)| {
                let out = out.get();
                for i in lo..hi {
                    let r = &s[i * w..i * w + w];
                    let b = ((r[col] >> shift) & mask) as usize;
                    let at = off[b];
                    off[b] += 1;
                    // SAFETY: the offsets give every row of every part a distinct slot
                    // `at < n` (a permutation), so writes are in bounds and disjoint;
                    // `[u32; N]` has u32's alignment.
                    unsafe {
                        if N != 0 {
                            let mut a = [0u32; N];
                            a.copy_from_slice(&r[..N]);
                            (out as *mut [u32; N]).add(at).write(a);
                        } else {
                            std::ptr::copy_nonoverlapping(r.as_ptr(), out.add(at * w), w);
                        }
                    }
                }
            });
        std::mem::swap(&mut src, &mut dst);
    }
    if digits.len() % 2 == 1 {
        std::mem::swap(data, &mut scratch);
    }
    Ok(())
}

/// Removes adjacent duplicate rows in place; returns the number of rows kept.
fn dedup_sorted<const N: usize>(data: &mut Vec<u32>, w: usize) -> usize {
    let w = width::<N>(w);
    let n = data.len() / w;
    if n == 0 {
        return 0;
    }
    let mut out = 1;
    if N != 0 {
        // SAFETY: `[u32; N]` has the layout of N consecutive u32; `data.len()` is a
        // multiple of N.
        let rows: &mut [[u32; N]] =
            unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr() as *mut [u32; N], n) };
        for i in 1..n {
            if rows[i] != rows[out - 1] {
                rows[out] = rows[i];
                out += 1;
            }
        }
    } else {
        for i in 1..n {
            if data[i * w..i * w + w] != data[(out - 1) * w..out * w] {
                if out != i {
                    data.copy_within(i * w..i * w + w, out * w);
                }
                out += 1;
            }
        }
    }
    data.truncate(out * w);
    out
}

fn comparison_sort<const N: usize>(data: &mut Vec<u32>, w: usize) -> ExecResult<()> {
    let w = width::<N>(w);
    if N != 0 {
        // SAFETY: `[u32; N]` has the layout of N consecutive u32 (same alignment), and
        // `data.len()` is a multiple of N.
        let n = data.len() / w;
        let rows: &mut [[u32; N]] =
            unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr() as *mut [u32; N], n) };
        if rows.len() < RADIX_MIN_ROWS {
            rows.sort_unstable();
        } else {
            rows.par_sort_unstable();
        }
    } else {
        let n = data.len() / w;
        let (mut idx, _idx_charge) = budget::try_filled(n, 0usize)?;
        idx.iter_mut().enumerate().for_each(|(i, x)| *x = i);
        let d: &[u32] = data;
        idx.par_sort_unstable_by(|&i, &j| d[i * w..i * w + w].cmp(&d[j * w..j * w + w]));
        let (mut out, _out_charge) = budget::try_with_capacity(data.len())?;
        for i in idx {
            out.extend_from_slice(&d[i * w..i * w + w]);
        }
        // The holder of `data` is charged for its allocation, which `out` replaces
        // (same size).
        *data = out;
    }
    Ok(())
}

/// Sorts the rows and removes duplicates; returns the number of rows. `arity >= 1`.
/// Running out of memory (or over the budget) for the sort's scratch space is an error.
pub fn try_sort_unique(arity: usize, data: &mut Vec<u32>) -> ExecResult<usize> {
    debug_assert!(arity > 0 && data.len().is_multiple_of(arity));
    with_arity!(arity, N => {
        let n = data.len() / arity;
        if N != 0 && n >= RADIX_MIN_ROWS {
            radix_sort::<N>(data, arity)?;
        } else {
            comparison_sort::<N>(data, arity)?;
        }
        Ok(dedup_sorted::<N>(data, arity))
    })
}

/// Sorts rows that are known to be distinct (no dedup pass).
pub fn try_sort_distinct(arity: usize, data: &mut Vec<u32>) -> ExecResult<()> {
    with_arity!(arity, N => {
        let n = data.len() / arity;
        if N != 0 && n >= RADIX_MIN_ROWS {
            radix_sort::<N>(data, arity)
        } else {
            comparison_sort::<N>(data, arity)
        }
    })
}

// ---- union and difference --------------------------------------------------------------

/// Splits the merge of `a` and `b` (sorted) into independent parts: pairs of ranges
/// `(a_lo..a_hi, b_lo..b_hi)` such that every row of a part sorts before every row of
/// the next part. Pivots are taken at fixed intervals from the larger input.
fn split_two<const N: usize>(
    a: &[u32],
    na: usize,
    b: &[u32],
    nb: usize,
    w: usize,
) -> Vec<[usize; 4]> {
    let (big, nbig, small, nsmall, swapped) = if na >= nb {
        (a, na, b, nb, false)
    } else {
        (b, nb, a, na, true)
    };
    let mut cuts = vec![(0usize, 0usize)];
    let mut i = PART_ROWS;
    while i < nbig {
        let key = row::<N>(big, w, i);
        let j = lower_bound::<N>(small, w, 0, nsmall, key);
        cuts.push((i, j));
        i += PART_ROWS;
    }
    cuts.push((nbig, nsmall));
    cuts.windows(2)
        .map(|c| {
            let ((b0, s0), (b1, s1)) = (c[0], c[1]);
            if swapped {
                [s0, s1, b0, b1]
            } else {
                [b0, b1, s0, s1]
            }
        })
        .collect()
}

/// `a − b` for sorted `a`, `b`: linear merge when the sizes are close, galloping through
/// `b` when `b` is much larger.
fn diff_seq<const N: usize>(a: &[u32], b: &[u32], w: usize, out: &mut Vec<u32>) {
    let w = width::<N>(w);
    let (na, nb) = (a.len() / w, b.len() / w);
    if nb == 0 {
        out.extend_from_slice(a);
        return;
    }
    let galloping = nb > 8 * na;
    let mut j = 0;
    for i in 0..na {
        let ra = row::<N>(a, w, i);
        if galloping {
            j = gallop::<N>(b, w, j, nb, ra);
        } else {
            while j < nb && row_cmp::<N>(row::<N>(b, w, j), ra, w) == Ordering::Less {
                j += 1;
            }
        }
        if j >= nb {
            out.extend_from_slice(&a[i * w..]);
            return;
        }
        if row_cmp::<N>(row::<N>(b, w, j), ra, w) != Ordering::Equal {
            out.extend_from_slice(ra);
        }
    }
}

/// The parts concatenated, into a vector charged to the budget (a single part is
/// charged as it is).
pub fn try_concat_parts(parts: Vec<Vec<u32>>) -> ExecResult<(Vec<u32>, Charge)> {
    if parts.len() == 1 {
        let only = parts.into_iter().next().unwrap_or_default();
        let charge = Charge::try_new(only.capacity() * std::mem::size_of::<u32>())?;
        return Ok((only, charge));
    }
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let (mut out, charge) = budget::try_zeroed(total)?;
    let mut slices = Vec::with_capacity(parts.len());
    let mut rest: &mut [u32] = &mut out;
    for p in &parts {
        let (head, tail) = rest.split_at_mut(p.len());
        slices.push(head);
        rest = tail;
    }
    slices
        .into_par_iter()
        .zip(parts.par_iter())
        .for_each(|(dst, src)| dst.copy_from_slice(src));
    Ok((out, charge))
}

/// The union of the disjoint sorted rows `a` and `b`, into a vector charged to the
/// budget.
pub fn try_union_disjoint(arity: usize, a: &[u32], b: &[u32]) -> ExecResult<(Vec<u32>, Charge)> {
    if b.is_empty() {
        return budget::try_copy(a);
    }
    if a.is_empty() {
        return budget::try_copy(b);
    }
    with_arity!(arity, N => {
        let w = arity;
        let parts = split_two::<N>(a, a.len() / w, b, b.len() / w, w);
        let (mut out, charge) = budget::try_zeroed(a.len() + b.len())?;
        let mut slices = Vec::with_capacity(parts.len());
        let mut rest: &mut [u32] = &mut out;
        for &[a0, a1, b0, b1] in &parts {
            let (head, tail) = rest.split_at_mut((a1 - a0 + b1 - b0) * w);
            slices.push(head);
            rest = tail;
        }
        slices
            .into_par_iter()
            .zip(parts.par_iter())
            .for_each(|(dst, &[a0, a1, b0, b1])| {
                let (pa, pb) = (&a[a0 * w..a1 * w], &b[b0 * w..b1 * w]);
                let (na, nb) = (pa.len() / w, pb.len() / w);
                let (mut i, mut j, mut k) = (0, 0, 0);
                while i < na && j < nb {
                    let (ra, rb) = (row::<N>(pa, w, i), row::<N>(pb, w, j));
                    let src = if row_cmp::<N>(ra, rb, w) == Ordering::Less {
                        i += 1;
                        ra
                    } else {
                        j += 1;
                        rb
                    };
                    dst[k * w..k * w + w].copy_from_slice(src);
                    k += 1;
                }
                let ta = &pa[i * w..];
                dst[k * w..k * w + ta.len()].copy_from_slice(ta);
                let tb = &pb[j * w..];
                dst[k * w + ta.len()..].copy_from_slice(tb);
            });
        Ok((out, charge))
    })
}

/// Rows per write of [`union_disjoint_to_file`]'s parts.
const FILE_CHUNK_ROWS: usize = 1 << 15;

/// Rows of the larger input per wave of [`union_disjoint_to_file`].
pub(crate) const FILE_WAVE_ROWS: usize = 1 << 24;

/// [`try_union_disjoint`] written to a new spill file instead of memory: each part of
/// the merge knows where its output starts, merges into a small buffer (at most
/// [`FILE_CHUNK_ROWS`] rows, not charged) and writes it at its place with `pwrite`; the
/// file is then mapped. The output is never in memory whole. Parts run in parallel in
/// waves of about `wave_rows` rows of the larger input ([`FILE_WAVE_ROWS`]), in order;
/// after each wave `consumed(i, j)` is told that the first `i` values of `a` and `j`
/// of `b` are merged (so a caller that alone holds an input may give back its space).
pub(crate) fn union_disjoint_to_file(
    arity: usize,
    a: &[u32],
    b: &[u32],
    spill: &crate::spill::Spill,
    wave_rows: usize,
    consumed: &dyn Fn(usize, usize),
) -> ExecResult<crate::spill::Mapped> {
    let file = spill.new_file()?;
    let io = |e: std::io::Error| {
        fixlog_exec::ExecError::Backend(format!("spilling to disk: cannot write a merge: {e}"))
    };
    with_arity!(arity, N => {
        let w = arity;
        let parts = split_two::<N>(a, a.len() / w, b, b.len() / w, w);
        let mut starts = Vec::with_capacity(parts.len());
        let mut at = 0usize;
        for &[a0, a1, b0, b1] in &parts {
            starts.push(at);
            at += (a1 - a0 + b1 - b0) * w;
        }
        let wave = (wave_rows / PART_ROWS).max(1);
        for (parts, starts) in parts.chunks(wave).zip(starts.chunks(wave)) {
        parts
            .par_iter()
            .zip(starts.par_iter())
            .try_for_each(|(&[a0, a1, b0, b1], &start)| {
                let (pa, pb) = (&a[a0 * w..a1 * w], &b[b0 * w..b1 * w]);
                let (na, nb) = (pa.len() / w, pb.len() / w);
                let chunk = FILE_CHUNK_ROWS * w;
                let mut buf: Vec<u32> = Vec::with_capacity(chunk.min(pa.len() + pb.len()));
                let mut offset = (start * std::mem::size_of::<u32>()) as u64;
                let mut flush = |buf: &mut Vec<u32>| -> std::io::Result<()> {
                    crate::spill::write_at(&file, buf, offset)?;
                    offset += std::mem::size_of_val(&buf[..]) as u64;
                    buf.clear();
                    Ok(())
                };
                let (mut i, mut j) = (0, 0);
                while i < na && j < nb {
                    let (ra, rb) = (row::<N>(pa, w, i), row::<N>(pb, w, j));
                    if row_cmp::<N>(ra, rb, w) == Ordering::Less {
                        buf.extend_from_slice(ra);
                        i += 1;
                    } else {
                        buf.extend_from_slice(rb);
                        j += 1;
                    }
                    if buf.len() >= chunk {
                        flush(&mut buf).map_err(io)?;
                    }
                }
                for rest in [&pa[i * w..], &pb[j * w..]] {
                    for piece in rest.chunks(chunk) {
                        if buf.len() + piece.len() > chunk {
                            flush(&mut buf).map_err(io)?;
                        }
                        buf.extend_from_slice(piece);
                    }
                }
                flush(&mut buf).map_err(io)
            })?;
            if let Some(&[_, a1, _, b1]) = parts.last() {
                consumed(a1 * w, b1 * w);
            }
        }
    });
    spill.map(file, a.len() + b.len())
}

/// The rows of `a` in none of `bs`, into a vector charged to the budget. The
/// per-part outputs (at most the size of `a` together) are charged while they exist.
pub fn try_difference_many(
    arity: usize,
    a: &[u32],
    bs: &[&[u32]],
) -> ExecResult<(Vec<u32>, Charge)> {
    let bs: Vec<&[u32]> = bs.iter().copied().filter(|b| !b.is_empty()).collect();
    if a.is_empty() || bs.is_empty() {
        return budget::try_copy(a);
    }
    let _parts_charge = Charge::try_new(std::mem::size_of_val(a))?;
    with_arity!(arity, N => {
        let w = arity;
        let na = a.len() / w;
        // Parts over `a` at fixed row counts; each `b`'s range by binary search.
        let mut cuts: Vec<usize> = (0..na).step_by(PART_ROWS).collect();
        cuts.push(na);
        let bounds: Vec<Vec<usize>> = cuts
            .par_iter()
            .map(|&i| {
                bs.iter()
                    .map(|b| {
                        let nb = b.len() / w;
                        if i == 0 {
                            0
                        } else if i == na {
                            nb
                        } else {
                            lower_bound::<N>(b, w, 0, nb, row::<N>(a, w, i))
                        }
                    })
                    .collect()
            })
            .collect();
        let outs: Vec<Vec<u32>> = (0..cuts.len() - 1)
            .into_par_iter()
            .map(|p| {
                let (a0, a1) = (cuts[p], cuts[p + 1]);
                let part = &a[a0 * w..a1 * w];
                let mut out = Vec::with_capacity(part.len());
                if bs.len() == 1 {
                    let b = &bs[0][bounds[p][0] * w..bounds[p + 1][0] * w];
                    diff_seq::<N>(part, b, w, &mut out);
                    return out;
                }
                let subs: Vec<&[u32]> = bs
                    .iter()
                    .enumerate()
                    .map(|(k, b)| &b[bounds[p][k] * w..bounds[p + 1][k] * w])
                    .collect();
                let mut cur = vec![0usize; subs.len()];
                let n_part = a1 - a0;
                'rows: for i in 0..n_part {
                    let ra = row::<N>(part, w, i);
                    for (k, b) in subs.iter().enumerate() {
                        let nb = b.len() / w;
                        let j = if nb > 8 * n_part {
                            gallop::<N>(b, w, cur[k], nb, ra)
                        } else {
                            let mut j = cur[k];
                            while j < nb && row_cmp::<N>(row::<N>(b, w, j), ra, w) == Ordering::Less {
                                j += 1;
                            }
                            j
                        };
                        cur[k] = j;
                        if j < nb && row_cmp::<N>(row::<N>(b, w, j), ra, w) == Ordering::Equal {
                            continue 'rows;
                        }
                    }
                    out.extend_from_slice(ra);
                }
                out
            })
            .collect();
        try_concat_parts(outs)
    })
}

/// Whether sorted `data` contains `key` (a whole row).
pub fn contains(arity: usize, data: &[u32], key: &[u32]) -> bool {
    with_arity!(arity, N => {
        let n = data.len() / arity;
        let i = lower_bound::<N>(data, arity, 0, n, key);
        i < n && row::<N>(data, arity, i) == key
    })
}
