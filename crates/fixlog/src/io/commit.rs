//! Writing outputs all or nothing: each output goes to a temporary file beside its
//! destination, and the files are renamed into place together or not at all; the
//! temporary files are removed on failure, on SIGINT/SIGTERM/SIGHUP and, once their run
//! is gone, by the next run. Apart because it deals with files and signals, not formats.

use super::format::{format_tuples_into, OutputFormat, TextFormat};
use super::{delimiter, header_line, io_kind, param_is_true};
use crate::error::Error;
use crate::ordered::ReadMemory;
use fixlog_exec::driver::Tuples;
use fixlog_logical::{IoDirective, Relation, SymbolTable};
use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where one `.output` directive's rows go.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputTarget {
    /// Printed (`IO=stdout`, `IO=json`, or `-D -`, see [`as_written`]).
    Stdout,
    /// A text file (`IO=file`, `IO=jsonfile`).
    File(PathBuf),
    /// An SQLite database (`IO=sqlite`), its directory resolved so that two spellings
    /// of its name are one database ([`super::sqlite::same_file_key`]).
    Database(PathBuf),
}

impl OutputTarget {
    /// The file written, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            OutputTarget::Stdout => None,
            OutputTarget::File(p) | OutputTarget::Database(p) => Some(p),
        }
    }
}

/// Where one `.output` directive's rows go for output directory `out_dir` (the
/// directive taken [`as_written`]).
pub fn output_target(relation: &Relation, directive: &IoDirective, out_dir: &Path) -> OutputTarget {
    let directive = as_written(directive, out_dir);
    let extension = match io_kind(&directive) {
        "stdout" | "json" => return OutputTarget::Stdout,
        "sqlite" => {
            let path = super::sqlite::sqlite_path(relation, &directive, out_dir);
            return OutputTarget::Database(super::sqlite::same_file_key(&path));
        }
        "jsonfile" => "json",
        _ if param_is_true(&directive, "compress") => "csv.gz",
        _ => "csv",
    };
    let name = directive
        .params
        .get("filename")
        .cloned()
        .unwrap_or_else(|| format!("{}.{extension}", relation.name));
    OutputTarget::File(if Path::new(&name).is_absolute() {
        PathBuf::from(&name)
    } else {
        out_dir.join(&name)
    })
}

/// An output directive as Soufflé applies it for output directory `out_dir`: with `-`
/// (`-D -`) every output prints on stdout with its header line, whatever its `IO`
/// (Soufflé sets `IO=stdout` and `headers=true` on each); otherwise as it is.
pub fn as_written<'d>(directive: &'d IoDirective, out_dir: &Path) -> Cow<'d, IoDirective> {
    if out_dir != Path::new("-") {
        return Cow::Borrowed(directive);
    }
    let mut d = directive.clone();
    d.params.insert("IO".into(), "stdout".into());
    d.params.insert("headers".into(), "true".into());
    Cow::Owned(d)
}

/// How a directive's rows are written, and the attribute names JSON objects are keyed
/// by (`IO=json`/`jsonfile` with `format=object`).
fn output_format<'a>(
    directive: &IoDirective,
    delimiter: &'a str,
    names: &'a Option<Vec<String>>,
) -> OutputFormat<'a> {
    match io_kind(directive) {
        "json" | "jsonfile" => OutputFormat::Json {
            names: names.as_deref(),
        },
        _ => OutputFormat::Text(TextFormat {
            delimiter,
            rfc4180: param_is_true(directive, "rfc4180"),
        }),
    }
}

/// The attribute names of `relation` where `directive` writes JSON objects.
fn json_keys(relation: &Relation, directive: &IoDirective) -> Option<Vec<String>> {
    (directive
        .params
        .get("format")
        .is_some_and(|f| f == "object"))
    .then(|| relation.columns.iter().map(|c| c.name.clone()).collect())
}

/// Prints one `.output` directive's relation on stdout: framed as Soufflé frames it
/// (`IO=stdout`), or as JSON (`IO=json`). Pass the directive [`as_written`] for the
/// output directory.
pub fn write_output_stdout(
    relation: &Relation,
    directive: &IoDirective,
    tuples: &Tuples,
    symbols: &SymbolTable,
    memory: &ReadMemory,
) -> Result<(), Error> {
    let types = relation.types();
    let delim = delimiter(directive);
    let keys = json_keys(relation, directive);
    let format = output_format(directive, &delim, &keys);
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    let res = match format {
        OutputFormat::Json { .. } => {
            format_tuples_into(tuples, &types, symbols, &format, memory, |p| {
                lock.write_all(p.as_bytes())
            })
        }
        OutputFormat::Text(_) => {
            let header = match param_is_true(directive, "headers") {
                true => header_line(relation, &delim),
                false => String::new(),
            };
            write!(
                lock,
                "---------------\n{}\n{header}===============\n",
                relation.name
            )
            .and_then(|_| {
                format_tuples_into(tuples, &types, symbols, &format, memory, |p| {
                    lock.write_all(p.as_bytes())
                })
            })
            .and_then(|_| writeln!(lock, "==============="))
        }
    }
    .and_then(|_| lock.flush());
    res.map_err(|source| Error::WriteFile {
        path: PathBuf::from("<stdout>"),
        source,
    })
}

/// Writes one `.output` directive's relation into a temporary file beside `path`; the
/// caller renames it into place with [`commit_outputs`] once every output is written.
/// Pass the directive [`as_written`] for the output directory.
pub fn write_output_file(
    relation: &Relation,
    directive: &IoDirective,
    path: &Path,
    tuples: &Tuples,
    symbols: &SymbolTable,
    memory: &ReadMemory,
) -> Result<TempOutput, Error> {
    let json = match io_kind(directive) {
        "file" => false,
        "jsonfile" => true,
        other => {
            return Err(Error::BadInput(format!(
                "`.output {}`: IO={other} is not written as a text file (only IO=file and IO=jsonfile are)",
                relation.name
            )))
        }
    };
    let types = relation.types();
    let delim = delimiter(directive);
    let keys = json_keys(relation, directive);
    let format = output_format(directive, &delim, &keys);
    // Soufflé's JSON writer takes neither headers nor compression.
    let header =
        (!json && param_is_true(directive, "headers")).then(|| header_line(relation, &delim));
    let write_text = |out: &mut dyn Write| {
        if let Some(h) = &header {
            out.write_all(h.as_bytes())?;
        }
        format_tuples_into(tuples, &types, symbols, &format, memory, |p| {
            out.write_all(p.as_bytes())
        })
    };
    write_temporary(path, |file| {
        if !json && param_is_true(directive, "compress") {
            let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
            write_text(&mut gz)?;
            gz.finish().map(|_| ())
        } else {
            write_text(file)
        }
    })
}

/// Writes the outputs of `relations` (each with its tuples) into `out_dir`, all or
/// nothing: every file, and every SQLite database with all the relations that go into
/// it, to a temporary file, renamed into place together once all are written; then
/// what prints on stdout.
pub fn write_outputs(
    relations: &[(&Relation, &Tuples)],
    out_dir: &Path,
    symbols: &SymbolTable,
    memory: &ReadMemory,
) -> Result<(), Error> {
    let mut files = Vec::new();
    let mut printed = Vec::new();
    // SQLite databases, each with the relations that go into it (in program order).
    let mut databases: Vec<(PathBuf, Vec<(&Relation, &Tuples)>)> = Vec::new();
    for &(relation, tuples) in relations {
        for directive in &relation.outputs {
            let directive = as_written(directive, out_dir);
            match output_target(relation, &directive, out_dir) {
                OutputTarget::Stdout => printed.push((relation, directive, tuples)),
                OutputTarget::File(path) => files.push(write_output_file(
                    relation, &directive, &path, tuples, symbols, memory,
                )?),
                OutputTarget::Database(path) => {
                    match databases.iter_mut().find(|(p, _)| *p == path) {
                        Some((_, into)) => into.push((relation, tuples)),
                        None => databases.push((path, vec![(relation, tuples)])),
                    }
                }
            }
        }
    }
    for (path, into) in &databases {
        files.push(super::sqlite::write_sqlite(path, into, symbols, memory)?);
    }
    for (relation, directive, tuples) in printed {
        write_output_stdout(relation, &directive, tuples, symbols, memory)?;
    }
    commit_outputs(files)
}

/// Checks, before evaluating, that an output file can be put at `path`: it must not be
/// a directory.
pub fn check_output_target(path: &Path) -> Result<(), Error> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(Error::WriteFile {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::IsADirectory, "it is a directory"),
        }),
        _ => Ok(()),
    }
}

/// Renames every written output into place, all or nothing: each destination is
/// checked first, the previous file at each destination is kept (a hard link) until
/// every rename has succeeded, and if one fails the outputs already renamed are put
/// back as they were. On failure every temporary file is removed.
pub fn commit_outputs(temps: Vec<TempOutput>) -> Result<(), Error> {
    test_hook_pause(&temps);
    commit_outputs_with(temps, |from, to| std::fs::rename(from, to))
}

/// Test hook, for the test suite only: with `FIXLOG_TEST_PAUSE_BEFORE_RENAME_MS=N` in
/// the environment, a run that has written its outputs to temporary files waits `N`
/// milliseconds before renaming them into place, so that tests can interrupt it or
/// change the output directory at that point deterministically.
fn test_hook_pause(temps: &[TempOutput]) {
    if temps.is_empty() {
        return;
    }
    if let Some(ms) = std::env::var("FIXLOG_TEST_PAUSE_BEFORE_RENAME_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// What was at an output's destination before it was renamed into place.
enum Previous {
    Nothing,
    /// Kept as this hard link until every output is in place.
    Kept(PathBuf),
    /// There was a file but it could not be kept (no hard links on this file system).
    Lost,
}

/// [`commit_outputs`] with the rename as a parameter (tests inject failures).
fn commit_outputs_with(
    mut temps: Vec<TempOutput>,
    rename: impl Fn(&Path, &Path) -> std::io::Result<()>,
) -> Result<(), Error> {
    // Under the lock: a signal waits until every output is in place or put back. The
    // temporary files left (after a failure) are removed when `temps` is dropped, after
    // the lock is released.
    let mut live = live_temps();
    let result = rename_all(&mut temps, &mut live, rename);
    drop(live);
    result
}

fn rename_all(
    temps: &mut [TempOutput],
    live: &mut Vec<PathBuf>,
    rename: impl Fn(&Path, &Path) -> std::io::Result<()>,
) -> Result<(), Error> {
    for t in temps.iter() {
        check_output_target(&t.target)?;
    }
    let mut done: Vec<(PathBuf, Previous)> = Vec::new();
    let mut failure = None;
    for t in temps.iter_mut() {
        let previous = match std::fs::symlink_metadata(&t.target) {
            Err(_) => Previous::Nothing,
            Ok(_) => match create_temp_name(parent_dir(&t.target), &t.target, |p| {
                std::fs::hard_link(&t.target, p)
            }) {
                Ok(((), backup)) => Previous::Kept(backup),
                Err(_) => Previous::Lost,
            },
        };
        match rename(&t.temp, &t.target) {
            Ok(()) => {
                t.done = true;
                live.retain(|p| p != &t.temp);
                done.push((t.target.clone(), previous));
            }
            Err(source) => {
                if let Previous::Kept(backup) = previous {
                    let _ = std::fs::remove_file(backup);
                }
                failure = Some(Error::WriteFile {
                    path: t.target.clone(),
                    source,
                });
                break;
            }
        }
    }
    let Some(failure) = failure else {
        for (_, previous) in done {
            if let Previous::Kept(backup) = previous {
                let _ = std::fs::remove_file(backup);
            }
        }
        return Ok(());
    };
    // Undo in reverse order, so a file written twice gets its first state back.
    for (target, previous) in done.into_iter().rev() {
        match previous {
            Previous::Kept(backup) => {
                let _ = std::fs::rename(&backup, &target);
            }
            Previous::Nothing => {
                let _ = std::fs::remove_file(&target);
            }
            Previous::Lost => {}
        }
    }
    Err(failure)
}

/// The directory a file is in (`.` for a bare name).
fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Checks that the output directory (`-D`) exists and is a directory, before anything
/// is evaluated. `-` (stdout) is always fine. Soufflé rejects a missing output
/// directory too (`output directory X does not exists`); it does not create it.
pub fn check_output_dir(dir: &Path) -> Result<(), Error> {
    if dir == Path::new("-") {
        return Ok(());
    }
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::NotADirectory(dir.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(Error::NoOutputDir(dir.to_path_buf()))
        }
        Err(source) => Err(Error::WriteFile {
            path: dir.to_path_buf(),
            source,
        }),
    }
}

/// Makes sure `dir` is a directory: creates it and its missing parents (directories
/// named in an output's `filename`), or says which existing part is not a directory.
fn ensure_dir(dir: &Path) -> Result<(), Error> {
    let mut existing = dir;
    loop {
        match std::fs::metadata(existing) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => return Err(Error::NotADirectory(existing.to_path_buf())),
            Err(_) => match existing.parent().filter(|p| !p.as_os_str().is_empty()) {
                Some(parent) => existing = parent,
                None => break,
            },
        }
    }
    std::fs::create_dir_all(dir).map_err(|source| Error::WriteFile {
        path: dir.to_path_buf(),
        source,
    })
}

/// Writes a file through `write` into a temporary file beside `path`, then renames it
/// to `path`: a failure leaves no half-written file.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), Error> {
    let tmp = write_temporary(path, write)?;
    tmp.persist()
}

/// Prefix of the temporary files outputs are written to before they are renamed into
/// place: `.fixlog-tmp-<pid>-<random>.<file name>`. The pid lets a later run recognise
/// the leftovers of a process that was killed ([`remove_stale_temporaries`]).
pub const TEMP_PREFIX: &str = ".fixlog-tmp-";

/// This process's temporary output files that are neither renamed nor removed yet; the
/// signal handler ([`remove_temporaries_on_signals`]) removes them. Files are created,
/// renamed and removed while this lock is held, so a signal never sees half a change.
static LIVE_TEMPS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn live_temps() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE_TEMPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes SIGINT, SIGTERM and SIGHUP remove this process's temporary output files before
/// the process ends as the signal's default action ends it (the shell reports 130, 143,
/// 129). A handler thread waits for the signals; nothing else changes. (SIGKILL cannot
/// be caught: its leftovers are removed by the next run writing into the same
/// directory, see [`remove_stale_temporaries`].)
#[cfg(unix)]
pub fn remove_temporaries_on_signals() -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("fixlog-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                // Keep the lock: no new temporary file may appear from here on.
                let mut live = live_temps();
                for path in live.drain(..) {
                    let _ = std::fs::remove_file(path);
                }
                // The CPU backend's spill directories (their files are unnamed).
                fixlog_cpu::spill::remove_live_dirs();
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
        })?;
    Ok(())
}

/// Nothing to do where there are no such signals.
#[cfg(not(unix))]
pub fn remove_temporaries_on_signals() -> std::io::Result<()> {
    Ok(())
}

/// Removes the temporary output files that runs which no longer exist left in `dir`
/// (killed with SIGKILL, or by a power cut, while writing): `.fixlog-tmp-<pid>-…` whose
/// process is gone. Only on Linux, where `/proc/<pid>` says whether a process exists;
/// elsewhere they are left. A pid that was reused by another process keeps its files
/// until that process ends too.
pub fn remove_stale_temporaries(dir: &Path) {
    #[cfg(target_os = "linux")]
    {
        if !Path::new("/proc/self").exists() {
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let me = std::process::id();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix(TEMP_PREFIX))
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse::<u32>().ok())
            else {
                continue;
            };
            let is_file = entry.file_type().is_ok_and(|t| t.is_file());
            if is_file && pid != me && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = dir;
}

/// An output written to a temporary file beside its destination; removed when
/// dropped unless [`TempOutput::persist`]ed.
#[derive(Debug)]
pub struct TempOutput {
    temp: PathBuf,
    target: PathBuf,
    done: bool,
}

impl TempOutput {
    /// The temporary file.
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// The file it becomes.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Renames the temporary file to its destination.
    pub fn persist(self) -> Result<(), Error> {
        commit_outputs(vec![self])
    }
}

impl Drop for TempOutput {
    fn drop(&mut self) {
        if !self.done {
            let mut live = live_temps();
            let _ = std::fs::remove_file(&self.temp);
            live.retain(|p| p != &self.temp);
        }
    }
}

/// Writes `path`'s future contents through `write` into a new temporary file in the
/// same directory (see [`TEMP_PREFIX`]). The file is created with mode `0666` less the
/// umask (`0644` under the usual umask), as Soufflé's outputs are.
pub fn write_temporary(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<TempOutput, Error> {
    let err = |source| Error::WriteFile {
        path: path.to_path_buf(),
        source,
    };
    let dir = parent_dir(path);
    ensure_dir(dir)?;
    // Once per directory and process: the leftovers of killed runs.
    {
        static CLEANED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
        let mut cleaned = CLEANED.lock().unwrap_or_else(|e| e.into_inner());
        if !cleaned.iter().any(|d| d == dir) {
            cleaned.push(dir.to_path_buf());
            remove_stale_temporaries(dir);
        }
    }
    let mut live = live_temps();
    let (file, temp) = create_temp_name(dir, path, |temp| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        // The kernel applies the umask to this mode.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o666);
        options.open(temp)
    })
    .map_err(err)?;
    live.push(temp.clone());
    drop(live);
    let tmp = TempOutput {
        temp,
        target: path.to_path_buf(),
        done: false,
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    write(&mut out).map_err(err)?;
    let file = out.into_inner().map_err(|e| err(e.into_error()))?;
    drop(file);
    Ok(tmp)
}

/// A random-enough 32-bit number for temporary names (no dependency: the standard
/// library's randomly keyed hasher over the time and a counter).
fn random_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    h.finish() as u32
}

/// Makes a new `dir/.fixlog-tmp-<pid>-<random>.<name of target>` with `create`, which
/// must fail with `AlreadyExists` when the name is taken (another name is tried then).
fn create_temp_name<T>(
    dir: &Path,
    target: &Path,
    mut create: impl FnMut(&Path) -> std::io::Result<T>,
) -> std::io::Result<(T, PathBuf)> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Keep the whole name within the usual 255-byte limit.
    let mut cut = name.len().min(200);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let name = &name[..cut];
    let mut last = None;
    for _ in 0..64 {
        let temp = dir.join(format!(
            "{TEMP_PREFIX}{}-{:08x}.{name}",
            std::process::id(),
            random_u32()
        ));
        match create(&temp) {
            Ok(made) => return Ok((made, temp)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(path: &Path, text: &str) -> TempOutput {
        write_temporary(path, |f| f.write_all(text.as_bytes())).unwrap()
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn commit_renames_every_output() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
        std::fs::write(&a, "old a\n").unwrap();
        let temps = vec![temp(&a, "new a\n"), temp(&b, "new b\n")];
        assert_eq!(names(dir.path()).len(), 3, "a.csv and two temporaries");
        commit_outputs(temps).unwrap();
        assert_eq!(names(dir.path()), ["a.csv", "b.csv"]);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "new a\n");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "new b\n");
    }

    #[test]
    fn a_failed_rename_puts_every_output_back() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a.csv"),
            dir.path().join("b.csv"),
            dir.path().join("c.csv"),
        );
        std::fs::write(&a, "old a\n").unwrap();
        std::fs::write(&c, "old c\n").unwrap();
        // a (replacing a file) and b (new) are renamed, then c fails.
        let temps = vec![
            temp(&a, "new a\n"),
            temp(&b, "new b\n"),
            temp(&c, "new c\n"),
        ];
        let err = commit_outputs_with(temps, |from, to| {
            if to.ends_with("c.csv") {
                Err(std::io::Error::other("disk on fire"))
            } else {
                std::fs::rename(from, to)
            }
        })
        .unwrap_err();
        assert!(err.to_string().contains("c.csv: disk on fire"), "{err}");
        assert_eq!(names(dir.path()), ["a.csv", "c.csv"]);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a\n");
        assert_eq!(std::fs::read_to_string(&c).unwrap(), "old c\n");
    }

    #[test]
    fn a_directory_in_the_way_fails_before_any_rename() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
        std::fs::write(&a, "old a\n").unwrap();
        let temps = vec![temp(&a, "new a\n"), temp(&b, "new b\n")];
        std::fs::create_dir(&b).unwrap();
        let err = commit_outputs(temps).unwrap_err();
        assert!(
            err.to_string().ends_with("b.csv: it is a directory"),
            "{err}"
        );
        assert_eq!(names(dir.path()), ["a.csv", "b.csv"]);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a\n");
    }

    #[test]
    fn an_output_written_twice_is_put_back_to_its_first_state() {
        let dir = tempfile::tempdir().unwrap();
        let (a, z) = (dir.path().join("a.csv"), dir.path().join("z.csv"));
        std::fs::write(&a, "old a\n").unwrap();
        let temps = vec![temp(&a, "first\n"), temp(&a, "second\n"), temp(&z, "z\n")];
        let err = commit_outputs_with(temps, |from, to| {
            if to.ends_with("z.csv") {
                Err(std::io::Error::other("no"))
            } else {
                std::fs::rename(from, to)
            }
        });
        assert!(err.is_err());
        assert_eq!(names(dir.path()), ["a.csv"]);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a\n");
    }
}
