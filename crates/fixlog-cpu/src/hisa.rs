//! HISA: a sorted run of rows plus an open-addressing hash table from the key prefix to
//! the range of rows with that key.
//!
//! Each slot holds `(tag, start, end)` (12 bytes): the range is exact, so a probe that
//! hits reads the matching rows and nothing else, with no per-row key compare. For a
//! one-column key the tag *is* the key (no row access to confirm a hit); for wider keys
//! the tag is 32 bits of the hash and a hit is confirmed against the first row of the
//! range, which the join reads next anyway. Linear probing at load factor <= 1/2.
//! Offsets are `u32`: a run holds fewer than 2^32 rows.

use super::rows::{width, with_arity, PART_ROWS};
use crate::budget::{self, Charge};
use fixlog_exec::ExecResult;
use rayon::prelude::*;

#[derive(Clone, Copy, Default)]
struct Slot {
    tag: u32,
    start: u32,
    /// 0 marks an empty slot (a real range has `end > start >= 0`).
    end: u32,
}

pub struct HashTable {
    slots: Vec<Slot>,
    /// `64 - log2(slots.len())`: the slot is the top bits of the hash.
    shift: u32,
    key_len: usize,
    /// The slots' bytes, charged to the memory budget.
    _charge: Charge,
}

const SEED: u64 = 0x9E37_79B9_7F4A_7C15;

#[inline(always)]
fn hash_key(key: &[u32]) -> u64 {
    let mut h: u64 = 0x243F_6A88_85A3_08D3;
    for &k in key {
        h = (h ^ k as u64).wrapping_mul(SEED);
        h ^= h >> 32;
    }
    h.wrapping_mul(SEED)
}

#[inline(always)]
fn tag_of(key: &[u32], h: u64) -> u32 {
    if key.len() == 1 {
        key[0]
    } else {
        h as u32
    }
}

impl HashTable {
    /// An empty table (for a run without rows or with `key_len == 0`).
    pub fn empty(key_len: usize) -> HashTable {
        HashTable {
            slots: Vec::new(),
            shift: 64,
            key_len,
            _charge: Charge::none(),
        }
    }

    /// The table over the key prefix of the sorted rows `data`, with the table (and the
    /// group starts while it is built) charged to the memory budget: running out is an
    /// error.
    pub fn try_build(
        data: &[u32],
        arity: usize,
        len: usize,
        key_len: usize,
    ) -> ExecResult<HashTable> {
        if key_len == 0 || len == 0 {
            return Ok(HashTable::empty(key_len));
        }
        debug_assert!(len < u32::MAX as usize);
        // At most one start per row.
        let _starts_charge = Charge::try_new(len.saturating_mul(std::mem::size_of::<u32>()))?;
        // Group starts, found in parallel over fixed parts.
        let starts: Vec<u32> = with_arity!(arity, N => {
            let w = width::<N>(arity);
            let parts: Vec<Vec<u32>> = (0..len.div_ceil(PART_ROWS))
                .into_par_iter()
                .map(|p| {
                    let (lo, hi) = (p * PART_ROWS, ((p + 1) * PART_ROWS).min(len));
                    let mut s = Vec::new();
                    for i in lo..hi {
                        if i == 0 || data[i * w..i * w + key_len] != data[(i - 1) * w..(i - 1) * w + key_len] {
                            s.push(i as u32);
                        }
                    }
                    s
                })
                .collect();
            parts.concat()
        });
        let groups = starts.len();
        let cap = (groups * 2).next_power_of_two().max(16);
        let shift = 64 - cap.trailing_zeros();
        let (mut slots, charge) = budget::try_filled(cap, Slot::default())?;
        let mask = cap - 1;
        for (g, &s) in starts.iter().enumerate() {
            let end = starts.get(g + 1).copied().unwrap_or(len as u32);
            let key = &data[s as usize * arity..s as usize * arity + key_len];
            let h = hash_key(key);
            let mut at = (h >> shift) as usize;
            while slots[at].end != 0 {
                at = (at + 1) & mask;
            }
            slots[at] = Slot {
                tag: tag_of(key, h),
                start: s,
                end,
            };
        }
        Ok(HashTable {
            slots,
            shift,
            key_len,
            _charge: charge,
        })
    }

    /// The range of rows whose key prefix equals `key` (empty range if none).
    #[inline]
    pub fn lookup(&self, data: &[u32], arity: usize, key: &[u32]) -> (usize, usize) {
        if self.slots.is_empty() {
            return (0, 0);
        }
        let h = hash_key(key);
        let tag = tag_of(key, h);
        let mask = self.slots.len() - 1;
        let mut at = (h >> self.shift) as usize;
        loop {
            let s = self.slots[at];
            if s.end == 0 {
                return (0, 0);
            }
            if s.tag == tag {
                let start = s.start as usize;
                if self.key_len == 1 || data[start * arity..start * arity + self.key_len] == *key {
                    return (start, s.end as usize);
                }
            }
            at = (at + 1) & mask;
        }
    }

    pub fn memory_bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Slot>()
    }
}
