//! Device memory pool.
//!
//! Requests are rounded up to geometric size classes (four per octave, so at
//! most 25% slack) and freed blocks are kept per class for reuse: a relation
//! that grows by a few percent per iteration lands in the same class, and a
//! steady-state loop performs no device allocation at all (`raw_allocs`
//! stops moving). The pool tracks bytes in use, bytes cached, and the
//! high-water mark of bytes held from the device, and honours a byte limit:
//! a request beyond it first releases cached blocks, and if still too large
//! returns [`CudaError::OutOfMemory`] instead of crashing.
//!
//! Where the allocator underneath caches by itself (the driver's stream-ordered
//! allocator, which reuses freed memory across sizes without synchronising), the pool
//! keeps no cache ([`PoolCore::new`]'s `cache`), asks for the bytes requested (rounded
//! to 512 B, not to a size class: up to 25% of a relation's memory would be slack)
//! and only accounts and enforces the limit. Memory the pool does not allocate but
//! must count against the limit (the physical pieces of a merge's output mapped
//! piece by piece, `crate::vmm`) is accounted with [`PoolCore::reserve_external`]. Otherwise its cache is bounded: beyond [`CACHE_FLOOR`] bytes it holds at
//! most a quarter of the bytes in use, so memory a run no longer needs goes back to
//! the device instead of inflating what the process holds.
//!
//! The bookkeeping ([`PoolCore`]) is generic over a [`RawAlloc`] so it is
//! unit-tested without a device.

use crate::error::{CudaError, Result};
use std::collections::BTreeMap;

/// Raw device allocator underneath the pool.
pub trait RawAlloc {
    /// Allocate `bytes` bytes; an error means the device itself is out of memory.
    fn alloc(&mut self, bytes: usize) -> Result<u64>;
    fn free(&mut self, ptr: u64, bytes: usize);
}

/// The cache may always hold this many bytes (see the module docs).
pub const CACHE_FLOOR: usize = 256 << 20;
/// Beyond the floor, the cache holds at most `in use / CACHE_SHARE` bytes.
pub const CACHE_SHARE: usize = 4;

/// Smallest geometric size class holding `bytes` (min 256 B).
pub fn size_class(bytes: usize) -> usize {
    let b = bytes.max(256);
    let p = b.next_power_of_two();
    if p == b {
        return p;
    }
    let half = p / 2;
    for q in [5usize, 6, 7] {
        let c = half / 4 * q;
        if c >= b {
            return c;
        }
    }
    p
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub in_use: usize,
    pub cached: usize,
    /// Most bytes held from the device at once (in use and cached).
    pub high_water: usize,
    /// Most bytes in use at once.
    pub peak_in_use: usize,
    pub raw_allocs: u64,
    pub raw_frees: u64,
    pub reuses: u64,
    pub limit: usize,
    /// Requests refused for want of memory (under the limit or on the device): an
    /// operator ran out, which the backend answers by making room before the next.
    pub refusals: u64,
}

pub struct PoolCore<A: RawAlloc> {
    raw: A,
    free: BTreeMap<usize, Vec<u64>>,
    stats: PoolStats,
    /// Keep released blocks for reuse (false: `raw` caches by itself).
    cache: bool,
}

impl<A: RawAlloc> PoolCore<A> {
    pub fn new(raw: A, limit: usize, cache: bool) -> Self {
        PoolCore {
            raw,
            free: BTreeMap::new(),
            stats: PoolStats {
                limit,
                ..Default::default()
            },
            cache,
        }
    }

    /// Starts the high-water marks afresh (at the bytes held and in use now).
    pub fn reset_peaks(&mut self) {
        self.stats.high_water = self.stats.in_use + self.stats.cached;
        self.stats.peak_in_use = self.stats.in_use;
    }

    pub fn stats(&self) -> PoolStats {
        self.stats
    }

    /// Change the limit; cached blocks beyond it are freed.
    pub fn set_limit(&mut self, limit: usize) {
        self.stats.limit = limit;
        self.release_cached_until(limit);
    }

    /// Allocate a block of at least `bytes`; returns (pointer, class size).
    pub fn alloc(&mut self, bytes: usize) -> Result<(u64, usize)> {
        let class = if self.cache {
            size_class(bytes)
        } else {
            bytes.max(1).next_multiple_of(512)
        };
        let oom = |s: &PoolStats, device| CudaError::OutOfMemory {
            requested: bytes,
            in_use: s.in_use,
            limit: s.limit,
            device,
        };
        if self.stats.in_use + class > self.stats.limit {
            self.stats.refusals += 1;
            return Err(oom(&self.stats, false));
        }
        if let Some(list) = self.free.get_mut(&class) {
            if let Some(p) = list.pop() {
                if list.is_empty() {
                    self.free.remove(&class);
                }
                self.stats.cached -= class;
                self.stats.in_use += class;
                self.stats.peak_in_use = self.stats.peak_in_use.max(self.stats.in_use);
                self.stats.reuses += 1;
                return Ok((p, class));
            }
        }
        if self.stats.in_use + self.stats.cached + class > self.stats.limit {
            self.release_cached_until(self.stats.limit - class);
        }
        let p = match self.raw.alloc(class) {
            Ok(p) => p,
            Err(_) => {
                self.release_cached_until(0);
                match self.raw.alloc(class) {
                    Ok(p) => p,
                    Err(_) => {
                        self.stats.refusals += 1;
                        return Err(oom(&self.stats, true));
                    }
                }
            }
        };
        self.stats.raw_allocs += 1;
        self.stats.in_use += class;
        self.stats.peak_in_use = self.stats.peak_in_use.max(self.stats.in_use);
        let held = self.stats.in_use + self.stats.cached;
        self.stats.high_water = self.stats.high_water.max(held);
        Ok((p, class))
    }

    /// Counts `bytes` the caller allocates itself as in use (an error, counting
    /// nothing, where they would pass the limit).
    pub fn reserve_external(&mut self, bytes: usize) -> Result<()> {
        if self.stats.in_use + bytes > self.stats.limit {
            self.release_cached_until(self.stats.limit.saturating_sub(bytes));
        }
        if self.stats.in_use + bytes > self.stats.limit {
            self.stats.refusals += 1;
            return Err(CudaError::OutOfMemory {
                requested: bytes,
                in_use: self.stats.in_use,
                limit: self.stats.limit,
                device: false,
            });
        }
        self.stats.in_use += bytes;
        self.stats.peak_in_use = self.stats.peak_in_use.max(self.stats.in_use);
        let held = self.stats.in_use + self.stats.cached;
        self.stats.high_water = self.stats.high_water.max(held);
        Ok(())
    }

    /// Stops counting `bytes` given to [`reserve_external`](Self::reserve_external).
    /// Counts a request refused by an allocator outside the pool (the physical pieces
    /// of `crate::vmm`) in [`PoolStats::refusals`].
    pub fn note_refusal(&mut self) {
        self.stats.refusals += 1;
    }

    pub fn release_external(&mut self, bytes: usize) {
        self.stats.in_use = self.stats.in_use.saturating_sub(bytes);
    }

    /// Return a block obtained from [`alloc`](Self::alloc) to the cache.
    pub fn release(&mut self, ptr: u64, class: usize) {
        self.stats.in_use -= class;
        if !self.cache {
            self.raw.free(ptr, class);
            self.stats.raw_frees += 1;
            return;
        }
        self.stats.cached += class;
        self.free.entry(class).or_default().push(ptr);
        let cap = CACHE_FLOOR.max(self.stats.in_use / CACHE_SHARE);
        if self.stats.cached > cap {
            self.release_cached_until(self.stats.in_use + cap);
        }
    }

    /// Free cached blocks (largest first) until in_use + cached <= target.
    pub fn release_cached_until(&mut self, target: usize) {
        while self.stats.in_use + self.stats.cached > target {
            let Some((&class, _)) = self.free.iter().next_back() else {
                break;
            };
            let list = self.free.get_mut(&class).unwrap();
            let p = list.pop().unwrap();
            if list.is_empty() {
                self.free.remove(&class);
            }
            self.raw.free(p, class);
            self.stats.cached -= class;
            self.stats.raw_frees += 1;
        }
    }

    /// Free every cached block.
    pub fn trim(&mut self) {
        self.release_cached_until(0);
    }

    pub fn raw_mut(&mut self) -> &mut A {
        &mut self.raw
    }
}

impl<A: RawAlloc> Drop for PoolCore<A> {
    fn drop(&mut self) {
        self.trim();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fake device with a capacity, handing out increasing addresses.
    struct Fake {
        next: u64,
        live: usize,
        cap: usize,
    }
    impl RawAlloc for Fake {
        fn alloc(&mut self, bytes: usize) -> Result<u64> {
            if self.live + bytes > self.cap {
                return Err(CudaError::Invalid("fake oom".into()));
            }
            self.live += bytes;
            self.next += bytes as u64;
            Ok(self.next)
        }
        fn free(&mut self, _ptr: u64, bytes: usize) {
            self.live -= bytes;
        }
    }

    fn pool(limit: usize, cap: usize) -> PoolCore<Fake> {
        PoolCore::new(
            Fake {
                next: 0,
                live: 0,
                cap,
            },
            limit,
            true,
        )
    }

    #[test]
    fn without_a_cache_blocks_go_back_at_once_and_the_limit_holds() {
        let fake = Fake {
            next: 0,
            live: 0,
            cap: 1 << 30,
        };
        let mut p = PoolCore::new(fake, 1 << 20, false);
        let a = p.alloc(300_000).unwrap();
        let b = p.alloc(300_000).unwrap();
        assert!(p.alloc(600_000).is_err(), "over the limit");
        p.release(a.0, a.1);
        assert_eq!(p.stats().cached, 0);
        assert_eq!(p.raw_mut().live, b.1);
        let c = p.alloc(600_000).unwrap();
        assert_eq!(p.stats().peak_in_use, b.1 + c.1);
        p.release(b.0, b.1);
        p.release(c.0, c.1);
        assert_eq!(p.raw_mut().live, 0);
        p.reset_peaks();
        assert_eq!(p.stats().peak_in_use, 0);
    }

    #[test]
    fn classes_are_geometric_and_tight() {
        assert_eq!(size_class(0), 256);
        assert_eq!(size_class(256), 256);
        assert_eq!(size_class(257), 320);
        assert_eq!(size_class(1000), 1024);
        for b in [300usize, 5000, 123_456, 10_000_000, 3 << 30] {
            let c = size_class(b);
            assert!(c >= b && (c as f64) <= b as f64 * 1.25 + 1.0, "{b} -> {c}");
        }
        let mut prev = 0;
        for b in (1..100_000).step_by(97) {
            let c = size_class(b);
            assert!(c >= prev || size_class(b - 1) <= c);
            prev = c;
        }
    }

    #[test]
    fn reuse_means_no_allocation_in_steady_state() {
        let mut p = pool(1 << 30, 1 << 30);
        for round in 0..10 {
            let mut held = vec![];
            for k in 0..5 {
                // sizes that wobble a little around round-dependent values
                held.push(p.alloc(1_000_000 + k * 10 + round).unwrap());
            }
            for (ptr, c) in held {
                p.release(ptr, c);
            }
            if round == 0 {
                assert_eq!(p.stats().raw_allocs, 5);
            }
        }
        let s = p.stats();
        assert_eq!(s.raw_allocs, 5);
        assert_eq!(s.reuses, 45);
        assert_eq!(s.in_use, 0);
        assert_eq!(s.high_water, 5 * size_class(1_000_000));
    }

    #[test]
    fn limit_is_an_error_not_a_crash() {
        let mut p = pool(10_000, 1 << 30);
        let a = p.alloc(4096).unwrap();
        assert_eq!(p.stats().refusals, 0);
        let e = p.alloc(8192).unwrap_err();
        assert!(matches!(e, CudaError::OutOfMemory { device: false, .. }));
        assert_eq!(p.stats().refusals, 1);
        p.release(a.0, a.1);
        // cached block is released to make room for a different class
        let b = p.alloc(8192).unwrap();
        assert_eq!(p.stats().cached, 0);
        assert_eq!(p.stats().raw_frees, 1);
        p.release(b.0, b.1);
        assert!(p.stats().high_water <= 10_000);
    }

    #[test]
    fn lowered_limit_applies_to_cached_blocks_too() {
        let mut p = pool(1 << 20, 1 << 30);
        let a = p.alloc(4096).unwrap();
        let b = p.alloc(4096).unwrap();
        p.release(b.0, b.1);
        p.set_limit(4096);
        assert_eq!(p.stats().cached, 0);
        assert!(p.alloc(4096).is_err());
        p.release(a.0, a.1);
    }

    #[test]
    fn the_cache_is_bounded_by_the_bytes_in_use() {
        let mut p = pool(usize::MAX / 2, usize::MAX / 2);
        let big = 64 << 20;
        // Twelve big blocks in use, then ten released: the cache keeps what the floor
        // allows (in use / 4 is less), the rest goes back to the device.
        let held: Vec<_> = (0..12).map(|_| p.alloc(big).unwrap()).collect();
        for &(ptr, c) in &held[..10] {
            p.release(ptr, c);
        }
        let s = p.stats();
        assert_eq!(s.in_use, 2 * size_class(big));
        assert!(s.cached <= CACHE_FLOOR, "{} cached", s.cached);
        assert!(s.raw_frees > 0);
        assert_eq!(s.peak_in_use, 12 * size_class(big));
        for &(ptr, c) in &held[10..] {
            p.release(ptr, c);
        }
    }

    #[test]
    fn device_oom_trims_cache_then_reports() {
        let mut p = pool(usize::MAX / 2, 10_000);
        let a = p.alloc(4096).unwrap();
        p.release(a.0, a.1);
        let b = p.alloc(8192).unwrap(); // needs the cached 4096 freed on the device
        assert_eq!(p.stats().raw_frees, 1);
        let e = p.alloc(4096).unwrap_err();
        assert!(matches!(e, CudaError::OutOfMemory { device: true, .. }));
        assert_eq!(p.stats().refusals, 1);
        p.release(b.0, b.1);
    }

    #[test]
    fn without_a_cache_requests_are_not_rounded_to_classes() {
        let mut p = PoolCore::new(
            Fake {
                next: 0,
                live: 0,
                cap: usize::MAX / 2,
            },
            1 << 30,
            false,
        );
        let big = (100 << 20) + 8; // a size class would add up to 25%
        let a = p.alloc(big).unwrap();
        assert_eq!(a.1, big.next_multiple_of(512));
        assert_eq!(p.stats().in_use, a.1);
        p.release(a.0, a.1);
        assert_eq!((p.stats().in_use, p.stats().cached), (0, 0));
    }

    #[test]
    fn external_bytes_count_against_the_limit() {
        let mut p = pool(1 << 20, 1 << 30);
        let a = p.alloc(1 << 19).unwrap();
        p.reserve_external(1 << 18).unwrap();
        assert_eq!(p.stats().in_use, (1 << 19) + (1 << 18));
        assert!(matches!(
            p.reserve_external(1 << 19),
            Err(CudaError::OutOfMemory { .. })
        ));
        assert_eq!(p.stats().in_use, (1 << 19) + (1 << 18));
        assert_eq!(p.stats().refusals, 1);
        p.release_external(1 << 18);
        p.release(a.0, a.1);
        assert_eq!(p.stats().in_use, 0);
        assert_eq!(p.stats().peak_in_use, (1 << 19) + (1 << 18));
    }
}
