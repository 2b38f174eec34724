//! Lowering a plan to the backend's operators, once per run: every operator described
//! as an [`OpSpec`] and prepared by [`Backend::prepare`], and each rule's pipeline as
//! the [`POp`]s the driver runs. Apart from running them, which never changes a plan.

use crate::backend::{internal, Backend, EvalContext, ExecResult, IntersectAtomSpec, OpSpec};
use fixlog_logical::{ColType, RelId};
use fixlog_plan::{Op, PExpr, Plan, RulePlan, Version};

// ---- the prepared plan --------------------------------------------------------------

/// An operator of the plan with the index of its code in [`Prepared::codes`].
pub(super) enum POp {
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
    pub(super) codes: Vec<C>,
    /// Per stratum: init pipelines, recursive pipelines, subsumption pipelines.
    pub(super) strata: LoweredStrata,
    /// Per index of the plan: whether some operator reads it over a full relation
    /// (those over a recursive stratum's relations follow `full` as it grows; an index
    /// read only over deltas is built from each iteration's delta instead).
    pub(super) over_full: Vec<bool>,
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
pub(super) struct LoweredRule {
    pub(super) ops: Vec<POp>,
    pub(super) full_first: Option<(RelId, Vec<POp>)>,
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

/// Whether the first of `ops` is a join that takes its input sorted and deduplicated
/// (the output of a join feeding another join, in a pipeline whose result is a set:
/// sorting and deduplicating it removes the repeats that projecting away join
/// variables made, and puts rows with the same leading values together, so the next
/// join's repeated outputs are adjacent and dropped early).
pub(super) fn takes_sorted(ops: &[POp]) -> bool {
    matches!(
        ops.first(),
        Some(POp::Join {
            sort_input: true,
            ..
        })
    )
}

/// The indexes `ops` read, each with whether it is over the delta.
pub(super) fn collect_indexes(ops: &[POp], out: &mut Vec<(usize, bool)>) {
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
