//! Checker and stratifier tests: every error kind with its message and location, type
//! inference, desugaring and stratification, plus robustness on random programs.

use fixlog_logical::*;
use fixlog_syntax::SourceMap;
use proptest::prelude::*;

mod support;
use support::*;

const EDGE: &str = ".decl edge(x: number, y: number)\n";

// ---- relations, directives, facts --------------------------------------------------------

#[test]
fn relations_directives_and_facts() {
    let p = compile(
        ".type Id <: number\n.type Name = symbol\n.type U = Id | Other\n.type Other <: Id\n\
         .decl edge(x: Id, y: U) btree\n.decl name(n: Name, f: float, u: unsigned)\n\
         .input edge(IO=file, filename=\"e.tsv\", delimiter=\",\")\n.output name, edge\n.printsize name\n\
         edge(1, -2). edge(1 + 2 * 3, -2147483648).\n\
         name(\"alice\", 1.5, 7). name(\"bob\", 2, 4000000000).\n",
    );
    assert_eq!(p.relations.len(), 2);
    let edge = &p.relations[0];
    assert_eq!(edge.types(), vec![ColType::Number, ColType::Number]);
    assert_eq!(edge.columns[0].type_name, "Id");
    assert_eq!(edge.inputs.len(), 1);
    assert_eq!(edge.inputs[0].params["IO"], "file");
    assert_eq!(edge.inputs[0].params["filename"], "e.tsv");
    assert_eq!(edge.inputs[0].params["delimiter"], ",");
    assert_eq!(edge.outputs.len(), 1);
    let name = &p.relations[1];
    assert_eq!(
        name.types(),
        vec![ColType::Symbol, ColType::Float, ColType::Unsigned]
    );
    assert!(name.printsize);
    assert_eq!(p.facts.len(), 4);
    assert_eq!(p.facts[0].values, vec![1, (-2i32) as u32]);
    assert_eq!(p.facts[1].values, vec![7, i32::MIN as u32]);
    let alice = p.symbols.lookup("alice").unwrap();
    assert_eq!(p.facts[2].values, vec![alice, 1.5f32.to_bits(), 7]);
    assert_eq!(p.facts[3].values[1], 2.0f32.to_bits());
    assert_eq!(p.facts[3].values[2], 4_000_000_000);
    // Every relation is in exactly one stratum.
    assert_eq!(p.strata.len(), 2);
}

#[test]
fn fact_functors_are_folded() {
    let p = compile(
        ".decl s(x: symbol, n: number)\n\
         s(cat(\"a\", \"b\", to_string(12)), strlen(\"héllo\")).\n\
         s(substr(\"hello\", 1, 3), to_number(\"42\") + max(1, 5, 3)).\n",
    );
    let v = &p.facts[0].values;
    assert_eq!(&*p.symbols.resolve(v[0]), "ab12");
    assert_eq!(v[1], 6);
    let v = &p.facts[1].values;
    assert_eq!(&*p.symbols.resolve(v[0]), "ell");
    assert_eq!(v[1], 47);
}

#[test]
fn unknown_relation_with_suggestion() {
    let text = format!("{EDGE}.decl path(x: number, y: number)\npath(x, y) :- edg(x, y).\n");
    let mut sm = SourceMap::new();
    let err = compile_str("t.dl", &text, &mut sm).unwrap_err();
    assert_eq!(
        err.render(&sm),
        "error: unknown relation `edg`\n --> t.dl:3:15\n  |\n3 | path(x, y) :- edg(x, y).\n  |               ^^^\n  = help: did you mean `edge`?\n"
    );
    let (_, _) = err1(&format!("{EDGE}zzz(1).\n"));
    let mut sm = SourceMap::new();
    let err = compile_str("t.dl", &format!("{EDGE}zzz(1).\n"), &mut sm).unwrap_err();
    assert_eq!(
        err.0[0].notes,
        vec!["help: declare it with `.decl zzz(...)`".to_string()]
    );
}

#[test]
fn duplicate_decl() {
    let text = format!("{EDGE}.decl edge(a: symbol)\n");
    let mut sm = SourceMap::new();
    let err = compile_str("t.dl", &text, &mut sm).unwrap_err();
    assert_eq!(err.0.len(), 1);
    assert_eq!(
        err.0[0].message,
        "relation `edge` is declared more than once"
    );
    assert_eq!(sm.location(err.0[0].span.unwrap()), "t.dl:2:7");
    assert_eq!(
        err.0[0].notes,
        vec!["note: first declared at t.dl:1:1".to_string()]
    );
}

#[test]
fn unknown_type_and_bad_type_declarations() {
    assert_eq!(
        errs(".decl r(x: numbr)\n.type T <: Nope\n"),
        vec![
            e("unknown type `numbr`", "1:12"),
            e("unknown type `Nope`", "2:12")
        ]
    );
    assert_eq!(
        err1(".type A <: number\n.type B <: symbol\n.type U = A | B\n"),
        e(
            "union type `U` mixes incompatible types: `A` is a `number` but `B` is a `symbol`",
            "3:7"
        )
    );
    assert_eq!(
        err1(".type A = B\n.type B = A\n"),
        e("type `A` is defined in terms of itself", "2:11")
    );
    assert_eq!(
        err1(".type P = [a: number, b: nosuch]\n").0,
        "unknown type `nosuch`"
    );
    assert_eq!(
        err1(".type E = A {} | A {x: number}\n").0,
        "branch `A` is declared more than once"
    );
    assert_eq!(
        err1(".decl r(x: number) eqrel\n"),
        e(
            "an `eqrel` relation must have two attributes; `r` has 1",
            "1:20"
        )
    );
    assert_eq!(
        err1(".decl r(x: number, y: symbol) eqrel\n"),
        e(
            "the attributes of the `eqrel` relation `r` have different types (`number` and `symbol`)",
            "1:31"
        )
    );
    assert_eq!(
        err1(".functor f(x: Nope): number\n").0,
        "unknown type `Nope`"
    );
    assert_eq!(
        err1(".type P = [a: number]\n.functor f(x: number): P\n"),
        e(
            "functor `f`: record and ADT types (`P`) cannot be passed to or returned by user-defined functors",
            "2:24"
        )
    );
}

#[test]
fn pragma_is_ignored() {
    let p = compile(".pragma \"legacy\"\n.pragma \"magic-transform\" \"*\"\n.decl r(x: number)\n");
    assert_eq!(p.relations.len(), 1);
}

#[test]
fn arity_mismatch() {
    assert_eq!(
        err1(&format!("{EDGE}edge(1, 2, 3).\n")),
        e("`edge` has 2 attributes but 3 arguments were given", "2:1")
    );
    assert_eq!(
        err1(&format!("{EDGE}.decl r(x: number)\nr(x) :- edge(x).\n")),
        e("`edge` has 2 attributes but 1 argument was given", "3:9")
    );
}

#[test]
fn directive_on_undeclared_relation() {
    assert_eq!(
        err1(&format!("{EDGE}.input edge\n.output pth\n")),
        e("unknown relation `pth` in `.output`", "3:9")
    );
}

/// `.limitsize r(n=N)`: the limit lands on each relation named (a negative `N` is 0);
/// misuse is located: an unknown relation, a missing, repeated or non-integer `n`, any
/// other parameter, and a second `.limitsize` of a relation (Soufflé's parser: a
/// redefinition).
#[test]
fn limitsize_directive() {
    let p = compile(&format!(
        "{EDGE}.decl p(x: number)\n.limitsize edge, p(n=12)\n.decl q(x: number)\n.limitsize q(n=\"-3\")\n"
    ));
    let limit = |r: usize| p.relations[r].limitsize.map(|l| l.n);
    assert_eq!(
        (limit(0), limit(1), limit(2)),
        (Some(12), Some(12), Some(0))
    );
    assert_eq!(
        err1(&format!("{EDGE}.limitsize pth(n=3)\n")),
        e("unknown relation `pth` in `.limitsize`", "2:12")
    );
    assert_eq!(
        err1(&format!("{EDGE}.limitsize edge\n")),
        e("`.limitsize` needs the parameter `n`", "2:1")
    );
    assert_eq!(
        errs(&format!(
            "{EDGE}.limitsize edge(n=ten)\n.limitsize edge(m=3, n=2, n=4)\n"
        )),
        vec![
            e(
                "`n` of `.limitsize` must be an integer, found `ten`",
                "2:17"
            ),
            e("unknown parameter `m` of `.limitsize`", "3:17"),
            e("the parameter `n` of `.limitsize` is given twice", "3:27"),
        ]
    );
    let e2 = errs_with_notes(&format!(
        "{EDGE}.limitsize edge(n=5)\n.limitsize edge(n=6)\n"
    ));
    assert_eq!(e2.len(), 1, "{e2:?}");
    assert_eq!(
        (e2[0].0.as_str(), e2[0].1.as_str()),
        ("`.limitsize` is given twice for relation `edge`", "3:12")
    );
    assert_eq!(e2[0].2, vec!["note: the first is at t.dl:2:1".to_string()]);
}

/// A program with `.limitsize` is left out of the magic-set transform (which would
/// change the strata whose loops the limit stops), as one with `autoinc()`.
#[test]
fn limitsize_keeps_the_magic_set_transform_out() {
    let text = format!(
        "{EDGE}edge(1, 2). edge(2, 3).\n.decl path(x: number, y: number)\n\
         path(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n\
         .decl q(y: number)\n.output q\nq(y) :- path(1, y).\n.pragma \"magic-transform\" \"*\"\n"
    );
    let adorned = |p: &Program| p.relations.iter().any(|r| r.name.contains('@'));
    assert!(
        adorned(&compile(&text)),
        "the transform applies without a limit"
    );
    let limited = compile(&format!("{text}.limitsize path(n=100)\n"));
    assert!(!adorned(&limited));
    assert_eq!(
        limited.relations[limited.relation_id("path").unwrap()]
            .limitsize
            .map(|l| l.n),
        Some(100)
    );
}

#[test]
fn facts_must_be_constants() {
    assert_eq!(
        errs(&format!("{EDGE}edge(x, 1).\nedge(_, 1).\n")),
        vec![
            e(
                "variable `x` in a fact: facts may only contain constants",
                "2:6"
            ),
            e("`_` in a fact: facts may only contain constants", "3:6"),
        ]
    );
}

// ---- types ----------------------------------------------------------------------------------

#[test]
fn constants_out_of_range_and_of_the_wrong_type() {
    assert_eq!(
        errs(&format!(
            "{EDGE}.decl s(x: symbol, u: unsigned, f: float)\nedge(2147483648, 1).\nedge(\"a\", 1).\ns(1, 1, 1).\ns(\"a\", -1, 1).\ns(\"a\", 1, x) :- edge(x, _).\nedge(1.5, 1).\n"
        )),
        vec![
            e("number `2147483648` is out of range: a `number` is a 32-bit signed integer (-2147483648 to 2147483647)", "3:6"),
            e("type mismatch: a string constant is used where a `number` is expected", "4:6"),
            e("type mismatch: the number `1` is used where a `symbol` is expected", "5:3"),
            e("number `-1` is out of range: an `unsigned` is a 32-bit unsigned integer (0 to 4294967295)", "6:8"),
            e("type mismatch: variable `x` is a `number` but a `float` is expected here", "7:11"),
            e("type mismatch: this constant is a `float` but a `number` is expected here", "8:6"),
        ]
    );
}

#[test]
fn variable_used_with_two_types() {
    let text =
        format!("{EDGE}.decl name(n: symbol)\n.decl r(x: number)\nr(x) :- edge(x, _), name(x).\n");
    assert_eq!(
        err1(&text),
        e("type mismatch: variable `x` is used as a `symbol` here (attribute `n` of `name`) but as a `number` at t.dl:4:14 (attribute `x` of `edge`)", "4:26")
    );
}

#[test]
fn arithmetic_on_symbols_and_mixed_comparisons() {
    let text = ".decl name(n: symbol)\n.decl r(n: symbol)\n.decl f(x: float)\n\
                r(n) :- name(m), n = m + \"x\".\n\
                r(n) :- name(n), f(x), n < x.\n\
                r(n) :- name(n), f(x), x band 1.0 = x.\n";
    assert_eq!(
        errs(text),
        vec![
            e("arithmetic on symbols: `+` needs numeric operands", "4:22"),
            e("cannot compare a `symbol` with a `float`", "5:24"),
            e("`band` is not defined on `float` values", "6:24"),
        ]
    );
}

#[test]
fn type_inference() {
    let p = compile(
        ".decl f(x: float)\n.decl u(x: unsigned)\n.decl s(x: symbol)\n.decl n(x: number)\n\
         f(y) :- f(x), y = x * 2 + 0.5.\n\
         u(y) :- u(x), y = x + 1.\n\
         s(t) :- s(a), t = cat(a, \"!\"), strlen(t) < 10.\n\
         n(z) :- n(x), z = w * 2, w = x + 1.\n\
         n(l) :- s(a), l = strlen(a).\n\
         f(m) :- m = mean x : n(x).\n",
    );
    // f(y) :- f(x), y = x * 2 + 0.5: everything is float, the literal 2 becomes 2.0.
    let r = &p.rules[0];
    assert_eq!(
        r.vars.iter().map(|v| v.ty).collect::<Vec<_>>(),
        vec![ColType::Float, ColType::Float]
    );
    match &r.body[1] {
        Literal::Compare { ty, rhs, .. } => {
            assert_eq!(*ty, ColType::Float);
            match rhs {
                Expr::Binary {
                    op: BinOp::Add,
                    ty,
                    lhs,
                    rhs,
                } => {
                    assert_eq!(*ty, ColType::Float);
                    assert_eq!(**rhs, Expr::Const(0.5f32.to_bits()));
                    assert!(
                        matches!(&**lhs, Expr::Binary { op: BinOp::Mul, ty: ColType::Float, rhs, .. } if **rhs == Expr::Const(2.0f32.to_bits()))
                    );
                }
                other => panic!("{other:?}"),
            }
        }
        other => panic!("{other:?}"),
    }
    // unsigned
    assert!(p.rules[1].vars.iter().all(|v| v.ty == ColType::Unsigned));
    assert!(matches!(
        &p.rules[1].body[1],
        Literal::Compare {
            ty: ColType::Unsigned,
            ..
        }
    ));
    // symbols through cat
    assert!(p.rules[2].vars.iter().all(|v| v.ty == ColType::Symbol));
    assert!(matches!(
        &p.rules[2].body[2],
        Literal::Compare {
            ty: ColType::Number,
            op: CmpOp::Lt,
            ..
        }
    ));
    // w only occurs in arithmetic: number.
    let w = p.rules[3].vars.iter().find(|v| v.name == "w").unwrap();
    assert_eq!(w.ty, ColType::Number);
    // mean gives a float.
    let r = &p.rules[5];
    match &r.body[0] {
        Literal::Aggregate {
            func: AggFunc::Mean,
            out,
            ..
        } => assert_eq!(r.vars[*out].ty, ColType::Float),
        other => panic!("{other:?}"),
    }
}

#[test]
fn float_literal_only_fits_float() {
    assert_eq!(
        err1(".decl n(x: number)\nn(x) :- n(y), x = y + 1.5.\n"),
        e(
            "type mismatch: this constant is a `float` but a `number` is expected here",
            "2:23"
        )
    );
}

#[test]
fn conversions() {
    let p = compile(
        ".decl n(x: number)\n.decl f(x: float)\n.decl u(x: unsigned)\n.decl s(x: symbol)\n\
         f(y) :- n(x), y = to_float(x).\n\
         n(y) :- f(x), y = to_number(x).\n\
         n(y) :- s(x), y = to_number(x).\n\
         s(y) :- n(x), y = to_string(x).\n\
         u(y) :- n(x), y = itou(x).\n\
         s(y) :- s(y), to_string(3) = y.\n",
    );
    let rhs = |i: usize| match &p.rules[i].body[1] {
        Literal::Compare { rhs, lhs, .. } => (lhs.clone(), rhs.clone()),
        other => panic!("{other:?}"),
    };
    assert!(matches!(
        rhs(0).1,
        Expr::Functor {
            func: Functor::ToFloat,
            ..
        }
    ));
    // Float to number as Soufflé computes it (x86-64 truncation).
    assert!(matches!(
        rhs(1).1,
        Expr::Functor {
            func: Functor::Convert(ColType::Float, ColType::Number),
            ..
        }
    ));
    assert!(matches!(
        rhs(2).1,
        Expr::Functor {
            func: Functor::ToNumber,
            ..
        }
    ));
    assert!(matches!(
        rhs(3).1,
        Expr::Functor {
            func: Functor::ToString,
            ..
        }
    ));
    // number -> unsigned keeps the bits: no functor.
    assert_eq!(rhs(4).1, Expr::Var(1));
    // Constant conversions are folded.
    assert_eq!(rhs(5).0, Expr::Const(p.symbols.lookup("3").unwrap()));
    // Every pair of types converts, as Soufflé's overloads do.
    let p = compile(
        ".decl f(x: float)\n.decl u(x: unsigned)\n.decl s(x: symbol)\n\
         f(y) :- u(x), y = to_float(x).\n\
         s(y) :- f(x), y = to_string(x).\n\
         u(y) :- f(x), y = to_unsigned(x).\n",
    );
    let conv = |i: usize| match &p.rules[i].body[1] {
        Literal::Compare {
            rhs: Expr::Functor { func, .. },
            ..
        } => *func,
        other => panic!("{other:?}"),
    };
    assert_eq!(conv(0), Functor::Convert(ColType::Unsigned, ColType::Float));
    assert_eq!(conv(1), Functor::Convert(ColType::Float, ColType::Symbol));
    assert_eq!(conv(2), Functor::Convert(ColType::Float, ColType::Unsigned));
}

#[test]
fn functor_and_predicate_errors() {
    let text = ".decl s(x: symbol)\n\
                s(y) :- s(x), y = foo(x).\n\
                s(y) :- s(x), y = substr(x, 1).\n\
                s(y) :- s(y), contains(y).\n\
                s(y) :- s(y), 1 = @f(y).\n\
                s(y) :- s(y), y = s(y).\n";
    assert_eq!(
        errs(text),
        vec![
            e("unknown functor `foo`", "2:19"),
            e("`substr` takes 3 arguments but 2 were given", "3:19"),
            e("`contains` takes 2 arguments but 1 were given", "4:15"),
            e("unknown user-defined functor `@f`", "5:20"),
            e(
                "`s` is a relation, not a functor: atoms cannot be nested inside expressions",
                "6:19"
            ),
        ]
    );
}

#[test]
fn predicates() {
    let p = compile(".decl s(x: symbol)\ns(x) :- s(x), contains(\"a\", x), !match(\"a.*\", x).\n");
    let r = &p.rules[0];
    assert!(
        matches!(&r.body[1], Literal::Predicate { pred: Predicate::Contains, negated: false, args, .. } if args[1] == Expr::Var(0))
    );
    assert!(matches!(
        &r.body[2],
        Literal::Predicate {
            pred: Predicate::Match,
            negated: true,
            ..
        }
    ));
}

// ---- range restriction ------------------------------------------------------------------------

#[test]
fn ungrounded_head_variable() {
    let text = format!("{EDGE}.decl path(x: number, y: number)\npath(x, z) :- edge(x, y).\n");
    let mut sm = SourceMap::new();
    let err = compile_str("t.dl", &text, &mut sm).unwrap_err();
    assert_eq!(
        err.render(&sm),
        "error: variable `z` in the head is not bound in the body\n --> t.dl:3:9\n  |\n3 | path(x, z) :- edge(x, y).\n  |         ^\n  = help: bind it with a positive atom, or with an equality `z = ...` over bound variables\n"
    );
}

#[test]
fn range_restriction_errors() {
    let text = format!(
        "{EDGE}.decl r(x: number)\n\
         r(x) :- edge(x, _), !edge(x, y).\n\
         r(x) :- edge(x, _), y < x.\n\
         r(x) :- edge(x, _), y = z.\n\
         r(x) :- edge(x, _), !edge(y, x), y > 1.\n\
         r(x) :- r(x), c = count : {{ edge(x, w) }}, w > c.\n\
         r(s) :- r(x), s = sum z : {{ edge(x, _) }}.\n\
         r(_) :- r(1).\n"
    );
    assert_eq!(
        errs(&text),
        vec![
            e(
                "variable `y` only occurs in a negated atom, so it is never bound",
                "3:30"
            ),
            e("variable `y` is not bound", "4:21"),
            e("variable `y` is not bound", "5:21"),
            e("variable `z` is not bound", "5:25"),
            e("variable `y` is not bound", "6:27"),
            e(
                "variable `w` is used inside an aggregate but is not bound outside it",
                "7:37"
            ),
            e(
                "variable `z` in the aggregated expression is not bound in the aggregate's body",
                "8:23"
            ),
            e("`_` cannot be used in the head of a rule", "9:3"),
        ]
    );
}

#[test]
fn equalities_bind_in_either_direction_to_a_fixpoint() {
    let p = compile(&format!(
        "{EDGE}.decl r(a: number, b: number, c: number)\n\
         r(a, b, c) :- edge(a, _), c = b + 1, a * 2 = b.\n\
         r(a, b, c) :- edge(a, _), b + 0 = c, c = 5, a = b.\n"
    ));
    assert_eq!(p.rules.len(), 2);
}

// ---- desugaring --------------------------------------------------------------------------------

#[test]
fn multi_head_and_disjunction_expand_into_rules_sharing_the_clause_span() {
    let text = format!(
        "{EDGE}.decl a(x: number)\n.decl b(x: number)\n\
         a(x), b(x) :- edge(x, y), (y = 1 ; y = 2 ; edge(y, 3), (x = 4 ; x = 5)).\n"
    );
    let p = compile(&text);
    assert_eq!(p.rules.len(), 8);
    assert!(p.rules.iter().all(|r| r.span == p.rules[0].span));
    assert_eq!(p.rules.iter().filter(|r| r.head.rel == 1).count(), 4);
    let bodies: Vec<usize> = p.rules[..4].iter().map(|r| r.body.len()).collect();
    assert_eq!(bodies, vec![2, 2, 3, 3]);
}

#[test]
fn expression_arguments_of_atoms_become_fresh_variables() {
    let p = compile(&format!(
        "{EDGE}.decl s(x: symbol)\n.decl r(x: number)\n\
         r(x) :- edge(x, x + 1), !edge(x * 2, -1), s(\"a\"), edge(x, x).\n"
    ));
    let r = &p.rules[0];
    let names: Vec<&str> = r.vars.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, vec!["x", "$1", "$2"]);
    assert!(r.vars.iter().all(|v| v.ty == ColType::Number));
    let a = p.symbols.lookup("a").unwrap();
    assert_eq!(
        r.body,
        vec![
            Literal::Compare {
                op: CmpOp::Eq,
                lhs: Expr::Var(1),
                rhs: Expr::Binary {
                    op: BinOp::Add,
                    ty: ColType::Number,
                    lhs: Box::new(Expr::Var(0)),
                    rhs: Box::new(Expr::Const(1))
                },
                ty: ColType::Number,
                span: match &r.body[0] {
                    Literal::Compare { span, .. } => *span,
                    _ => unreachable!(),
                },
            },
            Literal::Atom(Atom {
                rel: 0,
                args: vec![Term::Var(0), Term::Var(1)],
                span: atom_span(&r.body[1])
            }),
            Literal::Compare {
                op: CmpOp::Eq,
                lhs: Expr::Var(2),
                rhs: Expr::Binary {
                    op: BinOp::Mul,
                    ty: ColType::Number,
                    lhs: Box::new(Expr::Var(0)),
                    rhs: Box::new(Expr::Const(2))
                },
                ty: ColType::Number,
                span: match &r.body[2] {
                    Literal::Compare { span, .. } => *span,
                    _ => unreachable!(),
                },
            },
            Literal::Negation(Atom {
                rel: 0,
                args: vec![Term::Var(2), Term::Const((-1i32) as u32)],
                span: atom_span(&r.body[3])
            }),
            Literal::Atom(Atom {
                rel: 1,
                args: vec![Term::Const(a)],
                span: atom_span(&r.body[4])
            }),
            Literal::Atom(Atom {
                rel: 0,
                args: vec![Term::Var(0), Term::Var(0)],
                span: atom_span(&r.body[5])
            }),
        ]
    );
}

fn atom_span(l: &Literal) -> fixlog_syntax::Span {
    match l {
        Literal::Atom(a) | Literal::Negation(a) => a.span,
        other => panic!("{other:?}"),
    }
}

#[test]
fn aggregates_desugar_to_fresh_variables() {
    let p = compile(&format!(
        "{EDGE}.decl r(x: number, c: number)\n\
         r(x, c) :- edge(x, _), c = count : {{ edge(x, y), y > 1 }} + 1.\n\
         r(x, m) :- edge(x, _), m = min y : edge(x, y).\n\
         r(s, s) :- s = sum y : {{ edge(_, y) }}.\n\
         r(x, count : edge(x, _)) :- edge(x, _).\n"
    ));
    // r(x, c) :- edge(x, _), c = count : {...} + 1
    let r = &p.rules[0];
    let names: Vec<&str> = r.vars.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, vec!["x", "c", "y", "$count1"]);
    match &r.body[..] {
        [Literal::Atom(_), Literal::Aggregate {
            out: 3,
            func: AggFunc::Count,
            arg: None,
            body,
            ..
        }, Literal::Compare {
            op: CmpOp::Eq,
            lhs: Expr::Var(1),
            rhs:
                Expr::Binary {
                    op: BinOp::Add,
                    lhs,
                    ..
                },
            ..
        }] => {
            assert_eq!(**lhs, Expr::Var(3));
            // x is correlated (same VarId as outside), y is local.
            assert!(
                matches!(&body[0], Literal::Atom(a) if a.args == vec![Term::Var(0), Term::Var(2)])
            );
            assert!(matches!(&body[1], Literal::Compare { op: CmpOp::Gt, .. }));
        }
        other => panic!("{other:?}"),
    }
    // min with the brace-less form.
    assert!(matches!(
        &p.rules[1].body[1],
        Literal::Aggregate {
            func: AggFunc::Min,
            arg: Some(Expr::Var(_)),
            ..
        }
    ));
    // Aggregate without any outer atom.
    assert!(matches!(
        &p.rules[2].body[0],
        Literal::Aggregate {
            func: AggFunc::Sum,
            ..
        }
    ));
    // Aggregate in the head.
    let r = &p.rules[3];
    assert!(matches!(&r.head.args[1], Expr::Var(v) if r.vars[*v].name.starts_with("$count")));
}

#[test]
fn sibling_aggregates_have_separate_local_variables() {
    let p = compile(&format!(
        "{EDGE}.decl r(a: number, b: number)\n\
         r(a, b) :- a = count : edge(y, _), b = sum y : edge(_, y).\n"
    ));
    let r = &p.rules[0];
    let ys: Vec<usize> = r
        .vars
        .iter()
        .enumerate()
        .filter(|(_, v)| v.name == "y")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(ys.len(), 2);
}

#[test]
fn disjunction_in_aggregate_is_unsupported() {
    assert_eq!(
        err1(&format!(
            "{EDGE}.decl r(c: number)\nr(c) :- c = count : {{ edge(x, _) ; edge(_, x) }}.\n"
        )),
        e(
            "disjunction (`;`) inside an aggregate body is not supported",
            "3:23"
        )
    );
}

#[test]
fn aggregate_type_errors() {
    assert_eq!(
        err1(".decl s(x: symbol)\n.decl r(x: number)\nr(c) :- c = sum x : s(x).\n"),
        e("`sum` needs a numeric expression, found a `symbol`", "3:17")
    );
}

/// The variables of the atoms of a rule's aggregate bodies, in order.
fn aggregate_body_vars(r: &Rule) -> Vec<VarId> {
    let mut out = Vec::new();
    for l in &r.body {
        if let Literal::Aggregate { body, .. } = l {
            for b in body {
                if let Literal::Atom(a) = b {
                    for t in &a.args {
                        if let Term::Var(v) = t {
                            out.push(*v);
                        }
                    }
                }
            }
        }
    }
    out
}

fn var_named(r: &Rule, name: &str) -> Vec<VarId> {
    (0..r.vars.len())
        .filter(|&v| r.vars[v].name == name)
        .collect()
}

#[test]
fn aggregate_result_and_target_variables_are_local_to_the_aggregate() {
    // Soufflé: a name inside an aggregate is the outer variable only if that is grounded
    // without the aggregate's own result; the aggregated expression's names are local.
    let p = compile(&format!(
        "{EDGE}.decl r(x: number)\n\
         r(m) :- m = count : {{ edge(m, _) }}.\n\
         r(y) :- y = max y : edge(y, _).\n\
         r(Y) :- Y = min Z + Y : {{ edge(A, Z), edge(B, Y), A != B }}.\n"
    ));
    for (rule, name) in [(0, "m"), (1, "y"), (2, "Y")] {
        let r = &p.rules[rule];
        let named = var_named(r, name);
        assert_eq!(named.len(), 2, "rule {rule}: an outer and a local `{name}`");
        let inside = aggregate_body_vars(r);
        let Expr::Var(head) = &r.head.args[0] else {
            panic!("{:?}", r.head)
        };
        assert!(!inside.contains(head), "rule {rule}: {inside:?} {head}");
        assert!(inside.iter().any(|v| named.contains(v)));
    }
}

#[test]
fn aggregate_variable_grounded_by_another_aggregate_is_injected() {
    let p = compile(&format!(
        "{EDGE}.decl r(a: number, b: number)\n\
         r(a, b) :- a = count : edge(_, _), b = count : {{ edge(a, _) }}.\n\
         r(x, n) :- edge(x, _), n = count : {{ edge(x, _) }}.\n\
         r(x, n) :- edge(x, n), x = count : {{ edge(n, _) }}.\n"
    ));
    for (rule, name) in [(0, "a"), (1, "x"), (2, "n")] {
        let r = &p.rules[rule];
        let named = var_named(r, name);
        assert_eq!(named.len(), 1, "rule {rule}: one `{name}`");
        assert!(aggregate_body_vars(r).contains(&named[0]), "rule {rule}");
    }
}

#[test]
fn aggregates_that_need_each_other_are_a_located_error() {
    let text = format!(
        "{EDGE}.decl r(m: number, n: number)\n\
         r(m, n) :- m = count : {{ edge(n, _) }}, n = count : {{ edge(m, _) }}.\n"
    );
    let es = errs(&text);
    assert!(!es.is_empty());
    for (msg, loc) in &es {
        assert!(
            msg.starts_with("circular dependency: this aggregate needs"),
            "{msg}"
        );
        assert!(loc == "3:16" || loc == "3:44", "{es:?}");
    }
    // A variable bound only inside the aggregate but used outside it is still an error.
    assert!(errs(&format!(
        "{EDGE}.decl r(c: number)\nr(c) :- c = count : {{ edge(x, _) }}, x > 1.\n"
    ))
    .contains(&e(
        "variable `x` is used inside an aggregate but is not bound outside it",
        "3:28"
    )));
}

// ---- stratification --------------------------------------------------------------------------

#[test]
fn strata_are_topologically_ordered_with_recursive_flags() {
    let p = compile(
        ".decl c(x: number)\n.decl b(x: number)\n.decl a(x: number)\n.decl e(x: number, y: number)\n\
         .decl tc(x: number, y: number)\n.decl odd(x: number)\n.decl even(x: number)\n.decl unused(x: number)\n\
         tc(x, y) :- e(x, y).\n\
         tc(x, z) :- tc(x, y), e(y, z).\n\
         a(x) :- b(x), !c(x).\n\
         b(x) :- tc(x, _).\n\
         c(x) :- e(x, x).\n\
         even(0) :- true.\n\
         odd(y) :- even(x), y = x + 1, y < 10.\n\
         even(y) :- odd(x), y = x + 1, y < 10.\n",
    );
    let rel = |n: &str| p.relation_id(n).unwrap();
    let pos = |n: &str| {
        p.strata
            .iter()
            .position(|s| s.relations.contains(&rel(n)))
            .unwrap()
    };
    // Every relation in exactly one stratum.
    let mut all: Vec<RelId> = p.strata.iter().flat_map(|s| s.relations.clone()).collect();
    all.sort();
    assert_eq!(all, (0..p.relations.len()).collect::<Vec<_>>());
    assert!(pos("e") < pos("tc"));
    assert!(pos("tc") < pos("b"));
    assert!(pos("b") < pos("a"));
    assert!(pos("c") < pos("a"));
    assert_eq!(pos("odd"), pos("even"));
    let tc = &p.strata[pos("tc")];
    assert!(tc.recursive);
    assert_eq!(tc.rules, vec![0, 1]);
    assert!(p.strata[pos("odd")].recursive);
    assert!(!p.strata[pos("a")].recursive);
    assert!(!p.strata[pos("e")].recursive);
    assert!(p.strata[pos("e")].rules.is_empty());
    // Deterministic order among independent strata: declaration order.
    let order: Vec<&str> = p
        .strata
        .iter()
        .map(|s| p.relations[s.relations[0]].name.as_str())
        .collect();
    assert_eq!(order, vec!["e", "c", "tc", "b", "a", "odd", "unused"]);
}

#[test]
fn unstratifiable_negation_names_the_cycle() {
    let text = ".decl a(x: number)\n.decl b(x: number)\n.decl base(x: number)\n\
                a(x) :- base(x), !b(x).\n\
                b(x) :- a(x).\n";
    let mut sm = SourceMap::new();
    let err = compile_str("t.dl", text, &mut sm).unwrap_err();
    assert_eq!(err.0.len(), 1);
    let d = &err.0[0];
    assert_eq!(
        d.message,
        "cannot stratify: `a` depends on the negation of `b`, and `b` depends on `a`"
    );
    assert_eq!(sm.location(d.span.unwrap()), "t.dl:4:18");
    assert_eq!(sm.snippet(d.span.unwrap()), "!b(x)");
    assert_eq!(d.notes[0], "note: cycle: a -> b -> a");
}

#[test]
fn unstratifiable_longer_cycle_and_self_negation_and_aggregate() {
    let text =
        ".decl a(x: number)\n.decl b(x: number)\n.decl c(x: number)\n.decl base(x: number)\n\
                a(x) :- base(x), !c(x).\n\
                b(x) :- a(x).\n\
                c(x) :- b(x).\n\
                base(x) :- base(x), !base(x).\n\
                a(n) :- base(n), n = count : b(_).\n";
    let mut sm = SourceMap::new();
    let err = compile_str("t.dl", text, &mut sm).unwrap_err();
    let got: Vec<(String, String, String)> = err
        .0
        .iter()
        .map(|d| {
            (
                d.message.clone(),
                sm.location(d.span.unwrap()),
                d.notes[0].clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "cannot stratify: `a` depends on the negation of `c`, and `c` depends on `a`"
                    .to_string(),
                "t.dl:5:18".to_string(),
                "note: cycle: a -> c -> b -> a".to_string()
            ),
            (
                "cannot stratify: `base` depends on the negation of itself".to_string(),
                "t.dl:8:21".to_string(),
                "note: cycle: base -> base".to_string()
            ),
            (
                "cannot stratify: `a` depends on an aggregate over `b`, and `b` depends on `a`"
                    .to_string(),
                "t.dl:9:22".to_string(),
                "note: cycle: a -> b -> a".to_string()
            ),
        ]
    );
}

// ---- files ---------------------------------------------------------------------------------------

#[test]
fn compile_file_with_include_and_missing_file() {
    let dir = std::env::temp_dir().join(format!("fixlog-logical-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("decls.dl"), ".decl edge(x: number, y: number)\n").unwrap();
    std::fs::write(
        dir.join("main.dl"),
        ".include \"decls.dl\"\nedge(1, 2).\nedge(x, y) :- edg(x, y).\n",
    )
    .unwrap();
    let mut sm = SourceMap::new();
    let err = compile_file(&dir.join("main.dl"), &mut sm).unwrap_err();
    assert_eq!(err.0[0].message, "unknown relation `edg`");
    assert!(sm
        .location(err.0[0].span.unwrap())
        .ends_with("main.dl:3:15"));
    std::fs::write(dir.join("main.dl"), ".include \"decls.dl\"\nedge(1, 2).\n").unwrap();
    let mut sm = SourceMap::new();
    let p = compile_file(&dir.join("main.dl"), &mut sm).unwrap();
    assert_eq!(p.facts.len(), 1);
    let mut sm = SourceMap::new();
    let err = compile_file(&dir.join("absent.dl"), &mut sm).unwrap_err();
    assert!(err.0[0].span.is_none());
    assert!(err.0[0].message.contains("absent.dl"));
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- robustness ------------------------------------------------------------------------------

const FRAGMENTS: &[&str] = &[
    ".decl a(x: number)",
    ".decl b(x: symbol, y: number)",
    ".decl c(x: float)",
    ".type T <: number",
    ".input a",
    ".output b",
    "a(",
    "b(",
    "c(",
    "!",
    "x",
    "y",
    "z",
    "_",
    "1",
    "-1",
    "\"s\"",
    "1.5",
    ",",
    ";",
    "(",
    ")",
    ":-",
    ".",
    "=",
    "<",
    "!=",
    "+",
    "*",
    "^",
    "band",
    "count : {",
    "sum x : {",
    "min y : b(_, y)",
    "}",
    "cat(",
    "to_number(",
    "contains(",
    "strlen(",
    "2147483648",
    "T",
    "a(x)",
    "b(y, x)",
    "x = y",
    "true",
    "false",
    "\n",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn random_programs_never_panic(idx in proptest::collection::vec(0..FRAGMENTS.len(), 0..50)) {
        let text: String = idx.iter().map(|&i| FRAGMENTS[i]).collect::<Vec<_>>().join(" ");
        let mut sm = SourceMap::new();
        if let Err(e) = compile_str("r.dl", &text, &mut sm) {
            let _ = e.render(&sm);
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let mut sm = SourceMap::new();
        if let Err(e) = compile_str("r.dl", &text, &mut sm) {
            let _ = e.render(&sm);
        }
    }

    /// Structured random rules over declared relations: well-formed enough to reach the
    /// checker's later passes (typing, range restriction, stratification).
    #[test]
    fn random_rules_never_panic(
        rules in proptest::collection::vec(
            (0..3usize, proptest::collection::vec((0..3usize, any::<bool>(), 0..4usize, 0..4usize), 0..4), 0..6usize),
            0..6,
        )
    ) {
        let rels = ["p", "q", "r"];
        let vars = ["x", "y", "z", "_"];
        let mut text = String::from(".decl p(a: number, b: number)\n.decl q(a: number, b: number)\n.decl r(a: number, b: number)\n");
        for (head, body, extra) in &rules {
            let mut lits = Vec::new();
            for (rel, neg, v1, v2) in body {
                lits.push(format!("{}{}({}, {})", if *neg { "!" } else { "" }, rels[*rel], vars[*v1], vars[*v2]));
            }
            match extra {
                0 => lits.push("x < y".into()),
                1 => lits.push("z = x + 1".into()),
                2 => lits.push("y = count : { q(x, _) }".into()),
                3 => lits.push("(p(x, y) ; q(y, x))".into()),
                _ => {}
            }
            if lits.is_empty() {
                text.push_str(&format!("{}(1, 2).\n", rels[*head]));
            } else {
                text.push_str(&format!("{}(x, y) :- {}.\n", rels[*head], lits.join(", ")));
            }
        }
        let mut sm = SourceMap::new();
        match compile_str("r.dl", &text, &mut sm) {
            Ok(p) => {
                let mut all: Vec<RelId> = p.strata.iter().flat_map(|s| s.relations.clone()).collect();
                all.sort();
                prop_assert_eq!(all, vec![0, 1, 2]);
            }
            Err(e) => { let _ = e.render(&sm); }
        }
    }
}

/// `recursive_iteration_cnt()` is an atom over `$iteration(n: unsigned)`, made once and
/// shared by every rule that uses it; misuse is located; a program using it is left out
/// of the magic-set transform (its values follow the strata's loops).
#[test]
fn iteration_counter() {
    let p = compile(&format!(
        "{EDGE}.decl r(x: number, i: unsigned)\n\
         r(x, recursive_iteration_cnt()) :- edge(x, _).\n\
         r(y, i + 1) :- r(x, i), edge(x, y), recursive_iteration_cnt() < 10.\n"
    ));
    let it = p.iteration.expect("the counter's relation");
    assert_eq!(p.relations[it].name, "$iteration");
    assert_eq!(p.relations[it].types(), vec![ColType::Unsigned]);
    for rule in &p.rules {
        let reads = rule
            .body
            .iter()
            .filter(|l| matches!(l, Literal::Atom(a) if a.rel == it))
            .count();
        assert_eq!(reads, 1, "{rule:?}");
    }
    assert!(p.warnings.iter().all(|w| !w.message.contains("$iteration")));
    assert_eq!(
        err1(&format!(
            "{EDGE}.decl r(x: number)\nr(x) :- edge(x, _), x < recursive_iteration_cnt().\n"
        )),
        e("cannot compare a `number` with a `unsigned`", "3:21")
    );
    assert_eq!(
        err1(&format!(
            "{EDGE}.decl r(x: unsigned)\nr(recursive_iteration_cnt(1)) :- edge(_, _).\n"
        )),
        e(
            "`recursive_iteration_cnt` takes no arguments but 1 were given",
            "3:3"
        )
    );
    assert_eq!(
        err1(".decl r(x: unsigned)\nr(recursive_iteration_cnt()).\n"),
        e(
            "`recursive_iteration_cnt()` cannot be used in a fact",
            "2:3"
        )
    );
    let text = format!(
        "{EDGE}edge(1, 2). edge(2, 3).\n.decl path(x: number, y: number)\n\
         path(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z), recursive_iteration_cnt() < 5.\n\
         .decl q(y: number)\n.output q\nq(y) :- path(1, y).\n.pragma \"magic-transform\" \"*\"\n"
    );
    assert!(!compile(&text)
        .relations
        .iter()
        .any(|r| r.name.contains('@')));
}

/// `.decl d = debug_delta(r)`: `d` gets `r`'s columns and an `unsigned` iteration
/// named `<iteration>` (as Soufflé names it), the stratum after `r`'s, no "no rules"
/// warning; components prefix the relation it names; misuse is located.
#[test]
fn debug_delta_relations() {
    let path = ".type Node <: number\n.decl edge(x: Node, y: symbol)\nedge(1, \"a\").\n\
         .decl path(x: Node, y: symbol)\npath(x, y) :- edge(x, y).\n\
         path(x, y) :- path(x, y), edge(x, _).\n";
    // Declared before the relation it names.
    let p = compile(&format!(
        ".decl d = debug_delta(path) output\n{path}.decl q(i: unsigned)\nq(i) :- d(_, _, i).\n"
    ));
    let d = p.relation_id("d").unwrap();
    let path_id = p.relation_id("path").unwrap();
    assert_eq!(
        p.debug_deltas,
        vec![DebugDelta {
            source: path_id,
            target: d,
            span: p.debug_deltas[0].span
        }]
    );
    let rel = &p.relations[d];
    assert_eq!(
        rel.types(),
        vec![ColType::Number, ColType::Symbol, ColType::Unsigned]
    );
    let names: Vec<&str> = rel.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["x", "y", "<iteration>"]);
    assert_eq!(rel.columns[0].type_name, "Node");
    assert_eq!(rel.outputs.len(), 1);
    let stratum_of = |r: RelId| p.strata.iter().position(|s| s.relations.contains(&r));
    assert!(stratum_of(path_id) < stratum_of(d));
    assert!(stratum_of(d) < stratum_of(p.relation_id("q").unwrap()));
    assert!(!p.strata[stratum_of(d).unwrap()].recursive);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    // Needed for outputs through `d`: `path` and `edge` too.
    let p2 = compile(&format!(".decl d = debug_delta(path)\n.output d\n{path}"));
    assert!(p2.needed_for_outputs().iter().all(|&n| n));

    // Components: the instance prefixes `R_debug` and the `R` it names.
    let p = compile(
        ".comp c {\n.decl R(x: number)\n.decl R_debug = debug_delta(R)\n.output R_debug\n\
         R(0).\nR(x + 1) :- R(x), x < 3.\n}\n.init C = c\n",
    );
    let dd = &p.debug_deltas[0];
    assert_eq!(p.relations[dd.source].name, "C.R");
    assert_eq!(p.relations[dd.target].name, "C.R_debug");

    // Not recursive: a warning, at the name.
    let mut sm = SourceMap::new();
    let p = compile_str(
        "t.dl",
        &format!("{EDGE}edge(1, 2).\n.decl d = debug_delta(edge)\n.output d\n"),
        &mut sm,
    )
    .unwrap();
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert_eq!(
        p.warnings[0].message,
        "`edge` is not recursive: its `debug_delta` relation `d` stays empty"
    );
    assert_eq!(sm.location(p.warnings[0].span.unwrap()), "t.dl:3:23");

    // A program with one is left out of the magic-set transform.
    let text = format!(
        "{path}.decl d = debug_delta(path)\n.decl q(y: symbol)\n.output q\nq(y) :- path(1, y).\n\
         .pragma \"magic-transform\" \"*\"\n"
    );
    assert!(!compile(&text)
        .relations
        .iter()
        .any(|r| r.name.contains('@')));

    // Misuse.
    assert_eq!(
        errs(".decl d = debug_delta(nope)\n.decl e = debug_delta(e)\n.decl f = debug_delta(d)\n"),
        vec![
            e("unknown relation `nope` in `debug_delta(...)`", "1:23"),
            e("`e` cannot be the `debug_delta` of itself", "2:23"),
            e(
                "`d` is a `debug_delta` relation: it has no iterations of its own to record",
                "3:23"
            ),
        ]
    );
    assert_eq!(
        err1(&format!("{path}.decl i(x: number) inline\ni(1).\n.decl d = debug_delta(i)\n")),
        e(
            "`i` is `inline`: it is unfolded into the rules that use it and has no iterations to record",
            "9:23"
        )
    );
    assert_eq!(
        errs(&format!(
            "{path}.decl d = debug_delta(path) input eqrel inline\n"
        )),
        vec![
            e(
                "`debug_delta` relation `d` cannot be declared `input`",
                "7:29"
            ),
            e(
                "`debug_delta` relation `d` cannot be declared `eqrel`",
                "7:35"
            ),
            e(
                "`debug_delta` relation `d` cannot be declared `inline`",
                "7:41"
            ),
        ]
    );
    assert_eq!(
        errs(&format!(
            "{path}.decl d = debug_delta(path)\n.input d\nd(1, \"a\", 0).\nd(x, y, 0) :- edge(x, y).\n\
             d(x, y, i) <= d(x, y, j) :- i < j.\n"
        )),
        vec![
            e("`d` is a `debug_delta` relation: it cannot be an input", "8:8"),
            e("`d` is a `debug_delta` relation: it cannot have rules or facts", "9:1"),
            e("`d` is a `debug_delta` relation: it cannot have rules or facts", "10:1"),
            e("`d` is a `debug_delta` relation: it cannot have rules or facts", "11:1"),
        ]
    );
    // Read in the stratum of its source: directly, negated, in an aggregate, or through
    // another relation of the stratum.
    let head = format!(
        "{EDGE}.decl p(x: number, y: number)\n.decl d = debug_delta(p)\np(x, y) :- edge(x, y).\n"
    );
    let in_stratum =
        "`d` (the `debug_delta` of `p`) cannot be read in the stratum of `p`: it is complete only when that stratum ends";
    assert_eq!(
        err1(&format!("{head}p(x, y) :- d(x, y, _).\n")),
        e(in_stratum, "5:12")
    );
    assert_eq!(
        err1(&format!(
            "{head}p(x, z) :- p(x, y), edge(y, z), !d(x, z, 0).\n"
        )),
        e(in_stratum, "5:33")
    );
    assert_eq!(
        err1(&format!(
            "{head}p(x, n) :- p(x, _), n = count : {{ d(x, _, _) }}, n < 3.\n"
        )),
        e(in_stratum, "5:35")
    );
    let (message, at, notes) = errs_with_notes(&format!(
        "{head}.decl s(x: number)\ns(x) :- d(x, _, _).\np(x, x) :- s(x).\n"
    ))
    .remove(0);
    assert_eq!((message.as_str(), at.as_str()), (in_stratum, "6:9"));
    assert_eq!(
        notes,
        [
            "help: read `d` in relations that `p` does not depend on",
            "note: `p` depends on `s`, which reads `d`"
        ]
    );
}

/// Lattices: the relation records its key and `Lub`; misuse is located.
#[test]
fn lattice_declarations() {
    const L: &str =
        ".type L <: unsigned\n.lattice L<> { Bottom -> 0, Lub -> _ bor _, Glb -> _ band _ }\n";
    let p = compile(&format!("{L}.decl r(k: number, v: L<>)\nr(1, 2).\n"));
    let r = &p.relations[p.relation_id("r").unwrap()];
    let l = r.lattice.as_ref().expect("lattice columns");
    assert_eq!((l.key_len, l.lubs.len()), (1, 1));
    assert!(matches!(
        &l.lubs[0],
        Expr::Binary { op: BinOp::BOr, lhs, rhs, .. } if **lhs == Expr::Var(0) && **rhs == Expr::Var(1)
    ));
    assert_eq!(
        errs(&format!(
            "{L}.decl a(k: number, v: number<>)\n.decl b(v: L<>, k: number)\n\
             .decl c(x: L, y: L) eqrel\n.decl d(x: L<>, y: L<>) eqrel\n"
        )),
        vec![
            e("type `number` is not a lattice", "3:23"),
            e(
                "attribute `k` of `b` follows a lattice attribute: lattice attributes come last",
                "4:17"
            ),
            e(
                "`d` is an `eqrel` relation and cannot have lattice attributes",
                "6:13"
            ),
        ]
    );
    assert_eq!(
        errs(".type L <: number\n.lattice L<> { Glb -> min(_, _), Lub -> max(_), Up -> 1, Glb -> 2 }\n"),
        vec![
            e("`Lub` must have two `_` standing for its arguments, found 1", "2:41"),
            e("unknown lattice operator `Up`", "2:49"),
            e("lattice operator `Glb` is given twice", "2:58"),
        ]
    );
    assert_eq!(
        err1(".type L <: number\n.lattice L<> { Bottom -> 0 }\n"),
        e("lattice `L<>` does not define `Lub`", "2:1")
    );
    // A `Lub` of 100,000 terms is a located error, not a stack overflow.
    let deep = format!(
        ".type L <: number\n.lattice L<> {{ Lub -> _ + _{} }}\n",
        " + 1".repeat(100_000)
    );
    assert_eq!(
        err1(&deep),
        e(
            "lattice operator `Lub` is nested 100002 levels deep; at most 64",
            "2:23"
        )
    );
    assert_eq!(
        errs(&format!(
            "{L}.decl r(k: number, v: L<>)\n.decl s(k: number, v: L)\n\
             s(k, v) :- r(k, v), r(v2, v), v > 3.\n\
             s(k, 0) :- r(k, x + y).\n\
             r(k, v) <= r(k, w) :- v < w.\n"
        )),
        vec![
            e(
                "lattice variable `v` stands for the greatest lower bound of its lattice arguments and cannot be used in other literals",
                "5:31"
            ),
            e("this lattice argument is not grounded", "6:17"),
            e(
                "`r` has lattice attributes and cannot have subsumptive clauses",
                "7:1"
            ),
        ]
    );
    assert_eq!(
        err1(&format!(".comp C {{\n{L}}}\n.init c = C\n")),
        e("`.lattice` inside a component is not supported", "3:1")
    );
}

/// An atom of a lattice relation with too few or too many arguments, in a body, a
/// negation or an aggregate, is an arity error at the atom (it once indexed past the
/// atom's arguments while rewriting the lattice columns: found by the fuzz test).
#[test]
fn lattice_atoms_of_the_wrong_arity_are_arity_errors() {
    const L: &str = ".type C <: number\n.lattice C<> { Bottom -> 0, Lub -> max(_, _), Glb -> min(_, _) }\n\
                     .decl e(x: number, y: number, c: number)\n.decl w(x: number, y: number, c: C<>)\n";
    for (rule, found, at) in [
        (
            "w(x, y, c) :- w(x, y), e(x, y, c).",
            "2 arguments were given",
            "5:15",
        ),
        (
            "w(x, y, c) :- w(x, y, c, 1), e(x, y, c).",
            "4 arguments were given",
            "5:15",
        ),
        (
            "w(x, y, c) :- e(x, y, c), !w(x, y).",
            "2 arguments were given",
            "5:28",
        ),
        (
            "w(x, y, c) :- e(x, y, c), c = count : { w(x) }.",
            "1 argument was given",
            "5:41",
        ),
    ] {
        assert_eq!(
            err1(&format!("{L}{rule}\n")),
            e(&format!("`w` has 3 attributes but {found}"), at),
            "{rule}"
        );
    }
}
