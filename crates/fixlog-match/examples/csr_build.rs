//! How long building the CSR adjacency takes, serial against parallel, on a random
//! power-law graph (Chung-Lu as `scripts/gen-powerlaw.py`: both ends of each edge drawn
//! with probability proportional to `(i + 10) ^ -alpha` (an alias table), ids a random
//! permutation, no
//! self-loops drawn; read as undirected, so every edge is a pair both ways).
//!
//! ```text
//! cargo run --release -p fixlog-match --example csr_build -- NODES EDGES [options]
//!     --threads 1,16    thread counts to time (default: 1 and every core)
//!     --runs 3          runs per figure (the median is printed)
//!     --alpha 0.75      power-law exponent of the weights
//!     --no-load         skip the loading rows (they hold the edge list as text)
//!     --no-csr          skip the rows of the CSR builders
//! ```
//!
//! Rows: the serial and the parallel counting sort (`Graph::build_adjacency_with`,
//! the same graph), a parallel sort of packed `u64` keys (the alternative design, here
//! only); then what a user pays: `Graph::from_text`, the first `Graph::adjacency` and
//! the degree-ordered copy with its adjacency. Every builder's CSR is checked equal to
//! the serial one's. For the figures before the parallel builder, build this example on
//! an older commit with `build_adjacency_with(key, _)` replaced by `adjacency(key)` and
//! run it with `--no-csr` (docs/match-results.md).

use fixlog_match::graph::{AdjacencyKey, Direction, NodeIndex};
use fixlog_match::{Graph, GraphBuilder, LoadOptions};
use rayon::prelude::*;
use std::time::Instant;

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `edges` draws of `(src, dst)` internal numbers (ids are `ids[number]`), self-loops
/// skipped.
fn power_law(nodes: usize, edges: usize, alpha: f64) -> (Vec<u64>, Vec<(u32, u32)>) {
    // Walker's alias table: node `i` with probability `(i + 10) ^ -alpha / total`.
    let weights: Vec<f64> = (0..nodes).map(|i| (i as f64 + 10.0).powf(-alpha)).collect();
    let total: f64 = weights.iter().sum();
    let mut scaled: Vec<f64> = weights.iter().map(|w| w * nodes as f64 / total).collect();
    let mut alias = vec![0u32; nodes];
    let (mut small, mut large): (Vec<usize>, Vec<usize>) =
        (0..nodes).partition(|&i| scaled[i] < 1.0);
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        alias[s] = l as u32;
        scaled[l] -= 1.0 - scaled[s];
        if scaled[l] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    for i in small.into_iter().chain(large) {
        scaled[i] = 1.0;
    }
    // A random permutation of the ids (Fisher-Yates).
    let mut ids: Vec<u64> = (0..nodes as u64).collect();
    let mut state = 1u64;
    for i in (1..nodes).rev() {
        let j = (splitmix(&mut state) % (i as u64 + 1)) as usize;
        ids.swap(i, j);
    }
    const CHUNK: usize = 1 << 16;
    let draw = |state: &mut u64| {
        let r = splitmix(state);
        let i = (((r >> 32) * nodes as u64) >> 32) as usize;
        let p = (r & 0xffff_ffff) as f64 / (1u64 << 32) as f64;
        if p < scaled[i] {
            i as u32
        } else {
            alias[i]
        }
    };
    let pairs: Vec<(u32, u32)> = (0..edges.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|c| {
            let mut state = 0x5eed ^ ((c as u64) << 20);
            let count = CHUNK.min(edges - c * CHUNK);
            (0..count)
                .map(move |_| (draw(&mut state), draw(&mut state)))
                .filter(|(s, d)| s != d)
                .collect::<Vec<_>>()
        })
        .collect();
    (ids, pairs)
}

/// The alternative: `node << 32 | neighbour` keys sorted in parallel, deduplicated,
/// offsets by binary search.
fn sorted_keys_build(node_count: usize, edges: &[(u32, u32, u32)]) -> (Vec<usize>, Vec<NodeIndex>) {
    let mut keys: Vec<u64> = edges
        .par_iter()
        .flat_map_iter(|&(s, d, _)| {
            let (s, d) = (u64::from(s), u64::from(d));
            [(s << 32) | d, (d << 32) | s]
        })
        .collect();
    keys.par_sort_unstable();
    let keys: Vec<u64> = keys
        .par_iter()
        .enumerate()
        .filter(|&(i, k)| i == 0 || keys[i - 1] != *k)
        .map(|(_, &k)| k)
        .collect();
    let offsets = (0..=node_count)
        .into_par_iter()
        .map(|u| keys.partition_point(|&k| k >> 32 < u as u64))
        .collect();
    let targets = keys.par_iter().map(|&k| k as u32).collect();
    (offsets, targets)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: csr_build NODES EDGES [--threads 1,16] [--runs 3] [--alpha 0.75] [--no-load] [--no-csr]";
    let mut positional = Vec::new();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut threads = vec![1, cores];
    let (mut runs, mut alpha, mut load, mut csr) = (3usize, 0.75f64, true, true);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{usage}")).clone();
        match a.as_str() {
            "--threads" => {
                threads = value()
                    .split(',')
                    .map(|t| t.parse().unwrap_or_else(|_| panic!("{usage}")))
                    .collect()
            }
            "--runs" => {
                runs = value()
                    .parse::<usize>()
                    .unwrap_or_else(|_| panic!("{usage}"))
                    .max(1)
            }
            "--alpha" => alpha = value().parse().unwrap_or_else(|_| panic!("{usage}")),
            "--no-load" => load = false,
            "--no-csr" => csr = false,
            _ => positional.push(a.parse::<usize>().unwrap_or_else(|_| panic!("{usage}"))),
        }
    }
    threads.dedup();
    let [nodes, edges] = positional[..] else {
        panic!("{usage}")
    };

    let generated = Instant::now();
    let (ids, drawn) = power_law(nodes, edges, alpha);
    // Every node declared, so that the graph numbers them by id: `ids` (a permutation
    // of the node numbers: hubs scattered over the range, as in real data).
    let mut builder = GraphBuilder::new(true);
    for &id in &ids {
        builder.add_node(id);
    }
    for &(s, d) in &drawn {
        builder.add_edge(ids[s as usize], ids[d as usize], None);
    }
    let graph = builder.build().expect("a graph");
    // The graph's edges as it holds them (`(src, dst, type)`, type `u32::MAX`: none).
    let edge_list: Vec<(u32, u32, u32)> = drawn
        .iter()
        .map(|&(s, d)| (ids[s as usize] as u32, ids[d as usize] as u32, u32::MAX))
        .collect();
    eprintln!(
        "generated {} edges in {:.1} s",
        drawn.len(),
        generated.elapsed().as_secs_f64()
    );
    let text = load.then(|| {
        let pieces: Vec<String> = drawn
            .par_chunks(1 << 16)
            .map(|chunk| {
                let mut s = String::with_capacity(chunk.len() * 16);
                for &(a, b) in chunk {
                    use std::fmt::Write;
                    let _ = writeln!(s, "{}\t{}", ids[a as usize], ids[b as usize]);
                }
                s
            })
            .collect();
        pieces.concat()
    });
    drop((ids, drawn));

    let key = AdjacencyKey {
        direction: Direction::Out,
        edge_type: None,
    };
    let expected = graph.build_adjacency_with(key, usize::MAX);
    let (offsets, targets) = expected.csr();
    let max_degree = (0..nodes).map(|u| offsets[u + 1] - offsets[u]).max();
    println!(
        "{nodes} nodes, {} edges drawn (undirected: {} pairs), {} in the CSR (largest list {}); {cores} cores; median of {runs}",
        edge_list.len(),
        2 * edge_list.len(),
        targets.len(),
        max_degree.unwrap_or(0)
    );

    let mut rows: Vec<(&str, Vec<f64>)> = Vec::new();
    let mut row = |name, t: f64| match rows.iter_mut().find(|(n, _)| *n == name) {
        Some((_, ts)) => ts.push(t),
        None => rows.push((name, vec![t])),
    };
    for &t in &threads {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .expect("a thread pool");
        pool.install(|| {
            let time = |f: &mut dyn FnMut()| {
                median(
                    (0..runs)
                        .map(|_| {
                            let start = Instant::now();
                            f();
                            start.elapsed().as_secs_f64()
                        })
                        .collect(),
                )
            };
            if csr {
                row(
                    "CSR serial counting sort",
                    time(&mut || {
                        let got = graph.build_adjacency_with(key, usize::MAX);
                        assert!(got.csr() == (offsets, targets));
                    }),
                );
                row(
                    "CSR parallel counting sort",
                    time(&mut || {
                        let got = graph.build_adjacency_with(key, 0);
                        assert!(got.csr() == (offsets, targets));
                    }),
                );
                row(
                    "CSR parallel sort of packed u64 keys",
                    time(&mut || {
                        let got = sorted_keys_build(nodes, &edge_list);
                        assert!(got.0 == offsets && got.1 == targets);
                    }),
                );
            }
            if let Some(text) = &text {
                let options = LoadOptions { undirected: true };
                let (mut load, mut adjacency, mut ordered) = (vec![], vec![], vec![]);
                for _ in 0..runs {
                    let start = Instant::now();
                    let graph = Graph::from_text(text, None, &options).expect("a graph");
                    load.push(start.elapsed().as_secs_f64());
                    let start = Instant::now();
                    assert_eq!(graph.adjacency(key).edge_count(), targets.len());
                    adjacency.push(start.elapsed().as_secs_f64());
                    let start = Instant::now();
                    let copy = graph.degree_ordered();
                    assert_eq!(copy.adjacency(key).edge_count(), targets.len());
                    ordered.push(start.elapsed().as_secs_f64());
                }
                row("Graph::from_text (load, undirected)", median(load));
                row("Graph::adjacency (first use)", median(adjacency));
                row("degree-ordered copy + its adjacency", median(ordered));
            }
        });
    }
    let header: Vec<String> = threads
        .iter()
        .map(|t| format!("{t} thread{} s", if *t == 1 { "" } else { "s" }))
        .collect();
    println!("| step | {} |", header.join(" | "));
    println!("|---|{}", "---:|".repeat(threads.len()));
    for (name, ts) in rows {
        let cells: Vec<String> = ts.iter().map(|t| format!("{t:.3}")).collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
}
