//! The semi-naive driver: runs a [`Plan`] to its fixpoint on any [`Backend`].
//!
//! Before evaluating, every operator of the plan is described as an [`OpSpec`](crate::OpSpec) and
//! lowered once by [`Backend::prepare`] ([`Prepared`]). Then, for each stratum in order:
//! 1. `full` of each of its relations starts as its facts (program facts, inserted
//!    facts, input files);
//! 2. the stratum's non-recursive rules run once over full versions, and their results
//!    are merged into `full`;
//! 3. in a recursive stratum, `delta := full` and the loop runs every delta variant on the
//!    deltas; per relation `new := sort_unique(results) − full`; `full := full ∪ new`;
//!    `delta := new`; indexes over the stratum's relations are extended with `new`. The
//!    loop ends after the first pass that derives nothing (that pass is counted, as in
//!    the published iteration counts), or, with `.limitsize`, after a pass that found a
//!    relation of the stratum at its limit, whose new tuples are then dropped (as in
//!    Soufflé: see [`fixlog_logical::LimitSize`]).
//!
//! `recursive_iteration_cnt()` (`Program::iteration`): its one-tuple relation holds 0
//! while the rules that run once run, and `k` during the `k`-th pass of a loop (from 0).
//!
//! `debug_delta` relations (`Program::debug_deltas`): after the `k`-th pass of a loop
//! has added its new tuples (folded, dominated ones removed: the delta the next pass
//! reads), the driver copies the delta of each source relation of the stratum to the
//! host, appends `k` to every tuple and merges them into the `debug_delta` relation
//! (through [`Backend::relation_rows`], [`Backend::relation_from_rows`] and
//! [`Backend::merge`], so every backend does the same).
//!
//! Relations kept in a shape ([`crate::maintain`]): the new tuples of an `eqrel` or
//! `choice-domain` relation (facts, and each step's `new`) are folded on the host before
//! they are added (the eqrel closure's new pairs; the chosen tuples), so `delta` is what
//! the relation really gained. A stratum with subsumptive clauses runs them over full
//! versions after its init rules and after every iteration and removes the dominated
//! tuples they derive from `full` and from `delta` (rebuilding the relation's indexes).
//! An iteration counts as deriving something when some delta is not empty.
//!
//! The driver decides *what* runs; the backend decides *how*. Indexes over relations of
//! earlier strata are built on first use and kept.
//!
//! Three decisions bound memory and work without the backend knowing about them:
//! - **Piece by piece.** A pipeline's first operator's output is cut into pieces; each
//!   piece runs through the rest of the pipeline and its result is deduplicated and
//!   subtracted from `full` at once. The piece size adapts so that no batch of a piece
//!   exceeds the backend's [`crate::PieceBudget`], and a piece that runs out of memory is run
//!   again in halves. Further down the pipeline, an operator whose output would exceed
//!   the backend's budget ([`ExecError::BatchTooLarge`]) or that runs out of memory has
//!   its own input cut into pieces, each run through the rest of the pipeline: the
//!   batches before it stay whole (see `Driver::run_split`).
//! - **Set results.** A rule's result is a set, so every join of a rule pipeline may drop
//!   repeated tuples early (`OpSpec::Join::distinct`), and a join's output that feeds
//!   another join is sorted and deduplicated first.
//! - **Full-first plans.** Where [`DriverOptions::full_first`] asks, a delta variant runs
//!   its [`fixlog_plan::FullFirst`] plan: its first batch is cut from a full atom sorted
//!   on the head's first variable, and the delta is joined through an index over it
//!   (built each iteration). Its pieces derive disjoint head tuples, so every batch and
//!   gathered set is bounded at a share of the head relation without repeating work.
//!
//! Its files: `stats` (what a run reports), `lower` (the plan lowered to the backend's
//! operators, once per run), `pieces` (a pipeline run piece by piece) and `progress`
//! (the progress line); this one holds the options, [`run`] and the driver's loop.

mod lower;
mod pieces;
mod progress;
mod stats;

use crate::backend::{internal, Absorbed, Backend, EvalContext, ExecError, ExecResult};
use crate::maintain::Maintained;
use fixlog_logical::{Program, RelId, SymbolTable, Value};
use fixlog_plan::{Plan, RulePlan, Version};
use lower::{collect_indexes, takes_sorted, LoweredRule, POp};
use pieces::{once_more, Level};
use progress::Progress;
use std::time::Instant;

pub use lower::{plan_op_specs, prepare, Prepared};
pub use stats::{
    DiskSpillStats, HostMemoryStats, OperatorTime, PhaseTimes, RunResult, RunStats, StratumStats,
};

pub use crate::tuples::{RowStore, Tuples};

#[derive(Clone, Debug, Default)]
pub struct DriverOptions {
    /// Show progress on stderr (only drawn when stderr is a terminal).
    pub progress: bool,
    /// Which relations' tuples to return (by relation id); `None`: all.
    pub keep_rows: Option<Vec<bool>>,
    /// Which relations to compute (by relation id); `None`: all. A stratum none of
    /// whose relations is needed is not run (its relations keep their facts only).
    pub needed: Option<Vec<bool>>,
    /// When delta variants run their [`fixlog_plan::FullFirst`] plans.
    pub full_first: FullFirstUse,
}

/// When the driver runs a delta variant's [`fixlog_plan::FullFirst`] plan instead of
/// its delta-first one (both derive the same tuples).
///
/// Never by default here; the `fixlog` crate runs them by size on the CPU and on the
/// GPU under a device memory limit, and by size from a head relation of 32M tuples on
/// the GPU without one (`fixlog::GPU_FULL_FIRST_MIN_HEAD_ROWS`, round 33). Measured on an H100 (docs/gpu-results.md, round 28), `BySize`
/// cut same generation's peak device memory by 24-40% without a limit (CA-HepTh 1.48
/// → 1.13 GiB, ego-Facebook 0.43 → 0.26) but took 1.6x the time on CA-HepTh and 5x on
/// ego-Facebook, whose joins make many pieces per iteration (each with its own
/// launches and synchronisations); under `--gpu-memory-limit`, where the delta-first
/// plan moves relations to host memory, it ran CA-HepTh 4.6-8x faster (1 GiB: 1.98 →
/// 0.43 s) and loc-Brightkite 1.7x, and ego-Facebook at 256 MiB 1.6x slower.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FullFirstUse {
    /// Where the plan's outer relation has at most as many tuples as the delta (the
    /// joins make the same rows either way, and the smaller side is probed from), once
    /// the head relation holds at least `min_head_rows` tuples (0: from the start;
    /// below a large bound, what the plan saves in memory is small beside the time its
    /// pieces cost).
    BySize { min_head_rows: usize },
    /// Wherever a variant has one (for tests).
    Always,
    /// Never: every delta variant starts at its delta.
    #[default]
    Never,
}

/// Batches of a pipeline whose pieces derive disjoint tuples (a full-first plan's) are
/// bounded by this share of the head relation's tuples (at least
/// `DISJOINT_BATCH_MIN_ROWS`, at most the backend's budget): cutting them smaller
/// repeats no work, and a share of the relation keeps what one iteration holds beside
/// it (a piece's join output, its sort, the gathered set of the next join's input)
/// near the relation's size. The least is the CUDA backend's least batch (32 MiB of
/// two columns): at 1M rows SG ego-Facebook ran hundreds of pieces an iteration
/// (round 28).
const DISJOINT_BATCH_SHARE: usize = 8;
const DISJOINT_BATCH_MIN_ROWS: usize = 1 << 22;
/// The first piece of such a pipeline on a backend whose joins cannot say what fits
/// ([`crate::PieceBudget::joins_say_what_fits`]; pieces then grow while their batches
/// stay small): one row of the outer relation can make thousands. A backend whose
/// joins say what fits starts at its own first piece, cut where they refuse.
const DISJOINT_FIRST_PIECE_ROWS: usize = 1 << 10;
/// The first piece of any other top level on a backend whose joins say what fits is at
/// least this share of the head relation's tuples: a large relation's iterations then
/// run as one or two pieces instead of many at the backend's fixed first piece (each
/// piece's new run is merged at the end). Measured on an H100 (docs/gpu-results.md,
/// round 33): TC fe_ocean 0.88 → 0.81 s (its 247 iterations had run as 432 pieces at
/// 4M rows), p2p-Gnutella31 4% faster, no peak higher (1/16: fe_ocean about the same,
/// p2p's peak 0.35 GiB higher); it changes nothing for relations under 32 first
/// pieces (134M rows on the GPU), whose peaks a larger fixed first piece raised (TC
/// CA-HepTh past its memory aim, SG CA-HepTh by 0.4 GiB).
const TOP_PIECE_SHARE: usize = 32;

// ---- running ------------------------------------------------------------------------

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
    let ctx = EvalContext::new(symbols);
    let t = Instant::now();
    let prepared = prepare(backend, plan, &ctx)?;
    let prepare_time = t.elapsed();
    let mut driver = Driver {
        backend,
        plan,
        prepared: &prepared,
        ctx,
        full: Vec::new(),
        delta: (0..plan.relations.len()).map(|_| None).collect(),
        indexes: (0..plan.indexes.len()).map(|_| None).collect(),
        delta_indexes: (0..plan.indexes.len()).map(|_| None).collect(),
        versions_peak: vec![None; plan.relations.len()],
        full_first: options.full_first,
        stats: RunStats {
            backend: backend.name().to_string(),
            ..RunStats::default()
        },
        progress: Progress::new(options.progress),
        maintained: plan
            .relations
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let lattice = program.relations.get(i).and_then(|p| p.lattice.as_ref());
                Maintained::for_relation(r.eqrel, &r.choice_domains, &r.types, lattice)
            })
            .collect(),
        iteration: program.iteration.map(|rel| (rel, None)),
        debug_deltas: program
            .debug_deltas
            .iter()
            .filter(|d| {
                options
                    .needed
                    .as_ref()
                    .is_none_or(|needed| needed.get(d.target).copied().unwrap_or(true))
            })
            .map(|d| (d.source, d.target))
            .collect(),
    };
    driver.stats.phases.prepare = prepare_time;
    let t = Instant::now();
    for (rel, tuples) in initial.into_iter().enumerate() {
        let arity = plan
            .relations
            .get(rel)
            .map(|r| r.types.len())
            .ok_or_else(|| internal("facts for an unknown relation"))?;
        let relation = if arity == 0 {
            if tuples.len > 0 {
                backend.sort_unique(backend.unit()?)?
            } else {
                backend.empty_relation(0)?
            }
        } else {
            let n = tuples.len;
            let rows = match driver.maintained.get_mut(rel).and_then(Option::as_mut) {
                Some(m) => m.fold(arity, &tuples.rows.merged()?, symbols),
                None => tuples.rows.into_vec(),
            };
            backend
                .relation_from_rows(arity, rows)
                .map_err(|e| match e {
                    ExecError::OutOfMemory(why) => ExecError::OutOfMemory(format!(
                        "{why}; while loading the {n} facts of `{}`",
                        plan.relations[rel].name
                    )),
                    other => other,
                })?
        };
        driver.full.push(relation);
    }
    driver.stats.phases.load = t.elapsed();

    // The `autoinc()` counter, shared by the whole run (see `number_autoinc`).
    let mut counter: Value = 0;
    for (n, stratum) in plan.strata.iter().enumerate() {
        let wanted = |r: &usize| {
            options
                .needed
                .as_ref()
                .is_none_or(|needed| needed.get(*r).copied().unwrap_or(true))
        };
        if !stratum.relations.iter().any(wanted) {
            continue;
        }
        let t = Instant::now();
        for a in &program.autoincs {
            if stratum.relations.contains(&a.target) {
                driver.number_autoinc(a, &mut counter)?;
            }
        }
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
    let t = Instant::now();
    driver.indexes.clear();
    driver.delta_indexes.clear();
    driver.delta.clear();
    let full = std::mem::take(&mut driver.full);
    let mut stats = driver.stats;
    for (rel, peak) in driver.versions_peak.iter().enumerate() {
        if let (Some(peak), Some(r)) = (peak, program.relations.get(rel)) {
            stats.versions_peak.push((r.name.clone(), *peak));
        }
    }
    let mut relations = Vec::with_capacity(full.len());
    for (rel, r) in full.into_iter().enumerate() {
        let name = program
            .relations
            .get(rel)
            .map(|r| r.name.clone())
            .unwrap_or_default();
        stats.relation_sizes.push((name, backend.relation_len(&r)));
        let keep = options
            .keep_rows
            .as_ref()
            .is_none_or(|k| k.get(rel).copied().unwrap_or(true));
        relations.push(if keep {
            Some(Tuples {
                arity: backend.relation_arity(&r),
                len: backend.relation_len(&r),
                rows: backend.take_result(r)?,
            })
        } else {
            None
        });
    }
    stats.phases.unload = t.elapsed();
    stats.total = start.elapsed();
    Ok(RunResult { relations, stats })
}

struct Driver<'a, B: Backend> {
    backend: &'a B,
    plan: &'a Plan,
    prepared: &'a Prepared<B::Code>,
    ctx: EvalContext<'a>,
    full: Vec<B::Relation>,
    delta: Vec<Option<B::Relation>>,
    indexes: Vec<Option<B::Index>>,
    /// Indexes over the deltas (joined by [`fixlog_plan::FullFirst`] plans), by the
    /// same ids as `indexes`; dropped whenever the deltas change.
    delta_indexes: Vec<Option<B::Index>>,
    /// Per relation: the most tuples its versions held together (see
    /// [`RunStats::versions_peak`]); `None` until an iteration derived into it.
    versions_peak: Vec<Option<usize>>,
    full_first: FullFirstUse,
    stats: RunStats,
    progress: Progress,
    /// Per relation: the host state of an eqrel or choice-domain relation.
    maintained: Vec<Option<Maintained>>,
    /// `recursive_iteration_cnt()`'s relation and the value it holds now (see
    /// [`Driver::set_iteration`]).
    iteration: Option<(RelId, Option<Value>)>,
    /// `(source, target)` of each `debug_delta` relation a result needs (see
    /// [`Driver::record_debug_deltas`]).
    debug_deltas: Vec<(RelId, RelId)>,
}

impl<B: Backend> Driver<'_, B> {
    /// `recursive_iteration_cnt()` (`fixlog_logical::Program::iteration`): makes the
    /// counter's relation hold the one tuple `(k)`, dropping the indexes over it (they
    /// are built again on next use). Soufflé's loop counter: 0 for the rules that run
    /// once, `k` in the `k`-th pass of a loop (from 0).
    fn set_iteration(&mut self, k: Value) -> ExecResult<()> {
        let Some((rel, current)) = self.iteration else {
            return Ok(());
        };
        if current == Some(k) {
            return Ok(());
        }
        let relation = self.backend.relation_from_rows(1, vec![k])?;
        let slot = self
            .full
            .get_mut(rel)
            .ok_or_else(|| internal("the iteration counter's relation is missing"))?;
        *slot = relation;
        self.drop_indexes(rel);
        self.iteration = Some((rel, Some(k)));
        Ok(())
    }

    /// Drops the indexes over `rel` (its full version was replaced or changed in
    /// place: they are rebuilt when a pipeline next needs them).
    fn drop_indexes(&mut self, rel: RelId) {
        for (id, spec) in self.plan.indexes.iter().enumerate() {
            if spec.rel == rel {
                self.indexes[id] = None;
            }
        }
    }

    /// `debug_delta` relations (`fixlog_logical::DebugDelta`): adds the delta of each
    /// source in `stratum` (what pass `pass` added to it), each tuple with `pass` as its
    /// last column, to the source's `debug_delta` relation. That relation is of a later
    /// stratum, read by no rule yet; indexes over it are dropped all the same.
    fn record_debug_deltas(
        &mut self,
        stratum: &fixlog_plan::StratumPlan,
        pass: Value,
    ) -> ExecResult<()> {
        let b = self.backend;
        for i in 0..self.debug_deltas.len() {
            let (source, target) = self.debug_deltas[i];
            if !stratum.relations.contains(&source) {
                continue;
            }
            let Some(delta) = self.delta.get(source).and_then(Option::as_ref) else {
                continue;
            };
            let len = b.relation_len(delta);
            if len == 0 {
                continue;
            }
            let arity = self.plan.relations[source].types.len();
            let rows = b.relation_rows(delta)?;
            let mut tagged = Vec::new();
            tagged
                .try_reserve_exact(len * (arity + 1))
                .map_err(|_| ExecError::OutOfMemory("recording a `debug_delta`".into()))?;
            if arity == 0 {
                tagged.push(pass);
            } else {
                for t in rows.chunks_exact(arity) {
                    tagged.extend_from_slice(t);
                    tagged.push(pass);
                }
            }
            let gained = b.relation_from_rows(arity + 1, tagged)?;
            let slot = self
                .full
                .get_mut(target)
                .ok_or_else(|| internal("a `debug_delta` relation is missing"))?;
            *slot = b.merge(slot, &gained)?;
            self.drop_indexes(target);
        }
        Ok(())
    }

    /// Fills an `autoinc()` relation (`fixlog_logical::AutoInc`): the tuples of its
    /// source (complete: an earlier stratum) in output order, each with the counter
    /// before it, which advances by `per_tuple`. On the host, for every backend, so the
    /// numbers are the same for every thread count and backend.
    fn number_autoinc(
        &mut self,
        a: &fixlog_logical::AutoInc,
        counter: &mut Value,
    ) -> ExecResult<()> {
        let b = self.backend;
        let source = self
            .full
            .get(a.source)
            .ok_or_else(|| internal("an autoinc source is missing"))?;
        let types = &self.plan.relations[a.source].types;
        let arity = types.len();
        let len = b.relation_len(source);
        let rows = b.relation_rows(source)?;
        let mut tuples: Vec<&[Value]> = if arity == 0 {
            vec![&[]; len]
        } else {
            rows.chunks_exact(arity).collect()
        };
        let order = fixlog_logical::value::output_order(types, self.ctx.symbols);
        tuples.sort_by(|x, y| order(x, y));
        let mut out = Vec::new();
        out.try_reserve_exact(tuples.len() * (arity + 1))
            .map_err(|_| ExecError::OutOfMemory("numbering `autoinc()` tuples".into()))?;
        for t in tuples {
            out.push(*counter);
            out.extend_from_slice(t);
            *counter = counter.wrapping_add(a.per_tuple);
        }
        self.full[a.target] = b.relation_from_rows(arity + 1, out)?;
        Ok(())
    }

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
        let prepared = self.prepared;
        let (init_ops, recursive_ops, subsumption_ops) = prepared
            .strata
            .get(n)
            .ok_or_else(|| internal("a stratum was not prepared"))?;

        // Rules that run once.
        self.set_iteration(0)?;
        let results = self.run_rules(&stratum.init, init_ops, &stratum.relations, true)?;
        for (rel, new) in results {
            self.add_to_full(rel, new)?;
        }
        self.remove_dominated(stratum, subsumption_ops)?;
        if !stratum.recursive {
            return Ok(0);
        }

        // Indexes over this stratum's relations must follow `full` from now on.
        for (id, spec) in self.plan.indexes.iter().enumerate() {
            if stratum.relations.contains(&spec.rel) && prepared.over_full[id] {
                self.ensure_index(id)?;
            }
        }
        for &rel in &stratum.relations {
            // Everything is new at the start.
            self.delta[rel] = Some(self.full[rel].clone());
        }
        self.drop_delta_indexes();

        let mut iterations = 0;
        loop {
            iterations += 1;
            self.set_iteration((iterations - 1) as Value)?;
            let news = self.run_rules(
                &stratum.recursive_rules,
                recursive_ops,
                &stratum.relations,
                true,
            )?;
            self.note_versions(&news)?;
            if self.size_limit_reached(stratum) {
                break;
            }
            for &rel in &stratum.relations {
                self.delta[rel] = None;
            }
            self.drop_delta_indexes();
            for (rel, new) in news {
                let delta = self.add_to_full(rel, new)?;
                self.delta[rel] = Some(delta);
            }
            self.remove_dominated(stratum, subsumption_ops)?;
            self.record_debug_deltas(stratum, (iterations - 1) as Value)?;
            let mut derived = 0usize;
            let mut sizes = Vec::new();
            for &rel in &stratum.relations {
                let gained = self.delta[rel]
                    .as_ref()
                    .map_or(0, |d| self.backend.relation_len(d));
                derived += gained;
                sizes.push(format!(
                    "{} +{} = {}",
                    self.plan.relations[rel].name,
                    gained,
                    self.backend.relation_len(&self.full[rel])
                ));
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
        self.drop_delta_indexes();
        Ok(iterations)
    }

    /// Notes what each relation's versions hold at the end of an iteration: `full`,
    /// the delta the iteration joined and the new tuples it derived (`news`).
    fn note_versions(&mut self, news: &[(RelId, B::Relation)]) -> ExecResult<()> {
        let b = self.backend;
        for &(rel, ref new) in news {
            let (Some(full), Some(delta), Some(peak)) = (
                self.full.get(rel),
                self.delta.get(rel),
                self.versions_peak.get_mut(rel),
            ) else {
                return Err(internal("a stratum's relation is missing"));
            };
            let held = b.relation_len(full)
                + delta.as_ref().map_or(0, |d| b.relation_len(d))
                + b.relation_len(new);
            *peak = Some(peak.map_or(held, |p| p.max(held)));
        }
        Ok(())
    }

    /// Runs rules; returns, per relation of `relations` (in order), the tuples they
    /// derived that are not in `full` yet (`only_new`), or all they derived.
    fn run_rules(
        &mut self,
        rules: &[RulePlan],
        pipelines: &[LoweredRule],
        relations: &[RelId],
        only_new: bool,
    ) -> ExecResult<Vec<(RelId, B::Relation)>> {
        let mut per_rel: Vec<Vec<B::Relation>> = relations.iter().map(|_| Vec::new()).collect();
        for (rule, lowered) in rules.iter().zip(pipelines) {
            let slot = relations
                .iter()
                .position(|&r| r == rule.head)
                .ok_or_else(|| internal("a rule's head is outside its stratum"))?;
            self.run_rule(rule, lowered, &mut per_rel[slot], only_new)?;
        }
        let mut out = Vec::new();
        for (&rel, runs) in relations.iter().zip(per_rel) {
            let t = Instant::now();
            let arity = self.plan.relations[rel].types.len();
            // Each run was subtracted from `full` only: runs of different rules or
            // pieces may share tuples, so they are merged as sets.
            let mut iter = runs.into_iter();
            let mut new = match iter.next() {
                Some(first) => first,
                None => self.backend.empty_relation(arity)?,
            };
            for run in iter {
                let b = self.backend;
                let (merged, retried) = once_more(|| b.merge(&new, &run));
                self.stats.memory_retries += retried as usize;
                new = merged.map_err(|e| self.deriving(rel, e))?;
            }
            self.stats.phases.dedup += t.elapsed();
            out.push((rel, new));
        }
        Ok(out)
    }

    /// Runs one rule's pipeline and adds what it derives that is new to `acc` (a stack
    /// of sorted runs, see [`crate::runs`]).
    ///
    /// A pipeline whose first operator produces many tuples runs piece by piece: the
    /// first operator's output is cut into pieces, each piece runs through the rest of
    /// the pipeline and its results are deduplicated and subtracted from `full` at once.
    /// The piece size adapts so that no batch of a piece exceeds the backend's budget,
    /// which bounds the memory of joins whose output explodes; a piece that runs out
    /// of memory is run again in two halves.
    fn run_rule(
        &mut self,
        rule: &RulePlan,
        lowered: &LoweredRule,
        acc: &mut Vec<B::Relation>,
        only_new: bool,
    ) -> ExecResult<()> {
        let b = self.backend;
        // A delta variant with an empty delta derives nothing.
        let delta_len = match lowered.ops.first() {
            Some(POp::Scan {
                rel,
                version: Version::Delta,
                ..
            }) => match &self.delta[*rel] {
                Some(d) if b.relation_len(d) > 0 => Some(b.relation_len(d)),
                _ => return Ok(()),
            },
            _ => None,
        };
        let full_first = match (&lowered.full_first, delta_len) {
            (Some((outer, ops)), Some(d)) => match self.full_first {
                FullFirstUse::Always => Some(ops),
                FullFirstUse::BySize { min_head_rows }
                    if b.relation_len(&self.full[*outer]) <= d
                        && b.relation_len(&self.full[rule.head]) >= min_head_rows =>
                {
                    Some(ops)
                }
                _ => None,
            },
            _ => None,
        };
        let ops = full_first.map_or(&lowered.ops[..], |ops| &ops[..]);
        // Build the indexes this pipeline needs before running it.
        let mut needed = Vec::new();
        collect_indexes(ops, &mut needed);
        for (id, delta) in needed {
            if delta {
                self.ensure_delta_index(id)?;
            } else {
                self.ensure_index(id)?;
            }
        }
        let t = Instant::now();
        let (first, rest) = ops.split_at(1.min(ops.len()));
        let remaining = match first.first() {
            Some(op) => self.run_op(op, None, false, None),
            None => Err(internal("empty pipeline")),
        }
        .map_err(|e| self.deriving(rule.head, e))?;
        self.stats.phases.join += t.elapsed();
        if rest.is_empty() {
            return self.absorb(rule.head, remaining, acc, only_new);
        }
        let remaining = if takes_sorted(rest) {
            let b = self.backend;
            b.relation_batch(&b.sort_unique(remaining)?)?
        } else {
            remaining
        };
        // Asked per pipeline: a backend's budget may follow the memory it holds.
        let budget = self.backend.piece_budget();
        let sort_on_cut = matches!(
            first.first(),
            Some(POp::Scan {
                sort_output: true,
                ..
            })
        );
        // A full-first plan's pieces, cut from its scan sorted on the head's first
        // column, derive disjoint tuples; not where the scan is too large to sort.
        let disjoint = full_first.is_some() && b.batch_len(&remaining) <= budget.max_sort_rows;
        let (first_piece_rows, max_batch_rows) = if disjoint {
            let share = b.relation_len(&self.full[rule.head]) / DISJOINT_BATCH_SHARE;
            let first = if budget.joins_say_what_fits {
                budget.first_piece_rows
            } else {
                DISJOINT_FIRST_PIECE_ROWS.min(budget.first_piece_rows)
            };
            (
                first,
                share
                    .max(DISJOINT_BATCH_MIN_ROWS)
                    .min(budget.max_batch_rows),
            )
        } else if budget.joins_say_what_fits {
            let share = b.relation_len(&self.full[rule.head]) / TOP_PIECE_SHARE;
            (budget.first_piece_rows.max(share), budget.max_batch_rows)
        } else {
            (budget.first_piece_rows, budget.max_batch_rows)
        };
        let top = Level::Top {
            first_piece_rows: first_piece_rows.max(1),
            max_batch_rows: max_batch_rows.max(1),
            sort_on_cut,
            disjoint,
        };
        self.run_split(rule.head, rest, remaining, top, acc, only_new)
            .map(|_| ())
    }

    /// An out-of-memory error that happened while deriving tuples of `rel`, saying so.
    fn deriving(&self, rel: RelId, e: ExecError) -> ExecError {
        match e {
            ExecError::OutOfMemory(why) => ExecError::OutOfMemory(format!(
                "{why}; while deriving `{}` ({} tuples)",
                self.plan.relations[rel].name,
                self.backend.relation_len(&self.full[rel])
            )),
            other => other,
        }
    }

    /// `sort_unique(batch) − full[rel]` (`only_new`) or `sort_unique(batch)`, pushed
    /// onto `acc`.
    fn absorb(
        &mut self,
        rel: RelId,
        batch: B::Batch,
        acc: &mut Vec<B::Relation>,
        only_new: bool,
    ) -> ExecResult<()> {
        let n = self.backend.batch_len(&batch);
        if n == 0 {
            return Ok(());
        }
        self.stats.derived += n;
        let t = Instant::now();
        let new = if only_new {
            self.backend.sort_unique_minus(batch, &self.full[rel])?
        } else {
            self.backend.sort_unique(batch)?
        };
        self.push_whole(acc, new)?;
        self.stats.phases.dedup += t.elapsed();
        Ok(())
    }

    /// Runs a sub-pipeline (an aggregate's) in one piece: its result.
    fn run_seq(&self, ops: &[POp], input: &B::Batch, can_split: bool) -> ExecResult<B::Batch> {
        let b = self.backend;
        let mut batch: Option<B::Batch> = None;
        for op in ops {
            let next = match (op, batch.take()) {
                (
                    POp::Join {
                        sort_input: true, ..
                    },
                    Some(owned),
                ) => {
                    // (As in `run_split`.)
                    let sorted = b.relation_batch(&b.sort_unique(owned)?)?;
                    self.run_op(op, Some(&sorted), can_split, None)?
                }
                (_, Some(owned)) => self.run_op(op, Some(&owned), can_split, None)?,
                (_, None) => self.run_op(op, Some(input), can_split, None)?,
            };
            batch = Some(next);
        }
        batch.ok_or_else(|| internal("empty pipeline"))
    }

    /// Runs one operator. `input`: the batch it consumes (none for `Unit` and scans;
    /// a join marked `sort_input` takes it sorted already). `can_split`: whether the
    /// caller runs it again over smaller pieces of `input` when it answers
    /// [`ExecError::BatchTooLarge`].
    fn run_op(
        &self,
        op: &POp,
        input: Option<&B::Batch>,
        can_split: bool,
        max_rows: Option<usize>,
    ) -> ExecResult<B::Batch> {
        let b = self.backend;
        let ctx = &EvalContext {
            symbols: self.ctx.symbols,
            can_split,
            max_rows,
        };
        let codes = &self.prepared.codes;
        let code = |i: usize| {
            codes
                .get(i)
                .ok_or_else(|| internal("an operator was not prepared"))
        };
        let input = || input.ok_or_else(|| internal("an operator has no input"));
        Ok(match op {
            POp::Unit => b.unit()?,
            POp::Scan {
                rel,
                version,
                code: c,
                ..
            } => {
                let relation = match version {
                    Version::Full => &self.full[*rel],
                    Version::Delta => self.delta[*rel].as_ref().ok_or_else(|| {
                        internal("a delta variant ran outside its stratum's loop")
                    })?,
                };
                b.scan(relation, code(*c)?, ctx)?
            }
            POp::Join {
                index,
                code: c,
                delta,
                ..
            } => b.join(input()?, self.join_index(*index, *delta)?, code(*c)?, ctx)?,
            POp::Intersect { indexes, code: c } => {
                let atoms = indexes
                    .iter()
                    .map(|&i| self.index(i))
                    .collect::<ExecResult<Vec<_>>>()?;
                b.intersect(input()?, &atoms, code(*c)?, ctx)?
            }
            POp::AntiJoin { index, code: c } => {
                b.antijoin(input()?, self.index(*index)?, code(*c)?, ctx)?
            }
            POp::Filter { code: c } => b.filter(input()?, code(*c)?, ctx)?,
            POp::Range { ty, step } => b.range(input()?, *ty, *step)?,
            POp::Aggregate {
                sub,
                code: c,
                join_value,
            } => {
                let input = input()?;
                match join_value {
                    None => {
                        // (Groups are per input tuple: smaller pieces of the input make
                        // smaller groups.)
                        let numbered = b.with_row_numbers(input)?;
                        let groups = self.run_seq(sub, &numbered, can_split)?;
                        b.aggregate(input, groups, code(*c)?, ctx)?
                    }
                    Some(j) => {
                        let unit = b.unit()?;
                        let numbered = b.with_row_numbers(&unit)?;
                        let groups = self.run_seq(sub, &numbered, false)?;
                        let value = b.aggregate(&unit, groups, code(*c)?, ctx)?;
                        let value = b.build_index(&b.sort_unique(value)?, &[0], 0)?;
                        b.join(input, &value, code(*j)?, ctx)?
                    }
                }
            }
        })
    }

    /// [`Self::run_op`] of the last operator of a rule's pipeline, whose output is
    /// absorbed into `head`'s new tuples, subtracting its full relation: a join may
    /// give back those new tuples itself ([`Backend::join_absorbed`]).
    fn run_absorbed_op(
        &self,
        op: &POp,
        input: &B::Batch,
        can_split: bool,
        max_rows: Option<usize>,
        head: RelId,
    ) -> ExecResult<Absorbed<B::Batch, B::Relation>> {
        let POp::Join {
            index, code, delta, ..
        } = op
        else {
            return self
                .run_op(op, Some(input), can_split, max_rows)
                .map(Absorbed::Rows);
        };
        let code = self
            .prepared
            .codes
            .get(*code)
            .ok_or_else(|| internal("an operator was not prepared"))?;
        let ctx = EvalContext {
            symbols: self.ctx.symbols,
            can_split,
            max_rows,
        };
        let full = &self.full[head];
        self.backend
            .join_absorbed(input, self.join_index(*index, *delta)?, code, &ctx, full)
    }

    /// The index a join reads: over the full relation, or over its delta.
    fn join_index(&self, id: usize, delta: bool) -> ExecResult<&B::Index> {
        if !delta {
            return self.index(id);
        }
        self.delta_indexes
            .get(id)
            .and_then(|i| i.as_ref())
            .ok_or_else(|| internal("a delta index used before it was built"))
    }

    /// Drops the indexes over deltas (the deltas changed: they are built again when a
    /// pipeline next joins one).
    fn drop_delta_indexes(&mut self) {
        self.delta_indexes.iter_mut().for_each(|i| *i = None);
    }

    /// Builds the index `id` over its relation's delta, unless built this iteration.
    fn ensure_delta_index(&mut self, id: usize) -> ExecResult<()> {
        if self.delta_indexes[id].is_none() {
            let rel = self.plan.indexes[id].rel;
            let delta = self.delta[rel]
                .as_ref()
                .ok_or_else(|| internal("a delta joined outside its stratum's loop"))?;
            let t = Instant::now();
            let index = self.build_index(id, delta, "the new tuples of ")?;
            self.delta_indexes[id] = Some(index);
            self.stats.phases.index += t.elapsed();
        }
        Ok(())
    }

    fn index(&self, id: usize) -> ExecResult<&B::Index> {
        self.indexes
            .get(id)
            .and_then(|i| i.as_ref())
            .ok_or_else(|| internal("index used before it was built"))
    }

    fn ensure_index(&mut self, id: usize) -> ExecResult<()> {
        if self.indexes[id].is_none() {
            let full = &self.full[self.plan.indexes[id].rel];
            let t = Instant::now();
            let index = self.build_index(id, full, "")?;
            self.indexes[id] = Some(index);
            self.stats.phases.index += t.elapsed();
        }
        Ok(())
    }

    /// Index `id`'s layout over `rel` (its relation's full version or delta: `what`
    /// says which, in an out-of-memory error).
    fn build_index(&self, id: usize, rel: &B::Relation, what: &str) -> ExecResult<B::Index> {
        let spec = &self.plan.indexes[id];
        let index = self
            .backend
            .build_index(rel, &spec.order, spec.key_len)
            .map_err(|e| match e {
                ExecError::OutOfMemory(why) => ExecError::OutOfMemory(format!(
                    "{why}; while indexing {what}`{}` ({} tuples)",
                    self.plan.relations[spec.rel].name,
                    self.backend.relation_len(rel)
                )),
                other => other,
            })?;
        Ok(index)
    }

    /// Runs the stratum's subsumptive clauses over full versions and removes the
    /// dominated tuples they derive from `full` and from `delta` of their relation
    /// (whose indexes are then rebuilt when next used: indexes only grow).
    fn remove_dominated(
        &mut self,
        stratum: &fixlog_plan::StratumPlan,
        pipelines: &[LoweredRule],
    ) -> ExecResult<()> {
        if stratum.subsumptions.is_empty() {
            return Ok(());
        }
        let dominated =
            self.run_rules(&stratum.subsumptions, pipelines, &stratum.relations, false)?;
        for (rel, gone) in dominated {
            if self.backend.relation_len(&gone) == 0 {
                continue;
            }
            let t = Instant::now();
            self.full[rel] = self.backend.difference(&self.full[rel], &gone)?;
            if let Some(delta) = self.delta[rel].take() {
                self.delta[rel] = Some(self.backend.difference(&delta, &gone)?);
                self.drop_delta_indexes();
            }
            self.stats.phases.merge += t.elapsed();
            self.drop_indexes(rel);
        }
        Ok(())
    }

    /// The tuples an eqrel, choice-domain or lattice relation gains from `new` (see
    /// [`crate::maintain`]); `new` itself for other relations. The tuples a lattice
    /// relation loses (a key's old values) are taken out of `full` here, and the
    /// relation's indexes dropped (they are built again on next use: indexes only grow).
    fn fold_maintained(&mut self, rel: RelId, new: B::Relation) -> ExecResult<B::Relation> {
        let Some(state) = self.maintained.get_mut(rel).and_then(Option::as_mut) else {
            return Ok(new);
        };
        let arity = self.plan.relations[rel].types.len();
        let rows = self.backend.take_rows(new)?;
        let (gained, lost) = state.fold_removing(arity, &rows.merged()?, self.ctx.symbols);
        if !lost.is_empty() {
            let lost = self.backend.relation_from_rows(arity, lost)?;
            self.full[rel] = self.backend.difference(&self.full[rel], &lost)?;
            self.drop_indexes(rel);
        }
        self.backend.relation_from_rows(arity, gained)
    }

    /// `full[rel] ∪= new` (`new` is disjoint from `full`), extending built indexes over
    /// `rel`; returns what was added: `new`, or for an eqrel or choice-domain relation
    /// what it gained from `new`.
    fn add_to_full(&mut self, rel: RelId, new: B::Relation) -> ExecResult<B::Relation> {
        if self.backend.relation_len(&new) == 0 {
            return Ok(new);
        }
        let t = Instant::now();
        let new = self.fold_maintained(rel, new)?;
        self.stats.phases.merge += t.elapsed();
        if self.backend.relation_len(&new) == 0 {
            return Ok(new);
        }
        let t = Instant::now();
        let (n_new, n_full) = (
            self.backend.relation_len(&new),
            self.backend.relation_len(&self.full[rel]),
        );
        let name = &self.plan.relations[rel].name;
        let context = |e: ExecError| match e {
            ExecError::OutOfMemory(why) => ExecError::OutOfMemory(format!(
                "{why}; while adding {n_new} tuples to `{name}` ({n_full} tuples)"
            )),
            other => other,
        };
        // The full relation moves into the merge (its memory may be given back as the
        // merge passes it); an error ends the run, so nothing needs it afterwards.
        let arity = self.plan.relations[rel].types.len();
        let empty = self.backend.empty_relation(arity)?;
        let full = std::mem::replace(&mut self.full[rel], empty);
        self.full[rel] = self.backend.merge_disjoint(full, &new).map_err(context)?;
        self.stats.phases.merge += t.elapsed();
        let t = Instant::now();
        for (id, spec) in self.plan.indexes.iter().enumerate() {
            if spec.rel == rel {
                if let Some(index) = self.indexes[id].as_mut() {
                    self.backend.extend_index(index, &new).map_err(context)?;
                }
            }
        }
        self.stats.phases.index += t.elapsed();
        Ok(new)
    }

    /// `.limitsize` (Soufflé's exit condition, `fixlog_logical::LimitSize`): whether
    /// some relation of the stratum holds at least its limit. The loop asks after an
    /// iteration's rules ran and before their new tuples are added, so a stratum that
    /// reached its limit ends without them, as in Soufflé.
    fn size_limit_reached(&self, stratum: &fixlog_plan::StratumPlan) -> bool {
        stratum.relations.iter().any(|&rel| {
            let limit = self.plan.relations.get(rel).and_then(|r| r.limitsize);
            limit.is_some_and(|n| {
                self.full
                    .get(rel)
                    .is_some_and(|r| self.backend.relation_len(r) as u64 >= n)
            })
        })
    }
}
