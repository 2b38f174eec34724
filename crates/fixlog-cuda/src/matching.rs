//! Graph pattern matching on the GPU (`fixlog match --backend cuda`): the level-wise
//! worst-case-optimal join of Wu, Zinn, Aref and Yalamanchili, run over the same plan
//! as the CPU matcher (`fixlog-match`), so both give the same counts and rows.
//!
//! The graph's adjacency lists (CSR: sorted, duplicate-free neighbours per node) are
//! uploaded once per graph ([`DeviceGraph`]). A plan is a list of steps
//! ([`StepProgram`]), one pattern node each; step `i` extends every partial match of
//! `i` graph nodes with the intersection of the neighbour lists of its bound pattern
//! neighbours (`kernels/match.cu`: a warp per partial match, the shortest list leads
//! and the others are binary-searched). Level by level: count each partial match's
//! extensions, scan, write the next level. Levels are cut into chunks of at most
//! [`LEVEL_WORDS`] words and processed depth first, so memory holds one chunk per
//! level whatever the number of matches; the last level is only counted when
//! counting, and written in chunks and handed to the caller when listing.
//!
//! This module knows nothing of patterns: the caller (the `fixlog` crate) translates a
//! `fixlog_match::Plan` into [`StepProgram`]s over [`AdjacencyRef`]s, or, for a clique
//! count, builds the graph's forward lists in degree order on the device
//! ([`DeviceGraph::forward_by_degree`]) as the one adjacency and counts along them.
//!
//! Triangles and 4-cliques along forward lists have kernels of their own
//! ([`count_cliques_forward`]: `tri_count`, `clique4_count` in `kernels/match.cu`): the
//! level-wise program would write every forward edge as a row of level 1 (30M rows on a
//! 30M-edge graph) only to count each row's extensions by a warp that, for the usual
//! short list, leaves most lanes idle. The kernels read the forward CSR directly: a warp
//! takes 32 consecutive forward edges `(u, v)` (sources by binary search in the
//! offsets), intersects the part of `u`'s list after `v` with `v`'s list (the shorter
//! binary-searched in the longer), and runs the items of all 32 intersections
//! flattened, 32 at a time, so a warp's lanes stay busy whatever the lengths; a
//! 4-clique count writes each edge's intersection to shared memory and intersects it,
//! the same way, with the lists of its members. Warps of a resident grid stride over
//! the chunks; one atomic add per block. Other `k` run the clique steps level-wise.

use crate::error::Result;
use crate::gpu::{DevBuf, Gpu};
use crate::kernels::MATCH;
use crate::ops::Rel;
use crate::CudaError;

/// Most pattern nodes, and most lists or checks of one kind per step (`MAXV` in
/// `kernels/match.cu`).
pub const MAX_STEPS: usize = 32;
/// Words of partial matches one level holds at once (256 MiB).
pub const LEVEL_WORDS: usize = 1 << 26;
const BLOCK: u32 = 256;
const WARPS_PER_BLOCK: usize = BLOCK as usize / 32;

/// One adjacency of the graph in CSR form.
#[derive(Clone, Copy, Debug)]
pub struct AdjacencyRef<'a> {
    /// `node_count + 1` offsets into `targets`.
    pub offsets: &'a [u64],
    /// Neighbours, sorted and duplicate-free per node.
    pub targets: &'a [u32],
}

/// The adjacencies of a graph in device memory.
pub struct DeviceGraph {
    node_count: usize,
    /// Per adjacency: offsets and targets.
    lists: Vec<(DevBuf, DevBuf)>,
    /// Per adjacency: the number of targets (the last offset).
    edges: Vec<usize>,
    /// The `MAdj` table the kernels read.
    table: DevBuf,
}

impl DeviceGraph {
    /// Uploads `adjacencies` (each over the same `node_count` nodes).
    pub fn upload(gpu: &Gpu, node_count: usize, adjacencies: &[AdjacencyRef]) -> Result<Self> {
        let mut lists = Vec::with_capacity(adjacencies.len());
        for a in adjacencies {
            if a.offsets.len() != node_count + 1 {
                return Err(CudaError::Invalid(format!(
                    "an adjacency has {} offsets for {node_count} nodes",
                    a.offsets.len()
                )));
            }
            let off = gpu.alloc(a.offsets.len() * 8)?;
            gpu.htod(off.ptr(), a.offsets)?;
            let tgt = gpu.alloc(a.targets.len().max(1) * 4)?;
            gpu.htod(tgt.ptr(), a.targets)?;
            lists.push((off, tgt, a.targets.len()));
        }
        DeviceGraph::from_lists(gpu, node_count, lists)
    }

    /// A graph of adjacencies already in device memory (offsets, targets, the number
    /// of targets).
    fn from_lists(
        gpu: &Gpu,
        node_count: usize,
        lists: Vec<(DevBuf, DevBuf, usize)>,
    ) -> Result<Self> {
        let (lists, edges): (Vec<(DevBuf, DevBuf)>, Vec<usize>) = lists
            .into_iter()
            .map(|(off, tgt, edges)| ((off, tgt), edges))
            .unzip();
        let table: Vec<u64> = lists
            .iter()
            .flat_map(|(off, tgt)| [off.ptr(), tgt.ptr()])
            .collect();
        let t = gpu.alloc(table.len().max(1) * 8)?;
        gpu.htod(t.ptr(), &table)?;
        Ok(DeviceGraph {
            node_count,
            lists,
            edges,
            table: t,
        })
    }

    /// The forward lists in degree order of a graph with `node_count` nodes and the
    /// edges `pairs` (`[src, dst]` as read: repeats, both directions and self-loops
    /// allowed), built on the device, as the one adjacency of the result;
    /// and the lists' offsets (`node_count + 1`, for the caller's first step). Node `u`'s
    /// list holds the ranks above `u`'s rank of its neighbours, in ascending order, where
    /// the rank is a node's place in ascending (degree as read, node) order; so in rank
    /// numbering every clique is found once, at its lowest node, and lists are short
    /// (about `sqrt(2m)` at most). The same counts as the host's
    /// `Graph::forward_by_degree` (whose ties may fall otherwise): a clique count does
    /// not depend on the order. Built here instead of uploaded: the host build took
    /// 0.31 s of a 0.54 s GPU triangle count on 30M edges (docs/gpu-results.md, round
    /// 14), the device sorts those pairs in milliseconds.
    pub fn forward_by_degree(
        gpu: &Gpu,
        node_count: usize,
        pairs: &[[u32; 2]],
    ) -> Result<(DeviceGraph, Vec<u64>)> {
        let n = node_count;
        let m = pairs.len();
        // (Ranks run to n - 1; n itself marks self-loops.)
        let n32 = to_u32(n, "node count")?;
        let grid = |items: usize| items.div_ceil(BLOCK as usize).max(1);
        let strided = |items: usize| grid(items).min(gpu.sm_count() as usize * 8);
        let f = |name: &str| gpu.function(MATCH, "", name);
        let edges = gpu.alloc(m.max(1) * 8)?;
        gpu.htod(edges.ptr(), pairs)?;
        let degree = gpu.alloc(n.max(1) * 4)?;
        gpu.memset8(degree.ptr(), 0, n * 4)?;
        launch!(
            gpu,
            f("fwd_degree")?,
            strided(m),
            BLOCK,
            edges.ptr(),
            m as u64,
            degree.ptr()
        );
        let mut order = Rel {
            buf: gpu.alloc(n.max(1) * 8)?,
            n,
            arity: 2,
        };
        launch!(
            gpu,
            f("fwd_rank_rows")?,
            grid(n),
            BLOCK,
            degree.ptr(),
            n as u64,
            order.buf.ptr()
        );
        drop(degree);
        gpu.sort(&mut order)?;
        let rank = gpu.alloc(n.max(1) * 4)?;
        launch!(
            gpu,
            f("fwd_ranks")?,
            grid(n),
            BLOCK,
            order.buf.ptr(),
            n as u64,
            rank.ptr()
        );
        drop(order);
        let mut ranked = Rel {
            buf: gpu.alloc(m.max(1) * 8)?,
            n: m,
            arity: 2,
        };
        launch!(
            gpu,
            f("fwd_pairs")?,
            strided(m),
            BLOCK,
            edges.ptr(),
            m as u64,
            rank.ptr(),
            n32,
            ranked.buf.ptr()
        );
        drop(edges);
        drop(rank);
        gpu.sort(&mut ranked)?;
        let pairs = gpu.unique(ranked.view())?;
        drop(ranked);
        let off = gpu.alloc((n + 1) * 8)?;
        launch!(
            gpu,
            f("fwd_offsets")?,
            grid(n + 1),
            BLOCK,
            pairs.buf.ptr(),
            pairs.n as u64,
            n as u64,
            off.ptr()
        );
        let offsets = gpu.dtoh::<u64>(off.ptr(), n + 1)?;
        let kept = offsets.last().copied().unwrap_or(0) as usize;
        let tgt = gpu.alloc(kept.max(1) * 4)?;
        launch!(
            gpu,
            f("fwd_targets")?,
            grid(kept),
            BLOCK,
            pairs.buf.ptr(),
            kept as u64,
            tgt.ptr()
        );
        drop(pairs);
        let graph = DeviceGraph::from_lists(gpu, n, vec![(off, tgt, kept)])?;
        Ok((graph, offsets))
    }

    pub fn node_count(&self) -> usize {
        self.node_count
    }

    /// Device bytes the graph holds.
    pub fn bytes(&self) -> usize {
        self.lists
            .iter()
            .map(|(o, t)| o.bytes() + t.bytes())
            .sum::<usize>()
            + self.table.bytes()
    }
}

/// One step of a plan: what binds pattern node `i` given the graph nodes bound at the
/// earlier steps (the fields of `fixlog_match::plan::Step`, with adjacencies numbered
/// as uploaded and step numbers for bound nodes).
#[derive(Clone, Debug, Default)]
pub struct StepProgram {
    /// `(earlier step, adjacency)`: the neighbours, along the adjacency, of the node
    /// bound at that step. Empty: `all_candidates`.
    pub sources: Vec<(usize, usize)>,
    /// For a step without sources: the candidates, sorted.
    pub all_candidates: Vec<u32>,
    /// One bit per graph node: which may bind this step (checked for steps with
    /// sources; `all_candidates` are filtered already).
    pub filter_bits: Option<Vec<u64>>,
    /// Candidates at least `binding[step] + add` (saturating).
    pub lower_from: Vec<(usize, u32)>,
    /// Candidates below `binding[step] + add` (saturating).
    pub upper_from: Vec<(usize, u32)>,
    /// Candidates in `const_lower..const_upper`.
    pub const_lower: u32,
    pub const_upper: u32,
    /// Earlier steps whose node a candidate must differ from / equal.
    pub distinct_from: Vec<usize>,
    pub equal_to: Vec<usize>,
    /// Nodes a candidate must not be.
    pub excluded: Vec<u32>,
    /// Adjacencies in which a candidate must have a self-loop.
    pub self_loops: Vec<usize>,
}

/// `MStep` of `kernels/match.cu`.
#[repr(C)]
#[derive(Clone, Copy)]
struct StepDesc {
    nsrc: u32,
    nlow: u32,
    nup: u32,
    ndist: u32,
    neq: u32,
    nexcl: u32,
    nself: u32,
    has_bits: u32,
    clo: u32,
    chi: u32,
    src_step: [u32; MAX_STEPS],
    src_adj: [u32; MAX_STEPS],
    low_step: [u32; MAX_STEPS],
    low_add: [u32; MAX_STEPS],
    up_step: [u32; MAX_STEPS],
    up_add: [u32; MAX_STEPS],
    dist_step: [u32; MAX_STEPS],
    eq_step: [u32; MAX_STEPS],
    self_adj: [u32; MAX_STEPS],
    excl: u64,
    bits: u64,
    all: u64,
    nall: u32,
    pad: u32,
}

/// A step in device memory: its descriptor and the buffers it points to.
struct DeviceStep {
    desc: DevBuf,
    _data: Vec<DevBuf>,
}

fn fill(
    dst: &mut [u32; MAX_STEPS],
    what: &str,
    items: impl ExactSizeIterator<Item = u32>,
) -> Result<u32> {
    let n = items.len();
    if n > MAX_STEPS {
        return Err(CudaError::Invalid(format!(
            "a pattern step with {n} {what} (the GPU matcher takes at most {MAX_STEPS})"
        )));
    }
    for (slot, v) in dst.iter_mut().zip(items) {
        *slot = v;
    }
    Ok(n as u32)
}

fn to_u32(v: usize, what: &str) -> Result<u32> {
    u32::try_from(v).map_err(|_| CudaError::Invalid(format!("{what} {v} is out of range")))
}

/// A plan ready to run on the device.
pub struct DeviceProgram {
    steps: Vec<DeviceStep>,
}

impl DeviceProgram {
    /// Checks `steps` against `graph` and uploads them.
    pub fn upload(gpu: &Gpu, graph: &DeviceGraph, steps: &[StepProgram]) -> Result<Self> {
        if steps.len() > MAX_STEPS {
            return Err(CudaError::Invalid(format!(
                "a pattern of {} nodes (the GPU matcher takes at most {MAX_STEPS})",
                steps.len()
            )));
        }
        let adjs = graph.lists.len();
        let mut out = Vec::with_capacity(steps.len());
        for (i, s) in steps.iter().enumerate() {
            let earlier = |step: usize| -> Result<u32> {
                if step < i {
                    Ok(step as u32)
                } else {
                    Err(CudaError::Invalid(format!(
                        "step {i} refers to step {step}, which is not bound before it"
                    )))
                }
            };
            let adjacency = |a: usize| -> Result<u32> {
                if a < adjs {
                    Ok(a as u32)
                } else {
                    Err(CudaError::Invalid(format!(
                        "step {i} uses adjacency {a} of {adjs}"
                    )))
                }
            };
            let mut d = StepDesc {
                nsrc: 0,
                nlow: 0,
                nup: 0,
                ndist: 0,
                neq: 0,
                nexcl: 0,
                nself: 0,
                has_bits: 0,
                clo: s.const_lower,
                chi: s.const_upper,
                src_step: [0; MAX_STEPS],
                src_adj: [0; MAX_STEPS],
                low_step: [0; MAX_STEPS],
                low_add: [0; MAX_STEPS],
                up_step: [0; MAX_STEPS],
                up_add: [0; MAX_STEPS],
                dist_step: [0; MAX_STEPS],
                eq_step: [0; MAX_STEPS],
                self_adj: [0; MAX_STEPS],
                excl: 0,
                bits: 0,
                all: 0,
                nall: 0,
                pad: 0,
            };
            let src_steps = s
                .sources
                .iter()
                .map(|&(st, _)| earlier(st))
                .collect::<Result<Vec<_>>>()?;
            let src_adjs = s
                .sources
                .iter()
                .map(|&(_, a)| adjacency(a))
                .collect::<Result<Vec<_>>>()?;
            d.nsrc = fill(&mut d.src_step, "sources", src_steps.into_iter())?;
            fill(&mut d.src_adj, "sources", src_adjs.into_iter())?;
            let lows = s
                .lower_from
                .iter()
                .map(|&(st, _)| earlier(st))
                .collect::<Result<Vec<_>>>()?;
            d.nlow = fill(&mut d.low_step, "lower bounds", lows.into_iter())?;
            fill(
                &mut d.low_add,
                "lower bounds",
                s.lower_from.iter().map(|&(_, a)| a),
            )?;
            let ups = s
                .upper_from
                .iter()
                .map(|&(st, _)| earlier(st))
                .collect::<Result<Vec<_>>>()?;
            d.nup = fill(&mut d.up_step, "upper bounds", ups.into_iter())?;
            fill(
                &mut d.up_add,
                "upper bounds",
                s.upper_from.iter().map(|&(_, a)| a),
            )?;
            let dist = s
                .distinct_from
                .iter()
                .map(|&st| earlier(st))
                .collect::<Result<Vec<_>>>()?;
            d.ndist = fill(&mut d.dist_step, "distinctness checks", dist.into_iter())?;
            let eq = s
                .equal_to
                .iter()
                .map(|&st| earlier(st))
                .collect::<Result<Vec<_>>>()?;
            d.neq = fill(&mut d.eq_step, "equalities", eq.into_iter())?;
            let selfs = s
                .self_loops
                .iter()
                .map(|&a| adjacency(a))
                .collect::<Result<Vec<_>>>()?;
            d.nself = fill(&mut d.self_adj, "self-loop checks", selfs.into_iter())?;
            let mut data = Vec::new();
            if !s.excluded.is_empty() {
                let b = gpu.alloc(s.excluded.len() * 4)?;
                gpu.htod(b.ptr(), &s.excluded)?;
                d.excl = b.ptr();
                d.nexcl = to_u32(s.excluded.len(), "excluded count")?;
                data.push(b);
            }
            if let Some(bits) = &s.filter_bits {
                if bits.len() * 64 < graph.node_count {
                    return Err(CudaError::Invalid(format!(
                        "step {i}'s filter has {} bits for {} nodes",
                        bits.len() * 64,
                        graph.node_count
                    )));
                }
                let b = gpu.alloc(bits.len().max(1) * 8)?;
                gpu.htod(b.ptr(), bits)?;
                d.bits = b.ptr();
                d.has_bits = 1;
                data.push(b);
            }
            if s.sources.is_empty() {
                let b = gpu.alloc(s.all_candidates.len().max(1) * 4)?;
                gpu.htod(b.ptr(), &s.all_candidates)?;
                d.all = b.ptr();
                d.nall = to_u32(s.all_candidates.len(), "candidate count")?;
                data.push(b);
            }
            if let Some(&bad) = s
                .all_candidates
                .iter()
                .chain(&s.excluded)
                .find(|&&v| v as usize >= graph.node_count)
            {
                return Err(CudaError::Invalid(format!(
                    "step {i} names node {bad} of {}",
                    graph.node_count
                )));
            }
            let desc = gpu.alloc(std::mem::size_of::<StepDesc>())?;
            gpu.htod(desc.ptr(), std::slice::from_ref(&d))?;
            out.push(DeviceStep { desc, _data: data });
        }
        Ok(DeviceProgram { steps: out })
    }

    pub fn steps(&self) -> usize {
        self.steps.len()
    }
}

/// What to do with complete matches.
enum Sink<'s> {
    Count(u64),
    /// Rows of `steps` graph nodes (step order), a batch at a time; returns whether to
    /// go on.
    List(&'s mut dyn FnMut(&[u32]) -> Result<bool>),
}

/// Runs `program` on `graph`: the number of matches.
pub fn count(gpu: &Gpu, graph: &DeviceGraph, program: &DeviceProgram) -> Result<u64> {
    let mut sink = Sink::Count(0);
    run(gpu, graph, program, &mut sink)?;
    match sink {
        Sink::Count(n) => Ok(n),
        Sink::List(_) => Err(CudaError::Invalid(
            "internal error: the sink changed".into(),
        )),
    }
}

/// Runs `program` on `graph` and hands every match (one row of `program.steps()`
/// graph nodes, in step order) to `rows`, in batches, in the order of the CPU matcher's
/// depth-first search; stops early when `rows` returns `false`.
pub fn list(
    gpu: &Gpu,
    graph: &DeviceGraph,
    program: &DeviceProgram,
    rows: &mut dyn FnMut(&[u32]) -> Result<bool>,
) -> Result<()> {
    let mut sink = Sink::List(rows);
    run(gpu, graph, program, &mut sink)
}

/// Words of one warp's intersection in shared memory in `clique4_count` (`C4_SHARED`
/// in `kernels/match.cu`): a longer forward list needs scratch in device memory.
const C4_SHARED: usize = 512;

/// Whether [`count_cliques_forward`] has a kernel for `k`-cliques.
pub fn has_clique_kernel(k: usize) -> bool {
    matches!(k, 3 | 4)
}

/// The number of `k`-cliques along forward lists: adjacency 0 of `graph` must hold, in
/// rank numbering, every node's neighbours above it, sorted and duplicate-free (as
/// [`DeviceGraph::forward_by_degree`] builds them), so every clique is found once, at
/// its lowest node. Counted by a dedicated kernel (`kernels/match.cu`: `tri_count` for
/// `k = 3`, `clique4_count` for `k = 4`) that never materializes a level of partial
/// matches, unlike [`count`] over clique steps; `None` for a `k` without one (the
/// caller runs the level-wise program).
pub fn count_cliques_forward(gpu: &Gpu, graph: &DeviceGraph, k: usize) -> Result<Option<u64>> {
    let name = match k {
        3 => "tri_count",
        4 => "clique4_count",
        _ => return Ok(None),
    };
    let (Some((off, tgt)), Some(&edges)) = (graph.lists.first(), graph.edges.first()) else {
        return Err(CudaError::Invalid(
            "a clique count on a graph without forward lists".into(),
        ));
    };
    if edges == 0 {
        return Ok(Some(0));
    }
    let n = to_u32(graph.node_count, "node count")?;
    let f = gpu.function(MATCH, "", name)?;
    // A resident grid: warps stride over the chunks of 32 edges.
    let grid = gpu.resident_grid(&f, edges.div_ceil(BLOCK as usize))?;
    let total = gpu.alloc(8)?;
    gpu.memset8(total.ptr(), 0, 8)?;
    if k == 3 {
        launch!(
            gpu,
            f,
            grid,
            BLOCK,
            off.ptr(),
            tgt.ptr(),
            n,
            edges as u64,
            total.ptr()
        );
    } else {
        let longest = longest_list(gpu, off, graph.node_count)?;
        // Scratch for an intersection too long for shared memory: one slice of the
        // longest list's length per warp of the grid, only when some list is that long.
        let scratch = if longest > C4_SHARED {
            let words = grid
                .checked_mul(WARPS_PER_BLOCK * longest)
                .ok_or_else(|| CudaError::Invalid("clique scratch size overflows".into()))?;
            Some(gpu.alloc(words * 4)?)
        } else {
            None
        };
        launch!(
            gpu,
            f,
            grid,
            BLOCK,
            off.ptr(),
            tgt.ptr(),
            n,
            edges as u64,
            scratch.as_ref().map_or(0, |s| s.ptr()),
            to_u32(longest, "longest list")?,
            total.ptr()
        );
    }
    let got = gpu.dtoh::<u64>(total.ptr(), 1)?;
    got.first()
        .copied()
        .map(Some)
        .ok_or_else(|| CudaError::Invalid("internal error: an empty read".into()))
}

/// The length of the longest of the `node_count` lists whose offsets are at `off`.
fn longest_list(gpu: &Gpu, off: &DevBuf, node_count: usize) -> Result<usize> {
    let out = gpu.alloc(4)?;
    gpu.memset8(out.ptr(), 0, 4)?;
    let grid = node_count
        .div_ceil(BLOCK as usize)
        .min(gpu.sm_count() as usize * 8);
    launch!(
        gpu,
        gpu.function(MATCH, "", "fwd_longest")?,
        grid,
        BLOCK,
        off.ptr(),
        node_count as u64,
        out.ptr()
    );
    let got = gpu.dtoh::<u32>(out.ptr(), 1)?;
    got.first()
        .map(|&l| l as usize)
        .ok_or_else(|| CudaError::Invalid("internal error: an empty read".into()))
}

fn run(gpu: &Gpu, graph: &DeviceGraph, program: &DeviceProgram, sink: &mut Sink) -> Result<()> {
    if program.steps.is_empty() {
        return Ok(());
    }
    // Level 0: one empty partial match.
    let root = gpu.alloc(4)?;
    descend(gpu, graph, program, 0, &root, 1, sink).map(|_| ())
}

/// Extends `n` partial matches of `level` nodes at `rows` by step `level`; returns
/// whether to go on (a listing may stop early).
fn descend(
    gpu: &Gpu,
    graph: &DeviceGraph,
    program: &DeviceProgram,
    level: usize,
    rows: &DevBuf,
    n: usize,
    sink: &mut Sink,
) -> Result<bool> {
    let step = &program.steps[level];
    let last = level + 1 == program.steps.len();
    let w = level as u32;
    let grid = n.div_ceil(WARPS_PER_BLOCK);
    let fcount = gpu.function(MATCH, "", "match_count")?;
    if last {
        if let Sink::Count(total) = sink {
            let out = gpu.alloc(8)?;
            gpu.memset8(out.ptr(), 0, 8)?;
            launch!(
                gpu,
                fcount,
                grid,
                BLOCK,
                rows.ptr(),
                n as u64,
                w,
                step.desc.ptr(),
                graph.table.ptr(),
                0u64,
                out.ptr(),
                1u32
            );
            let got = gpu.dtoh::<u64>(out.ptr(), 1)?;
            *total += got.first().copied().unwrap_or(0);
            return Ok(true);
        }
    }
    let counts = gpu.alloc(n * 8)?;
    launch!(
        gpu,
        fcount,
        grid,
        BLOCK,
        rows.ptr(),
        n as u64,
        w,
        step.desc.ptr(),
        graph.table.ptr(),
        counts.ptr(),
        0u64,
        0u32
    );
    let offsets = gpu.alloc(n * 8)?;
    let total = gpu.exclusive_scan_u64(counts.ptr(), n, offsets.ptr())? as usize;
    drop(counts);
    if total == 0 {
        return Ok(true);
    }
    let next_w = level + 1;
    let max_rows = (LEVEL_WORDS / next_w).max(1);
    let fwrite = gpu.function(MATCH, "", "match_write")?;
    let offset_at = |i: usize| -> Result<u64> {
        if i >= n {
            return Ok(total as u64);
        }
        let v = gpu.dtoh::<u64>(offsets.ptr() + i as u64 * 8, 1)?;
        v.first()
            .copied()
            .ok_or_else(|| CudaError::Invalid("internal error: an empty read".into()))
    };
    let mut first = 0usize;
    while first < n {
        let base = offset_at(first)?;
        // The longest run of partial matches from `first` whose extensions fit (at
        // least one: a single partial match has at most `node_count` extensions).
        let end = if total as u64 - base <= max_rows as u64 {
            n
        } else {
            let (mut lo, mut hi) = (first + 1, n);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if offset_at(mid)? - base <= max_rows as u64 {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            lo
        };
        let m = (offset_at(end)? - base) as usize;
        if m > 0 {
            let next = gpu.alloc(m * next_w * 4)?;
            let span = end - first;
            launch!(
                gpu,
                fwrite.clone(),
                span.div_ceil(WARPS_PER_BLOCK),
                BLOCK,
                rows.ptr(),
                first as u64,
                span as u64,
                w,
                step.desc.ptr(),
                graph.table.ptr(),
                offsets.ptr(),
                base,
                next.ptr()
            );
            let go_on = if last {
                match sink {
                    Sink::List(f) => {
                        let host = gpu.download_words(next.ptr(), m * next_w)?;
                        f(&host)?
                    }
                    Sink::Count(total) => {
                        *total += m as u64;
                        true
                    }
                }
            } else {
                descend(gpu, graph, program, level + 1, &next, m, sink)?
            };
            if !go_on {
                return Ok(false);
            }
        }
        first = end;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    //! Host mirrors of `tri_count` and `clique4_count` (`kernels/match.cu`): the same
    //! split into edges, shorter-list items and flattened warp rounds (the owner lane of
    //! an item found by the kernel's search over the scan), against brute force.

    /// `c_hits` for one warp: lane `l` looks up each element of `lanes[l].0` in the
    /// sorted `lanes[l].1`; the items are run flattened in rounds of 32, each by the
    /// owner lane the kernel's 5-step search finds. The hits of the warp.
    fn warp_hits(lanes: &[(&[u32], &[u32])]) -> u64 {
        assert!(lanes.len() <= 32);
        let cnt: Vec<u32> = (0..32)
            .map(|l| lanes.get(l).map_or(0, |(a, _)| a.len() as u32))
            .collect();
        let inc: Vec<u32> = cnt
            .iter()
            .scan(0, |s, &c| {
                *s += c;
                Some(*s)
            })
            .collect();
        let items = inc[31];
        let mut hits = 0;
        let mut ran = 0;
        for base in (0..items).step_by(32) {
            for lane in 0..32 {
                let j = base + lane;
                let mut o = 0usize;
                for s in [16, 8, 4, 2, 1] {
                    if inc[o + s - 1] <= j {
                        o += s;
                    }
                }
                assert!(o < 32);
                if j < items {
                    let k = (j - (inc[o] - cnt[o])) as usize;
                    let (a, b) = lanes[o];
                    assert!(k < a.len(), "item {j} given to lane {o} past its list");
                    hits += u64::from(b.binary_search(&a[k]).is_ok());
                    ran += 1;
                }
            }
        }
        assert_eq!(ran, items);
        hits
    }

    /// `c_source` and `c_edge`: edge `e`'s (shorter, longer) of (tail after `v` in
    /// `N+(u)`, `N+(v)`).
    fn edge_lists<'a>(off: &[u64], tgt: &'a [u32], e: usize) -> (&'a [u32], &'a [u32]) {
        let n = off.len() - 1;
        let (mut lo, mut hi) = (0usize, n);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if off[mid] as usize <= e {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let u = lo;
        assert!(off[u] as usize <= e && e < off[u + 1] as usize);
        let tail = &tgt[e + 1..off[u + 1] as usize];
        let v = tgt[e] as usize;
        let nv = &tgt[off[v] as usize..off[v + 1] as usize];
        if tail.len() <= nv.len() {
            (tail, nv)
        } else {
            (nv, tail)
        }
    }

    fn tri_count(off: &[u64], tgt: &[u32]) -> u64 {
        let mut total = 0;
        for base in (0..tgt.len()).step_by(32) {
            let lanes: Vec<(&[u32], &[u32])> = (base..tgt.len().min(base + 32))
                .map(|e| edge_lists(off, tgt, e))
                .collect();
            total += warp_hits(&lanes);
        }
        total
    }

    fn clique4_count(off: &[u64], tgt: &[u32]) -> u64 {
        let list = |w: u32| &tgt[off[w as usize] as usize..off[w as usize + 1] as usize];
        let mut total = 0;
        for e in 0..tgt.len() {
            let (a, b) = edge_lists(off, tgt, e);
            if a.len() < 2 {
                continue;
            }
            let set: Vec<u32> = a
                .iter()
                .copied()
                .filter(|x| b.binary_search(x).is_ok())
                .collect();
            for p0 in (0..set.len().saturating_sub(1)).step_by(32) {
                let lanes: Vec<(&[u32], &[u32])> = (p0..(p0 + 32).min(set.len() - 1))
                    .map(|p| {
                        let after = &set[p + 1..];
                        let nw = list(set[p]);
                        if after.len() <= nw.len() {
                            (after, nw)
                        } else {
                            (nw, after)
                        }
                    })
                    .collect();
                total += warp_hits(&lanes);
            }
        }
        total
    }

    /// Forward lists of an undirected simple graph in the order `rank` (node `u`'s list:
    /// its neighbours of higher rank, in rank numbering, ascending).
    fn forward(n: usize, edges: &[(usize, usize)], rank: &[usize]) -> (Vec<u64>, Vec<u32>) {
        let mut lists = vec![Vec::new(); n];
        for &(a, b) in edges {
            let (ra, rb) = (rank[a], rank[b]);
            if ra != rb {
                lists[ra.min(rb)].push(ra.max(rb) as u32);
            }
        }
        let mut off = vec![0u64];
        let mut tgt = Vec::new();
        for l in &mut lists {
            l.sort_unstable();
            l.dedup();
            tgt.extend_from_slice(l);
            off.push(tgt.len() as u64);
        }
        (off, tgt)
    }

    fn brute_force(n: usize, edges: &[(usize, usize)], k: usize) -> u64 {
        let mut joined = vec![vec![false; n]; n];
        for &(a, b) in edges {
            if a != b {
                joined[a][b] = true;
                joined[b][a] = true;
            }
        }
        fn grow(joined: &[Vec<bool>], candidates: &[usize], left: usize) -> u64 {
            if left == 0 {
                return 1;
            }
            let mut total = 0;
            for (i, &v) in candidates.iter().enumerate() {
                let next: Vec<usize> = candidates[i + 1..]
                    .iter()
                    .copied()
                    .filter(|&w| joined[v][w])
                    .collect();
                total += grow(joined, &next, left - 1);
            }
            total
        }
        grow(&joined, &(0..n).collect::<Vec<_>>(), k)
    }

    /// Random graphs (self-loops, repeats, sometimes a hub joined to most nodes, so
    /// lists run past a warp and items past many rounds), in degree order and in a
    /// random order: the mirrors count the brute force's triangles and 4-cliques.
    #[test]
    fn the_clique_kernels_split_of_the_work_counts_every_clique_once() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut below = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n.max(1) as u64) as usize
        };
        let mut found = [0u64; 2];
        for case in 0..300 {
            let n = below(if case % 10 == 9 { 120 } else { 40 }) + usize::from(case % 7 != 0);
            let percent = [5, 20, 50, 90][below(4)];
            let hub = (case % 3 == 0 && n > 0).then(|| below(n));
            let mut edges = Vec::new();
            for a in 0..n {
                for b in a..n {
                    let p = if hub == Some(a) || hub == Some(b) {
                        95
                    } else {
                        percent
                    };
                    if below(100) < p && (a != b || below(10) == 0) {
                        edges.push((a, b));
                        if below(5) == 0 {
                            edges.push((b, a));
                        }
                    }
                }
            }
            let mut degree = vec![0usize; n];
            for &(a, b) in &edges {
                degree[a] += 1;
                degree[b] += 1;
            }
            let mut by_degree: Vec<usize> = (0..n).collect();
            by_degree.sort_by_key(|&u| (degree[u], u));
            let mut shuffled: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                shuffled.swap(i, below(i + 1));
            }
            let mut rank = vec![0; n];
            for order in [by_degree, shuffled] {
                for (r, &u) in order.iter().enumerate() {
                    rank[u] = r;
                }
                let (off, tgt) = forward(n, &edges, &rank);
                let (t, q) = (brute_force(n, &edges, 3), brute_force(n, &edges, 4));
                assert_eq!(tri_count(&off, &tgt), t, "triangles, case {case}");
                assert_eq!(clique4_count(&off, &tgt), q, "4-cliques, case {case}");
                found[0] += t;
                found[1] += q;
            }
        }
        assert!(found[0] > 10_000 && found[1] > 10_000, "{found:?}");
    }
}
