//! Checker tests for `as`, `range`, aggregate witnesses and `autoinc()`: what they
//! become in the logical IR and their located errors.

use fixlog_logical::*;

mod support;
use support::*;

const DECLS: &str = ".decl n(x: number)\n.decl s(x: symbol)\n.decl f(x: float)\n";

// ---- as ------------------------------------------------------------------------------

#[test]
fn casts_keep_the_bits() {
    let p = compile(&format!(
        "{DECLS}.decl u(x: unsigned)\nu(as(x, unsigned)) :- n(x).\nf(as(-1, float)).\n"
    ));
    // No functor: the head is the variable itself.
    let rule = &p.rules[0];
    assert_eq!(rule.head.args, vec![Expr::Var(0)]);
    let f = p.relation_id("f").unwrap();
    let fact = p.facts.iter().find(|x| x.rel == f).unwrap();
    assert_eq!(fact.values, vec![u32::MAX]);
}

#[test]
fn cast_errors_are_located() {
    assert_eq!(
        err1(&format!("{DECLS}n(as(x, number)) :- s(x).\n")),
        e(
            "`as` cannot reinterpret a `symbol` value as a `number`",
            "4:3"
        )
    );
    assert_eq!(
        err1(&format!("{DECLS}s(as(x, symbol)) :- n(x).\n")),
        e(
            "`as` cannot reinterpret a `number` value as a `symbol`",
            "4:3"
        )
    );
    assert_eq!(
        err1(&format!("{DECLS}n(as(x, Nope)) :- n(x).\n")).0,
        "unknown type `Nope`"
    );
    assert_eq!(
        err1(&format!(
            "{DECLS}.type P = [a: number]\nn(as(x, P)) :- n(x).\n"
        )),
        e("`as` cannot reinterpret a `number` value as a `P`", "5:3")
    );
    // The result has the cast's type.
    assert_eq!(
        err1(&format!("{DECLS}n(as(x, float)) :- n(x).\n")),
        e(
            "type mismatch: the result of `as` is a `float` but a `number` is expected here",
            "4:3"
        )
    );
}

// ---- range ---------------------------------------------------------------------------

#[test]
fn range_is_a_literal_that_binds() {
    let p = compile(&format!(
        "{DECLS}n(x) :- x = range(1, 10).\nf(y) :- y = range(0.0, 1.0, 0.25).\n"
    ));
    let has_range = |r: &Rule, t: ColType| {
        r.body
            .iter()
            .any(|l| matches!(l, Literal::Range { ty, args, .. } if *ty == t && args.len() >= 2))
    };
    assert!(has_range(&p.rules[0], ColType::Number));
    assert!(has_range(&p.rules[1], ColType::Float));
}

#[test]
fn range_errors_are_located() {
    assert_eq!(
        err1(&format!("{DECLS}n(x) :- x = range(1).\n")),
        e(
            "`range` takes 2 or 3 arguments (from, to[, step]) but 1 was given",
            "4:13"
        )
    );
    assert_eq!(
        err1(&format!("{DECLS}s(x) :- x = range(\"a\", \"b\").\n")),
        e(
            "`range` counts in `number`, `unsigned` or `float`, not in `symbol`",
            "4:13"
        )
    );
    assert_eq!(
        err1(&format!("{DECLS}n(range(1, 3)).\n")),
        e("`range` cannot be used in a fact", "4:3")
    );
    assert!(errs(&format!("{DECLS}n(x) :- x = range(1, y).\n"))
        .contains(&e("variable `y` is not bound", "4:22")));
}

// ---- witnesses -----------------------------------------------------------------------

#[test]
fn min_and_max_ground_their_witnesses() {
    let p = compile(
        ".decl f(p: symbol, a: number)\n.decl y(p: symbol, a: number)\n\
         y(p, n) :- n = min a : f(p, a).\n",
    );
    // The aggregate (over every `p`) and, outside, the body again with `a' = n`.
    let body = &p.rules[0].body;
    assert!(body
        .iter()
        .any(|l| matches!(l, Literal::Aggregate { body, .. } if body.len() == 1)));
    assert!(body.iter().any(|l| matches!(l, Literal::Atom(_))));
}

#[test]
fn other_aggregates_have_no_witnesses() {
    let text = ".decl f(p: symbol, a: number)\n.decl y(p: symbol, a: number)\n\
                y(p, n) :- n = count : f(p, _).\n";
    assert_eq!(
        err1(text),
        e("variable `p` in the head is not bound in the body", "3:3")
    );
}

// ---- autoinc -------------------------------------------------------------------------

#[test]
fn autoinc_splits_the_rule() {
    let p = compile(".decl e(x: number, y: number)\n.decl r(x: number, n: number)\nr(x, autoinc()) :- e(x, _).\n");
    assert_eq!(p.autoincs.len(), 1);
    let a = &p.autoincs[0];
    // The source has every binding of the body (`_` named): (x, y).
    assert_eq!(p.relations[a.source].arity(), 2);
    assert_eq!(p.relations[a.target].arity(), 3);
    assert_eq!(a.per_tuple, 1);
    // No warning for the hidden relations.
    assert!(
        p.warnings.iter().all(|w| !w.message.contains('$')),
        "{:?}",
        p.warnings
    );
}

#[test]
fn autoinc_errors_are_located() {
    const D: &str = ".decl e(x: number)\n.decl r(x: number, n: number)\n";
    assert_eq!(
        err1(&format!("{D}r(x, n) :- e(x), n = autoinc().\n")),
        e("`autoinc()` can only be used in the head of a rule", "3:22")
    );
    assert_eq!(
        err1(&format!("{D}r(1, autoinc()).\n")),
        e("`autoinc()` cannot be used in a fact", "3:6")
    );
    assert_eq!(
        err1(&format!("{D}r(x, autoinc()) :- e(x).\ne(n) :- r(_, n).\n")),
        e("`autoinc()` cannot be used in a recursive rule", "3:6")
    );
    assert_eq!(
        err1(&format!("{D}r(x, autoinc(x)) :- e(x).\n")),
        e("`autoinc` takes no arguments but 1 were given", "3:6")
    );
    assert_eq!(
        err1(".decl e(x: number)\n.decl r(x: unsigned)\nr(autoinc()) :- e(_).\n").1,
        "3:3"
    );
}

#[test]
fn autoinc_is_not_for_subsumption() {
    let text = ".decl a(x: number)\na(1).\na(autoinc()) <= a(y) :- y > 0.\n";
    assert_eq!(
        err1(text),
        // (The dominated atom is read in the body of the rules it becomes.)
        e("`autoinc()` can only be used in the head of a rule", "3:3")
    );
}
