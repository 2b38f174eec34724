//! Golden tests: every directory under `tests/golden/` is a case.
//!
//! A case has `program.dl`, optionally `facts/` (the `-F` directory), `expected/` with
//! the files the run must write (compared byte for byte, `.gz` files by their
//! decompressed bytes; no other file may be written)
//! and optionally `expected/stdout` (else stdout must be empty) and `expected/stderr`
//! (every line of it must occur in stderr: warnings), and optionally `args`:
//! the command line, with `{program}`, `{facts}`, `{out}` and `{case}` (the case's
//! directory) replaced (default
//! `run {program} -F {facts} -D {out}`). Each case runs with `-j 1` and `-j 4`, in a
//! temporary working directory.
//!
//! The expected files were computed by hand; see the comments in each program.

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// All files under `dir`, by path relative to `dir`.
fn read_tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_path_buf();
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs one case; returns a description of every difference.
fn run_case(case: &Path, jobs: usize) -> Vec<String> {
    let name = case.file_name().unwrap().to_string_lossy().into_owned();
    let mut problems = Vec::new();
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    fs::create_dir(&out).unwrap();
    let facts = case.join("facts");
    let facts = if facts.is_dir() {
        facts
    } else {
        work.path().to_path_buf()
    };
    let template = fs::read_to_string(case.join("args"))
        .unwrap_or_else(|_| "run {program} -F {facts} -D {out}".to_string());
    let mut args: Vec<String> = template
        .split_whitespace()
        .map(|a| {
            a.replace("{program}", case.join("program.dl").to_str().unwrap())
                .replace("{facts}", facts.to_str().unwrap())
                .replace("{out}", out.to_str().unwrap())
                .replace("{case}", case.to_str().unwrap())
        })
        .collect();
    args.extend(["-j".to_string(), jobs.to_string()]);
    if args.first().is_some_and(|a| a == "run") {
        args.extend(["--backend".to_string(), support::backend_arg().to_string()]);
    }
    let output = Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .args(&args)
        .current_dir(work.path())
        .output()
        .expect("cannot run the fixlog binary");
    let stderr = show(&output.stderr);
    if !output.status.success() {
        problems.push(format!(
            "{name} (-j {jobs}): exit status {:?}\nstderr:\n{stderr}",
            output.status.code()
        ));
        return problems;
    }

    let mut expected = read_tree(&case.join("expected"));
    let expected_stdout = expected.remove(Path::new("stdout")).unwrap_or_default();
    if output.stdout != expected_stdout {
        problems.push(format!(
            "{name} (-j {jobs}): stdout differs\n--- expected ---\n{}--- actual ---\n{}",
            show(&expected_stdout),
            show(&output.stdout)
        ));
    }
    if let Some(want) = expected.remove(Path::new("stderr")) {
        for line in show(&want).lines().filter(|l| !l.is_empty()) {
            if !stderr.contains(line) {
                problems.push(format!(
                    "{name} (-j {jobs}): stderr lacks `{line}`\n--- stderr ---\n{stderr}"
                ));
            }
        }
    }
    let actual = read_tree(&out);
    for (file, want) in &expected {
        match actual.get(file) {
            None => problems.push(format!(
                "{name} (-j {jobs}): {} was not written (stderr: {stderr})",
                file.display()
            )),
            Some(got) if support::gunzipped(file, got) != support::gunzipped(file, want) => {
                problems.push(format!(
                    "{name} (-j {jobs}): {} differs\n--- expected ---\n{}--- actual ---\n{}",
                    file.display(),
                    show(want),
                    show(got)
                ))
            }
            Some(_) => {}
        }
    }
    for file in actual.keys() {
        if !expected.contains_key(file) {
            problems.push(format!(
                "{name} (-j {jobs}): unexpected output file {}",
                file.display()
            ));
        }
    }
    // Nothing may be written to the working directory (the default -F/-D) either.
    let stray: Vec<_> = fs::read_dir(work.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "out")
        .collect();
    if !stray.is_empty() {
        problems.push(format!(
            "{name} (-j {jobs}): files written to the working directory: {stray:?}"
        ));
    }
    problems
}

fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("program.dl").is_file())
        .collect();
    cases.sort();
    cases
}

#[test]
fn golden_cases() {
    let cases = cases();
    assert!(cases.len() >= 15, "only {} golden cases found", cases.len());
    let mut problems = Vec::new();
    for case in &cases {
        let expected = case.join("expected");
        assert!(
            expected.is_dir() && !read_tree(&expected).is_empty(),
            "{} has no expected output",
            case.display()
        );
        for jobs in [1, 4] {
            problems.extend(run_case(case, jobs));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

#[test]
fn explain_prints_a_plan() {
    let output = Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .arg("explain")
        .arg(golden_dir().join("tc/program.dl"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", show(&output.stderr));
    let text = show(&output.stdout);
    assert!(
        text.contains("path"),
        "explain output does not name `path`:\n{text}"
    );
}
