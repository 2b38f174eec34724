//! Fixlog's executor core: the operator interface ([`backend::Backend`]) that every
//! backend implements, the backend-independent semi-naive [`driver`], and the pieces
//! both backends share so that they cannot disagree: the policy that keeps growing
//! relations as sorted runs ([`runs`]) and the value of an aggregate ([`aggregate`]);
//! and the form of a run's results ([`tuples`]).
//!
//! The backends live in their own crates: `fixlog-cpu` (all cores) and `fixlog-cuda`
//! (NVIDIA GPUs); the `fixlog` crate chooses between them.

pub mod aggregate;
pub mod backend;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod driver;
pub mod maintain;
pub mod merge;
pub mod runs;
pub mod tuples;

pub use backend::{
    check_rows, internal, Absorbed, Backend, EvalContext, ExecError, ExecResult, IntersectAtomSpec,
    NewRowsShape, OpSpec, PieceBudget, SecondColumn,
};
