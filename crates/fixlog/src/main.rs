//! The `fixlog` command line. A thin layer over the library API (`fixlog::Fixlog`).

use clap::{Parser, Subcommand, ValueEnum};
use fixlog::{
    parse_bytes, BackendKind, Error, Fixlog, JoinStrategy, PlanOptions, RunOptions, RunStats,
    WriteStats,
};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "fixlog",
    version,
    about = "Soufflé-compatible Datalog on NVIDIA GPUs and every CPU core"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate a program (like `souffle PROGRAM -F FACTS -D OUT`).
    Run {
        /// The Datalog program (Soufflé syntax).
        program: PathBuf,
        /// Directory of input facts (`.input r` reads `FACT_DIR/r.facts`).
        #[arg(short = 'F', long = "fact-dir", default_value = ".")]
        fact_dir: PathBuf,
        /// Directory for outputs (`.output r` writes `OUTPUT_DIR/r.csv`); `-` prints to stdout.
        #[arg(short = 'D', long = "output-dir", default_value = ".")]
        output_dir: PathBuf,
        /// Worker threads (default: all cores).
        #[arg(short = 'j', long = "jobs")]
        jobs: Option<usize>,
        /// Where to evaluate: `auto` uses the GPU when one is usable, else the CPU.
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendArg,
        /// Most device memory the GPU may use (bytes; K, M, G, T suffixes are powers of
        /// 1024). Default: 90% of the free memory.
        #[arg(long, value_parser = parse_bytes, value_name = "BYTES")]
        gpu_memory_limit: Option<usize>,
        /// Most memory the CPU backend may hold in relations, indexes and batches
        /// (bytes; K, M, G, T suffixes are powers of 1024). When 3/4 of it is in use,
        /// the largest runs of relations and indexes are spilled to files in --temp-dir
        /// until 1/2 is; going over it ends the run with an error naming the relation.
        /// Default: no limit, and spilling starts at 60% of the physical memory.
        #[arg(long, value_parser = parse_bytes, value_name = "BYTES")]
        memory_limit: Option<usize>,
        /// Where the CPU backend spills runs that do not fit in memory (one
        /// subdirectory per run, removed at the end). Default: the system's temporary
        /// directory ($TMPDIR or /tmp).
        #[arg(long, value_name = "DIR")]
        temp_dir: Option<PathBuf>,
        /// Never spill to disk: --memory-limit is then only a hard limit.
        #[arg(long, conflicts_with = "temp_dir")]
        no_spill: bool,
        /// Print statistics on stderr at the end: sizes, iterations, time per phase.
        #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "text")]
        stats: Option<StatsFormat>,
        /// Never show the progress line.
        #[arg(long)]
        quiet: bool,
        /// Disable warnings (Soufflé's `-w`): none are printed, and a missing `.input`
        /// file is read as empty instead of being an error.
        #[arg(short = 'w', long = "no-warn")]
        no_warn: bool,
        /// How rule bodies are joined: `auto` uses worst-case-optimal joins for cyclic
        /// bodies (triangles, cliques, cycles) and pairwise joins otherwise; `wcoj` and
        /// `pairwise` force one (for tests and benchmarks).
        #[arg(long, value_enum, default_value = "auto")]
        join: JoinArg,
        #[command(flatten)]
        front: FrontArgs,
        #[command(flatten)]
        magic: MagicArgs,
    },
    /// Count or list the matches of a graph pattern (a Cypher subset) in a graph.
    #[command(
        after_help = "Example: fixlog match --edges g.tsv --undirected 'MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)'"
    )]
    Match {
        /// The pattern: `MATCH (a:Label)-[:TYPE]->(b), (b)--(c) [WHERE id(a) < id(c) AND
        /// c:Label] RETURN count(*) | a, b, c [LIMIT n]`.
        pattern: String,
        /// Edge list: `src dst [type]` per line (tab or spaces; `#` comments; gzip read
        /// transparently). Node ids are non-negative integers.
        #[arg(long, value_name = "FILE")]
        edges: PathBuf,
        /// Node labels: `id<TAB>label[,label...]` per line.
        #[arg(long, value_name = "FILE")]
        nodes: Option<PathBuf>,
        /// Treat every edge as undirected.
        #[arg(long)]
        undirected: bool,
        /// `iso`: pattern nodes map to distinct graph nodes (subgraph isomorphism,
        /// non-induced); `homo`: they may share one (homomorphism, walk semantics).
        #[arg(long, value_enum, default_value = "iso")]
        semantics: SemanticsArg,
        /// Worker threads (default: all cores). Output is the same for every -j.
        #[arg(short = 'j', long = "jobs")]
        jobs: Option<usize>,
        /// Print the plan (variable order, candidate filters, the join) instead of running.
        #[arg(long)]
        explain: bool,
        /// Print load and match times on stderr.
        #[arg(long)]
        stats: bool,
        /// Where to match: `auto` uses the GPU when there is a usable one (the same
        /// plan, the same counts and rows in the same order), else the CPU.
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendArg,
        /// The most device memory the GPU matcher may use (bytes; K, M, G, T suffixes).
        #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
        gpu_memory_limit: Option<usize>,
    },
    /// Print the strata and the plan of every rule variant.
    Explain {
        program: PathBuf,
        /// With `cuda` (or `auto` on a machine with a usable GPU), say for each operator
        /// whether it runs on the device or on the host.
        #[arg(long, value_enum, default_value = "cpu")]
        backend: BackendArg,
        /// How rule bodies are joined (as for `run`).
        #[arg(long, value_enum, default_value = "auto")]
        join: JoinArg,
        #[command(flatten)]
        front: FrontArgs,
        #[command(flatten)]
        magic: MagicArgs,
    },
}

/// Soufflé's magic-set options (they replace the program's `.pragma
/// "magic-transform"`).
#[derive(clap::Args)]
struct MagicArgs {
    /// Apply the magic-set transform to these relations (comma-separated; `*`: all that
    /// can be), so that bound questions compute only what they ask (Soufflé's
    /// `--magic-transform`).
    #[arg(short = 'm', long = "magic-transform", value_name = "RELATIONS")]
    magic_transform: Option<String>,
    /// Never apply the magic-set transform to these relations.
    #[arg(long = "magic-transform-exclude", value_name = "RELATIONS")]
    magic_transform_exclude: Option<String>,
}

impl MagicArgs {
    fn options(&self) -> fixlog::CheckOptions {
        fixlog::CheckOptions {
            magic_transform: self.magic_transform.clone(),
            magic_transform_exclude: self.magic_transform_exclude.clone(),
        }
    }
}

/// How the program is read: preprocessing and user-defined functor libraries.
#[derive(clap::Args)]
struct FrontArgs {
    /// Define a macro for the preprocessor: `NAME=VALUE` or `NAME` (value 1); several
    /// may be given in one argument, separated by spaces (Soufflé's `-M`).
    #[arg(short = 'M', long = "macro", value_name = "NAME=VALUE")]
    macros: Vec<String>,
    /// A directory searched for `#include`d files (after the including file's own).
    #[arg(short = 'I', long = "include-dir", value_name = "DIR")]
    include_dirs: Vec<PathBuf>,
    /// Preprocess with this shell command (run with `sh -c`, program on standard input,
    /// e.g. `mcpp -P -W0` or `cpp -P`) instead of Fixlog's own preprocessor.
    #[arg(long, value_name = "CMD", conflicts_with = "no_preprocessor")]
    preprocessor: Option<String>,
    /// Do not preprocess (`#` lines other than `#include "file"` are then errors).
    #[arg(long)]
    no_preprocessor: bool,
    /// A directory searched for functor libraries (before the working directory).
    #[arg(short = 'L', long = "library-dir", value_name = "DIR")]
    library_dirs: Vec<PathBuf>,
    /// A library of user-defined functors: `-l NAME` loads `libNAME.so` (default:
    /// `functors`, as Soufflé).
    #[arg(short = 'l', long = "library", value_name = "NAME")]
    libraries: Vec<String>,
}

impl FrontArgs {
    fn options(&self) -> Result<fixlog::CompileOptions, Error> {
        let mut o = fixlog::CompileOptions::default();
        for m in &self.macros {
            o.preprocess.add_macro_arg(m).map_err(Error::BadInput)?;
        }
        o.preprocess.include_dirs = self.include_dirs.clone();
        o.preprocess.preprocessor = match (&self.preprocessor, self.no_preprocessor) {
            (_, true) => fixlog::Preprocessor::Off,
            (Some(cmd), _) => fixlog::Preprocessor::External(cmd.clone()),
            (None, false) => fixlog::Preprocessor::Builtin,
        };
        o.functors.dirs = self.library_dirs.clone();
        o.functors.libs = self.libraries.clone();
        Ok(o)
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum JoinArg {
    Auto,
    Wcoj,
    Pairwise,
}

impl From<JoinArg> for PlanOptions {
    fn from(j: JoinArg) -> PlanOptions {
        PlanOptions {
            join: match j {
                JoinArg::Auto => JoinStrategy::Auto,
                JoinArg::Wcoj => JoinStrategy::Wcoj,
                JoinArg::Pairwise => JoinStrategy::Pairwise,
            },
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum SemanticsArg {
    Iso,
    Homo,
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendArg {
    Auto,
    Cpu,
    Cuda,
}

impl From<BackendArg> for BackendKind {
    fn from(b: BackendArg) -> BackendKind {
        match b {
            BackendArg::Auto => BackendKind::Auto,
            BackendArg::Cpu => BackendKind::Cpu,
            BackendArg::Cuda => BackendKind::Cuda,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum StatsFormat {
    Text,
    Json,
}

/// Exit status after an internal error (a panic): Rust's own, so scripts that already
/// tell a crash from a user error (status 1) keep working.
const INTERNAL_ERROR_EXIT: u8 = 101;

fn main() -> ExitCode {
    let cli = Cli::parse_from(souffle_style_args(std::env::args_os().collect()));
    internal_error::install_hook();
    let outcome = std::panic::catch_unwind(move || run(cli));
    match outcome {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            match &e {
                Error::Program { rendered, .. } => eprint!("{rendered}"),
                Error::Pattern(e) => eprint!("{}", e.rendered),
                other => eprintln!("error: {other}"),
            }
            ExitCode::FAILURE
        }
        Err(payload) => {
            eprintln!("{}", internal_error::line(payload.as_ref()));
            ExitCode::from(INTERNAL_ERROR_EXIT)
        }
    }
}

/// Panics (bugs) become one line on stderr instead of a backtrace:
/// `fixlog: internal error, please report it ...: MESSAGE at FILE:LINE (while PHASE)`.
mod internal_error {
    use std::sync::Mutex;

    /// What the command is doing (`compiling prog.dl`), set by [`phase`].
    static PHASE: Mutex<String> = Mutex::new(String::new());
    /// The message and location of the last panic, recorded by the hook (the payload
    /// that reaches `main` may have crossed threads and lost its location).
    static LAST: Mutex<Option<(String, String)>> = Mutex::new(None);

    pub fn phase(what: String) {
        if let Ok(mut p) = PHASE.lock() {
            *p = what;
        }
    }

    /// Records panics instead of printing them: `main` prints the one line (a panic that
    /// is caught and handled, as the GPU probe may do, prints nothing).
    pub fn install_hook() {
        std::panic::set_hook(Box::new(|info| {
            let message = payload_text(info.payload());
            let location = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            if let Ok(mut last) = LAST.try_lock() {
                *last = Some((message, location));
            }
        }));
    }

    fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string())
    }

    /// The line for a panic that reached `main` with `payload`.
    pub fn line(payload: &(dyn std::any::Any + Send)) -> String {
        let mut message = payload_text(payload);
        let recorded = LAST.try_lock().ok().and_then(|mut l| l.take());
        let mut location = String::new();
        if let Some((m, l)) = recorded {
            if message == "unknown panic" || m == message {
                message = m;
                location = l;
            }
        }
        // One short line.
        let mut message: String = message.split_whitespace().collect::<Vec<_>>().join(" ");
        if message.chars().count() > 300 {
            message = message.chars().take(300).collect::<String>() + "...";
        }
        let at = if location.is_empty() {
            String::new()
        } else {
            format!(" at {location}")
        };
        let phase = PHASE.try_lock().map(|p| p.clone()).unwrap_or_default();
        let phase = if phase.is_empty() {
            "starting".to_string()
        } else {
            phase
        };
        format!(
            "fixlog: internal error, please report it to the Fixlog developers: {message}{at} (while {phase})"
        )
    }

    /// `FIXLOG_DEBUG_PANIC=PHASE` panics on purpose when the command enters `PHASE`
    /// (`compiling`, `running`, `explaining`): how the tests check this module. Not for
    /// users.
    pub fn debug_panic(phase: &str) {
        if std::env::var("FIXLOG_DEBUG_PANIC").is_ok_and(|p| p == phase) {
            panic!("deliberate panic (FIXLOG_DEBUG_PANIC={phase})");
        }
    }
}

/// Enters a phase of the command (for the internal-error line).
fn phase(name: &str, file: &std::path::Path) {
    internal_error::phase(format!("{name} {}", file.display()));
    internal_error::debug_panic(name);
}

/// `fixlog PROGRAM.dl -F ... -D ...` (Soufflé's form, no subcommand) means
/// `fixlog run PROGRAM.dl ...`.
fn souffle_style_args(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    if let Some(first) = args.get(1).and_then(|a| a.to_str()) {
        let is_command =
            ["run", "explain", "match", "help"].contains(&first) || first.starts_with('-');
        if !is_command && first.ends_with(".dl") {
            args.insert(1, "run".into());
        }
    }
    args
}

fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Command::Match {
            pattern,
            edges,
            nodes,
            undirected,
            semantics,
            jobs,
            explain,
            stats,
            backend,
            gpu_memory_limit,
        } => {
            let semantics = match semantics {
                SemanticsArg::Iso => fixlog::graph::Semantics::Iso,
                SemanticsArg::Homo => fixlog::graph::Semantics::Homo,
            };
            let options = graph_match::MatchCommand {
                pattern,
                edges,
                nodes,
                undirected,
                semantics,
                jobs,
                explain,
                stats,
                backend: backend.into(),
                gpu_memory_limit,
            };
            internal_error::phase(format!("matching in {}", options.edges.display()));
            graph_match::run(&options)
        }
        Command::Explain {
            program,
            backend,
            join,
            front,
            magic,
        } => {
            phase("compiling", &program);
            let path = program;
            let mut options = front.options()?;
            options.check = magic.options();
            let mut program = Fixlog::from_file_with(&path, &options)?;
            if !matches!(join, JoinArg::Auto) {
                program.set_plan_options(&join.into())?;
            }
            phase("explaining", &path);
            let gpu = match backend {
                BackendArg::Cpu => false,
                BackendArg::Cuda => true,
                BackendArg::Auto => fixlog_cuda::probe().available,
            };
            if gpu {
                print!("{}", program.explain_cuda());
            } else {
                print!("{}", program.explain());
            }
            Ok(())
        }
        Command::Run {
            program,
            fact_dir,
            output_dir,
            jobs,
            backend,
            gpu_memory_limit,
            memory_limit,
            temp_dir,
            no_spill,
            stats,
            quiet,
            no_warn,
            join,
            front,
            magic,
        } => {
            fixlog_logical::value::set_runtime_warnings(!no_warn);
            if jobs == Some(0) {
                return Err(Error::BadInput("-j must be at least 1".into()));
            }
            if let Some(dir) = &temp_dir {
                fixlog_cpu::spill::check_dir(dir)
                    .map_err(|e| Error::BadInput(format!("--temp-dir: {e}")))?;
            }
            // SIGINT/SIGTERM/SIGHUP remove temporary output files before ending.
            if let Err(e) = fixlog::io::remove_temporaries_on_signals() {
                eprintln!("fixlog: warning: cannot handle signals ({e}); an interrupted run may leave temporary files");
            }
            let start = Instant::now();
            phase("compiling", &program);
            let path = program;
            let mut options = front.options()?;
            options.check = magic.options();
            let mut program = Fixlog::from_file_with(&path, &options)?;
            if !matches!(join, JoinArg::Auto) {
                program.set_plan_options(&join.into())?;
            }
            // Like Soufflé: a missing or unusable -D is an error before evaluating.
            program.check_outputs(&output_dir)?;
            if !no_warn {
                eprint!("{}", warnings_text(&program));
            }
            phase("running", &path);
            let options = RunOptions {
                backend: backend.into(),
                gpu_memory_limit,
                memory_limit,
                no_spill,
                temp_dir,
                jobs,
                facts_dir: Some(fact_dir),
                progress: !quiet,
                missing_inputs_empty: no_warn,
                only_needed_inputs: true,
                outputs_only: true,
                ..RunOptions::default()
            };
            let db = program.run(&options)?;
            if matches!(backend, BackendArg::Auto) && !quiet {
                eprintln!("fixlog: {}", db.backend());
            }
            let t = Instant::now();
            phase("writing the outputs of", &path);
            db.write_outputs(&output_dir)?;
            print!("{}", db.printsizes());
            let write = t.elapsed();
            let written = db.write_stats().unwrap_or_default();
            match stats {
                Some(StatsFormat::Text) => {
                    eprint!("{}", stats_text(db.stats(), &written, write, start))
                }
                Some(StatsFormat::Json) => {
                    eprintln!("{}", stats_json(db.stats(), &written, write, start))
                }
                None => {}
            }
            Ok(())
        }
    }
}

mod graph_match;

/// Soufflé's warnings about the program, rendered (at most 20; then how many more).
fn warnings_text(program: &Fixlog) -> String {
    const MAX_SHOWN: usize = 20;
    let warnings = &program.program().warnings;
    let mut out: String = warnings
        .iter()
        .take(MAX_SHOWN)
        .map(|w| w.render_warning(program.sources()))
        .collect();
    if warnings.len() > MAX_SHOWN {
        out.push_str(&format!(
            "warning: {} more warnings not shown (-w hides warnings)\n",
            warnings.len() - MAX_SHOWN
        ));
    }
    out
}

fn stats_text(
    stats: &RunStats,
    written: &WriteStats,
    write: std::time::Duration,
    start: Instant,
) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "backend {} ({}); total {:.3} s: evaluation {:.3} s (strata), driver {:.3} s (facts in, prepare, strata, results out)\n",
        stats.backend,
        stats.device,
        start.elapsed().as_secs_f64(),
        stats.strata.iter().map(|s| s.time.as_secs_f64()).sum::<f64>(),
        stats.total.as_secs_f64()
    ));
    s.push_str("stratum  iterations  seconds  relations\n");
    for (i, st) in stats.strata.iter().enumerate() {
        s.push_str(&format!(
            "{:>7}  {:>10}  {:>7.3}  {}\n",
            i,
            st.iterations,
            st.time.as_secs_f64(),
            st.relations.join(", ")
        ));
    }
    s.push_str(&format!(
        "tuples derived before deduplication: {}\n",
        stats.derived
    ));
    if let (Some(held), Some(used)) = (stats.peak_memory, stats.peak_memory_in_use) {
        s.push_str(&format!(
            "peak device memory: {:.1} MiB held, {:.1} MiB in use\n",
            held as f64 / (1u64 << 20) as f64,
            used as f64 / (1u64 << 20) as f64
        ));
        if let Some(at) = &stats.peak_memory_where {
            s.push_str(&format!("peak device memory in use reached in: {at}\n"));
        }
    }
    if let Some(spilled) = stats.peak_spilled.filter(|&b| b > 0) {
        s.push_str(&format!(
            "relations kept in host memory (device memory short): at most {:.1} MiB\n",
            spilled as f64 / (1u64 << 20) as f64
        ));
    }
    if let Some(m) = &stats.host_memory {
        let limit = match m.limit {
            Some(l) => format!("limit {}", mib(l)),
            None => "no limit".to_string(),
        };
        s.push_str(&format!(
            "memory (CPU budget): peak {} in use, {limit}\n",
            mib(m.peak_in_use)
        ));
        match &m.spill {
            Some(sp) => {
                s.push_str(&format!(
                    "spilled to disk: peak {} in files, {} written ({} files); spilling from {} in use; temp dir {}\n",
                    mib(sp.peak_bytes),
                    mib(sp.written_bytes),
                    sp.files,
                    mib(sp.high_mark),
                    sp.temp_dir
                ));
                if let Some(e) = &sp.error {
                    s.push_str(&format!("spilling stopped: {e}\n"));
                }
            }
            None => s.push_str("spilled to disk: off\n"),
        }
    }
    if let Some(peak) = written.peak_in_use {
        s.push_str(&format!(
            "writing outputs (CPU budget): peak {} in use",
            mib(peak)
        ));
        if written.sort_files > 0 {
            s.push_str(&format!(
                "; sorted into output order through {} files ({} written)",
                written.sort_files,
                mib(written.sort_bytes)
            ));
        }
        s.push('\n');
    }
    if stats.memory_retries > 0 {
        s.push_str(&format!(
            "pieces run again in halves after running out of memory: {}\n",
            stats.memory_retries
        ));
    }
    if stats.pieces_split > 0 {
        s.push_str(&format!(
            "pieces run again smaller to bound a batch's size: {}\n",
            stats.pieces_split
        ));
    }
    s.push_str("relation sizes:\n");
    for (name, size) in &stats.relation_sizes {
        s.push_str(&format!("  {name}\t{size}\n"));
    }
    if !stats.versions_peak.is_empty() {
        s.push_str("recursive relations' versions at their largest (full, delta and new tuples at an iteration's end):\n");
        for (name, tuples) in &stats.versions_peak {
            s.push_str(&format!("  {name}\t{tuples}\n"));
        }
    }
    let p = &stats.phases;
    s.push_str(&format!(
        "phases (s): load {:.3}, prepare {:.3}, join {:.3}, dedup {:.3}, merge {:.3}, index {:.3}, unload {:.3}, write {:.3}\n",
        p.load.as_secs_f64(),
        p.prepare.as_secs_f64(),
        p.join.as_secs_f64(),
        p.dedup.as_secs_f64(),
        p.merge.as_secs_f64(),
        p.index.as_secs_f64(),
        p.unload.as_secs_f64(),
        write.as_secs_f64()
    ));
    if !stats.operators.is_empty() {
        s.push_str(
            "backend operators (calls, input rows, seconds; waiting for the device included):
",
        );
        for op in &stats.operators {
            s.push_str(&format!(
                "  {:<20} {:>8} {:>14} {:>9.4}\n",
                op.name,
                op.calls,
                op.rows,
                op.time.as_secs_f64()
            ));
        }
    }
    s
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

fn stats_json(
    stats: &RunStats,
    written: &WriteStats,
    write: std::time::Duration,
    start: Instant,
) -> String {
    let p = &stats.phases;
    serde_json::json!({
        "backend": stats.backend,
        "device": stats.device,
        "memory_retries": stats.memory_retries,
        "pieces_split": stats.pieces_split,
        "peak_device_memory": stats.peak_memory,
        "peak_device_memory_in_use": stats.peak_memory_in_use,
        "peak_device_memory_where": stats.peak_memory_where,
        "peak_host_spilled": stats.peak_spilled,
        "cpu_memory": stats.host_memory.as_ref().map(|m| serde_json::json!({
            "limit": m.limit,
            "peak_in_use": m.peak_in_use,
            "spill": m.spill.as_ref().map(|sp| serde_json::json!({
                "temp_dir": sp.temp_dir,
                "high_mark": sp.high_mark,
                "peak_bytes": sp.peak_bytes,
                "written_bytes": sp.written_bytes,
                "files": sp.files,
                "error": sp.error,
            })),
        })),
        "output": {
            "peak_in_use": written.peak_in_use,
            "limit": written.limit,
            "sort_files": written.sort_files,
            "sort_bytes": written.sort_bytes,
        },
        "seconds": start.elapsed().as_secs_f64(),
        "driver_seconds": stats.total.as_secs_f64(),
        "evaluation_seconds": stats.strata.iter().map(|s| s.time.as_secs_f64()).sum::<f64>(),
        "derived": stats.derived,
        "operators": stats.operators.iter().map(|op| serde_json::json!({
            "name": op.name,
            "calls": op.calls,
            "rows": op.rows,
            "seconds": op.time.as_secs_f64(),
        })).collect::<Vec<_>>(),
        "strata": stats.strata.iter().map(|st| serde_json::json!({
            "relations": st.relations,
            "recursive": st.recursive,
            "iterations": st.iterations,
            "seconds": st.time.as_secs_f64(),
        })).collect::<Vec<_>>(),
        "relations": stats.relation_sizes.iter().map(|(n, s)| (n.clone(), serde_json::json!(s))).collect::<serde_json::Map<_, _>>(),
        "versions_peak": stats.versions_peak.iter().map(|(n, s)| (n.clone(), serde_json::json!(s))).collect::<serde_json::Map<_, _>>(),
        "phases": {
            "load": p.load.as_secs_f64(),
            "prepare": p.prepare.as_secs_f64(),
            "join": p.join.as_secs_f64(),
            "dedup": p.dedup.as_secs_f64(),
            "unload": p.unload.as_secs_f64(),
            "merge": p.merge.as_secs_f64(),
            "index": p.index.as_secs_f64(),
            "write": write.as_secs_f64(),
        },
    })
    .to_string()
}
