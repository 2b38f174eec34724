//! Medium-sized inputs (thousands of edges, millions of derived tuples), large enough
//! for the parallel code paths of the CPU backend, checked against direct computations
//! (BFS for reachability, adjacency-list loops for same generation) at 1, 2, 4 and 8
//! threads.

mod support;

use fixlog::{Datum, Fixlog};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A deterministic pseudo-random edge list over `0..nodes` (duplicates and self-loops
/// included on purpose).
fn random_edges(nodes: u64, edges: usize, seed: u64) -> Vec<(i32, i32)> {
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..edges)
        .map(|_| ((next() % nodes) as i32, (next() % nodes) as i32))
        .collect()
}

fn adjacency(edges: &[(i32, i32)]) -> BTreeMap<i32, BTreeSet<i32>> {
    let mut adj: BTreeMap<i32, BTreeSet<i32>> = BTreeMap::new();
    for &(a, b) in edges {
        adj.entry(a).or_default().insert(b);
    }
    adj
}

/// For every node, the nodes reachable by a path of one or more edges.
fn reachability(edges: &[(i32, i32)]) -> BTreeMap<i32, BTreeSet<i32>> {
    let adj = adjacency(edges);
    let mut out = BTreeMap::new();
    for &start in adj.keys() {
        let mut seen = BTreeSet::new();
        let mut queue: VecDeque<i32> = adj[&start].iter().copied().collect();
        seen.extend(queue.iter().copied());
        while let Some(n) = queue.pop_front() {
            for &m in adj.get(&n).into_iter().flatten() {
                if seen.insert(m) {
                    queue.push_back(m);
                }
            }
        }
        out.insert(start, seen);
    }
    out
}

/// `(x, y)` for `x != y` that share a parent: same generation's first rule.
fn sibling_pairs(adj: &BTreeMap<i32, BTreeSet<i32>>) -> BTreeSet<(i32, i32)> {
    let mut pairs = BTreeSet::new();
    for children in adj.values() {
        for &x in children {
            for &y in children {
                if x != y {
                    pairs.insert((x, y));
                }
            }
        }
    }
    pairs
}

/// Same generation, by the definition: `sg(x,y)` if `x != y` share a parent, or their
/// parents are in `sg`.
fn same_generation(edges: &[(i32, i32)]) -> BTreeSet<(i32, i32)> {
    let adj = adjacency(edges);
    let mut sg = sibling_pairs(&adj);
    let mut delta: Vec<(i32, i32)> = sg.iter().copied().collect();
    while !delta.is_empty() {
        let mut next = Vec::new();
        for (a, b) in delta {
            for &x in adj.get(&a).into_iter().flatten() {
                for &y in adj.get(&b).into_iter().flatten() {
                    if sg.insert((x, y)) {
                        next.push((x, y));
                    }
                }
            }
        }
        delta = next;
    }
    sg
}

fn number_rows(db: &fixlog::Database, rel: &str) -> Vec<Vec<i32>> {
    db.relation(rel)
        .unwrap()
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|d| match d {
                    Datum::Number(n) => n,
                    other => panic!("not a number: {other:?}"),
                })
                .collect()
        })
        .collect()
}

const PROGRAM: &str = "
.decl edge(x: number, y: number)
.decl node(x: number)
node(x) :- edge(x, _).
node(y) :- edge(_, y).
.decl path(x: number, y: number)
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
.decl reach_count(x: number, n: number)
reach_count(x, n) :- node(x), n = count : { path(x, _) }.
.decl unreached(x: number)
unreached(x) :- node(x), !path(0, x).
.decl total(s: number)
total(s) :- s = sum n : { reach_count(_, n) }.
.decl widest(m: number)
widest(m) :- m = max n : { reach_count(_, n) }.
.decl sg(x: number, y: number)
sg(x, y) :- edge(p, x), edge(p, y), x != y.
sg(x, y) :- edge(a, x), sg(a, b), edge(b, y).
";

/// [`PROGRAM`] with `edges` as its `edge` facts.
fn scale_program(edges: &[(i32, i32)]) -> Fixlog {
    let mut program = Fixlog::from_source("scale.dl", PROGRAM).unwrap();
    program
        .insert(
            "edge",
            edges
                .iter()
                .map(|&(a, b)| vec![Datum::Number(a), Datum::Number(b)]),
        )
        .unwrap();
    program
}

#[test]
fn reachability_aggregates_negation_and_sg_at_scale() {
    // Sparse enough that SG stays small, dense enough for a giant component in TC.
    let edges = random_edges(3000, 4500, 0x9e37_79b9_7f4a_7c15);
    let reach = reachability(&edges);
    let nodes: BTreeSet<i32> = edges.iter().flat_map(|&(a, b)| [a, b]).collect();
    let path: Vec<Vec<i32>> = reach
        .iter()
        .flat_map(|(&a, set)| set.iter().map(move |&b| vec![a, b]))
        .collect();
    let reach_count: Vec<Vec<i32>> = nodes
        .iter()
        .map(|&n| vec![n, reach.get(&n).map_or(0, |s| s.len()) as i32])
        .collect();
    let from_zero = reach.get(&0).cloned().unwrap_or_default();
    let unreached: Vec<Vec<i32>> = nodes
        .iter()
        .filter(|n| !from_zero.contains(n))
        .map(|&n| vec![n])
        .collect();
    let total = vec![vec![path.len() as i32]];
    let widest = vec![vec![reach_count.iter().map(|r| r[1]).max().unwrap()]];
    let sg: Vec<Vec<i32>> = same_generation(&edges)
        .into_iter()
        .map(|(a, b)| vec![a, b])
        .collect();
    assert!(
        path.len() > 1_000_000,
        "test graph too small: {} paths",
        path.len()
    );
    assert!(
        sg.len() > 10_000,
        "test graph too small: {} sg pairs",
        sg.len()
    );
    assert!(!unreached.is_empty() && unreached.len() < nodes.len());

    let program = scale_program(&edges);
    for jobs in [1, 2, 4, 8] {
        let db = program.run(&support::options(Some(jobs))).unwrap();
        for (rel, want) in [
            ("path", &path),
            ("reach_count", &reach_count),
            ("unreached", &unreached),
            ("total", &total),
            ("widest", &widest),
            ("sg", &sg),
        ] {
            let got = number_rows(&db, rel);
            assert!(
                got == *want,
                "{rel} differs at -j {jobs}: {} tuples, expected {}",
                got.len(),
                want.len()
            );
        }
    }
}

#[test]
fn symbol_graph_at_scale() {
    // The same reachability over symbols: many new symbols interned while loading, and
    // output order by string, not by id (ids follow first appearance).
    let edges = random_edges(2000, 2600, 0x2545_f491_4f6c_dd1d);
    let name = |n: i32| format!("node {}", 1999 - n);
    let reach = reachability(&edges);
    let mut want: Vec<(String, String)> = reach
        .iter()
        .flat_map(|(&a, set)| set.iter().map(move |&b| (name(a), name(b))))
        .collect();
    want.sort();
    assert!(want.len() > 100_000, "test graph too small: {}", want.len());

    let mut program = Fixlog::from_source(
        "symbols.dl",
        "
        .decl edge(x: symbol, y: symbol)
        .decl path(x: symbol, y: symbol)
        path(x, y) :- edge(x, y).
        path(x, z) :- path(x, y), edge(y, z).
        ",
    )
    .unwrap();
    program
        .insert(
            "edge",
            edges
                .iter()
                .map(|&(a, b)| vec![Datum::Symbol(name(a)), Datum::Symbol(name(b))]),
        )
        .unwrap();
    for jobs in [1, 4] {
        let db = program.run(&support::options(Some(jobs))).unwrap();
        let got: Vec<(String, String)> = db
            .relation("path")
            .unwrap()
            .into_iter()
            .map(|row| match &row[..] {
                [Datum::Symbol(a), Datum::Symbol(b)] => (a.clone(), b.clone()),
                other => panic!("unexpected row {other:?}"),
            })
            .collect();
        assert_eq!(got.len(), want.len(), "path size at -j {jobs}");
        assert!(got == want, "path differs at -j {jobs}");
    }
}

/// Semi-naive evaluation of one recursive relation by sets: `step(delta, full)` gives
/// what the recursive rules derive from `delta`; returns the most tuples `full`, the
/// delta and the new tuples held together at an iteration's end (the last iteration,
/// which derives nothing, included).
fn versions_peak(
    init: BTreeSet<(i32, i32)>,
    step: impl Fn(&BTreeSet<(i32, i32)>) -> BTreeSet<(i32, i32)>,
) -> usize {
    let mut full = init.clone();
    let mut delta = init;
    let mut peak = 0;
    loop {
        let new: BTreeSet<(i32, i32)> = step(&delta).difference(&full).copied().collect();
        peak = peak.max(full.len() + delta.len() + new.len());
        if new.is_empty() {
            return peak;
        }
        full.extend(new.iter().copied());
        delta = new;
    }
}

#[test]
fn versions_peak_is_full_delta_and_new_at_their_largest() {
    let edges = random_edges(400, 700, 0x5851_f42d_4c95_7f2d);
    let adj = adjacency(&edges);
    let edge_set: BTreeSet<(i32, i32)> = edges.iter().copied().collect();
    let path = versions_peak(edge_set, |delta| {
        let mut out = BTreeSet::new();
        for &(x, y) in delta {
            for &z in adj.get(&y).into_iter().flatten() {
                out.insert((x, z));
            }
        }
        out
    });
    let sg = versions_peak(sibling_pairs(&adj), |delta| {
        let mut out = BTreeSet::new();
        for &(a, b) in delta {
            for &x in adj.get(&a).into_iter().flatten() {
                for &y in adj.get(&b).into_iter().flatten() {
                    out.insert((x, y));
                }
            }
        }
        out
    });
    assert!(
        path > 10_000 && sg > 1_000,
        "test graph too small: {path}, {sg}"
    );

    let program = scale_program(&edges);
    let db = program.run(&support::options(Some(2))).unwrap();
    let got: BTreeMap<&str, usize> = db
        .stats()
        .versions_peak
        .iter()
        .map(|(name, n)| (name.as_str(), *n))
        .collect();
    // Only the recursive relations, each at its own peak.
    assert_eq!(got, BTreeMap::from([("path", path), ("sg", sg)]));
}
