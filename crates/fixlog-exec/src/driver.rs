//! The semi-naive driver: runs a [`Plan`] to its fixpoint on any [`Backend`].
//!
//! For each stratum in order:
//! 1. `full` of each of its relations starts as its facts (program facts, inserted
//!    facts, input files);
//! 2. the stratum's non-recursive rules run once over full versions, and their results
//!    are merged into `full`;
//! 3. in a recursive stratum, `delta := full` and the loop runs every delta variant on the
//!    deltas; per relation `new := sort_unique(results) − full`; `full := full ∪ new`;
//!    `delta := new`; indexes over the stratum's relations are extended with `new`. The
//!    loop ends after the first pass that derives nothing (that pass is counted, as in
//!    the published iteration counts).
//!
//! The driver decides *what* runs; the backend decides *how*. Indexes over relations of
//! earlier strata are built on first use and kept.

use crate::backend::{Backend, EvalContext, ExecError, ExecResult};
use fixlog_logical::{Program, RelId, SymbolTable, Value};
use fixlog_plan::{Op, PExpr, Plan, RulePlan, Version};
use std::time::{Duration, Instant};

/// The most tuples a batch of one piece of a pipeline should hold (see
/// `Driver::run_rule`): 16M tuples, 128 MiB at arity 2.
const PIECE_TARGET: usize = 1 << 24;
/// Rows of the first piece of a pipeline's input.
const FIRST_PIECE_ROWS: usize = 1 << 16;

/// Tuples of one relation, row-major.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tuples {
    pub arity: usize,
    /// Number of tuples (needed for arity 0, where `rows` is empty).
    pub len: usize,
    pub rows: Vec<Value>,
}

impl Tuples {
    pub fn new(arity: usize) -> Tuples {
        Tuples {
            arity,
            len: 0,
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, tuple: &[Value]) {
        debug_assert_eq!(tuple.len(), self.arity);
        self.rows.extend_from_slice(tuple);
        self.len += 1;
    }

    /// Appends row-major values (a whole number of tuples; arity > 0).
    pub fn extend_rows(&mut self, rows: &[Value]) {
        debug_assert!(self.arity > 0 && rows.len().is_multiple_of(self.arity));
        self.rows.extend_from_slice(rows);
        self.len += rows.len() / self.arity;
    }
}

#[derive(Clone, Debug, Default)]
pub struct DriverOptions {
    /// Worker threads (`None`: all cores).
    pub jobs: Option<usize>,
    /// Show progress on stderr (only drawn when stderr is a terminal).
    pub progress: bool,
    /// Which relations' tuples to return (by relation id); `None`: all.
    pub keep_rows: Option<Vec<bool>>,
}

#[derive(Clone, Debug, Default)]
pub struct StratumStats {
    pub relations: Vec<String>,
    pub recursive: bool,
    /// Loop passes, counting the last one that derived nothing (0 if not recursive).
    pub iterations: usize,
    pub time: Duration,
}

/// Time per kind of operator, summed over the run.
#[derive(Clone, Debug, Default)]
pub struct PhaseTimes {
    /// Loading facts into relations.
    pub load: Duration,
    /// Scans, joins, anti-joins, filters, aggregates.
    pub join: Duration,
    /// Sorting and deduplicating rule results.
    pub dedup: Duration,
    /// `new := results − full`.
    pub difference: Duration,
    /// `full := full ∪ new`.
    pub merge: Duration,
    /// Building and extending indexes.
    pub index: Duration,
}

#[derive(Clone, Debug, Default)]
pub struct RunStats {
    pub backend: String,
    pub threads: usize,
    pub strata: Vec<StratumStats>,
    /// (relation, size) in declaration order.
    pub relation_sizes: Vec<(String, usize)>,
    pub phases: PhaseTimes,
    /// Tuples produced by rules before deduplication (how much work the joins did).
    pub derived: usize,
    pub total: Duration,
}

impl RunStats {
    /// Iterations of the stratum that computes `relation`.
    pub fn iterations_of(&self, relation: &str) -> Option<usize> {
        self.strata
            .iter()
            .find(|s| s.relations.iter().any(|r| r == relation))
            .map(|s| s.iterations)
    }
}

pub struct RunResult {
    /// Every relation's tuples, sorted by raw value, deduplicated (`None` for those
    /// [`DriverOptions::keep_rows`] did not keep; their sizes are in the stats).
    pub relations: Vec<Option<Tuples>>,
    pub stats: RunStats,
}

/// Runs `plan` on the CPU backend with `options.jobs` threads.
pub fn run_cpu(
    program: &Program,
    plan: &Plan,
    initial: Vec<Tuples>,
    symbols: &SymbolTable,
    options: &DriverOptions,
) -> ExecResult<RunResult> {
    let threads = options.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(|e| ExecError::Backend(format!("cannot start worker threads: {e}")))?;
    pool.install(|| {
        let backend = crate::cpu::CpuBackend::new();
        let mut result = run(&backend, program, plan, initial, symbols, options)?;
        result.stats.threads = threads;
        Ok(result)
    })
}

/// Runs `plan` to its fixpoint on `backend`.
pub fn run<B: Backend>(
    backend: &B,
    program: &Program,
    plan: &Plan,
    initial: Vec<Tuples>,
    symbols: &SymbolTable,
    options: &DriverOptions,
) -> ExecResult<RunResult> {
    let start = Instant::now();
    let mut driver = Driver {
        backend,
        plan,
        ctx: EvalContext { symbols },
        full: Vec::new(),
        delta: (0..plan.relations.len()).map(|_| None).collect(),
        indexes: (0..plan.indexes.len()).map(|_| None).collect(),
        stats: RunStats {
            backend: backend.name().to_string(),
            ..RunStats::default()
        },
        progress: Progress::new(options.progress),
    };
    let t = Instant::now();
    for (rel, tuples) in initial.into_iter().enumerate() {
        let arity = plan.relations[rel].types.len();
        let relation = if arity == 0 {
            if tuples.len > 0 {
                backend.sort_unique(backend.unit())?
            } else {
                backend.empty_relation(0)
            }
        } else {
            backend.relation_from_rows(arity, tuples.rows)?
        };
        driver.full.push(relation);
    }
    driver.stats.phases.load = t.elapsed();

    for (n, stratum) in plan.strata.iter().enumerate() {
        let t = Instant::now();
        let iterations = driver.run_stratum(n, stratum)?;
        driver.stats.strata.push(StratumStats {
            relations: stratum
                .relations
                .iter()
                .map(|&r| plan.relations[r].name.clone())
                .collect(),
            recursive: stratum.recursive,
            iterations,
            time: t.elapsed(),
        });
    }
    driver.progress.finish();

    // Free the indexes before copying rows out, and each relation as soon as its rows
    // are out, so that the peak is not the whole database twice.
    driver.indexes.clear();
    driver.delta.clear();
    let full = std::mem::take(&mut driver.full);
    let mut stats = driver.stats;
    let mut relations = Vec::with_capacity(full.len());
    for (rel, r) in full.into_iter().enumerate() {
        stats.relation_sizes.push((
            program.relations[rel].name.clone(),
            backend.relation_len(&r),
        ));
        let keep = options.keep_rows.as_ref().is_none_or(|k| k[rel]);
        relations.push(keep.then(|| Tuples {
            arity: backend.relation_arity(&r),
            len: backend.relation_len(&r),
            rows: backend.relation_rows(&r),
        }));
    }
    stats.total = start.elapsed();
    Ok(RunResult { relations, stats })
}

struct Driver<'a, B: Backend> {
    backend: &'a B,
    plan: &'a Plan,
    ctx: EvalContext<'a>,
    full: Vec<B::Relation>,
    delta: Vec<Option<B::Relation>>,
    indexes: Vec<Option<B::Index>>,
    stats: RunStats,
    progress: Progress,
}

impl<B: Backend> Driver<'_, B> {
    fn run_stratum(&mut self, n: usize, stratum: &fixlog_plan::StratumPlan) -> ExecResult<usize> {
        let names: Vec<&str> = stratum
            .relations
            .iter()
            .map(|&r| self.plan.relations[r].name.as_str())
            .collect();
        let label = format!(
            "stratum {}/{} [{}]",
            n + 1,
            self.plan.strata.len(),
            names.join(", ")
        );
        self.progress.set(&label, "running rules");

        // Rules that run once.
        let results = self.run_rules(&stratum.init, &stratum.relations)?;
        for (rel, new) in results {
            self.add_to_full(rel, new)?;
        }
        if !stratum.recursive {
            return Ok(0);
        }

        // Indexes over this stratum's relations must follow `full` from now on.
        for (id, spec) in self.plan.indexes.iter().enumerate() {
            if stratum.relations.contains(&spec.rel) {
                self.ensure_index(id)?;
            }
        }
        for &rel in &stratum.relations {
            // Everything is new at the start.
            self.delta[rel] = Some(self.full[rel].clone());
        }

        let mut iterations = 0;
        loop {
            iterations += 1;
            let results = self.run_rules(&stratum.recursive_rules, &stratum.relations)?;
            let mut derived = 0usize;
            let mut news = Vec::new();
            for (rel, new) in results {
                derived += self.backend.relation_len(&new);
                news.push((rel, new));
            }
            for &rel in &stratum.relations {
                self.delta[rel] = None;
            }
            let mut sizes = Vec::new();
            for (rel, new) in news {
                let delta = self.add_to_full(rel, new)?;
                sizes.push(format!(
                    "{} +{} = {}",
                    self.plan.relations[rel].name,
                    self.backend.relation_len(&delta),
                    self.backend.relation_len(&self.full[rel])
                ));
                self.delta[rel] = Some(delta);
            }
            self.progress.set(
                &label,
                &format!("iteration {iterations}: {}", sizes.join(", ")),
            );
            if derived == 0 {
                break;
            }
        }
        for &rel in &stratum.relations {
            self.delta[rel] = None;
        }
        Ok(iterations)
    }

    /// Runs rules; returns, per relation of `relations` (in order), the tuples they
    /// derived that are not in `full` yet.
    fn run_rules(
        &mut self,
        rules: &[RulePlan],
        relations: &[RelId],
    ) -> ExecResult<Vec<(RelId, B::Relation)>> {
        let mut per_rel: Vec<Vec<B::Relation>> = relations.iter().map(|_| Vec::new()).collect();
        for rule in rules {
            let slot = relations
                .iter()
                .position(|&r| r == rule.head)
                .ok_or_else(|| internal("a rule's head is outside its stratum"))?;
            self.run_rule(rule, &mut per_rel[slot])?;
        }
        let mut out = Vec::new();
        for (&rel, runs) in relations.iter().zip(per_rel) {
            let t = Instant::now();
            let arity = self.plan.relations[rel].types.len();
            let mut new = self.backend.empty_relation(arity);
            for run in runs {
                new = self.backend.merge(&new, &run)?;
            }
            self.stats.phases.dedup += t.elapsed();
            out.push((rel, new));
        }
        Ok(out)
    }

    /// Runs one rule's pipeline and adds what it derives that is new to `acc` (a stack
    /// of sorted runs, merged while the newest is at least half the size of the one
    /// below, so merging costs O(n log pieces)).
    ///
    /// A pipeline whose first operator produces many tuples runs piece by piece: the
    /// first operator's output is cut into pieces, each piece runs through the rest of
    /// the pipeline and its results are deduplicated and subtracted from `full` at once.
    /// The piece size adapts so that no batch of a piece exceeds [`PIECE_TARGET`]
    /// tuples, which bounds the memory of joins whose output explodes.
    fn run_rule(&mut self, rule: &RulePlan, acc: &mut Vec<B::Relation>) -> ExecResult<()> {
        // Build the indexes this pipeline needs before running it.
        let mut needed = Vec::new();
        collect_indexes(&rule.ops, &mut needed);
        for id in needed {
            self.ensure_index(id)?;
        }
        if let Some(Op::Scan {
            rel,
            version: Version::Delta,
            ..
        }) = rule.ops.first()
        {
            match &self.delta[*rel] {
                Some(d) if self.backend.relation_len(d) > 0 => {}
                _ => return Ok(()),
            }
        }
        let t = Instant::now();
        let (first, rest) = rule.ops.split_at(1);
        let (mut remaining, _) = self.run_ops(first, None, rest.is_empty())?;
        if rest.is_empty() {
            self.stats.phases.join += t.elapsed();
            return self.absorb(rule.head, remaining, acc);
        }
        let mut piece_rows = FIRST_PIECE_ROWS;
        while self.backend.batch_len(&remaining) > 0 {
            let t = Instant::now();
            let (piece, rest_rows) = self.backend.split_batch(remaining, piece_rows);
            remaining = rest_rows;
            let (out, peak) = self.run_ops(rest, Some(piece), true)?;
            self.stats.phases.join += t.elapsed();
            self.absorb(rule.head, out, acc)?;
            if peak > PIECE_TARGET {
                piece_rows =
                    (piece_rows as u128 * PIECE_TARGET as u128 / peak as u128).max(1) as usize;
            } else if peak < PIECE_TARGET / 4 {
                piece_rows = piece_rows.saturating_mul(2);
            }
        }
        Ok(())
    }

    /// `sort_unique(batch) − full[rel]`, pushed onto `acc`.
    fn absorb(
        &mut self,
        rel: RelId,
        batch: B::Batch,
        acc: &mut Vec<B::Relation>,
    ) -> ExecResult<()> {
        let n = self.backend.batch_len(&batch);
        if n == 0 {
            return Ok(());
        }
        self.stats.derived += n;
        let t = Instant::now();
        let candidates = self.backend.sort_unique(batch)?;
        self.stats.phases.dedup += t.elapsed();
        let t = Instant::now();
        let new = self.backend.difference(&candidates, &self.full[rel])?;
        self.stats.phases.difference += t.elapsed();
        if self.backend.relation_len(&new) == 0 {
            return Ok(());
        }
        let t = Instant::now();
        acc.push(new);
        while acc.len() >= 2 {
            let n = acc.len();
            if self.backend.relation_len(&acc[n - 1]) * 2 < self.backend.relation_len(&acc[n - 2]) {
                break;
            }
            let top = acc.pop().expect("two runs");
            let below = acc.pop().expect("two runs");
            acc.push(self.backend.merge(&below, &top)?);
        }
        self.stats.phases.dedup += t.elapsed();
        Ok(())
    }

    /// Runs a pipeline; returns its result and the largest batch it made.
    /// `set_result`: the result is only used as a set (a rule's result, not an
    /// aggregate's groups), so the last join may drop repeats early.
    fn run_ops(
        &self,
        ops: &[Op],
        input: Option<B::Batch>,
        set_result: bool,
    ) -> ExecResult<(B::Batch, usize)> {
        let b = self.backend;
        let ctx = &self.ctx;
        let mut peak = 0;
        let mut batch = input;
        for (n, op) in ops.iter().enumerate() {
            let next = match op {
                Op::Unit => b.unit(),
                Op::Scan {
                    rel,
                    version,
                    filters,
                    project,
                } => {
                    let relation = match version {
                        Version::Full => &self.full[*rel],
                        Version::Delta => self.delta[*rel].as_ref().ok_or_else(|| {
                            internal("a delta variant ran outside its stratum's loop")
                        })?,
                    };
                    b.scan(relation, filters, project, ctx)?
                }
                Op::Join {
                    index,
                    version,
                    key,
                    filters,
                    project,
                } => {
                    if *version == Version::Delta {
                        return Err(internal("the planner scans deltas; it never joins them"));
                    }
                    let mut input = batch.take().ok_or_else(|| internal("join without input"))?;
                    if set_result && n > 0 && matches!(ops[n - 1], Op::Join { .. }) {
                        // The output of a join feeding another join, in a pipeline whose
                        // result is a set: sorting and deduplicating it removes the
                        // repeats that projecting away join variables made, and puts
                        // rows with the same leading values together, so the next
                        // join's repeated outputs are adjacent and dropped early.
                        let arity = b.batch_arity(&input);
                        let sorted = b.sort_unique(input)?;
                        let identity: Vec<PExpr> = (0..arity).map(PExpr::Col).collect();
                        input = b.scan(&sorted, &[], &identity, ctx)?;
                    }
                    let inner = self.index(*index)?;
                    if set_result {
                        b.join_distinct(&input, inner, key, filters, project, ctx)?
                    } else {
                        b.join(&input, inner, key, filters, project, ctx)?
                    }
                }
                Op::AntiJoin { index, key } => {
                    let input = batch
                        .take()
                        .ok_or_else(|| internal("anti-join without input"))?;
                    b.antijoin(input, self.index(*index)?, key, ctx)?
                }
                Op::Filter { filters, project } => {
                    let input = batch
                        .as_ref()
                        .ok_or_else(|| internal("filter without input"))?;
                    b.filter(input, filters, project, ctx)?
                }
                Op::Aggregate {
                    func,
                    ty,
                    correlated,
                    sub,
                    filters,
                    project,
                } => {
                    let input = batch
                        .as_ref()
                        .ok_or_else(|| internal("aggregate without input"))?;
                    if *correlated {
                        let numbered = b.with_row_numbers(input)?;
                        let (groups, _) = self.run_ops(sub, Some(numbered), false)?;
                        b.aggregate(input, groups, *func, *ty, filters, project, ctx)?
                    } else {
                        // Computed once over a unit input, then joined to every input
                        // tuple through an index with an empty key (a cross product
                        // with at most one tuple).
                        let unit = b.unit();
                        let (groups, _) =
                            self.run_ops(sub, Some(b.with_row_numbers(&unit)?), false)?;
                        let value =
                            b.aggregate(&unit, groups, *func, *ty, &[], &[PExpr::Col(0)], ctx)?;
                        let value = b.build_index(&b.sort_unique(value)?, &[0], 0)?;
                        b.join(input, &value, &[], filters, project, ctx)?
                    }
                }
            };
            peak = peak.max(b.batch_len(&next));
            batch = Some(next);
        }
        let batch = batch.ok_or_else(|| internal("empty pipeline"))?;
        Ok((batch, peak))
    }

    fn index(&self, id: usize) -> ExecResult<&B::Index> {
        self.indexes[id]
            .as_ref()
            .ok_or_else(|| internal("index used before it was built"))
    }

    fn ensure_index(&mut self, id: usize) -> ExecResult<()> {
        if self.indexes[id].is_none() {
            let t = Instant::now();
            let spec = &self.plan.indexes[id];
            let index =
                self.backend
                    .build_index(&self.full[spec.rel], &spec.order, spec.key_len)?;
            self.indexes[id] = Some(index);
            self.stats.phases.index += t.elapsed();
        }
        Ok(())
    }

    /// `full[rel] ∪= new`, extending built indexes over `rel`; returns `new`.
    fn add_to_full(&mut self, rel: RelId, new: B::Relation) -> ExecResult<B::Relation> {
        if self.backend.relation_len(&new) == 0 {
            return Ok(new);
        }
        let t = Instant::now();
        self.full[rel] = self.backend.merge(&self.full[rel], &new)?;
        self.stats.phases.merge += t.elapsed();
        let t = Instant::now();
        for (id, spec) in self.plan.indexes.iter().enumerate() {
            if spec.rel == rel {
                if let Some(index) = self.indexes[id].as_mut() {
                    self.backend.extend_index(index, &new)?;
                }
            }
        }
        self.stats.phases.index += t.elapsed();
        Ok(new)
    }
}

fn collect_indexes(ops: &[Op], out: &mut Vec<usize>) {
    for op in ops {
        match op {
            Op::Join { index, .. } | Op::AntiJoin { index, .. } => out.push(*index),
            Op::Aggregate { sub, .. } => collect_indexes(sub, out),
            _ => {}
        }
    }
}

fn internal(what: &str) -> ExecError {
    ExecError::Backend(format!("internal error: {what}"))
}

/// Progress on stderr: a spinner line with the stratum, iteration and delta sizes, drawn
/// only when stderr is a terminal.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new(enabled: bool) -> Progress {
        use std::io::IsTerminal;
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {prefix} {wide_msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress { bar }
    }

    fn set(&self, prefix: &str, message: &str) {
        if let Some(bar) = &self.bar {
            bar.set_prefix(prefix.to_string());
            bar.set_message(message.to_string());
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
