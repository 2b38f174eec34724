//! Fixlog's planner: from the checked logical program to the physical plan that every
//! backend executes.
//!
//! [`ir`] defines the plan; `planner` chooses delta variants, join orders, indexes and
//! where filters and computations go; `explain` prints a plan for `fixlog explain`.

pub mod explain;
pub mod ir;
pub mod planner;

pub use explain::explain;
pub use planner::{plan, plan_with};

pub use ir::*;
