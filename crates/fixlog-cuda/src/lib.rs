//! Fixlog's CUDA backend: the second implementation of the operator interface
//! (`fixlog_exec::Backend`), on NVIDIA GPUs.
//!
//! - [`backend`]: the backend itself ([`run`] runs a plan with the semi-naive driver);
//! - [`codegen`]: CUDA C++ generated for each program's operators (one NVRTC module
//!   per program) and the rules for what must run on the host ([`placement`] says it
//!   for `explain`);
//! - the device layer below: [`gpu`] (context, NVRTC with a disk cache, the memory
//!   pool of [`pool`]), [`ops`] (relational primitives), [`kernels`] (the table of
//!   hand-written kernels).
//!
//! Built without the `cuda` feature the crate compiles to the probe (which says
//! "built without CUDA support"), the pool bookkeeping, the kernel table, the code
//! generator and the placement rules. With `cuda` (cudarc loads `libcuda` and
//! `libnvrtc` at run time, so the same binary runs where there is no CUDA), [`Gpu`]
//! adds:
//!
//! * NVRTC compilation of the CUDA C++ sources in `kernels/` on first use, for
//!   the device's architecture, cached on disk keyed by a hash of source,
//!   options and device ([`gpu`]);
//! * a geometric, reusing device memory pool with a byte limit ([`pool`]);
//! * the relational primitives on row-major `u32` tuples of arity 1..=8
//!   ([`ops`]): exclusive scan, compaction, lexicographic radix sort, unique,
//!   merge, set difference, the hash-indexed sorted array (HISA) and a two-pass
//!   join with fused projection and filters.
//!
//! Layout: relations are **row-major** (tuple = `arity` consecutive words).
//! An LSD radix pass then moves each tuple with one contiguous (vectorised for
//! arity 2 and 4) load and store, instead of moving a key plus a permutation and
//! gathering every column at the end; merge, difference and unique compare
//! whole tuples with one load each; a join reads its outer tuple in one load.
//! Measured with the same onesweep sort on arity-2 data: row-major is 8-12%
//! faster than two column arrays from 10^7 rows up (the column-wise variant
//! was removed after that measurement). `docs/gpu-results.md` records the
//! measurements.
//!
//! The `bench` feature (implies `cuda`) adds the device-side data generators
//! `Gpu::fill_random` and `Gpu::fill_flags` that the `gpu_bench` example uses.
//!
//! Every driver and NVRTC result is checked and converted to [`CudaError`].

pub mod codegen;
pub mod cpu;
pub mod error;
pub mod kernels;
pub mod placement;
pub mod pool;
pub mod probe;

#[cfg(feature = "cuda")]
#[macro_use]
pub mod gpu;
#[cfg(feature = "cuda")]
pub mod backend;
#[cfg(feature = "cuda")]
pub mod matching;
#[cfg(feature = "cuda")]
pub mod ops;
#[cfg(feature = "cuda")]
pub mod vmm;

pub use error::{CudaError, Result};
pub use probe::{probe, Probe};

#[cfg(feature = "cuda")]
pub use backend::{run, CudaOptions};
#[cfg(feature = "cuda")]
pub use gpu::{DevBuf, Gpu};
#[cfg(feature = "cuda")]
pub use ops::{Hisa, HisaTable, Rel, View};
