//! Transitive closure and same generation on real graphs, checked against the published
//! figures in `shared/data/ground_truth.tsv` (sizes and iteration counts).
//!
//! The data directory is `$CARGO_MANIFEST_DIR/../../../shared/data`, or `$FIXLOG_DATA`.
//! A missing directory is a failure, not a skip. Iterations follow the papers'
//! convention (see `shared/data/MANIFEST.md`): loop passes after the non-recursive rules,
//! counting the final pass that derives nothing — what `RunStats` reports.

mod support;

use fixlog::{Fixlog, RunOptions};
use std::path::PathBuf;

const TC: &str = "
.decl edge(x: number, y: number)
.input edge(filename=\"GRAPH\")
.decl path(x: number, y: number)
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
";

const SG: &str = "
.decl edge(x: number, y: number)
.input edge(filename=\"GRAPH\")
.decl sg(x: number, y: number)
sg(x, y) :- edge(p, x), edge(p, y), x != y.
sg(x, y) :- edge(a, x), sg(a, b), edge(b, y).
";

fn data_dir() -> PathBuf {
    let dir = match std::env::var_os("FIXLOG_DATA") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    };
    assert!(
        dir.join("ground_truth.tsv").is_file(),
        "benchmark data not found: looked for {}/ground_truth.tsv (set FIXLOG_DATA to the \
         directory that holds ground_truth.tsv and graphs/)",
        dir.display()
    );
    dir
}

/// The first ground-truth row for `(dataset, query)`: (size, iterations).
fn ground_truth(dataset: &str, query: &str) -> (usize, usize) {
    let path = data_dir().join("ground_truth.tsv");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name} in {}", path.display()))
    };
    let (c_dataset, c_query, c_value, c_iters) = (
        col("dataset"),
        col("query"),
        col("value"),
        col("iterations"),
    );
    for line in lines {
        let f: Vec<&str> = line.split('\t').collect();
        if f[c_dataset] == dataset && f[c_query] == query {
            let value = f[c_value].parse().unwrap();
            let iters = f[c_iters]
                .parse()
                .unwrap_or_else(|_| panic!("no iteration count for {dataset} {query}"));
            return (value, iters);
        }
    }
    panic!("{dataset} {query} is not in {}", path.display());
}

fn check(query: &str, graph: &str) {
    let (expected_size, expected_iters) = ground_truth(graph, query);
    let dir = data_dir();
    let file = dir.join("graphs").join(format!("{graph}.tsv.gz"));
    assert!(file.is_file(), "missing graph file {}", file.display());
    let file = file.canonicalize().unwrap();
    let (template, relation) = match query {
        "TC" => (TC, "path"),
        "SG" => (SG, "sg"),
        _ => unreachable!(),
    };
    let text = template.replace("GRAPH", file.to_str().unwrap());
    let program =
        Fixlog::from_source(&format!("{query}.dl"), &text).unwrap_or_else(|e| panic!("{e}"));
    let db = program
        .run(&RunOptions {
            facts_dir: Some(dir),
            progress: false,
            // Only sizes are checked: keep no tuples (what the CLI does for `.printsize`).
            outputs_only: true,
            ..support::options(Some(2))
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let size = db.len(relation).unwrap();
    let iters = db.stats().iterations_of(relation).unwrap();
    assert_eq!(
        (size, iters),
        (expected_size, expected_iters),
        "{query} on {graph}: (size, iterations) differ from ground truth"
    );
}

macro_rules! graph_tests {
    ($($(#[$attr:meta])* $name:ident: $query:literal $graph:literal;)*) => {
        $(
            #[test]
            $(#[$attr])*
            fn $name() {
                check($query, $graph);
            }
        )*
    };
}

// Small enough for CI (about 20 s in all at -j 2).
graph_tests! {
    tc_ol_cedge: "TC" "OL.cedge";
    tc_cal_cedge: "TC" "cal.cedge";
    tc_tg_cedge: "TC" "TG.cedge";
    tc_wing: "TC" "wing";
    tc_ego_facebook: "TC" "ego-Facebook";
    tc_cti: "TC" "cti";
    tc_delaunay_n16: "TC" "delaunay_n16";
    tc_luxembourg_osm: "TC" "luxembourg_osm";
    sg_ol_cedge: "SG" "OL.cedge";
    sg_cal_cedge: "SG" "cal.cedge";
    sg_tg_cedge: "SG" "TG.cedge";
    sg_wing: "SG" "wing";
    sg_luxembourg_osm: "SG" "luxembourg_osm";
}

// Larger: tens of millions of tuples, 5-30 s each and up to 8 GB of memory
// (`cargo test --release -p fixlog --test real_data -- --ignored`).
graph_tests! {
    #[ignore = "slow"] tc_wiki_vote: "TC" "wiki-Vote";
    #[ignore = "slow"] tc_p2p_gnutella09: "TC" "p2p-Gnutella09";
    #[ignore = "slow"] tc_p2p_gnutella04: "TC" "p2p-Gnutella04";
    #[ignore = "slow"] tc_ca_hepth: "TC" "CA-HepTh";
    #[ignore = "slow"] tc_sf_cedge: "TC" "SF.cedge";
    #[ignore = "slow"] tc_fe_sphere: "TC" "fe_sphere";
    #[ignore = "slow"] sg_cti: "SG" "cti";
    #[ignore = "slow"] sg_delaunay_n16: "SG" "delaunay_n16";
    #[ignore = "slow"] sg_p2p_gnutella09: "SG" "p2p-Gnutella09";
}

#[test]
fn ground_truth_is_read() {
    // Guards the parser above against a silently changed file format.
    assert!(ground_truth("OL.cedge", "TC").0 > 0);
    assert!(ground_truth("OL.cedge", "SG").1 > 0);
}

/// Runs TC of `graph` through the command line on the CPU with `extra` arguments (the
/// program prints the size of `path`); returns the process output.
fn tc_cli(graph: &str, extra: &[&str]) -> std::process::Output {
    query_cli(TC, "path", graph, extra)
}

/// Runs `query` (TC or SG) over `graph` through the command line on the CPU with
/// `extra` arguments, printing the size of `rel`; returns the process output.
fn query_cli(query: &str, rel: &str, graph: &str, extra: &[&str]) -> std::process::Output {
    let file = data_dir()
        .join("graphs")
        .join(format!("{graph}.tsv.gz"))
        .canonicalize()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = query.replace("GRAPH", file.to_str().unwrap()) + &format!(".printsize {rel}\n");
    std::fs::write(dir.path().join("tc.dl"), text).unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .args([
            "run",
            "tc.dl",
            "-D",
            "-",
            "--backend",
            "cpu",
            "-j",
            "2",
            "--quiet",
        ])
        .args(extra)
        .current_dir(dir.path())
        .output()
        .expect("cannot run the fixlog binary")
}

/// TC of ego-Facebook holds 2.5M paths (19 MiB of rows; 41 MiB in use at the peak
/// without a limit); under a limit of 12 MiB it completes by spilling runs to files,
/// with the exact size and iteration count, and --stats says so.
#[test]
fn tc_larger_than_the_memory_limit_spills_to_disk() {
    let (expected_size, expected_iters) = ground_truth("ego-Facebook", "TC");
    let spill_root = tempfile::tempdir().unwrap();
    let out = tc_cli(
        "ego-Facebook",
        &[
            "--memory-limit",
            "12M",
            "--temp-dir",
            spill_root.path().to_str().unwrap(),
            "--stats",
            "json",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("path\t{expected_size}\n")
    );
    let stats: serde_json::Value = serde_json::from_str(stderr.lines().last().unwrap())
        .unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(stats["relations"]["path"], expected_size);
    assert_eq!(stats["strata"][1]["iterations"], expected_iters, "{stats}");
    let memory = &stats["cpu_memory"];
    assert_eq!(memory["limit"], 12 << 20);
    assert!(
        memory["peak_in_use"].as_u64().unwrap() <= 12 << 20,
        "{memory}"
    );
    let spill = &memory["spill"];
    assert_eq!(spill["temp_dir"], spill_root.path().to_str().unwrap());
    assert!(spill["error"].is_null(), "{spill}");
    // The result alone is 19 MiB: most of it was in files at the end.
    assert!(spill["peak_bytes"].as_u64().unwrap() >= 12 << 20, "{spill}");
    assert!(
        spill["written_bytes"].as_u64().unwrap() >= spill["peak_bytes"].as_u64().unwrap(),
        "{spill}"
    );
    // The run's spill directory is gone.
    assert_eq!(std::fs::read_dir(spill_root.path()).unwrap().count(), 0);
}

/// SG of TG.cedge (608,090 tuples, 4.6 MiB of rows) under a limit of 1 MiB: the
/// pipeline's input (each iteration's delta, read in place from its runs, in files
/// too), its batches (bounded by the limit) and the relation's runs all within it, the
/// size and iteration count exact. (Before batches were bounded by the limit and a
/// delta was copied out of its files, this run ended out of memory.)
#[test]
fn sg_larger_than_the_memory_limit_spills_to_disk() {
    let (expected_size, expected_iters) = ground_truth("TG.cedge", "SG");
    let spill_root = tempfile::tempdir().unwrap();
    let root = spill_root.path().to_str().unwrap();
    let args = [
        "--memory-limit",
        "2M",
        "--temp-dir",
        root,
        "--stats",
        "json",
    ];
    let out = query_cli(SG, "sg", "TG.cedge", &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("sg\t{expected_size}\n")
    );
    let stats: serde_json::Value = serde_json::from_str(stderr.lines().last().unwrap())
        .unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(stats["strata"][1]["iterations"], expected_iters, "{stats}");
    let memory = &stats["cpu_memory"];
    assert!(
        memory["peak_in_use"].as_u64().unwrap() <= 2 << 20,
        "{memory}"
    );
    assert!(
        memory["spill"]["peak_bytes"].as_u64().unwrap() >= 2 << 20,
        "{memory}"
    );
    assert_eq!(std::fs::read_dir(spill_root.path()).unwrap().count(), 0);
}

/// The same run with spilling off ends with the clean out-of-memory error naming the
/// relation. (Before the driver kept a rule's earlier pieces when a merge of their
/// results ran out of memory, this run lost tuples and ended "successfully" with
/// 657,121 paths.)
#[test]
fn tc_larger_than_the_memory_limit_without_spilling_is_a_clean_error() {
    let out = tc_cli("ego-Facebook", &["--memory-limit", "12M", "--no-spill"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.starts_with(
            "error: evaluation failed: out of memory: the memory limit of 12.0 MiB would be passed ("
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("; while ") && stderr.contains("`path`"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// A result larger than the memory limit stays in its spill files after the run (on
/// the GPU: comes to the host into spill files, run by run): the database reads the
/// mapped runs (no copy into memory, no merge into one run), and
/// the output written from them is the relation, row for row (checked against the
/// same run without a limit).
#[test]
fn a_spilled_result_is_read_and_written_from_its_file() {
    let (expected_size, _) = ground_truth("ego-Facebook", "TC");
    let file = data_dir()
        .join("graphs")
        .join("ego-Facebook.tsv.gz")
        .canonicalize()
        .unwrap();
    let text = TC.replace("GRAPH", file.to_str().unwrap()) + ".output path\n";
    let program = Fixlog::from_source("tc.dl", &text).unwrap_or_else(|e| panic!("{e}"));
    let spill_root = tempfile::tempdir().unwrap();
    let run = |limit: Option<usize>| {
        program
            .run(&RunOptions {
                facts_dir: Some(data_dir()),
                progress: false,
                memory_limit: limit,
                temp_dir: Some(spill_root.path().to_path_buf()),
                ..support::options(Some(2))
            })
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let limited = run(Some(12 << 20));
    let path = limited.raw("path").unwrap();
    assert_eq!(path.len, expected_size);
    assert!(
        path.rows.in_files(),
        "the result was copied into memory instead of staying in its files"
    );
    let plain = run(None);
    assert!(!plain.raw("path").unwrap().rows.in_files());
    assert_eq!(path, plain.raw("path").unwrap());
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    limited.write_outputs(a.path()).unwrap();
    plain.write_outputs(b.path()).unwrap();
    let text_a = std::fs::read(a.path().join("path.csv")).unwrap();
    assert_eq!(text_a, std::fs::read(b.path().join("path.csv")).unwrap());
    assert_eq!(
        text_a.iter().filter(|&&c| c == b'\n').count(),
        expected_size
    );
    // The library reads the spilled relation tuple by tuple, in output order.
    let (mut n, mut last) = (0, None);
    limited
        .for_each("path", |t| {
            let key = (t[0].clone(), t[1].clone());
            if let (
                Some((fixlog::Datum::Number(x0), fixlog::Datum::Number(y0))),
                (fixlog::Datum::Number(x1), fixlog::Datum::Number(y1)),
            ) = (&last, &key)
            {
                assert!((x0, y0) < (x1, y1));
            }
            last = Some(key);
            n += 1;
        })
        .unwrap();
    assert_eq!(n, expected_size);
    assert!(limited.for_each("nothing", |_| {}).is_err());
}

/// TC of TG.cedge over `number`s (raw order is output order), over negated numbers and
/// over symbols (raw order is not output order: the writer sorts): as a program
/// writing `path.csv`.
fn tc_variants(graph: &str) -> Vec<(&'static str, String)> {
    let file = data_dir()
        .join("graphs")
        .join(format!("{graph}.tsv.gz"))
        .canonicalize()
        .unwrap();
    let input = format!(
        ".decl e0(x: number, y: number)\n.input e0(filename=\"{}\")\n.output path\n",
        file.display()
    );
    let closure = "path(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n";
    vec![
        (
            "number",
            format!("{input}.decl edge(x: number, y: number)\n.decl path(x: number, y: number)\nedge(x, y) :- e0(x, y).\n{closure}"),
        ),
        (
            "negative",
            format!("{input}.decl edge(x: number, y: number)\n.decl path(x: number, y: number)\nedge(0 - x, 0 - y) :- e0(x, y).\n{closure}"),
        ),
        (
            "symbol",
            format!("{input}.decl edge(x: symbol, y: symbol)\n.decl path(x: symbol, y: symbol)\nedge(to_string(x), to_string(y)) :- e0(x, y).\n{closure}"),
        ),
    ]
}

/// Writing an output several times larger than `--memory-limit` stays within the
/// limit and writes exactly what the run without a limit writes (on the suites'
/// backend: a GPU's result comes to the host into spill files). TC of TG.cedge has
/// 481,121 paths: 3.7 MiB of rows (and 5-9 MiB of text) against a limit of 1 MiB.
/// The relation's runs are written from where they are (memory or spill files),
/// merged part by part; where the output order is not the raw order (negative
/// numbers, symbols) the writer sorts through files of its own. `--stats json` shows
/// the CPU budget's peak during the run and during the writing, both within the limit.
#[test]
fn an_output_larger_than_the_memory_limit_is_written_within_it() {
    let (expected_size, _) = ground_truth("TG.cedge", "TC");
    let limit: u64 = 1 << 20;
    assert!(expected_size as u64 * 8 > 3 * limit);
    for (name, program) in tc_variants("TG.cedge") {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tc.dl"), &program).unwrap();
        let spill_root = tempfile::tempdir().unwrap();
        let run = |out: &str, extra: &[&str]| {
            std::fs::create_dir(dir.path().join(out)).unwrap();
            let output = std::process::Command::new(env!("CARGO_BIN_EXE_fixlog"))
                .args([
                    "run",
                    "tc.dl",
                    "-D",
                    out,
                    "--backend",
                    support::backend_arg(),
                ])
                .args(["-j", "2"])
                .args(["--quiet", "--stats", "json"])
                .args(extra)
                .current_dir(dir.path())
                .output()
                .expect("cannot run the fixlog binary");
            let stderr = String::from_utf8_lossy(&output.stderr).to_string();
            assert!(output.status.success(), "{name}: {stderr}");
            let stats: serde_json::Value = serde_json::from_str(stderr.lines().last().unwrap())
                .unwrap_or_else(|e| panic!("{name}: {e}: {stderr}"));
            let text = std::fs::read(dir.path().join(out).join("path.csv")).unwrap();
            (text, stats)
        };
        let (limited, stats) = run(
            "limited",
            &[
                "--memory-limit",
                &limit.to_string(),
                "--temp-dir",
                spill_root.path().to_str().unwrap(),
            ],
        );
        let (plain, plain_stats) = run("plain", &[]);
        assert!(limited == plain, "{name}: the outputs differ");
        assert_eq!(
            limited.iter().filter(|&&c| c == b'\n').count(),
            expected_size,
            "{name}"
        );
        assert_eq!(stats["relations"]["path"], expected_size, "{name}");
        // Within the limit while evaluating, spilling runs ...
        let memory = &stats["cpu_memory"];
        assert_eq!(memory["limit"], limit, "{name}");
        assert!(
            memory["peak_in_use"].as_u64().unwrap() <= limit,
            "{name}: {memory}"
        );
        let spill = &memory["spill"];
        assert!(spill["error"].is_null(), "{name}: {spill}");
        assert!(
            spill["peak_bytes"].as_u64().unwrap() > limit,
            "{name}: {spill}"
        );
        // ... and while writing, with the writer's buffers charged to the same budget.
        let output = &stats["output"];
        let peak = output["peak_in_use"].as_u64().unwrap();
        assert!(peak > 0 && peak <= limit, "{name}: {output}");
        assert_eq!(output["limit"], limit, "{name}");
        let sorted = output["sort_files"].as_u64().unwrap();
        if name == "number" {
            assert_eq!(sorted, 0, "{name}: raw order is output order: {output}");
        } else {
            assert!(sorted > 1, "{name}: sorted through files: {output}");
        }
        // Without a limit nothing spills and the output is sorted in memory.
        assert_eq!(plain_stats["output"]["sort_files"], 0, "{name}");
        // Every spill directory is gone.
        assert_eq!(
            std::fs::read_dir(spill_root.path()).unwrap().count(),
            0,
            "{name}"
        );
    }
}
