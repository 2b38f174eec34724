//! What a parsed pattern means, independent of any graph: pattern nodes, pattern edges,
//! `WHERE` comparisons, what to return and how many rows.
//!
//! The parser ([`crate::parse`]) builds this form; the planner ([`crate::plan`]) reads
//! it against a graph. Keeping it apart from both lets one parsed pattern run against
//! many graphs and one graph run many patterns.

use crate::parse::PatternError;

/// How pattern nodes may map onto graph nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Semantics {
    /// Injective (non-induced subgraph isomorphism, "EMB"): distinct pattern nodes map to
    /// distinct graph nodes. A triangle pattern matches every triangle 6 times unless
    /// `WHERE` breaks the symmetry.
    #[default]
    Iso,
    /// Homomorphism (walk semantics, as Kùzu's `MATCH`): pattern nodes may share a
    /// graph node.
    Homo,
}

/// One pattern node: a named variable (`(a:Person)`) or an anonymous node (`()`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternNode {
    /// The variable, or `None` for an anonymous node.
    pub name: Option<String>,
    /// Labels the graph node must all have (from the node and from `WHERE a:Label`).
    pub labels: Vec<String>,
}

/// Which way a pattern edge points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EdgeDirection {
    /// `(from)-->(to)` (and `(to)<--(from)`, stored turned around).
    Directed,
    /// `(from)--(to)`: an edge either way.
    Undirected,
}

/// One pattern edge between two pattern nodes (indexes into [`Pattern::nodes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternEdge {
    pub from: usize,
    pub to: usize,
    pub direction: EdgeDirection,
    /// `-[:KNOWS]->`: the edge type the graph edge must have; `None` matches any type.
    pub edge_type: Option<String>,
}

/// A comparison operator of `WHERE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompareOp {
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
    Equal,
    NotEqual,
}

impl CompareOp {
    /// The operator with its operands swapped (`a < b` is `b > a`).
    pub fn flipped(self) -> CompareOp {
        match self {
            CompareOp::Less => CompareOp::Greater,
            CompareOp::LessEqual => CompareOp::GreaterEqual,
            CompareOp::Greater => CompareOp::Less,
            CompareOp::GreaterEqual => CompareOp::LessEqual,
            other => other,
        }
    }

    pub fn holds<T: Ord>(self, left: T, right: T) -> bool {
        match self {
            CompareOp::Less => left < right,
            CompareOp::LessEqual => left <= right,
            CompareOp::Greater => left > right,
            CompareOp::GreaterEqual => left >= right,
            CompareOp::Equal => left == right,
            CompareOp::NotEqual => left != right,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            CompareOp::Less => "<",
            CompareOp::LessEqual => "<=",
            CompareOp::Greater => ">",
            CompareOp::GreaterEqual => ">=",
            CompareOp::Equal => "=",
            CompareOp::NotEqual => "<>",
        }
    }
}

/// The right side of a `WHERE` comparison whose left side is `id(node)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdOperand {
    /// `id(other)`, another pattern node.
    Node(usize),
    /// A node id written in the pattern.
    Constant(u64),
}

/// `id(node) op operand`, as written or turned around so the node is on the left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdComparison {
    pub node: usize,
    pub op: CompareOp,
    pub operand: IdOperand,
}

/// What the pattern returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// `RETURN count(*)`: the number of matches.
    Count,
    /// `RETURN a, b`: one row per match with these pattern nodes' ids.
    Nodes(Vec<usize>),
}

/// A parsed pattern: `MATCH ... [WHERE ...] RETURN ... [LIMIT n]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// The text it was parsed from.
    pub text: String,
    /// Pattern nodes in order of first appearance.
    pub nodes: Vec<PatternNode>,
    pub edges: Vec<PatternEdge>,
    pub comparisons: Vec<IdComparison>,
    pub output: Output,
    /// `LIMIT n`: at most `n` rows (for `count(*)` the one row, so the count is whole).
    pub limit: Option<u64>,
}

impl Pattern {
    /// Parses a pattern (see the crate docs for the language); errors are rendered with
    /// the pattern's column and a caret.
    pub fn parse(text: &str) -> Result<Pattern, PatternError> {
        crate::parse::parse_pattern(text)
    }

    /// A name for pattern node `node` in messages: its variable, or `_N` (N its index)
    /// when anonymous.
    pub fn node_name(&self, node: usize) -> String {
        match self.nodes.get(node).and_then(|n| n.name.clone()) {
            Some(name) => name,
            None => format!("_{node}"),
        }
    }

    /// The `WHERE` comparisons as `(node, other node, op)`, when every one compares two
    /// pattern nodes (none a constant): the counting paths that depend only on the
    /// order of the ids a match takes (cliques, 4-cycles) need that.
    pub fn node_comparisons(&self) -> Option<Vec<(usize, usize, CompareOp)>> {
        self.comparisons
            .iter()
            .map(|c| match c.operand {
                IdOperand::Node(other) => Some((c.node, other, c.op)),
                IdOperand::Constant(_) => None,
            })
            .collect()
    }

    /// The names of the returned columns (empty for `count(*)`).
    pub fn columns(&self) -> Vec<String> {
        match &self.output {
            Output::Count => Vec::new(),
            Output::Nodes(nodes) => nodes.iter().map(|&n| self.node_name(n)).collect(),
        }
    }
}

impl std::str::FromStr for Pattern {
    type Err = PatternError;

    fn from_str(text: &str) -> Result<Pattern, PatternError> {
        Pattern::parse(text)
    }
}
