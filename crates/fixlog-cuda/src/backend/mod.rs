//! The CUDA backend: [`fixlog_exec::Backend`] on the device layer (work in progress:
//! this commit only fixes its entry points).

use fixlog_exec::driver::{DriverOptions, RunResult, Tuples};
use fixlog_exec::{ExecError, ExecResult};
use fixlog_logical::{Program, SymbolTable};
use fixlog_plan::Plan;

/// How to run on the GPU.
#[derive(Clone, Debug, Default)]
pub struct CudaOptions {
    /// The CUDA device ordinal.
    pub device: usize,
    /// The most device memory to use, in bytes (`None`: 90% of what is free).
    pub memory_limit: Option<usize>,
    /// Threads for the work done on the host (`None`: all cores).
    pub host_threads: Option<usize>,
}

/// Runs `plan` on the GPU.
pub fn run(
    _program: &Program,
    _plan: &Plan,
    _initial: Vec<Tuples>,
    _symbols: &SymbolTable,
    _options: &DriverOptions,
    _cuda: &CudaOptions,
) -> ExecResult<RunResult> {
    Err(ExecError::Backend(
        "the CUDA backend is not finished in this commit".into(),
    ))
}
