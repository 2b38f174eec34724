//! A join absorbed into a relation that gives back only its new rows, deduplicated in
//! shared memory as it runs (`P_jnew`).
//!
//! The last join of a recursive rule mostly derives what the relation holds already
//! (94% of same-generation's rows, most of transitive closure's on dense graphs). Written
//! out, those rows are the largest thing in device memory (SG CA-HepTh: 58.7M rows of
//! its largest join beside a 0.54 GiB relation), and sorting and subtracting them is
//! most of the join's time. Where the join writes rows `(x, y)` whose `x` is an input
//! column and the input is sorted (so its rows come grouped by `x`), a block takes the
//! candidates of input rows that share `x`, marks `old`'s `y`s for that `x` in a bitmap
//! in shared memory, and writes a candidate only where its `y`'s bit was clear. What
//! comes out is new to `old` and, within a block, written once: a few percent of the
//! candidates, sorted and deduplicated as one at the end (blocks that share `x`, the
//! input's chunks and the index's runs may repeat a row). The candidates never sit in
//! memory.
//!
//! It applies where the second column's values span at most `32 * JN_WORDS` values
//! (node ids of graphs up to 2^18 nodes), `old` has at most `JN_RUNS` runs, and the
//! blocks' candidates outweigh their fixed work, clearing the bitmap and marking
//! `old`'s rows of their group (checked on the first chunk: a sparse graph's
//! transitive closure, whose groups hold a few candidates each, runs the ordinary way,
//! and skips the check for a while, `code::Backoff`). A candidate whose second column
//! falls outside the bitmap (a stale span) makes the join run the ordinary way too:
//! the output is never used then. Round 27 measured this on an H100 before the check
//! counted marked rows (docs/gpu-results.md).

use super::code::{JoinCode, NewRowsCode};
use super::storage::{CudaBatch, CudaIndex, CudaRelation, DevRows};
use super::CudaBackend;
use crate::codegen::{JN_BLOCK, JN_RUNS, JN_WORDS};
use crate::error::Result;
use crate::gpu::DevBuf;
use crate::kernels::MISC;
use crate::ops::Rel;
use crate::CudaError;
use fixlog_exec::{Absorbed, SecondColumn};
use std::rc::Rc;

/// Most input rows a chunk counts at once (its count, begin and block arrays: 12 bytes
/// a row).
const CHUNK_ROWS_MAX: usize = 1 << 22;
/// Fewest input rows of a chunk (under a small memory limit).
const CHUNK_ROWS_MIN: usize = 1 << 16;
/// Fewest candidates a block takes before a new block starts within a group: the
/// block's fixed work (clearing the bitmap, finding and marking `old`'s rows of its
/// group) is then small beside its candidates.
const STRETCH_MIN: usize = 1 << 15;
/// Blocks a chunk's candidates are cut into at least (past `STRETCH_MIN` each).
const STRETCHES_PER_CHUNK: usize = 1024;
/// Fewest candidates per block, on average, for the bitmap to pay: blocks of fewer
/// clear and fill their bitmap for little (sparse graphs).
const CANDIDATES_PER_BLOCK_MIN: usize = 256;
/// Rows of the first output buffer where no earlier run says what share is new.
const FIRST_OUTPUT_ROWS: usize = 1 << 20;
/// Output buffers from this size on are mapped ranges that grow in place (see
/// `CudaBackend::new_rows_output`): two of the device's pieces, as for other joins'
/// mapped outputs (mapping costs driver calls and a wait when the range is dropped).
const NEW_ROWS_MAPPED_MIN: usize = 2 * crate::vmm::PIECE;

/// The blocks' fixed work (a quarter of the bitmap's words, at least
/// `CANDIDATES_PER_BLOCK_MIN`, and the rows of `old` they mark) may be at most this
/// share of the candidates for the bitmap to run (checked on the first chunk).
const FIXED_WORK_SHARE: f64 = 1.0;

impl CudaBackend {
    /// [`JoinCode`]'s join of `input` with `index`, absorbed into `old`: its new rows
    /// (sorted, deduplicated, none of `old`'s), or `None` where `P_jnew` does not apply
    /// (see the module docs) and the caller runs the join the ordinary way.
    pub(crate) fn join_new_rows(
        &self,
        input: &CudaBatch,
        index: &CudaIndex,
        code: &JoinCode,
        nr: &NewRowsCode,
        old: &CudaRelation,
    ) -> Result<Option<Absorbed<CudaBatch, CudaRelation>>> {
        if code.device_out != 2
            || old.arity != 2
            || old.runs.len() > JN_RUNS
            || input.arity != code.input_arity
            || nr.group >= input.arity
            || input.len == 0
            || !nr.tries.this_time()
        {
            return Ok(None);
        }
        let Some((lo, hi)) = self.second_span(input, index, nr)? else {
            // No index row or no input row: nothing to join.
            return Ok(Some(Absorbed::New {
                tuples: CudaRelation::empty(2),
                made: 0,
            }));
        };
        let words = ((hi as u64 - lo as u64) / 32 + 1) as usize;
        if words > JN_WORDS as usize {
            return Ok(None);
        }
        let arity = input.arity;
        let chunk_rows = (self.batch_budget_bytes() / 12 / 4).clamp(CHUNK_ROWS_MIN, CHUNK_ROWS_MAX);
        // Rows written, candidates that passed, candidates outside the bitmap, and the
        // rows of `old` the blocks mark (`jnew_blocks`).
        let counts = self.gpu.alloc(32)?;
        self.gpu.memset8(counts.ptr(), 0, 32)?;
        let olds_desc = self.gpu.alloc(JN_RUNS * 16)?;
        let mut out: Option<DevBuf> = None;
        // Rows the output buffer holds (mapped), and may hold (its address range).
        let (mut cap, mut reserved, mut used, mut passed) = (0usize, 0usize, 0usize, 0usize);
        let mut checked_density = false;
        // The chunk's address, taken afresh before each launch: making room may move
        // the runs the input is cut from to host memory.
        let at = |piece: usize, row: usize| -> Result<u64> {
            let (ptr, _) = input
                .pieces()
                .get(piece)
                .copied()
                .ok_or_else(|| CudaError::Invalid("an input piece went missing".into()))?;
            Ok(ptr + (row * arity * 4) as u64)
        };
        for (piece, (_, n)) in input.pieces().into_iter().enumerate() {
            let mut c0 = 0usize;
            while c0 < n {
                let m = chunk_rows.min(n - c0);
                let first = c0;
                c0 += m;
                for r in 0..index.runs.len() {
                    if index.runs[r].rows.n == 0 {
                        continue;
                    }
                    self.make_room_for(m * 12)?;
                    let chunk = at(piece, first)?;
                    let (offsets, begins, total) =
                        self.count_candidates(code, chunk, m, &index.runs[r])?;
                    if total == 0 {
                        continue;
                    }
                    let gpu = &self.gpu;
                    // Where blocks start: a new group, or a new stretch of candidates.
                    let stretch = (total / STRETCHES_PER_CHUNK).max(STRETCH_MIN) as u64;
                    let flags = self.gpu.alloc_u32(m)?;
                    let blocks = |pos: u64, starts: u64| -> Result<()> {
                        let f = self.gpu.function(MISC, "", "jnew_blocks")?;
                        launch!(
                            gpu,
                            f,
                            m.div_ceil(256),
                            256u32,
                            chunk,
                            m as u64,
                            arity as u32,
                            nr.group as u32,
                            offsets.ptr(),
                            stretch,
                            pos,
                            starts,
                            olds_desc.ptr(),
                            old.runs.len() as u32,
                            counts.ptr() + 24
                        );
                        Ok(())
                    };
                    blocks(flags.ptr(), 0)?;
                    let nblocks = self.gpu.flag_scan(flags.ptr(), m, flags.ptr())? as usize;
                    let block_starts = self.gpu.alloc_u32(nblocks.max(1))?;
                    self.write_runs(&olds_desc, old)?;
                    blocks(flags.ptr(), block_starts.ptr())?;
                    drop(flags);
                    if !checked_density {
                        // Whether the blocks' fixed work (clearing the bitmap, marking
                        // `old`'s rows of their group, which `jnew_blocks` counted) is
                        // small beside their candidates.
                        checked_density = true;
                        let marked = self.gpu.dtoh::<u64>(counts.ptr() + 24, 1)?[0] as usize;
                        let fixed = nblocks
                            .saturating_mul((words / 4).max(CANDIDATES_PER_BLOCK_MIN))
                            .saturating_add(marked);
                        let pays = fixed as f64 <= total as f64 * FIXED_WORK_SHARE;
                        nr.tries.record(pays);
                        if !pays {
                            return Ok(None);
                        }
                    }
                    if out.is_none() {
                        let share = nr.share.get().unwrap_or(0.0);
                        cap = ((total as f64 * share * 1.5) as usize).max(FIRST_OUTPUT_ROWS);
                        self.make_room_for(cap * 8)?;
                        let (buf, rows) = self.new_rows_output(cap)?;
                        out = Some(buf);
                        reserved = rows;
                    }
                    loop {
                        // Addresses taken afresh (making room may move runs to host
                        // memory; kernels read them there).
                        self.write_runs(&olds_desc, old)?;
                        self.gpu.htod(counts.ptr(), &[used as u64, 0, 0])?;
                        let out_ptr = out.as_ref().map_or(0, |b| b.ptr());
                        let (input_ptr, rows_ptr) = (at(piece, first)?, index.runs[r].rows.ptr());
                        launch!(
                            gpu,
                            nr.kernel.clone(),
                            nblocks,
                            JN_BLOCK,
                            input_ptr,
                            m as u64,
                            rows_ptr,
                            begins.ptr(),
                            offsets.ptr(),
                            total as u64,
                            block_starts.ptr(),
                            nblocks as u64,
                            olds_desc.ptr(),
                            old.runs.len() as u32,
                            lo,
                            words as u32,
                            out_ptr,
                            cap as u64,
                            counts.ptr()
                        );
                        let c = self.gpu.dtoh::<u64>(counts.ptr(), 3)?;
                        if c[2] > 0 {
                            // A candidate outside the bitmap: not deduplicated.
                            return Ok(None);
                        }
                        let now = c[0] as usize;
                        if now <= cap {
                            used = now;
                            passed += c[1] as usize;
                            break;
                        }
                        // The buffer was short: more rows mapped behind it where it
                        // is a mapped range, else a larger one with the rows so far
                        // copied (mapped where it is large); and this launch again (it
                        // writes the same rows).
                        let grown = now.saturating_add(now / 2).max(cap.saturating_mul(2));
                        if grown <= reserved {
                            if let Some(m) = out.as_mut().and_then(|b| b.mapped_mut()) {
                                self.make_room_for((grown - cap) * 8)?;
                                m.map(cap * 8, grown * 8)?;
                                cap = grown;
                                continue;
                            }
                        }
                        self.make_room_for(grown * 8)?;
                        let (bigger, rows) = self.new_rows_output(grown)?;
                        self.gpu.dtod(bigger.ptr(), out_ptr, used * 8)?;
                        // (The smaller buffer goes back to the pool in stream order,
                        // after the copy.)
                        out = Some(bigger);
                        cap = grown;
                        reserved = rows;
                    }
                }
            }
        }
        nr.share.set(Some(if passed == 0 {
            0.0
        } else {
            used as f64 / passed as f64
        }));
        let tuples = match out.filter(|_| used > 0) {
            None => CudaRelation::empty(2),
            Some(buf) => {
                let mut rows: Rel = self.gpu.trimmed(buf, used, 2)?;
                self.gpu.sort(&mut rows)?;
                let rows = self.gpu.unique_in_place(rows)?;
                self.relation_of(2, DevRows::device(rows.buf, rows.n))
            }
        };
        Ok(Some(Absorbed::New {
            tuples,
            made: passed,
        }))
    }

    /// An output buffer for `rows` rows of two words, and the rows its addresses can
    /// hold: where it is large and the device maps memory piece by piece, a range of
    /// addresses for as many rows as the pool could hold, `rows` of them mapped, so
    /// that the rows can outgrow the first guess without a copy (which held the old
    /// and the new buffer at once: SG CA-HepTh's bitmap join made 0.69 GiB over the
    /// 0.79 in use before it, docs/gpu-results.md round 29); else a buffer of the
    /// pool.
    fn new_rows_output(&self, rows: usize) -> Result<(DevBuf, usize)> {
        let bytes = rows.saturating_mul(8);
        if bytes >= NEW_ROWS_MAPPED_MIN {
            let room = self.gpu.pool_stats().limit.max(bytes);
            if let Some(mut buf) = self.gpu.reserve_mapped(room)? {
                if let Some(m) = buf.mapped_mut() {
                    m.map(0, bytes)?;
                }
                return Ok((buf, room / 8));
            }
        }
        Ok((self.out_buffer(rows, 2)?, rows))
    }

    /// The addresses and lengths of `old`'s runs at `desc` (as `P_jnew` reads them).
    fn write_runs(&self, desc: &DevBuf, old: &CudaRelation) -> Result<()> {
        let mut words = Vec::with_capacity(old.runs.len() * 2);
        for run in &old.runs {
            words.push(run.ptr());
            words.push(run.n as u64);
        }
        self.gpu.htod(desc.ptr(), &words)
    }

    /// The least and greatest value of the join's second output column over its
    /// candidates (an input column's over the input, or an index column's over the
    /// index: cached per run), or `None` where there are none.
    fn second_span(
        &self,
        input: &CudaBatch,
        index: &CudaIndex,
        nr: &NewRowsCode,
    ) -> Result<Option<(u32, u32)>> {
        let mut span: Option<(u32, u32)> = None;
        let mut widen = |lo: u32, hi: u32| {
            if lo <= hi {
                span = Some(match span {
                    Some((l, h)) => (l.min(lo), h.max(hi)),
                    None => (lo, hi),
                });
            }
        };
        match nr.second {
            SecondColumn::Input(c) => {
                for (ptr, n) in input.pieces() {
                    let (lo, hi) = self.column_min_max(ptr, n, input.arity, c)?;
                    widen(lo, hi);
                }
            }
            SecondColumn::Inner(p) => {
                for run in &index.runs {
                    if run.rows.n == 0 {
                        continue;
                    }
                    let key = (Rc::as_ptr(&run.rows) as usize, run.rows.n);
                    let cached = nr
                        .spans
                        .borrow()
                        .iter()
                        .find(|e| (e.0, e.1) == key)
                        .map(|e| (e.2, e.3));
                    let (lo, hi) = match cached {
                        Some(s) => s,
                        None => {
                            let s =
                                self.column_min_max(run.rows.ptr(), run.rows.n, index.arity, p)?;
                            let mut spans = nr.spans.borrow_mut();
                            // (Entries of runs merged away are dropped now and then.)
                            if spans.len() >= 64 {
                                spans.clear();
                            }
                            spans.push((key.0, key.1, s.0, s.1));
                            s
                        }
                    };
                    widen(lo, hi);
                }
            }
        }
        Ok(span)
    }

    /// The least and greatest word of column `c` of `n` rows of `arity` words at `ptr`
    /// (`(u32::MAX, 0)` for no rows).
    fn column_min_max(&self, ptr: u64, n: usize, arity: usize, c: usize) -> Result<(u32, u32)> {
        if n == 0 {
            return Ok((u32::MAX, 0));
        }
        let out = self.gpu.alloc(8)?;
        self.gpu.htod(out.ptr(), &[u32::MAX, 0u32])?;
        let f = self.gpu.function(MISC, "", "col_min_max")?;
        let gpu = &self.gpu;
        launch!(
            gpu,
            f,
            n.div_ceil(256).min(1024),
            256u32,
            ptr,
            n as u64,
            arity as u32,
            c as u32,
            out.ptr()
        );
        let v = self.gpu.dtoh::<u32>(out.ptr(), 2)?;
        Ok((v[0], v[1]))
    }
}
