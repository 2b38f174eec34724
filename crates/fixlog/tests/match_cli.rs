//! `fixlog match` through the command line: counts, rows (the same for every `-j`),
//! `--explain`, and every kind of bad input: a located message (the pattern's column
//! with a caret, or `file:line:column`), exit status 1, nothing on stdout, no panic.

use std::fs;
use std::process::Command;

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Writes `files` into a fresh directory and runs `fixlog match ARGS` there.
fn fixlog_match(files: &[(&str, &[u8])], args: &[&str]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    for (path, bytes) in files {
        fs::write(dir.path().join(path), bytes).unwrap();
    }
    let output = Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .arg("match")
        .args(args)
        .current_dir(dir.path())
        .output()
        .expect("cannot run the fixlog binary");
    Outcome {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn assert_error(o: &Outcome, expected: &[&str]) {
    assert_eq!(o.code, Some(1), "exit status; stderr:\n{}", o.stderr);
    assert!(o.stdout.is_empty(), "stdout on error:\n{}", o.stdout);
    assert!(!o.stderr.contains("internal error"), "{}", o.stderr);
    for e in expected {
        assert!(o.stderr.contains(e), "stderr lacks `{e}`:\n{}", o.stderr);
    }
}

const SQUARE_WITH_DIAGONAL: &[u8] =
    b"# a square 1-2-3-4 with the diagonal 1-3\n1\t2\n2\t3\n3\t4\n4\t1\n1 3\n";

#[test]
fn counts_iso_and_homo() {
    let files: &[(&str, &[u8])] = &[("g.tsv", SQUARE_WITH_DIAGONAL)];
    let triangle = "MATCH (a)--(b)--(c)--(a) RETURN count(*)";
    let o = fixlog_match(files, &["--edges", "g.tsv", triangle]);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (Some(0), "12\n"),
        "{}",
        o.stderr
    );
    let o = fixlog_match(files, &["--edges", "g.tsv", "--undirected", triangle]);
    assert_eq!(o.stdout, "12\n");
    // Directed: one directed 3-cycle, 1->3->4->1, found from each of its 3 nodes.
    let cycle = "MATCH (a)-->(b)-->(c)-->(a) RETURN count(*)";
    let o = fixlog_match(files, &["--edges", "g.tsv", cycle]);
    assert_eq!(o.stdout, "3\n");
    // Paths of two edges: iso needs three distinct nodes; homo counts walks (sum of
    // degree squared: 3² + 2² + 3² + 2² = 26).
    let path = "MATCH (a)--(b)--(c) RETURN count(*)";
    let o = fixlog_match(files, &["--edges", "g.tsv", path]);
    assert_eq!(o.stdout, "16\n");
    let o = fixlog_match(files, &["--edges", "g.tsv", "--semantics", "homo", path]);
    assert_eq!(o.stdout, "26\n");
}

#[test]
fn rows_are_the_same_for_every_thread_count() {
    let mut edges = String::new();
    for u in 0..60u32 {
        for v in 0..60u32 {
            if u != v && (u * 7 + v * 13) % 5 == 0 {
                edges.push_str(&format!("{u}\t{v}\n"));
            }
        }
    }
    let files: &[(&str, &[u8])] = &[("g.tsv", edges.as_bytes())];
    let pattern = "MATCH (a)-->(b)-->(c), (a)-->(c) RETURN a, c, b";
    let one = fixlog_match(files, &["--edges", "g.tsv", "-j", "1", pattern]);
    let two = fixlog_match(files, &["--edges", "g.tsv", "-j", "2", pattern]);
    let four = fixlog_match(files, &["--edges", "g.tsv", "-j", "4", pattern]);
    assert_eq!(one.code, Some(0), "{}", one.stderr);
    assert!(
        one.stdout.lines().count() > 100,
        "too few rows to test anything"
    );
    assert_eq!(one.stdout, two.stdout);
    assert_eq!(one.stdout, four.stdout);
    let count = fixlog_match(
        files,
        &[
            "--edges",
            "g.tsv",
            "MATCH (a)-->(b)-->(c), (a)-->(c) RETURN count(*)",
        ],
    );
    assert_eq!(
        count.stdout.trim().parse::<usize>().unwrap(),
        one.stdout.lines().count()
    );
    let limited = fixlog_match(
        files,
        &["--edges", "g.tsv", "-j", "2", &format!("{pattern} LIMIT 7")],
    );
    let first7: Vec<&str> = one.stdout.lines().take(7).collect();
    assert_eq!(limited.stdout.lines().collect::<Vec<_>>(), first7);
}

#[test]
fn labels_types_gzip_and_explain() {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"1 2 KNOWS\n2 3 KNOWS\n3 1 LIKES\n1 2 KNOWS\n5 5 KNOWS\n")
        .unwrap();
    let edges = gz.finish().unwrap();
    let nodes = b"1\tPerson\n2\tPerson,Admin\n3\tBot\n4\n";
    let files: &[(&str, &[u8])] = &[("g.tsv.gz", &edges), ("n.tsv", nodes)];
    let run = |pattern: &str| {
        fixlog_match(files, &["--edges", "g.tsv.gz", "--nodes", "n.tsv", pattern]).stdout
    };
    assert_eq!(
        run("MATCH (a:Person)-[:KNOWS]->(b) RETURN a, b"),
        "1\t2\n2\t3\n"
    );
    assert_eq!(run("MATCH (a)-[:KNOWS]->(b) WHERE b:Admin RETURN a"), "1\n");
    assert_eq!(run("MATCH (a)<-[:LIKES]-(b:Bot) RETURN a"), "1\n");
    assert_eq!(run("MATCH (a)-[:KNOWS]->(a) RETURN a"), "5\n");
    assert_eq!(run("MATCH (a) RETURN count(*)"), "5\n");
    assert_eq!(run("MATCH (a) WHERE id(a) >= 3 RETURN a"), "3\n4\n5\n");
    assert_eq!(run("MATCH (a)-[:HATES]->(b) RETURN count(*)"), "0\n");
    let explain = fixlog_match(
        files,
        &[
            "--edges",
            "g.tsv.gz",
            "--nodes",
            "n.tsv",
            "--explain",
            "MATCH (a:Person)-[:KNOWS]->(b)<--(c) WHERE id(a) < id(c) RETURN count(*)",
        ],
    );
    assert_eq!(explain.code, Some(0), "{}", explain.stderr);
    for part in [
        "step 1: bind a",
        "label Person",
        "out[:KNOWS](a)",
        "range cut",
        "worst-case-optimal",
    ] {
        assert!(
            explain.stdout.contains(part),
            "explain lacks `{part}`:\n{}",
            explain.stdout
        );
    }
}

#[test]
fn bad_patterns_are_located() {
    let files: &[(&str, &[u8])] = &[("g.tsv", SQUARE_WITH_DIAGONAL)];
    let cases: &[(&str, &[&str])] = &[
        (
            "MATCH (a)-->(b RETURN a",
            &["expected `)`", "--> pattern:1:16", "^^^^^^"],
        ),
        (
            "MATCH (a)-->(b) RETURN c",
            &["unknown variable `c`", "pattern:1:24"],
        ),
        (
            "MATCH (a)-[*2]->(b) RETURN a",
            &["variable-length", "pattern:1:12"],
        ),
        (
            "MATCH (a) WHERE id(a) < 1 OR id(a) > 3 RETURN a",
            &["only AND", "pattern:1:27"],
        ),
        ("MATCH (a)<-->(b) RETURN a", &["points one way"]),
        ("MATCH (a {name: 'x'}) RETURN a", &["properties"]),
        ("RETURN 1", &["expected `MATCH`", "pattern:1:1"]),
        ("MATCH (a) RETURN count(*), a", &["no grouping"]),
        (
            "MATCH (a) WHERE id(a) < 99999999999999999999 RETURN a",
            &["integers from 0"],
        ),
        ("MATCH (a)-->(b) RETURN a LIMIT x", &["LIMIT"]),
        (
            "MATCH (a) RETURN a ¤",
            &["unexpected character `¤`", "pattern:1:20"],
        ),
        ("", &["expected `MATCH`"]),
    ];
    for (pattern, expected) in cases {
        let o = fixlog_match(files, &["--edges", "g.tsv", pattern]);
        assert_error(&o, expected);
    }
    // The pattern is checked before the graph is read.
    let o = fixlog_match(&[], &["--edges", "missing.tsv", "MATCH (a RETURN a"]);
    assert_error(&o, &["pattern:1:10"]);
}

#[test]
fn bad_graph_files_are_located() {
    let pattern = "MATCH (a)-->(b) RETURN count(*)";
    let cases: &[(&[u8], &[&str])] = &[
        (
            b"1\t2\n2\tx\n",
            &["g.tsv:2:3:", "non-negative integers, found `x`"],
        ),
        (b"1\t2\n-3 4\n", &["g.tsv:2:1:", "found `-3`"]),
        (b"1\n", &["g.tsv:1:2:", "expected `src dst`"]),
        (b"1 2 T extra\n", &["g.tsv:1:7:", "too many fields"]),
        (
            b"# ok\n\n1 99999999999999999999\n",
            &["g.tsv:3:3:", "too large"],
        ),
        (b"1 2\n\xff\xfe 3\n", &["g.tsv:2:1:", "not UTF-8"]),
    ];
    for (edges, expected) in cases {
        let o = fixlog_match(&[("g.tsv", edges)], &["--edges", "g.tsv", pattern]);
        assert_error(&o, expected);
    }
    let o = fixlog_match(
        &[("g.tsv", b"1 2\n"), ("n.tsv", b"1\tA\n2\tA,,B\n")],
        &["--edges", "g.tsv", "--nodes", "n.tsv", pattern],
    );
    assert_error(&o, &["n.tsv:2:5:", "empty label"]);
    let o = fixlog_match(
        &[("g.tsv", b"1 2\n"), ("n.tsv", b"one\tA\n")],
        &["--edges", "g.tsv", "--nodes", "n.tsv", pattern],
    );
    assert_error(&o, &["n.tsv:1:1:", "found `one`"]);
    let o = fixlog_match(&[], &["--edges", "nothing.tsv", pattern]);
    assert_error(&o, &["cannot read nothing.tsv"]);
    let o = fixlog_match(
        &[("g.tsv.gz", b"\x1f\x8b\x08\x00garbage")],
        &["--edges", "g.tsv.gz", pattern],
    );
    assert_error(&o, &["cannot read g.tsv.gz"]);
    let o = fixlog_match(
        &[("g.tsv", b"1 2\n")],
        &["--edges", "g.tsv", "-j", "0", pattern],
    );
    assert_error(&o, &["-j must be at least 1"]);
}

/// A count whose `WHERE` breaks the pattern's symmetry exactly runs in degree order
/// (`--explain` says so and why, `--stats` says so), and so does any count of a clique;
/// another keeps the id order; all give the count of the brute force.
#[test]
fn counts_in_degree_order_when_the_order_cannot_matter() {
    // A hub with a small id (1) and triangles through it.
    let edges = b"1 2\n1 3\n1 4\n1 5\n1 6\n2 3\n3 4\n4 5\n5 6\n6 2\n2 4\n";
    let files: &[(&str, &[u8])] = &[("g.tsv", edges)];
    let once = "MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)";
    let half = "MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) RETURN count(*)";
    let explain = |pattern: &str| {
        fixlog_match(
            files,
            &["--edges", "g.tsv", "--undirected", "--explain", pattern],
        )
        .stdout
    };
    let e = explain(once);
    assert!(e.contains("node order: degree"), "{e}");
    assert!(
        e.contains("exactly one of the pattern's 6 automorphisms"),
        "{e}"
    );
    assert!(e.contains("counted in ascending rank"), "{e}");
    let cycle = "MATCH (a)--(b)--(c)--(d)--(a) WHERE id(a) < id(b) AND id(a) < id(c) \
                 AND id(a) < id(d) AND id(b) < id(d) RETURN count(*)";
    let e = explain(cycle);
    assert!(e.contains("4-cycle wedge count"), "{e}");
    assert!(e.contains("1, 1 and 1 of the 8 maps"), "{e}");
    // The same cycle with a repeated pattern edge is no plain 4-cycle: planned, in
    // descending degree order.
    let e = explain(&cycle.replace("--(a) WHERE", "--(a), (a)--(b) WHERE"));
    assert!(!e.contains("4-cycle wedge count"), "{e}");
    assert!(e.contains("counted in descending rank"), "{e}");
    // A clique is counted in degree order whatever its comparisons (each triangle
    // three times here), and a 4-cycle by wedges whatever its comparisons; a path with
    // the same partial symmetry breaking keeps the id order.
    let e = explain(half);
    assert!(e.contains("node order: degree"), "{e}");
    assert!(e.contains("3 of the 3! orders"), "{e}");
    let half_cycle = "MATCH (a)--(b)--(c)--(d)--(a) WHERE id(a) < id(b) RETURN count(*)";
    let e = explain(half_cycle);
    assert!(e.contains("4-cycle wedge count"), "{e}");
    assert!(e.contains("4, 4 and 4 of the 8 maps"), "{e}");
    let half_path = "MATCH (a)--(b)--(c) WHERE id(a) < id(b) RETURN count(*)";
    let e = explain(half_path);
    assert!(e.contains("node order: id"), "{e}");
    assert!(e.contains("do not pick exactly one"), "{e}");
    let e = explain(&once.replace("count(*)", "a, b, c"));
    assert!(!e.contains("node order"), "{e}");
    let e = fixlog_match(
        files,
        &[
            "--edges",
            "g.tsv",
            "--undirected",
            "--semantics",
            "homo",
            "--explain",
            once,
        ],
    );
    assert!(
        e.stdout.contains("node order: id") && e.stdout.contains("homo"),
        "{}{}",
        e.stdout,
        e.stderr
    );
    // Triangles: 1-2-3, 1-3-4, 1-4-5, 1-5-6, 1-6-2, 1-2-4, 2-3-4.
    for (pattern, count) in [(once, "7\n"), (half, "21\n")] {
        let o = fixlog_match(
            files,
            &[
                "--edges",
                "g.tsv",
                "--undirected",
                "-j",
                "2",
                "--stats",
                pattern,
            ],
        );
        assert_eq!(
            (o.code, o.stdout.as_str()),
            (Some(0), count),
            "{}",
            o.stderr
        );
        assert!(
            o.stderr.contains("degree order (forward lists built in"),
            "{}",
            o.stderr
        );
    }
    // 4-cycles (as the generic matcher counts them: 10 cycles, 40 with a < b, 14 with
    // a < b < c), by wedges.
    let shaped = "MATCH (a)--(b)--(c)--(d)--(a) WHERE id(a) < id(b) AND id(b) < id(c) \
                  RETURN count(*)";
    for (pattern, count) in [(cycle, "10\n"), (half_cycle, "40\n"), (shaped, "14\n")] {
        let o = fixlog_match(
            files,
            &["--edges", "g.tsv", "--undirected", "--stats", pattern],
        );
        assert_eq!(
            (o.code, o.stdout.as_str()),
            (Some(0), count),
            "{}",
            o.stderr
        );
        assert!(
            o.stderr
                .contains("4-cycle wedge count (lists in degree order built in"),
            "{}",
            o.stderr
        );
    }
}
