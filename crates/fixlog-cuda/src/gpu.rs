//! The device context: CUDA context + stream, lazily compiled kernel modules
//! with an on-disk cache, and the memory pool.
//!
//! Module cache: the key is an FNV-1a hash of the assembled source, the NVRTC
//! options, the include paths and the architecture (devices of one architecture
//! share it); NVRTC's cubin is stored as
//! `<dir>/<module>-<hash>.cubin`, where `<dir>` is `$FIXLOG_KERNEL_CACHE`, else
//! `$XDG_CACHE_HOME/fixlog/kernels`, else `~/.cache/fixlog/kernels`. A cache
//! that cannot be written is not an error (compilation still works).

use crate::error::{CudaError, Result};
use crate::kernels;
use crate::pool::{PoolCore, PoolStats, RawAlloc};
use crate::vmm::{MappedBuf, Pieces};
use cudarc::driver::{result, sys, CudaContext, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::{CompileOptions, Ptx};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

// SAFETY: JoinSpec is #[repr(C)], plain u32 data, same layout as in join.cu.
unsafe impl cudarc::driver::DeviceRepr for crate::cpu::JoinSpec {}

/// Device memory underneath the pool: the driver's stream-ordered allocator on the
/// device's default memory pool where the device has one (`cuMemAllocAsync` /
/// `cuMemFreeAsync` on the one stream all work runs on: no synchronisation, and freed
/// memory is reused for requests of any size), `cuMemAlloc` / `cuMemFree` otherwise.
pub struct DriverAlloc {
    ctx: Arc<CudaContext>,
    /// The stream every kernel and copy runs on (the legacy default stream).
    stream: sys::CUstream,
    /// The device's default memory pool, when stream-ordered allocation is used.
    mempool: Option<sys::CUmemoryPool>,
}

impl RawAlloc for DriverAlloc {
    fn alloc(&mut self, bytes: usize) -> Result<u64> {
        self.ctx.bind_to_thread()?;
        // SAFETY: plain allocations; the pointer is owned by the pool, and every use
        // of it is on `stream`.
        if self.mempool.is_some() {
            unsafe { result::malloc_async(self.stream, bytes) }
                .map_err(|e| CudaError::driver("cuMemAllocAsync", e))
        } else {
            unsafe { result::malloc_sync(bytes) }.map_err(|e| CudaError::driver("cuMemAlloc", e))
        }
    }
    fn free(&mut self, ptr: u64, _bytes: usize) {
        // A failing free cannot be recovered; it would surface at the next call.
        let _ = self.ctx.bind_to_thread();
        if self.mempool.is_some() {
            let _ = unsafe { result::free_async(ptr, self.stream) };
        } else {
            let _ = unsafe { result::free_sync(ptr) };
        }
    }
}

impl DriverAlloc {
    /// Gives the memory the driver's stream-ordered pool keeps unused back to the
    /// device until it holds at most `keep` bytes (for allocations outside it:
    /// `crate::vmm`).
    pub(crate) fn trim_driver_pool(&mut self, keep: usize) {
        if let Some(pool) = self.mempool {
            let _ = self.ctx.bind_to_thread();
            // SAFETY: the pool handle is valid for the context's life; trimming
            // releases only memory no allocation uses.
            let _ = unsafe {
                sys::cuStreamSynchronize(self.stream);
                sys::cuMemPoolTrimTo(pool, keep)
            };
        }
    }

    /// Bytes the driver's stream-ordered pool holds from the device now (0 without it).
    pub(crate) fn driver_pool_held(&self) -> usize {
        // SAFETY: the pool handle is valid for the context's life.
        self.mempool.map_or(0, |pool| unsafe {
            mempool_attribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
            )
            .unwrap_or(0) as usize
        })
    }
}

/// The device's default memory pool, set to keep what is freed (release threshold:
/// unlimited) and with its high-water marks reset; `None` without memory pools.
fn default_mempool(ctx: &Arc<CudaContext>) -> Option<sys::CUmemoryPool> {
    let supported = ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
        .ok()?;
    if supported == 0 {
        return None;
    }
    // SAFETY: the pool handle comes from the driver for this context's device; the
    // attribute values are u64 as the driver documents.
    unsafe {
        let pool = result::device::get_default_mem_pool(ctx.cu_device()).ok()?;
        let mut keep: u64 = u64::MAX;
        result::mem_pool::set_attribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut keep as *mut u64).cast(),
        )
        .ok()?;
        reset_mempool_peaks(pool);
        Some(pool)
    }
}

/// Resets the high-water marks of a memory pool.
///
/// # Safety
/// `pool` must be a valid memory pool.
unsafe fn reset_mempool_peaks(pool: sys::CUmemoryPool) {
    for attr in [
        sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
        sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
    ] {
        let mut zero: u64 = 0;
        let _ = result::mem_pool::set_attribute(pool, attr, (&mut zero as *mut u64).cast());
    }
}

/// A memory pool attribute (u64).
///
/// # Safety
/// `pool` must be a valid memory pool.
unsafe fn mempool_attribute(
    pool: sys::CUmemoryPool,
    attr: sys::CUmemPool_attribute,
) -> Option<u64> {
    let mut v: u64 = 0;
    result::mem_pool::get_attribute(pool, attr, (&mut v as *mut u64).cast())
        .ok()
        .map(|_| v)
}

type SharedPool = Rc<RefCell<PoolCore<DriverAlloc>>>;

/// A device buffer: a block of the pool (returned to it on drop), or a range mapped
/// piece by piece ([`MappedBuf`], a merge's output).
pub struct DevBuf {
    ptr: u64,
    bytes: usize,
    mem: BufMem,
}

enum BufMem {
    Pool { class: usize, pool: SharedPool },
    Mapped(MappedBuf),
}

impl DevBuf {
    pub fn ptr(&self) -> u64 {
        self.ptr
    }
    /// Bytes requested (the block may be larger).
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    /// Device bytes the buffer holds now.
    pub fn capacity(&self) -> usize {
        match &self.mem {
            BufMem::Pool { class, .. } => *class,
            BufMem::Mapped(m) => m.mapped_bytes(),
        }
    }
    /// Gives back the device memory of the buffer's first `bytes` bytes where it is
    /// mapped piece by piece (`crate::vmm`; whole pieces only), nothing otherwise.
    /// For the buffer's owner, once no kernel reads those bytes (a merge past them):
    /// reading them later is an error of the caller.
    pub fn release_below(&mut self, bytes: usize) {
        if let Some(m) = self.mapped_mut() {
            m.unmap_below(bytes);
        }
    }
    /// Gives back the device memory of the buffer's whole pieces from byte `bytes` on
    /// where it is mapped piece by piece (`crate::vmm`), nothing otherwise: a buffer
    /// sized for more rows than were written keeps about what they need. For the
    /// buffer's owner, once every kernel that wrote there is done.
    pub fn release_from(&mut self, bytes: usize) {
        if let Some(m) = self.mapped_mut() {
            m.unmap_from(bytes);
        }
    }
    /// The mapped range behind the buffer, if it is one.
    pub(crate) fn mapped_mut(&mut self) -> Option<&mut MappedBuf> {
        match &mut self.mem {
            BufMem::Mapped(m) => Some(m),
            BufMem::Pool { .. } => None,
        }
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        if let BufMem::Pool { class, pool } = &self.mem {
            pool.borrow_mut().release(self.ptr, *class);
        }
    }
}

impl std::fmt::Debug for DevBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DevBuf({:#x}, {} B)", self.ptr, self.bytes)
    }
}

/// Pinned host memory mapped into the device's address space: kernels read and write
/// it through [`HostBuf::dev_ptr`] (over the bus), the host through its own pointer.
/// Holds the rows of relations that do not fit in device memory. Freeing waits for
/// the queued work first (a kernel may still be reading it).
pub struct HostBuf {
    host: *mut u32,
    dev: u64,
    bytes: usize,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    accounted: Rc<std::cell::Cell<(usize, usize)>>,
}

impl HostBuf {
    /// The address kernels use.
    pub fn dev_ptr(&self) -> u64 {
        self.dev
    }
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for HostBuf {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        let _ = self.stream.synchronize();
        // SAFETY: allocated by `Gpu::alloc_host_mapped`; the queued work that could
        // use it has finished.
        let _ = unsafe { result::free_host(self.host.cast()) };
        let (now, peak) = self.accounted.get();
        self.accounted.set((now.saturating_sub(self.bytes), peak));
    }
}

impl std::fmt::Debug for HostBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostBuf({:#x}, {} B)", self.dev, self.bytes)
    }
}

/// Words in the mapped count page (counts alive at once).
const MAPPED_WORDS: usize = 64;
/// Written by the host before a kernel runs; a count still equal to it was
/// never written.
const UNWRITTEN: u64 = u64::MAX;

/// Pinned host words mapped into the device's address space, where kernels
/// write the counts the host needs next (an operator's output size). The
/// host reads one after a stream sync: no device-to-host copy queued behind
/// the kernel, which costs a few microseconds per operator.
struct MappedWords {
    ctx: Arc<CudaContext>,
    host: *mut u64,
    dev: u64,
    used: std::cell::Cell<u64>,
}

impl MappedWords {
    /// `None` where the device cannot map host memory (counts then go
    /// through a device word and a copy).
    fn new(ctx: &Arc<CudaContext>) -> Option<MappedWords> {
        // SAFETY: plain pinned allocation, freed in Drop; the words are
        // written before any kernel reads or the host reads them.
        unsafe {
            let host = result::malloc_host(MAPPED_WORDS * 8, sys::CU_MEMHOSTALLOC_DEVICEMAP).ok()?
                as *mut u64;
            let mut dev: sys::CUdeviceptr = 0;
            if sys::cuMemHostGetDevicePointer_v2(&mut dev, host.cast(), 0)
                != sys::CUresult::CUDA_SUCCESS
            {
                let _ = result::free_host(host.cast());
                return None;
            }
            Some(MappedWords {
                ctx: ctx.clone(),
                host,
                dev,
                used: std::cell::Cell::new(0),
            })
        }
    }
}

impl Drop for MappedWords {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by malloc_host; no kernel is running (Gpu drops
        // after its last synchronising call, or the context is torn down).
        let _ = unsafe { result::free_host(self.host.cast()) };
    }
}

/// Where a kernel writes a count the host reads next (see `Gpu::count_out`).
pub struct CountOut<'a> {
    gpu: &'a Gpu,
    place: CountPlace,
}

enum CountPlace {
    /// word index in the mapped page
    Mapped(usize),
    /// a device word, copied back (no mapped page, or every word in use)
    Device(DevBuf),
}

impl CountOut<'_> {
    /// The device address to pass to the kernel (a u64).
    pub fn ptr(&self) -> u64 {
        match &self.place {
            CountPlace::Mapped(i) => self
                .gpu
                .mapped
                .as_ref()
                .map_or(0, |m| m.dev + 8 * *i as u64),
            CountPlace::Device(buf) => buf.ptr(),
        }
    }
    /// Waits for the queued work and returns the count; an error if no
    /// kernel wrote it.
    pub fn read(self) -> Result<u64> {
        let v = match &self.place {
            CountPlace::Mapped(i) => {
                self.gpu.sync()?;
                let m = self.gpu.mapped.as_ref().expect("mapped words");
                // SAFETY: the word lies in our pinned page; the stream is idle.
                unsafe { std::ptr::read_volatile(m.host.add(*i)) }
            }
            CountPlace::Device(buf) => self.gpu.dtoh::<u64>(buf.ptr(), 1)?[0],
        };
        if v == UNWRITTEN {
            return Err(CudaError::Invalid(
                "a kernel finished without writing its output count".into(),
            ));
        }
        Ok(v)
    }
}

impl Drop for CountOut<'_> {
    fn drop(&mut self) {
        if let (CountPlace::Mapped(i), Some(m)) = (&self.place, &self.gpu.mapped) {
            m.used.set(m.used.get() & !(1u64 << i));
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub struct CompileStats {
    pub compiled: u32,
    pub disk_hits: u32,
    pub compile_ms: f64,
}

/// One GPU: context, default stream, kernels, pool. Single-threaded (`!Send`).
pub struct Gpu {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    pool: SharedPool,
    /// Physical pieces for buffers mapped piece by piece (`None`: the device has no
    /// virtual memory management).
    pieces: Option<Rc<Pieces>>,
    mapped: Option<MappedWords>,
    modules: RefCell<HashMap<String, Arc<CudaModule>>>,
    funcs: RefCell<HashMap<(String, String), CudaFunction>>,
    name: String,
    cc: (i32, i32),
    sm_count: u32,
    total_mem: usize,
    compiler: Compiler,
    /// The pool limit when none is given: 90% of the memory free at start.
    default_limit: usize,
    /// Bytes of mapped host memory held now and at most (see [`HostBuf`]).
    host_mapped: Rc<std::cell::Cell<(usize, usize)>>,
    compile_stats: RefCell<CompileStats>,
    /// Rows per onesweep launch (at most 2^28); lowered only by tests, to
    /// exercise the portion hand-over on small inputs.
    pub(crate) sort_portion: std::cell::Cell<usize>,
}

fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0xff)) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Root of the CUDA toolkit (for CUB's headers): CUDA_PATH, CUDA_HOME, /usr/local/cuda.
pub fn cuda_root() -> Option<PathBuf> {
    for var in ["CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"] {
        if let Ok(v) = std::env::var(var) {
            let p = PathBuf::from(v);
            if p.join("include").is_dir() {
                return Some(p);
            }
        }
    }
    let p = PathBuf::from("/usr/local/cuda");
    p.join("include").is_dir().then_some(p)
}

pub fn default_cache_dir() -> Option<PathBuf> {
    if let Ok(v) = std::env::var("FIXLOG_KERNEL_CACHE") {
        return Some(PathBuf::from(v));
    }
    if let Ok(v) = std::env::var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(v).join("fixlog/kernels"));
    }
    std::env::var("HOME")
        .ok()
        .map(|h| PathBuf::from(h).join(".cache/fixlog/kernels"))
}

impl Gpu {
    /// Open device `ordinal` with a pool limited to `byte_limit` bytes
    /// (`None`: 90% of the device's free memory).
    pub fn new(ordinal: usize, byte_limit: Option<usize>) -> Result<Gpu> {
        let p = crate::probe();
        if !p.available {
            return Err(CudaError::Unavailable(p.reason));
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| CudaError::driver("cuCtxCreate", e))?;
        ctx.bind_to_thread()?;
        let stream = ctx.default_stream();
        let name = ctx.name()?;
        let cc = ctx.compute_capability()?;
        let sm_count = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
            as u32;
        let total_mem = ctx.total_mem()?;
        let (free, _) = ctx.mem_get_info()?;
        let default_limit = free / 10 * 9;
        let limit = byte_limit.unwrap_or(default_limit);
        let arch: &'static str = Box::leak(format!("sm_{}{}", cc.0, cc.1).into_boxed_str());
        let mut include_paths = vec![];
        if let Some(root) = cuda_root() {
            for sub in ["include/cccl", "include"] {
                let d = root.join(sub);
                if d.is_dir() {
                    include_paths.push(d.display().to_string());
                }
            }
        }
        let mempool = default_mempool(&ctx);
        let pool = Rc::new(RefCell::new(PoolCore::new(
            DriverAlloc {
                ctx: ctx.clone(),
                stream: stream.cu_stream(),
                mempool,
            },
            limit,
            mempool.is_none(),
        )));
        let mapped = MappedWords::new(&ctx);
        let pieces = Pieces::new(&ctx, pool.clone()).map(Rc::new);
        Ok(Gpu {
            ctx,
            stream,
            pool,
            pieces,
            mapped,
            modules: RefCell::new(HashMap::new()),
            funcs: RefCell::new(HashMap::new()),
            compiler: Compiler::new(arch, include_paths, default_cache_dir()),
            default_limit,
            host_mapped: Rc::new(std::cell::Cell::new((0, 0))),
            name,
            cc,
            sm_count,
            total_mem,
            compile_stats: RefCell::new(CompileStats::default()),
            sort_portion: std::cell::Cell::new(crate::ops::OS_PORTION),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn compute_capability(&self) -> (i32, i32) {
        self.cc
    }
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }
    pub fn total_mem(&self) -> usize {
        self.total_mem
    }
    pub fn compile_stats(&self) -> CompileStats {
        *self.compile_stats.borrow()
    }
    pub fn pool_stats(&self) -> PoolStats {
        self.pool.borrow().stats()
    }
    /// Bytes of physical pieces kept unmapped for the next buffer mapped piece by
    /// piece (`crate::vmm`): held from the device, not in use.
    pub fn spare_piece_bytes(&self) -> usize {
        self.pieces.as_ref().map_or(0, |p| p.spare_bytes())
    }
    /// `bytes` of pinned host memory mapped into the device (for rows that do not fit
    /// in device memory); an error where the host cannot pin that much.
    pub fn alloc_host_mapped(&self, bytes: usize) -> Result<HostBuf> {
        self.ctx.bind_to_thread()?;
        // SAFETY: a plain pinned, device-mapped allocation, owned by the HostBuf.
        let host = unsafe { result::malloc_host(bytes.max(4), sys::CU_MEMHOSTALLOC_DEVICEMAP) }
            .map_err(|_| CudaError::OutOfMemory {
                requested: bytes,
                in_use: self.host_mapped.get().0,
                limit: 0,
                device: false,
            })? as *mut u32;
        let mut dev: sys::CUdeviceptr = 0;
        // SAFETY: `host` was just allocated with DEVICEMAP.
        let r = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, host.cast(), 0) };
        if r != sys::CUresult::CUDA_SUCCESS {
            // SAFETY: allocated above, never used.
            let _ = unsafe { result::free_host(host.cast()) };
            return Err(CudaError::Driver {
                context: "cuMemHostGetDevicePointer".into(),
                message: format!("{r:?}"),
            });
        }
        let (now, peak) = self.host_mapped.get();
        self.host_mapped.set((now + bytes, peak.max(now + bytes)));
        Ok(HostBuf {
            host,
            dev,
            bytes,
            ctx: self.ctx.clone(),
            stream: self.stream.clone(),
            accounted: self.host_mapped.clone(),
        })
    }

    /// Copies `bytes` from device address `src` into a host buffer (waits for the
    /// queued work first).
    pub fn dtoh_into(&self, dst: &HostBuf, src: u64, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: `dst` holds at least `bytes` bytes (callers size it so).
        let words = unsafe { std::slice::from_raw_parts_mut(dst.host, bytes.div_ceil(4)) };
        unsafe { result::memcpy_dtoh_sync(&mut words[..bytes / 4], src) }
            .map_err(|e| CudaError::driver("cuMemcpyDtoH", e))
    }

    /// Bytes of mapped host memory held now, and at most since the peaks were reset.
    pub fn host_mapped_bytes(&self) -> (usize, usize) {
        self.host_mapped.get()
    }

    /// The pool limit used when none is given (90% of the memory free at start).
    pub fn default_limit(&self) -> usize {
        self.default_limit
    }
    pub fn set_pool_limit(&self, limit: usize) {
        self.pool.borrow_mut().set_limit(limit);
        if let Some(p) = &self.pieces {
            p.release_spares_beyond(p.spare_bound());
        }
    }
    /// The most device memory held (reserved from the device) and in use since the
    /// peaks were last reset. In use: this pool's accounting (every buffer, mapped
    /// pieces included). Held: the driver's memory pool's high-water mark where it is
    /// used, or, if larger, the most that pool and the pieces of mapped buffers held
    /// together when a piece was created; else the pool's own high-water mark.
    pub fn memory_peaks(&self) -> (usize, usize) {
        let with_pieces = self.pieces.as_ref().map_or(0, |p| p.held_with_pool());
        let mut core = self.pool.borrow_mut();
        let s = core.stats();
        match core.raw_mut().mempool {
            // SAFETY: the pool handle is valid for the context's life.
            Some(pool) => unsafe {
                let held = mempool_attribute(
                    pool,
                    sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
                );
                (
                    held.map_or(s.high_water, |v| (v as usize).max(with_pieces)),
                    s.peak_in_use,
                )
            },
            None => (s.high_water, s.peak_in_use),
        }
    }
    /// Starts the memory peaks afresh (the pool's and the driver's).
    pub fn reset_memory_peaks(&self) {
        let (now, _) = self.host_mapped.get();
        self.host_mapped.set((now, now));
        if let Some(p) = &self.pieces {
            p.reset_peak();
        }
        let mut core = self.pool.borrow_mut();
        core.reset_peaks();
        if let Some(pool) = core.raw_mut().mempool {
            // SAFETY: as above.
            unsafe { reset_mempool_peaks(pool) };
        }
    }
    /// Rows per radix-sort launch (default and maximum 2^28, rounded down to
    /// whole tiles); a test hook for the hand-over between launches.
    pub fn set_sort_portion(&self, rows: usize) {
        self.sort_portion.set(rows.clamp(1, crate::ops::OS_PORTION));
    }
    /// Free all cached (unused) pool blocks.
    pub fn trim_pool(&self) {
        self.pool.borrow_mut().trim();
    }

    /// A buffer of at least `bytes` bytes from the pool.
    pub fn alloc(&self, bytes: usize) -> Result<DevBuf> {
        self.make_room_in_pieces(bytes);
        let got = self.pool.borrow_mut().alloc(bytes);
        let (ptr, class) = match got {
            Err(CudaError::OutOfMemory { device: true, .. })
                if self.pieces.as_ref().is_some_and(|p| p.spare_bytes() > 0) =>
            {
                // The device is full where spare pieces hold some of it: give them
                // back, and try again. (A refusal under the limit is not retried:
                // spares do not count there, `make_room_in_pieces` saw to them.)
                self.release_spare_pieces();
                self.pool.borrow_mut().alloc(bytes)?
            }
            other => other?,
        };
        Ok(DevBuf {
            ptr,
            bytes,
            mem: BufMem::Pool {
                class,
                pool: self.pool.clone(),
            },
        })
    }

    /// Addresses for `bytes` bytes whose pieces the caller maps as it writes them
    /// (`MappedBuf::map`); `None` where the device cannot map memory piece by piece.
    pub(crate) fn reserve_mapped(&self, bytes: usize) -> Result<Option<DevBuf>> {
        let Some(pieces) = &self.pieces else {
            return Ok(None);
        };
        self.ctx.bind_to_thread()?;
        let m = MappedBuf::reserve(pieces, self.stream.cu_stream(), bytes)?;
        Ok(Some(DevBuf {
            ptr: m.ptr(),
            bytes,
            mem: BufMem::Mapped(m),
        }))
    }

    /// Whether buffers can be mapped piece by piece (`crate::vmm`) on this device.
    pub fn maps_pieces(&self) -> bool {
        self.pieces.is_some()
    }

    /// Before the pool's limit is checked for `bytes` more: releases the spare
    /// pieces (`crate::vmm`) where they would be in the way.
    pub(crate) fn make_room_in_pieces(&self, bytes: usize) {
        if let Some(p) = &self.pieces {
            p.release_spares_for(bytes);
        }
    }

    /// Releases the physical pieces kept for reuse (those no live buffer holds).
    pub fn release_spare_pieces(&self) {
        if let Some(p) = &self.pieces {
            p.release_spares();
        }
    }
    /// A u64 for a kernel to write a count into, read back by the host with
    /// `CountOut::read`: a word of the mapped host page (no copy), else a
    /// device word. Set to a marker first, so a count never written is an
    /// error, not a stale value.
    pub fn count_out(&self) -> Result<CountOut<'_>> {
        if let Some(m) = &self.mapped {
            let used = m.used.get();
            if used != u64::MAX {
                let i = used.trailing_ones() as usize;
                m.used.set(used | 1u64 << i);
                // SAFETY: word i of our pinned page; no kernel holds it (free bit).
                unsafe { std::ptr::write_volatile(m.host.add(i), UNWRITTEN) };
                return Ok(CountOut {
                    gpu: self,
                    place: CountPlace::Mapped(i),
                });
            }
        }
        let buf = self.alloc(8)?;
        self.memset8(buf.ptr(), 0xff, 8)?;
        Ok(CountOut {
            gpu: self,
            place: CountPlace::Device(buf),
        })
    }
    pub fn alloc_u32(&self, n: usize) -> Result<DevBuf> {
        self.alloc(n * 4)
    }

    pub fn htod<T: Copy>(&self, dst: u64, src: &[T]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        unsafe { result::memcpy_htod_sync(dst, src) }
            .map_err(|e| CudaError::driver("cuMemcpyHtoD", e))
    }
    pub fn dtoh<T: Copy + Default>(&self, src: u64, n: usize) -> Result<Vec<T>> {
        let mut v = host_vec(n)?;
        if n > 0 {
            unsafe { result::memcpy_dtoh_sync(&mut v, src) }
                .map_err(|e| CudaError::driver("cuMemcpyDtoH", e))?;
        }
        Ok(v)
    }
    /// `words` u32 from the device into a new vector. Large copies go through a
    /// pinned staging buffer (a copy into pageable memory runs at a fraction of the
    /// bus's speed) and are spread over the host's cores from there.
    pub fn download_words(&self, src: u64, words: usize) -> Result<Vec<u32>> {
        use rayon::prelude::*;
        /// Words per staging copy (64 MiB).
        const STAGE: usize = 16 << 20;
        if words < STAGE / 8 {
            return self.dtoh::<u32>(src, words);
        }
        let stage_words = STAGE.min(words);
        // SAFETY: a plain pinned allocation of `stage_words` u32, freed below; the
        // slices over it never outlive it.
        let host = unsafe { result::malloc_host(stage_words * 4, 0) }
            .map_err(|e| CudaError::driver("cuMemHostAlloc", e))? as *mut u32;
        let mut out: Vec<u32> = Vec::new();
        let copied = out
            .try_reserve_exact(words)
            .map_err(|_| host_refused(words * 4));
        let copied = copied.and_then(|()| {
            let mut done = 0;
            while done < words {
                let n = (words - done).min(stage_words);
                // SAFETY: `host` holds `stage_words >= n` u32.
                let stage = unsafe { std::slice::from_raw_parts_mut(host, n) };
                unsafe { result::memcpy_dtoh_sync(stage, src + (done * 4) as u64) }
                    .map_err(|e| CudaError::driver("cuMemcpyDtoH", e))?;
                let spare = &mut out.spare_capacity_mut()[done..done + n];
                spare
                    .par_chunks_mut(1 << 18)
                    .zip(stage.par_chunks(1 << 18))
                    .for_each(|(d, s)| {
                        for (d, &s) in d.iter_mut().zip(s) {
                            d.write(s);
                        }
                    });
                done += n;
            }
            Ok(())
        });
        // SAFETY: allocated above, no longer referenced.
        let _ = unsafe { result::free_host(host.cast()) };
        copied?;
        // SAFETY: every one of the `words` elements was written above.
        unsafe { out.set_len(words) };
        Ok(out)
    }

    pub fn dtod(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        unsafe { result::memcpy_dtod_async(dst, src, bytes, self.stream.cu_stream()) }
            .map_err(|e| CudaError::driver("cuMemcpyDtoDAsync", e))
    }
    pub fn memset8(&self, dst: u64, v: u8, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        unsafe { result::memset_d8_async(dst, v, bytes, self.stream.cu_stream()) }
            .map_err(|e| CudaError::driver("cuMemsetD8Async", e))
    }
    /// Wait for all queued work; surfaces asynchronous kernel errors.
    pub fn sync(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| CudaError::driver("stream synchronize", e))
    }

    /// Timing event (recorded on the default stream).
    pub fn event(&self) -> Result<cudarc::driver::CudaEvent> {
        let ev = self
            .ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| CudaError::driver("cuEventCreate", e))?;
        ev.record(&self.stream)
            .map_err(|e| CudaError::driver("cuEventRecord", e))?;
        Ok(ev)
    }

    fn compile(&self, m: &kernels::KernelModule, defines: &str) -> Result<Ptx> {
        let src = kernels::assemble(m);
        let options: Vec<String> = defines.split_whitespace().map(String::from).collect();
        self.compile_cached(m.name, &src, &options)
    }

    /// The module's machine code for this device: from the disk cache, or compiled.
    fn compile_cached(&self, name: &str, src: &str, options: &[String]) -> Result<Ptx> {
        let out = self.compiler.cubin(name, src, options)?;
        self.count_compile(&out);
        Ok(Ptx::from_binary(out.cubin))
    }

    fn count_compile(&self, out: &Compiled) {
        let mut s = self.compile_stats.borrow_mut();
        if out.cached {
            s.disk_hits += 1;
        } else {
            s.compiled += 1;
            s.compile_ms += out.ms;
        }
    }

    /// Compiles (or loads from the disk cache) a generated module and loads it.
    pub fn load_source(
        &self,
        name: &str,
        src: &str,
        options: &[String],
    ) -> Result<Arc<CudaModule>> {
        let mut modules = self.load_sources(&[(name.to_string(), src.to_string())], options)?;
        modules
            .pop()
            .ok_or_else(|| CudaError::Invalid("no module was loaded".into()))
    }

    /// Compiles several generated modules at once, on as many threads (NVRTC needs no
    /// device, and each compile is single-threaded), then loads them, in order.
    pub fn load_sources(
        &self,
        sources: &[(String, String)],
        options: &[String],
    ) -> Result<Vec<Arc<CudaModule>>> {
        let compiler = &self.compiler;
        let compiled: Vec<Result<Compiled>> = std::thread::scope(|scope| {
            let handles: Vec<_> = sources
                .iter()
                .map(|(name, src)| scope.spawn(move || compiler.cubin(name, src, options)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(CudaError::Invalid("a compiler thread panicked".into()))
                    })
                })
                .collect()
        });
        let mut modules = Vec::with_capacity(sources.len());
        for ((name, _), out) in sources.iter().zip(compiled) {
            let out = out?;
            self.count_compile(&out);
            let m = self
                .ctx
                .load_module(Ptx::from_binary(out.cubin))
                .map_err(|e| CudaError::driver(&format!("cuModuleLoadData({name})"), e))?;
            modules.push(m);
        }
        Ok(modules)
    }

    /// A kernel of a module loaded with [`Gpu::load_source`].
    pub fn module_function(
        &self,
        module: &Arc<CudaModule>,
        function: &str,
    ) -> Result<CudaFunction> {
        module
            .load_function(function)
            .map_err(|e| CudaError::driver(&format!("cuModuleGetFunction({function})"), e))
    }

    /// The kernel `function` of `module`, compiled with `defines` (e.g. "-DARITY=2").
    pub fn function(&self, module: &str, defines: &str, function: &str) -> Result<CudaFunction> {
        let fkey = (format!("{module} {defines}"), function.to_string());
        if let Some(f) = self.funcs.borrow().get(&fkey) {
            return Ok(f.clone());
        }
        let m = kernels::module(module).ok_or_else(|| CudaError::UnknownKernel {
            module: module.into(),
            function: function.into(),
        })?;
        if !m.functions.contains(&function) {
            return Err(CudaError::UnknownKernel {
                module: module.into(),
                function: function.into(),
            });
        }
        let mkey = fkey.0.clone();
        let existing = self.modules.borrow().get(&mkey).cloned();
        let cm = match existing {
            Some(cm) => cm,
            None => {
                let ptx = self.compile(m, defines)?;
                let cm = self.ctx.load_module(ptx).map_err(|e| {
                    CudaError::driver(&format!("cuModuleLoadData({module} {defines})"), e)
                })?;
                self.modules.borrow_mut().insert(mkey, cm.clone());
                cm
            }
        };
        let f = cm
            .load_function(function)
            .map_err(|e| CudaError::driver(&format!("cuModuleGetFunction({function})"), e))?;
        self.funcs.borrow_mut().insert(fkey, f.clone());
        Ok(f)
    }

    /// Compiles (or loads from the disk cache) and loads the hand-written modules
    /// `(module, defines)` not loaded yet, compiling on several threads at once.
    pub fn load_modules(&self, wanted: &[(&str, String)]) -> Result<()> {
        let mut todo: Vec<(&kernels::KernelModule, String)> = Vec::new();
        for (module, defines) in wanted {
            let key = format!("{module} {defines}");
            if self.modules.borrow().contains_key(&key)
                || todo.iter().any(|(m, d)| m.name == *module && d == defines)
            {
                continue;
            }
            let m = kernels::module(module).ok_or_else(|| CudaError::UnknownKernel {
                module: module.to_string(),
                function: String::new(),
            })?;
            todo.push((m, defines.clone()));
        }
        let compiler = &self.compiler;
        let compiled: Vec<Result<Compiled>> = std::thread::scope(|scope| {
            let handles: Vec<_> = todo
                .iter()
                .map(|(m, defines)| {
                    scope.spawn(move || {
                        let options: Vec<String> =
                            defines.split_whitespace().map(String::from).collect();
                        compiler.cubin(m.name, &kernels::assemble(m), &options)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(CudaError::Invalid("a compiler thread panicked".into()))
                    })
                })
                .collect()
        });
        for ((m, defines), out) in todo.iter().zip(compiled) {
            let out = out?;
            self.count_compile(&out);
            let cm = self
                .ctx
                .load_module(Ptx::from_binary(out.cubin))
                .map_err(|e| {
                    CudaError::driver(&format!("cuModuleLoadData({} {defines})", m.name), e)
                })?;
            self.modules
                .borrow_mut()
                .insert(format!("{} {defines}", m.name), cm);
        }
        Ok(())
    }

    /// Compile (or load from the disk cache) every module variant up front.
    pub fn warm_up(&self, arities: &[usize]) -> Result<()> {
        for m in kernels::KERNELS {
            match m.name {
                kernels::SCAN | kernels::MISC => {
                    self.function(m.name, "", m.functions[0])?;
                }
                kernels::JOIN => {
                    for &a in arities {
                        for &b in arities {
                            self.function(m.name, &join_defines(a, b), m.functions[0])?;
                        }
                    }
                }
                _ => {
                    for &a in arities {
                        self.function(m.name, &arity_defines(a), m.functions[0])?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Compiles CUDA C++ to machine code for one device with NVRTC, through a disk cache
/// (`Send + Sync`: several modules compile at once on several threads).
///
/// The cached artifact is the CUBIN for the device's exact architecture, so a second
/// run loads it with no compilation at all (PTX would be compiled again by the driver
/// at every load). The cache key covers source, options, include paths (the toolkit's
/// version is in them) and architecture, not the device's name: devices of one
/// architecture (an H100 and an H200, sm_90) share their cubins. A cache that cannot
/// be written is not an error.
#[derive(Clone, Debug)]
pub struct Compiler {
    arch: &'static str,
    include_paths: Vec<String>,
    cache_dir: Option<PathBuf>,
}

/// One module's machine code and where it came from.
pub struct Compiled {
    pub cubin: Vec<u8>,
    pub cached: bool,
    /// Milliseconds NVRTC took (0 from the cache).
    pub ms: f64,
}

impl Compiler {
    pub fn new(
        arch: &'static str,
        include_paths: Vec<String>,
        cache_dir: Option<PathBuf>,
    ) -> Compiler {
        Compiler {
            arch,
            include_paths,
            cache_dir,
        }
    }

    /// The CUBIN of `src` compiled with `-std=c++17` and `options`.
    pub fn cubin(&self, name: &str, src: &str, options: &[String]) -> Result<Compiled> {
        let mut options = options.to_vec();
        options.push("-std=c++17".into());
        let key = fnv1a(&[
            src,
            &options.join(" "),
            &self.include_paths.join(":"),
            self.arch,
        ]);
        let file = self
            .cache_dir
            .as_ref()
            .map(|d| d.join(format!("{name}-{key:016x}.cubin")));
        if let Some(f) = &file {
            if let Ok(bytes) = std::fs::read(f) {
                if !bytes.is_empty() {
                    return Ok(Compiled {
                        cubin: bytes,
                        cached: true,
                        ms: 0.0,
                    });
                }
            }
        }
        let t = std::time::Instant::now();
        let cubin = compile_source_cubin(name, src, &options, self.arch, &self.include_paths)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if let Some(f) = &file {
            if let Some(dir) = f.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let tmp = f.with_extension(format!(
                "tmp{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            if std::fs::write(&tmp, &cubin).is_ok() {
                let _ = std::fs::rename(&tmp, f);
            }
        }
        Ok(Compiled {
            cubin,
            cached: false,
            ms,
        })
    }
}

/// NVRTC-compiles a source text to a CUBIN for `arch` (a real architecture, `sm_XY`).
pub fn compile_source_cubin(
    name: &str,
    src: &str,
    options: &[String],
    arch: &'static str,
    include_paths: &[String],
) -> Result<Vec<u8>> {
    use cudarc::nvrtc::{result, sys};
    let compile_error = |log: String| CudaError::Compile {
        module: format!("{name} {}", options.join(" ")),
        log,
    };
    let csrc = std::ffi::CString::new(src)
        .map_err(|_| compile_error("the source holds a NUL byte".into()))?;
    let cname = std::ffi::CString::new(format!("{name}.cu"))
        .map_err(|_| compile_error("the module name holds a NUL byte".into()))?;
    let prog = result::create_program(&csrc, Some(&cname))
        .map_err(|e| compile_error(format!("nvrtcCreateProgram: {e:?}")))?;
    let mut opts: Vec<String> = include_paths
        .iter()
        .map(|p| format!("--include-path={p}"))
        .collect();
    opts.push(format!("--gpu-architecture={arch}"));
    opts.extend(options.iter().cloned());
    // SAFETY: `prog` comes from create_program and is destroyed once, below; the
    // source and name CStrings outlive it.
    let out = unsafe {
        let compiled = result::compile_program(prog, &opts);
        let out = match compiled {
            Err(e) => {
                let log = result::get_program_log(prog)
                    .map(|l| {
                        let bytes: Vec<u8> = l
                            .iter()
                            .take_while(|&&c| c != 0)
                            .map(|&c| c as u8)
                            .collect();
                        String::from_utf8_lossy(&bytes).into_owned()
                    })
                    .unwrap_or_default();
                Err(compile_error(format!("{e:?}: {log}")))
            }
            Ok(()) => {
                let mut size = 0usize;
                let r = sys::nvrtcGetCUBINSize(prog, &mut size);
                if r != sys::nvrtcResult::NVRTC_SUCCESS || size == 0 {
                    Err(compile_error(format!("nvrtcGetCUBINSize: {r:?}")))
                } else {
                    let mut cubin = vec![0u8; size];
                    let r = sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast());
                    if r != sys::nvrtcResult::NVRTC_SUCCESS {
                        Err(compile_error(format!("nvrtcGetCUBIN: {r:?}")))
                    } else {
                        Ok(cubin)
                    }
                }
            }
        };
        let _ = result::destroy_program(prog);
        out
    };
    out
}

/// NVRTC-compile one kernel module with `defines` (e.g. "-DARITY=2") for
/// `arch` (e.g. "sm_90"); needs libnvrtc only, no device (the kernel_check
/// example uses this to compile and register-check every kernel offline).
pub fn compile_ptx(
    m: &kernels::KernelModule,
    defines: &str,
    arch: &'static str,
    include_paths: &[String],
) -> Result<Ptx> {
    let src = kernels::assemble(m);
    let mut options: Vec<String> = defines.split_whitespace().map(String::from).collect();
    options.push("-std=c++17".into());
    compile_source_ptx(m.name, &src, &options, arch, include_paths)
}

/// NVRTC-compiles a source text with `options` for `arch`; needs libnvrtc only.
pub fn compile_source_ptx(
    name: &str,
    src: &str,
    options: &[String],
    arch: &'static str,
    include_paths: &[String],
) -> Result<Ptx> {
    let opts = CompileOptions {
        arch: Some(arch),
        include_paths: include_paths.to_vec(),
        options: options.to_vec(),
        name: Some(format!("{name}.cu")),
        ..Default::default()
    };
    cudarc::nvrtc::compile_ptx_with_opts(src, opts).map_err(|e| CudaError::Compile {
        module: format!("{name} {}", options.join(" ")),
        log: match &e {
            cudarc::nvrtc::CompileError::CompileError { log, .. } => {
                log.to_string_lossy().into_owned()
            }
            other => format!("{other:?}"),
        },
    })
}

pub fn arity_defines(a: usize) -> String {
    format!("-DARITY={a}")
}
pub fn join_defines(ao: usize, ai: usize) -> String {
    format!("-DARITY={ao} -DAO={ao} -DAI={ai}")
}

impl Gpu {
    /// Launches `func` on `grid` blocks of `block` threads with arguments that are all
    /// 64-bit words (device addresses, counts), for a caller whose list of arguments
    /// depends on the kernel (`launch!` takes a fixed list).
    pub(crate) fn launch_words(
        &self,
        func: &CudaFunction,
        grid: usize,
        block: u32,
        args: &[u64],
    ) -> Result<()> {
        if grid == 0 {
            return Ok(());
        }
        let grid = u32::try_from(grid)
            .ok()
            .filter(|&g| g <= i32::MAX as u32)
            .ok_or_else(|| CudaError::Invalid(format!("grid of {grid} blocks too large")))?;
        let mut b = self.stream.launch_builder(func);
        for a in args {
            cudarc::driver::PushKernelArg::arg(&mut b, a);
        }
        let cfg = cudarc::driver::LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        unsafe { b.launch(cfg) }.map_err(|e| CudaError::driver("cuLaunchKernel", e))?;
        Ok(())
    }
}

/// Launch a kernel: `launch!(gpu, func, grid, block, arg, ...)`; every argument
/// is passed by value (device pointers as `u64`).
macro_rules! launch {
    ($gpu:expr, $func:expr, $grid:expr, $block:expr, $($arg:expr),* $(,)?) => {{
        let func = $func;
        let grid: u64 = $grid as u64;
        if grid > 0 {
            if grid > i32::MAX as u64 {
                return Err(crate::CudaError::Invalid(format!("grid of {grid} blocks too large")));
            }
            let mut b = $gpu.stream.launch_builder(&func);
            $(
                let a = $arg;
                cudarc::driver::PushKernelArg::arg(&mut b, &a);
            )*
            let cfg = cudarc::driver::LaunchConfig {
                grid_dim: (grid as u32, 1, 1),
                block_dim: ($block as u32, 1, 1),
                shared_mem_bytes: 0,
            };
            unsafe { b.launch(cfg) }.map_err(|e| crate::CudaError::driver("cuLaunchKernel", e))?;
        }
    }};
}

/// The error of a host allocation the system refused (an ordinary out-of-memory
/// value, as on the CPU backend: the driver names the relation).
pub(crate) fn host_refused(bytes: usize) -> CudaError {
    CudaError::Exec(fixlog_cpu::budget::refused(bytes))
}

/// `n` default values in host memory, allocated fallibly.
pub(crate) fn host_vec<T: Copy + Default>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| host_refused(n.saturating_mul(std::mem::size_of::<T>())))?;
    v.resize(n, T::default());
    Ok(v)
}

/// An empty host vector with room for `n` values, allocated fallibly.
pub(crate) fn host_with_capacity<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| host_refused(n.saturating_mul(std::mem::size_of::<T>())))?;
    Ok(v)
}
