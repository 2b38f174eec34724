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
        if std::env::var_os("FIXLOG_CSR_ATOMIC").is_some() {
            return build_parallel_atomic(node_count, items, pairs);
        }
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
pub(crate) fn build_parallel_atomic<'a, T, F, I>(node_count: usize, items: &'a [T], pairs: F) -> Csr
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

/// At most this many buckets (node ranges) in the parallel builder.
const MAX_BUCKETS: usize = 1 << 12;
/// About this many pairs per bucket (its lists and offsets stay in cache).
const BUCKET_PAIRS: usize = 1 << 16;
static SORT_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The counting sort on every core, partitioned by node range (see the module docs).
pub(crate) fn build_parallel<'a, T, F, I>(node_count: usize, items: &'a [T], pairs: F) -> Csr
where
    T: Sync,
    F: Fn(&'a T) -> I + Sync,
    I: IntoIterator<Item = (NodeIndex, NodeIndex)>,
{
    let n = node_count;
    let __t = std::time::Instant::now();
    let threads = rayon::current_num_threads();
    // Pieces of the items, each counted and placed by one thread.
    let piece_len = items.len().div_ceil(threads * 4).max(ITEM_GRAIN);
    let pieces: Vec<&'a [T]> = items.chunks(piece_len).collect();
    // Buckets: ranges of 2^shift nodes, about BUCKET_PAIRS pairs each (guessing two
    // pairs per item), at least a few per thread, at most MAX_BUCKETS.
    let wanted = (items.len() * 2 / BUCKET_PAIRS).clamp(threads * 4, MAX_BUCKETS);
    let shift = n
        .div_ceil(wanted)
        .max(1)
        .next_power_of_two()
        .trailing_zeros();
    let buckets = (n >> shift) + 1;
    let bucket_of = |u: NodeIndex| (u as usize) >> shift;

    // How many pairs of each piece fall in each bucket.
    let counts: Vec<Vec<usize>> = pieces
        .par_iter()
        .map(|piece| {
            let mut count = vec![0usize; buckets];
            for item in *piece {
                for (u, _) in pairs(item) {
                    count[bucket_of(u)] += 1;
                }
            }
            count
        })
        .collect();
    let sizes: Vec<usize> = (0..buckets)
        .map(|b| counts.iter().map(|c| c[b]).sum())
        .collect();
    let total: usize = sizes.iter().sum();
    eprintln!("  hist {:.3}", __t.elapsed().as_secs_f64());
    let __t = std::time::Instant::now();

    // The pairs, packed `node << 32 | neighbour`, by bucket and within a bucket by
    // piece.
    let mut copied = vec![0u64; total];
    let mut slots: Vec<Vec<&mut [u64]>> = (0..pieces.len()).map(|_| Vec::new()).collect();
    let mut rest = copied.as_mut_slice();
    for b in 0..buckets {
        for (p, count) in counts.iter().enumerate() {
            let (slot, tail) = rest.split_at_mut(count[b]);
            slots[p].push(slot);
            rest = tail;
        }
    }
    pieces.par_iter().zip(slots).for_each(|(piece, mut slots)| {
        let mut at = vec![0usize; buckets];
        for item in *piece {
            for (u, v) in pairs(item) {
                let b = bucket_of(u);
                slots[b][at[b]] = (u64::from(u) << 32) | u64::from(v);
                at[b] += 1;
            }
        }
    });
    drop(counts);
    eprintln!("  scatter {:.3}", __t.elapsed().as_secs_f64());
    let __t = std::time::Instant::now();

    // Each bucket: a counting sort of its pairs by node into its region of the
    // targets, then its lists sorted and deduplicated there.
    let mut targets = vec![0 as NodeIndex; total];
    let mut offsets = vec![0usize; n + 1];
    let mut regions: Vec<&mut [NodeIndex]> = Vec::with_capacity(buckets);
    let mut copies: Vec<&[u64]> = Vec::with_capacity(buckets);
    let (mut rest, mut rest_copied) = (targets.as_mut_slice(), copied.as_slice());
    for &size in &sizes {
        let (region, tail) = rest.split_at_mut(size);
        regions.push(region);
        rest = tail;
        let (copy, tail) = rest_copied.split_at(size);
        copies.push(copy);
        rest_copied = tail;
    }
    let mut starts: Vec<&mut [usize]> = offsets[..n].chunks_mut(1 << shift).collect();
    starts.resize_with(buckets, Default::default);
    let mut kept = vec![0usize; buckets];
    copies
        .par_iter()
        .zip(regions.par_iter_mut())
        .zip(starts.par_iter_mut())
        .zip(kept.par_iter_mut())
        .enumerate()
        .for_each(|(b, (((copy, region), starts), kept))| {
            let low = b << shift;
            let local = |key: u64| (key >> 32) as usize - low;
            for &key in copy.iter() {
                starts[local(key)] += 1;
            }
            let mut end = 0;
            for s in starts.iter_mut() {
                end += *s;
                *s = end;
            }
            for &key in copy.iter() {
                let s = &mut starts[local(key)];
                *s -= 1;
                region[*s] = key as NodeIndex;
            }
            let __s = std::time::Instant::now();
            *kept = sort_dedup_lists(region, starts, 0, PARALLEL_SORT_MIN);
            SORT_NS.fetch_add(__s.elapsed().as_nanos() as u64, Relaxed);
        });
    drop(copies);
    drop(copied);
    eprintln!(
        "  buckets {:.3} (sorting {:.3} thread-s)",
        __t.elapsed().as_secs_f64(),
        SORT_NS.swap(0, Relaxed) as f64 * 1e-9
    );
    let __t = std::time::Instant::now();

    // Each bucket's place in the final targets.
    let mut bases = Vec::with_capacity(buckets);
    let mut all = 0usize;
    for &k in &kept {
        bases.push(all);
        all += k;
    }
    starts
        .par_iter_mut()
        .zip(bases.par_iter())
        .for_each(|(starts, &base)| starts.iter_mut().for_each(|s| *s += base));
    drop(starts);
    offsets[n] = all;
    if all < total {
        let mut packed = vec![0 as NodeIndex; all];
        let mut places = Vec::with_capacity(buckets);
        let mut rest = packed.as_mut_slice();
        for &k in &kept {
            let (place, tail) = rest.split_at_mut(k);
            places.push(place);
            rest = tail;
        }
        places
            .into_par_iter()
            .zip(regions.par_iter())
            .zip(kept.par_iter())
            .for_each(|((place, region), &k)| place.copy_from_slice(&region[..k]));
        drop(regions);
        targets = packed;
    }
    eprintln!("  final {:.3}", __t.elapsed().as_secs_f64());
    Csr { offsets, targets }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// The obviously correct CSR: a set per node.
    fn reference(node_count: usize, pairs: &[(NodeIndex, NodeIndex)]) -> Csr {
        let mut sets = vec![BTreeSet::new(); node_count];
        for &(u, v) in pairs {
            sets[u as usize].insert(v);
        }
        let mut offsets = vec![0];
        let mut targets = Vec::new();
        for set in sets {
            targets.extend(set);
            offsets.push(targets.len());
        }
        Csr { offsets, targets }
    }

    fn both_ways(pairs: &[(NodeIndex, NodeIndex)]) -> Vec<(NodeIndex, NodeIndex)> {
        pairs.iter().flat_map(|&(u, v)| [(u, v), (v, u)]).collect()
    }

    /// Every builder, on `threads` threads, against the reference; also with each
    /// item giving its pair both ways (undirected edges) and giving nothing for some
    /// (edges of another type).
    fn check(node_count: usize, pairs: &[(NodeIndex, NodeIndex)], threads: usize) {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool");
        pool.install(|| {
            let expected = reference(node_count, pairs);
            for min in [0, usize::MAX, ITEM_GRAIN] {
                let got = build(node_count, pairs, |&p| Some(p), min);
                assert_eq!(got, expected, "one way, parallel_min_items {min}");
            }
            // Both ways needs neighbours that are nodes.
            let nodes: Vec<_> = pairs
                .iter()
                .copied()
                .filter(|&(_, v)| (v as usize) < node_count)
                .collect();
            let expected = reference(node_count, &both_ways(&nodes));
            for min in [0, usize::MAX] {
                let got = build(node_count, &nodes, |&(u, v)| [(u, v), (v, u)], min);
                assert_eq!(got, expected, "both ways, parallel_min_items {min}");
            }
            let odd: Vec<_> = pairs
                .iter()
                .copied()
                .filter(|&(u, v)| (u ^ v) & 1 == 1)
                .collect();
            let expected = reference(node_count, &odd);
            for min in [0, usize::MAX] {
                let got = build(
                    node_count,
                    pairs,
                    |&(u, v)| ((u ^ v) & 1 == 1).then_some((u, v)),
                    min,
                );
                assert_eq!(got, expected, "filtered, parallel_min_items {min}");
            }
        });
    }

    /// Pairs over `0..node_count` from raw numbers: `skew` piles them on low nodes
    /// (hubs); neighbours range a little past the nodes (as label numbers may).
    fn pairs_of(node_count: usize, raw: &[(u32, u32)], skew: bool) -> Vec<(u32, u32)> {
        if node_count == 0 {
            return Vec::new();
        }
        let n = node_count as u64;
        raw.iter()
            .map(|&(a, b)| {
                let mut u = u64::from(a) % n;
                if skew {
                    u = u * u / n;
                }
                (u as u32, (u64::from(b) % (n + 2)) as u32)
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn builders_match_the_reference(
            node_count in 0usize..80,
            raw in proptest::collection::vec((any::<u32>(), any::<u32>()), 0..600),
            skew in any::<bool>(),
            threads in 1usize..5,
        ) {
            check(node_count, &pairs_of(node_count, &raw, skew), threads);
        }
    }

    #[test]
    fn empty_graphs_and_isolated_nodes() {
        check(0, &[], 2);
        check(1, &[], 2);
        check(1000, &[], 3);
        check(5, &[(4, 4), (4, 4), (0, 4)], 2);
        check(100_000, &[(99_999, 0), (7, 7), (7, 7)], 4);
    }

    #[test]
    fn large_inputs_with_hubs_take_the_parallel_path() {
        // A few hundred thousand pairs with hubs (one list long enough to be sorted in
        // parallel), duplicates and self-loops.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let n = 50_000usize;
        let mut pairs: Vec<(u32, u32)> = (0..400_000)
            .map(|_| {
                let a = next() % n as u64;
                let u = a * a / n as u64;
                (u as u32, (next() % n as u64) as u32)
            })
            .collect();
        pairs.extend((0..PARALLEL_SORT_MIN as u32 + 1000).map(|i| (3, i % 20_000)));
        pairs.extend((0..1000).map(|i| (i, i)));
        for threads in [2, 4] {
            check(n, &pairs, threads);
        }
    }
}
