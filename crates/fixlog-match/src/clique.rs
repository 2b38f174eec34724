//! Counting cliques (triangles, 4-cliques, ...) along forward lists, the kernel of every
//! fast triangle counter, and the patterns whose count is a number of cliques.
//!
//! # Which counts are clique counts
//!
//! Let the pattern be a complete graph on `k` nodes (every two pattern nodes joined by
//! an edge without a type, no labels, no self-loop edges; on a directed graph every
//! edge undirected), counted under `iso` semantics, with `WHERE` comparisons only
//! between pattern nodes. A match is an injective map of the pattern nodes onto the
//! nodes of a `k`-clique of the graph (its edges exist whatever their types and
//! directions, and no other condition applies), and each clique is the image of exactly
//! `k!` maps, one per ranking of the pattern nodes by the order of the ids they take.
//! Whether a map satisfies the comparisons depends only on that ranking (ids of
//! distinct nodes are distinct: `<=` is `<`, `<>` always holds, `=` never). So the count
//! is `cliques × R`, where `R` is the number of rankings (of the `k!`) satisfying the
//! comparisons: 1 for the usual symmetry breaking `id(a) < id(b) AND id(b) < id(c)`
//! (UNIQ), `k!` without comparisons (EMB). [`ranking_factor`] checks the pattern and
//! computes `R` by trying every ranking (`k <= MAX_NODES`).
//!
//! # Counting the cliques
//!
//! Any total order of the nodes counts each clique once at its lowest node; in degree
//! order (ascending degree, ties by number) every node's *forward* list `F(u)` (its
//! neighbours above it) has at most about `sqrt(2m)` nodes. The `k`-cliques whose lowest
//! node is `a` are the `(k-1)`-cliques within `F(a)`; `Forward::cliques_at` marks the
//! nodes of `F(a)` with level 1 in a byte per graph node, and at level `l` a candidate
//! `x` keeps the nodes of `F(x)` marked `l`, marking them `l + 1` for the next level
//! (and back after it); the last level sums marks. For triangles that is
//! `Σ_a Σ_{b ∈ F(a)} |F(a) ∩ F(b)|` with no search and no branch in the inner loop.
//! The degree-ordered forward lists are built straight from the edges as read
//! ([`crate::Graph`]'s `forward_by_degree`): half the pairs of a full adjacency, and no
//! renumbered copy of the graph.

use crate::graph::NodeIndex;
use crate::order::{permutations, MAX_NODES};
use crate::pattern::{EdgeDirection, Output, Pattern, Semantics};
use rayon::prelude::*;
use std::sync::Mutex;

/// For a pattern whose count is `cliques × R` (see the module docs) on a graph that is
/// `undirected` or not: `(k, R)`. `None` for any other pattern.
pub fn ranking_factor(
    pattern: &Pattern,
    semantics: Semantics,
    undirected: bool,
) -> Option<(usize, u64)> {
    let k = pattern.nodes.len();
    if semantics != Semantics::Iso
        || !matches!(pattern.output, Output::Count)
        || !(3..=MAX_NODES).contains(&k)
        || pattern.nodes.iter().any(|n| !n.labels.is_empty())
    {
        return None;
    }
    let mut joined = vec![false; k * k];
    for e in &pattern.edges {
        if e.from == e.to
            || e.edge_type.is_some()
            || (!undirected && e.direction != EdgeDirection::Undirected)
        {
            return None;
        }
        joined[e.from * k + e.to] = true;
        joined[e.to * k + e.from] = true;
    }
    if (0..k).any(|x| (0..k).any(|y| x != y && !joined[x * k + y])) {
        return None;
    }
    let comparisons = pattern.node_comparisons()?;
    let satisfying = permutations(k)
        .iter()
        .filter(|r| comparisons.iter().all(|&(x, y, op)| op.holds(r[x], r[y])))
        .count();
    Some((k, satisfying as u64))
}

/// Forward lists: the list of `u` is `targets[starts[u]..ends[u]]`, sorted, every node
/// in it above `u`.
pub(crate) struct Forward<'a> {
    pub starts: &'a [usize],
    pub ends: &'a [usize],
    pub targets: &'a [NodeIndex],
}

impl Forward<'_> {
    #[inline]
    fn of(&self, u: NodeIndex) -> &[NodeIndex] {
        &self.targets[self.starts[u as usize]..self.ends[u as usize]]
    }

    /// The number of `k`-cliques (`k >= 2`) whose lowest node is in `first`, on every
    /// core.
    pub fn count(&self, k: usize, first: &[NodeIndex]) -> u64 {
        let n = self.ends.len();
        let pool: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
        first
            .par_iter()
            .map_init(
                || Marks::pooled(n, &pool),
                |marks, &a| self.cliques_at(a, k, marks),
            )
            .sum()
    }

    /// The `k`-cliques whose lowest node is `a`.
    fn cliques_at(&self, a: NodeIndex, k: usize, marks: &mut Marks<'_>) -> u64 {
        let first = self.of(a);
        if k == 2 {
            return first.len() as u64;
        }
        if first.len() < k - 1 {
            return 0;
        }
        for &v in first {
            marks.mark[v as usize] = 1;
        }
        let total = self.extend(first, 1, k, marks);
        for &v in first {
            marks.mark[v as usize] = 0;
        }
        total
    }

    /// Completions of a partial clique of `level` nodes whose common forward
    /// candidates are `candidates`, each marked `level`.
    fn extend(
        &self,
        candidates: &[NodeIndex],
        level: usize,
        k: usize,
        marks: &mut Marks<'_>,
    ) -> u64 {
        let tag = level as u8;
        if level + 2 == k {
            let mark = marks.mark.as_slice();
            return candidates
                .iter()
                .map(|&x| {
                    self.of(x)
                        .iter()
                        .map(|&c| u64::from(mark[c as usize] == tag))
                        .sum::<u64>()
                })
                .sum();
        }
        let mut next = marks
            .levels
            .get_mut(level)
            .map(std::mem::take)
            .unwrap_or_default();
        let mut total = 0;
        for &x in candidates {
            next.clear();
            next.extend(
                self.of(x)
                    .iter()
                    .copied()
                    .filter(|&c| marks.mark[c as usize] == tag),
            );
            if next.len() < k - level - 1 {
                continue;
            }
            for &c in &next {
                marks.mark[c as usize] = tag + 1;
            }
            total += self.extend(&next, level + 1, k, marks);
            for &c in &next {
                marks.mark[c as usize] = tag;
            }
        }
        if marks.levels.len() <= level {
            marks.levels.resize_with(level + 1, Vec::new);
        }
        marks.levels[level] = next;
        total
    }
}

/// A mark per graph node (0 everywhere between first nodes) and a candidate list per
/// level. Rayon makes a `Marks` per piece of work it splits off, so the marks come from
/// and go back to a pool shared by one count.
struct Marks<'p> {
    mark: Vec<u8>,
    levels: Vec<Vec<NodeIndex>>,
    pool: &'p Mutex<Vec<Vec<u8>>>,
}

impl<'p> Marks<'p> {
    fn pooled(n: usize, pool: &'p Mutex<Vec<Vec<u8>>>) -> Marks<'p> {
        let mark = pool
            .lock()
            .ok()
            .and_then(|mut p| p.pop())
            .unwrap_or_else(|| vec![0; n]);
        Marks {
            mark,
            levels: Vec::new(),
            pool,
        }
    }
}

impl Drop for Marks<'_> {
    fn drop(&mut self) {
        if let Ok(mut pool) = self.pool.lock() {
            pool.push(std::mem::take(&mut self.mark));
        }
    }
}
