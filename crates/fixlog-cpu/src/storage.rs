//! The CPU backend's data: relations and indexes as stacks of sorted runs, batches as
//! lists of segments.
//!
//! Tuples are stored **row-major**: one `Vec<u32>` per run, `arity` values per row.
//! Whole-tuple operations (sort, dedup, merge, difference, compare) touch one contiguous
//! row, usually within one cache line; sorting moves rows as units; a join's inner
//! loop reads a range of consecutive rows.
//!
//! Every run, segment and hash table carries the [`Charge`] of its allocation against
//! the run's memory budget (see [`crate::budget`]); operations that allocate are
//! fallible.

use crate::budget::{self, Charge};
use crate::hisa::HashTable;
use crate::rows;
use crate::spill::{self, Mapped};
use fixlog_exec::runs::{push_run, RunPolicy};
use fixlog_exec::tuples::{RowStore, SharedRows};
use fixlog_exec::{ExecError, ExecResult};
use fixlog_logical::Value;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// Each run of a relation or index is at least four times larger than the next (see
/// `fixlog_exec::runs`); host memory is not capped.
pub const RUNS: RunPolicy = RunPolicy::geometric(4);

/// A sorted, duplicate-free array of rows, in memory or in a file (see
/// [`crate::spill`]). Read it through [`Run::data`], once per operator.
#[derive(Debug)]
pub struct Run {
    pub(crate) len: usize,
    data: RwLock<Arc<RunData>>,
    /// The operator epoch in which the run was last read (see [`crate::spill`]).
    last_read: AtomicU64,
}

/// A run's rows.
#[derive(Debug)]
pub enum RunData {
    /// In memory, charged to the memory budget while it exists.
    Mem { rows: Vec<Value>, charge: Charge },
    /// In a file, mapped read-only (counted as spilled, not charged).
    Mapped(Mapped),
}

impl RunData {
    #[inline]
    pub fn rows(&self) -> &[Value] {
        match self {
            RunData::Mem { rows, .. } => rows,
            RunData::Mapped(m) => m.rows(),
        }
    }
}

impl SharedRows for RunData {
    fn values(&self) -> &[Value] {
        self.rows()
    }
    fn in_file(&self) -> bool {
        matches!(self, RunData::Mapped(_))
    }
    fn release_before(&self, values: usize) {
        if let RunData::Mapped(m) = self {
            m.release_before(values);
        }
    }
}

impl std::ops::Deref for RunData {
    type Target = [Value];
    #[inline]
    fn deref(&self) -> &[Value] {
        self.rows()
    }
}

impl Run {
    /// A run of `len` rows in memory, registered for spilling.
    fn make(len: usize, data: RunData) -> Arc<Run> {
        let run = Arc::new(Run {
            len,
            data: RwLock::new(Arc::new(data)),
            last_read: AtomicU64::new(spill::epoch()),
        });
        spill::register(&run);
        run
    }

    /// The run of sorted rows `data` (with the charge of its allocation).
    pub(crate) fn new(arity: usize, (data, charge): (Vec<Value>, Charge)) -> Arc<Run> {
        let len = data.len().checked_div(arity).unwrap_or(0);
        Run::make(len, RunData::Mem { rows: data, charge })
    }

    /// A run whose rows are already in a file.
    pub(crate) fn mapped(arity: usize, mapped: Mapped) -> Arc<Run> {
        let len = mapped.rows().len().checked_div(arity).unwrap_or(0);
        Run::make(len, RunData::Mapped(mapped))
    }

    /// The run holding the empty tuple (arity 0).
    pub(crate) fn unit() -> Arc<Run> {
        Run::make(
            1,
            RunData::Mem {
                rows: Vec::new(),
                charge: Charge::none(),
            },
        )
    }

    /// A run without rows.
    pub(crate) fn empty() -> Arc<Run> {
        Run::make(
            0,
            RunData::Mem {
                rows: Vec::new(),
                charge: Charge::none(),
            },
        )
    }

    /// The rows, held until the returned value is dropped (take it once per operator,
    /// not per row). Marks the run as read now.
    #[inline]
    pub fn data(&self) -> Arc<RunData> {
        self.last_read.store(spill::epoch(), Ordering::Relaxed);
        self.data_unstamped()
    }

    pub(crate) fn data_unstamped(&self) -> Arc<RunData> {
        self.data.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the rows (with the same rows elsewhere: spilling).
    pub(crate) fn replace(&self, data: RunData) {
        let old = std::mem::replace(
            &mut *self.data.write().unwrap_or_else(|e| e.into_inner()),
            Arc::new(data),
        );
        drop(old);
    }

    pub(crate) fn last_read(&self) -> u64 {
        self.last_read.load(Ordering::Relaxed)
    }

    /// Whether the rows are in a file.
    pub fn is_mapped(&self) -> bool {
        matches!(&*self.data_unstamped(), RunData::Mapped(_))
    }

    /// The rows' bytes.
    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of_val(self.data_unstamped().rows())
    }

    /// The rows as a result: moved out when this is the only holder and they are in
    /// memory, the mapped file itself when they are in a file, copied otherwise.
    pub(crate) fn into_store(self: Arc<Run>) -> ExecResult<RowStore> {
        let data = self.data();
        if let RunData::Mapped(_) = &*data {
            return Ok(RowStore::Shared(data));
        }
        drop(data);
        self.into_rows().map(RowStore::Owned)
    }

    /// The rows as a vector: moved out when this is the only holder and they are in
    /// memory, copied otherwise.
    pub(crate) fn into_rows(self: Arc<Run>) -> ExecResult<Vec<Value>> {
        match Arc::try_unwrap(self) {
            Ok(run) => {
                let data = run.data.into_inner().unwrap_or_else(|e| e.into_inner());
                match Arc::try_unwrap(data) {
                    Ok(RunData::Mem { rows, .. }) => Ok(rows),
                    Ok(mapped) => Ok(budget::try_copy(&mapped)?.0),
                    Err(shared) => Ok(budget::try_copy(&shared)?.0),
                }
            }
            Err(shared) => Ok(budget::try_copy(&shared.data())?.0),
        }
    }
}

/// A relation: disjoint sorted runs, largest first, shrinking geometrically, so adding
/// an iteration's delta costs O(|delta| log) instead of a rewrite of the relation.
#[derive(Debug, Clone)]
pub struct CpuRelation {
    pub(crate) arity: usize,
    /// Disjoint runs, largest first.
    pub(crate) runs: Vec<Arc<Run>>,
}

impl CpuRelation {
    pub fn empty(arity: usize) -> CpuRelation {
        CpuRelation {
            arity,
            runs: Vec::new(),
        }
    }
    pub fn len(&self) -> usize {
        self.runs.iter().map(|r| r.len).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Number of runs (for tests and statistics).
    pub fn run_count(&self) -> usize {
        self.runs.len()
    }
}

/// A piece of a batch.
#[derive(Debug, Default, Clone)]
pub struct Seg {
    pub(crate) data: SegRows,
    pub(crate) rows: usize,
    pub(crate) charge: Charge,
}

/// A segment's rows: a vector of its own, or a range of a run's rows read in place
/// (a relation passed to a pipeline as a batch, [`crate::CpuBackend`]'s
/// `relation_batch`: a delta scanned without a copy, which for a spilled run would
/// bring the whole file into memory).
#[derive(Debug, Clone)]
pub enum SegRows {
    Owned(Vec<Value>),
    /// Values `start..end` of a run's rows, held for as long as the segment lives.
    Shared {
        rows: Arc<RunData>,
        start: usize,
        end: usize,
    },
}

impl Default for SegRows {
    fn default() -> Self {
        SegRows::Owned(Vec::new())
    }
}

impl std::ops::Deref for SegRows {
    type Target = [Value];
    #[inline]
    fn deref(&self) -> &[Value] {
        match self {
            SegRows::Owned(v) => v,
            SegRows::Shared { rows, start, end } => &rows.rows()[*start..*end],
        }
    }
}

impl Seg {
    pub(crate) fn new(data: Vec<Value>, rows: usize, charge: Charge) -> Seg {
        Seg {
            data: SegRows::Owned(data),
            rows,
            charge,
        }
    }

    /// The rows of `run`, read in place.
    pub(crate) fn of_run(run: &Run) -> Seg {
        let rows = run.data();
        let end = rows.rows().len();
        Seg {
            data: SegRows::Shared {
                rows,
                start: 0,
                end,
            },
            rows: run.len,
            charge: Charge::none(),
        }
    }

    /// The segment's data as a vector of its own, with its charge (rows read in place
    /// are copied, charged).
    pub(crate) fn into_owned(self) -> ExecResult<(Vec<Value>, Charge)> {
        match self.data {
            SegRows::Owned(v) => Ok((v, self.charge)),
            shared @ SegRows::Shared { .. } => budget::try_copy(&shared),
        }
    }

    /// [`Self::into_owned`] with a charge covering the vector's allocation (data that
    /// came from outside the backend, such as facts, is charged now).
    pub(crate) fn into_charged(self) -> ExecResult<(Vec<Value>, Charge)> {
        let (data, mut charge) = self.into_owned()?;
        let held = data.capacity() * std::mem::size_of::<Value>();
        if charge.bytes() < held {
            charge.try_grow(held - charge.bytes())?;
        }
        Ok((data, charge))
    }

    /// The first `k` rows (of `arity` values) and the rest. Rows read in place are
    /// cut without a copy; a vector of its own keeps the head and copies the tail.
    fn split(self, k: usize, arity: usize) -> ExecResult<(Seg, Seg)> {
        let rest_rows = self.rows - k;
        match self.data {
            SegRows::Shared { rows, start, end } => {
                let cut = start + k * arity;
                let head = SegRows::Shared {
                    rows: rows.clone(),
                    start,
                    end: cut,
                };
                let tail = SegRows::Shared {
                    rows,
                    start: cut,
                    end,
                };
                Ok((
                    Seg {
                        data: head,
                        rows: k,
                        charge: self.charge,
                    },
                    Seg {
                        data: tail,
                        rows: rest_rows,
                        charge: Charge::none(),
                    },
                ))
            }
            SegRows::Owned(mut data) => {
                let tail = budget::try_copy(&data[k * arity..])?;
                data.truncate(k * arity);
                Ok((
                    Seg::new(data, k, self.charge),
                    Seg::new(tail.0, rest_rows, tail.1),
                ))
            }
        }
    }
}

/// A batch: segments, one per unit of parallel work of the operator that produced it,
/// in a fixed order: no concatenation copy between operators, and the same segments
/// for any thread count (units are split at fixed row counts).
#[derive(Debug, Clone)]
pub struct CpuBatch {
    pub(crate) arity: usize,
    pub(crate) len: usize,
    pub(crate) segs: Vec<Seg>,
    /// The relation whose only run this batch is, whole (`relation_batch`): its rows
    /// are sorted and unique already, so sorting them gives the relation back, shared
    /// (no copy: a delta scanned as it is before it is cut into pieces). A relation of
    /// several runs is sorted into one, as on the CUDA backend (see its `CudaBatch`).
    pub(crate) one_run: Option<CpuRelation>,
}

impl CpuBatch {
    pub(crate) fn from_segs(arity: usize, segs: Vec<Seg>) -> CpuBatch {
        let segs: Vec<Seg> = segs.into_iter().filter(|s| s.rows > 0).collect();
        let len = segs.iter().map(|s| s.rows).sum();
        CpuBatch {
            arity,
            len,
            segs,
            one_run: None,
        }
    }
    /// The batch of a relation's runs, read in place (no copy: a spilled run stays in
    /// its file).
    pub(crate) fn of_relation(rel: &CpuRelation) -> CpuBatch {
        let segs = rel.runs.iter().map(|r| Seg::of_run(r)).collect();
        let mut batch = CpuBatch::from_segs(rel.arity, segs);
        if rel.arity > 0 && rel.runs.len() == 1 && batch.segs.len() == 1 {
            batch.one_run = Some(rel.clone());
        }
        batch
    }
    /// A batch holding `rows` (row-major) as one segment; `len` tuples (needed for
    /// arity 0).
    pub fn from_rows(arity: usize, rows: Vec<Value>, len: usize) -> CpuBatch {
        CpuBatch::from_segs(arity, vec![Seg::new(rows, len, Charge::none())])
    }
    /// All rows, row-major, in batch order.
    pub fn rows(&self) -> Vec<Value> {
        self.segs
            .iter()
            .flat_map(|s| s.data.iter().copied())
            .collect()
    }
    /// [`CpuBatch::rows`], failing when the copy cannot be allocated.
    pub fn try_rows(&self) -> ExecResult<Vec<Value>> {
        let total = self.segs.iter().map(|s| s.data.len()).sum();
        let mut out = Vec::new();
        out.try_reserve_exact(total)
            .map_err(|_| budget::refused(total * std::mem::size_of::<Value>()))?;
        for s in &self.segs {
            out.extend_from_slice(&s.data);
        }
        Ok(out)
    }
    /// A copy charged to the budget (a batch that an operator passes on unchanged).
    pub(crate) fn try_clone(&self) -> ExecResult<CpuBatch> {
        let segs = self
            .segs
            .iter()
            .map(|s| {
                let (data, charge) = budget::try_copy(&s.data)?;
                Ok(Seg::new(data, s.rows, charge))
            })
            .collect::<ExecResult<Vec<Seg>>>()?;
        Ok(CpuBatch {
            arity: self.arity,
            len: self.len,
            segs,
            one_run: None,
        })
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn arity(&self) -> usize {
        self.arity
    }
    /// The first `rows` rows and the rest, in batch order. Whole segments move without
    /// copying; only a segment that straddles the cut is split (copying its tail where
    /// it owns its rows).
    pub(crate) fn split_at(mut self, rows: usize) -> ExecResult<(CpuBatch, CpuBatch)> {
        if rows >= self.len {
            let rest = CpuBatch::from_segs(self.arity, Vec::new());
            return Ok((self, rest));
        }
        let mut head = Vec::new();
        let mut taken = 0;
        let mut segs = std::mem::take(&mut self.segs).into_iter();
        for seg in segs.by_ref() {
            if taken + seg.rows <= rows {
                taken += seg.rows;
                head.push(seg);
                if taken == rows {
                    break;
                }
            } else {
                let (first, rest_first) = seg.split(rows - taken, self.arity)?;
                head.push(first);
                let rest: Vec<Seg> = std::iter::once(rest_first).chain(segs).collect();
                return Ok((
                    CpuBatch::from_segs(self.arity, head),
                    CpuBatch::from_segs(self.arity, rest),
                ));
            }
        }
        Ok((
            CpuBatch::from_segs(self.arity, head),
            CpuBatch::from_segs(self.arity, segs.collect()),
        ))
    }
}

pub(crate) struct IndexRun {
    pub(crate) run: Arc<Run>,
    pub(crate) table: HashTable,
}

impl IndexRun {
    pub(crate) fn new(run: Arc<Run>, arity: usize, key_len: usize) -> ExecResult<IndexRun> {
        let table = HashTable::try_build(&run.data(), arity, run.len, key_len)?;
        Ok(IndexRun { run, table })
    }
}

/// An index: the relation's runs permuted into the index order, each with a hash table
/// from the key prefix to the exact range of rows with that key (HISA). Extending adds
/// the delta as a new run, so it is proportional to the delta; a join probes each run
/// (O(log n) runs). An index whose order is the identity shares the relation's runs.
pub struct CpuIndex {
    pub(crate) arity: usize,
    /// `order[p]`: the relation column stored at position `p` of a row.
    pub(crate) order: Vec<usize>,
    pub(crate) key_len: usize,
    pub(crate) identity: bool,
    pub(crate) runs: Vec<IndexRun>,
}

impl CpuIndex {
    /// The rows of `r` (whose rows are `data`) whose key is `key`.
    #[inline]
    pub(crate) fn range(&self, r: &IndexRun, data: &[Value], key: &[Value]) -> (usize, usize) {
        if self.key_len == 0 {
            (0, r.run.len)
        } else {
            r.table.lookup(data, self.arity, key)
        }
    }
    pub fn run_count(&self) -> usize {
        self.runs.len()
    }
    pub fn len(&self) -> usize {
        self.runs.iter().map(|r| r.run.len).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A run too large for the CPU backend's 32-bit row counts is an error, not a wrap.
pub(crate) fn too_big(len: usize) -> ExecResult<()> {
    if len >= u32::MAX as usize {
        Err(ExecError::OutOfMemory(format!(
            "a run of {len} tuples exceeds the CPU backend's 2^32-1 limit"
        )))
    } else {
        Ok(())
    }
}

/// The union of two disjoint runs. Where holding the output would pass the spill
/// threshold (see [`crate::spill`]), it is written straight to a file, part by part.
pub(crate) fn union_runs(arity: usize, a: &Run, b: &Run) -> ExecResult<Arc<Run>> {
    merge_runs(arity, a, b, [false, false])
}

/// [`union_runs`] of runs the caller gives up: an input in a file that nobody else
/// holds (not the run, not its rows) gives its disk space back as a merge to a file
/// passes it ([`spill::Mapped::free_before`]), so merging a relation's largest runs
/// needs about the relation's size on disk, not twice.
pub(crate) fn union_runs_owned(arity: usize, a: Arc<Run>, b: Arc<Run>) -> ExecResult<Arc<Run>> {
    let owned = [Arc::strong_count(&a) == 1, Arc::strong_count(&b) == 1];
    merge_runs(arity, &a, &b, owned)
}

fn merge_runs(arity: usize, a: &Run, b: &Run, owned: [bool; 2]) -> ExecResult<Arc<Run>> {
    if arity == 0 {
        return Ok(Run::unit());
    }
    let (da, db) = (a.data(), b.data());
    too_big((da.len() + db.len()) / arity)?;
    // The rows an input alone holds (its run's lock and `da`/`db` here) in a file.
    fn sole_file(d: &Arc<RunData>, owned: bool) -> Option<&Mapped> {
        match &**d {
            RunData::Mapped(m) if owned && Arc::strong_count(d) == 2 => Some(m),
            _ => None,
        }
    }
    let (fa, fb) = (sole_file(&da, owned[0]), sole_file(&db, owned[1]));
    let gave_back = std::sync::atomic::AtomicBool::new(false);
    let consumed = |i: usize, j: usize| {
        for (m, n) in [(fa, i), (fb, j)] {
            if let Some(m) = m {
                m.free_before(n);
                gave_back.store(true, Ordering::Relaxed);
            }
        }
    };
    let to_file = |spill: &spill::Spill| {
        rows::union_disjoint_to_file(arity, &da, &db, spill, rows::FILE_WAVE_ROWS, &consumed)
            .map(|mapped| Run::mapped(arity, mapped))
    };
    if let Some(spill) =
        spill::file_for(std::mem::size_of_val(&da[..]) + std::mem::size_of_val(&db[..]))
    {
        match to_file(&spill) {
            Ok(run) => return Ok(run),
            // Inputs partly given back cannot be merged again: the error stands.
            Err(e) if gave_back.load(Ordering::Relaxed) => {
                spill.fail(&e);
                return Err(e);
            }
            // A full disk, say: the output stays in memory, and spilling stops.
            Err(e) => spill.fail(&e),
        }
    }
    match rows::try_union_disjoint(arity, &da, &db) {
        Ok(merged) => Ok(Run::new(arity, merged)),
        // Out of memory: a file needs none (where spilling is on and works).
        Err(ExecError::OutOfMemory(why)) => match spill::current() {
            Some(spill) => to_file(&spill).map_err(|e| {
                spill.fail(&e);
                // Not retried smaller once an input is partly given back.
                if gave_back.load(Ordering::Relaxed) {
                    e
                } else {
                    ExecError::OutOfMemory(why)
                }
            }),
            None => Err(ExecError::OutOfMemory(why)),
        },
        Err(e) => Err(e),
    }
}

/// Appends a run disjoint from `runs` and restores the geometric invariant.
pub(crate) fn add_run(arity: usize, runs: &mut Vec<Arc<Run>>, run: Arc<Run>) -> ExecResult<()> {
    push_run(
        runs,
        run,
        RUNS,
        |r| r.len,
        |below, top| union_runs_owned(arity, below, top),
    )
}

/// Appends an index run disjoint from `runs` and restores the geometric invariant.
pub(crate) fn add_index_run(index: &mut CpuIndex, run: Arc<Run>) -> ExecResult<()> {
    let (arity, key_len) = (index.arity, index.key_len);
    push_run(
        &mut index.runs,
        IndexRun::new(run, arity, key_len)?,
        RUNS,
        |r| r.run.len,
        |below, top| {
            let merged = union_runs_owned(arity, below.run, top.run)?;
            IndexRun::new(merged, arity, key_len)
        },
    )
}

/// The relation as one run (merging its runs if it has several).
pub(crate) fn single_run(rel: &CpuRelation) -> ExecResult<Arc<Run>> {
    Ok(match rel.runs.len() {
        0 => Run::empty(),
        1 => rel.runs[0].clone(),
        _ => {
            if rel.arity == 0 {
                return Ok(Run::unit());
            }
            // Merge smallest first: each row is copied O(log runs) times at most. Each
            // merge goes to a spill file where its output would pass the spill mark
            // (`union_runs`), so a relation larger than memory becomes one mapped run.
            let mut acc = rel.runs[rel.runs.len() - 1].clone();
            for r in rel.runs[..rel.runs.len() - 1].iter().rev() {
                acc = union_runs(rel.arity, r, &acc)?;
            }
            acc
        }
    })
}

pub(crate) fn permute_rows(
    data: &[Value],
    arity: usize,
    order: &[usize],
) -> ExecResult<(Vec<Value>, Charge)> {
    let (mut out, charge) = budget::try_zeroed(data.len())?;
    out.par_chunks_mut(arity * 4096)
        .zip(data.par_chunks(arity * 4096))
        .for_each(|(o, d)| {
            for (orow, drow) in o.chunks_exact_mut(arity).zip(d.chunks_exact(arity)) {
                for (p, &c) in order.iter().enumerate() {
                    orow[p] = drow[c];
                }
            }
        });
    Ok((out, charge))
}

/// Values per part when [`host_run`] writes rows to a file (64 MiB), at most.
const HOST_RUN_PART: usize = 1 << 24;

/// Rows made elsewhere (another backend's result, such as a GPU's) as a run on the
/// host, charged to this thread's budget: in memory where the budget has room for all
/// `values` below the spill state's low mark, else, where this thread has a spill
/// state, written to one of its files
/// part by part (each part charged while it is held) and mapped, so that a result
/// larger than `--memory-limit` is never held in memory whole. `read(start, len)`
/// gives the `len` values from value `start`.
pub fn host_run(
    values: usize,
    mut read: impl FnMut(usize, usize) -> ExecResult<Vec<Value>>,
) -> ExecResult<Arc<RunData>> {
    let value = std::mem::size_of::<Value>();
    let checked = |rows: Vec<Value>, len: usize| {
        if rows.len() == len {
            Ok(rows)
        } else {
            Err(ExecError::Backend(format!(
                "internal error: {} values read where {len} were asked for",
                rows.len()
            )))
        }
    };
    // In memory unless holding it would pass the spill state's low mark (the room
    // above it is for what reads the run: writing the outputs).
    let spill = match spill::result_file_for(values * value) {
        Some(spill) => spill,
        None => {
            let refused = match Charge::try_new(values * value) {
                Ok(charge) => {
                    let rows = checked(read(0, values)?, values)?;
                    return Ok(Arc::new(RunData::Mem { rows, charge }));
                }
                Err(e) => e,
            };
            spill::current().ok_or(refused)?
        }
    };
    // Parts of at most a quarter of the room the budget has left.
    let room = budget::current()
        .and_then(|b| b.limit().map(|l| l.saturating_sub(b.used())))
        .unwrap_or(usize::MAX);
    let part = (room / 4 / value).clamp(1 << 12, HOST_RUN_PART);
    let file = spill.new_file()?;
    let mut at = 0;
    while at < values {
        let len = part.min(values - at);
        let _held = Charge::try_new(len * value)?;
        let rows = checked(read(at, len)?, len)?;
        spill::write_at(&file, &rows, (at * value) as u64).map_err(|e| {
            ExecError::Backend(format!(
                "spilling to disk: cannot write a file in {}: {e}",
                spill.dir().unwrap_or_default().display()
            ))
        })?;
        at += len;
    }
    Ok(Arc::new(RunData::Mapped(spill.map(file, values)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_every_row_in_order() {
        let segs = vec![
            Seg::new(vec![1, 2, 3], 3, Charge::none()),
            Seg::new(vec![4, 5], 2, Charge::none()),
            Seg::new(vec![6, 7, 8, 9], 4, Charge::none()),
        ];
        for cut in 0..=10 {
            let b = CpuBatch::from_segs(1, segs.clone());
            let (h, t) = b.split_at(cut).unwrap();
            assert_eq!(h.len(), cut.min(9));
            assert_eq!(t.len(), 9 - cut.min(9));
            let mut all = h.rows();
            all.extend(t.rows());
            assert_eq!(all, (1..=9).collect::<Vec<_>>());
        }
    }

    #[test]
    fn rows_read_in_place_split_without_a_copy() {
        // Two runs of pairs read in place: every cut keeps every row in order, and the
        // runs' rows are shared, not copied (no charge).
        let budget = budget::Budget::new(None);
        budget::set_current(Some(budget.clone()));
        let a = Run::new(2, budget::try_copy(&[1, 10, 2, 20, 3, 30]).unwrap());
        let b = Run::new(2, budget::try_copy(&[4, 40, 5, 50]).unwrap());
        let held = budget.used();
        let segs = vec![Seg::of_run(&a), Seg::of_run(&b)];
        let expected: Vec<Value> = vec![1, 10, 2, 20, 3, 30, 4, 40, 5, 50];
        for cut in 0..=6 {
            let batch = CpuBatch::from_segs(2, segs.clone());
            let (h, t) = batch.split_at(cut).unwrap();
            assert_eq!((h.len(), t.len()), (cut.min(5), 5 - cut.min(5)));
            let mut all = h.rows();
            all.extend(t.rows());
            assert_eq!(all, expected);
            assert_eq!(budget.used(), held, "rows read in place were copied");
            assert!(h
                .segs
                .iter()
                .chain(&t.segs)
                .any(|s| matches!(s.data, SegRows::Shared { .. })));
        }
        // Owned again (charged) where an operator needs a vector of its own.
        let (rows, charge) = Seg::of_run(&b).into_charged().unwrap();
        assert_eq!((rows, charge.bytes()), (vec![4, 40, 5, 50], 16));
        budget::set_current(None);
    }
}
