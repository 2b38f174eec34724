//! Fuzzing the front end through the library: programs made by mutating the golden and
//! example programs token by token (delete, duplicate, swap, insert random bytes), and
//! random bytes. For every input: no panic in parsing, checking or planning; every
//! error is a program error whose diagnostics all point into the text
//! (`file:line:column`), and the report stays short; small programs that compile are
//! run on the CPU over a tiny fact set (when they surely terminate: no arithmetic or
//! functors in recursive rules).
//!
//! `FIXLOG_FUZZ_CASES` sets the number of cases of each property (default 2000, a few
//! seconds in the test profile on 2 cores); the `#[ignore]`d `fuzz_long` runs 20,000
//! of each.

mod support;

use fixlog::{Datum, Error, Fixlog, RunOptions};
use fixlog_logical::{ColType, Expr, Literal, Program};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What the cases of a property did (so that a pass is not vacuous).
#[derive(Default)]
struct Tally {
    rejected: AtomicUsize,
    compiled: AtomicUsize,
    ran: AtomicUsize,
}

/// The programs of `tests/golden/*/program.dl` and `examples/**/*.dl`, as tokens.
fn corpus() -> Vec<Vec<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [root.join("tests/golden"), root.join("../../examples")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if let Ok(inner) = std::fs::read_dir(&path) {
                    files.extend(
                        inner
                            .flatten()
                            .map(|e| e.path())
                            .filter(|p| p.extension().is_some_and(|x| x == "dl")),
                    );
                }
            }
        }
    }
    files.sort();
    let programs: Vec<Vec<String>> = files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .map(|t| tokens(&t))
        .collect();
    assert!(
        programs.len() >= 10,
        "only {} programs found",
        programs.len()
    );
    programs
}

/// A rough Soufflé tokenizer (whitespace and comments are tokens too, so joining the
/// tokens gives the text back).
fn tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '?';
    while i < chars.len() {
        let start = i;
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i = (i + 2).min(chars.len());
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' && chars[i] != '\n' {
                i += 1;
            }
            i = (i + 1).min(chars.len());
        } else if word(c) || (c == '.' && next.is_some_and(char::is_alphabetic)) {
            i += 1;
            while i < chars.len() && word(chars[i]) {
                i += 1;
            }
        } else if matches!(
            (c, next),
            (':', Some('-')) | ('!', Some('=')) | ('<', Some('=' | ':')) | ('>', Some('='))
        ) {
            i += 2;
        } else {
            i += 1;
        }
        out.push(chars[start..i].iter().collect());
    }
    out
}

#[derive(Clone, Debug)]
enum Mutation {
    Delete(usize),
    Duplicate(usize),
    Swap(usize, usize),
    Insert(usize, Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => any::<usize>().prop_map(Mutation::Delete),
        3 => any::<usize>().prop_map(Mutation::Duplicate),
        3 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
        1 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..4))
            .prop_map(|(a, b)| Mutation::Insert(a, b)),
    ]
}

fn mutate(base: &[String], mutations: &[Mutation]) -> Vec<u8> {
    // Work on byte strings: inserted bytes need not be UTF-8.
    let mut toks: Vec<Vec<u8>> = base.iter().map(|t| t.as_bytes().to_vec()).collect();
    for m in mutations {
        if toks.is_empty() {
            break;
        }
        let n = toks.len();
        match m {
            Mutation::Delete(i) => {
                toks.remove(i % n);
            }
            Mutation::Duplicate(i) => {
                let t = toks[i % n].clone();
                toks.insert(i % n, t);
            }
            Mutation::Swap(a, b) => toks.swap(a % n, b % n),
            Mutation::Insert(i, bytes) => toks.insert(i % (n + 1), bytes.clone()),
        }
    }
    toks.concat()
}

/// Whether evaluating surely terminates: no arithmetic or functor computes a new value
/// in a recursive stratum, nor does `recursive_iteration_cnt()` or a lattice's `Lub`
/// (a mutated one may grow forever) give one.
fn surely_terminates(p: &Program) -> bool {
    let computes = |e: &Expr| !matches!(e, Expr::Var(_) | Expr::Const(_));
    fn lit_computes(l: &Literal, computes: &dyn Fn(&Expr) -> bool) -> bool {
        match l {
            Literal::Compare { lhs, rhs, .. } => computes(lhs) || computes(rhs),
            Literal::Predicate { .. } | Literal::Atom(_) | Literal::Negation(_) => false,
            Literal::Aggregate { .. } | Literal::Range { .. } => true,
        }
    }
    // A mutated `range` may count to 2^31 (bounded, but slow): not run.
    fn has_range(body: &[Literal]) -> bool {
        body.iter().any(|l| match l {
            Literal::Range { .. } => true,
            Literal::Aggregate { body, .. } => has_range(body),
            _ => false,
        })
    }
    let ranges = p.rules.iter().any(|r| has_range(&r.body));
    !ranges
        && p.strata.iter().filter(|s| s.recursive).all(|s| {
            s.relations
                .iter()
                .all(|&r| p.relations[r].lattice.is_none())
                && s.rules.iter().all(|&r| {
                    let rule = &p.rules[r];
                    !rule.head.args.iter().any(computes)
                        && !rule.body.iter().any(|l| lit_computes(l, &computes))
                        && !rule
                            .body
                            .iter()
                            .any(|l| matches!(l, Literal::Atom(a) if Some(a.rel) == p.iteration))
                })
        })
}

/// Compiles `bytes` (through a file, so that the reading of bytes is fuzzed too) and,
/// when it is small and surely terminates, runs it.
fn check(bytes: &[u8], tally: &Tally) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let path = dir.path().join("fuzz.dl");
    std::fs::write(&path, bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let name = path.display().to_string();
    let mut program = match Fixlog::from_file(&path) {
        Ok(p) => p,
        Err(Error::Program {
            rendered,
            diagnostics,
        }) => {
            prop_assert!(!diagnostics.0.is_empty(), "an error without diagnostics");
            for d in &diagnostics.0 {
                // Includes are resolved relative to the file: a mutated `.include` may
                // name a missing file, which is still located at the directive.
                prop_assert!(d.span.is_some(), "error without a location: {}", d.message);
            }
            prop_assert!(
                rendered.contains(&format!("--> {name}:")),
                "no file:line:column in\n{rendered}"
            );
            prop_assert!(rendered.len() < 64 * 1024, "{} bytes", rendered.len());
            tally.rejected.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        Err(other) => return Err(TestCaseError::fail(format!("not a program error: {other}"))),
    };
    tally.compiled.fetch_add(1, Ordering::Relaxed);
    if bytes.len() > 4096 || !surely_terminates(program.program()) {
        return Ok(());
    }
    // Two tuples in every relation.
    let relations: Vec<(String, Vec<ColType>)> = program
        .program()
        .relations
        .iter()
        .map(|r| (r.name.clone(), r.types()))
        .collect();
    for (name, types) in relations {
        let rows = (0..2)
            .map(|i| {
                types
                    .iter()
                    .map(|t| match t {
                        ColType::Number => Datum::Number(i),
                        ColType::Unsigned => Datum::Unsigned(i as u32),
                        ColType::Float => Datum::Float(i as f32),
                        ColType::Symbol => Datum::Symbol(["a", "b"][i as usize].into()),
                        ColType::Record(_) => Datum::Record("nil".into()),
                    })
                    .collect()
            })
            .collect::<Vec<Vec<Datum>>>();
        program
            .insert(&name, rows)
            .map_err(|e| TestCaseError::fail(format!("insert into {name}: {e}")))?;
    }
    let options = RunOptions {
        backend: fixlog::BackendKind::Cpu,
        jobs: Some(1),
        ..RunOptions::default()
    };
    program
        .run(&options)
        .map_err(|e| TestCaseError::fail(format!("run failed: {e}")))?;
    tally.ran.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

fn cases(default: u32) -> u32 {
    std::env::var("FIXLOG_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Both outcomes must happen, in at least 1 case in `per` (and some programs must run).
fn report(what: &str, n: u32, tally: &Tally, per: usize) {
    let (rejected, compiled, ran) = (
        tally.rejected.load(Ordering::Relaxed),
        tally.compiled.load(Ordering::Relaxed),
        tally.ran.load(Ordering::Relaxed),
    );
    eprintln!("{what}: {n} cases: {rejected} rejected, {compiled} compiled, {ran} ran");
    assert!(
        rejected * per >= n as usize,
        "{what}: only {rejected} rejected"
    );
    assert!(
        compiled * per >= n as usize,
        "{what}: only {compiled} compiled"
    );
    assert!(ran * per >= n as usize, "{what}: only {ran} ran");
}

fn fuzz_mutations(n: u32) {
    let corpus = corpus();
    let tally = Tally::default();
    let mut runner = TestRunner::new(Config {
        cases: n,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (
        0..corpus.len(),
        // Often none or one (programs that still compile, and run), up to five.
        prop_oneof![
            1 => proptest::collection::vec(mutation(), 0..2),
            1 => proptest::collection::vec(mutation(), 1..6),
        ],
    );
    let result = runner.run(&strategy, |(base, mutations)| {
        let bytes = mutate(&corpus[base], &mutations);
        check(&bytes, &tally).map_err(|e| {
            TestCaseError::fail(format!(
                "{e}\n--- program ---\n{}",
                String::from_utf8_lossy(&bytes)
            ))
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    report("token mutations", n, &tally, 10);
}

fn fuzz_bytes(n: u32) {
    let tally = Tally::default();
    let mut runner = TestRunner::new(Config {
        cases: n,
        failure_persistence: None,
        ..Config::default()
    });
    // Pieces of programs and random bytes.
    let piece = prop_oneof![
        6 => proptest::sample::select(vec![
            "a(", "b(", "x", "y", "1", "\"s\"", ")", ", ", " :- ", ".\n", " = ", " < ",
            " + ", "!", " ; ", "(", "count : { b(x) }", "a(x) :- b(x).\n", "b(1).\n",
            "_", "//", "/*", "*/", "\n",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        1 => any::<u8>().prop_map(|b| vec![b]),
    ];
    let strategy = (
        proptest::sample::select(vec![
            "",
            ".decl a(x: number)\n.decl b(x: number)\n",
            ".decl a(x: symbol)\n.decl b(x: number, y: number)\na(\"s\").\n",
        ]),
        proptest::collection::vec(piece, 0..40),
    );
    let result = runner.run(&strategy, |(prefix, tail)| {
        let mut bytes = prefix.as_bytes().to_vec();
        bytes.extend(tail.concat());
        check(&bytes, &tally).map_err(|e| {
            TestCaseError::fail(format!(
                "{e}\n--- program ---\n{}",
                String::from_utf8_lossy(&bytes)
            ))
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    report("random bytes", n, &tally, 100);
}

#[test]
fn fuzz_token_mutations_of_the_example_programs() {
    fuzz_mutations(cases(2000));
}

#[test]
fn fuzz_random_bytes() {
    fuzz_bytes(cases(2000));
}

#[test]
#[ignore = "long: cargo test --test fuzz -- --ignored"]
fn fuzz_long() {
    fuzz_mutations(20_000);
    fuzz_bytes(20_000);
}
