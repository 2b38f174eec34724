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
//! Pieces unmapped during a merge are kept as spares and mapped again for the output
//! (no physical allocation in the steady state); spares left at the end are released.
//! Every piece, mapped or spare, counts against the pool's limit
//! (`PoolCore::reserve_external`), so `--gpu-memory-limit` holds as before.
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
    spare: RefCell<Vec<sys::CUmemGenericAllocationHandle>>,
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
            pool,
            held: Cell::new((0, 0)),
            held_with_pool: Cell::new(0),
        })
    }

    /// A physical piece: a spare, else a new one (counted against the pool's limit;
    /// where the device is full, the driver's stream-ordered pool gives back what it
    /// keeps unused first).
    fn take(&self) -> Result<sys::CUmemGenericAllocationHandle> {
        if let Some(h) = self.spare.borrow_mut().pop() {
            return Ok(h);
        }
        self.pool.borrow_mut().reserve_external(PIECE)?;
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

    /// Keeps an unmapped piece for the next mapping.
    fn put(&self, h: sys::CUmemGenericAllocationHandle) {
        self.spare.borrow_mut().push(h);
    }

    /// Releases the spare pieces.
    pub(crate) fn release_spares(&self) {
        let spare: Vec<_> = self.spare.borrow_mut().drain(..).collect();
        for h in spare {
            // SAFETY: an unmapped handle from cuMemCreate, released once.
            let _ = unsafe { sys::cuMemRelease(h) };
            self.pool.borrow_mut().release_external(PIECE);
            let (now, peak) = self.held.get();
            self.held.set((now.saturating_sub(PIECE), peak));
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
    va: u64,
    /// Bytes of addresses reserved (whole pieces).
    reserved: usize,
    /// The physical piece behind each [`PIECE`] of the range, if mapped.
    mapped: Vec<Option<sys::CUmemGenericAllocationHandle>>,
    pieces: Rc<Pieces>,
    stream: sys::CUstream,
}

impl MappedBuf {
    /// Reserves addresses for `bytes` bytes; nothing is mapped yet.
    pub(crate) fn reserve(
        pieces: &Rc<Pieces>,
        stream: sys::CUstream,
        bytes: usize,
    ) -> Result<Self> {
        let count = bytes.div_ceil(PIECE).max(1);
        let reserved = count * PIECE;
        let mut va: sys::CUdeviceptr = 0;
        // SAFETY: reserves addresses only; freed in Drop.
        check("cuMemAddressReserve", unsafe {
            sys::cuMemAddressReserve(&mut va, reserved, PIECE, 0, 0)
        })?;
        Ok(MappedBuf {
            va,
            reserved,
            mapped: vec![None; count],
            pieces: pieces.clone(),
            stream,
        })
    }

    pub fn ptr(&self) -> u64 {
        self.va
    }

    /// Bytes of device memory mapped now.
    pub fn mapped_bytes(&self) -> usize {
        self.mapped.iter().flatten().count() * PIECE
    }

    /// Maps every piece that bytes `lo..hi` of the range touch.
    pub(crate) fn map(&mut self, lo: usize, hi: usize) -> Result<()> {
        if hi <= lo {
            return Ok(());
        }
        let last = (hi - 1) / PIECE;
        for i in lo / PIECE..=last.min(self.mapped.len().saturating_sub(1)) {
            if self.mapped[i].is_some() {
                continue;
            }
            let h = self.pieces.take()?;
            let at = self.va + (i * PIECE) as u64;
            // SAFETY: `at` is a piece of this reservation, not mapped; `h` is a piece
            // not mapped anywhere.
            let mapped = check("cuMemMap", unsafe { sys::cuMemMap(at, PIECE, 0, h, 0) });
            if let Err(e) = mapped {
                self.pieces.put(h);
                return Err(e);
            }
            let access = sys::CUmemAccessDesc {
                location: props(self.pieces.ordinal).location,
                flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            };
            // SAFETY: `at` was just mapped.
            if let Err(e) = check("cuMemSetAccess", unsafe {
                sys::cuMemSetAccess(at, PIECE, &access, 1)
            }) {
                // SAFETY: mapped just above, never accessed.
                let _ = unsafe { sys::cuMemUnmap(at, PIECE) };
                self.pieces.put(h);
                return Err(e);
            }
            self.mapped[i] = Some(h);
        }
        Ok(())
    }

    /// Unmaps the pieces that lie wholly below byte `hi`, keeping them as spares. The
    /// caller must have waited for every kernel that reads them.
    pub(crate) fn unmap_below(&mut self, hi: usize) {
        for i in 0..(hi / PIECE).min(self.mapped.len()) {
            if let Some(h) = self.mapped[i].take() {
                // SAFETY: the piece was mapped at this address by `map`; no kernel
                // uses it any more (the caller's contract).
                let _ = unsafe { sys::cuMemUnmap(self.va + (i * PIECE) as u64, PIECE) };
                self.pieces.put(h);
            }
        }
    }
}

impl Drop for MappedBuf {
    fn drop(&mut self) {
        let _ = self.pieces.ctx.bind_to_thread();
        // Kernels queued on the stream may still read the buffer: wait for them.
        // SAFETY: the stream outlives every buffer (the Gpu owns both).
        let _ = unsafe { sys::cuStreamSynchronize(self.stream) };
        self.unmap_below(self.reserved);
        self.pieces.release_spares();
        // SAFETY: the range was reserved by `reserve` and nothing is mapped in it.
        let _ = unsafe { sys::cuMemAddressFree(self.va, self.reserved) };
    }
}

impl std::fmt::Debug for MappedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MappedBuf({:#x}, {} of {} B mapped)",
            self.va,
            self.mapped_bytes(),
            self.reserved
        )
    }
}
