//! Every class of user error, through the command line: exit code 1, nothing on stdout,
//! nothing written to the output directory, and a message on stderr that says where
//! (`file:line:column`, the source line and a caret under the culprit for program
//! errors; `file:line` for fact files) and what.

use std::fs;
use std::process::Command;

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// Files left in the output directory `out/`.
    outputs: Vec<String>,
    /// The directory the binary ran in (kept until the outcome is dropped).
    dir: tempfile::TempDir,
}

/// Writes `files` (relative paths) into a fresh directory and runs `fixlog ARGS` there.
fn run(files: &[(&str, &str)], args: &[&str]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let out = dir.path().join("out");
    fs::create_dir_all(&out).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .args(args)
        .current_dir(dir.path())
        .output()
        .expect("cannot run the fixlog binary");
    let outputs = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    Outcome {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        outputs,
        dir,
    }
}

/// Runs `prog.dl` (and other files) with `-F facts -D out`.
fn run_program(files: &[(&str, &str)]) -> Outcome {
    run(files, &["run", "prog.dl", "-F", "facts", "-D", "out"])
}

fn assert_failed(o: &Outcome) {
    assert_eq!(o.code, Some(1), "exit code; stderr:\n{}", o.stderr);
    assert!(
        o.stdout.is_empty(),
        "stdout not empty on error:\n{}",
        o.stdout
    );
    assert!(
        o.outputs.is_empty(),
        "files written despite the error: {:?}",
        o.outputs
    );
    assert!(!o.stderr.trim().is_empty(), "no message on stderr");
    assert!(
        !o.stderr.contains("panicked"),
        "the binary panicked:\n{}",
        o.stderr
    );
}

/// Each group of `keywords` is a list of alternatives; one of each must appear
/// (case-insensitively) in stderr.
fn assert_mentions(o: &Outcome, keywords: &[&[&str]]) {
    let text = o.stderr.to_lowercase();
    for alternatives in keywords {
        assert!(
            alternatives
                .iter()
                .any(|k| text.contains(&k.to_lowercase())),
            "stderr mentions none of {alternatives:?}:\n{}",
            o.stderr
        );
    }
}

/// The error points at `file:line:col`, where `col` is where `needle` starts in that
/// source line (one of several needles, if the location may reasonably differ), shows
/// the line, and puts a caret under that column.
fn assert_points_at(o: &Outcome, file: &str, source: &str, line: usize, needles: &[&str]) {
    let text = source.lines().nth(line - 1).unwrap();
    let cols: Vec<usize> = needles
        .iter()
        .map(|n| {
            let byte = text
                .find(n)
                .unwrap_or_else(|| panic!("test bug: {n:?} not in {text:?}"));
            text[..byte].chars().count() + 1
        })
        .collect();
    let lines: Vec<&str> = o.stderr.lines().collect();
    let Some((at, col)) = lines.iter().enumerate().find_map(|(i, l)| {
        cols.iter()
            .find(|c| {
                l.trim_start()
                    .starts_with(&format!("--> {file}:{line}:{c}"))
            })
            .map(|c| (i, *c))
    }) else {
        panic!(
            "no `--> {file}:{line}:COL` with COL in {cols:?} in stderr:\n{}",
            o.stderr
        );
    };
    // The source line, then the caret line.
    let src_at = lines[at..]
        .iter()
        .position(|l| l.trim_start().starts_with(&format!("{line} | ")))
        .map(|p| p + at)
        .unwrap_or_else(|| panic!("source line {line} not shown:\n{}", o.stderr));
    let shown = lines[src_at].split_once(" | ").unwrap().1;
    assert_eq!(shown, text, "shown source line");
    let caret_line = lines
        .get(src_at + 1)
        .unwrap_or_else(|| panic!("no caret line:\n{}", o.stderr));
    let (_, caret) = caret_line
        .split_once(" | ")
        .unwrap_or_else(|| panic!("caret line {caret_line:?} has no ` | `"));
    let lead = caret
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .count();
    assert!(
        caret[lead..].starts_with('^'),
        "caret line {caret_line:?} has no caret"
    );
    assert_eq!(lead + 1, col, "caret column in {caret_line:?}");
}

#[test]
fn syntax_error() {
    let prog = ".decl e(x: number)\ne(1).\ne(x) :- e(x) e(x).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 3, &["e(x)."]);
    assert_mentions(&o, &[&["expected", "unexpected"]]);
}

#[test]
fn unknown_adt_branch_is_named() {
    // A constructor of no declared ADT is reported as an unknown branch (it was once
    // called an auto-increment counter, then an unsupported ADT).
    let prog = ".decl n(x: number)\nn(1).\n.decl s(x: number)\ns(x) :- n(y), x = $Succ(y).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 4, &["Succ"]);
    assert_mentions(&o, &[&["unknown branch"], &["$Succ"]]);
    assert!(!o.stderr.contains("auto-increment"), "{}", o.stderr);
    assert!(!o.stderr.contains("not supported"), "{}", o.stderr);
}

/// Record and ADT errors: each is located at its culprit and says what is wrong.
#[test]
fn record_and_adt_errors() {
    let types = ".type P = [a: number, b: symbol]\n.type Q = [a: number, b: symbol]\n.type T = A {x: number} | B {}\n.decl p(x: P)\n.decl q(x: Q)\n.decl t(x: T)\n.decl n(x: number)\n";
    // (rule line 8, the needle the error points at, words the message has)
    let cases: &[(&str, &str, &[&str])] = &[
        ("p([1, \"a\", 2]).", "[1,", &["`P` has 2 fields", "has 3"]),
        ("p([1]) :- n(1).", "[1]", &["`P` has 2 fields", "has 1"]),
        ("p(x) :- q(x).", "x)", &["type mismatch", "`P`", "`Q`"]),
        (
            "n(1) :- nil = nil.",
            "nil",
            &["cannot tell the record type of `nil`"],
        ),
        ("p([x, \"a\"]) :- n(1).", "x", &["`x`", "bound"]),
        ("t($A(1, 2)).", "$A", &["`$A` has 1 field", "2 arguments"]),
        ("t($C(1)).", "C", &["unknown branch `$C`"]),
        (
            "n(1) :- p(x), p(y), x < y.",
            "x < y",
            &["only be compared with `=` and `!=`"],
        ),
        (
            "n([1, \"a\"]).",
            "[1",
            &["record `[...]` is used where a `number` is expected"],
        ),
        ("t([1]).", "[1]", &["`T` is expected", "branch"]),
        (
            "n(x) :- p([x, _, _]).",
            "[x",
            &["pattern has 3 fields", "`P` has 2"],
        ),
        (
            "n(x) :- t($A(x, 1)).",
            "$A",
            &["pattern has 2 fields", "`T` has 1"],
        ),
        (
            "p(z) :- p(y), z = y + y.",
            "y + y",
            &["arithmetic on records"],
        ),
        (
            "n(x) :- n(x), [x, \"a\"] = [x, \"a\"].",
            "[x, \"a\"] =",
            &["cannot tell the record type"],
        ),
        (
            "n(1) :- [1, \"a\"] = [1, \"a\"].",
            "[1",
            &["cannot tell the record type"],
        ),
    ];
    for (rule, needle, words) in cases {
        let prog = format!("{types}{rule}\n");
        let o = run_program(&[("prog.dl", &prog)]);
        assert_failed(&o);
        assert_points_at(&o, "prog.dl", &prog, 8, &[needle]);
        assert_mentions(&o, &[*words]);
        for w in *words {
            assert!(o.stderr.contains(w), "{rule}: no {w:?} in\n{}", o.stderr);
        }
    }
    // Field types must exist; branch names are unique.
    let prog = ".type P = [a: number, b: nosuch]\n.decl p(x: P)\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 1, &["nosuch"]);
    assert_mentions(&o, &[&["unknown type `nosuch`"]]);
    let prog = ".type T = A {} | B {}\n.type U = B {x: number}\n.decl t(x: T)\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 2, &["B"]);
    assert_mentions(&o, &[&["branch `B` is declared more than once"]]);
    // A union of record types is rejected, as in Soufflé.
    let prog = ".type P = [a: number]\n.type U = P | number\n.decl u(x: U)\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 2, &["P |"]);
    assert_mentions(&o, &[&["unions of record types are not supported"]]);
}

/// A malformed record in a fact file is an error at `file:line`.
#[test]
fn record_fact_file_errors() {
    let prog = ".type P = [a: number, b: symbol]\n.type T = A {x: number} | B {}\n.decl p(x: P)\n.input p\n.output p\n.decl t(x: T)\n.input t\n.output t\n";
    for (file, line, words) in [
        (
            "p.facts",
            "[1, a]\n[2, b\n",
            &["p.facts:2", "end of the record"][..],
        ),
        ("p.facts", "[1, a]\n[x, b]\n", &["p.facts:2", "x"][..]),
        ("p.facts", "[1, a] extra\n", &["p.facts:1", "extra"][..]),
        (
            "t.facts",
            "$A(1)\n$C\n",
            &["t.facts:2", "`$C` is not a branch of the type `T`"][..],
        ),
    ] {
        let other = if file == "p.facts" {
            "t.facts"
        } else {
            "p.facts"
        };
        let o = run_program(&[
            ("prog.dl", prog),
            (&format!("facts/{file}"), line),
            (&format!("facts/{other}"), ""),
        ]);
        assert_failed(&o);
        for w in words {
            assert!(o.stderr.contains(w), "no {w:?} in\n{}", o.stderr);
        }
    }
}

#[test]
fn syntax_error_unterminated_clause() {
    let prog = ".decl e(x: number)\ne(1)\n.decl f(x: number)\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    // The missing `.` is noticed at the next token.
    assert_points_at(&o, "prog.dl", prog, 3, &[".decl"]);
    assert_mentions(&o, &[&["expected", "unexpected"]]);
}

#[test]
fn unknown_relation() {
    let prog = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\npath(x, y) :- edg(x, y).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 3, &["edg("]);
    assert_mentions(
        &o,
        &[
            &["`edg`", "'edg'", "\"edg\""],
            &["unknown", "undeclared", "not declared"],
        ],
    );
}

#[test]
fn unknown_relation_in_directive() {
    let prog = ".decl edge(x: number, y: number)\n.output pth\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 2, &["pth"]);
    assert_mentions(&o, &[&["pth"], &["unknown", "undeclared", "not declared"]]);
}

/// A `debug_delta` relation read in the stratum of the relation it records (it is
/// complete only when that stratum ends), and one given a fact.
#[test]
fn debug_delta_misuse() {
    let prog = ".decl edge(x: number, y: number)\nedge(1, 2).\n.decl path(x: number, y: number)\n\
                .decl d = debug_delta(path)\n.output d\npath(x, y) :- edge(x, y).\n\
                path(x, z) :- path(x, y), edge(y, z), !d(x, z, 0).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 7, &["!d(x, z", "d(x, z"]);
    assert_mentions(&o, &[&["debug_delta"], &["stratum of `path`"]]);

    let prog = ".decl edge(x: number, y: number)\nedge(1, 2).\n.decl d = debug_delta(edge)\n\
                .output d\nd(1, 2, 0).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 5, &["d(1"]);
    assert_mentions(&o, &[&["debug_delta"], &["rules or facts"]]);
}

#[test]
fn arity_mismatch() {
    let prog = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\npath(x, y) :- edge(x, y, x).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 3, &["edge("]);
    assert_mentions(&o, &[&["edge"], &["2"], &["3"]]);
}

#[test]
fn arity_mismatch_in_head() {
    let prog = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\npath(x) :- edge(x, _).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 3, &["path("]);
    assert_mentions(&o, &[&["path"], &["2"], &["1"]]);
}

#[test]
fn type_mismatch_constant() {
    let prog = ".decl edge(x: number, y: number)\nedge(1, \"two\").\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 2, &["\"two\""]);
    assert_mentions(&o, &[&["symbol", "string"], &["number"]]);
}

#[test]
fn type_mismatch_variable() {
    let prog = ".decl edge(x: number, y: number)\n.decl name(x: symbol)\n.decl bad(x: number)\nbad(x) :- edge(x, _), name(x).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    // Either occurrence of `x` in the body may be blamed, or the atom that uses it.
    assert_points_at(&o, "prog.dl", prog, 4, &["x, _)", "x).", "name(", "edge("]);
    assert_mentions(&o, &[&["symbol"], &["number"]]);
}

#[test]
fn unbound_head_variable() {
    let prog = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\npath(x, z) :- edge(x, y).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 3, &["z)"]);
    assert_mentions(
        &o,
        &[&["`z`", "'z'", "variable z"], &["bound", "ground", "range"]],
    );
}

#[test]
fn ungrounded_negation() {
    let prog = ".decl edge(x: number, y: number)\n.decl node(x: number)\n.decl lonely(x: number)\nlonely(x) :- node(x), !edge(x, y).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 4, &["y)"]);
    assert_mentions(
        &o,
        &[
            &["`y`", "'y'", "variable y"],
            &["bound", "ground", "range", "negated"],
        ],
    );
}

#[test]
fn ungrounded_comparison() {
    let prog = ".decl node(x: number)\n.decl big(x: number)\nbig(x) :- node(x), y > 3.\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 3, &["y >"]);
    assert_mentions(
        &o,
        &[&["`y`", "'y'", "variable y"], &["bound", "ground", "range"]],
    );
}

#[test]
fn unstratifiable_negation() {
    let prog = ".decl base(x: number)\n.decl p(x: number)\n.decl q(x: number)\np(x) :- base(x), !q(x).\nq(x) :- base(x), !p(x).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    let line = if o.stderr.contains("prog.dl:4:") {
        4
    } else {
        5
    };
    let needles: &[&str] = if line == 4 {
        &["!q", "q(x)."]
    } else {
        &["!p", "p(x)."]
    };
    assert_points_at(&o, "prog.dl", prog, line, needles);
    assert_mentions(
        &o,
        &[&["`p`", "'p'", " p "], &["`q`", "'q'", " q "], &["negat"]],
    );
}

#[test]
fn unstratifiable_aggregate() {
    let prog = ".decl c(n: number)\nc(0).\nc(n) :- n = count : { c(_) }.\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 3, &["count", "c(_)", "n = count"]);
    assert_mentions(&o, &[&["`c`", "'c'", " c "], &["aggregat"]]);
}

#[test]
fn aggregates_needing_each_other() {
    // Each aggregate is correlated on the other's result: no order can run them.
    let prog = ".decl e(x: number, y: number)\n.decl r(m: number, n: number)\n\
                r(m, n) :- m = count : { e(n, _) }, n = count : { e(m, _) }.\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 3, &["count : { e(n", "count : { e(m"]);
    assert_mentions(&o, &[&["circular"], &["aggregate"]]);
}

#[test]
fn aggregate_result_variable_inside_its_own_body_runs() {
    // These used to make the planner panic (exit 101); Soufflé reads the result
    // variable's name inside the aggregate as a local variable.
    for (rule, want) in [
        ("r(m) :- m = count : { e(m, _) }.", "3\n"),
        ("r(y) :- y = max y : e(_, y).", "4\n"),
        (
            "r(Y) :- Y = min Z + Y : { e(A, Z), e(B, Y), A != B }.",
            "5\n",
        ),
    ] {
        let prog = format!(
            ".decl e(x: number, y: number)\ne(1, 2). e(2, 3). e(3, 4).\n\
             .decl r(x: number)\n.output r\n{rule}\n"
        );
        let o = run(&[("prog.dl", &prog)], &["run", "prog.dl", "-D", "-"]);
        assert_eq!(o.code, Some(0), "{rule}: {}", o.stderr);
        assert!(
            o.stdout
                .contains(&format!("\nr\nx\n===============\n{want}")),
            "{rule}: {}",
            o.stdout
        );
    }
}

const SIMPLE: &str =
    ".decl e(x: number, y: number)\n.input e\n.decl r(x: number)\n.output r\nr(x) :- e(x, _).\n";

#[test]
fn missing_input_file() {
    let o = run(
        &[("prog.dl", SIMPLE), ("facts/other.facts", "")],
        &["run", "prog.dl", "-F", "facts", "-D", "out"],
    );
    assert_failed(&o);
    assert_mentions(&o, &[&["facts/e.facts"]]);
}

#[test]
fn missing_input_of_a_relation_no_output_needs_is_not_read() {
    // As Soufflé, which removes relations that no output depends on: `unused` is
    // neither read nor an error; `e` is read.
    let prog = ".decl e(x: number, y: number)\n.input e\n.decl unused(x: number)\n.input unused\n.decl r(x: number)\n.output r\nr(x) :- e(x, _).\n.decl dead(x: number)\ndead(x) :- unused(x).\n";
    let o = run_program(&[("prog.dl", prog), ("facts/e.facts", "1\t2\n3\t4\n")]);
    assert_eq!(o.code, Some(0), "stderr:\n{}", o.stderr);
    assert_eq!(o.outputs, vec!["r.csv".to_string()]);
}

#[test]
fn missing_input_file_with_w_is_empty() {
    // Soufflé's `-w`: a missing fact file is read as empty, without a message.
    let dir_files = [("prog.dl", SIMPLE), ("facts/other.facts", "")];
    let o = run(
        &dir_files,
        &["run", "prog.dl", "-F", "facts", "-D", "out", "-w"],
    );
    assert_eq!(o.code, Some(0), "stderr:\n{}", o.stderr);
    assert_eq!(o.outputs, vec!["r.csv".to_string()]);
    assert!(!o.stderr.contains("e.facts"), "{}", o.stderr);
    // Without `-w` the same run is an error (see `missing_input_file`); a malformed
    // file is an error with `-w` too.
    let o = run(
        &[("prog.dl", SIMPLE), ("facts/e.facts", "1\n")],
        &["run", "prog.dl", "-F", "facts", "-D", "out", "-w"],
    );
    assert_failed(&o);
}

#[test]
fn warnings_do_not_fail_the_run_and_w_hides_them() {
    let prog = ".decl e(x: number, y: number)\ne(1, 2).\n.decl r(x: number)\n.output r\nr(x) :- e(x, y).\n.decl unused(x: number)\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_eq!(o.code, Some(0), "stderr:\n{}", o.stderr);
    assert_eq!(o.outputs, vec!["r.csv".to_string()]);
    assert_points_at(&o, "prog.dl", prog, 5, &["y)"]);
    assert_mentions(
        &o,
        &[
            &["warning: variable `y` only occurs once"],
            &["relation `unused`"],
        ],
    );
    assert!(!o.stderr.contains("error"), "{}", o.stderr);
    let o = run(&[("prog.dl", prog)], &["run", "prog.dl", "-D", "out", "-w"]);
    assert_eq!(o.code, Some(0), "stderr:\n{}", o.stderr);
    assert!(!o.stderr.contains("warning"), "{}", o.stderr);
}

#[test]
fn fact_line_with_too_few_columns() {
    let o = run_program(&[("prog.dl", SIMPLE), ("facts/e.facts", "1\t2\n3\n4\t5\n")]);
    assert_failed(&o);
    assert_mentions(&o, &[&["facts/e.facts:2"], &["column"]]);
}

#[test]
fn fact_line_with_extra_columns_is_read_as_in_souffle() {
    // Soufflé's CSV reader stops after the relation's last column.
    let o = run_program(&[
        ("prog.dl", SIMPLE),
        ("facts/e.facts", "1\t2\n3\t4\n\n5\t6\t7\n"),
    ]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(
        fs::read_to_string(o.dir.path().join("out/r.csv")).unwrap(),
        "1\n3\n5\n"
    );
}

#[test]
fn fact_not_a_number() {
    let o = run_program(&[("prog.dl", SIMPLE), ("facts/e.facts", "1\t2\nx1\t3\n")]);
    assert_failed(&o);
    assert_mentions(&o, &[&["facts/e.facts:2:1:"], &["`x1` is not a number"]]);
}

/// A program reading `e(x: number, y: unsigned, z: float)` and writing it as `r`.
const TYPED: &str = ".decl e(x: number, y: unsigned, z: float)\n.input e\n.decl r(x: number, y: unsigned, z: float)\n.output r\nr(x, y, z) :- e(x, y, z).\n";

/// Runs [`TYPED`] over `facts` and returns the outcome.
fn run_typed(facts: &str) -> Outcome {
    run_program(&[("prog.dl", TYPED), ("facts/e.facts", facts)])
}

/// The run failed with exactly this message (after `error: `) on stderr.
fn assert_message(o: &Outcome, message: &str) {
    assert_failed(o);
    assert_eq!(o.stderr.trim_end(), format!("error: {message}"));
}

#[test]
fn fact_letters_in_a_number_column_are_not_a_number() {
    // Was "`abc` is not a valid number (out of range)": hex digits passed a first check.
    let o = run_typed("1\t2\t3\nabc\t2\t3\n");
    assert_message(&o, "facts/e.facts:2:1: column 1: `abc` is not a number");
}

#[test]
fn fact_messages_name_line_and_column() {
    let o = run_typed("1\t2\t3.5\n1\t2\tx\n");
    assert_message(&o, "facts/e.facts:2:5: column 3: `x` is not a float");
    let o = run_typed("1\tü\t3\n");
    assert_message(
        &o,
        "facts/e.facts:1:3: column 2: `ü` is not an unsigned number",
    );
    let o = run_typed("1\t2\t3\n-7\t2\t3\n99999999999\t0\t0\n");
    assert_message(
        &o,
        "facts/e.facts:3:1: column 1: `99999999999` is out of the range of a 32-bit number (-2147483648 to 2147483647)",
    );
    let o = run_typed("1\t4294967296\t0\n");
    assert_message(
        &o,
        "facts/e.facts:1:3: column 2: `4294967296` is out of the range of a 32-bit unsigned number (0 to 4294967295)",
    );
    let o = run_typed("1\t2\t3\n4\t5\n");
    assert_message(&o, "facts/e.facts:2:4: expected 3 columns but found 2");
}

#[test]
fn quoted_fields_that_do_not_close_are_errors_at_their_quote() {
    // rfc4180=true: a quoted field must close on its line and be followed by the
    // delimiter or the line's end; a delimiter holding a quote is refused at check time.
    let prog = ".decl e(s: symbol, x: number)\n.input e(rfc4180=true)\n.decl r(s: symbol)\n.output r\nr(s) :- e(s, _).\n";
    let run_facts = |facts: &str| run_program(&[("prog.dl", prog), ("facts/e.facts", facts)]);
    for (facts, message) in [
        (
            "\"a,b\",1\n\"open,2\n",
            "2:1: column 1: the quoted field has no closing quote on its line",
        ),
        (
            "x,1\n\"a\"b,2\n",
            "2:1: column 1: a quoted field must be followed by the delimiter or the line's end",
        ),
        (
            "x,\"12\"\ny,\"1 2\"\n",
            "2:3: column 2: `1 2` is not a number",
        ),
    ] {
        assert_message(&run_facts(facts), &format!("facts/e.facts:{message}"));
    }
    let bad = ".decl e(s: symbol)\n.input e(rfc4180=true, delimiter=\"a\\\"\")\n.output e\n";
    let o = run(&[("prog.dl", bad)], &["run", "prog.dl", "-D", "out"]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", bad, 2, &["delimiter"]);
    assert_mentions(&o, &[&["rfc4180=true"], &["cannot hold"]]);
}

#[test]
fn fact_column_counts_characters_not_bytes() {
    let prog = ".decl e(s: symbol, x: number)\n.input e\n.decl r(s: symbol)\n.output r\nr(s) :- e(s, _).\n";
    let o = run_program(&[("prog.dl", prog), ("facts/e.facts", "é\t1\nżółw\tz\n")]);
    assert_message(&o, "facts/e.facts:2:6: column 2: `z` is not a number");
}

#[test]
fn fact_negative_unsigned_is_a_complete_sentence() {
    let o = run_typed("1\t-1\t0\n");
    assert_message(
        &o,
        "facts/e.facts:1:3: column 2: `-1` is negative, and an unsigned column cannot hold a negative number",
    );
}

#[test]
fn fact_hexadecimal_is_for_unsigned_columns_only_as_in_souffle() {
    let o = run_typed("0x10\t1\t0\n");
    assert_message(
        &o,
        "facts/e.facts:1:1: column 1: `0x10` is not a number (hexadecimal and binary are read in unsigned columns only, as in Soufflé)",
    );
    // Soufflé reads 0x and 0b in unsigned columns, and skips leading whitespace before
    // numbers and floats.
    let o = run_typed(" -5\t0x10\t 2.5\n+6\t0b101\t1e3\n7\t +8\t-0.5\n");
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(
        fs::read_to_string(o.dir.path().join("out/r.csv")).unwrap(),
        "-5\t16\t2.5\n6\t5\t1000\n7\t8\t-0.5\n"
    );
    // Trailing whitespace is an error, as in Soufflé.
    let o = run_typed("5 \t1\t0\n");
    assert_message(&o, "facts/e.facts:1:1: column 1: `5 ` is not a number");
}

#[test]
fn fact_huge_field_is_echoed_shortly() {
    let field = "7".repeat(3 << 20);
    let o = run_typed(&format!("1\t{field}x\t0\n"));
    assert_failed(&o);
    assert!(o.stderr.len() < 200, "message of {} bytes", o.stderr.len());
    assert_eq!(
        o.stderr.trim_end(),
        format!(
            "error: facts/e.facts:1:3: column 2: `{}…` ({} bytes) is not an unsigned number",
            "7".repeat(40),
            field.len() + 1
        )
    );
}

fn gzip(text: &str) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text.as_bytes()).unwrap();
    e.finish().unwrap()
}

/// Runs [`SIMPLE`] over `facts/e.facts.gz` holding `gz`.
fn run_gz(gz: &[u8]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("facts")).unwrap();
    fs::create_dir_all(dir.path().join("out")).unwrap();
    fs::write(dir.path().join("prog.dl"), SIMPLE).unwrap();
    fs::write(dir.path().join("facts/e.facts.gz"), gz).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .args(["run", "prog.dl", "-F", "facts", "-D", "out"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let outputs = fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    Outcome {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        outputs,
        dir,
    }
}

#[test]
fn gzip_with_several_members_is_read_whole() {
    let mut gz = gzip("1\t2\n");
    gz.extend(gzip("3\t4\n"));
    gz.extend([0u8; 16]); // zero padding, as tape blocks leave
    let o = run_gz(&gz);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(
        fs::read_to_string(o.dir.path().join("out/r.csv")).unwrap(),
        "1\n3\n"
    );
}

#[test]
fn gzip_trailing_garbage_truncation_and_corruption_say_so() {
    let good = gzip("1\t2\n3\t4\n");
    let mut trailing = good.clone();
    trailing.extend(b"junk");
    let o = run_gz(&trailing);
    assert_message(
        &o,
        &format!(
            "cannot read facts/e.facts.gz: trailing data after the gzip stream (4 bytes at byte {} that are not a gzip member)",
            good.len()
        ),
    );
    let o = run_gz(&good[..good.len() - 3]);
    assert_message(
        &o,
        "cannot read facts/e.facts.gz: the gzip data is truncated (the member starting at byte 0 ends early)",
    );
    let mut corrupt = good.clone();
    let n = corrupt.len();
    corrupt[n - 8] ^= 0xff; // the CRC
    let o = run_gz(&corrupt);
    assert_failed(&o);
    assert!(
        o.stderr.starts_with(
            "error: cannot read facts/e.facts.gz: corrupt gzip data in the member starting at byte 0: "
        ),
        "{}",
        o.stderr
    );
}

#[test]
fn fact_error_in_second_input_writes_nothing() {
    // `r` could be written from the first input alone; an error in the second must
    // still leave no output.
    let prog = ".decl e(x: number)\n.input e\n.decl f(x: number)\n.input f\n.decl r(x: number)\n.output r\nr(x) :- e(x).\n.decl s(x: number)\n.output s\ns(x) :- f(x).\n";
    let o = run_program(&[
        ("prog.dl", prog),
        ("facts/e.facts", "1\n2\n"),
        ("facts/f.facts", "1\n2\n3\nfour\n"),
    ]);
    assert_failed(&o);
    assert_mentions(&o, &[&["facts/f.facts:4"], &["four"]]);
}

#[test]
fn missing_program_file() {
    let o = run(&[], &["run", "nothere.dl", "-F", ".", "-D", "out"]);
    assert_failed(&o);
    assert_mentions(&o, &[&["nothere.dl"]]);
}

#[test]
fn missing_include() {
    let prog = ".include \"lib/nothere.dl\"\n.decl e(x: number)\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 1, &[".include", "\"lib"]);
    assert_mentions(&o, &[&["nothere.dl"]]);
}

#[test]
fn error_in_included_file_names_that_file() {
    let prog = ".include \"lib.dl\"\n.decl r(x: number)\n";
    let lib = ".decl e(x: number)\ne(1).\nr(x) :- e(x), f(x).\n";
    let o = run_program(&[("prog.dl", prog), ("lib.dl", lib)]);
    assert_failed(&o);
    let o_lib = Outcome {
        stderr: o.stderr.replace("--> ./lib.dl", "--> lib.dl"),
        ..o
    };
    assert_points_at(&o_lib, "lib.dl", lib, 3, &["f(x)"]);
}

#[test]
fn good_program_exits_zero() {
    // The helpers above must be able to see success too.
    let o = run_program(&[("prog.dl", SIMPLE), ("facts/e.facts", "1\t2\n3\t4\n")]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.outputs, vec!["r.csv".to_string()]);
}

#[test]
fn souffle_style_invocation_without_run() {
    let dir = std::env::temp_dir().join(format!("fixlog-souffle-style-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("p.dl");
    std::fs::write(
        &program,
        ".decl e(x: number, y: number)\ne(1, 2).\n.decl r(x: number)\n.output r\nr(y) :- e(_, y).\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .arg(&program)
        .arg("-D")
        .arg("-")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\nr\n"), "{stdout}");
    assert!(stdout.contains("\n2\n"), "{stdout}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn internal_error_is_one_line_with_the_phase_not_a_backtrace() {
    // A deliberate panic (FIXLOG_DEBUG_PANIC) in each phase of each command.
    for (args, phase, what) in [
        (
            &["run", "prog.dl", "-D", "-"][..],
            "compiling",
            "compiling prog.dl",
        ),
        (
            &["run", "prog.dl", "-D", "-"][..],
            "running",
            "running prog.dl",
        ),
        (
            &["explain", "prog.dl"][..],
            "explaining",
            "explaining prog.dl",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("prog.dl"), SIMPLE).unwrap();
        fs::create_dir_all(dir.path().join("facts")).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_fixlog"))
            .args(args)
            .current_dir(dir.path())
            .env("FIXLOG_DEBUG_PANIC", phase)
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(101), "{stderr}");
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.starts_with("fixlog: running on"))
            .collect();
        assert_eq!(lines.len(), 1, "one line:\n{stderr}");
        let line = lines[0];
        assert!(
            line.starts_with("fixlog: internal error, please report it"),
            "{line}"
        );
        assert!(line.contains("deliberate panic"), "{line}");
        assert!(line.ends_with(&format!("(while {what})")), "{line}");
        assert!(
            !stderr.contains("backtrace") && !stderr.contains("panicked"),
            "{stderr}"
        );
    }
}

/// Runs `prog.dl` with these bytes and checks the failure stays small on stderr.
fn assert_small_failure(name: &str, program: &[u8]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("prog.dl"), program).unwrap();
    let start = std::time::Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .args(["run", "prog.dl", "-D", "-"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let o = Outcome {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        outputs: Vec::new(),
        dir,
    };
    assert_failed(&o);
    assert!(
        output.stderr.len() < 10_000,
        "{name}: {} bytes on stderr:\n{}",
        output.stderr.len(),
        &o.stderr[..o.stderr.len().min(3000)]
    );
    assert!(
        o.stderr.contains("prog.dl:"),
        "{name}: no location:\n{}",
        o.stderr
    );
    assert!(
        start.elapsed().as_secs() < 20,
        "{name}: took {:?}",
        start.elapsed()
    );
    o
}

#[test]
fn hostile_input_gives_a_small_error_report() {
    // 20 KB of control bytes on one line (was 601 MB of stderr).
    let mut p = b".decl e(x: number)\ne(1). ".to_vec();
    p.extend(std::iter::repeat_n(1u8, 20_000));
    p.extend(b" e(2).\n");
    let o = assert_small_failure("control bytes", &p);
    assert_mentions(&o, &[&["20000 unexpected characters"]]);
    // 100,000 backslashes (aborted with "memory allocation failed").
    let mut p = b".decl e(x: number)\n".to_vec();
    p.extend(std::iter::repeat_n(b'\\', 100_000));
    assert_small_failure("backslashes", &p);
    // Stray characters separated by spaces: many errors on one long line.
    let p = format!(".decl e(x: number)\n{}\n", "& ".repeat(50_000));
    let o = assert_small_failure("spaced stray characters", p.as_bytes());
    assert_mentions(&o, &[&["more errors not shown"]]);
    // Many bad clauses, one a line.
    let p = format!(
        ".decl e(x: number)\n{}",
        "e(x) :- e(x) e(x).\n".repeat(20_000)
    );
    assert_small_failure("bad clauses", p.as_bytes());
    // Many checker errors.
    let p = format!(".decl e(x: number)\n{}", "e(x) :- f(x).\n".repeat(20_000));
    assert_small_failure("unknown relations", p.as_bytes());
}

#[test]
fn invalid_utf8_is_accepted_in_comments_and_strings_and_located_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let mut good = b"// a comment with \xff\xfe bytes\n/* and \xc3 here */\n".to_vec();
    good.extend(b".decl s(x: symbol)\n.output s\ns(\"a\xffb\").\n");
    fs::write(dir.path().join("good.dl"), &good).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .args(["run", "good.dl", "-D", "-"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("a\u{FFFD}b"), "{stdout}");

    let bad = b".decl e(x: number)\n// \xff fine\ne(1). \xff\xfe e(2).\n";
    let o = assert_small_failure("invalid UTF-8", bad);
    assert_mentions(&o, &[&["invalid utf-8"]]);
    assert!(o.stderr.contains("--> prog.dl:3:7"), "{}", o.stderr);
    assert!(!o.stderr.contains("stream did not contain"), "{}", o.stderr);
    // In an included file too.
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("prog.dl"), ".include \"lib.dl\"\n").unwrap();
    fs::write(dir.path().join("lib.dl"), b"\n  \x80\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .args(["run", "prog.dl", "-D", "-"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("lib.dl:2:3"), "{stderr}");
    assert!(stderr.contains("invalid UTF-8"), "{stderr}");
}

/// No "os error" numbers in a message meant for a person.
fn assert_no_os_error(o: &Outcome) {
    assert!(
        !o.stderr.contains("os error"),
        "raw OS error in the message:\n{}",
        o.stderr
    );
}

#[test]
fn output_dir_that_is_a_file() {
    let o = run(
        &[
            ("prog.dl", SIMPLE),
            ("facts/e.facts", "1\t2\n"),
            ("plain", "not a directory\n"),
        ],
        &["run", "prog.dl", "-F", "facts", "-D", "plain"],
    );
    assert_failed(&o);
    assert!(
        o.stderr.contains("error: plain is not a directory"),
        "{}",
        o.stderr
    );
    assert_no_os_error(&o);
    assert_eq!(
        fs::read_to_string(o.dir.path().join("plain")).unwrap(),
        "not a directory\n"
    );
}

#[test]
fn missing_output_dir_is_an_error_and_is_not_created() {
    // As Soufflé: `output directory X does not exists`, before evaluating.
    let o = run(
        &[("prog.dl", SIMPLE), ("facts/e.facts", "1\t2\n")],
        &["run", "prog.dl", "-F", "facts", "-D", "missing/sub"],
    );
    assert_failed(&o);
    assert!(
        o.stderr
            .contains("error: output directory missing/sub does not exist"),
        "{}",
        o.stderr
    );
    assert!(!o.dir.path().join("missing").exists());
}

#[test]
fn output_filename_under_a_file_says_which_part_is_not_a_directory() {
    let prog = ".decl r(x: number)\nr(1).\n.output r(filename=\"sub/r.csv\")\n";
    let o = run(
        &[("prog.dl", prog), ("out/sub", "")],
        &["run", "prog.dl", "-D", "out"],
    );
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(
        o.stderr.contains("out/sub is not a directory"),
        "{}",
        o.stderr
    );
    assert_no_os_error(&o);
    assert_eq!(o.outputs, vec!["sub".to_string()]);
}

#[test]
fn output_filename_in_a_new_subdirectory_creates_it() {
    let prog = ".decl r(x: number)\nr(1).\n.output r(filename=\"sub/r.csv\")\n";
    let o = run(&[("prog.dl", prog)], &["run", "prog.dl", "-D", "out"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(
        fs::read_to_string(o.dir.path().join("out/sub/r.csv")).unwrap(),
        "1\n"
    );
}

/// Runs `fixlog ARGS` through `sh -c 'umask UMASK; exec fixlog ARGS'` in `dir`.
#[cfg(unix)]
fn run_with_umask(dir: &std::path::Path, umask: &str, args: &str) -> std::process::Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask}; exec \"$0\" {args}"))
        .arg(env!("CARGO_BIN_EXE_fixlog"))
        .current_dir(dir)
        .output()
        .expect("cannot run sh")
}

#[cfg(unix)]
#[test]
fn output_files_get_0666_less_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    for (umask, mode) in [("022", 0o644), ("077", 0o600), ("002", 0o664)] {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("prog.dl"),
            ".decl r(x: number)\nr(1).\n.output r\n.decl s(x: number)\ns(2).\n.output s(filename=\"sub/s.csv\")\n",
        )
        .unwrap();
        fs::create_dir(dir.path().join("out")).unwrap();
        let out = run_with_umask(dir.path(), umask, "run prog.dl -D out");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for file in ["out/r.csv", "out/sub/s.csv"] {
            let m = fs::metadata(dir.path().join(file))
                .unwrap()
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(m, mode, "{file} under umask {umask}: {m:o}");
        }
        let mut left: Vec<String> = fs::read_dir(dir.path().join("out"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["r.csv", "sub"]);
    }
}

#[test]
fn unsupported_output_io_is_a_located_error_before_evaluating() {
    let prog = ".decl a(x: number)\na(1).\n.output a\n.decl b(x: number)\nb(2).\n.output b(IO=postgres, database=\"x\")\n";
    let o = run(
        &[("prog.dl", prog), ("out/a.csv", "old\n")],
        &["run", "prog.dl", "-D", "out"],
    );
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert_points_at(&o, "prog.dl", prog, 6, &["IO="]);
    assert_mentions(&o, &[&["IO=postgres is not supported"]]);
    // Both bad parameters are reported.
    assert_points_at(&o, "prog.dl", prog, 6, &["database"]);
    assert_eq!(o.outputs, vec!["a.csv".to_string()]);
    assert_eq!(
        fs::read_to_string(o.dir.path().join("out/a.csv")).unwrap(),
        "old\n"
    );
}

#[test]
fn bad_input_parameters_are_located_errors() {
    let prog = ".decl e(x: number)\n.input e(IO=json)\n.decl f(x: number)\n.input f(headers=yes, delimiter=\"\")\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 2, &["IO="]);
    assert_points_at(&o, "prog.dl", prog, 4, &["headers"]);
    assert_points_at(&o, "prog.dl", prog, 4, &["delimiter"]);
    assert_mentions(
        &o,
        &[
            &["IO=json is not supported in `.input`"],
            &["headers=yes"],
            &["`delimiter` is empty"],
        ],
    );
}

#[test]
fn input_columns_are_checked_against_the_relation() {
    // `columns` names one distinct field (from 0) per attribute; anything else is an
    // error at the parameter before any fact is read; a line without the fields it
    // names is an error at its line.
    for (columns, why) in [
        ("1", "names 1 field but the relation has 2 attributes"),
        ("1:x", "expected field numbers (from 0) separated by `:`"),
        ("2:2", "names field 2 twice"),
        ("0:1:2", "names 3 fields but the relation has 2 attributes"),
    ] {
        let prog =
            format!(".decl e(x: number, y: number)\n.input e(columns=\"{columns}\")\n.output e\n");
        let o = run_program(&[("prog.dl", &prog), ("facts/e.facts", "1\t2\t3\n")]);
        assert_failed(&o);
        assert_points_at(&o, "prog.dl", &prog, 2, &["columns"]);
        assert_mentions(&o, &[&[why]]);
    }
    let prog = ".decl e(x: number, y: number)\n.input e(columns=\"3:1\")\n.output e\n";
    let o = run_program(&[
        ("prog.dl", prog),
        ("facts/e.facts", "0\t1\t2\t3\n0\t1\t2\n"),
    ]);
    assert_message(&o, "facts/e.facts:2:6: expected 4 columns but found 3");
    let prog = ".decl e(x: number)\n.output e(columns=\"0\")\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_mentions(&o, &[&["`columns` is for `.input` only"]]);
}

#[test]
fn json_outputs_are_checked() {
    // `format` takes `list` or `object` and only on outputs; ADT values have no JSON
    // form in Soufflé's writer, so a JSON output of a relation holding them (directly
    // or inside a record) is an error at its `IO`, before anything runs.
    let prog = ".decl e(x: number)\ne(1).\n.output e(IO=jsonfile, format=table)\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 3, &["format"]);
    assert_mentions(&o, &[&["format=table", "`list` or `object`"]]);
    let prog = ".decl e(x: number)\n.input e(format=list)\n.output e\n";
    let o = run_program(&[("prog.dl", prog), ("facts/e.facts", "1\n")]);
    assert_failed(&o);
    assert_mentions(&o, &[&["`format` is for `.output` only"]]);
    for decl in [
        ".type T = A {} | B {x: number}\n.decl e(t: T)\n",
        ".type T = A {} | B {x: number}\n.type R = [n: number, t: T]\n.decl e(r: R)\n",
    ] {
        let prog = format!("{decl}.output e(IO=json)\n");
        let o = run_program(&[("prog.dl", &prog)]);
        assert_failed(&o);
        assert_points_at(&o, "prog.dl", &prog, prog.lines().count(), &["IO"]);
        assert_mentions(&o, &[&["ADT type `T`", "cannot be written as JSON"]]);
    }
    // The same relation written as text is fine.
    let prog = ".type T = A {} | B {x: number}\n.decl e(t: T)\ne($A).\n.output e\n";
    let o = run(&[("prog.dl", prog)], &["run", "prog.dl", "-D", "-"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
}

#[test]
fn json_output_goes_to_stdout_as_text_under_dash_d_dash() {
    // `-D -` prints every output on stdout with its header line, as Soufflé sets
    // IO=stdout and headers=true on each: JSON outputs included.
    let prog = ".decl e(x: number, y: symbol)\ne(1, \"a\").\n.output e(IO=jsonfile)\n.output e(IO=json, format=object)\n";
    let o = run(&[("prog.dl", prog)], &["run", "prog.dl", "-D", "-"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let framed = "---------------\ne\nx\ty\n===============\n1\ta\n===============\n";
    assert_eq!(o.stdout, framed.repeat(2));
    // Into a directory: the file and stdout as JSON.
    let o = run(&[("prog.dl", prog)], &["run", "prog.dl", "-D", "."]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout, "[{\"x\": 1, \"y\": \"a\"}]\n");
}

#[test]
fn input_from_stdin() {
    // `IO=stdin` reads the relation's facts from standard input (gzip too), with the
    // directive's delimiter; errors name `<stdin>` and the line.
    use std::io::Write;
    let prog = ".decl e(x: number, s: symbol)\n.input e(IO=stdin, delimiter=\",\")\n.output e\n";
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("prog.dl"), prog).unwrap();
    let feed = |input: &[u8]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fixlog"))
            .args(["run", "prog.dl", "-D", "-"])
            .current_dir(dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        child.wait_with_output().unwrap()
    };
    let text = b"2,b\n1,a\n";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(text).unwrap();
    for input in [text.to_vec(), gz.finish().unwrap()] {
        let out = feed(&input);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "---------------\ne\nx\ts\n===============\n1\ta\n2\tb\n===============\n"
        );
    }
    let out = feed(b"1,a\nx,b\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("<stdin>:2:1: column 1: `x` is not a number"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The names in `dir`, sorted.
fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

const TWO_OUTPUTS: &str =
    ".decl a(x: number)\na(1).\n.output a\n.decl b(x: number)\nb(2).\n.output b\n";

#[test]
fn a_directory_where_an_output_goes_fails_before_evaluating_and_replaces_nothing() {
    let o = run(
        &[
            ("prog.dl", TWO_OUTPUTS),
            ("out/a.csv", "old\n"),
            ("out/b.csv/x", ""),
        ],
        &["run", "prog.dl", "-D", "out"],
    );
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert_eq!(
        o.stderr.trim_end(),
        "error: cannot write out/b.csv: it is a directory"
    );
    assert_eq!(names_in(&o.dir.path().join("out")), ["a.csv", "b.csv"]);
    assert_eq!(
        fs::read_to_string(o.dir.path().join("out/a.csv")).unwrap(),
        "old\n"
    );
}

#[test]
fn outputs_are_replaced_all_or_nothing() {
    // The run writes both outputs to temporary files, then (test hook) waits; a
    // directory appears where b.csv goes; no output may be replaced.
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("prog.dl"), TWO_OUTPUTS).unwrap();
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("a.csv"), "old\n").unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .args(["run", "prog.dl", "-D", "out", "--quiet"])
        .env("FIXLOG_TEST_PAUSE_BEFORE_RENAME_MS", "3000")
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while names_in(&out)
        .iter()
        .filter(|n| n.starts_with(".fixlog-tmp-"))
        .count()
        < 2
    {
        assert!(
            start.elapsed().as_secs() < 60,
            "no temporary files appeared"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    fs::create_dir(out.join("b.csv")).unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "error: cannot write out/b.csv: it is a directory"
    );
    assert_eq!(names_in(&out), ["a.csv", "b.csv"]);
    assert_eq!(fs::read_to_string(out.join("a.csv")).unwrap(), "old\n");
}

#[test]
fn stdout_outputs_still_work() {
    // With `-D -` every output prints on stdout with its header line, as Soufflé 2
    // prints them (it sets IO=stdout and headers=true on each output).
    let o = run(&[("prog.dl", TWO_OUTPUTS)], &["run", "prog.dl", "-D", "-"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "---------------\na\nx\n===============\n1\n===============\n---------------\nb\nx\n===============\n2\n===============\n"
    );
}

/// Interrupting a run: temporary output files are removed on SIGINT/SIGTERM, and the
/// leftovers of a SIGKILL are removed by the next run writing into the directory.
#[cfg(target_os = "linux")]
mod interrupted {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Stdio};
    use std::time::{Duration, Instant};

    /// A directory with `prog.dl` (two outputs) and `out/a.csv` holding `old`.
    fn setup() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("prog.dl"), TWO_OUTPUTS).unwrap();
        let out = dir.path().join("out");
        fs::create_dir(&out).unwrap();
        fs::write(out.join("a.csv"), "old\n").unwrap();
        (dir, out)
    }

    /// Starts `fixlog ARGS` in `dir`, pausing `pause_ms` before renaming outputs (the
    /// documented test hook) when given.
    fn spawn(dir: &Path, args: &[&str], pause_ms: Option<u64>) -> Child {
        let mut c = Command::new(env!("CARGO_BIN_EXE_fixlog"));
        c.args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(ms) = pause_ms {
            c.env("FIXLOG_TEST_PAUSE_BEFORE_RENAME_MS", ms.to_string());
        }
        c.spawn().unwrap()
    }

    fn temps(out: &Path) -> Vec<String> {
        names_in(out)
            .into_iter()
            .filter(|n| n.starts_with(".fixlog-tmp-"))
            .collect()
    }

    /// Waits until `out` holds `n` temporary files (or the child ends).
    fn wait_for_temps(child: &mut Child, out: &Path, n: usize) -> bool {
        let start = Instant::now();
        loop {
            if temps(out).len() >= n {
                return true;
            }
            if child.try_wait().unwrap().is_some() {
                return false;
            }
            assert!(start.elapsed() < Duration::from_secs(120), "no temporaries");
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    fn kill(child: &Child, signal: &str) {
        let ok = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{signal}");
    }

    fn interrupt_while_paused(signal: &str, number: i32) {
        let (dir, out) = setup();
        let mut child = spawn(
            dir.path(),
            &["run", "prog.dl", "-D", "out", "--quiet"],
            Some(60_000),
        );
        assert!(wait_for_temps(&mut child, &out, 2));
        kill(&child, signal);
        let status = child.wait().unwrap();
        // Ended by the signal, as without a handler (the shell says 128 + number).
        assert_eq!(status.signal(), Some(number), "{status:?}");
        assert_eq!(names_in(&out), ["a.csv"], "temporaries left");
        assert_eq!(fs::read_to_string(out.join("a.csv")).unwrap(), "old\n");
    }

    #[test]
    fn sigterm_before_renaming_removes_temporaries() {
        interrupt_while_paused("TERM", 15);
    }

    #[test]
    fn sigint_before_renaming_removes_temporaries() {
        interrupt_while_paused("INT", 2);
    }

    #[test]
    fn sigterm_while_writing_a_large_output_removes_temporaries() {
        // big(x, y) has 4.41M tuples (about 40 MB of text); the signal is sent as soon
        // as its temporary file appears, so while it is being written.
        let prog = ".decl d(x: number)\n.input d\n.decl big(x: number, y: number)\n.output big\nbig(x, y) :- d(x), d(y).\n";
        let facts: String = (0..2100).map(|i| format!("{}\n", 1_000_000 + i)).collect();
        let mut caught = 0;
        for _ in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            fs::write(dir.path().join("prog.dl"), prog).unwrap();
            fs::write(dir.path().join("d.facts"), &facts).unwrap();
            let out = dir.path().join("out");
            fs::create_dir(&out).unwrap();
            let mut child = spawn(
                dir.path(),
                &["run", "prog.dl", "-D", "out", "--quiet"],
                None,
            );
            let seen = wait_for_temps(&mut child, &out, 1);
            if seen {
                kill(&child, "TERM");
            }
            let status = child.wait().unwrap();
            assert!(
                temps(&out).is_empty(),
                "temporaries left: {:?}",
                temps(&out)
            );
            if status.signal() == Some(15) {
                assert!(names_in(&out).is_empty(), "{:?}", names_in(&out));
                caught += 1;
                break;
            }
            // Finished before the signal came: the output is complete.
            assert!(status.success(), "{status:?}");
            assert_eq!(names_in(&out), ["big.csv"]);
        }
        assert!(caught > 0, "the run always finished before the signal");
    }

    #[test]
    fn kill_9_leaves_temporaries_that_the_next_run_removes() {
        let (dir, out) = setup();
        // A temporary file of a live process (this test) is never touched.
        let live = format!(".fixlog-tmp-{}-0000beef.a.csv", std::process::id());
        fs::write(out.join(&live), "").unwrap();
        let mut child = spawn(
            dir.path(),
            &["run", "prog.dl", "-D", "out", "--quiet"],
            Some(60_000),
        );
        assert!(wait_for_temps(&mut child, &out, 3));
        kill(&child, "KILL");
        assert_eq!(child.wait().unwrap().signal(), Some(9));
        // SIGKILL cannot be caught: its two temporaries remain (documented) ...
        assert_eq!(temps(&out).len(), 3);
        assert_eq!(fs::read_to_string(out.join("a.csv")).unwrap(), "old\n");
        // ... until the next run writing into the directory, which removes them.
        let mut next = spawn(
            dir.path(),
            &["run", "prog.dl", "-D", "out", "--quiet"],
            None,
        );
        let status = next.wait().unwrap();
        assert!(status.success(), "{status:?}");
        assert_eq!(names_in(&out), [live.as_str(), "a.csv", "b.csv"]);
        assert_eq!(fs::read_to_string(out.join("a.csv")).unwrap(), "1\n");
    }
}

/// Transitive closure over a cycle of `n` nodes (`n * n` paths) with `ARGS` added.
fn run_tc_cycle(n: usize, extra: &[&str]) -> Outcome {
    let prog = ".decl edge(x: number, y: number)\n.input edge\n.decl path(x: number, y: number)\n.output path\npath(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n";
    let edges: String = (0..n).map(|i| format!("{i}\t{}\n", (i + 1) % n)).collect();
    let mut args = vec![
        "run",
        "prog.dl",
        "-F",
        "facts",
        "-D",
        "out",
        "--backend",
        "cpu",
    ];
    args.extend_from_slice(extra);
    run(&[("prog.dl", prog), ("facts/edge.facts", &edges)], &args)
}

#[test]
fn memory_limit_ends_a_cpu_run_with_an_error_naming_the_relation() {
    // 3000 nodes: 9M paths (72 MB of rows) cannot fit in 1 MiB (without spilling to
    // disk: see `real_data.rs` for the same with spilling).
    let o = run_tc_cycle(3000, &["--memory-limit", "1M", "--no-spill"]);
    assert_failed(&o);
    assert!(
        o.stderr.starts_with("error: evaluation failed: out of memory: the memory limit of 1.0 MiB would be passed ("),
        "{}",
        o.stderr
    );
    assert_mentions(&o, &[&["`path` ("], &["tuples"]]);
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
}

#[test]
fn memory_limit_below_the_facts_names_the_input_relation() {
    let o = run_tc_cycle(3000, &["--memory-limit", "1K"]);
    assert_failed(&o);
    assert_mentions(
        &o,
        &[
            &["the memory limit of 1.0 KiB would be passed"],
            &["while loading the 3000 facts of `edge`"],
        ],
    );
}

#[test]
fn memory_limit_that_suffices_changes_nothing() {
    let o = run_tc_cycle(60, &["--memory-limit", "64M"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let text = fs::read_to_string(o.dir.path().join("out/path.csv")).unwrap();
    assert_eq!(text.lines().count(), 3600);
}

#[test]
fn a_temp_dir_that_is_not_a_directory_is_an_error_before_running() {
    let o = run_tc_cycle(10, &["--temp-dir", "no/such/dir"]);
    assert_failed(&o);
    assert!(
        o.stderr.starts_with("error: ") && o.stderr.contains("--temp-dir: no/such/dir"),
        "{}",
        o.stderr
    );
    let o = run_tc_cycle(10, &["--temp-dir", "prog.dl"]);
    assert_failed(&o);
    assert_mentions(&o, &[&["--temp-dir: prog.dl is not a directory"]]);
}

#[test]
fn no_spill_and_temp_dir_exclude_each_other() {
    let o = run_tc_cycle(10, &["--temp-dir", ".", "--no-spill"]);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert_mentions(&o, &[&["--no-spill"], &["--temp-dir"]]);
}

#[test]
fn memory_limit_is_parsed() {
    let o = run(
        &[("prog.dl", SIMPLE)],
        &["run", "prog.dl", "--memory-limit", "lots"],
    );
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert_mentions(&o, &[&["--memory-limit"], &["lots"]]);
}

// ---- components ------------------------------------------------------------------------

/// A component error: exit 1, nothing written, located at `needle` of `line`, and the
/// message has each group of `keywords`.
fn component_error(prog: &str, line: usize, needle: &str, keywords: &[&[&str]]) -> Outcome {
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, line, &[needle]);
    assert_mentions(&o, keywords);
    o
}

#[test]
fn component_unknown() {
    let prog = ".comp Graph { .decl e(x: number) e(1). .output e }\n.init g = Grap\n";
    let o = component_error(prog, 2, "Grap", &[&["unknown component"], &["Grap"]]);
    assert_mentions(&o, &[&["did you mean `Graph`"]]);
    // An unknown base.
    let prog = ".comp A : Missing { }\n.init a = A\n";
    component_error(prog, 1, "Missing", &[&["unknown component"], &["Missing"]]);
}

#[test]
fn component_wrong_number_of_type_parameters() {
    let prog = ".comp Pair<K, V> { .decl p(k: K, v: V) }\n.init p = Pair<number>\n";
    component_error(
        prog,
        2,
        "Pair<number>",
        &[&["takes 2 type parameters but 1 was given"]],
    );
}

#[test]
fn component_cycle_in_inheritance() {
    let prog = ".comp A : B { }\n.comp B : C { }\n.comp C : A { }\n.init a = A\n";
    let o = component_error(prog, 1, "A :", &[&["cycle in inheritance"]]);
    // Each component on the cycle is named.
    assert_mentions(&o, &[&["component `B` inherits from itself"]]);
    assert_mentions(&o, &[&["component `C` inherits from itself"]]);
}

#[test]
fn component_duplicate_instance() {
    let prog = ".comp A { .decl r(x: number) r(1). }\n.init a = A\n.init b = A\n.init a = A\n";
    let o = component_error(
        prog,
        4,
        "a = A",
        &[&["instance `a` is declared more than once"]],
    );
    assert_mentions(&o, &[&["prog.dl:2:7"]]);
    // An instance named like a relation (Soufflé: "Name clash").
    let prog = ".decl a(x: number)\na(1).\n.comp A { }\n.init a = A\n";
    component_error(
        prog,
        4,
        "a = A",
        &[&["instance `a`"], &["same name as a relation"]],
    );
}

#[test]
fn component_redefinition() {
    // The base and the derived component both declare `r`: one instance has it twice.
    let prog =
        ".comp A { .decl r(x: number) }\n.comp B : A {\n  .decl r(x: number)\n}\n.init b = B\n";
    let o = component_error(
        prog,
        3,
        "r(x",
        &[&["relation `b.r` is declared more than once"]],
    );
    assert_mentions(&o, &[&["first declared at prog.dl:1:11"]]);
}

#[test]
fn component_override_of_a_relation_not_overridable() {
    let prog = ".comp A {\n  .decl R(x: number)\n  R(1).\n}\n.comp B : A {\n  .override R\n  R(2).\n}\n.init b = B\n";
    let o = component_error(
        prog,
        6,
        "R",
        &[&["relation `R` of component `A` is not overridable"]],
    );
    assert_mentions(&o, &[&["overridable"]]);
}

#[test]
fn component_override_of_its_own_relation() {
    let prog = ".comp A {\n  .decl R(x: number) overridable\n  .override R\n}\n.init a = A\n";
    component_error(
        prog,
        3,
        "R",
        &[&["only an inherited relation can be overridden"]],
    );
}

#[test]
fn component_errors_inside_instantiated_code_are_located_in_the_body() {
    let prog = ".comp A {\n  .decl r(x: number)\n  r(\"text\").\n}\n.init a = A\n.init b = A\n";
    let o = component_error(prog, 3, "\"text\"", &[&["type mismatch"]]);
    // Reported once, not once per instance.
    assert_eq!(o.stderr.matches("type mismatch").count(), 1, "{}", o.stderr);
    let prog = ".comp A {\n  .decl r(x: number)\n  r(x) :- q(x.\n}\n.init a = A\n";
    component_error(prog, 3, ".", &[&["expected"]]);
}

#[test]
fn component_through_a_type_parameter_that_is_not_one() {
    let prog = ".comp Case<S> {\n  .init chosen = S\n}\n.init c = Case<Three>\n";
    let o = component_error(
        prog,
        2,
        "S",
        &[&["unknown component `Three`"], &["type parameter `S`"]],
    );
    assert_mentions(&o, &[&["in instance `c` declared at prog.dl:4:1"]]);
}

#[test]
fn component_instantiating_itself_is_bounded() {
    let prog = ".comp A {\n  .init again = A\n}\n.init a = A\n";
    component_error(prog, 2, ".init", &[&["nested more than 100 levels deep"]]);
}

#[test]
fn component_outputs_are_named_by_the_qualified_relation() {
    let prog =
        ".comp C {\n  .decl r(x: number)\n  r(1).\n  .output r\n  .printsize r\n}\n.init c = C\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.outputs, ["c.r.csv"]);
    assert_eq!(o.stdout, "c.r\t1\n");
    assert_eq!(
        fs::read_to_string(o.dir.path().join("out/c.r.csv")).unwrap(),
        "1\n"
    );
}

#[test]
fn rules_of_relations_no_output_needs_do_not_run() {
    // `big` feeds no output: as Soufflé removes such relations, its rules do not run
    // (its size stays 0 in the stats); `o` and what it reads are computed.
    let prog = ".decl e(x: number)\ne(1). e(2). e(3).\n\
                .decl big(x: number, y: number)\nbig(x, y) :- e(x), e(y).\n\
                .decl o(x: number)\no(x) :- e(x), x > 1.\n.output o\n";
    let o = run(
        &[("prog.dl", prog)],
        &[
            "run",
            "prog.dl",
            "-D",
            "out",
            "--stats",
            "json",
            "--backend",
            "cpu",
        ],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let json = o.stderr.lines().last().unwrap_or_default();
    let stats: serde_json::Value = serde_json::from_str(json).expect("stats json");
    assert_eq!(stats["relations"]["o"], 2, "{json}");
    assert_eq!(stats["relations"]["big"], 0, "{json}");
    assert_eq!(stats["relations"]["e"], 3, "{json}");
    // The library computes every relation unless asked not to.
    let program = fixlog::Fixlog::from_source("prog.dl", prog).unwrap();
    let db = program.run(&fixlog::RunOptions::default()).unwrap();
    assert_eq!(db.len("big"), Some(9));
}

#[test]
fn eqrel_needs_two_attributes_of_one_type() {
    let prog = ".decl e(x: number, y: number, z: number) eqrel\ne(1, 2, 3).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 1, &["eqrel"]);
    assert_mentions(&o, &[&["eqrel"], &["two attributes"]]);

    let prog = ".decl e(x: number, y: symbol) eqrel\ne(1, \"a\").\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 1, &["eqrel"]);
    assert_mentions(&o, &[&["eqrel"], &["different types"]]);
}

#[test]
fn choice_domain_errors() {
    // An attribute the relation does not have.
    let prog = ".decl r(x: number, y: number) choice-domain x, zz\nr(1, 2).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 1, &["zz"]);
    assert_mentions(&o, &[&["`zz`"], &["not an attribute"]]);

    // On an eqrel relation.
    let prog = ".decl r(x: number, y: number) eqrel choice-domain (x)\nr(1, 2).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 1, &["(x)"]);
    assert_mentions(&o, &[&["eqrel"], &["choice-domain"]]);

    // Unclosed domain.
    let prog = ".decl r(x: number, y: number) choice-domain (x, y\nr(1, 2).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 2, &["r(1"]);
    assert_mentions(&o, &[&["expected"]]);
}

#[test]
fn subsumptive_clause_errors() {
    // The two atoms must be of one relation.
    let prog = ".decl a(x: number)\n.decl b(x: number)\na(1). b(2).\na(x) <= b(y) :- x < y.\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 4, &["b(y)"]);
    assert_mentions(&o, &[&["subsumptive"], &["one relation"]]);

    // A body is required.
    let prog = ".decl a(x: number)\na(1).\na(x) <= a(y).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 3, &["."]);
    assert_mentions(&o, &[&["expected"], &[":-"]]);

    // No `_` in its atoms.
    let prog = ".decl a(x: number, y: number)\na(1, 2).\na(x, _) <= a(x, y) :- y > 0.\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 3, &["_"]);
    assert_mentions(&o, &[&["`_`"], &["subsumptive"]]);

    // Not on eqrel relations.
    let prog = ".decl e(x: number, y: number) eqrel\ne(1, 2).\ne(x, y) <= e(y, x) :- x < y.\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 3, &["e(x, y) <="]);
    assert_mentions(&o, &[&["eqrel"], &["subsumptive"]]);

    // Nor on choice-domain relations (a removed tuple's domain value would stay taken).
    let prog =
        ".decl c(x: number, y: number) choice-domain x\nc(1, 2).\nc(x, y) <= c(x, z) :- z < y.\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 3, &["c(x, y) <="]);
    assert_mentions(&o, &[&["choice-domain"], &["subsumptive"]]);

    // Unknown variables in its atoms are unbound as anywhere else.
    let prog = ".decl a(x: number)\na(1).\na(x) <= a(y) :- y < z.\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 3, &["z."]);
}

/// `.limitsize` of an inline relation is a located warning (it has no loop to stop);
/// the run goes on with the same result as without it.
#[test]
fn limitsize_of_an_inline_relation_is_a_warning() {
    let prog = ".decl e(x: number)\ne(1). e(2).\n.decl q(x: number) inline\nq(x) :- e(x).\n.limitsize q(n=1)\n.decl p(x: number)\n.output p\np(x) :- q(x).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_eq!(o.code, Some(0), "stderr:\n{}", o.stderr);
    assert_points_at(&o, "prog.dl", prog, 5, &[".limitsize"]);
    assert_mentions(
        &o,
        &[&["warning: `.limitsize` of inline relation `q` has no effect"]],
    );
    let p = fs::read_to_string(o.dir.path().join("out/p.csv")).unwrap();
    assert_eq!(p, "1\n2\n");
}

/// `.limitsize` misuse, each located: an unknown relation, a limit that is not an
/// integer, a parameter other than `n`.
#[test]
fn limitsize_misuse_is_located() {
    let prog = ".decl e(x: number)\ne(1).\n.limitsize f(n=3)\n.limitsize e(n=many)\n.limitsize e(size=3)\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 3, &["f(n=3)"]);
    assert_points_at(&o, "prog.dl", prog, 4, &["n=many"]);
    assert_points_at(&o, "prog.dl", prog, 5, &["size=3"]);
    assert_mentions(
        &o,
        &[
            &["unknown relation `f` in `.limitsize`"],
            &["`n` of `.limitsize` must be an integer, found `many`"],
            &["unknown parameter `size` of `.limitsize`"],
        ],
    );
}
