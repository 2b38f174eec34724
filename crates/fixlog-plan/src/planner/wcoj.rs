//! When and how a rule body is planned with worst-case-optimal join steps.
//!
//! A pairwise plan joins one atom at a time; on a *cyclic* body (a triangle
//! `e(x,y), e(y,z), e(x,z)`, a 4-clique, a 4-cycle) its intermediate result — every
//! path `x→y→z` before the closing edge is checked — can be far larger than both the
//! input and the output (Θ(N²) paths for Θ(N^1.5) triangles). A worst-case-optimal plan
//! (generic join, Ngo–Porat–Ré–Rudra; leapfrog triejoin, Veldhuizen) binds one variable
//! at a time instead, each from the *intersection* of the values every atom containing
//! it allows ([`crate::ir::Op::Intersect`]), and is never asymptotically worse than the
//! largest possible output.
//!
//! [`choose`] decides per rule: with [`JoinStrategy::Auto`], worst-case-optimal steps for
//! bodies whose atoms form a cyclic hypergraph (GYO reduction leaves something), pairwise
//! joins for acyclic ones (where a pairwise plan in a good order is already near
//! optimal); [`JoinStrategy::Wcoj`] and [`JoinStrategy::Pairwise`] force the choice. The
//! planner has no relation sizes, so the choice is structural. [`next_step`] chooses the
//! variable order, one step at a time: the first atom (the delta, in a delta variant) is
//! scanned, then an atom whose variables are all bound becomes an existence check, and
//! otherwise the next variable is the most constrained one — occurring in the most atoms
//! that already have a bound argument — intersected over those atoms (an atom with no
//! bound argument yet would offer its whole column; it is checked at a later step).

use super::Tracker;
use crate::ir::JoinStrategy;
use fixlog_logical::{self as logical, Literal, Term, VarId};
use std::collections::{BTreeMap, BTreeSet};

/// Bodies with more positive atoms than this are planned pairwise (each
/// worst-case-optimal step looks at every atom; such bodies are not graph patterns).
const MAX_WCOJ_ATOMS: usize = 16;

/// The variable sets of the positive atoms of a body, in body order.
fn atom_vars(body: &[Literal]) -> Vec<BTreeSet<VarId>> {
    body.iter()
        .filter_map(|l| match l {
            Literal::Atom(a) => Some(
                a.args
                    .iter()
                    .filter_map(|t| match t {
                        Term::Var(v) => Some(*v),
                        _ => None,
                    })
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

/// Whether worst-case-optimal steps can plan this body: at least two positive atoms, not
/// too many, and no atom repeating a variable (`e(x, x)`: the planner then joins
/// pairwise, where the repeat is a filter).
fn eligible(body: &[Literal]) -> bool {
    let atoms: Vec<&logical::Atom> = body
        .iter()
        .filter_map(|l| match l {
            Literal::Atom(a) => Some(a),
            _ => None,
        })
        .collect();
    (2..=MAX_WCOJ_ATOMS).contains(&atoms.len())
        && atoms.iter().all(|a| {
            let vars: Vec<VarId> = a
                .args
                .iter()
                .filter_map(|t| match t {
                    Term::Var(v) => Some(*v),
                    _ => None,
                })
                .collect();
            let distinct: BTreeSet<VarId> = vars.iter().copied().collect();
            distinct.len() == vars.len()
        })
}

/// The variables left by GYO reduction of the hypergraph whose edges are the atoms'
/// variable sets: empty if and only if the body is (alpha-)acyclic. Repeatedly drops
/// variables that occur in one edge only and edges contained in another edge.
pub(crate) fn cyclic_core(edges: &[BTreeSet<VarId>]) -> BTreeSet<VarId> {
    let mut edges: Vec<BTreeSet<VarId>> = edges.to_vec();
    loop {
        let mut changed = false;
        // Variables in a single edge.
        let mut count: BTreeMap<VarId, usize> = BTreeMap::new();
        for e in &edges {
            for &v in e {
                *count.entry(v).or_default() += 1;
            }
        }
        for e in &mut edges {
            let before = e.len();
            e.retain(|v| count.get(v).copied().unwrap_or(0) > 1);
            changed |= e.len() != before;
        }
        // Edges contained in another (or empty).
        let mut i = 0;
        while i < edges.len() {
            let contained = edges[i].is_empty()
                || edges
                    .iter()
                    .enumerate()
                    .any(|(j, f)| j != i && edges[i].is_subset(f));
            if contained {
                edges.swap_remove(i);
                changed = true;
            } else {
                i += 1;
            }
        }
        if !changed {
            return edges.into_iter().flatten().collect();
        }
    }
}

/// The reason a rule is planned with worst-case-optimal steps (`None`: pairwise).
pub(crate) fn choose(rule: &logical::Rule, strategy: JoinStrategy) -> Option<String> {
    if strategy == JoinStrategy::Pairwise || !eligible(&rule.body) {
        return None;
    }
    let core = cyclic_core(&atom_vars(&rule.body));
    let names = |vs: &BTreeSet<VarId>| {
        vs.iter()
            .map(|&v| rule.vars.get(v).map_or("?", |i| i.name.as_str()))
            .collect::<Vec<_>>()
            .join(",")
    };
    if !core.is_empty() {
        Some(format!("cyclic body ({})", names(&core)))
    } else if strategy == JoinStrategy::Wcoj {
        Some("forced (join strategy wcoj); the body is acyclic".into())
    } else {
        None
    }
}

/// The next step of a worst-case-optimal plan.
pub(crate) enum Step {
    /// Join this atom: every variable of it is bound (an existence check), or the
    /// variable chosen next occurs in it alone.
    Join(usize),
    /// Bind `var` by intersecting `atoms` (body positions, at least two).
    Intersect { var: VarId, atoms: Vec<usize> },
}

/// The next step over the atoms not placed yet (`None` when none is left).
pub(crate) fn next_step(t: &Tracker) -> Option<Step> {
    let alive_atoms =
        || (0..t.body.len()).filter(|&i| t.alive[i] && matches!(t.body[i], Literal::Atom(_)));
    if let Some(i) = alive_atoms().find(|&i| t.vars[i].iter().all(|v| t.bound.contains(v))) {
        return Some(Step::Join(i));
    }
    // Per unbound variable: (atoms with a bound argument, atoms), first occurrence.
    let mut best: Option<((usize, usize), VarId)> = None;
    let mut seen = BTreeSet::new();
    for i in alive_atoms() {
        for &v in &t.vars[i] {
            if t.bound.contains(&v) || !seen.insert(v) {
                continue;
            }
            let atoms: Vec<usize> = alive_atoms().filter(|&j| t.vars[j].contains(&v)).collect();
            let constrained = atoms.iter().filter(|&&j| t.atom_n[j] > 0).count();
            let score = (constrained, atoms.len());
            if best.is_none_or(|(b, _)| score > b) {
                best = Some((score, v));
            }
        }
    }
    let (_, var) = best?;
    let mut atoms: Vec<usize> = alive_atoms()
        .filter(|&j| t.vars[j].contains(&var))
        .collect();
    // Atoms with no bound argument would offer every value of their column: they add
    // nothing to the intersection (each is checked at a later step, when one of its
    // other variables is bound), unless no atom is constrained at all.
    if atoms.iter().any(|&j| t.atom_n[j] > 0) {
        atoms.retain(|&j| t.atom_n[j] > 0);
    }
    match atoms.as_slice() {
        [] => None,
        [one] => Some(Step::Join(*one)),
        _ => Some(Step::Intersect { var, atoms }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{JoinChoice, Op, PlanOptions, RulePlan, Version};
    use fixlog_syntax::SourceMap;

    /// The rule plans of `text` under `join`.
    fn rule_plans(text: &str, join: JoinStrategy) -> Vec<RulePlan> {
        let mut sm = SourceMap::new();
        let p = fixlog_logical::compile_str("t.dl", text, &mut sm).expect("a valid program");
        let plan = crate::plan_with(&p, &PlanOptions { join }).expect("planned");
        plan.strata
            .into_iter()
            .flat_map(|s| s.init.into_iter().chain(s.recursive_rules))
            .collect()
    }

    fn intersections(r: &RulePlan) -> usize {
        r.ops
            .iter()
            .filter(|op| matches!(op, Op::Intersect { .. }))
            .count()
    }

    const DECLS: &str = ".decl e(x: number, y: number)\n.decl r(x: number, y: number, z: number)\n";

    #[test]
    fn cyclic_bodies_intersect_unless_pairwise_is_forced() {
        let text = format!("{DECLS}r(x, y, z) :- e(x, y), e(y, z), e(x, z), x < y.\n");
        let auto = rule_plans(&text, JoinStrategy::Auto);
        assert_eq!(intersections(&auto[0]), 1);
        let JoinChoice::Wcoj { reason, order } = &auto[0].join else {
            panic!("not worst-case-optimal: {:?}", auto[0].join)
        };
        assert_eq!(reason, "cyclic body (x,y,z)");
        assert_eq!(order, &["x", "y", "z"]);
        let pairwise = rule_plans(&text, JoinStrategy::Pairwise);
        assert_eq!(intersections(&pairwise[0]), 0);
        assert_eq!(pairwise[0].join, JoinChoice::Pairwise);
    }

    #[test]
    fn acyclic_bodies_stay_pairwise_unless_forced() {
        // A path: acyclic, pairwise under auto; forced, `y` is shared by two atoms.
        let text = format!("{DECLS}r(x, y, z) :- e(x, w), e(w, y), e(y, z), e(y, x).\n");
        let auto = rule_plans(&text, JoinStrategy::Auto);
        assert!(
            matches!(auto[0].join, JoinChoice::Wcoj { .. }),
            "x-w-y-x is a cycle"
        );
        let path = format!("{DECLS}r(x, y, z) :- e(x, y), e(y, z), e(z, _).\n");
        let auto = rule_plans(&path, JoinStrategy::Auto);
        assert_eq!(auto[0].join, JoinChoice::Pairwise);
        let forced = rule_plans(&path, JoinStrategy::Wcoj);
        assert!(matches!(forced[0].join, JoinChoice::Wcoj { .. }));
        // A repeated variable in an atom: always pairwise.
        let repeat = format!("{DECLS}r(x, y, z) :- e(x, x), e(x, y), e(y, z), e(x, z).\n");
        assert_eq!(
            rule_plans(&repeat, JoinStrategy::Wcoj)[0].join,
            JoinChoice::Pairwise
        );
    }

    #[test]
    fn delta_variants_start_from_their_delta() {
        let text = ".decl e(x: number, y: number)\n.decl p(x: number, y: number)\n\
                    p(x, y) :- e(x, y).\np(x, z) :- p(x, y), p(y, z), e(x, z).\n";
        let plans = rule_plans(text, JoinStrategy::Auto);
        let variants: Vec<&RulePlan> = plans.iter().filter(|r| r.delta_atom.is_some()).collect();
        assert_eq!(variants.len(), 2);
        for v in variants {
            assert!(
                matches!(
                    v.ops[0],
                    Op::Scan {
                        version: Version::Delta,
                        ..
                    }
                ),
                "{:?}",
                v.ops
            );
            assert_eq!(intersections(v), 1, "{:?}", v.ops);
        }
    }

    fn edges(list: &[&[VarId]]) -> Vec<BTreeSet<VarId>> {
        list.iter().map(|e| e.iter().copied().collect()).collect()
    }

    #[test]
    fn gyo_finds_cycles_and_only_cycles() {
        // Triangle, 4-cycle, 4-clique: cyclic.
        assert_eq!(cyclic_core(&edges(&[&[0, 1], &[1, 2], &[0, 2]])).len(), 3);
        assert_eq!(
            cyclic_core(&edges(&[&[0, 1], &[1, 2], &[2, 3], &[3, 0]])).len(),
            4
        );
        let clique: Vec<&[VarId]> = vec![&[0, 1], &[0, 2], &[0, 3], &[1, 2], &[1, 3], &[2, 3]];
        assert_eq!(cyclic_core(&edges(&clique)).len(), 4);
        // A path, a star, a triangle covered by one ternary atom: acyclic.
        assert!(cyclic_core(&edges(&[&[0, 1], &[1, 2], &[2, 3]])).is_empty());
        assert!(cyclic_core(&edges(&[&[0, 1], &[0, 2], &[0, 3]])).is_empty());
        assert!(cyclic_core(&edges(&[&[0, 1], &[1, 2], &[0, 2], &[0, 1, 2]])).is_empty());
        // A triangle with a dangling path: the core is the triangle.
        let core = cyclic_core(&edges(&[&[0, 1], &[1, 2], &[0, 2], &[2, 3], &[3, 4]]));
        assert_eq!(core, [0, 1, 2].into_iter().collect());
    }
}
