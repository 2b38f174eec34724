//! Fixlog's front end, second stage: from the AST to a checked, stratified program.
//!
//! `ast::Program ──resolve names, types──▶ ──desugar──▶ ──range-restriction──▶
//! ──stratify──▶ ir::Program`
//!
//! [`ir`] is the logical program the planner and the reference evaluator read.

pub mod ir;
pub mod symbols;
pub mod value;

pub use ir::*;
pub use symbols::SymbolTable;
