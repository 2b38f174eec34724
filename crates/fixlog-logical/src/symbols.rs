//! Interning of `symbol` values to dense `u32` ids.
//!
//! Ids are handed out in first-seen order. The table is shared by the loader, the
//! evaluator (functors such as `cat` make new symbols while rules run, possibly on many
//! threads) and the writer, so interning takes `&self`; look-ups of existing symbols
//! take only a read lock, and the common path of a join never touches the table.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

#[derive(Default, Debug)]
struct Inner {
    strings: Vec<Arc<str>>,
    ids: HashMap<Arc<str>, u32>,
}

#[derive(Default, Debug)]
pub struct SymbolTable {
    inner: RwLock<Inner>,
}

impl Clone for SymbolTable {
    fn clone(&self) -> SymbolTable {
        let inner = self.inner.read().unwrap();
        SymbolTable {
            inner: RwLock::new(Inner {
                strings: inner.strings.clone(),
                ids: inner.ids.clone(),
            }),
        }
    }
}

impl SymbolTable {
    pub fn new() -> SymbolTable {
        SymbolTable::default()
    }

    /// The id of `s`, adding it if new.
    pub fn intern(&self, s: &str) -> u32 {
        if let Some(&id) = self.inner.read().unwrap().ids.get(s) {
            return id;
        }
        let mut inner = self.inner.write().unwrap();
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
        self.inner.read().unwrap().ids.get(s).copied()
    }

    /// The string of an id. Panics on an id that was never handed out (a bug, not a user
    /// error: ids only come from this table).
    pub fn resolve(&self, id: u32) -> Arc<str> {
        self.inner.read().unwrap().strings[id as usize].clone()
    }

    pub fn len(&self) -> usize {
        self.inner.read().unwrap().strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All strings, indexed by id (a snapshot, for writers that resolve many ids).
    pub fn snapshot(&self) -> Vec<Arc<str>> {
        self.inner.read().unwrap().strings.clone()
    }
}
