//! The matcher: runs a [`Plan`] by depth-first generic join.
//!
//! Each search binds step after step; a step's candidates are the intersection of its
//! sources' sorted neighbour lists cut to its id range, then checked (filter bits,
//! distinctness, `=`, self-loops). Work is split over the first step's candidates:
//! counting sums per-candidate counts in parallel (rayon's work stealing evens out
//! skewed degrees) and never materializes a match; at the last step it counts the
//! candidate list instead of visiting it. Listing cuts the first step's candidates into
//! chunks, searches a window of chunks in parallel into per-chunk buffers and hands the
//! buffers' rows to the caller in chunk order, so the rows and their order are the same
//! for every thread count, and memory holds one window's rows, not all of them.

use crate::clique::Forward;
use crate::graph::{Adjacency, NodeIndex};
use crate::intersect::{intersect_count, intersect_into, range, retain_in};
use crate::plan::{Plan, Step};
use rayon::prelude::*;
use std::sync::{Arc, Mutex};

/// One step's candidates: a slice of the plan's lists, or a buffer of the search.
enum List<'p> {
    Plan(&'p [NodeIndex]),
    Buffer(Vec<NodeIndex>),
}

impl List<'_> {
    fn as_slice(&self) -> &[NodeIndex] {
        match self {
            List::Plan(s) => s,
            List::Buffer(v) => v,
        }
    }
}

/// The last step's intersections under one first-step binding, by the binding of the
/// plan's `memo_key_step` (see `plan::memo_key_step`).
#[derive(Default)]
struct Memo {
    /// The first-step binding the entries belong to.
    owner: Option<NodeIndex>,
    /// Per graph node: index into `spans` plus one (0: not computed).
    slot: Vec<u32>,
    spans: Vec<(usize, usize)>,
    arena: Vec<NodeIndex>,
    touched: Vec<NodeIndex>,
}

impl Memo {
    fn reset_for(&mut self, owner: NodeIndex, node_count: usize) {
        if self.owner == Some(owner) {
            return;
        }
        if self.slot.len() != node_count {
            self.slot = vec![0; node_count];
        }
        for &t in &self.touched {
            self.slot[t as usize] = 0;
        }
        self.touched.clear();
        self.spans.clear();
        self.arena.clear();
        self.owner = Some(owner);
    }
}

/// The state of one depth-first search (one per worker).
struct Search<'p> {
    plan: &'p Plan,
    /// Graph node bound at each step so far.
    bindings: Vec<NodeIndex>,
    /// One intersection buffer per step, reused.
    buffers: Vec<Vec<NodeIndex>>,
    memo: Memo,
    /// Where the memo goes back when the search ends: rayon makes a search per piece
    /// of work it splits off, and a memo holds a table over every graph node, so
    /// searches of one run share memos instead of allocating one each.
    memo_pool: Option<&'p Mutex<Vec<Memo>>>,
}

impl Drop for Search<'_> {
    fn drop(&mut self) {
        if let Some(pool) = self.memo_pool {
            let mut memo = std::mem::take(&mut self.memo);
            memo.owner = None;
            if let Ok(mut pool) = pool.lock() {
                pool.push(memo);
            }
        }
    }
}

impl<'p> Search<'p> {
    fn new(plan: &'p Plan) -> Search<'p> {
        let k = plan.steps.len();
        Search {
            plan,
            bindings: vec![0; k],
            buffers: vec![Vec::new(); k],
            memo: Memo::default(),
            memo_pool: None,
        }
    }

    /// A search whose memo comes from, and goes back to, `pool`.
    fn pooled(plan: &'p Plan, pool: &'p Mutex<Vec<Memo>>) -> Search<'p> {
        let mut search = Search::new(plan);
        if let Some(memo) = pool.lock().ok().and_then(|mut p| p.pop()) {
            search.memo = memo;
        }
        search.memo_pool = Some(pool);
        search
    }

    /// The id range `lower..upper` of step `level` under the current bindings.
    #[inline]
    fn bounds(&self, step: &Step) -> (NodeIndex, NodeIndex) {
        let mut lower = step.const_lower;
        let mut upper = step.const_upper;
        for &(from, add) in &step.lower_from {
            lower = lower.max(self.bindings[from].saturating_add(add));
        }
        for &(from, add) in &step.upper_from {
            upper = upper.min(self.bindings[from].saturating_add(add));
        }
        (lower, upper)
    }

    /// The candidates of step `level` before per-candidate checks.
    fn list(&mut self, level: usize) -> List<'p> {
        let plan = self.plan;
        let step = &plan.steps[level];
        let (lower, upper) = self.bounds(step);
        match step.sources.as_slice() {
            [] => List::Plan(range(&step.all_candidates, lower, upper)),
            [only] => List::Plan(range(
                only.adjacency.neighbours(self.bindings[only.from_step]),
                lower,
                upper,
            )),
            sources => {
                let mut lists: Vec<&'p [NodeIndex]> = Vec::new();
                let mut small: [&'p [NodeIndex]; 8] = [&[]; 8];
                let slices: &mut [&'p [NodeIndex]] = if sources.len() <= small.len() {
                    for (slot, s) in small.iter_mut().zip(sources) {
                        *slot = range(
                            s.adjacency.neighbours(self.bindings[s.from_step]),
                            lower,
                            upper,
                        );
                    }
                    &mut small[..sources.len()]
                } else {
                    lists.extend(sources.iter().map(|s| {
                        range(
                            s.adjacency.neighbours(self.bindings[s.from_step]),
                            lower,
                            upper,
                        )
                    }));
                    &mut lists
                };
                slices.sort_unstable_by_key(|s| s.len());
                let mut buffer = std::mem::take(&mut self.buffers[level]);
                intersect_into(slices[0], slices[1], &mut buffer);
                for other in &slices[2..] {
                    if buffer.is_empty() {
                        break;
                    }
                    retain_in(&mut buffer, other);
                }
                List::Buffer(buffer)
            }
        }
    }

    fn give_back(&mut self, level: usize, list: List<'p>) {
        if let List::Buffer(buffer) = list {
            self.buffers[level] = buffer;
        }
    }

    /// Whether `c` may bind step `level` (after intersection and range).
    #[inline]
    fn accept(&self, step: &Step, c: NodeIndex) -> bool {
        (step.sources.is_empty() || step.filter.allows(c))
            && step.distinct_from.iter().all(|&s| self.bindings[s] != c)
            && step.equal_to.iter().all(|&s| self.bindings[s] == c)
            && !step.excluded.contains(&c)
            && step
                .self_loops
                .iter()
                .all(|adj| adj.neighbours(c).binary_search(&c).is_ok())
    }

    /// Matches extending the current bindings of steps `..level`.
    fn count(&mut self, level: usize) -> u64 {
        let plan = self.plan;
        let step = &plan.steps[level];
        if level + 1 == plan.steps.len() && !step.needs_checks {
            return self.count_last(level);
        }
        let list = self.list(level);
        let mut total = 0;
        for &c in list.as_slice() {
            if self.accept(step, c) {
                if level + 1 == plan.steps.len() {
                    total += 1;
                } else {
                    self.bindings[level] = c;
                    total += self.count(level + 1);
                }
            }
        }
        self.give_back(level, list);
        total
    }

    /// The last step's count when only distinctness and excluded ids remain to check:
    /// the size of the candidate list minus the forbidden nodes it contains.
    fn count_last(&mut self, level: usize) -> u64 {
        let plan = self.plan;
        let step = &plan.steps[level];
        let (lower, upper) = self.bounds(step);
        if let Some(key_step) = plan.memo_key_step {
            return self.count_last_memo(step, key_step, lower, upper);
        }
        let bindings = &self.bindings;
        let slice_of = |s: &'p crate::plan::Source| {
            range(s.adjacency.neighbours(bindings[s.from_step]), lower, upper)
        };
        let (size, lists): (usize, List<'p>) = match step.sources.as_slice() {
            [a, b] => {
                let (a, b) = (slice_of(a), slice_of(b));
                let n = intersect_count(a, b);
                if step.distinct_from.is_empty() && step.excluded.is_empty() {
                    return n as u64;
                }
                let mut forbidden_in = 0;
                self.for_each_forbidden(step, |v| {
                    forbidden_in +=
                        (a.binary_search(&v).is_ok() && b.binary_search(&v).is_ok()) as usize;
                });
                return (n - forbidden_in) as u64;
            }
            _ => {
                let list = self.list(level);
                (list.as_slice().len(), list)
            }
        };
        let slice = lists.as_slice();
        let mut forbidden_in = 0;
        self.for_each_forbidden(step, |v| {
            forbidden_in += slice.binary_search(&v).is_ok() as usize;
        });
        self.give_back(level, lists);
        (size - forbidden_in) as u64
    }

    /// [`Search::count_last`] through the memo: the intersection of the two sources'
    /// lists is computed once per (first binding, key binding), then cut to this use's
    /// range and cleared of forbidden nodes by binary search.
    fn count_last_memo(
        &mut self,
        step: &Step,
        key_step: usize,
        lower: NodeIndex,
        upper: NodeIndex,
    ) -> u64 {
        let last = self.plan.steps.len() - 1;
        let (first, key) = (self.bindings[0], self.bindings[key_step]);
        self.memo.reset_for(first, self.plan.node_count);
        let memo = &mut self.memo;
        let slot = memo.slot[key as usize];
        let (start, len) = if slot > 0 {
            memo.spans[slot as usize - 1]
        } else {
            let [a, b] = step.sources.as_slice() else {
                return 0;
            };
            let mut buffer = std::mem::take(&mut self.buffers[last]);
            intersect_into(
                a.adjacency.neighbours(self.bindings[a.from_step]),
                b.adjacency.neighbours(self.bindings[b.from_step]),
                &mut buffer,
            );
            let memo = &mut self.memo;
            let span = (memo.arena.len(), buffer.len());
            memo.arena.extend_from_slice(&buffer);
            memo.spans.push(span);
            memo.slot[key as usize] = memo.spans.len() as u32;
            memo.touched.push(key);
            self.buffers[last] = buffer;
            span
        };
        let list = range(&self.memo.arena[start..start + len], lower, upper);
        let mut forbidden_in = 0;
        self.for_each_forbidden(step, |v| {
            forbidden_in += list.binary_search(&v).is_ok() as usize;
        });
        (list.len() - forbidden_in) as u64
    }

    /// Calls `f` once for each distinct node a candidate of `step` must not be.
    fn for_each_forbidden(&self, step: &Step, mut f: impl FnMut(NodeIndex)) {
        let mut seen: [NodeIndex; 16] = [0; 16];
        let mut seen_len = 0;
        let mut more: Vec<NodeIndex> = Vec::new();
        let values = step
            .distinct_from
            .iter()
            .map(|&s| self.bindings[s])
            .chain(step.excluded.iter().copied());
        for v in values {
            if seen[..seen_len].contains(&v) || more.contains(&v) {
                continue;
            }
            if seen_len < seen.len() {
                seen[seen_len] = v;
                seen_len += 1;
            } else {
                more.push(v);
            }
            f(v);
        }
    }

    /// Calls `sink` with the bindings of every match extending steps `..level`, in
    /// order, until it returns `false`; returns `false` if stopped.
    fn visit(&mut self, level: usize, sink: &mut dyn FnMut(&[NodeIndex]) -> bool) -> bool {
        let plan = self.plan;
        let step = &plan.steps[level];
        let list = self.list(level);
        let mut go_on = true;
        for &c in list.as_slice() {
            if !self.accept(step, c) {
                continue;
            }
            self.bindings[level] = c;
            go_on = if level + 1 == plan.steps.len() {
                sink(&self.bindings)
            } else {
                self.visit(level + 1, sink)
            };
            if !go_on {
                break;
            }
        }
        self.give_back(level, list);
        go_on
    }
}

/// The first step's accepted candidates.
fn first_candidates(plan: &Plan) -> Vec<NodeIndex> {
    let search = Search::new(plan);
    let step = &plan.steps[0];
    let (lower, upper) = search.bounds(step);
    range(&step.all_candidates, lower, upper)
        .iter()
        .copied()
        .filter(|&c| search.accept(step, c))
        .collect()
}

/// The number of matches of `plan`.
pub fn count(plan: &Plan) -> u64 {
    if plan.empty_because.is_some() || plan.steps.is_empty() {
        return 0;
    }
    if let Some(adjacency) = clique_chain(plan) {
        return count_cliques(plan, adjacency);
    }
    let first = first_candidates(plan);
    if plan.steps.len() == 1 {
        return first.len() as u64;
    }
    let memo_pool = Mutex::new(Vec::new());
    first
        .par_iter()
        .map_init(
            || Search::pooled(plan, &memo_pool),
            |search, &c| {
                search.bindings[0] = c;
                search.count(1)
            },
        )
        .sum()
}

/// Calls `sink` with the bindings (indexed by step) of every match in a deterministic
/// order, up to the plan's limit, until it returns `false`. Searches run in parallel on
/// the current rayon pool; `sink` runs on the calling thread.
pub fn for_each(plan: &Plan, mut sink: impl FnMut(&[NodeIndex]) -> bool) {
    if plan.empty_because.is_some() || plan.steps.is_empty() {
        return;
    }
    let mut remaining = plan.limit.unwrap_or(u64::MAX);
    if remaining == 0 {
        return;
    }
    let width = plan.steps.len();
    let first = first_candidates(plan);
    let threads = rayon::current_num_threads().max(1);
    let chunk_len = (first.len() / (threads * 64)).clamp(1, 256);
    let window = threads * 4;
    let chunks: Vec<&[NodeIndex]> = first.chunks(chunk_len).collect();
    for window_chunks in chunks.chunks(window) {
        let budget = remaining;
        let buffers: Vec<Vec<NodeIndex>> = window_chunks
            .par_iter()
            .map_init(
                || Search::new(plan),
                |search, chunk| {
                    let mut rows = Vec::new();
                    let mut found = 0u64;
                    for &c in *chunk {
                        search.bindings[0] = c;
                        let mut collect = |bindings: &[NodeIndex]| {
                            rows.extend_from_slice(bindings);
                            found += 1;
                            found < budget
                        };
                        let go_on = if width == 1 {
                            collect(&search.bindings)
                        } else {
                            search.visit(1, &mut collect)
                        };
                        if !go_on {
                            break;
                        }
                    }
                    rows
                },
            )
            .collect();
        for rows in buffers {
            for row in rows.chunks_exact(width) {
                if !sink(row) {
                    return;
                }
                remaining -= 1;
                if remaining == 0 {
                    return;
                }
            }
        }
    }
}

/// The adjacency of a *clique chain*, if `plan` is one: `k >= 3` steps, step `i`
/// intersecting the lists of every earlier step, all in one adjacency, and bound above
/// the node of step `i - 1` (`id(a) < id(b) AND id(b) < id(c) ...` on a clique, as
/// planned in degree order). Nothing else may constrain a step but filters on degrees
/// (no labels, constant bounds, `=`, excluded ids or self-loops; other lower bounds
/// only where the chain implies them), and such a filter only drops nodes that are in
/// no match (a node's degree is at least its number of pattern neighbours in every
/// match), so the candidates of step `i` are exactly the nodes above the node of step
/// `i - 1` in every earlier step's list: [`count_cliques`] counts those.
fn clique_chain(plan: &Plan) -> Option<&Adjacency> {
    let k = plan.steps.len();
    if plan.empty_because.is_some() || !(3..=u8::MAX as usize).contains(&k) {
        return None;
    }
    let adjacency = &plan.steps[1].sources.first()?.adjacency;
    let plain = |step: &Step| {
        step.filter.labels.is_empty()
            && step.upper_from.is_empty()
            && step.const_lower == 0
            && step.const_upper as usize == plan.node_count
            && step.equal_to.is_empty()
            && step.excluded.is_empty()
            && step.self_loops.is_empty()
    };
    let chained = plan.steps.iter().enumerate().all(|(i, step)| {
        plain(step)
            && step.sources.len() == i
            && step
                .sources
                .iter()
                .enumerate()
                .all(|(j, s)| s.from_step == j && Arc::ptr_eq(&s.adjacency, adjacency))
            && (i == 0 || step.lower_from.contains(&(i - 1, 1)))
            && step
                .lower_from
                .iter()
                .all(|&(j, add)| j < i && add as usize <= i - j)
    });
    chained.then_some(adjacency.as_ref())
}

/// Counts the matches of a clique chain ([`clique_chain`]) along forward lists (the
/// neighbours above a node, `F(u)`): the candidates of step `i` are `F(x_0) ∩ ... ∩
/// F(x_{i-1})`, since every earlier node is below `x_{i-1}` and the chain's bound only
/// cuts the lists to their forward parts ([`crate::clique`]).
fn count_cliques(plan: &Plan, adjacency: &Adjacency) -> u64 {
    let (offsets, targets) = adjacency.csr();
    let n = offsets.len() - 1;
    let starts: Vec<usize> = (0..n)
        .into_par_iter()
        .with_min_len(crate::graph::PARALLEL_MIN_NODES)
        .map(|u| {
            let list = &targets[offsets[u]..offsets[u + 1]];
            offsets[u] + list.partition_point(|&v| v as usize <= u)
        })
        .collect();
    let forward = Forward {
        starts: &starts,
        ends: &offsets[1..],
        targets,
    };
    forward.count(plan.steps.len(), &plan.steps[0].all_candidates)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Graph, LoadOptions, Pattern, Semantics};

    /// Which plans take the forward-list kernel: symmetry-broken cliques, not a
    /// constant comparison, a label, an unbroken clique or a cycle.
    #[test]
    fn clique_chains_are_recognized() {
        let graph = Graph::from_text(
            "1 2\n2 3\n3 1\n1 4\n2 4\n3 4\n4 5\n",
            Some("1\tX\n3\tX\n"),
            &LoadOptions { undirected: true },
        )
        .expect("a graph");
        let chain = |text: &str| {
            let pattern = Pattern::parse(text).expect("a pattern");
            let plan = graph.plan(&pattern, Semantics::Iso);
            (clique_chain(&plan).is_some(), count(&plan))
        };
        let triangle = "MATCH (a)--(b)--(c)--(a)";
        let clique4 = "MATCH (a)--(b)--(c)--(a), (a)--(d), (b)--(d), (c)--(d)";
        let chain3 = "WHERE id(a) < id(b) AND id(b) < id(c)";
        let chain4 = "WHERE id(a) < id(b) AND id(b) < id(c) AND id(c) < id(d)";
        assert_eq!(
            chain(&format!("{triangle} {chain3} RETURN count(*)")),
            (true, 4)
        );
        assert_eq!(
            chain(&format!("{clique4} {chain4} RETURN count(*)")),
            (true, 1)
        );
        assert_eq!(
            chain(&format!(
                "{triangle} {chain3} AND id(a) <> 2 RETURN count(*)"
            )),
            (false, 3)
        );
        assert_eq!(chain(&format!("{triangle} RETURN count(*)")), (false, 24));
        assert_eq!(
            chain(
                "MATCH (a:X)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)"
            ),
            (false, 3)
        );
        assert_eq!(
            chain("MATCH (a)--(b)--(c)--(d)--(a) WHERE id(a) < id(b) AND id(b) < id(c) AND id(c) < id(d) RETURN count(*)"),
            (false, 1)
        );
    }
}
