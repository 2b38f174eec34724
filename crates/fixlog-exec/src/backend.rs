//! The operator interface every backend implements.
//!
//! The semi-naive driver ([`crate::driver`]) owns the loop: which rule variants run,
//! when deltas are formed, when the fixpoint is reached. A backend owns the data and
//! the bulk operators on it. The CPU backend ([`crate::cpu`]) keeps relations in host
//! memory and runs the operators on all cores with rayon; the CUDA backend keeps them in
//! device memory and runs kernels. Both run the same [`fixlog_plan::Plan`] and must give
//! identical results.
//!
//! Three kinds of data:
//! - [`Backend::Relation`]: a set of tuples of one arity, sorted lexicographically in
//!   column order and free of duplicates (a full or delta version of a relation);
//! - [`Backend::Index`]: a relation's tuples sorted in an index order (a permutation of
//!   the columns) with a hash table from the key prefix to the first tuple with that
//!   key (HISA); its columns are still *numbered* as in the relation, so the plan's
//!   column references never see the permutation;
//! - [`Backend::Batch`]: a multiset of tuples in no order, flowing between operators.

use fixlog_logical::{AggFunc, ColType, SymbolTable, Value};
use fixlog_plan::{Cond, PExpr};

/// What operators need besides their inputs.
pub struct EvalContext<'a> {
    /// For functors (`cat`, `substr`, `to_string` make symbols; `strlen`, `contains`,
    /// `match` read them).
    pub symbols: &'a SymbolTable,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecError {
    /// The backend ran out of memory (device memory for CUDA) or hit its limit.
    OutOfMemory(String),
    /// Any other backend failure (a CUDA call that failed, say).
    Backend(String),
}

impl std::fmt::Display for ExecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExecError::OutOfMemory(m) => write!(f, "out of memory: {m}"),
            ExecError::Backend(m) => write!(f, "backend error: {m}"),
        }
    }
}

impl std::error::Error for ExecError {}

pub type ExecResult<T> = Result<T, ExecError>;

pub trait Backend: Send + Sync {
    /// Cloning a relation must be cheap (shared storage): the driver clones `full` into
    /// the first delta of a recursive stratum.
    type Relation: Clone + Send + Sync;
    type Index: Send + Sync;
    type Batch: Send + Sync;

    fn name(&self) -> &'static str;

    // ---- moving data in and out -------------------------------------------------

    /// A relation from row-major tuples in any order, with duplicates allowed.
    fn relation_from_rows(&self, arity: usize, rows: Vec<Value>) -> ExecResult<Self::Relation>;
    fn empty_relation(&self, arity: usize) -> Self::Relation;
    /// Row-major tuples in sorted order.
    fn relation_rows(&self, rel: &Self::Relation) -> Vec<Value>;
    fn relation_len(&self, rel: &Self::Relation) -> usize;
    fn relation_arity(&self, rel: &Self::Relation) -> usize;

    fn batch_len(&self, batch: &Self::Batch) -> usize;
    fn batch_arity(&self, batch: &Self::Batch) -> usize;

    // ---- set operations ---------------------------------------------------------

    /// Sort and remove duplicates.
    fn sort_unique(&self, batch: Self::Batch) -> ExecResult<Self::Relation>;
    /// The first `rows` tuples of a batch and the rest (for running a pipeline on a
    /// large input piece by piece).
    fn split_batch(&self, batch: Self::Batch, rows: usize) -> (Self::Batch, Self::Batch);
    /// One batch holding the tuples of all (of equal arity).
    fn concat(&self, arity: usize, batches: Vec<Self::Batch>) -> ExecResult<Self::Batch>;
    /// `a ∪ b`.
    fn merge(&self, a: &Self::Relation, b: &Self::Relation) -> ExecResult<Self::Relation>;
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
    fn unit(&self) -> Self::Batch;
    fn scan(
        &self,
        rel: &Self::Relation,
        filters: &[Cond],
        project: &[PExpr],
        ctx: &EvalContext,
    ) -> ExecResult<Self::Batch>;
    fn join(
        &self,
        input: &Self::Batch,
        inner: &Self::Index,
        key: &[PExpr],
        filters: &[Cond],
        project: &[PExpr],
        ctx: &EvalContext,
    ) -> ExecResult<Self::Batch>;
    /// [`Backend::join`] for a batch that will only be used as a set (a rule's result,
    /// deduplicated afterwards): the backend may drop repeated output tuples early.
    /// The default keeps them all.
    fn join_distinct(
        &self,
        input: &Self::Batch,
        inner: &Self::Index,
        key: &[PExpr],
        filters: &[Cond],
        project: &[PExpr],
        ctx: &EvalContext,
    ) -> ExecResult<Self::Batch> {
        self.join(input, inner, key, filters, project, ctx)
    }
    fn antijoin(
        &self,
        input: Self::Batch,
        inner: &Self::Index,
        key: &[PExpr],
        ctx: &EvalContext,
    ) -> ExecResult<Self::Batch>;
    fn filter(
        &self,
        input: &Self::Batch,
        filters: &[Cond],
        project: &[PExpr],
        ctx: &EvalContext,
    ) -> ExecResult<Self::Batch>;
    /// The input with one more column: the row number 0..len.
    fn with_row_numbers(&self, input: &Self::Batch) -> ExecResult<Self::Batch>;
    /// Group `groups` (`[row number]` for count, `[row number, value]` otherwise) by row
    /// number, aggregate each group, and for each input row form the joined tuple
    /// `input ++ [aggregate]`, filter and project it (see `fixlog_plan::Op::Aggregate`
    /// for empty groups).
    #[allow(clippy::too_many_arguments)]
    fn aggregate(
        &self,
        input: &Self::Batch,
        groups: Self::Batch,
        func: AggFunc,
        ty: ColType,
        filters: &[Cond],
        project: &[PExpr],
        ctx: &EvalContext,
    ) -> ExecResult<Self::Batch>;
}
