//! What mapping device memory piece by piece costs (`crate::vmm`), a lab instrument:
//! for pieces of 16, 32 and 64 MiB over a 2 GiB range, the time per call of
//! `cuMemCreate`, `cuMemMap`, `cuMemSetAccess` (one call for the range), `cuMemUnmap`
//! and `cuMemRelease`, and the time of a memset over the range when freshly mapped,
//! when touched again, and when mapped again from the same pieces; beside it, the
//! driver's stream-ordered allocator for the same bytes.
//!
//!   cargo run --release -p fixlog-cuda --features cuda --example vmm_cost
//!
//! Round 20 (docs/gpu-results.md) found pieces of 16 MiB 10-40% slower than 64 MiB in
//! TC and SG; this says which call it is.
use cudarc::driver::{result, sys, CudaContext};
use std::time::Instant;

fn check(what: &str, r: sys::CUresult) {
    if r != sys::CUresult::CUDA_SUCCESS {
        eprintln!("{what}: {r:?}");
        std::process::exit(1);
    }
}

fn main() {
    let ctx = match CudaContext::new(0) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("no CUDA device: {e}");
            std::process::exit(1);
        }
    };
    let _ = ctx.bind_to_thread();
    let stream: sys::CUstream = std::ptr::null_mut();
    // SAFETY: a plain C struct for which all zeroes is a valid value.
    let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = ctx.ordinal() as i32;
    let access = sys::CUmemAccessDesc {
        location: prop.location,
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    let total: usize = 2 << 30;
    let us = |t: Instant, n: usize| t.elapsed().as_secs_f64() * 1e6 / n.max(1) as f64;
    let memset = |va: u64| {
        let t = Instant::now();
        // SAFETY: `va..va + total` is mapped and readable/writable.
        unsafe {
            result::memset_d8_async(va, 1, total, stream).expect("memset");
            check("sync", sys::cuStreamSynchronize(stream));
        }
        t.elapsed().as_secs_f64() * 1e3
    };
    // Maps each handle at its piece of `va`, then grants access to the whole range
    // with one call: µs per map, µs of the access call.
    let map_all = |va: u64, hs: &[sys::CUmemGenericAllocationHandle], piece: usize| {
        let t = Instant::now();
        for (i, h) in hs.iter().enumerate() {
            // SAFETY: `va` reserves `hs.len()` pieces, none mapped; each handle is
            // mapped once.
            check("cuMemMap", unsafe {
                sys::cuMemMap(va + (i * piece) as u64, piece, 0, *h, 0)
            });
        }
        let map = us(t, hs.len());
        let t = Instant::now();
        // SAFETY: the whole range was just mapped.
        check("cuMemSetAccess", unsafe {
            sys::cuMemSetAccess(va, hs.len() * piece, &access, 1)
        });
        (map, us(t, 1))
    };
    // Unmaps the `n` pieces of `va`, one call each: µs per call.
    let unmap_all = |va: u64, n: usize, piece: usize| {
        let t = Instant::now();
        for i in 0..n {
            // SAFETY: each piece was mapped by `map_all`; the stream is idle.
            check("cuMemUnmap", unsafe {
                sys::cuMemUnmap(va + (i * piece) as u64, piece)
            });
        }
        us(t, n)
    };
    println!(
        "| piece MiB | pieces | create us | map us | set access us (range) | memset fresh ms | memset again ms | unmap us | map again us | set access again us | memset remapped ms | release us |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for piece in [16usize << 20, 32 << 20, 64 << 20] {
        let n = total / piece;
        let mut va: sys::CUdeviceptr = 0;
        // SAFETY: plain driver calls on this context; every handle and mapping made
        // here is undone below.
        unsafe {
            check(
                "cuMemAddressReserve",
                sys::cuMemAddressReserve(&mut va, total, piece, 0, 0),
            );
            let mut hs = vec![0 as sys::CUmemGenericAllocationHandle; n];
            let t = Instant::now();
            for h in hs.iter_mut() {
                check("cuMemCreate", sys::cuMemCreate(h, piece, &prop, 0));
            }
            let create = us(t, n);
            let (map, set) = map_all(va, &hs, piece);
            let fresh = memset(va);
            let again = memset(va);
            let unmap = unmap_all(va, n, piece);
            let (map2, set2) = map_all(va, &hs, piece);
            let remapped = memset(va);
            unmap_all(va, n, piece);
            let t = Instant::now();
            for h in &hs {
                check("cuMemRelease", sys::cuMemRelease(*h));
            }
            let release = us(t, n);
            check("cuMemAddressFree", sys::cuMemAddressFree(va, total));
            println!(
                "| {} | {n} | {create:.1} | {map:.1} | {set:.1} | {fresh:.3} | {again:.3} | {unmap:.1} | {map2:.1} | {set2:.1} | {remapped:.3} | {release:.1} |",
                piece >> 20
            );
        }
    }
    // The stream-ordered allocator for the same bytes, twice (the second reuses).
    for round in 0..2 {
        // SAFETY: the allocation is freed below, after the memset completes.
        unsafe {
            let t = Instant::now();
            let p = result::malloc_async(stream, total).expect("cuMemAllocAsync");
            let alloc = us(t, 1);
            let set = memset(p);
            result::free_async(p, stream).expect("cuMemFreeAsync");
            check("sync", sys::cuStreamSynchronize(stream));
            println!("stream-ordered allocation {round}: alloc {alloc:.1} us, memset {set:.3} ms");
        }
    }
}
