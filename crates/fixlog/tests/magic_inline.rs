//! The magic-set transform (`--magic-transform`, `.pragma "magic-transform"`) and
//! `inline` relations: same answers, less materialised, located errors.

mod support;

use fixlog::{CheckOptions, CompileOptions, Datum, Fixlog, RunOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::cell::Cell;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};
use support::gen::{generate, Generated};

fn fixlog_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("cannot run the fixlog binary")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A chain n0 → n1 → ... → n200 and the question "where does n190 lead?".
const CHAIN: &str = r#"
.decl edge(x: symbol, y: symbol)
.input edge
.decl path(x: symbol, y: symbol)
path(x, y) :- edge(x, y).
path(x, y) :- path(x, z), edge(z, y).
.decl q(y: symbol)
.output q
q(y) :- path("n190", y).
"#;

/// The relation sizes `--stats` prints.
fn sizes(stderr: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut on = false;
    for line in stderr.lines() {
        if line.starts_with("relation sizes") {
            on = true;
            continue;
        }
        if on {
            let Some((name, n)) = line.trim_start().split_once('\t') else {
                break;
            };
            match n.trim().parse() {
                Ok(n) => out.push((name.to_string(), n)),
                Err(_) => break,
            }
        }
    }
    out
}

#[test]
fn magic_transform_gives_the_same_answer_and_materialises_less() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("chain.dl"), CHAIN).unwrap();
    let facts: String = (0..200).map(|i| format!("n{i}\tn{}\n", i + 1)).collect();
    fs::write(dir.path().join("edge.facts"), facts).unwrap();
    let plain = fixlog_in(
        dir.path(),
        &["run", "chain.dl", "-D", "-", "--stats", "--backend", "cpu"],
    );
    assert!(plain.status.success(), "{}", text(&plain.stderr));
    let magic = fixlog_in(
        dir.path(),
        &[
            "run",
            "chain.dl",
            "-D",
            "-",
            "--stats",
            "--backend",
            "cpu",
            "--magic-transform",
            "path",
        ],
    );
    assert!(magic.status.success(), "{}", text(&magic.stderr));
    let short = fixlog_in(
        dir.path(),
        &["run", "chain.dl", "-D", "-", "-m", "*", "--backend", "cpu"],
    );
    assert!(short.status.success(), "{}", text(&short.stderr));
    // Same output: n191 ... n200.
    let want: String = std::iter::once("---------------\nq\ny\n===============\n".to_string())
        .chain((191..=200).map(|i| format!("n{i}\n")))
        .chain(std::iter::once("===============\n".to_string()))
        .collect();
    assert_eq!(text(&plain.stdout), want);
    assert_eq!(text(&magic.stdout), want);
    assert_eq!(text(&short.stdout), want);
    // Without the transform, path is the whole closure: 200·201/2 pairs.
    let before = sizes(&text(&plain.stderr));
    let after = sizes(&text(&magic.stderr));
    let size = |s: &[(String, usize)], n: &str| s.iter().find(|(m, _)| m == n).map(|p| p.1);
    assert_eq!(size(&before, "path"), Some(20100), "{before:?}");
    // With it, path is not evaluated; its adorned copy holds the 10 asked pairs and
    // the magic set the one question.
    assert_eq!(size(&after, "path").unwrap_or(0), 0, "{after:?}");
    assert_eq!(size(&after, "path@bf"), Some(10), "{after:?}");
    assert_eq!(size(&after, "magic@path@bf"), Some(1), "{after:?}");
    let total: usize = after.iter().map(|p| p.1).sum();
    assert!(total < 300, "{after:?}");
}

#[test]
fn pragma_turns_the_transform_on_and_the_command_line_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let prog = format!(".pragma \"magic-transform\" \"*\"\n{CHAIN}");
    fs::write(dir.path().join("p.dl"), &prog).unwrap();
    let out = fixlog_in(dir.path(), &["explain", "p.dl"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("magic@path@bf"),
        "{}",
        text(&out.stdout)
    );
    // `--magic-transform` naming another relation replaces the pragma.
    let out = fixlog_in(dir.path(), &["explain", "p.dl", "--magic-transform", "q"]);
    assert!(
        !text(&out.stdout).contains("magic@"),
        "{}",
        text(&out.stdout)
    );
    // Excluded relations stay as they are; so do `no_magic` ones.
    let out = fixlog_in(
        dir.path(),
        &["explain", "p.dl", "--magic-transform-exclude", "path"],
    );
    assert!(
        !text(&out.stdout).contains("magic@"),
        "{}",
        text(&out.stdout)
    );
    let no_magic = CHAIN.replace(
        ".decl path(x: symbol, y: symbol)",
        ".decl path(x: symbol, y: symbol) no_magic",
    );
    fs::write(dir.path().join("n.dl"), &no_magic).unwrap();
    let out = fixlog_in(dir.path(), &["explain", "n.dl", "-m", "*"]);
    assert!(
        !text(&out.stdout).contains("magic@"),
        "{}",
        text(&out.stdout)
    );
    // The `magic` qualifier alone turns it on for that relation.
    let magic = CHAIN.replace(
        ".decl path(x: symbol, y: symbol)",
        ".decl path(x: symbol, y: symbol) magic",
    );
    fs::write(dir.path().join("m.dl"), &magic).unwrap();
    let out = fixlog_in(dir.path(), &["explain", "m.dl"]);
    assert!(
        text(&out.stdout).contains("magic@path@bf"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn inserted_facts_reach_the_adorned_copies() {
    let prog = r#"
        .decl edge(x: number, y: number)
        .decl path(x: number, y: number)
        path(x, y) :- edge(x, y).
        path(x, y) :- path(x, z), edge(z, y).
        .decl q(y: number)
        .output q
        q(y) :- path(1, y).
    "#;
    let options = CompileOptions {
        check: CheckOptions {
            magic_transform: Some("*".into()),
            ..CheckOptions::default()
        },
        ..CompileOptions::default()
    };
    let mut f = Fixlog::from_source_with("p.dl", prog, &options).unwrap();
    assert!(f.program().relation_id("path@bf").is_some());
    f.insert("edge", vec![vec![Datum::Number(2), Datum::Number(3)]])
        .unwrap();
    // A fact inserted into the transformed relation itself.
    f.insert("path", vec![vec![Datum::Number(1), Datum::Number(2)]])
        .unwrap();
    let db = f.run(&RunOptions::default()).unwrap();
    assert_eq!(
        db.relation("q").unwrap(),
        vec![vec![Datum::Number(2)], vec![Datum::Number(3)]]
    );
}

fn rows(db: &fixlog::Database, rel: &str) -> Option<Vec<Vec<Datum>>> {
    let mut r = db.relation(rel)?;
    r.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    Some(r)
}

fn same_with_magic(g: &Generated, transformed: &Cell<usize>) -> Result<(), TestCaseError> {
    let plain = Fixlog::from_source("random.dl", &g.text);
    let Ok(mut plain) = plain else {
        return Ok(());
    };
    let options = CompileOptions {
        check: CheckOptions {
            magic_transform: Some("*".into()),
            ..CheckOptions::default()
        },
        ..CompileOptions::default()
    };
    let mut magic = Fixlog::from_source_with("random.dl", &g.text, &options).map_err(|e| {
        TestCaseError::fail(format!("rejected with the transform:\n{e}\n{}", g.text))
    })?;
    if magic
        .program()
        .relations
        .iter()
        .any(|r| r.name.contains('@'))
    {
        transformed.set(transformed.get() + 1);
    }
    for (rel, rs) in &g.inserts {
        plain.insert(rel, rs.clone()).unwrap();
        magic.insert(rel, rs.clone()).unwrap();
    }
    let opts = RunOptions {
        backend: fixlog::BackendKind::Cpu,
        ..RunOptions::default()
    };
    let a = plain
        .run(&opts)
        .map_err(|e| TestCaseError::fail(format!("{e}")))?;
    let b = magic
        .run(&opts)
        .map_err(|e| TestCaseError::fail(format!("{e}\n{}", g.text)))?;
    for r in &plain.program().relations {
        let (x, y) = (rows(&a, &r.name), rows(&b, &r.name));
        if x != y {
            return Err(TestCaseError::fail(format!(
                "relation {} differs with the magic-set transform\nwithout: {x:?}\nwith: {y:?}\n--- program ---\n{}",
                r.name, g.text
            )));
        }
    }
    Ok(())
}

/// Random stratified programs (the differential test's generator): every relation is
/// the same with the transform on every relation it can apply to.
#[test]
fn random_programs_are_the_same_with_the_magic_transform() {
    let cases = std::env::var("FIXLOG_MAGIC_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = proptest::collection::vec(any::<u32>(), 0..300).prop_map(generate);
    let transformed = Cell::new(0);
    if let Err(e) = runner.run(&strategy, |g| same_with_magic(&g, &transformed)) {
        panic!("{e}");
    }
    // The generator's joins bind arguments often enough to exercise the transform.
    assert!(
        transformed.get() * 10 >= cases as usize,
        "only {} of {cases} programs were transformed",
        transformed.get()
    );
    eprintln!("{} of {cases} programs transformed", transformed.get());
}

/// Runs `prog.dl` and expects a located error.
fn error_at(prog: &str, line: usize, col: usize, words: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("prog.dl"), prog).unwrap();
    fs::create_dir(dir.path().join("out")).unwrap();
    let out = fixlog_in(dir.path(), &["run", "prog.dl", "-D", "out"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty());
    assert!(
        err.contains(&format!("--> prog.dl:{line}:{col}")),
        "not at {line}:{col}:\n{err}"
    );
    for w in words {
        assert!(err.contains(w), "no `{w}` in:\n{err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(fs::read_dir(dir.path().join("out")).unwrap().count(), 0);
}

#[test]
fn inline_errors_are_located() {
    error_at(
        ".decl a(x: number) inline\na(1).\n.output a\n",
        3,
        1,
        &["inline relation `a` cannot be an output"],
    );
    error_at(
        ".decl a(x: number) inline\n.input a\n.decl b(x: number)\nb(x) :- a(x).\n.output b\n",
        2,
        1,
        &["cannot be an input"],
    );
    error_at(
        ".decl a(x: number) inline\na(1).\n.printsize a\n",
        1,
        1,
        &["`.printsize`"],
    );
    error_at(
        ".decl a(x: number) inline\na(1).\na(x) :- a(y), x = y + 1, x < 5.\n.decl b(x: number)\nb(x) :- a(x).\n.output b\n",
        1,
        1,
        &["recursive relation `a`"],
    );
    error_at(
        ".decl e(x: number, y: number)\ne(1, 2).\n.decl a(x: number, y: number) inline\na(x, y) :- e(x, y).\n.decl b(x: number)\nb(x) :- e(x, _), !a(x, _).\n.output b\n",
        6,
        18,
        &["negation of `a`", "`_`"],
    );
    error_at(
        ".decl e(x: number, y: number)\ne(1, 2).\n.decl a(x: number) inline\na(x) :- e(x, y), y > 1.\n.decl b(x: number)\nb(x) :- e(x, _), !a(x).\n.output b\n",
        6,
        18,
        &["negation of `a`", "prog.dl:4:1"],
    );
    error_at(
        ".decl e(x: number, y: number)\ne(1, 2).\n.decl a(x: number) inline\na(x) :- e(x, _).\na(3).\n.decl b(n: number)\nb(n) :- n = count : { a(_) }.\n.output b\n",
        7,
        23,
        &["inside an aggregate", "2 clauses"],
    );
    error_at(
        ".decl e(x: number, y: number)\ne(1, 2).\n.decl a(x: number) inline\na(x) :- e(x, y).\n.decl b(n: number)\nb(n) :- n = count : { a(_) }.\n.output b\n",
        6,
        23,
        &["inside an aggregate", "counts"],
    );
    error_at(
        ".decl a(x: number, y: number) inline eqrel\na(1, 2).\n.decl b(x: number)\nb(x) :- a(x, _).\n.output b\n",
        1,
        1,
        &["`eqrel`"],
    );
}

#[test]
fn inline_relations_are_not_materialised() {
    let prog = r#"
        .decl e(x: number, y: number)
        e(1, 2). e(2, 3).
        .decl two(x: number, z: number) inline
        two(x, z) :- e(x, y), e(y, z).
        .decl q(x: number, z: number)
        .output q
        q(x, z) :- two(x, z).
    "#;
    let f = Fixlog::from_source("p.dl", prog).unwrap();
    assert!(f.program().relation_id("two").is_none());
    let explain = f.explain();
    assert!(
        !explain
            .lines()
            .any(|l| l.starts_with("stratum") && l.contains("two")),
        "{explain}"
    );
    let db = f.run(&RunOptions::default()).unwrap();
    assert_eq!(
        db.relation("q").unwrap(),
        vec![vec![Datum::Number(1), Datum::Number(3)]]
    );
}

#[test]
fn storage_qualifiers_are_accepted() {
    let prog = r#"
        .decl a(x: number) btree
        .decl b(x: number) brie
        .decl c(x: number) btree_delete
        .decl d(x: number) no_inline overridable
        a(1). b(x) :- a(x). c(x) :- b(x). d(x) :- c(x).
        .output d
    "#;
    let f = Fixlog::from_source("p.dl", prog).unwrap();
    let db = f.run(&RunOptions::default()).unwrap();
    assert_eq!(db.relation("d").unwrap(), vec![vec![Datum::Number(1)]]);
}

/// Every golden case (with the default command line) writes the same files with
/// `--magic-transform '*'`.
#[test]
fn golden_cases_are_the_same_with_the_magic_transform() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut cases: Vec<_> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && !p.join("args").exists())
        .collect();
    cases.sort();
    let mut problems = Vec::new();
    for case in cases {
        let work = tempfile::tempdir().unwrap();
        let out = work.path().join("out");
        fs::create_dir(&out).unwrap();
        let facts = if case.join("facts").is_dir() {
            case.join("facts")
        } else {
            work.path().to_path_buf()
        };
        let o = fixlog_in(
            work.path(),
            &[
                "run",
                case.join("program.dl").to_str().unwrap(),
                "-F",
                facts.to_str().unwrap(),
                "-D",
                out.to_str().unwrap(),
                "-m",
                "*",
                "--backend",
                support::backend_arg(),
            ],
        );
        if !o.status.success() {
            problems.push(format!("{}: {}", case.display(), text(&o.stderr)));
            continue;
        }
        for e in fs::read_dir(case.join("expected")).unwrap() {
            let e = e.unwrap();
            let name = e.file_name();
            if name == "stdout" || name == "stderr" {
                continue;
            }
            let got = fs::read(out.join(&name)).unwrap_or_default();
            let file = Path::new(&name);
            if support::gunzipped(file, &got)
                != support::gunzipped(file, &fs::read(e.path()).unwrap())
            {
                problems.push(format!("{}: {name:?} differs", case.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn explain_says_whether_a_plan_is_honoured() {
    let prog = r#"
        .decl e(x: number, y: number)
        e(1, 2).
        .decl f(x: number, y: number)
        f(2, 3).
        .decl q(x: number, z: number)
        q(x, z) :- e(x, y), f(y, z).
        .plan 0: (2, 1)
        .decl p(x: number, y: number)
        p(x, y) :- e(x, y).
        p(x, z) :- p(x, y), e(y, z).
        .plan 0: (2, 1)
        .output q, p
    "#;
    let f = Fixlog::from_source("p.dl", prog).unwrap();
    let explain = f.explain();
    // q starts from f, as planned.
    let q = &explain[explain.find("q(x, z) :-").unwrap()..];
    assert!(q.contains("`.plan 0: (2,1)` honoured"), "{explain}");
    let first_op = q.lines().nth(2).unwrap();
    assert!(first_op.trim_start().starts_with("scan f"), "{explain}");
    // The delta variant of p reads its delta first.
    assert!(
        explain
            .contains("`.plan 0: (2,1)` adjusted: a delta variant reads its delta (atom 1) first"),
        "{explain}"
    );
    let db = f.run(&RunOptions::default()).unwrap();
    assert_eq!(
        db.relation("q").unwrap(),
        vec![vec![Datum::Number(1), Datum::Number(3)]]
    );
}

#[test]
fn plan_errors_are_located() {
    let head =
        ".decl e(x: number, y: number)\ne(1, 2).\n.decl p(x: number, y: number)\n.output p\n";
    error_at(
        &format!("{head}p(x, y) :- e(x, y).\n.plan 0: (1, 2)\n"),
        6,
        14,
        &["atom 2", "1 atom(s)"],
    );
    error_at(
        &format!("{head}p(x, z) :- e(x, y), e(y, z).\n.plan 0: (1, 1)\n"),
        6,
        14,
        &["atom 1 twice"],
    );
    error_at(
        &format!("{head}p(x, z) :- e(x, y), e(y, z).\n.plan 0: (2)\n"),
        6,
        7,
        &["must order all of them"],
    );
    error_at(
        &format!("{head}p(x, y) :- e(x, y).\n.plan 0: (1), 1: (1)\n"),
        6,
        15,
        &["version 1 does not exist", "1 version(s)"],
    );
    error_at(
        &format!(
            "{head}p(x, y) :- e(x, y).\np(x, z) :- p(x, y), p(y, z).\n.plan 0: (1, 2), 2: (2, 1)\n"
        ),
        7,
        18,
        &["version 2 does not exist", "0 to 1"],
    );
    error_at(
        &format!("{head}p(1, 2).\n.plan 0: (1)\n"),
        6,
        1,
        &["must follow the rule"],
    );
}

/// Random programs with one relation made `inline` at a time (where the program stays
/// valid): every other relation is the same as without.
#[test]
fn random_programs_are_the_same_with_a_relation_inlined() {
    let cases = std::env::var("FIXLOG_INLINE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = proptest::collection::vec(any::<u32>(), 0..300).prop_map(generate);
    let inlined = Cell::new(0usize);
    let check = |mut g: Generated| -> Result<(), TestCaseError> {
        // `.limitsize` stops a loop after an iteration, and inlining a relation changes
        // what each iteration derives, so where the loop stops: it is left out.
        g.text = g
            .text
            .lines()
            .filter(|l| !l.starts_with(".limitsize"))
            .map(|l| format!("{l}\n"))
            .collect();
        let Ok(mut plain) = Fixlog::from_source("random.dl", &g.text) else {
            return Ok(());
        };
        for (rel, rs) in &g.inserts {
            plain.insert(rel, rs.clone()).unwrap();
        }
        let opts = RunOptions {
            backend: fixlog::BackendKind::Cpu,
            ..RunOptions::default()
        };
        let a = plain
            .run(&opts)
            .map_err(|e| TestCaseError::fail(format!("{e}")))?;
        for rel in &g.relations {
            if g.inserts.iter().any(|(r, _)| *r == rel.name) {
                continue;
            }
            let decl = format!(".decl {}(", rel.name);
            let text: String = g
                .text
                .lines()
                .map(|l| {
                    if l.starts_with(&decl) {
                        format!("{l} inline\n")
                    } else {
                        format!("{l}\n")
                    }
                })
                .collect();
            let Ok(mut f) = Fixlog::from_source("random.dl", &text) else {
                continue;
            };
            inlined.set(inlined.get() + 1);
            for (r, rs) in &g.inserts {
                f.insert(r, rs.clone()).unwrap();
            }
            let b = f
                .run(&opts)
                .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            for r in &f.program().relations {
                // A `debug_delta` relation records the iterations of its source's loop,
                // which inlining a relation of that loop changes.
                if r.name.starts_with("dbg") {
                    continue;
                }
                let (x, y) = (rows(&a, &r.name), rows(&b, &r.name));
                if x != y {
                    return Err(TestCaseError::fail(format!(
                        "relation {} differs with {} inline\nwithout: {x:?}\nwith: {y:?}\n--- program ---\n{text}",
                        r.name, rel.name
                    )));
                }
            }
        }
        Ok(())
    };
    if let Err(e) = runner.run(&strategy, check) {
        panic!("{e}");
    }
    eprintln!("{} relations inlined", inlined.get());
    assert!(inlined.get() >= cases as usize, "{}", inlined.get());
}

#[test]
fn programs_with_autoinc_are_not_transformed() {
    let prog = r#"
        .decl e(x: number, y: number)
        e(1, 2). e(2, 3). e(3, 4).
        .decl p(x: number, y: number)
        p(x, y) :- e(x, y).
        p(x, z) :- p(x, y), e(y, z).
        .decl n(x: number, id: number)
        n(y, autoinc()) :- p(1, y).
        .decl q(y: number, id: number)
        .output q
        q(y, i) :- n(y, i), p(2, y).
    "#;
    let options = CompileOptions {
        check: CheckOptions {
            magic_transform: Some("*".into()),
            ..CheckOptions::default()
        },
        ..CompileOptions::default()
    };
    let plain = Fixlog::from_source("p.dl", prog).unwrap();
    let magic = Fixlog::from_source_with("p.dl", prog, &options).unwrap();
    assert!(magic
        .program()
        .relations
        .iter()
        .all(|r| !r.name.contains('@')));
    let (a, b) = (
        plain.run(&RunOptions::default()).unwrap(),
        magic.run(&RunOptions::default()).unwrap(),
    );
    assert_eq!(a.relation("q"), b.relation("q"));
}
