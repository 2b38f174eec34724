//! The library API of matching: a [`Graph`] loaded once answers many [`Pattern`]s.
//!
//! Each call plans the pattern against the graph (building any adjacency it needs the
//! first time) and runs the matcher on the current rayon pool, so callers choose the
//! thread count by installing a pool (`ThreadPool::install`), as the CLI's `-j` does.

use crate::clique;
use crate::exec;
use crate::graph::{Graph, NodeIndex};
use crate::order::{self, OrderDecision};
use crate::pattern::{Pattern, Semantics};
use crate::plan::{self, Plan};

impl Graph {
    /// Plans `pattern` against this graph.
    pub fn plan(&self, pattern: &Pattern, semantics: Semantics) -> Plan {
        plan::plan(self, pattern, semantics)
    }

    /// The number of matches of `pattern` under `iso` semantics (injective: EMB),
    /// ignoring `LIMIT` (which limits rows, and a count is one row).
    pub fn count(&self, pattern: &Pattern) -> u64 {
        self.count_with(pattern, Semantics::Iso)
    }

    /// The number of matches of `pattern` under `semantics`.
    ///
    /// A clique pattern (a complete pattern graph, see [`crate::clique`]) is counted
    /// along forward lists in degree order, built once per graph, without planning.
    pub fn count_with(&self, pattern: &Pattern, semantics: Semantics) -> u64 {
        if let Some((k, factor)) = self.clique_factor(pattern, semantics) {
            if factor == 0 {
                return 0;
            }
            let (offsets, targets) = self.forward_by_degree().csr();
            let n = offsets.len() - 1;
            let forward = clique::Forward {
                starts: &offsets[..n],
                ends: &offsets[1..],
                targets,
            };
            let first: Vec<NodeIndex> = (0..n as NodeIndex).collect();
            return factor * forward.count(k, &first);
        }
        exec::count(&self.count_plan(pattern, semantics))
    }

    /// `Some((k, R))` when [`Graph::count_with`] counts `pattern` under `semantics` as
    /// `R` times the `k`-cliques of this graph, along [`Graph::forward_by_degree`]
    /// ([`crate::clique::ranking_factor`] on this graph's undirectedness); `None` when it
    /// plans the pattern. Every backend that counts cliques its own way asks this, so
    /// all take the clique path for the same patterns.
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
    pub fn count_order(&self, pattern: &Pattern, semantics: Semantics) -> OrderDecision {
        if let Some(decision) = self.clique_order(pattern, semantics) {
            self.forward_by_degree();
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
            reason: format!(
                "{why}; the {k}-cliques are counted along forward lists, counted in ascending rank"
            ),
        })
    }

    /// The plan a count runs (without `LIMIT`): on the degree-ordered copy of the graph
    /// ([`Graph::degree_ordered`], built on first use) when [`Graph::count_order`]
    /// allows, with the comparisons flipped when it chose the descending order; else on
    /// this graph. (A clique pattern is counted without a plan, see
    /// [`Graph::count_with`]; its plan is on the copy, as any order gives its count.) Its node numbers are those of the graph it was planned on
    /// (`Plan::degree_order` says which); a count does not need them.
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
            crate::pattern::Output::Count => self.clique_order(pattern, semantics).or_else(|| {
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
