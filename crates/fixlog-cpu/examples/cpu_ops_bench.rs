//! Micro-benchmark of the CPU backend's operators on arity-2 relations.
//!
//! ```text
//! cargo run --release -p fixlog-cpu --example cpu_ops_bench [-- -j THREADS] [--tc EDGES.tsv]
//! ```
//!
//! Prints one line per operator and size: seconds and millions of tuples per second.
//! With `--tc`, also runs a semi-naive transitive closure
//! (`path(x,z) :- path(x,y), edge(y,z)`) over a `src<TAB>dst` edge list.

use fixlog_cpu::{CpuBackend, CpuBatch, CpuCode};
use fixlog_exec::{Backend, EvalContext, OpSpec};
use fixlog_logical::SymbolTable;
use fixlog_plan::PExpr;
use rayon::prelude::*;
use std::time::Instant;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn rows(seed: u64, n: usize, domain: u32) -> Vec<u32> {
    let mut rng = Rng(seed);
    (0..2 * n)
        .map(|_| (rng.next() % domain as u64) as u32)
        .collect()
}

fn time<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed().as_secs_f64())
}

fn line(op: &str, n: usize, secs: f64, out: usize) {
    println!(
        "{op:<28} {n:>10} {secs:>9.3} {:>10.1} {out:>12}",
        n as f64 / secs / 1e6
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let threads = args
        .iter()
        .position(|a| a == "-j")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let tc = args
        .iter()
        .position(|a| a == "--tc")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    pool.install(|| {
        println!("threads: {}", rayon::current_num_threads());
        if args.iter().any(|a| a == "--sort") {
            let be = CpuBackend;
            for _ in 0..3 {
                let n = 10_000_000;
                let batch = CpuBatch::from_rows(2, rows(1, n, 12000), n);
                let (full, s) = time(|| be.sort_unique(batch).unwrap());
                line("sort_unique", n, s, be.relation_len(&full));
            }
        } else if let Some(path) = tc {
            transitive_closure(&path);
        } else {
            ops();
        }
    });
}

/// The scan of (x, y) and the join `(x, y) ⋈ edge(y, z) → (x, z)`, prepared.
fn tc_codes(be: &CpuBackend) -> (CpuCode, CpuCode) {
    let scan = OpSpec::Scan {
        arity: 2,
        filters: vec![],
        project: vec![PExpr::Col(0), PExpr::Col(1)],
    };
    let join = OpSpec::Join {
        input_arity: 2,
        order: vec![0, 1],
        key_len: 1,
        key: vec![PExpr::Col(1)],
        filters: vec![],
        project: vec![PExpr::Col(0), PExpr::Col(3)],
        distinct: false,
    };
    (
        be.prepare_one(&scan).unwrap(),
        be.prepare_one(&join).unwrap(),
    )
}

fn ops() {
    let be = CpuBackend;
    let syms = SymbolTable::new();
    let ctx = EvalContext::new(&syms);
    println!(
        "{:<28} {:>10} {:>9} {:>10} {:>12}",
        "operator", "rows", "seconds", "Mrows/s", "out rows"
    );
    for &n in &[1_000_000usize, 3_000_000, 10_000_000] {
        // A random graph with n/2 nodes: join fan-out about 2.
        let domain = (n / 2) as u32;
        let data = rows(1, n, domain);

        // Baseline: rayon's parallel comparison sort of packed u64 + dedup.
        let mut packed: Vec<u64> = data
            .par_chunks(2)
            .map(|r| ((r[0] as u64) << 32) | r[1] as u64)
            .collect();
        let (_, s) = time(|| {
            packed.par_sort_unstable();
            packed.dedup();
        });
        line("baseline par_sort_unstable", n, s, packed.len());
        drop(packed);

        let batch = CpuBatch::from_rows(2, data.clone(), n);
        let (full, s) = time(|| be.sort_unique(batch).unwrap());
        line("sort_unique", n, s, be.relation_len(&full));

        // merge of two relations of n and n/2 tuples (one-run result forced by sizes).
        let other = be.relation_from_rows(2, rows(2, n / 2, domain)).unwrap();
        let (u, s) = time(|| be.merge(&full, &other).unwrap());
        line("merge n ∪ n/2", n + n / 2, s, be.relation_len(&u));
        // merge with a small delta: the LSM append path.
        let small = be.relation_from_rows(2, rows(3, n / 100, domain)).unwrap();
        let (u2, s) = time(|| be.merge(&full, &small).unwrap());
        line("merge n ∪ n/100 (append)", n / 100, s, be.relation_len(&u2));
        drop((u, u2));

        let (d, s) = time(|| be.difference(&other, &full).unwrap());
        line("difference n/2 − n", n + n / 2, s, be.relation_len(&d));
        let (d, s) = time(|| be.difference(&small, &full).unwrap());
        line("difference n/100 − n", n / 100, s, be.relation_len(&d));

        // join: input n rows (x, y) with an index on edge(y, z) of n rows keyed on y.
        let edge = be.relation_from_rows(2, rows(4, n, domain)).unwrap();
        let (idx, s) = time(|| be.build_index(&edge, &[0, 1], 1).unwrap());
        line("build_index (n, identity)", n, s, be.index_len(&idx));
        let (idx2, s) = time(|| be.build_index(&full, &[1, 0], 1).unwrap());
        line("build_index (n, permuted)", n, s, be.index_len(&idx2));
        drop(idx2);
        let (scan, join) = tc_codes(&be);
        let input = be.scan(&full, &scan, &ctx).unwrap();
        let (j, s) = time(|| be.join(&input, &idx, &join, &ctx).unwrap());
        let jn = be.batch_len(&j);
        line("join (input rows/s)", n, s, jn);
        println!(
            "{:<28} {:>10} {:>9.3} {:>10.1}",
            "join (output rows/s)",
            jn,
            s,
            jn as f64 / s / 1e6
        );
        let (r, s) = time(|| be.sort_unique(j).unwrap());
        line("sort_unique of join output", jn, s, be.relation_len(&r));
        println!();
    }
}

fn transitive_closure(path: &str) {
    let be = CpuBackend;
    let syms = SymbolTable::new();
    let ctx = EvalContext::new(&syms);
    let text = std::fs::read_to_string(path).expect("read edges");
    let mut data = Vec::new();
    for l in text.lines() {
        let mut it = l.split_whitespace();
        if let (Some(a), Some(b)) = (it.next(), it.next()) {
            if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                data.push(a);
                data.push(b);
            }
        }
    }
    let (scan, join) = tc_codes(&be);
    let t0 = Instant::now();
    let edge = be.relation_from_rows(2, data).unwrap();
    let idx = be.build_index(&edge, &[0, 1], 1).unwrap();
    let mut full = edge.clone();
    let mut delta = edge;
    let (mut tj, mut ts, mut td, mut tm) = (0.0, 0.0, 0.0, 0.0);
    let mut iters = 0;
    while be.relation_len(&delta) > 0 {
        iters += 1;
        let (j, s) = time(|| {
            let d = be.scan(&delta, &scan, &ctx).unwrap();
            be.join(&d, &idx, &join, &ctx).unwrap()
        });
        tj += s;
        let (new, s) = time(|| be.sort_unique(j).unwrap());
        ts += s;
        let (d, s) = time(|| be.difference(&new, &full).unwrap());
        td += s;
        drop(new);
        let (f, s) = time(|| be.merge_disjoint(full.clone(), &d).unwrap());
        tm += s;
        full = f;
        delta = d;
    }
    println!(
        "tc: {} tuples, {iters} iterations, {:.2}s (join {tj:.2}, sort {ts:.2}, diff {td:.2}, merge {tm:.2}), runs {}",
        be.relation_len(&full),
        t0.elapsed().as_secs_f64(),
        full.run_count()
    );
}
