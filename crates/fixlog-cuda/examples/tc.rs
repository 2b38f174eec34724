//! Transitive closure wired directly from the primitives (semi-naive):
//!   new   = π(x,z)(delta(x,y) ⋈ edge(y,z))      two-pass join against the edge HISA;
//!                                               each write block drops its repeats
//!   new   = sort(new)                           only the bits node ids use
//!   delta = unique(new) − full                  one compaction after clearing the keep-flags
//!                                               against each sorted run of full
//!   full  = full ∪ delta                        LSM-style: delta becomes a new run;
//!                                               runs are merged while the older one is
//!                                               not at least FACTOR times larger
//! so full is never rewritten as a whole per iteration (GDlog rewrites it).
//!
//! Usage: tc [--data DIR] [--factor F] [graph ...]   (default: the ten graphs)
//! Prints graph, TC size, expected size, iterations, time, GDlog time, ratio.

use fixlog_cuda::cpu::{Col, JoinSpec};
use fixlog_cuda::{CudaError, Gpu, Rel};
use std::io::Read;
use std::time::Instant;

const GDLOG: &[(&str, f64)] = &[
    ("cal.cedge", 0.134),
    ("ego-Facebook", 0.048),
    ("CA-HepTh", 0.333),
    ("fe_sphere", 0.579),
    ("SF.cedge", 0.710),
    ("fe_body", 1.047),
    ("loc-Brightkite", 0.312),
    ("p2p-Gnutella31", 2.444),
    ("usroads", 9.513),
    ("fe_ocean", 10.393),
];

fn load_edges(path: &str) -> std::io::Result<Vec<u32>> {
    let f = std::fs::File::open(path)?;
    let mut s = String::new();
    flate2::read::GzDecoder::new(f).read_to_string(&mut s)?;
    let mut e: Vec<(u32, u32)> = s
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
        })
        .collect();
    e.sort_unstable();
    e.dedup();
    Ok(e.into_iter().flat_map(|(a, b)| [a, b]).collect())
}

#[derive(Default, Debug)]
struct Stats {
    iters: usize,
    size: usize,
    join: f64,
    sort: f64,
    diff: f64,
    merge: f64,
    max_runs: usize,
    outputs: usize,
}

fn tc(gpu: &Gpu, edges: &[u32], factor: usize, profile: bool) -> Result<Stats, CudaError> {
    let mut st = Stats::default();
    // FIXLOG_TC_PLAIN=1: the plain join (keeps every repeat), for comparison
    let plain = std::env::var("FIXLOG_TC_PLAIN").is_ok();
    let lap = |t: &mut Instant| -> Result<f64, CudaError> {
        if profile {
            gpu.sync()?;
        }
        let s = t.elapsed().as_secs_f64();
        *t = Instant::now();
        Ok(s)
    };
    // node ids are below 2^bits: only those bits are sorted on
    let max = edges.iter().copied().max().unwrap_or(0);
    let m = if max == 0 {
        0
    } else {
        u32::MAX >> max.leading_zeros()
    };
    let vary = [m, m];
    let edge = gpu.upload(edges, 2)?;
    let index = gpu.build_hisa(gpu.copy(edge.view())?, 1)?;
    let spec = JoinSpec::new(&[1], &[Col::Outer(0), Col::Inner(1)], &[]);
    let mut delta = gpu.copy(edge.view())?;
    let mut runs: Vec<Rel> = vec![edge];
    let mut t = Instant::now();
    loop {
        st.iters += 1;
        // repeats within one block of 4,096 outputs are dropped as they are written
        let new = if plain {
            gpu.join(delta.view(), &index, &spec)?
        } else {
            gpu.join_dedup(delta.view(), &index, &spec)?
        };
        st.outputs += new.n;
        st.join += lap(&mut t)?;
        let mut new = new;
        gpu.sort_bits(&mut new, Some(&vary))?;
        st.sort += lap(&mut t)?;
        // unique + difference with every run of full, one compaction
        let views: Vec<_> = runs.iter().map(|r| r.view()).collect();
        let new = gpu.unique_minus(new.view(), &views)?;
        st.diff += lap(&mut t)?;
        if new.n == 0 {
            break;
        }
        runs.push(gpu.copy(new.view())?);
        delta = new;
        while runs.len() >= 2 && runs[runs.len() - 2].n < factor * runs[runs.len() - 1].n {
            let b = runs.pop().unwrap();
            let a = runs.pop().unwrap();
            runs.push(gpu.merge(a.view(), b.view())?);
        }
        st.max_runs = st.max_runs.max(runs.len());
        st.merge += lap(&mut t)?;
    }
    st.size = runs.iter().map(|r| r.n).sum();
    Ok(st)
}

fn main() -> Result<(), CudaError> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut data = std::env::var("FIXLOG_DATA").unwrap_or_else(|_| "../shared/data".into());
    let mut factor = 2usize;
    let profile = std::env::var("FIXLOG_PROFILE").is_ok();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--data" => {
                data = args.remove(i + 1);
                args.remove(i);
            }
            "--factor" => {
                factor = args.remove(i + 1).parse().expect("--factor N");
                args.remove(i);
            }
            _ => i += 1,
        }
    }
    let graphs: Vec<String> = if args.is_empty() {
        GDLOG.iter().map(|g| g.0.to_string()).collect()
    } else {
        args
    };
    let truth = std::fs::read_to_string(format!("{data}/ground_truth.tsv")).unwrap_or_default();
    let expected = |g: &str| -> (Option<usize>, Option<usize>) {
        for l in truth.lines() {
            let f: Vec<&str> = l.split('\t').collect();
            if f.len() > 4 && f[0] == g && f[1] == "TC" {
                return (f[3].parse().ok(), f[4].parse().ok());
            }
        }
        (None, None)
    };
    let gpu = Gpu::new(0, None)?;
    gpu.warm_up(&[1, 2])?;
    println!(
        "device: {} ({} SMs, {:.1} GiB); run factor {factor}",
        gpu.name(),
        gpu.sm_count(),
        gpu.total_mem() as f64 / (1u64 << 30) as f64
    );
    let mut rows = vec![];
    for g in &graphs {
        let edges = match load_edges(&format!("{data}/graphs/{g}.tsv.gz")) {
            Ok(e) => e,
            Err(e) => {
                println!("{g}: cannot load: {e}");
                continue;
            }
        };
        let (want, want_it) = expected(g);
        let gd = GDLOG.iter().find(|x| x.0 == g).map(|x| x.1);
        // warm run on the smallest graphs is cheap; time one run
        let t = Instant::now();
        let res = tc(&gpu, &edges, factor, profile).and_then(|s| gpu.sync().map(|_| s));
        let secs = t.elapsed().as_secs_f64();
        let line = match res {
            Ok(st) => {
                let ok = want == Some(st.size) && want_it.is_none_or(|w| w == st.iters);
                println!(
                    "{g}: size {} iters {} join outputs kept {} time {secs:.3}s (join {:.3} sort {:.3} unique+diff {:.3} merge {:.3}{}; max runs {}) pool high-water {:.2} GiB",
                    st.size,
                    st.iters,
                    st.outputs,
                    st.join,
                    st.sort,
                    st.diff,
                    st.merge,
                    if profile { "" } else { ", enqueue times only: set FIXLOG_PROFILE" },
                    st.max_runs,
                    gpu.pool_stats().high_water as f64 / (1u64 << 30) as f64
                );
                format!(
                    "| {g} | {} | {} | {} | {} ({}) | {secs:.3} | {} | {} | {} |",
                    edges.len() / 2,
                    st.size,
                    want.map_or("?".into(), |w| w.to_string()),
                    st.iters,
                    want_it.map_or("?".into(), |w| w.to_string()),
                    gd.map_or("-".into(), |x| format!("{x:.3}")),
                    gd.map_or("-".into(), |x| format!("{:.2}", secs / x)),
                    if ok { "exact" } else { "WRONG" }
                )
            }
            Err(e) => {
                println!("{g}: error: {e}");
                format!(
                    "| {g} | {} | error | {} | - | - | - | - | {e} |",
                    edges.len() / 2,
                    want.map_or("?".into(), |w| w.to_string())
                )
            }
        };
        rows.push(line);
        gpu.trim_pool();
    }
    println!("\n| graph | edges | TC size | expected | iterations (expected) | time s | GDlog s | ratio | count |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    Ok(())
}
