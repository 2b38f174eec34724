//! The operator interface's conformance suite (`fixlog_exec::conformance`) on the CUDA
//! backend: every check, with its outcome, then a summary line. Exit status 1 if any
//! check failed.
//!
//!   cuda_conformance [--memory-limit BYTES] [CHECK_NAME_SUBSTRING...]
//!
//! With a memory limit the device pool is capped, so the checks also exercise the
//! out-of-memory paths (a check may then fail with an out-of-memory error, which is a
//! correct refusal, reported as such, not a wrong answer).

use fixlog_cuda::backend::CudaBackend;
use fixlog_cuda::Gpu;
use fixlog_exec::conformance;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut limit = None;
    if let Some(i) = args.iter().position(|a| a == "--memory-limit") {
        limit = args.get(i + 1).and_then(|v| v.parse::<usize>().ok());
        args.drain(i..(i + 2).min(args.len()));
    }
    let gpu = match Gpu::new(0, limit) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("cannot open the GPU: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "device: {} ({} SMs); pool limit {:?}",
        gpu.name(),
        gpu.sm_count(),
        limit
    );
    // With the drops of absorbed joins on, so `join_absorbed` checks them (`fixlog
    // run` turns them on only under `--gpu-memory-limit`); the absorbed joins' checks
    // run a second time with the bitmap joins (`P_jnew`) off, so both ways are checked.
    let gpu = std::rc::Rc::new(gpu);
    let backends = match (
        CudaBackend::new(gpu.clone(), None),
        CudaBackend::new(gpu, None),
    ) {
        (Ok(a), Ok(b)) => [
            (a.with_absorbed_drops(true), ""),
            (
                b.with_absorbed_drops(true).with_new_rows_joins(false),
                " (bitmap joins off)",
            ),
        ],
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("cannot start the backend: {e}");
            std::process::exit(2);
        }
    };
    let backend = &backends[0].0;
    // Panics are caught and reported per check; keep their messages short.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let mut msg: String = msg.chars().take(3000).collect();
        if msg.len() >= 3000 {
            msg.push_str(" ...");
        }
        eprintln!("  panic at {at}: {msg}");
    }));
    let (mut passed, mut failed) = (0, 0);
    for (backend, how) in &backends {
        for (name, check) in conformance::checks::<CudaBackend>() {
            if !args.is_empty() && !args.iter().any(|a| name.contains(a.as_str())) {
                continue;
            }
            if !how.is_empty() && !name.starts_with("join_absorbed") {
                continue;
            }
            let t = Instant::now();
            let r = catch_unwind(AssertUnwindSafe(|| check(backend)));
            let secs = t.elapsed().as_secs_f64();
            match r {
                Ok(()) => {
                    passed += 1;
                    println!("PASS {name}{how} ({secs:.2} s)");
                }
                Err(_) => {
                    failed += 1;
                    println!("FAIL {name}{how} ({secs:.2} s)");
                }
            }
        }
    }
    let c = backend.gpu().compile_stats();
    println!(
        "conformance on the GPU: {passed} passed, {failed} failed; kernels compiled {} ({:.0} ms), from the disk cache {}; pool high-water {:.1} MiB",
        c.compiled,
        c.compile_ms,
        c.disk_hits,
        backend.gpu().pool_stats().high_water as f64 / (1u64 << 20) as f64
    );
    if failed > 0 {
        std::process::exit(1);
    }
}
