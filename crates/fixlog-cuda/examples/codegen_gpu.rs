//! The generated operator kernels on a GPU.
//!
//! 1. Checks every operator of `codegen::coverage_ops` (every kind, arities 0..12, keys
//!    0..3, every device-able operator and type, filters, rotated index orders) on
//!    random data against a CPU reference built on `fixlog_logical::value`, launching
//!    the kernels exactly as the kernel contract says (grids from the Rust constants,
//!    `P_jcount` → exclusive scan → `P_jwrite` / `P_jwrite_distinct`, `P_anti` over
//!    several runs, one of them empty).
//! 2. Times the transitive-closure join (`tc_*`: IN=2, INNER=2, KEY=1, OUT=2) against
//!    the hand-written `join_count` / `join_write_lb` / `join_write_dedup` of join.cu on
//!    the same HISA, counts and offsets, and checks both give the same rows.
//!
//!   codegen_gpu [EDGES_LOG2=23]
#[path = "../tests/common/mod.rs"]
mod common;

use common::{anti_ref, chunks, join_ref, map_ref, sorted, stored, Rng};
use cudarc::driver::{CudaFunction, CudaModule, CudaStream, LaunchConfig, PushKernelArg};
use fixlog_cuda::codegen::{
    coverage_ops, module_source, DeviceOp, RunDesc, JC_BLOCK, JD_BLOCK, JD_ITEMS, JW_BLOCK,
    JW_ITEMS, MAP_BLOCK, MAP_ITEMS,
};
use fixlog_cuda::cpu::JoinSpec;
use fixlog_cuda::gpu::join_defines;
use fixlog_cuda::kernels::JOIN;
use fixlog_cuda::{CudaError, DevBuf, Gpu, View};
use fixlog_exec::OpSpec;
use fixlog_logical::SymbolTable;
use std::collections::HashSet;
use std::sync::Arc;

type R<T> = Result<T, CudaError>;

fn err(e: impl std::fmt::Debug) -> CudaError {
    CudaError::Invalid(format!("{e:?}"))
}

macro_rules! launch {
    ($stream:expr, $f:expr, $grid:expr, $block:expr, $($arg:expr),* $(,)?) => {{
        let grid: u64 = $grid as u64;
        if grid > 0 {
            let mut b = $stream.launch_builder(&$f);
            $(
                let a = $arg;
                b.arg(&a);
            )*
            let cfg = LaunchConfig {
                grid_dim: (grid as u32, 1, 1),
                block_dim: ($block as u32, 1, 1),
                shared_mem_bytes: 0,
            };
            unsafe { b.launch(cfg) }.map_err(err)?;
        }
    }};
}

/// Launches `f` with `args`, each a 64-bit kernel parameter (addresses and counts).
fn launch_words(
    stream: &CudaStream,
    f: &CudaFunction,
    grid: usize,
    block: u32,
    args: &[u64],
) -> R<()> {
    if grid == 0 {
        return Ok(());
    }
    let mut b = stream.launch_builder(f);
    for a in args {
        b.arg(a);
    }
    let cfg = LaunchConfig {
        grid_dim: (grid as u32, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    };
    unsafe { b.launch(cfg) }.map_err(err)?;
    Ok(())
}

// ---- the device side ---------------------------------------------------------------------

struct Dev {
    gpu: Gpu,
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
}

impl Dev {
    fn f(&self, name: &str) -> R<CudaFunction> {
        self.gpu.module_function(&self.module, name)
    }
    fn upload(&self, words: &[u32]) -> R<DevBuf> {
        let b = self.gpu.alloc(words.len().max(1) * 4)?;
        self.gpu.htod(b.ptr(), words)?;
        Ok(b)
    }
    fn counter(&self) -> R<DevBuf> {
        let c = self.gpu.alloc(8)?;
        self.gpu.memset8(c.ptr(), 0, 8)?;
        Ok(c)
    }
    fn read_rows(&self, out: &DevBuf, count: &DevBuf, arity: usize) -> R<(u64, Vec<Vec<u32>>)> {
        let n = self.gpu.dtoh::<u64>(count.ptr(), 1)?[0];
        let words = self.gpu.dtoh::<u32>(out.ptr(), n as usize * arity)?;
        Ok((n, chunks(&words, arity, n as usize)))
    }
}

/// A HISA over stored rows (or nothing for an empty run or a key of 0 columns).
struct Run {
    rows: DevBuf,
    n: usize,
    table: Option<fixlog_cuda::HisaTable>,
}

fn run_of(d: &Dev, rows: &[Vec<u32>], arity: usize, key: usize) -> R<Run> {
    let flat: Vec<u32> = rows.iter().flatten().copied().collect();
    let buf = d.upload(&flat)?;
    let table = if key > 0 && !rows.is_empty() {
        Some(d.gpu.hisa_table(
            View {
                ptr: buf.ptr(),
                n: rows.len(),
                arity,
            },
            key,
        )?)
    } else {
        None
    };
    Ok(Run {
        rows: buf,
        n: rows.len(),
        table,
    })
}

fn check_map(d: &Dev, op: &DeviceOp, rng: &mut Rng, n: usize, syms: &SymbolTable) -> R<String> {
    let (OpSpec::Scan { arity, project, .. } | OpSpec::Filter { arity, project, .. }) = &op.spec
    else {
        unreachable!()
    };
    let rows = rng.rows(n, *arity, 6);
    let input = d.upload(&rows)?;
    let in_ptr = if *arity == 0 { 0u64 } else { input.ptr() };
    let out_arity = project.len();
    let out = d.gpu.alloc((n * out_arity).max(1) * 4)?;
    let count = d.counter()?;
    let f = d.f(&format!("{}_map", op.prefix))?;
    let per = (MAP_BLOCK * MAP_ITEMS) as usize;
    launch!(
        d.stream,
        f,
        n.div_ceil(per),
        MAP_BLOCK,
        in_ptr,
        n as u64,
        out.ptr(),
        count.ptr()
    );
    let (_, got) = d.read_rows(&out, &count, out_arity)?;
    let want = map_ref(&op.spec, &rows, n, syms);
    if sorted(got.clone()) != sorted(want.clone()) {
        return Err(CudaError::Invalid(format!(
            "{}_map (n = {n}): {} rows, expected {}",
            op.prefix,
            got.len(),
            want.len()
        )));
    }
    Ok(format!("{} rows", want.len()))
}

fn check_join(
    d: &Dev,
    op: &DeviceOp,
    rng: &mut Rng,
    n: usize,
    m: usize,
    syms: &SymbolTable,
) -> R<String> {
    let OpSpec::Join {
        input_arity,
        order,
        key_len,
        project,
        ..
    } = &op.spec
    else {
        unreachable!()
    };
    let (ia, inner, kl, oa) = (*input_arity, order.len(), *key_len, project.len());
    let rows = rng.rows(n, ia, 4);
    let rel = chunks(&rng.rows(m, inner, 4), inner, m);
    let st = stored(&rel, order);
    let run = run_of(d, &st, inner, kl)?;
    let input = d.upload(&rows)?;
    let in_ptr = if ia == 0 { 0u64 } else { input.ptr() };
    let counts = d.gpu.alloc(n.max(1) * 4)?;
    let begins = d.gpu.alloc(n.max(1) * 4)?;
    let (starts, table, mask) = match &run.table {
        Some(t) => (t.starts.ptr(), t.table.ptr(), t.mask),
        None => (0, 0, 0),
    };
    let rows_ptr = if inner == 0 || run.n == 0 {
        0
    } else {
        run.rows.ptr()
    };
    let fc = d.f(&format!("{}_jcount", op.prefix))?;
    launch!(
        d.stream,
        fc,
        n.div_ceil(JC_BLOCK as usize),
        JC_BLOCK,
        in_ptr,
        n as u64,
        rows_ptr,
        starts,
        table,
        mask,
        run.n as u64,
        counts.ptr(),
        begins.ptr()
    );
    let c = d.gpu.dtoh::<u32>(counts.ptr(), n)?;
    let mut offsets = Vec::with_capacity(n);
    let mut total = 0u64;
    for &x in &c {
        offsets.push(total as u32);
        total += x as u64;
    }
    let offs = d.upload(&offsets)?;

    let (want_total, want) = join_ref(&op.spec, &rows, n, &st, syms);
    if total != want_total {
        return Err(CudaError::Invalid(format!(
            "{}_jcount (n = {n}): {total} candidates, expected {want_total}",
            op.prefix
        )));
    }
    let mut counts = [0u64; 2];
    for (suffix, block, items) in [
        ("jwrite", JW_BLOCK, JW_ITEMS),
        ("jwrite_distinct", JD_BLOCK, JD_ITEMS),
    ] {
        let out = d.gpu.alloc((total as usize * oa).max(1) * 4)?;
        let count = d.counter()?;
        let fw = d.f(&format!("{}_{suffix}", op.prefix))?;
        let grid = (total as usize).div_ceil((block * items) as usize);
        let mut args = vec![
            in_ptr,
            n as u64,
            rows_ptr,
            begins.ptr(),
            offs.ptr(),
            0u64,
            total,
            out.ptr(),
            count.ptr(),
        ];
        // `P_jwrite_distinct` also takes the cache of written rows (2 slots per
        // candidate) and the count of the rows it dropped.
        let slots = (2 * total as usize).max(64);
        let (seen, drops) = (d.gpu.alloc(slots * 8)?, d.counter()?);
        d.gpu.memset8(seen.ptr(), 0xFF, slots * 8)?;
        if suffix != "jwrite" {
            args.extend([seen.ptr(), slots as u64, drops.ptr()]);
        }
        let mut b = d.stream.launch_builder(&fw);
        for a in &args {
            b.arg(a);
        }
        let cfg = LaunchConfig {
            grid_dim: (grid as u32, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        if grid > 0 {
            unsafe { b.launch(cfg) }.map_err(err)?;
        }
        let (cnt, got) = d.read_rows(&out, &count, oa)?;
        counts[(suffix != "jwrite") as usize] = cnt;
        let ok = if suffix == "jwrite" || !(oa == 1 || oa == 2) {
            sorted(got.clone()) == sorted(want.clone())
        } else {
            let g: HashSet<Vec<u32>> = got.iter().cloned().collect();
            let w: HashSet<Vec<u32>> = want.iter().cloned().collect();
            g == w && got.len() <= want.len()
        };
        if !ok {
            return Err(CudaError::Invalid(format!(
                "{}_{suffix} (n = {n}, {total} candidates): {} rows, expected {}",
                op.prefix,
                got.len(),
                want.len()
            )));
        }
    }
    Ok(format!(
        "{total} candidates, {} rows, {} distinct-pass rows",
        counts[0], counts[1]
    ))
}

fn check_anti(
    d: &Dev,
    op: &DeviceOp,
    rng: &mut Rng,
    n: usize,
    m: usize,
    empty: bool,
    syms: &SymbolTable,
) -> R<String> {
    let OpSpec::AntiJoin {
        input_arity,
        order,
        key_len,
        ..
    } = &op.spec
    else {
        unreachable!()
    };
    let (ia, inner, kl) = (*input_arity, order.len(), *key_len);
    let rows = rng.rows(n, ia, 5);
    let m = if empty { 0 } else { m };
    let rel = chunks(&rng.rows(m, inner, 5), inner, m);
    // Two runs and an empty one.
    let (r1, r2) = rel.split_at(m / 3);
    let runs_rows = [stored(r1, order), Vec::new(), stored(r2, order)];
    let mut runs = Vec::new();
    let mut descs = Vec::new();
    for rr in &runs_rows {
        let r = run_of(d, rr, inner, kl)?;
        let (starts, table, mask) = match &r.table {
            Some(t) => (t.starts.ptr(), t.table.ptr(), t.mask),
            None => (0, 0, 0),
        };
        descs.push(RunDesc {
            rows: if r.n == 0 { 0 } else { r.rows.ptr() },
            starts,
            table,
            mask,
            pad: 0,
            n: r.n as u64,
        });
        runs.push(r);
    }
    let dbuf = d.gpu.alloc(descs.len() * std::mem::size_of::<RunDesc>())?;
    d.gpu.htod(dbuf.ptr(), &descs)?;
    let input = d.upload(&rows)?;
    let in_ptr = if ia == 0 { 0u64 } else { input.ptr() };
    let out = d.gpu.alloc((n * ia).max(1) * 4)?;
    let count = d.counter()?;
    let f = d.f(&format!("{}_anti", op.prefix))?;
    let per = (MAP_BLOCK * MAP_ITEMS) as usize;
    launch!(
        d.stream,
        f,
        n.div_ceil(per),
        MAP_BLOCK,
        in_ptr,
        n as u64,
        dbuf.ptr(),
        descs.len() as u32,
        out.ptr(),
        count.ptr()
    );
    let (_, got) = d.read_rows(&out, &count, ia)?;
    let want = anti_ref(&op.spec, &rows, n, &runs_rows, syms);
    if sorted(got.clone()) != sorted(want.clone()) {
        return Err(CudaError::Invalid(format!(
            "{}_anti (n = {n}, empty runs: {empty}): {} rows, expected {}",
            op.prefix,
            got.len(),
            want.len()
        )));
    }
    Ok(format!("{} of {n} kept", want.len()))
}

// ---- the transitive-closure benchmark -------------------------------------------------

fn time(
    d: &Dev,
    reps: usize,
    mut setup: impl FnMut() -> R<()>,
    mut f: impl FnMut() -> R<()>,
) -> R<f64> {
    let mut v = Vec::new();
    for _ in 0..reps {
        setup()?;
        d.gpu.sync()?;
        let a = d.gpu.event()?;
        f()?;
        let b = d.gpu.event()?;
        b.synchronize().map_err(err)?;
        v.push(a.elapsed_ms(&b).map_err(err)? as f64);
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Ok(v[v.len() / 2])
}

/// `n` rows of two words, packed and sorted.
fn packed(d: &Dev, out: &DevBuf, n: usize) -> R<Vec<u64>> {
    let mut v = d.gpu.dtoh::<u64>(out.ptr(), n)?;
    v.sort_unstable();
    Ok(v)
}

fn bench_tc(d: &Dev, module: &Arc<CudaModule>, name: &str, edges: &[u32], variant: &str) -> R<()> {
    let n = edges.len() / 2;
    let e = d.upload(edges)?;
    let view = View {
        ptr: e.ptr(),
        n,
        arity: 2,
    };
    let h = d.gpu.hisa_table(view, 1)?;
    let counts = d.gpu.alloc(n * 4)?;
    let begins = d.gpu.alloc(n * 4)?;
    let offsets = d.gpu.alloc(n * 4)?;
    let defs = join_defines(2, 2);
    let hc = d.gpu.function(JOIN, &defs, "join_count")?;
    let hw = d.gpu.function(JOIN, &defs, "join_write_lb")?;
    let hd = d.gpu.function(JOIN, &defs, "join_write_dedup")?;
    let f = |k: &str| d.gpu.module_function(module, k);
    let (gc, gw, gd) = (f("tc_jcount")?, f("tc_jwrite")?, f("tc_jwrite_distinct")?);
    let mut spec = JoinSpec {
        kc: 1,
        okey: [0; 8],
        nout: 2,
        proj: [0; 8],
        nfilt: 0,
        filt: [[0; 4]; 4],
    };
    spec.okey[0] = 1;
    spec.proj[0] = 0;
    spec.proj[1] = 256 | 1;
    let reps = 7;
    let cgrid = n.div_ceil(256);
    let t_hc = time(
        d,
        reps,
        || Ok(()),
        || {
            launch!(
                d.stream,
                hc,
                cgrid,
                256,
                e.ptr(),
                n as u64,
                e.ptr(),
                h.starts.ptr(),
                h.table.ptr(),
                h.mask,
                spec,
                counts.ptr(),
                begins.ptr()
            );
            Ok(())
        },
    )?;
    let hand_counts = d.gpu.dtoh::<u32>(counts.ptr(), n)?;
    let t_gc = time(
        d,
        reps,
        || Ok(()),
        || {
            launch!(
                d.stream,
                gc,
                n.div_ceil(JC_BLOCK as usize),
                JC_BLOCK,
                e.ptr(),
                n as u64,
                e.ptr(),
                h.starts.ptr(),
                h.table.ptr(),
                h.mask,
                n as u64,
                counts.ptr(),
                begins.ptr()
            );
            Ok(())
        },
    )?;
    let gen_counts = d.gpu.dtoh::<u32>(counts.ptr(), n)?;
    if hand_counts != gen_counts {
        return Err(CudaError::Invalid(
            "tc_jcount differs from join_count".into(),
        ));
    }
    let total = d.gpu.exclusive_scan(counts.ptr(), n, offsets.ptr())? as usize;
    let out = d.gpu.alloc(total * 8)?;
    let cnt = d.counter()?;
    let t_hw = time(
        d,
        reps,
        || Ok(()),
        || {
            launch!(
                d.stream,
                hw,
                total.div_ceil(256 * 8),
                256,
                e.ptr(),
                n as u64,
                e.ptr(),
                begins.ptr(),
                offsets.ptr(),
                total as u64,
                spec,
                out.ptr()
            );
            Ok(())
        },
    )?;
    let hand = packed(d, &out, total)?;
    // `P_jwrite`'s parameters (all candidates in one window), which
    // `P_jwrite_distinct` takes too, before the cache's.
    let jwrite_args = [
        e.ptr(),
        n as u64,
        e.ptr(),
        begins.ptr(),
        offsets.ptr(),
        0u64,
        total as u64,
        out.ptr(),
        cnt.ptr(),
    ];
    let t_gw = time(
        d,
        reps,
        || d.gpu.memset8(cnt.ptr(), 0, 8),
        || {
            launch_words(
                &d.stream,
                &gw,
                total.div_ceil((JW_BLOCK * JW_ITEMS) as usize),
                JW_BLOCK,
                &jwrite_args,
            )
        },
    )?;
    let c = d.gpu.dtoh::<u64>(cnt.ptr(), 1)?[0] as usize;
    if c != total || packed(d, &out, c)? != hand {
        return Err(CudaError::Invalid(
            "tc_jwrite differs from join_write_lb".into(),
        ));
    }
    let t_hd = time(
        d,
        reps,
        || d.gpu.memset8(cnt.ptr(), 0, 8),
        || {
            launch!(
                d.stream,
                hd,
                total.div_ceil(512 * 8),
                512,
                e.ptr(),
                n as u64,
                e.ptr(),
                begins.ptr(),
                offsets.ptr(),
                total as u64,
                spec,
                out.ptr(),
                cnt.ptr()
            );
            Ok(())
        },
    )?;
    let hand_d = d.gpu.dtoh::<u32>(cnt.ptr(), 1)?[0] as usize;
    let mut hand_set = packed(d, &out, hand_d)?;
    hand_set.dedup();
    // The generated distinct write, per block only (no cache of written rows, as
    // join_write_dedup) and with the device-wide cache of written rows as the backend
    // runs it (at most 2^22 slots; cleared before each run).
    let slots = (hand_set.len() * 3 / 2).clamp(8192, 1 << 22);
    let seen = d.gpu.alloc(slots * 8)?;
    let drops = d.gpu.alloc(8)?;
    let gd_time = |with_set: bool| -> R<(f64, usize)> {
        let t = time(
            d,
            reps,
            || {
                d.gpu.memset8(cnt.ptr(), 0, 8)?;
                d.gpu.memset8(seen.ptr(), 0xFF, slots * 8)
            },
            || {
                let mut args = jwrite_args.to_vec();
                args.extend([
                    seen.ptr(),
                    if with_set { slots as u64 } else { 0u64 },
                    drops.ptr(),
                ]);
                launch_words(
                    &d.stream,
                    &gd,
                    total.div_ceil((JD_BLOCK * JD_ITEMS) as usize),
                    JD_BLOCK,
                    &args,
                )
            },
        )?;
        let kept = d.gpu.dtoh::<u64>(cnt.ptr(), 1)?[0] as usize;
        let got = packed(d, &out, kept)?;
        let mut set = got.clone();
        set.dedup();
        if set != hand_set {
            return Err(CudaError::Invalid(format!(
                "tc_jwrite_distinct ({}) differs from join_write_dedup",
                if with_set {
                    "with the cache"
                } else {
                    "per block"
                }
            )));
        }
        Ok((t, kept))
    };
    let (t_gd, gd_n) = gd_time(false)?;
    let (t_gs, gs_n) = gd_time(true)?;
    let gbs = |ms: f64, bytes: f64| bytes / ms / 1e6;
    println!(
        "{name} ({variant}): {n} edges, {total} join outputs, {} distinct; dedup pass keeps {hand_d} (hand) / {gd_n} (generated)",
        hand_set.len()
    );
    println!(
        "  count   hand {t_hc:8.3} ms   generated {t_gc:8.3} ms   ({:.2}x)",
        t_hc / t_gc
    );
    println!(
        "  write   hand {t_hw:8.3} ms   generated {t_gw:8.3} ms   ({:.2}x)   generated writes {:.0} GB/s",
        t_hw / t_gw,
        gbs(t_gw, total as f64 * 8.0)
    );
    println!(
        "  dedup   hand {t_hd:8.3} ms   generated {t_gd:8.3} ms   ({:.2}x)",
        t_hd / t_gd
    );
    println!(
        "  dedup with the cache of written rows {t_gs:8.3} ms, keeps {gs_n} ({:.2}x the per-block time)",
        t_gs / t_gd
    );
    Ok(())
}

/// A random graph: `n` edges over `nodes` nodes, sorted, without repeats.
fn random_graph(rng: &mut Rng, nodes: u32, n: usize) -> Vec<u32> {
    let mut e: Vec<(u32, u32)> = (0..n)
        .map(|_| (rng.next() % nodes, rng.next() % nodes))
        .collect();
    e.sort_unstable();
    e.dedup();
    e.into_iter().flat_map(|(a, b)| [a, b]).collect()
}

/// A grid whose nodes link right, down and diagonally: many paths of two steps
/// between the same nodes (what the dedup pass is for).
fn grid_graph(side: u32) -> Vec<u32> {
    let mut e = Vec::new();
    for i in 0..side {
        for j in 0..side {
            let v = i * side + j;
            for (di, dj) in [(0, 1), (1, 0), (1, 1)] {
                if i + di < side && j + dj < side {
                    e.push((v, (i + di) * side + j + dj));
                }
            }
        }
    }
    e.sort_unstable();
    e.into_iter().flat_map(|(a, b)| [a, b]).collect()
}

fn main() -> R<()> {
    let log2: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(23);
    let gpu = Gpu::new(0, None)?;
    println!("device: {}", gpu.name());
    let ctx = cudarc::driver::CudaContext::new(0).map_err(err)?;
    let stream = ctx.default_stream();
    let ops = coverage_ops();
    let src = module_source(&ops).map_err(CudaError::Invalid)?;
    let t = std::time::Instant::now();
    let module = gpu.load_source("generated", &src, &["--fmad=false".to_string()])?;
    println!(
        "module of {} operators: {:.1} s to compile (or load)",
        ops.len(),
        t.elapsed().as_secs_f64()
    );
    let d = Dev {
        gpu,
        stream,
        module,
    };
    let syms = SymbolTable::new();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut failed = 0;
    for op in &ops {
        let mut notes = Vec::new();
        let r: R<()> = (|| {
            match &op.spec {
                OpSpec::Scan { .. } | OpSpec::Filter { .. } => {
                    for n in [0, 1, 1000, 5000] {
                        notes.push(check_map(&d, op, &mut rng, n, &syms)?);
                    }
                }
                OpSpec::Join { .. } => {
                    for (n, m) in [(1, 40), (37, 0), (1500, 300), (3000, 1)] {
                        notes.push(check_join(&d, op, &mut rng, n, m, &syms)?);
                    }
                }
                OpSpec::AntiJoin { .. } => {
                    for (n, m, empty) in [(1, 10, false), (3000, 100, false), (2000, 50, true)] {
                        notes.push(check_anti(&d, op, &mut rng, n, m, empty, &syms)?);
                    }
                }
                OpSpec::Aggregate { .. } | OpSpec::Intersect { .. } => {}
            }
            d.gpu.sync()
        })();
        match r {
            Ok(()) => println!("ok   {:10} {}", op.prefix, notes.join("; ")),
            Err(e) => {
                failed += 1;
                println!("FAIL {:10} {e}", op.prefix);
            }
        }
    }
    println!("{} operators checked, {failed} failed", ops.len());
    let edges = random_graph(&mut rng, 1 << (log2 - 2), 1 << log2);
    let grid = grid_graph(1u32 << (log2 / 2));
    // The same kernels without the shared-memory staging of their stores.
    let tc_ops: Vec<DeviceOp> = ops.iter().filter(|o| o.prefix == "tc").cloned().collect();
    let unstaged = format!(
        "#define FX_STAGE 0\n{}",
        module_source(&tc_ops).map_err(CudaError::Invalid)?
    );
    let unstaged = d
        .gpu
        .load_source("unstaged", &unstaged, &["--fmad=false".to_string()])?;
    for (name, e) in [("random", &edges), ("grid", &grid)] {
        for _ in 0..2 {
            bench_tc(&d, &unstaged, name, e, "unstaged")?;
            bench_tc(&d, &d.module, name, e, "staged")?;
        }
    }
    if failed > 0 {
        std::process::exit(1);
    }
    Ok(())
}
