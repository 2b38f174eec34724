//! The tuples a run hands back: [`Tuples`], row-major values in a [`RowStore`].
//!
//! A result may be larger than the machine's memory (the CPU backend spills runs to
//! files, see `fixlog_cpu::spill`), so its rows are not always a vector: a backend may
//! hand back storage it already holds — a file mapped read-only — as long as it reads
//! as one slice. Writers and readers take `&[Value]` (through `Deref`) and never need
//! the rows in memory at once; only code that changes the rows (the fact loader,
//! tests building inputs) gets a vector, copying a shared store first.

use fixlog_logical::Value;
use std::sync::Arc;

/// Storage a backend keeps for a result's rows, read as one slice (a mapped file).
pub trait SharedRows: Send + Sync + std::fmt::Debug {
    fn values(&self) -> &[Value];
}

/// Row-major values: in a vector, or in storage a backend shares (see the module docs).
#[derive(Clone, Debug)]
pub enum RowStore {
    Owned(Vec<Value>),
    Shared(Arc<dyn SharedRows>),
}

impl RowStore {
    /// The rows as a vector to change (a shared store is copied first).
    pub fn to_mut(&mut self) -> &mut Vec<Value> {
        if let RowStore::Shared(s) = self {
            *self = RowStore::Owned(s.values().to_vec());
        }
        match self {
            RowStore::Owned(v) => v,
            RowStore::Shared(_) => unreachable!("replaced by a vector above"),
        }
    }

    /// The rows as a vector (a shared store is copied).
    pub fn into_vec(self) -> Vec<Value> {
        match self {
            RowStore::Owned(v) => v,
            RowStore::Shared(s) => s.values().to_vec(),
        }
    }

    /// Whether the rows live in storage a backend shares (a mapped file).
    pub fn is_shared(&self) -> bool {
        matches!(self, RowStore::Shared(_))
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

impl std::ops::Deref for RowStore {
    type Target = [Value];
    fn deref(&self) -> &[Value] {
        match self {
            RowStore::Owned(v) => v,
            RowStore::Shared(s) => s.values(),
        }
    }
}

impl PartialEq for RowStore {
    fn eq(&self, other: &Self) -> bool {
        self[..] == other[..]
    }
}

impl Eq for RowStore {}

impl PartialEq<Vec<Value>> for RowStore {
    fn eq(&self, other: &Vec<Value>) -> bool {
        self[..] == other[..]
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
        assert_eq!(&t.rows[..], &[1, 2, 3, 4]);
        assert_eq!(t.len, 2);
    }
}
