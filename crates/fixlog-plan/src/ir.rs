//! The physical plan: what each backend executes.
//!
//! A [`Plan`] is a list of [`StratumPlan`]s in evaluation order. Each rule (or, in a
//! recursive stratum, each *delta variant* of a rule: one per body atom over a relation
//! of the stratum) becomes a [`RulePlan`]: a straight pipeline of [`Op`]s over batches of
//! tuples. The first op produces a batch (from a relation version or from nothing), each
//! later op consumes the previous op's batch, and the last op's projection is the head
//! tuple.
//!
//! Column numbering: every op that combines its input with something forms a *joined
//! tuple*, evaluates its filters over it and then emits its projection:
//!
//! | op          | joined tuple                                         |
//! |-------------|------------------------------------------------------|
//! | `Scan`      | the relation's columns (declaration order)           |
//! | `Join`      | input columns, then the inner relation's columns     |
//! | `Intersect` | input columns, then the one new variable's value     |
//! | `Filter`    | input columns                                        |
//! | `Aggregate` | input columns, then the aggregate's value            |
//! | `AntiJoin`  | (no projection: passes input tuples through)         |
//!
//! [`PExpr::Col`] refers to a column of the joined tuple. Projections are expressions, so
//! arithmetic in heads and `x = a + b` bindings are computed while writing.

use fixlog_logical::{AggFunc, BinOp, CmpOp, ColType, Functor, Predicate, RelId, UnaryOp, Value};

/// Index into [`Plan::indexes`].
pub type IndexId = usize;

/// Which stored version of a relation an operator reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Version {
    /// Everything derived so far.
    Full,
    /// What the previous iteration derived that was new (recursive strata only).
    Delta,
}

/// An expression over the columns of a joined tuple.
#[derive(Clone, Debug, PartialEq)]
pub enum PExpr {
    Col(usize),
    Const(Value),
    Unary {
        op: UnaryOp,
        ty: ColType,
        arg: Box<PExpr>,
    },
    Binary {
        op: BinOp,
        ty: ColType,
        lhs: Box<PExpr>,
        rhs: Box<PExpr>,
    },
    Functor {
        func: Functor,
        args: Vec<PExpr>,
    },
}

impl PExpr {
    /// The column, if this is a plain column reference.
    pub fn as_col(&self) -> Option<usize> {
        match self {
            PExpr::Col(c) => Some(*c),
            _ => None,
        }
    }

    /// This expression reading column `f(c)` wherever it reads column `c`.
    pub fn map_columns(&self, f: &dyn Fn(usize) -> usize) -> PExpr {
        match self {
            PExpr::Col(c) => PExpr::Col(f(*c)),
            PExpr::Const(v) => PExpr::Const(*v),
            PExpr::Unary { op, ty, arg } => PExpr::Unary {
                op: *op,
                ty: *ty,
                arg: Box::new(arg.map_columns(f)),
            },
            PExpr::Binary { op, ty, lhs, rhs } => PExpr::Binary {
                op: *op,
                ty: *ty,
                lhs: Box::new(lhs.map_columns(f)),
                rhs: Box::new(rhs.map_columns(f)),
            },
            PExpr::Functor { func, args } => PExpr::Functor {
                func: *func,
                args: args.iter().map(|a| a.map_columns(f)).collect(),
            },
        }
    }
}

/// A condition a joined tuple must satisfy.
#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    Compare {
        op: CmpOp,
        ty: ColType,
        lhs: PExpr,
        rhs: PExpr,
    },
    Predicate {
        pred: Predicate,
        args: Vec<PExpr>,
        negated: bool,
    },
}

impl Cond {
    /// This condition reading column `f(c)` wherever it reads column `c`.
    pub fn map_columns(&self, f: &dyn Fn(usize) -> usize) -> Cond {
        match self {
            Cond::Compare { op, ty, lhs, rhs } => Cond::Compare {
                op: *op,
                ty: *ty,
                lhs: lhs.map_columns(f),
                rhs: rhs.map_columns(f),
            },
            Cond::Predicate {
                pred,
                args,
                negated,
            } => Cond::Predicate {
                pred: *pred,
                args: args.iter().map(|a| a.map_columns(f)).collect(),
                negated: *negated,
            },
        }
    }
}

/// A relation stored sorted in `order` (a permutation of its columns) with a hash index
/// over the first `key_len` columns of that order: the HISA of the design.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IndexSpec {
    pub rel: RelId,
    pub order: Vec<usize>,
    pub key_len: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// One tuple of arity 0 (bodies without positive atoms, e.g. `r(1) :- 2 > 1.`).
    Unit,
    /// Every tuple of a relation version that passes `filters`, projected.
    Scan {
        rel: RelId,
        version: Version,
        filters: Vec<Cond>,
        project: Vec<PExpr>,
    },
    /// For each input tuple, every tuple of `index`'s relation version whose key columns
    /// (`order[..key_len]`) equal `key` (expressions over the input tuple). A delta is
    /// joined only in a [`FullFirst`] plan (its index is built afresh each iteration).
    Join {
        index: IndexId,
        version: Version,
        key: Vec<PExpr>,
        filters: Vec<Cond>,
        project: Vec<PExpr>,
    },
    /// Worst-case-optimal join step (generic join / leapfrog triejoin): extends each input
    /// tuple with *one* new value, every value `v` such that each atom of `atoms` has a
    /// tuple whose key columns equal the atom's key and whose next column (in the
    /// index's order, `order[key_len]`) is `v`; then filters and projects `input ++ [v]`.
    ///
    /// Each atom is read through an index whose order puts the columns bound before this
    /// step first (the key) and the new variable's column next, so within one key's
    /// range the candidate values are sorted, and the values common to all atoms are
    /// found by leapfrogging over the ranges instead of materializing a pairwise join.
    /// Every atom reads the full relation. `atoms` has at least two entries. Each value is produced once per input tuple.
    Intersect {
        atoms: Vec<IntersectAtom>,
        filters: Vec<Cond>,
        project: Vec<PExpr>,
    },
    /// Keeps the input tuples for which *no* tuple of the index's full relation has key
    /// columns equal to `key`. (Negation; wildcards are simply not in the key.)
    AntiJoin { index: IndexId, key: Vec<PExpr> },
    /// `range(from, to[, step])` in `ty`: for each input tuple, one tuple `input ++ [v]`
    /// per value `v` of the range whose arguments are the input's last two (`step ==
    /// false`) or three columns (see `fixlog_logical::value::range_values`). Always
    /// followed by a `Filter` (the planner computes the arguments in a `Filter` before).
    Range { ty: ColType, step: bool },
    /// Filters and projects the input.
    Filter {
        filters: Vec<Cond>,
        project: Vec<PExpr>,
    },
    /// For each input tuple, aggregates the results of `sub` run on that tuple alone.
    ///
    /// `sub` is a pipeline whose input is the input batch extended with one column (at
    /// index `input arity`) holding the tuple's row number; its last op must project
    /// `[row number]` for `count` or `[row number, value]` otherwise. Results are grouped
    /// by row number; `count`/`sum` of an empty group are 0, `min`/`max`/`mean` of an
    /// empty group drop the input tuple. `ty` is the aggregated value's type (`mean` of
    /// any type is computed in f64 and yields a `float`).
    ///
    /// When `correlated` is false the aggregate reads no column of the input: `sub`'s
    /// input is then a single tuple holding only the row number 0, the aggregate is
    /// computed once, and its value (or its absence) applies to every input tuple.
    Aggregate {
        func: AggFunc,
        ty: ColType,
        correlated: bool,
        sub: Vec<Op>,
        filters: Vec<Cond>,
        project: Vec<PExpr>,
    },
}

/// One atom of an [`Op::Intersect`]: the index it is read through (its order is the key
/// columns, then the new variable's column, then the rest) and its key, expressions
/// over the input tuple.
#[derive(Clone, Debug, PartialEq)]
pub struct IntersectAtom {
    pub index: IndexId,
    pub key: Vec<PExpr>,
}

/// How a rule body's atoms are joined (see [`PlanOptions::join`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum JoinStrategy {
    /// Worst-case-optimal joins for cyclic bodies, pairwise joins otherwise.
    #[default]
    Auto,
    /// Worst-case-optimal joins wherever a body allows them (for tests and benchmarks).
    Wcoj,
    /// Pairwise joins only.
    Pairwise,
}

impl std::str::FromStr for JoinStrategy {
    type Err = String;
    fn from_str(s: &str) -> Result<JoinStrategy, String> {
        match s {
            "auto" => Ok(JoinStrategy::Auto),
            "wcoj" => Ok(JoinStrategy::Wcoj),
            "pairwise" => Ok(JoinStrategy::Pairwise),
            other => Err(format!(
                "unknown join strategy `{other}` (expected auto, wcoj or pairwise)"
            )),
        }
    }
}

/// Choices the planner leaves to its caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlanOptions {
    pub join: JoinStrategy,
}

/// Why a rule plan joins the way it does (shown by `fixlog explain`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JoinChoice {
    /// Pairwise joins (the body is acyclic, or the strategy says so).
    Pairwise,
    /// Worst-case-optimal join steps, binding the body's variables in `order` (names).
    Wcoj { reason: String, order: Vec<String> },
}

/// One rule, or one delta variant of a recursive rule.
#[derive(Clone, Debug, PartialEq)]
pub struct RulePlan {
    /// Index into the logical program's rules.
    pub rule: usize,
    /// For a delta variant: the position (in the logical rule's body) of the atom that
    /// reads the delta.
    pub delta_atom: Option<usize>,
    pub head: RelId,
    pub ops: Vec<Op>,
    /// How the body's atoms are joined, and why.
    pub join: JoinChoice,
    /// The rule's `.plan` for this version, if it has one, and whether the plan follows
    /// it (`explain` prints it).
    pub plan_note: Option<String>,
    /// For a delta variant: the same variant with a full atom scanned first and the
    /// delta joined next, for the iterations where the delta outnumbers that atom.
    pub full_first: Option<FullFirst>,
}

/// A delta variant planned from one of its full atoms: the atom that binds the head's
/// first variable (and shares a variable with the delta atom) is scanned first, sorted
/// on that variable, and the delta is joined next (through an index over the delta).
///
/// Why: the driver cuts a pipeline's first batch into pieces. Cut from the delta, the
/// pieces' results share head tuples, so what the later joins make can only be
/// bounded by repeating work (same generation's `(x, b)` pairs: 0.41 GiB beside a
/// 0.38 GiB relation at CA-HepTh's largest iteration). Cut from this atom sorted on
/// the head's first variable, each piece derives tuples of its own range of that
/// variable, so the driver bounds every batch of the pipeline without repeating any
/// (`fixlog_exec::driver`). Both orders make the same join rows; this one probes the
/// delta once per row of the atom instead of the atom once per delta row. The driver
/// runs it only where asked (`fixlog_exec::driver::FullFirstUse`: measured, it lowers
/// the peak but costs time on some graphs).
#[derive(Clone, Debug, PartialEq)]
pub struct FullFirst {
    /// The relation of the atom scanned first.
    pub outer: RelId,
    pub ops: Vec<Op>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StratumPlan {
    pub relations: Vec<RelId>,
    pub recursive: bool,
    /// Rules evaluated once, before the loop, over full versions.
    pub init: Vec<RulePlan>,
    /// Delta variants evaluated at every iteration (empty unless `recursive`).
    pub recursive_rules: Vec<RulePlan>,
    /// The subsumptive clauses of the stratum's relations, over full versions: each
    /// derives tuples of its head relation that another tuple dominates, which the
    /// driver removes after the init rules and after every iteration. `RulePlan::rule`
    /// indexes [`fixlog_logical::Program::subsumptions`].
    pub subsumptions: Vec<RulePlan>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RelationInfo {
    pub name: String,
    pub types: Vec<ColType>,
    /// Kept an equivalence relation by the driver (see `fixlog_exec::maintain`).
    pub eqrel: bool,
    /// The columns of each `choice-domain` (see `fixlog_exec::maintain`).
    pub choice_domains: Vec<Vec<usize>>,
    /// `.limitsize`: the size at which this relation's recursive stratum stops (see
    /// [`fixlog_logical::LimitSize`]).
    pub limitsize: Option<u64>,
}

impl RelationInfo {
    /// Whether the driver folds this relation's new tuples on the host before adding
    /// them (eqrel closure, choice), rather than adding them as the rules derived them.
    pub fn maintained(&self) -> bool {
        self.eqrel || !self.choice_domains.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub relations: Vec<RelationInfo>,
    pub indexes: Vec<IndexSpec>,
    pub strata: Vec<StratumPlan>,
}
