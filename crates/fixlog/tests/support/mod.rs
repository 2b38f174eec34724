//! Shared test helpers: the naive reference evaluator, the random program generator,
//! and the backend the suites run on.
//!
//! Every suite runs on the CPU by default (CI has no GPU). `FIXLOG_TEST_BACKEND=cuda`
//! runs the same suites through the CUDA backend (on the GPU machine, see
//! `scripts/gpu.sh`), `auto` lets Fixlog choose; `FIXLOG_TEST_GPU_MEMORY_LIMIT=BYTES`
//! bounds the GPU's memory.

#![allow(dead_code)]

pub mod gen;
pub mod reference;

use fixlog::{BackendKind, RunOptions};

/// The backend the suites run on (`FIXLOG_TEST_BACKEND`: `cpu`, the default, `cuda` or
/// `auto`).
pub fn backend() -> BackendKind {
    match std::env::var("FIXLOG_TEST_BACKEND").as_deref() {
        Ok("cuda") => BackendKind::Cuda,
        Ok("auto") => BackendKind::Auto,
        _ => BackendKind::Cpu,
    }
}

/// The same, as the command line's `--backend` value.
pub fn backend_arg() -> &'static str {
    match backend() {
        BackendKind::Cuda => "cuda",
        BackendKind::Auto => "auto",
        BackendKind::Cpu => "cpu",
    }
}

/// `FIXLOG_TEST_GPU_MEMORY_LIMIT`, in bytes.
pub fn gpu_memory_limit() -> Option<usize> {
    std::env::var("FIXLOG_TEST_GPU_MEMORY_LIMIT")
        .ok()
        .and_then(|v| v.parse().ok())
}

/// Options for a run on the suites' backend with `jobs` threads.
pub fn options(jobs: Option<usize>) -> RunOptions {
    RunOptions {
        backend: backend(),
        gpu_memory_limit: gpu_memory_limit(),
        jobs,
        ..RunOptions::default()
    }
}

/// A `.gz` file's text (outputs are compared by what they hold: compressed bytes depend
/// on the compressor), any other file's bytes.
pub fn gunzipped(file: &std::path::Path, bytes: &[u8]) -> Vec<u8> {
    if file.extension().is_none_or(|e| e != "gz") {
        return bytes.to_vec();
    }
    let mut text = Vec::new();
    match std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(bytes), &mut text) {
        Ok(_) => text,
        Err(e) => format!("not gzip: {e}").into_bytes(),
    }
}
