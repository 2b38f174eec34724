//! Fixlog: Soufflé-compatible Datalog on every CPU core (and, later, on NVIDIA GPUs).
//!
//! This crate is the library API and the `fixlog` command line. The pipeline behind it:
//!
//! ```text
//! text ─fixlog_syntax─▶ AST ─fixlog_logical─▶ checked, stratified program
//!      ─fixlog_plan─▶ physical plan ─fixlog_exec─▶ semi-naive driver over a Backend
//! ```
//!
//! Graph pattern matching (`fixlog match`, a Cypher `MATCH` subset run as a
//! worst-case-optimal join over sorted adjacency lists) is [`graph`]: load a graph once,
//! count or list many patterns.
//!
//! ```
//! use fixlog::{Fixlog, Datum, RunOptions};
//!
//! let mut program = Fixlog::from_source("tc.dl", r#"
//!     .decl edge(x: number, y: number)
//!     .decl path(x: number, y: number)
//!     path(x, y) :- edge(x, y).
//!     path(x, z) :- path(x, y), edge(y, z).
//! "#).unwrap();
//! program.insert("edge", vec![
//!     vec![Datum::Number(1), Datum::Number(2)],
//!     vec![Datum::Number(2), Datum::Number(3)],
//! ]).unwrap();
//! let db = program.run(&RunOptions::default()).unwrap();
//! assert_eq!(db.len("path"), Some(3));
//! assert_eq!(db.relation("path").unwrap()[2], vec![Datum::Number(2), Datum::Number(3)]);
//! ```

pub mod api;
pub mod error;
pub mod functors;
pub mod graph;
pub mod io;
pub mod ordered;

pub use api::{
    parse_bytes, BackendChoice, BackendKind, CompileOptions, Database, Datum, Fixlog, FullFirstUse,
    RunOptions, RunStats, WriteStats, GPU_FULL_FIRST_MIN_HEAD_ROWS,
};
pub use error::Error;
pub use fixlog_logical::CheckOptions;
pub use fixlog_plan::{JoinStrategy, PlanOptions};
pub use fixlog_syntax::{PreprocessOptions, Preprocessor};
pub use functors::FunctorLibraries;
