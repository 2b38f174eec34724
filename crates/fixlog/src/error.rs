//! The one error type of the library and the command line.
//!
//! Every variant's `Display` is a complete message for a person: program errors are
//! already rendered with `file:line:column`, the source line and a caret; fact-file errors
//! name the file and line.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The program text has errors (syntax, names, types, range restriction,
    /// stratification). `rendered` holds every diagnostic, rendered.
    #[error("{rendered}")]
    Program {
        rendered: String,
        diagnostics: fixlog_syntax::Diagnostics,
    },
    /// A fact file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A line of a fact file is malformed (1-based line and character column).
    #[error("{}:{line}:{column}: {message}", path.display())]
    FactLine {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// An output could not be written.
    #[error("cannot write {}: {source}", path.display())]
    WriteFile {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The output directory (`-D`) does not exist. Soufflé does not create it either.
    #[error("output directory {} does not exist", .0.display())]
    NoOutputDir(PathBuf),
    /// A path that must be a directory (`-D`, or the folder of an output file) is not.
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// Facts given through the API do not fit the relation.
    #[error("{0}")]
    BadInput(String),
    /// `--backend cuda` where no GPU can be used (the reason says why).
    #[error("no usable GPU: {0}")]
    NoGpu(String),
    /// A graph pattern (`fixlog match`) does not parse; its message is rendered with the
    /// pattern's line, column and a caret.
    #[error("{0}")]
    Pattern(#[from] fixlog_match::PatternError),
    /// A graph file (`fixlog match --edges/--nodes`) cannot be read or has a malformed
    /// line (`file:line:column: message`).
    #[error("{0}")]
    Graph(#[from] fixlog_match::GraphError),
    /// A count (`fixlog match ... RETURN count(*)`) does not fit in 64 bits.
    #[error("{0}")]
    Count(#[from] fixlog_match::CountOverflow),
    /// The executor failed (out of memory, device error).
    #[error("evaluation failed: {0}")]
    Exec(#[from] fixlog_exec::ExecError),
}
