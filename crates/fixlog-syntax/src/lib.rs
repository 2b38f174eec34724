//! Fixlog's front end, first stage: Soufflé-syntax text to an abstract syntax tree.
//!
//! `text ──lex──▶ tokens ──parse──▶ ast::Program` with a [`Span`] on every node.
//! Nothing here knows about types or relations beyond their names: name resolution,
//! typing and stratification happen in `fixlog-logical`.

pub mod diagnostic;
pub mod source;

pub use diagnostic::{Diagnostic, Diagnostics};
pub use source::{FileId, SourceFile, SourceMap, Span};
