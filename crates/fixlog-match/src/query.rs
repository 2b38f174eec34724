//! The library API of matching: a [`Graph`] loaded once answers many [`Pattern`]s.
//!
//! Each call plans the pattern against the graph (building any adjacency it needs the
//! first time) and runs the matcher on the current rayon pool, so callers choose the
//! thread count by installing a pool (`ThreadPool::install`), as the CLI's `-j` does.

use crate::clique;
use crate::cycle::{self, CountOverflow};
use crate::exec;
use crate::graph::{Graph, NodeIndex};
use crate::order::{self, OrderDecision};
use crate::pattern::{Pattern, Semantics};
use crate::plan::{self, Plan};

/// How [`Graph::count_with`] counts a pattern: the one decision every backend asks
/// ([`Graph::count_path`]), so that all take the same path for the same patterns or
/// give the same count another way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountPath {
    /// `factor` times the `k`-cliques of the graph ([`crate::clique`]), along
    /// [`Graph::forward_by_degree`].
    Clique { k: usize, factor: u64 },
    /// `Σ cycles(shape) × factors[shape]` over the 4-cycles of the graph by shape (the
    /// node opposite the smallest id is the 2nd, 3rd or 4th smallest), counted by
    /// wedges along [`Graph::cycle_lists`] ([`crate::cycle`]).
    FourCycle { factors: [u64; 3] },
    /// The generic worst-case-optimal join of the pattern's plan ([`Graph::count_plan`]).
    Plan,
}

impl Graph {
    /// Plans `pattern` against this graph.
    pub fn plan(&self, pattern: &Pattern, semantics: Semantics) -> Plan {
        plan::plan(self, pattern, semantics)
    }

    /// The number of matches of `pattern` under `iso` semantics (injective: EMB),
    /// ignoring `LIMIT` (which limits rows, and a count is one row).
    pub fn count(&self, pattern: &Pattern) -> Result<u64, CountOverflow> {
        self.count_with(pattern, Semantics::Iso)
    }

    /// The number of matches of `pattern` under `semantics`, by the path
    /// [`Graph::count_path`] decides.
    ///
    /// A clique pattern (a complete pattern graph, see [`crate::clique`]) is counted
    /// along forward lists in degree order, a 4-cycle ([`crate::cycle`]) by wedges along
    /// lists in degree order, each built once per graph, without planning. Those count
    /// matches without enumerating them (so many per clique or cycle): a count that
    /// does not fit in 64 bits is an error, not a wrapped number.
    pub fn count_with(
        &self,
        pattern: &Pattern,
        semantics: Semantics,
    ) -> Result<u64, CountOverflow> {
        match self.count_path(pattern, semantics) {
            CountPath::Clique { k, factor } => {
                if factor == 0 {
                    return Ok(0);
                }
                let (offsets, targets) = self.forward_by_degree().csr();
                let n = offsets.len() - 1;
                let forward = clique::Forward {
                    starts: &offsets[..n],
                    ends: &offsets[1..],
                    targets,
                };
                let first: Vec<NodeIndex> = (0..n as NodeIndex).collect();
                let cliques = forward.count(k, &first);
                cliques.checked_mul(factor).ok_or_else(|| CountOverflow {
                    message: format!(
                        "the count is {cliques} {k}-cliques times {factor} matches each, which \
                         does not fit in 64 bits"
                    ),
                })
            }
            CountPath::FourCycle { factors } => {
                if factors == [0; 3] {
                    return Ok(0);
                }
                let lists = self.cycle_lists();
                if factors[0] == factors[1] && factors[1] == factors[2] {
                    cycle::weighted([lists.count(), 0, 0], [factors[0], 0, 0])
                } else {
                    cycle::weighted(lists.count_by_shape(), factors)
                }
            }
            CountPath::Plan => Ok(exec::count(&self.count_plan(pattern, semantics))),
        }
    }

    /// How [`Graph::count_with`] counts `pattern` under `semantics` on this graph: a
    /// clique count ([`crate::clique::ranking_factor`]), a 4-cycle count
    /// ([`crate::cycle::shape_factors`]), both on this graph's undirectedness, or the
    /// plan. Every backend asks this: the GPU counts cliques its own way along the same
    /// forward lists, and counts 4-cycles through the generic plan (in id order), which
    /// gives the same count.
    pub fn count_path(&self, pattern: &Pattern, semantics: Semantics) -> CountPath {
        if let Some((k, factor)) = self.clique_factor(pattern, semantics) {
            return CountPath::Clique { k, factor };
        }
        match cycle::shape_factors(pattern, semantics, self.is_undirected()) {
            Some(factors) => CountPath::FourCycle { factors },
            None => CountPath::Plan,
        }
    }

    /// `Some((k, R))` when [`Graph::count_with`] counts `pattern` under `semantics` as
    /// `R` times the `k`-cliques of this graph, along [`Graph::forward_by_degree`]
    /// ([`crate::clique::ranking_factor`] on this graph's undirectedness); `None`
    /// otherwise. [`Graph::count_path`] asks this first.
    pub fn clique_factor(&self, pattern: &Pattern, semantics: Semantics) -> Option<(usize, u64)> {
        clique::ranking_factor(pattern, semantics, self.is_undirected())
    }

    /// Which node order counting `pattern` uses, and why: the degree order (ascending,
    /// or descending when that suits the binding order better) when the count cannot
    /// depend on the order ([`crate::order`]), else the id order. Deciding the
    /// orientation plans the pattern, on the degree-ordered copy (built on first use).
    ///
    /// A clique pattern is counted in degree order whatever its comparisons (see
    /// [`crate::clique`]); deciding that builds its forward lists.
    ///
    /// A 4-cycle pattern is counted by wedges ([`crate::cycle`]), its cycles classified
    /// by id whatever the walk's order; deciding that builds its lists.
    pub fn count_order(&self, pattern: &Pattern, semantics: Semantics) -> OrderDecision {
        if let Some(decision) = self.clique_order(pattern, semantics) {
            self.forward_by_degree();
            return decision;
        }
        if let Some(decision) = self.cycle_order(pattern, semantics) {
            self.cycle_lists();
            return decision;
        }
        let decision = order::decide(pattern, semantics, self.is_undirected());
        if !decision.degree_order {
            return decision;
        }
        let plan = self.degree_ordered().plan(pattern, semantics);
        let bind_order: Vec<usize> = plan.steps.iter().map(|s| s.node).collect();
        order::decide_oriented(pattern, semantics, self.is_undirected(), &bind_order)
    }

    /// The order decision for a clique pattern ([`crate::clique`]), `None` for others.
    fn clique_order(&self, pattern: &Pattern, semantics: Semantics) -> Option<OrderDecision> {
        let (k, factor) = self.clique_factor(pattern, semantics)?;
        let exact = order::decide(pattern, semantics, self.is_undirected());
        let why = if exact.degree_order {
            exact.reason
        } else {
            format!(
                "the pattern is a {k}-clique and {factor} of the {k}! orders of its nodes satisfy \
                 the id comparisons, so the count is {factor} per clique of the graph whatever the \
                 node order"
            )
        };
        Some(OrderDecision {
            degree_order: true,
            descending: false,
            forward_lists: true,
            cycle_wedges: false,
            reason: format!(
                "{why}; the {k}-cliques are counted along forward lists, counted in ascending rank"
            ),
        })
    }

    /// The order decision for a 4-cycle pattern ([`crate::cycle`]), `None` for others.
    /// `degree_order` says whether the count is one any node order gives
    /// ([`order::decide`]); the wedge count gives the id order's count either way.
    fn cycle_order(&self, pattern: &Pattern, semantics: Semantics) -> Option<OrderDecision> {
        let CountPath::FourCycle { factors } = self.count_path(pattern, semantics) else {
            return None;
        };
        let exact = order::decide(pattern, semantics, self.is_undirected());
        let [r2, r3, r4] = factors;
        Some(OrderDecision {
            degree_order: exact.degree_order,
            descending: false,
            forward_lists: false,
            cycle_wedges: true,
            reason: format!(
                "the pattern is a 4-cycle: each cycle of the graph is found once from its node of \
                 highest degree rank (wedges through nodes ranked below it) and counted by the id \
                 order of its nodes: {r2}, {r3} and {r4} of the 8 maps onto a cycle satisfy the id \
                 comparisons when its smallest node is opposite the 2nd, 3rd and 4th smallest, so \
                 the count is exact whatever the comparisons"
            ),
        })
    }

    /// The plan a count runs (without `LIMIT`): on the degree-ordered copy of the graph
    /// ([`Graph::degree_ordered`], built on first use) when [`Graph::count_order`]
    /// allows, with the comparisons flipped when it chose the descending order; else on
    /// this graph. (A clique or 4-cycle pattern is counted without a plan, see
    /// [`Graph::count_with`]; this is the plan the generic join would run for it, on the
    /// copy for a clique, as any order gives its count.) Its node numbers are those of
    /// the graph it was planned on (`Plan::degree_order` says which); a count does not
    /// need them.
    pub fn count_plan(&self, pattern: &Pattern, semantics: Semantics) -> Plan {
        let degree_order = self.clique_order(pattern, semantics).is_some()
            || order::decide(pattern, semantics, self.is_undirected()).degree_order;
        let plan = if !degree_order {
            self.plan(pattern, semantics)
        } else {
            let copy = self.degree_ordered();
            let plan = copy.plan(pattern, semantics);
            let bind_order: Vec<usize> = plan.steps.iter().map(|s| s.node).collect();
            if order::descending_is_better(pattern, &bind_order) {
                copy.plan(&order::flipped(pattern), semantics)
            } else {
                plan
            }
        };
        Plan {
            limit: None,
            ..plan
        }
    }

    /// Calls `f` with the ids of every match's pattern nodes (indexed like
    /// [`Pattern::nodes`]), in a deterministic order (the same for every thread count),
    /// at most `LIMIT` times, until `f` returns `false`. Returns how many calls were made.
    pub fn for_each_match(
        &self,
        pattern: &Pattern,
        semantics: Semantics,
        mut f: impl FnMut(&[u64]) -> bool,
    ) -> u64 {
        let plan = self.plan(pattern, semantics);
        let mut ids = vec![0u64; pattern.nodes.len()];
        let mut calls = 0;
        exec::for_each(&plan, |bindings| {
            for (step, &b) in plan.steps.iter().zip(bindings) {
                ids[step.node] = self.id(b);
            }
            calls += 1;
            f(&ids)
        });
        calls
    }

    /// Like [`Graph::for_each_match`] but with the `RETURN` columns only (for
    /// `RETURN count(*)`, every pattern node).
    pub fn for_each_row(
        &self,
        pattern: &Pattern,
        semantics: Semantics,
        mut f: impl FnMut(&[u64]) -> bool,
    ) -> u64 {
        let plan = self.plan(pattern, semantics);
        let Some(projection) = plan.projection.clone() else {
            return self.for_each_match(pattern, semantics, f);
        };
        let mut row = vec![0u64; projection.len()];
        let mut calls = 0;
        exec::for_each(&plan, |bindings| {
            for (slot, &step) in row.iter_mut().zip(&projection) {
                *slot = self.id(bindings[step]);
            }
            calls += 1;
            f(&row)
        });
        calls
    }

    /// The plan in words: variable order, candidate filters, the join, and for a count
    /// the node order it uses and why. The steps are planned on this graph: on the
    /// degree-ordered copy they are the same (the planner looks at degrees, labels and
    /// candidate counts, which renumbering keeps), so `explain` does not build it.
    pub fn explain(&self, pattern: &Pattern, semantics: Semantics) -> String {
        let plan = self.plan(pattern, semantics);
        let bind_order: Vec<usize> = plan.steps.iter().map(|s| s.node).collect();
        let order = match pattern.output {
            crate::pattern::Output::Count => self
                .clique_order(pattern, semantics)
                .or_else(|| self.cycle_order(pattern, semantics))
                .or_else(|| {
                    Some(order::decide_oriented(
                        pattern,
                        semantics,
                        self.is_undirected(),
                        &bind_order,
                    ))
                }),
            crate::pattern::Output::Nodes(_) => None,
        };
        plan::explain(self, pattern, &plan, order.as_ref())
    }
}
