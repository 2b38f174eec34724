//! Set operations and indexes on the device.
//!
//! Relations of arity 1 to 8 are sorted, deduplicated, merged and subtracted by the
//! device primitives (`crate::ops`: onesweep radix sort, one-pass unique and
//! difference, merge path). Wider relations (rare: the primitives are compiled per
//! arity up to 8) are sorted and merged on the host with the CPU backend's kernels and
//! stay on the device otherwise; arity 0 is a count.

use super::storage::{CudaBatch, CudaIndex, CudaRelation, DevRows, IndexRun};
use super::CudaBackend;
use crate::error::Result;
use crate::kernels::MISC;
use crate::ops::{Rel, View};
use crate::CudaError;
use fixlog_cpu::rows;
use fixlog_exec::runs::{push_run, push_run_unmerged, RunPolicy};
use fixlog_logical::Value;
use std::rc::Rc;

/// Each run of a device relation or index is at least twice the size of the next (the
/// transitive-closure driver measured 2 best: fewer rows copied per merge than with 4,
/// and few runs to probe).
const GROWTH: usize = 2;

/// Whether the device primitives sort and merge rows of this arity.
pub(crate) fn on_device(arity: usize) -> bool {
    (1..=8).contains(&arity)
}

/// Bytes of a batch from which `sorted_unique_minus` sorts it in halves
/// (`Gpu::sort_unique_minus_halves`), where they are also at least
/// 1/`HALVES_SHARE` of the memory in use and a whole sort would raise the run's peak
/// of memory in use: the sort's second buffer is then half the batch. Sorting in
/// halves costs about 5% of the operator's time (more launches, a difference pass
/// per half and run, a merge), so it is paid only where it lowers the peak. At 1/4
/// of the memory in use, SG CA-HepTh's peak fell 1.670 → 1.527 GiB at 4% more time;
/// at 1/8, TC loc-Brightkite's also fell (1.554 → 1.529), but applied to every batch
/// that large it took 7% more (round 20).
/// Quarters where halves would still raise the peak (each part compacted in place,
/// the survivors moved together and sorted again) took SG CA-HepTh's peak from 1.47
/// to 1.40 GiB for 6% more time, and cost TC 6-9% for nothing (its survivors are
/// many): dropped (round 23).
const HALVES_MIN: usize = 64 << 20;
const HALVES_SHARE: usize = 8;

impl CudaBackend {
    /// How runs of `total_rows` rows of `arity` grow: merged freely while the device
    /// has room for a merge's output beside its inputs, and otherwise only into runs
    /// that fit in the room left (a merge holds inputs and output at once; merging
    /// everything would need twice the relation). Measured on TC fe_ocean (H200,
    /// docs/gpu-results.md): capping every merge at half the relation keeps the peak
    /// at 1.5x the relation but takes 1.6x the time, so the cap applies only where
    /// memory is short.
    fn runs_policy(&self, arity: usize, total_rows: usize) -> RunPolicy {
        let s = self.gpu.pool_stats();
        let room = s.limit.saturating_sub(s.in_use) as f64 * 0.8;
        let bytes = (total_rows * arity.max(1) * 4).max(1) as f64;
        RunPolicy {
            growth: GROWTH,
            max_share: (room / bytes).min(1.0),
        }
    }

    // ---- moving rows --------------------------------------------------------------

    pub(crate) fn upload_rows(&self, rows: &[Value], n: usize) -> Result<DevRows> {
        let buf = self.gpu.alloc(rows.len() * 4)?;
        self.gpu.htod(buf.ptr(), rows)?;
        Ok(DevRows::device(buf, n))
    }

    pub(crate) fn download(&self, ptr: u64, words: usize) -> Result<Vec<Value>> {
        self.gpu.download_words(ptr, words)
    }

    /// A batch's rows, row-major, in batch order.
    pub(crate) fn download_batch(&self, batch: &CudaBatch) -> Result<Vec<Value>> {
        let mut out = crate::gpu::host_with_capacity(batch.len * batch.arity)?;
        for (ptr, n) in batch.pieces() {
            if batch.arity > 0 {
                out.extend(self.download(ptr, n * batch.arity)?);
            }
        }
        Ok(out)
    }

    pub(crate) fn upload_batch(
        &self,
        arity: usize,
        rows: &[Value],
        len: usize,
    ) -> Result<CudaBatch> {
        if arity == 0 {
            return Ok(CudaBatch::from_shared(0, Vec::new(), len));
        }
        Ok(CudaBatch::from_rows(arity, self.upload_rows(rows, len)?))
    }

    /// The batch in one buffer this backend owns (no copy when it already is).
    pub(crate) fn contiguous(&self, batch: CudaBatch) -> Result<DevRows> {
        let arity = batch.arity;
        let len = batch.len;
        if batch.segs.len() == 1 && batch.segs[0].start == 0 {
            let seg = batch.segs.into_iter().next().ok_or_else(|| {
                CudaError::Invalid("internal error: a batch lost its segment".into())
            })?;
            match Rc::try_unwrap(seg.rows) {
                Ok(rows) if rows.on_device() => {
                    let n = seg.n;
                    return Ok(DevRows::device(rows.into_device(&self.gpu, arity)?, n));
                }
                Ok(rows) => {
                    // Moved to the host: copy the segment's rows back.
                    let buf = self.gpu.alloc(len * arity * 4)?;
                    self.gpu.dtod(buf.ptr(), rows.ptr(), len * arity * 4)?;
                    return Ok(DevRows::device(buf, len));
                }
                Err(shared) => {
                    let buf = self.gpu.alloc(len * arity * 4)?;
                    self.gpu.dtod(buf.ptr(), shared.ptr(), len * arity * 4)?;
                    return Ok(DevRows::device(buf, len));
                }
            }
        }
        let buf = self.gpu.alloc(len * arity * 4)?;
        let mut at = 0u64;
        for (ptr, n) in batch.pieces() {
            let bytes = n * arity * 4;
            self.gpu.dtod(buf.ptr() + at, ptr, bytes)?;
            at += bytes as u64;
        }
        Ok(DevRows::device(buf, len))
    }

    /// Rows as a primitive's relation (in device memory).
    fn rel_of(&self, rows: DevRows, arity: usize) -> Result<Rel> {
        let n = rows.n;
        Ok(Rel {
            buf: rows.into_device(&self.gpu, arity)?,
            n,
            arity,
        })
    }

    fn rows_of(rel: Rel) -> DevRows {
        DevRows::device(rel.buf, rel.n)
    }

    /// A relation of one run (none if empty).
    pub(crate) fn relation_of(&self, arity: usize, run: DevRows) -> CudaRelation {
        let mut rel = CudaRelation::empty(arity);
        if run.n > 0 {
            let run = Rc::new(run);
            self.keep(&run, arity);
            rel.runs.push(run);
        }
        rel
    }

    /// The arity-0 relation holding the empty tuple.
    pub(crate) fn unit_relation(&self) -> Result<CudaRelation> {
        Ok(self.relation_of(0, DevRows::device(self.gpu.alloc(0)?, 1)))
    }

    // ---- sorting ------------------------------------------------------------------

    /// Bytes deduplicating `batch` needs beside it: a copy where its rows are not one
    /// buffer of its own ([`Self::contiguous`]), the sort's second buffer, and the
    /// flags of `unique` (or `unique_minus`) and, except for rows of two columns from
    /// `FUSED_UNIQUE_MIN_ROWS` (compacted over the sorted rows:
    /// `Gpu::unique_minus_in_place`), its output.
    fn dedup_room(batch: &CudaBatch) -> usize {
        let bytes = batch.len * batch.arity * 4;
        let in_place = match &batch.segs[..] {
            [seg] => seg.start == 0 && Rc::strong_count(&seg.rows) == 1,
            _ => false,
        };
        let copy = if in_place { 0 } else { bytes };
        let in_own_rows = batch.arity == 2 && batch.len >= crate::ops::FUSED_UNIQUE_MIN_ROWS;
        let output = if in_own_rows { 0 } else { bytes };
        copy + bytes + output + batch.len * 4
    }

    /// Sorted, duplicate-free rows of a batch.
    pub(crate) fn sorted_unique(&self, batch: CudaBatch) -> Result<DevRows> {
        let arity = batch.arity;
        self.make_room_for(Self::dedup_room(&batch))?;
        if on_device(arity) {
            let mut rel = self.rel_of(self.contiguous(batch)?, arity)?;
            if rel.n <= 1 {
                return Ok(CudaBackend::rows_of(rel));
            }
            self.gpu.sort(&mut rel)?;
            Ok(CudaBackend::rows_of(self.gpu.unique_in_place(rel)?))
        } else {
            let mut data = self.download_batch(&batch)?;
            drop(batch);
            let n = self
                .host
                .install(|| rows::try_sort_unique(arity, &mut data))
                .map_err(CudaError::Exec)?;
            self.upload_rows(&data, n)
        }
    }

    /// `sorted_unique(batch) − old`.
    pub(crate) fn sorted_unique_minus(
        &self,
        batch: CudaBatch,
        old: &CudaRelation,
    ) -> Result<DevRows> {
        let arity = batch.arity;
        self.make_room_for(Self::dedup_room(&batch))?;
        if on_device(arity) {
            let mut rel = self.rel_of(self.contiguous(batch)?, arity)?;
            let olds: Vec<View> = old.runs.iter().map(|r| r.view(arity)).collect();
            let bytes = rel.n * arity * 4;
            let s = self.gpu.pool_stats();
            if bytes >= HALVES_MIN
                && bytes.saturating_mul(HALVES_SHARE) >= s.in_use
                && s.in_use.saturating_add(bytes) > s.peak_in_use
            {
                match self.gpu.sort_unique_minus_halves(rel, &olds)? {
                    Ok(done) => return Ok(CudaBackend::rows_of(done)),
                    Err(back) => rel = back,
                }
            }
            if rel.n > 1 {
                self.gpu.sort(&mut rel)?;
            }
            Ok(CudaBackend::rows_of(
                self.gpu.unique_minus_in_place(rel, &olds)?,
            ))
        } else {
            let mut data = self.download_batch(&batch)?;
            drop(batch);
            let olds = self.host_runs(old)?;
            let refs: Vec<&[Value]> = olds.iter().map(|r| &r[..]).collect();
            let (out, _charge) = self
                .host
                .install(|| {
                    rows::try_sort_unique(arity, &mut data)?;
                    rows::try_difference_many(arity, &data, &refs)
                })
                .map_err(CudaError::Exec)?;
            let n = out.len() / arity;
            self.upload_rows(&out, n)
        }
    }

    fn host_runs(&self, rel: &CudaRelation) -> Result<Vec<Vec<Value>>> {
        rel.runs
            .iter()
            .map(|r| self.download(r.ptr(), r.n * rel.arity))
            .collect()
    }

    /// Sorts rows in place (no duplicates are removed: used on permuted sets).
    fn sort_rows(&self, rows: DevRows, arity: usize) -> Result<DevRows> {
        if rows.n <= 1 {
            return Ok(rows);
        }
        if on_device(arity) {
            let mut rel = self.rel_of(rows, arity)?;
            self.gpu.sort(&mut rel)?;
            Ok(CudaBackend::rows_of(rel))
        } else {
            let mut data = self.download(rows.ptr(), rows.n * arity)?;
            self.host
                .install(|| rows::try_sort_distinct(arity, &mut data))
                .map_err(CudaError::Exec)?;
            self.upload_rows(&data, rows.n)
        }
    }

    // ---- union and difference -----------------------------------------------------

    /// The union of two disjoint sorted runs.
    fn union_disjoint(&self, arity: usize, a: &DevRows, b: &DevRows) -> Result<DevRows> {
        if arity == 0 {
            return Ok(DevRows::device(self.gpu.alloc(0)?, 1));
        }
        if on_device(arity) {
            let m = self.gpu.merge(a.view(arity), b.view(arity))?;
            Ok(CudaBackend::rows_of(m))
        } else {
            let x = self.download(a.ptr(), a.n * arity)?;
            let y = self.download(b.ptr(), b.n * arity)?;
            let (out, _charge) = self
                .host
                .install(|| rows::try_union_disjoint(arity, &x, &y))
                .map_err(CudaError::Exec)?;
            self.upload_rows(&out, a.n + b.n)
        }
    }

    /// The union of two disjoint sorted runs this caller owns: where neither is shared
    /// (no other relation, index or batch holds it), a large merge gives back the
    /// memory of its inputs as it passes them (`Gpu::merge_releasing`), so it needs
    /// about its inputs' memory instead of twice.
    fn union_disjoint_owned(
        &self,
        arity: usize,
        a: Rc<DevRows>,
        b: Rc<DevRows>,
    ) -> Result<DevRows> {
        if !on_device(arity) || !a.on_device() || !b.on_device() {
            return self.union_disjoint(arity, &a, &b);
        }
        let sole = |r: &Rc<DevRows>| Rc::strong_count(r) == 1;
        let (free_a, free_b) = (sole(&a), sole(&b));
        let row = arity * 4;
        let m = self
            .gpu
            .merge_releasing(a.view(arity), b.view(arity), |i, j| {
                if free_a {
                    a.release_below(i * row);
                }
                if free_b {
                    b.release_below(j * row);
                }
            })?;
        Ok(CudaBackend::rows_of(m))
    }

    /// Bytes a merge of `a` and `b` needs beside its inputs. A releasing merge (a large
    /// output, inputs it alone holds) needs a chunk and two pieces beside what its
    /// inputs give back as it passes them, which only inputs mapped piece by piece do:
    /// the others stay whole until it ends, so their bytes count in full.
    fn merge_room(arity: usize, a: &Rc<DevRows>, b: &Rc<DevRows>) -> usize {
        let bytes = (a.n + b.n) * arity * 4;
        let releasing = Rc::strong_count(a) == 1 && Rc::strong_count(b) == 1;
        if releasing && bytes >= crate::ops::MERGE_RELEASING_MIN && on_device(arity) {
            let kept: usize = [a, b]
                .iter()
                .filter(|r| !r.releasable())
                .map(|r| r.n * arity * 4)
                .sum();
            let chunks = (bytes / 16).max(crate::vmm::PIECE) + 2 * crate::vmm::PIECE;
            (kept + chunks).min(bytes + crate::vmm::PIECE)
        } else {
            bytes
        }
    }

    /// Before a merge of `a` and `b` that may give its inputs' memory back as it goes
    /// (both on the device, held by the merge alone, at least
    /// `MERGE_RELEASING_MIN` together): an input of at least two pieces held in a
    /// pool block, which would stay whole until the merge ends, is copied into
    /// mapped pieces first, where the merge as it is would raise the peak of memory
    /// in use. The copy needs the input's size beside it for a moment; the merge
    /// without it needs that size and its own chunks until the end. TC CA-HepTh's
    /// peak, a merge of its full relation's runs beside a 227 MiB block: 0.895 →
    /// 0.833 GiB in use, same time; copying before every such merge cost the large
    /// graphs 2-4% (TC usroads, fe_ocean) for no lower peak (docs/gpu-results.md,
    /// round 26).
    fn pieces_before_merge(&self, arity: usize, a: &Rc<DevRows>, b: &Rc<DevRows>) -> Result<()> {
        let row = arity * 4;
        let s = self.gpu.pool_stats();
        if !self.gpu.maps_pieces()
            || !on_device(arity)
            || (a.n + b.n) * row < crate::ops::MERGE_RELEASING_MIN
            || Rc::strong_count(a) != 1
            || Rc::strong_count(b) != 1
            || !a.on_device()
            || !b.on_device()
            || s.in_use.saturating_add(Self::merge_room(arity, a, b)) <= s.peak_in_use
        {
            return Ok(());
        }
        for r in [a, b] {
            if r.n * row >= 2 * crate::vmm::PIECE && !r.releasable() {
                self.make_room_for(r.n * row)?;
                if r.on_device() {
                    r.copy_to_pieces(&self.gpu, arity)?;
                }
            }
        }
        Ok(())
    }

    /// Appends a run disjoint from `runs` and restores the geometric invariant. A run
    /// something else still holds (the driver's delta, added to its full relation) is
    /// not merged now but by a later addition ([`push_run_unmerged`]): merged now, its
    /// rows would sit in memory twice for an iteration (SG CA-HepTh: a delta of 0.3
    /// GiB, larger than the relation it joined), and the later merge may give its
    /// inputs' memory back as it goes, which a merge of a shared run cannot.
    pub(crate) fn add_run(
        &self,
        arity: usize,
        runs: &mut Vec<Rc<DevRows>>,
        run: Rc<DevRows>,
    ) -> Result<()> {
        let total = runs.iter().map(|r| r.n).sum::<usize>() + run.n;
        let policy = self.runs_policy(arity, total);
        let merge = |below: Rc<DevRows>, top: Rc<DevRows>| {
            self.pieces_before_merge(arity, &below, &top)
                .map_err(super::exec_error)?;
            self.make_room_for(Self::merge_room(arity, &below, &top))
                .map_err(super::exec_error)?;
            let merged = self
                .union_disjoint_owned(arity, below, top)
                .map(Rc::new)
                .map_err(super::exec_error)?;
            self.keep(&merged, arity);
            Ok(merged)
        };
        if Rc::strong_count(&run) > 1 {
            push_run_unmerged(runs, run, policy, |r| r.n, merge)
        } else {
            push_run(runs, run, policy, |r| r.n, merge)
        }
        .map_err(super::cuda_error)
    }

    /// `a ∪ b` as one merge deduplicated in place, where `a` is one run that `b` would
    /// be merged into anyway (`b` at least 1/`GROWTH` of it, merges uncapped) and the
    /// rows have two columns, from `FUSED_UNIQUE_MIN_ROWS` (deduplicated over the
    /// merge's own rows): it needs `a + b` beside its inputs, where `b − a` with its
    /// flags and then `a ∪ (b − a)` need up to `b` more (the driver's merges of
    /// gathered runs, which it keeps until the union is made: round 21 measured SG
    /// CA-HepTh's peak at such a merge). `None` elsewhere.
    pub(crate) fn union_in_one_run(
        &self,
        a: &CudaRelation,
        b: &Rc<DevRows>,
    ) -> Result<Option<CudaRelation>> {
        let arity = a.arity;
        let [a1] = &a.runs[..] else {
            return Ok(None);
        };
        let n = a1.n + b.n;
        if arity != 2
            || n < crate::ops::FUSED_UNIQUE_MIN_ROWS
            || b.n.saturating_mul(GROWTH) < a1.n
            || !a1.on_device()
            || !b.on_device()
            || self.runs_policy(arity, n).max_share < 1.0
        {
            return Ok(None);
        }
        self.make_room_for(n * arity * 4)?;
        let merged = self.gpu.merge(a1.view(arity), b.view(arity))?;
        let union = self.gpu.unique_in_place(merged)?;
        Ok(Some(self.relation_of(arity, CudaBackend::rows_of(union))))
    }

    /// The relation as one run.
    pub(crate) fn single_run(&self, rel: &CudaRelation) -> Result<Rc<DevRows>> {
        match rel.runs.len() {
            0 => Ok(Rc::new(DevRows::device(self.gpu.alloc(0)?, 0))),
            1 => Ok(rel.runs[0].clone()),
            _ => {
                // Two merges' outputs may be alive at once (the last and the one
                // before it, until it is dropped).
                self.make_room_for(2 * rel.len() * rel.arity * 4)?;
                // Smallest first: each row is copied O(log runs) times at most.
                let mut acc = rel.runs[rel.runs.len() - 1].clone();
                for r in rel.runs[..rel.runs.len() - 1].iter().rev() {
                    acc = Rc::new(self.union_disjoint(rel.arity, r, &acc)?);
                }
                Ok(acc)
            }
        }
    }

    /// `a − b` for a sorted duplicate-free run `a`.
    pub(crate) fn run_minus(&self, arity: usize, a: &DevRows, b: &CudaRelation) -> Result<DevRows> {
        if b.is_empty() || a.n == 0 {
            let buf = self.gpu.alloc(a.n * arity * 4)?;
            self.gpu.dtod(buf.ptr(), a.ptr(), a.n * arity * 4)?;
            return Ok(DevRows::device(buf, a.n));
        }
        if arity == 0 {
            return Ok(DevRows::device(self.gpu.alloc(0)?, 0));
        }
        if on_device(arity) {
            let bs: Vec<View> = b.runs.iter().map(|r| r.view(arity)).collect();
            Ok(CudaBackend::rows_of(
                self.gpu.unique_minus(a.view(arity), &bs)?,
            ))
        } else {
            let x = self.download(a.ptr(), a.n * arity)?;
            let olds = self.host_runs(b)?;
            let refs: Vec<&[Value]> = olds.iter().map(|r| &r[..]).collect();
            let (out, _charge) = self
                .host
                .install(|| rows::try_difference_many(arity, &x, &refs))
                .map_err(CudaError::Exec)?;
            let n = out.len() / arity;
            self.upload_rows(&out, n)
        }
    }

    // ---- indexes ------------------------------------------------------------------

    fn index_run(&self, rows: Rc<DevRows>, arity: usize, key_len: usize) -> Result<IndexRun> {
        let table = if key_len > 0 && rows.n > 0 {
            Some(self.gpu.hisa_table(rows.view(arity), key_len)?)
        } else {
            None
        };
        Ok(IndexRun { rows, table })
    }

    /// Appends an index run disjoint from the index's runs and restores the invariant.
    pub(crate) fn add_index_run(&self, index: &mut CudaIndex, rows: Rc<DevRows>) -> Result<()> {
        let (arity, key_len) = (index.arity, index.key_len);
        self.keep(&rows, arity);
        let run = self.index_run(rows, arity, key_len)?;
        let total = index.len() + run.rows.n;
        let policy = self.runs_policy(arity, total);
        push_run(
            &mut index.runs,
            run,
            policy,
            |r| r.rows.n,
            |below, top| {
                // The hash tables go first: the rows may then be the merge's alone.
                let (IndexRun { rows: a, .. }, IndexRun { rows: b, .. }) = (below, top);
                self.pieces_before_merge(arity, &a, &b)
                    .map_err(super::exec_error)?;
                self.make_room_for(Self::merge_room(arity, &a, &b))
                    .map_err(super::exec_error)?;
                let merged = Rc::new(
                    self.union_disjoint_owned(arity, a, b)
                        .map_err(super::exec_error)?,
                );
                self.keep(&merged, arity);
                self.index_run(merged, arity, key_len)
                    .map_err(super::exec_error)
            },
        )
        .map_err(super::cuda_error)
    }

    /// The rows of a run permuted into `order` and sorted (a permutation of a set is
    /// a set: no duplicates to remove).
    pub(crate) fn permuted_run(
        &self,
        arity: usize,
        run: &DevRows,
        order: &[usize],
    ) -> Result<DevRows> {
        let out = self.gpu.alloc(run.n * arity * 4)?;
        let order32: Vec<u32> = order.iter().map(|&c| c as u32).collect();
        let ord = self.gpu.alloc(order32.len() * 4)?;
        self.gpu.htod(ord.ptr(), &order32)?;
        if run.n > 0 {
            let f = self.gpu.function(MISC, "", "rows_permute")?;
            let gpu = &self.gpu;
            launch!(
                gpu,
                f,
                run.n.div_ceil(256),
                256u32,
                run.ptr(),
                run.n as u64,
                arity as u32,
                ord.ptr(),
                out.ptr()
            );
        }
        self.sort_rows(DevRows::device(out, run.n), arity)
    }

    /// [`sorted_rows`](Self::sorted_rows) of a relation given up: where every run is
    /// on the device and large merges can release their inputs, the runs merge
    /// smallest first on the device, each merge giving back the memory of the runs it
    /// consumes, so the result needs about the relation's memory, not twice.
    pub(crate) fn take_sorted_rows(&self, rel: CudaRelation) -> Result<Vec<Value>> {
        let arity = rel.arity;
        let releasing =
            self.gpu.maps_pieces() && on_device(arity) && rel.runs.iter().all(|r| r.on_device());
        if !releasing || rel.runs.len() <= 1 {
            return self.sorted_rows(&rel);
        }
        let mut runs = rel.runs;
        let Some(mut acc) = runs.pop() else {
            return Ok(Vec::new());
        };
        while let Some(next) = runs.pop() {
            self.pieces_before_merge(arity, &next, &acc)?;
            self.make_room_for(Self::merge_room(arity, &next, &acc))?;
            if !next.on_device() || !acc.on_device() {
                // Moved to make room: the device is too short for this; the host
                // merges what is left.
                runs.push(next);
                runs.push(acc);
                return self.sorted_rows(&CudaRelation { arity, runs });
            }
            acc = Rc::new(self.union_disjoint_owned(arity, next, acc)?);
        }
        self.download(acc.ptr(), acc.n * arity)
    }

    /// A relation's rows in sorted order, for the host. Merged on the device when the
    /// merge fits there, else run by run on the host (a relation larger than the
    /// device's memory).
    pub(crate) fn sorted_rows(&self, rel: &CudaRelation) -> Result<Vec<Value>> {
        let arity = rel.arity;
        if arity == 0 {
            return Ok(Vec::new());
        }
        let bytes = rel.len() * arity * 4;
        let s = self.gpu.pool_stats();
        let room = s.limit.saturating_sub(s.in_use) / 10 * 8;
        if rel.runs.len() <= 1 || bytes <= room {
            let run = self.single_run(rel)?;
            return self.download(run.ptr(), run.n * arity);
        }
        let mut acc: Vec<Value> = Vec::new();
        for run in rel.runs.iter().rev() {
            let rows = self.download(run.ptr(), run.n * arity)?;
            acc = if acc.is_empty() {
                rows
            } else {
                self.host
                    .install(|| rows::try_union_disjoint(arity, &rows, &acc))
                    .map_err(CudaError::Exec)?
                    .0
            };
        }
        Ok(acc)
    }
}
