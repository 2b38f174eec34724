//! `fixlog match` counts on the shared pattern-benchmark graphs, checked against the
//! counts recorded in `shared/data/patterns` (the MANIFEST's tables, Sun & Luo's
//! expected output, and the igraph VF2 counts in `computed_counts`), never against
//! Fixlog's own output. All counts here are EMB (injective maps, `iso`); UNIQ figures
//! are multiplied by the pattern's automorphism count.
//!
//! The data directory is `$CARGO_MANIFEST_DIR/../../../shared/data`, or `$FIXLOG_DATA`;
//! a missing directory is a failure, not a skip. Every query with a recorded count runs
//! (800 HPRD queries, 23 WikiVote queries): a few seconds together.

use fixlog::graph::{Graph, GraphBuilder, LoadOptions, Pattern, Semantics};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn patterns_dir() -> PathBuf {
    let dir = match std::env::var_os("FIXLOG_DATA") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    };
    let patterns = dir.join("patterns");
    assert!(
        patterns.join("MANIFEST.md").is_file(),
        "pattern data not found: looked for {}/MANIFEST.md (set FIXLOG_DATA to the \
         directory that holds patterns/)",
        patterns.display()
    );
    patterns
}

fn text(path: &Path) -> String {
    fixlog_match::load::read_text(path).unwrap_or_else(|e| panic!("{e}"))
}

/// The rows of the MANIFEST table whose header line starts with `header`: cells trimmed.
fn manifest_table(header: &str) -> Vec<Vec<String>> {
    let manifest = text(&patterns_dir().join("MANIFEST.md"));
    let mut lines = manifest.lines().skip_while(|l| !l.starts_with(header));
    assert!(lines.next().is_some(), "no table `{header}` in MANIFEST.md");
    lines
        .skip(1) // |---|
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// The leading integer of a cell (`255 (computed here)`, `727044 (= SNAP)`).
fn number(cell: &str) -> u64 {
    let digits: String = cell.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("`{cell}` is not a count"))
}

fn count(graph: &Graph, pattern: &str) -> u64 {
    let pattern = Pattern::parse(pattern).unwrap_or_else(|e| panic!("{e}"));
    if std::env::var("FIXLOG_TEST_BACKEND").as_deref() == Ok("cuda") {
        return gpu_count(graph, &pattern);
    }
    graph.count_with(&pattern, Semantics::Iso).unwrap()
}

/// The count on the GPU (`FIXLOG_TEST_BACKEND=cuda`, on the GPU machine): one matcher
/// per test thread, so each graph is uploaded once for all its patterns.
#[cfg(feature = "cuda")]
fn gpu_count(graph: &Graph, pattern: &Pattern) -> u64 {
    use fixlog::graph::gpu::GpuMatcher;
    thread_local! {
        static GPU: GpuMatcher = GpuMatcher::new(None).unwrap_or_else(|e| panic!("{e}"));
    }
    GPU.with(|gpu| {
        gpu.count_with(graph, pattern, Semantics::Iso)
            .unwrap_or_else(|e| panic!("{e}"))
    })
}

#[cfg(not(feature = "cuda"))]
fn gpu_count(_: &Graph, _: &Pattern) -> u64 {
    panic!("FIXLOG_TEST_BACKEND=cuda in a build without the cuda feature")
}

const TRIANGLE: &str = "MATCH (a)--(b)--(c)--(a) RETURN count(*)";
const FOUR_CLIQUE: &str = "MATCH (a)--(b)--(c)--(a), (a)--(d), (b)--(d), (c)--(d) RETURN count(*)";
const FOUR_CLIQUE_ONCE: &str = "MATCH (a)--(b)--(c)--(a), (a)--(d), (b)--(d), (c)--(d) \
     WHERE id(a) < id(b) AND id(b) < id(c) AND id(c) < id(d) RETURN count(*)";
const TRIANGLE_ONCE: &str =
    "MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)";

#[test]
fn citeseer_counts_match_g2miner_table() {
    let dir = patterns_dir().join("g2miner_citeseer");
    let graph = Graph::load(
        &dir.join("citeseer.edges.tsv.gz"),
        None,
        &LoadOptions { undirected: true },
    )
    .unwrap();
    let patterns: HashMap<&str, &str> = [
        ("triangle", TRIANGLE),
        ("4-cycle", "MATCH (a)--(b)--(c)--(d)--(a) RETURN count(*)"),
        (
            "diamond",
            "MATCH (a)--(b)--(c)--(d)--(a), (a)--(c) RETURN count(*)",
        ),
        ("4-clique", FOUR_CLIQUE),
        (
            "tailed triangle",
            "MATCH (a)--(b)--(c)--(a), (c)--(d) RETURN count(*)",
        ),
        (
            "house",
            "MATCH (a)--(b)--(c)--(d)--(a), (a)--(e)--(b) RETURN count(*)",
        ),
        (
            "pentagon",
            "MATCH (a)--(b)--(c)--(d)--(e)--(a) RETURN count(*)",
        ),
    ]
    .into_iter()
    .collect();
    let rows = manifest_table("| pattern | UNIQ");
    assert_eq!(rows.len(), patterns.len(), "citeseer table rows");
    for row in rows {
        let (name, uniq, emb, aut) = (&row[0], number(&row[1]), number(&row[2]), number(&row[3]));
        assert_eq!(uniq * aut, emb, "the table's own arithmetic for {name}");
        let pattern = patterns
            .get(name.as_str())
            .unwrap_or_else(|| panic!("no pattern for `{name}`"));
        assert_eq!(count(&graph, pattern), emb, "citeseer {name} (EMB)");
    }
}

/// Sun & Luo `.graph`: `t N M`, `v id label degree`, `e u v [label]`; labels become `L<n>`.
fn sunluo_graph(text: &str) -> Graph {
    let mut builder = GraphBuilder::new(true);
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.first() {
            Some(&"v") => {
                let id = f[1].parse().unwrap();
                builder.add_node(id);
                builder.add_label(id, &format!("L{}", f[2]));
            }
            Some(&"e") => builder.add_edge(f[1].parse().unwrap(), f[2].parse().unwrap(), None),
            _ => {}
        }
    }
    builder.build().unwrap()
}

/// A Sun & Luo (or GSI) query graph as a pattern: `(n0:L9), ..., (n0)--(n1), ...`.
fn query_pattern(text: &str) -> String {
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.first() {
            Some(&"v") => nodes.push(format!("(n{}:L{})", f[1], f[2])),
            Some(&"e") => {
                let (u, v): (u32, u32) = (f[1].parse().unwrap(), f[2].parse().unwrap());
                let (u, v) = (u.min(v), u.max(v));
                let edge = format!("(n{u})--(n{v})");
                if !edges.contains(&edge) {
                    edges.push(edge);
                }
            }
            _ => {}
        }
    }
    nodes.extend(edges);
    format!("MATCH {} RETURN count(*)", nodes.join(", "))
}

#[test]
fn yeast_and_hprd_triangles_and_four_cliques() {
    let rows = manifest_table("| file | source | |V| | |E| | labels | triangles");
    for name in ["yeast", "hprd"] {
        let row = rows
            .iter()
            .find(|r| r[0] == format!("data_graph/{name}.graph.gz"))
            .unwrap_or_else(|| panic!("no MANIFEST row for {name}"));
        let (triangles, cliques) = (number(&row[5]), number(&row[6]));
        let graph = sunluo_graph(&text(
            &patterns_dir().join(format!("sunluo/data_graph/{name}.graph.gz")),
        ));
        assert_eq!(graph.node_count() as u64, number(&row[2]), "{name} nodes");
        assert_eq!(
            count(&graph, TRIANGLE),
            triangles * 6,
            "{name} triangles (EMB)"
        );
        assert_eq!(
            count(&graph, FOUR_CLIQUE),
            cliques * 24,
            "{name} 4-cliques (EMB)"
        );
        assert_eq!(
            count(&graph, TRIANGLE_ONCE),
            triangles,
            "{name} triangles (UNIQ)"
        );
    }
}

#[test]
fn snap_graphs_triangles_and_four_cliques() {
    let rows = manifest_table("| file | source | notes |");
    assert_eq!(rows.len(), 3);
    for row in rows {
        let graph = Graph::load(
            &patterns_dir().join("snap").join(&row[0]),
            None,
            &LoadOptions { undirected: true },
        )
        .unwrap();
        // (The header's `|V|` and `|E|` hold bars of their own; the rows do not.)
        let (triangles, cliques) = (number(&row[5]), number(&row[6]));
        assert_eq!(
            count(&graph, TRIANGLE_ONCE),
            triangles,
            "{} triangles",
            row[0]
        );
        assert_eq!(
            count(&graph, FOUR_CLIQUE_ONCE),
            cliques,
            "{} 4-cliques",
            row[0]
        );
        if row[0] != "email-Enron.txt.gz" {
            assert_eq!(
                count(&graph, TRIANGLE),
                triangles * 6,
                "{} triangles (EMB)",
                row[0]
            );
        }
    }
}

/// The files of a `.tar.gz` by path (plain ustar: 512-byte headers, sizes in octal).
fn tar_files(path: &Path) -> HashMap<String, String> {
    use std::io::Read;
    let mut raw = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut raw)
        .unwrap();
    let mut files = HashMap::new();
    let mut at = 0;
    while at + 512 <= raw.len() && raw[at] != 0 {
        let header = &raw[at..at + 512];
        let name_end = header[..100].iter().position(|&b| b == 0).unwrap_or(100);
        let name = String::from_utf8_lossy(&header[..name_end]).into_owned();
        let size_text = String::from_utf8_lossy(&header[124..136]);
        let size =
            usize::from_str_radix(size_text.trim_matches(|c: char| c == '\0' || c == ' '), 8)
                .unwrap_or(0);
        let body = &raw[at + 512..at + 512 + size];
        if header[156] == b'0' || header[156] == 0 {
            files.insert(name, String::from_utf8_lossy(body).into_owned());
        }
        at += 512 + size.div_ceil(512) * 512;
    }
    files
}

/// The one file of `files` whose path ends with `/suffix`.
fn file_ending<'a>(files: &'a HashMap<String, String>, suffix: &str) -> &'a str {
    let wanted = format!("/{suffix}");
    let mut found = files.iter().filter(|(p, _)| p.ends_with(&wanted));
    match (found.next(), found.next()) {
        (Some((_, text)), None) => text,
        _ => panic!("not exactly one file ending with {wanted} in the archive"),
    }
}

/// `query_x_y:COUNT` lines (skipping `#` comments and timeouts).
fn expected_counts(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (name, value) = l.split_once(':')?;
            let value: String = value.chars().take_while(|c| c.is_ascii_digit()).collect();
            Some((name.trim().to_string(), value.parse().ok()?))
        })
        .collect()
}

/// Runs the HPRD queries of archive `queries` named in `expected` (the first `take` of
/// those whose name starts with `prefix`) and compares every count.
fn check_hprd(queries: &str, expected_file: &str, prefix: &str, take: usize) {
    let dir = patterns_dir();
    let graph = sunluo_graph(&text(&dir.join("sunluo/data_graph/hprd.graph.gz")));
    let queries = tar_files(&dir.join(queries));
    let expected = expected_counts(&text(&dir.join(expected_file)));
    let mut checked = 0;
    for (name, want) in expected
        .iter()
        .filter(|(n, _)| n.starts_with(prefix))
        .take(take)
    {
        let query = file_ending(&queries, &format!("{name}.graph"));
        assert_eq!(count(&graph, &query_pattern(query)), *want, "HPRD {name}");
        checked += 1;
    }
    assert!(
        checked >= take.min(190),
        "only {checked} HPRD queries checked"
    );
}

#[test]
fn hprd_dense16_queries_match_sun_and_luo_expected_output() {
    // The upstream test's own queries (openGraphMatching's dense-16 set differs).
    check_hprd(
        "sunluo_validate/hprd_validate.tar.gz",
        "sunluo_validate/hprd_dense16_expected_output.res",
        "query_dense_16_",
        200,
    );
}

#[test]
fn hprd_small_queries_match_igraph_counts() {
    for prefix in ["query_dense_4_", "query_dense_8_", "query_sparse_8_"] {
        check_hprd(
            "sunluo/query_sets/hprd_queries.tar.gz",
            "sunluo/computed_counts/hprd_igraph_vf2.res",
            prefix,
            200,
        );
    }
}

/// GSI format: `v id label`, `e u v label` (edge labels all the same here).
fn gsi_graph(text: &str) -> Graph {
    let mut builder = GraphBuilder::new(true);
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.first() {
            Some(&"v") => {
                let id = f[1].parse().unwrap();
                builder.add_node(id);
                builder.add_label(id, &format!("L{}", f[2]));
            }
            Some(&"e") => builder.add_edge(f[1].parse().unwrap(), f[2].parse().unwrap(), None),
            _ => {}
        }
    }
    builder.build().unwrap()
}

fn check_wiki_vote(names: &[&str]) {
    let dir = patterns_dir().join("stmatch");
    let graph = gsi_graph(&text(&dir.join("gsi_WikiVote_labeled.g.gz")));
    assert_eq!(graph.node_count(), 7115);
    let queries = tar_files(&dir.join("stmatch_q1-q24_patterns.tar.gz"));
    let expected: HashMap<String, u64> = expected_counts(&text(
        &dir.join("computed_counts_WikiVote_labeled_q1-q24.txt"),
    ))
    .into_iter()
    .collect();
    for name in names {
        // The archive holds three formats under the same names; the GSI ones have labels.
        let query = file_ending(&queries, &format!("gsi_format/{name}.g"));
        let want = expected[&format!("{name}.g")];
        assert_eq!(
            count(&graph, &query_pattern(query)),
            want,
            "WikiVote {name}"
        );
    }
}

#[test]
fn wiki_vote_labelled_queries_match_igraph_counts() {
    // Every query with a recorded count (q10 timed out in igraph).
    let names: Vec<String> = (1..=24)
        .filter(|&q| q != 10)
        .map(|q| format!("q{q}"))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    check_wiki_vote(&names);
}
