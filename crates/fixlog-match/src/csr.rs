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
//! * [`build_parallel`]: the same counting sort on every core, partitioned by node
//!   range so that no two threads touch the same counter and every random access stays
//!   in cache. The nodes are cut into buckets of `2^k` consecutive numbers (about
//!   `BUCKET_PAIRS` pairs each, at most `MAX_BUCKETS`) and the items into pieces, a few
//!   per thread. Each piece counts its pairs per bucket; a prefix sum over (bucket,
//!   piece) gives every piece its own slot in every bucket, and the pieces copy their
//!   pairs, packed `node << 32 | neighbour`, into their slots (a radix partition). Then
//!   each bucket, on its own, does the serial builder's work on its pairs: counts its
//!   nodes' degrees, places the neighbours into its range of the targets, sorts and
//!   deduplicates each list and moves them down. Last, the buckets' kept lengths give
//!   every bucket its final place: offsets are shifted, and when duplicates were
//!   dropped the lists are copied, in parallel, to a targets array of the exact size.
//!   Nothing is atomic and no thread waits for another inside a step. The order in
//!   which a node's neighbours are placed varies, but every list is sorted, so the
//!   result is the serial builder's exactly. A bucket with a large share of the pairs
//!   (the hubs of a degree-ordered copy are all in the last one) sorts its lists on
//!   every core.
//!
//! Memory, besides the items and the result (4 bytes a pair before deduplication, one
//! offset a node): the serial builder one cursor a node; the parallel one the packed
//! pairs (8 bytes a pair: one copy of the pairs) while the buckets are sorted, then at
//! most the deduplicated targets again while they are compacted, and
//! `pieces × buckets` counters.

use crate::graph::NodeIndex;
use rayon::prelude::*;

/// `targets[offsets[u]..offsets[u + 1]]` are the neighbours of `u`; `offsets` has
/// `node_count + 1` entries.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Csr {
    pub offsets: Vec<usize>,
    pub targets: Vec<NodeIndex>,
}

/// Items per piece of work when counting and placing in parallel.
const ITEM_GRAIN: usize = 1 << 12;
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
fn build_serial<'a, T, F, I>(node_count: usize, items: &'a [T], pairs: F) -> Csr
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
    let kept = sort_dedup_lists(&mut targets, &mut offsets[..node_count], 0, false);
    offsets[node_count] = kept;
    targets.truncate(kept);
    targets.shrink_to_fit();
    Csr { offsets, targets }
}

/// Sorts and deduplicates the lists in `buf` and moves them to its front, closing the
/// gaps. `starts[i] - origin` is where list `i` begins in `buf` (each ends where the
/// next begins, the last at `buf.len()`); on return `starts[i]` is where it begins
/// after the move. Returns the length kept. `parallel`: the lists are sorted on every
/// core first (a range holding much of the graph: the hubs of a degree-ordered copy),
/// and a list of `PARALLEL_SORT_MIN` or more is sorted in parallel anyway.
fn sort_dedup_lists(
    buf: &mut [NodeIndex],
    starts: &mut [usize],
    origin: usize,
    parallel: bool,
) -> usize {
    let (count, len) = (starts.len(), buf.len());
    let end_of = |starts: &[usize], i: usize| {
        if i + 1 < count {
            starts[i + 1] - origin
        } else {
            len
        }
    };
    if parallel {
        let mut lists = Vec::with_capacity(count);
        let first = starts.first().map_or(len, |&s| s - origin);
        let mut rest = &mut buf[first..];
        for i in 0..count {
            let (list, tail) = rest.split_at_mut(end_of(starts, i) - (starts[i] - origin));
            lists.push(list);
            rest = tail;
        }
        lists
            .into_par_iter()
            .with_min_len(64)
            .for_each(|list| sort_list(list, true));
    }
    let mut write = 0;
    for i in 0..count {
        let start = starts[i] - origin;
        let end = end_of(starts, i);
        starts[i] = write;
        if !parallel {
            sort_list(&mut buf[start..end], false);
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

fn sort_list(list: &mut [NodeIndex], parallel: bool) {
    if parallel && list.len() >= PARALLEL_SORT_MIN {
        list.par_sort_unstable();
    } else {
        list.sort_unstable();
    }
}

/// At most this many buckets (node ranges) in the parallel builder.
const MAX_BUCKETS: usize = 1 << 12;
/// About this many pairs per bucket (its lists and offsets stay in cache).
const BUCKET_PAIRS: usize = 1 << 16;

/// The counting sort on every core, partitioned by node range (see the module docs).
fn build_parallel<'a, T, F, I>(node_count: usize, items: &'a [T], pairs: F) -> Csr
where
    T: Sync,
    F: Fn(&'a T) -> I + Sync,
    I: IntoIterator<Item = (NodeIndex, NodeIndex)>,
{
    let n = node_count;
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
    // A bucket with a large share of the pairs sorts its lists on every core.
    let heavy = (total / (threads * 2)).max(PARALLEL_SORT_MIN);
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
            *kept = sort_dedup_lists(region, starts, 0, threads > 1 && copy.len() >= heavy);
        });
    drop(copies);
    drop(copied);

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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Lists sorted and deduplicated in place, serially or on every core, with
        /// the first list anywhere in the buffer.
        #[test]
        fn lists_sort_and_deduplicate_in_place(
            lists in proptest::collection::vec(proptest::collection::vec(0u32..20, 0..30), 0..20),
            origin in 0usize..5,
            skip in 0usize..3,
        ) {
            let mut buf = vec![99; skip];
            let mut starts = Vec::new();
            for list in &lists {
                starts.push(origin + buf.len());
                buf.extend(list);
            }
            let expected: Vec<BTreeSet<u32>> =
                lists.iter().map(|l| l.iter().copied().collect()).collect();
            for parallel in [false, true] {
                let (mut buf, mut starts) = (buf.clone(), starts.clone());
                let kept = sort_dedup_lists(&mut buf, &mut starts, origin, parallel);
                starts.push(kept);
                let got: Vec<BTreeSet<u32>> = starts
                    .windows(2)
                    .map(|w| buf[w[0]..w[1]].iter().copied().collect())
                    .collect();
                prop_assert_eq!(&got, &expected);
                for w in starts.windows(2) {
                    prop_assert!(buf[w[0]..w[1]].windows(2).all(|p| p[0] < p[1]));
                }
            }
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
