//! Small helpers shared by the logical-level passes that rewrite rules
//! ([`crate::inline`], [`crate::magic`]): renaming variables and relations, and
//! removing relations from a program.

use crate::ir::*;

/// Rewrite every variable of an expression through `map`.
pub(crate) fn expr_vars(e: &Expr, map: &dyn Fn(VarId) -> Expr) -> Expr {
    match e {
        Expr::Var(v) => map(*v),
        Expr::Const(c) => Expr::Const(*c),
        Expr::Unary { op, ty, arg } => Expr::Unary {
            op: *op,
            ty: *ty,
            arg: Box::new(expr_vars(arg, map)),
        },
        Expr::Binary { op, ty, lhs, rhs } => Expr::Binary {
            op: *op,
            ty: *ty,
            lhs: Box::new(expr_vars(lhs, map)),
            rhs: Box::new(expr_vars(rhs, map)),
        },
        Expr::Functor { func, args } => Expr::Functor {
            func: *func,
            args: args.iter().map(|a| expr_vars(a, map)).collect(),
        },
    }
}

/// What a rewrite puts in place of a variable: a variable, or a constant (only where
/// the variable is a term or in an expression; the result of a range or an aggregate
/// must stay a variable).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Renamed {
    Var(VarId),
    Const(Value),
}

impl Renamed {
    pub(crate) fn expr(self) -> Expr {
        match self {
            Renamed::Var(v) => Expr::Var(v),
            Renamed::Const(c) => Expr::Const(c),
        }
    }

    fn term(self) -> Term {
        match self {
            Renamed::Var(v) => Term::Var(v),
            Renamed::Const(c) => Term::Const(c),
        }
    }
}

fn atom_vars(a: &Atom, map: &dyn Fn(VarId) -> Renamed) -> Atom {
    Atom {
        rel: a.rel,
        args: a
            .args
            .iter()
            .map(|t| match t {
                Term::Var(v) => map(*v).term(),
                t => *t,
            })
            .collect(),
        span: a.span,
    }
}

/// Rewrite every variable of a literal to another variable.
pub(crate) fn rename_literal(l: &Literal, map: &dyn Fn(VarId) -> VarId) -> Literal {
    let renamed =
        map_literal::<std::convert::Infallible>(l, &|v| Renamed::Var(map(v)), &|v| Ok(map(v)));
    match renamed {
        Ok(l) => l,
        Err(never) => match never {},
    }
}

/// Rewrite every variable of a literal to a variable or a constant; `None` when the
/// result of a range or an aggregate (which must stay a variable) would be a constant.
pub(crate) fn substitute_literal(l: &Literal, map: &dyn Fn(VarId) -> Renamed) -> Option<Literal> {
    map_literal(l, map, &|v| match map(v) {
        Renamed::Var(u) => Ok(u),
        Renamed::Const(_) => Err(()),
    })
    .ok()
}

/// Rewrite every variable of a literal through `map`; the results of ranges and
/// aggregates through `out`, which may refuse.
fn map_literal<E>(
    l: &Literal,
    map: &dyn Fn(VarId) -> Renamed,
    out: &dyn Fn(VarId) -> Result<VarId, E>,
) -> Result<Literal, E> {
    let expr = |e: &Expr| expr_vars(e, &|v| map(v).expr());
    Ok(match l {
        Literal::Atom(a) => Literal::Atom(atom_vars(a, map)),
        Literal::Negation(a) => Literal::Negation(atom_vars(a, map)),
        Literal::Compare {
            op,
            lhs,
            rhs,
            ty,
            span,
        } => Literal::Compare {
            op: *op,
            lhs: expr(lhs),
            rhs: expr(rhs),
            ty: *ty,
            span: *span,
        },
        Literal::Predicate {
            pred,
            args,
            negated,
            span,
        } => Literal::Predicate {
            pred: *pred,
            args: args.iter().map(expr).collect(),
            negated: *negated,
            span: *span,
        },
        Literal::Range {
            out: v,
            ty,
            args,
            span,
        } => Literal::Range {
            out: out(*v)?,
            ty: *ty,
            args: args.iter().map(expr).collect(),
            span: *span,
        },
        Literal::Aggregate {
            out: v,
            func,
            arg,
            body,
            span,
        } => Literal::Aggregate {
            out: out(*v)?,
            func: *func,
            arg: arg.as_ref().map(expr),
            body: body
                .iter()
                .map(|l| map_literal(l, map, out))
                .collect::<Result<_, E>>()?,
            span: *span,
        },
    })
}

/// Every variable of an expression.
pub(crate) fn vars_of_expr(e: &Expr, out: &mut Vec<VarId>) {
    match e {
        Expr::Var(v) => out.push(*v),
        Expr::Const(_) => {}
        Expr::Unary { arg, .. } => vars_of_expr(arg, out),
        Expr::Binary { lhs, rhs, .. } => {
            vars_of_expr(lhs, out);
            vars_of_expr(rhs, out);
        }
        Expr::Functor { args, .. } => args.iter().for_each(|a| vars_of_expr(a, out)),
    }
}

/// Every variable of a literal (aggregate bodies included).
pub(crate) fn vars_of_literal(l: &Literal, out: &mut Vec<VarId>) {
    match l {
        Literal::Atom(a) | Literal::Negation(a) => {
            out.extend(a.args.iter().filter_map(
                |t| {
                    if let Term::Var(v) = t {
                        Some(*v)
                    } else {
                        None
                    }
                },
            ))
        }
        Literal::Compare { lhs, rhs, .. } => {
            vars_of_expr(lhs, out);
            vars_of_expr(rhs, out);
        }
        Literal::Predicate { args, .. } => args.iter().for_each(|a| vars_of_expr(a, out)),
        Literal::Range { out: o, args, .. } => {
            out.push(*o);
            args.iter().for_each(|a| vars_of_expr(a, out));
        }
        Literal::Aggregate {
            out: o, arg, body, ..
        } => {
            out.push(*o);
            if let Some(a) = arg {
                vars_of_expr(a, out);
            }
            body.iter().for_each(|l| vars_of_literal(l, out));
        }
    }
}

fn literal_rels(l: &mut Literal, f: &dyn Fn(RelId) -> RelId) {
    match l {
        Literal::Atom(a) | Literal::Negation(a) => a.rel = f(a.rel),
        Literal::Aggregate { body, .. } => body.iter_mut().for_each(|l| literal_rels(l, f)),
        Literal::Compare { .. } | Literal::Predicate { .. } | Literal::Range { .. } => {}
    }
}

/// Renumber the relations of a rule through `f`.
pub(crate) fn rule_rels(r: &mut Rule, f: &dyn Fn(RelId) -> RelId) {
    r.head.rel = f(r.head.rel);
    r.body.iter_mut().for_each(|l| literal_rels(l, f));
}

/// Remove the relations with `remove[r]` (which no remaining rule may mention), their
/// facts and rules, and renumber the others.
pub(crate) fn remove_relations(
    relations: &mut Vec<Relation>,
    facts: &mut Vec<Fact>,
    rules: &mut Vec<Rule>,
    subsumptions: &mut Vec<Rule>,
    remove: &[bool],
) {
    let mut new_id = vec![usize::MAX; relations.len()];
    let mut next = 0;
    for (r, id) in new_id.iter_mut().enumerate() {
        if !remove[r] {
            *id = next;
            next += 1;
        }
    }
    let mut i = 0;
    relations.retain(|_| {
        i += 1;
        !remove[i - 1]
    });
    facts.retain(|f| !remove[f.rel]);
    facts.iter_mut().for_each(|f| f.rel = new_id[f.rel]);
    for rs in [rules, subsumptions] {
        rs.retain(|r| !remove[r.head.rel]);
        rs.iter_mut().for_each(|r| rule_rels(r, &|x| new_id[x]));
    }
}

/// Whether an expression computes the same value every time it is evaluated on the
/// same arguments and has no effect (every functor of the logical IR today; a counter
/// or a user-defined functor would not be), so that a pass may evaluate it in another
/// rule, more or fewer times.
pub(crate) fn expr_is_pure(e: &Expr) -> bool {
    match e {
        Expr::Var(_) | Expr::Const(_) => true,
        Expr::Unary { arg, .. } => expr_is_pure(arg),
        Expr::Binary { lhs, rhs, .. } => expr_is_pure(lhs) && expr_is_pure(rhs),
        Expr::Functor { func, args } => func.is_pure() && args.iter().all(expr_is_pure),
    }
}

/// [`expr_is_pure`] for every expression of a rule.
pub(crate) fn rule_is_pure(r: &Rule) -> bool {
    fn lit(l: &Literal) -> bool {
        match l {
            Literal::Atom(_) | Literal::Negation(_) => true,
            Literal::Compare { lhs, rhs, .. } => expr_is_pure(lhs) && expr_is_pure(rhs),
            Literal::Predicate { args, .. } | Literal::Range { args, .. } => {
                args.iter().all(expr_is_pure)
            }
            Literal::Aggregate { arg, body, .. } => {
                arg.as_ref().is_none_or(expr_is_pure) && body.iter().all(lit)
            }
        }
    }
    r.head.args.iter().all(expr_is_pure) && r.body.iter().all(lit)
}
