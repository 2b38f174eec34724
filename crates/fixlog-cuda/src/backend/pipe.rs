//! Pipeline operators on the device: scans, filters, joins and anti-joins run the
//! generated kernels of [`super::code`]; host parts (see there) run the CPU backend's
//! operators on downloaded batches.

use super::code::{AntiCode, JoinCode, MapCode, MapExec};
use super::storage::{CudaBatch, CudaIndex, CudaRelation, DevRows, IndexRun};
use super::CudaBackend;
use crate::codegen::{
    RunDesc, JC_BLOCK, JD_BLOCK, JD_ITEMS, JW_BLOCK, JW_ITEMS, MAP_BLOCK, MAP_ITEMS,
};
use crate::error::Result;
use crate::gpu::DevBuf;
use crate::kernels::MISC;
use crate::CudaError;
use fixlog_cpu::eval::CExpr;
use fixlog_cpu::{CpuBatch, CpuCode};
use fixlog_exec::Absorbed;
use fixlog_exec::{Backend, EvalContext};
use fixlog_logical::Value;
use rayon::prelude::*;
use std::rc::Rc;

/// A zeroed device counter that kernels add their output rows to.
struct Counter {
    word: DevBuf,
}

impl CudaBackend {
    fn counter(&self) -> Result<Counter> {
        let word = self.gpu.alloc(8)?;
        self.gpu.memset8(word.ptr(), 0, 8)?;
        Ok(Counter { word })
    }

    fn read(&self, c: &Counter) -> Result<usize> {
        Ok(self.gpu.dtoh::<u64>(c.word.ptr(), 1)?[0] as usize)
    }

    /// The device-wide cache of rows a distinct join wrote (`P_jwrite_distinct`'s
    /// `seen`): `slots` empty `u64` slots, or `None` for none.
    fn written_cache(&self, slots: usize) -> Result<Option<DevBuf>> {
        if slots == 0 {
            return Ok(None);
        }
        let buf = self.gpu.alloc(slots * 8)?;
        self.gpu.memset8(buf.ptr(), 0xFF, slots * 8)?;
        Ok(Some(buf))
    }

    /// A buffer for up to `rows` rows of `arity` (0 words for arity 0).
    pub(crate) fn out_buffer(&self, rows: usize, arity: usize) -> Result<DevBuf> {
        let bytes = rows
            .checked_mul(arity * 4)
            .ok_or_else(|| CudaError::Invalid(format!("{rows} rows of arity {arity} overflow")))?;
        self.gpu.alloc(bytes)
    }

    fn batch_of(&self, arity: usize, buf: DevBuf, n: usize) -> CudaBatch {
        if arity == 0 {
            return CudaBatch::from_shared(0, Vec::new(), n);
        }
        CudaBatch::from_rows(arity, DevRows::device(buf, n))
    }

    /// Runs the host code of a scan or filter (or of the host part of a join) on rows
    /// downloaded from the device, and uploads the result.
    fn host_filter(
        &self,
        arity: usize,
        rows: Vec<Value>,
        len: usize,
        code: &CpuCode,
        ctx: &EvalContext,
    ) -> Result<CudaBatch> {
        let batch = CpuBatch::from_rows(arity, rows, len);
        let cpu = &self.cpu;
        let out = self
            .host
            .install(|| cpu.filter(&batch, code, ctx))
            .map_err(super::cuda_error)?;
        self.upload_batch(out.arity(), &out.rows(), out.len())
    }

    // ---- scan and filter -----------------------------------------------------------

    /// Filter and project the rows of `pieces` (`(address, rows)`).
    pub(crate) fn map_pieces(
        &self,
        code: &MapCode,
        pieces: &[(u64, usize)],
        ctx: &EvalContext,
    ) -> Result<CudaBatch> {
        let total: usize = pieces.iter().map(|p| p.1).sum();
        match &code.exec {
            MapExec::Identity => Err(CudaError::Invalid(
                "internal error: an identity map reached the device".into(),
            )),
            MapExec::Host(cpu) => {
                let mut rows = crate::gpu::host_with_capacity(total * code.arity)?;
                for &(ptr, n) in pieces {
                    if code.arity > 0 {
                        rows.extend(self.download(ptr, n * code.arity)?);
                    }
                }
                self.host_filter(code.arity, rows, total, cpu, ctx)
            }
            MapExec::Device(f) => {
                // (Callers make room before they take the pieces' addresses.)
                let out = self.out_buffer(total, code.out_arity)?;
                let count = self.counter()?;
                let per = (MAP_BLOCK * MAP_ITEMS) as usize;
                for &(ptr, n) in pieces {
                    if n == 0 {
                        continue;
                    }
                    let gpu = &self.gpu;
                    launch!(
                        gpu,
                        f.clone(),
                        n.div_ceil(per),
                        MAP_BLOCK,
                        ptr,
                        n as u64,
                        out.ptr(),
                        count.word.ptr()
                    );
                }
                let n = self.read(&count)?;
                Ok(self.batch_of(code.out_arity, out, n))
            }
        }
    }

    // ---- joins ---------------------------------------------------------------------

    /// Appends host-computed keys to each row of the input: `(rows ++ keys, kept)`;
    /// `failed` receives the rows whose key fails (when asked for).
    fn with_host_keys(
        &self,
        input: &CudaBatch,
        key: &[CExpr],
        ctx: &EvalContext,
        mut failed: Option<&mut Vec<Value>>,
    ) -> Result<CudaBatch> {
        let a = input.arity;
        let k = key.len();
        let rows = self.download_batch(input)?;
        let n = input.len;
        // Keys in parallel on the host, in row order.
        let rows_ref = &rows;
        let keys: Vec<Option<Vec<Value>>> = self.host.install(|| {
            (0..n)
                .into_par_iter()
                .map(|i| {
                    let r = &rows_ref[i * a..i * a + a];
                    key.iter().map(|e| e.eval(r, &[], ctx.symbols)).collect()
                })
                .collect()
        });
        let mut out = crate::gpu::host_with_capacity(n * (a + k))?;
        let mut kept = 0;
        for (i, key) in keys.into_iter().enumerate() {
            let r = &rows[i * a..i * a + a];
            match key {
                Some(key) => {
                    out.extend_from_slice(r);
                    out.extend(key);
                    kept += 1;
                }
                None => {
                    if let Some(f) = failed.as_deref_mut() {
                        f.extend_from_slice(r);
                    }
                }
            }
        }
        self.upload_batch(a + k, &out, kept)
    }

    /// A join; with `old` (the relation its output is absorbed into, subtracting
    /// `old`: `Backend::join_absorbed`) it may give back its new tuples instead.
    pub(crate) fn join_batch(
        &self,
        input: &CudaBatch,
        index: &CudaIndex,
        code: &JoinCode,
        ctx: &EvalContext,
        old: Option<&CudaRelation>,
    ) -> Result<Absorbed<CudaBatch, CudaRelation>> {
        check_index(index, &code.order, code.key_len)?;
        if input.arity != code.input_arity {
            return Err(wrong_arity("join", code.input_arity, input.arity));
        }
        let keyed;
        let input = match &code.host_key {
            Some(key) => {
                keyed = self.with_host_keys(input, key, ctx, None)?;
                &keyed
            }
            None => input,
        };
        // Rows the device writes are the join's output only without a host part
        // after it: only then may it drop rows of `old` as it writes.
        let old = old.filter(|_| code.host_after.is_none());
        if let (Some(old), Some(nr)) = (old, &code.new_rows) {
            if self.new_rows_joins {
                if let Some(new) = self.join_new_rows(input, index, code, nr, old)? {
                    return Ok(new);
                }
            }
        }
        let out = self.device_join(input, index, code, ctx, old)?;
        match (&code.host_after, out) {
            (None, out) => Ok(out),
            (Some(after), Absorbed::Rows(out)) => {
                let rows = self.download_batch(&out)?;
                self.host_filter(out.arity, rows, out.len, after, ctx)
                    .map(Absorbed::Rows)
            }
            (Some(_), Absorbed::New { .. }) => Err(CudaError::Invalid(
                "internal error: a join with a host part gave new tuples".into(),
            )),
        }
    }

    /// `P_jcount` of `n` input rows at `ptr` against one run of an index, scanned: the
    /// candidates' offsets (an exclusive scan of their counts), the index rows where
    /// each input row's begin, and the candidates in all (below 2^32: the offsets are
    /// 32-bit; more is an out-of-memory error, which the driver answers by halving).
    pub(crate) fn count_candidates(
        &self,
        code: &JoinCode,
        ptr: u64,
        n: usize,
        run: &IndexRun,
    ) -> Result<(DevBuf, DevBuf, usize)> {
        let offsets = self.gpu.alloc_u32(n)?;
        let begins = self.gpu.alloc_u32(n)?;
        let (starts, table, mask) = match &run.table {
            Some(t) => (t.starts.ptr(), t.table.ptr(), t.mask),
            None => (0, 0, 0),
        };
        let gpu = &self.gpu;
        launch!(
            gpu,
            code.kernels.count.clone(),
            n.div_ceil(JC_BLOCK as usize),
            JC_BLOCK,
            ptr,
            n as u64,
            run.rows.ptr(),
            starts,
            table,
            mask,
            run.rows.n as u64,
            offsets.ptr(),
            begins.ptr()
        );
        let total = self.gpu.exclusive_scan(offsets.ptr(), n, offsets.ptr())? as usize;
        if total > u32::MAX as usize {
            return Err(CudaError::OutOfMemory {
                requested: total.saturating_mul(code.device_out.max(1) * 4),
                in_use: self.gpu.pool_stats().in_use,
                limit: self.gpu.pool_stats().limit,
                device: false,
            });
        }
        Ok((offsets, begins, total))
    }

    /// Count, scan and write, per input piece and index run; all writes append to one
    /// output: a range mapped piece by piece where the device can and the candidates
    /// are large beside what is in use (`write_mapped`), else segments of ordinary
    /// buffers (`write_segments`).
    fn device_join(
        &self,
        input: &CudaBatch,
        index: &CudaIndex,
        code: &JoinCode,
        ctx: &EvalContext,
        old: Option<&CudaRelation>,
    ) -> Result<Absorbed<CudaBatch, CudaRelation>> {
        let ow = code.device_out;
        let pieces = input.pieces();
        let mut parts = Vec::new();
        let mut total = 0usize;
        // (The count arrays, 8 bytes per input row, stay until the write is done.
        // Counting inputs past 2^22 rows in chunks, each counted again before its
        // write, lowered no peak measured and cost TC about 4%: round 23.)
        for (piece, &(ptr, n)) in pieces.iter().enumerate() {
            for (r, run) in index.runs.iter().enumerate() {
                if n == 0 || run.rows.n == 0 {
                    continue;
                }
                let (counts, begins, t) = self.count_candidates(code, ptr, n, run)?;
                if t == 0 {
                    continue;
                }
                total += t;
                parts.push(JoinPart {
                    piece,
                    run: r,
                    n,
                    begins,
                    offsets: counts,
                    total: t,
                });
            }
        }
        if total == 0 {
            return Ok(Absorbed::Rows(CudaBatch::empty(ow)));
        }
        if ctx.can_split && ow > 0 {
            let own = (self.batch_budget_bytes() / (ow * 4)).max(1);
            let limit = ctx.max_rows.map_or(own, |m| m.clamp(1, own));
            if total > limit {
                let fits = self.rows_that_fit(&parts, pieces.len(), limit)?;
                return Err(CudaError::Exec(fixlog_exec::ExecError::BatchTooLarge {
                    rows: total,
                    limit,
                    fits,
                }));
            }
        }
        let per = if code.distinct {
            JD_BLOCK * JD_ITEMS
        } else {
            JW_BLOCK * JW_ITEMS
        } as usize;
        // What the join should keep: the share of the candidates its last write kept
        // (conditions and the deduplication drop the rest: SG's second join keeps a
        // sixth on ego-Facebook); before any write, `FIRST_WRITE_ROWS`.
        let expected = code
            .kept_share
            .get()
            .map_or(FIRST_WRITE_ROWS, |share| {
                (total as f64 * share).ceil() as usize
            })
            .min(total);
        // Rows for what it should keep and a half more (at least a block's worth).
        let sized = expected.saturating_add(expected / 2).max(per).min(total);
        // A distinct join of rows of one or two words may also drop the rows any block
        // already wrote (see `code::Backoff`): a device-wide cache of written rows,
        // kept across the windows (and segments) of this write.
        let use_cache = code.distinct && (ow == 1 || ow == 2) && code.written_cache.this_time();
        let cache_slots = if use_cache {
            written_cache_slots(sized)
        } else {
            0
        };
        self.make_room_for(cache_slots * 8)?;
        let w = JoinWrite {
            input,
            index,
            code,
            parts,
            total,
            per,
            written_cache: self.written_cache(cache_slots)?,
            cache_slots,
            cache_drops: if use_cache {
                Some(self.counter()?)
            } else {
                None
            },
            count: self.counter()?,
            // Rows of two columns: what the mapped write subtracts after each window
            // (`write_mapped`), where the backend drops (see `absorbed_drops`).
            old: old.filter(|_| ow == 2 && self.absorbed_drops),
        };
        // Where the device maps memory piece by piece and the candidates could fill a
        // few pieces and a quarter of what is in use, the output is one range of
        // addresses for every candidate (`write_mapped`): no segments, no copy to fit
        // (which held the output twice at the join's peak: TC loc-Brightkite, 0.29 GiB
        // of its 1.71), and mapped only a window ahead of the rows written. Otherwise,
        // segments: mapping costs driver calls and a wait when the range is dropped,
        // 4-8% of the time of SG CA-HepTh and TC CA-HepTh where every join over 128
        // MiB was mapped, for peaks no lower (round 20).
        let row = ow * 4;
        let candidates = total.saturating_mul(row);
        let mapped_pays = row > 0
            && candidates >= MAPPED_OUTPUT_MIN
            && candidates.saturating_mul(4) >= self.gpu.pool_stats().in_use;
        let mapped = if mapped_pays {
            self.gpu.reserve_mapped(candidates)?
        } else {
            None
        };
        // (`written`: the rows the kernels wrote, before a mapped write dropped those
        // of `old`: what the join's own choices follow.)
        let (out, written) = match mapped {
            Some(buf) => self.write_mapped(&w, buf)?,
            None => {
                let cap = if ow == 0 { total } else { sized };
                self.make_room_for(cap * row)?;
                let out = self.out_buffer(cap, ow)?;
                let (segments, n) = self.write_segments(&w, out, cap)?;
                (Absorbed::Rows(CudaBatch::from_shared(ow, segments, n)), n)
            }
        };
        code.kept_share
            .set(Some((written as f64 / total as f64).min(1.0)));
        if let Some(drops) = &w.cache_drops {
            code.written_cache.record(self.read(drops)? >= written);
        }
        Ok(out)
    }

    /// How many leading rows of a join's input make at most `limit` candidates, from
    /// the counts of its `parts` (one per index run with candidates; `None` for an
    /// input of several pieces): the driver cuts the input there when the join asks for smaller pieces,
    /// instead of at an estimate from the average fan-out, which a skewed input can
    /// make too large again (SG CA-HepTh's full-first plan: 68 pieces refused twice
    /// or more, docs/gpu-results.md round 28).
    fn rows_that_fit(
        &self,
        parts: &[JoinPart],
        pieces: usize,
        limit: usize,
    ) -> Result<Option<usize>> {
        // (One input piece: every part counts its `n` rows.)
        let (Some(first), 1) = (parts.first(), pieces) else {
            return Ok(None);
        };
        let n = first.n;
        let ptrs: Vec<u64> = parts.iter().map(|p| p.offsets.ptr()).collect();
        let desc = self.gpu.alloc(ptrs.len() * 8 + 8)?;
        self.gpu.htod(desc.ptr(), &ptrs)?;
        let out = desc.ptr() + (ptrs.len() * 8) as u64;
        self.gpu.memset8(out, 0, 8)?;
        let f = self.gpu.function(MISC, "", "prefix_fit")?;
        let gpu = &self.gpu;
        launch!(
            gpu,
            f,
            n.div_ceil(256).min(1024),
            256u32,
            desc.ptr(),
            ptrs.len() as u32,
            n as u64,
            limit as u64,
            out
        );
        let counted = self.gpu.dtoh::<u64>(out, 1)?[0] as usize;
        // (Row 0's sum is 0: at least one row counts.)
        Ok(Some(counted.saturating_sub(1)))
    }

    /// Writes the candidates `from..to` of part `p` at `out` (rows counted at `count`).
    fn write_window(
        &self,
        w: &JoinWrite<'_>,
        p: &JoinPart,
        from: usize,
        to: usize,
        out: u64,
    ) -> Result<()> {
        // A part's input and index addresses, taken afresh (making room may move runs
        // to host memory).
        let (ptr, rows) = (w.input.pieces()[p.piece].0, w.index.runs[p.run].rows.ptr());
        let (kernel, block) = if w.code.distinct {
            (&w.code.kernels.write_distinct, JD_BLOCK)
        } else {
            (&w.code.kernels.write, JW_BLOCK)
        };
        // `P_jwrite`'s parameters, and for `P_jwrite_distinct` the cache's.
        let mut args = vec![
            ptr,
            p.n as u64,
            rows,
            p.begins.ptr(),
            p.offsets.ptr(),
            from as u64,
            to as u64,
            out,
            w.count.word.ptr(),
        ];
        if w.code.distinct {
            args.push(w.written_cache.as_ref().map_or(0, |c| c.ptr()));
            args.push(w.cache_slots as u64);
            args.push(w.cache_drops.as_ref().map_or(0, |c| c.word.ptr()));
        }
        self.gpu
            .launch_words(kernel, (to - from).div_ceil(w.per), block, &args)
    }

    /// The write into one range of addresses for every candidate, mapped piece by piece
    /// a window ahead of the rows written: before each window of candidates, the range
    /// is mapped far enough that every one of them could be kept, so the output holds
    /// the rows written and at most a window (and a piece) more, whatever share the
    /// join keeps; then trimmed to the pieces its rows touch (`Gpu::trimmed`). (Mapping
    /// the expected rows and a half at once held 0.18 GiB more than the rows at TC
    /// CA-HepTh's largest join, where the share kept fell from 0.63 to 0.37.)
    ///
    /// A join absorbed into a relation (`w.old`: its runs) also sorts each window's
    /// rows in place once written and drops those of `old` and repeats
    /// (`Gpu::sort_unique_minus_at`); the next window writes after the survivors, and
    /// the pieces past them are unmapped. So the output holds the new tuples and one
    /// window, not every row the join keeps (SG's second joins keep rows that are 94%
    /// in the full relation already). The survivors, sorted window by window, are
    /// then sorted as one and deduplicated: the join's new tuples
    /// ([`Absorbed::New`]), which the driver adds as they are. Sorting them again
    /// there and subtracting the full relation once more, a pass over all of it per
    /// join, cost as much as the drops saved (round 24). Where a window could not be
    /// dropped (`old` moved to host memory meanwhile), the rows as they are
    /// ([`Absorbed::Rows`]).
    ///
    /// Returns the output and the rows the kernels wrote.
    fn write_mapped(
        &self,
        w: &JoinWrite<'_>,
        mut buf: DevBuf,
    ) -> Result<(Absorbed<CudaBatch, CudaRelation>, usize)> {
        let ow = w.code.device_out;
        let row = ow * 4;
        let window = mapped_window_rows(w.total, row, w.per);
        let piece = crate::vmm::PIECE;
        // Rows mapped, and a bound on the rows written (exact after a count is read);
        // the rows already compacted against `old` (sorted window by window), the rows
        // the kernels wrote before them, and whether every window was.
        let (mut mapped, mut bound) = (0usize, 0usize);
        let (mut settled, mut written) = (0usize, 0usize);
        let (mut runs, mut every_window) = (0usize, w.old.is_some());
        for p in &w.parts {
            let mut from = 0usize;
            while from < p.total {
                let to = p.total.min(from + window);
                if bound + (to - from) > mapped {
                    if bound > settled {
                        bound = self.read(&w.count)?;
                    }
                    let want = (bound + (to - from)).min(w.total);
                    if want > mapped {
                        // Whole pieces: the rows the last piece holds beyond `want`
                        // are mapped too.
                        let hi = (want * row).div_ceil(piece) * piece;
                        let want = (hi / row).clamp(want, w.total);
                        self.make_room_for((want - mapped) * row)?;
                        if let Some(m) = buf.mapped_mut() {
                            m.map(mapped * row, want * row)?;
                        }
                        mapped = want;
                    }
                }
                self.write_window(w, p, from, to, buf.ptr())?;
                bound += to - from;
                from = to;
                if !every_window {
                    continue;
                }
                // `old`'s addresses, taken afresh (making room may have moved runs
                // to host memory; then this window and the rest are not dropped).
                let Some(olds) = w
                    .old
                    .filter(|rel| rel.runs.iter().all(|r| r.on_device()))
                    .map(|rel| rel.runs.iter().map(|r| r.view(2)).collect::<Vec<_>>())
                else {
                    every_window = false;
                    continue;
                };
                let n = self.read(&w.count)?;
                written += n - settled;
                let fresh = buf.ptr() + (settled * row) as u64;
                let kept = self.gpu.sort_unique_minus_at(fresh, n - settled, &olds)?;
                runs += usize::from(kept > 0);
                settled += kept;
                if settled != n {
                    self.gpu.htod(w.count.word.ptr(), &[settled as u64])?;
                }
                bound = settled;
                // (Every kernel that used the rows past the survivors is done: the
                // count was read after them.)
                if let Some(m) = buf.mapped_mut() {
                    m.unmap_from(settled * row);
                    mapped = mapped.min((settled * row).div_ceil(piece) * piece / row);
                }
            }
        }
        let n = self.read(&w.count)?;
        written += n - settled;
        // (The count was read: every write is done.)
        let mut out = self.gpu.trimmed(buf, n, ow)?;
        if !every_window {
            let rows = Rc::new(DevRows::device(out.buf, out.n));
            return Ok((
                Absorbed::Rows(CudaBatch::from_shared(ow, vec![rows], n)),
                written,
            ));
        }
        if runs > 1 {
            self.gpu.sort(&mut out)?;
            out = self.gpu.unique_in_place(out)?;
        }
        let tuples = self.relation_of(ow, DevRows::device(out.buf, out.n));
        Ok((
            Absorbed::New {
                tuples,
                made: written,
            },
            written,
        ))
    }

    /// The write into segments: the first holds `cap` rows; the candidates are written
    /// window by window, each at most the room left in the current segment; a full
    /// segment is kept as it is and the write goes on in a new one (see
    /// `next_segment_rows`), so the output never sits in memory twice, as it did when
    /// a buffer grew by copying. A last segment mostly empty (the candidates the write
    /// dropped) is given back (`Gpu::fitted`).
    fn write_segments(
        &self,
        w: &JoinWrite<'_>,
        first: DevBuf,
        mut cap: usize,
    ) -> Result<(Vec<Rc<DevRows>>, usize)> {
        let ow = w.code.device_out;
        let row = ow * 4;
        let mut out = first;
        // Full segments and their rows.
        let mut full: Vec<(DevBuf, usize)> = Vec::new();
        let mut in_full = 0usize;
        // Rows written to the current segment, or (`exact` false) a bound on them:
        // read only where the bound would cut the next window short.
        let (mut written, mut exact, mut done) = (0usize, true, 0usize);
        for p in &w.parts {
            let mut from = 0usize;
            while from < p.total {
                let mut room = cap - written;
                if room < p.total - from && !exact {
                    written = self.read(&w.count)?;
                    room = cap - written;
                }
                if room < p.total - from && (room < cap / 4 || room == 0) {
                    // Nearly full: keep the segment and go on in a new one.
                    let seen = done + from;
                    let next = next_segment_rows(w.total - seen, in_full + written, seen, w.per);
                    self.make_room_for(next * row)?;
                    let segment = self.out_buffer(next, ow)?;
                    full.push((std::mem::replace(&mut out, segment), written));
                    in_full += written;
                    self.gpu.memset8(w.count.word.ptr(), 0, 8)?;
                    (cap, written) = (next, 0);
                    room = cap;
                }
                let to = p.total.min(from + room);
                self.write_window(w, p, from, to, out.ptr())?;
                written += to - from;
                exact = false;
                from = to;
            }
            done += p.total;
        }
        let last = self.read(&w.count)?;
        let fitted = self.gpu.fitted(out, last, ow)?;
        let segments = full
            .into_iter()
            .map(|(buf, k)| Rc::new(DevRows::device(buf, k)))
            .chain(std::iter::once(Rc::new(DevRows::device(
                fitted.buf, fitted.n,
            ))))
            .collect();
        Ok((segments, in_full + last))
    }

    // ---- anti-joins ----------------------------------------------------------------

    pub(crate) fn antijoin_batch(
        &self,
        input: &CudaBatch,
        index: &CudaIndex,
        code: &AntiCode,
        ctx: &EvalContext,
    ) -> Result<CudaBatch> {
        check_index(index, &code.order, code.key_len)?;
        let a = code.input_arity;
        if input.arity != a {
            return Err(wrong_arity("anti-join", a, input.arity));
        }
        match &code.host_key {
            None => self.device_antijoin(input, index, code, a),
            Some(key) => {
                // Rows whose key fails are kept; the others are looked up on the device
                // with their key appended, which is cut off again afterwards.
                let mut failed = Vec::new();
                let keyed = self.with_host_keys(input, key, ctx, Some(&mut failed))?;
                let kept = self.device_antijoin(&keyed, index, code, a + key.len())?;
                let width = a + key.len();
                let rows = self.download_batch(&kept)?;
                let mut out = failed;
                if a > 0 {
                    for r in rows.chunks_exact(width) {
                        out.extend_from_slice(&r[..a]);
                    }
                }
                let n = out
                    .len()
                    .checked_div(a)
                    .unwrap_or(input.len - keyed.len + kept.len);
                self.upload_batch(a, &out, n)
            }
        }
    }

    fn device_antijoin(
        &self,
        input: &CudaBatch,
        index: &CudaIndex,
        code: &AntiCode,
        width: usize,
    ) -> Result<CudaBatch> {
        // Room first: it may move runs, whose addresses the run table holds.
        self.make_room_for(input.len * width * 4)?;
        let descs: Vec<RunDesc> = index
            .runs
            .iter()
            .filter(|r| r.rows.n > 0)
            .map(|r| {
                let (starts, table, mask) = match &r.table {
                    Some(t) => (t.starts.ptr(), t.table.ptr(), t.mask),
                    None => (0, 0, 0),
                };
                RunDesc {
                    rows: r.rows.ptr(),
                    starts,
                    table,
                    mask,
                    pad: 0,
                    n: r.rows.n as u64,
                }
            })
            .collect();
        let runs = self
            .gpu
            .alloc(descs.len().max(1) * std::mem::size_of::<RunDesc>())?;
        self.gpu.htod(runs.ptr(), &descs)?;
        let out = self.out_buffer(input.len, width)?;
        let count = self.counter()?;
        let per = (MAP_BLOCK * MAP_ITEMS) as usize;
        let pieces = input.pieces();
        for (ptr, n) in pieces {
            let gpu = &self.gpu;
            launch!(
                gpu,
                code.kernel.clone(),
                n.div_ceil(per),
                MAP_BLOCK,
                ptr,
                n as u64,
                runs.ptr(),
                descs.len() as u32,
                out.ptr(),
                count.word.ptr()
            );
        }
        let n = self.read(&count)?;
        Ok(self.batch_of(width, out, n))
    }

    // ---- row numbers and aggregates ------------------------------------------------

    pub(crate) fn numbered(&self, input: &CudaBatch) -> Result<CudaBatch> {
        let a = input.arity;
        if input.len > u32::MAX as usize {
            return Err(CudaError::Invalid("more than 2^32 tuples to number".into()));
        }
        let out = self.out_buffer(input.len, a + 1)?;
        let f = self.gpu.function(MISC, "", "rows_number")?;
        let mut base = 0usize;
        for (ptr, n) in input.pieces() {
            let dst = out.ptr() + (base * (a + 1) * 4) as u64;
            let gpu = &self.gpu;
            launch!(
                gpu,
                f.clone(),
                n.div_ceil(256),
                256u32,
                ptr,
                n as u64,
                a as u32,
                base as u64,
                dst
            );
            base += n;
        }
        Ok(self.batch_of(a + 1, out, input.len))
    }

    pub(crate) fn aggregate_batch(
        &self,
        input: &CudaBatch,
        groups: CudaBatch,
        cpu: &CpuCode,
        ctx: &EvalContext,
    ) -> Result<CudaBatch> {
        let input_rows = self.download_batch(input)?;
        let group_rows = self.download_batch(&groups)?;
        let input = CpuBatch::from_rows(input.arity, input_rows, input.len);
        let groups = CpuBatch::from_rows(groups.arity, group_rows, groups.len);
        let backend = &self.cpu;
        let out = self
            .host
            .install(|| backend.aggregate(&input, groups, cpu, ctx))
            .map_err(super::cuda_error)?;
        self.upload_batch(out.arity(), &out.rows(), out.len())
    }
}

fn check_index(index: &CudaIndex, order: &[usize], key_len: usize) -> Result<()> {
    if index.order != order || index.key_len != key_len {
        return Err(CudaError::Invalid(format!(
            "internal error: an operator prepared for index order {order:?} (key {key_len}) given order {:?} (key {})",
            index.order, index.key_len
        )));
    }
    Ok(())
}

fn wrong_arity(what: &str, expected: usize, got: usize) -> CudaError {
    CudaError::Invalid(format!(
        "internal error: a {what} prepared for arity {expected} given arity {got}"
    ))
}

/// Rows of a join's next output segment, when the current one is full: `rest`
/// candidates are left, `written` rows are in the segments so far, of the `seen`
/// candidates written; `per` is one block's window. Enough for the rest at the share
/// kept so far and a half more, and at least as much again as written: a window may
/// take only as many candidates as its segment has room for rows (every candidate
/// may be kept), and each full window costs a wait for the count, so segments much
/// smaller than the rest cost more in waits than they save (a first segment of
/// exactly the expected rows made SG ego-Facebook 1.5x slower: docs/gpu-results.md,
/// round 19).
fn next_segment_rows(rest: usize, written: usize, seen: usize, per: usize) -> usize {
    let kept = written as f64 / seen.max(1) as f64;
    let expected = (rest as f64 * kept * 1.5) as usize + per;
    expected.max(written).clamp(1, rest.max(1))
}

/// One input piece joined with one index run: its candidates' offsets (after the
/// count and scan) and where each row's matches begin. Positions, not addresses:
/// making room for the output may move runs to the host, so the write takes the
/// addresses afresh.
struct JoinPart {
    piece: usize,
    run: usize,
    n: usize,
    begins: DevBuf,
    offsets: DevBuf,
    total: usize,
}

/// What a join's write needs besides its output.
struct JoinWrite<'a> {
    input: &'a CudaBatch,
    index: &'a CudaIndex,
    code: &'a JoinCode,
    parts: Vec<JoinPart>,
    /// Candidates over all parts.
    total: usize,
    /// Candidates per block of the write kernel.
    per: usize,
    written_cache: Option<DevBuf>,
    cache_slots: usize,
    cache_drops: Option<Counter>,
    /// The rows written so far (or, for segments, to the current segment).
    count: Counter,
    /// The relation the output is absorbed into, whose rows a mapped write drops
    /// window by window.
    old: Option<&'a CudaRelation>,
}

/// Candidates per window of a mapped join output: a `MAPPED_WINDOWS`th of them, and
/// at least a block's and a piece's worth, so that each window costs one read of the
/// count at most and maps whole pieces.
fn mapped_window_rows(total: usize, row: usize, per: usize) -> usize {
    (total / MAPPED_WINDOWS)
        .max(per)
        .max(crate::vmm::PIECE.div_ceil(row.max(1)))
        .max(1)
}

/// Windows of a mapped join output (see `mapped_window_rows`).
const MAPPED_WINDOWS: usize = 8;

/// The output buffer of a join's first write (when no earlier write says what share of
/// the candidates it keeps), in rows; more segments follow as it fills.
const FIRST_WRITE_ROWS: usize = 1 << 20;

/// Candidates' bytes from which a join writes into one range mapped piece by piece
/// (where the device can, and they are a quarter of what is in use), rather than
/// into segments: a few pieces.
const MAPPED_OUTPUT_MIN: usize = 2 * crate::vmm::PIECE;

/// Most slots of the cache of written rows: 32 MiB, so that it stays in the L2 cache
/// (50 MiB on an H100), where its atomics cost 2.2-2.4x the per-block deduplication's
/// time on rows that do not repeat (`examples/codegen_gpu.rs`, round 18). A linear
/// probing set sized for every row the buffer holds, in DRAM, cost 5-6x, and more
/// than it saved on every graph (docs/gpu-results.md, round 18).
const WRITTEN_CACHE_SLOTS_MAX: usize = 1 << 22;

/// Slots of the cache of written rows for an output buffer of `rows` rows: one and a
/// half per row, at least two blocks' candidates, at most `WRITTEN_CACHE_SLOTS_MAX`.
fn written_cache_slots(rows: usize) -> usize {
    (rows.saturating_add(rows / 2))
        .max((JD_BLOCK * JD_ITEMS) as usize * 2)
        .min(WRITTEN_CACHE_SLOTS_MAX)
}

#[cfg(test)]
mod tests {
    use super::next_segment_rows;
    use proptest::prelude::*;

    proptest! {
        /// A next segment holds at least one row and never more than the candidates
        /// left; it holds the rest at the share kept so far (and a half more) where
        /// that fits, and at least doubles the output otherwise.
        #[test]
        fn a_next_segment_is_bounded_by_the_rest(
            rest in 1usize..1 << 40,
            seen in 0usize..1 << 40,
            share in 0.0f64..=1.0,
            per in 1usize..1 << 16,
        ) {
            let written = (seen as f64 * share) as usize;
            let next = next_segment_rows(rest, written, seen, per);
            prop_assert!(next >= 1 && next <= rest);
            let kept = written as f64 / seen.max(1) as f64;
            let want = (rest as f64 * kept * 1.5) as usize + per;
            prop_assert!(next >= want.max(written).min(rest));
        }
    }

    proptest! {
        /// A mapped output's window is at least a block's and a piece's candidates, and
        /// splits the candidates into at most `MAPPED_WINDOWS` windows and one more
        /// (rounding), or one where a piece holds them all.
        #[test]
        fn a_mapped_window_bounds_the_windows(
            total in 1usize..1 << 34,
            row in prop::sample::select(vec![4usize, 8, 12, 16, 32]),
            per in 1usize..1 << 14,
        ) {
            let w = super::mapped_window_rows(total, row, per);
            prop_assert!(w >= per && w * row >= crate::vmm::PIECE);
            prop_assert!(total.div_ceil(w) <= super::MAPPED_WINDOWS + 1);
        }
    }

    #[test]
    fn a_next_segment_for_the_example_of_a_first_write() {
        // 1.5M rows kept of 3M candidates, 66M candidates left: room for the rest at
        // half kept, and a half more.
        let next = next_segment_rows(66_000_000, 1_500_000, 3_000_000, 4096);
        assert_eq!(next, 49_500_000 + 4096);
        // Nothing kept yet: one window's worth.
        assert_eq!(next_segment_rows(1000, 0, 0, 64), 64);
        // Never past the candidates left.
        assert_eq!(next_segment_rows(10, 5_000, 5_000, 4096), 10);
    }
}
