//! A naive, obviously correct evaluator over the checked program, for tests only.
//!
//! - Strata run in the given order. Within a stratum: a first round evaluates the rules
//!   that read no relation of the stratum (all rules of a non-recursive stratum); then
//!   rounds evaluate every rule of the stratum over the current sets (naive, not
//!   semi-naive) until a round changes nothing. A round first evaluates all its rules,
//!   then adds what they derived (the rounds are the engine's steps, which matters for
//!   choice).
//! - Relations kept in a shape, computed independently of the engine's union-find:
//!   an `eqrel` relation is replaced after every round by the equivalence closure of
//!   its pairs (classes by graph search); a `choice-domain` relation adds a round's new
//!   tuples in output order, each only if no tuple it holds shares a domain value
//!   with it. Facts are folded the same way before the strata run.
//! - Lattice attributes: a relation holds one tuple per key; a round's new tuples are
//!   grouped by key and folded with the lattice's `Lub`, then combined with the held
//!   tuple of the key (which they replace).
//! - `.limitsize`: before each round of the loop, a relation of the stratum holding at
//!   least its limit ends the stratum.
//! - `recursive_iteration_cnt()` (`Program::iteration`): its relation holds `0` in the
//!   first round of a stratum and `k` in the `k`-th round of the loop (from 0). A rule
//!   that reads it is evaluated semi-naively in the loop (each binding uses at least one
//!   tuple the previous round added to a relation of the stratum), since its tuples
//!   depend on the round that derives them, as in Soufflé; every other rule stays naive.
//! - `debug_delta` relations (`Program::debug_deltas`): after the `k`-th round of the
//!   loop (from 0), every tuple the round added to the source (what it holds after the
//!   round and did not before) is added to the `debug_delta` relation with `k` appended.
//! - After each round, the subsumptive clauses of the stratum's relations are evaluated
//!   and the dominated tuples they derive are removed.
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

thread_local! {
    /// Steps (`solve` calls) the current evaluation may still take.
    static STEPS_LEFT: std::cell::Cell<u64> = const { std::cell::Cell::new(u64::MAX) };
}

/// [`evaluate`] within `steps` steps of the nested-loop search: `None` when the program
/// needs more (a random program whose relations explode is not a useful case for a
/// reference that evaluates by nested loops).
pub fn evaluate_within(
    program: &Program,
    extra: &[(RelId, Vec<Value>)],
    symbols: &SymbolTable,
    steps: u64,
) -> Option<Vec<Tuples>> {
    STEPS_LEFT.with(|s| s.set(steps));
    let rels = evaluate(program, extra, symbols);
    let exhausted = STEPS_LEFT.with(|s| s.replace(u64::MAX)) == 0;
    (!exhausted).then_some(rels)
}

/// Evaluates `program` from its own facts plus `extra` facts. `symbols` must start as a
/// copy of the program's symbol table (with the symbols of `extra` interned in it);
/// functors add to it.
pub fn evaluate(
    program: &Program,
    extra: &[(RelId, Vec<Value>)],
    symbols: &SymbolTable,
) -> Vec<Tuples> {
    let n = program.relations.len();
    let mut rels: Vec<Tuples> = vec![Tuples::new(); n];
    let mut facts: Vec<Tuples> = vec![Tuples::new(); n];
    for fact in &program.facts {
        facts[fact.rel].insert(fact.values.clone());
    }
    for (rel, tuple) in extra {
        facts[*rel].insert(tuple.clone());
    }
    for (rel, new) in facts.into_iter().enumerate() {
        add_round(program, rel, &mut rels, new, symbols);
    }
    let mut counter: Value = 0;
    for stratum in &program.strata {
        // `autoinc()`: the source's tuples in output order, numbered from a counter
        // shared by the run, in stratum order.
        for a in program
            .autoincs
            .iter()
            .filter(|a| stratum.relations.contains(&a.target))
        {
            let types = program.relations[a.source].types();
            let order = value::output_order(&types, symbols);
            let mut tuples: Vec<&Vec<Value>> = rels[a.source].iter().collect();
            tuples.sort_by(|x, y| order(x, y));
            let mut numbered = Tuples::new();
            for t in tuples {
                let mut row = vec![counter];
                row.extend_from_slice(t);
                numbered.insert(row);
                counter = counter.wrapping_add(a.per_tuple);
            }
            rels[a.target] = numbered;
        }
        let in_stratum = |r: RelId| stratum.relations.contains(&r);
        let first: Vec<usize> = stratum
            .rules
            .iter()
            .copied()
            .filter(|&r| {
                !stratum.recursive
                    || !program.rules[r]
                        .body
                        .iter()
                        .any(|l| matches!(l, Literal::Atom(a) if in_stratum(a.rel)))
            })
            .collect();
        let set_iteration = |rels: &mut Vec<Tuples>, k: Value| {
            if let Some(it) = program.iteration {
                rels[it] = Tuples::from([vec![k]]);
            }
        };
        set_iteration(&mut rels, 0);
        round(program, stratum, &first, &mut rels, symbols, None);
        if !stratum.recursive {
            continue;
        }
        // What the last round added to each relation of the stratum (everything at
        // first, as in the engine).
        let mut delta: Vec<Tuples> = vec![Tuples::new(); rels.len()];
        for &r in &stratum.relations {
            delta[r] = rels[r].clone();
        }
        let mut k: Value = 0;
        loop {
            // `.limitsize`: a relation at its limit ends the loop before another round
            // (Soufflé checks after computing a round and drops what it derived; a round
            // that would derive nothing ends the loop either way).
            let limited = stratum.relations.iter().any(|&r| {
                program.relations[r]
                    .limitsize
                    .is_some_and(|l| rels[r].len() as u64 >= l.n)
            });
            if limited {
                break;
            }
            let before: Vec<Tuples> = stratum.relations.iter().map(|&r| rels[r].clone()).collect();
            set_iteration(&mut rels, k);
            let pass = k;
            k = k.wrapping_add(1);
            round(
                program,
                stratum,
                &stratum.rules,
                &mut rels,
                symbols,
                Some(&delta),
            );
            let same = stratum
                .relations
                .iter()
                .zip(&before)
                .all(|(&r, b)| rels[r] == *b);
            if same {
                break;
            }
            for (&r, b) in stratum.relations.iter().zip(&before) {
                delta[r] = rels[r].difference(b).cloned().collect();
            }
            for d in &program.debug_deltas {
                if in_stratum(d.source) {
                    for t in &delta[d.source] {
                        let mut row = t.clone();
                        row.push(pass);
                        rels[d.target].insert(row);
                    }
                }
            }
        }
    }
    rels
}

/// One step of a stratum: evaluate `rules` over `rels`, add what they derived (folded
/// for eqrel and choice relations), then remove the tuples the stratum's subsumptive
/// clauses find dominated. With `delta` (a round of the loop), rules that read
/// `recursive_iteration_cnt()` are evaluated semi-naively over it.
fn round(
    program: &Program,
    stratum: &fixlog_logical::Stratum,
    rules: &[usize],
    rels: &mut [Tuples],
    symbols: &SymbolTable,
    delta: Option<&[Tuples]>,
) {
    let mut derived: Vec<Tuples> = vec![Tuples::new(); rels.len()];
    for &r in rules {
        let rule = &program.rules[r];
        let counted = program.iteration.is_some_and(|it| {
            rule.body
                .iter()
                .any(|l| matches!(l, Literal::Atom(a) if a.rel == it))
        });
        match delta {
            Some(delta) if counted => {
                // One evaluation per atom over the stratum, that atom reading `delta`.
                for (i, lit) in rule.body.iter().enumerate() {
                    if matches!(lit, Literal::Atom(a) if stratum.relations.contains(&a.rel)) {
                        derived[rule.head.rel].extend(eval_rule_with(
                            rule,
                            rels,
                            symbols,
                            Some((i, delta)),
                        ));
                    }
                }
            }
            _ => derived[rule.head.rel].extend(eval_rule(rule, rels, symbols)),
        }
    }
    for (rel, new) in derived.into_iter().enumerate() {
        if !new.is_empty() {
            add_round(program, rel, rels, new, symbols);
        }
    }
    let mut dominated: Vec<Tuples> = vec![Tuples::new(); rels.len()];
    for rule in &program.subsumptions {
        if stratum.relations.contains(&rule.head.rel) {
            dominated[rule.head.rel].extend(eval_rule(rule, rels, symbols));
        }
    }
    for (rel, gone) in dominated.into_iter().enumerate() {
        rels[rel].retain(|t| !gone.contains(t));
    }
}

/// Adds a step's derived tuples `new` to relation `rel` as its declaration says.
fn add_round(
    program: &Program,
    rel: RelId,
    rels: &mut [Tuples],
    new: Tuples,
    symbols: &SymbolTable,
) {
    let decl = &program.relations[rel];
    if let Some(lattice) = &decl.lattice {
        // One tuple per key: the tuples the relation does not hold yet are grouped by
        // key in raw order, each group's lattice values folded with `Lub(new, acc)`,
        // then combined with the held ones as `Lub(new, held)`.
        let k = lattice.key_len;
        let lub = |c: usize, new: Value, old: Value| {
            value::eval_expr(&lattice.lubs[c], &[new, old], symbols).unwrap_or(old)
        };
        let mut groups: std::collections::BTreeMap<Vec<Value>, Vec<Value>> =
            std::collections::BTreeMap::new();
        for t in new.into_iter().filter(|t| !rels[rel].contains(t)) {
            match groups.get_mut(&t[..k]) {
                Some(acc) => {
                    for (c, a) in acc.iter_mut().enumerate() {
                        *a = lub(c, t[k + c], *a);
                    }
                }
                None => {
                    groups.insert(t[..k].to_vec(), t[k..].to_vec());
                }
            }
        }
        let mut held: std::collections::BTreeMap<Vec<Value>, Vec<Value>> = rels[rel]
            .iter()
            .map(|t| (t[..k].to_vec(), t[k..].to_vec()))
            .collect();
        for (key, acc) in groups {
            match held.get_mut(&key) {
                Some(h) => {
                    for (c, x) in h.iter_mut().enumerate() {
                        *x = lub(c, acc[c], *x);
                    }
                }
                None => {
                    held.insert(key, acc);
                }
            }
        }
        rels[rel] = held
            .into_iter()
            .map(|(mut key, vals)| {
                key.extend(vals);
                key
            })
            .collect();
    } else if decl.eqrel {
        rels[rel].extend(new);
        rels[rel] = equivalence_closure(&rels[rel]);
    } else if !decl.choice_domains.is_empty() {
        let order = value::output_order(&decl.types(), symbols);
        let mut fresh: Vec<Vec<Value>> =
            new.into_iter().filter(|t| !rels[rel].contains(t)).collect();
        fresh.sort_by(|a, b| order(a, b));
        for t in fresh {
            let clash = rels[rel].iter().any(|held| {
                decl.choice_domains
                    .iter()
                    .any(|d| d.iter().all(|&c| held[c] == t[c]))
            });
            if !clash {
                rels[rel].insert(t);
            }
        }
    } else {
        rels[rel].extend(new);
    }
}

/// Every pair `(x, y)` with `x` and `y` connected by the pairs of `pairs` (in either
/// direction), each value connected to itself.
fn equivalence_closure(pairs: &Tuples) -> Tuples {
    use std::collections::BTreeMap;
    let mut adjacent: BTreeMap<Value, Vec<Value>> = BTreeMap::new();
    for p in pairs {
        adjacent.entry(p[0]).or_default().push(p[1]);
        adjacent.entry(p[1]).or_default().push(p[0]);
    }
    let mut out = Tuples::new();
    let mut done: BTreeSet<Value> = BTreeSet::new();
    for &start in adjacent.keys() {
        if done.contains(&start) {
            continue;
        }
        let mut class = vec![start];
        done.insert(start);
        let mut i = 0;
        while i < class.len() {
            for &next in &adjacent[&class[i]] {
                if done.insert(next) {
                    class.push(next);
                }
            }
            i += 1;
        }
        for &x in &class {
            for &y in &class {
                out.insert(vec![x, y]);
            }
        }
    }
    out
}

struct Ctx<'a> {
    rule: &'a Rule,
    rels: &'a [Tuples],
    symbols: &'a SymbolTable,
    /// The body atom (by its place in the rule's body) that reads these tuples instead
    /// of its relation's.
    delta: Option<(*const Literal, &'a [Tuples])>,
}

fn eval_rule(rule: &Rule, rels: &[Tuples], symbols: &SymbolTable) -> Vec<Vec<Value>> {
    eval_rule_with(rule, rels, symbols, None)
}

fn eval_rule_with(
    rule: &Rule,
    rels: &[Tuples],
    symbols: &SymbolTable,
    delta: Option<(usize, &[Tuples])>,
) -> Vec<Vec<Value>> {
    let ctx = Ctx {
        rule,
        rels,
        symbols,
        delta: delta.map(|(i, d)| (&rule.body[i] as *const Literal, d)),
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

/// Takes one step of the search's budget; false when none is left.
fn step() -> bool {
    STEPS_LEFT.with(|s| {
        let left = s.get().saturating_sub(1);
        s.set(left);
        left > 0
    })
}

/// Calls `emit` once per satisfying assignment of `lits` extending `env`.
fn solve(ctx: &Ctx, lits: &[&Literal], env: Env, emit: &mut dyn FnMut(&Env)) {
    // Out of steps (see `evaluate_within`): stop searching; the caller discards the
    // result.
    if !step() {
        return;
    }
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
            let source = match ctx.delta {
                Some((l, d)) if std::ptr::eq(l, lit) => &d[atom.rel],
                _ => &ctx.rels[atom.rel],
            };
            for tuple in candidates_in(source, atom, &env) {
                if !step() {
                    return;
                }
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
        Literal::Range { out, ty, args, .. } => {
            let args: Option<Vec<Value>> = args
                .iter()
                .map(|e| eval_expr(e, &env, ctx.symbols))
                .collect();
            if let Some(args) = args {
                for x in range_of(*ty, &args) {
                    let mut env2 = env.clone();
                    match env2[*out] {
                        Some(y) if y != x => continue,
                        _ => env2[*out] = Some(x),
                    }
                    solve(ctx, &rest, env2, emit);
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
        Literal::Range { args, .. } => {
            let mut vs = BTreeSet::new();
            args.iter().for_each(|a| expr_vars(a, &mut vs));
            bound(&vs)
        }
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
    candidates_in(&ctx.rels[atom.rel], atom, env)
}

/// Tuples of `tuples` that start with the atom's bound prefix.
fn candidates_in<'a>(
    tuples: &'a Tuples,
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
    tuples
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
            Functor::User { result, .. } => *result,
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
        Literal::Range { out: o, args, .. } => {
            out.insert(*o);
            args.iter().for_each(|a| expr_vars(a, out));
        }
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

/// The values of `range(from, to[, step])`, written out from Soufflé's loops
/// (`runRange`): up by a positive step while `< to`, down by a negative one while
/// `> to`, `from` alone for a zero step unless `from == to`; no step means 1, or -1
/// when `from > to`. The counter stops where it would leave its type (Soufflé's would
/// wrap), and a float where adding the step no longer changes it.
fn range_of(ty: ColType, args: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    match ty {
        ColType::Float => {
            let f = |v: Value| f32::from_bits(v);
            let (a, b) = (f(args[0]), f(args[1]));
            let s = args
                .get(2)
                .map_or(if a <= b { 1.0 } else { -1.0 }, |&v| f(v));
            if s == 0.0 {
                if a != b {
                    out.push(args[0]);
                }
            } else {
                let mut x = a;
                while (s > 0.0 && x < b) || (s < 0.0 && x > b) {
                    out.push(x.to_bits());
                    if x + s == x {
                        break;
                    }
                    x += s;
                }
            }
        }
        _ => {
            let signed = ty != ColType::Unsigned;
            let int = |v: Value| {
                if signed {
                    i128::from(v as i32)
                } else {
                    i128::from(v)
                }
            };
            let (a, b) = (int(args[0]), int(args[1]));
            let s = args.get(2).map_or(if a <= b { 1 } else { -1 }, |&v| int(v));
            let (lo, hi) = if signed {
                (i128::from(i32::MIN), i128::from(i32::MAX))
            } else {
                (0, i128::from(u32::MAX))
            };
            if s == 0 {
                if a != b {
                    out.push(args[0]);
                }
            } else {
                let mut x = a;
                while ((s > 0 && x < b) || (s < 0 && x > b)) && (lo..=hi).contains(&x) {
                    out.push(x as u32);
                    x += s;
                }
            }
        }
    }
    out
}
