//! Dropping repeated rows while a join writes them.
//!
//! A rule's result is deduplicated anyway (`sort_unique`, then `− full`), but joins in
//! recursive rules often write the same tuple many times in one iteration: transitive
//! closure on wiki-Vote writes 297M tuples for 12M distinct ones. Those repeats are
//! close together (the outer rows are sorted, so the rows of one source node are
//! adjacent), so a small hash set over the most recently written rows — sized to stay
//! in the L2 cache — removes most of them at a few nanoseconds each, before they cost
//! memory and a sort. Older rows fall out of the window, so some repeats survive; the
//! later `sort_unique` removes those.

use fixlog_logical::Value;

/// Decides, row by row, whether a row a join just wrote stays in its output.
pub trait RowWindow {
    /// Starts a new unit of work (forgets every row).
    fn reset(&mut self);
    /// `out` holds rows of width `w`; row `idx` was just written.
    fn keep(&mut self, out: &[Value], w: usize, idx: usize) -> bool;
}

/// Keeps every row (a plain join).
pub struct KeepAll;

impl RowWindow for KeepAll {
    #[inline(always)]
    fn reset(&mut self) {}
    #[inline(always)]
    fn keep(&mut self, _: &[Value], _: usize, _: usize) -> bool {
        true
    }
}

/// Rows a window sees before it decides whether checking is worth it: when fewer than
/// a tenth of them were repeats, the rest of the unit is written unchecked.
const PROBE_ROWS: usize = 4096;

/// A set of the rows a unit wrote recently.
pub trait RecentRows {
    /// Forgets every row.
    fn clear(&mut self);
    /// Whether row `idx` of `out` (width `w`) is not among the recent rows; records it.
    fn is_new_row(&mut self, out: &[Value], w: usize, idx: usize) -> bool;
}

/// A [`RecentRows`] set used as a [`RowWindow`]: drops the rows it has seen, and stops
/// checking for the rest of a unit when the first `PROBE_ROWS` rows held few repeats.
#[derive(Default)]
pub struct Probed<T> {
    rows: T,
    seen: usize,
    kept: usize,
    off: bool,
}

impl<T: RecentRows> RowWindow for Probed<T> {
    fn reset(&mut self) {
        self.rows.clear();
        self.seen = 0;
        self.kept = 0;
        self.off = false;
    }
    #[inline]
    fn keep(&mut self, out: &[Value], w: usize, idx: usize) -> bool {
        if self.off {
            return true;
        }
        let kept = self.rows.is_new_row(out, w, idx);
        self.seen += 1;
        self.kept += kept as usize;
        if self.seen == PROBE_ROWS && self.kept * 10 > self.seen * 9 {
            self.off = true;
        }
        kept
    }
}

/// Slots in the window's table; it is reset when half full.
const SLOTS_LOG2: u32 = 15;

/// Rows of one or two columns packed into a `u64`, kept in a table that fits the L2
/// cache (32K slots, 256 KiB); the table is cleared when half full. 2^15 slots beat 2^13
/// by 2-7% on TC and SG (fewer repeats survive a clear; measured on CA-HepTh, wiki-Vote,
/// p2p-Gnutella09, cti, ego-Facebook).
pub struct PackedWindow {
    table: Vec<u64>,
    /// The slots in use, so that clearing costs what was used, not the whole table
    /// (units of a few rows are common in deep, sparse recursions).
    used: Vec<u32>,
    filled: usize,
}

impl RecentRows for PackedWindow {
    fn clear(&mut self) {
        PackedWindow::clear(self);
    }
    #[inline]
    fn is_new_row(&mut self, out: &[Value], w: usize, idx: usize) -> bool {
        let row = &out[idx * w..idx * w + w];
        let key = match w {
            1 => row[0] as u64,
            _ => ((row[0] as u64) << 32) | row[1] as u64,
        };
        self.is_new(key)
    }
}

const PACKED_LOG2: u32 = 15;
const EMPTY: u64 = u64::MAX;

impl Default for PackedWindow {
    fn default() -> PackedWindow {
        PackedWindow {
            table: vec![EMPTY; 1 << PACKED_LOG2],
            used: Vec::with_capacity(1 << (PACKED_LOG2 - 1)),
            filled: 0,
        }
    }
}

impl PackedWindow {
    pub fn clear(&mut self) {
        for &slot in &self.used {
            self.table[slot as usize] = EMPTY;
        }
        self.used.clear();
        self.filled = 0;
    }

    /// Whether `key` (a packed row) is new within the window; records it.
    /// `EMPTY` itself (the row `[u32::MAX, u32::MAX]`) is always reported new.
    #[inline]
    pub fn is_new(&mut self, key: u64) -> bool {
        if key == EMPTY {
            return true;
        }
        if self.filled >= (1 << (PACKED_LOG2 - 1)) {
            self.clear();
        }
        let mask = (1usize << PACKED_LOG2) - 1;
        let mut slot = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - PACKED_LOG2)) as usize;
        loop {
            // SAFETY: `slot` is masked to the table's length.
            let entry = unsafe { self.table.get_unchecked_mut(slot) };
            if *entry == EMPTY {
                *entry = key;
                self.used.push(slot as u32);
                self.filled += 1;
                return true;
            }
            if *entry == key {
                return false;
            }
            slot = (slot + 1) & mask;
        }
    }
}

/// The general window: any row width, rows compared in the output buffer.
pub struct WindowDedup {
    /// Row index + 1 of the row in each slot (valid only when `stamp` matches).
    slots: Vec<u32>,
    stamp: Vec<u32>,
    generation: u32,
    filled: usize,
}

impl RecentRows for WindowDedup {
    fn clear(&mut self) {
        WindowDedup::clear(self);
    }
    #[inline]
    fn is_new_row(&mut self, out: &[Value], w: usize, idx: usize) -> bool {
        self.is_new(out, w, idx)
    }
}

impl Default for WindowDedup {
    fn default() -> WindowDedup {
        WindowDedup {
            slots: vec![0; 1 << SLOTS_LOG2],
            stamp: vec![0; 1 << SLOTS_LOG2],
            generation: 1,
            filled: 0,
        }
    }
}

impl WindowDedup {
    /// Forgets every row (O(1)).
    pub fn clear(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamp.fill(0);
            self.generation = 1;
        }
        self.filled = 0;
    }

    /// `out` holds rows of width `w`; row `idx` was just written. Returns whether it is
    /// new within the window (if not, the caller removes it).
    #[inline]
    pub fn is_new(&mut self, out: &[Value], w: usize, idx: usize) -> bool {
        if self.filled >= (1 << (SLOTS_LOG2 - 1)) || idx >= u32::MAX as usize - 1 {
            self.clear();
        }
        let row = &out[idx * w..idx * w + w];
        let mut h: u64 = 0x243F_6A88_85A3_08D3;
        for &v in row {
            h = (h ^ v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
        let mask = (1usize << SLOTS_LOG2) - 1;
        let mut slot = (h >> (64 - SLOTS_LOG2)) as usize;
        loop {
            if self.stamp[slot] != self.generation {
                self.stamp[slot] = self.generation;
                self.slots[slot] = idx as u32 + 1;
                self.filled += 1;
                return true;
            }
            let other = self.slots[slot] as usize - 1;
            if &out[other * w..other * w + w] == row {
                return false;
            }
            slot = (slot + 1) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_window_drops_repeats_and_keeps_new_keys() {
        let mut w = PackedWindow::default();
        assert!(w.is_new(5));
        assert!(!w.is_new(5));
        assert!(w.is_new(EMPTY));
        assert!(w.is_new(EMPTY));
        for k in 0..100_000u64 {
            assert!(w.is_new(k * 1_000_003 + 7));
        }
        let mut fresh = PackedWindow::default();
        for k in 0..1000u64 {
            assert!(fresh.is_new(k));
        }
        for k in 0..1000u64 {
            assert!(!fresh.is_new(k));
        }
    }

    #[test]
    fn drops_repeats_within_the_window_and_keeps_distinct_rows() {
        let mut d = WindowDedup::default();
        let mut out: Vec<Value> = Vec::new();
        let mut kept = 0;
        // 3 passes over 1000 distinct rows: every repeat is inside the window.
        for _ in 0..3 {
            for i in 0..1000u32 {
                out.extend_from_slice(&[i, i * 7]);
                if d.is_new(&out, 2, kept) {
                    kept += 1;
                } else {
                    out.truncate(kept * 2);
                }
            }
        }
        assert_eq!(kept, 1000);
        let mut rows: Vec<_> = out.chunks(2).map(|r| (r[0], r[1])).collect();
        rows.sort();
        rows.dedup();
        assert_eq!(rows.len(), 1000);
    }

    #[test]
    fn never_drops_a_row_that_is_new() {
        // More distinct rows than the window holds: all must be kept.
        let mut d = WindowDedup::default();
        let mut out: Vec<Value> = Vec::new();
        let n = 200_000u32;
        for i in 0..n {
            out.push(i.wrapping_mul(2654435761));
            assert!(d.is_new(&out, 1, i as usize));
        }
    }
}
