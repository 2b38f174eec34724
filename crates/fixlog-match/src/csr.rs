//! Building compressed sparse rows: the sorted, duplicate-free neighbour lists of every
//! node from `(node, neighbour)` pairs.
//!
//! The pairs are not materialized: the builders take a slice of items (the graph's
//! edges) and a function giving each item's pairs (none, one, or both directions of an
//! edge), and call it twice per item, once to count and once to place.
//!
//! * [`build_serial`]: a counting sort by node (count, prefix sum, scatter), then each
//!   list sorted and deduplicated and moved down over the gaps that removed
//!   duplicates leave, in one pass on one thread.
//! * [`build_parallel`]: the same steps on every core. Degrees are counted into one
//!   atomic counter per node (items split among threads), the prefix sum runs in
//!   blocks, and each pair is placed by an atomic cursor per node (counting down from
//!   the end of its node's range, so that afterwards the cursors are the start
//!   offsets). The nodes are then cut into ranges of about equal numbers of pairs; each
//!   range copies its part, sorts and deduplicates its lists in it and moves them down;
//!   the parts are copied to their final places. The order in which threads place a
//!   node's pairs varies, but the lists are sorted afterwards, so the result is the
//!   serial builder's exactly.
//!
//! Memory: besides the items, the placed pairs (4 bytes each) and at most as much again
//! for the parts or the final targets: one copy of the pairs as `(u32, u32)`, plus one
//! offset per node.

use crate::graph::NodeIndex;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};

/// `targets[offsets[u]..offsets[u + 1]]` are the neighbours of `u`; `offsets` has
/// `node_count + 1` entries.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Csr {
    pub offsets: Vec<usize>,
    pub targets: Vec<NodeIndex>,
}

/// Items per piece of work when counting and placing in parallel.
const ITEM_GRAIN: usize = 1 << 12;
/// Offsets per block of the parallel prefix sum.
const SCAN_BLOCK: usize = 1 << 15;
/// A list at least this long is sorted in parallel (a hub's list in a range of its own).
const PARALLEL_SORT_MIN: usize = 1 << 17;

/// The CSR of the pairs of `items` over nodes `0..node_count`: in parallel when there
/// are at least `parallel_min_items` items (`0`: always, `usize::MAX`: never). Every
/// pair's node must be below `node_count`, and `pairs` must give an item the same pairs
/// each time.
pub(crate) fn build<'a, T, F, I>(
    node_count: usize,
    items: &'a [T],
    pairs: F,
    parallel_min_items: usize,
) -> Csr
where
    T: Sync,
    F: Fn(&'a T) -> I + Sync,
    I: IntoIterator<Item = (NodeIndex, NodeIndex)>,
{
    if items.len() >= parallel_min_items {
        build_parallel(node_count, items, pairs)
    } else {
        build_serial(node_count, items, pairs)
    }
}

/// The counting sort on one thread.
pub(crate) fn build_serial<'a, T, F, I>(node_count: usize, items: &'a [T], pairs: F) -> Csr
where
    F: Fn(&'a T) -> I,
    I: IntoIterator<Item = (NodeIndex, NodeIndex)>,
{
    let mut offsets = vec![0usize; node_count + 1];
    for item in items {
        for (u, _) in pairs(item) {
            offsets[u as usize + 1] += 1;
        }
    }
    for i in 1..offsets.len() {
        offsets[i] += offsets[i - 1];
    }
    let total = offsets[node_count];
    let mut cursor = offsets[..node_count].to_vec();
    let mut targets = vec![0 as NodeIndex; total];
    for item in items {
        for (u, v) in pairs(item) {
            let slot = &mut cursor[u as usize];
            targets[*slot] = v;
            *slot += 1;
        }
    }
    drop(cursor);
    let kept = sort_dedup_lists(&mut targets, &mut offsets[..node_count], 0, usize::MAX);
    offsets[node_count] = kept;
    targets.truncate(kept);
    targets.shrink_to_fit();
    Csr { offsets, targets }
}

/// Sorts and deduplicates the lists in `buf` and moves them to its front, closing the
/// gaps. `starts[i] - origin` is where list `i` begins in `buf` (each ends where the
/// next begins, the last at `buf.len()`); on return `starts[i]` is where it begins
/// after the move. Returns the length kept. Lists of `parallel_sort_min` or more are
/// sorted in parallel.
fn sort_dedup_lists(
    buf: &mut [NodeIndex],
    starts: &mut [usize],
    origin: usize,
    parallel_sort_min: usize,
) -> usize {
    let mut write = 0;
    let count = starts.len();
    for i in 0..count {
        let start = starts[i] - origin;
        let end = if i + 1 < count {
            starts[i + 1] - origin
        } else {
            buf.len()
        };
        starts[i] = write;
        let list = &mut buf[start..end];
        if list.len() >= parallel_sort_min {
            list.par_sort_unstable();
        } else {
            list.sort_unstable();
        }
        // `write <= read` throughout: the kept values move down (or stay).
        let mut last = None;
        for read in start..end {
            let v = buf[read];
            if last != Some(v) {
                buf[write] = v;
                write += 1;
                last = Some(v);
            }
        }
    }
    write
}

/// Replaces every cell by the sum of the cells up to and including it (in blocks on
/// every core); returns the total.
fn inclusive_scan(cells: &[AtomicUsize]) -> usize {
    let sums: Vec<usize> = cells
        .par_chunks(SCAN_BLOCK)
        .map(|block| block.iter().map(|c| c.load(Relaxed)).sum())
        .collect();
    let mut bases = Vec::with_capacity(sums.len());
    let mut total = 0usize;
    for s in sums {
        bases.push(total);
        total += s;
    }
    cells
        .par_chunks(SCAN_BLOCK)
        .zip(bases)
        .for_each(|(block, base)| {
            let mut run = base;
            for c in block {
                run += c.load(Relaxed);
                c.store(run, Relaxed);
            }
        });
    total
}

/// The counting sort on every core (see the module docs).
pub(crate) fn build_parallel<'a, T, F, I>(node_count: usize, items: &'a [T], pairs: F) -> Csr
where
    T: Sync,
    F: Fn(&'a T) -> I + Sync,
    I: IntoIterator<Item = (NodeIndex, NodeIndex)>,
{
    let n = node_count;
    // Degrees; the extra last cell ends up holding the total.
    let cursors: Vec<AtomicUsize> = (0..n + 1)
        .into_par_iter()
        .map(|_| AtomicUsize::new(0))
        .collect();
    items.par_iter().with_min_len(ITEM_GRAIN).for_each(|item| {
        for (u, _) in pairs(item) {
            cursors[u as usize].fetch_add(1, Relaxed);
        }
    });
    // Each cursor now the end of its node's range; placing counts it down to the start.
    let total = inclusive_scan(&cursors[..n]);
    let slots: Vec<AtomicU32> = (0..total)
        .into_par_iter()
        .map(|_| AtomicU32::new(0))
        .collect();
    items.par_iter().with_min_len(ITEM_GRAIN).for_each(|item| {
        for (u, v) in pairs(item) {
            let at = cursors[u as usize].fetch_sub(1, Relaxed) - 1;
            slots[at].store(v, Relaxed);
        }
    });
    let mut offsets: Vec<usize> = cursors.into_iter().map(AtomicUsize::into_inner).collect();
    offsets[n] = total;

    // Ranges of nodes with about equal numbers of pairs, several per thread.
    let pieces = (rayon::current_num_threads() * 8).clamp(1, n.max(1));
    let mut bounds = Vec::with_capacity(pieces + 1);
    bounds.push(0);
    for j in 1..pieces {
        let target = (total as u128 * j as u128 / pieces as u128) as usize;
        let b = offsets[..n].partition_point(|&o| o < target);
        if b > *bounds.last().unwrap_or(&0) && b < n {
            bounds.push(b);
        }
    }
    bounds.push(n);
    let regions: Vec<(usize, usize)> = bounds
        .windows(2)
        .map(|w| (offsets[w[0]], offsets[w[1]]))
        .collect();
    let parts: Vec<Vec<NodeIndex>> = split_by_bounds(&mut offsets[..n], &bounds)
        .into_par_iter()
        .zip(regions)
        .map(|(starts, (lo, hi))| {
            let mut buf: Vec<NodeIndex> = slots[lo..hi].iter().map(|s| s.load(Relaxed)).collect();
            let kept = sort_dedup_lists(&mut buf, starts, lo, PARALLEL_SORT_MIN);
            buf.truncate(kept);
            buf
        })
        .collect();
    drop(slots);

    // Each part's place in the final targets.
    let mut bases = Vec::with_capacity(parts.len());
    let mut kept = 0usize;
    for part in &parts {
        bases.push(kept);
        kept += part.len();
    }
    split_by_bounds(&mut offsets[..n], &bounds)
        .into_par_iter()
        .zip(bases.par_iter())
        .for_each(|(starts, &base)| starts.iter_mut().for_each(|s| *s += base));
    offsets[n] = kept;
    let targets = if parts.len() == 1 {
        parts.into_iter().next().unwrap_or_default()
    } else {
        let mut targets = vec![0 as NodeIndex; kept];
        let mut rest = targets.as_mut_slice();
        let mut places = Vec::with_capacity(parts.len());
        for part in &parts {
            let (place, tail) = rest.split_at_mut(part.len());
            places.push(place);
            rest = tail;
        }
        places
            .into_par_iter()
            .zip(parts.par_iter())
            .for_each(|(place, part)| place.copy_from_slice(part));
        targets
    };
    Csr { offsets, targets }
}

/// `values` cut at `bounds` (ascending, from 0 to `values.len()`).
fn split_by_bounds<'v>(mut values: &'v mut [usize], bounds: &[usize]) -> Vec<&'v mut [usize]> {
    let mut out = Vec::with_capacity(bounds.len().saturating_sub(1));
    for w in bounds.windows(2) {
        let (head, tail) = values.split_at_mut(w[1] - w[0]);
        out.push(head);
        values = tail;
    }
    out
}
