//! The CUDA backend: [`fixlog_exec::Backend`] on one GPU.
//!
//! The semi-naive driver of `fixlog-exec` runs unchanged; this backend keeps every
//! relation, index and batch in device memory (`storage`) and implements the
//! operators on the device layer's primitives (`sets`: radix sort, unique, merge,
//! difference, HISA) and on kernels generated for the program (`code`,
//! [`crate::codegen`], run by `pipe`). Only the operators that need the host (string
//! functors, aggregates, see `code`) move their batches across the bus.
//!
//! Memory: every allocation comes from the device pool, whose limit
//! (`--gpu-memory-limit`, default 90% of the free memory) turns exhaustion into
//! `ExecError::OutOfMemory`; the driver then runs the pipeline over smaller pieces of
//! its input. [`run`] reports the pool's high-water mark as the peak device memory, and
//! the operator that reached it (every operator starts with `CudaBackend::enter`).
//!
//! Batches are bounded before memory runs out, too: a join counts its output before
//! writing it and, where the driver can split its input, asks for smaller pieces
//! (`ExecError::BatchTooLarge`) when the output would exceed a quarter of the room
//! left under the limit (`CudaBackend::batch_budget_bytes`; deduplicating a batch
//! needs about three times its size at once: the batch, the sort's second buffer and
//! the result). So a run whose relations fill the device derives in smaller pieces
//! instead of moving its relations to host memory: runs move there only when the
//! relations and indexes themselves pass three quarters of the limit, or after an
//! operator was refused memory (`CudaBackend::make_room`).

mod code;
mod new_rows;
mod pipe;
mod sets;
mod storage;

pub use code::CudaCode;
pub use storage::{CudaBatch, CudaIndex, CudaRelation};

use crate::error::{CudaError, Result};
use crate::gpu::Gpu;
use fixlog_cpu::CpuBackend;
use fixlog_exec::driver::{self, DriverOptions, OperatorTime, RunResult, Tuples};
use fixlog_exec::{
    check_rows, Absorbed, Backend, EvalContext, ExecError, ExecResult, OpSpec, PieceBudget,
};
use fixlog_logical::{Program, SymbolTable, Value};
use fixlog_plan::Plan;
use std::rc::Rc;
use std::sync::Arc;
use storage::DevRows;

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

/// Runs `plan` to its fixpoint on the GPU.
///
/// The device is opened once per thread and kept: later runs on the same thread reuse
/// its context and the kernels already loaded (a library that runs many programs pays
/// for the context once), with the memory limit and peaks set afresh.
pub fn run(
    program: &Program,
    plan: &Plan,
    initial: Vec<Tuples>,
    symbols: &SymbolTable,
    options: &DriverOptions,
    cuda: &CudaOptions,
) -> ExecResult<RunResult> {
    let gpu = thread_gpu(cuda.device).map_err(exec_error)?;
    gpu.set_pool_limit(cuda.memory_limit.unwrap_or(gpu.default_limit()));
    gpu.reset_memory_peaks();
    // Joins drop the rows of the relation they are absorbed into where the user bounds
    // device memory: a sort and a difference per window of the output cost time where
    // memory is plenty (SG 20-35%, TC up to 50%), and under a bound saved more than
    // they cost (SG CA-HepTh under 1 GiB 0.38 s, not 0.9-1.2 s; TC CA-HepTh under 0.8
    // GiB 0.16 s, not 0.25): docs/gpu-results.md, round 24.
    let backend =
        CudaBackend::new(gpu, cuda.host_threads)?.with_absorbed_drops(cuda.memory_limit.is_some());
    let mut result = driver::run(&backend, program, plan, initial, symbols, options)?;
    let (held, used) = backend.gpu.memory_peaks();
    result.stats.device = format!(
        "{}, {} SMs, {:.1} GiB; {} host threads",
        backend.gpu.name(),
        backend.gpu.sm_count(),
        backend.gpu.total_mem() as f64 / (1u64 << 30) as f64,
        backend.host.current_num_threads()
    );
    result.stats.peak_memory = Some(held);
    result.stats.peak_memory_in_use = Some(used);
    result.stats.peak_memory_where = backend.peak_memory_where();
    result.stats.peak_spilled = Some(backend.gpu.host_mapped_bytes().1);
    let mut times = backend.op_times.take();
    times.sort_by_key(|t| std::cmp::Reverse(t.time));
    result.stats.operators = times;
    Ok(result)
}

thread_local! {
    /// The devices this thread opened, by ordinal (`Gpu` is not `Send`: a context is
    /// used from the thread that made it).
    static GPUS: std::cell::RefCell<Vec<(usize, Rc<Gpu>)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// This thread's handle on device `ordinal`, opened on first use.
fn thread_gpu(ordinal: usize) -> Result<Rc<Gpu>> {
    GPUS.with(|gpus| {
        if let Some((_, g)) = gpus.borrow().iter().find(|(o, _)| *o == ordinal) {
            return Ok(g.clone());
        }
        let g = Rc::new(Gpu::new(ordinal, None)?);
        gpus.borrow_mut().push((ordinal, g.clone()));
        Ok(g)
    })
}

/// A device-layer error as the driver sees it: running out of memory stays
/// recognisable, so the driver can split the work.
pub(crate) fn exec_error(e: CudaError) -> ExecError {
    match e {
        CudaError::OutOfMemory { .. } => ExecError::OutOfMemory(e.to_string()),
        CudaError::Exec(e) => e,
        other => ExecError::Backend(other.to_string()),
    }
}

/// The other way, for errors of shared code (the run policy, the CPU backend) inside
/// device-layer functions.
pub(crate) fn cuda_error(e: ExecError) -> CudaError {
    CudaError::Exec(e)
}

/// The CUDA backend: one GPU, and the CPU backend with its own threads for the
/// operators that run on the host.
pub struct CudaBackend {
    pub(crate) gpu: Rc<Gpu>,
    pub(crate) cpu: CpuBackend,
    /// Threads for host work (`-j`); the driver and the device calls stay on the
    /// thread that owns the context.
    pub(crate) host: rayon::ThreadPool,
    /// The runs of relations and indexes (with their arity), which `make_room` may
    /// move to host memory.
    pub(crate) runs: std::cell::RefCell<Vec<(std::rc::Weak<DevRows>, usize)>>,
    /// The operator during which device memory in use last reached a new peak.
    peak_at: std::cell::Cell<Option<PeakAt>>,
    /// Calls, input rows and time of each operator (outermost calls only), for
    /// `--stats`; and how deep the operator now running is nested.
    op_times: std::cell::RefCell<Vec<OperatorTime>>,
    depth: std::cell::Cell<usize>,
    /// The pool's refusals when `make_room` last looked.
    refusals_seen: std::cell::Cell<u64>,
    /// Whether a join absorbed into a relation drops that relation's rows as it
    /// writes (`CudaBackend::write_mapped`); see [`CudaBackend::with_absorbed_drops`].
    pub(crate) absorbed_drops: bool,
    /// Whether a join absorbed into a relation gives back its new rows from a bitmap
    /// per group where it can (`CudaBackend::join_new_rows`); see
    /// [`CudaBackend::with_new_rows_joins`].
    pub(crate) new_rows_joins: bool,
}

/// Where the device memory in use reached its peak: the operator, the rows of its
/// input, and what was in use when it began (the rest is what it made).
#[derive(Clone, Copy, Debug)]
struct PeakAt {
    op: &'static str,
    rows: usize,
    in_use_before: usize,
    /// Of that, the runs of relations and indexes (full relations and deltas, new
    /// tuples, gathered sets): the rest was batches and operators' work.
    runs_before: usize,
    peak: usize,
}

/// Notes the operator in [`CudaBackend::peak_at`] when the peak rose while it ran,
/// and its time in [`CudaBackend::op_times`].
pub(crate) struct OperatorWatch<'a> {
    backend: &'a CudaBackend,
    /// (A cell: an operator may name what it turned out to be, see
    /// [`OperatorWatch::ran_as`].)
    op: std::cell::Cell<&'static str>,
    rows: usize,
    in_use_before: usize,
    runs_before: usize,
    /// The peak when the operator began.
    peak_before: usize,
    started: std::time::Instant,
}

impl Drop for OperatorWatch<'_> {
    fn drop(&mut self) {
        let depth = self.backend.depth.get().saturating_sub(1);
        self.backend.depth.set(depth);
        let op = self.op.get();
        if depth == 0 {
            let took = self.started.elapsed();
            let mut times = self.backend.op_times.borrow_mut();
            match times.iter_mut().find(|t| t.name == op) {
                Some(t) => {
                    t.calls += 1;
                    t.rows += self.rows;
                    t.time += took;
                }
                None => times.push(OperatorTime {
                    name: op,
                    calls: 1,
                    rows: self.rows,
                    time: took,
                }),
            }
        }
        // The innermost operator that raised the peak names it (an operator inside
        // another ends first and is kept).
        let peak = self.backend.gpu.pool_stats().peak_in_use;
        let named = self.backend.peak_at.get().is_some_and(|p| p.peak >= peak);
        if peak > self.peak_before && !named {
            self.backend.peak_at.set(Some(PeakAt {
                op,
                rows: self.rows,
                in_use_before: self.in_use_before,
                runs_before: self.runs_before,
                peak,
            }));
        }
    }
}

impl OperatorWatch<'_> {
    /// Names the operator by what it turned out to be (a join that gave back only
    /// its new tuples), for `--stats`.
    pub(crate) fn ran_as(&self, op: &'static str) {
        self.op.set(op);
    }
}

impl CudaBackend {
    /// A backend on `gpu`, with `host_threads` threads for host work (`None`: all
    /// cores).
    pub fn new(gpu: Rc<Gpu>, host_threads: Option<usize>) -> ExecResult<CudaBackend> {
        let threads = host_threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
        let host = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .build()
            .map_err(|e| ExecError::Backend(format!("cannot start worker threads: {e}")))?;
        let gpu_refusals = gpu.pool_stats().refusals;
        Ok(CudaBackend {
            gpu,
            cpu: CpuBackend::new(),
            host,
            runs: std::cell::RefCell::new(Vec::new()),
            peak_at: std::cell::Cell::new(None),
            op_times: std::cell::RefCell::new(Vec::new()),
            depth: std::cell::Cell::new(0),
            refusals_seen: std::cell::Cell::new(gpu_refusals),
            absorbed_drops: false,
            new_rows_joins: true,
        })
    }

    /// The backend with joins absorbed into a relation giving back their new rows
    /// from a bitmap per group where they can (`on`, the default) or never (the
    /// conformance suite checks both).
    pub fn with_new_rows_joins(mut self, on: bool) -> CudaBackend {
        self.new_rows_joins = on;
        self
    }

    /// The backend with joins absorbed into a relation dropping its rows as they write
    /// (`on`) or not (the default): `run` turns them on where the user bounds device
    /// memory, the conformance suite to check them.
    pub fn with_absorbed_drops(mut self, on: bool) -> CudaBackend {
        self.absorbed_drops = on;
        self
    }

    /// Notes a run of a relation or index, so that it can be moved to host memory
    /// when the device runs short.
    pub(crate) fn keep(&self, run: &Rc<DevRows>, arity: usize) {
        let mut runs = self.runs.borrow_mut();
        if runs.len() >= 1024 && runs.len().is_power_of_two() {
            runs.retain(|(w, _)| w.strong_count() > 0);
        }
        runs.push((Rc::downgrade(run), arity));
    }

    /// Called at the start of every operator: makes room ([`Self::make_room`]) and
    /// watches whether the operator raises the peak of device memory in use.
    pub(crate) fn enter(&self, op: &'static str, rows: usize) -> ExecResult<OperatorWatch<'_>> {
        let runs_before = self.make_room().map_err(exec_error)?;
        let s = self.gpu.pool_stats();
        self.depth.set(self.depth.get() + 1);
        Ok(OperatorWatch {
            backend: self,
            op: std::cell::Cell::new(op),
            rows,
            in_use_before: s.in_use,
            runs_before,
            peak_before: s.peak_in_use,
            started: std::time::Instant::now(),
        })
    }

    /// Where the peak of device memory in use was reached, in words.
    pub fn peak_memory_where(&self) -> Option<String> {
        let at = self.peak_at.get()?;
        let gib = |b: usize| b as f64 / (1u64 << 30) as f64;
        Some(format!(
            "{} of {} rows ({:.2} GiB in use before it, {:.2} GiB of that in relations, \
             indexes and sets of new tuples; {:.2} GiB at the peak)",
            at.op,
            at.rows,
            gib(at.in_use_before),
            gib(at.runs_before.min(at.in_use_before)),
            gib(at.peak)
        ))
    }

    /// Called before every operator: when the runs of relations and indexes on the
    /// device pass three quarters of the limit, or when an operator since the last
    /// call was refused memory, moves the largest runs to pinned host memory
    /// (kernels read them there, over the bus) until half the limit is in use, so
    /// the operator has room for its work. Relations larger than the device's memory
    /// stay in host memory and stream through the kernels. Nothing is moved while
    /// an operator runs: the address an operator took stays valid until it returns.
    ///
    /// Batches do not count here: they shrink with the room left
    /// ([`Self::batch_budget_bytes`]), which costs far less than reading relations
    /// over the bus (under a limit of a relation plus a half, moving runs as soon as
    /// batches passed three quarters cost 7-26x the time: docs/gpu-results.md,
    /// round 15).
    ///
    /// Gives back the bytes of those runs on the device then (for `--stats`).
    pub(crate) fn make_room(&self) -> Result<usize> {
        let s = self.gpu.pool_stats();
        let refused = s.refusals > self.refusals_seen.replace(s.refusals);
        let on_device = self.run_bytes_on_device();
        if refused || on_device > s.limit / 4 * 3 {
            self.move_runs_until(s.limit / 2)?;
            return Ok(self.run_bytes_on_device());
        }
        Ok(on_device)
    }

    /// Bytes of the runs of relations and indexes now on the device.
    fn run_bytes_on_device(&self) -> usize {
        let mut runs = self.runs.borrow_mut();
        runs.retain(|(w, _)| w.strong_count() > 0);
        let mut seen = std::collections::HashSet::new();
        runs.iter()
            .filter_map(|(w, _)| w.upgrade())
            .filter(|r| r.on_device() && seen.insert(Rc::as_ptr(r)))
            .map(|r| r.device_bytes())
            .sum()
    }

    /// Before allocating `bytes` for a run (a merge's output): moves runs to the
    /// host until they fit beside what is in use (and no further: every run moved is
    /// read over the bus from then on). Safe within an operator between its kernels:
    /// every kernel takes the runs' addresses when it is launched.
    pub(crate) fn make_room_for(&self, bytes: usize) -> Result<()> {
        // A quarter more for the size class the pool rounds the request up to.
        let need = bytes.saturating_add(bytes / 4);
        self.gpu.make_room_in_pieces(need);
        let s = self.gpu.pool_stats();
        if s.in_use.saturating_add(need) <= s.limit {
            return Ok(());
        }
        self.move_runs_until(s.limit.saturating_sub(need))
    }

    /// Moves the largest runs still on the device to host memory until at most
    /// `target` bytes are in use (or none is left to move).
    fn move_runs_until(&self, target: usize) -> Result<()> {
        let mut live: Vec<(Rc<DevRows>, usize)> = {
            let mut runs = self.runs.borrow_mut();
            runs.retain(|(w, _)| w.strong_count() > 0);
            runs.iter()
                .filter_map(|(w, a)| w.upgrade().map(|r| (r, *a)))
                .filter(|(r, a)| *a > 0 && r.on_device() && r.n > 0)
                .collect()
        };
        live.sort_by_key(|(r, _)| std::cmp::Reverse(r.device_bytes()));
        live.dedup_by(|x, y| Rc::ptr_eq(&x.0, &y.0));
        for (run, arity) in live {
            if self.gpu.pool_stats().in_use <= target {
                break;
            }
            run.move_to_host(&self.gpu, arity)?;
        }
        Ok(())
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Bytes left under the pool's limit.
    fn room_bytes(&self) -> usize {
        let s = self.gpu.pool_stats();
        s.limit.saturating_sub(s.in_use)
    }

    /// The most bytes one batch of a pipeline should hold: a quarter of the room left
    /// under the pool's limit (deduplicating a batch needs about three times its size
    /// at once), within [`BATCH_MIN_BYTES`] (or 1/[`BATCH_MIN_SHARE`] of a small
    /// limit) and [`BATCH_MAX_BYTES`]. With the device's memory to spare that is the
    /// maximum; under `--gpu-memory-limit`, or with relations that fill the device,
    /// batches shrink before runs must move to host memory.
    pub(crate) fn batch_budget_bytes(&self) -> usize {
        let floor = BATCH_MIN_BYTES
            .min(self.gpu.pool_stats().limit / BATCH_MIN_SHARE)
            .max(1);
        (self.room_bytes() / 4).clamp(floor, BATCH_MAX_BYTES)
    }
}

/// Batches may always be this large: smaller ones cost more in launches and
/// synchronisations than they save.
const BATCH_MIN_BYTES: usize = 32 << 20;
/// Except under a limit so small that such a batch would not fit beside the
/// relations: then a batch may shrink to this share of the limit.
const BATCH_MIN_SHARE: usize = 64;
/// And never larger (2^27 rows of two columns). Bounding batches by a share of the
/// relations instead (so that small dense graphs peak at their relations plus a
/// half) was measured and dropped four times: 1.5x the time of TC, up to 6x of SG
/// (docs/gpu-results.md, round 12); with the first join's pieces gathered (no
/// repeated work) still 1.3-4x of SG and 1.3x of TC for peaks that stayed above the
/// aim (round 14); with the pieces in the order of a carried column (round 15) 1.6-3x
/// of TC and SG at a quarter, and the peaks still above the aim, held by the full
/// relation merged beside its new run (the run policy's cap applies only where
/// memory is short: `sets::runs_policy`); with join buffers sized for the rows kept
/// (round 17), bounded by the room under 1.5x the relations: 1.7-2x of TC, 2.4-4x of
/// SG, and the aim met on one graph of six; with gathered sets flushed, or join
/// outputs bounded (all, or only the one absorbed into the new tuples), at a share of
/// the memory in use (round 23): SG CA-HepTh's peak rose (more flushes and merges;
/// larger top-level pieces whose first join stopped dropping repeats) and SG
/// ego-Facebook took 4-8x the time.
const BATCH_MAX_BYTES: usize = 1 << 30;

fn wrong_code(op: &str, code: &CudaCode) -> ExecError {
    ExecError::Backend(format!(
        "internal error: {op} given the code of a {}",
        code.kind()
    ))
}

impl Backend for CudaBackend {
    type Relation = CudaRelation;
    type Index = CudaIndex;
    type Batch = CudaBatch;
    type Code = CudaCode;

    fn name(&self) -> &'static str {
        "cuda"
    }

    fn prepare(&self, ops: &[OpSpec], _ctx: &EvalContext) -> ExecResult<Vec<CudaCode>> {
        code::prepare(&self.gpu, &self.cpu, ops).map_err(exec_error)
    }

    /// Larger pieces than the CPU's: a kernel launch costs microseconds, and the
    /// device has the memory. Retried in halves when it does not.
    fn piece_budget(&self) -> PieceBudget {
        PieceBudget {
            first_piece_rows: 1 << 22,
            // (In rows of two columns, the common case.)
            max_batch_rows: self.batch_budget_bytes() / 8,
            // A copy, the sort's second buffer and the output beside the input.
            max_sort_rows: self.room_bytes() / (3 * 8),
            // (The join counts first: `prefix_fit` over its counts.)
            joins_say_what_fits: true,
        }
    }

    fn relation_from_rows(&self, arity: usize, rows: Vec<Value>) -> ExecResult<CudaRelation> {
        let _op = self.enter("relation_from_rows", rows.len() / arity.max(1))?;
        if arity == 0 {
            return Ok(CudaRelation::empty(0));
        }
        let n = rows.len() / arity;
        check_rows(arity, rows.len(), n)?;
        let batch = self.upload_batch(arity, &rows, n).map_err(exec_error)?;
        drop(rows);
        self.sort_unique(batch)
    }

    fn empty_relation(&self, arity: usize) -> ExecResult<CudaRelation> {
        Ok(CudaRelation::empty(arity))
    }

    fn relation_rows(&self, rel: &CudaRelation) -> ExecResult<Vec<Value>> {
        self.sorted_rows(rel).map_err(exec_error)
    }

    fn take_rows(&self, rel: CudaRelation) -> ExecResult<fixlog_exec::tuples::RowStore> {
        self.make_room().map_err(exec_error)?;
        self.take_sorted_rows(rel)
            .map(Into::into)
            .map_err(exec_error)
    }

    /// A result for the host, charged to the calling thread's host budget (the
    /// library's `--memory-limit`): merged on the device and read whole where the
    /// budget has room for it below its spill state's low mark (as
    /// [`take_rows`](Backend::take_rows)); otherwise run by
    /// run, each into memory or, past the budget, into a spill file part by part
    /// (`fixlog_cpu::storage::host_run`), the device's memory given back run by run.
    fn take_result(&self, rel: CudaRelation) -> ExecResult<fixlog_exec::tuples::RowStore> {
        use fixlog_cpu::budget::Charge;
        use fixlog_cpu::storage::{host_run, RunData};
        use fixlog_exec::tuples::{RowStore, SharedRows};
        let arity = rel.arity;
        let values = rel.len() * arity;
        let whole = |rel: CudaRelation, charge: Charge| -> ExecResult<RowStore> {
            self.make_room().map_err(exec_error)?;
            let rows = self.take_sorted_rows(rel).map_err(exec_error)?;
            Ok(RowStore::Shared(Arc::new(RunData::Mem { rows, charge })))
        };
        if arity == 0 || !sets::on_device(arity) {
            return whole(rel, Charge::try_new(values * 4)?);
        }
        if fixlog_cpu::spill::result_file_for(values * 4).is_none() {
            match Charge::try_new(values * 4) {
                Ok(charge) => return whole(rel, charge),
                Err(_) if fixlog_cpu::spill::current().is_some() => {}
                Err(e) => return Err(e),
            }
        }
        let mut runs: Vec<Arc<dyn SharedRows>> = Vec::with_capacity(rel.runs.len());
        for run in rel.runs {
            let ptr = run.ptr();
            let host = host_run(run.n * arity, |start, len| {
                self.download(ptr + (start * 4) as u64, len)
                    .map_err(exec_error)
            })?;
            drop(run);
            runs.push(host);
        }
        Ok(RowStore::Runs { arity, runs })
    }

    fn relation_len(&self, rel: &CudaRelation) -> usize {
        rel.len()
    }

    fn relation_arity(&self, rel: &CudaRelation) -> usize {
        rel.arity
    }

    fn batch_from_rows(&self, arity: usize, rows: Vec<Value>, len: usize) -> ExecResult<CudaBatch> {
        check_rows(arity, rows.len(), len)?;
        self.upload_batch(arity, &rows, len).map_err(exec_error)
    }

    fn batch_rows(&self, batch: &CudaBatch) -> ExecResult<Vec<Value>> {
        self.download_batch(batch).map_err(exec_error)
    }

    fn batch_len(&self, batch: &CudaBatch) -> usize {
        batch.len
    }

    fn batch_arity(&self, batch: &CudaBatch) -> usize {
        batch.arity
    }

    fn sort_unique(&self, batch: CudaBatch) -> ExecResult<CudaRelation> {
        let _op = self.enter("sort_unique", batch.len)?;
        let arity = batch.arity;
        if batch.len == 0 {
            return Ok(CudaRelation::empty(arity));
        }
        if arity == 0 {
            return self.unit_relation().map_err(exec_error);
        }
        if let Some(rel) = batch.as_relation() {
            // A relation's only run (a delta scanned as it is): sorted already.
            return Ok(rel);
        }
        let run = self.sorted_unique(batch).map_err(exec_error)?;
        Ok(self.relation_of(arity, run))
    }

    fn sort_unique_minus(&self, batch: CudaBatch, old: &CudaRelation) -> ExecResult<CudaRelation> {
        let _op = self.enter("sort_unique_minus", batch.len)?;
        let arity = batch.arity;
        if batch.len == 0 {
            return Ok(CudaRelation::empty(arity));
        }
        if arity == 0 {
            return if old.is_empty() {
                self.unit_relation().map_err(exec_error)
            } else {
                Ok(CudaRelation::empty(0))
            };
        }
        let run = self.sorted_unique_minus(batch, old).map_err(exec_error)?;
        Ok(self.relation_of(arity, run))
    }

    fn relation_batch(&self, rel: &CudaRelation) -> ExecResult<CudaBatch> {
        Ok(CudaBatch::of_relation(rel))
    }

    fn split_batch(&self, batch: CudaBatch, rows: usize) -> ExecResult<(CudaBatch, CudaBatch)> {
        Ok(batch.split_at(rows))
    }

    fn merge(&self, a: &CudaRelation, b: &CudaRelation) -> ExecResult<CudaRelation> {
        let _op = self.enter("merge", b.len())?;
        if b.is_empty() || (a.arity == 0 && !a.is_empty()) {
            return Ok(a.clone());
        }
        if a.is_empty() {
            return Ok(b.clone());
        }
        let arity = a.arity;
        let run = (|| -> Result<CudaRelation> {
            let b1 = self.single_run(b)?;
            if let Some(union) = self.union_in_one_run(a, &b1)? {
                return Ok(union);
            }
            // `b − a` and its flags beside `b`.
            self.make_room_for(b.len() * (arity + 1) * 4)?;
            let new = self.run_minus(arity, &b1, a)?;
            let mut runs = a.runs.clone();
            self.add_run(arity, &mut runs, Rc::new(new))?;
            Ok(CudaRelation { arity, runs })
        })();
        run.map_err(exec_error)
    }

    fn merge_disjoint(&self, a: CudaRelation, b: &CudaRelation) -> ExecResult<CudaRelation> {
        let _op = self.enter("merge_disjoint", b.len())?;
        if b.is_empty() || (a.arity == 0 && !a.is_empty()) {
            return Ok(a);
        }
        let arity = a.arity;
        // `a`'s runs, owned here: a merge may give their memory back as it goes.
        let mut runs = a.runs;
        for run in &b.runs {
            self.add_run(arity, &mut runs, run.clone())
                .map_err(exec_error)?;
        }
        Ok(CudaRelation { arity, runs })
    }

    fn difference(&self, a: &CudaRelation, b: &CudaRelation) -> ExecResult<CudaRelation> {
        let _op = self.enter("difference", a.len())?;
        let arity = a.arity;
        if a.is_empty() || b.is_empty() {
            return Ok(a.clone());
        }
        if arity == 0 {
            return Ok(CudaRelation::empty(0));
        }
        let run = (|| -> Result<DevRows> {
            let a1 = self.single_run(a)?;
            self.run_minus(arity, &a1, b)
        })()
        .map_err(exec_error)?;
        Ok(self.relation_of(arity, run))
    }

    fn build_index(
        &self,
        rel: &CudaRelation,
        order: &[usize],
        key_len: usize,
    ) -> ExecResult<CudaIndex> {
        let _op = self.enter("build_index", rel.len())?;
        let arity = rel.arity;
        let mut seen = vec![false; arity];
        let permutation = order.len() == arity
            && order
                .iter()
                .all(|&c| c < arity && !std::mem::replace(&mut seen[c], true));
        if !permutation || key_len > arity {
            return Err(ExecError::Backend(format!(
                "index order {order:?} (key {key_len}) is not a permutation of {arity} columns"
            )));
        }
        let identity = order.iter().enumerate().all(|(p, &c)| p == c);
        let mut index = CudaIndex {
            arity,
            order: order.to_vec(),
            key_len,
            identity,
            runs: Vec::new(),
        };
        let built = (|| -> Result<()> {
            if identity || arity == 0 {
                for run in &rel.runs {
                    self.add_index_run(&mut index, run.clone())?;
                }
            } else {
                for run in &rel.runs {
                    let permuted = self.permuted_run(arity, run, order)?;
                    self.add_index_run(&mut index, Rc::new(permuted))?;
                }
            }
            Ok(())
        })();
        built.map_err(exec_error)?;
        Ok(index)
    }

    fn extend_index(&self, index: &mut CudaIndex, delta: &CudaRelation) -> ExecResult<()> {
        let _op = self.enter("extend_index", delta.len())?;
        let arity = index.arity;
        if delta.arity != arity {
            return Err(ExecError::Backend(format!(
                "extending an index of arity {arity} with a relation of arity {}",
                delta.arity
            )));
        }
        if delta.is_empty() || (arity == 0 && !index.is_empty()) {
            return Ok(());
        }
        let extended = (|| -> Result<()> {
            if index.identity || arity == 0 {
                for run in &delta.runs {
                    self.add_index_run(index, run.clone())?;
                }
            } else {
                let order = index.order.clone();
                for run in &delta.runs {
                    let permuted = self.permuted_run(arity, run, &order)?;
                    self.add_index_run(index, Rc::new(permuted))?;
                }
            }
            Ok(())
        })();
        extended.map_err(exec_error)
    }

    fn index_len(&self, index: &CudaIndex) -> usize {
        index.len()
    }

    fn unit(&self) -> ExecResult<CudaBatch> {
        Ok(CudaBatch::from_shared(0, Vec::new(), 1))
    }

    fn scan(
        &self,
        rel: &CudaRelation,
        code: &CudaCode,
        ctx: &EvalContext,
    ) -> ExecResult<CudaBatch> {
        let _op = self.enter("scan", rel.len())?;
        let CudaCode::Map(map) = code else {
            return Err(wrong_code("scan", code));
        };
        if map.arity != rel.arity {
            return Err(ExecError::Backend(format!(
                "internal error: a scan prepared for arity {} given arity {}",
                map.arity, rel.arity
            )));
        }
        if matches!(map.exec, code::MapExec::Identity) {
            return self.relation_batch(rel);
        }
        self.make_room_for(rel.len() * map.out_arity * 4)
            .map_err(exec_error)?;
        let pieces: Vec<(u64, usize)> = rel.runs.iter().map(|r| (r.ptr(), r.n)).collect();
        self.map_pieces(map, &pieces, ctx).map_err(exec_error)
    }

    fn join(
        &self,
        input: &CudaBatch,
        inner: &CudaIndex,
        code: &CudaCode,
        ctx: &EvalContext,
    ) -> ExecResult<CudaBatch> {
        let _op = self.enter("join", input.len)?;
        let CudaCode::Join(join) = code else {
            return Err(wrong_code("join", code));
        };
        match self.join_batch(input, inner, join, ctx, None) {
            Ok(Absorbed::Rows(rows)) => Ok(rows),
            Ok(Absorbed::New { .. }) => {
                Err(fixlog_exec::internal("a join gave new tuples unasked"))
            }
            Err(e) => Err(exec_error(e)),
        }
    }

    fn join_absorbed(
        &self,
        input: &CudaBatch,
        inner: &CudaIndex,
        code: &CudaCode,
        ctx: &EvalContext,
        old: &CudaRelation,
    ) -> ExecResult<Absorbed<CudaBatch, CudaRelation>> {
        let op = self.enter("join", input.len)?;
        let CudaCode::Join(join) = code else {
            return Err(wrong_code("join", code));
        };
        let out = self
            .join_batch(input, inner, join, ctx, Some(old))
            .map_err(exec_error)?;
        if matches!(out, Absorbed::New { .. }) {
            op.ran_as("join_new_tuples");
        }
        Ok(out)
    }

    fn intersect(
        &self,
        input: &CudaBatch,
        atoms: &[&CudaIndex],
        code: &CudaCode,
        ctx: &EvalContext,
    ) -> ExecResult<CudaBatch> {
        // Composed of existing device operators (see `code::IntersectCode`).
        let CudaCode::Intersect(ic) = code else {
            return Err(wrong_code("intersection", code));
        };
        if atoms.len() != ic.joins.len() || input.arity != ic.input_arity {
            return Err(fixlog_exec::internal(
                "an intersection given other inputs than it was prepared for",
            ));
        }
        let mut batch = self.with_row_numbers(input)?;
        for ((atom, join), dedup) in atoms.iter().zip(&ic.joins).zip(&ic.dedup) {
            batch = self.join(&batch, atom, join, ctx)?;
            if *dedup {
                batch = self.relation_batch(&self.sort_unique(batch)?)?;
            }
        }
        self.filter(&batch, &ic.finish, ctx)
    }

    fn antijoin(
        &self,
        input: &CudaBatch,
        inner: &CudaIndex,
        code: &CudaCode,
        ctx: &EvalContext,
    ) -> ExecResult<CudaBatch> {
        let _op = self.enter("antijoin", input.len)?;
        let CudaCode::AntiJoin(anti) = code else {
            return Err(wrong_code("anti-join", code));
        };
        self.antijoin_batch(input, inner, anti, ctx)
            .map_err(exec_error)
    }

    fn filter(
        &self,
        input: &CudaBatch,
        code: &CudaCode,
        ctx: &EvalContext,
    ) -> ExecResult<CudaBatch> {
        let _op = self.enter("filter", input.len)?;
        let CudaCode::Map(map) = code else {
            return Err(wrong_code("filter", code));
        };
        if map.arity != input.arity {
            return Err(ExecError::Backend(format!(
                "internal error: a filter prepared for arity {} given arity {}",
                map.arity, input.arity
            )));
        }
        if matches!(map.exec, code::MapExec::Identity) {
            return Ok(input.clone());
        }
        self.make_room_for(input.len * map.out_arity * 4)
            .map_err(exec_error)?;
        self.map_pieces(map, &input.pieces(), ctx)
            .map_err(exec_error)
    }

    fn with_row_numbers(&self, input: &CudaBatch) -> ExecResult<CudaBatch> {
        let _op = self.enter("with_row_numbers", input.len)?;
        self.numbered(input).map_err(exec_error)
    }

    fn aggregate(
        &self,
        input: &CudaBatch,
        groups: CudaBatch,
        code: &CudaCode,
        ctx: &EvalContext,
    ) -> ExecResult<CudaBatch> {
        let _op = self.enter("aggregate", input.len)?;
        let CudaCode::Aggregate { input_arity, cpu } = code else {
            return Err(wrong_code("aggregate", code));
        };
        if *input_arity != input.arity {
            return Err(ExecError::Backend(format!(
                "internal error: an aggregate prepared for arity {input_arity} given arity {}",
                input.arity
            )));
        }
        self.aggregate_batch(input, groups, cpu, ctx)
            .map_err(exec_error)
    }
}
