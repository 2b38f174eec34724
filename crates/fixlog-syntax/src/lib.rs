//! Fixlog's front end, first stage: Soufflé-syntax text to an abstract syntax tree.
//!
//! `text ──lex──▶ tokens ──parse──▶ ast::Program` with a [`Span`] on every node.
//! Nothing here knows about types or relations beyond their names: name resolution,
//! typing and stratification happen in `fixlog-logical`.
//!
//! Entry points: [`parse`] (one file already in a [`SourceMap`], includes left as
//! [`ast::Item::Include`]), [`parse_file`] and [`parse_str`] (which also read and splice
//! in `.include`d files).

pub mod ast;
pub mod diagnostic;
pub mod lexer;
pub mod parser;
pub mod preprocess;
pub mod source;

pub use diagnostic::{Diagnostic, Diagnostics};
pub use parser::{parse, parse_file, parse_file_with, parse_str, parse_str_with, parse_text};
pub use preprocess::{PreprocessOptions, Preprocessor};
pub use source::{FileId, Segment, SourceFile, SourceMap, Span};
