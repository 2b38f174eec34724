//! Primitive benchmarks: throughput (elements/s) and GB/s moved, next to the
//! device's measured copy bandwidth. Usage: gpu_bench [max_log10_n] (default 9).
//! Timed with CUDA events around each operation (outputs come from the pool,
//! so repetitions after the first allocate nothing); median of the reps.
//! Environment: FIXLOG_BENCH_MERGE=1 only unique, merge and difference (from
//! 10^8); FIXLOG_BENCH_MIN_LOG first size; FIXLOG_BENCH_REPS repetitions (1
//! under a profiler). Needs the `bench` feature (device-side data generators).

use fixlog_cuda::cpu::{Col, JoinSpec};
use fixlog_cuda::{CudaError, Gpu, Rel};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

struct B<'g> {
    gpu: &'g Gpu,
    rows: Vec<String>,
    copy_gbs: f64,
}

impl B<'_> {
    /// Time `f` `reps` times (setup excluded), return median ms.
    fn time(
        &self,
        reps: usize,
        mut setup: impl FnMut() -> Result<(), CudaError>,
        mut f: impl FnMut() -> Result<(), CudaError>,
    ) -> Result<f64, CudaError> {
        let mut v = vec![];
        for _ in 0..reps {
            setup()?;
            self.gpu.sync()?;
            let a = self.gpu.event()?;
            f()?;
            let b = self.gpu.event()?;
            b.synchronize()
                .map_err(|e| CudaError::Invalid(format!("{e:?}")))?;
            v.push(
                a.elapsed_ms(&b)
                    .map_err(|e| CudaError::Invalid(format!("{e:?}")))? as f64,
            );
        }
        Ok(median(v))
    }
    fn row(&mut self, prim: &str, arity: usize, n: usize, ms: f64, bytes: f64, note: &str) {
        let gbs = bytes / ms / 1e6;
        let line = format!(
            "| {prim} | {arity} | {n:.0e} | {ms:.3} | {:.2} | {gbs:.0} | {:.0}% | {note} |",
            n as f64 / ms / 1e6,
            100.0 * gbs / self.copy_gbs
        );
        println!("{line}");
        self.rows.push(line);
    }
}

fn random_rel(gpu: &Gpu, n: usize, a: usize, seed: u32, mask: u32) -> Result<Rel, CudaError> {
    let buf = gpu.alloc(n * a * 4)?;
    gpu.fill_random(buf.ptr(), n * a, seed, mask)?;
    Ok(Rel { buf, n, arity: a })
}

fn main() -> Result<(), CudaError> {
    let max_log: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(9);
    let gpu = Gpu::new(0, None)?;
    gpu.warm_up(&[1, 2])?;
    println!(
        "device: {} ({} SMs, {:.1} GiB)",
        gpu.name(),
        gpu.sm_count(),
        gpu.total_mem() as f64 / (1u64 << 30) as f64
    );
    let mut b = B {
        gpu: &gpu,
        rows: vec![],
        copy_gbs: 1.0,
    };

    // copy bandwidth: 2 GiB device-to-device, bytes read + written
    {
        let n = 1usize << 31;
        let src = gpu.alloc(n)?;
        let dst = gpu.alloc(n)?;
        gpu.fill_random(src.ptr(), n / 4, 1, u32::MAX)?;
        let ms = b.time(7, || Ok(()), || gpu.dtod(dst.ptr(), src.ptr(), n))?;
        b.copy_gbs = 2.0 * n as f64 / ms / 1e6;
        println!(
            "copy bandwidth: {:.0} GB/s (read+write, 2 GiB cuMemcpyDtoD, {ms:.3} ms)",
            b.copy_gbs
        );
    }
    println!("| primitive | arity | n | ms | Gelem/s | GB/s | % of copy | note |");
    println!("|---|---|---|---|---|---|---|---|");
    // FIXLOG_BENCH_MERGE=1: only unique, merge and difference, 10^8 and up
    // (FIXLOG_BENCH_MIN_LOG lowers or raises the start)
    let merge_only = std::env::var("FIXLOG_BENCH_MERGE").is_ok_and(|v| v == "1");
    let min_log: u32 = std::env::var("FIXLOG_BENCH_MIN_LOG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if merge_only { 8 } else { 6 });
    for lg in min_log..=max_log {
        let n = 10usize.pow(lg);
        // FIXLOG_BENCH_REPS: repetitions per figure (1 under a profiler)
        let reps = std::env::var("FIXLOG_BENCH_REPS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(if lg >= 9 { 3 } else { 5 });
        // scan (u32)
        if !merge_only {
            let inp = random_rel(&gpu, n, 1, 3, 15)?;
            let out = gpu.alloc_u32(n)?;
            let ms = b.time(
                reps,
                || Ok(()),
                || gpu.exclusive_scan(inp.buf.ptr(), n, out.ptr()).map(|_| ()),
            )?;
            b.row("exclusive scan u32", 1, n, ms, 8.0 * n as f64, "");
        }
        // compaction, arity 2, half kept
        if !merge_only {
            let rel = random_rel(&gpu, n, 2, 4, u32::MAX)?;
            let flags = gpu.alloc_u32(n)?;
            gpu.fill_flags(flags.ptr(), n, 9)?;
            let ms = b.time(
                reps,
                || Ok(()),
                || gpu.compact(rel.view(), flags.ptr()).map(|_| ()),
            )?;
            b.row(
                "compaction (50%)",
                2,
                n,
                ms,
                (4 + 8 + 4) as f64 * n as f64,
                "flags+rows in, half out",
            );
        }
        // sort: arity 1 (32-bit keys) and 2 (64-bit keys), full random bits; and TC-like ids < 2^20
        let sorts: &[(usize, u32, &str)] = if merge_only {
            &[]
        } else {
            &[
                (1, u32::MAX, "32-bit keys"),
                (2, u32::MAX, "64-bit keys"),
                (2, (1 << 20) - 1, "2x20-bit ids"),
            ]
        };
        for &(a, mask, note) in sorts {
            if lg >= 9 && a == 2 && mask != u32::MAX {
                continue;
            }
            let src = random_rel(&gpu, n, a, 5, mask)?;
            let work = std::cell::RefCell::new(gpu.copy(src.view())?);
            let mut passes = 0;
            let ms = b.time(
                reps,
                || gpu.dtod(work.borrow().buf.ptr(), src.buf.ptr(), src.bytes()),
                || {
                    passes = gpu.sort(&mut work.borrow_mut())?;
                    Ok(())
                },
            )?;
            if lg <= 8 || a == 1 {
                let got = gpu.download(work.borrow().view())?;
                let sorted = got
                    .chunks(a)
                    .zip(got.chunks(a).skip(1))
                    .all(|(x, y)| x <= y);
                if !sorted {
                    println!("SORT WRONG: arity {a} n {n} {note}");
                }
            }
            // bytes: one histogram read of the rows, then per pass one read + one write
            b.row(
                "radix sort",
                a,
                n,
                ms,
                ((passes * 2 + 1) * 4 * a) as f64 * n as f64,
                &format!("{note}, {passes} passes"),
            );
        }
        // unique + merge + difference on sorted, unique random data (arity 2)
        {
            let half = n / 2;
            let mut x = random_rel(&gpu, half, 2, 11, (1 << 24) - 1)?;
            let mut y = random_rel(&gpu, half, 2, 12, (1 << 24) - 1)?;
            gpu.sort(&mut x)?;
            gpu.sort(&mut y)?;
            let ms = b.time(reps, || Ok(()), || gpu.unique(x.view()).map(|_| ()))?;
            b.row(
                "unique",
                2,
                half,
                ms,
                8.0 * 2.0 * half as f64,
                "sorted input, ~all distinct",
            );
            let x = gpu.unique(x.view())?;
            let y = gpu.unique(y.view())?;
            let tot = x.n + y.n;
            let ms = b.time(
                reps,
                || Ok(()),
                || gpu.merge(x.view(), y.view()).map(|_| ()),
            )?;
            b.row("merge", 2, tot, ms, 16.0 * tot as f64, "two sorted halves");
            let ms = b.time(
                reps,
                || Ok(()),
                || gpu.merge_bounds(x.view(), y.view(), 2048).map(|_| ()),
            )?;
            b.row(
                "merge-path partition only",
                2,
                tot,
                ms,
                16.0 * tot as f64,
                "tile 2048: part of merge and difference",
            );
            let mut dn = 0;
            let ms = b.time(
                reps,
                || Ok(()),
                || {
                    dn = gpu.difference_with(x.view(), y.view(), Some(false))?.n;
                    Ok(())
                },
            )?;
            b.row(
                "set difference",
                2,
                tot,
                ms,
                (8 * tot + 8 * dn) as f64,
                "a-b, |a|=|b|; one fused pass",
            );
            let m = gpu.merge(x.view(), y.view())?;
            let q = x.view().slice(0, x.n / 64);
            for (method, name) in [(false, "tiles"), (true, "binary search")] {
                let ms = b.time(
                    reps,
                    || Ok(()),
                    || gpu.difference_with(q, m.view(), Some(method)).map(|_| ()),
                )?;
                b.row(
                    &format!("set difference ({name}) |a|=|b|/128"),
                    2,
                    q.n + m.n,
                    ms,
                    8.0 * (q.n + m.n) as f64,
                    "small a, large b",
                );
            }
        }
        // HISA build + join: edges with ~1 out-edge per node on average
        if lg <= 8 && !merge_only {
            // node ids below the next power of two of n: about one out-edge per node
            let mut e = random_rel(&gpu, n, 2, 21, (n.next_power_of_two() - 1) as u32)?;
            gpu.sort(&mut e)?;
            let e = gpu.unique(e.view())?;
            let en = e.n;
            let ms = b.time(
                reps,
                || Ok(()),
                || gpu.build_hisa(gpu.copy(e.view())?, 1).map(|_| ()),
            )?;
            b.row(
                "HISA build (kc=1)",
                2,
                en,
                ms,
                8.0 * en as f64 * 3.0,
                "incl. copy of the relation",
            );
            let h = gpu.build_hisa(gpu.copy(e.view())?, 1)?;
            let spec = JoinSpec::new(&[1], &[Col::Outer(0), Col::Inner(1)], &[]);
            let mut out = 0;
            let ms = b.time(
                reps,
                || Ok(()),
                || {
                    out = gpu.join(e.view(), &h, &spec)?.n;
                    Ok(())
                },
            )?;
            b.row(
                "join (count+scan+write)",
                2,
                en,
                ms,
                (16 * en + 8 * out) as f64,
                &format!("{out} outputs"),
            );
        }
        gpu.trim_pool();
    }
    println!(
        "\n## primitives ({}; copy bandwidth {:.0} GB/s)",
        gpu.name(),
        b.copy_gbs
    );
    println!("| primitive | arity | n | ms | Gelem/s | GB/s | % of copy | note |");
    println!("|---|---|---|---|---|---|---|---|");
    for r in &b.rows {
        println!("{r}");
    }
    Ok(())
}
