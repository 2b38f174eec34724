//! The semi-naive driver: runs a [`Plan`] to its fixpoint on any [`Backend`].
//!
//! Before evaluating, every operator of the plan is described as an [`OpSpec`] and
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

use crate::backend::{
    internal, Absorbed, Backend, EvalContext, ExecError, ExecResult, IntersectAtomSpec, OpSpec,
};
use crate::maintain::Maintained;
use crate::runs::{push_run, RunPolicy};
use fixlog_logical::{ColType, Program, RelId, SymbolTable, Value};
use fixlog_plan::{Op, PExpr, Plan, RulePlan, Version};
use std::time::{Duration, Instant};

pub use crate::tuples::{RowStore, Tuples};

/// Growth of the stack of a rule's new tuples within one iteration (see
/// [`crate::runs`]): merging often keeps the stack short, and the runs are small.
const NEW_RUNS: RunPolicy = RunPolicy::geometric(2);

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
/// GPU under a device memory limit. Measured on an H100 (docs/gpu-results.md, round 28), `BySize`
/// cut same generation's peak device memory by 24-40% without a limit (CA-HepTh 1.48
/// → 1.13 GiB, ego-Facebook 0.43 → 0.26) but took 1.6x the time on CA-HepTh and 5x on
/// ego-Facebook, whose joins make many pieces per iteration (each with its own
/// launches and synchronisations); under `--gpu-memory-limit`, where the delta-first
/// plan moves relations to host memory, it ran CA-HepTh 4.6-8x faster (1 GiB: 1.98 →
/// 0.43 s) and loc-Brightkite 1.7x, and ego-Facebook at 256 MiB 1.6x slower.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FullFirstUse {
    /// Where the plan's outer relation has at most as many tuples as the delta (the
    /// joins make the same rows either way, and the smaller side is probed from).
    BySize,
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
/// The first piece of such a pipeline (pieces then grow while their batches stay
/// small): one row of the outer relation can make thousands.
const DISJOINT_FIRST_PIECE_ROWS: usize = 1 << 10;

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
    /// Preparing the operators (compiling kernels on the GPU).
    pub prepare: Duration,
    /// Scans, joins, anti-joins, filters, aggregates.
    pub join: Duration,
    /// Sorting and deduplicating rule results and subtracting `full` from them.
    pub dedup: Duration,
    /// `full := full ∪ new`.
    pub merge: Duration,
    /// Building and extending indexes.
    pub index: Duration,
    /// Copying the results out of the backend.
    pub unload: Duration,
}

#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// The backend's name (`cpu`, `cuda`).
    pub backend: String,
    /// Where it ran: threads for the CPU, the device for CUDA.
    pub device: String,
    pub strata: Vec<StratumStats>,
    /// (relation, size) in declaration order.
    pub relation_sizes: Vec<(String, usize)>,
    pub phases: PhaseTimes,
    /// Tuples produced by rules before deduplication (how much work the joins did).
    pub derived: usize,
    /// Pieces run again in halves after running out of memory.
    pub memory_retries: usize,
    /// Pieces run again in smaller pieces because an operator's output would have
    /// exceeded the backend's batch budget ([`ExecError::BatchTooLarge`]).
    pub pieces_split: usize,
    /// The most memory the backend held at once, in bytes, where it measures it
    /// (device memory: in use and cached by its pool).
    pub peak_memory: Option<usize>,
    /// The most of it in use at once.
    pub peak_memory_in_use: Option<usize>,
    /// Which operator reached that peak, in words (the GPU backend says).
    pub peak_memory_where: Option<String>,
    /// The most bytes of relations the backend kept in host memory because its own
    /// memory was short (rows of relations larger than a GPU's memory).
    pub peak_spilled: Option<usize>,
    /// The CPU backend's memory budget and what it spilled to disk.
    pub host_memory: Option<HostMemoryStats>,
    /// Where the backend's time went, by operator, most first (the GPU backend says:
    /// the host's wall time of each call, waiting for the device included).
    pub operators: Vec<OperatorTime>,
    pub total: Duration,
}

/// The calls of one kind of backend operator in a run (see [`RunStats::operators`]).
#[derive(Clone, Debug, Default)]
pub struct OperatorTime {
    /// The operator (`join`, `sort_unique`, `merge`, ...).
    pub name: &'static str,
    pub calls: usize,
    /// Input rows over all calls.
    pub rows: usize,
    pub time: Duration,
}

/// The CPU backend's memory: the bytes its budget counted (relations, indexes and
/// batches in memory) and what it wrote to files.
#[derive(Clone, Debug, Default)]
pub struct HostMemoryStats {
    /// `--memory-limit`, if one was given.
    pub limit: Option<usize>,
    /// The most bytes the budget counted at once.
    pub peak_in_use: usize,
    /// Spilling runs to disk, where it was on.
    pub spill: Option<DiskSpillStats>,
}

/// Runs of relations and indexes written to files (the CPU backend's spilling).
#[derive(Clone, Debug, Default)]
pub struct DiskSpillStats {
    /// The temporary directory the run's spill directory was (or would be) made in.
    pub temp_dir: String,
    /// Spilling starts when the budget's bytes in use pass this.
    pub high_mark: usize,
    /// The most bytes in files at once.
    pub peak_bytes: usize,
    /// Bytes written to files in all.
    pub written_bytes: usize,
    /// Files written (spilled runs and merge outputs).
    pub files: usize,
    /// Why spilling stopped (a full disk, say), if it did.
    pub error: Option<String>,
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

// ---- the prepared plan --------------------------------------------------------------

/// An operator of the plan with the index of its code in [`Prepared::codes`].
enum POp {
    Unit,
    Scan {
        rel: RelId,
        version: Version,
        code: usize,
        /// Sort and deduplicate the output before the rest of the pipeline runs over
        /// it in pieces: its first column is carried into the next join's output,
        /// which the join after that gathers (see [`carried_first`]).
        sort_output: bool,
    },
    Join {
        index: usize,
        code: usize,
        /// Sort and deduplicate the input first (a join's output feeding this join, in
        /// a pipeline whose result is a set).
        sort_input: bool,
        /// Through the index over the delta (a [`fixlog_plan::FullFirst`] plan), built
        /// afresh each iteration.
        delta: bool,
    },
    Intersect {
        indexes: Vec<usize>,
        code: usize,
    },
    AntiJoin {
        index: usize,
        code: usize,
    },
    Filter {
        code: usize,
    },
    /// `Op::Range`, run by `Backend::range` (no code).
    Range {
        ty: ColType,
        step: bool,
    },
    Aggregate {
        sub: Vec<POp>,
        /// Correlated: input ++ [aggregate] filtered and projected. Uncorrelated: the
        /// aggregate of a unit input, projected to the value alone.
        code: usize,
        /// Uncorrelated aggregates: the join of every input tuple with the value.
        join_value: Option<usize>,
    },
}

/// The plan's operators, each lowered once by the backend.
pub struct Prepared<C> {
    codes: Vec<C>,
    /// Per stratum: init pipelines, recursive pipelines, subsumption pipelines.
    strata: LoweredStrata,
    /// Per index of the plan: whether some operator reads it over a full relation
    /// (those over a recursive stratum's relations follow `full` as it grows; an index
    /// read only over deltas is built from each iteration's delta instead).
    over_full: Vec<bool>,
}

struct Lowering<'p> {
    plan: &'p Plan,
    specs: Vec<OpSpec>,
}

impl Lowering<'_> {
    fn add(&mut self, spec: OpSpec) -> usize {
        self.specs.push(spec);
        self.specs.len() - 1
    }

    /// `input`: arity of the batch the pipeline receives (`None` for a top-level
    /// pipeline, which starts from nothing). `set_result`: the pipeline's result is
    /// only used as a set.
    fn pipeline(
        &mut self,
        ops: &[Op],
        input: Option<usize>,
        set_result: bool,
    ) -> ExecResult<Vec<POp>> {
        let mut arity = input;
        let mut out = Vec::with_capacity(ops.len());
        for (n, op) in ops.iter().enumerate() {
            let need_input = || arity.ok_or_else(|| internal("an operator has no input"));
            let (pop, next_arity) = match op {
                Op::Unit => (POp::Unit, 0),
                Op::Scan {
                    rel,
                    version,
                    filters,
                    project,
                } => {
                    let spec = OpSpec::Scan {
                        arity: self.rel_arity(*rel)?,
                        filters: filters.clone(),
                        project: project.clone(),
                    };
                    let code = self.add(spec);
                    (
                        POp::Scan {
                            rel: *rel,
                            version: *version,
                            code,
                            sort_output: false,
                        },
                        project.len(),
                    )
                }
                Op::Join {
                    index,
                    version,
                    key,
                    filters,
                    project,
                } => {
                    let ix = self.index(*index)?;
                    let spec = OpSpec::Join {
                        input_arity: need_input()?,
                        order: ix.order.clone(),
                        key_len: ix.key_len,
                        key: key.clone(),
                        filters: filters.clone(),
                        project: project.clone(),
                        distinct: set_result,
                    };
                    let code = self.add(spec);
                    let sort_input = set_result && n > 0 && matches!(ops[n - 1], Op::Join { .. });
                    (
                        POp::Join {
                            index: *index,
                            code,
                            sort_input,
                            delta: *version == Version::Delta,
                        },
                        project.len(),
                    )
                }
                Op::Intersect {
                    atoms,
                    filters,
                    project,
                } => {
                    if atoms.len() < 2 {
                        return Err(internal("an intersection of fewer than two atoms"));
                    }
                    let mut specs = Vec::with_capacity(atoms.len());
                    for atom in atoms {
                        let ix = self.index(atom.index)?;
                        if ix.key_len >= ix.order.len() || atom.key.len() != ix.key_len {
                            return Err(internal(
                                "an intersected index has no column after its key",
                            ));
                        }
                        specs.push(IntersectAtomSpec {
                            order: ix.order.clone(),
                            key_len: ix.key_len,
                            key: atom.key.clone(),
                        });
                    }
                    let spec = OpSpec::Intersect {
                        input_arity: need_input()?,
                        atoms: specs,
                        filters: filters.clone(),
                        project: project.clone(),
                        distinct: set_result,
                    };
                    (
                        POp::Intersect {
                            indexes: atoms.iter().map(|a| a.index).collect(),
                            code: self.add(spec),
                        },
                        project.len(),
                    )
                }
                Op::AntiJoin { index, key } => {
                    let ix = self.index(*index)?;
                    let a = need_input()?;
                    let spec = OpSpec::AntiJoin {
                        input_arity: a,
                        order: ix.order.clone(),
                        key_len: ix.key_len,
                        key: key.clone(),
                    };
                    let code = self.add(spec);
                    (
                        POp::AntiJoin {
                            index: *index,
                            code,
                        },
                        a,
                    )
                }
                Op::Range { ty, step } => (
                    POp::Range {
                        ty: *ty,
                        step: *step,
                    },
                    need_input()? + 1,
                ),
                Op::Filter { filters, project } => {
                    let spec = OpSpec::Filter {
                        arity: need_input()?,
                        filters: filters.clone(),
                        project: project.clone(),
                    };
                    (
                        POp::Filter {
                            code: self.add(spec),
                        },
                        project.len(),
                    )
                }
                Op::Aggregate {
                    func,
                    ty,
                    correlated,
                    sub,
                    filters,
                    project,
                } => {
                    let a = need_input()?;
                    if *correlated {
                        let sub = self.pipeline(sub, Some(a + 1), false)?;
                        let code = self.add(OpSpec::Aggregate {
                            input_arity: a,
                            func: *func,
                            ty: *ty,
                            filters: filters.clone(),
                            project: project.clone(),
                        });
                        (
                            POp::Aggregate {
                                sub,
                                code,
                                join_value: None,
                            },
                            project.len(),
                        )
                    } else {
                        // Computed once over a unit input, then joined to every input
                        // tuple through an index with an empty key (a cross product
                        // with at most one tuple).
                        let sub = self.pipeline(sub, Some(1), false)?;
                        let code = self.add(OpSpec::Aggregate {
                            input_arity: 0,
                            func: *func,
                            ty: *ty,
                            filters: Vec::new(),
                            project: vec![PExpr::Col(0)],
                        });
                        let join = self.add(OpSpec::Join {
                            input_arity: a,
                            order: vec![0],
                            key_len: 0,
                            key: Vec::new(),
                            filters: filters.clone(),
                            project: project.clone(),
                            distinct: false,
                        });
                        (
                            POp::Aggregate {
                                sub,
                                code,
                                join_value: Some(join),
                            },
                            project.len(),
                        )
                    }
                }
            };
            out.push(pop);
            arity = Some(next_arity);
        }
        Ok(out)
    }

    fn rel_arity(&self, rel: RelId) -> ExecResult<usize> {
        self.plan
            .relations
            .get(rel)
            .map(|r| r.types.len())
            .ok_or_else(|| internal("an operator reads an unknown relation"))
    }

    fn index(&self, id: usize) -> ExecResult<&fixlog_plan::IndexSpec> {
        self.plan
            .indexes
            .get(id)
            .ok_or_else(|| internal("an operator reads an unknown index"))
    }
}

/// Describes every operator of `plan` and lowers them all with one call of
/// [`Backend::prepare`].
pub fn prepare<B: Backend>(
    backend: &B,
    plan: &Plan,
    ctx: &EvalContext,
) -> ExecResult<Prepared<B::Code>> {
    let (specs, strata) = op_specs(plan)?;
    let codes = backend.prepare(&specs, ctx)?;
    if codes.len() != specs.len() {
        return Err(internal(
            "the backend prepared a different number of operators",
        ));
    }
    let mut over_full = vec![false; plan.indexes.len()];
    let mut used = Vec::new();
    for (init, recursive, subsumptions) in &strata {
        for rule in init.iter().chain(recursive).chain(subsumptions) {
            collect_indexes(&rule.ops, &mut used);
            if let Some((_, ops)) = &rule.full_first {
                collect_indexes(ops, &mut used);
            }
        }
    }
    for (id, delta) in used {
        if !delta {
            if let Some(f) = over_full.get_mut(id) {
                *f = true;
            }
        }
    }
    Ok(Prepared {
        codes,
        strata,
        over_full,
    })
}

/// A rule (variant) lowered: its pipeline, and for a delta variant with a
/// [`fixlog_plan::FullFirst`] plan, that plan's outer relation and pipeline.
struct LoweredRule {
    ops: Vec<POp>,
    full_first: Option<(RelId, Vec<POp>)>,
}

type LoweredStrata = Vec<(Vec<LoweredRule>, Vec<LoweredRule>, Vec<LoweredRule>)>;

fn op_specs(plan: &Plan) -> ExecResult<(Vec<OpSpec>, LoweredStrata)> {
    let mut lowering = Lowering {
        plan,
        specs: Vec::new(),
    };
    let mut strata = Vec::with_capacity(plan.strata.len());
    for stratum in &plan.strata {
        let mut lower = |rules: &[RulePlan]| -> ExecResult<Vec<LoweredRule>> {
            rules
                .iter()
                .map(|r| {
                    let ops = match carried_first(&r.ops) {
                        Some(ops) => {
                            let mut lowered = lowering.pipeline(&ops, None, true)?;
                            if let Some(POp::Scan { sort_output, .. }) = lowered.first_mut() {
                                *sort_output = true;
                            }
                            lowered
                        }
                        None => lowering.pipeline(&r.ops, None, true)?,
                    };
                    let full_first = match &r.full_first {
                        Some(ff) => {
                            // Scanned sorted on the head's first variable (its first
                            // column), so that pieces derive disjoint tuples.
                            let mut lowered = lowering.pipeline(&ff.ops, None, true)?;
                            match lowered.first_mut() {
                                Some(POp::Scan { sort_output, .. }) => *sort_output = true,
                                _ => {
                                    return Err(internal("a full-first plan starts without a scan"))
                                }
                            }
                            Some((ff.outer, lowered))
                        }
                        None => None,
                    };
                    Ok(LoweredRule { ops, full_first })
                })
                .collect()
        };
        let init = lower(&stratum.init)?;
        let recursive = lower(&stratum.recursive_rules)?;
        let subsumptions = lower(&stratum.subsumptions)?;
        strata.push((init, recursive, subsumptions));
    }
    Ok((lowering.specs, strata))
}

/// A rule's pipeline that scans, joins, and joins the deduplicated output of that
/// join (`scan → join → join`, the shape of same-generation), rewritten so the scan's
/// first column is one the first join carries into its output, or `None` where the
/// pipeline has another shape or the first join carries no scanned column.
///
/// Why: the driver cuts the scan's output into pieces and gathers the first join's
/// outputs over all pieces into one deduplicated set before the second join runs
/// (`Driver::run_split`), flushing that set early when it outgrows the batch budget.
/// With the scan's output sorted on a column that the first join's output carries,
/// pieces hold disjoint ranges of that column, and so do their join outputs: a
/// flushed set shares no tuple with what later pieces make (only a value cut between
/// two pieces can repeat), so bounding the gathered set by the budget repeats no
/// work of the second join. Without it, SG's gathered set (its `(x, b)` pairs) had to
/// stay whole, and a small budget multiplied the second join's work.
fn carried_first(ops: &[Op]) -> Option<Vec<Op>> {
    let [Op::Scan {
        rel,
        version,
        filters: scan_filters,
        project: scanned,
    }, Op::Join {
        index,
        version: join_version,
        key,
        filters,
        project,
    }, Op::Join { .. }, ..] = ops
    else {
        return None;
    };
    let arity = scanned.len();
    // The scan's first column where the join carries it: then the order is the
    // scan's own, which for a sorted relation scanned as it is costs no sort (the
    // planner prefers such a join: `fixlog_plan`'s `best_atom_carrying`).
    let carried = |c: usize| c < arity && project.iter().any(|e| e.as_col() == Some(c));
    let c = if carried(0) {
        0
    } else {
        project
            .iter()
            .find_map(|e| e.as_col().filter(|&c| c < arity))?
    };
    // The scan's column c first, the others after it in their order.
    let moved = move |k: usize| match k {
        k if k == c => 0,
        k if k < c => k + 1,
        k => k,
    };
    let input = |k: usize| if k < arity { moved(k) } else { k };
    let mut reordered = vec![scanned[c].clone()];
    reordered.extend(
        scanned
            .iter()
            .enumerate()
            .filter(|&(k, _)| k != c)
            .map(|(_, e)| e.clone()),
    );
    let mut out = Vec::with_capacity(ops.len());
    out.push(Op::Scan {
        rel: *rel,
        version: *version,
        filters: scan_filters.clone(),
        project: reordered,
    });
    out.push(Op::Join {
        index: *index,
        version: *join_version,
        key: key.iter().map(|e| e.map_columns(&input)).collect(),
        filters: filters.iter().map(|f| f.map_columns(&input)).collect(),
        project: project.iter().map(|e| e.map_columns(&input)).collect(),
    });
    out.extend(ops[2..].iter().cloned());
    Some(out)
}

/// Every operator of `plan` as the backend is asked to prepare it, in plan order (for
/// `explain`, which shows where each runs).
pub fn plan_op_specs(plan: &Plan) -> ExecResult<Vec<OpSpec>> {
    Ok(op_specs(plan)?.0)
}

// ---- running ------------------------------------------------------------------------

/// Runs `f` once more when it runs out of memory (`f` must not consume its inputs): a
/// backend makes room after an operator was refused memory (the CUDA backend moves
/// relations to host memory, the CPU backend spills). Also says whether it ran again.
fn once_more<T>(mut f: impl FnMut() -> ExecResult<T>) -> (ExecResult<T>, bool) {
    match f() {
        Err(ExecError::OutOfMemory(_)) => (f(), true),
        done => (done, false),
    }
}

/// Where in a pipeline [`Driver::run_split`] runs (see there).
#[derive(Clone, Copy, Debug)]
enum Level {
    /// The operators after the pipeline's first: pieces start at `first_piece_rows`
    /// and adapt to the largest batch made, against `max_batch_rows`. `sort_on_cut`:
    /// sort and deduplicate the input before it is first cut into pieces (a scan
    /// whose first column the next join carries: see [`carried_first`]); an input
    /// that runs whole needs no order, and one larger than the backend can sort
    /// ([`PieceBudget::max_sort_rows`]) is cut unsorted: the order only saves work
    /// (SG of p2p-Gnutella31 on the CPU under a 12 GiB limit ran out of memory sorting
    /// an iteration's delta whole).
    Top {
        first_piece_rows: usize,
        max_batch_rows: usize,
        sort_on_cut: bool,
        /// The pieces derive disjoint tuples (a full-first plan's, sorted on the head's
        /// first column): the next join's gathered input is flushed at
        /// `max_batch_rows`, and operators are asked to keep their batches under it.
        disjoint: bool,
    },
    /// Further down: a batch runs whole unless its operator asks for smaller pieces or
    /// runs out of memory. (The bound of a disjoint top level held below it too in
    /// round 29: SG CA-HepTh by size without a limit peaked at 0.96 GiB, not 1.13, but
    /// under 1 GiB it took 0.76-0.80 s, not 0.44-0.56: most likely its last joins,
    /// cut smaller, each read the relation moved to host memory; docs/gpu-results.md.)
    Below,
}

/// Whether the first of `ops` is a join that takes its input sorted and deduplicated
/// (the output of a join feeding another join, in a pipeline whose result is a set:
/// sorting and deduplicating it removes the repeats that projecting away join
/// variables made, and puts rows with the same leading values together, so the next
/// join's repeated outputs are adjacent and dropped early).
fn takes_sorted(ops: &[POp]) -> bool {
    matches!(
        ops.first(),
        Some(POp::Join {
            sort_input: true,
            ..
        })
    )
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
                FullFirstUse::BySize if b.relation_len(&self.full[*outer]) <= d => Some(ops),
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
            (
                DISJOINT_FIRST_PIECE_ROWS.min(budget.first_piece_rows),
                share
                    .max(DISJOINT_BATCH_MIN_ROWS)
                    .min(budget.max_batch_rows),
            )
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

    /// Runs `ops` over `input` piece by piece and absorbs the results into `acc`;
    /// returns the largest batch made. The first operator runs on pieces of `input`;
    /// each piece's output goes through the rest in the same way, one level down.
    /// `input` comes sorted and deduplicated where the first operator is a join marked
    /// `sort_input` (the caller's doing: see [`takes_sorted`]).
    ///
    /// Where the next operator is such a join, the pieces' outputs are not run on one
    /// by one: each is sorted, deduplicated and added to one set (a stack of sorted
    /// runs), and the rest of the pipeline runs over that set when all pieces are done
    /// (or when it grows past the backend's batch budget). So cutting this level's
    /// input into pieces does not cut the next join's input: a tuple that several
    /// pieces make is joined once, as without pieces (SG's first join, whose pieces
    /// each deduplicated alone made the second join derive up to 3.7 times the tuples:
    /// docs/gpu-results.md, round 12).
    ///
    /// At the top level the pieces start at the backend's first piece size and adapt
    /// to the largest batch the rest of the pipeline made (so no batch of a piece
    /// exceeds the budget, for backends that cannot tell in advance). At every level a
    /// piece is run again smaller when its operator asks for it
    /// ([`ExecError::BatchTooLarge`]: the output would exceed the backend's budget) or
    /// runs out of memory. Splitting at the operator that asks, not at the pipeline's
    /// input, keeps the batches before it whole: a join's sorted and deduplicated input
    /// stays deduplicated as a whole, so the join derives no more than unsplit.
    ///
    /// A piece whose tuples were absorbed before a deeper level ran out of memory may
    /// be absorbed twice; `acc` is a union, so that only costs time.
    fn run_split(
        &mut self,
        head: RelId,
        ops: &[POp],
        input: B::Batch,
        level: Level,
        acc: &mut Vec<B::Relation>,
        only_new: bool,
    ) -> ExecResult<usize> {
        let b = self.backend;
        let (op, rest) = ops
            .split_first()
            .ok_or_else(|| internal("empty pipeline"))?;
        // The next join's input, gathered over all pieces (see above), and the most
        // rows it may gather before the rest of the pipeline runs over it.
        let gathers = takes_sorted(rest);
        let mut gathered: Vec<B::Relation> = Vec::new();
        // A top level whose pieces derive disjoint tuples bounds its operators' batches
        // and the gathered set by its own size (operators below the top by the
        // backend's budget).
        let max_rows = match level {
            Level::Top {
                disjoint: true,
                max_batch_rows,
                ..
            } => Some(max_batch_rows),
            _ => None,
        };
        let gather_limit = match max_rows {
            _ if !gathers => usize::MAX,
            Some(rows) => rows,
            None => b.piece_budget().max_batch_rows.max(1),
        };
        let (mut piece_rows, mut sort_on_cut) = match level {
            Level::Top {
                first_piece_rows,
                sort_on_cut,
                ..
            } => (
                first_piece_rows,
                sort_on_cut && b.batch_len(&input) <= b.piece_budget().max_sort_rows,
            ),
            Level::Below => (usize::MAX, false),
        };
        let mut peak = 0;
        // Whether the last piece was a single tuple that ran out of memory (it runs
        // once more before that is an error).
        let mut single_retried = false;
        // Pieces still to run, the next on top; the bottom one is the unsplit rest.
        let mut pending = vec![input];
        // A prefix an operator said fits (see below): it runs whole, whatever
        // `piece_rows` says.
        let mut fitted: Option<B::Batch> = None;
        while let Some((mut top, whole)) = match fitted.take() {
            Some(prefix) => Some((prefix, true)),
            None => pending.pop().map(|p| (p, false)),
        } {
            let mut len = b.batch_len(&top);
            if len == 0 {
                continue;
            }
            if len > piece_rows && sort_on_cut {
                // The first cut, so `top` is the whole input (never a fitted prefix:
                // those come after it): order it first.
                sort_on_cut = false;
                top = b
                    .sort_unique(top)
                    .and_then(|sorted| b.relation_batch(&sorted))
                    .map_err(|e| self.deriving_at(level, head, e))?;
                len = b.batch_len(&top);
            }
            let piece = if len > piece_rows && !whole {
                let (piece, rest_rows) = b
                    .split_batch(top, piece_rows)
                    .map_err(|e| self.deriving_at(level, head, e))?;
                pending.push(rest_rows);
                piece
            } else {
                top
            };
            let n = b.batch_len(&piece);
            let t = Instant::now();
            let outcome = if rest.is_empty() && only_new {
                self.run_absorbed_op(op, &piece, n > 1, max_rows, head)
            } else {
                self.run_op(op, Some(&piece), n > 1, max_rows)
                    .map(Absorbed::Rows)
            };
            let outcome = outcome.and_then(|out| {
                self.stats.phases.join += t.elapsed();
                let out = match out {
                    Absorbed::Rows(out) => out,
                    Absorbed::New { tuples, made } => {
                        // (Deduplicated and subtracted as it was made: counted as
                        // joining.)
                        self.stats.derived += made;
                        let kept = b.relation_len(&tuples);
                        if kept > 0 {
                            self.push_whole(acc, tuples)?;
                        }
                        return Ok(kept);
                    }
                };
                let made = b.batch_len(&out);
                let below = if rest.is_empty() {
                    // (`absorb` counts its own time, as deduplication.)
                    self.absorb(head, out, acc, only_new)?;
                    0
                } else if gathers {
                    self.gather(out, &mut gathered)?;
                    0
                } else {
                    self.run_split(head, rest, out, Level::Below, acc, only_new)?
                };
                Ok(made.max(below))
            });
            match outcome {
                Ok(made) => {
                    single_retried = false;
                    peak = peak.max(made);
                    if let Level::Top { max_batch_rows, .. } = level {
                        if made > max_batch_rows {
                            piece_rows = (piece_rows as u128 * max_batch_rows as u128
                                / made as u128)
                                .max(1) as usize;
                        } else if made < max_batch_rows / 4 {
                            piece_rows = piece_rows.saturating_mul(2);
                        }
                    }
                }
                Err(ExecError::BatchTooLarge { rows, limit, fits }) if n > 1 => {
                    // The operator counted its output before making it: run the piece
                    // again in pieces whose output should fit (a little under, for
                    // uneven fan-out), and go on with that size. Where the operator
                    // said how many leading rows fit, those run next as one piece
                    // (not where the input is still to be sorted before its first
                    // cut: the rows would move).
                    self.stats.pieces_split += 1;
                    let estimate =
                        (n as u128 * limit as u128 / rows.max(1) as u128 * 7 / 8) as usize;
                    match fits.filter(|&k| k > 0 && k < n && !sort_on_cut) {
                        Some(k) => {
                            let (prefix, rest_rows) = b
                                .split_batch(piece, k)
                                .map_err(|e| self.deriving_at(level, head, e))?;
                            pending.push(rest_rows);
                            fitted = Some(prefix);
                            piece_rows = (k * 7 / 8).max(1);
                        }
                        None => {
                            piece_rows = estimate.clamp(1, n - 1);
                            pending.push(piece);
                        }
                    }
                }
                Err(ExecError::OutOfMemory(_)) if n > 1 => {
                    // Run it again in two halves (cut at the top of the loop), and go
                    // on smaller.
                    self.stats.memory_retries += 1;
                    pending.push(piece);
                    piece_rows = (n / 2).max(1);
                }
                Err(ExecError::OutOfMemory(_))
                    if matches!(level, Level::Top { .. }) && !single_retried =>
                {
                    // One tuple: once more, as the backend makes room after a refusal
                    // (moving relations to host memory, spilling).
                    single_retried = true;
                    self.stats.memory_retries += 1;
                    pending.push(piece);
                }
                Err(ExecError::OutOfMemory(why)) if matches!(level, Level::Top { .. }) => {
                    return Err(ExecError::OutOfMemory(format!(
                        "{why}; while deriving `{}` from a single input tuple",
                        self.plan.relations[head].name
                    )));
                }
                // (Below the top, a single tuple that runs out of memory is the upper
                // level's to split.)
                Err(e) => return Err(e),
            }
            let gathered_rows: usize = gathered.iter().map(|r| b.relation_len(r)).sum();
            if gathered_rows > gather_limit {
                let below = self
                    .run_gathered(head, rest, &mut gathered, acc, only_new)
                    .map_err(|e| self.deriving_at(level, head, e))?;
                peak = peak.max(below);
            }
        }
        if !gathered.is_empty() {
            let below = self
                .run_gathered(head, rest, &mut gathered, acc, only_new)
                .map_err(|e| self.deriving_at(level, head, e))?;
            peak = peak.max(below);
        }
        Ok(peak)
    }

    /// Runs `ops` over the set gathered so far (emptying it); the largest batch made.
    /// An error here is not the gathering level's to split: the set is whole and
    /// deduplicated, and the level below splits it as its operators ask. Out of
    /// memory, it runs once more over the same set: a backend makes room after an
    /// operator was refused memory (the CUDA backend moves relations to host memory,
    /// the CPU backend spills), and tuples absorbed twice only cost time.
    fn run_gathered(
        &mut self,
        head: RelId,
        ops: &[POp],
        gathered: &mut Vec<B::Relation>,
        acc: &mut Vec<B::Relation>,
        only_new: bool,
    ) -> ExecResult<usize> {
        // Merged into one run first, in place of the stack, so that the stack's runs
        // are not held beside their union while the rest of the pipeline runs.
        let (merged, retried) = once_more(|| self.merged(gathered.clone()));
        self.stats.memory_retries += retried as usize;
        let set = merged?;
        gathered.clear();
        let (result, retried) = once_more(|| {
            let next = self.backend.relation_batch(&set)?;
            self.run_split(head, ops, next, Level::Below, acc, only_new)
        });
        self.stats.memory_retries += retried as usize;
        result
    }

    /// Sorts and deduplicates a join's output and adds it to `gathered` (a stack of
    /// sorted runs, merged as they grow). On failure `gathered` is as it was: the
    /// caller runs the piece again in halves after running out of memory, and adding
    /// a piece twice only costs time.
    fn gather(&mut self, out: B::Batch, gathered: &mut Vec<B::Relation>) -> ExecResult<()> {
        let b = self.backend;
        let t = Instant::now();
        let run = b.sort_unique(out)?;
        self.push_whole(gathered, run)?;
        self.stats.phases.join += t.elapsed();
        Ok(())
    }

    /// Pushes `run` onto `runs` (a stack of sorted runs, merged as they grow), or
    /// leaves `runs` as it was on failure: a merge that fails has consumed the runs it
    /// merged, and the caller runs the piece again (in halves) after running out of
    /// memory, so the tuples of earlier pieces must not be lost (relations clone
    /// cheaply: shared storage).
    fn push_whole(&self, runs: &mut Vec<B::Relation>, run: B::Relation) -> ExecResult<()> {
        let b = self.backend;
        let before = runs.clone();
        let pushed = push_run(
            runs,
            run,
            NEW_RUNS,
            |r| b.relation_len(r),
            |below, top| b.merge(&below, &top),
        );
        if pushed.is_err() {
            *runs = before;
        }
        pushed
    }

    /// The union of gathered runs, as one sorted, deduplicated relation.
    fn merged(&mut self, mut runs: Vec<B::Relation>) -> ExecResult<B::Relation> {
        let b = self.backend;
        let t = Instant::now();
        let mut all = runs
            .pop()
            .ok_or_else(|| internal("nothing gathered to merge"))?;
        while let Some(below) = runs.pop() {
            all = b.merge(&below, &all)?;
        }
        self.stats.phases.join += t.elapsed();
        Ok(all)
    }

    /// [`Self::deriving`] at the top of a pipeline; below it, the error goes up as it
    /// is (the top says where, once).
    fn deriving_at(&self, level: Level, rel: RelId, e: ExecError) -> ExecError {
        match level {
            Level::Top { .. } => self.deriving(rel, e),
            Level::Below => e,
        }
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

/// The indexes `ops` read, each with whether it is over the delta.
fn collect_indexes(ops: &[POp], out: &mut Vec<(usize, bool)>) {
    for op in ops {
        match op {
            POp::Join { index, delta, .. } => out.push((*index, *delta)),
            POp::AntiJoin { index, .. } => out.push((*index, false)),
            POp::Intersect { indexes, .. } => out.extend(indexes.iter().map(|&i| (i, false))),
            POp::Aggregate { sub, .. } => collect_indexes(sub, out),
            _ => {}
        }
    }
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
