//! The CPU backend's memory budget: the bytes held by relations, indexes and batches
//! (and the scratch space of sorts and merges while they run), counted per allocation.
//!
//! Every large allocation of the backend goes through [`try_zeroed`] or
//! [`try_with_capacity`] (or grows a batch segment through [`grow`]): the bytes are
//! first charged against the run's [`Budget`] — an error if that would pass the limit
//! (`--memory-limit`) — and then allocated with `try_reserve_exact`, so that an
//! allocation the system refuses is an error too, never an abort. Either error is
//! [`ExecError::OutOfMemory`]; the driver adds the relation and its size. The
//! [`Charge`] travels with the data and gives the bytes back when it is dropped.
//!
//! The budget of a run is set on each thread of the run's thread pool
//! ([`crate::run`]); elsewhere (the CUDA backend's host work, tests calling operators
//! directly) there is none and nothing is counted, but allocations stay fallible.

use fixlog_exec::{ExecError, ExecResult};
use fixlog_logical::Value;
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The bytes a run may hold and holds.
#[derive(Debug)]
pub struct Budget {
    limit: Option<usize>,
    used: AtomicUsize,
    peak: AtomicUsize,
}

impl Budget {
    /// A budget of `limit` bytes (`None`: unlimited, only counted).
    pub fn new(limit: Option<usize>) -> Arc<Budget> {
        Arc::new(Budget {
            limit,
            used: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        })
    }

    pub fn limit(&self) -> Option<usize> {
        self.limit
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The most bytes held at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Starts counting the peak again from the bytes held now (to measure a phase,
    /// such as writing the outputs after a run).
    pub fn reset_peak(&self) {
        self.peak.store(self.used(), Ordering::Relaxed);
    }

    fn try_take(&self, bytes: usize) -> ExecResult<()> {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let new = used.saturating_add(bytes);
            if let Some(limit) = self.limit.filter(|&l| new > l) {
                return Err(ExecError::OutOfMemory(format!(
                    "the memory limit of {} would be passed ({} held, {} more needed)",
                    size(limit),
                    size(used),
                    size(bytes)
                )));
            }
            match self
                .used
                .compare_exchange_weak(used, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.peak.fetch_max(new, Ordering::Relaxed);
                    return Ok(());
                }
                Err(now) => used = now,
            }
        }
    }

    fn force_take(&self, bytes: usize) {
        let new = self.used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(new, Ordering::Relaxed);
    }

    fn give_back(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// `123 bytes`, `1.5 MiB`, `2.0 GiB`.
pub fn size(bytes: usize) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b < KIB {
        format!("{bytes} bytes")
    } else if b < KIB * KIB {
        format!("{:.1} KiB", b / KIB)
    } else if b < KIB * KIB * KIB {
        format!("{:.1} MiB", b / (KIB * KIB))
    } else {
        format!("{:.1} GiB", b / (KIB * KIB * KIB))
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Budget>>> = const { RefCell::new(None) };
}

/// Sets the budget allocations on this thread are charged to.
pub fn set_current(budget: Option<Arc<Budget>>) {
    CURRENT.with(|c| *c.borrow_mut() = budget);
}

/// The budget allocations on this thread are charged to, if any.
pub fn current() -> Option<Arc<Budget>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Bytes charged to a budget while this is held; given back when it is dropped. A
/// clone charges the same bytes again (without a check: the next fallible allocation
/// sees them).
#[derive(Debug, Default)]
pub struct Charge {
    budget: Option<Arc<Budget>>,
    bytes: usize,
}

impl Charge {
    /// No bytes.
    pub fn none() -> Charge {
        Charge::default()
    }

    /// Charges `bytes` to the current thread's budget.
    pub fn try_new(bytes: usize) -> ExecResult<Charge> {
        let budget = current();
        if let Some(b) = &budget {
            b.try_take(bytes)?;
        }
        Ok(Charge { budget, bytes })
    }

    /// Charges `bytes` to `budget` (nothing is counted without one): an error if that
    /// would pass its limit.
    pub fn try_in(budget: Option<&Arc<Budget>>, bytes: usize) -> ExecResult<Charge> {
        if let Some(b) = budget {
            b.try_take(bytes)?;
        }
        Ok(Charge {
            budget: budget.cloned(),
            bytes,
        })
    }

    /// Counts `bytes` held in `budget` whatever its limit (memory already allocated,
    /// whose size was only known afterwards).
    pub fn force_in(budget: Option<&Arc<Budget>>, bytes: usize) -> Charge {
        if let Some(b) = budget {
            b.force_take(bytes);
        }
        Charge {
            budget: budget.cloned(),
            bytes,
        }
    }

    /// Charges `bytes` more.
    pub fn try_grow(&mut self, bytes: usize) -> ExecResult<()> {
        if self.budget.is_none() {
            self.budget = current();
        }
        if let Some(b) = &self.budget {
            b.try_take(bytes)?;
        }
        self.bytes += bytes;
        Ok(())
    }

    /// Takes over `other`'s bytes (data moved from one holder to another).
    pub fn absorb(&mut self, mut other: Charge) {
        if other.bytes == 0 {
            return;
        }
        match (&self.budget, &other.budget) {
            (None, _) => {
                self.budget = other.budget.take();
                self.bytes += std::mem::take(&mut other.bytes);
            }
            (Some(a), Some(b)) if Arc::ptr_eq(a, b) => {
                self.bytes += std::mem::take(&mut other.bytes);
            }
            // Different budgets: `other` gives its bytes back when dropped.
            _ => {}
        }
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Clone for Charge {
    fn clone(&self) -> Charge {
        if let Some(b) = &self.budget {
            b.force_take(self.bytes);
        }
        Charge {
            budget: self.budget.clone(),
            bytes: self.bytes,
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Some(b) = &self.budget {
            b.give_back(self.bytes);
        }
    }
}

const VALUE: usize = std::mem::size_of::<Value>();

/// The error of an allocation the system refused.
pub fn refused(bytes: usize) -> ExecError {
    ExecError::OutOfMemory(format!("cannot allocate {}", size(bytes)))
}

/// An empty vector with room for `n` values, charged.
pub fn try_with_capacity(n: usize) -> ExecResult<(Vec<Value>, Charge)> {
    let bytes = n.saturating_mul(VALUE);
    let charge = Charge::try_new(bytes)?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| refused(bytes))?;
    Ok((v, charge))
}

/// `n` zeros, charged. Allocated zeroed, as `vec![0; n]` is (large blocks come zeroed
/// from the system: no pass over the memory), but failing instead of aborting.
pub fn try_zeroed(n: usize) -> ExecResult<(Vec<Value>, Charge)> {
    let bytes = n.saturating_mul(VALUE);
    let charge = Charge::try_new(bytes)?;
    if n == 0 {
        return Ok((Vec::new(), charge));
    }
    let layout = std::alloc::Layout::array::<Value>(n).map_err(|_| refused(bytes))?;
    // SAFETY: `layout` has a non-zero size (n > 0, Value is 4 bytes).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut Value;
    if ptr.is_null() {
        return Err(refused(bytes));
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of `n`
    // values (the layout a `Vec<Value>` of capacity `n` uses), and all `n` are
    // initialised (zero is a valid `u32`).
    let v = unsafe { Vec::from_raw_parts(ptr, n, n) };
    Ok((v, charge))
}

/// A vector of `n` copies of `x` of any type (scratch: indices, hash slots), charged.
pub fn try_filled<T: Clone>(n: usize, x: T) -> ExecResult<(Vec<T>, Charge)> {
    let bytes = n.saturating_mul(std::mem::size_of::<T>());
    let charge = Charge::try_new(bytes)?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| refused(bytes))?;
    v.resize(n, x);
    Ok((v, charge))
}

/// A charged copy of `data`.
pub fn try_copy(data: &[Value]) -> ExecResult<(Vec<Value>, Charge)> {
    let (mut v, charge) = try_with_capacity(data.len())?;
    v.extend_from_slice(data);
    Ok((v, charge))
}

/// Makes room in `out` for at least `more` values, doubling (at least 256 values), and
/// charges the growth to `charge`. Call it when `out.capacity() - out.len() < more`:
/// pushes within the room never allocate.
#[cold]
pub fn grow(out: &mut Vec<Value>, charge: &mut Charge, more: usize) -> ExecResult<()> {
    let want = out
        .len()
        .saturating_add(more)
        .max(out.capacity().saturating_mul(2))
        .max(256);
    let extra = want - out.len();
    let before = out.capacity();
    let grown_by = want.saturating_sub(before);
    charge.try_grow(grown_by.saturating_mul(VALUE))?;
    if out.try_reserve_exact(extra).is_err() {
        return Err(refused(grown_by.saturating_mul(VALUE)));
    }
    // The allocator may give more than asked; count what is held.
    let real = out.capacity().saturating_sub(before);
    if real > grown_by {
        charge.try_grow((real - grown_by) * VALUE)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_counted_and_given_back() {
        let b = Budget::new(Some(1000));
        set_current(Some(b.clone()));
        let (v, c) = try_zeroed(100).unwrap();
        assert_eq!((v.len(), b.used()), (100, 400));
        let err = try_zeroed(200).unwrap_err();
        assert!(
            err.to_string()
                .contains("the memory limit of 1000 bytes would be passed"),
            "{err}"
        );
        let c2 = c.clone();
        assert_eq!(b.used(), 800);
        drop((c, c2));
        assert_eq!(b.used(), 0);
        assert_eq!(b.peak(), 800);
        let mut out = Vec::new();
        let mut charge = Charge::none();
        assert!(
            grow(&mut out, &mut charge, 10).is_err(),
            "256 values > 1000 bytes"
        );
        assert_eq!(b.used(), 0);
        // Without a budget nothing is counted (a charge keeps the budget it started with).
        set_current(None);
        let mut charge = Charge::none();
        grow(&mut out, &mut charge, 10).unwrap();
        assert!(out.capacity() >= 256);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn a_refused_allocation_is_an_error() {
        set_current(None);
        let err = try_zeroed(usize::MAX / 8).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("out of memory: cannot allocate"),
            "{err}"
        );
    }
}
