//! Triangle and 4-clique counting through the library API, with joins forced
//! worst-case-optimal (`--join wcoj`) and pairwise (`--join pairwise`): prints a table
//! (a benchmark to read, not a timed test). Results are in `docs/wcoj.md`.
//!
//! ```text
//! cargo run --release --example wcoj_bench [-- GRAPH...]
//! ```
//!
//! GRAPH is a gzipped edge list `u<TAB>v` (`#` lines are comments) under
//! `shared/data` (`$FIXLOG_DATA`); edges are read as undirected (both directions, self
//! loops dropped). Without arguments, a default set of graphs. `FIXLOG_BENCH_PAIRWISE_
//! LIMIT_S` (default 300): a pairwise run is skipped for the larger patterns of a graph
//! once a smaller one took longer than this.

use fixlog::{Datum, Fixlog, JoinStrategy, PlanOptions, RunOptions};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::time::Instant;

const PROGRAM: &str = "
.decl edge(x: number, y: number)
.decl e(x: number, y: number)
e(x, y) :- edge(x, y), x != y.
e(y, x) :- edge(x, y), x != y.
";

const TRIANGLE: &str = "
.decl tri(x: number, y: number, z: number)
tri(x, y, z) :- e(x, y), e(y, z), e(x, z), x < y, y < z.
";

const CLIQUE4: &str = "
.decl clique4(a: number, b: number, c: number, d: number)
clique4(a, b, c, d) :- e(a, b), e(a, c), e(a, d), e(b, c), e(b, d), e(c, d), a < b, b < c, c < d.
";

const DEFAULT_GRAPHS: &[&str] = &[
    "patterns/g2miner_citeseer/citeseer.edges.tsv.gz",
    "patterns/snap/oregon1_010331.txt.gz",
    "patterns/snap/email-Eu-core.txt.gz",
    "graphs/wiki-Vote.tsv.gz",
    "patterns/snap/email-Enron.txt.gz",
    "graphs/ego-Facebook.tsv.gz",
];

fn data_dir() -> PathBuf {
    match std::env::var_os("FIXLOG_DATA") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    }
}

fn read_edges(path: &PathBuf) -> Result<Vec<Vec<Datum>>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut edges = Vec::new();
    for line in BufReader::new(flate2::read::GzDecoder::new(f)).lines() {
        let line = line.map_err(|e| e.to_string())?;
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut it = line.split_whitespace().map(|t| t.parse::<i32>());
        match (it.next(), it.next()) {
            (Some(Ok(u)), Some(Ok(v))) => edges.push(vec![Datum::Number(u), Datum::Number(v)]),
            _ => return Err(format!("{}: bad line {line:?}", path.display())),
        }
    }
    Ok(edges)
}

/// (count, seconds) of `relation` derived by `rules` under `join`.
fn count(
    edges: &[Vec<Datum>],
    rules: &str,
    relation: &str,
    join: JoinStrategy,
) -> Result<(usize, f64), String> {
    let mut program =
        Fixlog::from_source("bench.dl", &format!("{PROGRAM}{rules}")).map_err(|e| e.to_string())?;
    program
        .set_plan_options(&PlanOptions { join })
        .map_err(|e| e.to_string())?;
    program
        .insert("edge", edges.iter().cloned())
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    let db = program
        .run(&RunOptions {
            backend: fixlog::BackendKind::Cpu,
            outputs_only: true,
            ..RunOptions::default()
        })
        .map_err(|e| e.to_string())?;
    let seconds = start.elapsed().as_secs_f64();
    let n = db.len(relation).ok_or("no such relation")?;
    Ok((n, seconds))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let graphs: Vec<String> = if args.is_empty() {
        DEFAULT_GRAPHS.iter().map(|s| s.to_string()).collect()
    } else {
        args
    };
    let limit: f64 = std::env::var("FIXLOG_BENCH_PAIRWISE_LIMIT_S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300.0);
    println!("| graph | undirected edges | pattern | count | wcoj (s) | pairwise (s) | speedup |");
    println!("|---|---|---|---|---|---|---|");
    for g in graphs {
        let path = data_dir().join(&g);
        let edges = match read_edges(&path) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("skipping {g}: {e}");
                continue;
            }
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut undirected = std::collections::BTreeSet::new();
        for e in &edges {
            if let [Datum::Number(u), Datum::Number(v)] = e.as_slice() {
                if u != v {
                    undirected.insert((*u.min(v), *u.max(v)));
                }
            }
        }
        let mut pairwise_ok = true;
        for (pattern, rules, relation) in [
            ("triangle", TRIANGLE, "tri"),
            ("4-clique", CLIQUE4, "clique4"),
        ] {
            let wcoj = count(&edges, rules, relation, JoinStrategy::Wcoj);
            let pairwise = if pairwise_ok {
                Some(count(&edges, rules, relation, JoinStrategy::Pairwise))
            } else {
                None
            };
            let (n, tw) = match wcoj {
                Ok(x) => x,
                Err(e) => {
                    eprintln!("{g} {pattern} wcoj: {e}");
                    continue;
                }
            };
            let (tp, speedup) = match pairwise {
                Some(Ok((np, tp))) => {
                    if np != n {
                        eprintln!("{g} {pattern}: wcoj counted {n}, pairwise {np}");
                    }
                    pairwise_ok = tp <= limit;
                    (format!("{tp:.3}"), format!("{:.1}×", tp / tw.max(1e-9)))
                }
                Some(Err(e)) => {
                    eprintln!("{g} {pattern} pairwise: {e}");
                    ("error".into(), "—".into())
                }
                None => ("skipped".into(), "—".into()),
            };
            println!(
                "| {name} | {} | {pattern} | {n} | {tw:.3} | {tp} | {speedup} |",
                undirected.len()
            );
        }
    }
}
