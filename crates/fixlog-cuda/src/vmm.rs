//! Device buffers mapped piece by piece, so that a merge can give back the memory of
//! its inputs while it writes its output.
//!
//! Why: a relation is a few sorted runs, and adding a delta sometimes merges the
//! largest runs into one. A merge holds its inputs and its output at once, so the last
//! merges of a relation of R bytes held about 2R (TC of fe_ocean: 22.8 GiB in use for
//! a 12.4 GiB relation). With the driver's virtual memory management
//! (`cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`), a buffer is a contiguous range
//! of addresses backed by physical pieces of [`PIECE`] bytes, each mapped on its own.
//! A merge then runs chunk by chunk (`Gpu::merge_releasing`): it maps the pieces of
//! the output it is about to write and, once a chunk is done, unmaps the pieces of its
//! inputs that every later chunk is past. It needs its inputs' memory plus about a
//! chunk, not twice. Kernels see an ordinary buffer: nothing else changes.
//!
//! A join's output that is large beside the memory in use is mapped the same way
//! (`backend::pipe`): one range for every candidate row, mapped as the rows are
//! written and trimmed to the pieces they touch.
//!
//! Pieces no buffer uses are kept as spares, up to [`Pieces::spare_bound`] bytes:
//! creating and releasing pieces (`cuMemCreate`, `cuMemRelease`) for every operator
//! cost 7-14% of TC's and SG's time (round 20). Mapping costs too: granting access to
//! a mapped piece (`cuMemSetAccess`) takes about 30 µs whatever its size
//! (`examples/vmm_cost.rs`). So a dropped buffer is *parked*: its range of addresses
//! and its pieces stay mapped, and the next buffer of at most as many pieces takes the
//! range over ([`MappedBuf::reserve`]) and uses the pieces without a driver call.
//! Spares are unmapped from a parked range only when a piece is wanted elsewhere.
//!
//! Accounting: a piece a buffer uses ("active": its writes have reached it through
//! [`MappedBuf::map`]) counts against the pool's limit as in use
//! (`PoolCore::reserve_external`). A spare (unmapped, in a parked range, or mapped in
//! a range taken over but not reached yet) counts as held, not in use, and spares are
//! released before a pool allocation would take the device memory held past the
//! limit ([`Pieces::release_spares_for`]), so `--gpu-memory-limit` holds as before,
//! with one exception: the spares mapped in a range a live buffer took over stay
//! until it reaches, trims or drops them (at most the spare bound, a sixteenth of the
//! limit, and none under limits below 1 GiB, where the bound is under a piece).
//! Devices without virtual memory management use ordinary merges.

use crate::error::{CudaError, Result};
use crate::pool::PoolCore;
use cudarc::driver::{sys, CudaContext};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

/// Bytes per physical piece (a multiple of every device's mapping granularity seen:
/// 2 MiB on H100 and H200). Large enough that mapping a 12 GiB run takes 200 calls,
/// small enough that the slack of a merge (a chunk plus a piece per input) stays a
/// few percent of a large relation.
pub const PIECE: usize = 64 << 20;

fn check(context: &str, r: sys::CUresult) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(CudaError::Driver {
            context: context.into(),
            message: format!("{r:?}"),
        })
    }
}

/// The device's physical pieces: created, kept as spares, released; and the
/// accounting of the bytes they hold.
pub(crate) struct Pieces {
    ctx: Arc<CudaContext>,
    ordinal: i32,
    /// Spare pieces mapped nowhere.
    spare: RefCell<Vec<sys::CUmemGenericAllocationHandle>>,
    /// Ranges of dropped buffers, with the pieces still mapped in them (spares too).
    parked: RefCell<Vec<Range>>,
    /// Spare pieces mapped in the ranges of live buffers that took a parked range
    /// over, which their writes have not reached (yet).
    idle: Cell<usize>,
    /// The pool whose limit the pieces count against.
    pool: Rc<RefCell<PoolCore<crate::gpu::DriverAlloc>>>,
    /// Bytes of pieces held now (mapped or spare) and at most since the last reset.
    held: Cell<(usize, usize)>,
    /// The most device memory held with the driver's stream-ordered pool, sampled
    /// each time a piece is created (when the sum can grow past the pool's own peak).
    held_with_pool: Cell<usize>,
}

impl Pieces {
    /// The device's piece allocator, or `None` where the device has no virtual memory
    /// management or its granularity does not divide [`PIECE`].
    pub(crate) fn new(
        ctx: &Arc<CudaContext>,
        pool: Rc<RefCell<PoolCore<crate::gpu::DriverAlloc>>>,
    ) -> Option<Pieces> {
        let supported = ctx
            .attribute(
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
            )
            .ok()?;
        if supported == 0 {
            return None;
        }
        let ordinal = ctx.ordinal() as i32;
        let prop = props(ordinal);
        let mut granularity = 0usize;
        // SAFETY: plain query with a valid property struct.
        let r = unsafe {
            sys::cuMemGetAllocationGranularity(
                &mut granularity,
                &prop,
                sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS
            || granularity == 0
            || PIECE / granularity * granularity != PIECE
        {
            return None;
        }
        Some(Pieces {
            ctx: ctx.clone(),
            ordinal,
            spare: RefCell::new(Vec::new()),
            parked: RefCell::new(Vec::new()),
            idle: Cell::new(0),
            pool,
            held: Cell::new((0, 0)),
            held_with_pool: Cell::new(0),
        })
    }

    /// A physical piece: a spare, else a new one (counted in use against the pool's
    /// limit; where the device is full, the driver's stream-ordered pool gives back
    /// what it keeps unused first).
    fn take(&self) -> Result<sys::CUmemGenericAllocationHandle> {
        self.pool.borrow_mut().reserve_external(PIECE)?;
        if self.spare.borrow().is_empty() {
            self.unpark_one();
        }
        if let Some(h) = self.spare.borrow_mut().pop() {
            return Ok(h);
        }
        {
            // The driver's stream-ordered pool keeps what is freed; with the pieces
            // beside it, the device memory held must stay within the limit too.
            let mut pool = self.pool.borrow_mut();
            let limit = pool.stats().limit;
            let beside = self.held.get().0 + PIECE;
            if pool.raw_mut().driver_pool_held() + beside > limit {
                pool.raw_mut()
                    .trim_driver_pool(limit.saturating_sub(beside));
            }
        }
        let prop = props(self.ordinal);
        let mut h: sys::CUmemGenericAllocationHandle = 0;
        // SAFETY: a plain physical allocation with a valid property struct.
        let mut r = unsafe { sys::cuMemCreate(&mut h, PIECE, &prop, 0) };
        if r != sys::CUresult::CUDA_SUCCESS {
            self.pool.borrow_mut().raw_mut().trim_driver_pool(0);
            // SAFETY: as above.
            r = unsafe { sys::cuMemCreate(&mut h, PIECE, &prop, 0) };
        }
        if r != sys::CUresult::CUDA_SUCCESS {
            let mut pool = self.pool.borrow_mut();
            pool.release_external(PIECE);
            pool.note_refusal();
            let s = pool.stats();
            return Err(CudaError::OutOfMemory {
                requested: PIECE,
                in_use: s.in_use,
                limit: s.limit,
                device: true,
            });
        }
        let (now, peak) = self.held.get();
        self.held.set((now + PIECE, peak.max(now + PIECE)));
        let with_pool = self.pool.borrow_mut().raw_mut().driver_pool_held() + now + PIECE;
        self.held_with_pool
            .set(self.held_with_pool.get().max(with_pool));
        Ok(h)
    }

    /// Keeps an unmapped piece for the next mapping (no longer in use), or releases
    /// it where the spares are at their bound.
    fn put(&self, h: sys::CUmemGenericAllocationHandle) {
        self.pool.borrow_mut().release_external(PIECE);
        self.keep_spare(h);
    }

    /// Keeps an unmapped spare piece, or releases it where the spares are at their
    /// bound.
    fn keep_spare(&self, h: sys::CUmemGenericAllocationHandle) {
        self.spare.borrow_mut().push(h);
        self.release_spares_beyond(self.spare_bound());
    }

    /// `n` spares mapped in a live buffer's range are now in use or unmapped.
    fn idle_less(&self, n: usize) {
        self.idle.set(self.idle.get().saturating_sub(n));
    }

    /// Most bytes of spares kept: a sixteenth of the pool's limit (4.4 GiB of an
    /// H100's default), enough for the output of most operators, so that pieces are
    /// created once per run rather than once per operator; nothing under small limits.
    pub(crate) fn spare_bound(&self) -> usize {
        self.pool.borrow().stats().limit / 16
    }

    /// Bytes of spare pieces held now: unmapped, mapped in parked ranges, and mapped
    /// in taken-over ranges but not reached.
    pub(crate) fn spare_bytes(&self) -> usize {
        (self.spare.borrow().len() + self.parked_pieces() + self.idle.get()) * PIECE
    }

    fn parked_pieces(&self) -> usize {
        self.parked.borrow().iter().map(Range::mapped).sum()
    }

    /// Unmaps one piece of a parked range (the last mapped piece of the range parked
    /// last) into the unmapped spares, and frees the addresses of every parked range
    /// left with no piece; whether there was a piece to unmap.
    fn unpark_one(&self) -> bool {
        let mut parked = self.parked.borrow_mut();
        let mut unmapped = false;
        while let Some(range) = parked.last_mut() {
            if !unmapped {
                if let Some(i) = range.slots.iter().rposition(Option::is_some) {
                    // (No kernel uses a parked range: its buffer waited for the
                    // stream when it was dropped.)
                    if let Some(h) = range.unmap_at(i) {
                        self.spare.borrow_mut().push(h);
                        unmapped = true;
                    }
                }
            }
            if range.mapped() > 0 {
                break;
            }
            if let Some(empty) = parked.pop() {
                empty.free();
            }
        }
        unmapped
    }

    /// Keeps a dropped buffer's range with its mapped pieces (spares now) for the
    /// next buffer, or frees its addresses where nothing is mapped in it.
    fn park(&self, range: Range) {
        if range.mapped() == 0 {
            range.free();
            return;
        }
        self.parked.borrow_mut().push(range);
        self.release_spares_beyond(self.spare_bound());
    }

    /// Takes over the parked range that fits `count` pieces most closely, if any, with
    /// its mapped pieces beyond the first `count` unmapped into the spares.
    fn adopt(&self, count: usize) -> Option<Range> {
        let mut parked = self.parked.borrow_mut();
        let i = (0..parked.len())
            .filter(|&i| parked[i].slots.len() >= count)
            .min_by_key(|&i| parked[i].slots.len())?;
        let mut range = parked.swap_remove(i);
        drop(parked);
        for i in count..range.slots.len() {
            if let Some(h) = range.unmap_at(i) {
                self.spare.borrow_mut().push(h);
            }
        }
        Some(range)
    }

    /// Releases spares until at most `keep` bytes of them are left (or only those
    /// in live buffers' ranges are): unmapped ones first, then the pieces of parked
    /// ranges.
    pub(crate) fn release_spares_beyond(&self, keep: usize) {
        while self.spare_bytes() > keep {
            if self.spare.borrow().is_empty() && !self.unpark_one() {
                return;
            }
            let Some(h) = self.spare.borrow_mut().pop() else {
                return;
            };
            // SAFETY: an unmapped handle from cuMemCreate, released once.
            let _ = unsafe { sys::cuMemRelease(h) };
            let (now, peak) = self.held.get();
            self.held.set((now.saturating_sub(PIECE), peak));
        }
    }

    /// Releases every spare piece that no live buffer's range holds.
    pub(crate) fn release_spares(&self) {
        self.release_spares_beyond(0);
        // Parked ranges are all empty now: free their addresses.
        while self.unpark_one() {}
    }

    /// Before the pool allocates `bytes`: releases the spares where, beside them,
    /// the device memory in use would pass the limit.
    pub(crate) fn release_spares_for(&self, bytes: usize) {
        let spare = self.spare_bytes();
        if spare == 0 {
            return;
        }
        let s = self.pool.borrow().stats();
        if s.in_use.saturating_add(bytes).saturating_add(spare) > s.limit {
            self.release_spares();
        }
    }

    /// The most device memory held by the pieces and the driver's pool together,
    /// sampled when pieces were created, since the last reset.
    pub(crate) fn held_with_pool(&self) -> usize {
        self.held_with_pool.get()
    }

    pub(crate) fn reset_peak(&self) {
        let (now, _) = self.held.get();
        self.held.set((now, now));
        self.held_with_pool.set(0);
    }
}

impl Drop for Pieces {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        self.release_spares();
    }
}

/// A reserved range of addresses, [`PIECE`] by piece, and the piece mapped at each.
struct Range {
    va: u64,
    slots: Vec<Option<sys::CUmemGenericAllocationHandle>>,
}

impl Range {
    /// Addresses for `count` pieces, nothing mapped.
    fn reserve(count: usize) -> Result<Range> {
        let mut va: sys::CUdeviceptr = 0;
        // SAFETY: reserves addresses only; freed by `free`.
        check("cuMemAddressReserve", unsafe {
            sys::cuMemAddressReserve(&mut va, count * PIECE, PIECE, 0, 0)
        })?;
        Ok(Range {
            va,
            slots: vec![None; count],
        })
    }

    fn mapped(&self) -> usize {
        self.slots.iter().flatten().count()
    }

    /// Unmaps the piece at slot `i`, if one is mapped there. The caller must have
    /// waited for every kernel that uses it.
    fn unmap_at(&mut self, i: usize) -> Option<sys::CUmemGenericAllocationHandle> {
        let h = self.slots.get_mut(i)?.take()?;
        // SAFETY: mapped at this address by `MappedBuf::map`; no kernel uses it (the
        // caller's contract).
        let _ = unsafe { sys::cuMemUnmap(self.va + (i * PIECE) as u64, PIECE) };
        Some(h)
    }

    /// Frees the addresses (the caller unmapped every piece: see `Pieces::park`).
    fn free(self) {
        // SAFETY: reserved by `Range::reserve`; nothing is mapped in it.
        let _ = unsafe { sys::cuMemAddressFree(self.va, self.slots.len() * PIECE) };
    }
}

fn props(ordinal: i32) -> sys::CUmemAllocationProp {
    // SAFETY: a plain C struct for which all zeroes is a valid value.
    let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = ordinal;
    prop
}

/// A range of device addresses whose pieces are mapped and unmapped separately.
pub struct MappedBuf {
    range: Range,
    /// Whether each mapped piece is in use: reached by [`Self::map`] (else a spare
    /// of the parked range this buffer took over).
    active: Vec<bool>,
    pieces: Rc<Pieces>,
    stream: sys::CUstream,
}

impl MappedBuf {
    /// Addresses for `bytes` bytes, none of them in use yet: a parked range of at
    /// least as many pieces, whose mapped pieces [`Self::map`] then uses as they are,
    /// or else a new range with nothing mapped.
    pub(crate) fn reserve(
        pieces: &Rc<Pieces>,
        stream: sys::CUstream,
        bytes: usize,
    ) -> Result<Self> {
        let count = bytes.div_ceil(PIECE).max(1);
        let range = match pieces.adopt(count) {
            Some(range) => {
                pieces.idle.set(pieces.idle.get() + range.mapped());
                range
            }
            None => Range::reserve(count)?,
        };
        Ok(MappedBuf {
            active: vec![false; range.slots.len()],
            range,
            pieces: pieces.clone(),
            stream,
        })
    }

    pub fn ptr(&self) -> u64 {
        self.range.va
    }

    /// Bytes of device memory in use now: the pieces [`Self::map`] reached.
    pub fn mapped_bytes(&self) -> usize {
        self.active.iter().filter(|&&a| a).count() * PIECE
    }

    /// Maps every piece that bytes `lo..hi` of the range touch.
    pub(crate) fn map(&mut self, lo: usize, hi: usize) -> Result<()> {
        if hi <= lo {
            return Ok(());
        }
        let last = (hi - 1) / PIECE;
        let end = (last + 1).min(self.range.slots.len());
        let mut i = lo / PIECE;
        while i < end {
            if self.range.slots[i].is_some() {
                if !self.active[i] {
                    // A spare mapped here already: now in use.
                    self.pieces.pool.borrow_mut().reserve_external(PIECE)?;
                    self.pieces.idle_less(1);
                    self.active[i] = true;
                }
                i += 1;
                continue;
            }
            // A stretch of unmapped pieces: each is mapped, then access is granted
            // to the whole stretch with one call.
            let first = i;
            while i < end && self.range.slots[i].is_none() {
                let h = match self.pieces.take() {
                    Ok(h) => h,
                    Err(e) => {
                        // Mapped above, never accessed.
                        self.unmap(first..i);
                        return Err(e);
                    }
                };
                let at = self.range.va + (i * PIECE) as u64;
                // SAFETY: `at` is a piece of this reservation, not mapped; `h` is a
                // piece not mapped anywhere.
                let mapped = check("cuMemMap", unsafe { sys::cuMemMap(at, PIECE, 0, h, 0) });
                if let Err(e) = mapped {
                    self.pieces.put(h);
                    self.unmap(first..i);
                    return Err(e);
                }
                self.range.slots[i] = Some(h);
                self.active[i] = true;
                i += 1;
            }
            let access = sys::CUmemAccessDesc {
                location: props(self.pieces.ordinal).location,
                flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            };
            let at = self.range.va + (first * PIECE) as u64;
            // SAFETY: `first..i` were just mapped, one piece each.
            if let Err(e) = check("cuMemSetAccess", unsafe {
                sys::cuMemSetAccess(at, (i - first) * PIECE, &access, 1)
            }) {
                // Mapped just above, never accessed.
                self.unmap(first..i);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Unmaps the pieces that lie wholly below byte `hi`, keeping them as spares. The
    /// caller must have waited for every kernel that reads them.
    pub(crate) fn unmap_below(&mut self, hi: usize) {
        self.unmap(0..(hi / PIECE).min(self.range.slots.len()));
    }

    /// Unmaps the pieces that lie wholly at or above byte `lo`, keeping them as
    /// spares. The caller must have waited for every kernel that uses them.
    pub(crate) fn unmap_from(&mut self, lo: usize) {
        let slots = self.range.slots.len();
        self.unmap(lo.div_ceil(PIECE).min(slots)..slots);
    }

    fn unmap(&mut self, pieces: std::ops::Range<usize>) {
        for i in pieces {
            if let Some(h) = self.range.unmap_at(i) {
                if std::mem::take(&mut self.active[i]) {
                    self.pieces.put(h);
                } else {
                    self.pieces.idle_less(1);
                    self.pieces.keep_spare(h);
                }
            }
        }
    }
}

impl Drop for MappedBuf {
    fn drop(&mut self) {
        let _ = self.pieces.ctx.bind_to_thread();
        // Kernels queued on the stream may still read the buffer: wait for them.
        // (Unmapping after the next wait instead kept the pieces in use longer and
        // was no faster: round 20.)
        // SAFETY: the stream outlives every buffer (the Gpu owns both).
        let _ = unsafe { sys::cuStreamSynchronize(self.stream) };
        // Parked with its pieces mapped: no longer in use, spares now.
        let active = self.active.iter().filter(|&&a| a).count();
        self.pieces
            .pool
            .borrow_mut()
            .release_external(active * PIECE);
        self.pieces
            .idle_less(self.range.mapped().saturating_sub(active));
        let range = std::mem::replace(
            &mut self.range,
            Range {
                va: 0,
                slots: Vec::new(),
            },
        );
        self.pieces.park(range);
    }
}

impl std::fmt::Debug for MappedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MappedBuf({:#x}, {} of {} B mapped)",
            self.range.va,
            self.mapped_bytes(),
            self.range.slots.len() * PIECE
        )
    }
}
