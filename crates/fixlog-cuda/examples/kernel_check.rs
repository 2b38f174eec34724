//! Compile every kernel module, in every variant the primitives use, and the
//! generated operator kernels of `codegen::coverage_ops` (`generated.ptx`, its
//! source `generated.cu`), with NVRTC for one architecture and write the PTX
//! files: compile errors and (with `ptxas -v`, see scripts/kernel-check.sh)
//! register use and spills are seen here, without a GPU and before any device
//! time is spent.
//!
//!   kernel_check OUT_DIR [ARCH=sm_90] [INCLUDE_DIR...]
use fixlog_cuda::codegen::{coverage_ops, module_source};
use fixlog_cuda::gpu::{arity_defines, compile_ptx, compile_source_ptx, join_defines};
use fixlog_cuda::kernels::{JOIN, KERNELS, MISC, SCAN};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(out) = args.first() else {
        eprintln!("usage: kernel_check OUT_DIR [ARCH] [INCLUDE_DIR...]");
        std::process::exit(2);
    };
    let arch: &'static str = Box::leak(
        args.get(1)
            .cloned()
            .unwrap_or_else(|| "sm_90".into())
            .into_boxed_str(),
    );
    let includes: Vec<String> = args.iter().skip(2).cloned().collect();
    std::fs::create_dir_all(out).expect("create output folder");
    let mut failed = 0;
    let mut written = 0;
    for m in KERNELS {
        let variants: Vec<String> = match m.name {
            SCAN | MISC => vec![String::new()],
            JOIN => [(1, 1), (2, 2), (2, 3), (3, 2), (4, 4)]
                .iter()
                .map(|&(a, b)| join_defines(a, b))
                .collect(),
            _ => (1..=8).map(arity_defines).collect(),
        };
        for d in variants {
            match compile_ptx(m, &d, arch, &includes) {
                Ok(ptx) => {
                    let tag = d.replace("-D", "").replace(['=', ' '], "");
                    let f = format!(
                        "{out}/{}{}{tag}.ptx",
                        m.name,
                        if tag.is_empty() { "" } else { "-" }
                    );
                    std::fs::write(&f, ptx.to_src()).expect("write ptx");
                    written += 1;
                }
                Err(e) => {
                    failed += 1;
                    eprintln!("{e}");
                }
            }
        }
    }
    // The generated operator kernels: one module over a spread of operators, compiled
    // as the backend compiles it (self-contained, no include path).
    match module_source(&coverage_ops()) {
        Ok(src) => {
            std::fs::write(format!("{out}/generated.cu"), &src).expect("write source");
            let options = ["-std=c++17".to_string(), "--fmad=false".to_string()];
            let t = std::time::Instant::now();
            match compile_source_ptx("generated", &src, &options, arch, &[]) {
                Ok(ptx) => {
                    println!(
                        "generated module: {} operators, {} kernels, NVRTC {:.1} s",
                        coverage_ops().len(),
                        fixlog_cuda::kernels::defined_kernels(&src).len(),
                        t.elapsed().as_secs_f64()
                    );
                    std::fs::write(format!("{out}/generated.ptx"), ptx.to_src())
                        .expect("write ptx");
                    written += 1;
                }
                Err(e) => {
                    failed += 1;
                    eprintln!("{e}");
                }
            }
        }
        Err(e) => {
            failed += 1;
            eprintln!("generating the operator module: {e}");
        }
    }
    println!("{written} modules compiled for {arch}, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
}
