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
//! count, uploads the graph's forward lists in degree order as the one adjacency and
//! builds steps that intersect them directly.

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
            lists.push((off, tgt));
        }
        DeviceGraph::from_lists(gpu, node_count, lists)
    }

    /// A graph of adjacencies already in device memory (offsets, targets).
    fn from_lists(gpu: &Gpu, node_count: usize, lists: Vec<(DevBuf, DevBuf)>) -> Result<Self> {
        let table: Vec<u64> = lists
            .iter()
            .flat_map(|(off, tgt)| [off.ptr(), tgt.ptr()])
            .collect();
        let t = gpu.alloc(table.len().max(1) * 8)?;
        gpu.htod(t.ptr(), &table)?;
        Ok(DeviceGraph {
            node_count,
            lists,
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
        let graph = DeviceGraph::from_lists(gpu, n, vec![(off, tgt)])?;
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
