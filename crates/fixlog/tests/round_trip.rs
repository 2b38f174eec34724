//! Outputs read back: as JSON (parsed, against the relation), through SQLite
//! (`IO=sqlite` out and in), and as text: a relation of every column type written with
//! random output parameters (`delimiter`, `headers`, `compress`, `rfc4180`) is read
//! again by an `.input` with the same parameters and holds the same tuples. Symbols hold the
//! delimiter only under `rfc4180` (unquoted, Soufflé cannot tell it from a
//! separator either) and never a quote (Soufflé's RFC 4180 writer turns `"` into
//! `\""`, which its reader reads back as `\"`), a tab or a line break.

use fixlog::{Datum, Fixlog, RunOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// The parameters both directives get, as directive text.
fn params(delimiter: &str, headers: bool, compress: bool, rfc4180: bool) -> String {
    format!("delimiter=\"{delimiter}\", headers={headers}, compress={compress}, rfc4180={rfc4180}")
}

#[test]
fn outputs_read_back_as_inputs() {
    let symbol = proptest::collection::vec(
        proptest::sample::select(vec!['a', 'z', ' ', ',', '|', ';', 'é', '[', '0', '-']),
        0..6,
    )
    .prop_map(|c| c.into_iter().collect::<String>());
    let float = any::<f32>().prop_filter("finite", |f| f.is_finite());
    let rows = proptest::collection::vec((any::<i32>(), any::<u32>(), float, symbol), 0..12);
    let choice = (
        proptest::sample::select(vec![",", "|", ";;", "\\t"]),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    );
    let mut runner = TestRunner::new(Config {
        cases: 300,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(
        &(rows, choice),
        |(rows, (delimiter, headers, compress, rfc4180))| {
            let sep = delimiter.replace("\\t", "\t");
            // Unquoted, a symbol holding the delimiter cannot be read back.
            let rows: Vec<_> = rows
                .into_iter()
                .filter(|r| rfc4180 || !r.3.contains(&sep))
                .collect();
            let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let facts: String = rows
                .iter()
                .map(|(a, b, c, d)| format!("{a}\t{b}\t{c}\t{d}\n"))
                .collect();
            std::fs::write(dir.path().join("src.facts"), facts)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let p = params(delimiter, headers, compress, rfc4180);
            let decl = "(a: number, b: unsigned, c: float, d: symbol)";
            let write = format!(
                ".decl src{decl}\n.input src\n.decl r{decl}\n.output r({p}, filename=\"r.out\")\n\
             r(a, b, c, d) :- src(a, b, c, d).\n"
            );
            let read = format!(".decl r{decl}\n.input r({p}, filename=\"r.out\")\n.output r\n");
            let run = |text: &str| -> Result<fixlog::Database, TestCaseError> {
                let program = Fixlog::from_source("round_trip.dl", text)
                    .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
                let options = RunOptions {
                    backend: fixlog::BackendKind::Cpu,
                    jobs: Some(1),
                    facts_dir: Some(dir.path().to_path_buf()),
                    ..RunOptions::default()
                };
                program
                    .run(&options)
                    .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))
            };
            let written = run(&write)?;
            written
                .write_outputs(dir.path())
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let file = std::fs::read(dir.path().join("r.out"))
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(file.starts_with(&[0x1f, 0x8b]), compress, "gzip or not");
            let read_back = run(&read)?;
            let want: Option<Vec<Vec<Datum>>> = written.relation("r");
            prop_assert_eq!(want.as_ref().map(Vec::is_empty), Some(rows.is_empty()));
            prop_assert_eq!(read_back.relation("r"), want, "{}", p);
            Ok(())
        },
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The number a JSON output holds for `d`, as Soufflé's JSON writer writes it:
/// `unsigned` through a C `int`, floats with six significant digits.
fn json_number(d: &Datum) -> Option<f64> {
    match d {
        Datum::Number(n) => Some(*n as f64),
        Datum::Unsigned(u) => Some(*u as i32 as f64),
        Datum::Float(f) => format!("{:.5e}", *f as f64).parse().ok(),
        _ => None,
    }
}

/// The attributes of `r` in the JSON and SQLite properties: every base type.
const EVERY_TYPE: &str = ".decl r(a: number, b: unsigned, c: float, d: symbol)\n";

/// Up to `max` rows of every base type: any numbers and unsigned values, finite
/// floats, symbols of 0 to 5 characters drawn from `chars`.
fn rows_of_every_type(
    chars: Vec<char>,
    max: usize,
) -> impl Strategy<Value = Vec<(i32, u32, f32, String)>> {
    let symbol = proptest::collection::vec(proptest::sample::select(chars), 0..6)
        .prop_map(|c| c.into_iter().collect::<String>());
    let float = any::<f32>().prop_filter("finite", |f| f.is_finite());
    proptest::collection::vec((any::<i32>(), any::<u32>(), float, symbol), 0..max)
}

/// Runs `text` (which declares `r` as [`EVERY_TYPE`]) on the CPU, with `rows` inserted
/// into `r` and input files read from `dir`.
fn run_with_rows(
    text: &str,
    rows: &[(i32, u32, f32, String)],
    dir: &std::path::Path,
) -> Result<fixlog::Database, TestCaseError> {
    let fail = |e: fixlog::Error| TestCaseError::fail(format!("{e}\n{text}"));
    let mut program = Fixlog::from_source("round_trip.dl", text).map_err(fail)?;
    program
        .insert(
            "r",
            rows.iter().map(|(a, b, c, d)| {
                vec![
                    Datum::Number(*a),
                    Datum::Unsigned(*b),
                    Datum::Float(*c),
                    Datum::Symbol(d.clone()),
                ]
            }),
        )
        .map_err(fail)?;
    let options = RunOptions {
        backend: fixlog::BackendKind::Cpu,
        jobs: Some(1),
        facts_dir: Some(dir.to_path_buf()),
        ..RunOptions::default()
    };
    program.run(&options).map_err(fail)
}

#[test]
fn json_outputs_parse_as_json_and_hold_the_tuples() {
    // Any symbols (quotes, backslashes, control characters, U+2028), numbers of every
    // type and finite floats: `IO=jsonfile` writes valid JSON whose rows, lists or
    // objects keyed by the attribute names, hold the relation's tuples in output order.
    let rows = rows_of_every_type(
        vec![
            'a', '"', '\\', '\n', '\t', '\u{1}', '\u{1f}', '\u{7f}', 'é', '\u{2028}', '/', ' ',
        ],
        12,
    );
    let mut runner = TestRunner::new(Config {
        cases: 200,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&(rows, any::<bool>()), |(rows, objects)| {
        let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let format = if objects { "object" } else { "list" };
        let text = format!("{EVERY_TYPE}.output r(IO=jsonfile, format={format})\n");
        let db = run_with_rows(&text, &rows, dir.path())?;
        db.write_outputs(dir.path())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let file = std::fs::read_to_string(dir.path().join("r.json"))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let json: serde_json::Value = serde_json::from_str(&file)
            .map_err(|e| TestCaseError::fail(format!("{e}: {file}")))?;
        let tuples = db.relation("r").unwrap_or_default();
        let got = json.as_array().cloned().unwrap_or_default();
        prop_assert_eq!(got.len(), tuples.len(), "{}", file);
        for (row, tuple) in got.iter().zip(&tuples) {
            let fields: Vec<serde_json::Value> = if objects {
                ["a", "b", "c", "d"]
                    .iter()
                    .map(|k| row.get(k).cloned().unwrap_or_default())
                    .collect()
            } else {
                row.as_array().cloned().unwrap_or_default()
            };
            prop_assert_eq!(fields.len(), 4, "{}", file);
            for (f, d) in fields.iter().zip(tuple) {
                match d {
                    Datum::Symbol(s) => prop_assert_eq!(f.as_str(), Some(s.as_str()), "{}", file),
                    _ => {
                        let (got, want) = (f.as_f64(), json_number(d));
                        let close = matches!((got, want), (Some(g), Some(w)) if g == w || (g - w).abs() <= w.abs() * 1e-6);
                        prop_assert!(close, "{:?} against {:?} in {}", got, want, file);
                    }
                }
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn relations_read_back_from_sqlite_as_written() {
    // Any numbers, unsigned values, finite floats and non-empty symbols (quotes,
    // control characters, non-ASCII; an empty one reads back as `n/a`, as in Soufflé)
    // written with IO=sqlite read back the same through IO=sqlite.
    let rows = rows_of_every_type(vec!['a', '\'', '"', '\n', '\t', 'é', ' ', ',', '\u{1}'], 20)
        .prop_map(|rows| {
            rows.into_iter()
                .filter(|r| !r.3.is_empty())
                .collect::<Vec<_>>()
        });
    let mut runner = TestRunner::new(Config {
        cases: 100,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&rows, |rows| {
        let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let written = run_with_rows(
            &format!("{EVERY_TYPE}.output r(IO=sqlite)\n"),
            &rows,
            dir.path(),
        )?;
        written
            .write_outputs(dir.path())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let read = run_with_rows(
            &format!("{EVERY_TYPE}.input r(IO=sqlite)\n"),
            &[],
            dir.path(),
        )?;
        prop_assert_eq!(read.relation("r"), written.relation("r"));
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
