//! Fuzzing the front end through the library: programs made by mutating the golden and
//! example programs token by token (delete, duplicate, swap, insert random bytes), and
//! random bytes. For every input: no panic in parsing, checking or planning; every
//! error is a program error whose diagnostics all point into the text
//! (`file:line:column`), and the report stays short; small programs that compile are
//! run on the CPU over a tiny fact set (when they surely terminate: no arithmetic or
//! functors in recursive rules). Fact files too: rows of every column type, damaged
//! by pieces of fields, separators and random bytes, as text and gzip (whole, cut
//! short, or with bytes after the last member), read plain, with RFC 4180 quotes or
//! through a column map, are read or rejected with their file, line and column.
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

/// Fact files of every column type made of field-like pieces, separators and random
/// bytes, read as text and gzip-compressed (whole, cut short, or with bytes after the
/// last member): every file is read, or is an error naming its file and, where a line
/// is at fault, its line and column; never anything else.
fn fuzz_fact_files(n: u32) {
    const PROGRAM: &str = ".decl r(a: number, b: unsigned, c: float, d: symbol)\n.input r\n\
                           .decl g(a: number, d: symbol)\n.input g(filename=\"g.facts.gz\")\n";
    let program = Fixlog::from_source("facts.dl", PROGRAM).expect("the program compiles");
    // The same file read with RFC 4180 quotes (tab-separated).
    let variant = |input: &str| {
        Fixlog::from_source("facts.dl", &PROGRAM.replacen(".input r\n", input, 1))
            .expect("the program compiles")
    };
    // The same file read with RFC 4180 quotes (tab-separated), and read through a
    // column map (its attributes in the opposite order).
    let quoted_program = variant(".input r(rfc4180=true, delimiter=\"\\t\")\n");
    let mapped_program = variant(
        ".decl m(d: symbol, c: float, b: unsigned, a: number)\n.input m(columns=\"3:2:1:0\", filename=\"r.facts\")\n",
    );
    let tally = Tally::default();
    let mut runner = TestRunner::new(Config {
        cases: n,
        failure_persistence: None,
        ..Config::default()
    });
    let field = |values: Vec<&'static str>| proptest::sample::select(values);
    let number = field(vec![
        "0",
        "1",
        "-7",
        "+3",
        "2147483647",
        "-2147483648",
        " 12",
    ]);
    let unsigned = field(vec!["0", "4294967295", "0x1F", "0b101", "7"]);
    let float = field(vec!["3.5", "-0.0", "1e30", "nan", "inf", "2", " 1.5"]);
    let symbol = field(vec!["abc", "", "a b", "\u{e9}t\u{e9}", "\"q\"", "x\\y"]);
    // Rows of r, each field quoted (`"` doubled inside) or not.
    let quote = |f: &str, q: bool| match q {
        true => format!("\"{}\"", f.replace('"', "\"\"")),
        false => f.to_string(),
    };
    let r_rows = proptest::collection::vec(
        (
            (number.clone(), unsigned, float, symbol.clone()),
            proptest::array::uniform4(any::<bool>()),
        )
            .prop_map(move |((a, b, c, d), q)| {
                let fields: Vec<String> = [a, b, c, d]
                    .iter()
                    .zip(q)
                    .map(|(f, q)| quote(f, q))
                    .collect();
                fields.join("\t") + "\n"
            }),
        0..6,
    );
    let g_rows = proptest::collection::vec(
        (number, symbol).prop_map(|(a, d)| format!("{a}\t{d}\n")),
        0..6,
    );
    // What may go wrong in a file: pieces of fields, separators and random bytes put
    // in at some place (about half the files have none).
    let piece = prop_oneof![
        8 => proptest::sample::select(vec![
            "1", "-7", "0x1F", "1e400", "nan", "abc", "2147483648", "-2147483649",
            "4294967296", " ", "\t", "\n", "\r\n", "\"", "\\", "\u{e9}", "",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        1 => any::<u8>().prop_map(|b| vec![b]),
    ];
    let damage = prop_oneof![
        1 => Just(Vec::new()),
        1 => proptest::collection::vec((any::<u16>(), piece), 1..4),
    ];
    let damaged = |rows: Vec<String>, damage: Vec<(u16, Vec<u8>)>| {
        let mut bytes = rows.concat().into_bytes();
        for (at, piece) in damage {
            let at = at as usize % (bytes.len() + 1);
            bytes.splice(at..at, piece);
        }
        bytes
    };
    // How the gzip file ends: whole, cut after a number of bytes, or followed by bytes.
    let ending = prop_oneof![
        4 => Just((None, Vec::new())),
        1 => (0usize..64).prop_map(|k| (Some(k), Vec::new())),
        1 => proptest::collection::vec(any::<u8>(), 1..8).prop_map(|b| (None, b)),
    ];
    let strategy = (
        (r_rows, damage.clone()).prop_map(move |(rows, d)| damaged(rows, d)),
        (g_rows, damage).prop_map(move |(rows, d)| damaged(rows, d)),
        ending,
        0..3u8,
    );
    let result = runner.run(&strategy, |(text, gz_text, (cut, after), reader)| {
        let program = [&program, &quoted_program, &mapped_program][reader as usize];
        let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
        std::fs::write(dir.path().join("r.facts"), &text)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut gz = {
            use std::io::Write;
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(&gz_text)
                .and_then(|_| enc.finish())
                .map_err(|e| TestCaseError::fail(e.to_string()))?
        };
        if let Some(k) = cut {
            gz.truncate(k);
        }
        gz.extend(after);
        std::fs::write(dir.path().join("g.facts.gz"), &gz)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let options = RunOptions {
            backend: fixlog::BackendKind::Cpu,
            jobs: Some(1),
            facts_dir: Some(dir.path().to_path_buf()),
            ..RunOptions::default()
        };
        let what = || {
            format!(
                "r.facts {:?} (reader {reader}: plain, rfc4180, columns), g.facts.gz {} bytes",
                String::from_utf8_lossy(&text),
                gz.len()
            )
        };
        match program.run(&options) {
            Ok(_) => {
                tally.ran.fetch_add(1, Ordering::Relaxed);
            }
            Err(Error::FactLine {
                path, line, column, ..
            }) => {
                prop_assert!(
                    line >= 1 && column >= 1,
                    "{}:{line}:{column}; {}",
                    path.display(),
                    what()
                );
                tally.rejected.fetch_add(1, Ordering::Relaxed);
            }
            Err(Error::ReadFile { path, .. }) => {
                prop_assert!(
                    path.ends_with("g.facts.gz") || path.ends_with("r.facts"),
                    "{}",
                    path.display()
                );
                tally.rejected.fetch_add(1, Ordering::Relaxed);
            }
            Err(other) => return Err(TestCaseError::fail(format!("{other}; {}", what()))),
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (ran, rejected) = (
        tally.ran.load(Ordering::Relaxed),
        tally.rejected.load(Ordering::Relaxed),
    );
    eprintln!("fact files: {n} cases: {rejected} rejected, {ran} read");
    assert!(ran * 20 >= n as usize, "fact files: only {ran} read");
    assert!(
        rejected * 20 >= n as usize,
        "fact files: only {rejected} rejected"
    );
}

#[test]
fn fuzz_fact_file_reading() {
    fuzz_fact_files(cases(2000));
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
    fuzz_fact_files(20_000);
}
