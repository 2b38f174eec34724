//! The graph store: nodes, labels and edges, with adjacency in compressed sparse rows.
//!
//! The matcher is a worst-case-optimal join, and its one access path is "the sorted
//! neighbours of node `u` along edges of type `t` in direction `d`": the sorted
//! adjacency lists of a CSR are a trie of the edge relation on `(u, v)`, so
//! intersecting several of them is the join's extension step. One [`Adjacency`] exists
//! per `(direction, type)` a pattern uses; each is built the first time a pattern asks
//! for it and kept (behind a mutex, as `Arc`s) for every later pattern on the same graph.
//!
//! Node ids are non-negative integers (`u64`). Inside, nodes are numbered `0..n` in
//! increasing id order, so comparing internal numbers compares ids: `WHERE id(a) <
//! id(b)` works on internal numbers and sorted lists stay sorted by id. The one
//! exception is [`Graph::degree_ordered`], a copy numbered by degree rank, on which
//! counts run when the answer cannot depend on the order ([`crate::order`]).
//!
//! A graph is a set of edges: repeated `(src, dst, type)` edges are stored once, and
//! an edge without a type is distinct from typed ones. Matches are maps of pattern
//! nodes to graph nodes, and pattern edges only ask whether an edge exists, so
//! parallel edges (of several types) never multiply a count. Self-loops are kept
//! (a self-loop is in its node's own adjacency list).

use crate::csr;
use crate::cycle::CycleLists;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};

/// Below these sizes a pass runs on one thread: splitting small work costs more than
/// it saves (each stolen piece waits for a thread to wake up, which on a busy machine
/// can take milliseconds).
pub(crate) const PARALLEL_MIN_EDGES: usize = 1 << 18;
pub(crate) const PARALLEL_MIN_NODES: usize = 1 << 14;
/// Edges from which degrees are counted on every core (atomic increments; see
/// `Graph::degrees_as_read`).
const PARALLEL_MIN_DEGREE_EDGES: usize = 1 << 22;
/// Edges per piece of parallel work in a pass over all edges.
const EDGE_GRAIN: usize = 1 << 12;

/// Internal node number (`0..node_count`, in increasing id order).
pub type NodeIndex = u32;

/// Which neighbours of a node an adjacency list holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// Targets of edges leaving the node.
    Out,
    /// Sources of edges entering the node.
    In,
    /// Both (each neighbour once).
    Both,
}

/// One adjacency relation: `(direction, edge type)`, `None` for edges of any type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AdjacencyKey {
    pub direction: Direction,
    pub edge_type: Option<u32>,
}

/// Sorted, duplicate-free neighbour lists of every node (CSR).
#[derive(Debug, Default)]
pub struct Adjacency {
    /// `targets[offsets[u]..offsets[u + 1]]` are the neighbours of `u`.
    offsets: Vec<usize>,
    targets: Vec<NodeIndex>,
}

impl Adjacency {
    #[inline]
    pub fn neighbours(&self, node: NodeIndex) -> &[NodeIndex] {
        let u = node as usize;
        &self.targets[self.offsets[u]..self.offsets[u + 1]]
    }

    #[inline]
    pub fn degree(&self, node: NodeIndex) -> usize {
        let u = node as usize;
        self.offsets[u + 1] - self.offsets[u]
    }

    pub fn edge_count(&self) -> usize {
        self.targets.len()
    }

    /// The CSR arrays: `targets[offsets[u]..offsets[u + 1]]` are the neighbours of `u`
    /// (for a device copy).
    pub fn csr(&self) -> (&[usize], &[NodeIndex]) {
        (&self.offsets, &self.targets)
    }

    /// The CSR of `(node, neighbour)` pairs over nodes `0..node_count`: sorted,
    /// duplicate-free lists, built on every core when there are many pairs. Errors when
    /// a pair's node is not below `node_count`.
    pub fn from_pairs(
        node_count: usize,
        pairs: &[(NodeIndex, NodeIndex)],
    ) -> Result<Adjacency, String> {
        Adjacency::from_pairs_with(node_count, pairs, parallel_min_items())
    }

    /// [`Adjacency::from_pairs`], built in parallel when there are at least
    /// `parallel_min_pairs` pairs (`0`: always, `usize::MAX`: never; for tests and
    /// benchmarks). The result does not depend on it.
    pub fn from_pairs_with(
        node_count: usize,
        pairs: &[(NodeIndex, NodeIndex)],
        parallel_min_pairs: usize,
    ) -> Result<Adjacency, String> {
        let out_of_range = pairs
            .par_iter()
            .with_min_len(PARALLEL_MIN_EDGES)
            .find_any(|&&(u, _)| u as usize >= node_count);
        if let Some(&(u, v)) = out_of_range {
            return Err(format!(
                "pair ({u}, {v}): node {u} is not below the node count {node_count}"
            ));
        }
        Ok(Adjacency::build(
            node_count,
            pairs,
            |&pair| Some(pair),
            parallel_min_pairs,
        ))
    }

    /// The CSR of the pairs `pairs` gives for each of `items` (see [`crate::csr`]):
    /// in parallel when there are at least `parallel_min_items` items.
    fn build<'a, T, F, I>(
        node_count: usize,
        items: &'a [T],
        pairs: F,
        parallel_min_items: usize,
    ) -> Adjacency
    where
        T: Sync,
        F: Fn(&'a T) -> I + Sync,
        I: IntoIterator<Item = (NodeIndex, NodeIndex)>,
    {
        let csr::Csr { offsets, targets } =
            csr::build(node_count, items, pairs, parallel_min_items);
        Adjacency { offsets, targets }
    }
}

/// How many items (edges) a CSR build needs before it runs in parallel: never on one
/// thread.
fn parallel_min_items() -> usize {
    if rayon::current_num_threads() > 1 {
        PARALLEL_MIN_EDGES
    } else {
        usize::MAX
    }
}

/// Interned names (labels or edge types) and their numbers.
#[derive(Clone, Debug, Default)]
pub struct Names {
    names: Vec<String>,
    index: HashMap<String, u32>,
}

impl Names {
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }

    pub fn get(&self, name: &str) -> Option<u32> {
        self.index.get(name).copied()
    }

    pub fn name(&self, i: u32) -> &str {
        self.names
            .get(i as usize)
            .map(String::as_str)
            .unwrap_or("?")
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// Collects nodes, labels and edges by external id; [`GraphBuilder::build`] numbers the
/// nodes and makes the [`Graph`].
#[derive(Debug, Default)]
pub struct GraphBuilder {
    undirected: bool,
    /// `(src, dst, type)`, in pieces as they were added (one per chunk of a file the
    /// parallel reader parsed: they are numbered in parallel and never concatenated);
    /// `type` is `u32::MAX` for an edge without one.
    edges: Vec<Vec<(u64, u64, u32)>>,
    /// Untyped edges whose ids fit in 32 bits (`(src, dst, u32::MAX)`), as the file
    /// reader parses plain edge lists: numbered in place into the graph's edge list,
    /// so that loading holds 12 bytes an edge instead of 24 and then 12 more.
    plain: Vec<(u32, u32, u32)>,
    /// `(node, label)`; label `u32::MAX` declares a node without labels.
    labels: Vec<(u64, u32)>,
    label_names: Names,
    type_names: Names,
}

const NO_TYPE: u32 = u32::MAX;
const NO_LABEL: u32 = u32::MAX;

impl GraphBuilder {
    /// `undirected`: every edge is also its reverse (`--undirected`).
    pub fn new(undirected: bool) -> GraphBuilder {
        GraphBuilder {
            undirected,
            ..GraphBuilder::default()
        }
    }

    pub fn add_edge(&mut self, src: u64, dst: u64, edge_type: Option<&str>) {
        let t = match edge_type {
            Some(name) => self.type_names.intern(name),
            None => NO_TYPE,
        };
        match self.edges.last_mut() {
            Some(piece) => piece.push((src, dst, t)),
            None => self.edges.push(vec![(src, dst, t)]),
        }
    }

    /// Declares `node` (a node of the graph even without edges).
    pub fn add_node(&mut self, node: u64) {
        self.labels.push((node, NO_LABEL));
    }

    pub fn add_label(&mut self, node: u64, label: &str) {
        let l = self.label_names.intern(label);
        self.labels.push((node, l));
    }

    /// Edges added so far (before deduplication).
    pub fn edge_count(&self) -> usize {
        self.plain.len() + self.edges.iter().map(Vec::len).sum::<usize>()
    }

    /// Adds untyped edges `(src, dst, u32::MAX)` with 32-bit ids (the file reader's
    /// plain edge lists).
    pub(crate) fn add_plain_edges(&mut self, mut edges: Vec<(u32, u32, u32)>) {
        if self.plain.is_empty() {
            self.plain = edges;
        } else {
            self.plain.append(&mut edges);
        }
    }

    /// Adds pieces of edges already split into `(src, dst, type number)`, each with the
    /// type names its numbers index (`u32::MAX`: no type); used by the parallel file
    /// reader. The pieces are kept as they are (type numbers made global in parallel).
    pub(crate) fn add_numbered_edges(&mut self, pieces: Vec<crate::load::EdgeChunk<'_>>) {
        let mut numbers = Vec::with_capacity(pieces.len());
        let mut edges = Vec::with_capacity(pieces.len());
        for (piece, types) in pieces {
            let global: Vec<u32> = types.iter().map(|t| self.type_names.intern(t)).collect();
            numbers.push(global);
            edges.push(piece);
        }
        edges
            .par_iter_mut()
            .zip(numbers.par_iter())
            .filter(|(_, global)| !global.is_empty())
            .for_each(|(piece, global)| {
                for edge in piece.iter_mut() {
                    if edge.2 != NO_TYPE {
                        edge.2 = global[edge.2 as usize];
                    }
                }
            });
        self.edges
            .extend(edges.into_iter().filter(|piece| !piece.is_empty()));
    }

    /// Numbers the nodes in id order; adjacency lists are built when patterns need
    /// them. Errors when there are more than `u32::MAX - 1` nodes.
    pub fn build(self) -> Result<Graph, String> {
        let parallel = self.edge_count() >= PARALLEL_MIN_EDGES && rayon::current_num_threads() > 1;
        self.build_with(parallel)
    }

    /// [`GraphBuilder::build`], its passes over all edges on every core or on this
    /// thread (the same graph either way).
    fn build_with(self, parallel: bool) -> Result<Graph, String> {
        let edge_count = self.edge_count();
        let endpoints = edge_count * 2 + self.labels.len();
        let max_id = if parallel {
            self.edges
                .par_iter()
                .flat_map(|piece| piece.par_iter().with_min_len(EDGE_GRAIN))
                .map(|&(s, d, _)| s.max(d))
                .max()
                .max(
                    self.plain
                        .par_iter()
                        .with_min_len(EDGE_GRAIN)
                        .map(|&(s, d, _)| u64::from(s.max(d)))
                        .max(),
                )
        } else {
            self.edges
                .iter()
                .flatten()
                .map(|&(s, d, _)| s.max(d))
                .chain(self.plain.iter().map(|&(s, d, _)| u64::from(s.max(d))))
                .max()
        }
        .unwrap_or(0)
        .max(self.labels.iter().map(|&(n, _)| n).max().unwrap_or(0));
        // Dense ids (the usual case): a table from id to number, no sort.
        let (ids, numbering) = if max_id < 4 * endpoints as u64 + 1024 && max_id < u32::MAX as u64 {
            let (ids, table) = if parallel {
                self.number_dense_in_parallel(max_id as usize + 1)
            } else {
                let mut table = vec![0 as NodeIndex; max_id as usize + 1];
                for &(s, d, _) in self.edges.iter().flatten() {
                    table[s as usize] = 1;
                    table[d as usize] = 1;
                }
                for &(s, d, _) in &self.plain {
                    table[s as usize] = 1;
                    table[d as usize] = 1;
                }
                for &(n, _) in &self.labels {
                    table[n as usize] = 1;
                }
                let mut ids = Vec::new();
                for (id, slot) in table.iter_mut().enumerate() {
                    if *slot == 1 {
                        *slot = ids.len() as NodeIndex;
                        ids.push(id as u64);
                    }
                }
                (ids, table)
            };
            (ids, Numbering::Table(table))
        } else {
            let mut ids: Vec<u64> = Vec::with_capacity(endpoints);
            for piece in &self.edges {
                if parallel {
                    ids.par_extend(
                        (0..2 * piece.len())
                            .into_par_iter()
                            .with_min_len(EDGE_GRAIN)
                            .map(|i| {
                                let (s, d, _) = piece[i / 2];
                                if i % 2 == 0 {
                                    s
                                } else {
                                    d
                                }
                            }),
                    );
                } else {
                    ids.extend(piece.iter().flat_map(|&(s, d, _)| [s, d]));
                }
            }
            ids.extend(
                self.plain
                    .iter()
                    .flat_map(|&(s, d, _)| [u64::from(s), u64::from(d)]),
            );
            ids.extend(self.labels.iter().map(|&(n, _)| n));
            ids.par_sort_unstable();
            ids.dedup();
            (ids, Numbering::Search)
        };
        if ids.len() >= u32::MAX as usize {
            return Err(format!(
                "the graph has {} nodes; at most {} are supported",
                ids.len(),
                u32::MAX - 1
            ));
        }
        // The plain edges numbered in place, then the pieces numbered into the same
        // list piece by piece, each piece freed once numbered.
        let mut edges: Vec<(NodeIndex, NodeIndex, u32)> = self.plain;
        let renumber = |e: &mut (u32, u32, u32)| {
            e.0 = numbering.index(&ids, u64::from(e.0));
            e.1 = numbering.index(&ids, u64::from(e.1));
        };
        if parallel {
            edges
                .par_iter_mut()
                .with_min_len(EDGE_GRAIN)
                .for_each(renumber);
        } else {
            edges.iter_mut().for_each(renumber);
        }
        edges.reserve_exact(edge_count - edges.len());
        let number =
            |&(s, d, t): &(u64, u64, u32)| (numbering.index(&ids, s), numbering.index(&ids, d), t);
        for piece in self.edges {
            if parallel {
                edges.par_extend(piece.par_iter().with_min_len(EDGE_GRAIN).map(number));
            } else {
                edges.extend(piece.iter().map(number));
            }
        }
        drop(numbering);
        let has_self_loops = if parallel {
            edges
                .par_iter()
                .with_min_len(EDGE_GRAIN)
                .any(|&(s, d, _)| s == d)
        } else {
            edges.iter().any(|&(s, d, _)| s == d)
        };
        let node_labels: Vec<(NodeIndex, u32)> = self
            .labels
            .iter()
            .filter(|&&(_, l)| l != NO_LABEL)
            .map(|&(n, l)| (index_of_sorted(&ids, n), l))
            .collect();
        let labels = Adjacency::build(
            ids.len(),
            &node_labels,
            |&pair| Some(pair),
            parallel_min_items(),
        );
        Ok(Graph {
            ids,
            labels,
            label_names: self.label_names,
            type_names: self.type_names,
            edges,
            undirected: self.undirected,
            has_self_loops,
            adjacency: Mutex::new(HashMap::new()),
            by_degree: false,
            degree_ordered: OnceLock::new(),
            forward: OnceLock::new(),
            instance: next_instance(),
            cycle_lists: OnceLock::new(),
        })
    }

    /// Ids dense enough for a table (`table_len` entries, from 0 to the largest id):
    /// the ids in use, ascending, and the table from id to number. The ids are marked
    /// in parallel (a plain store of 1, no read-modify-write: no thread waits on
    /// another), then numbered in order in blocks.
    fn number_dense_in_parallel(&self, table_len: usize) -> (Vec<u64>, Vec<NodeIndex>) {
        let marks: Vec<AtomicU32> = (0..table_len)
            .into_par_iter()
            .with_min_len(EDGE_GRAIN)
            .map(|_| AtomicU32::new(0))
            .collect();
        let mark = |id: u64| {
            let cell = &marks[id as usize];
            if cell.load(Relaxed) == 0 {
                cell.store(1, Relaxed);
            }
        };
        self.edges.par_iter().for_each(|piece| {
            piece
                .par_iter()
                .with_min_len(EDGE_GRAIN)
                .for_each(|&(s, d, _)| {
                    mark(s);
                    mark(d);
                });
        });
        self.plain
            .par_iter()
            .with_min_len(EDGE_GRAIN)
            .for_each(|&(s, d, _)| {
                mark(u64::from(s));
                mark(u64::from(d));
            });
        for &(n, _) in &self.labels {
            mark(n);
        }
        let mut table: Vec<NodeIndex> = marks.into_iter().map(AtomicU32::into_inner).collect();
        const BLOCK: usize = 1 << 16;
        let in_block: Vec<usize> = table
            .par_chunks(BLOCK)
            .map(|block| block.iter().filter(|&&m| m == 1).count())
            .collect();
        let mut ids = vec![0u64; in_block.iter().sum()];
        let mut out = Vec::with_capacity(in_block.len());
        let mut rest = ids.as_mut_slice();
        let mut first = 0;
        for &count in &in_block {
            let (block_ids, tail) = rest.split_at_mut(count);
            out.push((block_ids, first));
            rest = tail;
            first += count;
        }
        table.par_chunks_mut(BLOCK).zip(out).enumerate().for_each(
            |(k, (block, (block_ids, first)))| {
                let mut next = 0;
                for (j, slot) in block.iter_mut().enumerate() {
                    if *slot == 1 {
                        *slot = (first + next) as NodeIndex;
                        block_ids[next] = (k * BLOCK + j) as u64;
                        next += 1;
                    }
                }
            },
        );
        (ids, table)
    }
}

fn index_of_sorted(ids: &[u64], id: u64) -> NodeIndex {
    ids.partition_point(|&x| x < id) as NodeIndex
}

/// External id to internal number: a direct table when ids are dense, else a binary
/// search in the sorted ids.
enum Numbering {
    Table(Vec<NodeIndex>),
    Search,
}

impl Numbering {
    #[inline]
    fn index(&self, ids: &[u64], id: u64) -> NodeIndex {
        match self {
            Numbering::Table(t) => t[id as usize],
            Numbering::Search => index_of_sorted(ids, id),
        }
    }
}

/// A graph loaded once, matched against many patterns (see the crate docs).
#[derive(Debug)]
pub struct Graph {
    /// External id of each node, ascending.
    ids: Vec<u64>,
    /// Sorted label numbers of each node.
    labels: Adjacency,
    pub(crate) label_names: Names,
    pub(crate) type_names: Names,
    /// `(src, dst, type)` as read (repeats included; each adjacency list drops them).
    edges: Vec<(NodeIndex, NodeIndex, u32)>,
    undirected: bool,
    has_self_loops: bool,
    adjacency: Mutex<HashMap<AdjacencyKey, Arc<Adjacency>>>,
    /// Whether nodes are numbered by degree rank instead of by id (the copy of
    /// [`Graph::degree_ordered`]): then `ids` is not sorted.
    by_degree: bool,
    /// The degree-ordered copy, built on first use and kept for every later count.
    degree_ordered: OnceLock<Box<Graph>>,
    /// The forward lists in degree order ([`Graph::forward_by_degree`]), built on first
    /// use.
    forward: OnceLock<Arc<Adjacency>>,
    /// This graph's number in the process ([`Graph::instance`]).
    instance: u64,
    /// The lists of the 4-cycle count ([`Graph::cycle_lists`]), built on first use.
    cycle_lists: OnceLock<CycleLists>,
}

/// The next [`Graph::instance`].
static NEXT_INSTANCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn next_instance() -> u64 {
    NEXT_INSTANCE.fetch_add(1, Relaxed)
}

impl Graph {
    pub fn node_count(&self) -> usize {
        self.ids.len()
    }

    /// A number no other graph of this process has (a degree-ordered copy included):
    /// for caches of what was derived from a graph elsewhere (the GPU's forward lists).
    pub fn instance(&self) -> u64 {
        self.instance
    }

    /// The number of edges as read (repeats, both directions and self-loops as they
    /// were in the input).
    pub fn edges_read(&self) -> usize {
        self.edges.len()
    }

    /// The edges as read, as `[src, dst]` node numbers (types dropped), written on
    /// every core (a serial fill of a fresh 256 MB vector spends most of its time in
    /// page faults); `None` where the system refuses the memory.
    pub fn edge_pairs(&self) -> Option<Vec<[NodeIndex; 2]>> {
        let mut pairs = Vec::new();
        pairs.try_reserve_exact(self.edges.len()).ok()?;
        self.edges
            .par_iter()
            .with_min_len(EDGE_GRAIN)
            .map(|&(s, d, _)| [s, d])
            .collect_into_vec(&mut pairs);
        Some(pairs)
    }

    /// [`Graph::edge_count`] where it is known without building an adjacency.
    pub fn edge_count_if_known(&self) -> Option<usize> {
        let key = self.canonical(AdjacencyKey {
            direction: Direction::Out,
            edge_type: None,
        });
        let built = self
            .built_adjacency(key)
            .or_else(|| self.degree_ordered.get()?.built_adjacency(key));
        if let Some(adjacency) = built {
            return Some(adjacency.edge_count());
        }
        // Undirected, the forward lists hold every edge but self-loops once, the lists of
        // the 4-cycle count every edge but self-loops both ways.
        match (self.forward.get(), self.cycle_lists.get()) {
            (Some(forward), _) if self.undirected => {
                Some(2 * forward.edge_count() + self.self_loop_nodes())
            }
            (_, Some(lists)) if self.undirected => {
                Some(lists.entry_count() + self.self_loop_nodes())
            }
            _ => None,
        }
    }

    /// Distinct `(src, dst)` pairs, whatever their types; in an undirected graph both
    /// directions of every edge (a self-loop once).
    ///
    /// Read from the adjacency already built here or on the degree-ordered copy (a
    /// count in degree order builds only the copy's: the same edges), or from the
    /// forward lists of a clique count, else built here.
    pub fn edge_count(&self) -> usize {
        self.edge_count_if_known().unwrap_or_else(|| {
            self.adjacency(self.canonical(AdjacencyKey {
                direction: Direction::Out,
                edge_type: None,
            }))
            .edge_count()
        })
    }

    /// The adjacency for `key` if it was built already.
    fn built_adjacency(&self, key: AdjacencyKey) -> Option<Arc<Adjacency>> {
        let built = match self.adjacency.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        built.get(&self.canonical(key)).map(Arc::clone)
    }

    pub fn is_undirected(&self) -> bool {
        self.undirected
    }

    pub fn has_self_loops(&self) -> bool {
        self.has_self_loops
    }

    /// The external id of internal node `node`.
    #[inline]
    pub fn id(&self, node: NodeIndex) -> u64 {
        self.ids[node as usize]
    }

    /// The internal number of external id `id`, if the graph has that node.
    pub fn index_of(&self, id: u64) -> Option<NodeIndex> {
        if self.by_degree {
            return self
                .ids
                .iter()
                .position(|&x| x == id)
                .map(|i| i as NodeIndex);
        }
        self.ids.binary_search(&id).ok().map(|i| i as NodeIndex)
    }

    /// How many nodes have an id below `id` (the first internal number `>= id`). Only
    /// meaningful in id order: the degree-ordered copy is never planned with constant
    /// comparisons.
    pub fn count_below(&self, id: u64) -> NodeIndex {
        debug_assert!(!self.by_degree, "count_below on the degree-ordered copy");
        self.ids.partition_point(|&x| x < id) as NodeIndex
    }

    /// Whether internal numbers are degree ranks (this is a [`Graph::degree_ordered`]
    /// copy) rather than positions in id order.
    pub fn is_degree_ordered(&self) -> bool {
        self.by_degree
    }

    /// The graph with its nodes numbered by degree rank: ascending degree (edge ends as
    /// read, in and out, any edge type: a repeated edge counts each time it is read),
    /// ties by id; the same ids, labels and edges. Built on first use (`O(m)` plus a
    /// sort of the nodes) and kept beside this graph for every later count, with
    /// adjacencies of its own (built when a pattern needs them, as here). Counting uses it when that cannot change the answer
    /// ([`crate::order`]): comparisons of internal numbers then compare degree ranks.
    /// On the copy itself this is the copy.
    pub fn degree_ordered(&self) -> &Graph {
        if self.by_degree {
            return self;
        }
        self.degree_ordered
            .get_or_init(|| Box::new(self.build_degree_ordered()))
    }

    /// Each node's edge ends as read (in and out, any edge type: a repeated edge counts
    /// each time it is read). Needs no adjacency; ranking by it is a total order like
    /// any other, which is all a count in degree order needs.
    ///
    /// On one thread below `PARALLEL_MIN_DEGREE_EDGES`: every parallel increment is an
    /// atomic read-modify-write, which made the pass about 5 times slower on two
    /// threads than on one at 367K edges (email-Enron: 2.0 ms against 0.4 ms).
    fn degrees_as_read(&self) -> Vec<usize> {
        let n = self.ids.len();
        if self.edges.len() >= parallel_min_items().max(PARALLEL_MIN_DEGREE_EDGES) {
            let cells: Vec<AtomicUsize> = (0..n)
                .into_par_iter()
                .with_min_len(EDGE_GRAIN)
                .map(|_| AtomicUsize::new(0))
                .collect();
            self.edges
                .par_iter()
                .with_min_len(EDGE_GRAIN)
                .for_each(|&(s, d, _)| {
                    cells[s as usize].fetch_add(1, Relaxed);
                    cells[d as usize].fetch_add(1, Relaxed);
                });
            cells.into_iter().map(AtomicUsize::into_inner).collect()
        } else {
            let mut degree = vec![0usize; n];
            for &(s, d, _) in &self.edges {
                degree[s as usize] += 1;
                degree[d as usize] += 1;
            }
            degree
        }
    }

    /// The forward lists in degree order: node `u`'s list holds the degree ranks
    /// (ascending degree as read, ties by number, see [`Graph::degree_ordered`]) of its
    /// neighbours (either direction, any type) ranked above it, indexed by `u`'s own
    /// rank; self-loops are left out. Built on first use straight from the edges (one
    /// pair per edge, half a full adjacency's) and kept: what [`crate::clique`] counts
    /// on, on the CPU ([`Graph::count_with`]) and on the GPU (the `fixlog` crate's
    /// `graph::gpu`, which uploads these very lists).
    ///
    /// Its node numbers are ranks, not the graph's numbers: each list is sorted by rank
    /// and the `k`-cliques of the graph are exactly the chains `r_1 < ... < r_k` in which
    /// every `r_j` is in the list of every earlier `r_i`. Held as an `Arc` so that a
    /// device copy can be keyed on it (the same `Arc`: the same lists) like the
    /// adjacencies of [`Graph::adjacency`].
    pub fn forward_by_degree(&self) -> &Arc<Adjacency> {
        self.forward.get_or_init(|| {
            let rank = self.degree_ranks();
            Arc::new(Adjacency::build(
                self.ids.len(),
                &self.edges,
                |&(s, d, _)| {
                    let (a, b) = (rank[s as usize], rank[d as usize]);
                    (a != b).then(|| (a.min(b), a.max(b)))
                },
                parallel_min_items(),
            ))
        })
    }

    /// Each node's degree rank: ascending degree as read, ties by number (a counting
    /// sort on degree, stable in node order), as [`Graph::degree_ordered`] ranks.
    fn degree_ranks(&self) -> Vec<NodeIndex> {
        let degree = self.degrees_as_read();
        let top = degree.iter().copied().max().unwrap_or(0);
        let mut next = vec![0 as NodeIndex; top + 2];
        for &d in &degree {
            next[d + 1] += 1;
        }
        for d in 1..next.len() {
            next[d] += next[d - 1];
        }
        degree
            .iter()
            .map(|&d| {
                let r = next[d];
                next[d] += 1;
                r
            })
            .collect()
    }

    /// The lists the 4-cycle count walks ([`crate::cycle`]): the simple undirected
    /// graph (edges of any type and direction, self-loops and repeats dropped) with
    /// nodes numbered by degree rank (as [`Graph::forward_by_degree`] ranks them), each
    /// node's neighbours split into those whose number here (its id order; on the
    /// degree-ordered copy, its rank there) is below the node's and those above, each
    /// part sorted by rank. Built on first use straight from the edges and kept.
    pub fn cycle_lists(&self) -> &CycleLists {
        self.cycle_lists.get_or_init(|| {
            let n = self.ids.len();
            let rank = self.degree_ranks();
            let mut node = vec![0 as NodeIndex; n];
            for (u, &r) in rank.iter().enumerate() {
                node[r as usize] = u as NodeIndex;
            }
            let csr::Csr {
                offsets,
                mut targets,
            } = csr::build(
                n,
                &self.edges,
                |&(s, d, _)| {
                    let (a, b) = (rank[s as usize], rank[d as usize]);
                    [(a, b), (b, a)]
                        .into_iter()
                        .take(if a != b { 2 } else { 0 })
                },
                parallel_min_items(),
            );
            drop(rank);
            let mut below = vec![0u32; n];
            // Each list cut into the neighbours numbered below the node, then above, each
            // part keeping the rank order (a stable partition).
            let partition = |r: usize, list: &mut [NodeIndex], scratch: &mut Vec<NodeIndex>| {
                let me = node[r];
                scratch.clear();
                let mut kept = 0;
                for i in 0..list.len() {
                    let w = list[i];
                    if node[w as usize] < me {
                        list[kept] = w;
                        kept += 1;
                    } else {
                        scratch.push(w);
                    }
                }
                list[kept..].copy_from_slice(scratch);
                kept as u32
            };
            let mut lists: Vec<&mut [NodeIndex]> = Vec::with_capacity(n);
            let mut rest = targets.as_mut_slice();
            for r in 0..n {
                let (list, tail) =
                    std::mem::take(&mut rest).split_at_mut(offsets[r + 1] - offsets[r]);
                lists.push(list);
                rest = tail;
            }
            if offsets[n] >= parallel_min_items() {
                lists
                    .into_par_iter()
                    .zip(below.par_iter_mut())
                    .enumerate()
                    .with_min_len(PARALLEL_MIN_NODES)
                    .for_each_init(Vec::new, |scratch, (r, (list, kept))| {
                        *kept = partition(r, list, scratch);
                    });
            } else {
                let mut scratch = Vec::new();
                for (r, (list, kept)) in lists.into_iter().zip(below.iter_mut()).enumerate() {
                    *kept = partition(r, list, &mut scratch);
                }
            }
            CycleLists {
                offsets,
                targets,
                below,
            }
        })
    }

    /// How many nodes have a self-loop.
    fn self_loop_nodes(&self) -> usize {
        if !self.has_self_loops {
            return 0;
        }
        let mut seen = vec![false; self.ids.len()];
        let mut count = 0;
        for &(s, d, _) in &self.edges {
            if s == d && !seen[s as usize] {
                seen[s as usize] = true;
                count += 1;
            }
        }
        count
    }

    fn build_degree_ordered(&self) -> Graph {
        let n = self.ids.len();
        let degree = self.degrees_as_read();
        // order[rank] = node; rank[node].
        let mut order: Vec<NodeIndex> = (0..n as NodeIndex).collect();
        order.par_sort_unstable_by_key(|&u| (degree[u as usize], u));
        drop(degree);
        let rank: Vec<AtomicU32> = (0..n)
            .into_par_iter()
            .with_min_len(PARALLEL_MIN_NODES)
            .map(|_| AtomicU32::new(0))
            .collect();
        order
            .par_iter()
            .with_min_len(PARALLEL_MIN_NODES)
            .enumerate()
            .for_each(|(r, &u)| rank[u as usize].store(r as NodeIndex, Relaxed));
        let rank: Vec<NodeIndex> = rank.into_iter().map(AtomicU32::into_inner).collect();
        let ids = order
            .par_iter()
            .with_min_len(PARALLEL_MIN_NODES)
            .map(|&u| self.ids[u as usize])
            .collect();
        // Without labels (the usual case) no pass over the nodes.
        let labels = if self.labels.edge_count() == 0 {
            Adjacency {
                offsets: vec![0; n + 1],
                targets: Vec::new(),
            }
        } else {
            Adjacency::build(
                n,
                &order,
                |&u| {
                    let r = rank[u as usize];
                    self.labels.neighbours(u).iter().map(move |&l| (r, l))
                },
                parallel_min_items(),
            )
        };
        let edges = self
            .edges
            .par_iter()
            .with_min_len(PARALLEL_MIN_EDGES)
            .map(|&(s, d, t)| (rank[s as usize], rank[d as usize], t))
            .collect();
        Graph {
            ids,
            labels,
            label_names: self.label_names.clone(),
            type_names: self.type_names.clone(),
            edges,
            undirected: self.undirected,
            has_self_loops: self.has_self_loops,
            adjacency: Mutex::new(HashMap::new()),
            by_degree: true,
            degree_ordered: OnceLock::new(),
            forward: OnceLock::new(),
            instance: next_instance(),
            cycle_lists: OnceLock::new(),
        }
    }

    /// The sorted label numbers of `node`.
    pub fn node_labels(&self, node: NodeIndex) -> &[u32] {
        self.labels.neighbours(node)
    }

    pub fn label_number(&self, label: &str) -> Option<u32> {
        self.label_names.get(label)
    }

    pub fn edge_type_number(&self, edge_type: &str) -> Option<u32> {
        self.type_names.get(edge_type)
    }

    /// The key an adjacency is stored under: in an undirected graph every direction is
    /// the same list.
    pub fn canonical(&self, key: AdjacencyKey) -> AdjacencyKey {
        if self.undirected {
            AdjacencyKey {
                direction: Direction::Out,
                ..key
            }
        } else {
            key
        }
    }

    /// The adjacency for `key`, built on first use and then shared.
    pub fn adjacency(&self, key: AdjacencyKey) -> Arc<Adjacency> {
        let key = self.canonical(key);
        let mut built = match self.adjacency.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(a) = built.get(&key) {
            return Arc::clone(a);
        }
        let adjacency = Arc::new(self.build_adjacency(key));
        built.insert(key, Arc::clone(&adjacency));
        adjacency
    }

    fn build_adjacency(&self, key: AdjacencyKey) -> Adjacency {
        self.build_adjacency_with(key, parallel_min_items())
    }

    /// Builds the adjacency for `key` afresh, without keeping it ([`Graph::adjacency`]
    /// builds it once and shares it): in parallel when the graph has at least
    /// `parallel_min_edges` edges as read (`0`: always, `usize::MAX`: never). The
    /// result does not depend on it. For tests and benchmarks.
    pub fn build_adjacency_with(&self, key: AdjacencyKey, parallel_min_edges: usize) -> Adjacency {
        let n = self.ids.len();
        let edge_type = key.edge_type;
        let type_ok = move |t: u32| edge_type.is_none_or(|k| k == t);
        // Undirected: every edge both ways, whatever the key's direction.
        let direction = if self.undirected {
            Direction::Both
        } else {
            key.direction
        };
        let edges = self.edges.as_slice();
        let min = parallel_min_edges;
        // Both ways: `take` of an array, not `flatten` of an `Option` of one (with
        // which a serial build of 3.2M edges took five times as long).
        match direction {
            Direction::Out => {
                Adjacency::build(n, edges, |&(s, d, t)| type_ok(t).then_some((s, d)), min)
            }
            Direction::In => {
                Adjacency::build(n, edges, |&(s, d, t)| type_ok(t).then_some((d, s)), min)
            }
            Direction::Both => Adjacency::build(
                n,
                edges,
                |&(s, d, t)| {
                    [(s, d), (d, s)]
                        .into_iter()
                        .take(if type_ok(t) { 2 } else { 0 })
                },
                min,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// Neighbour lists by external id, from the edges as written.
    fn reference(
        edges: &[(u64, u64, Option<u32>)],
        undirected: bool,
        key: AdjacencyKey,
    ) -> Vec<(u64, BTreeSet<u64>)> {
        let mut lists: std::collections::BTreeMap<u64, BTreeSet<u64>> = Default::default();
        for &(s, d, t) in edges {
            lists.entry(s).or_default();
            lists.entry(d).or_default();
            if key.edge_type.is_some_and(|k| Some(k) != t) {
                continue;
            }
            let direction = if undirected {
                Direction::Both
            } else {
                key.direction
            };
            if direction != Direction::In {
                lists.entry(s).or_default().insert(d);
            }
            if direction != Direction::Out {
                lists.entry(d).or_default().insert(s);
            }
        }
        lists.into_iter().collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Every adjacency of a random graph (repeated edges, self-loops, sparse ids,
        /// two edge types), built serially and in parallel, against sets per node.
        #[test]
        fn adjacencies_match_the_reference(
            raw in proptest::collection::vec((0u64..40, 0u64..40, 0u32..3), 0..300),
            spread in 1u64..1_000_000_000,
            undirected in any::<bool>(),
        ) {
            const TYPES: [&str; 2] = ["A", "B"];
            let edges: Vec<(u64, u64, Option<u32>)> = raw
                .iter()
                .map(|&(s, d, t)| (s * spread, d * spread, (t < 2).then_some(t)))
                .collect();
            let mut builder = GraphBuilder::new(undirected);
            for &(s, d, t) in &edges {
                builder.add_edge(s, d, t.map(|t| TYPES[t as usize]));
            }
            let graph = builder.build().map_err(TestCaseError::fail)?;
            for direction in [Direction::Out, Direction::In, Direction::Both] {
                for name in [None, Some("A"), Some("B")] {
                    let Some(edge_type) = name.map(|n| graph.edge_type_number(n)) else {
                        continue;
                    };
                    let key = AdjacencyKey { direction, edge_type };
                    // Types never read get no number: nothing to compare.
                    if name.is_some() && edge_type.is_none() {
                        continue;
                    }
                    let typed = name.map(|n| TYPES.iter().position(|&x| x == n).unwrap_or(0) as u32);
                    let expected = reference(
                        &edges,
                        undirected,
                        AdjacencyKey { direction, edge_type: typed },
                    );
                    for min in [0, usize::MAX] {
                        let adjacency = graph.build_adjacency_with(key, min);
                        let got: Vec<(u64, BTreeSet<u64>)> = (0..graph.node_count())
                            .map(|u| {
                                let list = adjacency.neighbours(u as NodeIndex);
                                prop_assert!(list.windows(2).all(|w| w[0] < w[1]));
                                Ok((
                                    graph.id(u as NodeIndex),
                                    list.iter().map(|&v| graph.id(v)).collect(),
                                ))
                            })
                            .collect::<Result<_, TestCaseError>>()?;
                        prop_assert_eq!(&got, &expected);
                    }
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Building on every core gives the graph a serial build gives: the same ids,
        /// numbers, edges, labels and types, from pieces as the file reader adds them
        /// (each with its own type numbering) and edges added one by one, with dense or
        /// sparse ids.
        #[test]
        fn parallel_build_is_the_serial_build(
            pieces in proptest::collection::vec(
                proptest::collection::vec((0u64..60, 0u64..60, 0u32..4), 0..80),
                0..5,
            ),
            loose in proptest::collection::vec((0u64..60, 0u64..60), 0..20),
            plain in proptest::collection::vec((0u32..60, 0u32..60), 0..80),
            labelled in proptest::collection::vec((0u64..70, 0usize..3), 0..20),
            spread in prop_oneof![Just(1u64), Just(3), Just(1u64 << 40)],
            undirected in any::<bool>(),
        ) {
            const TYPES: [&str; 3] = ["A", "B", "C"];
            let make = || {
                let mut builder = GraphBuilder::new(undirected);
                let numbered = pieces
                    .iter()
                    .enumerate()
                    .map(|(k, piece)| {
                        // Piece k numbers the types rotated by k; 3 is no type.
                        let types: Vec<&str> = (0..3).map(|i| TYPES[(i + k) % 3]).collect();
                        let edges = piece
                            .iter()
                            .map(|&(s, d, t)| (s * spread, d * spread, if t == 3 { NO_TYPE } else { t }))
                            .collect();
                        (edges, types)
                    })
                    .collect();
                builder.add_numbered_edges(numbered);
                for &(s, d) in &loose {
                    builder.add_edge(s * spread, d * spread, None);
                }
                // 32-bit ids: spread at most by 3.
                let narrow = spread.min(3) as u32;
                builder.add_plain_edges(
                    plain.iter().map(|&(s, d)| (s * narrow, d * narrow, NO_TYPE)).collect(),
                );
                for &(n, l) in &labelled {
                    builder.add_label(n * spread, ["x", "y", "z"][l]);
                }
                builder
            };
            let serial = make().build_with(false).map_err(TestCaseError::fail)?;
            let parallel = make().build_with(true).map_err(TestCaseError::fail)?;
            prop_assert_eq!(&serial.ids, &parallel.ids);
            prop_assert_eq!(&serial.edges, &parallel.edges);
            prop_assert_eq!(serial.labels.csr(), parallel.labels.csr());
            prop_assert_eq!(serial.has_self_loops, parallel.has_self_loops);
            prop_assert_eq!(&serial.type_names.names, &parallel.type_names.names);
            let expected_edges =
                pieces.iter().map(Vec::len).sum::<usize>() + loose.len() + plain.len();
            prop_assert_eq!(serial.edges.len(), expected_edges);
        }
    }

    #[test]
    fn from_pairs_checks_the_node_range() {
        assert!(Adjacency::from_pairs(3, &[(0, 7), (3, 1)]).is_err());
        let a = Adjacency::from_pairs(3, &[(2, 1), (0, 7), (2, 1), (2, 0)]).expect("in range");
        assert_eq!(a.csr(), (&[0, 1, 1, 3][..], &[7, 0, 1][..]));
    }
}
