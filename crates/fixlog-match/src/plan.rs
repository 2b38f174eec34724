//! The planner: a pattern against a graph becomes a sequence of steps, one pattern node
//! each, in the order the search binds them.
//!
//! The join is generic join (a worst-case-optimal join): step `i` binds its pattern
//! node to the intersection of the sorted neighbour lists of the graph nodes already
//! bound to its pattern neighbours, never materializing a pairwise join. The order
//! matters for speed only: the first node is the one with the fewest candidates after
//! filtering (ties: the highest pattern degree), and each next node is the one with
//! the most already-bound pattern neighbours (most constrained; ties: fewer candidates,
//! higher degree), so every step after the first intersects at least one list when
//! the pattern is connected.
//!
//! Candidate filters (GpSM/GraphQL-style): a graph node is a candidate for a pattern
//! node only if it has all the node's labels and, for every adjacency the node uses,
//! at least as many neighbours as the pattern node has there (under `iso`, where
//! neighbours are distinct; under `homo` at least one). Filters are bitsets over the
//! graph's nodes, computed once per pattern.
//!
//! `WHERE` comparisons between two nodes run at the later of the two: `<`, `<=`, `>`,
//! `>=` cut the sorted lists to a range before intersecting (so symmetry breaking like
//! `id(a) < id(b)` halves the work instead of filtering afterwards), `=`/`<>` are
//! checks. Comparisons with a constant are ranges (or a check) on their node.

use crate::graph::{Adjacency, AdjacencyKey, Direction, Graph, NodeIndex};
use crate::pattern::{CompareOp, EdgeDirection, IdOperand, Output, Pattern, Semantics};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

/// A sorted neighbour list to intersect: the neighbours, along `key`, of the graph node
/// bound at step `from_step`.
#[derive(Clone, Debug)]
pub struct Source {
    pub from_step: usize,
    pub key: AdjacencyKey,
    pub adjacency: Arc<Adjacency>,
}

/// Which graph nodes may bind a pattern node, whatever else is bound.
#[derive(Clone, Debug, Default)]
pub struct CandidateFilter {
    /// Required label numbers, sorted.
    pub labels: Vec<u32>,
    /// `(adjacency, least degree)`.
    pub min_degrees: Vec<(AdjacencyKey, usize, Arc<Adjacency>)>,
    /// One bit per graph node; `None` when every node passes.
    pub bits: Option<Vec<u64>>,
    /// How many graph nodes pass.
    pub passing: usize,
}

impl CandidateFilter {
    #[inline]
    pub fn allows(&self, node: NodeIndex) -> bool {
        match &self.bits {
            None => true,
            Some(bits) => bits[node as usize / 64] >> (node % 64) & 1 == 1,
        }
    }
}

/// Binding one pattern node.
#[derive(Clone, Debug)]
pub struct Step {
    /// The pattern node bound here.
    pub node: usize,
    /// Lists intersected to get the candidates; empty: every node passing `filter`.
    pub sources: Vec<Source>,
    /// For a step without sources: the nodes passing the filter, sorted.
    pub all_candidates: Vec<NodeIndex>,
    pub filter: CandidateFilter,
    /// Lower bounds `binding[step] + add` (candidates must be at least this).
    pub lower_from: Vec<(usize, u32)>,
    /// Upper bounds `binding[step] + add` (candidates must be below this).
    pub upper_from: Vec<(usize, u32)>,
    /// Range from comparisons with constants: `const_lower..const_upper`.
    pub const_lower: NodeIndex,
    pub const_upper: NodeIndex,
    /// Earlier steps whose graph node a candidate must differ from.
    pub distinct_from: Vec<usize>,
    /// Earlier steps whose graph node a candidate must equal.
    pub equal_to: Vec<usize>,
    /// Graph nodes a candidate must not be (`id(a) <> 7`).
    pub excluded: Vec<NodeIndex>,
    /// Adjacencies in which the candidate must have a self-loop (`(a)-->(a)`).
    pub self_loops: Vec<Arc<Adjacency>>,
    /// Whether any per-candidate check remains after intersecting and cutting to range
    /// (other than `distinct_from`/`excluded`, which counting handles by subtraction).
    pub needs_checks: bool,
}

/// A pattern planned against a graph.
#[derive(Clone, Debug)]
pub struct Plan {
    pub semantics: Semantics,
    pub steps: Vec<Step>,
    /// Why the pattern can match nothing (an unknown label, `id(a) < id(a)`), if so.
    pub empty_because: Option<String>,
    /// For `RETURN a, b`: the steps binding the returned nodes, in column order.
    pub projection: Option<Vec<usize>>,
    pub limit: Option<u64>,
    pub node_count: usize,
    /// When counting, the last step's intersection is remembered per first-step
    /// binding, keyed by the binding of this step (its only other source): see
    /// `memo_key_step`.
    pub memo_key_step: Option<usize>,
    /// Whether the plan's node numbers are degree ranks: it was planned on
    /// [`Graph::degree_ordered`] (for a count whose answer does not depend on the node
    /// order, see [`crate::order`]).
    pub degree_order: bool,
}

/// The step whose binding keys a memo of the last step's intersection, if memoizing
/// pays: the last step intersects exactly the lists of step 0 and of one step `j`, and
/// some other step varies (so, with step 0 fixed, the same `j` binding comes back for
/// many partial matches: the 4-cycle `a-b-c-d`, bound in that order, meets each
/// `(a, c)` once per `b`). Ranges and distinctness depend on the other
/// steps, so they are applied to the remembered list at each use.
fn memo_key_step(steps: &[Step]) -> Option<usize> {
    let last = steps.len().checked_sub(1)?;
    let step = &steps[last];
    if last < 3 || step.needs_checks {
        return None;
    }
    match step.sources.as_slice() {
        [a, b] if a.from_step == 0 && b.from_step > 0 => Some(b.from_step),
        _ => None,
    }
}

fn key(direction: Direction, edge_type: Option<u32>) -> AdjacencyKey {
    AdjacencyKey {
        direction,
        edge_type,
    }
}

/// A pattern edge seen from one of its ends: the adjacency of `node` containing `other`.
struct Incidence {
    node: usize,
    other: usize,
    key: AdjacencyKey,
}

/// Plans `pattern` against `graph` under `semantics` (see the module docs).
pub fn plan(graph: &Graph, pattern: &Pattern, semantics: Semantics) -> Plan {
    let k = pattern.nodes.len();
    let mut empty_because = None;
    // Edge types to numbers; an unknown type matches nothing.
    let mut incidences = Vec::new();
    let mut self_loop_keys: Vec<Vec<AdjacencyKey>> = vec![Vec::new(); k];
    for edge in &pattern.edges {
        let edge_type = match &edge.edge_type {
            None => None,
            Some(name) => match graph.edge_type_number(name) {
                Some(t) => Some(t),
                None => {
                    empty_because.get_or_insert(format!("the graph has no edges of type `{name}`"));
                    None
                }
            },
        };
        if edge.from == edge.to {
            self_loop_keys[edge.from].push(graph.canonical(key(Direction::Out, edge_type)));
            continue;
        }
        let (forward, backward) = match edge.direction {
            EdgeDirection::Directed => (Direction::Out, Direction::In),
            EdgeDirection::Undirected => (Direction::Both, Direction::Both),
        };
        incidences.push(Incidence {
            node: edge.from,
            other: edge.to,
            key: graph.canonical(key(forward, edge_type)),
        });
        incidences.push(Incidence {
            node: edge.to,
            other: edge.from,
            key: graph.canonical(key(backward, edge_type)),
        });
    }
    for keys in &mut self_loop_keys {
        keys.sort();
        keys.dedup();
    }
    // Distinct pattern neighbours per (node, adjacency).
    let mut neighbours: Vec<BTreeMap<AdjacencyKey, Vec<usize>>> = vec![BTreeMap::new(); k];
    for inc in &incidences {
        let list = neighbours[inc.node].entry(inc.key).or_default();
        if !list.contains(&inc.other) {
            list.push(inc.other);
        }
    }
    let filters: Vec<CandidateFilter> = (0..k)
        .map(|p| {
            let mut labels = Vec::new();
            for name in &pattern.nodes[p].labels {
                match graph.label_number(name) {
                    Some(l) => labels.push(l),
                    None => {
                        empty_because
                            .get_or_insert(format!("no node of the graph has label `{name}`"));
                    }
                }
            }
            labels.sort_unstable();
            labels.dedup();
            let mut degrees: BTreeMap<AdjacencyKey, usize> = BTreeMap::new();
            for (&key, list) in &neighbours[p] {
                let need = match semantics {
                    Semantics::Iso => list.len(),
                    Semantics::Homo => 1,
                };
                degrees.insert(key, need);
            }
            for &key in &self_loop_keys[p] {
                let entry = degrees.entry(key).or_insert(0);
                *entry = match semantics {
                    Semantics::Iso => *entry + 1,
                    Semantics::Homo => (*entry).max(1),
                };
            }
            let min_degrees = degrees
                .into_iter()
                .map(|(key, d)| (key, d, graph.adjacency(key)))
                .collect();
            build_filter(graph, labels, min_degrees)
        })
        .collect();

    let order = choose_order(k, &neighbours, &filters);
    let mut position = vec![usize::MAX; k];
    for (i, &p) in order.iter().enumerate() {
        position[p] = i;
    }

    let mut steps: Vec<Step> = order
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let mut sources: Vec<Source> = Vec::new();
            for (&key, others) in &neighbours[p] {
                for &other in others {
                    if position[other] < i {
                        sources.push(Source {
                            from_step: position[other],
                            // The edge seen from `other`'s side: the reverse direction.
                            key: reverse(graph, key),
                            adjacency: graph.adjacency(reverse(graph, key)),
                        });
                    }
                }
            }
            sources.sort_by_key(|s| (s.from_step, s.key));
            let filter =
                residual_filter(graph, &filters[p], &neighbours[p], &position, i, semantics);
            let all_candidates = if sources.is_empty() {
                (0..graph.node_count() as NodeIndex)
                    .filter(|&u| filter.allows(u))
                    .collect()
            } else {
                Vec::new()
            };
            let distinct_from = match semantics {
                Semantics::Iso => (0..i)
                    .filter(|&s| {
                        graph.has_self_loops() || !sources.iter().any(|src| src.from_step == s)
                    })
                    .collect(),
                Semantics::Homo => Vec::new(),
            };
            Step {
                node: p,
                sources,
                all_candidates,
                filter,
                lower_from: Vec::new(),
                upper_from: Vec::new(),
                const_lower: 0,
                const_upper: graph.node_count() as NodeIndex,
                distinct_from,
                equal_to: Vec::new(),
                excluded: Vec::new(),
                self_loops: self_loop_keys[p]
                    .iter()
                    .map(|&k| graph.adjacency(k))
                    .collect(),
                needs_checks: false,
            }
        })
        .collect();

    for c in &pattern.comparisons {
        match c.operand {
            IdOperand::Constant(value) => {
                let step = &mut steps[position[c.node]];
                let below = graph.count_below(value);
                let at = graph.index_of(value);
                match c.op {
                    CompareOp::Less => step.const_upper = step.const_upper.min(below),
                    CompareOp::LessEqual => {
                        step.const_upper = step.const_upper.min(below + at.map_or(0, |_| 1))
                    }
                    CompareOp::Greater => {
                        step.const_lower = step.const_lower.max(below + at.map_or(0, |_| 1))
                    }
                    CompareOp::GreaterEqual => step.const_lower = step.const_lower.max(below),
                    CompareOp::Equal => match at {
                        Some(u) => {
                            step.const_lower = step.const_lower.max(u);
                            step.const_upper = step.const_upper.min(u + 1);
                        }
                        None => {
                            empty_because.get_or_insert(format!("the graph has no node {value}"));
                        }
                    },
                    CompareOp::NotEqual => step.excluded.extend(at),
                }
            }
            IdOperand::Node(other) if other == c.node => {
                if !c.op.holds(0, 0) {
                    empty_because.get_or_insert(format!(
                        "`id({0}) {1} id({0})` never holds",
                        pattern.node_name(c.node),
                        c.op.symbol()
                    ));
                }
            }
            IdOperand::Node(other) => {
                // Put the later-bound node on the left: `later op earlier`.
                let (later, earlier, op) = if position[c.node] > position[other] {
                    (position[c.node], position[other], c.op)
                } else {
                    (position[other], position[c.node], c.op.flipped())
                };
                let step = &mut steps[later];
                match op {
                    CompareOp::Greater => step.lower_from.push((earlier, 1)),
                    CompareOp::GreaterEqual => step.lower_from.push((earlier, 0)),
                    CompareOp::Less => step.upper_from.push((earlier, 0)),
                    CompareOp::LessEqual => step.upper_from.push((earlier, 1)),
                    CompareOp::NotEqual => step.distinct_from.push(earlier),
                    CompareOp::Equal => {
                        if semantics == Semantics::Iso {
                            empty_because.get_or_insert(format!(
                                "under iso semantics `{}` and `{}` are different nodes, so `=` never holds",
                                pattern.node_name(c.node),
                                pattern.node_name(other)
                            ));
                        }
                        step.equal_to.push(earlier);
                    }
                }
                // A strict bound already makes the nodes differ.
                if matches!(op, CompareOp::Greater | CompareOp::Less) {
                    step.distinct_from.retain(|&s| s != earlier);
                }
            }
        }
    }
    for step in &mut steps {
        step.distinct_from.sort_unstable();
        step.distinct_from.dedup();
        step.excluded.sort_unstable();
        step.excluded.dedup();
        step.needs_checks = (step.filter.bits.is_some() && !step.sources.is_empty())
            || !step.equal_to.is_empty()
            || !step.self_loops.is_empty();
    }
    let projection = match &pattern.output {
        Output::Count => None,
        Output::Nodes(nodes) => Some(nodes.iter().map(|&n| position[n]).collect()),
    };
    let memo_key_step = memo_key_step(&steps);
    Plan {
        semantics,
        memo_key_step,
        steps,
        empty_because,
        projection,
        limit: pattern.limit,
        node_count: graph.node_count(),
        degree_order: graph.is_degree_ordered(),
    }
}

/// The adjacency seen from the other end of an edge.
fn reverse(graph: &Graph, k: AdjacencyKey) -> AdjacencyKey {
    let direction = match k.direction {
        Direction::Out => Direction::In,
        Direction::In => Direction::Out,
        Direction::Both => Direction::Both,
    };
    graph.canonical(key(direction, k.edge_type))
}

fn build_filter(
    graph: &Graph,
    labels: Vec<u32>,
    min_degrees: Vec<(AdjacencyKey, usize, Arc<Adjacency>)>,
) -> CandidateFilter {
    let n = graph.node_count();
    let allows = |u: NodeIndex| {
        min_degrees.iter().all(|(_, d, adj)| adj.degree(u) >= *d) && {
            let have = graph.node_labels(u);
            labels.iter().all(|l| have.binary_search(l).is_ok())
        }
    };
    let words: Vec<u64> = (0..n.div_ceil(64))
        .into_par_iter()
        .with_min_len(crate::graph::PARALLEL_MIN_NODES / 64)
        .map(|w| {
            let mut word = 0u64;
            for bit in 0..64 {
                let u = w * 64 + bit;
                if u < n && allows(u as NodeIndex) {
                    word |= 1 << bit;
                }
            }
            word
        })
        .collect();
    let passing = words.iter().map(|w| w.count_ones() as usize).sum();
    CandidateFilter {
        labels,
        min_degrees,
        bits: if passing == n { None } else { Some(words) },
        passing,
    }
}

/// The filter of a pattern node at step `i`: its labels, and only the degree bounds
/// that the step's intersection does not already imply. A bound on adjacency `key` is
/// implied once the node's pattern neighbours along `key` are bound (all of them under
/// `iso`, where they are distinct graph nodes; one under `homo`), since the candidate is
/// then in each of their lists.
fn residual_filter(
    graph: &Graph,
    full: &CandidateFilter,
    neighbours: &BTreeMap<AdjacencyKey, Vec<usize>>,
    position: &[usize],
    i: usize,
    semantics: Semantics,
) -> CandidateFilter {
    let implied = |key: &AdjacencyKey| {
        let Some(others) = neighbours.get(key) else {
            return false;
        };
        match semantics {
            Semantics::Iso => others.iter().all(|&o| position[o] < i),
            Semantics::Homo => others.iter().any(|&o| position[o] < i),
        }
    };
    if !full.min_degrees.iter().any(|(k, _, _)| implied(k)) {
        return full.clone();
    }
    let kept = full
        .min_degrees
        .iter()
        .filter(|(k, _, _)| !implied(k))
        .cloned()
        .collect();
    build_filter(graph, full.labels.clone(), kept)
}

/// The binding order (see the module docs).
fn choose_order(
    k: usize,
    neighbours: &[BTreeMap<AdjacencyKey, Vec<usize>>],
    filters: &[CandidateFilter],
) -> Vec<usize> {
    let pattern_neighbours: Vec<Vec<usize>> = neighbours
        .iter()
        .map(|by_key| {
            let mut all: Vec<usize> = by_key.values().flatten().copied().collect();
            all.sort_unstable();
            all.dedup();
            all
        })
        .collect();
    let mut placed = vec![false; k];
    let mut order = Vec::with_capacity(k);
    while order.len() < k {
        let best = (0..k).filter(|&p| !placed[p]).min_by_key(|&p| {
            let bound = pattern_neighbours[p].iter().filter(|&&q| placed[q]).count();
            (
                std::cmp::Reverse(bound),
                filters[p].passing,
                std::cmp::Reverse(pattern_neighbours[p].len()),
                p,
            )
        });
        let Some(p) = best else { break };
        placed[p] = true;
        order.push(p);
    }
    order
}

fn describe_key(graph: &Graph, k: AdjacencyKey) -> String {
    let direction = if graph.is_undirected() {
        "nbr"
    } else {
        match k.direction {
            Direction::Out => "out",
            Direction::In => "in",
            Direction::Both => "nbr",
        }
    };
    match k.edge_type {
        Some(t) => format!("{direction}[:{}]", graph.type_names.name(t)),
        None => direction.to_string(),
    }
}

/// `fixlog match --explain`: the order, the filters, the join; `order`: the node order
/// a count uses and why (see [`crate::order`]).
pub fn explain(
    graph: &Graph,
    pattern: &Pattern,
    plan: &Plan,
    order: Option<&crate::order::OrderDecision>,
) -> String {
    let mut s = String::new();
    let semantics = match plan.semantics {
        Semantics::Iso => "iso (injective: distinct pattern nodes bind distinct graph nodes)",
        Semantics::Homo => "homo (homomorphism: pattern nodes may share a graph node)",
    };
    let _ = writeln!(s, "pattern: {}", pattern.text.trim());
    let _ = writeln!(
        s,
        "graph: {} nodes, {} stored edges ({}{})",
        graph.node_count(),
        graph.edge_count(),
        if graph.is_undirected() {
            "undirected"
        } else {
            "directed"
        },
        if graph.has_self_loops() {
            ", with self-loops"
        } else {
            ""
        }
    );
    let _ = writeln!(s, "semantics: {semantics}");
    if let Some(order) = order.filter(|o| o.cycle_wedges) {
        let _ = writeln!(
            s,
            "node order: walked in degree order (ascending degree, ties by id), every cycle \
             classified by the id order of its nodes: {}",
            order.reason
        );
        let _ = writeln!(
            s,
            "count: 4-cycle wedge count (per top node, counters per opposite node over the \
             wedges below it; parallel over the top nodes); the join below is not run"
        );
    } else if let Some(order) = order {
        let _ = writeln!(
            s,
            "node order: {}: {}",
            if order.degree_order {
                "degree (nodes renumbered by degree rank: ascending degree, ties by id; `id` \
                 comparisons compare these ranks)"
            } else {
                "id"
            },
            order.reason
        );
    }
    let _ = writeln!(
        s,
        "join: worst-case-optimal (generic join): one pattern node per step, candidates = intersection \
         of the sorted adjacency lists (CSR) of its bound neighbours (merge or galloping), \
         parallel over the first step's candidates"
    );
    if let Some(why) = &plan.empty_because {
        let _ = writeln!(s, "no matches: {why}");
    }
    let name = |step: usize| pattern.node_name(plan.steps[step].node);
    for (i, step) in plan.steps.iter().enumerate() {
        let _ = writeln!(s, "step {}: bind {}", i + 1, name(i));
        if step.sources.is_empty() {
            let _ = writeln!(
                s,
                "  candidates: every node passing the filter ({} of {})",
                step.filter.passing,
                graph.node_count()
            );
        } else {
            let lists: Vec<String> = step
                .sources
                .iter()
                .map(|src| format!("{}({})", describe_key(graph, src.key), name(src.from_step)))
                .collect();
            let _ = writeln!(s, "  candidates: {}", lists.join(" ∩ "));
        }
        let mut filter = Vec::new();
        for &l in &step.filter.labels {
            filter.push(format!("label {}", graph.label_names.name(l)));
        }
        for (k, d, _) in &step.filter.min_degrees {
            filter.push(format!("{}-degree >= {d}", describe_key(graph, *k)));
        }
        if !filter.is_empty() {
            let _ = writeln!(
                s,
                "  filter: {} ({} of {} nodes pass)",
                filter.join(", "),
                step.filter.passing,
                graph.node_count()
            );
        }
        let mut checks = Vec::new();
        for &(from, add) in &step.lower_from {
            let op = if add == 1 { ">" } else { ">=" };
            checks.push(format!("id {op} id({}) (range cut)", name(from)));
        }
        for &(from, add) in &step.upper_from {
            let op = if add == 1 { "<=" } else { "<" };
            checks.push(format!("id {op} id({}) (range cut)", name(from)));
        }
        if step.const_lower > 0 || (step.const_upper as usize) < graph.node_count() {
            checks.push("id in a constant range (range cut)".to_string());
        }
        for &from in &step.equal_to {
            checks.push(format!("= {}", name(from)));
        }
        if !step.distinct_from.is_empty() {
            let names: Vec<String> = step.distinct_from.iter().map(|&f| name(f)).collect();
            checks.push(format!("distinct from {}", names.join(", ")));
        }
        if !step.excluded.is_empty() {
            checks.push(format!("not {} constant id(s)", step.excluded.len()));
        }
        if !step.self_loops.is_empty() {
            checks.push("has a self-loop".to_string());
        }
        if !checks.is_empty() {
            let _ = writeln!(s, "  checks: {}", checks.join(", "));
        }
    }
    if let (Some(j), None) = (plan.memo_key_step, &plan.projection) {
        let _ = writeln!(
            s,
            "memo: the last step's intersection is remembered per ({}, {}) and reused",
            name(0),
            name(j)
        );
    }
    let output = match &plan.projection {
        None => "count(*) (counted, never materialized; the last step counts its list)".to_string(),
        Some(_) => format!(
            "rows of {} in a deterministic order (per-chunk buffers written in order)",
            pattern.columns().join(", ")
        ),
    };
    let _ = writeln!(s, "output: {output}");
    if let Some(limit) = plan.limit {
        let _ = writeln!(s, "limit: {limit}");
    }
    s
}
