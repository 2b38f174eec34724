//! A relation's tuples in output order, read in parts within bounded memory: what the
//! output writer ([`crate::io`]) and [`crate::Database`]'s readers go through.
//!
//! A result is the relation's sorted runs (raw order: `u32` values column by column),
//! possibly in files and larger than memory ([`fixlog_exec::tuples::RowStore`]).
//!
//! - Where raw order is output order (unsigned columns, numbers none of which is
//!   negative: the usual case of ids and counts), the runs are read as they are,
//!   merged lazily part by part ([`fixlog_exec::merge`]): nothing is copied whole.
//! - Otherwise (symbols, floats, negative numbers, records) the rows are sorted into
//!   output order as an external merge sort: the rows are cut into chunks of what the
//!   memory allowance holds, each chunk is sorted in memory and, when there is more
//!   than one, written to an unnamed file in a spill directory of its own
//!   (`--temp-dir`); the sorted chunks are then merged lazily. A relation that fits in
//!   one chunk is sorted in memory and never touches a file. Output order is compared
//!   through per-column `u32` keys ([`Keys`]: a symbol's key is its rank in one sort of
//!   the symbol table), so no text is compared row by row; keys are distinct for
//!   distinct rows, and a chunk of up to 4 columns is sorted as rows of keys (then
//!   turned back into values), with no index. Wider rows, and rows with records (whose
//!   order is by value, through [`value::output_order`]), are sorted through an index,
//!   stably: raw-ordered chunks, ties in output order kept in raw order, and the merge
//!   takes equal rows from the earlier chunk first, which is the stable order of the
//!   whole relation, as it always was.
//!
//! Every buffer is charged to the run's memory budget where there is one (the CPU
//! backend's, see [`ReadMemory`]), and sized from what the limit leaves: half of the
//! limit less the bytes the budget holds (the results' runs still in memory).

use fixlog_cpu::budget::{self, Budget, Charge};
use fixlog_cpu::spill::{Spill, SpillSettings};
use fixlog_exec::merge::{raw_order, Merge, Part, Scratch};
use fixlog_exec::tuples::{SharedRows, Tuples};
use fixlog_exec::{ExecError, ExecResult};
use fixlog_logical::{value, ColType, SymbolTable, Value};
use rayon::prelude::*;
use std::cmp::Ordering;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};

/// The memory and files reading a relation in output order may use.
#[derive(Clone, Debug, Default)]
pub struct ReadMemory {
    /// The budget buffers are charged to: the run's, which still counts the
    /// results' runs in memory (`None`: nothing is counted).
    pub budget: Option<Arc<Budget>>,
    /// The bytes to stay within (`--memory-limit`, else the CPU backend's default
    /// target; `None`: [`DEFAULT_ALLOWANCE`] for the reader's buffers).
    pub limit: Option<usize>,
    /// Whether sorted chunks may go to files (not under `--no-spill`: then a relation
    /// is sorted in memory, and one that does not fit is an out-of-memory error).
    pub files: bool,
    /// Where the spill directory for sorted chunks is made (`None`: the system's
    /// temporary directory).
    pub temp_dir: Option<PathBuf>,
    /// What sorting into output order wrote to files, added up.
    pub sorted: Arc<SortCounter>,
}

/// [`SortFiles`] added up over readers (shared by clones of a [`ReadMemory`]).
#[derive(Debug, Default)]
pub struct SortCounter {
    files: AtomicUsize,
    bytes: AtomicUsize,
}

impl SortCounter {
    fn add(&self, f: &SortFiles) {
        self.files.fetch_add(f.files, AtomicOrdering::Relaxed);
        self.bytes.fetch_add(f.bytes, AtomicOrdering::Relaxed);
    }

    /// What was added since the last call.
    pub fn take(&self) -> SortFiles {
        SortFiles {
            files: self.files.swap(0, AtomicOrdering::Relaxed),
            bytes: self.bytes.swap(0, AtomicOrdering::Relaxed),
        }
    }
}

/// The reader's buffers where no limit is known.
pub const DEFAULT_ALLOWANCE: usize = 1 << 30;
/// The least the reader's buffers are sized for, whatever the limit leaves.
const MIN_ALLOWANCE: usize = 256 << 10;
/// The fewest rows an external sort's chunk holds.
const MIN_CHUNK_ROWS: usize = 1 << 12;

impl ReadMemory {
    /// The bytes the reader's buffers may take: half of what the limit leaves.
    pub fn allowance(&self) -> usize {
        let used = self.budget.as_ref().map_or(0, |b| b.used());
        match self.limit {
            Some(limit) => (limit.saturating_sub(used) / 2).max(MIN_ALLOWANCE),
            None => DEFAULT_ALLOWANCE,
        }
    }

    /// A charge of `bytes` (an error past the limit).
    pub fn charge(&self, bytes: usize) -> ExecResult<Charge> {
        Charge::try_in(self.budget.as_ref(), bytes)
    }

    /// Counts `bytes` already allocated.
    pub fn count(&self, bytes: usize) -> Charge {
        Charge::force_in(self.budget.as_ref(), bytes)
    }
}

/// A comparison of rows.
pub type RowOrder = Box<dyn Fn(&[Value], &[Value]) -> Ordering + Send + Sync>;

/// The order parts are merged in.
pub enum Order {
    /// By `u32` value, column by column.
    Raw,
    /// Output order as a key of each column compared as `u32`s (see [`Keys`]).
    Keyed(Keys),
    /// Output order ([`value::output_order`]; relations with record columns).
    Output(RowOrder),
}

impl Order {
    #[inline]
    pub fn cmp(&self, a: &[Value], b: &[Value]) -> Ordering {
        match self {
            Order::Raw => raw_order(a, b),
            Order::Keyed(k) => k.cmp(a, b),
            Order::Output(f) => f(a, b),
        }
    }

    /// Output order for `types`: by keys where no column is a record.
    fn output(types: &[ColType], symbols: &SymbolTable, memory: &ReadMemory) -> ExecResult<Order> {
        if types.iter().any(|t| matches!(t, ColType::Record(_))) {
            return Ok(Order::Output(Box::new(value::output_order(types, symbols))));
        }
        Ok(Order::Keyed(Keys::new(types, symbols, memory)?))
    }
}

/// Output order ([`value::output_order`]) without comparing text: each column's value
/// mapped to a `u32` whose order is the column's output order — a number's sign bit
/// flipped, a float's bits as `f32::total_cmp` orders them, a symbol's rank among the
/// symbols' texts (one sort of the symbol table) — and rows compared by these keys
/// column by column. The same order as `output_order` (ids of symbols missing from the
/// table after every present one, by id, as there), since every symbol's text is
/// distinct (the table interns them).
pub struct Keys {
    cols: Vec<ColType>,
    /// A symbol's rank by text, by id (empty without symbol columns) ...
    rank: Vec<u32>,
    /// ... and the id of each rank.
    ids: Vec<u32>,
    _charge: (Charge, Charge),
}

impl Keys {
    fn new(types: &[ColType], symbols: &SymbolTable, memory: &ReadMemory) -> ExecResult<Keys> {
        let (mut rank, mut ids) = (Vec::new(), Vec::new());
        let mut charges = (Charge::none(), Charge::none());
        if types.contains(&ColType::Symbol) {
            let strings = symbols.snapshot();
            let n = strings.len().min(u32::MAX as usize);
            let (mut by_text, ids_charge) = zeroed::<u32>(memory, n)?;
            by_text
                .par_iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x = i as u32);
            by_text.par_sort_unstable_by(|&x, &y| {
                strings[x as usize]
                    .as_bytes()
                    .cmp(strings[y as usize].as_bytes())
                    .then(x.cmp(&y))
            });
            let (mut r, r_charge) = zeroed::<u32>(memory, n)?;
            for (i, &id) in by_text.iter().enumerate() {
                r[id as usize] = i as u32;
            }
            (rank, ids) = (r, by_text);
            charges = (r_charge, ids_charge);
        }
        Ok(Keys {
            cols: types.to_vec(),
            rank,
            ids,
            _charge: charges,
        })
    }

    /// The value whose key is `k` (the inverse of [`Keys::key`]).
    #[inline]
    fn unkey(&self, ty: ColType, k: Value) -> Value {
        match ty {
            ColType::Number => k ^ 0x8000_0000,
            ColType::Float => {
                if k & 0x8000_0000 != 0 {
                    k ^ 0x8000_0000
                } else {
                    !k
                }
            }
            ColType::Symbol => self.ids.get(k as usize).copied().unwrap_or(k),
            ColType::Unsigned | ColType::Record(_) => k,
        }
    }

    #[inline]
    fn key(&self, ty: ColType, v: Value) -> Value {
        match ty {
            ColType::Number => v ^ 0x8000_0000,
            // `f32::total_cmp`: negative floats in reverse bit order, below the rest.
            ColType::Float => {
                if v & 0x8000_0000 != 0 {
                    !v
                } else {
                    v ^ 0x8000_0000
                }
            }
            // Present symbols by rank (below `len`); missing ones after them, by id.
            ColType::Symbol => self.rank.get(v as usize).copied().unwrap_or(v),
            ColType::Unsigned | ColType::Record(_) => v,
        }
    }

    #[inline]
    fn cmp(&self, a: &[Value], b: &[Value]) -> Ordering {
        for ((&x, &y), &ty) in a.iter().zip(b).zip(&self.cols) {
            if x != y {
                let o = self.key(ty, x).cmp(&self.key(ty, y));
                if o != Ordering::Equal {
                    return o;
                }
            }
        }
        a.len().cmp(&b.len())
    }
}

/// What sorting into output order wrote to files (for `--stats`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SortFiles {
    /// Sorted chunks written.
    pub files: usize,
    /// Bytes written.
    pub bytes: usize,
}

/// A relation's rows as sorted sources whose merge, in [`InOrder::order`], is the
/// relation in output order.
pub struct InOrder<'t> {
    arity: usize,
    order: Order,
    /// The relation's own runs (raw order is output order) and their stores ...
    runs: Vec<&'t [Value]>,
    holders: Vec<Option<&'t dyn SharedRows>>,
    /// ... or sorted chunks made here (in memory or mapped files).
    chunks: Vec<Arc<dyn SharedRows>>,
    files: SortFiles,
}

impl InOrder<'_> {
    pub fn arity(&self) -> usize {
        self.arity
    }

    pub fn order(&self) -> &Order {
        &self.order
    }

    /// The rows, in order, part by part.
    pub fn merge(&self) -> ExecResult<Merge<'_>> {
        let sources = if self.chunks.is_empty() {
            self.runs.clone()
        } else {
            self.chunks.iter().map(|c| c.values()).collect()
        };
        Merge::new(self.arity, sources)
    }

    /// The next part of at most `max_rows` rows of `merge`, in this order.
    pub fn next_part<'m>(&self, merge: &mut Merge<'m>, max_rows: usize) -> Option<Part<'m>> {
        let order = &self.order;
        merge.next_part(max_rows, &|a: &[Value], b: &[Value]| order.cmp(a, b))
    }

    /// The rows of `part` in order (merged into `scratch` where it has several slices).
    pub fn merged<'s>(
        &self,
        part: &'s Part<'_>,
        scratch: &'s mut Scratch,
    ) -> ExecResult<&'s [Value]> {
        let order = &self.order;
        part.merged(
            self.arity,
            &|a: &[Value], b: &[Value]| order.cmp(a, b),
            scratch,
        )
    }

    /// What sorting wrote to files.
    pub fn files(&self) -> &SortFiles {
        &self.files
    }

    /// Lets the sources go of what a reader is done with: the values before
    /// `positions` ([`Merge::positions`] of [`InOrder::merge`]); a mapped file drops
    /// those pages from the process.
    pub fn release(&self, positions: &[usize]) {
        if self.chunks.is_empty() {
            for (h, &p) in self.holders.iter().zip(positions) {
                if let Some(h) = h {
                    h.release_before(p);
                }
            }
        } else {
            for (c, &p) in self.chunks.iter().zip(positions) {
                c.release_before(p);
            }
        }
    }
}

/// Rows in memory, charged while they exist.
#[derive(Debug)]
struct ChargedRows {
    rows: Vec<Value>,
    _charge: Charge,
}

impl SharedRows for ChargedRows {
    fn values(&self) -> &[Value] {
        &self.rows
    }
}

/// Scratch space for merging parts, one per thread of the pool, charged as a whole.
pub struct Scratches {
    slots: Vec<Mutex<Scratch>>,
    _charge: Charge,
}

impl Scratches {
    /// Room to merge parts of `part_rows` rows of `arity` on every thread.
    pub fn new(memory: &ReadMemory, part_rows: usize, arity: usize) -> ExecResult<Scratches> {
        let n = rayon::current_num_threads().max(1);
        let bytes = n * 2 * part_rows * arity * std::mem::size_of::<Value>();
        Ok(Scratches {
            slots: (0..n).map(|_| Mutex::new(Scratch::default())).collect(),
            _charge: memory.charge(bytes)?,
        })
    }

    /// Runs `f` with this thread's scratch space.
    pub fn with<R>(&self, f: impl FnOnce(&mut Scratch) -> R) -> R {
        let i = rayon::current_thread_index().unwrap_or(0) % self.slots.len();
        let mut slot = self.slots[i].lock().unwrap_or_else(|e| e.into_inner());
        f(&mut slot)
    }
}

/// Rows per part: `want`, or fewer where the allowance is small (the scratch space of
/// all threads within an eighth of it), at least 256.
pub fn part_rows(memory: &ReadMemory, arity: usize, want: usize) -> usize {
    let per_row = 2 * arity * std::mem::size_of::<Value>() * rayon::current_num_threads().max(1);
    (memory.allowance() / 8 / per_row.max(1)).clamp(256, want.max(256))
}

/// Whether the raw order of `runs` (sorted by `u32` value, column by column) is
/// already their output order: every column unsigned, or numbers none of which is
/// negative, and no float, symbol or record column.
pub fn raw_order_is_output_order(runs: &[&[Value]], arity: usize, types: &[ColType]) -> bool {
    if types.iter().all(|&t| t == ColType::Unsigned) {
        return true;
    }
    if !types
        .iter()
        .all(|&t| matches!(t, ColType::Unsigned | ColType::Number))
    {
        return false;
    }
    let signed: Vec<usize> = (0..arity)
        .filter(|&c| types[c] == ColType::Number)
        .collect();
    runs.iter().all(|run| {
        run.par_chunks(arity * 4096).all(|chunk| {
            chunk
                .chunks_exact(arity)
                .all(|r| signed.iter().all(|&c| (r[c] as i32) >= 0))
        })
    })
}

/// `tuples` (arity > 0) as sorted sources to merge in output order (see the module
/// docs): its runs where raw order is output order, else sorted chunks.
pub fn in_output_order<'t>(
    tuples: &'t Tuples,
    types: &[ColType],
    symbols: &SymbolTable,
    memory: &ReadMemory,
) -> ExecResult<InOrder<'t>> {
    let arity = tuples.arity;
    let runs = tuples.rows.runs();
    let holders = tuples.rows.holders();
    if raw_order_is_output_order(&runs, arity, types) {
        return Ok(InOrder {
            arity,
            order: Order::Raw,
            runs,
            holders,
            chunks: Vec::new(),
            files: SortFiles::default(),
        });
    }
    let order = Order::output(types, symbols, memory)?;
    let total = tuples.rows.value_count() / arity;
    // Keys of up to 4 columns are sorted as they are (4 * arity bytes a row);
    // otherwise a chunk's rows, its index and its sorted copy (8 * arity + 4).
    let per_row = if sorts_keys(&order, arity) {
        arity * std::mem::size_of::<Value>()
    } else {
        2 * arity * std::mem::size_of::<Value>() + std::mem::size_of::<u32>()
    };
    let mut chunk_rows = (memory.allowance() / per_row)
        .max(MIN_CHUNK_ROWS)
        .min(u32::MAX as usize);
    if !memory.files {
        // No files: the chunks stay in memory (one, unless it would pass 2^32 rows).
        chunk_rows = total.clamp(1, u32::MAX as usize);
    }
    let mut raw = Merge::new(arity, runs)?;
    let mut chunks: Vec<Arc<dyn SharedRows>> = Vec::new();
    let mut spill: Option<Arc<Spill>> = None;
    while raw.rows_left() > 0 {
        let rows = raw.rows_left().min(chunk_rows);
        let sorted = sort_chunk(&mut raw, rows, &order, memory)?;
        for (h, p) in holders.iter().zip(raw.positions()) {
            if let Some(h) = h {
                h.release_before(p);
            }
        }
        if total <= chunk_rows || !memory.files {
            chunks.push(Arc::new(sorted));
            continue;
        }
        let spill = spill.get_or_insert_with(|| {
            let budget = memory.budget.clone().unwrap_or_else(|| Budget::new(None));
            let limit = memory.limit.unwrap_or(DEFAULT_ALLOWANCE);
            Spill::new(
                budget,
                SpillSettings::for_limit(limit, memory.temp_dir.clone()),
            )
        });
        let file = spill.new_file()?;
        fixlog_cpu::spill::write_at(&file, &sorted.rows, 0).map_err(|e| {
            ExecError::Backend(format!(
                "sorting an output: cannot write a file in {}: {e}",
                spill
                    .dir()
                    .unwrap_or_else(|| spill.settings().temp_dir.clone().unwrap_or_default())
                    .display()
            ))
        })?;
        let values = sorted.rows.len();
        drop(sorted);
        chunks.push(Arc::new(spill.map(file, values)?));
    }
    let files = spill.map_or_else(SortFiles::default, |s| {
        let st = s.stats();
        SortFiles {
            files: st.files,
            bytes: st.written_bytes,
        }
    });
    memory.sorted.add(&files);
    Ok(InOrder {
        arity,
        order,
        runs: Vec::new(),
        holders: Vec::new(),
        chunks,
        files,
    })
}

/// Whether chunks in `order` are sorted as rows of keys ([`sort_keys`]).
fn sorts_keys(order: &Order, arity: usize) -> bool {
    matches!(order, Order::Keyed(_)) && (1..=4).contains(&arity)
}

/// The next `rows` rows of `raw` sorted into `order`: as rows of keys where
/// [`sorts_keys`], else through an index.
fn sort_chunk(
    raw: &mut Merge<'_>,
    rows: usize,
    order: &Order,
    memory: &ReadMemory,
) -> ExecResult<ChargedRows> {
    match order {
        Order::Keyed(keys) if sorts_keys(order, raw.arity()) => sort_keys(raw, rows, keys, memory),
        _ => sort_indexed(raw, rows, order, memory),
    }
}

/// The next `rows` rows of `raw` sorted into key order: copied as keys (in any order:
/// keys are distinct, so no order of equal rows is to keep), sorted as arrays of
/// `u32`, and turned back into values in place. The sorted copy is the only buffer.
fn sort_keys(
    raw: &mut Merge<'_>,
    rows: usize,
    keys: &Keys,
    memory: &ReadMemory,
) -> ExecResult<ChargedRows> {
    let arity = raw.arity();
    let (mut buf, charge) = zeroed::<Value>(memory, rows * arity)?;
    // The chunk's rows: the pieces of the next parts, each copied as keys into its
    // place.
    let mut pieces = Vec::new();
    let mut left = rows;
    while left > 0 {
        let Some(p) = raw.next_part(left.min(1 << 16), &raw_order) else {
            break;
        };
        left -= p.rows();
        pieces.extend(p.slices.into_iter().filter(|s| !s.is_empty()));
    }
    let mut places = Vec::with_capacity(pieces.len());
    let mut rest = &mut buf[..];
    for piece in &pieces {
        let (place, tail) = rest.split_at_mut(piece.len());
        places.push(place);
        rest = tail;
    }
    let cols = &keys.cols;
    pieces
        .par_iter()
        .zip(places.into_par_iter())
        .for_each(|(piece, place)| {
            for (o, r) in place.chunks_exact_mut(arity).zip(piece.chunks_exact(arity)) {
                for ((o, &v), &ty) in o.iter_mut().zip(r).zip(cols) {
                    *o = keys.key(ty, v);
                }
            }
        });
    match arity {
        1 => buf.par_sort_unstable(),
        2 => buf.as_chunks_mut::<2>().0.par_sort_unstable(),
        3 => buf.as_chunks_mut::<3>().0.par_sort_unstable(),
        _ => buf.as_chunks_mut::<4>().0.par_sort_unstable(),
    }
    buf.par_chunks_mut(arity * 4096).for_each(|part| {
        for r in part.chunks_exact_mut(arity) {
            for (v, &ty) in r.iter_mut().zip(cols) {
                *v = keys.unkey(ty, *v);
            }
        }
    });
    Ok(ChargedRows {
        rows: buf,
        _charge: charge,
    })
}

/// The next `rows` rows of `raw` (in raw order) sorted into `order`, stably, through
/// an index.
fn sort_indexed(
    raw: &mut Merge<'_>,
    rows: usize,
    order: &Order,
    memory: &ReadMemory,
) -> ExecResult<ChargedRows> {
    let arity = raw.arity();
    let values = rows * arity;
    // The chunk in raw order: where its rows are all in one run (the relation is one
    // run, say), the run itself; else parts cut here, merged in parallel into their
    // places in a copy.
    let mut probe = raw.clone();
    let in_place = probe.next_part(rows, &raw_order).and_then(|p| {
        let mut pieces = p.slices.iter().filter(|s| !s.is_empty());
        match (pieces.next(), pieces.next()) {
            (Some(&one), None) if one.len() == values => Some(one),
            _ => None,
        }
    });
    let copy;
    let _copy_charge;
    let chunk: &[Value] = match in_place {
        Some(rows) => {
            *raw = probe;
            rows
        }
        None => {
            let (mut buf, charge) = zeroed::<Value>(memory, values)?;
            let part = part_rows(memory, arity, 1 << 16);
            let mut parts = Vec::new();
            let mut left = rows;
            while left > 0 {
                let Some(p) = raw.next_part(part.min(left), &raw_order) else {
                    break;
                };
                left -= p.rows();
                parts.push(p);
            }
            let mut places = Vec::with_capacity(parts.len());
            let mut rest = &mut buf[..];
            for p in &parts {
                let (place, tail) = rest.split_at_mut(p.rows() * arity);
                places.push(place);
                rest = tail;
            }
            let scratches = Scratches::new(memory, part, arity)?;
            parts
                .par_iter()
                .zip(places.into_par_iter())
                .try_for_each(|(p, place)| {
                    scratches.with(|scratch| {
                        place.copy_from_slice(p.merged(arity, &raw_order, scratch)?);
                        Ok::<(), ExecError>(())
                    })
                })?;
            copy = buf;
            _copy_charge = charge;
            &copy
        }
    };
    // Sort an index; ties in output order keep raw order (the index), so the sort is
    // stable without a stable sort's buffer.
    let (mut index, index_charge) = zeroed::<u32>(memory, rows)?;
    index
        .par_iter_mut()
        .enumerate()
        .for_each(|(i, x)| *x = i as u32);
    let row = |i: u32| &chunk[i as usize * arity..(i as usize + 1) * arity];
    index.par_sort_unstable_by(|&x, &y| order.cmp(row(x), row(y)).then(x.cmp(&y)));
    let (mut sorted, charge) = zeroed::<Value>(memory, values)?;
    sorted
        .par_chunks_mut(arity * 4096)
        .zip(index.par_chunks(4096))
        .for_each(|(out, ix)| {
            for (o, &i) in out.chunks_exact_mut(arity).zip(ix) {
                o.copy_from_slice(row(i));
            }
        });
    drop((index, index_charge));
    Ok(ChargedRows {
        rows: sorted,
        _charge: charge,
    })
}

/// `n` default values, charged; allocation failure is an error.
fn zeroed<T: Default + Clone>(memory: &ReadMemory, n: usize) -> ExecResult<(Vec<T>, Charge)> {
    let bytes = n.saturating_mul(std::mem::size_of::<T>());
    let charge = memory.charge(bytes)?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| budget::refused(bytes))?;
    v.resize(n, T::default());
    Ok((v, charge))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_rows_as_output_order_does() {
        let symbols = SymbolTable::default();
        for s in ["b", "a", "", "ab", "B", "\u{e9}", "a\u{0}", "zz", "a"] {
            symbols.intern(s);
        }
        let n_symbols = symbols.snapshot().len() as u32;
        let types = [
            ColType::Symbol,
            ColType::Float,
            ColType::Number,
            ColType::Unsigned,
        ];
        let floats: Vec<Value> = [
            0.0f32,
            -0.0,
            1.5,
            -1.5,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::MIN_POSITIVE,
            -f32::MAX,
        ]
        .iter()
        .map(|f| f.to_bits())
        .collect();
        let ints: Vec<Value> = vec![0, 1, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 42];
        // Symbols present in the table and two that are not (ids past its end).
        let syms: Vec<Value> = (0..n_symbols)
            .chain([n_symbols + 3, n_symbols + 1])
            .collect();
        let mut rows = Vec::new();
        let mut i = 0u64;
        for &s in &syms {
            for &f in &floats {
                i = i
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let a = ints[(i >> 33) as usize % ints.len()];
                let b = ints[(i >> 40) as usize % ints.len()];
                rows.push(vec![s, f, a, b]);
            }
        }
        let keys = Keys::new(&types, &symbols, &ReadMemory::default()).unwrap();
        let order = value::output_order(&types, &symbols);
        for x in &rows {
            for y in &rows {
                assert_eq!(keys.cmp(x, y), order(x, y), "{x:?} {y:?}");
            }
            for (&v, &ty) in x.iter().zip(&types) {
                assert_eq!(keys.unkey(ty, keys.key(ty, v)), v, "{ty:?} {v}");
            }
        }
    }
}
