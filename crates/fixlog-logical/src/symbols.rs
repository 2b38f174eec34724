//! Interning of `symbol` values to dense `u32` ids.
//!
//! Ids are handed out in first-seen order. The table is shared by the loader, the
//! evaluator (functors such as `cat` make new symbols while rules run, possibly on many
//! threads) and the writer, so interning takes `&self`; look-ups of existing symbols
//! take only a read lock, and the common path of a join never touches the table.
//!
//! The table also holds the run's [`RecordTable`] (records and ADT values): it is
//! shared with exactly the same parts of a run, for the same reasons.

use crate::records::RecordTable;
use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

#[derive(Default, Debug)]
struct Inner {
    strings: Vec<Arc<str>>,
    ids: HashMap<Arc<str>, u32>,
}

/// The implementation of a user-defined functor: its arguments (32-bit values as the
/// declaration's types say) to its result, or `None` where it fails (the rule does not
/// fire for that tuple).
pub type FunctorFn = dyn Fn(&[u32], &SymbolTable) -> Option<u32> + Send + Sync;

#[derive(Default)]
pub struct SymbolTable {
    inner: RwLock<Inner>,
    records: RecordTable,
    /// The user-defined functors' implementations, by `Functor::User` index.
    functors: Vec<Arc<FunctorFn>>,
}

impl std::fmt::Debug for SymbolTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymbolTable")
            .field("inner", &self.inner)
            .field("records", &self.records)
            .field("functors", &self.functors.len())
            .finish()
    }
}

impl Clone for SymbolTable {
    fn clone(&self) -> SymbolTable {
        let inner = self.read();
        SymbolTable {
            inner: RwLock::new(Inner {
                strings: inner.strings.clone(),
                ids: inner.ids.clone(),
            }),
            records: self.records.clone(),
            functors: self.functors.clone(),
        }
    }
}

impl SymbolTable {
    pub fn new() -> SymbolTable {
        SymbolTable::default()
    }

    // The table is valid after any panic (every update is one push and one insert), so
    // a poisoned lock is used as it is.
    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Binds the user-defined functors (`Program::functors`, in order) to their
    /// implementations. A run's table is a clone of the program's, so bind them on the
    /// program's table before running.
    pub fn set_functors(&mut self, functors: Vec<Arc<FunctorFn>>) {
        self.functors = functors;
    }

    /// Calls user-defined functor `index`; `None` when it fails or is not bound.
    pub fn call_functor(&self, index: u32, args: &[u32]) -> Option<u32> {
        let f = self.functors.get(index as usize)?;
        f(args, self)
    }

    /// The run's interned records and ADT values, and the declared record types.
    pub fn records(&self) -> &RecordTable {
        &self.records
    }

    /// The id of `s`, adding it if new.
    pub fn intern(&self, s: &str) -> u32 {
        if let Some(&id) = self.read().ids.get(s) {
            return id;
        }
        let mut inner = self.write();
        if let Some(&id) = inner.ids.get(s) {
            return id;
        }
        let id = inner.strings.len() as u32;
        let s: Arc<str> = Arc::from(s);
        inner.strings.push(s.clone());
        inner.ids.insert(s, id);
        id
    }

    /// The id of `s` if it was interned.
    pub fn lookup(&self, s: &str) -> Option<u32> {
        self.read().ids.get(s).copied()
    }

    /// The string of an id; `<symbol N>` for an id that was never handed out (a bug,
    /// not a user error: ids only come from this table).
    pub fn resolve(&self, id: u32) -> Arc<str> {
        match self.read().strings.get(id as usize) {
            Some(s) => s.clone(),
            None => Arc::from(format!("<symbol {id}>")),
        }
    }

    pub fn len(&self) -> usize {
        self.read().strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All strings, indexed by id (a snapshot, for writers that resolve many ids).
    pub fn snapshot(&self) -> Vec<Arc<str>> {
        self.read().strings.clone()
    }
}
