//! Counting 4-cycles by wedges, and the patterns whose count is a weighted number of
//! 4-cycles.
//!
//! # Which counts are 4-cycle counts
//!
//! Let the pattern have exactly 4 nodes and exactly 4 edges forming one cycle
//! `p0-p1-p2-p3-p0` (written in any order and naming; no repeated pattern edge, no
//! chord, no self-loop edge), every edge without a type, no labels, on a directed graph
//! every edge undirected (`--`; on a graph loaded `--undirected` any direction), counted
//! under `iso` semantics, with `WHERE` comparisons only between pattern nodes (no
//! constants): the rules of [`crate::clique`], for the cycle.
//!
//! A match is an injective map `f` of the pattern nodes to graph nodes such that the 4
//! edges `f(p_i) f(p_{i+1})` exist (whatever their types and directions; chords are
//! allowed: matches are not induced). Its *image* is the edge set `{f(p_i) f(p_{i+1})}`,
//! a 4-cycle `C` of the simple graph underlying the graph (undirected, self-loops and
//! repeated or reversed edges dropped: a self-loop is in no match, since `f` is
//! injective, and pattern edges only ask whether an edge exists). Conversely each
//! 4-cycle `C = x0-x1-x2-x3-x0` of that graph is the image of exactly 8 maps, its
//! automorphisms `f_{s,d}(p_i) = x_{(s + d·i) mod 4}` (`s` in `0..4`, `d = ±1`), and of
//! no map whose image is another cycle. So the matches are partitioned by their
//! images, 8 per 4-cycle, before `WHERE`.
//!
//! Whether `f` satisfies the comparisons depends only on the order of the ids it takes
//! (ids of distinct nodes are distinct: `<=` is `<`, `<>` always holds, `=` never; a
//! comparison of a node with itself is decided by the operator alone). Name a cycle's
//! nodes `v1 < v2 < v3 < v4` by id; its *shape* is the node opposite `v1` in the cycle:
//! `v2`, `v3` or `v4`. The shape fixes the cycle's ranks up to its own symmetry: going
//! round from `v1`, the ranks are `1 3 2 4` (opposite `v2`), `1 2 3 4` (opposite `v3`)
//! or `1 2 4 3` (opposite `v4`), and going the other way round swaps the two
//! neighbours of `v1`, which the 8 maps include anyway. So the number of the 8 maps of
//! a cycle that satisfy the comparisons is a number `R(shape)` that depends on the shape
//! only, and
//!
//! ```text
//! count = Σ_shape cycles(shape) × R(shape)
//! ```
//!
//! [`shape_factors`] checks the pattern and computes the three `R` by trying the 8 maps
//! on each shape's rank sequence: 8 each without comparisons (EMB), 1 each for the
//! usual symmetry breaking `id(a) < id(b), id(a) < id(c), id(a) < id(d), id(b) < id(d)`
//! (UNIQ: `a` must be `v1`, `c` its opposite, and `b < d` picks one direction).
//!
//! # Counting the cycles by shape
//!
//! Every 4-cycle is found once from its node `v` of highest *degree rank* (ascending
//! degree as read, ties by number, as [`crate::Graph::forward_by_degree`] ranks), with
//! `c` its opposite and `{b, d}` the other two: for each `v`, each neighbour `u` ranked
//! below `v`, each neighbour `c` of `u` ranked below `v`, the *wedge* `v-u-c` adds `u`
//! to `W(v, c)`, the common neighbours of `v` and `c` ranked below `v`; the cycles with
//! top `v` and opposite `c` are the pairs of `W(v, c)`. (Chiba and Nishizeki's
//! bound: `u` is ranked below `v`, so it has at most `v`'s degree as read, and the
//! wedges walked total at most `Σ_edges min(degree)`, i.e. `O(m·α)` for arboricity
//! `α`; in id order a hub with a small id would be walked from every node above it.)
//!
//! The shape of the cycle `v-b-c-d` is read off ids alone: let `x < y` be the ids of
//! the diagonal `{v, c}` and put each `u` of `W(v, c)` in a zone: `L` (its id below
//! `x`), `M` (between) or `H` (above `y`); the zone is `[id(u) > id(v)] + [id(u) >
//! id(c)]`. With `p < q` the ids of the other diagonal `{b, d}`: if `x < p`, `v1` is
//! `x`, opposite `y`, and `y`'s rank among the four is 2 if `p, q` are both above it
//! (`H H`), 3 if one is (`M H`) and 4 if neither is (`M M`); if `p < x`, `v1` is `p`,
//! opposite `q`, whose rank is 2 when both of `x, y` are above it (`L L`), 3 when one
//! is (`L M`), 4 when neither is (`L H`). So, with `l, m, h` the sizes of the zones of
//! `W(v, c)`:
//!
//! ```text
//! opposite v2: C(l,2) + C(h,2)     opposite v3: m·(l + h)     opposite v4: C(m,2) + l·h
//! ```
//!
//! (together `C(l + m + h, 2)`, every pair once). Taking `v` as the cycle's smallest id
//! instead (the id order) gives `l = 0`: the three are `C(hi,2)`, `hi·lo` and `C(lo,2)`
//! for the `u` above and below `c`. The degree order only chooses which node the
//! cycle is found from; the shape is still that of the ids, so the count is exact for
//! every set of comparisons. Each list of [`CycleLists`] keeps its neighbours with ids
//! below the node first and those above after, each part sorted by rank: a part is
//! walked up to its first entry ranked at or above `v`, and the zone of a wedge is
//! known from the parts it walks (`u` in the second part of `v`'s list is above `v`,
//! `c` in the first part of `u`'s is below `u`), without looking up an id. When the
//! three `R` are equal (EMB, UNIQ and most symmetry breaking) the zones are not needed:
//! [`CycleLists::count`] sums `C(|W|, 2)`.
//!
//! The counters are dense, per graph node, for each worker (the standard wedge-counting
//! technique: increment, append the node to a touched list when its counter was zero,
//! without a branch, and clear only the touched ones after each top node): a `u32` (4
//! bytes a node) for the plain count, the three zone sizes and their sum (16 bytes a
//! node) for the count by shape; the touched list grows to the most wedges one top node
//! walks. Sums are 128-bit; a final count that does not fit in 64 bits is an error
//! ([`CountOverflow`]), never a wrapped number.

use crate::graph::NodeIndex;
use crate::pattern::{EdgeDirection, Output, Pattern, Semantics};
use rayon::prelude::*;
use std::sync::Mutex;

/// The three shapes of a 4-cycle by the id ranks `1..4` of its nodes, going round from
/// the smallest: the node opposite it is `v2`, `v3` or `v4`.
const SHAPES: [[u8; 4]; 3] = [[0, 2, 1, 3], [0, 1, 2, 3], [0, 1, 3, 2]];

/// For a pattern whose count is `Σ cycles(shape) × R(shape)` (see the module docs) on
/// a graph that is `undirected` or not: `R` for the shapes whose smallest node is
/// opposite `v2`, `v3`, `v4`. `None` for any other pattern.
pub fn shape_factors(
    pattern: &Pattern,
    semantics: Semantics,
    undirected: bool,
) -> Option<[u64; 3]> {
    if semantics != Semantics::Iso
        || !matches!(pattern.output, Output::Count)
        || pattern.nodes.len() != 4
        || pattern.edges.len() != 4
        || pattern.nodes.iter().any(|n| !n.labels.is_empty())
    {
        return None;
    }
    let mut joined = [[false; 4]; 4];
    for e in &pattern.edges {
        if e.from == e.to
            || e.edge_type.is_some()
            || (!undirected && e.direction != EdgeDirection::Undirected)
            || joined[e.from][e.to]
        {
            return None;
        }
        joined[e.from][e.to] = true;
        joined[e.to][e.from] = true;
    }
    // Four distinct edges on four nodes, each node in two of them: a 2-regular graph on
    // 4 nodes, which can only be one 4-cycle (a triangle leaves a node with none).
    if (0..4).any(|x| joined[x].iter().filter(|&&j| j).count() != 2) {
        return None;
    }
    let comparisons = pattern.node_comparisons()?;
    // The cycle as a sequence of pattern nodes: 0, a neighbour, on round.
    let mut cycle = [0usize; 4];
    for i in 1..4 {
        let previous = if i >= 2 { cycle[i - 2] } else { usize::MAX };
        cycle[i] = (0..4).find(|&y| joined[cycle[i - 1]][y] && y != previous && y != cycle[0])?;
    }
    let mut factors = [0u64; 3];
    for (factor, ranks) in factors.iter_mut().zip(SHAPES) {
        for s in 0..4 {
            for d in [1, 3] {
                let mut rank = [0u8; 4];
                for (i, &p) in cycle.iter().enumerate() {
                    rank[p] = ranks[(s + d * i) % 4];
                }
                if comparisons
                    .iter()
                    .all(|&(x, y, op)| op.holds(rank[x], rank[y]))
                {
                    *factor += 1;
                }
            }
        }
    }
    Some(factors)
}

/// A count that does not fit in 64 bits (the matches of a pattern counted without
/// enumerating them: cliques or 4-cycles times the matches each).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountOverflow {
    pub message: String,
}

impl std::fmt::Display for CountOverflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CountOverflow {}

/// `Σ cycles[shape] × factors[shape]`, or the error that it does not fit in 64 bits.
pub(crate) fn weighted(cycles: [u128; 3], factors: [u64; 3]) -> Result<u64, CountOverflow> {
    // At most C(2^32, 4) × 3 cycles (below 2^125) times 8 each: no 128-bit overflow.
    let total: u128 = cycles
        .iter()
        .zip(factors)
        .map(|(&c, f)| c * u128::from(f))
        .sum();
    u64::try_from(total).map_err(|_| CountOverflow {
        message: format!(
            "the count is {total} (4-cycles by shape {cycles:?} times {factors:?} matches \
             each), which does not fit in 64 bits"
        ),
    })
}

/// The simple undirected graph in degree-rank space, as the 4-cycle count walks it
/// (built by [`crate::Graph`]'s `cycle_lists`): the neighbours of rank `u` (self-loops
/// and repeats dropped) are `targets[offsets[u]..offsets[u + 1]]`, the first `below[u]`
/// of them those with an id below `u`'s, the rest those above, each part sorted by rank.
#[derive(Debug)]
pub struct CycleLists {
    pub(crate) offsets: Vec<usize>,
    pub(crate) targets: Vec<NodeIndex>,
    pub(crate) below: Vec<u32>,
}

impl CycleLists {
    /// Entries in all lists: twice the edges of the simple graph.
    pub fn entry_count(&self) -> usize {
        self.targets.len()
    }

    /// The neighbours of `u`: those with ids below `u`'s, and those above, each sorted
    /// by rank. The parts of a count are cut at its top node as they are walked (a
    /// compare per entry, and one mispredicted branch at the end: cheaper here than a
    /// binary search, as most of a list below the top usually is below it).
    #[inline]
    fn parts(&self, u: NodeIndex) -> [&[NodeIndex]; 2] {
        let u = u as usize;
        let (start, end) = (self.offsets[u], self.offsets[u + 1]);
        let middle = start + self.below[u] as usize;
        [&self.targets[start..middle], &self.targets[middle..end]]
    }

    #[inline]
    fn degree(&self, u: NodeIndex) -> usize {
        self.offsets[u as usize + 1] - self.offsets[u as usize]
    }

    /// The number of 4-cycles of the graph, on every core.
    pub fn count(&self) -> u128 {
        let n = self.below.len();
        let pool = Mutex::new(Vec::new());
        (0..n as NodeIndex)
            .into_par_iter()
            .map_init(
                || Counters::pooled(n, false, &pool),
                |counters, v| self.cycles_at(v, counters),
            )
            .sum()
    }

    /// The 4-cycles whose highest-ranked node is `v`: `Σ_c C(|W(v, c)|, 2)`, summed as
    /// each wedge arrives (the `j`-th wedge into `c` makes `j - 1` new pairs).
    fn cycles_at(&self, v: NodeIndex, counters: &mut Counters<'_>) -> u128 {
        let Scratch { count, touched, .. } = &mut counters.scratch;
        let count = count.as_mut_slice();
        // The nodes touched: `touched[..len]`, appended without a branch (room for every
        // wedge through `u` is made before walking them).
        let mut len = 0;
        let mut total: u128 = 0;
        for part in self.parts(v) {
            for &u in part {
                if u >= v {
                    break;
                }
                make_room(touched, len + self.degree(u));
                // At most `n` wedges through `u`, each adding below `n`: fits 64 bits.
                let mut pairs: u64 = 0;
                for wedges in self.parts(u) {
                    for &c in wedges {
                        if c >= v {
                            break;
                        }
                        let before = count[c as usize];
                        count[c as usize] = before + 1;
                        pairs += u64::from(before);
                        touched[len] = c;
                        len += usize::from(before == 0);
                    }
                }
                total += u128::from(pairs);
            }
        }
        for &c in &touched[..len] {
            count[c as usize] = 0;
        }
        total
    }

    /// The number of 4-cycles of each shape (the node opposite the smallest id is the
    /// second, third or fourth smallest), on every core.
    pub fn count_by_shape(&self) -> [u128; 3] {
        let n = self.below.len();
        let pool = Mutex::new(Vec::new());
        (0..n as NodeIndex)
            .into_par_iter()
            .map_init(
                || Counters::pooled(n, true, &pool),
                |counters, v| self.shapes_at(v, counters),
            )
            .reduce(|| [0; 3], |x, y| [x[0] + y[0], x[1] + y[1], x[2] + y[2]])
    }

    /// The 4-cycles whose highest-ranked node is `v`, by shape (see the module docs):
    /// the wedges `v-u-c` sorted into the zones of `u` per `c`, then the pairs counted.
    fn shapes_at(&self, v: NodeIndex, counters: &mut Counters<'_>) -> [u128; 3] {
        let Scratch { cells, touched, .. } = &mut counters.scratch;
        let cells = cells.as_mut_slice();
        let mut len = 0;
        for (above_v, part) in self.parts(v).into_iter().enumerate() {
            for &u in part {
                if u >= v {
                    break;
                }
                make_room(touched, len + self.degree(u));
                let [below_u, above_u] = self.parts(u);
                for (zone, wedges) in [(above_v + 1, below_u), (above_v, above_u)] {
                    for &c in wedges {
                        if c >= v {
                            break;
                        }
                        let cell = &mut cells[c as usize];
                        let seen = cell[3];
                        cell[3] = seen + 1;
                        cell[zone] += 1;
                        touched[len] = c;
                        len += usize::from(seen == 0);
                    }
                }
            }
        }
        let mut shapes = [0u128; 3];
        for &c in &touched[..len] {
            let [l, m, h, _] = std::mem::take(&mut cells[c as usize]);
            let (l, m, h) = (u128::from(l), u128::from(m), u128::from(h));
            let pairs = |x: u128| x * x.saturating_sub(1) / 2;
            shapes[0] += pairs(l) + pairs(h);
            shapes[1] += m * (l + h);
            shapes[2] += pairs(m) + l * h;
        }
        shapes
    }
}

/// One worker's counters: a counter per graph node (`count` for the plain count, `cells`
/// of the zones `l, m, h` and their sum for the count by shape), zero between top
/// nodes, and room for the nodes touched since (`touched`).
#[derive(Default)]
struct Scratch {
    count: Vec<u32>,
    cells: Vec<[u32; 4]>,
    touched: Vec<NodeIndex>,
}

/// Rayon makes a [`Counters`] per piece of work it splits off, so their scratch comes
/// from and goes back to a pool shared by one count.
struct Counters<'p> {
    scratch: Scratch,
    pool: &'p Mutex<Vec<Scratch>>,
}

impl<'p> Counters<'p> {
    /// Counters for `n` nodes, with `cells` when counting by shape, else `count`.
    fn pooled(n: usize, by_shape: bool, pool: &'p Mutex<Vec<Scratch>>) -> Counters<'p> {
        let mut scratch = pool
            .lock()
            .ok()
            .and_then(|mut p| p.pop())
            .unwrap_or_default();
        if by_shape {
            scratch.cells.resize(n, [0; 4]);
        } else {
            scratch.count.resize(n, 0);
        }
        Counters { scratch, pool }
    }
}

/// Makes `touched` at least `len` long (it grows to the most wedges one top node's
/// walk may touch, not to the node count).
#[inline]
fn make_room(touched: &mut Vec<NodeIndex>, len: usize) {
    if touched.len() < len {
        touched.resize(len.next_power_of_two(), 0);
    }
}

impl Drop for Counters<'_> {
    fn drop(&mut self) {
        if let Ok(mut pool) = self.pool.lock() {
            pool.push(std::mem::take(&mut self.scratch));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn factors(text: &str, undirected: bool) -> Option<[u64; 3]> {
        shape_factors(&Pattern::parse(text).unwrap(), Semantics::Iso, undirected)
    }

    #[test]
    fn shape_factors_of_the_usual_patterns() {
        let cycle = "MATCH (a)--(b)--(c)--(d)--(a)";
        assert_eq!(
            factors(&format!("{cycle} RETURN count(*)"), false),
            Some([8; 3])
        );
        let uniq = format!(
            "{cycle} WHERE id(a) < id(b) AND id(a) < id(c) AND id(a) < id(d) AND id(b) < id(d) \
             RETURN count(*)"
        );
        assert_eq!(factors(&uniq, false), Some([1; 3]));
        // Without `b < d`: twice per cycle.
        let half = format!(
            "{cycle} WHERE id(a) < id(b) AND id(a) < id(c) AND id(a) < id(d) RETURN count(*)"
        );
        assert_eq!(factors(&half, false), Some([2; 3]));
        // A chain along the cycle depends on the shape: `a < b < c < d` going round
        // needs the ranks ascending round the cycle, which only the shape opposite v3
        // has (`1 2 3 4`, in one direction from v1).
        let chain = format!(
            "{cycle} WHERE id(a) < id(b) AND id(b) < id(c) AND id(c) < id(d) RETURN count(*)"
        );
        assert_eq!(factors(&chain, false), Some([0, 1, 0]));
        let two = format!("{cycle} WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)");
        let got = factors(&two, false).unwrap();
        assert!(got[0] != got[1] || got[1] != got[2], "{got:?}");
        // `=` between two nodes never holds; `<>` always does.
        assert_eq!(
            factors(
                &format!("{cycle} WHERE id(a) = id(c) RETURN count(*)"),
                false
            ),
            Some([0; 3])
        );
        assert_eq!(
            factors(
                &format!("{cycle} WHERE id(a) <> id(c) RETURN count(*)"),
                false
            ),
            Some([8; 3])
        );
        // The same cycle written in another order and direction.
        assert_eq!(
            factors(
                "MATCH (c)--(b), (d)--(c), (a)--(d), (b)--(a) WHERE id(a) < id(b) AND \
                 id(a) < id(c) AND id(a) < id(d) AND id(b) < id(d) RETURN count(*)",
                false
            ),
            Some([1; 3])
        );
    }

    #[test]
    fn other_patterns_are_not_four_cycles() {
        let no =
            |text: &str, undirected: bool| assert_eq!(factors(text, undirected), None, "{text}");
        // A chord, a repeated edge, a triangle with a pendant, a labelled node, a typed
        // edge, a constant, rows, a self-loop, a directed edge on a directed graph.
        no(
            "MATCH (a)--(b)--(c)--(d)--(a), (a)--(c) RETURN count(*)",
            true,
        );
        no(
            "MATCH (a)--(b)--(c)--(d)--(a), (b)--(a) RETURN count(*)",
            true,
        );
        no("MATCH (a)--(b)--(c)--(a), (c)--(d) RETURN count(*)", true);
        no("MATCH (a:X)--(b)--(c)--(d)--(a) RETURN count(*)", true);
        no("MATCH (a)-[:T]-(b)--(c)--(d)--(a) RETURN count(*)", true);
        no(
            "MATCH (a)--(b)--(c)--(d)--(a) WHERE id(a) < 5 RETURN count(*)",
            true,
        );
        no("MATCH (a)--(b)--(c)--(d)--(a) RETURN a", true);
        no("MATCH (a)--(b)--(c)--(d), (d)--(d) RETURN count(*)", true);
        no("MATCH (a)-->(b)--(c)--(d)--(a) RETURN count(*)", false);
        assert_eq!(
            factors("MATCH (a)-->(b)--(c)<--(d)--(a) RETURN count(*)", true),
            Some([8; 3])
        );
        let homo = Pattern::parse("MATCH (a)--(b)--(c)--(d)--(a) RETURN count(*)").unwrap();
        assert_eq!(shape_factors(&homo, Semantics::Homo, true), None);
    }

    #[test]
    fn an_overflowing_count_is_an_error() {
        assert_eq!(weighted([1, 2, 3], [1, 1, 8]), Ok(27));
        let big = u128::from(u64::MAX);
        assert!(weighted([big, 0, 0], [1, 0, 0]).is_ok());
        assert!(weighted([big, 0, 0], [2, 0, 0]).is_err());
        assert!(weighted([big, 1, 0], [1, 1, 0]).is_err());
    }
}
