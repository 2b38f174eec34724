//! Parser tests: every construct of the supported Soufflé subset, syntax errors with
//! their exact locations, `.include` resolution, and robustness on random input.

use fixlog_syntax::ast::*;
use fixlog_syntax::{parse_file, parse_str, Diagnostics, SourceMap};
use proptest::prelude::*;
use std::path::PathBuf;

fn parse_ok(text: &str) -> Program {
    let mut sm = SourceMap::new();
    match parse_str("t.dl", text, &mut sm) {
        Ok(p) => p,
        Err(e) => panic!("unexpected errors:\n{}", e.render(&sm)),
    }
}

/// (message, "file:line:col") of every error.
fn parse_errs(text: &str) -> Vec<(String, String)> {
    let mut sm = SourceMap::new();
    match parse_str("t.dl", text, &mut sm) {
        Ok(_) => panic!("expected a syntax error"),
        Err(Diagnostics(ds)) => ds
            .iter()
            .map(|d| {
                (
                    d.message.clone(),
                    d.span.map(|s| sm.location(s)).unwrap_or_default(),
                )
            })
            .collect(),
    }
}

fn clauses(p: &Program) -> Vec<&Clause> {
    p.items
        .iter()
        .filter_map(|i| match i {
            Item::Clause(c) => Some(c),
            _ => None,
        })
        .collect()
}

fn body_lits(b: &Body) -> Vec<&Literal> {
    match b {
        Body::Literal(l) => vec![l],
        Body::And(v, _) => v.iter().flat_map(body_lits).collect(),
        Body::Or(v, _) => v.iter().flat_map(body_lits).collect(),
    }
}

#[test]
fn declarations_and_types() {
    let p = parse_ok(
        ".type Id <: number\n.type Name = symbol\n.type U = Id | Other\n\
         .decl edge(x: number, y: Id) btree\n.decl empty()\n.decl r(a: float, b: unsigned) brie inline\n",
    );
    assert_eq!(p.items.len(), 6);
    match &p.items[0] {
        Item::Type(t) => {
            assert_eq!(t.name.name, "Id");
            assert!(matches!(&t.def, TypeDef::Subtype(b) if b.name == "number"));
        }
        other => panic!("{other:?}"),
    }
    match &p.items[1] {
        Item::Type(t) => assert!(matches!(&t.def, TypeDef::Union(m) if m.len() == 1)),
        other => panic!("{other:?}"),
    }
    match &p.items[2] {
        Item::Type(t) => match &t.def {
            TypeDef::Union(m) => {
                assert_eq!(
                    m.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
                    ["Id", "Other"]
                )
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    match &p.items[3] {
        Item::Decl(d) => {
            assert_eq!(d.name.name, "edge");
            assert_eq!(d.attrs.len(), 2);
            assert_eq!(d.attrs[1].name.name, "y");
            assert_eq!(d.attrs[1].ty.name, "Id");
            assert_eq!(d.qualifiers[0].name, "btree");
        }
        other => panic!("{other:?}"),
    }
    match &p.items[4] {
        Item::Decl(d) => assert!(d.attrs.is_empty()),
        other => panic!("{other:?}"),
    }
    match &p.items[5] {
        Item::Decl(d) => assert_eq!(d.qualifiers.len(), 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn record_and_adt_types_parse() {
    let p = parse_ok(
        ".type P = [a: number, b: symbol]\n.type E = A {x: number} | B {}\n.decl r(x: number)\n",
    );
    assert!(matches!(
        &p.items[0],
        Item::Type(TypeDecl {
            def: TypeDef::Record(_),
            ..
        })
    ));
    assert!(matches!(
        &p.items[1],
        Item::Type(TypeDecl {
            def: TypeDef::Adt(_),
            ..
        })
    ));
    assert!(matches!(&p.items[2], Item::Decl(_)));
    let Item::Type(TypeDecl {
        def: TypeDef::Adt(branches),
        ..
    }) = &p.items[1]
    else {
        panic!("{:?}", p.items[1]);
    };
    let names: Vec<(&str, usize)> = branches
        .iter()
        .map(|b| (b.name.name.as_str(), b.fields.len()))
        .collect();
    assert_eq!(names, [("A", 1), ("B", 0)]);
}

#[test]
fn record_and_branch_terms() {
    let p = parse_ok("a([x, [1, nil]], $A(y), $B, $C()) :- b(x, y).\n");
    let Item::Clause(c) = &p.items[0] else {
        panic!("{:?}", p.items[0]);
    };
    let args = &c.heads[0].args;
    assert!(matches!(
        &args[0],
        Expr::Constructor { ctor: Constructor::Record, args, .. } if args.len() == 2
    ));
    assert!(matches!(
        &args[1],
        Expr::Constructor { ctor: Constructor::Branch(b), args, .. } if b.name == "A" && args.len() == 1
    ));
    assert!(matches!(
        &args[2],
        Expr::Constructor { ctor: Constructor::Branch(b), args, .. } if b.name == "B" && args.is_empty()
    ));
    assert!(matches!(
        &args[3],
        Expr::Constructor { ctor: Constructor::Branch(b), args, .. } if b.name == "C" && args.is_empty()
    ));
    let e = parse_errs("a(x) :- b(x), x = [1, 2.");
    assert_eq!(e[0].0, "expected `,` or `]`, found `.`");
}

#[test]
fn io_directives() {
    let p = parse_ok(
        ".input edge\n.input a, b\n.input r(IO=file, filename=\"x.tsv\", delimiter=\",\")\n\
         .output r(IO=stdout)\n.printsize r\n.pragma \"legacy\"\n.pragma \"a\" \"b\"\n",
    );
    let dirs: Vec<&Directive> = p
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Directive(d) => Some(d),
            _ => None,
        })
        .collect();
    assert_eq!(dirs.len(), 5);
    assert_eq!(dirs[0].kind, DirectiveKind::Input);
    assert_eq!(dirs[1].relations.len(), 2);
    assert_eq!(dirs[2].params.len(), 3);
    assert_eq!(dirs[2].params[0].0.name, "IO");
    assert_eq!(dirs[2].params[0].1, "file");
    assert_eq!(dirs[2].params[1].1, "x.tsv");
    assert_eq!(dirs[2].params[2].1, ",");
    assert_eq!(dirs[3].kind, DirectiveKind::Output);
    assert_eq!(dirs[3].params[0].1, "stdout");
    assert_eq!(dirs[4].kind, DirectiveKind::PrintSize);
    assert_eq!(
        p.items
            .iter()
            .filter(|i| matches!(i, Item::Pragma { .. }))
            .count(),
        2
    );
}

#[test]
fn facts_and_literals() {
    let p = parse_ok("edge(1, 0x1F). e(0b101, 7u, 1.5, -3, \"a\\\"b\\n\"). e(2e3, 1+2).");
    let cs = clauses(&p);
    assert_eq!(cs.len(), 3);
    assert!(cs[0].body.is_none());
    assert!(matches!(cs[0].heads[0].args[1], Expr::Int(31, _)));
    let a = &cs[1].heads[0].args;
    assert!(matches!(a[0], Expr::Int(5, _)));
    assert!(matches!(a[1], Expr::Unsigned(7, _)));
    assert!(matches!(a[2], Expr::Float(f, _) if f == 1.5));
    assert!(
        matches!(&a[3], Expr::Unary { op: UnaryOp::Neg, arg, .. } if matches!(**arg, Expr::Int(3, _)))
    );
    assert!(matches!(&a[4], Expr::Str(s, _) if s == "a\"b\n"));
    let a = &cs[2].heads[0].args;
    assert!(matches!(a[0], Expr::Float(f, _) if f == 2000.0));
    assert!(matches!(&a[1], Expr::Binary { op: BinOp::Add, .. }));
}

#[test]
fn comments_are_skipped() {
    let p =
        parse_ok("// line comment\n/* block\n comment */ edge(1, /* inline */ 2). // trailing\n");
    assert_eq!(clauses(&p).len(), 1);
}

#[test]
fn rules_with_multiple_heads_negation_and_wildcards() {
    let p = parse_ok("a(x), b(x, y) :- c(x, y), !d(y, _), x != y.");
    let c = clauses(&p)[0];
    assert_eq!(c.heads.len(), 2);
    assert_eq!(c.heads[1].name.name, "b");
    let lits = body_lits(c.body.as_ref().unwrap());
    assert_eq!(lits.len(), 3);
    assert!(matches!(lits[0], Literal::Atom(a) if a.name.name == "c"));
    match lits[1] {
        Literal::Negation { atom, .. } => {
            assert_eq!(atom.name.name, "d");
            assert!(matches!(atom.args[1], Expr::Wildcard(_)));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(lits[2], Literal::Compare { op: CmpOp::Ne, .. }));
}

#[test]
fn nested_disjunctions() {
    let p = parse_ok("a(x) :- b(x), (c(x) ; d(x), (e(x) ; f(x))) ; g(x).");
    let c = clauses(&p)[0];
    match c.body.as_ref().unwrap() {
        Body::Or(alts, _) => {
            assert_eq!(alts.len(), 2);
            match &alts[0] {
                Body::And(parts, _) => {
                    assert_eq!(parts.len(), 2);
                    match &parts[1] {
                        Body::Or(inner, _) => {
                            assert_eq!(inner.len(), 2);
                            assert!(
                                matches!(&inner[1], Body::And(v, _) if v.len() == 2 && matches!(&v[1], Body::Or(..)))
                            );
                        }
                        other => panic!("{other:?}"),
                    }
                }
                other => panic!("{other:?}"),
            }
            assert!(matches!(&alts[1], Body::Literal(Literal::Atom(a)) if a.name.name == "g"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn parenthesised_expression_is_a_constraint_not_a_group() {
    let p = parse_ok("a(y) :- b(x), (x + 1) * 2 = y.");
    let lits = body_lits(clauses(&p)[0].body.as_ref().unwrap());
    assert!(matches!(
        lits[1],
        Literal::Compare {
            op: CmpOp::Eq,
            lhs: Expr::Binary { op: BinOp::Mul, .. },
            ..
        }
    ));
}

#[test]
fn operator_precedence() {
    let p = parse_ok("a(x) :- x = 1 + 2 * 3 ^ 2 ^ 1 band 7 bor 8 bxor 1 bshl 2, x = -2 ^ 2, x = bnot 1 land lnot 0 lor 1.");
    let lits = body_lits(clauses(&p)[0].body.as_ref().unwrap());
    // 1 + 2*3^(2^1)  band 7 -> ((1 + (2 * (3 ^ (2 ^ 1)))) band 7) ... lowest: bor
    match lits[0] {
        Literal::Compare {
            rhs:
                Expr::Binary {
                    op: BinOp::BOr,
                    lhs,
                    rhs,
                    ..
                },
            ..
        } => {
            assert!(matches!(
                &**lhs,
                Expr::Binary {
                    op: BinOp::BAnd,
                    ..
                }
            ));
            // `bxor` binds tighter than `bor`, `bshl` tighter than `bxor`.
            match &**rhs {
                Expr::Binary {
                    op: BinOp::BXor,
                    rhs,
                    ..
                } => {
                    assert!(matches!(
                        &**rhs,
                        Expr::Binary {
                            op: BinOp::BShl,
                            ..
                        }
                    ))
                }
                other => panic!("{other:?}"),
            }
            match &**lhs {
                Expr::Binary { lhs, .. } => match &**lhs {
                    Expr::Binary {
                        op: BinOp::Add,
                        rhs,
                        ..
                    } => match &**rhs {
                        Expr::Binary {
                            op: BinOp::Mul,
                            rhs,
                            ..
                        } => match &**rhs {
                            Expr::Binary {
                                op: BinOp::Pow,
                                rhs,
                                ..
                            } => {
                                assert!(matches!(&**rhs, Expr::Binary { op: BinOp::Pow, .. }))
                            }
                            other => panic!("{other:?}"),
                        },
                        other => panic!("{other:?}"),
                    },
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            }
        }
        other => panic!("{other:?}"),
    }
    // -2^2 is -(2^2)
    assert!(
        matches!(lits[1], Literal::Compare { rhs: Expr::Unary { op: UnaryOp::Neg, arg, .. }, .. } if matches!(&**arg, Expr::Binary { op: BinOp::Pow, .. }))
    );
    // lor is loosest, then land
    match lits[2] {
        Literal::Compare {
            rhs:
                Expr::Binary {
                    op: BinOp::LOr,
                    lhs,
                    ..
                },
            ..
        } => match &**lhs {
            Expr::Binary {
                op: BinOp::LAnd,
                lhs,
                rhs,
                ..
            } => {
                assert!(matches!(
                    &**lhs,
                    Expr::Unary {
                        op: UnaryOp::BNot,
                        ..
                    }
                ));
                assert!(matches!(
                    &**rhs,
                    Expr::Unary {
                        op: UnaryOp::LNot,
                        ..
                    }
                ));
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

#[test]
fn functors_and_predicates() {
    let p = parse_ok(
        "a(s) :- b(x, t), s = cat(t, \"-\", to_string(x)), strlen(s) > 2, contains(\"a\", s), \
         !match(\"a.*\", s), substr(s, 0, 1) = t, min(x, 3) = max(1, x), @my(x) = 1.",
    );
    let lits = body_lits(clauses(&p)[0].body.as_ref().unwrap());
    assert!(
        matches!(lits[1], Literal::Compare { rhs: Expr::Call { name, args, user: false, .. }, .. } if name.name == "cat" && args.len() == 3)
    );
    assert!(matches!(lits[3], Literal::Atom(a) if a.name.name == "contains"));
    assert!(matches!(lits[4], Literal::Negation { atom, .. } if atom.name.name == "match"));
    assert!(
        matches!(lits[6], Literal::Compare { lhs: Expr::Call { name, .. }, .. } if name.name == "min")
    );
    assert!(matches!(
        lits[7],
        Literal::Compare {
            lhs: Expr::Call { user: true, .. },
            ..
        }
    ));
}

#[test]
fn aggregates() {
    let p = parse_ok(
        "a(c) :- c = count : { b(x), x > 1 }.\n\
         a(s) :- s = sum y : { b(y) }.\n\
         a(m) :- m = min y : b(y).\n\
         a(m) :- m = max (y + 1) : { b(y) ; c(y) }.\n\
         a(m) :- m = mean y : b(y).\n\
         a(c) :- c = count : b(_) + 1.\n\
         a(c) :- b(x), c = count : { d(x, y), z = sum w : { e(y, w) } }.\n",
    );
    let cs = clauses(&p);
    let agg = |i: usize| -> (AggKind, bool) {
        match body_lits(cs[i].body.as_ref().unwrap())
            .into_iter()
            .find_map(|l| match l {
                Literal::Compare { rhs, .. } => Some(rhs),
                _ => None,
            }) {
            Some(Expr::Aggregate { kind, arg, .. }) => (*kind, arg.is_some()),
            Some(Expr::Binary { lhs, .. }) => match &**lhs {
                Expr::Aggregate { kind, arg, .. } => (*kind, arg.is_some()),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(agg(0), (AggKind::Count, false));
    assert_eq!(agg(1), (AggKind::Sum, true));
    assert_eq!(agg(2), (AggKind::Min, true));
    assert_eq!(agg(3), (AggKind::Max, true));
    assert_eq!(agg(4), (AggKind::Mean, true));
    assert_eq!(agg(5), (AggKind::Count, false));
    assert_eq!(agg(6), (AggKind::Count, false));
    // The single-atom form.
    match body_lits(cs[2].body.as_ref().unwrap())[0] {
        Literal::Compare {
            rhs: Expr::Aggregate { body, .. },
            ..
        } => {
            assert!(matches!(&**body, Body::Literal(Literal::Atom(a)) if a.name.name == "b"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bool_literals_and_plan_and_functor_decl() {
    let p = parse_ok(
        ".functor f(x: number): number\n\
         a(x) :- b(x), true.\n.plan 0: (1, 2), 1: (2, 1)\n\
         a(x) :- b(x), false.\n",
    );
    assert!(matches!(&p.items[0], Item::Functor { name, .. } if name.name == "f"));
    let cs = clauses(&p);
    assert_eq!(cs.len(), 2);
    assert!(matches!(
        body_lits(cs[0].body.as_ref().unwrap())[1],
        Literal::Bool(true, _)
    ));
    assert!(matches!(
        body_lits(cs[1].body.as_ref().unwrap())[1],
        Literal::Bool(false, _)
    ));
}

#[test]
fn spans_point_at_the_text() {
    let text = "path(x, y) :- edge(x, y).";
    let mut sm = SourceMap::new();
    let p = parse_str("t.dl", text, &mut sm).unwrap();
    let c = clauses(&p)[0];
    assert_eq!(sm.snippet(c.span), text);
    assert_eq!(sm.snippet(c.heads[0].span), "path(x, y)");
    let lits = body_lits(c.body.as_ref().unwrap());
    assert_eq!(sm.snippet(lits[0].span()), "edge(x, y)");
    assert_eq!(sm.location(lits[0].span()), "t.dl:1:15");
}

// ---- syntax errors ----------------------------------------------------------------------

#[test]
fn error_expected_paren_found_if() {
    let e = parse_errs(".decl a(x: number)\na(x :- b(x).");
    assert_eq!(
        e,
        vec![(
            "expected `,` or `)`, found `:-`".to_string(),
            "t.dl:2:5".to_string()
        )]
    );
}

#[test]
fn error_missing_dot() {
    let e = parse_errs("a(x) :- b(x)\nc(1).");
    assert_eq!(e[0].0, "expected `,`, `;` or `.`, found identifier `c`");
    assert_eq!(e[0].1, "t.dl:2:1");
}

#[test]
fn error_at_end_of_file() {
    let e = parse_errs("a(x) :- b(x), ");
    assert_eq!(
        e,
        vec![(
            "expected an expression, found end of file".to_string(),
            "t.dl:1:15".to_string()
        )]
    );
}

#[test]
fn error_recovery_reports_every_bad_clause() {
    let e = parse_errs("a(x) :- b(x) c(x).\nd(1).\ne(1 2).\n.decl f(x number)\n");
    let msgs: Vec<&str> = e.iter().map(|x| x.0.as_str()).collect();
    assert_eq!(
        msgs,
        [
            "expected `,`, `;` or `.`, found identifier `c`",
            "expected `,` or `)`, found number `2`",
            "expected `:`, found identifier `number`",
        ]
    );
    assert_eq!(e[1].1, "t.dl:3:5");
    assert_eq!(e[2].1, "t.dl:4:11");
}

#[test]
fn error_unterminated_string_and_comment() {
    let e = parse_errs("a(\"abc).\n");
    assert_eq!(
        e[0].0,
        "unterminated string: missing closing `\"` before the end of the line"
    );
    assert_eq!(e[0].1, "t.dl:1:3");
    let e = parse_errs("a(1). /* never closed\n b(2).");
    assert_eq!(
        e,
        vec![(
            "unterminated comment: `/*` has no matching `*/`".to_string(),
            "t.dl:1:7".to_string()
        )]
    );
}

#[test]
fn error_unexpected_character_and_unknown_directive() {
    let e = parse_errs("a(1) & b(2).");
    assert_eq!(
        e[0],
        (
            "unexpected character `&`".to_string(),
            "t.dl:1:6".to_string()
        )
    );
    let e = parse_errs(".dcl a(x: number)");
    assert_eq!(
        e[0],
        (
            "unknown directive `.dcl`".to_string(),
            "t.dl:1:1".to_string()
        )
    );
}

#[test]
fn error_negation_needs_atom() {
    let e = parse_errs("a(x) :- b(x), !.");
    assert_eq!(
        e[0],
        (
            "expected an atom, a comparison or `(` after `!`, found `.`".to_string(),
            "t.dl:1:16".to_string()
        )
    );
}

#[test]
fn several_relations_in_one_declaration() {
    let mut sm = SourceMap::new();
    let p = parse_str("t.dl", ".decl a, b, c(x: number) btree", &mut sm).expect("parses");
    let decls: Vec<(String, usize, usize)> = p
        .items
        .iter()
        .map(|i| match i {
            Item::Decl(d) => (d.name.name.clone(), d.attrs.len(), d.qualifiers.len()),
            other => panic!("not a declaration: {other:?}"),
        })
        .collect();
    assert_eq!(
        decls,
        vec![
            ("a".to_string(), 1, 1),
            ("b".to_string(), 1, 1),
            ("c".to_string(), 1, 1)
        ]
    );
    let e = parse_errs(".decl a, (x: number)");
    assert_eq!(e[0].0, "expected a relation name after `,`, found `(`");
}

/// `!` negates any term, as in Soufflé: comparisons are complemented and formulas
/// negated by De Morgan's laws.
#[test]
fn negation_of_any_term() {
    let body = |text: &str| {
        let mut sm = SourceMap::new();
        let p = parse_str("t.dl", text, &mut sm).expect("parses");
        match p.items.into_iter().next() {
            Some(Item::Clause(Clause { body: Some(b), .. })) => b,
            other => panic!("not a rule: {other:?}"),
        }
    };
    let lits = |b: &Body| -> Vec<String> {
        let one = |l: &Body| match l {
            Body::Literal(Literal::Atom(a)) => a.name.name.clone(),
            Body::Literal(Literal::Negation { atom, .. }) => format!("!{}", atom.name.name),
            Body::Literal(Literal::Compare { op, .. }) => op.symbol().to_string(),
            Body::Literal(Literal::Bool(v, _)) => v.to_string(),
            other => format!("{other:?}"),
        };
        match b {
            Body::And(ps, _) => ps.iter().map(one).map(|s| format!("and {s}")).collect(),
            Body::Or(ps, _) => ps.iter().map(one).map(|s| format!("or {s}")).collect(),
            l => vec![one(l)],
        }
    };
    assert_eq!(lits(&body("r(x) :- !x = 1.")), vec!["!="]);
    assert_eq!(lits(&body("r(x) :- !(x < 1).")), vec![">="]);
    assert_eq!(
        lits(&body("r(x) :- !(a(x), b(x)).")),
        vec!["or !a", "or !b"]
    );
    assert_eq!(
        lits(&body("r(x) :- !(a(x) ; !b(x)).")),
        vec!["and !a", "and b"]
    );
    assert_eq!(lits(&body("r(x) :- !!a(x).")), vec!["a"]);
    assert_eq!(lits(&body("r(x) :- !true.")), vec!["false"]);
}

#[test]
fn error_number_too_large_for_lexer() {
    let e = parse_errs("a(99999999999999999999999).");
    assert_eq!(
        e[0],
        (
            "number literal is too large".to_string(),
            "t.dl:1:3".to_string()
        )
    );
}

#[test]
fn error_unsupported_syntax() {
    // `autoinc()`, `as(..)` and `range(..)` parse (the checker decides).
    let mut sm = SourceMap::new();
    for ok in [
        "a(x) :- b(x), x = autoinc().",
        "a(x) :- b(y), x = as(y, T).",
        "a(x) :- x = range(1, 5).",
    ] {
        assert!(parse_str("t.dl", ok, &mut sm).is_ok(), "{ok}");
    }
    let e = parse_errs("a(x) :- b(y), x = as(y, 1).");
    assert_eq!(e[0].0, "expected a type name, found number `1`");
    // `as`, `range` and `autoinc` not followed by `(` are names as before.
    let mut sm = SourceMap::new();
    assert!(parse_str("t.dl", "a(as, range) :- b(as, range).", &mut sm).is_ok());
    let e = parse_errs("#frobnicate X 1\n");
    assert_eq!(e[0].0, "unknown preprocessor directive `#frobnicate`");
}

#[test]
fn render_shows_the_caret_under_the_token() {
    let mut sm = SourceMap::new();
    let e = parse_str("t.dl", "a(x :- b(x).", &mut sm).unwrap_err();
    assert_eq!(
        e.render(&sm),
        "error: expected `,` or `)`, found `:-`\n --> t.dl:1:5\n  |\n1 | a(x :- b(x).\n  |     ^^\n"
    );
}

// ---- components -----------------------------------------------------------------------

fn component(item: &Item) -> &Component {
    match item {
        Item::Component(c) => c,
        other => panic!("expected a component, found {other:?}"),
    }
}

#[test]
fn component_with_parameters_bases_and_body() {
    let p = parse_ok(
        ".comp Graph<N, W> : Base<N>, Other {\n\
             .type Id <: N\n\
             .decl edge(x: N, w: W) overridable\n\
             .override r\n\
             edge(1, 2).\n\
             path(x) :- edge(x, _).\n\
             .output edge\n\
             .comp Inner { .decl q(x: number) }\n\
             .init inner = Inner\n\
         }\n\
         .init g = Graph<number, float>\n\
         .init h = Other\n",
    );
    assert_eq!(p.items.len(), 3);
    let c = component(&p.items[0]);
    assert_eq!(c.head.name.name, "Graph");
    let params: Vec<&str> = c.head.params.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(params, ["N", "W"]);
    assert_eq!(c.bases.len(), 2);
    assert_eq!(c.bases[0].name.name, "Base");
    assert_eq!(c.bases[0].params[0].name, "N");
    assert_eq!(c.bases[1].name.name, "Other");
    assert!(c.bases[1].params.is_empty());
    assert_eq!(c.items.len(), 8);
    assert!(matches!(&c.items[0], Item::Type(_)));
    match &c.items[1] {
        Item::Decl(d) => assert_eq!(d.qualifiers[0].name, "overridable"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(&c.items[2], Item::Override { name, .. } if name.name == "r"));
    assert!(matches!(&c.items[3], Item::Clause(_)));
    assert!(matches!(&c.items[4], Item::Clause(_)));
    assert!(matches!(&c.items[5], Item::Directive(_)));
    assert_eq!(component(&c.items[6]).head.name.name, "Inner");
    assert!(matches!(&c.items[7], Item::Init(i) if i.name.name == "inner"));
    match &p.items[1] {
        Item::Init(i) => {
            assert_eq!(i.name.name, "g");
            assert_eq!(i.component.name.name, "Graph");
            let args: Vec<&str> = i.component.params.iter().map(|i| i.name.as_str()).collect();
            assert_eq!(args, ["number", "float"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(&p.items[2], Item::Init(i) if i.component.params.is_empty()));
}

#[test]
fn qualified_names_in_atoms_directives_and_types() {
    let p = parse_ok(
        ".decl r(x: a.T, y: number)\n\
         .type U = a.T | b.c.V\n\
         .type W <: a.T\n\
         a.b.r(x, 1), r(x, 2) :- a.s(x), !b.t(x), n = count : a.u(_), m = sum y : { c.d.v(y) }, x > n + m.\n\
         .output a.b.r, c\n",
    );
    match &p.items[0] {
        Item::Decl(d) => {
            assert_eq!(d.attrs[0].ty.name, "a.T");
            // The span covers the whole qualified name.
            assert_eq!(d.attrs[0].ty.span.end - d.attrs[0].ty.span.start, 3);
        }
        other => panic!("{other:?}"),
    }
    match &p.items[1] {
        Item::Type(t) => match &t.def {
            TypeDef::Union(m) => {
                assert_eq!(m[0].name, "a.T");
                assert_eq!(m[1].name, "b.c.V");
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(&p.items[2], Item::Type(TypeDecl { def: TypeDef::Subtype(b), .. }) if b.name == "a.T")
    );
    let cs = clauses(&p);
    assert_eq!(cs[0].heads[0].name.name, "a.b.r");
    assert_eq!(cs[0].heads[1].name.name, "r");
    let lits = body_lits(cs[0].body.as_ref().unwrap());
    assert!(matches!(lits[0], Literal::Atom(a) if a.name.name == "a.s"));
    assert!(matches!(lits[1], Literal::Negation { atom, .. } if atom.name.name == "b.t"));
    let Literal::Compare { rhs, .. } = lits[2] else {
        panic!("{:?}", lits[2])
    };
    let Expr::Aggregate { body, .. } = rhs else {
        panic!("{rhs:?}")
    };
    assert!(matches!(&**body, Body::Literal(Literal::Atom(a)) if a.name.name == "a.u"));
    let Literal::Compare { rhs, .. } = lits[3] else {
        panic!("{:?}", lits[3])
    };
    let Expr::Aggregate { body, .. } = rhs else {
        panic!("{rhs:?}")
    };
    assert!(matches!(&**body, Body::Literal(Literal::Atom(a)) if a.name.name == "c.d.v"));
    match &p.items[4] {
        Item::Directive(d) => {
            let names: Vec<&str> = d.relations.iter().map(|r| r.name.as_str()).collect();
            assert_eq!(names, ["a.b.r", "c"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_variable_before_the_final_dot_is_not_a_qualified_name() {
    // `y.` ends the clause; `foo(1)` is the next fact, not `y.foo(1)`.
    let p = parse_ok("r(x) :- s(x), x = y.\nfoo(1).\nr(x) :- s(x), x = y.foo(2).");
    let cs = clauses(&p);
    assert_eq!(cs.len(), 4);
    assert_eq!(cs[1].heads[0].name.name, "foo");
    assert_eq!(cs[3].heads[0].name.name, "foo");
}

#[test]
fn component_errors_are_located_and_recovered_from() {
    // An error inside a body skips that item only; the rest of the body and the
    // program are still parsed (and their errors reported).
    let e = parse_errs(".comp A {\n  r(1 .\n  .decl s(x: number)\n  s(.\n}\n.init a = A\nt(.\n");
    let locs: Vec<&str> = e.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(locs, ["t.dl:2:7", "t.dl:4:5", "t.dl:7:3"]);
    let e = parse_errs(".comp A { .decl r(x: number)\n");
    assert_eq!(
        e[0],
        (
            "expected `}` closing component `A`, found end of file".to_string(),
            "t.dl:2:1".to_string()
        )
    );
    let e = parse_errs(".comp A<T { }\n.init a = A\n");
    assert_eq!(
        e,
        [(
            "expected `,` or `>`, found `{`".to_string(),
            "t.dl:1:11".to_string()
        )]
    );
    let e = parse_errs(".init a A\n");
    assert_eq!(
        e[0],
        (
            "expected `=`, found identifier `A`".to_string(),
            "t.dl:1:9".to_string()
        )
    );
    let e = parse_errs(".comp A B { }\n");
    assert_eq!(
        e[0],
        (
            "expected `{`, `:` or `,` after the component name, found identifier `B`".to_string(),
            "t.dl:1:9".to_string()
        )
    );
    let e = parse_errs(".init a = A<>\n");
    assert_eq!(e[0].1, "t.dl:1:13");
    // Components nest no deeper than expressions do.
    let deep = ".comp A { ".repeat(300) + &"}".repeat(300);
    let e = parse_errs(&deep);
    assert!(e[0].0.starts_with("nesting is too deep"), "{e:?}");
}

#[test]
fn cloning_a_long_chain_does_not_recurse() {
    // Components copy clauses into every instance; a 200,000-term sum is a tree that
    // deep, cloned here on a thread with a small stack.
    let text = format!("r({}) :- s(x).", vec!["x"; 200_000].join(" + "));
    let p = parse_ok(&text);
    let copy = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let copy = p.items[0].clone();
            // Both dropped here, iteratively too.
            let Item::Clause(c) = &copy else { panic!() };
            let n = c.heads[0].args.len();
            drop(p);
            n
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(copy, 1);
}

#[test]
fn include_inside_a_component_is_spliced_into_its_body() {
    let dir = temp_dir("comp-inc");
    std::fs::write(dir.join("body.dl"), ".decl r(x: number)\nr(1).\n").unwrap();
    std::fs::write(
        dir.join("main.dl"),
        ".comp A {\n  .include \"body.dl\"\n  .output r\n}\n.init a = A\n",
    )
    .unwrap();
    let mut sm = SourceMap::new();
    let p = parse_file(&dir.join("main.dl"), &mut sm).unwrap();
    let c = component(&p.items[0]);
    assert_eq!(c.items.len(), 3);
    assert!(matches!(&c.items[0], Item::Decl(d) if d.name.name == "r"));
    assert!(matches!(&c.items[1], Item::Clause(_)));
    assert!(matches!(&c.items[2], Item::Directive(_)));
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- includes -------------------------------------------------------------------------

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "fixlog-syntax-test-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn include_is_spliced_relative_to_the_including_file() {
    let dir = temp_dir("inc");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(
        dir.join("main.dl"),
        ".include \"sub/decls.dl\"\nedge(1, 2).\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("sub/decls.dl"),
        ".decl edge(x: number, y: number)\n#include \"more.dl\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("sub/more.dl"), ".output edge\n").unwrap();
    let mut sm = SourceMap::new();
    let p = parse_file(&dir.join("main.dl"), &mut sm).unwrap();
    assert_eq!(p.items.len(), 3);
    assert!(matches!(&p.items[0], Item::Decl(_)));
    assert!(matches!(&p.items[1], Item::Directive(_)));
    assert!(matches!(&p.items[2], Item::Clause(_)));
    // main.dl, decls.dl, more.dl and decls.dl preprocessed (it has a `#` line).
    assert_eq!(sm.files().len(), 4);
    // Spans of included items point into the included file.
    if let Item::Decl(d) = &p.items[0] {
        assert!(
            sm.location(d.span).ends_with("decls.dl:1:1"),
            "{}",
            sm.location(d.span)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_include_points_at_the_directive() {
    let dir = temp_dir("missing");
    std::fs::write(dir.join("main.dl"), "a(1).\n.include \"nope.dl\"\n").unwrap();
    let mut sm = SourceMap::new();
    let e = parse_file(&dir.join("main.dl"), &mut sm).unwrap_err();
    assert_eq!(e.0.len(), 1);
    assert!(
        e.0[0].message.starts_with("cannot read included file `"),
        "{}",
        e.0[0].message
    );
    assert!(e.0[0].message.contains("nope.dl"));
    let loc = sm.location(e.0[0].span.unwrap());
    assert!(loc.ends_with("main.dl:2:1"), "{loc}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_main_file_has_no_span() {
    let mut sm = SourceMap::new();
    let path = std::env::temp_dir().join("fixlog-definitely-missing-file.dl");
    let e = parse_file(&path, &mut sm).unwrap_err();
    assert_eq!(e.0.len(), 1);
    assert!(e.0[0].span.is_none());
    assert!(e.0[0].message.contains("fixlog-definitely-missing-file.dl"));
    assert!(
        e.0[0].message.contains("No such file"),
        "{}",
        e.0[0].message
    );
}

#[test]
fn include_cycle_is_an_error() {
    let dir = temp_dir("cycle");
    std::fs::write(dir.join("a.dl"), ".decl a(x: number)\n.include \"b.dl\"\n").unwrap();
    std::fs::write(dir.join("b.dl"), ".include \"a.dl\"\n").unwrap();
    let mut sm = SourceMap::new();
    let e = parse_file(&dir.join("a.dl"), &mut sm).unwrap_err();
    assert_eq!(e.0.len(), 1);
    assert!(
        e.0[0].message.starts_with("include cycle:"),
        "{}",
        e.0[0].message
    );
    let loc = sm.location(e.0[0].span.unwrap());
    assert!(loc.ends_with("b.dl:1:1"), "{loc}");
    assert!(e.0[0].notes[0].contains("a.dl -> "), "{:?}", e.0[0].notes);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The names of the relations declared and the first argument of every fact, in order.
fn item_names(p: &Program) -> Vec<String> {
    p.items
        .iter()
        .map(|i| match i {
            Item::Decl(d) => format!("decl {}", d.name.name),
            Item::Clause(c) => match &c.heads[0].args[0] {
                Expr::Int(v, _) => format!("{}({v})", c.heads[0].name.name),
                other => format!("{}({other:?})", c.heads[0].name.name),
            },
            other => format!("{other:?}"),
        })
        .collect()
}

/// `.once` (Soufflé's scanner: `ParserDriver::canEnterOnce`): a file included twice is
/// read again only up to a `.once` it passed before; what precedes the `.once` is read
/// every time, and a `.once` passed once changes nothing.
#[test]
fn once_skips_the_rest_of_a_file_included_again() {
    let dir = temp_dir("once");
    std::fs::write(
        dir.join("lib.dl"),
        "lib(0).\n.once\n.decl lib(x: number)\nlib(1).\n",
    )
    .unwrap();
    std::fs::write(dir.join("a.dl"), ".include \"lib.dl\"\na(1).\n").unwrap();
    std::fs::write(
        dir.join("main.dl"),
        ".once\n.include \"lib.dl\"\n.include \"a.dl\"\n.include \"lib.dl\"\nmain(1).\n",
    )
    .unwrap();
    let mut sm = SourceMap::new();
    let p = parse_file(&dir.join("main.dl"), &mut sm).unwrap();
    assert_eq!(
        item_names(&p),
        ["lib(0)", "decl lib", "lib(1)", "lib(0)", "a(1)", "lib(0)", "main(1)"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file guarded by `.once` may include itself (or be included back by a file it
/// includes): the inner inclusion stops at the `.once`. Without a guard passed before
/// the include, it is still a cycle.
#[test]
fn once_guards_a_file_that_includes_itself() {
    let dir = temp_dir("once-self");
    std::fs::write(
        dir.join("a.dl"),
        ".once\n.decl a(x: number)\n.include \"b.dl\"\na(1).\n",
    )
    .unwrap();
    std::fs::write(dir.join("b.dl"), ".include \"a.dl\"\nb(2).\n").unwrap();
    let mut sm = SourceMap::new();
    let p = parse_file(&dir.join("a.dl"), &mut sm).unwrap();
    assert_eq!(item_names(&p), ["decl a", "b(2)", "a(1)"]);
    // The guard after the include comes too late.
    std::fs::write(
        dir.join("c.dl"),
        ".decl c(x: number)\n.include \"c.dl\"\n.once\n",
    )
    .unwrap();
    let mut sm = SourceMap::new();
    let e = parse_file(&dir.join("c.dl"), &mut sm).unwrap_err();
    assert!(e.0[0].message.starts_with("include cycle:"), "{:?}", e.0);
    assert!(sm.location(e.0[0].span.unwrap()).ends_with("c.dl:2:1"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `.once` inside a component body, reached a second time, would end the file inside
/// the body: an error at the `.once`. Reached once, it changes nothing.
#[test]
fn once_inside_a_component_body() {
    let dir = temp_dir("once-comp");
    std::fs::write(
        dir.join("c.dl"),
        ".comp C {\n  .once\n  .decl r(x: number)\n}\n",
    )
    .unwrap();
    std::fs::write(dir.join("one.dl"), ".include \"c.dl\"\n.init c = C\n").unwrap();
    let mut sm = SourceMap::new();
    let p = parse_file(&dir.join("one.dl"), &mut sm).unwrap();
    assert_eq!(component(&p.items[0]).items.len(), 1);
    std::fs::write(dir.join("two.dl"), ".include \"c.dl\"\n.include \"c.dl\"\n").unwrap();
    let mut sm = SourceMap::new();
    let e = parse_file(&dir.join("two.dl"), &mut sm).unwrap_err();
    assert_eq!(e.0.len(), 1, "{:?}", e.0);
    assert_eq!(
        e.0[0].message,
        "`.once` reached a second time inside the body of component `C`"
    );
    assert!(sm.location(e.0[0].span.unwrap()).ends_with("c.dl:2:3"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bound on nesting: a chain of more than 64 files, each including the next.
#[test]
fn includes_nested_too_deep_are_an_error() {
    let dir = temp_dir("deep");
    for i in 0..70 {
        std::fs::write(
            dir.join(format!("f{i}.dl")),
            format!("f{i}(1).\n.include \"f{}.dl\"\n", i + 1),
        )
        .unwrap();
    }
    std::fs::write(dir.join("f70.dl"), "end(1).\n").unwrap();
    let mut sm = SourceMap::new();
    let e = parse_file(&dir.join("f0.dl"), &mut sm).unwrap_err();
    assert_eq!(e.0.len(), 1, "{:?}", e.0);
    assert_eq!(e.0[0].message, "`.include`s nested more than 64 deep");
    assert!(sm.location(e.0[0].span.unwrap()).ends_with("f63.dl:2:1"));
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- robustness -------------------------------------------------------------------------

const FRAGMENTS: &[&str] = &[
    ".decl",
    ".type",
    ".input",
    ".output",
    ".include",
    ".printsize",
    ".pragma",
    ".functor",
    ".plan",
    "a",
    "b",
    "x",
    "y",
    "_",
    "count",
    "sum",
    "min",
    "max",
    "mean",
    "cat",
    "band",
    "bnot",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ",",
    ";",
    ":",
    ":-",
    ".",
    "=",
    "!=",
    "<",
    "<=",
    "!",
    "+",
    "-",
    "*",
    "^",
    "|",
    "<:",
    "\"s\"",
    "\"",
    "1",
    "0x",
    "0b2",
    "1.5",
    "7u",
    "99999999999",
    "/*",
    "*/",
    "//",
    "\n",
    " ",
    "number",
    "symbol",
    "@",
    "$",
    "#",
    "é",
    "true",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let mut sm = SourceMap::new();
        if let Err(e) = parse_str("r.dl", &text, &mut sm) {
            let _ = e.render(&sm);
        }
    }

    #[test]
    fn random_token_soup_never_panics(idx in proptest::collection::vec(0..FRAGMENTS.len(), 0..60)) {
        let text: String = idx.iter().map(|&i| FRAGMENTS[i]).collect::<Vec<_>>().join(" ");
        let mut sm = SourceMap::new();
        if let Err(e) = parse_str("r.dl", &text, &mut sm) {
            let _ = e.render(&sm);
        }
        // Also without separating spaces.
        let glued: String = idx.iter().map(|&i| FRAGMENTS[i]).collect();
        let mut sm = SourceMap::new();
        if let Err(e) = parse_str("r.dl", &glued, &mut sm) {
            let _ = e.render(&sm);
        }
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    for text in [
        format!("a(x) :- x = {}1{}.", "(".repeat(20000), ")".repeat(20000)),
        format!("a(x) :- x = {}1.", "-".repeat(20000)),
        // `^` is right-associative: a chain of them is real nesting.
        format!("a(x) :- x = 1{}.", " ^ 1".repeat(20000)),
        // Parentheses around the operand of a chain nest too.
        format!(
            "a(x) :- x = 1{}.",
            " + (1".repeat(10000) + &")".repeat(10000)
        ),
        format!("a(x) :- {}b(x){}.", "(".repeat(20000), ")".repeat(20000)),
        format!(
            "a(x) :- x = {}1{}.",
            "count : { b(".repeat(5000),
            ") }".repeat(5000)
        ),
    ] {
        let e = parse_errs(&text);
        assert!(
            e.iter()
                .any(|(m, _)| m == "nesting is too deep (more than 256 levels)"),
            "{e:?}"
        );
    }
    // Reasonable nesting is fine.
    parse_ok(&format!(
        "a(x) :- x = {}1{}.",
        "(".repeat(100),
        ")".repeat(100)
    ));
    parse_ok(&format!("a(x) :- x = 1{}.", " + 1".repeat(100)));
    // Chains of left-associative operators and of `;` or `,` are not nesting, however
    // long (a flat sum of 256 terms used to be "too deep").
    for text in [
        format!("a(x) :- x = 1{}.", " + x".repeat(20000)),
        format!("a(x) :- x = 1{}.", " * 2 - x / 3 band 7".repeat(5000)),
        format!("a(x) :- b(x){}.", " ; b(x)".repeat(20000)),
        format!("a(x) :- b(x){}.", ", b(x)".repeat(20000)),
    ] {
        parse_ok(&text);
    }
}

#[test]
fn source_positions_never_panic_on_odd_offsets() {
    use fixlog_syntax::{SourceFile, Span};
    let f = SourceFile::new("u.dl", "u.dl", "é\nab".to_string());
    // Offset 1 is inside `é`: the position of its start.
    assert_eq!(f.line_col(1), (1, 1));
    assert_eq!(f.line_col(3), (2, 1));
    assert_eq!(f.line_col(99), (2, 3));
    assert_eq!(f.line_text(0), "");
    assert_eq!(f.line_text(3), "");
    let mut sm = SourceMap::new();
    let id = sm.add(f);
    assert_eq!(sm.snippet(Span::new(id, 1, 2)), "");
    assert_eq!(sm.snippet(Span::new(id, 3, 99)), "ab");
    let d = fixlog_syntax::Diagnostic::error("odd", Span::new(id, 1, 1));
    assert!(d.render(&sm).contains("u.dl:1:1"));
}

#[test]
fn runs_of_stray_characters_and_repeated_escapes_are_one_error() {
    let e = parse_errs("a(1) &&& b(2).");
    assert_eq!(
        e[0],
        (
            "unexpected characters `&&&`".to_string(),
            "t.dl:1:6".to_string()
        )
    );
    let control: String = "\u{1}".repeat(20_000);
    let e = parse_errs(&format!("a(1).{control}\n"));
    assert_eq!(e.len(), 1, "{:?}", &e[..e.len().min(3)]);
    assert!(
        e[0].0.starts_with("20000 unexpected characters `\\u{1}"),
        "{}",
        e[0].0
    );
    let e = parse_errs(&format!("a(\"{}\").", "\\q".repeat(1000)));
    assert_eq!(e.len(), 1, "{:?}", &e[..e.len().min(3)]);
}

#[test]
fn long_lines_are_cut_around_the_caret_and_errors_are_capped() {
    // One error in the middle of a 50,000-character line.
    let text = format!(
        "a(x) :- {}b(x) ?? c(x). // {}\n",
        "b(x), ".repeat(8000),
        "z".repeat(5000)
    );
    let mut sm = SourceMap::new();
    let err = parse_str("t.dl", &text, &mut sm).unwrap_err();
    let out = err.render(&sm);
    assert!(out.len() < 1000, "{} bytes", out.len());
    let lines: Vec<&str> = out.lines().collect();
    let shown = lines.iter().find(|l| l.starts_with("1 | ")).unwrap();
    assert!(
        shown.starts_with("1 | ...") && shown.ends_with("..."),
        "{shown}"
    );
    assert!(shown.contains("b(x) ?? c(x)"), "{shown}");
    // The caret is under the `??`.
    let caret = lines.iter().find(|l| l.trim_end().ends_with('^')).unwrap();
    let at = caret.find('^').unwrap();
    assert_eq!(&shown[at..at + 2], "??", "{shown}\n{caret}");
    // 500 lines with an error each: 20 shown, then a count.
    let text = "a(x) :- & .\n".repeat(500);
    let mut sm = SourceMap::new();
    let err = parse_str("t.dl", &text, &mut sm).unwrap_err();
    assert!(err.0.len() >= 500);
    let out = err.render(&sm);
    assert_eq!(out.matches("\nerror: ").count() + 1, 21, "{out}");
    assert!(out.contains(&format!(
        "error: {} more errors not shown",
        err.0.len() - 20
    )));
}

#[test]
fn choice_domains_and_qualifiers() {
    let p = parse_ok(
        ".decl st(u: number, v: number) choice-domain v\n\
         .decl m(x: number, y: number, z: number) btree choice-domain x, (y, z) brie\n\
         .decl eq(x: number, y: number) eqrel\n\
         st(1, 2).\n",
    );
    let decls: Vec<&Decl> = p
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Decl(d) => Some(d),
            _ => None,
        })
        .collect();
    let names = |d: &Decl| -> Vec<Vec<String>> {
        d.choice_domains
            .iter()
            .map(|c| c.attrs.iter().map(|a| a.name.clone()).collect())
            .collect()
    };
    assert_eq!(names(decls[0]), vec![vec!["v".to_string()]]);
    assert_eq!(
        names(decls[1]),
        vec![
            vec!["x".to_string()],
            vec!["y".to_string(), "z".to_string()]
        ]
    );
    let quals: Vec<&str> = decls[1]
        .qualifiers
        .iter()
        .map(|q| q.name.as_str())
        .collect();
    assert_eq!(quals, ["btree", "brie"]);
    assert_eq!(decls[2].qualifiers[0].name, "eqrel");
    assert!(decls[2].choice_domains.is_empty());
    assert_eq!(clauses(&p).len(), 1);

    assert_eq!(
        parse_errs(".decl r(x: number) choice-domain (x\n"),
        vec![(
            "expected `)`, found end of file".to_string(),
            "t.dl:2:1".to_string()
        )]
    );
}

#[test]
fn subsumptive_clauses() {
    let p = parse_ok("dist(x, d1) <= dist(x, d2) :- d2 <= d1.\nr(x) :- s(x), x <= 3.\n");
    let cs = clauses(&p);
    assert_eq!(cs.len(), 2);
    assert_eq!(cs[0].heads.len(), 1);
    assert_eq!(cs[0].heads[0].name.name, "dist");
    let dominating = cs[0].dominating.as_ref().map(|a| a.args.len());
    assert_eq!(dominating, Some(2));
    assert!(cs[0].body.is_some());
    assert!(cs[1].dominating.is_none());
    let errs = parse_errs("a(x) <= a(y).\n");
    assert_eq!(errs.len(), 1);
    assert!(errs[0].0.contains("`:-`"), "{errs:?}");
    assert_eq!(errs[0].1, "t.dl:1:13");
}

/// Soufflé's old counter `$` is still read, as `autoinc()`, with a warning at the `$`
/// (Soufflé 2.5's parser: "Deprecated $ symbol was used"); `$Branch` stays a
/// constructor and gives no warning.
#[test]
fn dollar_is_the_deprecated_autoinc() {
    let mut sm = SourceMap::new();
    let p = parse_str("t.dl", "a(x, $) :- b(x).\nc($C(1), $D) :- b(_).", &mut sm).unwrap();
    let Item::Clause(c) = &p.items[0] else {
        panic!("expected a clause, found {:?}", p.items[0]);
    };
    match &c.heads[0].args[1] {
        Expr::Call {
            name, args, user, ..
        } => {
            assert_eq!(name.name, "autoinc");
            assert!(args.is_empty() && !user);
            assert_eq!(sm.location(name.span), "t.dl:1:6");
        }
        other => panic!("`$` parsed as {other:?}"),
    }
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert!(p.warnings[0].message.contains("deprecated `$`"));
    assert!(p.warnings[0].message.contains("autoinc()"));
    assert_eq!(sm.location(p.warnings[0].span.unwrap()), "t.dl:1:6");
}

/// Soufflé 2.5's counter of fixpoint iterations, `recursive_iteration_cnt()`, parses as
/// a nullary call (the checker gives it its meaning), in bodies, heads and after `!`.
/// `__ITERATION__` is no keyword in Soufflé 2.5 (only an early draft of the counter used
/// that name): an identifier like any other.
#[test]
fn iteration_counter() {
    let p = parse_ok(
        "r(x) :- r(y), x = y + 1, recursive_iteration_cnt() < 100.
         s(recursive_iteration_cnt()) :- r(_), !recursive_iteration_cnt() > 3.",
    );
    let Item::Clause(c) = &p.items[0] else {
        panic!("expected a clause, found {:?}", p.items[0]);
    };
    assert!(format!("{:?}", c.body).contains("recursive_iteration_cnt"));
    let Item::Clause(c) = &p.items[1] else {
        panic!("expected a clause, found {:?}", p.items[1]);
    };
    assert!(
        matches!(&c.heads[0].args[0], Expr::Call { name, args, .. } if name.name == "recursive_iteration_cnt" && args.is_empty())
    );
    let p = parse_ok("r(__ITERATION__) :- __ITERATION__(__ITERATION__).");
    let Item::Clause(c) = &p.items[0] else {
        panic!("expected a clause, found {:?}", p.items[0]);
    };
    assert!(matches!(&c.heads[0].args[0], Expr::Var(v) if v.name == "__ITERATION__"));
}

/// Soufflé's `debug_delta` relations (2.4.1): `.decl d = debug_delta(r)` and
/// qualifiers, one name, no attributes and no `choice-domain`.
#[test]
fn debug_delta_declarations() {
    let p = parse_ok(
        ".decl r(x: number)\n.decl d = debug_delta(r) output btree\n.decl e = debug_delta(a.b)\n",
    );
    let Item::Decl(d) = &p.items[1] else {
        panic!("expected a declaration, found {:?}", p.items[1]);
    };
    assert_eq!(d.name.name, "d");
    assert!(d.attrs.is_empty());
    let source = d.debug_delta.as_ref().expect("a debug_delta source");
    assert_eq!(source.name, "r");
    let names: Vec<&str> = d.qualifiers.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, ["output", "btree"]);
    let Item::Decl(e) = &p.items[2] else {
        panic!("expected a declaration, found {:?}", p.items[2]);
    };
    // A component instance's relation.
    assert_eq!(e.debug_delta.as_ref().map(|s| s.name.as_str()), Some("a.b"));
    // An ordinary declaration has none.
    let Item::Decl(r) = &p.items[0] else {
        panic!("expected a declaration, found {:?}", p.items[0]);
    };
    assert!(r.debug_delta.is_none());

    let at = |text: &str| parse_errs(text).into_iter().next().unwrap();
    assert_eq!(
        at(".decl d, e = debug_delta(r)\n"),
        (
            "a `debug_delta` declaration declares one relation".to_string(),
            "t.dl:1:10".to_string()
        )
    );
    assert_eq!(
        at(".decl d = debug_delta(r) choice-domain x\n"),
        (
            "a `debug_delta` relation cannot have a `choice-domain`".to_string(),
            "t.dl:1:26".to_string()
        )
    );
    assert_eq!(at(".decl d = delta(r)\n").1, "t.dl:1:11");
    assert_eq!(at(".decl d = debug_delta r\n").1, "t.dl:1:23");
    assert_eq!(at(".decl d = debug_delta()\n").1, "t.dl:1:23");
    assert_eq!(at(".decl d = debug_delta(r, s)\n").1, "t.dl:1:24");
    assert_eq!(at(".decl d = debug_delta(r)(x: number)\n").1, "t.dl:1:25");
}

/// Lattices (2.5) parse: `.lattice T<> { Op -> expr, ... }` and `x: T<>`.
#[test]
fn lattices_parse() {
    let p = parse_ok(
        ".type S = A {} | B {}\n.lattice S<> {\n  Bottom -> $A(),\n  Lub -> @lub(_, _)\n}\n\
         .decl r(k: number, s: S<>)\n",
    );
    let Item::Lattice { name, ops, .. } = &p.items[1] else {
        panic!("expected a lattice, found {:?}", p.items[1]);
    };
    assert_eq!(name.name, "S");
    let names: Vec<&str> = ops.iter().map(|(o, _)| o.name.as_str()).collect();
    assert_eq!(names, ["Bottom", "Lub"]);
    let Item::Decl(d) = &p.items[2] else {
        panic!("expected a declaration, found {:?}", p.items[2]);
    };
    assert!(d.attrs[0].lattice.is_none() && d.attrs[1].lattice.is_some());
    let e = parse_errs(".lattice S<> { Lub => 1 }\n");
    assert_eq!(e[0].1, "t.dl:1:20");
}
