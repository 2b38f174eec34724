//! Graph pattern matching for Fixlog: `fixlog match`.
//!
//! A pattern is a small Cypher subset (`MATCH (a:Person)-[:KNOWS]->(b), (b)--(c) WHERE
//! id(a) < id(c) RETURN count(*)`, see [`parse`]); a graph is a set of typed, directed
//! (or undirected) edges between integer node ids, with labels on nodes ([`graph`],
//! read by [`load`]). Matching is a worst-case-optimal join: the graph's adjacency is
//! stored as CSR with sorted lists per (direction, edge type), which is a trie of the
//! edge relation, and the search binds one pattern node at a time to the intersection
//! of its bound neighbours' lists ([`plan`] chooses the order and the candidate
//! filters, [`exec`] runs it in parallel, [`intersect`] intersects).
//!
//! This is a crate of its own, not part of the Datalog pipeline, because nothing in it
//! needs relations, strata or backends: it shares only diagnostics with the rest
//! (`fixlog-syntax`), so the Datalog planner and the matcher can change independently.
//!
//! ```
//! use fixlog_match::{Graph, LoadOptions, Pattern, Semantics};
//!
//! let graph = Graph::from_text("1 2\n2 3\n3 1\n", None, &LoadOptions { undirected: true }).unwrap();
//! let triangle = Pattern::parse("MATCH (a)--(b)--(c)--(a) RETURN count(*)").unwrap();
//! assert_eq!(graph.count(&triangle).unwrap(), 6); // every triangle once per automorphism
//! let once = Pattern::parse(
//!     "MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN a, b, c",
//! ).unwrap();
//! let mut rows = Vec::new();
//! graph.for_each_row(&once, Semantics::Iso, |row| { rows.push(row.to_vec()); true });
//! assert_eq!(rows, vec![vec![1, 2, 3]]);
//! ```

pub mod clique;
mod csr;
pub mod cycle;
pub mod exec;
pub mod graph;
pub mod intersect;
pub mod load;
pub mod order;
pub mod parse;
pub mod pattern;
pub mod plan;
mod query;

pub use cycle::CountOverflow;
pub use graph::{Graph, GraphBuilder};
pub use load::{GraphError, LoadOptions};
pub use parse::PatternError;
pub use pattern::{Pattern, Semantics};
pub use query::CountPath;
