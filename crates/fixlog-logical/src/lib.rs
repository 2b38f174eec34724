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
mod inline;
pub mod ir;
pub mod magic;
pub mod records;
mod rewrite;
pub mod stratify;
pub mod symbols;
pub mod value;

pub use check::{check, check_with, expr_type, type_name, CheckOptions};
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
    compile_file_opts(path, sources, options, &CheckOptions::default())
}

/// [`compile_file`] with preprocessing and checking options (the magic-set transform).
pub fn compile_file_opts(
    path: &Path,
    sources: &mut SourceMap,
    preprocess: &PreprocessOptions,
    options: &CheckOptions,
) -> Result<ir::Program, Diagnostics> {
    let ast = fixlog_syntax::parse_file_with(path, sources, preprocess)?;
    check::check_with(&ast, sources, options)
}

/// [`compile_str`] with preprocessing options.
pub fn compile_str_with(
    name: &str,
    text: &str,
    sources: &mut SourceMap,
    options: &PreprocessOptions,
) -> Result<ir::Program, Diagnostics> {
    compile_str_opts(name, text, sources, options, &CheckOptions::default())
}

/// [`compile_str`] with preprocessing and checking options (the magic-set transform).
pub fn compile_str_opts(
    name: &str,
    text: &str,
    sources: &mut SourceMap,
    preprocess: &PreprocessOptions,
    options: &CheckOptions,
) -> Result<ir::Program, Diagnostics> {
    let ast = fixlog_syntax::parse_str_with(name, text, sources, preprocess)?;
    check::check_with(&ast, sources, options)
}

/// Check and stratify program text; `name` is used in messages and to resolve relative
/// `.include`s.
pub fn compile_str(
    name: &str,
    text: &str,
    sources: &mut SourceMap,
) -> Result<ir::Program, Diagnostics> {
    compile_str_with(name, text, sources, &PreprocessOptions::default())
}
