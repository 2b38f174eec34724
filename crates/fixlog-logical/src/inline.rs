//! `inline` relations (Soufflé's qualifier): not materialised. Every atom over an
//! inline relation is replaced by the bodies of the relation's clauses (its rules and
//! facts), with the clause's variables renamed apart and its head unified with the
//! atom's arguments, before stratification. Then the inline relations are removed.
//!
//! - A positive atom `r(t1, ..., tn)` becomes one rule per clause of `r` (none: the
//!   rule is dropped): the clause's body, renamed, plus `ti = hi` for every argument
//!   that the renaming does not absorb (a constant, a repeated variable, an expression).
//! - A negated atom `!r(t)` is `¬(∃ clause: t = h ∧ body)`: a conjunction over the
//!   clauses of disjunctions of negated literals, so one rule per choice of a negated
//!   literal in each clause. As in Soufflé, that needs clauses whose head arguments are
//!   variables or constants and whose bodies use no other variables (and no
//!   aggregates), and a negated atom without `_`.
//! - Inside an aggregate, a positive atom over an inline relation with exactly one
//!   clause is unfolded in place; anything else is an error (Soufflé combines the
//!   aggregates of several clauses; Fixlog does not).
//!
//! Errors, located: an inline relation that is an input, an output, `.printsize`d,
//! `eqrel`, has a `choice-domain`, a subsumptive clause, or lies on a cycle of inline
//! relations.

use crate::ir::*;
use crate::rewrite::{
    remove_relations, rename_literal, substitute_literal, vars_of_literal, Renamed,
};
use fixlog_syntax::{Diagnostic, SourceMap};

/// The most rules unfolding may produce before it is an error (inlining multiplies
/// the clauses of every level).
const MAX_RULES: usize = 1 << 20;

/// One clause of an inline relation.
struct Def {
    args: Vec<Expr>,
    body: Vec<Literal>,
    vars: Vec<VarInfo>,
    span: fixlog_syntax::Span,
}

/// The program parts the checker builds, before stratification.
pub(crate) struct Parts<'a> {
    pub relations: &'a mut Vec<Relation>,
    pub facts: &'a mut Vec<Fact>,
    pub rules: &'a mut Vec<Rule>,
    pub subsumptions: &'a mut Vec<Rule>,
}

/// Unfold the relations with `inline[r]` and remove them.
pub(crate) fn inline(
    p: Parts<'_>,
    inline: &[bool],
    sources: &SourceMap,
) -> Result<(), Vec<Diagnostic>> {
    if !inline.iter().any(|&b| b) {
        return Ok(());
    }
    let mut errors = Vec::new();
    for (r, rel) in p.relations.iter().enumerate() {
        if !inline[r] {
            continue;
        }
        for io in &rel.inputs {
            errors.push(Diagnostic::error(
                format!("inline relation `{}` cannot be an input", rel.name),
                io.span,
            ));
        }
        for io in &rel.outputs {
            errors.push(Diagnostic::error(
                format!("inline relation `{}` cannot be an output", rel.name),
                io.span,
            ));
        }
        if rel.printsize {
            errors.push(Diagnostic::error(
                format!(
                    "inline relation `{}` cannot be printed (`.printsize`)",
                    rel.name
                ),
                rel.span,
            ));
        }
        if rel.eqrel || !rel.choice_domains.is_empty() {
            errors.push(Diagnostic::error(
                format!(
                    "inline relation `{}` cannot be `eqrel` or have a `choice-domain`",
                    rel.name
                ),
                rel.span,
            ));
        }
    }
    for s in p.subsumptions.iter() {
        if inline[s.head.rel] {
            errors.push(Diagnostic::error(
                format!(
                    "inline relation `{}` cannot have a subsumptive clause",
                    p.relations[s.head.rel].name
                ),
                s.span,
            ));
        }
    }
    // Cycles through inline relations.
    let n = p.relations.len();
    let mut reads: Vec<Vec<RelId>> = vec![Vec::new(); n];
    fn lit_rels(l: &Literal, out: &mut Vec<RelId>) {
        match l {
            Literal::Atom(a) | Literal::Negation(a) => out.push(a.rel),
            Literal::Aggregate { body, .. } => body.iter().for_each(|l| lit_rels(l, out)),
            _ => {}
        }
    }
    for rule in p.rules.iter() {
        if inline[rule.head.rel] {
            rule.body
                .iter()
                .for_each(|l| lit_rels(l, &mut reads[rule.head.rel]));
        }
    }
    // 0 unvisited, 1 on the path, 2 done.
    let mut state = vec![0u8; n];
    for root in (0..n).filter(|&r| inline[r]) {
        if state[root] != 0 {
            continue;
        }
        let mut stack: Vec<(RelId, usize)> = vec![(root, 0)];
        state[root] = 1;
        while let Some(&mut (r, ref mut i)) = stack.last_mut() {
            if let Some(&next) = reads[r].get(*i) {
                *i += 1;
                if !inline[next] {
                    continue;
                }
                if state[next] == 1 {
                    errors.push(Diagnostic::error(
                        format!(
                            "cannot inline the recursive relation `{}` (an inline relation cannot depend on itself)",
                            p.relations[next].name
                        ),
                        p.relations[next].span,
                    ));
                    state[next] = 2;
                } else if state[next] == 0 {
                    state[next] = 1;
                    stack.push((next, 0));
                }
            } else {
                state[r] = 2;
                stack.pop();
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }

    // The clauses of each inline relation.
    let mut defs: Vec<Vec<Def>> = (0..n).map(|_| Vec::new()).collect();
    for f in p.facts.iter().filter(|f| inline[f.rel]) {
        defs[f.rel].push(Def {
            args: f.values.iter().map(|&v| Expr::Const(v)).collect(),
            body: Vec::new(),
            vars: Vec::new(),
            span: f.span,
        });
    }
    for r in p.rules.iter().filter(|r| inline[r.head.rel]) {
        defs[r.head.rel].push(Def {
            args: r.head.args.clone(),
            body: r.body.clone(),
            vars: r.vars.clone(),
            span: r.span,
        });
    }
    let ctx = Ctx {
        defs: &defs,
        inline,
        relations: p.relations,
        sources,
    };
    let mut out = Vec::new();
    let mut work: Vec<Rule> = std::mem::take(p.rules)
        .into_iter()
        .filter(|r| !inline[r.head.rel])
        .rev()
        .collect();
    let mut produced = 0usize;
    while let Some(rule) = work.pop() {
        match ctx.unfold_once(&rule) {
            Err(e) => errors.push(e),
            Ok(None) => out.push(rule),
            Ok(Some(rules)) => {
                produced += rules.len();
                if produced > MAX_RULES {
                    errors.push(Diagnostic::error(
                        format!("inlining this rule makes more than {MAX_RULES} rules"),
                        rule.span,
                    ));
                    break;
                }
                work.extend(rules.into_iter().rev());
            }
        }
    }
    let mut subs = Vec::new();
    for rule in std::mem::take(p.subsumptions) {
        let mut work = vec![rule];
        while let Some(rule) = work.pop() {
            match ctx.unfold_once(&rule) {
                Err(e) => errors.push(e),
                Ok(None) => subs.push(rule),
                Ok(Some(rules)) => work.extend(rules),
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    *p.rules = out;
    *p.subsumptions = subs;
    remove_relations(p.relations, p.facts, p.rules, p.subsumptions, inline);
    Ok(())
}

/// Whether a clause's head arguments are variables or constants and its body uses no
/// other variables (and, with `no_wildcards`, no `_` in a positive atom) and has no
/// aggregate: unfolding it then adds no variable of its own.
fn closed(def: &Def, no_wildcards: bool) -> bool {
    let mut head = Vec::new();
    for a in &def.args {
        match a {
            Expr::Var(v) => head.push(*v),
            Expr::Const(_) => {}
            _ => return false,
        }
    }
    let mut body = Vec::new();
    for l in &def.body {
        match l {
            Literal::Aggregate { .. } | Literal::Range { .. } => return false,
            Literal::Atom(a)
                if no_wildcards && a.args.iter().any(|t| matches!(t, Term::Wildcard)) =>
            {
                return false
            }
            _ => vars_of_literal(l, &mut body),
        }
    }
    body.iter().all(|v| head.contains(v))
}

struct Ctx<'a> {
    defs: &'a [Vec<Def>],
    inline: &'a [bool],
    relations: &'a [Relation],
    sources: &'a SourceMap,
}

fn term_expr(t: &Term) -> Option<Expr> {
    match t {
        Term::Var(v) => Some(Expr::Var(*v)),
        Term::Const(c) => Some(Expr::Const(*c)),
        Term::Wildcard => None,
    }
}

/// The negation of a literal; `None` for an aggregate or a range (which bind a
/// variable: a clause holding one cannot be negated by inlining, see [`closed`]).
fn negate(l: Literal) -> Option<Literal> {
    Some(match l {
        Literal::Atom(a) => Literal::Negation(a),
        Literal::Negation(a) => Literal::Atom(a),
        Literal::Compare {
            op,
            lhs,
            rhs,
            ty,
            span,
        } => Literal::Compare {
            op: match op {
                CmpOp::Eq => CmpOp::Ne,
                CmpOp::Ne => CmpOp::Eq,
                CmpOp::Lt => CmpOp::Ge,
                CmpOp::Ge => CmpOp::Lt,
                CmpOp::Le => CmpOp::Gt,
                CmpOp::Gt => CmpOp::Le,
            },
            lhs,
            rhs,
            ty,
            span,
        },
        Literal::Predicate {
            pred,
            args,
            negated,
            span,
        } => Literal::Predicate {
            pred,
            args,
            negated: !negated,
            span,
        },
        Literal::Aggregate { .. } | Literal::Range { .. } => return None,
    })
}

impl Ctx<'_> {
    /// Unfold the first inline atom of `rule` (top level first, then inside
    /// aggregates): `None` when it has none.
    fn unfold_once(&self, rule: &Rule) -> Result<Option<Vec<Rule>>, Diagnostic> {
        for (i, l) in rule.body.iter().enumerate() {
            match l {
                Literal::Atom(a) if self.inline[a.rel] => {
                    return Ok(Some(self.positive(rule, i, a)));
                }
                Literal::Negation(a) if self.inline[a.rel] => {
                    return self.negative(rule, i, a).map(Some);
                }
                _ => {}
            }
        }
        // Inside aggregates: a positive atom with one clause, in place.
        let mut rule = rule.clone();
        let mut vars = std::mem::take(&mut rule.vars);
        let changed = self.in_aggregates(&mut rule.body, &mut vars, false)?;
        rule.vars = vars;
        Ok(changed.then(|| vec![rule]))
    }

    fn in_aggregates(
        &self,
        body: &mut Vec<Literal>,
        vars: &mut Vec<VarInfo>,
        inside: bool,
    ) -> Result<bool, Diagnostic> {
        for i in 0..body.len() {
            if let Literal::Aggregate { body: sub, .. } = &mut body[i] {
                let changed = self.in_aggregates(sub, vars, true)?;
                if changed {
                    return Ok(true);
                }
                continue;
            }
            match &mut body[i] {
                Literal::Atom(a) if inside && self.inline[a.rel] => {
                    let a = a.clone();
                    let defs = &self.defs[a.rel];
                    if defs.len() != 1 {
                        return Err(Diagnostic::error(
                            format!(
                                "cannot inline `{}` inside an aggregate: it has {} clauses (Fixlog inlines a relation of exactly one clause there)",
                                self.relations[a.rel].name,
                                defs.len()
                            ),
                            a.span,
                        ));
                    }
                    if !closed(&defs[0], true) {
                        return Err(Diagnostic::error(
                            format!(
                                "cannot inline `{}` inside an aggregate: its clause at {} has head arguments that are not variables or constants, or body variables (or `_`) not in its head, which would change what the aggregate counts",
                                self.relations[a.rel].name,
                                self.sources.location(defs[0].span)
                            ),
                            a.span,
                        ));
                    }
                    let lits = self.unify(&defs[0], &a, vars);
                    body.splice(i..=i, lits);
                    return Ok(true);
                }
                Literal::Negation(a) if inside && self.inline[a.rel] => {
                    return Err(Diagnostic::error(
                        format!(
                            "cannot inline the negation of `{}` inside an aggregate",
                            self.relations[a.rel].name
                        ),
                        a.span,
                    ));
                }
                _ => {}
            }
        }
        Ok(false)
    }

    /// The literals of `def` unified with `atom`, its variables renamed to fresh ones
    /// of `vars` (or to the atom's variables).
    fn unify(&self, def: &Def, atom: &Atom, vars: &mut Vec<VarInfo>) -> Vec<Literal> {
        let types = self.relations[atom.rel].types();
        let mut map: Vec<Option<VarId>> = vec![None; def.vars.len()];
        let mut eqs = Vec::new();
        for (j, (h, t)) in def.args.iter().zip(&atom.args).enumerate() {
            match (h, t) {
                (Expr::Var(v), Term::Var(u)) if map[*v].is_none() => map[*v] = Some(*u),
                (_, Term::Wildcard) => {}
                _ => eqs.push((j, t, h)),
            }
        }
        let fresh = |v: VarId, vars: &mut Vec<VarInfo>| {
            let info = &def.vars[v];
            vars.push(VarInfo {
                name: format!("${}", info.name.trim_start_matches('$')),
                ty: info.ty,
            });
            vars.len() - 1
        };
        // Every clause variable not bound by the atom gets a fresh variable.
        let map: Vec<VarId> = map
            .into_iter()
            .enumerate()
            .map(|(v, m)| m.unwrap_or_else(|| fresh(v, vars)))
            .collect();
        let rename = |v: VarId| map[v];
        let mut out: Vec<Literal> = def
            .body
            .iter()
            .map(|l| rename_literal(l, &rename))
            .collect();
        for (j, t, h) in eqs {
            // Wildcards were skipped above, so every term here is an expression.
            if let Some(lhs) = term_expr(t) {
                out.push(Literal::Compare {
                    op: CmpOp::Eq,
                    lhs,
                    rhs: crate::rewrite::expr_vars(h, &|v| Expr::Var(rename(v))),
                    ty: types[j],
                    span: atom.span,
                });
            }
        }
        out
    }

    fn positive(&self, rule: &Rule, i: usize, atom: &Atom) -> Vec<Rule> {
        self.defs[atom.rel]
            .iter()
            .map(|def| {
                let mut r = rule.clone();
                // The body's atoms change: a `.plan` no longer applies.
                r.plan.clear();
                let lits = self.unify(def, atom, &mut r.vars);
                r.body.splice(i..=i, lits);
                r
            })
            .collect()
    }

    fn negative(&self, rule: &Rule, i: usize, atom: &Atom) -> Result<Vec<Rule>, Diagnostic> {
        let name = &self.relations[atom.rel].name;
        if atom.args.iter().any(|t| matches!(t, Term::Wildcard)) {
            return Err(Diagnostic::error(
                format!("cannot inline the negation of `{name}` with an unnamed variable `_` in it (as in Soufflé)"),
                atom.span,
            ));
        }
        let types = self.relations[atom.rel].types();
        // For each clause, the disjunction that negates it.
        let mut disjunctions: Vec<Vec<Literal>> = Vec::new();
        for def in &self.defs[atom.rel] {
            let bad = || {
                Diagnostic::error(
                    format!(
                        "cannot inline the negation of `{name}`: its clause at {} has head arguments that are not variables or constants, or body variables not in its head, or an aggregate",
                        self.sources.location(def.span)
                    ),
                    atom.span,
                )
            };
            if !closed(def, false) {
                return Err(bad());
            }
            let mut map: Vec<Option<Renamed>> = vec![None; def.vars.len()];
            let mut disj = Vec::new();
            for (j, (h, t)) in def.args.iter().zip(&atom.args).enumerate() {
                // Wildcards were rejected above.
                let t = match t {
                    Term::Var(v) => Renamed::Var(*v),
                    Term::Const(c) => Renamed::Const(*c),
                    Term::Wildcard => return Err(bad()),
                };
                match h {
                    Expr::Var(v) => match map[*v] {
                        None => map[*v] = Some(t),
                        Some(seen) => disj.push((j, t, seen)),
                    },
                    Expr::Const(c) => disj.push((j, t, Renamed::Const(*c))),
                    _ => return Err(bad()),
                }
            }
            // `closed` checked that every body variable occurs in the head.
            if map.iter().any(Option::is_none) {
                return Err(bad());
            }
            let map: Vec<Renamed> = map.into_iter().flatten().collect();
            let rename = |v: VarId| map[v];
            let mut d: Vec<Literal> = disj
                .into_iter()
                .map(|(j, t, h)| Literal::Compare {
                    op: CmpOp::Ne,
                    lhs: t.expr(),
                    rhs: h.expr(),
                    ty: types[j],
                    span: atom.span,
                })
                .collect();
            // `closed` also checked that the body has no aggregate or range (which
            // could not be negated, nor have a constant for their result).
            for l in &def.body {
                let negated = substitute_literal(l, &rename).and_then(negate);
                d.push(negated.ok_or_else(bad)?);
            }
            disjunctions.push(d);
        }
        // One rule per choice of a literal in each disjunction.
        let mut bodies: Vec<Vec<Literal>> = vec![Vec::new()];
        for d in &disjunctions {
            let mut next = Vec::with_capacity(bodies.len() * d.len());
            for b in &bodies {
                for l in d {
                    let mut b = b.clone();
                    b.push(l.clone());
                    next.push(b);
                }
            }
            bodies = next;
            if bodies.len() > MAX_RULES {
                return Err(Diagnostic::error(
                    format!("inlining the negation of `{name}` makes more than {MAX_RULES} rules"),
                    atom.span,
                ));
            }
        }
        Ok(bodies
            .into_iter()
            .map(|extra| {
                let mut r = rule.clone();
                r.plan.clear();
                r.body.splice(i..=i, extra);
                r
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use crate::{compile_str, Literal, Program};
    use fixlog_syntax::SourceMap;

    fn compile(text: &str) -> Result<Program, String> {
        let mut sm = SourceMap::new();
        compile_str("t.dl", text, &mut sm).map_err(|d| d.render(&sm))
    }

    #[test]
    fn an_atom_becomes_one_rule_per_clause_and_the_relation_goes() {
        let p = compile(
            r#"
            .decl e(x: number, y: number)
            e(1, 2).
            .decl i(x: number) inline
            i(x) :- e(x, _).
            i(x) :- e(_, x).
            i(7).
            .decl q(x: number)
            q(x) :- i(x).
        "#,
        )
        .unwrap();
        assert!(p.relation_id("i").is_none());
        let q = p.relation_id("q").unwrap();
        assert_eq!(p.rules.iter().filter(|r| r.head.rel == q).count(), 3);
        // The fact became `x = 7`.
        assert!(p
            .rules
            .iter()
            .any(|r| matches!(r.body.as_slice(), [Literal::Compare { .. }])));
    }

    #[test]
    fn a_negation_becomes_a_choice_per_clause() {
        let p = compile(
            r#"
            .decl e(x: number, y: number)
            e(1, 2).
            .decl i(x: number) inline
            i(x) :- e(x, x), x > 1.
            i(3).
            .decl q(x: number)
            q(x) :- e(x, _), !i(x).
        "#,
        )
        .unwrap();
        // (!e(x, x) or x <= 1) and x != 3: two rules.
        let q = p.relation_id("q").unwrap();
        assert_eq!(p.rules.iter().filter(|r| r.head.rel == q).count(), 2);
    }

    #[test]
    fn cycles_are_rejected() {
        let e = compile(
            r#"
            .decl a(x: number) inline
            .decl b(x: number) inline
            a(x) :- b(x).
            b(x) :- a(x).
            b(1).
            .decl q(x: number)
            q(x) :- a(x).
        "#,
        )
        .unwrap_err();
        assert!(e.contains("cannot inline the recursive relation"), "{e}");
    }
}
