//! Typed errors: every CUDA driver / NVRTC result is turned into one of these.

/// Errors of the device layer. Out-of-memory (pool limit or device) is an
/// ordinary value so callers can split work or fall back to the CPU.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    #[error("CUDA not available: {0}")]
    Unavailable(String),
    #[error("CUDA driver error in {context}: {message}")]
    Driver { context: String, message: String },
    #[error("NVRTC compilation of {module} failed: {log}")]
    Compile { module: String, log: String },
    #[error(
        "out of device memory: requested {requested} bytes, {in_use} in use, limit {limit} bytes{}",
        if *.device { " (device allocation failed)" } else { " (pool limit)" }
    )]
    OutOfMemory {
        requested: usize,
        in_use: usize,
        limit: usize,
        device: bool,
    },
    #[error("unknown kernel {module}::{function}")]
    UnknownKernel { module: String, function: String },
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// An error of shared code (the run policy, the CPU backend's host operators)
    /// inside a device-layer function.
    #[error("{0}")]
    Exec(fixlog_exec::ExecError),
    #[error("I/O error on kernel cache {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

pub type Result<T> = std::result::Result<T, CudaError>;

#[cfg(feature = "cuda")]
impl CudaError {
    pub(crate) fn driver(context: &str, e: cudarc::driver::DriverError) -> Self {
        CudaError::Driver {
            context: context.to_string(),
            message: format!("{e:?}"),
        }
    }
}

#[cfg(feature = "cuda")]
impl From<cudarc::driver::DriverError> for CudaError {
    fn from(e: cudarc::driver::DriverError) -> Self {
        CudaError::driver("driver call", e)
    }
}
