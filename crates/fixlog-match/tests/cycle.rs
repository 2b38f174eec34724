//! The 4-cycle count ([`fixlog_match::cycle`]) against the generic matcher (the plan
//! run by `exec::count`, which never takes the wedge path) and a brute force over every
//! injective map: random small graphs (directed and undirected loads, self-loops,
//! repeated and reversed edges, typed edges), the 4-cycle written in any node order and
//! edge direction, with random `WHERE` comparisons among its nodes.

use fixlog_match::{CountPath, Graph, LoadOptions, Pattern, Semantics};
use proptest::prelude::*;
use std::collections::HashSet;

const NAMES: [&str; 4] = ["a", "b", "c", "d"];
/// Every operator, the strict ones more often (fewer contradictions, more shapes told
/// apart).
const OPS: [&str; 9] = ["<", "<=", ">", ">=", "=", "<>", "<", ">", "<"];

#[derive(Clone, Copy, Debug)]
enum Arrow {
    Undirected,
    Right,
    Left,
}

#[derive(Debug)]
struct Case {
    ids: Vec<u64>,
    /// (src, dst, type) as written.
    edges: Vec<(u64, u64, Option<&'static str>)>,
    undirected: bool,
    /// The cycle's pattern nodes in order round it.
    cycle: [usize; 4],
    /// Per cycle edge `cycle[i]-cycle[i+1]`: whether it is written from `cycle[i + 1]`,
    /// and its arrow as written.
    written: Vec<(bool, Arrow)>,
    /// The order the 4 edges are written in, or `None` for one path round the cycle.
    edge_order: Option<Vec<usize>>,
    comparisons: Vec<(usize, &'static str, usize)>,
}

impl Case {
    fn edge_text(&self) -> String {
        let mut s = String::new();
        for (a, b, t) in &self.edges {
            match t {
                Some(t) => s.push_str(&format!("{a}\t{b}\t{t}\n")),
                None => s.push_str(&format!("{a} {b}\n")),
            }
        }
        s
    }

    /// The pattern edge `i` as `(from, to, arrow)` in pattern nodes.
    fn pattern_edge(&self, i: usize) -> (usize, usize, Arrow) {
        let (x, y) = (self.cycle[i], self.cycle[(i + 1) % 4]);
        let (reversed, arrow) = self.written[i];
        if reversed {
            (y, x, arrow)
        } else {
            (x, y, arrow)
        }
    }

    fn text(&self) -> String {
        let rel = |arrow: Arrow| match arrow {
            Arrow::Undirected => "--",
            Arrow::Right => "-->",
            Arrow::Left => "<--",
        };
        let paths = match &self.edge_order {
            Some(order) => order
                .iter()
                .map(|&i| {
                    let (from, to, arrow) = self.pattern_edge(i);
                    format!("({}){}({})", NAMES[from], rel(arrow), NAMES[to])
                })
                .collect::<Vec<_>>()
                .join(", "),
            None => {
                // One path round the cycle: edge i from cycle[i] to cycle[i + 1], its
                // arrow turned when it was written the other way.
                let mut s = format!("({})", NAMES[self.cycle[0]]);
                for i in 0..4 {
                    let (reversed, arrow) = self.written[i];
                    let arrow = match (reversed, arrow) {
                        (true, Arrow::Right) => Arrow::Left,
                        (true, Arrow::Left) => Arrow::Right,
                        (_, other) => other,
                    };
                    s.push_str(&format!(
                        "{}({})",
                        rel(arrow),
                        NAMES[self.cycle[(i + 1) % 4]]
                    ));
                }
                s
            }
        };
        let mut text = format!("MATCH {paths}");
        if !self.comparisons.is_empty() {
            let conditions: Vec<String> = self
                .comparisons
                .iter()
                .map(|&(x, op, y)| format!("id({}) {op} id({})", NAMES[x], NAMES[y]))
                .collect();
            text.push_str(&format!(" WHERE {}", conditions.join(" AND ")));
        }
        text.push_str(" RETURN count(*)");
        text
    }

    /// Whether the wedge path applies: every edge `--`, or any arrow on an undirected
    /// load.
    fn takes_the_path(&self) -> bool {
        self.undirected
            || self
                .written
                .iter()
                .all(|(_, a)| matches!(a, Arrow::Undirected))
    }

    /// Every injective map of the pattern nodes (indexed as `NAMES`) satisfying the
    /// edges and comparisons, counted.
    fn brute_force(&self) -> u64 {
        let edges: HashSet<(u64, u64)> = self.edges.iter().map(|&(s, d, _)| (s, d)).collect();
        let has = |x: u64, y: u64| {
            edges.contains(&(x, y)) || (self.undirected && edges.contains(&(y, x)))
        };
        let nodes: Vec<u64> = {
            let mut v: Vec<u64> = self.edges.iter().flat_map(|&(s, d, _)| [s, d]).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let mut count = 0;
        let n = nodes.len();
        for i in 0..n.pow(4) {
            let map = [
                nodes[i % n],
                nodes[i / n % n],
                nodes[i / n / n % n],
                nodes[i / n / n / n % n],
            ];
            let distinct: HashSet<u64> = map.iter().copied().collect();
            if distinct.len() != 4 {
                continue;
            }
            let edges_ok = (0..4).all(|e| {
                let (from, to, arrow) = self.pattern_edge(e);
                let (x, y) = (map[from], map[to]);
                match arrow {
                    Arrow::Undirected => has(x, y) || has(y, x),
                    Arrow::Right => has(x, y),
                    Arrow::Left => has(y, x),
                }
            });
            let where_ok = self.comparisons.iter().all(|&(x, op, y)| {
                let (l, r) = (map[x], map[y]);
                match op {
                    "<" => l < r,
                    "<=" => l <= r,
                    ">" => l > r,
                    ">=" => l >= r,
                    "=" => l == r,
                    _ => l != r,
                }
            });
            count += u64::from(edges_ok && where_ok);
        }
        count
    }
}

fn arrow() -> impl Strategy<Value = Arrow> {
    prop_oneof![
        4 => Just(Arrow::Undirected),
        1 => Just(Arrow::Right),
        1 => Just(Arrow::Left),
    ]
}

prop_compose! {
    fn case()(
        n in 4usize..9,
        spread in prop_oneof![Just(1u64), Just(7919)],
        raw in proptest::collection::vec((0usize..9, 0usize..9, 0u8..4), 4..48),
        typed in any::<bool>(),
        undirected in any::<bool>(),
        cycle in Just([0usize, 1, 2, 3]).prop_shuffle(),
        written in proptest::collection::vec((any::<bool>(), arrow()), 4),
        order in prop_oneof![
            1 => Just(None),
            2 => Just([0usize, 1, 2, 3]).prop_shuffle().prop_map(|o| Some(o.to_vec())),
        ],
        comparisons in proptest::collection::vec((0usize..4, 0usize..9, 0usize..4), 0..5),
    ) -> Case {
        // Ids in position order, or scattered, so the id order is no degree order.
        let ids: Vec<u64> = (0..n as u64).map(|i| (i * spread) % 101).collect();
        let edges = raw
            .iter()
            .map(|&(s, d, t)| {
                // Skewed: low positions are hubs.
                let s = ids[s * s / 9 % n];
                let d = ids[d % n];
                let t = match (typed, t) {
                    (true, 0) => Some("A"),
                    (true, 1) => Some("B"),
                    _ => None,
                };
                (s, d, t)
            })
            .collect();
        Case {
            ids,
            edges,
            undirected,
            cycle,
            written,
            edge_order: order,
            comparisons: comparisons
                .into_iter()
                .map(|(x, op, y)| (x, OPS[op], y))
                .collect(),
        }
    }
}

fn check(case: &Case, threads: usize) -> Result<(), TestCaseError> {
    let text = case.text();
    let pattern = Pattern::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
    let graph = Graph::from_text(
        &case.edge_text(),
        None,
        &LoadOptions {
            undirected: case.undirected,
        },
    )
    .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let expected = case.brute_force();
    let path = graph.count_path(&pattern, Semantics::Iso);
    let context = || {
        format!(
            "{text}\nundirected {}, path {path:?}, ids {:?}\nedges:\n{}",
            case.undirected,
            case.ids,
            case.edge_text()
        )
    };
    prop_assert_eq!(
        matches!(path, CountPath::FourCycle { .. }),
        case.takes_the_path(),
        "{}",
        context()
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let (counted, generic, count_plan) = pool.install(|| {
        (
            graph.count_with(&pattern, Semantics::Iso),
            fixlog_match::exec::count(&graph.plan(&pattern, Semantics::Iso)),
            fixlog_match::exec::count(&graph.count_plan(&pattern, Semantics::Iso)),
        )
    });
    prop_assert_eq!(generic, expected, "generic; {}", context());
    prop_assert_eq!(count_plan, expected, "count plan; {}", context());
    prop_assert_eq!(counted, Ok(expected), "count; {}", context());
    if case.undirected && graph.count_order(&pattern, Semantics::Iso).cycle_wedges {
        // The stored edge count read off the lists of the 4-cycle count (a fresh graph,
        // on which only the count ran) is the adjacency's.
        let fresh = Graph::from_text(&case.edge_text(), None, &LoadOptions { undirected: true })
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(fresh.count_with(&pattern, Semantics::Iso), Ok(expected));
        let key = fixlog_match::graph::AdjacencyKey {
            direction: fixlog_match::graph::Direction::Out,
            edge_type: None,
        };
        prop_assert_eq!(
            fresh.edge_count(),
            graph.adjacency(key).edge_count(),
            "{}",
            context()
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    /// The count (the wedge path wherever it applies) == the generic matcher == brute
    /// force, on one thread and on three.
    #[test]
    fn four_cycle_counts_agree_with_the_generic_matcher_and_brute_force(
        case in case(),
        threads in prop_oneof![Just(1usize), Just(3)],
    ) {
        check(&case, threads)?;
    }
}

/// The random cases are not vacuous: many count cycles, on the wedge path, with
/// comparisons whose factors differ by shape.
#[test]
fn the_random_cases_find_cycles() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut nonzero, mut on_path, mut shaped) = (0, 0, 0);
    for _ in 0..600 {
        let case = case().new_tree(&mut runner).unwrap().current();
        let pattern = Pattern::parse(&case.text()).unwrap();
        let graph = Graph::from_text(
            &case.edge_text(),
            None,
            &LoadOptions {
                undirected: case.undirected,
            },
        )
        .unwrap();
        let count = case.brute_force();
        nonzero += usize::from(count > 0);
        if let CountPath::FourCycle { factors } = graph.count_path(&pattern, Semantics::Iso) {
            on_path += usize::from(count > 0);
            shaped +=
                usize::from(count > 0 && (factors[0] != factors[1] || factors[1] != factors[2]));
        }
    }
    eprintln!(
        "{nonzero} nonzero, {on_path} on the wedge path, {shaped} with shape-dependent factors"
    );
    assert!(
        nonzero > 150 && on_path > 100 && shaped > 20,
        "{nonzero} {on_path} {shaped}"
    );
}

/// Comparisons that pick one cycle per shape, none, or a shape-dependent number, on a
/// fixed graph with every shape (K4 plus pendant cycles), so the factors are exercised
/// with counts known to be nonzero.
#[test]
fn every_shape_on_a_small_graph() {
    // K4 on 1..4 (three 4-cycles, one of each shape), and 4-cycles 5-9-6-8 (5 opposite
    // 6: shape v2) and 10-11-12-13 (shape v3) and 20-21-23-22 (20 opposite 23: v4).
    let edges = "1 2\n1 3\n1 4\n2 3\n2 4\n3 4\n5 9\n9 6\n6 8\n8 5\n10 11\n11 12\n12 13\n13 10\n\
                 20 21\n21 23\n23 22\n22 20\n";
    for undirected in [false, true] {
        let graph = Graph::from_text(edges, None, &LoadOptions { undirected }).unwrap();
        let count = |text: &str| {
            let pattern = Pattern::parse(text).unwrap();
            assert!(matches!(
                graph.count_path(&pattern, Semantics::Iso),
                CountPath::FourCycle { .. }
            ));
            let generic = fixlog_match::exec::count(&graph.plan(&pattern, Semantics::Iso));
            let counted = graph.count_with(&pattern, Semantics::Iso).unwrap();
            assert_eq!(counted, generic, "{text}");
            counted
        };
        let cycle = "MATCH (a)--(b)--(c)--(d)--(a)";
        assert_eq!(count(&format!("{cycle} RETURN count(*)")), 6 * 8);
        let uniq = format!(
            "{cycle} WHERE id(a) < id(b) AND id(a) < id(c) AND id(a) < id(d) AND id(b) < id(d) \
             RETURN count(*)"
        );
        assert_eq!(count(&uniq), 6);
        // Ascending round the cycle: only the shape opposite v3 (2 of the 6 cycles).
        let chain = format!(
            "{cycle} WHERE id(a) < id(b) AND id(b) < id(c) AND id(c) < id(d) RETURN count(*)"
        );
        assert_eq!(count(&chain), 2);
        let two = format!("{cycle} WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)");
        count(&two);
        assert_eq!(
            count(&format!("{cycle} WHERE id(a) = id(c) RETURN count(*)")),
            0
        );
        assert_eq!(
            count(&format!("{cycle} WHERE id(a) < id(a) RETURN count(*)")),
            0
        );
    }
}

/// Patterns that are not plain 4-cycles, or not counted, do not take the wedge path:
/// a chord, a repeated edge, labels, an edge type, a constant comparison, `homo`
/// semantics, rows, a self-loop edge, a directed edge on a directed graph; and `explain`
/// says which path counts.
#[test]
fn other_patterns_do_not_take_the_wedge_path() {
    let graph = Graph::from_text(
        "1 2\n2 3\n3 4\n4 1\n1 3\n",
        Some("1\tX\n"),
        &LoadOptions { undirected: false },
    )
    .unwrap();
    let path = |text: &str, semantics| graph.count_path(&Pattern::parse(text).unwrap(), semantics);
    let cycle = "MATCH (a)--(b)--(c)--(d)--(a) RETURN count(*)";
    assert_eq!(
        path(cycle, Semantics::Iso),
        CountPath::FourCycle { factors: [8; 3] }
    );
    for text in [
        "MATCH (a)--(b)--(c)--(d)--(a), (a)--(c) RETURN count(*)",
        "MATCH (a)--(b)--(c)--(d)--(a), (a)--(b) RETURN count(*)",
        "MATCH (a:X)--(b)--(c)--(d)--(a) RETURN count(*)",
        "MATCH (a)-[:T]-(b)--(c)--(d)--(a) RETURN count(*)",
        "MATCH (a)--(b)--(c)--(d)--(a) WHERE id(a) < 3 RETURN count(*)",
        "MATCH (a)--(b)--(c)--(d)--(a) RETURN a, b",
        "MATCH (a)--(b)--(c)--(d), (d)--(d) RETURN count(*)",
        "MATCH (a)-->(b)--(c)--(d)--(a) RETURN count(*)",
        "MATCH (a)--(b)--(c), (c)--(d) RETURN count(*)",
    ] {
        assert_eq!(path(text, Semantics::Iso), CountPath::Plan, "{text}");
        let pattern = Pattern::parse(text).unwrap();
        assert!(
            !graph
                .explain(&pattern, Semantics::Iso)
                .contains("4-cycle wedge count"),
            "{text}"
        );
    }
    assert_eq!(path(cycle, Semantics::Homo), CountPath::Plan);
    let pattern = Pattern::parse(cycle).unwrap();
    assert!(graph
        .explain(&pattern, Semantics::Iso)
        .contains("4-cycle wedge count"));
    assert!(graph.count_order(&pattern, Semantics::Iso).cycle_wedges);
    assert!(!graph.count_order(&pattern, Semantics::Homo).cycle_wedges);
    // The count and the generic matcher agree on the directed graph too (1-2-3-4 and
    // the chord 1-3 make one 4-cycle).
    assert_eq!(graph.count_with(&pattern, Semantics::Iso), Ok(8));
}

/// On a larger random graph (the parallel builders' sizes: the lists are built and
/// partitioned on every core), the wedge count equals the generic matcher's (kept off
/// the wedge path by a constant comparison that excludes no node) for the usual
/// symmetry breaking and a shape-dependent set of comparisons, and EMB is 8 times UNIQ.
#[test]
fn four_cycle_counts_on_a_larger_graph() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut below = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let n = 20_000u64;
    let mut text = String::new();
    for _ in 0..300_000 {
        // Skewed degrees, hubs spread over the ids.
        let s = (below(n) * below(n) / n * 7919) % n;
        let d = below(n);
        text.push_str(&format!("{s}\t{d}\n"));
    }
    let graph = Graph::from_text(&text, None, &LoadOptions { undirected: true }).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    pool.install(|| {
        let cycle = "MATCH (a)--(b)--(c)--(d)--(a)";
        let uniq = "id(a) < id(b) AND id(a) < id(c) AND id(a) < id(d) AND id(b) < id(d)";
        let shaped = "id(a) < id(b) AND id(b) < id(c)";
        let mut counts = Vec::new();
        for filter in [uniq, shaped] {
            let fast = Pattern::parse(&format!("{cycle} WHERE {filter} RETURN count(*)")).unwrap();
            let generic = Pattern::parse(&format!(
                "{cycle} WHERE {filter} AND id(a) <> 123456789 RETURN count(*)"
            ))
            .unwrap();
            assert_eq!(graph.count_path(&generic, Semantics::Iso), CountPath::Plan);
            let counted = graph.count_with(&fast, Semantics::Iso).unwrap();
            assert_eq!(
                counted,
                graph.count_with(&generic, Semantics::Iso).unwrap(),
                "{filter}"
            );
            counts.push(counted);
        }
        eprintln!("4-cycles: {counts:?}");
        assert!(counts[0] > 10_000, "4-cycles: {}", counts[0]);
        let emb = Pattern::parse(&format!("{cycle} RETURN count(*)")).unwrap();
        assert_eq!(graph.count_with(&emb, Semantics::Iso), Ok(8 * counts[0]));
    });
}
