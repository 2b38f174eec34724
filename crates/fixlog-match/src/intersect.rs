//! Intersection of sorted, duplicate-free lists of node numbers: the extension step of
//! the worst-case-optimal join.
//!
//! Lists of similar length are merged; when one is much longer, the shorter one's
//! elements are looked up by galloping (exponential then binary search), so the cost
//! is about `|short| * log(|long| / |short|)`, which is what makes the join
//! worst-case optimal on skewed (power-law) graphs.

use crate::graph::NodeIndex;

/// Above this length ratio, galloping beats merging.
const GALLOP_RATIO: usize = 16;

/// The part of sorted `list` within `lower..upper`.
#[inline]
pub fn range(list: &[NodeIndex], lower: NodeIndex, upper: NodeIndex) -> &[NodeIndex] {
    if lower >= upper {
        return &[];
    }
    let start = if lower == 0 {
        0
    } else {
        list.partition_point(|&x| x < lower)
    };
    let end = match list.last() {
        Some(&last) if last < upper => list.len(),
        _ => start + list[start..].partition_point(|&x| x < upper),
    };
    &list[start..end]
}

/// The first index `i >= from` with `list[i] >= target` (galloping from `from`).
#[inline]
fn gallop(list: &[NodeIndex], from: usize, target: NodeIndex) -> usize {
    let mut step = 1;
    let mut low = from;
    let mut high = from;
    while high < list.len() && list[high] < target {
        low = high + 1;
        high += step;
        step *= 2;
    }
    let high = high.min(list.len());
    low + list[low..high].partition_point(|&x| x < target)
}

/// Appends `a ∩ b` to `out` (cleared first).
pub fn intersect_into(a: &[NodeIndex], b: &[NodeIndex], out: &mut Vec<NodeIndex>) {
    out.clear();
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if small.is_empty() {
        return;
    }
    if large.len() / small.len() >= GALLOP_RATIO {
        let mut at = 0;
        for &x in small {
            at = gallop(large, at, x);
            if at == large.len() {
                break;
            }
            if large[at] == x {
                out.push(x);
                at += 1;
            }
        }
        return;
    }
    let (mut i, mut j) = (0, 0);
    while i < small.len() && j < large.len() {
        let (x, y) = (small[i], large[j]);
        if x < y {
            i += 1;
        } else if y < x {
            j += 1;
        } else {
            out.push(x);
            i += 1;
            j += 1;
        }
    }
}

/// Keeps in `list` only the elements also in `other`.
pub fn retain_in(list: &mut Vec<NodeIndex>, other: &[NodeIndex]) {
    let mut kept = 0;
    let mut at = 0;
    let gallop_mode = list.is_empty() || other.len() / list.len() >= GALLOP_RATIO;
    for i in 0..list.len() {
        let x = list[i];
        at = if gallop_mode {
            gallop(other, at, x)
        } else {
            let mut j = at;
            while j < other.len() && other[j] < x {
                j += 1;
            }
            j
        };
        if at == other.len() {
            break;
        }
        if other[at] == x {
            list[kept] = x;
            kept += 1;
            at += 1;
        }
    }
    list.truncate(kept);
}

/// `|a ∩ b|` without writing it.
pub fn intersect_count(a: &[NodeIndex], b: &[NodeIndex]) -> usize {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if small.is_empty() {
        return 0;
    }
    let mut count = 0;
    if large.len() / small.len() >= GALLOP_RATIO {
        let mut at = 0;
        for &x in small {
            at = gallop(large, at, x);
            if at == large.len() {
                break;
            }
            if large[at] == x {
                count += 1;
                at += 1;
            }
        }
        return count;
    }
    let (mut i, mut j) = (0, 0);
    while i < small.len() && j < large.len() {
        let (x, y) = (small[i], large[j]);
        count += (x == y) as usize;
        i += (x <= y) as usize;
        j += (y <= x) as usize;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: &[u32], b: &[u32]) -> Vec<u32> {
        a.iter().copied().filter(|x| b.contains(x)).collect()
    }

    #[test]
    fn agrees_with_naive() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        for _ in 0..500 {
            let mut a: Vec<u32> = (0..next() % 50).map(|_| next() % 200).collect();
            let mut b: Vec<u32> = (0..next() % 2000).map(|_| next() % 400).collect();
            a.sort_unstable();
            a.dedup();
            b.sort_unstable();
            b.dedup();
            let expected = naive(&a, &b);
            let mut out = Vec::new();
            intersect_into(&a, &b, &mut out);
            assert_eq!(out, expected);
            intersect_into(&b, &a, &mut out);
            assert_eq!(out, expected);
            assert_eq!(intersect_count(&a, &b), expected.len());
            let mut kept = a.clone();
            retain_in(&mut kept, &b);
            assert_eq!(kept, expected);
            let mut kept = b.clone();
            retain_in(&mut kept, &a);
            assert_eq!(kept, expected);
            let (lo, hi) = (next() % 300, next() % 300);
            let r: Vec<u32> = b.iter().copied().filter(|&x| x >= lo && x < hi).collect();
            assert_eq!(range(&b, lo, hi), r.as_slice());
        }
    }
}
