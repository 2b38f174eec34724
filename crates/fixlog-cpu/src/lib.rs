//! The CPU backend: every operator of [`Backend`] on all cores with rayon.
//!
//! - [`storage`]: relations and indexes are small LSM trees of sorted row-major runs
//!   (the policy of `fixlog_exec::runs`), batches are lists of segments;
//! - [`code`]: each operator's expressions compiled once per run;
//! - [`rows`]: sort, unique, union and difference kernels on row arrays (parallel LSD
//!   radix sort over the bits that vary; merges split by binary search);
//! - [`hisa`]: the hash table from a key prefix to its range of rows;
//! - [`dedup`]: the cache-sized window a distinct join drops repeats through;
//! - [`eval`]: expressions and conditions over the two rows an operator reads;
//! - [`budget`]: the memory budget every large allocation is charged to (fallible
//!   allocations: running out of memory, or over `--memory-limit`, is an error);
//! - [`spill`]: runs written to files and read back through memory maps when the
//!   budget's bytes in use pass three quarters of the limit, so relations may exceed
//!   memory.
//!
//! [`run`] is the entry point: it runs a plan with the semi-naive driver inside a
//! thread pool of the requested size.
//!
//! # Determinism
//!
//! Every parallel split depends on input sizes only, never on the number of threads,
//! and per-unit outputs are kept in unit order; sets are canonical anyway.

pub mod budget;
pub mod code;
pub mod dedup;
pub mod eval;
pub mod hisa;
pub mod leapfrog;
mod new_rows;
pub mod rows;
pub mod spill;
pub mod storage;

pub use code::CpuCode;
pub use storage::{CpuBatch, CpuIndex, CpuRelation};

use budget::Charge;
use code::{inverse, wrong_code, KeyCode};
use eval::Pipeline;
use fixlog_exec::driver::{
    self, DiskSpillStats, DriverOptions, HostMemoryStats, RunResult, Tuples,
};
use fixlog_exec::tuples::RowStore;
use fixlog_exec::{
    aggregate, check_rows, Absorbed, Backend, EvalContext, ExecError, ExecResult, OpSpec,
    PieceBudget,
};
use fixlog_logical::{Program, SymbolTable, Value};
use fixlog_plan::Plan;
use rayon::prelude::*;
use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::Arc;
use storage::{add_index_run, add_run, permute_rows, single_run, too_big, IndexRun, Run, Seg};

/// Runs `plan` on the CPU backend with `jobs` threads (`None`: all cores), holding at
/// most `memory_limit` bytes of relations, indexes and batches in memory (`None`: no
/// limit but the system's), spilling runs to the system's temporary directory as
/// [`run_with`] describes.
pub fn run(
    program: &Program,
    plan: &Plan,
    initial: Vec<Tuples>,
    symbols: &SymbolTable,
    options: &DriverOptions,
    jobs: Option<usize>,
    memory_limit: Option<usize>,
) -> ExecResult<RunResult> {
    let cpu = CpuOptions {
        jobs,
        memory_limit,
        ..CpuOptions::default()
    };
    run_with(program, plan, initial, symbols, options, &cpu)
}

/// How the CPU backend runs.
#[derive(Clone, Debug, Default)]
pub struct CpuOptions {
    /// Worker threads (`None`: all cores).
    pub jobs: Option<usize>,
    /// The most bytes of relations, indexes and batches in memory (`--memory-limit`);
    /// `None`: no limit but the system's.
    pub memory_limit: Option<usize>,
    /// Never write runs to files (`--no-spill`).
    pub no_spill: bool,
    /// Where the run's spill directory is made (`--temp-dir`; `None`: the system's
    /// temporary directory).
    pub temp_dir: Option<PathBuf>,
    /// The budget to charge (`None`: a new one of `memory_limit`). The library passes
    /// its own, made with `memory_limit`, so that it can charge what it does with the
    /// results after the run (writing the outputs) to the same budget.
    pub budget: Option<Arc<budget::Budget>>,
}

/// The share of physical memory that spilling aims to stay within when no
/// `--memory-limit` is given (see [`run_with`]).
pub const DEFAULT_SPILL_SHARE: f64 = 0.8;

/// Runs `plan` on the CPU backend.
///
/// Memory: the budget counts the bytes of relations, indexes and batches in memory.
/// With `memory_limit`, going over it is an error ([`ExecError::OutOfMemory`], naming
/// the relation) and, unless `no_spill`, runs of relations and indexes are spilled to
/// files when the bytes in use pass three quarters of it, down to half (see
/// [`spill`]). Without a limit there is no error but the system's, and spilling aims at
/// A run's host memory: the budget its allocations are charged to and where its runs
/// spill (as [`run_with`] describes), for the CPU backend's threads or for the host
/// side of another backend (the CUDA backend's results, [`storage::host_run`]). The
/// spill directory goes when this is dropped; spilled runs stay readable (their files
/// are unnamed and mapped).
pub struct HostMemory {
    limit: Option<usize>,
    budget: Arc<budget::Budget>,
    spill: Option<Arc<spill::Spill>>,
}

impl HostMemory {
    /// The budget of `cpu` (or a new one of its limit) and, unless `no_spill`, a spill
    /// state aiming at its limit (or [`default_spill_target`]).
    pub fn new(cpu: &CpuOptions) -> HostMemory {
        let budget = cpu
            .budget
            .clone()
            .unwrap_or_else(|| budget::Budget::new(cpu.memory_limit));
        let target = if cpu.no_spill {
            None
        } else {
            cpu.memory_limit.or_else(default_spill_target)
        };
        let spill = target.map(|t| {
            spill::Spill::new(
                budget.clone(),
                spill::SpillSettings::for_limit(t, cpu.temp_dir.clone()),
            )
        });
        HostMemory {
            limit: cpu.memory_limit,
            budget,
            spill,
        }
    }

    /// Makes the budget and spill state this thread's until the guard is dropped.
    pub fn enter(&self) -> HostMemoryGuard {
        budget::set_current(Some(self.budget.clone()));
        spill::set_current(self.spill.clone());
        HostMemoryGuard(())
    }

    /// What the budget counted and what was spilled, so far.
    pub fn stats(&self) -> HostMemoryStats {
        HostMemoryStats {
            limit: self.limit,
            peak_in_use: self.budget.peak(),
            spill: self.spill.as_ref().map(|s| {
                let st = s.stats();
                DiskSpillStats {
                    temp_dir: st.temp_dir.display().to_string(),
                    high_mark: s.settings().high,
                    peak_bytes: st.peak_bytes,
                    written_bytes: st.written_bytes,
                    files: st.files,
                    error: st.error,
                }
            }),
        }
    }
}

impl Drop for HostMemory {
    fn drop(&mut self) {
        if let Some(s) = &self.spill {
            s.close();
        }
    }
}

/// While held, a [`HostMemory`] is its thread's (see [`HostMemory::enter`]).
pub struct HostMemoryGuard(());

impl Drop for HostMemoryGuard {
    fn drop(&mut self) {
        budget::set_current(None);
        spill::set_current(None);
    }
}

/// [`DEFAULT_SPILL_SHARE`] of the physical memory (on Linux; elsewhere nothing spills):
/// it starts only once the budget holds 60% of the machine's memory, so a run that
/// fits comfortably never spills and runs as fast as without spilling.
pub fn run_with(
    program: &Program,
    plan: &Plan,
    initial: Vec<Tuples>,
    symbols: &SymbolTable,
    options: &DriverOptions,
    cpu: &CpuOptions,
) -> ExecResult<RunResult> {
    let threads = cpu.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    // The run's budget and spill state, on every thread of its pool (the pool is the
    // run's own).
    let memory = HostMemory::new(cpu);
    let (for_threads, spill_for_threads) = (memory.budget.clone(), memory.spill.clone());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .start_handler(move |_| {
            budget::set_current(Some(for_threads.clone()));
            spill::set_current(spill_for_threads.clone());
        })
        .exit_handler(|_| {
            budget::set_current(None);
            spill::set_current(None);
        })
        .build()
        .map_err(|e| ExecError::Backend(format!("cannot start worker threads: {e}")))?;
    let outcome = pool.install(|| {
        let backend = CpuBackend::new();
        driver::run(&backend, program, plan, initial, symbols, options)
    });
    let memory = memory.stats();
    let mut result = outcome.map_err(|e| match (e, &memory.spill) {
        (ExecError::OutOfMemory(why), Some(sp)) if sp.written_bytes > 0 || sp.error.is_some() => {
            let note = match &sp.error {
                Some(err) => format!("spilling stopped: {err}"),
                None => format!(
                    "{} spilled to {}",
                    budget::size(sp.written_bytes),
                    sp.temp_dir
                ),
            };
            ExecError::OutOfMemory(format!("{why} ({note})"))
        }
        (e, _) => e,
    })?;
    result.stats.device = format!("{threads} thread{}", if threads == 1 { "" } else { "s" });
    result.stats.host_memory = Some(memory);
    Ok(result)
}

/// [`DEFAULT_SPILL_SHARE`] of the physical memory (`MemTotal` of `/proc/meminfo`), where
/// it can be read: what a run without `--memory-limit` aims to stay within.
pub fn default_spill_target() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some((kib.saturating_mul(1024) as f64 * DEFAULT_SPILL_SHARE) as usize)
}

/// An operator's entry: spill if the budget's bytes in use pass the high mark, run
/// `f`, and if it runs out of memory, spill everything that can be and run it once
/// more (see [`spill`]).
fn entry<T>(mut f: impl FnMut() -> ExecResult<T>) -> ExecResult<T> {
    spill::make_room();
    match f() {
        Err(ExecError::OutOfMemory(why)) => {
            if spill::spill_all() > 0 {
                f()
            } else {
                Err(ExecError::OutOfMemory(why))
            }
        }
        other => other,
    }
}

/// The CPU backend. Stateless: call its methods inside the rayon pool that should run
/// them (`ThreadPool::install`).
#[derive(Debug, Default, Clone, Copy)]
pub struct CpuBackend;

impl CpuBackend {
    pub fn new() -> CpuBackend {
        CpuBackend
    }

    /// Prepares one operator (the CPU needs no run-wide step).
    pub fn prepare_one(&self, spec: &OpSpec) -> ExecResult<CpuCode> {
        CpuCode::prepare(spec)
    }
}

// ---- parallel units --------------------------------------------------------------------

/// Units of parallel work over pieces of `(data, rows)`: `(piece, lo, hi)`. The unit
/// size depends on the total only, never on the thread count.
fn work_units(pieces: &[usize]) -> Vec<(usize, usize, usize)> {
    let total: usize = pieces.iter().sum();
    let chunk = (total / 512).clamp(16, 4096);
    let mut units = Vec::new();
    for (p, &n) in pieces.iter().enumerate() {
        let mut lo = 0;
        while lo < n {
            let hi = (lo + chunk).min(n);
            units.push((p, lo, hi));
            lo = hi;
        }
    }
    units
}

/// Runs `f` on every unit in parallel, each appending rows to its own segment, and
/// returns the segments in unit order. `f` must make room with [`room`] before each
/// row it writes, so that segments grow only through the budget.
fn map_units<F>(arity: usize, units: &[(usize, usize, usize)], f: F) -> ExecResult<CpuBatch>
where
    F: Fn((usize, usize, usize), &mut Vec<Value>, &mut Charge) -> ExecResult<usize> + Sync,
{
    let segs: Vec<Seg> = units
        .par_iter()
        .map(|&u| {
            let mut data = Vec::new();
            let mut charge = Charge::none();
            let rows = f(u, &mut data, &mut charge)?;
            Ok(Seg::new(data, rows, charge))
        })
        .collect::<ExecResult<Vec<Seg>>>()?;
    Ok(CpuBatch::from_segs(arity, segs))
}

/// Makes room in `out` for `w` more values (charged to the budget): a compare, and an
/// allocation only when the segment doubles.
#[inline(always)]
pub(crate) fn room(out: &mut Vec<Value>, charge: &mut Charge, w: usize) -> ExecResult<()> {
    if out.capacity() - out.len() < w {
        budget::grow(out, charge, w)?;
    }
    Ok(())
}

/// Filters and projects every row of `segs` (rows of `arity` values).
fn map_rows(
    arity: usize,
    segs: &[(&[Value], usize)],
    pipe: &Pipeline,
    ctx: &EvalContext,
) -> ExecResult<CpuBatch> {
    let sizes: Vec<usize> = segs.iter().map(|s| s.1).collect();
    let units = work_units(&sizes);
    let ow = pipe.project.len();
    map_units(ow, &units, |(p, lo, hi), out, charge| {
        let data = segs[p].0;
        let mut n = 0;
        for i in lo..hi {
            let r = &data[i * arity..i * arity + arity];
            room(out, charge, ow)?;
            n += pipe.emit(r, &[], ctx.symbols, out) as usize;
        }
        Ok(n)
    })
}

fn check_arity(what: &str, expected: usize, got: usize) -> ExecResult<()> {
    if expected != got {
        return Err(ExecError::Backend(format!(
            "internal error: {what} prepared for arity {expected} given arity {got}"
        )));
    }
    Ok(())
}

fn check_order(index: &CpuIndex, order: &[usize]) -> ExecResult<()> {
    if index.order != order {
        return Err(ExecError::Backend(format!(
            "internal error: a join prepared for index order {order:?} given order {:?}",
            index.order
        )));
    }
    Ok(())
}

/// The join loop: for each input row (in parallel over fixed units), every inner row
/// with an equal key is filtered and projected into the unit's output; `window` (one per
/// thread, reset per unit) decides whether each written row stays (see [`dedup`]).
fn join_rows<W: dedup::RowWindow + 'static>(
    input: &CpuBatch,
    inner: &CpuIndex,
    key: &KeyCode,
    pipe: &Pipeline,
    ow: usize,
    ctx: &EvalContext,
    window: &'static std::thread::LocalKey<RefCell<W>>,
) -> ExecResult<CpuBatch> {
    let a = input.arity;
    let w = inner.arity;
    let sizes: Vec<usize> = input.segs.iter().map(|s| s.rows).collect();
    let units = work_units(&sizes);
    let klen = key.len();
    // The inner runs' rows, held for the whole operator (see `spill`).
    let held: Vec<Arc<storage::RunData>> = inner.runs.iter().map(|ir| ir.run.data()).collect();
    map_units(ow, &units, |(p, lo, hi), out, charge| {
        window.with(|window| {
            let mut window = window.borrow_mut();
            window.reset();
            let data = &input.segs[p].data;
            let mut kbuf = vec![0; klen];
            let mut n = 0;
            for i in lo..hi {
                let r = &data[i * a..i * a + a];
                if !key.eval(r, ctx, &mut kbuf) {
                    continue;
                }
                for (ir, d) in inner.runs.iter().zip(&held) {
                    let d: &[Value] = d;
                    let (s, e) = inner.range(ir, d, &kbuf);
                    // Room for every row of the range at once: none of the loop's
                    // writes allocates.
                    room(out, charge, (e - s) * ow)?;
                    for j in s..e {
                        let b = &d[j * w..j * w + w];
                        if pipe.emit(r, b, ctx.symbols, out) {
                            if window.keep(out, ow, n) {
                                n += 1;
                            } else {
                                out.truncate(n * ow);
                            }
                        }
                    }
                }
            }
            Ok(n)
        })
    })
}

impl Backend for CpuBackend {
    type Relation = CpuRelation;
    type Index = CpuIndex;
    type Batch = CpuBatch;
    type Code = CpuCode;

    fn name(&self) -> &'static str {
        "cpu"
    }

    fn prepare(&self, ops: &[OpSpec], _ctx: &EvalContext) -> ExecResult<Vec<CpuCode>> {
        ops.iter().map(CpuCode::prepare).collect()
    }

    /// The default pieces, with batches bounded by the memory limit too: a batch, a
    /// copy of it and a sort's scratch (three times its bytes, rows of two values
    /// counted) within a quarter of the limit (without a limit, or with one of a few
    /// GiB or more, that is the default); an input is sorted whole where that takes
    /// at most a quarter of the room left under the limit.
    fn piece_budget(&self) -> PieceBudget {
        let mut pieces = PieceBudget::default();
        if let Some(b) = budget::current() {
            if let Some(limit) = b.limit() {
                let row3 = 3 * 2 * std::mem::size_of::<Value>();
                let rows = limit / 4 / row3;
                pieces.max_batch_rows = pieces.max_batch_rows.min(rows.max(1 << 10));
                pieces.max_sort_rows = limit.saturating_sub(b.used()) / 4 / row3;
            }
        }
        pieces
    }

    /// `rows` in any order, duplicates allowed. For arity 0 the rows cannot say how many
    /// tuples there are: the result is the empty relation (use [`Backend::unit`] and
    /// [`Backend::sort_unique`] for the relation holding the empty tuple).
    fn relation_from_rows(&self, arity: usize, rows: Vec<Value>) -> ExecResult<CpuRelation> {
        if arity == 0 {
            return Ok(CpuRelation::empty(0));
        }
        let len = rows.len() / arity;
        check_rows(arity, rows.len(), len)?;
        self.sort_unique(CpuBatch::from_rows(arity, rows, len))
    }

    fn empty_relation(&self, arity: usize) -> ExecResult<CpuRelation> {
        Ok(CpuRelation::empty(arity))
    }

    fn relation_rows(&self, rel: &CpuRelation) -> ExecResult<Vec<Value>> {
        entry(|| single_run(rel)?.into_rows())
    }

    /// A relation whose runs are (or whose merged run is) in a spill file stays there:
    /// the result reads the mapped file, so writing a relation larger than memory
    /// never copies it into memory.
    fn take_rows(&self, rel: CpuRelation) -> ExecResult<RowStore> {
        let run = entry(|| single_run(&rel))?;
        drop(rel);
        run.into_store()
    }

    /// The relation's runs as they are, unmerged (see [`Backend::take_result`]): runs in
    /// files stay mapped, runs in memory stay charged to the run's budget (the charge
    /// travels with the rows, so memory a result holds after the run is still
    /// counted, and the output writer is charged to the same budget). First, if the
    /// budget is past the spill mark, runs are spilled as at every operator's entry,
    /// so the results leave the writer room under the limit.
    fn take_result(&self, rel: CpuRelation) -> ExecResult<RowStore> {
        spill::make_room();
        if rel.arity == 0 {
            return Ok(RowStore::default());
        }
        let runs = rel
            .runs
            .iter()
            .map(|r| r.data() as Arc<dyn fixlog_exec::tuples::SharedRows>)
            .collect();
        Ok(RowStore::Runs {
            arity: rel.arity,
            runs,
        })
    }

    fn relation_len(&self, rel: &CpuRelation) -> usize {
        rel.len()
    }

    fn relation_arity(&self, rel: &CpuRelation) -> usize {
        rel.arity
    }

    fn batch_from_rows(&self, arity: usize, rows: Vec<Value>, len: usize) -> ExecResult<CpuBatch> {
        check_rows(arity, rows.len(), len)?;
        Ok(CpuBatch::from_rows(arity, rows, len))
    }

    fn batch_rows(&self, batch: &CpuBatch) -> ExecResult<Vec<Value>> {
        batch.try_rows()
    }

    fn batch_len(&self, batch: &CpuBatch) -> usize {
        batch.len
    }

    fn batch_arity(&self, batch: &CpuBatch) -> usize {
        batch.arity
    }

    fn sort_unique(&self, batch: CpuBatch) -> ExecResult<CpuRelation> {
        spill::make_room();
        let arity = batch.arity;
        let mut rel = CpuRelation::empty(arity);
        if batch.len == 0 {
            return Ok(rel);
        }
        if arity == 0 {
            rel.runs.push(Run::unit());
            return Ok(rel);
        }
        if let Some(rel) = batch.one_run {
            // A relation's only run (a delta scanned as it is): sorted already.
            return Ok(rel);
        }
        let (mut data, charge) = if batch.segs.len() == 1 {
            batch
                .segs
                .into_iter()
                .next()
                .map(Seg::into_charged)
                .unwrap_or_else(|| Ok((Vec::new(), Charge::none())))?
        } else {
            // The segments stay charged until the copy is made.
            let owned = batch
                .segs
                .into_iter()
                .map(Seg::into_owned)
                .collect::<ExecResult<Vec<_>>>()?;
            let (parts, _charges): (Vec<Vec<Value>>, Vec<Charge>) = owned.into_iter().unzip();
            rows::try_concat_parts(parts)?
        };
        let len = rows::try_sort_unique(arity, &mut data)?;
        too_big(len)?;
        data.truncate(len * arity);
        rel.runs.push(Run::new(arity, (data, charge)));
        Ok(rel)
    }

    /// The relation's runs read in place (no copy: a spilled run stays in its file).
    fn relation_batch(&self, rel: &CpuRelation) -> ExecResult<CpuBatch> {
        entry(|| Ok(CpuBatch::of_relation(rel)))
    }

    fn split_batch(&self, batch: CpuBatch, rows: usize) -> ExecResult<(CpuBatch, CpuBatch)> {
        spill::make_room();
        batch.split_at(rows)
    }

    fn merge(&self, a: &CpuRelation, b: &CpuRelation) -> ExecResult<CpuRelation> {
        entry(|| self.merge_now(a, b))
    }

    fn merge_disjoint(&self, a: CpuRelation, b: &CpuRelation) -> ExecResult<CpuRelation> {
        entry(|| self.merge_disjoint_now(a.clone(), b))
    }

    fn difference(&self, a: &CpuRelation, b: &CpuRelation) -> ExecResult<CpuRelation> {
        entry(|| self.difference_now(a, b))
    }

    fn build_index(
        &self,
        rel: &CpuRelation,
        order: &[usize],
        key_len: usize,
    ) -> ExecResult<CpuIndex> {
        entry(|| self.build_index_now(rel, order, key_len))
    }

    fn extend_index(&self, index: &mut CpuIndex, delta: &CpuRelation) -> ExecResult<()> {
        // Not run again after running out of memory: a failed extension may have
        // changed the index (its merges write to a file instead where they can).
        spill::make_room();
        self.extend_index_now(index, delta)
    }

    fn index_len(&self, index: &CpuIndex) -> usize {
        index.len()
    }

    fn unit(&self) -> ExecResult<CpuBatch> {
        Ok(CpuBatch::from_rows(0, Vec::new(), 1))
    }

    fn scan(&self, rel: &CpuRelation, code: &CpuCode, ctx: &EvalContext) -> ExecResult<CpuBatch> {
        let CpuCode::Map { arity, pipe } = code else {
            return Err(wrong_code("scan", code));
        };
        check_arity("a scan", *arity, rel.arity)?;
        if pipe.is_identity(*arity) {
            return self.relation_batch(rel);
        }
        entry(|| {
            let held: Vec<Arc<storage::RunData>> = rel.runs.iter().map(|r| r.data()).collect();
            let segs: Vec<(&[Value], usize)> = held
                .iter()
                .zip(&rel.runs)
                .map(|(d, r)| (&d[..], r.len))
                .collect();
            map_rows(*arity, &segs, pipe, ctx)
        })
    }

    fn join(
        &self,
        input: &CpuBatch,
        inner: &CpuIndex,
        code: &CpuCode,
        ctx: &EvalContext,
    ) -> ExecResult<CpuBatch> {
        let CpuCode::Join {
            input_arity,
            order,
            key,
            pipe,
            out_arity,
            distinct,
            ..
        } = code
        else {
            return Err(wrong_code("join", code));
        };
        check_arity("a join", *input_arity, input.arity)?;
        check_order(inner, order)?;
        thread_local! {
            static KEEP_ALL: RefCell<dedup::KeepAll> = const { RefCell::new(dedup::KeepAll) };
            static PACKED: RefCell<dedup::Probed<dedup::PackedWindow>> = RefCell::default();
            static WIDE: RefCell<dedup::Probed<dedup::WindowDedup>> = RefCell::default();
        }
        let ow = *out_arity;
        entry(|| match (distinct, ow) {
            (false, _) | (true, 0) => join_rows(input, inner, key, pipe, ow, ctx, &KEEP_ALL),
            (true, 1 | 2) => join_rows(input, inner, key, pipe, ow, ctx, &PACKED),
            (true, _) => join_rows(input, inner, key, pipe, ow, ctx, &WIDE),
        })
    }

    fn join_absorbed(
        &self,
        input: &CpuBatch,
        inner: &CpuIndex,
        code: &CpuCode,
        ctx: &EvalContext,
        old: &CpuRelation,
    ) -> ExecResult<Absorbed<CpuBatch, CpuRelation>> {
        if let CpuCode::Join {
            input_arity,
            order,
            key,
            pipe,
            new_rows: Some(nr),
            ..
        } = code
        {
            check_arity("a join", *input_arity, input.arity)?;
            check_order(inner, order)?;
            let parts = || new_rows::JoinParts { key, pipe, nr };
            if let Some((rows, made)) =
                entry(|| new_rows::join_new_rows(input, inner, parts(), old, ctx))?
            {
                return Ok(Absorbed::New {
                    tuples: self.sort_unique(rows)?,
                    made,
                });
            }
        }
        self.join(input, inner, code, ctx).map(Absorbed::Rows)
    }

    fn intersect(
        &self,
        input: &CpuBatch,
        atoms: &[&CpuIndex],
        code: &CpuCode,
        ctx: &EvalContext,
    ) -> ExecResult<CpuBatch> {
        leapfrog::check_intersect(input, atoms, code)?;
        let CpuCode::Intersect(ic) = code else {
            return Err(wrong_code("intersection", code));
        };
        thread_local! {
            static KEEP_ALL: RefCell<dedup::KeepAll> = const { RefCell::new(dedup::KeepAll) };
            static PACKED: RefCell<dedup::Probed<dedup::PackedWindow>> = RefCell::default();
            static WIDE: RefCell<dedup::Probed<dedup::WindowDedup>> = RefCell::default();
        }
        entry(|| match (ic.distinct, ic.out_arity) {
            (false, _) | (true, 0) => leapfrog::intersect_rows(input, atoms, ic, ctx, &KEEP_ALL),
            (true, 1 | 2) => leapfrog::intersect_rows(input, atoms, ic, ctx, &PACKED),
            (true, _) => leapfrog::intersect_rows(input, atoms, ic, ctx, &WIDE),
        })
    }

    fn antijoin(
        &self,
        input: &CpuBatch,
        inner: &CpuIndex,
        code: &CpuCode,
        ctx: &EvalContext,
    ) -> ExecResult<CpuBatch> {
        let CpuCode::AntiJoin {
            input_arity,
            order,
            key,
        } = code
        else {
            return Err(wrong_code("anti-join", code));
        };
        check_arity("an anti-join", *input_arity, input.arity)?;
        check_order(inner, order)?;
        let a = input.arity;
        let sizes: Vec<usize> = input.segs.iter().map(|s| s.rows).collect();
        let units = work_units(&sizes);
        let klen = key.len();
        entry(|| {
            let held: Vec<Arc<storage::RunData>> =
                inner.runs.iter().map(|ir| ir.run.data()).collect();
            map_units(a, &units, |(p, lo, hi), out, charge| {
                let data = &input.segs[p].data;
                let mut kbuf = vec![0; klen];
                let mut n = 0;
                for i in lo..hi {
                    let r = &data[i * a..i * a + a];
                    // A key that cannot be computed matches nothing: the tuple is kept.
                    let found = key.eval(r, ctx, &mut kbuf)
                        && inner.runs.iter().zip(&held).any(|(ir, d)| {
                            let (s, e) = inner.range(ir, d, &kbuf);
                            s < e
                        });
                    if !found {
                        room(out, charge, a)?;
                        out.extend_from_slice(r);
                        n += 1;
                    }
                }
                Ok(n)
            })
        })
    }

    fn filter(&self, input: &CpuBatch, code: &CpuCode, ctx: &EvalContext) -> ExecResult<CpuBatch> {
        let CpuCode::Map { arity, pipe } = code else {
            return Err(wrong_code("filter", code));
        };
        check_arity("a filter", *arity, input.arity)?;
        entry(|| {
            if pipe.is_identity(*arity) {
                return input.try_clone();
            }
            let segs: Vec<(&[Value], usize)> =
                input.segs.iter().map(|s| (&s.data[..], s.rows)).collect();
            map_rows(*arity, &segs, pipe, ctx)
        })
    }

    fn with_row_numbers(&self, input: &CpuBatch) -> ExecResult<CpuBatch> {
        spill::make_room();
        let a = input.arity;
        if input.len > u32::MAX as usize {
            return Err(ExecError::OutOfMemory(
                "more than 2^32 tuples to number".to_string(),
            ));
        }
        let mut bases = Vec::with_capacity(input.segs.len());
        let mut acc = 0usize;
        for s in &input.segs {
            bases.push(acc);
            acc += s.rows;
        }
        let segs: Vec<Seg> = input
            .segs
            .par_iter()
            .zip(bases.par_iter())
            .map(|(s, &base)| {
                let (mut data, charge) = budget::try_with_capacity(s.rows * (a + 1))?;
                for i in 0..s.rows {
                    data.extend_from_slice(&s.data[i * a..i * a + a]);
                    data.push((base + i) as Value);
                }
                Ok(Seg::new(data, s.rows, charge))
            })
            .collect::<ExecResult<Vec<Seg>>>()?;
        Ok(CpuBatch::from_segs(a + 1, segs))
    }

    fn aggregate(
        &self,
        input: &CpuBatch,
        groups: CpuBatch,
        code: &CpuCode,
        ctx: &EvalContext,
    ) -> ExecResult<CpuBatch> {
        let CpuCode::Aggregate {
            input_arity,
            func,
            ty,
            pipe,
            out_arity,
        } = code
        else {
            return Err(wrong_code("aggregate", code));
        };
        check_arity("an aggregate", *input_arity, input.arity)?;
        spill::make_room();
        let a = input.arity;
        let group_rows: Vec<&[Value]> = groups.segs.iter().map(|s| &s.data[..]).collect();
        let values = aggregate::fold(
            input.len,
            groups.arity,
            &group_rows,
            *func,
            *ty,
            ctx.symbols,
        )?;
        let mut bases = Vec::with_capacity(input.segs.len());
        let mut base = 0usize;
        for s in &input.segs {
            bases.push(base);
            base += s.rows;
        }
        let sizes: Vec<usize> = input.segs.iter().map(|s| s.rows).collect();
        let units = work_units(&sizes);
        let ow = *out_arity;
        map_units(ow, &units, |(p, lo, hi), out, charge| {
            let data = &input.segs[p].data;
            let mut k = 0;
            for i in lo..hi {
                let Some(v) = values[bases[p] + i] else {
                    continue;
                };
                let r = &data[i * a..i * a + a];
                room(out, charge, ow)?;
                k += pipe.emit(r, &[v], ctx.symbols, out) as usize;
            }
            Ok(k)
        })
    }
}

/// The set operations behind the trait methods that run them through [`entry`].
impl CpuBackend {
    fn merge_now(&self, a: &CpuRelation, b: &CpuRelation) -> ExecResult<CpuRelation> {
        if b.is_empty() || a.arity == 0 {
            return if a.is_empty() {
                Ok(b.clone())
            } else {
                Ok(a.clone())
            };
        }
        if a.is_empty() {
            return Ok(b.clone());
        }
        // b − a, appended as a new run of a.
        let arity = a.arity;
        let b1 = single_run(b)?;
        let held: Vec<Arc<storage::RunData>> = a.runs.iter().map(|r| r.data()).collect();
        let bs: Vec<&[Value]> = held.iter().map(|d| &d[..]).collect();
        let new_run = Run::new(arity, rows::try_difference_many(arity, &b1.data(), &bs)?);
        let mut runs = a.runs.clone();
        add_run(arity, &mut runs, new_run)?;
        Ok(CpuRelation { arity, runs })
    }

    fn merge_disjoint_now(&self, a: CpuRelation, b: &CpuRelation) -> ExecResult<CpuRelation> {
        if b.is_empty() || a.arity == 0 {
            return if a.is_empty() { Ok(b.clone()) } else { Ok(a) };
        }
        let mut runs = a.runs;
        add_run(a.arity, &mut runs, single_run(b)?)?;
        Ok(CpuRelation {
            arity: a.arity,
            runs,
        })
    }

    fn difference_now(&self, a: &CpuRelation, b: &CpuRelation) -> ExecResult<CpuRelation> {
        let arity = a.arity;
        if a.is_empty() || b.is_empty() {
            return Ok(a.clone());
        }
        if arity == 0 {
            return Ok(CpuRelation::empty(0));
        }
        let a1 = single_run(a)?;
        let held: Vec<Arc<storage::RunData>> = b.runs.iter().map(|r| r.data()).collect();
        let bs: Vec<&[Value]> = held.iter().map(|d| &d[..]).collect();
        let run = Run::new(arity, rows::try_difference_many(arity, &a1.data(), &bs)?);
        let mut rel = CpuRelation::empty(arity);
        add_run(arity, &mut rel.runs, run)?;
        Ok(rel)
    }

    fn build_index_now(
        &self,
        rel: &CpuRelation,
        order: &[usize],
        key_len: usize,
    ) -> ExecResult<CpuIndex> {
        let arity = rel.arity;
        if order.len() != arity || key_len > arity {
            return Err(ExecError::Backend(format!(
                "index order {order:?} (key {key_len}) is not a permutation of {arity} columns"
            )));
        }
        inverse(order)?;
        let identity = order.iter().enumerate().all(|(p, &c)| p == c);
        let mut index = CpuIndex {
            arity,
            order: order.to_vec(),
            key_len,
            identity,
            runs: Vec::new(),
        };
        if identity || arity == 0 {
            index.runs = rel
                .runs
                .iter()
                .map(|r| IndexRun::new(r.clone(), arity, key_len))
                .collect::<ExecResult<Vec<IndexRun>>>()?;
        } else if !rel.is_empty() {
            let (mut data, charge) = if rel.runs.len() == 1 {
                permute_rows(&rel.runs[0].data(), arity, order)?
            } else {
                let (parts, _charges): (Vec<Vec<Value>>, Vec<Charge>) = rel
                    .runs
                    .par_iter()
                    .map(|r| permute_rows(&r.data(), arity, order))
                    .collect::<ExecResult<Vec<_>>>()?
                    .into_iter()
                    .unzip();
                rows::try_concat_parts(parts)?
            };
            rows::try_sort_distinct(arity, &mut data)?;
            let run = Run::new(arity, (data, charge));
            index.runs.push(IndexRun::new(run, arity, key_len)?);
        }
        Ok(index)
    }

    fn extend_index_now(&self, index: &mut CpuIndex, delta: &CpuRelation) -> ExecResult<()> {
        let arity = index.arity;
        if delta.arity != arity {
            return Err(ExecError::Backend(format!(
                "extending an index of arity {arity} with a relation of arity {}",
                delta.arity
            )));
        }
        if delta.is_empty() {
            return Ok(());
        }
        let new_runs: Vec<Arc<Run>> = if arity == 0 {
            if index.runs.is_empty() {
                vec![Run::unit()]
            } else {
                Vec::new()
            }
        } else if index.identity {
            delta.runs.clone()
        } else {
            let d = single_run(delta)?;
            let (mut data, charge) = permute_rows(&d.data(), arity, &index.order)?;
            rows::try_sort_distinct(arity, &mut data)?;
            vec![Run::new(arity, (data, charge))]
        };
        for run in new_runs {
            add_index_run(index, run)?;
        }
        Ok(())
    }
}
