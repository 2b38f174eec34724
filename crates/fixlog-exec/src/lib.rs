//! Fixlog's executor: the operator interface ([`backend::Backend`]), the
//! backend-independent semi-naive driver, and the CPU backend.

pub mod backend;
pub mod cpu;
pub mod driver;

pub use backend::{Backend, EvalContext, ExecError, ExecResult};
