//! User-defined functors (`.functor`, `@f(...)`) loaded from a shared library with
//! `-L DIR -l NAME`: the library is `crates/fixlog-test-functors` (a workspace member),
//! built here with `rustc` alone (it has no dependencies) so that the test works in a
//! clean checkout whatever cargo built. Expected outputs are written by hand.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The directory holding `libfixlog_test_functors.so`.
fn library_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("fixlog-test-functors-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixlog-test-functors/src/lib.rs");
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        let out = Command::new(rustc)
            .args([
                "--edition",
                "2021",
                "--crate-type",
                "cdylib",
                "-O",
                "--crate-name",
            ])
            .arg("fixlog_test_functors")
            .arg("--out-dir")
            .arg(&dir)
            .arg(&src)
            .output()
            .expect("cannot run rustc");
        assert!(
            out.status.success(),
            "building the test functors failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    })
}

fn fixlog(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("cannot run the fixlog binary")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const DECLS: &str = "\
.functor add1(x: number): number
.functor umax(a: unsigned, b: unsigned): unsigned
.functor half(x: float): float
.functor greet(a: symbol, b: symbol): symbol
.functor mixed(n: number, f: float, s: symbol, u: unsigned, g: float): float
.functor shout(s: symbol): symbol
.functor slen(s: symbol): number
.functor tag(s: symbol, n: number): symbol stateful
.functor twice(n: number): number stateful
";

const PROGRAM: &str = "\
.decl n(x: number)
n(1). n(41). n(-5).
.decl s(x: symbol)
s(\"a\"). s(\"bob\"). s(\"\").
.decl r1(x: number, y: number, z: number)
r1(x, @add1(x), @twice(x)) :- n(x).
.decl r2(x: symbol, y: symbol, z: number, w: symbol)
r2(x, @greet(\"hi\", x), @slen(x), @tag(x, 7)) :- s(x).
.decl r3(x: symbol, y: symbol)
r3(x, @shout(x)) :- s(x).
.decl r4(a: unsigned, b: float, c: float)
r4(@umax(3, 9), @half(5.0), @mixed(1, 0.5, \"abc\", 2, 0.25)) :- n(1).
.decl r5(x: number)
r5(y) :- n(x), y = @add1(@add1(x)), y > 0.
.decl r6(x: number, s: symbol)
r6(@add1(10), @greet(\"a\", \"b\")).
.output r1, r2, r3, r4, r5, r6
";

fn setup(program: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.dl"), program).unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    dir
}

fn run_ok(dir: &Path, backend: &str) {
    let lib = library_dir().to_str().unwrap().to_string();
    let out = fixlog(
        dir,
        &[
            "run",
            "p.dl",
            "-D",
            "out",
            "-L",
            &lib,
            "-l",
            "fixlog_test_functors",
            "--backend",
            backend,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn functors_compute_what_the_library_says() {
    let dir = setup(&format!("{DECLS}{PROGRAM}"));
    let backends: &[&str] = if fixlog_cuda::probe().available {
        &["cpu", "cuda"]
    } else {
        &["cpu"]
    };
    for backend in backends {
        run_ok(dir.path(), backend);
        let read = |f: &str| std::fs::read_to_string(dir.path().join("out").join(f)).unwrap();
        assert_eq!(read("r1.csv"), "-5\t-4\t-10\n1\t2\t2\n41\t42\t82\n");
        assert_eq!(
            read("r2.csv"),
            "\thi, \t0\t#7\na\thi, a\t1\ta#7\nbob\thi, bob\t3\tbob#7\n"
        );
        // `shout` returns NULL for "": no tuple.
        assert_eq!(read("r3.csv"), "a\tA\nbob\tBOB\n");
        // 1 + 0.5 + strlen("abc") + 2 + 10 * 0.25 = 9.
        assert_eq!(read("r4.csv"), "9\t2.5\t9\n");
        assert_eq!(read("r5.csv"), "3\n43\n");
        // A fact calling functors.
        assert_eq!(read("r6.csv"), "11\ta, b\n");
    }
}

#[test]
fn library_found_in_the_working_directory_by_default_name() {
    let dir = setup(
        ".functor add1(x: number): number\n.decl r(x: number)\nr(@add1(1)) :- true.\n.output r\n",
    );
    std::fs::copy(
        library_dir().join("libfixlog_test_functors.so"),
        dir.path().join("libfunctors.so"),
    )
    .unwrap();
    let out = fixlog(dir.path(), &["run", "p.dl", "-D", "-"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("2"), "{}", text(&out.stdout));
}

#[test]
fn explain_cuda_says_functors_run_on_the_host() {
    let dir = setup(&format!("{DECLS}{PROGRAM}"));
    let lib = library_dir().to_str().unwrap().to_string();
    let out = fixlog(
        dir.path(),
        &[
            "explain",
            "p.dl",
            "--backend",
            "cuda",
            "-L",
            &lib,
            "-l",
            "fixlog_test_functors",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(
        s.contains("a user-defined functor (`@f`) is called on the host"),
        "{s}"
    ); // Plans name the functors.
    assert!(s.contains("@add1(#0)"), "{s}");
}

fn run_err(program: &str, args: &[&str]) -> String {
    let dir = setup(program);
    let lib = library_dir().to_str().unwrap().to_string();
    let mut all = vec!["run", "p.dl", "-D", "out", "-L", &lib];
    all.extend(args);
    let out = fixlog(dir.path(), &all);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn errors_are_clear_and_located() {
    let tail = ".decl r(x: number)\nr(@add1(1)) :- true.\n.output r\n";
    let decl = ".functor add1(x: number): number\n";
    // A missing library names the library and where it was looked for.
    let e = run_err(&format!("{decl}{tail}"), &["-l", "nosuchlib"]);
    assert!(
        e.contains("cannot find the functor library `libnosuchlib.so`"),
        "{e}"
    );
    assert!(e.contains("p.dl:1:1"), "{e}");
    // A missing symbol names the functor and the library.
    let e = run_err(
        &format!(
            ".functor nosuch(x: number): number\n{}",
            tail.replace("add1", "nosuch")
        ),
        &["-l", "fixlog_test_functors"],
    );
    assert!(
        e.contains("user-defined functor `nosuch` is not defined in"),
        "{e}"
    );
    assert!(e.contains("libfixlog_test_functors.so"), "{e}");
    // Type errors, unknown functors, arity.
    let e = run_err(
        &format!("{decl}.decl r(x: symbol)\nr(@add1(1)) :- true.\n"),
        &["-l", "fixlog_test_functors"],
    );
    assert!(e.contains("@add1") && e.contains("p.dl:3:3"), "{e}");
    let e = run_err(
        &format!("{decl}{}", tail.replace("@add1(1)", "@add1(\"x\")")),
        &[],
    );
    assert!(e.contains("p.dl:3:9"), "{e}");
    let e = run_err(
        &format!("{decl}{}", tail.replace("@add1(1)", "@add2(1)")),
        &[],
    );
    assert!(
        e.contains("unknown user-defined functor `@add2`") && e.contains("did you mean `@add1`"),
        "{e}"
    );
    let e = run_err(
        &format!("{decl}{}", tail.replace("@add1(1)", "@add1(1, 2)")),
        &[],
    );
    assert!(
        e.contains("`@add1` takes 1 argument but 2 were given"),
        "{e}"
    );
    let e = run_err(
        &format!(".type P = [a: number]\n.functor f(p: P): number\n{tail}"),
        &[],
    );
    assert!(
        e.contains("record and ADT types") && e.contains("p.dl:2:15"),
        "{e}"
    );
    let e = run_err(&format!("{decl}{decl}{tail}"), &[]);
    assert!(
        e.contains("functor `add1` is declared more than once"),
        "{e}"
    );
    let e = run_err(
        ".functor f(a: number, b: number, c: number, d: number, e: number, f: number, g: number): number\n.decl r(x: number)\n",
        &["-l", "fixlog_test_functors"],
    );
    assert!(e.contains("too many parameters"), "{e}");
}

#[test]
fn library_api_takes_compile_options() {
    let mut options = fixlog::CompileOptions::default();
    options.functors.dirs.push(library_dir().to_path_buf());
    options.functors.libs.push("fixlog_test_functors".into());
    options.preprocess.add_macro_arg("START=4").unwrap();
    let program = fixlog::Fixlog::from_source_with(
        "api.dl",
        ".functor add1(x: number): number\n.decl r(x: number)\nr(@add1(START)).\n",
        &options,
    )
    .unwrap();
    let db = program.run(&fixlog::RunOptions::default()).unwrap();
    assert_eq!(
        db.relation("r").unwrap(),
        vec![vec![fixlog::Datum::Number(5)]]
    );
    // Without the library: an error naming it, not a panic.
    let err = fixlog::Fixlog::from_source_with(
        "api.dl",
        ".functor add1(x: number): number\n.decl r(x: number)\nr(@add1(1)).\n",
        &fixlog::CompileOptions::default(),
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("libfunctors.so"), "{err}");
}
