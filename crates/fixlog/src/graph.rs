//! Graph pattern matching (`fixlog match`) through the library: load a graph once, run
//! many patterns against it. The matcher lives in the `fixlog-match` crate; this module
//! is its face in the `fixlog` API.
//!
//! ```
//! use fixlog::graph::{Graph, LoadOptions, Pattern, Semantics};
//!
//! let graph = Graph::from_text("1\t2\n2\t3\n3\t1\n1\t4\n", None, &LoadOptions { undirected: true })?;
//! let triangle: Pattern = "MATCH (a)--(b)--(c)--(a) RETURN count(*)".parse()?;
//! assert_eq!(graph.count(&triangle)?, 6); // injective maps: 3! per triangle
//! let path: Pattern = "MATCH (a)--(b)--(c) RETURN count(*)".parse()?;
//! assert_eq!(graph.count_with(&path, Semantics::Iso)?, 10);
//! assert_eq!(graph.count_with(&path, Semantics::Homo)?, 18); // walks: the sum of degree²
//! let mut rows = Vec::new();
//! let star: Pattern = "MATCH (a)--(b) WHERE id(a) = 1 RETURN b".parse()?;
//! graph.for_each_row(&star, Semantics::Iso, |row| { rows.push(row[0]); true });
//! assert_eq!(rows, vec![2, 3, 4]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use fixlog_match::graph::{Adjacency, AdjacencyKey, Direction, GraphBuilder, NodeIndex};
pub use fixlog_match::pattern::{Output, PatternEdge, PatternNode};
pub use fixlog_match::plan::Plan;
pub use fixlog_match::{
    CountOverflow, CountPath, Graph, GraphError, LoadOptions, Pattern, PatternError, Semantics,
};

#[cfg(feature = "cuda")]
pub mod gpu;
