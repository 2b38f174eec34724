//! Spilling: runs of relations and indexes that live in files, read back through
//! read-only memory maps, so that a run's relations may exceed the machine's memory.
//!
//! # Design
//!
//! A [`Run`]'s rows are either a vector in memory ([`RunData::Mem`], charged to the
//! [`Budget`]) or a file mapped read-only ([`RunData::Mapped`], counted apart). Every
//! kernel takes `&[u32]`, so it reads a mapped run unchanged: the operating system pages
//! the file in as it is read and may evict the pages again (they are clean file pages,
//! written once), so a mapped run costs the page cache, not the budget.
//!
//! Runs are shared (`Arc<Run>`: a relation's runs are its delta, its identity indexes'
//! runs, the driver's clones), so a run must switch from memory to its file while
//! shared. The run therefore holds its data as `RwLock<Arc<RunData>>`: an operator
//! takes an `Arc<RunData>` of every run it reads when it starts (one short read lock
//! per run and operator, never per row) and reads slices of it, lock-free, until it
//! returns; spilling writes the rows to a file, maps it and swaps the `Arc` under the
//! write lock. Whoever still holds the old `Arc` keeps reading valid memory, which is
//! freed (and its charge given back) when the last holder lets go. The driver calls
//! operators one at a time and no slice is held across calls, so spilling between
//! operators frees the memory at once; there is no unsafe sharing and no way to read
//! freed memory. (The alternative, an `UnsafeCell` switched "when nobody reads", would
//! rest on that driver discipline for soundness; the lock costs a few nanoseconds per
//! run and operator.)
//!
//! The backend finds the runs through a registry of `Weak` references (as the CUDA
//! backend's `make_room` does): every run created while a [`Spill`] is current on the
//! thread, and at least [`Spill`]'s minimum size, is registered.
//!
//! # When
//!
//! At the entry of every operator ([`make_room`]), when the budget's bytes in use pass
//! the high mark (three quarters of `--memory-limit`, or of the default described in
//! [`crate::run_with`]), runs are spilled until the bytes in use are at most the low
//! mark (half): first runs no operator has read in the last [`HOT_EPOCHS`] operator
//! calls (the full versions of relations the current stratum does not touch), largest
//! first, then the others, largest first; deltas are small and recent, so they stay in
//! memory. An operator that still runs out of memory is run once more after spilling
//! everything spillable ([`spill_all`]); if it fails again, the error stands. A merge
//! of runs whose output would pass the high mark writes its output straight to a file
//! (`Spill::wants_file`, `storage::union_runs`), part by part, so the output never
//! sits in memory whole.
//!
//! # Files
//!
//! Each run of a program gets one directory, made with `tempfile` in the temporary
//! directory (`--temp-dir`, default the system's) on the first spill and removed when
//! the run ends, on error too ([`Spill::close`]; the CLI also removes it on
//! SIGINT/SIGTERM/SIGHUP, see [`remove_live_dirs`]). Every spilled run is an unnamed file
//! in it (`tempfile::tempfile_in`: `O_TMPFILE` on Linux, else created and unlinked at
//! once), so its space is given back when its map is dropped, or when the process ends,
//! however it ends; no other process can open it, which is what makes mapping it sound.
//! Files are written with `write`/`pwrite`, never through a writable map, so a full disk
//! is an error value (the run then stays in memory), never a `SIGBUS`.
//!
//! A merge whose output goes to a file and whose input is a mapped run it alone holds
//! (the relation's largest runs, merged at the end of an iteration) gives the input's
//! disk space back as it goes ([`Mapped::free_before`]: a hole punched in the consumed
//! prefix, on Linux), so merging a relation's largest runs needs about the relation's
//! size on disk, not twice.

use crate::budget::{self, Budget};
use crate::storage::{Run, RunData};
use fixlog_exec::{ExecError, ExecResult};
use fixlog_logical::Value;
use std::cell::RefCell;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// A run read by an operator within this many operator calls is hot: it is spilled
/// only after every cold run.
pub const HOT_EPOCHS: u64 = 8;

/// When and where to spill.
#[derive(Clone, Debug)]
pub struct SpillSettings {
    /// Directory in which the run's spill directory is made (`None`: the system's
    /// temporary directory).
    pub temp_dir: Option<PathBuf>,
    /// Spill when the budget's bytes in use pass this ...
    pub high: usize,
    /// ... until they are at most this.
    pub low: usize,
    /// Runs smaller than this are never spilled (nor registered).
    pub min_bytes: usize,
}

impl SpillSettings {
    /// The marks for a memory limit (or a default target) of `limit` bytes: spill from
    /// three quarters of it down to half; runs under 1 MiB (or 1/64 of the limit)
    /// stay in memory.
    pub fn for_limit(limit: usize, temp_dir: Option<PathBuf>) -> SpillSettings {
        SpillSettings {
            temp_dir,
            high: limit / 4 * 3,
            low: limit / 2,
            min_bytes: (limit / 64).min(1 << 20),
        }
    }
}

/// What a run spilled (for `--stats`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpillStats {
    /// The directory the run's spill directory is (or would be) made in.
    pub temp_dir: PathBuf,
    /// The most bytes of runs in files at once.
    pub peak_bytes: usize,
    /// Bytes written to files in all.
    pub written_bytes: usize,
    /// Runs written to files (spilled runs and merge outputs).
    pub files: usize,
    /// Bytes in files now.
    pub mapped_bytes: usize,
    /// The first error that stopped spilling (a full disk, say), if any.
    pub error: Option<String>,
}

#[derive(Debug, Default)]
struct Counters {
    mapped: AtomicUsize,
    peak: AtomicUsize,
    written: AtomicUsize,
    files: AtomicUsize,
}

/// The spill state of one run of a program: settings, the registry of runs, the
/// directory, the counters.
#[derive(Debug)]
pub struct Spill {
    settings: SpillSettings,
    root: PathBuf,
    budget: Arc<Budget>,
    dir: Mutex<Option<tempfile::TempDir>>,
    runs: Mutex<Registry>,
    epoch: AtomicU64,
    counters: Arc<Counters>,
    /// Set once writing a file failed: no further spilling is tried.
    error: Mutex<Option<String>>,
}

#[derive(Debug, Default)]
struct Registry {
    runs: Vec<Weak<Run>>,
    /// Length after the last pruning of dead entries.
    pruned: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Spill {
    /// The spill state of a run charged to `budget`.
    pub fn new(budget: Arc<Budget>, settings: SpillSettings) -> Arc<Spill> {
        let root = settings.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
        Arc::new(Spill {
            settings,
            root,
            budget,
            dir: Mutex::new(None),
            runs: Mutex::new(Registry::default()),
            epoch: AtomicU64::new(0),
            counters: Arc::new(Counters::default()),
            error: Mutex::new(None),
        })
    }

    pub fn settings(&self) -> &SpillSettings {
        &self.settings
    }

    /// What has been spilled so far.
    pub fn stats(&self) -> SpillStats {
        let c = &self.counters;
        SpillStats {
            temp_dir: self.root.clone(),
            peak_bytes: c.peak.load(Ordering::Relaxed),
            written_bytes: c.written.load(Ordering::Relaxed),
            files: c.files.load(Ordering::Relaxed),
            mapped_bytes: c.mapped.load(Ordering::Relaxed),
            error: lock(&self.error).clone(),
        }
    }

    /// The run's spill directory, if one was made.
    pub fn dir(&self) -> Option<PathBuf> {
        lock(&self.dir).as_ref().map(|d| d.path().to_path_buf())
    }

    /// Removes the run's spill directory (its files are unnamed: they go when their
    /// maps do). Called when the run ends, however it ends.
    pub fn close(&self) {
        if let Some(dir) = lock(&self.dir).take() {
            let path = dir.path().to_path_buf();
            let _ = dir.close();
            lock(&LIVE_DIRS).retain(|p| *p != path);
        }
    }

    fn register(&self, run: &Arc<Run>) {
        if run.bytes() < self.settings.min_bytes.max(1) {
            return;
        }
        let mut reg = lock(&self.runs);
        if reg.runs.len() >= 2 * reg.pruned.max(64) {
            reg.runs.retain(|w| w.strong_count() > 0);
            reg.pruned = reg.runs.len();
        }
        reg.runs.push(Arc::downgrade(run));
    }

    fn failed(&self) -> bool {
        lock(&self.error).is_some()
    }

    pub(crate) fn fail(&self, e: &ExecError) {
        let mut err = lock(&self.error);
        if err.is_none() {
            *err = Some(e.to_string());
        }
    }

    /// Spills runs, cold ones first, each group largest first, until the budget's bytes
    /// in use are at most `target`; returns the bytes given back to the budget.
    fn spill_until(&self, target: usize) -> usize {
        if self.failed() {
            return 0;
        }
        let now = self.epoch.load(Ordering::Relaxed);
        let mut candidates: Vec<(bool, usize, Arc<Run>)> = {
            let mut reg = lock(&self.runs);
            reg.runs.retain(|w| w.strong_count() > 0);
            reg.pruned = reg.runs.len();
            reg.runs
                .iter()
                .filter_map(Weak::upgrade)
                .filter(|r| !r.is_mapped())
                .map(|r| {
                    let hot = r.last_read() + HOT_EPOCHS > now;
                    (hot, r.bytes(), r)
                })
                .filter(|&(_, bytes, _)| bytes >= self.settings.min_bytes.max(1))
                .collect()
        };
        candidates.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let before = self.budget.used();
        for (_, _, run) in candidates {
            if self.budget.used() <= target {
                break;
            }
            if let Err(e) = self.spill_run(&run) {
                self.fail(&e);
                break;
            }
        }
        before.saturating_sub(self.budget.used())
    }

    /// Writes `run`'s rows to a file and switches the run to the file's map.
    fn spill_run(&self, run: &Run) -> ExecResult<()> {
        let data = run.data_unstamped();
        let RunData::Mem { rows, .. } = &*data else {
            return Ok(());
        };
        if rows.is_empty() {
            return Ok(());
        }
        let file = self.new_file()?;
        write_at(&file, rows, 0).map_err(|e| self.io_error("write a file in", e))?;
        let mapped = self.map(file, rows.len())?;
        drop(data);
        run.replace(RunData::Mapped(mapped));
        Ok(())
    }

    /// A new unnamed file in the run's spill directory (made on first use).
    pub fn new_file(&self) -> ExecResult<File> {
        let mut dir = lock(&self.dir);
        if dir.is_none() {
            let made = tempfile::Builder::new()
                .prefix("fixlog-spill-")
                .tempdir_in(&self.root)
                .map_err(|e| io_error("create a directory in", &self.root, e))?;
            lock(&LIVE_DIRS).push(made.path().to_path_buf());
            *dir = Some(made);
        }
        let path = dir
            .as_ref()
            .map(|d| d.path().to_path_buf())
            .unwrap_or_else(|| self.root.clone());
        tempfile::tempfile_in(&path).map_err(|e| io_error("create a file in", &path, e))
    }

    /// Maps `values` values written to `file`, counting them as spilled.
    pub fn map(&self, file: File, values: usize) -> ExecResult<Mapped> {
        let bytes = values * VALUE;
        // SAFETY: the file is unnamed (or unlinked) and only this process has it open;
        // nothing writes to it after this point, and its size is `bytes` (written in
        // full) and never changes, so the map stays valid for its lifetime (unchanged
        // but for holes its last reader punches: `Mapped::free_before`).
        let map = unsafe { memmap2::MmapOptions::new().len(bytes).map(&file) }
            .map_err(|e| self.io_error("map a file in", e))?;
        if map.as_ptr().align_offset(std::mem::align_of::<Value>()) != 0 || map.len() != bytes {
            return Err(ExecError::Backend(
                "internal error: a spill file's map is not aligned".into(),
            ));
        }
        let c = &self.counters;
        c.written.fetch_add(bytes, Ordering::Relaxed);
        c.files.fetch_add(1, Ordering::Relaxed);
        let now = c.mapped.fetch_add(bytes, Ordering::Relaxed) + bytes;
        c.peak.fetch_max(now, Ordering::Relaxed);
        Ok(Mapped {
            map,
            file,
            values,
            freed: AtomicUsize::new(0),
            counters: self.counters.clone(),
        })
    }

    /// An error of the run's spill directory (do not call with `self.dir` locked).
    fn io_error(&self, what: &str, e: std::io::Error) -> ExecError {
        io_error(what, &self.dir().unwrap_or_else(|| self.root.clone()), e)
    }

    /// Whether a merge's output of `bytes` should go straight to a file: it is large
    /// enough to spill, and holding it would pass the high mark.
    pub(crate) fn wants_file(&self, bytes: usize) -> bool {
        !self.failed()
            && bytes >= self.settings.min_bytes.max(1)
            && self.budget.used().saturating_add(bytes) > self.settings.high
    }

    /// The current operator epoch (see [`HOT_EPOCHS`]).
    fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        self.close();
    }
}

const VALUE: usize = std::mem::size_of::<Value>();

fn io_error(what: &str, path: &Path, e: std::io::Error) -> ExecError {
    ExecError::Backend(format!(
        "spilling to disk: cannot {what} {}: {e}",
        path.display()
    ))
}

/// A spilled run's rows: a read-only map of an unnamed file.
pub struct Mapped {
    map: memmap2::Mmap,
    /// The file, kept open to give its space back early ([`Mapped::free_before`]).
    file: File,
    values: usize,
    /// Bytes at the start whose disk space was given back.
    freed: AtomicUsize,
    counters: Arc<Counters>,
}

impl Mapped {
    pub fn rows(&self) -> &[Value] {
        // SAFETY: the map is `values * 4` bytes long, aligned for `u32` (checked in
        // `Spill::map`), read-only and its file's size never changes (a hole punched
        // by `free_before` reads as zeros); every bit pattern is a valid `u32`.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr() as *const Value, self.values) }
    }
}

impl fixlog_exec::tuples::SharedRows for Mapped {
    fn values(&self) -> &[Value] {
        self.rows()
    }
    fn in_file(&self) -> bool {
        true
    }
    fn release_before(&self, values: usize) {
        self.release_before(values);
    }
}

impl Mapped {
    /// Drops the pages of the first `values` values from this process (a reader going
    /// through the run in order is done with them), so that they no longer count in
    /// its resident memory; they stay readable.
    pub fn release_before(&self, values: usize) {
        let bytes = (values.min(self.values) * VALUE) & !4095;
        if bytes == 0 {
            return;
        }
        #[cfg(unix)]
        // SAFETY: the map is a shared, read-only map of a file that nothing writes (see
        // `Spill::map`). MADV_DONTNEED only drops this process's page-table entries for
        // the range: the next access faults the same bytes back in from the page cache
        // or the file, so every slice into the range (held by any reader) keeps reading
        // the same values. The range is within the map.
        let _ = unsafe {
            self.map
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, 0, bytes)
        };
    }
}

impl Mapped {
    /// Gives back the disk space (and page cache) of the first `values` values, in
    /// whole pages (all of it when `values` covers the run): a hole is punched in the file there, and the bytes no longer count
    /// as spilled. Reading them afterwards gives zeros, so only the run's last reader,
    /// done with them for good, may call this: a merge consuming a run it alone holds
    /// (`storage::union_runs_owned`). Does nothing where the system cannot punch holes.
    pub(crate) fn free_before(&self, values: usize) {
        let bytes = if values >= self.values {
            self.values * VALUE
        } else {
            (values * VALUE) & !4095
        };
        let done = self.freed.load(Ordering::Relaxed);
        if bytes <= done || !punch_hole(&self.file, done, bytes - done) {
            return;
        }
        self.freed.store(bytes, Ordering::Relaxed);
        self.counters
            .mapped
            .fetch_sub(bytes - done, Ordering::Relaxed);
    }
}

/// Punches a hole of `len` bytes at `offset` in `file` (keeping its size): its blocks
/// go back to the file system. False where that fails or the system has no such call.
#[cfg(target_os = "linux")]
fn punch_hole(file: &File, offset: usize, len: usize) -> bool {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return false;
    };
    // SAFETY: a plain system call on an open descriptor this struct owns; it changes
    // the file's contents (the range reads as zeros), which `Mapped::free_before`'s
    // callers allow, and never its size, so the map stays valid.
    let r = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            offset,
            len,
        )
    };
    r == 0
}

#[cfg(not(target_os = "linux"))]
fn punch_hole(_file: &File, _offset: usize, _len: usize) -> bool {
    false
}

impl std::fmt::Debug for Mapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mapped({} values)", self.values)
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        let freed = self.freed.load(Ordering::Relaxed);
        self.counters
            .mapped
            .fetch_sub(self.values * VALUE - freed, Ordering::Relaxed);
    }
}

/// Writes `values` at byte `offset` of `file`.
pub fn write_at(file: &File, values: &[Value], offset: u64) -> std::io::Result<()> {
    // SAFETY: `u32` has no padding; the byte view covers exactly the values' memory.
    let bytes = unsafe {
        std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values))
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.write_all_at(bytes, offset)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        let (mut bytes, mut offset) = (bytes, offset);
        while !bytes.is_empty() {
            let n = file.seek_write(bytes, offset)?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            bytes = &bytes[n..];
            offset += n as u64;
        }
        Ok(())
    }
}

// ---- the current run's spill state ----------------------------------------------------

thread_local! {
    static CURRENT: RefCell<Option<Arc<Spill>>> = const { RefCell::new(None) };
}

/// Sets the spill state runs made on this thread register with.
pub fn set_current(spill: Option<Arc<Spill>>) {
    CURRENT.with(|c| *c.borrow_mut() = spill);
}

/// The spill state of this thread's run, if spilling is on.
pub fn current() -> Option<Arc<Spill>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Registers a new run with the current spill state.
pub(crate) fn register(run: &Arc<Run>) {
    CURRENT.with(|c| {
        if let Some(s) = c.borrow().as_ref() {
            s.register(run);
        }
    });
}

/// The current operator epoch (0 without spilling).
pub(crate) fn epoch() -> u64 {
    CURRENT.with(|c| c.borrow().as_ref().map_or(0, |s| s.epoch()))
}

/// At an operator's entry: a new epoch, and spilling down to the low mark if the bytes
/// in use pass the high mark.
pub fn make_room() {
    let Some(s) = current() else { return };
    s.epoch.fetch_add(1, Ordering::Relaxed);
    if s.budget.used() > s.settings.high {
        s.spill_until(s.settings.low);
    }
}

/// Spills every run that can be; returns the bytes given back to the budget (an
/// operator that ran out of memory is worth running again if this is not 0).
pub fn spill_all() -> usize {
    current().map_or(0, |s| s.spill_until(0))
}

/// The current spill state if a merge output of `bytes` should go to a file.
pub(crate) fn file_for(bytes: usize) -> Option<Arc<Spill>> {
    current().filter(|s| s.wants_file(bytes))
}

/// The current spill state if rows of `bytes` brought to the host whole after a run
/// (another backend's results: [`crate::storage::host_run`]) should go to a file: they
/// are large enough to spill, and holding them would pass the low mark. (The rest of
/// the limit is for what reads them, writing the outputs, which cannot make room by
/// spilling as an operator can.)
pub fn result_file_for(bytes: usize) -> Option<Arc<Spill>> {
    current().filter(|s| {
        !s.failed()
            && bytes >= s.settings.min_bytes.max(1)
            && s.budget.used().saturating_add(bytes) > s.settings.low
    })
}

// ---- directories to remove on a signal --------------------------------------------------

static LIVE_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Removes the spill directories of runs in progress (for a signal handler that ends
/// the process: their files are unnamed, so the directories are empty or nearly).
pub fn remove_live_dirs() {
    let mut live = lock(&LIVE_DIRS);
    for dir in live.drain(..) {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Whether `dir` is usable for spilling (exists and is a directory).
pub fn check_dir(dir: &Path) -> Result<(), String> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(format!("{} is not a directory", dir.display())),
        Err(e) => Err(format!("{}: {e}", dir.display())),
    }
}

/// `bytes` as text (for messages).
pub fn size(bytes: usize) -> String {
    budget::size(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{union_runs, Run};

    /// A budget and a spill state on this thread that spill everything at once
    /// (marks 0), in a fresh directory.
    fn spill_everything(root: &Path, limit: Option<usize>) -> (Arc<Budget>, Arc<Spill>) {
        let budget = Budget::new(limit);
        let spill = Spill::new(
            budget.clone(),
            SpillSettings {
                temp_dir: Some(root.to_path_buf()),
                high: 0,
                low: 0,
                min_bytes: 0,
            },
        );
        budget::set_current(Some(budget.clone()));
        set_current(Some(spill.clone()));
        (budget, spill)
    }

    fn sorted_rows(n: u32, step: u32, offset: u32) -> Vec<Value> {
        (0..n).flat_map(|i| [i * step + offset, i]).collect()
    }

    #[test]
    fn a_spilled_run_reads_the_same_rows_and_leaves_the_budget() {
        let root = tempfile::tempdir().unwrap();
        let (budget, spill) = spill_everything(root.path(), None);
        let rows = sorted_rows(10_000, 2, 0);
        let run = Run::new(2, budget::try_copy(&rows).unwrap());
        assert_eq!(budget.used(), rows.len() * 4);
        assert!(!run.is_mapped());
        // A reader holding the rows while the run spills keeps valid rows.
        let held = run.data();
        make_room();
        assert!(run.is_mapped());
        assert_eq!(&held[..], &rows[..]);
        assert_eq!(budget.used(), rows.len() * 4, "still held by the reader");
        drop(held);
        assert_eq!(budget.used(), 0, "the memory went with the last reader");
        assert_eq!(&run.data()[..], &rows[..]);
        // A reader done with the pages lets them go; the rows stay readable.
        let data = run.data();
        fixlog_exec::tuples::SharedRows::release_before(&*data, rows.len());
        assert_eq!(&data[..], &rows[..]);
        drop(data);
        assert_eq!(run.len, 10_000);
        let st = spill.stats();
        assert_eq!((st.files, st.written_bytes), (1, rows.len() * 4));
        assert_eq!(st.mapped_bytes, rows.len() * 4);
        // One directory in the root while the run lasts, none after.
        let dir = spill.dir().unwrap();
        assert!(dir.starts_with(root.path()) && dir.is_dir());
        assert_eq!(run.clone().into_rows().unwrap(), rows);
        drop(run);
        assert_eq!(spill.stats().mapped_bytes, 0);
        assert_eq!(spill.stats().peak_bytes, rows.len() * 4);
        spill.close();
        assert!(!dir.exists());
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
        set_current(None);
        budget::set_current(None);
    }

    #[test]
    fn merges_of_spilled_runs_stream_their_output_to_a_file() {
        let root = tempfile::tempdir().unwrap();
        let (budget, spill) = spill_everything(root.path(), None);
        // Two disjoint runs (even and odd first columns), larger than a write chunk.
        let (even, odd) = (sorted_rows(100_000, 2, 0), sorted_rows(70_000, 2, 1));
        let a = Run::new(2, budget::try_copy(&even).unwrap());
        let b = Run::new(2, budget::try_copy(&odd).unwrap());
        assert!(spill_all() > 0);
        assert!(a.is_mapped() && b.is_mapped());
        let merged = union_runs(2, &a, &b).unwrap();
        assert!(merged.is_mapped(), "the output went straight to a file");
        assert_eq!(budget.used(), 0);
        let mut expected: Vec<[Value; 2]> = even
            .chunks(2)
            .chain(odd.chunks(2))
            .map(|r| [r[0], r[1]])
            .collect();
        expected.sort_unstable();
        let got: Vec<[Value; 2]> = merged.data().chunks(2).map(|r| [r[0], r[1]]).collect();
        assert_eq!(got, expected);
        assert_eq!(merged.len, 170_000);
        assert_eq!(spill.stats().files, 3);
        set_current(None);
        budget::set_current(None);
    }

    #[test]
    fn a_merge_gives_back_the_disk_space_of_the_runs_it_alone_holds() {
        let (even, odd) = (sorted_rows(100_000, 2, 0), sorted_rows(70_000, 2, 1));
        let bytes = (even.len() + odd.len()) * 4;
        let mut expected: Vec<Value> = Vec::new();
        let mut pairs: Vec<[Value; 2]> = even
            .chunks(2)
            .chain(odd.chunks(2))
            .map(|r| [r[0], r[1]])
            .collect();
        pairs.sort_unstable();
        pairs.iter().for_each(|r| expected.extend_from_slice(r));
        for shared in [true, false] {
            let root = tempfile::tempdir().unwrap();
            let (_budget, spill) = spill_everything(root.path(), None);
            let a = Run::new(2, budget::try_copy(&even).unwrap());
            let b = Run::new(2, budget::try_copy(&odd).unwrap());
            assert!(spill_all() > 0);
            let held = shared.then(|| (a.clone(), b.clone()));
            let merged = crate::storage::union_runs_owned(2, a, b).unwrap();
            assert!(merged.is_mapped());
            assert_eq!(&merged.data()[..], &expected[..]);
            let st = spill.stats();
            if let Some((a, b)) = held {
                // Others still read the inputs: they are whole, and were on disk
                // beside the output.
                assert_eq!((&a.data()[..], &b.data()[..]), (&even[..], &odd[..]));
                assert_eq!(st.peak_bytes, 2 * bytes);
                assert_eq!(st.mapped_bytes, 2 * bytes);
            } else if cfg!(target_os = "linux") {
                // Given back before the output was mapped: never both on disk.
                assert_eq!(st.peak_bytes, bytes);
                assert_eq!(st.mapped_bytes, bytes);
            }
            drop(merged);
            set_current(None);
            budget::set_current(None);
        }
    }

    #[test]
    fn a_merge_to_a_file_reports_its_inputs_consumed_wave_by_wave() {
        let root = tempfile::tempdir().unwrap();
        let (_budget, spill) = spill_everything(root.path(), None);
        let (even, odd) = (sorted_rows(300_000, 2, 0), sorted_rows(90_000, 2, 1));
        let calls = RefCell::new(Vec::new());
        let merged = crate::rows::union_disjoint_to_file(
            2,
            &even,
            &odd,
            &spill,
            crate::rows::PART_ROWS * 2,
            &|i, j| calls.borrow_mut().push((i, j)),
        )
        .unwrap();
        let calls = calls.into_inner();
        assert!(calls.len() >= 4, "{calls:?}");
        assert!(calls
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        assert_eq!(calls.last(), Some(&(even.len(), odd.len())));
        // Every row before a reported prefix is in the output before the rows after it.
        let rows = merged.rows();
        for &(i, j) in &calls {
            let n = (i + j) / 2;
            let last_out = &rows[(n - 1) * 2..n * 2];
            assert!(even[..i]
                .chunks(2)
                .chain(odd[..j].chunks(2))
                .any(|r| r == last_out));
        }
        set_current(None);
        budget::set_current(None);
    }

    #[test]
    fn hot_runs_are_spilled_after_cold_ones() {
        let root = tempfile::tempdir().unwrap();
        let budget = Budget::new(None);
        let spill = Spill::new(
            budget.clone(),
            SpillSettings {
                temp_dir: Some(root.path().to_path_buf()),
                high: 0,
                low: 0,
                min_bytes: 1,
            },
        );
        budget::set_current(Some(budget.clone()));
        set_current(Some(spill.clone()));
        let cold = Run::new(2, budget::try_copy(&sorted_rows(1000, 1, 0)).unwrap());
        let hot = Run::new(2, budget::try_copy(&sorted_rows(4000, 1, 0)).unwrap());
        for _ in 0..HOT_EPOCHS {
            spill.epoch.fetch_add(1, Ordering::Relaxed);
        }
        let _ = hot.data();
        // Spill until 4000 rows' bytes are left: the cold (smaller) run goes first,
        // which is enough.
        spill.spill_until(4000 * 8);
        assert!(cold.is_mapped());
        assert!(!hot.is_mapped());
        set_current(None);
        budget::set_current(None);
    }

    #[test]
    fn a_directory_that_cannot_be_written_stops_spilling_without_losing_rows() {
        let root = tempfile::tempdir().unwrap();
        let missing = root.path().join("missing");
        let (_budget, spill) = spill_everything(&missing, None);
        let rows = sorted_rows(1000, 1, 0);
        let run = Run::new(2, budget::try_copy(&rows).unwrap());
        assert_eq!(spill_all(), 0);
        assert!(!run.is_mapped());
        assert_eq!(&run.data()[..], &rows[..]);
        let err = spill.stats().error.unwrap();
        assert!(
            err.contains("spilling to disk: cannot create a directory in"),
            "{err}"
        );
        assert!(err.contains("missing"), "{err}");
        set_current(None);
        budget::set_current(None);
    }
}
