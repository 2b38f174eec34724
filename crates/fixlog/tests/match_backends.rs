//! `fixlog match` on the GPU against the CPU matcher: random graphs (directed and not,
//! typed edges, labels, self-loops, hubs) and random patterns (directions, types,
//! labels, `WHERE` id comparisons and label tests, counts, rows, `LIMIT`), under both
//! semantics; counts must be equal and rows equal in the same order.
//!
//! The GPU runs on the GPU machine (`FIXLOG_TEST_BACKEND=cuda`, see `scripts/gpu.sh`).
//! Elsewhere there is no usable GPU, and the test checks that asking for one is the
//! clean "no usable GPU" error of `--backend cuda`, not a crash.

use fixlog::graph::{Graph, LoadOptions, Pattern, Semantics};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Edges and node labels as the loader reads them.
fn random_graph(rng: &mut Rng) -> (String, String) {
    let n = 2 + rng.below(40);
    let m = rng.below(4 * n);
    let typed = rng.chance(30);
    let mut edges = String::new();
    // A hub now and then: skewed degrees exercise the warp's stride and the chunking.
    let hub = rng.chance(30).then(|| rng.below(n));
    for _ in 0..m {
        let a = match hub {
            Some(h) if rng.chance(40) => h,
            _ => rng.below(n),
        };
        let b = if rng.chance(5) { a } else { rng.below(n) };
        if typed && rng.chance(70) {
            let t = if rng.chance(50) { "T" } else { "U" };
            edges.push_str(&format!("{a}\t{b}\t{t}\n"));
        } else {
            edges.push_str(&format!("{a}\t{b}\n"));
        }
    }
    let mut nodes = String::new();
    for v in 0..n {
        if rng.chance(40) {
            let l = if rng.chance(50) { "A" } else { "A,B" };
            nodes.push_str(&format!("{v}\t{l}\n"));
        }
    }
    (edges, nodes)
}

fn random_pattern(rng: &mut Rng) -> String {
    const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];
    let k = 1 + rng.below(5) as usize;
    let mut paths = Vec::new();
    let mut labelled = [false; 5];
    let node = |rng: &mut Rng, i: usize, labelled: &mut [bool; 5]| {
        if !labelled[i] && rng.chance(20) {
            labelled[i] = true;
            format!("({}:A)", NAMES[i])
        } else {
            format!("({})", NAMES[i])
        }
    };
    // Connected most of the time: a random tree, then extra edges (cycles).
    for i in 1..k {
        let j = if rng.chance(90) {
            rng.below(i as u64) as usize
        } else {
            i
        };
        if j == i {
            paths.push(node(rng, i, &mut labelled));
            continue;
        }
        let t = if rng.chance(20) { "[:T]" } else { "" };
        let rel = match rng.below(3) {
            0 => format!("-{t}->"),
            1 => format!("<-{t}-"),
            _ => format!("-{t}-"),
        };
        let (l, r) = (node(rng, j, &mut labelled), node(rng, i, &mut labelled));
        paths.push(format!("{l}{rel}{r}"));
    }
    for _ in 0..rng.below(3) {
        let (x, y) = (rng.below(k as u64) as usize, rng.below(k as u64) as usize);
        let (l, r) = (node(rng, x, &mut labelled), node(rng, y, &mut labelled));
        paths.push(format!("{l}--{r}"));
    }
    if paths.is_empty() {
        paths.push(node(rng, 0, &mut labelled));
    }
    let mut conditions = Vec::new();
    for _ in 0..rng.below(3) {
        let (x, y) = (
            NAMES[rng.below(k as u64) as usize],
            NAMES[rng.below(k as u64) as usize],
        );
        conditions.push(match rng.below(6) {
            0 => format!("id({x}) < id({y})"),
            1 => format!("id({x}) <= id({y})"),
            2 => format!("id({x}) <> id({y})"),
            3 => format!("id({x}) > {}", rng.below(20)),
            4 => format!("{x}:B"),
            _ => format!("id({x}) = id({y})"),
        });
    }
    let filter = if conditions.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conditions.join(" AND "))
    };
    let output = if rng.chance(50) {
        "count(*)".to_string()
    } else {
        let cols: Vec<&str> = (0..k)
            .filter(|_| rng.chance(60))
            .map(|i| NAMES[i])
            .collect();
        if cols.is_empty() {
            NAMES[0].to_string()
        } else {
            cols.join(", ")
        }
    };
    let limit = if rng.chance(20) {
        format!(" LIMIT {}", rng.below(10))
    } else {
        String::new()
    };
    format!("MATCH {}{filter} RETURN {output}{limit}", paths.join(", "))
}

fn on_gpu() -> bool {
    std::env::var("FIXLOG_TEST_BACKEND").as_deref() == Ok("cuda")
}

#[cfg(feature = "cuda")]
#[test]
fn the_gpu_matches_as_the_cpu_does() {
    use fixlog::graph::gpu::GpuMatcher;
    if !on_gpu() {
        match GpuMatcher::new(None) {
            Err(fixlog::Error::NoGpu(why)) => assert!(!why.is_empty()),
            Err(e) => panic!("expected the no-GPU error, got: {e}"),
            // A GPU where none was asked for: the differential below runs with
            // FIXLOG_TEST_BACKEND=cuda.
            Ok(_) => {}
        }
        return;
    }
    let gpu = GpuMatcher::new(None).unwrap_or_else(|e| panic!("{e}"));
    let cases: u64 = std::env::var("FIXLOG_MATCH_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut nonzero = 0;
    for case in 0..cases {
        let (edges, nodes) = random_graph(&mut rng);
        let undirected = rng.chance(50);
        let graph = Graph::from_text(&edges, Some(&nodes), &LoadOptions { undirected })
            .unwrap_or_else(|e| panic!("{e}"));
        for _ in 0..4 {
            let text = random_pattern(&mut rng);
            let Ok(pattern) = Pattern::parse(&text) else {
                continue;
            };
            for semantics in [Semantics::Iso, Semantics::Homo] {
                let context = || {
                    format!("case {case}, {semantics:?}, undirected {undirected}\n{text}\nedges:\n{edges}nodes:\n{nodes}")
                };
                let want = graph.count_with(&pattern, semantics);
                let got = gpu
                    .count_with(&graph, &pattern, semantics)
                    .unwrap_or_else(|e| panic!("{e}\n{}", context()));
                assert_eq!(got, want, "count\n{}", context());
                nonzero += (want > 0) as u32;
                let mut want_rows = Vec::new();
                graph.for_each_row(&pattern, semantics, |r| {
                    want_rows.push(r.to_vec());
                    true
                });
                let mut got_rows = Vec::new();
                gpu.for_each_row(&graph, &pattern, semantics, |r| {
                    got_rows.push(r.to_vec());
                    true
                })
                .unwrap_or_else(|e| panic!("{e}\n{}", context()));
                assert_eq!(got_rows, want_rows, "rows\n{}", context());
            }
        }
    }
    assert!(nonzero > 100, "only {nonzero} patterns matched anything");

    // A pattern with more nodes than the GPU matcher takes is an error naming the
    // limit (never a wrong answer); `--backend auto` gives such patterns to the CPU.
    let graph = Graph::from_text("1\t2\n", None, &LoadOptions { undirected: true }).unwrap();
    let nodes: Vec<String> = (0..40).map(|i| format!("(n{i})")).collect();
    let pattern = Pattern::parse(&format!("MATCH {} RETURN count(*)", nodes.join(", "))).unwrap();
    let err = gpu
        .count_with(&graph, &pattern, Semantics::Homo)
        .expect_err("40 pattern nodes should not run on the GPU matcher");
    assert!(err.to_string().contains("at most 32"), "{err}");
}

/// Symmetry-broken triangles, 4-cliques, 4-cycles and paths, which the CPU counts on the
/// degree-ordered copy of the graph where that cannot change the count: the GPU's counts
/// (in id order) equal the CPU's, also when counts and listings alternate on one
/// `GpuMatcher`.
#[cfg(feature = "cuda")]
#[test]
fn the_gpu_counts_in_degree_order_as_the_cpu_does() {
    use fixlog::graph::gpu::GpuMatcher;
    if !on_gpu() {
        return;
    }
    let gpu = GpuMatcher::new(None).unwrap_or_else(|e| panic!("{e}"));
    let patterns = [
        "MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)",
        "MATCH (a)--(b)--(c)--(a), (d)--(a), (d)--(b), (d)--(c) WHERE id(a) < id(b) \
         AND id(b) < id(c) AND id(c) < id(d) RETURN count(*)",
        "MATCH (a)--(b)--(c)--(d)--(a) WHERE id(a) < id(b) AND id(a) < id(c) AND id(a) < id(d) \
         AND id(b) < id(d) RETURN count(*)",
        "MATCH (a)--(b)--(c) WHERE id(a) < id(c) RETURN count(*)",
        "MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) RETURN count(*)",
    ];
    let mut rng = Rng(0x5eed_0de9);
    for case in 0..300 {
        let (edges, nodes) = random_graph(&mut rng);
        let graph = Graph::from_text(&edges, Some(&nodes), &LoadOptions { undirected: true })
            .unwrap_or_else(|e| panic!("{e}"));
        for text in patterns {
            let pattern = Pattern::parse(text).unwrap();
            let id_order = fixlog_match::exec::count(&graph.plan(&pattern, Semantics::Iso));
            let cpu = graph.count_with(&pattern, Semantics::Iso);
            assert_eq!(cpu, id_order, "case {case}: {text}\n{edges}");
            let got = gpu
                .count_with(&graph, &pattern, Semantics::Iso)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(got, cpu, "GPU count, case {case}: {text}\n{edges}");
            // Rows on the graph itself, then the count again (on the copy).
            let rows_text = text.replace("count(*)", "a, b, c");
            let rows_pattern = Pattern::parse(&rows_text).unwrap();
            let mut want = Vec::new();
            graph.for_each_row(&rows_pattern, Semantics::Iso, |r| {
                want.push(r.to_vec());
                true
            });
            let mut got_rows = Vec::new();
            gpu.for_each_row(&graph, &rows_pattern, Semantics::Iso, |r| {
                got_rows.push(r.to_vec());
                true
            })
            .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                got_rows, want,
                "GPU rows, case {case}: {rows_text}\n{edges}"
            );
            let again = gpu
                .count_with(&graph, &pattern, Semantics::Iso)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(again, cpu, "GPU count after rows, case {case}: {text}");
        }
    }
}
