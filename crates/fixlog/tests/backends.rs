//! Choosing a backend from the command line: `--backend cpu|cuda|auto`,
//! `--gpu-memory-limit`, and `explain --backend cuda`. Each test states what must
//! happen both on a machine without a usable GPU (CI) and on one with a GPU.

use std::fs;
use std::process::{Command, Output};

const TC: &str = ".decl edge(x: number, y: number)\n.input edge\n\
                  .decl path(x: number, y: number)\n.output path\n\
                  path(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n";

fn gpu_available() -> bool {
    fixlog_cuda::probe().available
}

/// Runs `fixlog ARGS` in a fresh directory holding `prog.dl` and `facts/edge.facts`.
fn fixlog(args: &[&str]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("prog.dl"), TC).unwrap();
    fs::create_dir_all(dir.path().join("facts")).unwrap();
    fs::write(dir.path().join("facts/edge.facts"), "1\t2\n2\t3\n3\t4\n").unwrap();
    fs::create_dir_all(dir.path().join("out")).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .args(args)
        .current_dir(dir.path())
        .output()
        .expect("cannot run the fixlog binary");
    (output, dir)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const PATH: &str = "1\t2\n1\t3\n1\t4\n2\t3\n2\t4\n3\t4\n";

#[test]
fn cpu_backend_runs_and_says_nothing_about_it() {
    let (out, dir) = fixlog(&[
        "run",
        "prog.dl",
        "-F",
        "facts",
        "-D",
        "out",
        "--backend",
        "cpu",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        fs::read_to_string(dir.path().join("out/path.csv")).unwrap(),
        PATH
    );
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

#[test]
fn auto_says_which_backend_and_why() {
    let (out, dir) = fixlog(&["run", "prog.dl", "-F", "facts", "-D", "out"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        fs::read_to_string(dir.path().join("out/path.csv")).unwrap(),
        PATH
    );
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr: {err}");
    if gpu_available() {
        assert!(
            lines[0].starts_with("fixlog: running on the GPU: "),
            "{err}"
        );
    } else {
        assert!(
            lines[0].starts_with("fixlog: running on the CPU: "),
            "{err}"
        );
        // The reason is the probe's: no driver, no device, or no CUDA in this build.
        assert!(
            lines[0].len() > "fixlog: running on the CPU: ".len(),
            "{err}"
        );
    }
    // --quiet hides it.
    let (out, _dir) = fixlog(&["run", "prog.dl", "-F", "facts", "-D", "out", "--quiet"]);
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

#[test]
fn cuda_without_a_gpu_fails_cleanly() {
    let (out, dir) = fixlog(&[
        "run",
        "prog.dl",
        "-F",
        "facts",
        "-D",
        "out",
        "--backend",
        "cuda",
    ]);
    let err = text(&out.stderr);
    if gpu_available() {
        assert!(out.status.success(), "{err}");
        assert_eq!(
            fs::read_to_string(dir.path().join("out/path.csv")).unwrap(),
            PATH
        );
    } else {
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.starts_with("error: no usable GPU: "), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty());
        assert_eq!(fs::read_dir(dir.path().join("out")).unwrap().count(), 0);
    }
}

#[test]
fn gpu_memory_limit_is_parsed() {
    for good in ["1000000", "64K", "512M", "4G", "1GiB"] {
        let (out, _dir) = fixlog(&[
            "run",
            "prog.dl",
            "-F",
            "facts",
            "-D",
            "out",
            "--quiet",
            "--gpu-memory-limit",
            good,
        ]);
        assert!(out.status.success(), "{good}: {}", text(&out.stderr));
    }
    for bad in ["", "abc", "12Q", "0", "-5"] {
        let arg = format!("--gpu-memory-limit={bad}");
        let (out, _dir) = fixlog(&["run", "prog.dl", &arg]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("gpu-memory-limit"), "{bad}");
    }
}

#[test]
fn explain_shows_where_each_operator_runs_on_the_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let program = ".decl e(x: symbol, y: symbol)\n.input e\n\
                   .decl r(x: symbol, y: symbol)\n.output r\n\
                   r(x, y) :- e(x, y).\nr(x, cat(z, \"!\")) :- r(x, y), e(y, z).\n\
                   .decl n(k: number)\n.output n\nn(c) :- c = count : { e(_, _) }.\n";
    fs::write(dir.path().join("p.dl"), program).unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fixlog"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let cuda = run(&["explain", "p.dl", "--backend", "cuda"]);
    assert!(cuda.status.success(), "{}", text(&cuda.stderr));
    let cuda = text(&cuda.stdout);
    assert!(cuda.contains("[device]"), "{cuda}");
    assert!(
        cuda.contains("filter and projection on the host: `cat` needs the symbol table"),
        "{cuda}"
    );
    assert!(
        cuda.contains("aggregated and combined on the host"),
        "{cuda}"
    );
    let cpu = text(&run(&["explain", "p.dl"]).stdout);
    assert!(!cpu.contains("[device]"), "{cpu}");
}

/// Records and ADT values live in the host's record table: the operators that build or
/// read them run on the host, the others (including `=`/`!=` on record ids) on the
/// device; with a GPU, both backends write the same files.
#[test]
fn records_run_on_the_host_parts_of_the_gpu_plan_with_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let program = ".type L = [h: number, t: L]\n.type T = A {x: number} | B {}\n\
                   .decl l(x: L)\n.output l\nl([1, nil]).\n\
                   l([h + 1, t]) :- l(t), t = [h, _], h < 4.\n\
                   .decl n(x: L)\n.output n\nn(x) :- l(x), x != nil.\n\
                   .decl t(x: T, k: number)\n.output t\nt($A(h), h) :- l([h, _]).\nt($B, 0).\n\
                   .decl a(k: number)\n.output a\na(x) :- t($A(x), _).\n";
    fs::write(dir.path().join("p.dl"), program).unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fixlog"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let cuda = run(&["explain", "p.dl", "--backend", "cuda"]);
    assert!(cuda.status.success(), "{}", text(&cuda.stderr));
    let cuda = text(&cuda.stdout);
    assert!(cuda.contains("[device]"), "{cuda}");
    assert!(cuda.contains("needs the record table"), "{cuda}");
    let want = "[1, nil]\n[2, [1, nil]]\n[3, [2, [1, nil]]]\n[4, [3, [2, [1, nil]]]]\n";
    for backend in ["cpu", "cuda"] {
        if backend == "cuda" && !gpu_available() {
            continue;
        }
        let out = dir.path().join(format!("out-{backend}"));
        fs::create_dir_all(&out).unwrap();
        let o = run(&[
            "run",
            "p.dl",
            "--backend",
            backend,
            "-D",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert_eq!(fs::read_to_string(out.join("l.csv")).unwrap(), want);
        assert_eq!(fs::read_to_string(out.join("n.csv")).unwrap(), want);
        assert_eq!(
            fs::read_to_string(out.join("t.csv")).unwrap(),
            "$A(1)\t1\n$A(2)\t2\n$A(3)\t3\n$A(4)\t4\n$B\t0\n"
        );
        assert_eq!(
            fs::read_to_string(out.join("a.csv")).unwrap(),
            "1\n2\n3\n4\n"
        );
    }
}
