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
fn unsupported_feature_is_named() {
    // An ADT constructor is reported as such (it was once called an auto-increment
    // counter).
    let prog = ".decl n(x: number)\nn(1).\n.decl s(x: number)\ns(x) :- n(y), x = $Succ(y).\n";
    let o = run_program(&[("prog.dl", prog)]);
    assert_failed(&o);
    assert_points_at(&o, "prog.dl", prog, 4, &["$Succ"]);
    assert_mentions(&o, &[&["algebraic data type"], &["$Succ"]]);
    assert!(!o.stderr.contains("auto-increment"), "{}", o.stderr);
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
            o.stdout.contains(&format!("\nr\n===============\n{want}")),
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
fn fact_line_with_too_many_columns() {
    let o = run_program(&[
        ("prog.dl", SIMPLE),
        ("facts/e.facts", "1\t2\n3\t4\n\n5\t6\t7\n"),
    ]);
    assert_failed(&o);
    assert_mentions(&o, &[&["facts/e.facts:4"], &["column"]]);
}

#[test]
fn fact_not_a_number() {
    let o = run_program(&[("prog.dl", SIMPLE), ("facts/e.facts", "1\t2\nx1\t3\n")]);
    assert_failed(&o);
    assert_mentions(&o, &[&["facts/e.facts:2"], &["x1"], &["number"]]);
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
