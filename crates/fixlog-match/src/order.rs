//! Which node order a count may use: the id order the pattern was written against, or
//! the degree order (ascending degree, ties by id), which is what makes triangle and
//! clique counting fast on graphs with hubs.
//!
//! # Why the degree order
//!
//! Symmetry breaking such as `WHERE id(a) < id(b) AND id(b) < id(c)` makes the search
//! extend a node only towards larger ones. With ids in no relation to the structure, a
//! hub keeps its whole neighbour list "forward" (a 30 000-neighbour hub with a small
//! id), and the search intersects those lists again and again. Every fast triangle or
//! clique counter orients edges by degree instead (rank = (degree, id)): a node's
//! neighbours of higher rank are then at most `sqrt(2m)` (each has at least its
//! degree, so more than `sqrt(2m)` of them would need more than `2m` edge ends). If
//! the count does not depend on the order, the matcher can run unchanged on a copy of
//! the graph whose node numbers are the degree ranks ([`crate::Graph::degree_ordered`]):
//! the `WHERE` comparisons then compare ranks.
//!
//! # When the count does not depend on the order
//!
//! Under `iso` semantics a match is an injective map `f` from the `k` pattern nodes to
//! graph nodes that satisfies the pattern's edges and labels (call these matches `M`)
//! and its `WHERE` comparisons `C`. Let `H` be a group of permutations `σ` of the
//! pattern nodes that map the pattern's edges (with their directions and types; on an
//! undirected graph a directed pattern edge is an undirected one) onto its edges and
//! keep every node's labels: the pattern's automorphisms (`automorphisms`). Then
//! `f ∈ M` implies `f∘σ ∈ M`, and `f∘σ = f` only for `σ = id` (`f` is injective), so
//! `M` falls into orbits `{f∘σ : σ ∈ H}` of exactly `|H|` matches each: an orbit is
//! one subgraph instance (the image of the pattern), counted once per automorphism.
//!
//! Fix any total order `<` of the graph's nodes. Since `f` is injective, `f` gives the
//! pattern nodes distinct positions in that order, i.e. a ranking `r: pattern nodes →
//! {0..k-1}` (a bijection), and `f∘σ` gives the ranking `r∘σ`. When every comparison
//! of `C` is between two pattern nodes (`id(x) op id(y)`; no constants), whether `f`
//! satisfies `C` depends only on `r` (for distinct ids `<=` is `<`, `<>` always holds
//! and `=` never does). So if **for every ranking `r`, exactly one `σ ∈ H` makes `r∘σ`
//! satisfy `C`**, every orbit contributes exactly one match, whatever the order: the
//! count is the number of subgraph instances `|M| / |H|`, the same for the id order and
//! the degree order. [`check`] tests exactly this by brute force over the `k!`
//! rankings (`k <= MAX_NODES`): the rankings satisfying `C` must be `k! / |H|` many and
//! no two of them may be in one orbit. (Using a subgroup of the true symmetries, as
//! when redundant pattern edges hide some, only makes the check fail more often, never
//! wrongly pass.) Labels and edge types are conditions on `f` that do not involve ids,
//! so they only enter through `M` and through which permutations are in `H`.
//!
//! The check fails, and counting keeps the id order, under `homo` semantics (`f` need
//! not be injective, so ties break the argument), when rows are returned (they name the
//! nodes: which of an orbit's matches is listed depends on the order), with a
//! comparison against a constant id, with more than [`MAX_NODES`] pattern nodes, and
//! whenever the rankings test fails (e.g. a triangle with only `id(a) < id(b)`: each
//! triangle is counted 3 times in every order, but that is the same count; the test
//! asks for exactly one, which is what symmetry breaking means, and refuses the rest).
//! With no comparison between pattern nodes at all the count depends on no order, so
//! there is nothing to gain and the id order is kept.

use crate::pattern::{CompareOp, EdgeDirection, IdOperand, Output, Pattern, Semantics};
use std::collections::{BTreeSet, HashSet};

/// Patterns with more nodes are not checked (`k!` rankings times the automorphisms).
pub const MAX_NODES: usize = 8;

/// Whether a count uses the degree order, and why (or why not), for `explain`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderDecision {
    /// Count on the degree-ordered copy of the graph.
    pub degree_order: bool,
    /// With the order reversed (highest degree first): every comparison flipped, which
    /// cannot change an order-independent count either (see [`descending_is_better`]).
    pub descending: bool,
    /// A clique pattern, counted along forward lists in degree order
    /// ([`crate::clique`]) rather than on the renumbered copy.
    pub forward_lists: bool,
    /// A 4-cycle pattern, counted by wedges ([`crate::cycle`]): walked in degree order,
    /// every cycle classified by the id order of its nodes, whatever the comparisons.
    /// `degree_order` then says whether the count is one the degree order would give too.
    pub cycle_wedges: bool,
    pub reason: String,
}

/// Decides the node order for `pattern` under `semantics` on a graph that is
/// `undirected` or not (see the module docs).
pub fn decide(pattern: &Pattern, semantics: Semantics, undirected: bool) -> OrderDecision {
    let keep = |reason: String| OrderDecision {
        degree_order: false,
        descending: false,
        forward_lists: false,
        cycle_wedges: false,
        reason,
    };
    if !matches!(pattern.output, Output::Count) {
        return keep(
            "rows are returned, and which match of a subgraph is listed depends on the order"
                .into(),
        );
    }
    if semantics == Semantics::Homo {
        return keep("under homo semantics pattern nodes may share a graph node, so the count can depend on the order".into());
    }
    if pattern
        .comparisons
        .iter()
        .any(|c| matches!(c.operand, IdOperand::Constant(_)))
    {
        return keep("a comparison with a constant id depends on the ids themselves".into());
    }
    if !pattern
        .comparisons
        .iter()
        .any(|c| c.operand != IdOperand::Node(c.node))
    {
        return keep(
            "no id comparison between pattern nodes: the count depends on no order".into(),
        );
    }
    match check(pattern, undirected) {
        Ok(automorphisms) => OrderDecision {
            degree_order: true,
            descending: false,
            forward_lists: false,
            cycle_wedges: false,
            reason: format!(
                "every order of the {} pattern nodes satisfies the id comparisons under exactly one of \
                 the pattern's {automorphisms} automorphisms, so each subgraph is counted once whatever \
                 the node order",
                pattern.nodes.len()
            ),
        },
        Err(why) => keep(why),
    }
}

/// Whether counting in *descending* degree order (every comparison flipped) should be
/// faster than in ascending degree order, for a pattern bound in `bind_order` (pattern
/// nodes by step). Either gives the same count when [`check`] passes: reversing a total
/// order maps the rankings satisfying the flipped comparisons one to one onto those
/// satisfying the comparisons, and commutes with the automorphisms.
///
/// A heuristic on speed only. In ascending degree order a step scanning the list of
/// `x` for candidates `y` is cheap when `y > x` is implied (the forward list of `x`: at
/// most about `sqrt(2m)` long) or when `x < z` is implied for a node `z` bound before
/// (`x` has at most the degree of `z`, so the scan is paid for by the smaller of two
/// degrees, as in Chiba and Nishizeki's counting); otherwise it may scan a hub's whole
/// list for every partial match. A step is *unbounded* when none of its lists is cheap;
/// the first two steps are not counted (their scans total `O(m)`). The orientation with
/// fewer unbounded steps wins, ascending on a tie. Cliques with the `a < b < c < ...`
/// chain have none either way (ascending kept); the 4-cycle `a-b-c-d` with `a` smallest
/// and `b < d` has one ascending (binding `c` scans the list of `b`, which may be a hub
/// above the low-degree `a`) and none descending (`a` becomes the cycle's highest-degree
/// node and `b` is below it).
pub fn descending_is_better(pattern: &Pattern, bind_order: &[usize]) -> bool {
    let k = pattern.nodes.len();
    if k == 0 || k > 64 {
        return false;
    }
    // less[x][y]: `x < y` implied by the comparisons (`<=` is `<` for distinct nodes).
    let mut less = vec![vec![false; k]; k];
    for c in &pattern.comparisons {
        let IdOperand::Node(y) = c.operand else {
            continue;
        };
        let x = c.node;
        match c.op {
            CompareOp::Less | CompareOp::LessEqual => less[x][y] = true,
            CompareOp::Greater | CompareOp::GreaterEqual => less[y][x] = true,
            CompareOp::Equal | CompareOp::NotEqual => {}
        }
    }
    for m in 0..k {
        for x in 0..k {
            for y in 0..k {
                if less[x][m] && less[m][y] {
                    less[x][y] = true;
                }
            }
        }
    }
    let mut adjacent = vec![vec![false; k]; k];
    for e in &pattern.edges {
        adjacent[e.from][e.to] = true;
        adjacent[e.to][e.from] = true;
    }
    let unbounded = |below: &dyn Fn(usize, usize) -> bool| {
        (2..bind_order.len())
            .filter(|&i| {
                let y = bind_order[i];
                let earlier = &bind_order[..i];
                let cheap = earlier
                    .iter()
                    .filter(|&&x| adjacent[x][y])
                    .any(|&x| below(x, y) || earlier.iter().any(|&z| z != x && below(x, z)));
                !cheap
            })
            .count()
    };
    let ascending = unbounded(&|x, y| less[x][y]);
    let descending = unbounded(&|x, y| less[y][x]);
    descending < ascending
}

/// [`decide`], then the orientation ([`descending_is_better`]) for the steps' pattern
/// nodes `bind_order`, said in the reason.
pub fn decide_oriented(
    pattern: &Pattern,
    semantics: Semantics,
    undirected: bool,
    bind_order: &[usize],
) -> OrderDecision {
    let mut decision = decide(pattern, semantics, undirected);
    if decision.degree_order {
        decision.descending = descending_is_better(pattern, bind_order);
        decision.reason.push_str(if decision.descending {
            "; counted in descending rank (every comparison flipped): fewer steps that may scan \
             a hub's whole list for this binding order"
        } else {
            "; counted in ascending rank"
        });
    }
    decision
}

/// `pattern` with every id comparison flipped (`id(a) < id(b)` becomes `id(a) >
/// id(b)`): the same count in the reversed order.
pub fn flipped(pattern: &Pattern) -> Pattern {
    let mut p = pattern.clone();
    for c in &mut p.comparisons {
        c.op = c.op.flipped();
    }
    p
}

/// The rankings test of the module docs, for a pattern whose comparisons are all
/// between pattern nodes: `Ok(|H|)` when every ranking of the pattern nodes satisfies
/// the comparisons under exactly one automorphism, else why not.
pub fn check(pattern: &Pattern, undirected: bool) -> Result<usize, String> {
    let k = pattern.nodes.len();
    if k > MAX_NODES {
        return Err(format!(
            "the pattern has {k} nodes; the order-independence check stops at {MAX_NODES}"
        ));
    }
    let rankings = permutations(k);
    let group = automorphisms(pattern, undirected, &rankings);
    let comparisons: Vec<(usize, usize, crate::pattern::CompareOp)> = pattern
        .comparisons
        .iter()
        .filter_map(|c| match c.operand {
            IdOperand::Node(o) => Some((c.node, o, c.op)),
            IdOperand::Constant(_) => None,
        })
        .collect();
    let satisfying: Vec<&Vec<u8>> = rankings
        .iter()
        .filter(|r| comparisons.iter().all(|&(x, y, op)| op.holds(r[x], r[y])))
        .collect();
    let refuse = || {
        format!(
            "the id comparisons do not pick exactly one of the pattern's {} automorphic matches for \
             every order of its nodes ({} of the {} orders satisfy them), so the count may depend on \
             the order",
            group.len(),
            satisfying.len(),
            rankings.len()
        )
    };
    if satisfying.len() * group.len() != rankings.len() {
        return Err(refuse());
    }
    let set: HashSet<&Vec<u8>> = satisfying.iter().copied().collect();
    let mut moved = vec![0u8; k];
    for r in &satisfying {
        for sigma in group.iter().skip(1) {
            for (x, slot) in moved.iter_mut().enumerate() {
                *slot = r[sigma[x] as usize];
            }
            if set.contains(&moved) {
                return Err(refuse());
            }
        }
    }
    Ok(group.len())
}

/// Every permutation of `0..k` (the identity first), as `k`-element vectors.
pub(crate) fn permutations(k: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut current: Vec<u8> = (0..k as u8).collect();
    fn extend(at: usize, current: &mut Vec<u8>, out: &mut Vec<Vec<u8>>) {
        if at == current.len() {
            out.push(current.clone());
            return;
        }
        for i in at..current.len() {
            current[at..=i].rotate_right(1);
            extend(at + 1, current, out);
            current[at..=i].rotate_left(1);
        }
    }
    extend(0, &mut current, &mut out);
    out
}

/// The permutations among `candidates` (the identity first) that map the pattern's
/// edges onto its edges (direction and type kept; on an `undirected` graph every edge
/// is undirected) and keep every node's labels.
fn automorphisms(pattern: &Pattern, undirected: bool, candidates: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let edge_key = |from: usize,
                    to: usize,
                    direction: EdgeDirection,
                    t: Option<&str>|
     -> (usize, usize, bool, Option<String>) {
        if direction == EdgeDirection::Directed && !undirected {
            (from, to, true, t.map(str::to_string))
        } else {
            (from.min(to), from.max(to), false, t.map(str::to_string))
        }
    };
    let edges: BTreeSet<(usize, usize, bool, Option<String>)> = pattern
        .edges
        .iter()
        .map(|e| edge_key(e.from, e.to, e.direction, e.edge_type.as_deref()))
        .collect();
    let labels: Vec<BTreeSet<&str>> = pattern
        .nodes
        .iter()
        .map(|n| n.labels.iter().map(String::as_str).collect())
        .collect();
    candidates
        .iter()
        .filter(|sigma| {
            (0..sigma.len()).all(|x| labels[x] == labels[sigma[x] as usize])
                && edges.iter().all(|(from, to, directed, t)| {
                    let direction = if *directed {
                        EdgeDirection::Directed
                    } else {
                        EdgeDirection::Undirected
                    };
                    edges.contains(&edge_key(
                        sigma[*from] as usize,
                        sigma[*to] as usize,
                        direction,
                        t.as_deref(),
                    ))
                })
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passes(text: &str, undirected: bool) -> Result<usize, String> {
        check(&Pattern::parse(text).unwrap(), undirected)
    }

    #[test]
    fn permutations_are_all_there_identity_first() {
        let p = permutations(4);
        assert_eq!(p.len(), 24);
        assert_eq!(p[0], vec![0, 1, 2, 3]);
        let set: HashSet<_> = p.iter().collect();
        assert_eq!(set.len(), 24);
        assert_eq!(permutations(0), vec![Vec::<u8>::new()]);
    }

    #[test]
    fn triangle_with_a_chain_passes() {
        let t = "MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)";
        assert_eq!(passes(t, true), Ok(6));
        assert_eq!(passes(t, false), Ok(6));
        // The chain written the other way round, or with `>`.
        let t = "MATCH (a)--(b)--(c)--(a) WHERE id(c) > id(b) AND id(a) < id(b) RETURN count(*)";
        assert_eq!(passes(t, true), Ok(6));
        // `<=` is `<` for distinct nodes.
        let t = "MATCH (a)--(b)--(c)--(a) WHERE id(a) <= id(b) AND id(b) <= id(c) RETURN count(*)";
        assert_eq!(passes(t, true), Ok(6));
    }

    #[test]
    fn triangle_with_one_comparison_fails() {
        let t = "MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) RETURN count(*)";
        assert!(passes(t, true).is_err());
        let t = "MATCH (a)--(b)--(c)--(a) WHERE id(a) <> id(b) AND id(b) < id(c) RETURN count(*)";
        assert!(passes(t, true).is_err());
    }

    #[test]
    fn four_cycle_with_a_smallest_and_b_below_d_passes() {
        let t = "MATCH (a)--(b)--(c)--(d)--(a) WHERE id(a) < id(b) AND id(a) < id(c) \
                 AND id(a) < id(d) AND id(b) < id(d) RETURN count(*)";
        assert_eq!(passes(t, true), Ok(8));
        // Without `b < d` each 4-cycle is counted twice.
        let t = "MATCH (a)--(b)--(c)--(d)--(a) WHERE id(a) < id(b) AND id(a) < id(c) \
                 AND id(a) < id(d) RETURN count(*)";
        assert!(passes(t, true).is_err());
        // The clique chain on a 4-cycle picks 3 of every 8 orders: refused.
        let t = "MATCH (a)--(b)--(c)--(d)--(a) WHERE id(a) < id(b) AND id(b) < id(c) \
                 AND id(c) < id(d) RETURN count(*)";
        assert!(passes(t, true).is_err());
    }

    #[test]
    fn path_with_ends_ordered_passes() {
        let t = "MATCH (a)--(b)--(c) WHERE id(a) < id(c) RETURN count(*)";
        assert_eq!(passes(t, true), Ok(2));
        // Ordering an end and the middle does not break the path's symmetry.
        let t = "MATCH (a)--(b)--(c) WHERE id(a) < id(b) RETURN count(*)";
        assert!(passes(t, true).is_err());
        // A directed path has no symmetry: ordering its ends selects, not breaks.
        let t = "MATCH (a)-->(b)-->(c) WHERE id(a) < id(c) RETURN count(*)";
        assert!(passes(t, false).is_err());
        // ...but on an undirected graph it is the undirected path.
        assert_eq!(passes(t, true), Ok(2));
    }

    #[test]
    fn labels_and_types_limit_the_automorphisms() {
        // `a` is labelled: only b <-> c remains, and `b < c` breaks it.
        let t = "MATCH (a:L)--(b)--(c)--(a) WHERE id(b) < id(c) RETURN count(*)";
        assert_eq!(passes(t, true), Ok(2));
        let t = "MATCH (a:L)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)";
        assert!(passes(t, true).is_err());
        // Typed edges: a-[:X]-b-[:Y]-c-[:X]-a: the swap fixing b... only (a c) maps edges.
        let t = "MATCH (a)-[:X]-(b)-[:Y]-(c)-[:X]-(a) WHERE id(a) < id(c) RETURN count(*)";
        assert!(passes(t, true).is_err());
        let t = "MATCH (a)-[:X]-(b)-[:X]-(c)-[:Y]-(a) WHERE id(a) < id(c) RETURN count(*)";
        assert_eq!(passes(t, true), Ok(2));
    }

    #[test]
    fn four_clique_chain_passes() {
        let t = "MATCH (a)--(b)--(c)--(a), (d)--(a), (d)--(b), (d)--(c) WHERE id(a) < id(b) \
                 AND id(b) < id(c) AND id(c) < id(d) RETURN count(*)";
        assert_eq!(passes(t, true), Ok(24));
    }

    #[test]
    fn orientation() {
        let bind = |t: &str, order: &[&str]| {
            let p = Pattern::parse(t).unwrap();
            let o: Vec<usize> = order
                .iter()
                .map(|n| (0..p.nodes.len()).find(|&i| p.node_name(i) == *n).unwrap())
                .collect();
            descending_is_better(&p, &o)
        };
        let tri = "MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)";
        assert!(!bind(tri, &["a", "b", "c"]));
        let clique = "MATCH (a)--(b)--(c)--(a), (d)--(a), (d)--(b), (d)--(c) WHERE id(a) < id(b) \
                      AND id(b) < id(c) AND id(c) < id(d) RETURN count(*)";
        assert!(!bind(clique, &["a", "b", "c", "d"]));
        let cycle = "MATCH (a)--(b)--(c)--(d)--(a) WHERE id(a) < id(b) AND id(a) < id(c) \
                     AND id(a) < id(d) AND id(b) < id(d) RETURN count(*)";
        assert!(bind(cycle, &["a", "b", "c", "d"]));
        // Flipping twice is the pattern again.
        let p = Pattern::parse(cycle).unwrap();
        assert_eq!(flipped(&flipped(&p)), p);
        assert_eq!(check(&flipped(&p), true), Ok(8));
    }

    #[test]
    fn decisions() {
        let d = |t: &str, s| decide(&Pattern::parse(t).unwrap(), s, true);
        let tri = "MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)";
        assert!(d(tri, Semantics::Iso).degree_order);
        assert!(!d(tri, Semantics::Homo).degree_order);
        let rows = "MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN a";
        assert!(!d(rows, Semantics::Iso).degree_order);
        let constant = "MATCH (a)--(b) WHERE id(a) < id(b) AND id(a) > 3 RETURN count(*)";
        assert!(!d(constant, Semantics::Iso).degree_order);
        let none = "MATCH (a)--(b)--(c)--(a) RETURN count(*)";
        assert!(!d(none, Semantics::Iso).degree_order);
        let edge = "MATCH (a)--(b) WHERE id(a) < id(b) RETURN count(*)";
        assert!(d(edge, Semantics::Iso).degree_order);
    }
}
