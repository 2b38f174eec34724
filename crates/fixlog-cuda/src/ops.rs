//! Relational primitives on the GPU, driven from Rust.
//!
//! Device-wide passes (scan, radix sort passes, compaction) are sequences of
//! block-level kernels launched here, since CUB's device-wide headers do not
//! compile under NVRTC. All temporaries come from the pool; host
//! synchronisation happens only where a size must be known on the host
//! (output sizes of compaction and join, the varying bits before a sort).

use crate::cpu::JoinSpec;
use crate::error::{CudaError, Result};
use crate::gpu::{arity_defines, join_defines, DevBuf, Gpu};
use crate::kernels::{HISA, JOIN, REL, SCAN, SORT};

const SCAN_TILE: usize = 256 * 16;
const BLOCK: u32 = 256;
/// A compaction's output keeps a block larger than it needs unless fitting it gives
/// back at least this much (see `Gpu::fitted`).
const FIT_MIN_RETURN: usize = 1 << 20;

/// Bytes of rows from which a buffer mapped piece by piece is trimmed to the pieces
/// they touch rather than copied to a buffer of their size ([`Gpu::trimmed`]): two
/// pieces, so that the last piece's slack stays under half of the rows.
pub(crate) const TRIM_KEEP_MIN: usize = 2 * crate::vmm::PIECE;

/// Rows per onesweep tile (OS_TILE in sort.cu).
fn os_tile(arity: usize) -> usize {
    256 * match arity {
        1 => 16,
        2 => 12,
        3 | 4 => 8,
        _ => 4,
    }
}
/// Rows per onesweep launch: look-back words hold 30-bit counts.
pub(crate) const OS_PORTION: usize = 1 << 28;
/// Rows (or flags) per compaction tile (CT_TILE in rel.cu).
const CT_TILE: usize = 256 * 16;
fn merge_tile(arity: usize) -> usize {
    256 * match arity {
        1 => 16,
        2 => 8,
        3 | 4 => 4,
        _ => 2,
    }
}
/// Interpolation steps of `diff2_bpart`'s search before it bisects (round 7,
/// docs/gpu-results.md: 3 measured fastest; 0 = binary search only).
const BPART_ISTEPS: u32 = 3;
/// Tiles of look-ahead of `diff2_tilea`'s L2 prefetch, per SM (round 7: two
/// per SM measured fastest).
const DIFF2_PF_PER_SM: u64 = 2;

/// Smallest input of `unique_minus` (arity 2) that takes the fused
/// unique-difference pass: it reads the count back once more than the
/// keep-flag path, which costs more than it saves on small inputs (the
/// many small iterations of a transitive closure).
pub(crate) const FUSED_UNIQUE_MIN_ROWS: usize = 1 << 20;

/// Rows of b staged per `diff2_tilea_N` tile (TILEA_CAP in rel.cu).
const TILEA_CAP: f64 = 3072.0;
#[derive(Clone, Copy)]
enum ScanMode {
    U32,
    U64,
    Flag,
}

fn blocks(n: usize, per: usize) -> usize {
    n.div_ceil(per)
}

/// A relation on the device: `n` tuples of `arity` u32 words, row-major.
#[derive(Debug)]
pub struct Rel {
    pub buf: DevBuf,
    pub n: usize,
    pub arity: usize,
}

/// A borrowed range of a relation.
#[derive(Debug, Clone, Copy)]
pub struct View {
    pub ptr: u64,
    pub n: usize,
    pub arity: usize,
}

impl Rel {
    pub fn view(&self) -> View {
        View {
            ptr: self.buf.ptr(),
            n: self.n,
            arity: self.arity,
        }
    }
    pub fn bytes(&self) -> usize {
        self.n * self.arity * 4
    }
}

impl View {
    pub fn slice(&self, start: usize, end: usize) -> View {
        assert!(start <= end && end <= self.n);
        View {
            ptr: self.ptr + (start * self.arity * 4) as u64,
            n: end - start,
            arity: self.arity,
        }
    }
}

/// Outputs from this size merge chunk by chunk and release their inputs as they go
/// ([`Gpu::merge_releasing`]); below it the memory saved is not worth the waits.
pub const MERGE_RELEASING_MIN: usize = 256 << 20;

fn check_arity(a: usize) -> Result<()> {
    if (1..=8).contains(&a) {
        Ok(())
    } else {
        Err(CudaError::Invalid(format!("arity {a} not in 1..=8")))
    }
}

/// Hash-indexed sorted array: a sorted relation, the start offset of each
/// distinct key prefix, and an open-addressing table key -> key number.
pub struct Hisa {
    pub rel: Rel,
    pub kc: usize,
    pub nkeys: usize,
    pub starts: DevBuf,
    pub table: DevBuf,
    pub mask: u32,
}

/// The hash table of a HISA, apart from its rows (see [`Gpu::hisa_table`]).
pub struct HisaTable {
    pub kc: usize,
    pub nkeys: usize,
    pub starts: DevBuf,
    pub table: DevBuf,
    pub mask: u32,
}

impl Gpu {
    // ---------- data movement ----------

    pub fn upload(&self, rows: &[u32], arity: usize) -> Result<Rel> {
        check_arity(arity)?;
        if rows.len() / arity * arity != rows.len() {
            return Err(CudaError::Invalid(
                "row data not a multiple of arity".into(),
            ));
        }
        let buf = self.alloc(rows.len() * 4)?;
        self.htod(buf.ptr(), rows)?;
        Ok(Rel {
            buf,
            n: rows.len() / arity,
            arity,
        })
    }

    pub fn download(&self, v: View) -> Result<Vec<u32>> {
        self.dtoh(v.ptr, v.n * v.arity)
    }

    pub fn empty(&self, arity: usize) -> Result<Rel> {
        Ok(Rel {
            buf: self.alloc(0)?,
            n: 0,
            arity,
        })
    }

    /// A compaction's output of `n` rows in a buffer of about its own size. The
    /// compactions (unique, difference, `compact`) size their output for every input
    /// row; a relation kept from one would hold its input's memory for as long as it
    /// lives (round 13: SG's deduplicated intermediate held a tenth of its buffer,
    /// 1.6 GiB of the 2.1 GiB in use). Where the rows fill less than four fifths of
    /// the block (and at least 1 MiB would come back), they move to a block of their
    /// size (a device-to-device copy of the output only) and the large one goes back
    /// to the pool.
    pub(crate) fn fitted(&self, buf: DevBuf, n: usize, arity: usize) -> Result<Rel> {
        let need = n * arity * 4;
        let held = buf.capacity();
        if need.saturating_add(need / 4) >= held || held - need < FIT_MIN_RETURN {
            return Ok(Rel { buf, n, arity });
        }
        let out = self.alloc(need)?;
        self.dtod(out.ptr(), buf.ptr(), need)?;
        // (The pool frees stream-ordered: the copy above runs before any reuse.)
        drop(buf);
        Ok(Rel { buf: out, n, arity })
    }

    pub fn copy(&self, v: View) -> Result<Rel> {
        let buf = self.alloc(v.n * v.arity * 4)?;
        self.dtod(buf.ptr(), v.ptr, v.n * v.arity * 4)?;
        Ok(Rel {
            buf,
            n: v.n,
            arity: v.arity,
        })
    }

    /// Fill `words` u32 at `ptr` with deterministic pseudo-random values & mask
    /// (bench data).
    #[cfg(feature = "bench")]
    pub fn fill_random(&self, ptr: u64, words: usize, seed: u32, mask: u32) -> Result<()> {
        let f = self.function(SCAN, "", "fill_random")?;
        let grid = blocks(words, 256).min(self.sm_count() as usize * 32);
        launch!(self, f, grid, BLOCK, ptr, words as u64, seed, mask);
        Ok(())
    }

    /// Random 0/1 flags (bench data).
    #[cfg(feature = "bench")]
    pub fn fill_flags(&self, ptr: u64, n: usize, seed: u32) -> Result<()> {
        let f = self.function(SCAN, "", "fill_flags")?;
        launch!(self, f, blocks(n, 256), BLOCK, ptr, n as u64, seed);
        Ok(())
    }

    // ---------- scan ----------

    fn scan_into(&self, inp: u64, n: usize, out: u64, total: u64, mode: ScanMode) -> Result<()> {
        let (red, down) = match mode {
            ScanMode::U64 => ("scan_reduce_u64", "scan_down_u64"),
            ScanMode::U32 => ("scan_reduce_u32", "scan_down_u32"),
            ScanMode::Flag => ("scan_reduce_flag", "scan_down_flag"),
        };
        let nb = blocks(n, SCAN_TILE);
        let fdown = self.function(SCAN, "", down)?;
        if nb <= 1 {
            launch!(self, fdown, 1, BLOCK, inp, n as u64, 0u64, out, total);
            return Ok(());
        }
        let parts = self.alloc((nb + 1) * 8)?;
        let fred = self.function(SCAN, "", red)?;
        launch!(self, fred, nb, BLOCK, inp, n as u64, parts.ptr());
        self.scan_into(
            parts.ptr(),
            nb,
            parts.ptr(),
            parts.ptr() + nb as u64 * 8,
            ScanMode::U64,
        )?;
        launch!(
            self,
            fdown,
            nb,
            BLOCK,
            inp,
            n as u64,
            parts.ptr(),
            out,
            total
        );
        Ok(())
    }

    /// Exclusive scan of `n` u32 at `inp` into `out` (may equal `inp`);
    /// returns the total (as u64: outputs wrap if it exceeds u32).
    pub fn exclusive_scan(&self, inp: u64, n: usize, out: u64) -> Result<u64> {
        self.scan_total(inp, n, out, ScanMode::U32)
    }

    /// Exclusive scan of `n` u64 at `inp` into `out` (may equal `inp`); returns the
    /// total.
    pub fn exclusive_scan_u64(&self, inp: u64, n: usize, out: u64) -> Result<u64> {
        self.scan_total(inp, n, out, ScanMode::U64)
    }

    /// Exclusive scan of `flags != 0` (positions for stream compaction); returns the count.
    pub fn flag_scan(&self, flags: u64, n: usize, out: u64) -> Result<u64> {
        self.scan_total(flags, n, out, ScanMode::Flag)
    }

    fn scan_total(&self, inp: u64, n: usize, out: u64, mode: ScanMode) -> Result<u64> {
        if n == 0 {
            return Ok(0);
        }
        let total = self.count_out()?;
        self.scan_into(inp, n, out, total.ptr(), mode)?;
        total.read()
    }

    /// Set `n` u32 at `ptr` to `v`.
    pub fn fill_u32(&self, ptr: u64, n: usize, v: u32) -> Result<()> {
        let f = self.function(SCAN, "", "fill_u32")?;
        launch!(self, f, blocks(n, 256), BLOCK, ptr, n as u64, v);
        Ok(())
    }

    // ---------- compaction ----------

    /// Rows of `v` whose flag (u32 at `flags`) is non-zero, in order.
    pub fn compact(&self, v: View, flags: u64) -> Result<Rel> {
        check_arity(v.arity)?;
        if v.n == 0 {
            return self.empty(v.arity);
        }
        // one pass (decoupled look-back); the output is sized for every row
        let out = self.alloc(v.n * v.arity * 4)?;
        let tiles = blocks(v.n, CT_TILE);
        let lb = self.alloc((tiles + 1) * 8)?;
        self.memset8(lb.ptr(), 0, (tiles + 1) * 8)?;
        let total = self.count_out()?;
        let f = self.function(REL, &arity_defines(v.arity), "compact_rows")?;
        launch!(
            self,
            f,
            tiles,
            BLOCK,
            v.ptr,
            v.n as u64,
            flags,
            out.ptr(),
            lb.ptr(),
            total.ptr()
        );
        self.fitted(out, total.read()? as usize, v.arity)
    }

    // ---------- sort ----------

    /// Per word: bits that differ between tuples (OR ^ AND).
    pub fn varying_bits(&self, v: View) -> Result<Vec<u32>> {
        let a = v.arity;
        let buf = self.alloc(2 * a * 4)?;
        let mut init = vec![0u32; a];
        init.extend(std::iter::repeat_n(u32::MAX, a));
        self.htod(buf.ptr(), &init)?;
        let f = self.function(SORT, &arity_defines(a), "radix_bits")?;
        let grid = blocks(v.n, 256).min(self.sm_count() as usize * 8);
        launch!(self, f, grid, BLOCK, v.ptr, v.n as u64, buf.ptr());
        let r = self.dtoh::<u32>(buf.ptr(), 2 * a)?;
        Ok((0..a).map(|k| r[k] ^ r[a + k]).collect())
    }

    /// Sort a relation lexicographically in place (onesweep LSD radix, 8-bit
    /// digits; digits that never vary are skipped). Returns the number of passes.
    pub fn sort(&self, rel: &mut Rel) -> Result<usize> {
        self.sort_bits(rel, None)
    }

    /// Sort with the per-word mask of bits that may vary known in advance
    /// (e.g. node ids below 2^k), which saves a reduction and a host sync.
    pub fn sort_bits(&self, rel: &mut Rel, vary: Option<&[u32]>) -> Result<usize> {
        check_arity(rel.arity)?;
        let (n, a) = (rel.n, rel.arity);
        if n <= 1 {
            return Ok(0);
        }
        let vary = match vary {
            Some(v) if v.len() == a => v.to_vec(),
            _ => self.varying_bits(rel.view())?,
        };
        self.onesweep(&mut rel.buf, n, a, &vary)
    }

    /// Onesweep LSD radix sort (see sort.cu): one histogram pass for all
    /// digits, then per digit one pass that ranks, looks back and scatters.
    fn onesweep(&self, buf: &mut DevBuf, n: usize, a: usize, vary: &[u32]) -> Result<usize> {
        let other = self.alloc(n * a * 4)?;
        let np = self.onesweep_at(buf.ptr(), other.ptr(), n, a, vary)?;
        if np % 2 == 1 {
            // The rows ended in the second buffer: it becomes the relation's.
            let mut other = other;
            std::mem::swap(buf, &mut other);
        }
        Ok(np)
    }

    /// [`Self::onesweep`] of the `n` rows at `rows`, with `scratch` (room for `n` rows)
    /// as the second buffer: after an odd number of passes (returned) the sorted rows
    /// are at `scratch`, otherwise at `rows`.
    fn onesweep_at(
        &self,
        rows: u64,
        scratch: u64,
        n: usize,
        a: usize,
        vary: &[u32],
    ) -> Result<usize> {
        // digit slot s = (a-1-word)*4 + byte, least significant first
        let mut dmask = 0u32;
        let mut passes = vec![];
        for s in 0..a * 4 {
            let (w, shift) = (a - 1 - s / 4, (s % 4) as u32 * 8);
            if (vary[w] >> shift) & 255 != 0 {
                dmask |= 1 << s;
                passes.push((w as u32, shift));
            }
        }
        if passes.is_empty() {
            return Ok(0);
        }
        let np = passes.len();
        let tile = os_tile(a);
        let portion = (self.sort_portion.get().clamp(1, OS_PORTION) / tile).max(1) * tile;
        let nport = n.div_ceil(portion);
        let defs = arity_defines(a);
        let fh = self.function(SORT, &defs, "onesweep_hist")?;
        let fo = self.function(SORT, &defs, "onesweep_offsets")?;
        let fp = self.function(SORT, &defs, "onesweep_pass")?;
        let (mut from, mut to) = (rows, scratch);
        // hist: [np][256] u64; offs: per pass, nport + 1 rows of 256 digit starts
        // (row 0 from the histogram, row q + 1 written by portion q's last tile)
        let hist = self.alloc(np * 256 * 8)?;
        let stride_p = (nport + 1) * 256;
        let offs = self.alloc(np * stride_p * 8)?;
        let max_tiles = blocks(n.min(portion), tile);
        let lb = self.alloc((256 + max_tiles * 256) * 4)?;
        self.memset8(hist.ptr(), 0, np * 256 * 8)?;
        launch!(
            self,
            fh,
            blocks(n, 256 * 16).min(self.sm_count() as usize * 4),
            256,
            from,
            0u64,
            n as u64,
            dmask,
            hist.ptr()
        );
        launch!(self, fo, np, 256, hist.ptr(), stride_p as u64, offs.ptr());
        for (pi, &(w, shift)) in passes.iter().enumerate() {
            for q in 0..nport {
                let (b, e) = (q * portion, n.min((q + 1) * portion));
                let tiles = blocks(e - b, tile);
                self.memset8(lb.ptr(), 0, (256 + tiles * 256) * 4)?;
                launch!(
                    self,
                    fp.clone(),
                    tiles,
                    256,
                    from,
                    to,
                    b as u64,
                    e as u64,
                    w,
                    shift,
                    offs.ptr() + ((pi * stride_p + q * 256) * 8) as u64,
                    lb.ptr()
                );
            }
            std::mem::swap(&mut from, &mut to);
        }
        Ok(np)
    }

    /// Remove adjacent duplicates of a sorted relation.
    pub fn unique(&self, v: View) -> Result<Rel> {
        if v.n == 0 {
            return self.empty(v.arity);
        }
        if v.arity == 2 {
            // one pass: no keep-flags written and read back
            return self.diff2_tiles(v, v.slice(0, 0), true);
        }
        let flags = self.alloc_u32(v.n)?;
        let f = self.function(REL, &arity_defines(v.arity), "unique_flags")?;
        launch!(
            self,
            f,
            blocks(v.n, 256),
            BLOCK,
            v.ptr,
            v.n as u64,
            flags.ptr()
        );
        self.compact(v, flags.ptr())
    }

    pub fn sort_unique(&self, mut rel: Rel) -> Result<Rel> {
        self.sort(&mut rel)?;
        self.unique(rel.view())
    }

    // ---------- merge / difference ----------

    /// Merge two sorted relations (duplicates kept; ties take `a` first).
    pub fn merge(&self, a: View, b: View) -> Result<Rel> {
        if a.arity != b.arity {
            return Err(CudaError::Invalid("merge: arity mismatch".into()));
        }
        check_arity(a.arity)?;
        let n = a.n + b.n;
        let out = self.alloc(n * a.arity * 4)?;
        self.merge_into(a, b, out.ptr())?;
        Ok(Rel {
            buf: out,
            n,
            arity: a.arity,
        })
    }

    /// Writes the merge of `a` and `b` (same arity, checked by the caller) at `out`.
    fn merge_into(&self, a: View, b: View, out: u64) -> Result<()> {
        if a.n == 0 || b.n == 0 {
            let s = if a.n == 0 { b } else { a };
            return self.dtod(out, s.ptr, s.n * s.arity * 4);
        }
        if a.arity == 2 {
            // persistent: one resident grid walks the tiles, pipelined
            let f = self.function(REL, &arity_defines(2), "merge2_pipe_8")?;
            let (bounds, tiles) = self.merge_bounds(a, b, 256 * 8)?;
            let grid = self.resident_grid(&f, tiles)?;
            launch!(
                self,
                f,
                grid,
                256,
                a.ptr,
                a.n as u64,
                b.ptr,
                b.n as u64,
                bounds.ptr(),
                tiles as u64,
                out
            );
            return Ok(());
        }
        let f = self.function(REL, &arity_defines(a.arity), "merge_rows")?;
        let (bounds, tiles) = self.merge_bounds(a, b, merge_tile(a.arity))?;
        launch!(
            self,
            f,
            tiles,
            256,
            a.ptr,
            a.n as u64,
            b.ptr,
            b.n as u64,
            bounds.ptr(),
            out
        );
        Ok(())
    }

    /// The merge of `a` and `b` written chunk by chunk into a buffer mapped piece by
    /// piece (`crate::vmm`), calling `read(i, j)` after each chunk, once the device is
    /// done with it: every later chunk reads only rows `i..` of `a` and `j..` of `b`,
    /// so the caller may give back the memory below them. The merge then needs its
    /// inputs' memory plus about a chunk, not twice. An ordinary merge (and `read`
    /// never called) where the output is small or the device cannot map memory piece
    /// by piece.
    pub fn merge_releasing(
        &self,
        a: View,
        b: View,
        mut read: impl FnMut(usize, usize),
    ) -> Result<Rel> {
        if a.arity != b.arity {
            return Err(CudaError::Invalid("merge: arity mismatch".into()));
        }
        check_arity(a.arity)?;
        let n = a.n + b.n;
        let row = a.arity * 4;
        let bytes = n * row;
        if bytes < MERGE_RELEASING_MIN || a.n == 0 || b.n == 0 {
            return self.merge(a, b);
        }
        let Some(mut out) = self.reserve_mapped(bytes)? else {
            return self.merge(a, b);
        };
        // Chunks of a sixteenth of the output, at least one piece: few enough
        // launches and waits (at most 16, a few microseconds each), small enough that
        // the slack is a few percent. (At least 8 pieces, as before round 15, made a
        // merge of a relation under 8 GiB map most of its output before giving
        // anything back: TC CA-HepTh held its 0.45 GiB input beside a 0.56 GiB output.)
        let chunk = (bytes / 16).max(crate::vmm::PIECE) / row;
        let (bounds, chunks) = self.merge_bounds(a, b, chunk)?;
        let bounds: Vec<u64> = self.dtoh(bounds.ptr(), chunks + 1)?;
        for c in 0..chunks {
            let (k0, k1) = (c * chunk, ((c + 1) * chunk).min(n));
            let (i0, i1) = (bounds[c] as usize, bounds[c + 1] as usize);
            let (j0, j1) = (k0 - i0, k1 - i1);
            if i1 < i0 || j1 < j0 || i1 > a.n || j1 > b.n {
                return Err(CudaError::Invalid(format!(
                    "internal error: merge chunk {c} bounds {i0}..{i1} / {j0}..{j1}"
                )));
            }
            if let Some(m) = out.mapped_mut() {
                m.map(k0 * row, k1 * row)?;
            }
            self.merge_into(
                a.slice(i0, i1),
                b.slice(j0, j1),
                out.ptr() + (k0 * row) as u64,
            )?;
            self.sync()?;
            read(i1, j1);
        }
        Ok(Rel {
            buf: out,
            n,
            arity: a.arity,
        })
    }

    /// Blocks of 256 threads of `f` that are resident at once on the whole
    /// device (at most `tiles`): the grid of a persistent kernel.
    pub(crate) fn resident_grid(
        &self,
        f: &cudarc::driver::CudaFunction,
        tiles: usize,
    ) -> Result<usize> {
        let per_sm = f
            .occupancy_max_active_blocks_per_multiprocessor(256, 0, None)
            .map_err(|e| CudaError::driver("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
        Ok((per_sm.max(1) as usize * self.sm_count() as usize).min(tiles))
    }

    /// Merge-path split of every merge tile boundary (one thread each):
    /// `tiles + 1` u64 offsets into `a`, and `tiles`.
    pub fn merge_bounds(&self, a: View, b: View, tile: usize) -> Result<(DevBuf, usize)> {
        let tiles = blocks(a.n + b.n, tile);
        let bounds = self.alloc((tiles + 1) * 8)?;
        let f = self.function(REL, &arity_defines(a.arity), "merge_partition")?;
        launch!(
            self,
            f,
            blocks(tiles + 1, 256),
            BLOCK,
            a.ptr,
            a.n as u64,
            b.ptr,
            b.n as u64,
            tile as u64,
            tiles as u64,
            bounds.ptr()
        );
        Ok((bounds, tiles))
    }

    /// Clear the flags of tuples of `a` found in `b` (b sorted; a sorted for
    /// the merge method). Flags of other tuples are left as they are.
    pub fn difference_flags(&self, a: View, b: View, flags: u64, by_search: bool) -> Result<()> {
        let defs = arity_defines(a.arity);
        if by_search {
            let f = self.function(REL, &defs, "diff_flags_search")?;
            launch!(
                self,
                f,
                blocks(a.n, 256),
                BLOCK,
                a.ptr,
                a.n as u64,
                b.ptr,
                b.n as u64,
                flags
            );
        } else {
            let f = self.function(REL, &defs, "diff_flags_merge")?;
            let (bounds, grid) = self.merge_bounds(a, b, merge_tile(a.arity))?;
            launch!(
                self,
                f,
                grid,
                256,
                a.ptr,
                a.n as u64,
                b.ptr,
                b.n as u64,
                bounds.ptr(),
                flags
            );
        }
        Ok(())
    }

    /// `a − b` of sorted relations. `by_search`: None picks binary search of
    /// each row of a in b when |a| is much smaller than |b|, else one fused
    /// pass over tiles (arity 2: tiles of a with b's range scanned; other
    /// arities: merge-path tiles of a ∪ b).
    pub fn difference_with(&self, a: View, b: View, by_search: Option<bool>) -> Result<Rel> {
        if a.arity != b.arity {
            return Err(CudaError::Invalid("difference: arity mismatch".into()));
        }
        check_arity(a.arity)?;
        if a.n == 0 || b.n == 0 {
            return self.copy(a);
        }
        let search = by_search.unwrap_or(a.n * 16 < b.n);
        if !search {
            if a.arity == 2 {
                return self.diff2_tiles(a, b, false);
            }
            // one fused pass per merge-path tile of a ∪ b: membership,
            // compaction, look-back
            let out = self.alloc(a.n * a.arity * 4)?;
            let total = self.count_out()?;
            let f = self.function(REL, &arity_defines(a.arity), "diff_merge_compact")?;
            let (bounds, tiles) = self.merge_bounds(a, b, merge_tile(a.arity))?;
            let lb = self.alloc((tiles + 1) * 8)?;
            self.memset8(lb.ptr(), 0, (tiles + 1) * 8)?;
            launch!(
                self,
                f,
                tiles,
                256,
                a.ptr,
                a.n as u64,
                b.ptr,
                b.n as u64,
                bounds.ptr(),
                out.ptr(),
                lb.ptr(),
                total.ptr()
            );
            return self.fitted(out, total.read()? as usize, a.arity);
        }
        let flags = self.alloc_u32(a.n)?;
        self.fill_u32(flags.ptr(), a.n, 1)?;
        self.difference_flags(a, b, flags.ptr(), search)?;
        self.compact(a, flags.ptr())
    }

    /// Arity 2, one pass over tiles of a (`diff2_tilea[_u]_N`): `a − b`, or
    /// `unique(a) − b` with `uniq` (b may be empty: unique alone). Fast where
    /// b is not much denser than a (a range larger than a tile's stage is
    /// searched in global memory, correct but slow).
    fn diff2_tiles(&self, a: View, b: View, uniq: bool) -> Result<Rel> {
        let out = self.alloc(a.n * 8)?;
        let n = self.diff2_tiles_into(a, b, uniq, out.ptr())?;
        self.fitted(out, n, 2)
    }

    /// [`Self::diff2_tiles`] writing to `out` (room for `a.n` rows), which may be
    /// `a`'s own rows: each tile reads its rows (and the row before them) before it
    /// publishes its count in the look-back, and writes only after every earlier
    /// tile has, below its own start. So a later tile writes only over rows their
    /// tile has read, and the row before a tile is overwritten only where nothing
    /// before it was dropped, with itself. Returns the rows written.
    fn diff2_tiles_into(&self, a: View, b: View, uniq: bool, out: u64) -> Result<usize> {
        if a.arity != 2 || b.arity != 2 {
            return Err(CudaError::Invalid(format!(
                "internal error: two-column difference of arities {} and {}",
                a.arity, b.arity
            )));
        }
        if a.n == 0 {
            return Ok(0);
        }
        let total = self.count_out()?;
        // rows of a per thread: the largest whose tile's b range usually
        // fits the staged rows
        let ratio = b.n as f64 / a.n as f64;
        let it = [7usize, 4, 2, 1]
            .into_iter()
            .find(|&i| (i * 256) as f64 * ratio <= 0.8 * TILEA_CAP)
            .unwrap_or(1);
        let name = format!("diff2_tilea_{}{it}", if uniq { "u_" } else { "" });
        let f = self.function(REL, &arity_defines(2), &name)?;
        let tiles = blocks(a.n, 256 * it);
        let bl = self.alloc((tiles + 1) * 8)?;
        // look-back words (lb[0] unused here, lb[1 + t] per tile), zeroed
        // by the partition kernel
        let nlb = tiles + 1;
        let lb = self.alloc(nlb * 8)?;
        let fp = self.function(REL, &arity_defines(2), "diff2_bpart")?;
        let pf = DIFF2_PF_PER_SM * self.sm_count() as u64;
        launch!(
            self,
            fp,
            blocks(tiles + 1, 256),
            BLOCK,
            a.ptr,
            b.ptr,
            b.n as u64,
            (256 * it) as u64,
            tiles as u64,
            bl.ptr(),
            lb.ptr(),
            nlb as u64,
            BPART_ISTEPS
        );
        launch!(
            self,
            f,
            tiles,
            256,
            a.ptr,
            a.n as u64,
            b.ptr,
            b.n as u64,
            bl.ptr(),
            out,
            lb.ptr(),
            total.ptr(),
            pf
        );
        Ok(total.read()? as usize)
    }

    /// `unique(a) − b₁ − b₂ − …` for sorted `a` and sorted `bs`: one
    /// compaction, after unique's keep-flags are cleared by each difference.
    /// Arity 2 from 2^20 rows: unique and the largest difference in one pass
    /// over tiles of a first, then the keep-flags path on what is left.
    pub fn unique_minus(&self, a: View, bs: &[View]) -> Result<Rel> {
        check_arity(a.arity)?;
        if bs.iter().any(|b| b.arity != a.arity) {
            return Err(CudaError::Invalid("difference: arity mismatch".into()));
        }
        if a.n == 0 {
            return self.empty(a.arity);
        }
        let mut rest: Vec<View> = bs.iter().copied().filter(|b| b.n > 0).collect();
        // the rows the differences apply to, one keep-flag each
        let (fused, flags) = if a.arity == 2 && a.n >= FUSED_UNIQUE_MIN_ROWS {
            // unique fused with the largest difference the tile pass suits
            // (b not much denser than a); the others apply to what is left,
            // which is usually much smaller
            let first = (0..rest.len())
                .filter(|&i| a.n * 16 >= rest[i].n)
                .max_by_key(|&i| rest[i].n);
            let b = first.map_or(a.slice(0, 0), |i| rest.remove(i));
            let r = self.diff2_tiles(a, b, true)?;
            if rest.is_empty() || r.n == 0 {
                return Ok(r);
            }
            let flags = self.alloc_u32(r.n)?;
            self.fill_u32(flags.ptr(), r.n, 1)?;
            (Some(r), flags)
        } else {
            let flags = self.alloc_u32(a.n)?;
            let f = self.function(REL, &arity_defines(a.arity), "unique_flags")?;
            launch!(
                self,
                f,
                blocks(a.n, 256),
                BLOCK,
                a.ptr,
                a.n as u64,
                flags.ptr()
            );
            (None, flags)
        };
        let base = fused.as_ref().map_or(a, |r| r.view());
        for b in rest {
            self.difference_flags(base, b, flags.ptr(), base.n * 16 < b.n)?;
        }
        self.compact(base, flags.ptr())
    }

    /// [`Self::unique_minus`] of a sorted relation the caller gives up: rows of arity
    /// 2 from `FUSED_UNIQUE_MIN_ROWS` are compacted over the relation's own rows
    /// ([`Self::diff2_tiles_into`]), so the operation needs no output beside its
    /// input; the result is [`Self::trimmed`]. Other relations take the copying path.
    pub fn unique_minus_in_place(&self, rel: Rel, bs: &[View]) -> Result<Rel> {
        if rel.arity != 2 || rel.n < FUSED_UNIQUE_MIN_ROWS || bs.iter().any(|b| b.arity != 2) {
            return self.unique_minus(rel.view(), bs);
        }
        let a = rel.view();
        let mut rest: Vec<View> = bs.iter().copied().filter(|b| b.n > 0).collect();
        // As `unique_minus`: the largest difference the tile pass suits goes with
        // unique, the others apply to what is left.
        let first = (0..rest.len())
            .filter(|&i| a.n * 16 >= rest[i].n)
            .max_by_key(|&i| rest[i].n);
        let b = first.map_or(a.slice(0, 0), |i| rest.remove(i));
        let n = self.diff2_tiles_into(a, b, true, a.ptr)?;
        let r = self.trimmed(rel.buf, n, 2)?;
        if rest.is_empty() || r.n == 0 {
            return Ok(r);
        }
        let flags = self.alloc_u32(r.n)?;
        self.fill_u32(flags.ptr(), r.n, 1)?;
        for b in rest {
            self.difference_flags(r.view(), b, flags.ptr(), r.n * 16 < b.n)?;
        }
        self.compact(r.view(), flags.ptr())
    }

    /// `unique(sort(rel)) − b₁ − b₂ − …` of an unsorted relation of two columns the
    /// caller gives up, sorted in halves so that the sort's second buffer is half the
    /// rows: each half is sorted with one scratch buffer and compacted in place
    /// against `bs` ([`Self::diff2_tiles_into`], a pass per run), then the two halves
    /// are merged and the merge deduplicated in place. It needs about half the rows
    /// beside them while sorting, and the halves' survivors while merging, where a
    /// whole sort needs all the rows. `Ok(Err(rel))`, the relation given back
    /// untouched, where it does not apply: other arities, or a run of `bs` more than
    /// 16 times denser than a half (the tile pass's bound).
    pub fn sort_unique_minus_halves(
        &self,
        rel: Rel,
        bs: &[View],
    ) -> Result<std::result::Result<Rel, Rel>> {
        let (n, h) = (rel.n, rel.n / 2);
        let bs: Vec<View> = bs.iter().copied().filter(|b| b.n > 0).collect();
        if rel.arity != 2 || h == 0 || bs.iter().any(|b| b.arity != 2 || b.n > 16 * h) {
            return Ok(Err(rel));
        }
        let vary = self.varying_bits(rel.view())?;
        let halves = [rel.view().slice(0, h), rel.view().slice(h, n)];
        // The largest run goes with unique in one pass, the others in a pass each
        // while the survivors stay dense enough for the tile pass; the rest apply to
        // the merge (`unique_minus_in_place`).
        let mut rest = bs;
        let first = (0..rest.len())
            .max_by_key(|&i| rest[i].n)
            .map(|i| rest.remove(i));
        let mut later = Vec::new();
        let mut kept = [0usize; 2];
        {
            let scratch = self.alloc((n - h) * 8)?;
            for (half, k) in halves.iter().zip(&mut kept) {
                if self.onesweep_at(half.ptr, scratch.ptr(), half.n, 2, &vary)? % 2 == 1 {
                    self.dtod(half.ptr, scratch.ptr(), half.n * 8)?;
                }
                let b = first.unwrap_or(half.slice(0, 0));
                *k = self.diff2_tiles_into(*half, b, true, half.ptr)?;
                for b in &rest {
                    if *k > 0 && b.n <= 16 * *k {
                        *k = self.diff2_tiles_into(half.slice(0, *k), *b, false, half.ptr)?;
                    } else if !later.iter().any(|l: &View| l.ptr == b.ptr) {
                        later.push(*b);
                    }
                }
            }
        }
        let merged = self.merge(halves[0].slice(0, kept[0]), halves[1].slice(0, kept[1]))?;
        drop(rel);
        Ok(Ok(self.unique_minus_in_place(merged, &later)?))
    }

    /// `unique(sort(rows)) − b₁ − b₂ − …` of the `n` unsorted rows of two columns at
    /// `rows`, in place: the rows kept end sorted at `rows`; returns how many. It
    /// needs a scratch buffer of `n` rows while sorting. Each run of `bs` is
    /// subtracted in a pass over tiles of the rows ([`Self::diff2_tiles_into`]),
    /// which reads only the part of the run the rows span; a run more than 16 times
    /// denser than the rows left (the tile pass's bound) by a binary search per row.
    pub fn sort_unique_minus_at(&self, rows: u64, n: usize, bs: &[View]) -> Result<usize> {
        if bs.iter().any(|b| b.arity != 2) {
            return Err(CudaError::Invalid(
                "internal error: two-column difference of another arity".into(),
            ));
        }
        let v = View {
            ptr: rows,
            n,
            arity: 2,
        };
        if n > 1 {
            let vary = self.varying_bits(v)?;
            let scratch = self.alloc(n * 8)?;
            if self.onesweep_at(rows, scratch.ptr(), n, 2, &vary)? % 2 == 1 {
                self.dtod(rows, scratch.ptr(), n * 8)?;
            }
        }
        let mut bs: Vec<View> = bs.iter().copied().filter(|b| b.n > 0).collect();
        bs.sort_by_key(|b| std::cmp::Reverse(b.n));
        // Unique, with the largest run where the tile pass suits it.
        let first = bs.first().copied().filter(|b| b.n <= 16 * n);
        let mut k = self.diff2_tiles_into(v, first.unwrap_or(v.slice(0, 0)), true, rows)?;
        let mut dense = Vec::new();
        for b in bs.iter().skip(usize::from(first.is_some())) {
            if k == 0 {
                break;
            }
            if b.n <= 16 * k {
                k = self.diff2_tiles_into(v.slice(0, k), *b, false, rows)?;
            } else {
                dense.push(*b);
            }
        }
        if k > 0 && !dense.is_empty() {
            let flags = self.alloc_u32(k)?;
            self.fill_u32(flags.ptr(), k, 1)?;
            for b in dense {
                self.difference_flags(v.slice(0, k), b, flags.ptr(), true)?;
            }
            let kept = self.compact(v.slice(0, k), flags.ptr())?;
            self.dtod(rows, kept.buf.ptr(), kept.n * 8)?;
            k = kept.n;
        }
        Ok(k)
    }

    /// [`Self::unique`] of a sorted relation the caller gives up, in place where
    /// [`Self::unique_minus_in_place`] is.
    pub fn unique_in_place(&self, rel: Rel) -> Result<Rel> {
        self.unique_minus_in_place(rel, &[])
    }

    /// `n` rows at the start of `buf`: a buffer mapped piece by piece keeps the pieces
    /// they touch where that is at least `TRIM_KEEP_MIN` bytes (under half more than
    /// the rows); otherwise [`Self::fitted`].
    pub(crate) fn trimmed(&self, mut buf: DevBuf, n: usize, arity: usize) -> Result<Rel> {
        let need = n * arity * 4;
        if need >= TRIM_KEEP_MIN && buf.mapped_mut().is_some() {
            // (Every kernel that wrote the rows is done: their count was read.)
            buf.release_from(need);
            return Ok(Rel { buf, n, arity });
        }
        self.fitted(buf, n, arity)
    }

    pub fn difference(&self, a: View, b: View) -> Result<Rel> {
        self.difference_with(a, b, None)
    }

    // ---------- HISA ----------

    /// Build a HISA over a sorted relation, keyed by its first `kc` columns.
    pub fn build_hisa(&self, rel: Rel, kc: usize) -> Result<Hisa> {
        let t = self.hisa_table(rel.view(), kc)?;
        Ok(Hisa {
            rel,
            kc,
            nkeys: t.nkeys,
            starts: t.starts,
            table: t.table,
            mask: t.mask,
        })
    }

    /// The hash table of a HISA over sorted rows of any arity, keyed by their first
    /// `kc` columns (the rows stay where they are).
    pub fn hisa_table(&self, rows: View, kc: usize) -> Result<HisaTable> {
        if kc == 0 || kc > rows.arity {
            return Err(CudaError::Invalid(format!(
                "key width {kc} for arity {}",
                rows.arity
            )));
        }
        if rows.n >= u32::MAX as usize {
            return Err(CudaError::Invalid(
                "HISA relation too large for u32 offsets".into(),
            ));
        }
        let n = rows.n;
        let defs = arity_defines(rows.arity);
        let flags = self.alloc_u32(n.max(1))?;
        let offs = self.alloc_u32(n.max(1))?;
        let nkeys = if n == 0 {
            0
        } else {
            let f = self.function(HISA, &defs, "hisa_key_flags")?;
            launch!(
                self,
                f,
                blocks(n, 256),
                BLOCK,
                rows.ptr,
                n as u64,
                kc as u32,
                flags.ptr()
            );
            self.flag_scan(flags.ptr(), n, offs.ptr())? as usize
        };
        let starts = self.alloc_u32(nkeys + 1)?;
        if nkeys > 0 {
            let f = self.function(SCAN, "", "compact_index")?;
            launch!(
                self,
                f,
                blocks(n, 256),
                BLOCK,
                flags.ptr(),
                offs.ptr(),
                n as u64,
                starts.ptr()
            );
        }
        self.htod(starts.ptr() + nkeys as u64 * 4, &[n as u32])?;
        let size = (2 * nkeys).next_power_of_two().max(2);
        let table = self.alloc_u32(size)?;
        self.memset8(table.ptr(), 0xff, size * 4)?;
        if nkeys > 0 {
            let f = self.function(HISA, &defs, "hisa_insert")?;
            launch!(
                self,
                f,
                blocks(nkeys, 256),
                BLOCK,
                rows.ptr,
                starts.ptr(),
                nkeys as u32,
                kc as u32,
                table.ptr(),
                (size - 1) as u32
            );
        }
        Ok(HisaTable {
            kc,
            nkeys,
            starts,
            table,
            mask: (size - 1) as u32,
        })
    }

    /// Range [begin, end) of each query key (kc words each); (0, 0) if absent.
    pub fn hisa_lookup(&self, h: &Hisa, keys: &[u32]) -> Result<Vec<(u32, u32)>> {
        let nq = keys.len() / h.kc;
        if nq == 0 {
            return Ok(vec![]);
        }
        let kb = self.alloc_u32(keys.len())?;
        self.htod(kb.ptr(), keys)?;
        let bb = self.alloc_u32(nq)?;
        let eb = self.alloc_u32(nq)?;
        let f = self.function(HISA, &arity_defines(h.rel.arity), "hisa_lookup")?;
        launch!(
            self,
            f,
            blocks(nq, 256),
            BLOCK,
            h.rel.buf.ptr(),
            h.starts.ptr(),
            h.table.ptr(),
            h.mask,
            h.kc as u32,
            kb.ptr(),
            nq as u64,
            bb.ptr(),
            eb.ptr()
        );
        let b = self.dtoh::<u32>(bb.ptr(), nq)?;
        let e = self.dtoh::<u32>(eb.ptr(), nq)?;
        Ok(b.into_iter().zip(e).collect())
    }

    // ---------- join ----------

    fn check_spec(outer: View, inner: &Hisa, s: &JoinSpec) -> Result<()> {
        let ai = inner.rel.arity as u32;
        let ao = outer.arity as u32;
        let ok_ref = |r: u32| if r & 256 != 0 { (r & 255) < ai } else { r < ao };
        let ok = s.kc as usize == inner.kc
            && (1..=8).contains(&s.nout)
            && s.nfilt <= 4
            && s.okey[..s.kc as usize].iter().all(|&c| c < ao)
            && s.proj[..s.nout as usize].iter().all(|&r| ok_ref(r))
            && s.filt[..s.nfilt as usize]
                .iter()
                .all(|f| f[1] <= 5 && ok_ref(f[0]) && (f[2] == 0xFFFF || ok_ref(f[2])));
        if ok {
            Ok(())
        } else {
            Err(CudaError::Invalid(format!(
                "join spec does not fit arities {ao}/{ai}: {s:?}"
            )))
        }
    }

    /// Two-pass join of `outer` against a HISA: count, scan, write. Output
    /// tuples are ordered by outer tuple, then by inner position. If the
    /// output would exceed u32 offsets, the outer relation is split.
    pub fn join(&self, outer: View, inner: &Hisa, spec: &JoinSpec) -> Result<Rel> {
        self.join_impl(outer, inner, spec, false)
    }

    /// Like [`Gpu::join`], but where the spec has no filters and two output
    /// columns, the write pass drops repeats it sees close together: each block
    /// of 4,096 consecutive outputs keeps a shared-memory hash set of what it
    /// wrote. The distinct output tuples are exactly those of `join`; some
    /// repeats remain (across blocks), and the order is arbitrary (blocks append
    /// through an atomic counter), so the result is meant to be sorted and
    /// deduplicated next. Other specs fall back to `join`.
    pub fn join_dedup(&self, outer: View, inner: &Hisa, spec: &JoinSpec) -> Result<Rel> {
        self.join_impl(outer, inner, spec, true)
    }

    fn join_impl(&self, outer: View, inner: &Hisa, spec: &JoinSpec, dedup: bool) -> Result<Rel> {
        check_arity(outer.arity)?;
        Self::check_spec(outer, inner, spec)?;
        let nout = spec.nout as usize;
        if outer.n == 0 || inner.rel.n == 0 {
            return self.empty(nout);
        }
        let defs = join_defines(outer.arity, inner.rel.arity);
        let counts = self.alloc_u32(outer.n)?;
        // without filters the write is load-balanced over the outputs
        let balanced = spec.nfilt == 0;
        let begins = self.alloc_u32(if balanced { outer.n } else { 0 })?;
        let begins_ptr = if balanced { begins.ptr() } else { 0 };
        let fc = self.function(JOIN, &defs, "join_count")?;
        let grid = blocks(outer.n, 256);
        let (ip, sp, tp) = (inner.rel.buf.ptr(), inner.starts.ptr(), inner.table.ptr());
        launch!(
            self,
            fc,
            grid,
            BLOCK,
            outer.ptr,
            outer.n as u64,
            ip,
            sp,
            tp,
            inner.mask,
            *spec,
            counts.ptr(),
            begins_ptr
        );
        let total = self.exclusive_scan(counts.ptr(), outer.n, counts.ptr())?;
        if total > u32::MAX as u64 {
            if outer.n == 1 {
                return Err(CudaError::Invalid(
                    "one outer tuple joins with over 2^32 tuples".into(),
                ));
            }
            drop(counts);
            let mid = outer.n / 2;
            let l = self.join_impl(outer.slice(0, mid), inner, spec, dedup)?;
            let r = self.join_impl(outer.slice(mid, outer.n), inner, spec, dedup)?;
            let out = self.alloc((l.n + r.n) * nout * 4)?;
            self.dtod(out.ptr(), l.buf.ptr(), l.bytes())?;
            self.dtod(out.ptr() + l.bytes() as u64, r.buf.ptr(), r.bytes())?;
            return Ok(Rel {
                buf: out,
                n: l.n + r.n,
                arity: nout,
            });
        }
        let total = total as usize;
        let out = self.alloc(total * nout * 4)?;
        if total > 0 && balanced && dedup && nout == 2 {
            let count = self.alloc_u32(1)?;
            self.memset8(count.ptr(), 0, 4)?;
            let fw = self.function(JOIN, &defs, "join_write_dedup")?;
            launch!(
                self,
                fw,
                blocks(total, 512 * 8),
                512u32,
                outer.ptr,
                outer.n as u64,
                ip,
                begins.ptr(),
                counts.ptr(),
                total as u64,
                *spec,
                out.ptr(),
                count.ptr()
            );
            let kept = self.dtoh::<u32>(count.ptr(), 1)?[0] as usize;
            return self.fitted(out, kept, nout);
        }
        if total > 0 && balanced {
            let fw = self.function(JOIN, &defs, "join_write_lb")?;
            launch!(
                self,
                fw,
                blocks(total, 256 * 8),
                BLOCK,
                outer.ptr,
                outer.n as u64,
                ip,
                begins.ptr(),
                counts.ptr(),
                total as u64,
                *spec,
                out.ptr()
            );
        } else if total > 0 {
            let fw = self.function(JOIN, &defs, "join_write")?;
            launch!(
                self,
                fw,
                grid,
                BLOCK,
                outer.ptr,
                outer.n as u64,
                ip,
                sp,
                tp,
                inner.mask,
                *spec,
                counts.ptr(),
                out.ptr()
            );
        }
        Ok(Rel {
            buf: out,
            n: total,
            arity: nout,
        })
    }
}
