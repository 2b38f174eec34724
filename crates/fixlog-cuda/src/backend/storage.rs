//! The CUDA backend's data, all in device memory from the pool.
//!
//! - [`CudaRelation`]: disjoint sorted runs of rows (row-major `u32`), largest first,
//!   kept by the shared run policy (`fixlog_exec::runs`), so adding an iteration's
//!   delta costs O(|delta|) and a merge touches only the small runs. The runs are
//!   shared (`Rc`): cloning a relation, making it a delta, scanning it or indexing it
//!   in column order copies nothing.
//! - [`CudaIndex`]: the relation's runs in index order, each with its HISA hash table
//!   (`Gpu::hisa_table`) over the key prefix; an index in column order shares the
//!   relation's runs.
//! - [`CudaBatch`]: segments (views into shared row buffers) in no particular order:
//!   operators append to one buffer, a split cuts views, nothing is copied between
//!   operators.
//!
//! Arity 0 (relations that hold the empty tuple or nothing) has no words to store: a
//! run of arity 0 is a count with an empty buffer.
//!
//! A run's rows may move to pinned host memory mapped into the device (`HostBuf`)
//! when the device runs short (see `CudaBackend::make_room`): kernels keep reading
//! them, over the bus, through the same kind of address, so every operator works on
//! them unchanged. A move happens only between operators, never while one holds the
//! run's address.

use crate::gpu::{DevBuf, Gpu, HostBuf};
use crate::ops::View;
use crate::{HisaTable, Result};
use std::cell::RefCell;
use std::rc::Rc;

/// Where a run's rows are.
#[derive(Debug)]
pub(crate) enum RowsMem {
    Device(DevBuf),
    Host(HostBuf),
}

/// `n` rows in a buffer (which may be larger); the arity is the owner's.
#[derive(Debug)]
pub struct DevRows {
    mem: RefCell<RowsMem>,
    pub(crate) n: usize,
}

impl DevRows {
    pub(crate) fn device(buf: DevBuf, n: usize) -> DevRows {
        DevRows {
            mem: RefCell::new(RowsMem::Device(buf)),
            n,
        }
    }

    /// The rows' address as kernels use it (device memory, or mapped host memory).
    pub(crate) fn ptr(&self) -> u64 {
        match &*self.mem.borrow() {
            RowsMem::Device(b) => b.ptr(),
            RowsMem::Host(h) => h.dev_ptr(),
        }
    }

    pub(crate) fn view(&self, arity: usize) -> View {
        View {
            ptr: self.ptr(),
            n: self.n,
            arity,
        }
    }

    pub(crate) fn on_device(&self) -> bool {
        matches!(&*self.mem.borrow(), RowsMem::Device(_))
    }

    /// Whether the rows are in a buffer mapped piece by piece, whose memory a merge
    /// can give back as it passes them ([`Self::release_below`]).
    pub(crate) fn releasable(&self) -> bool {
        match &mut *self.mem.borrow_mut() {
            RowsMem::Device(b) => b.mapped_mut().is_some(),
            RowsMem::Host(_) => false,
        }
    }

    /// Device bytes the rows hold (0 once moved to the host).
    pub(crate) fn device_bytes(&self) -> usize {
        match &*self.mem.borrow() {
            RowsMem::Device(b) => b.capacity(),
            RowsMem::Host(_) => 0,
        }
    }

    /// The rows in a device buffer this caller owns (copied there from the host if
    /// they had moved).
    pub(crate) fn into_device(self, gpu: &Gpu, arity: usize) -> Result<DevBuf> {
        match self.mem.into_inner() {
            RowsMem::Device(b) => Ok(b),
            RowsMem::Host(h) => {
                let bytes = self.n * arity * 4;
                let b = gpu.alloc(bytes)?;
                gpu.dtod(b.ptr(), h.dev_ptr(), bytes)?;
                Ok(b)
            }
        }
    }

    /// Gives back the device memory of the first `bytes` bytes of rows where they are
    /// in a buffer mapped piece by piece (`crate::vmm`); nothing otherwise. Only for
    /// the rows' sole owner, once no kernel reads those rows any more (a merge that
    /// is past them).
    pub(crate) fn release_below(&self, bytes: usize) {
        if let RowsMem::Device(b) = &mut *self.mem.borrow_mut() {
            if let Some(m) = b.mapped_mut() {
                m.unmap_below(bytes);
            }
        }
    }

    /// Copies rows held in a pool block into a range mapped piece by piece (the block
    /// goes back to the pool), so that a merge can give their memory back as it
    /// passes them ([`Self::release_below`]); `false` where they are not in a pool
    /// block on the device or the device cannot map pieces. For the rows' sole owner.
    pub(crate) fn copy_to_pieces(&self, gpu: &Gpu, arity: usize) -> Result<bool> {
        let bytes = self.n * arity * 4;
        if bytes == 0 || !self.on_device() || self.releasable() {
            return Ok(false);
        }
        let Some(mut buf) = gpu.reserve_mapped(bytes)? else {
            return Ok(false);
        };
        if let Some(m) = buf.mapped_mut() {
            m.map(0, bytes)?;
        }
        gpu.dtod(buf.ptr(), self.ptr(), bytes)?;
        // The block goes back to the pool; work queued after the copy on the same
        // stream may reuse it only once the copy is done.
        *self.mem.borrow_mut() = RowsMem::Device(buf);
        Ok(true)
    }

    /// Moves the rows to mapped host memory, freeing their device memory.
    pub(crate) fn move_to_host(&self, gpu: &Gpu, arity: usize) -> Result<()> {
        if !self.on_device() {
            return Ok(());
        }
        let bytes = self.n * arity * 4;
        let host = gpu.alloc_host_mapped(bytes)?;
        gpu.dtoh_into(&host, self.ptr(), bytes)?;
        *self.mem.borrow_mut() = RowsMem::Host(host);
        Ok(())
    }
}

/// A relation on the device.
#[derive(Debug, Clone)]
pub struct CudaRelation {
    pub(crate) arity: usize,
    /// Disjoint sorted runs, largest first.
    pub(crate) runs: Vec<Rc<DevRows>>,
}

impl CudaRelation {
    pub(crate) fn empty(arity: usize) -> CudaRelation {
        CudaRelation {
            arity,
            runs: Vec::new(),
        }
    }
    pub fn len(&self) -> usize {
        self.runs.iter().map(|r| r.n).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn arity(&self) -> usize {
        self.arity
    }
    /// Number of runs (for tests and statistics).
    pub fn run_count(&self) -> usize {
        self.runs.len()
    }
}

/// One run of an index: rows in index order and, when the key is not empty, the hash
/// table over the key prefix.
pub(crate) struct IndexRun {
    pub(crate) rows: Rc<DevRows>,
    pub(crate) table: Option<HisaTable>,
}

/// An index on the device.
pub struct CudaIndex {
    pub(crate) arity: usize,
    /// `order[p]`: the relation column stored at position `p` of a row.
    pub(crate) order: Vec<usize>,
    pub(crate) key_len: usize,
    pub(crate) identity: bool,
    pub(crate) runs: Vec<IndexRun>,
}

impl CudaIndex {
    pub fn len(&self) -> usize {
        self.runs.iter().map(|r| r.rows.n).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn run_count(&self) -> usize {
        self.runs.len()
    }
}

/// A view of `n` rows starting at row `start` of a shared buffer.
#[derive(Debug, Clone)]
pub(crate) struct Seg {
    pub(crate) rows: Rc<DevRows>,
    pub(crate) start: usize,
    pub(crate) n: usize,
}

/// A batch on the device: segments in batch order.
#[derive(Debug, Clone)]
pub struct CudaBatch {
    pub(crate) arity: usize,
    pub(crate) len: usize,
    /// Empty for arity 0 (there are no words; `len` says how many tuples).
    pub(crate) segs: Vec<Seg>,
    /// The batch is a relation's only run, whole (`relation_batch`): its rows are
    /// sorted and unique already, so sorting them gives the relation back, shared (no
    /// copy: a delta scanned as it is before it is cut into pieces). A relation of
    /// several runs is sorted into one: pieces cut from runs side by side would not
    /// hold disjoint ranges of the first column (sharing those raised SG
    /// loc-Brightkite's peak from 1.51 to 1.66 GiB, round 23).
    pub(crate) one_run: bool,
}

impl CudaBatch {
    pub(crate) fn empty(arity: usize) -> CudaBatch {
        CudaBatch {
            arity,
            len: 0,
            segs: Vec::new(),
            one_run: false,
        }
    }

    /// A batch of `n` rows of `arity` held by `rows`.
    pub(crate) fn from_rows(arity: usize, rows: DevRows) -> CudaBatch {
        let n = rows.n;
        CudaBatch::from_shared(arity, vec![Rc::new(rows)], n)
    }

    /// A batch of whole shared buffers (arity 0: `len` tuples and no buffers needed).
    pub(crate) fn from_shared(arity: usize, rows: Vec<Rc<DevRows>>, len: usize) -> CudaBatch {
        if arity == 0 {
            return CudaBatch {
                arity,
                len,
                segs: Vec::new(),
                one_run: false,
            };
        }
        let segs: Vec<Seg> = rows
            .into_iter()
            .filter(|r| r.n > 0)
            .map(|r| {
                let n = r.n;
                Seg {
                    rows: r,
                    start: 0,
                    n,
                }
            })
            .collect();
        let len = segs.iter().map(|s| s.n).sum();
        CudaBatch {
            arity,
            len,
            segs,
            one_run: false,
        }
    }

    /// The batch of a relation's rows (its runs, shared).
    pub(crate) fn of_relation(rel: &CudaRelation) -> CudaBatch {
        let mut batch = CudaBatch::from_shared(rel.arity, rel.runs.clone(), rel.len());
        batch.one_run = rel.arity > 0 && batch.segs.len() == 1;
        batch
    }

    /// The relation whose only run this batch is, whole, where it is one (`one_run`).
    pub(crate) fn as_relation(&self) -> Option<CudaRelation> {
        match &self.segs[..] {
            [seg] if self.one_run && seg.start == 0 && seg.n == seg.rows.n => Some(CudaRelation {
                arity: self.arity,
                runs: vec![seg.rows.clone()],
            }),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn arity(&self) -> usize {
        self.arity
    }

    /// `(device address, rows)` of each piece of the batch; for arity 0, one piece of
    /// `len` rows at address 0 (kernels read no words).
    pub(crate) fn pieces(&self) -> Vec<(u64, usize)> {
        if self.arity == 0 {
            return if self.len > 0 {
                vec![(0, self.len)]
            } else {
                Vec::new()
            };
        }
        self.segs
            .iter()
            .map(|s| (s.rows.ptr() + (s.start * self.arity * 4) as u64, s.n))
            .collect()
    }

    /// The first `rows` rows and the rest (views; nothing is copied).
    pub(crate) fn split_at(self, rows: usize) -> (CudaBatch, CudaBatch) {
        let arity = self.arity;
        if rows >= self.len {
            return (self, CudaBatch::empty(arity));
        }
        if arity == 0 {
            let head = CudaBatch {
                arity,
                len: rows,
                segs: Vec::new(),
                one_run: false,
            };
            let tail = CudaBatch {
                arity,
                len: self.len - rows,
                segs: Vec::new(),
                one_run: false,
            };
            return (head, tail);
        }
        let (mut head, mut tail) = (Vec::new(), Vec::new());
        let mut taken = 0;
        for seg in self.segs {
            if taken >= rows {
                tail.push(seg);
            } else if taken + seg.n <= rows {
                taken += seg.n;
                head.push(seg);
            } else {
                let k = rows - taken;
                taken = rows;
                head.push(Seg {
                    rows: seg.rows.clone(),
                    start: seg.start,
                    n: k,
                });
                tail.push(Seg {
                    rows: seg.rows,
                    start: seg.start + k,
                    n: seg.n - k,
                });
            }
        }
        let batch = |segs: Vec<Seg>| {
            let len = segs.iter().map(|s| s.n).sum();
            CudaBatch {
                arity,
                len,
                segs,
                one_run: false,
            }
        };
        (batch(head), batch(tail))
    }
}
