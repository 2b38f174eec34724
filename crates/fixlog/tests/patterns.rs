//! Graph patterns on real graphs — triangles, 4-cliques, 4-cycles — counted by Datalog
//! rules with cyclic bodies (worst-case-optimal joins, issue 11) and checked against the
//! published figures in `shared/data/patterns/MANIFEST.md`.
//!
//! The counts there are UNIQ (each subgraph once; EMB / |Aut|). The rules below count
//! each subgraph once by ordering its nodes: a triangle as `x < y < z`, a 4-clique as
//! `a < b < c < d`, a 4-cycle from its smallest node `a` with neighbours `b < d`. Edges
//! are read as undirected (both directions, self loops dropped). Every pattern runs
//! with joins forced worst-case-optimal and forced pairwise, and both must give the
//! published count.
//!
//! The data directory is `$CARGO_MANIFEST_DIR/../../../shared/data`, or `$FIXLOG_DATA`;
//! a missing file is a failure, not a skip.

mod support;

use fixlog::{Datum, Fixlog, JoinStrategy, PlanOptions};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

const PATTERNS: &str = "
.decl edge(x: number, y: number)
.decl e(x: number, y: number)
e(x, y) :- edge(x, y), x != y.
e(y, x) :- edge(x, y), x != y.
.decl tri(x: number, y: number, z: number)
tri(x, y, z) :- e(x, y), e(y, z), e(x, z), x < y, y < z.
.decl clique4(a: number, b: number, c: number, d: number)
clique4(a, b, c, d) :- e(a, b), e(a, c), e(a, d), e(b, c), e(b, d), e(c, d), a < b, b < c, c < d.
.decl cycle4(a: number, b: number, c: number, d: number)
cycle4(a, b, c, d) :- e(a, b), e(b, c), e(c, d), e(d, a), a < b, a < c, b < d.
";

fn patterns_dir() -> PathBuf {
    let dir = match std::env::var_os("FIXLOG_DATA") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    };
    let dir = dir.join("patterns");
    assert!(
        dir.join("MANIFEST.md").is_file(),
        "pattern data not found: looked for {}/MANIFEST.md (set FIXLOG_DATA)",
        dir.display()
    );
    dir
}

/// The edges of a gzipped `u<TAB>v` file (`#` lines are comments).
fn read_edges(file: &str) -> Vec<Vec<Datum>> {
    let path = patterns_dir().join(file);
    let f = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut edges = Vec::new();
    for line in BufReader::new(flate2::read::GzDecoder::new(f)).lines() {
        let line = line.unwrap();
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut it = line.split_whitespace().map(|t| t.parse::<i32>().unwrap());
        edges.push(vec![
            Datum::Number(it.next().unwrap()),
            Datum::Number(it.next().unwrap()),
        ]);
    }
    edges
}

/// Counts `relations` of [`PATTERNS`] on `file` with the given join strategy.
fn counts(file: &str, join: JoinStrategy, relations: &[&str]) -> Vec<usize> {
    // Only the rules the counted relations need (and `e`).
    let mut program = Fixlog::from_source("patterns.dl", PATTERNS).unwrap();
    program.set_plan_options(&PlanOptions { join }).unwrap();
    let intersects = program.plan().strata.iter().any(|s| {
        s.init.iter().any(|r| {
            r.ops
                .iter()
                .any(|op| matches!(op, fixlog_plan::Op::Intersect { .. }))
        })
    });
    assert_eq!(intersects, join != JoinStrategy::Pairwise, "{join:?}");
    program.insert("edge", read_edges(file)).unwrap();
    let db = program.run(&support::options(None)).unwrap();
    relations
        .iter()
        .map(|r| db.len(r).unwrap_or_else(|| panic!("no relation {r}")))
        .collect()
}

#[test]
fn citeseer_triangles_4cliques_4cycles_match_g2miner() {
    // G2Miner's README (UNIQ): triangle 1166, 4-cycle 6059; 4-clique 255 (MANIFEST).
    let file = "g2miner_citeseer/citeseer.edges.tsv.gz";
    for join in [
        JoinStrategy::Auto,
        JoinStrategy::Wcoj,
        JoinStrategy::Pairwise,
    ] {
        assert_eq!(
            counts(file, join, &["e", "tri", "clique4", "cycle4"]),
            vec![9072, 1166, 255, 6059],
            "{join:?}"
        );
    }
}

#[test]
fn oregon_triangles_and_4cliques_match_snap() {
    // SNAP oregon1_010331: 22002 undirected edges, 17144 triangles (= SNAP), 26610
    // 4-cliques (MANIFEST, computed with igraph, DuckDB and Kùzu).
    let file = "snap/oregon1_010331.txt.gz";
    assert_eq!(
        counts(file, JoinStrategy::Auto, &["e", "tri", "clique4"]),
        vec![2 * 22002, 17144, 26610]
    );
}
