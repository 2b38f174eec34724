//! The operator interface every backend implements.
//!
//! The semi-naive driver ([`crate::driver`]) owns the loop: which rule variants run,
//! when deltas are formed, when the fixpoint is reached. A backend owns the data and
//! the bulk operators on it. The CPU backend (crate `fixlog-cpu`) keeps relations in
//! host memory and runs the operators on all cores; the CUDA backend (crate
//! `fixlog-cuda`) keeps them in device memory and runs kernels. Both run the same
//! [`fixlog_plan::Plan`] and must give identical results.
//!
//! Three kinds of data:
//! - [`Backend::Relation`]: a set of tuples of one arity, sorted lexicographically in
//!   column order and free of duplicates (a full or delta version of a relation);
//! - [`Backend::Index`]: a relation's tuples sorted in an index order (a permutation of
//!   the columns) with a hash table from the key prefix to the first tuple with that
//!   key (HISA); its columns are still *numbered* as in the relation, so the plan's
//!   column references never see the permutation;
//! - [`Backend::Batch`]: a multiset of tuples in no particular order, flowing between
//!   operators.
//!
//! # Prepared operators
//!
//! Expressions and conditions are lowered once per run, not on every call: before
//! evaluating, the driver describes every operator of the plan as an [`OpSpec`] and
//! calls [`Backend::prepare`] once with all of them; the backend returns one
//! [`Backend::Code`] per spec (compiled closures on the CPU; generated kernels, or a
//! note that the operator runs on the host, on the GPU). Pipeline operators then take
//! their code instead of the plan's expressions.
//!
//! # Failure
//!
//! Every method that can fail on some backend returns [`ExecResult`]: a device can run
//! out of memory or fail a call at any point. Running out of memory is
//! [`ExecError::OutOfMemory`], which the driver answers by running a pipeline over
//! smaller pieces of its input. An operator may also ask for smaller pieces before it
//! runs out ([`ExecError::BatchTooLarge`], where [`EvalContext::can_split`] allows it):
//! the CUDA join knows its output's size after counting, and asks when the output
//! would exceed the backend's share of device memory for one batch.

use crate::tuples::RowStore;
use fixlog_logical::{AggFunc, ColType, SymbolTable, Value};
use fixlog_plan::{Cond, PExpr};

/// What operators need besides their inputs.
pub struct EvalContext<'a> {
    /// For functors (`cat`, `substr`, `to_string` make symbols; `strlen`, `contains`,
    /// `match` read them).
    pub symbols: &'a SymbolTable,
    /// Whether the driver can run the current pipeline again over smaller pieces of
    /// its input. An operator that knows the size of its output before making it (a
    /// join that counts first) may then answer [`ExecError::BatchTooLarge`] instead of
    /// making a batch larger than its backend's [`PieceBudget::max_batch_rows`];
    /// otherwise it makes the batch whatever its size.
    pub can_split: bool,
    /// Where the driver wants batches smaller than the backend's budget (pieces that
    /// derive disjoint tuples, which repeat no work when cut smaller): with
    /// `can_split`, an operator that counts first answers
    /// [`ExecError::BatchTooLarge`] past this many rows too.
    pub max_rows: Option<usize>,
}

impl<'a> EvalContext<'a> {
    /// A context in which no operator asks for smaller pieces.
    pub fn new(symbols: &'a SymbolTable) -> EvalContext<'a> {
        EvalContext {
            symbols,
            can_split: false,
            max_rows: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecError {
    /// The backend ran out of memory (device memory for CUDA) or hit its limit.
    OutOfMemory(String),
    /// Any other backend failure (a CUDA call that failed, say).
    Backend(String),
    /// An operator would make `rows` rows where its backend's budget is `limit`, and
    /// did nothing ([`EvalContext::can_split`]): the driver runs the pipeline over
    /// smaller pieces. `fits`: where the operator knows it, how many leading rows of
    /// its input make at most `limit` rows (the driver cuts there, not at an estimate
    /// that uneven fan-out can make wrong again). Never returned when `can_split` is
    /// false.
    BatchTooLarge {
        rows: usize,
        limit: usize,
        fits: Option<usize>,
    },
}

impl std::fmt::Display for ExecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExecError::OutOfMemory(m) => write!(f, "out of memory: {m}"),
            ExecError::Backend(m) => write!(f, "backend error: {m}"),
            ExecError::BatchTooLarge { rows, limit, .. } => write!(
                f,
                "internal error: an operator asked for smaller pieces ({rows} rows over a budget of {limit}) where its input cannot be split"
            ),
        }
    }
}

impl std::error::Error for ExecError {}

pub type ExecResult<T> = Result<T, ExecError>;

/// An internal invariant that does not hold: a bug, reported as an error, never a panic.
pub fn internal(what: &str) -> ExecError {
    ExecError::Backend(format!("internal error: {what}"))
}

/// That `values` values make `len` rows of `arity` columns: rows handed to a backend
/// by its caller are checked, never trusted to fit.
pub fn check_rows(arity: usize, values: usize, len: usize) -> ExecResult<()> {
    if arity.checked_mul(len) == Some(values) {
        Ok(())
    } else {
        Err(ExecError::Backend(format!(
            "{values} values do not make {len} rows of arity {arity}"
        )))
    }
}

/// One operator of the plan, with everything a backend needs to lower its expressions:
/// the arity of its input and, for joins, the layout of the inner index. Columns are
/// numbered as in [`fixlog_plan::Op`] (the joined tuple).
#[derive(Clone, Debug, PartialEq)]
pub enum OpSpec {
    /// Filter and project the tuples of a relation of `arity` columns.
    Scan {
        arity: usize,
        filters: Vec<Cond>,
        project: Vec<PExpr>,
    },
    /// Filter and project a batch of `arity` columns.
    Filter {
        arity: usize,
        filters: Vec<Cond>,
        project: Vec<PExpr>,
    },
    /// Join a batch of `input_arity` columns with an index whose rows are stored in
    /// `order` (relation columns) and keyed on the first `key_len` of them. `distinct`:
    /// the output is only used as a set, so repeated tuples may be dropped early.
    Join {
        input_arity: usize,
        order: Vec<usize>,
        key_len: usize,
        key: Vec<PExpr>,
        filters: Vec<Cond>,
        project: Vec<PExpr>,
        distinct: bool,
    },
    /// Worst-case-optimal join step ([`fixlog_plan::Op::Intersect`]): extend each tuple
    /// of a batch of `input_arity` columns with every value `v` that each atom allows
    /// (the atom's index has a row whose key columns equal its key and whose column
    /// `order[key_len]` is `v`), each value once; then filter and project the joined
    /// tuple `input ++ [v]`. `distinct` as for joins.
    Intersect {
        input_arity: usize,
        atoms: Vec<IntersectAtomSpec>,
        filters: Vec<Cond>,
        project: Vec<PExpr>,
        distinct: bool,
    },
    /// Keep the input tuples whose key matches nothing in the index.
    AntiJoin {
        input_arity: usize,
        order: Vec<usize>,
        key_len: usize,
        key: Vec<PExpr>,
    },
    /// Combine each input tuple with its group's aggregate (`input ++ [value]`), then
    /// filter and project (see [`Backend::aggregate`]).
    Aggregate {
        input_arity: usize,
        func: AggFunc,
        ty: ColType,
        filters: Vec<Cond>,
        project: Vec<PExpr>,
    },
}

/// One atom of an [`OpSpec::Intersect`]: the layout of its index (relation columns in
/// stored order, the first `key_len` of them the key, the next one the new value) and
/// its key, expressions over the input tuple.
#[derive(Clone, Debug, PartialEq)]
pub struct IntersectAtomSpec {
    pub order: Vec<usize>,
    pub key_len: usize,
    pub key: Vec<PExpr>,
}

/// A join whose output is two plain columns, the first an input column (`group`), the
/// second read from the input row or the inner row (`second`): absorbed into a relation
/// ([`Backend::join_absorbed`]) over input grouped by `group` (a sorted delta or
/// gathered set), each group's new tuples can be found apart from the others, in a set
/// of the second column's values seeded with what the relation holds for that group
/// (both backends' `new_rows`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewRowsShape {
    pub group: usize,
    pub second: SecondColumn,
}

/// Where the second output column of a [`NewRowsShape`] join is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecondColumn {
    /// Column `c` of the input rows.
    Input(usize),
    /// Position `p` of the inner rows as the index stores them (in index order).
    Inner(usize),
}

impl OpSpec {
    /// [`NewRowsShape`] of a join, or `None` for other operators and shapes.
    pub fn new_rows_shape(&self) -> Option<NewRowsShape> {
        let OpSpec::Join {
            input_arity,
            order,
            project,
            ..
        } = self
        else {
            return None;
        };
        let [first, second] = project.as_slice() else {
            return None;
        };
        let group = first.as_col().filter(|&g| g < *input_arity)?;
        let c = second.as_col()?;
        let second = match c.checked_sub(*input_arity) {
            None => SecondColumn::Input(c),
            Some(rel_col) => SecondColumn::Inner(order.iter().position(|&o| o == rel_col)?),
        };
        Some(NewRowsShape { group, second })
    }

    /// Arity of the batch the operator produces.
    pub fn output_arity(&self) -> usize {
        match self {
            OpSpec::Scan { project, .. }
            | OpSpec::Filter { project, .. }
            | OpSpec::Join { project, .. }
            | OpSpec::Intersect { project, .. }
            | OpSpec::Aggregate { project, .. } => project.len(),
            OpSpec::AntiJoin { input_arity, .. } => *input_arity,
        }
    }
}

/// How large the batches of a pipeline run piece by piece should be (see
/// [`crate::driver`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PieceBudget {
    /// Rows of the first piece of a pipeline's input.
    pub first_piece_rows: usize,
    /// The most tuples any batch of one piece should hold.
    pub max_batch_rows: usize,
    /// The most tuples of a pipeline's input the backend can sort whole, beside what
    /// it holds (to order the input before cutting it into pieces: see
    /// `fixlog_exec::driver`'s `carried_first`); larger inputs are cut unsorted.
    pub max_sort_rows: usize,
    /// Whether the backend's joins count their output before making it, refuse past
    /// the bound they are given ([`ExecError::BatchTooLarge`]) and say how many
    /// leading input rows fit. A pipeline whose pieces derive disjoint tuples then
    /// starts at `first_piece_rows` and is cut where the refusals say; otherwise it
    /// starts small and grows while its batches stay small (a backend that cannot
    /// tell in advance would make the whole batch first). Any other pipeline's first
    /// piece is then also at least a share of its head relation (see
    /// `fixlog_exec::driver`).
    pub joins_say_what_fits: bool,
}

impl Default for PieceBudget {
    fn default() -> Self {
        PieceBudget {
            first_piece_rows: 1 << 16,
            max_batch_rows: 1 << 24,
            max_sort_rows: usize::MAX,
            joins_say_what_fits: false,
        }
    }
}

/// What [`Backend::join_absorbed`] gives back.
#[derive(Debug)]
pub enum Absorbed<Batch, Relation> {
    /// The join's rows, for the caller to deduplicate and subtract `old` from.
    Rows(Batch),
    /// What that gives: the join's rows sorted, deduplicated and without those of
    /// `old`. `made`: the rows the join made before that (for statistics).
    New { tuples: Relation, made: usize },
}

pub trait Backend {
    /// Cloning a relation must be cheap (shared storage): the driver clones `full` into
    /// the first delta of a recursive stratum.
    type Relation: Clone;
    type Index;
    type Batch;
    /// An operator lowered by [`Backend::prepare`].
    type Code;

    fn name(&self) -> &'static str;

    /// Lowers every operator of a run, once, before evaluation: one code per spec, in
    /// order.
    fn prepare(&self, ops: &[OpSpec], ctx: &EvalContext) -> ExecResult<Vec<Self::Code>>;

    /// Batch sizes for running pipelines piece by piece.
    fn piece_budget(&self) -> PieceBudget {
        PieceBudget::default()
    }

    // ---- moving data in and out -------------------------------------------------

    /// A relation from row-major tuples in any order, with duplicates allowed.
    fn relation_from_rows(&self, arity: usize, rows: Vec<Value>) -> ExecResult<Self::Relation>;
    fn empty_relation(&self, arity: usize) -> ExecResult<Self::Relation>;
    /// Row-major tuples in sorted order.
    fn relation_rows(&self, rel: &Self::Relation) -> ExecResult<Vec<Value>>;
    /// [`relation_rows`](Self::relation_rows) of a relation the caller gives up (the
    /// results at the end of a run): a backend may release its memory as it goes.
    /// The rows may stay in storage the backend holds (a mapped file: see
    /// [`crate::tuples`]), so a result larger than memory is never copied into it.
    fn take_rows(&self, rel: Self::Relation) -> ExecResult<RowStore> {
        self.relation_rows(&rel).map(RowStore::Owned)
    }
    /// A result at the end of a run, as [`take_rows`](Self::take_rows) but without
    /// merging: a backend that keeps a relation as sorted runs may hand them back as
    /// they are ([`RowStore::Runs`]), so the end of a run copies nothing and readers
    /// merge the runs lazily, part by part ([`crate::merge`]). By default the rows of
    /// [`take_rows`](Self::take_rows).
    fn take_result(&self, rel: Self::Relation) -> ExecResult<RowStore> {
        self.take_rows(rel)
    }
    fn relation_len(&self, rel: &Self::Relation) -> usize;
    fn relation_arity(&self, rel: &Self::Relation) -> usize;

    /// A batch of `len` tuples from row-major values (`len` is needed for arity 0).
    fn batch_from_rows(
        &self,
        arity: usize,
        rows: Vec<Value>,
        len: usize,
    ) -> ExecResult<Self::Batch>;
    /// A batch's tuples, row-major, in batch order.
    fn batch_rows(&self, batch: &Self::Batch) -> ExecResult<Vec<Value>>;
    fn batch_len(&self, batch: &Self::Batch) -> usize;
    fn batch_arity(&self, batch: &Self::Batch) -> usize;

    // ---- set operations ---------------------------------------------------------

    /// Sort and remove duplicates. A batch that is a relation's only run, whole (from
    /// [`Self::relation_batch`]), is sorted already: a backend may give that relation
    /// back, sharing its storage (both do: a delta scanned as it is is not copied).
    fn sort_unique(&self, batch: Self::Batch) -> ExecResult<Self::Relation>;
    /// The tuples of `batch` that are not in `old`, sorted and deduplicated: the new
    /// tuples a rule derived. A backend may fuse the two steps.
    fn sort_unique_minus(
        &self,
        batch: Self::Batch,
        old: &Self::Relation,
    ) -> ExecResult<Self::Relation> {
        let candidates = self.sort_unique(batch)?;
        self.difference(&candidates, old)
    }
    /// The tuples of a relation as a batch (sorted, which the next join may use).
    fn relation_batch(&self, rel: &Self::Relation) -> ExecResult<Self::Batch>;
    /// The first `rows` tuples of a batch and the rest (for running a pipeline on a
    /// large input piece by piece).
    fn split_batch(
        &self,
        batch: Self::Batch,
        rows: usize,
    ) -> ExecResult<(Self::Batch, Self::Batch)>;
    /// `a ∪ b`.
    fn merge(&self, a: &Self::Relation, b: &Self::Relation) -> ExecResult<Self::Relation>;
    /// `a ∪ b` where the caller guarantees that `b` and `a` share no tuple (the
    /// semi-naive `full ∪ (new − full)`), so no membership test is needed. Takes `a`
    /// (the large side): a backend may give back its memory while merging.
    fn merge_disjoint(&self, a: Self::Relation, b: &Self::Relation) -> ExecResult<Self::Relation>;
    /// `a − b`.
    fn difference(&self, a: &Self::Relation, b: &Self::Relation) -> ExecResult<Self::Relation>;

    // ---- indexes ----------------------------------------------------------------

    /// Sort `rel` by `order` and hash the first `key_len` columns of that order.
    fn build_index(
        &self,
        rel: &Self::Relation,
        order: &[usize],
        key_len: usize,
    ) -> ExecResult<Self::Index>;
    /// Add the tuples of `delta` (disjoint from the index's tuples) to the index.
    fn extend_index(&self, index: &mut Self::Index, delta: &Self::Relation) -> ExecResult<()>;
    fn index_len(&self, index: &Self::Index) -> usize;

    // ---- pipeline operators (see `fixlog_plan::Op` for column numbering) ------------

    /// One tuple of arity 0.
    fn unit(&self) -> ExecResult<Self::Batch>;
    /// `code` from an [`OpSpec::Scan`].
    fn scan(
        &self,
        rel: &Self::Relation,
        code: &Self::Code,
        ctx: &EvalContext,
    ) -> ExecResult<Self::Batch>;
    /// `code` from an [`OpSpec::Join`].
    fn join(
        &self,
        input: &Self::Batch,
        inner: &Self::Index,
        code: &Self::Code,
        ctx: &EvalContext,
    ) -> ExecResult<Self::Batch>;
    /// [`Self::join`] whose result the caller adds to a relation's new tuples after
    /// deduplicating it and subtracting `old` (the last join of a rule's pipeline in a
    /// recursive stratum, whose tuples the full relation mostly holds already: 94% of
    /// same-generation's). A backend may do that itself as it writes, so the rows of
    /// `old` never sit in memory all at once, and give back the new tuples
    /// ([`Absorbed::New`]); by default, the rows of `join` ([`Absorbed::Rows`]).
    fn join_absorbed(
        &self,
        input: &Self::Batch,
        inner: &Self::Index,
        code: &Self::Code,
        ctx: &EvalContext,
        old: &Self::Relation,
    ) -> ExecResult<Absorbed<Self::Batch, Self::Relation>> {
        let _ = old;
        self.join(input, inner, code, ctx).map(Absorbed::Rows)
    }
    /// `code` from an [`OpSpec::Intersect`]; `atoms[i]` is the index of the spec's
    /// atom `i`.
    fn intersect(
        &self,
        input: &Self::Batch,
        atoms: &[&Self::Index],
        code: &Self::Code,
        ctx: &EvalContext,
    ) -> ExecResult<Self::Batch>;
    /// `code` from an [`OpSpec::AntiJoin`].
    fn antijoin(
        &self,
        input: &Self::Batch,
        inner: &Self::Index,
        code: &Self::Code,
        ctx: &EvalContext,
    ) -> ExecResult<Self::Batch>;
    /// `code` from an [`OpSpec::Filter`].
    fn filter(
        &self,
        input: &Self::Batch,
        code: &Self::Code,
        ctx: &EvalContext,
    ) -> ExecResult<Self::Batch>;
    /// The input with one more column: the row number 0..len.
    fn with_row_numbers(&self, input: &Self::Batch) -> ExecResult<Self::Batch>;

    /// `fixlog_plan::Op::Range`: every input tuple once per value of the range (in
    /// `ty`) that its last two columns (`from, to`) or three (`from, to, step`) give,
    /// with the value appended, in input order then range order. More values than
    /// [`PieceBudget::max_batch_rows`] in one call is `OutOfMemory` (the driver then
    /// runs smaller pieces; for a single tuple it is an error naming the relation).
    /// The default works on the host (`batch_rows`, `batch_from_rows`): a backend with
    /// no kernel for it sends the batch over.
    fn range(&self, input: &Self::Batch, ty: ColType, step: bool) -> ExecResult<Self::Batch> {
        let arity = self.batch_arity(input);
        let k = if step { 3 } else { 2 };
        if arity < k {
            return Err(internal("a range's input lacks its arguments"));
        }
        let limit = self.piece_budget().max_batch_rows.max(1);
        let rows = self.batch_rows(input)?;
        let mut out: Vec<Value> = Vec::new();
        let mut len = 0usize;
        let mut over = false;
        for row in rows.chunks_exact(arity) {
            let a = &row[arity - k..];
            fixlog_logical::value::range_values(ty, a[0], a[1], a.get(2).copied(), |v| {
                if len >= limit {
                    over = true;
                    return false;
                }
                if out.try_reserve(arity + 1).is_err() {
                    over = true;
                    return false;
                }
                out.extend_from_slice(row);
                out.push(v);
                len += 1;
                true
            });
            if over {
                return Err(ExecError::OutOfMemory(format!(
                    "`range` yields more than {limit} tuples in one batch"
                )));
            }
        }
        self.batch_from_rows(arity + 1, out, len)
    }
    /// Group `groups` (`[row number]` for count, `[row number, value]` otherwise) by row
    /// number, aggregate each group ([`crate::aggregate`]), and for each input row form
    /// the joined tuple `input ++ [aggregate]`, filter and project it (`code` from an
    /// [`OpSpec::Aggregate`]; see `fixlog_plan::Op::Aggregate` for empty groups).
    fn aggregate(
        &self,
        input: &Self::Batch,
        groups: Self::Batch,
        code: &Self::Code,
        ctx: &EvalContext,
    ) -> ExecResult<Self::Batch>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixlog_logical::{BinOp, ColType};

    fn join(project: Vec<PExpr>) -> OpSpec {
        OpSpec::Join {
            input_arity: 2,
            order: vec![0, 1],
            key_len: 1,
            key: vec![PExpr::Col(1)],
            filters: vec![],
            project,
            distinct: true,
        }
    }

    #[test]
    fn new_rows_shapes() {
        let col = PExpr::Col;
        // Transitive closure: grouped on input column 0, the second column the inner's
        // (stored second in order [0, 1]; first in order [1, 0]).
        assert_eq!(
            join(vec![col(0), col(3)]).new_rows_shape(),
            Some(NewRowsShape {
                group: 0,
                second: SecondColumn::Inner(1)
            })
        );
        let mut rev = join(vec![col(0), col(3)]);
        if let OpSpec::Join { order, .. } = &mut rev {
            *order = vec![1, 0];
        }
        assert_eq!(
            rev.new_rows_shape(),
            Some(NewRowsShape {
                group: 0,
                second: SecondColumn::Inner(0)
            })
        );
        // Both columns from the input.
        assert_eq!(
            join(vec![col(1), col(0)]).new_rows_shape(),
            Some(NewRowsShape {
                group: 1,
                second: SecondColumn::Input(0)
            })
        );
        // The first column from the inner relation, an expression, three columns, a
        // column past the joined tuple, a scan: no.
        assert_eq!(join(vec![col(2), col(1)]).new_rows_shape(), None);
        let plus_one = PExpr::Binary {
            op: BinOp::Add,
            ty: ColType::Number,
            lhs: Box::new(col(3)),
            rhs: Box::new(PExpr::Const(1)),
        };
        assert_eq!(join(vec![col(0), plus_one]).new_rows_shape(), None);
        assert_eq!(join(vec![col(0), col(3), col(1)]).new_rows_shape(), None);
        assert_eq!(join(vec![col(0), col(4)]).new_rows_shape(), None);
        let scan = OpSpec::Scan {
            arity: 2,
            filters: vec![],
            project: vec![col(0), col(1)],
        };
        assert_eq!(scan.new_rows_shape(), None);
    }

    #[test]
    fn check_rows_wants_exactly_len_rows() {
        assert_eq!(check_rows(2, 6, 3), Ok(()));
        assert_eq!(check_rows(0, 0, 1), Ok(()));
        assert_eq!(
            check_rows(2, 5, 2),
            Err(ExecError::Backend(
                "5 values do not make 2 rows of arity 2".into()
            ))
        );
        assert_eq!(
            check_rows(2, 6, 2),
            Err(ExecError::Backend(
                "6 values do not make 2 rows of arity 2".into()
            ))
        );
        assert_eq!(
            check_rows(0, 1, 1),
            Err(ExecError::Backend(
                "1 values do not make 1 rows of arity 0".into()
            ))
        );
        assert!(check_rows(2, 0, usize::MAX).is_err());
    }
}
