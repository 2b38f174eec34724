//! Fixlog's front end, second stage: from the AST to a checked, stratified program.
//!
//! `ast::Program ──instantiate components──▶ ──resolve names, types──▶ ──desugar──▶ ──range-restriction──▶
//! ──stratify──▶ ir::Program`
//!
//! [`ir`] is the logical program the planner and the reference evaluator read.
//! [`compile_file`] and [`compile_str`] run the whole front end (parsing, `.include`s,
//! checking, stratification) and return every error found as [`Diagnostics`], rendered
//! against the [`SourceMap`] they fill.

pub mod check;
pub mod components;
mod ground;
pub mod ir;
pub mod records;
pub mod stratify;
pub mod symbols;
pub mod value;

pub use check::{check, expr_type, type_name};
pub use ir::*;
pub use symbols::SymbolTable;

use fixlog_syntax::{Diagnostics, PreprocessOptions, SourceMap};
use std::path::Path;

/// Read the program in `path` (and its `.include`s), check and stratify it.
pub fn compile_file(path: &Path, sources: &mut SourceMap) -> Result<ir::Program, Diagnostics> {
    compile_file_with(path, sources, &PreprocessOptions::default())
}

/// [`compile_file`] with preprocessing options (`-M`, `-I`, another preprocessor).
pub fn compile_file_with(
    path: &Path,
    sources: &mut SourceMap,
    options: &PreprocessOptions,
) -> Result<ir::Program, Diagnostics> {
    let ast = fixlog_syntax::parse_file_with(path, sources, options)?;
    check::check(&ast, sources)
}

/// [`compile_str`] with preprocessing options.
pub fn compile_str_with(
    name: &str,
    text: &str,
    sources: &mut SourceMap,
    options: &PreprocessOptions,
) -> Result<ir::Program, Diagnostics> {
    let ast = fixlog_syntax::parse_str_with(name, text, sources, options)?;
    check::check(&ast, sources)
}

/// Check and stratify program text; `name` is used in messages and to resolve relative
/// `.include`s.
pub fn compile_str(
    name: &str,
    text: &str,
    sources: &mut SourceMap,
) -> Result<ir::Program, Diagnostics> {
    let ast = fixlog_syntax::parse_str(name, text, sources)?;
    check::check(&ast, sources)
}
