//! The library API: load a program, add facts from memory, run, read relations.
//!
//! The command line is a thin layer over this module, so everything the CLI does a
//! library user can do too.

use crate::error::Error;
use crate::io;
use fixlog_exec::driver::{DriverOptions, RunResult, Tuples};
use fixlog_logical::records::RecordView;
use fixlog_logical::{value, ColType, Program, RelId, Value};
use fixlog_plan::{Plan, PlanOptions};
use fixlog_syntax::SourceMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A typed value, for facts given through the API and for reading results.
#[derive(Clone, Debug, PartialEq)]
pub enum Datum {
    Number(i32),
    Unsigned(u32),
    Float(f32),
    Symbol(String),
    /// A record or ADT value, in the text form of fact and output files (`[1, a]`,
    /// `nil`, `$A(1)`).
    Record(String),
}

/// Which backend evaluates a program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendKind {
    /// The GPU when this build has CUDA support and a usable driver and device are
    /// present, the CPU otherwise (and if the GPU fails to start).
    #[default]
    Auto,
    /// Every CPU core.
    Cpu,
    /// The first CUDA device; an error where there is none.
    Cuda,
}

/// How to run a program.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Which backend runs the program.
    pub backend: BackendKind,
    /// The most device memory the CUDA backend may use, in bytes (`None`: 90% of what
    /// is free when it starts). Running out of it is not an error: work is split.
    pub gpu_memory_limit: Option<usize>,
    /// The most bytes the CPU backend may hold in memory in relations, indexes and
    /// batches (`None`: no limit but the system's). When three quarters of it are in
    /// use, the largest runs of relations and indexes are spilled to files until half
    /// is (unless [`RunOptions::no_spill`]); going over it still ends the run with an
    /// error naming the relation ([`Error::Exec`]), as running out of memory does.
    /// Without a limit, spilling aims at 80% of the physical memory
    /// (`fixlog_cpu::run_with`).
    pub memory_limit: Option<usize>,
    /// Never spill the CPU backend's runs to files: `memory_limit` is then a hard
    /// limit only.
    pub no_spill: bool,
    /// Where the CPU backend makes its spill directory (one per run, removed at the
    /// end); `None`: the system's temporary directory.
    pub temp_dir: Option<PathBuf>,
    /// Worker threads of the CPU backend (and of the CUDA backend's host work); `None`
    /// uses every core.
    pub jobs: Option<usize>,
    /// Directory of `.input` files (Soufflé's `-F`). `None`: `.input` directives are
    /// ignored and only facts from the program and from [`Fixlog::insert`] are used.
    pub facts_dir: Option<PathBuf>,
    /// A missing `.input` file is read as empty instead of being an error (Soufflé's
    /// `-w`).
    pub missing_inputs_empty: bool,
    /// Read only the `.input` files of, and evaluate only the rules of, relations that
    /// some `.output` or `.printsize` relation depends on, as Soufflé does (it removes
    /// the other relations, so their files need not exist and their rules do not run;
    /// they hold only the program's facts). The CLI sets it.
    pub only_needed_inputs: bool,
    /// Show progress (stratum, iteration, delta sizes) on stderr.
    pub progress: bool,
    /// Keep the tuples of `.output` relations only; the others are counted (for
    /// `.printsize` and [`Database::len`]) but not kept, which saves memory. Reading
    /// such a relation with [`Database::relation`] then gives `None`.
    pub outputs_only: bool,
    /// When recursive rules run their full-first plans ([`FullFirstUse`]: less peak
    /// memory for same-generation-like rules, slower on some graphs). `None`, the
    /// default: by size on the CPU (SG on two threads: as fast or faster, peaks
    /// 15-38% lower on dense graphs, docs/cpu-results.md) and on the GPU under a
    /// `gpu_memory_limit` (where they keep the relations on the device: SG CA-HepTh at
    /// 1 GiB 1.98 → 0.43 s on an H100, docs/gpu-results.md round 28); on the GPU
    /// without one, by size only where the head relation holds at least 32M tuples
    /// ([`GPU_FULL_FIRST_MIN_HEAD_ROWS`]). The results are the same.
    pub full_first: Option<FullFirstUse>,
}

pub use fixlog_exec::driver::{FullFirstUse, RunStats};

/// On the GPU without a device memory limit, full-first plans run (by size) only where
/// the head relation holds at least this many tuples (256 MiB of two columns).
/// Measured on an H100 (docs/gpu-results.md, round 33), evaluation s / peak GiB in use
/// for same generation, against never: CA-HepTh 0.077 / 1.401 → 0.108 / 1.143 and
/// loc-Brightkite 0.138 / 1.529 → 0.224 / 1.138, both now within the memory aim
/// (largest versions plus half: 1.23 and 1.17 GiB) and SG's time aim; fe_sphere and
/// SF.cedge up to 10% slower at the same peaks, fe_body as fast with a peak 0.12 GiB
/// higher (all three within the memory aim).
/// By size from the first tuple also ran ego-Facebook's small relation through it:
/// 4.5x the time (0.155 s, past the time aim) for a peak still past the memory aim
/// (0.275 GiB against 0.24), so small relations keep the delta-first plan. (`fixlog
/// explain` names this size.)
pub const GPU_FULL_FIRST_MIN_HEAD_ROWS: usize = 1 << 25;

/// When a run takes full-first plans (see [`RunOptions::full_first`]): as asked, or by
/// size on the CPU and on the GPU under a device memory limit, by size on large head
/// relations on the GPU without one.
fn full_first_use(options: &RunOptions, on_gpu: bool) -> FullFirstUse {
    match options.full_first {
        Some(asked) => asked,
        None if !on_gpu || options.gpu_memory_limit.is_some() => {
            FullFirstUse::BySize { min_head_rows: 0 }
        }
        None => FullFirstUse::BySize {
            min_head_rows: GPU_FULL_FIRST_MIN_HEAD_ROWS,
        },
    }
}

/// A size in bytes as the command line takes it (`--gpu-memory-limit`,
/// `--memory-limit`): `123`, `64K`, `512M`, `4G`, `1T` (powers of 1024; `KiB`, `MB`
/// etc. accepted too); zero is not a usable size.
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let n: usize = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size in bytes (e.g. 4G, 512M, 1000000)"))?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => {
            return Err(format!(
                "`{text}`: unknown unit `{unit}` (use K, M, G or T)"
            ))
        }
    };
    n.checked_mul(1usize << shift)
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("`{text}` is not a usable size"))
}

/// How a program is read: its preprocessing (`-M`, `-I`, `--preprocessor`,
/// `--no-preprocessor`) and where its user-defined functors are loaded from (`-L`,
/// `-l`).
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    pub preprocess: fixlog_syntax::PreprocessOptions,
    pub functors: crate::functors::FunctorLibraries,
    /// The magic-set transform (`--magic-transform`, see `fixlog_logical::magic`).
    pub check: fixlog_logical::CheckOptions,
}

/// A checked and planned program, plus facts added from memory.
pub struct Fixlog {
    sources: SourceMap,
    program: Program,
    plan: Plan,
    /// Tuples added with [`Fixlog::insert`], per relation.
    inserted: Vec<Tuples>,
}

impl Fixlog {
    /// Reads, checks and plans a program file (and its `.include`s).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Fixlog, Error> {
        Fixlog::from_file_with(path, &CompileOptions::default())
    }

    /// [`Fixlog::from_file`] with preprocessing and functor-library options.
    pub fn from_file_with(
        path: impl AsRef<Path>,
        options: &CompileOptions,
    ) -> Result<Fixlog, Error> {
        let mut sources = SourceMap::new();
        let mut program = fixlog_logical::compile_file_opts(
            path.as_ref(),
            &mut sources,
            &options.preprocess,
            &options.check,
        )
        .map_err(|d| program_error(d, &sources))?;
        crate::functors::bind(&mut program, &options.functors)
            .map_err(|d| program_error(d, &sources))?;
        Fixlog::new(sources, program)
    }

    /// [`Fixlog::from_source`] with preprocessing and functor-library options.
    pub fn from_source_with(
        name: &str,
        text: &str,
        options: &CompileOptions,
    ) -> Result<Fixlog, Error> {
        let mut sources = SourceMap::new();
        let mut program = fixlog_logical::compile_str_opts(
            name,
            text,
            &mut sources,
            &options.preprocess,
            &options.check,
        )
        .map_err(|d| program_error(d, &sources))?;
        crate::functors::bind(&mut program, &options.functors)
            .map_err(|d| program_error(d, &sources))?;
        Fixlog::new(sources, program)
    }

    /// Checks and plans a program given as text; `name` is used in messages.
    pub fn from_source(name: &str, text: &str) -> Result<Fixlog, Error> {
        Fixlog::from_source_with(name, text, &CompileOptions::default())
    }

    fn new(sources: SourceMap, program: Program) -> Result<Fixlog, Error> {
        // Directive parameters are checked here, before anything is read or evaluated.
        io::check_directives(&program, &sources).map_err(|d| program_error(d, &sources))?;
        let plan = fixlog_plan::plan(&program).map_err(|d| program_error(d.into(), &sources))?;
        let inserted = program
            .relations
            .iter()
            .map(|r| Tuples::new(r.arity()))
            .collect();
        Ok(Fixlog {
            sources,
            program,
            plan,
            inserted,
        })
    }

    /// Checks, before evaluating, that the outputs can be written into `dir` (`-` for
    /// stdout): the directory exists (Soufflé does not create it either) and no output
    /// file's place is taken by a directory. [`Database::write_outputs`] checks again.
    pub fn check_outputs(&self, dir: &Path) -> Result<(), Error> {
        io::check_output_dir(dir)?;
        for relation in &self.program.relations {
            for directive in &relation.outputs {
                if let Some(path) = io::output_target(relation, directive, dir).path() {
                    io::check_output_target(path)?;
                }
            }
        }
        Ok(())
    }

    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Plans the program again with `options` (the join strategy: worst-case-optimal
    /// joins for cyclic bodies by default, or forced either way for tests and
    /// benchmarks; `fixlog run --join`).
    pub fn set_plan_options(&mut self, options: &PlanOptions) -> Result<(), Error> {
        self.plan = fixlog_plan::plan_with(&self.program, options)
            .map_err(|d| program_error(d.into(), &self.sources))?;
        Ok(())
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    pub fn sources(&self) -> &SourceMap {
        &self.sources
    }

    /// The strata and the plan of every rule variant, as `fixlog explain` prints it.
    pub fn explain(&self) -> String {
        fixlog_plan::explain(&self.program, &self.plan, &self.sources)
    }

    /// [`Fixlog::explain`] with, for every operator, where the CUDA backend runs it
    /// (`fixlog explain --backend cuda`).
    pub fn explain_cuda(&self) -> String {
        fixlog_plan::explain::explain_with_notes(&self.program, &self.plan, &self.sources, &|op| {
            Some(fixlog_cuda::placement::note(op))
        })
    }

    /// Adds facts to a relation. Each tuple must have the relation's arity and each
    /// datum its column's type.
    pub fn insert(
        &mut self,
        relation: &str,
        tuples: impl IntoIterator<Item = Vec<Datum>>,
    ) -> Result<(), Error> {
        let rel = self.relation_id(relation)?;
        let types = self.program.relations[rel].types();
        for (n, tuple) in tuples.into_iter().enumerate() {
            if tuple.len() != types.len() {
                return Err(Error::BadInput(format!(
                    "tuple {n} for `{relation}` has {} values but the relation has {} columns",
                    tuple.len(),
                    types.len()
                )));
            }
            let mut row = Vec::with_capacity(types.len());
            for (col, (datum, ty)) in tuple.iter().zip(&types).enumerate() {
                let value = self.encode(datum, *ty).ok_or_else(|| {
                    Error::BadInput(format!(
                        "tuple {n} for `{relation}`: column {col} is {ty:?} but got {datum:?}"
                    ))
                })?;
                row.push(value);
            }
            self.inserted[rel].push(&row);
            // The magic-set transform's copies of the relation hold its facts too.
            for copy in fixlog_logical::magic::copies_of(&self.program, rel) {
                self.inserted[copy].push(&row);
            }
        }
        Ok(())
    }

    fn encode(&self, datum: &Datum, ty: ColType) -> Option<Value> {
        match (datum, ty) {
            (Datum::Number(n), ColType::Number) => Some(*n as u32),
            (Datum::Unsigned(u), ColType::Unsigned) => Some(*u),
            (Datum::Float(f), ColType::Float) => Some(f.to_bits()),
            (Datum::Symbol(s), ColType::Symbol) => Some(self.program.symbols.intern(s)),
            (Datum::Record(s), ColType::Record(_)) => {
                io::parse_field(s, ty, &self.program.symbols).ok()
            }
            _ => None,
        }
    }

    fn relation_id(&self, name: &str) -> Result<RelId, Error> {
        self.program
            .relation_id(name)
            .ok_or_else(|| Error::BadInput(format!("no relation named `{name}`")))
    }

    /// Evaluates the program to its fixpoint on the backend `options.backend` chooses.
    pub fn run(&self, options: &RunOptions) -> Result<Database, Error> {
        let symbols = Arc::new(self.program.symbols.clone());
        // Initial facts: program facts, inserted facts, input files.
        let mut initial: Vec<Tuples> = self.inserted.clone();
        for fact in &self.program.facts {
            initial[fact.rel].push(&fact.values);
        }
        let needed = options
            .only_needed_inputs
            .then(|| self.program.needed_for_outputs());
        if let Some(dir) = &options.facts_dir {
            for (rel, relation) in self.program.relations.iter().enumerate() {
                if needed.as_ref().is_some_and(|n| !n[rel]) {
                    continue;
                }
                for directive in &relation.inputs {
                    match io::read_input(relation, directive, dir, &symbols, &mut initial[rel]) {
                        Err(Error::ReadFile { source, .. })
                            if options.missing_inputs_empty
                                && source.kind() == std::io::ErrorKind::NotFound => {}
                        other => other?,
                    }
                }
            }
        }
        let driver_options = DriverOptions {
            progress: options.progress,
            keep_rows: options.outputs_only.then(|| {
                self.program
                    .relations
                    .iter()
                    .map(|r| !r.outputs.is_empty())
                    .collect()
            }),
            needed,
            // (The CPU's choice; `run_cuda` makes the GPU's.)
            full_first: full_first_use(options, false),
        };
        // The CPU backend's budget, kept after the run: it still counts the results'
        // runs in memory, and reading them (writing the outputs) is charged to it.
        let budget = fixlog_cpu::budget::Budget::new(options.memory_limit);
        let (result, choice) =
            self.run_on_backend(initial, &symbols, &driver_options, options, &budget)?;
        let memory = io::ReadMemory {
            budget: Some(budget),
            limit: options
                .memory_limit
                .or_else(fixlog_cpu::default_spill_target),
            files: !options.no_spill,
            temp_dir: options.temp_dir.clone(),
            sorted: Default::default(),
        };
        Ok(Database {
            program: self.program.clone(),
            symbols,
            relations: result.relations,
            stats: result.stats,
            choice,
            memory,
            written: std::sync::Mutex::new(None),
        })
    }

    fn run_on_backend(
        &self,
        initial: Vec<Tuples>,
        symbols: &fixlog_logical::SymbolTable,
        driver: &DriverOptions,
        options: &RunOptions,
        budget: &Arc<fixlog_cpu::budget::Budget>,
    ) -> Result<(RunResult, BackendChoice), Error> {
        let cpu = |initial, reason: String| -> Result<(RunResult, BackendChoice), Error> {
            let cpu_options = host_options(options, budget);
            let r = fixlog_cpu::run_with(
                &self.program,
                &self.plan,
                initial,
                symbols,
                driver,
                &cpu_options,
            )?;
            let choice = BackendChoice {
                backend: BackendKind::Cpu,
                reason,
            };
            Ok((r, choice))
        };
        match options.backend {
            BackendKind::Cpu => cpu(initial, "--backend cpu".into()),
            BackendKind::Cuda => {
                let probe = fixlog_cuda::probe();
                if !probe.available {
                    return Err(Error::NoGpu(probe.reason));
                }
                let r = self.run_cuda(initial, symbols, driver, options, budget)?;
                Ok((
                    r,
                    BackendChoice {
                        backend: BackendKind::Cuda,
                        reason: probe.reason,
                    },
                ))
            }
            BackendKind::Auto => {
                let probe = fixlog_cuda::probe();
                if !probe.available {
                    return cpu(initial, probe.reason);
                }
                // Keep the facts for the CPU in case the GPU cannot start.
                match self.run_cuda(initial.clone(), symbols, driver, options, budget) {
                    Ok(r) => Ok((
                        r,
                        BackendChoice {
                            backend: BackendKind::Cuda,
                            reason: probe.reason,
                        },
                    )),
                    Err(Error::Exec(e)) => {
                        cpu(initial, format!("the GPU ({}) failed: {e}", probe.reason))
                    }
                    Err(e) => Err(e),
                }
            }
        }
    }

    #[cfg(feature = "cuda")]
    fn run_cuda(
        &self,
        initial: Vec<Tuples>,
        symbols: &fixlog_logical::SymbolTable,
        driver: &DriverOptions,
        options: &RunOptions,
        budget: &Arc<fixlog_cpu::budget::Budget>,
    ) -> Result<RunResult, Error> {
        let cuda = fixlog_cuda::CudaOptions {
            device: 0,
            memory_limit: options.gpu_memory_limit,
            host_threads: options.jobs,
        };
        // The results come to the host charged to the run's budget (`--memory-limit`),
        // spilling to files past it, as on the CPU.
        let host = fixlog_cpu::HostMemory::new(&host_options(options, budget));
        let driver = DriverOptions {
            full_first: full_first_use(options, true),
            ..driver.clone()
        };
        let mut result = {
            let _on = host.enter();
            fixlog_cuda::run(&self.program, &self.plan, initial, symbols, &driver, &cuda)?
        };
        result.stats.host_memory = Some(host.stats());
        Ok(result)
    }

    #[cfg(not(feature = "cuda"))]
    fn run_cuda(
        &self,
        _initial: Vec<Tuples>,
        _symbols: &fixlog_logical::SymbolTable,
        _driver: &DriverOptions,
        _options: &RunOptions,
        _budget: &Arc<fixlog_cpu::budget::Budget>,
    ) -> Result<RunResult, Error> {
        Err(Error::NoGpu(fixlog_cuda::probe().reason))
    }
}

/// The host memory options of a run (threads, `--memory-limit`, spilling) with the
/// library's budget: for the CPU backend, and for the host side of a GPU run.
fn host_options(
    options: &RunOptions,
    budget: &Arc<fixlog_cpu::budget::Budget>,
) -> fixlog_cpu::CpuOptions {
    fixlog_cpu::CpuOptions {
        jobs: options.jobs,
        memory_limit: options.memory_limit,
        no_spill: options.no_spill,
        temp_dir: options.temp_dir.clone(),
        budget: Some(budget.clone()),
    }
}

fn program_error(diagnostics: fixlog_syntax::Diagnostics, sources: &SourceMap) -> Error {
    Error::Program {
        rendered: diagnostics.render(sources),
        diagnostics,
    }
}

/// Which backend ran a program, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendChoice {
    pub backend: BackendKind,
    /// Why this backend: the device found, or why there is none.
    pub reason: String,
}

impl std::fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.backend {
            BackendKind::Cuda => write!(f, "running on the GPU: {}", self.reason),
            _ => write!(f, "running on the CPU: {}", self.reason),
        }
    }
}

/// The result of a run: every relation's tuples.
pub struct Database {
    program: Program,
    symbols: Arc<fixlog_logical::SymbolTable>,
    /// Sorted, deduplicated tuples per relation (raw order); `None` where not kept.
    relations: Vec<Option<Tuples>>,
    stats: RunStats,
    choice: BackendChoice,
    /// What reading the results may use (the CPU run's budget, limit, files).
    memory: io::ReadMemory,
    /// What the last [`Database::write_outputs`] used.
    written: std::sync::Mutex<Option<WriteStats>>,
}

/// What writing the outputs used ([`Database::write_stats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// The most bytes the CPU run's memory budget held while the outputs were
    /// written: the results' runs still in memory and the writer's buffers (`None`
    /// where the results came from the GPU: nothing is counted).
    pub peak_in_use: Option<usize>,
    /// The limit that budget kept to (`--memory-limit`).
    pub limit: Option<usize>,
    /// Sorted chunks written to files to put outputs into output order (relations
    /// larger than the memory allowance whose raw order is not their output order).
    pub sort_files: usize,
    /// Bytes written to those files.
    pub sort_bytes: usize,
}

impl Database {
    /// Which backend ran the program, and why.
    pub fn backend(&self) -> &BackendChoice {
        &self.choice
    }

    pub fn stats(&self) -> &RunStats {
        &self.stats
    }

    pub fn program(&self) -> &Program {
        &self.program
    }

    pub fn symbols(&self) -> &fixlog_logical::SymbolTable {
        &self.symbols
    }

    /// Number of tuples of a relation.
    pub fn len(&self, relation: &str) -> Option<usize> {
        let rel = self.program.relation_id(relation)?;
        self.stats.relation_sizes.get(rel).map(|(_, n)| *n)
    }

    /// The raw tuples of a relation, sorted by raw value (`None` for an unknown
    /// relation or one not kept, see [`RunOptions::outputs_only`]). The rows may be
    /// the relation's sorted runs, unmerged and partly in files
    /// ([`fixlog_exec::tuples::RowStore::Runs`]): read them in order with
    /// `rows.for_each_part`, or as one slice with `rows.merged()`.
    pub fn raw(&self, relation: &str) -> Option<&Tuples> {
        let rel = self.program.relation_id(relation)?;
        self.relations[rel].as_ref()
    }

    /// A relation's tuples, typed, in output order (the order of the written files),
    /// all in memory. `None` for an unknown relation or one not kept, or where
    /// putting the tuples in order fails (out of memory, say: [`Database::for_each`]
    /// reads a relation of any size part by part, and says why it fails).
    pub fn relation(&self, relation: &str) -> Option<Vec<Vec<Datum>>> {
        self.raw(relation)?;
        let mut out = Vec::new();
        self.for_each(relation, |t| out.push(t.to_vec())).ok()?;
        Some(out)
    }

    /// Calls `f` with every tuple of a relation, typed, in output order (the order of
    /// the written files), without holding the relation in memory: the relation's runs
    /// are merged part by part, or sorted into output order in chunks within the
    /// run's memory limit (see [`crate::ordered`]). An error for an unknown relation or
    /// one not kept, or when memory or the temporary directory fails.
    pub fn for_each(&self, relation: &str, mut f: impl FnMut(&[Datum])) -> Result<(), Error> {
        let tuples = self
            .raw(relation)
            .ok_or_else(|| Error::BadInput(format!("no relation `{relation}` was kept")))?;
        let rel = self.relation_id_of(relation)?;
        let types = self.program.relations[rel].types();
        if tuples.arity == 0 {
            for _ in 0..tuples.len {
                f(&[]);
            }
            return Ok(());
        }
        // One snapshot of the tables for all the relation's records.
        let records = types
            .iter()
            .any(|t| matches!(t, ColType::Record(_)))
            .then(|| {
                (
                    self.symbols.snapshot(),
                    RecordView::new(self.symbols.records()),
                )
            });
        let mut tuple = Vec::with_capacity(types.len());
        io::for_each_in_output_order(tuples, &types, &self.symbols, &self.memory, |part| {
            for row in part.chunks_exact(types.len()) {
                tuple.clear();
                tuple.extend(row.iter().zip(&types).map(|(&v, ty)| match ty {
                    ColType::Number => Datum::Number(v as i32),
                    ColType::Unsigned => Datum::Unsigned(v),
                    ColType::Float => Datum::Float(f32::from_bits(v)),
                    ColType::Symbol => Datum::Symbol(self.symbols.resolve(v).to_string()),
                    ColType::Record(rt) => {
                        let mut text = String::new();
                        if let Some((strings, view)) = &records {
                            value::write_record(&mut text, v, *rt, strings, view);
                        }
                        Datum::Record(text)
                    }
                }));
                f(&tuple);
            }
            Ok(())
        })?;
        Ok(())
    }

    fn relation_id_of(&self, relation: &str) -> Result<RelId, Error> {
        self.program
            .relation_id(relation)
            .ok_or_else(|| Error::BadInput(format!("no relation named `{relation}`")))
    }

    /// What the last [`Database::write_outputs`] used (memory at its peak, files for
    /// sorting); `None` before any.
    pub fn write_stats(&self) -> Option<WriteStats> {
        self.written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Writes every `.output` relation the way Soufflé does: `dir/<name>.csv`, or to
    /// stdout when `dir` is `-` or the directive says `IO=stdout`. All or nothing: every
    /// file is first written to a temporary file beside its destination, relations for
    /// stdout are printed next, and only then are the files renamed into place
    /// ([`io::commit_outputs`]); on any failure the temporary files are removed and the
    /// previous outputs are left as they were.
    ///
    /// Each relation is read in output order part by part and formatted in batches
    /// (see [`crate::ordered`]), within the run's memory limit: a relation larger than
    /// memory is written from its runs in files. [`Database::write_stats`] says what
    /// it took.
    pub fn write_outputs(&self, dir: &Path) -> Result<(), Error> {
        if self.program.relations.iter().any(|r| !r.outputs.is_empty()) {
            io::check_output_dir(dir)?;
        }
        if let Some(b) = &self.memory.budget {
            b.reset_peak();
        }
        let result = self.write_outputs_counted(dir);
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        let sort = self.memory.sorted.take();
        *written = Some(WriteStats {
            peak_in_use: self.memory.budget.as_ref().map(|b| b.peak()),
            limit: self.memory.budget.as_ref().and_then(|b| b.limit()),
            sort_files: sort.files,
            sort_bytes: sort.bytes,
        });
        result
    }

    fn write_outputs_counted(&self, dir: &Path) -> Result<(), Error> {
        let mut relations = Vec::new();
        for (rel, relation) in self.program.relations.iter().enumerate() {
            if relation.outputs.is_empty() {
                continue;
            }
            let tuples = self.relations[rel]
                .as_ref()
                .ok_or_else(|| Error::BadInput(format!("`{}` was not kept", relation.name)))?;
            relations.push((relation, tuples));
        }
        io::write_outputs(&relations, dir, &self.symbols, &self.memory)
    }

    /// `name<TAB>size` lines for every `.printsize` relation, in declaration order.
    pub fn printsizes(&self) -> String {
        let mut out = String::new();
        for relation in &self.program.relations {
            if relation.printsize {
                let n = self.len(&relation.name).unwrap_or(0);
                out.push_str(&format!("{}\t{}\n", relation.name, n));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn sizes_in_bytes() {
        assert_eq!(parse_bytes("123"), Ok(123));
        assert_eq!(parse_bytes("64K"), Ok(64 << 10));
        assert_eq!(parse_bytes(" 512mib "), Ok(512 << 20));
        assert_eq!(parse_bytes("4G"), Ok(4 << 30));
        assert_eq!(parse_bytes("1TB"), Ok(1 << 40));
        for bad in ["", "0", "lots", "4X", "-1", "99999999999999999999T"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }
}
