//! The preprocessor through the command line: errors inside included files name that
//! file, line and column; `-M`, `-I`, `--preprocessor`, `--no-preprocessor`.

use std::fs;
use std::process::{Command, Output};

fn run(files: &[(&str, &str)], args: &[&str]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .args(args)
        .current_dir(dir.path())
        .output()
        .expect("cannot run the fixlog binary");
    (out, dir)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn fails_with(files: &[(&str, &str)], args: &[&str], wanted: &[&str]) {
    let (out, _dir) = run(files, args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(!err.contains("panicked"), "{err}");
    for w in wanted {
        assert!(err.contains(w), "missing `{w}` in:\n{err}");
    }
}

const MAIN: &str = "#define N 2\n#include \"lib/a.dl\"\n.decl r(x: number)\nr(N).\n.output r\n";

#[test]
fn errors_inside_included_files_name_them() {
    // A checker error inside an included file, after macro expansion.
    fails_with(
        &[
            ("p.dl", MAIN),
            ("lib/a.dl", "// a\n.decl q(x: number)\nq(x) :- nope(x).\n"),
        ],
        &["run", "p.dl", "-D", "-"],
        &[
            "unknown relation `nope`",
            "--> lib/a.dl:3:9",
            "3 | q(x) :- nope(x).",
        ],
    );
    // A syntax error in the main file after an include and a macro.
    fails_with(
        &[
            ("p.dl", "#include \"lib/a.dl\"\n#define X 1\nr(X) :- .\n"),
            ("lib/a.dl", ".decl r(x: number)\n"),
        ],
        &["run", "p.dl", "-D", "-"],
        &["p.dl:3:9"],
    );
    // `#error` inside a nested include.
    fails_with(
        &[
            ("p.dl", MAIN),
            ("lib/a.dl", "\n#include \"b.dl\"\n"),
            ("lib/b.dl", "\n\n  #error no B here\n"),
        ],
        &["run", "p.dl", "-D", "-"],
        &["#error no B here", "lib/b.dl:3:3"],
    );
    // A missing include, an unknown directive, an unterminated `#if`.
    fails_with(
        &[("p.dl", "\n#include \"missing.dl\"\n")],
        &["run", "p.dl", "-D", "-"],
        &["cannot find included file `missing.dl`", "p.dl:2:10"],
    );
    fails_with(
        &[("p.dl", "#pragma once\n#defne X\n")],
        &["run", "p.dl", "-D", "-"],
        &["unknown preprocessor directive `#defne`", "p.dl:2:1"],
    );
    fails_with(
        &[("p.dl", ".decl r(x: number)\n#ifdef X\n")],
        &["run", "p.dl", "-D", "-"],
        &["`#if` without `#endif`", "p.dl:2:1"],
    );
    // An include cycle without guards is bounded.
    fails_with(
        &[("p.dl", "#include \"p.dl\"\n")],
        &["run", "p.dl", "-D", "-"],
        &["nested more than 64 deep"],
    );
}

#[test]
fn macros_and_include_dirs_from_the_command_line() {
    let files = [
        (
            "p.dl",
            "#include <defs.dl>\n.decl r(x: number)\nr(N + M).\n.output r\n",
        ),
        ("inc/defs.dl", "#ifndef N\n#error N is needed\n#endif\n"),
    ];
    let (out, _d) = run(
        &files,
        &["run", "p.dl", "-D", "-", "-I", "inc", "-M", "N=40 M"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("41"), "{}", text(&out.stdout));
    fails_with(
        &files,
        &["run", "p.dl", "-D", "-", "-I", "inc"],
        &["#error N is needed", "defs.dl:2:1"],
    );
    fails_with(
        &files,
        &["run", "p.dl", "-D", "-", "-M", "1N=2"],
        &["-M `1N=2`"],
    );
}

#[test]
fn external_and_no_preprocessor() {
    let files = [("p.dl", ".decl r(x: number)\nr(N).\n.output r\n")];
    let (out, _d) = run(
        &files,
        &["run", "p.dl", "-D", "-", "--preprocessor", "sed s/N/5/"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains('5'), "{}", text(&out.stdout));
    fails_with(
        &files,
        &[
            "run",
            "p.dl",
            "-D",
            "-",
            "--preprocessor",
            "echo broken >&2; exit 2",
        ],
        &[
            "the preprocessor `echo broken >&2; exit 2` failed",
            "broken",
        ],
    );
    fails_with(
        &[("p.dl", "#define N 1\n")],
        &["run", "p.dl", "-D", "-", "--no-preprocessor"],
        &[
            "C preprocessor directives are not read without the preprocessor",
            "p.dl:1:1",
        ],
    );
}
