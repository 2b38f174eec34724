//! Random small graphs × random small patterns: the matcher against a brute-force
//! matcher that tries every map of pattern nodes to graph nodes. Both semantics,
//! directed and undirected graphs, labels, edge types, self-loops, repeated edges and
//! `WHERE` comparisons; counts, rows, `LIMIT`, and rows identical for every thread count.

use fixlog_match::{Graph, LoadOptions, Pattern, Semantics};
use std::collections::HashSet;

/// A seeded generator (PCG-style LCG), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

struct TestGraph {
    ids: Vec<u64>,
    /// (src, dst, type) as written.
    edges: Vec<(u64, u64, Option<&'static str>)>,
    labels: Vec<(u64, Vec<&'static str>)>,
    undirected: bool,
}

const TYPES: [&str; 2] = ["A", "B"];
const LABELS: [&str; 3] = ["L0", "L1", "L2"];

fn random_graph(rng: &mut Rng) -> TestGraph {
    let n = 1 + rng.below(7) as usize;
    // Sparse, unordered-looking ids to exercise the numbering.
    let ids: Vec<u64> = (0..n as u64).map(|i| i * 3 + rng.below(2) * 1000).collect();
    let m = rng.below(3 * n as u64 + 1) as usize;
    let typed = rng.chance(40);
    let edges = (0..m)
        .map(|_| {
            let s = ids[rng.below(n as u64) as usize];
            let d = ids[rng.below(n as u64) as usize];
            let t = if typed {
                Some(TYPES[rng.below(2) as usize])
            } else {
                None
            };
            (s, d, t)
        })
        .collect();
    let labels = ids
        .iter()
        .map(|&id| {
            let ls = LABELS.iter().copied().filter(|_| rng.chance(40)).collect();
            (id, ls)
        })
        .collect();
    TestGraph {
        ids,
        edges,
        labels,
        undirected: rng.chance(40),
    }
}

impl TestGraph {
    fn edge_text(&self) -> String {
        let mut s = String::from("# random graph\n");
        for (a, b, t) in &self.edges {
            match t {
                Some(t) => s.push_str(&format!("{a}\t{b}\t{t}\n")),
                None => s.push_str(&format!("{a} {b}\n")),
            }
        }
        s
    }
    fn node_text(&self) -> String {
        let mut s = String::new();
        for (id, ls) in &self.labels {
            s.push_str(&format!("{id}\t{}\n", ls.join(",")));
        }
        s
    }
    fn has_edge(&self, a: u64, b: u64, t: Option<&str>) -> bool {
        self.edges.iter().any(|&(s, d, et)| {
            (t.is_none() || et == t)
                && ((s == a && d == b) || (self.undirected && s == b && d == a))
        })
    }
    fn has_label(&self, id: u64, l: &str) -> bool {
        self.labels
            .iter()
            .any(|(i, ls)| *i == id && ls.contains(&l))
    }
}

#[derive(Clone, Debug)]
enum Dir {
    Right,
    Left,
    Both,
}

struct TestPattern {
    text: String,
    k: usize,
    labels: Vec<Vec<&'static str>>,
    /// (from, to, dir, type)
    edges: Vec<(usize, usize, Dir, Option<&'static str>)>,
    /// (left node, op, right: Ok(node) | Err(constant))
    comparisons: Vec<(usize, &'static str, Result<usize, u64>)>,
    returned: Option<Vec<usize>>,
    limit: Option<u64>,
}

const NAMES: [&str; 4] = ["a", "b", "c", "d"];
const OPS: [&str; 6] = ["<", "<=", ">", ">=", "=", "<>"];

fn random_pattern(rng: &mut Rng, graph: &TestGraph) -> TestPattern {
    let k = 1 + rng.below(4) as usize;
    let mut labels = vec![Vec::new(); k];
    let mut edges = Vec::new();
    let e = rng.below(5) as usize;
    for _ in 0..e {
        let a = rng.below(k as u64) as usize;
        let b = if rng.chance(10) {
            a
        } else {
            rng.below(k as u64) as usize
        };
        let dir = match rng.below(3) {
            0 => Dir::Right,
            1 => Dir::Left,
            _ => Dir::Both,
        };
        let t = if rng.chance(30) {
            Some(TYPES[rng.below(2) as usize])
        } else {
            None
        };
        edges.push((a, b, dir, t));
    }
    let mut inline_label = vec![None; k];
    for (p, slot) in inline_label.iter_mut().enumerate() {
        if rng.chance(20) {
            let l = LABELS[rng.below(3) as usize];
            *slot = Some(l);
            labels[p].push(l);
        }
    }
    let node = |p: usize, first: &mut Vec<bool>| {
        let label = if first[p] {
            first[p] = false;
            inline_label[p].map(|l| format!(":{l}")).unwrap_or_default()
        } else {
            String::new()
        };
        format!("({}{label})", NAMES[p])
    };
    let mut first = vec![true; k];
    let mut paths = Vec::new();
    for (a, b, dir, t) in &edges {
        let bracket = t.map(|t| format!("[:{t}]")).unwrap_or_default();
        let rel = match dir {
            Dir::Right => format!("-{bracket}->"),
            Dir::Left => format!("<-{bracket}-"),
            Dir::Both => format!("-{bracket}-"),
        };
        let left = node(*a, &mut first);
        let right = node(*b, &mut first);
        paths.push(format!("{left}{rel}{right}"));
    }
    for p in 0..k {
        if first[p] {
            paths.push(node(p, &mut first));
        }
    }
    let mut conditions = Vec::new();
    let mut comparisons = Vec::new();
    for _ in 0..rng.below(3) {
        let a = rng.below(k as u64) as usize;
        if rng.chance(25) {
            let l = LABELS[rng.below(3) as usize];
            labels[a].push(l);
            conditions.push(format!("{}:{l}", NAMES[a]));
            continue;
        }
        let op = OPS[rng.below(6) as usize];
        if rng.chance(25) {
            let c = if rng.chance(50) && !graph.ids.is_empty() {
                graph.ids[rng.below(graph.ids.len() as u64) as usize]
            } else {
                rng.below(20)
            };
            conditions.push(format!("id({}) {op} {c}", NAMES[a]));
            comparisons.push((a, op, Err(c)));
        } else {
            let b = rng.below(k as u64) as usize;
            conditions.push(format!("id({}) {op} id({})", NAMES[a], NAMES[b]));
            comparisons.push((a, op, Ok(b)));
        }
    }
    let returned = if rng.chance(50) {
        None
    } else {
        Some(
            (0..1 + rng.below(k as u64))
                .map(|_| rng.below(k as u64) as usize)
                .collect::<Vec<_>>(),
        )
    };
    let limit = if rng.chance(20) {
        Some(rng.below(5))
    } else {
        None
    };
    let mut text = format!("MATCH {}", paths.join(", "));
    if !conditions.is_empty() {
        text.push_str(&format!(" WHERE {}", conditions.join(" AND ")));
    }
    match &returned {
        None => text.push_str(" RETURN count(*)"),
        Some(cols) => {
            let cols: Vec<String> = cols.iter().map(|&c| NAMES[c].to_string()).collect();
            text.push_str(&format!(" RETURN {}", cols.join(", ")));
        }
    }
    if let Some(l) = limit {
        text.push_str(&format!(" LIMIT {l}"));
    }
    TestPattern {
        text,
        k,
        labels,
        edges,
        comparisons,
        returned,
        limit,
    }
}

fn compare(op: &str, a: u64, b: u64) -> bool {
    match op {
        "<" => a < b,
        "<=" => a <= b,
        ">" => a > b,
        ">=" => a >= b,
        "=" => a == b,
        _ => a != b,
    }
}

/// Every match (ids by pattern node), by trying every map.
fn brute_force(graph: &TestGraph, pattern: &TestPattern, semantics: Semantics) -> Vec<Vec<u64>> {
    // Nodes are those of the edges plus the labelled list (every id is in it).
    let nodes: Vec<u64> = {
        let mut set: Vec<u64> = graph.ids.clone();
        set.sort_unstable();
        set.dedup();
        set
    };
    let mut out = Vec::new();
    let k = pattern.k;
    let total = nodes.len().pow(k as u32);
    for code in 0..total {
        let mut map = Vec::with_capacity(k);
        let mut c = code;
        for _ in 0..k {
            map.push(nodes[c % nodes.len()]);
            c /= nodes.len();
        }
        if semantics == Semantics::Iso {
            let distinct: HashSet<u64> = map.iter().copied().collect();
            if distinct.len() != k {
                continue;
            }
        }
        let labels_ok =
            (0..k).all(|p| pattern.labels[p].iter().all(|l| graph.has_label(map[p], l)));
        let edges_ok = pattern.edges.iter().all(|(a, b, dir, t)| match dir {
            Dir::Right => graph.has_edge(map[*a], map[*b], *t),
            Dir::Left => graph.has_edge(map[*b], map[*a], *t),
            Dir::Both => {
                graph.has_edge(map[*a], map[*b], *t) || graph.has_edge(map[*b], map[*a], *t)
            }
        });
        let where_ok = pattern.comparisons.iter().all(|(a, op, right)| {
            let r = match right {
                Ok(b) => map[*b],
                Err(c) => *c,
            };
            compare(op, map[*a], r)
        });
        if labels_ok && edges_ok && where_ok {
            out.push(map);
        }
    }
    out
}

fn rows_with_threads(
    graph: &Graph,
    pattern: &Pattern,
    semantics: Semantics,
    threads: usize,
) -> Vec<Vec<u64>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut rows = Vec::new();
        graph.for_each_row(pattern, semantics, |row| {
            rows.push(row.to_vec());
            true
        });
        rows
    })
}

#[test]
fn random_patterns_agree_with_brute_force() {
    let mut rng = Rng(20261123);
    let mut nonzero = 0;
    for case in 0..1500 {
        let tg = random_graph(&mut rng);
        let graph = Graph::from_text(
            &tg.edge_text(),
            Some(&tg.node_text()),
            &LoadOptions {
                undirected: tg.undirected,
            },
        )
        .unwrap();
        for _ in 0..4 {
            let tp = random_pattern(&mut rng, &tg);
            let pattern = Pattern::parse(&tp.text)
                .unwrap_or_else(|e| panic!("case {case}: {}\n{e}", tp.text));
            for semantics in [Semantics::Iso, Semantics::Homo] {
                let expected = brute_force(&tg, &tp, semantics);
                let context = || {
                    format!(
                        "case {case}, {semantics:?}, undirected {}: {}\nedges:\n{}nodes:\n{}",
                        tg.undirected,
                        tp.text,
                        tg.edge_text(),
                        tg.node_text()
                    )
                };
                let count = graph.count_with(&pattern, semantics).unwrap();
                assert_eq!(
                    count,
                    expected.len() as u64,
                    "count; {}\n{}",
                    context(),
                    graph.explain(&pattern, semantics)
                );
                nonzero += (count > 0) as usize;
                // Pattern nodes are numbered in order of appearance; the test's by name.
                let test_index: Vec<usize> = pattern
                    .nodes
                    .iter()
                    .map(|n| {
                        NAMES
                            .iter()
                            .position(|&x| Some(x) == n.name.as_deref())
                            .unwrap()
                    })
                    .collect();
                let mut matches = Vec::new();
                graph.for_each_match(&pattern, semantics, |m| {
                    let mut by_name = vec![0; tp.k];
                    for (i, &id) in m.iter().enumerate() {
                        by_name[test_index[i]] = id;
                    }
                    matches.push(by_name);
                    true
                });
                let limit = tp.limit.unwrap_or(u64::MAX) as usize;
                assert_eq!(
                    matches.len(),
                    expected.len().min(limit),
                    "matches; {}",
                    context()
                );
                let mut all: HashSet<Vec<u64>> = expected.iter().cloned().collect();
                for m in &matches {
                    assert!(
                        all.remove(m),
                        "match {m:?} is not a match or repeated; {}",
                        context()
                    );
                }
                if let Some(cols) = &tp.returned {
                    let one = rows_with_threads(&graph, &pattern, semantics, 1);
                    let three = rows_with_threads(&graph, &pattern, semantics, 3);
                    assert_eq!(
                        one,
                        three,
                        "rows differ with the thread count; {}",
                        context()
                    );
                    let mut got = one.clone();
                    got.sort();
                    if tp.limit.is_none() {
                        let mut want: Vec<Vec<u64>> = expected
                            .iter()
                            .map(|m| cols.iter().map(|&c| m[c]).collect())
                            .collect();
                        want.sort();
                        assert_eq!(got, want, "rows; {}", context());
                    } else {
                        assert_eq!(one.len(), expected.len().min(limit), "rows; {}", context());
                    }
                }
            }
        }
    }
    assert!(
        nonzero > 500,
        "too few patterns with matches ({nonzero}): the test tests little"
    );
}

/// Cycles and other patterns whose last step the matcher memoizes (its lists come from
/// the first step and one step before a varying one), on denser random graphs.
#[test]
fn memoized_last_steps_agree_with_brute_force() {
    let mut rng = Rng(4242);
    let patterns = [
        ("MATCH (a)--(b)--(c)--(d)--(a) RETURN count(*)", 4),
        (
            "MATCH (a)--(b)--(c)--(d)--(a) WHERE id(a) < id(b) AND id(a) < id(c) AND id(a) < id(d) \
             AND id(b) < id(d) RETURN count(*)",
            4,
        ),
        ("MATCH (a)-->(b)-->(c)-->(d)-->(a) RETURN count(*)", 4),
        ("MATCH (a)--(b)--(c)--(d)--(e)--(a) RETURN count(*)", 5),
        ("MATCH (a)--(b)--(c)--(d)--(a), (a)--(e)--(b) WHERE id(e) <> 3 RETURN count(*)", 5),
    ];
    for case in 0..60 {
        let n = 6 + rng.below(3) as usize;
        let ids: Vec<u64> = (0..n as u64).collect();
        let edges: Vec<(u64, u64, Option<&str>)> = (0..3 * n)
            .map(|_| (rng.below(n as u64), rng.below(n as u64), None))
            .collect();
        let tg = TestGraph {
            ids: ids.clone(),
            edges,
            labels: ids.iter().map(|&i| (i, Vec::new())).collect(),
            undirected: rng.chance(50),
        };
        let graph = Graph::from_text(
            &tg.edge_text(),
            Some(&tg.node_text()),
            &LoadOptions {
                undirected: tg.undirected,
            },
        )
        .unwrap();
        for (text, k) in patterns {
            let pattern = Pattern::parse(text).unwrap();
            let names = ["a", "b", "c", "d", "e"];
            let tp = TestPattern {
                text: text.to_string(),
                k,
                labels: vec![Vec::new(); k],
                edges: pattern
                    .edges
                    .iter()
                    .map(|e| {
                        let dir = match e.direction {
                            fixlog_match::pattern::EdgeDirection::Directed => Dir::Right,
                            fixlog_match::pattern::EdgeDirection::Undirected => Dir::Both,
                        };
                        let index = |p: usize| {
                            names
                                .iter()
                                .position(|&x| Some(x) == pattern.nodes[p].name.as_deref())
                                .unwrap()
                        };
                        (index(e.from), index(e.to), dir, None)
                    })
                    .collect(),
                comparisons: pattern
                    .comparisons
                    .iter()
                    .map(|c| {
                        let index = |p: usize| {
                            names
                                .iter()
                                .position(|&x| Some(x) == pattern.nodes[p].name.as_deref())
                                .unwrap()
                        };
                        let op = c.op.symbol();
                        let right = match c.operand {
                            fixlog_match::pattern::IdOperand::Node(o) => Ok(index(o)),
                            fixlog_match::pattern::IdOperand::Constant(v) => Err(v),
                        };
                        (index(c.node), op, right)
                    })
                    .collect(),
                returned: None,
                limit: None,
            };
            for semantics in [Semantics::Iso, Semantics::Homo] {
                let expected = brute_force(&tg, &tp, semantics).len() as u64;
                assert_eq!(
                    graph.count_with(&pattern, semantics).unwrap(),
                    expected,
                    "case {case} {semantics:?} undirected {}: {text}\n{}\n{}",
                    tg.undirected,
                    tg.edge_text(),
                    graph.explain(&pattern, semantics)
                );
            }
        }
    }
}

/// A random pattern of a family that symmetry breaking is written for (clique, cycle,
/// path, star), maybe with labels, maybe directed, with a `WHERE` that is the family's
/// usual symmetry breaking (order-independent), a random chain of comparisons (mostly
/// not), or none; always `RETURN count(*)`.
fn random_family_pattern(rng: &mut Rng, directed_graph: bool) -> TestPattern {
    const NODE_NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];
    let family = rng.below(4);
    let (k, pairs): (usize, Vec<(usize, usize)>) = match family {
        0 => {
            let k = 3 + rng.below(2) as usize;
            let mut pairs = Vec::new();
            for i in 0..k {
                for j in i + 1..k {
                    pairs.push((i, j));
                }
            }
            (k, pairs)
        }
        1 => {
            let k = 3 + rng.below(3) as usize;
            (k, (0..k).map(|i| (i, (i + 1) % k)).collect())
        }
        2 => {
            let k = 2 + rng.below(3) as usize;
            (k, (0..k - 1).map(|i| (i, i + 1)).collect())
        }
        _ => {
            let k = 3 + rng.below(2) as usize;
            (k, (1..k).map(|i| (0, i)).collect())
        }
    };
    let directed = directed_graph && rng.chance(30);
    let edges: Vec<(usize, usize, Dir, Option<&'static str>)> = pairs
        .iter()
        .map(|&(a, b)| (a, b, if directed { Dir::Right } else { Dir::Both }, None))
        .collect();
    let mut labels = vec![Vec::new(); k];
    let mut conditions = Vec::new();
    if rng.chance(25) {
        let p = rng.below(k as u64) as usize;
        let l = LABELS[rng.below(2) as usize];
        labels[p].push(l);
        conditions.push(format!("{}:{l}", NODE_NAMES[p]));
    }
    let mut comparisons: Vec<(usize, &'static str, Result<usize, u64>)> = Vec::new();
    match rng.below(3) {
        // The family's usual symmetry breaking.
        0 => match family {
            0 => comparisons.extend((0..k - 1).map(|i| (i, "<", Ok(i + 1)))),
            1 => {
                comparisons.extend((1..k).map(|i| (0, "<", Ok(i))));
                comparisons.push((1, "<", Ok(k - 1)));
            }
            2 => comparisons.push((0, "<", Ok(k - 1))),
            _ => comparisons.extend((1..k - 1).map(|i| (i, "<", Ok(i + 1)))),
        },
        // A random chain.
        1 => {
            const CHAIN_OPS: [&str; 5] = ["<", "<=", ">", ">=", "<>"];
            for _ in 0..1 + rng.below(k as u64) {
                let a = rng.below(k as u64) as usize;
                let b = rng.below(k as u64) as usize;
                comparisons.push((a, CHAIN_OPS[rng.below(5) as usize], Ok(b)));
            }
        }
        _ => {}
    }
    for &(a, op, b) in &comparisons {
        let b = b.unwrap();
        conditions.push(format!("id({}) {op} id({})", NODE_NAMES[a], NODE_NAMES[b]));
    }
    let arrow = if directed { "-->" } else { "--" };
    let paths: Vec<String> = pairs
        .iter()
        .map(|&(a, b)| format!("({}){arrow}({})", NODE_NAMES[a], NODE_NAMES[b]))
        .collect();
    let mut text = format!("MATCH {}", paths.join(", "));
    if !conditions.is_empty() {
        text.push_str(&format!(" WHERE {}", conditions.join(" AND ")));
    }
    text.push_str(" RETURN count(*)");
    TestPattern {
        text,
        k,
        labels,
        edges,
        comparisons,
        returned: None,
        limit: None,
    }
}

/// Counting in degree order: on random graphs (degrees unrelated to ids) and random
/// clique/cycle/path/star patterns with and without symmetry breaking, the count
/// (`count_with`, which takes the degree order when the planner allows) equals the
/// count in id order and the brute force. Where the planner refuses the degree order,
/// counting on the degree-ordered copy anyway must sometimes differ (so the check is
/// needed, and the test can tell the orders apart).
#[test]
fn degree_order_counts_agree_with_id_order_and_brute_force() {
    let mut rng = Rng(777);
    let (mut used, mut refused, mut refused_and_different, mut descending) = (0, 0, 0, 0);
    for case in 0..400 {
        let n = 5 + rng.below(4) as usize;
        // Ids scattered, so the id order is no degree order.
        let ids: Vec<u64> = (0..n as u64).map(|i| (i * 7919) % 101).collect();
        let m = n + rng.below(3 * n as u64) as usize;
        let edges: Vec<(u64, u64, Option<&str>)> = (0..m)
            .map(|_| {
                // Skewed: low positions are hubs.
                let s = ids[(rng.below(n as u64) * rng.below(n as u64) / n as u64) as usize];
                let d = ids[rng.below(n as u64) as usize];
                (s, d, None)
            })
            .collect();
        let labels = ids
            .iter()
            .map(|&id| {
                let ls = LABELS[..2]
                    .iter()
                    .copied()
                    .filter(|_| rng.chance(50))
                    .collect();
                (id, ls)
            })
            .collect();
        let tg = TestGraph {
            ids,
            edges,
            labels,
            undirected: rng.chance(60),
        };
        let graph = Graph::from_text(
            &tg.edge_text(),
            Some(&tg.node_text()),
            &LoadOptions {
                undirected: tg.undirected,
            },
        )
        .unwrap();
        for _ in 0..4 {
            let tp = random_family_pattern(&mut rng, !tg.undirected);
            let pattern = Pattern::parse(&tp.text).unwrap();
            let semantics = Semantics::Iso;
            let expected = brute_force(&tg, &tp, semantics).len() as u64;
            let context = || {
                format!(
                    "case {case}, undirected {}: {}\nedges:\n{}nodes:\n{}\n{}",
                    tg.undirected,
                    tp.text,
                    tg.edge_text(),
                    tg.node_text(),
                    graph.explain(&pattern, semantics)
                )
            };
            let id_order = fixlog_match::exec::count(&graph.plan(&pattern, semantics));
            let counted = graph.count_with(&pattern, semantics).unwrap();
            let on_copy = graph
                .degree_ordered()
                .count_with(&pattern, semantics)
                .unwrap();
            assert_eq!(id_order, expected, "id order; {}", context());
            assert_eq!(counted, expected, "count; {}", context());
            let decision = graph.count_order(&pattern, semantics);
            assert_eq!(
                graph.count_plan(&pattern, semantics).degree_order,
                decision.degree_order
            );
            if decision.degree_order {
                used += 1;
                assert_eq!(on_copy, expected, "degree order; {}", context());
                // Both orientations, whichever the planner chose.
                for p in [pattern.clone(), fixlog_match::order::flipped(&pattern)] {
                    let plan = graph.degree_ordered().plan(&p, semantics);
                    assert!(plan.degree_order);
                    assert_eq!(
                        fixlog_match::exec::count(&plan),
                        expected,
                        "degree order, {}; {}",
                        p.text,
                        context()
                    );
                }
                descending += decision.descending as usize;
            } else if !tp.comparisons.is_empty() {
                refused += 1;
                refused_and_different += (on_copy != expected) as usize;
            }
            // Under homo semantics the id order is kept.
            assert!(!graph.count_order(&pattern, Semantics::Homo).degree_order);
        }
    }
    eprintln!(
        "degree order used {used} times ({descending} descending), refused {refused} \
         ({refused_and_different} differ)"
    );
    assert!(
        descending > 10,
        "descending degree order chosen only {descending} times"
    );
    assert!(used > 300, "degree order used only {used} times");
    assert!(refused > 200, "degree order refused only {refused} times");
    assert!(
        refused_and_different > 10,
        "only {refused_and_different} refused patterns count differently in degree order"
    );
}

/// Clique patterns (every two pattern nodes joined; triangles to 5-cliques, directed or
/// undirected pattern edges, sometimes repeated) with random comparisons between
/// pattern nodes, on random graphs with self-loops, repeated and typed edges: the count
/// is `cliques × (rankings satisfying the comparisons)` ([`fixlog_match::clique`]) and
/// must equal the brute force, the plan run in id order (the forward-list kernel of
/// `exec` where the plan is a chain) and the count on the degree-ordered copy.
#[test]
fn clique_counts_agree_with_brute_force() {
    const OPS: [&str; 6] = ["<", "<=", ">", ">=", "<>", "="];
    let mut rng = Rng(31337);
    let (mut fast, mut nonzero) = (0, 0);
    for case in 0..600 {
        let n = 4 + rng.below(5) as usize;
        let ids: Vec<u64> = (0..n as u64).map(|i| (i * 7919) % 101).collect();
        let m = 2 * n + rng.below(4 * n as u64) as usize;
        let typed = rng.chance(20);
        let edges: Vec<(u64, u64, Option<&str>)> = (0..m)
            .map(|_| {
                let s = ids[(rng.below(n as u64) * rng.below(n as u64) / n as u64) as usize];
                let d = ids[rng.below(n as u64) as usize];
                (s, d, typed.then(|| TYPES[rng.below(2) as usize]))
            })
            .collect();
        let tg = TestGraph {
            ids: ids.clone(),
            edges,
            labels: ids.iter().map(|&id| (id, Vec::new())).collect(),
            undirected: rng.chance(70),
        };
        let graph = Graph::from_text(
            &tg.edge_text(),
            None,
            &LoadOptions {
                undirected: tg.undirected,
            },
        )
        .unwrap();
        let k = 3 + rng.below(3) as usize;
        let directed = rng.chance(25);
        let mut edges = Vec::new();
        let mut paths = Vec::new();
        for i in 0..k {
            for j in i + 1..k {
                let (a, b) = if rng.chance(50) { (i, j) } else { (j, i) };
                for _ in 0..1 + rng.chance(10) as usize {
                    let dir = if directed { Dir::Right } else { Dir::Both };
                    edges.push((a, b, dir, None));
                    let arrow = if directed { "-->" } else { "--" };
                    paths.push(format!("(n{a}){arrow}(n{b})"));
                }
            }
        }
        let mut comparisons: Vec<(usize, &'static str, Result<usize, u64>)> = Vec::new();
        match rng.below(4) {
            0 => comparisons.extend((0..k - 1).map(|i| (i, "<", Ok(i + 1)))),
            1 => {}
            _ => {
                for _ in 0..rng.below(k as u64 + 1) {
                    let a = rng.below(k as u64) as usize;
                    let b = rng.below(k as u64) as usize;
                    let ops = if rng.chance(90) { 5 } else { 6 };
                    let op = OPS[rng.below(ops) as usize];
                    comparisons.push((a, op, Ok(b)));
                }
            }
        }
        let mut text = format!("MATCH {}", paths.join(", "));
        if !comparisons.is_empty() {
            let conditions: Vec<String> = comparisons
                .iter()
                .map(|&(a, op, b)| format!("id(n{a}) {op} id(n{})", b.unwrap()))
                .collect();
            text.push_str(&format!(" WHERE {}", conditions.join(" AND ")));
        }
        text.push_str(" RETURN count(*)");
        let tp = TestPattern {
            text,
            k,
            labels: vec![Vec::new(); k],
            edges,
            comparisons,
            returned: None,
            limit: None,
        };
        let pattern = Pattern::parse(&tp.text).unwrap();
        let semantics = Semantics::Iso;
        let expected = brute_force(&tg, &tp, semantics).len() as u64;
        let context = || {
            format!(
                "case {case}, undirected {}: {}\nedges:\n{}",
                tg.undirected,
                tp.text,
                tg.edge_text()
            )
        };
        let is_clique =
            fixlog_match::clique::ranking_factor(&pattern, semantics, tg.undirected).is_some();
        fast += is_clique as usize;
        nonzero += (expected > 0) as usize;
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let planned = fixlog_match::exec::count(&graph.plan(&pattern, semantics));
                assert_eq!(planned, expected, "plan in id order; {}", context());
                assert_eq!(
                    graph.count_with(&pattern, semantics).unwrap(),
                    expected,
                    "count; {}",
                    context()
                );
                if is_clique {
                    assert_eq!(
                        graph
                            .degree_ordered()
                            .count_with(&pattern, semantics)
                            .unwrap(),
                        expected,
                        "on the degree-ordered copy; {}",
                        context()
                    );
                    assert!(graph.count_order(&pattern, semantics).degree_order);
                }
            });
        }
        if is_clique && tg.undirected {
            // The stored edge count read off the forward lists is the adjacency's.
            let again =
                Graph::from_text(&tg.edge_text(), None, &LoadOptions { undirected: true }).unwrap();
            let key = fixlog_match::graph::AdjacencyKey {
                direction: fixlog_match::graph::Direction::Out,
                edge_type: None,
            };
            assert_eq!(
                graph.edge_count(),
                again.adjacency(key).edge_count(),
                "{}",
                context()
            );
        }
    }
    eprintln!("{fast} clique patterns counted by the clique path, {nonzero} nonzero");
    assert!(
        fast > 400 && nonzero > 200,
        "{fast} clique patterns, {nonzero} nonzero"
    );
}

/// On a larger random graph (the parallel builders' sizes), cliques counted along the
/// degree-ordered forward lists equal the generic matcher's count in id order (a
/// constant comparison keeps the pattern off both clique kernels) and the
/// forward-list kernel on the plan, with and without symmetry breaking.
#[test]
fn clique_counts_on_a_larger_graph() {
    let mut rng = Rng(4242);
    let n = 3000u64;
    let mut text = String::new();
    for _ in 0..300_000 {
        // Skewed degrees: low ids are hubs.
        let s = rng.below(n) * rng.below(n) / n;
        let d = rng.below(n);
        text.push_str(&format!("{s}\t{d}\n"));
    }
    let graph = Graph::from_text(&text, None, &LoadOptions { undirected: true }).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    pool.install(|| {
        for (k, chain, all) in [
            (3, "id(a) < id(b) AND id(b) < id(c)", "(a)--(b)--(c)--(a)"),
            (
                4,
                "id(a) < id(b) AND id(b) < id(c) AND id(c) < id(d)",
                "(a)--(b)--(c)--(a), (a)--(d), (b)--(d), (c)--(d)",
            ),
        ] {
            let uniq =
                Pattern::parse(&format!("MATCH {all} WHERE {chain} RETURN count(*)")).unwrap();
            let emb = Pattern::parse(&format!("MATCH {all} RETURN count(*)")).unwrap();
            let generic = Pattern::parse(&format!(
                "MATCH {all} WHERE {chain} AND id(a) <> 123456789 RETURN count(*)"
            ))
            .unwrap();
            let cliques = graph.count_with(&uniq, Semantics::Iso).unwrap();
            assert!(cliques > 1000, "{k}-cliques: {cliques}");
            assert_eq!(
                fixlog_match::exec::count(&graph.plan(&generic, Semantics::Iso)),
                cliques
            );
            assert_eq!(
                fixlog_match::exec::count(&graph.plan(&uniq, Semantics::Iso)),
                cliques
            );
            let factorial: u64 = (1..=k as u64).product();
            assert_eq!(
                graph.count_with(&emb, Semantics::Iso).unwrap(),
                factorial * cliques
            );
        }
    });
}
