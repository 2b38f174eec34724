//! Stratification: strongly connected components of the predicate dependency graph.
//!
//! A rule with head `h` makes `h` depend on every relation its body reads. The dependency
//! is *negative* when the body reads the relation through a negation or inside an
//! aggregate: those need the relation complete before `h` is computed, so they must not
//! lie on a cycle. Each SCC (found with an iterative Tarjan, so deep programs cannot
//! overflow the stack) is one stratum; strata are ordered so that dependencies come
//! first, breaking ties by declaration order so the result does not depend on hashing or
//! on the order of rules.

use crate::ir::{Literal, RelId, Relation, Rule, Stratum};
use fixlog_syntax::{Diagnostic, Diagnostics, Span};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EdgeKind {
    Positive,
    Negation,
    Aggregate,
}

#[derive(Clone, Copy, Debug)]
struct Edge {
    from: RelId,
    to: RelId,
    kind: EdgeKind,
    span: Span,
}

fn body_edges(head: RelId, body: &[Literal], in_agg: Option<Span>, out: &mut Vec<Edge>) {
    for l in body {
        let (to, kind, span) = match l {
            Literal::Atom(a) => (a.rel, EdgeKind::Positive, a.span),
            Literal::Negation(a) => (a.rel, EdgeKind::Negation, a.span),
            Literal::Aggregate { body, span, .. } => {
                body_edges(head, body, Some(in_agg.unwrap_or(*span)), out);
                continue;
            }
            Literal::Compare { .. } | Literal::Predicate { .. } | Literal::Range { .. } => continue,
        };
        let (kind, span) = match in_agg {
            Some(agg_span) => (EdgeKind::Aggregate, agg_span),
            None => (kind, span),
        };
        out.push(Edge {
            from: head,
            to,
            kind,
            span,
        });
    }
}

/// Strongly connected components; `comp[v]` is the component of `v`.
fn tarjan(n: usize, adj: &[Vec<usize>]) -> Vec<usize> {
    const UNSET: usize = usize::MAX;
    let mut index = vec![UNSET; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut comp = vec![UNSET; n];
    let mut next_index = 0;
    let mut next_comp = 0;
    for root in 0..n {
        if index[root] != UNSET {
            continue;
        }
        // (node, next child position)
        let mut call: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut i)) = call.last_mut() {
            if *i < adj[v].len() {
                let w = adj[v][*i];
                *i += 1;
                if index[w] == UNSET {
                    index[w] = next_index;
                    low[w] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                call.pop();
                if let Some(&(parent, _)) = call.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp[w] = next_comp;
                        if w == v {
                            break;
                        }
                    }
                    next_comp += 1;
                }
            }
        }
    }
    comp
}

/// A path `from -> ... -> to` along dependency edges inside one component.
fn path_within(from: RelId, to: RelId, adj: &[Vec<usize>], comp: &[usize]) -> Vec<RelId> {
    let mut prev = vec![usize::MAX; adj.len()];
    let mut queue = VecDeque::from([from]);
    let mut seen = vec![false; adj.len()];
    seen[from] = true;
    while let Some(v) = queue.pop_front() {
        if v == to {
            break;
        }
        for &w in &adj[v] {
            if !seen[w] && comp[w] == comp[from] {
                seen[w] = true;
                prev[w] = v;
                queue.push_back(w);
            }
        }
    }
    let mut path = vec![to];
    let mut cur = to;
    while cur != from {
        cur = prev[cur];
        if cur == usize::MAX {
            break;
        }
        path.push(cur);
    }
    path.reverse();
    path
}

/// Compute the strata of a program, or report every negation/aggregation that lies on a
/// dependency cycle.
pub fn stratify(relations: &[Relation], rules: &[Rule]) -> Result<Vec<Stratum>, Diagnostics> {
    stratify_with(relations, rules, &[])
}

/// [`stratify`] with the program's subsumptions (see
/// [`crate::ir::Program::subsumptions`]): a relation depends on what its subsumptive
/// clauses read, except itself (removing dominated tuples of a relation does not make
/// its stratum recursive; the driver removes them after every step). Strata list the
/// indices of `rules` only.
pub fn stratify_with(
    relations: &[Relation],
    rules: &[Rule],
    subsumptions: &[Rule],
) -> Result<Vec<Stratum>, Diagnostics> {
    stratify_autoinc(relations, rules, subsumptions, &[])
}

/// [`stratify_with`] where each `(target, source)` of `reads` is a positive
/// dependency that no rule states (`autoinc()`'s numbered relation reads its source;
/// see [`crate::ir::AutoInc`]).
pub fn stratify_autoinc(
    relations: &[Relation],
    rules: &[Rule],
    subsumptions: &[Rule],
    reads: &[(RelId, RelId, Span)],
) -> Result<Vec<Stratum>, Diagnostics> {
    let n = relations.len();
    let mut edges = Vec::new();
    for &(from, to, span) in reads {
        edges.push(Edge {
            from,
            to,
            kind: EdgeKind::Positive,
            span,
        });
    }
    for r in rules {
        body_edges(r.head.rel, &r.body, None, &mut edges);
    }
    for r in subsumptions {
        let mut own = Vec::new();
        body_edges(r.head.rel, &r.body, None, &mut own);
        edges.extend(
            own.into_iter()
                .filter(|e| !(e.to == e.from && e.kind == EdgeKind::Positive)),
        );
    }
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
    for e in &edges {
        if !adj[e.from].contains(&e.to) {
            adj[e.from].push(e.to);
        }
    }
    let comp = tarjan(n, &adj);

    let mut errors = Vec::new();
    let mut reported = BTreeSet::new();
    for e in &edges {
        if e.kind == EdgeKind::Positive || comp[e.from] != comp[e.to] {
            continue;
        }
        if !reported.insert((e.from, e.to, e.span.file, e.span.start)) {
            continue;
        }
        let a = &relations[e.from].name;
        let b = &relations[e.to].name;
        let what = match e.kind {
            EdgeKind::Negation => "the negation of",
            _ => "an aggregate over",
        };
        let message = if e.from == e.to {
            format!("cannot stratify: `{a}` depends on {what} itself")
        } else {
            format!("cannot stratify: `{a}` depends on {what} `{b}`, and `{b}` depends on `{a}`")
        };
        let mut cycle = vec![e.from];
        if e.from != e.to {
            cycle.extend(path_within(e.to, e.from, &adj, &comp));
        } else {
            cycle.push(e.from);
        }
        let names: Vec<&str> = cycle.iter().map(|&r| relations[r].name.as_str()).collect();
        errors.push(
            Diagnostic::error(message, e.span)
                .with_note(format!("cycle: {}", names.join(" -> ")))
                .with_help(
                    "negation and aggregation must not be recursive: compute the negated or aggregated relation completely before using it",
                ),
        );
    }
    if !errors.is_empty() {
        return Err(Diagnostics(errors));
    }

    // Order components: dependencies first, ties by smallest relation id.
    let ncomp = comp.iter().copied().max().map_or(0, |m| m + 1);
    let mut members: Vec<Vec<RelId>> = vec![Vec::new(); ncomp];
    for (r, &c) in comp.iter().enumerate() {
        members[c].push(r);
    }
    let mut deps: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); ncomp];
    let mut dependents: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); ncomp];
    for e in &edges {
        let (cf, ct) = (comp[e.from], comp[e.to]);
        if cf != ct {
            deps[cf].insert(ct);
            dependents[ct].insert(cf);
        }
    }
    let mut remaining: Vec<usize> = deps.iter().map(BTreeSet::len).collect();
    let mut ready: BinaryHeap<Reverse<(RelId, usize)>> = BinaryHeap::new();
    for c in 0..ncomp {
        if remaining[c] == 0 {
            ready.push(Reverse((members[c][0], c)));
        }
    }
    let mut order = Vec::with_capacity(ncomp);
    while let Some(Reverse((_, c))) = ready.pop() {
        order.push(c);
        for &d in &dependents[c] {
            remaining[d] -= 1;
            if remaining[d] == 0 {
                ready.push(Reverse((members[d][0], d)));
            }
        }
    }

    let mut rules_of: Vec<Vec<usize>> = vec![Vec::new(); ncomp];
    for (i, r) in rules.iter().enumerate() {
        rules_of[comp[r.head.rel]].push(i);
    }
    let mut recursive = vec![false; ncomp];
    for e in &edges {
        if comp[e.from] == comp[e.to] {
            recursive[comp[e.from]] = true;
        }
    }
    Ok(order
        .into_iter()
        .map(|c| Stratum {
            relations: members[c].clone(),
            rules: rules_of[c].clone(),
            recursive: recursive[c],
        })
        .collect())
}
