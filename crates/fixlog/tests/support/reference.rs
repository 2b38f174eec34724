//! A naive, obviously correct evaluator over the checked program, for tests only.
//!
//! - Strata run in the given order. Within a stratum: evaluate every rule over the
//!   current sets, add what it derives, and repeat until nothing changes (naive, not
//!   semi-naive).
//! - A rule body is evaluated by nested loops: take the first literal (in body order)
//!   that can run with the variables bound so far, enumerate its satisfiers, recurse on
//!   the rest. Atoms can always run; `v = expr` runs once `expr` is bound (and binds
//!   `v`); negations, comparisons and predicates run once all their variables are bound;
//!   an aggregate runs once its correlated variables are bound.
//! - An aggregate enumerates every satisfying assignment of its body (each atom matched
//!   against the relation's tuples), so `count` counts tuple combinations and `sum` adds
//!   the argument once per combination. Empty group: `count`/`sum` give 0, `min`/`max`/
//!   `mean` give no result.
//!
//! Only scalar semantics (comparison, arithmetic, functors) come from
//! `fixlog_logical::value`, so that the reference and the engine agree on arithmetic.

#![allow(dead_code)]

use fixlog_logical::value;
use fixlog_logical::{
    AggFunc, Atom, BinOp, CmpOp, ColType, Expr, Functor, Literal, Predicate, Program, RelId, Rule,
    SymbolTable, Term, Value, VarId,
};
use std::collections::BTreeSet;

pub type Tuples = BTreeSet<Vec<Value>>;
type Env = Vec<Option<Value>>;

/// Evaluates `program` from its own facts plus `extra` facts. `symbols` must start as a
/// copy of the program's symbol table (with the symbols of `extra` interned in it);
/// functors add to it.
pub fn evaluate(
    program: &Program,
    extra: &[(RelId, Vec<Value>)],
    symbols: &SymbolTable,
) -> Vec<Tuples> {
    let mut rels: Vec<Tuples> = vec![Tuples::new(); program.relations.len()];
    for fact in &program.facts {
        rels[fact.rel].insert(fact.values.clone());
    }
    for (rel, tuple) in extra {
        rels[*rel].insert(tuple.clone());
    }
    for stratum in &program.strata {
        loop {
            let mut changed = false;
            for &r in &stratum.rules {
                let rule = &program.rules[r];
                for tuple in eval_rule(rule, &rels, symbols) {
                    changed |= rels[rule.head.rel].insert(tuple);
                }
            }
            if !changed {
                break;
            }
        }
    }
    rels
}

struct Ctx<'a> {
    rule: &'a Rule,
    rels: &'a [Tuples],
    symbols: &'a SymbolTable,
}

fn eval_rule(rule: &Rule, rels: &[Tuples], symbols: &SymbolTable) -> Vec<Vec<Value>> {
    let ctx = Ctx {
        rule,
        rels,
        symbols,
    };
    let mut out = Vec::new();
    let body: Vec<&Literal> = rule.body.iter().collect();
    solve(&ctx, &body, vec![None; rule.vars.len()], &mut |env| {
        let tuple: Option<Vec<Value>> = rule
            .head
            .args
            .iter()
            .map(|e| eval_expr(e, env, symbols))
            .collect();
        if let Some(tuple) = tuple {
            out.push(tuple);
        }
    });
    out
}

/// Calls `emit` once per satisfying assignment of `lits` extending `env`.
fn solve(ctx: &Ctx, lits: &[&Literal], env: Env, emit: &mut dyn FnMut(&Env)) {
    if lits.is_empty() {
        emit(&env);
        return;
    }
    let i = lits
        .iter()
        .position(|l| ready(ctx, l, &env))
        .unwrap_or_else(|| panic!("reference: no literal of {lits:?} can run (env {env:?})"));
    let lit = lits[i];
    let rest: Vec<&Literal> = lits
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != i)
        .map(|(_, l)| *l)
        .collect();
    match lit {
        Literal::Atom(atom) => {
            for tuple in candidates(ctx, atom, &env) {
                let mut env2 = env.clone();
                if unify(atom, tuple, &mut env2) {
                    solve(ctx, &rest, env2, emit);
                }
            }
        }
        Literal::Negation(atom) => {
            let found = candidates(ctx, atom, &env).any(|t| unify(atom, t, &mut env.clone()));
            if !found {
                solve(ctx, &rest, env, emit);
            }
        }
        Literal::Compare {
            op, lhs, rhs, ty, ..
        } => {
            if let Some((v, e)) = binding(*op, lhs, rhs, &env) {
                if let Some(x) = eval_expr(e, &env, ctx.symbols) {
                    let mut env2 = env;
                    env2[v] = Some(x);
                    solve(ctx, &rest, env2, emit);
                }
            } else {
                let a = eval_expr(lhs, &env, ctx.symbols);
                let b = eval_expr(rhs, &env, ctx.symbols);
                if let (Some(a), Some(b)) = (a, b) {
                    if value::compare_with_symbols(*op, *ty, a, b, ctx.symbols) {
                        solve(ctx, &rest, env, emit);
                    }
                }
            }
        }
        Literal::Predicate {
            pred,
            args,
            negated,
            ..
        } => {
            let args: Option<Vec<Value>> = args
                .iter()
                .map(|e| eval_expr(e, &env, ctx.symbols))
                .collect();
            if let Some(args) = args {
                // Stated here, not through `value::eval_predicate`: an invalid pattern
                // makes both `match` and `!match` false (Soufflé).
                let (a, b) = (ctx.symbols.resolve(args[0]), ctx.symbols.resolve(args[1]));
                let holds = match pred {
                    Predicate::Contains => Some(b.contains(&*a)),
                    Predicate::Match => value::regex_full_match(&a, &b).ok(),
                };
                if holds.is_some_and(|h| h != *negated) {
                    solve(ctx, &rest, env, emit);
                }
            }
        }
        Literal::Aggregate {
            out,
            func,
            arg,
            body,
            ..
        } => {
            let body: Vec<&Literal> = body.iter().collect();
            let mut group: Vec<Value> = Vec::new();
            solve(ctx, &body, env.clone(), &mut |inner| match arg {
                Some(e) => {
                    if let Some(x) = eval_expr(e, inner, ctx.symbols) {
                        group.push(x);
                    }
                }
                None => group.push(0),
            });
            let ty = ctx.rule.vars[*out].ty;
            let result = match func {
                AggFunc::Count => Some(group.len() as Value),
                AggFunc::Sum => Some(group.iter().fold(0, |acc, &x| {
                    value::eval_binary(BinOp::Add, ty, acc, x).expect("sum overflowed")
                })),
                AggFunc::Min => group.iter().copied().reduce(|a, b| {
                    if value::compare_with_symbols(CmpOp::Lt, ty, b, a, ctx.symbols) {
                        b
                    } else {
                        a
                    }
                }),
                AggFunc::Max => group.iter().copied().reduce(|a, b| {
                    if value::compare_with_symbols(CmpOp::Gt, ty, b, a, ctx.symbols) {
                        b
                    } else {
                        a
                    }
                }),
                AggFunc::Mean => {
                    let arg_ty = expr_type(arg.as_ref().unwrap(), ctx.rule);
                    let total: f64 = group.iter().map(|&x| as_f64(x, arg_ty)).sum();
                    (!group.is_empty()).then(|| ((total / group.len() as f64) as f32).to_bits())
                }
            };
            // `out` may already be bound (`x = max y : {..}` with `x` bound): then it
            // is a test.
            if let Some(x) = result.filter(|&x| env[*out].is_none_or(|y| y == x)) {
                let mut env2 = env;
                env2[*out] = Some(x);
                solve(ctx, &rest, env2, emit);
            }
        }
    }
}

/// Can `lit` run now?
fn ready(ctx: &Ctx, lit: &Literal, env: &Env) -> bool {
    let bound = |vars: &BTreeSet<VarId>| vars.iter().all(|&v| env[v].is_some());
    match lit {
        Literal::Atom(_) => true,
        Literal::Negation(_) | Literal::Predicate { .. } => bound(&literal_vars(lit)),
        Literal::Compare { op, lhs, rhs, .. } => {
            bound(&literal_vars(lit)) || binding(*op, lhs, rhs, env).is_some()
        }
        Literal::Aggregate { .. } => {
            let outside = vars_outside(ctx.rule, lit);
            let inside = literal_vars(lit);
            bound(&inside.intersection(&outside).copied().collect())
        }
    }
}

/// `v = e` or `e = v` with `v` unbound and `e` bound: returns `(v, e)`.
fn binding<'e>(op: CmpOp, lhs: &'e Expr, rhs: &'e Expr, env: &Env) -> Option<(VarId, &'e Expr)> {
    if op != CmpOp::Eq {
        return None;
    }
    let all_bound = |e: &Expr| {
        let mut vs = BTreeSet::new();
        expr_vars(e, &mut vs);
        vs.iter().all(|&v| env[v].is_some())
    };
    match (lhs, rhs) {
        (Expr::Var(v), e) if env[*v].is_none() && all_bound(e) => Some((*v, e)),
        (e, Expr::Var(v)) if env[*v].is_none() && all_bound(e) => Some((*v, e)),
        _ => None,
    }
}

/// Tuples of the atom's relation that start with the atom's bound prefix.
fn candidates<'a>(
    ctx: &'a Ctx,
    atom: &Atom,
    env: &Env,
) -> impl Iterator<Item = &'a Vec<Value>> + 'a {
    let mut prefix = Vec::new();
    for arg in &atom.args {
        match arg {
            Term::Const(c) => prefix.push(*c),
            Term::Var(v) if env[*v].is_some() => prefix.push(env[*v].unwrap()),
            _ => break,
        }
    }
    ctx.rels[atom.rel]
        .range(prefix.clone()..)
        .take_while(move |t| t.starts_with(&prefix))
}

/// Matches `tuple` against the atom's arguments, binding unbound variables in `env`.
fn unify(atom: &Atom, tuple: &[Value], env: &mut Env) -> bool {
    for (arg, &x) in atom.args.iter().zip(tuple) {
        match arg {
            Term::Wildcard => {}
            Term::Const(c) => {
                if *c != x {
                    return false;
                }
            }
            Term::Var(v) => match env[*v] {
                Some(y) if y != x => return false,
                Some(_) => {}
                None => env[*v] = Some(x),
            },
        }
    }
    true
}

fn eval_expr(e: &Expr, env: &Env, symbols: &SymbolTable) -> Option<Value> {
    match e {
        Expr::Var(v) => Some(env[*v].expect("reference: unbound variable in expression")),
        Expr::Const(c) => Some(*c),
        Expr::Unary { op, ty, arg } => value::eval_unary(*op, *ty, eval_expr(arg, env, symbols)?),
        Expr::Binary { op, ty, lhs, rhs } => value::eval_binary(
            *op,
            *ty,
            eval_expr(lhs, env, symbols)?,
            eval_expr(rhs, env, symbols)?,
        ),
        Expr::Functor { func, args } => {
            let args: Option<Vec<Value>> =
                args.iter().map(|a| eval_expr(a, env, symbols)).collect();
            value::eval_functor(*func, &args?, symbols)
        }
    }
}

fn expr_type(e: &Expr, rule: &Rule) -> ColType {
    match e {
        Expr::Var(v) => rule.vars[*v].ty,
        Expr::Const(_) => ColType::Number,
        Expr::Unary { ty, .. } | Expr::Binary { ty, .. } => *ty,
        Expr::Functor { func, .. } => match func {
            Functor::Cat | Functor::Substr | Functor::ToString => ColType::Symbol,
            Functor::Strlen | Functor::Ord | Functor::ToNumber | Functor::ToInteger => {
                ColType::Number
            }
            Functor::ToUnsigned => ColType::Unsigned,
            Functor::ToFloat => ColType::Float,
            Functor::Convert(_, to) => *to,
            Functor::Pack(t) | Functor::Field(_, t) => *t,
        },
    }
}

fn as_f64(x: Value, ty: ColType) -> f64 {
    match ty {
        ColType::Number => x as i32 as f64,
        ColType::Unsigned => x as f64,
        ColType::Float => f32::from_bits(x) as f64,
        ColType::Symbol | ColType::Record(_) => panic!("mean over symbols or records"),
    }
}

fn expr_vars(e: &Expr, out: &mut BTreeSet<VarId>) {
    match e {
        Expr::Var(v) => {
            out.insert(*v);
        }
        Expr::Const(_) => {}
        Expr::Unary { arg, .. } => expr_vars(arg, out),
        Expr::Binary { lhs, rhs, .. } => {
            expr_vars(lhs, out);
            expr_vars(rhs, out);
        }
        Expr::Functor { args, .. } => args.iter().for_each(|a| expr_vars(a, out)),
    }
}

/// Variables of a literal; for an aggregate, those of its body and argument (not `out`).
fn literal_vars(lit: &Literal) -> BTreeSet<VarId> {
    let mut out = BTreeSet::new();
    add_literal_vars(lit, &mut out);
    out
}

fn add_literal_vars(lit: &Literal, out: &mut BTreeSet<VarId>) {
    match lit {
        Literal::Atom(a) | Literal::Negation(a) => {
            for t in &a.args {
                if let Term::Var(v) = t {
                    out.insert(*v);
                }
            }
        }
        Literal::Compare { lhs, rhs, .. } => {
            expr_vars(lhs, out);
            expr_vars(rhs, out);
        }
        Literal::Predicate { args, .. } => args.iter().for_each(|a| expr_vars(a, out)),
        Literal::Aggregate { arg, body, .. } => {
            if let Some(a) = arg {
                expr_vars(a, out);
            }
            body.iter().for_each(|l| add_literal_vars(l, out));
        }
    }
}

/// Variables that occur in the rule outside `target` (the head, other literals, and
/// the `out` variables of aggregates).
fn vars_outside(rule: &Rule, target: &Literal) -> BTreeSet<VarId> {
    fn walk(lits: &[Literal], target: &Literal, out: &mut BTreeSet<VarId>) {
        for lit in lits {
            if std::ptr::eq(lit, target) {
                continue;
            }
            match lit {
                Literal::Aggregate {
                    out: o, arg, body, ..
                } => {
                    out.insert(*o);
                    if let Some(a) = arg {
                        expr_vars(a, out);
                    }
                    walk(body, target, out);
                }
                _ => add_literal_vars(lit, out),
            }
        }
    }
    let mut out = BTreeSet::new();
    rule.head.args.iter().for_each(|e| expr_vars(e, &mut out));
    walk(&rule.body, target, &mut out);
    out
}
