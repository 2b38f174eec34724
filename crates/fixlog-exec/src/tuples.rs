//! The tuples a run hands back: [`Tuples`], row-major values in a [`RowStore`].
//!
//! A result may be larger than the machine's memory (the CPU backend spills runs to
//! files, see `fixlog_cpu::spill`), so its rows are not always a vector: a backend may
//! hand back storage it already holds — files mapped read-only, memory it keeps
//! charged to its budget — and even the relation's sorted runs as they are, unmerged
//! ([`RowStore::Runs`]). Readers take the rows in sorted order through
//! [`crate::merge::Merge`] ([`RowStore::runs`]), part by part, so they never need the
//! rows in memory at once; only code that changes the rows (the fact loader, tests
//! building inputs) gets a vector, copying (merging) a shared store first.

use crate::merge::{raw_order, Merge, Scratch};
use fixlog_logical::Value;
use std::borrow::Cow;
use std::sync::Arc;

/// Storage a backend keeps for a result's rows, read as one slice (a mapped file, or
/// memory the backend keeps accounted for).
pub trait SharedRows: Send + Sync + std::fmt::Debug {
    fn values(&self) -> &[Value];
    /// Whether the rows are in a file (mapped), not in memory.
    fn in_file(&self) -> bool {
        false
    }
    /// The reader is done with the first `values` values (reading in order): a store
    /// may let go of their memory (a mapped file drops its pages from the process),
    /// as long as they stay readable.
    fn release_before(&self, values: usize) {
        let _ = values;
    }
}

/// Row-major values: in a vector, in storage a backend shares, or as a relation's
/// sorted runs (see the module docs).
#[derive(Clone, Debug)]
pub enum RowStore {
    Owned(Vec<Value>),
    Shared(Arc<dyn SharedRows>),
    /// A relation's runs as the backend keeps them: each sorted (raw order: by `u32`
    /// value, column by column), disjoint from the others; the relation is their
    /// union, read in order by merging them ([`RowStore::runs`], [`Merge`]).
    Runs {
        arity: usize,
        runs: Vec<Arc<dyn SharedRows>>,
    },
}

impl RowStore {
    /// The sorted slices whose merge (in raw order) is the rows: the one slice of a
    /// vector or shared store, the non-empty runs of [`RowStore::Runs`].
    pub fn runs(&self) -> Vec<&[Value]> {
        match self {
            RowStore::Owned(v) => vec![&v[..]],
            RowStore::Shared(s) => vec![s.values()],
            RowStore::Runs { runs, .. } => runs
                .iter()
                .map(|r| r.values())
                .filter(|v| !v.is_empty())
                .collect(),
        }
    }

    /// The store behind each slice of [`RowStore::runs`], in the same order (`None`
    /// for a vector), to release what a reader is done with.
    pub fn holders(&self) -> Vec<Option<&dyn SharedRows>> {
        match self {
            RowStore::Owned(_) => vec![None],
            RowStore::Shared(s) => vec![Some(&**s)],
            RowStore::Runs { runs, .. } => runs
                .iter()
                .filter(|r| !r.values().is_empty())
                .map(|r| Some(&**r))
                .collect(),
        }
    }

    /// The rows as one slice, where they are one (not several runs).
    pub fn as_slice(&self) -> Option<&[Value]> {
        let runs = self.runs();
        match runs.len() {
            0 => Some(&[]),
            1 => Some(runs[0]),
            _ => None,
        }
    }

    /// Number of values.
    pub fn value_count(&self) -> usize {
        self.runs().iter().map(|r| r.len()).sum()
    }

    /// The rows in order as one slice: borrowed where they are one, else the runs
    /// merged into a vector. Running out of memory for that vector is an error.
    pub fn merged(&self) -> crate::ExecResult<Cow<'_, [Value]>> {
        if let Some(s) = self.as_slice() {
            return Ok(Cow::Borrowed(s));
        }
        let RowStore::Runs { arity, .. } = self else {
            return Err(crate::internal("a single store with several runs"));
        };
        let mut out = Vec::new();
        let values = self.value_count();
        out.try_reserve_exact(values).map_err(|_| {
            crate::ExecError::OutOfMemory(format!(
                "cannot allocate {} bytes for a relation's rows",
                values * std::mem::size_of::<Value>()
            ))
        })?;
        self.for_each_part(*arity, |part| {
            out.extend_from_slice(part);
            Ok(())
        })?;
        Ok(Cow::Owned(out))
    }

    /// Calls `f` with the rows in raw order, a bounded part at a time (for a single
    /// slice: the slice; `arity` is needed to merge runs).
    pub fn for_each_part(
        &self,
        arity: usize,
        mut f: impl FnMut(&[Value]) -> crate::ExecResult<()>,
    ) -> crate::ExecResult<()> {
        if let Some(s) = self.as_slice() {
            return f(s);
        }
        const PART_ROWS: usize = 1 << 16;
        let mut merge = Merge::new(arity, self.runs())?;
        let mut scratch = Scratch::default();
        while let Some(part) = merge.next_part(PART_ROWS, &raw_order) {
            f(part.merged(arity, &raw_order, &mut scratch)?)?;
        }
        Ok(())
    }

    /// The rows as a vector to change (a shared store is copied first, runs merged).
    pub fn to_mut(&mut self) -> &mut Vec<Value> {
        match self {
            RowStore::Owned(v) => v,
            other => {
                // Now a vector: the second call takes the first arm.
                *other = RowStore::Owned(std::mem::take(other).into_vec());
                other.to_mut()
            }
        }
    }

    /// The rows as a vector (a shared store is copied, runs merged).
    pub fn into_vec(self) -> Vec<Value> {
        match self {
            RowStore::Owned(v) => v,
            RowStore::Shared(s) => s.values().to_vec(),
            RowStore::Runs { arity, runs } => {
                merge_all(arity.max(1), runs.iter().map(|r| r.values()).collect())
            }
        }
    }

    /// Whether the rows live in storage a backend shares (a mapped file, or memory
    /// the backend accounts for), not in a vector of their own.
    pub fn is_shared(&self) -> bool {
        !matches!(self, RowStore::Owned(_))
    }

    /// Whether some of the rows are in a file (a run the backend spilled).
    pub fn in_files(&self) -> bool {
        match self {
            RowStore::Owned(_) => false,
            RowStore::Shared(s) => s.in_file(),
            RowStore::Runs { runs, .. } => runs.iter().any(|r| r.in_file()),
        }
    }

    /// The arity to merge with: that of [`RowStore::Runs`], else any (one slice).
    fn merge_arity(&self) -> usize {
        match self {
            RowStore::Runs { arity, .. } => (*arity).max(1),
            _ => 1,
        }
    }
}

impl Default for RowStore {
    fn default() -> Self {
        RowStore::Owned(Vec::new())
    }
}

impl From<Vec<Value>> for RowStore {
    fn from(v: Vec<Value>) -> Self {
        RowStore::Owned(v)
    }
}

/// The merge of sorted, disjoint `runs` into one vector (a vector's growth, as any
/// vector's: [`RowStore::merged`] is the fallible way).
fn merge_all(arity: usize, mut runs: Vec<&[Value]>) -> Vec<Value> {
    let mut out = Vec::with_capacity(runs.iter().map(|r| r.len()).sum());
    runs.retain(|r| !r.is_empty());
    while !runs.is_empty() {
        let mut min = 0;
        for r in 1..runs.len() {
            if runs[r][..arity] < runs[min][..arity] {
                min = r;
            }
        }
        out.extend_from_slice(&runs[min][..arity]);
        runs[min] = &runs[min][arity..];
        if runs[min].is_empty() {
            runs.remove(min);
        }
    }
    out
}

/// Whether two sequences of parts hold the same values (parts cut anywhere).
fn same_values(a: &RowStore, b: &RowStore) -> crate::ExecResult<bool> {
    if let (Some(x), Some(y)) = (a.as_slice(), b.as_slice()) {
        return Ok(x == y);
    }
    if a.value_count() != b.value_count() {
        return Ok(false);
    }
    // `a` part by part against `b` merged (at most one side is merged in memory
    // unless both are runs, which tests compare).
    let b_rows = b.merged()?;
    let mut at = 0;
    let mut same = true;
    a.for_each_part(a.merge_arity(), |part| {
        same = same && b_rows.get(at..at + part.len()) == Some(part);
        at += part.len();
        Ok(())
    })?;
    Ok(same && at == b_rows.len())
}

impl PartialEq for RowStore {
    /// The same rows in the same order (runs compared after merging them).
    fn eq(&self, other: &Self) -> bool {
        same_values(self, other).unwrap_or(false)
    }
}

impl Eq for RowStore {}

impl PartialEq<Vec<Value>> for RowStore {
    fn eq(&self, other: &Vec<Value>) -> bool {
        same_values(self, &RowStore::Owned(other.clone())).unwrap_or(false)
    }
}

/// Tuples of one relation, row-major.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tuples {
    pub arity: usize,
    /// Number of tuples (needed for arity 0, where `rows` is empty).
    pub len: usize,
    pub rows: RowStore,
}

impl Tuples {
    pub fn new(arity: usize) -> Tuples {
        Tuples {
            arity,
            len: 0,
            rows: RowStore::default(),
        }
    }

    pub fn push(&mut self, tuple: &[Value]) {
        debug_assert_eq!(tuple.len(), self.arity);
        self.rows.to_mut().extend_from_slice(tuple);
        self.len += 1;
    }

    /// Appends row-major values (a whole number of tuples; arity > 0).
    pub fn extend_rows(&mut self, rows: &[Value]) {
        debug_assert!(self.arity > 0 && rows.len().is_multiple_of(self.arity));
        self.rows.to_mut().extend_from_slice(rows);
        self.len += rows.len() / self.arity;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Fixed(Vec<Value>);
    impl SharedRows for Fixed {
        fn values(&self) -> &[Value] {
            &self.0
        }
    }

    #[test]
    fn a_shared_store_reads_as_its_values_and_copies_on_change() {
        let mut t = Tuples {
            arity: 2,
            len: 1,
            rows: RowStore::Shared(Arc::new(Fixed(vec![1, 2]))),
        };
        assert!(t.rows.is_shared());
        assert_eq!(t.rows, vec![1, 2]);
        t.push(&[3, 4]);
        assert!(!t.rows.is_shared());
        assert_eq!(t.rows.as_slice(), Some(&[1, 2, 3, 4][..]));
        assert_eq!(t.len, 2);
    }

    #[test]
    fn runs_read_as_their_merge() {
        let runs: Vec<Arc<dyn SharedRows>> = vec![
            Arc::new(Fixed(vec![1, 1, 3, 0, 7, 7])),
            Arc::new(Fixed(vec![])),
            Arc::new(Fixed(vec![2, 5, 4, 4])),
        ];
        let mut t = Tuples {
            arity: 2,
            len: 5,
            rows: RowStore::Runs { arity: 2, runs },
        };
        assert!(t.rows.is_shared() && !t.rows.in_files());
        assert_eq!(t.rows.as_slice(), None);
        let want = vec![1, 1, 2, 5, 3, 0, 4, 4, 7, 7];
        assert_eq!(t.rows.merged().unwrap().as_ref(), &want[..]);
        assert_eq!(t.rows, want);
        assert_eq!(
            t.clone(),
            Tuples {
                arity: 2,
                len: 5,
                rows: want.clone().into()
            }
        );
        assert_ne!(t.rows, vec![1, 1, 2, 5, 3, 0, 4, 4, 7, 8]);
        t.push(&[9, 9]);
        assert_eq!(t.rows.as_slice().unwrap()[8..], [7, 7, 9, 9]);
    }
}
