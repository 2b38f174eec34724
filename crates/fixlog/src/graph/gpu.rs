//! Pattern matching on the GPU: the plan of the CPU matcher (`fixlog_match::plan`) run by
//! the device's level-wise matcher (`fixlog_cuda::matching`), so counts and rows are
//! the same as on the CPU, in the same order.
//!
//! A [`GpuMatcher`] holds a CUDA context and one graph on the device (`OnDevice`):
//! the adjacencies the last pattern needed, or the forward lists of the last clique
//! count, kept while the next pattern needs the same (so many patterns on one graph
//! send it once); each pattern is planned on the host (candidate filters included),
//! its steps translated and uploaded, and run.
//!
//! A count of a clique pattern (the patterns [`Graph::count_path`] sends to the clique
//! path, as the CPU's [`Graph::count_with`] decides: triangles, 4-cliques, ... under
//! `iso`, with or without symmetry breaking) is not planned: the graph's forward lists
//! in degree order are built on the device from its edges
//! ([`DeviceGraph::forward_by_degree`]; where the device has no room for that, the
//! host builds them, [`Graph::forward_by_degree`] as the CPU's clique path does, and
//! they are uploaded) as the one adjacency. Triangles and 4-cliques are counted along
//! them by kernels of their own ([`matching::count_cliques_forward`]: edge-parallel
//! intersections of forward lists, no level of partial matches written); for other
//! `k`, `k` steps are built directly (step 0: every node with at least `k - 1` forward
//! neighbours; step `i`: the intersection of the forward lists of the nodes of steps
//! `0..i`), whose matches are the `k`-cliques, each once, and run level-wise. The count
//! is the cliques times `R`, as on the CPU.

use super::{CountPath, Graph, Pattern, Semantics};
use crate::Error;
use fixlog_cuda::matching::{self, AdjacencyRef, DeviceGraph, DeviceProgram, StepProgram};
use fixlog_cuda::{CudaError, Gpu};
use fixlog_exec::ExecError;
use fixlog_match::graph::Adjacency;
use fixlog_match::plan::Plan;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn gpu_error(e: CudaError) -> Error {
    match e {
        CudaError::OutOfMemory { .. } => Error::Exec(ExecError::OutOfMemory(e.to_string())),
        CudaError::Unavailable(why) => Error::NoGpu(why),
        other => Error::Exec(ExecError::Backend(other.to_string())),
    }
}

/// A GPU to match on.
pub struct GpuMatcher {
    gpu: Gpu,
    /// What is on the device: the adjacencies the last pattern needed, or the forward
    /// lists of the last clique count (one at a time: switching gives the memory back
    /// first).
    resident: RefCell<Option<(OnDevice, DeviceGraph)>>,
    /// Where the time of the last pattern went.
    times: std::cell::Cell<MatchTimes>,
}

/// What a [`DeviceGraph`] on the device holds.
enum OnDevice {
    /// These adjacencies (held, so their addresses cannot be reused), in the order of
    /// the device's table. A graph, its degree-ordered copy (`Graph::degree_ordered`)
    /// and its host forward lists (`Graph::forward_by_degree`) share no adjacency, so
    /// a program on one never reuses another's device copy.
    Lists(Vec<Arc<Adjacency>>),
    /// The forward lists in degree order built on the device from the edges of the
    /// graph numbered `graph` ([`Graph::instance`]), with their offsets (for the first
    /// step's candidates).
    Forward { graph: u64, offsets: Vec<u64> },
}

/// Where the time of a pattern run on the GPU went (`fixlog match --stats`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MatchTimes {
    /// Planning on the host (candidate filters included, and building the adjacencies
    /// the plan names unless the graph has them); for a clique count, building the
    /// forward lists (unless the graph has them) and the steps.
    pub plan: Duration,
    /// For a clique count along the forward lists in degree order: the part of `plan`
    /// that built them (near zero when the graph had them already). `None` when the
    /// pattern was planned (in id order).
    pub forward_lists: Option<Duration>,
    /// Copying the adjacencies (unless already there) and the steps to the device.
    pub upload: Duration,
    /// Bytes of adjacency lists (or, for forward lists built on the device, of edges)
    /// copied to the device for this pattern: 0 when what it needs was there already.
    pub uploaded_bytes: usize,
    /// Whether the forward lists were built on the device (from the edges), not on the
    /// host.
    pub forward_on_device: bool,
    /// Running the steps (kernels, and handing listed rows over).
    pub run: Duration,
}

impl GpuMatcher {
    /// Opens device 0 (`memory_limit`: the most device memory to use; `None`: the
    /// backend's default share of what is free).
    pub fn new(memory_limit: Option<usize>) -> Result<Self, Error> {
        let probe = fixlog_cuda::probe();
        if !probe.available {
            return Err(Error::NoGpu(probe.reason));
        }
        let gpu = Gpu::new(0, memory_limit).map_err(gpu_error)?;
        Ok(GpuMatcher {
            gpu,
            resident: RefCell::new(None),
            times: Default::default(),
        })
    }

    /// Where the time of the last pattern went.
    pub fn times(&self) -> MatchTimes {
        self.times.get()
    }

    /// The device's name.
    pub fn device(&self) -> &str {
        self.gpu.name()
    }

    /// The number of matches (as [`Graph::count_with`]).
    ///
    /// A clique pattern ([`Graph::count_path`]: the same decision as the CPU's) is
    /// counted along the forward lists in degree order, built on the device, see the
    /// module docs: no full adjacency is built on the host, which a plan would
    /// (docs/gpu-results.md, round 13: of 0.56 s matching triangles of a 30M-edge
    /// power-law graph, 0.31 s was the host building the undirected CSR at plan time;
    /// round 14: 0.29 s with the lists built on the device).
    ///
    /// Every other pattern, a 4-cycle that the CPU counts by wedges included, is
    /// planned and counted in id order: the degree-ordered copy that the CPU counts on
    /// where it may ([`Graph::count_order`]) made the GPU slower, not faster (round 11:
    /// triangles through the generic plan, 3.7 s in id order against 4.0 s plus 4.5 s
    /// of renumbering), so for those the device keeps the graph as loaded until a
    /// measurement says otherwise. What is on the device is kept by what it holds
    /// (`OnDevice`), so a clique count and a planned count on one graph each send
    /// their own, and a second clique count on the graph reuses the forward lists.
    pub fn count_with(
        &self,
        graph: &Graph,
        pattern: &Pattern,
        semantics: Semantics,
    ) -> Result<u64, Error> {
        match graph.count_path(pattern, semantics) {
            CountPath::Clique { k, factor } => return self.count_cliques(graph, k, factor),
            // The CPU counts 4-cycles by wedges (`fixlog_match::cycle`); the device has no
            // wedge kernel and runs the generic plan, which counts the same matches.
            CountPath::FourCycle { .. } | CountPath::Plan => {}
        }
        let t = Instant::now();
        let plan = fixlog_match::plan::Plan {
            limit: None,
            ..graph.plan(pattern, semantics)
        };
        self.note_plan(t.elapsed());
        if plan.empty_because.is_some() || plan.steps.is_empty() {
            return Ok(0);
        }
        self.with_program(graph, &plan, |gpu, device, program| {
            matching::count(gpu, device, program)
        })
    }

    /// Calls `f` with the `RETURN` columns (for `RETURN count(*)`, every pattern node) of
    /// every match, as [`Graph::for_each_row`] does: the same rows in the same order, at
    /// most `LIMIT`, until `f` returns `false`. Returns how many calls were made.
    pub fn for_each_row(
        &self,
        graph: &Graph,
        pattern: &Pattern,
        semantics: Semantics,
        mut f: impl FnMut(&[u64]) -> bool,
    ) -> Result<u64, Error> {
        let t = Instant::now();
        let plan = graph.plan(pattern, semantics);
        self.note_plan(t.elapsed());
        if plan.empty_because.is_some() || plan.steps.is_empty() {
            return Ok(0);
        }
        let columns: Vec<(usize, usize)> = match &plan.projection {
            Some(p) => p
                .iter()
                .enumerate()
                .map(|(slot, &step)| (slot, step))
                .collect(),
            None => plan
                .steps
                .iter()
                .enumerate()
                .map(|(step, s)| (s.node, step))
                .collect(),
        };
        let mut remaining = plan.limit.unwrap_or(u64::MAX);
        if remaining == 0 {
            return Ok(0);
        }
        let width = plan.steps.len();
        let mut row = vec![0u64; columns.len()];
        let mut calls = 0u64;
        self.with_program(graph, &plan, |gpu, device, program| {
            let mut each = |batch: &[u32]| -> fixlog_cuda::Result<bool> {
                for bindings in batch.chunks_exact(width) {
                    for &(slot, step) in &columns {
                        row[slot] = graph.id(bindings[step]);
                    }
                    calls += 1;
                    remaining -= 1;
                    if !f(&row) || remaining == 0 {
                        return Ok(false);
                    }
                }
                Ok(true)
            };
            matching::list(gpu, device, program, &mut each)
        })?;
        Ok(calls)
    }

    /// `factor` times the number of `k`-cliques of `graph`, counted on the device along
    /// the forward lists in degree order (see the module docs), built on the device
    /// from the edges ([`DeviceGraph::forward_by_degree`]) and kept there for the next
    /// clique count on the same graph. Where the device has no room to build them, the
    /// host builds them ([`Graph::forward_by_degree`]) and they are uploaded. Triangles
    /// and 4-cliques by the dedicated kernels (no steps built, `plan` is the lists'
    /// build), other `k` by the clique steps.
    fn count_cliques(&self, graph: &Graph, k: usize, factor: u64) -> Result<u64, Error> {
        let t = Instant::now();
        if factor == 0 {
            // No ranking of the pattern nodes satisfies the comparisons (as on the CPU).
            self.times.set(MatchTimes {
                plan: t.elapsed(),
                forward_lists: Some(Duration::ZERO),
                ..MatchTimes::default()
            });
            return Ok(0);
        }
        let mut resident = self.resident.borrow_mut();
        let there = matches!(&*resident, Some((OnDevice::Forward { graph: g, .. }, _))
            if *g == graph.instance());
        let mut sent = 0;
        if !there {
            *resident = None; // give the device memory back first
            let pairs = graph.edge_pairs().ok_or_else(|| {
                Error::Exec(ExecError::OutOfMemory(format!(
                    "host memory for the {} edges of the graph to copy to the GPU",
                    graph.edges_read()
                )))
            })?;
            sent = std::mem::size_of_val(&pairs[..]);
            match DeviceGraph::forward_by_degree(&self.gpu, graph.node_count(), &pairs) {
                Ok((device, offsets)) => {
                    let key = OnDevice::Forward {
                        graph: graph.instance(),
                        offsets,
                    };
                    *resident = Some((key, device));
                }
                Err(CudaError::OutOfMemory { .. }) => {
                    // The host's forward lists need less device memory than the build.
                    drop(resident);
                    let forward = Arc::clone(graph.forward_by_degree());
                    let built = t.elapsed();
                    if matching::has_clique_kernel(k) {
                        self.note_clique_plan(t, built, false);
                        let uploading = Instant::now();
                        let sent = self.hold_lists(graph.node_count(), vec![forward])?;
                        let cliques = self.count_resident_cliques(k, uploading, sent)?;
                        return times_factor(cliques, k, factor);
                    }
                    let offsets = forward.csr().0;
                    let steps = clique_steps(offsets.len() - 1, |u| offsets[u + 1] - offsets[u], k);
                    self.note_clique_plan(t, built, false);
                    return self.count_clique_steps(&steps, k, factor, |steps, uploading| {
                        self.run_steps(
                            graph.node_count(),
                            vec![forward],
                            steps,
                            uploading,
                            matching::count,
                        )
                    });
                }
                Err(e) => return Err(gpu_error(e)),
            }
        }
        let built = t.elapsed();
        if matching::has_clique_kernel(k) {
            self.note_clique_plan(t, built, true);
            drop(resident);
            let cliques = self.count_resident_cliques(k, Instant::now(), sent)?;
            return times_factor(cliques, k, factor);
        }
        let Some((OnDevice::Forward { offsets, .. }, _)) = &*resident else {
            return Err(Error::Exec(ExecError::Backend(
                "internal error: the forward lists are not on the device".into(),
            )));
        };
        let steps = clique_steps(
            offsets.len() - 1,
            |u| (offsets[u + 1] - offsets[u]) as usize,
            k,
        );
        self.note_clique_plan(t, built, true);
        drop(resident);
        self.count_clique_steps(&steps, k, factor, |steps, uploading| {
            self.run_resident(steps, uploading, sent, matching::count)
        })
    }

    /// Notes the plan time of a clique count begun at `t`: building the forward lists
    /// (`built`, on the device or the host) and the steps.
    fn note_clique_plan(&self, t: Instant, built: Duration, on_device: bool) {
        self.times.set(MatchTimes {
            plan: t.elapsed(),
            forward_lists: Some(built),
            forward_on_device: on_device,
            ..MatchTimes::default()
        });
    }

    /// `factor` times the matches of the clique `steps` (none when no node starts a
    /// clique), counted by `run(steps, upload start)`.
    fn count_clique_steps(
        &self,
        steps: &[StepProgram],
        k: usize,
        factor: u64,
        run: impl FnOnce(&[StepProgram], Instant) -> Result<u64, Error>,
    ) -> Result<u64, Error> {
        if steps.first().is_none_or(|s| s.all_candidates.is_empty()) {
            return Ok(0);
        }
        let cliques = run(steps, Instant::now())?;
        times_factor(cliques, k, factor)
    }

    fn note_plan(&self, plan: Duration) {
        self.times.set(MatchTimes {
            plan,
            ..MatchTimes::default()
        });
    }

    /// Uploads the adjacencies `plan` needs (unless they are there) and its steps, and
    /// runs `f` on them.
    fn with_program<T>(
        &self,
        graph: &Graph,
        plan: &Plan,
        f: impl FnOnce(&Gpu, &DeviceGraph, &DeviceProgram) -> fixlog_cuda::Result<T>,
    ) -> Result<T, Error> {
        let mut wanted: Vec<Arc<Adjacency>> = Vec::new();
        let number = |wanted: &mut Vec<Arc<Adjacency>>, a: &Arc<Adjacency>| -> usize {
            match wanted.iter().position(|w| Arc::ptr_eq(w, a)) {
                Some(i) => i,
                None => {
                    wanted.push(a.clone());
                    wanted.len() - 1
                }
            }
        };
        let uploading = Instant::now();
        let mut steps = Vec::with_capacity(plan.steps.len());
        for s in &plan.steps {
            let sources = s
                .sources
                .iter()
                .map(|src| (src.from_step, number(&mut wanted, &src.adjacency)))
                .collect();
            let self_loops = s
                .self_loops
                .iter()
                .map(|a| number(&mut wanted, a))
                .collect();
            steps.push(StepProgram {
                sources,
                all_candidates: s.all_candidates.clone(),
                filter_bits: s.filter.bits.clone(),
                lower_from: s.lower_from.clone(),
                upper_from: s.upper_from.clone(),
                const_lower: s.const_lower,
                const_upper: s.const_upper,
                distinct_from: s.distinct_from.clone(),
                equal_to: s.equal_to.clone(),
                excluded: s.excluded.clone(),
                self_loops,
            });
        }
        self.run_steps(graph.node_count(), wanted, &steps, uploading, f)
    }

    /// Uploads `wanted` (adjacencies over `node_count` nodes, numbered as `steps` name
    /// them) unless they are on the device already, then `steps`, and runs `f` on them;
    /// notes the upload time (from `uploading`) and the run time.
    fn run_steps<T>(
        &self,
        node_count: usize,
        wanted: Vec<Arc<Adjacency>>,
        steps: &[StepProgram],
        uploading: Instant,
        f: impl FnOnce(&Gpu, &DeviceGraph, &DeviceProgram) -> fixlog_cuda::Result<T>,
    ) -> Result<T, Error> {
        let uploaded_bytes = self.hold_lists(node_count, wanted)?;
        self.run_resident(steps, uploading, uploaded_bytes, f)
    }

    /// Uploads `wanted` (adjacencies over `node_count` nodes) as the graph on the
    /// device unless they are there already; returns the bytes uploaded.
    fn hold_lists(&self, node_count: usize, wanted: Vec<Arc<Adjacency>>) -> Result<usize, Error> {
        let mut resident = self.resident.borrow_mut();
        // The same adjacencies of a graph of the same size: the device copy is still
        // right (see `OnDevice::Lists`).
        let reuse = matches!(&*resident, Some((OnDevice::Lists(have), device))
            if device.node_count() == node_count
                && have.len() == wanted.len()
                && have.iter().zip(&wanted).all(|(a, b)| Arc::ptr_eq(a, b)));
        let mut uploaded_bytes = 0;
        if !reuse {
            *resident = None; // give the device memory back first
            let offsets: Vec<Vec<u64>> = wanted
                .iter()
                .map(|a| a.csr().0.iter().map(|&o| o as u64).collect())
                .collect();
            let refs: Vec<AdjacencyRef> = wanted
                .iter()
                .zip(&offsets)
                .map(|(a, o)| AdjacencyRef {
                    offsets: o,
                    targets: a.csr().1,
                })
                .collect();
            let device = DeviceGraph::upload(&self.gpu, node_count, &refs).map_err(gpu_error)?;
            uploaded_bytes = device.bytes();
            *resident = Some((OnDevice::Lists(wanted), device));
        }
        Ok(uploaded_bytes)
    }

    /// The `k`-cliques along the forward lists that are the graph on the device,
    /// counted by the dedicated kernel ([`matching::count_cliques_forward`]; `k` must be
    /// one it has, [`matching::has_clique_kernel`]); notes the upload time (from
    /// `uploading`, with `uploaded_bytes` sent for the graph) and the run time.
    fn count_resident_cliques(
        &self,
        k: usize,
        uploading: Instant,
        uploaded_bytes: usize,
    ) -> Result<u64, Error> {
        let resident = self.resident.borrow();
        let Some((_, device)) = &*resident else {
            return Err(Error::BadInput(
                "internal error: the graph is not on the device".into(),
            ));
        };
        let upload = uploading.elapsed();
        let running = Instant::now();
        let out = matching::count_cliques_forward(&self.gpu, device, k).map_err(gpu_error);
        self.times.set(MatchTimes {
            upload,
            uploaded_bytes,
            run: running.elapsed(),
            ..self.times.get()
        });
        out?.ok_or_else(|| {
            Error::Exec(ExecError::Backend(format!(
                "internal error: no clique kernel for k = {k}"
            )))
        })
    }

    /// Uploads `steps` for the graph on the device and runs `f` on them; notes the
    /// upload time (from `uploading`, with `uploaded_bytes` sent for the graph) and the
    /// run time.
    fn run_resident<T>(
        &self,
        steps: &[StepProgram],
        uploading: Instant,
        uploaded_bytes: usize,
        f: impl FnOnce(&Gpu, &DeviceGraph, &DeviceProgram) -> fixlog_cuda::Result<T>,
    ) -> Result<T, Error> {
        let resident = self.resident.borrow();
        let Some((_, device)) = &*resident else {
            return Err(Error::BadInput(
                "internal error: the graph is not on the device".into(),
            ));
        };
        let program = DeviceProgram::upload(&self.gpu, device, steps).map_err(gpu_error)?;
        let upload = uploading.elapsed();
        let running = Instant::now();
        let out = f(&self.gpu, device, &program).map_err(gpu_error);
        self.times.set(MatchTimes {
            upload,
            uploaded_bytes,
            run: running.elapsed(),
            ..self.times.get()
        });
        out
    }
}

/// The steps that find every `k`-clique once along forward lists of `n` nodes (lists
/// sorted, each node's holding only nodes above it, adjacency 0 on the device; `len(u)`
/// is the length of `u`'s): step 0 binds every node with at least `k - 1` forward
/// neighbours (no clique of `k` nodes is lowest elsewhere), step `i` the nodes in the
/// forward lists of all of steps `0..i`. So the nodes of a match ascend, and a match
/// is a clique's nodes in their one ascending order: no id comparison or distinctness
/// check is needed.
fn clique_steps(n: usize, len: impl Fn(usize) -> usize, k: usize) -> Vec<StepProgram> {
    // Node numbers are below `u32::MAX` (`GraphBuilder::build`).
    let everything = n as u32;
    let mut steps: Vec<StepProgram> = (0..k)
        .map(|i| StepProgram {
            sources: (0..i).map(|earlier| (earlier, 0)).collect(),
            const_upper: everything,
            ..StepProgram::default()
        })
        .collect();
    if let Some(first) = steps.first_mut() {
        first.all_candidates = (0..n)
            .filter(|&u| len(u) + 1 >= k)
            .map(|u| u as u32)
            .collect();
    }
    steps
}

/// [`clique_steps`] along host forward lists.
#[cfg(test)]
fn clique_steps_of(forward: &Adjacency, k: usize) -> Vec<StepProgram> {
    let offsets = forward.csr().0;
    clique_steps(offsets.len() - 1, |u| offsets[u + 1] - offsets[u], k)
}

/// `cliques` times `factor` (the matches per `k`-clique), or the error that the count
/// does not fit 64 bits.
fn times_factor(cliques: u64, k: usize, factor: u64) -> Result<u64, Error> {
    cliques.checked_mul(factor).ok_or_else(|| {
        Error::Exec(ExecError::Backend(format!(
            "the count is {cliques} {k}-cliques times {factor} matches each, which does not \
             fit in 64 bits"
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clique_steps_intersect_every_earlier_forward_list() {
        // Forward lists of a 4-clique 0-1-2-3 plus a pendant 3-4 (4 above 3).
        let forward =
            Adjacency::from_pairs(5, &[(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (3, 4)])
                .expect("in range");
        let steps = clique_steps_of(&forward, 3);
        assert_eq!(steps.len(), 3);
        // Nodes with at least 2 forward neighbours start a triangle.
        assert_eq!(steps[0].all_candidates, vec![0, 1]);
        assert!(steps[0].sources.is_empty());
        assert_eq!(steps[1].sources, vec![(0, 0)]);
        assert_eq!(steps[2].sources, vec![(0, 0), (1, 0)]);
        for s in &steps {
            assert_eq!((s.const_lower, s.const_upper), (0, 5));
            assert!(s.lower_from.is_empty() && s.upper_from.is_empty());
            assert!(s.distinct_from.is_empty() && s.filter_bits.is_none());
        }
        assert_eq!(clique_steps_of(&forward, 4)[0].all_candidates, vec![0]);
        assert!(clique_steps_of(&forward, 5)[0].all_candidates.is_empty());
    }

    /// What `matching::count` computes for `steps` over `adjacencies`
    /// (`kernels/match.cu`'s `match_count`, level by level), depth first on the host;
    /// for the fields the clique steps use (the others must be empty).
    fn count_on_host(adjacencies: &[&Adjacency], steps: &[StepProgram]) -> u64 {
        fn extend(adjacencies: &[&Adjacency], steps: &[StepProgram], row: &mut Vec<u32>) -> u64 {
            let Some(s) = steps.get(row.len()) else {
                return 1;
            };
            assert!(s.filter_bits.is_none() && s.distinct_from.is_empty());
            assert!(s.equal_to.is_empty() && s.excluded.is_empty() && s.self_loops.is_empty());
            let lo = s
                .lower_from
                .iter()
                .map(|&(st, add)| row[st].saturating_add(add))
                .fold(s.const_lower, u32::max);
            let hi = s
                .upper_from
                .iter()
                .map(|&(st, add)| row[st].saturating_add(add))
                .fold(s.const_upper, u32::min);
            let candidates: Vec<u32> = match s.sources.split_first() {
                None => s.all_candidates.clone(),
                Some((&(st, a), rest)) => adjacencies[a]
                    .neighbours(row[st])
                    .iter()
                    .copied()
                    .filter(|&c| {
                        rest.iter()
                            .all(|&(st, a)| adjacencies[a].neighbours(row[st]).contains(&c))
                    })
                    .collect(),
            };
            let mut total = 0;
            for c in candidates.into_iter().filter(|&c| lo <= c && c < hi) {
                row.push(c);
                total += extend(adjacencies, steps, row);
                row.pop();
            }
            total
        }
        extend(adjacencies, steps, &mut Vec::new())
    }

    /// The clique steps over a graph's forward lists, run as the device runs them,
    /// times `R`, give the CPU's count of every clique pattern: random directed and
    /// undirected graphs with self-loops, repeated and typed edges; 3 to 5 nodes, UNIQ
    /// and EMB.
    #[test]
    fn clique_steps_count_as_the_cpu_does() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut below = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let mut nonzero = 0;
        for case in 0..120 {
            let n = 2 + below(30);
            let percent = [15, 40, 70][below(3) as usize];
            let mut edges = String::new();
            for a in 0..n {
                for b in 0..n {
                    if below(100) < percent / 2 || (a == b && below(100) < 10) {
                        let t = ["", "\tT", "\tU"][below(3) as usize];
                        edges.push_str(&format!("{a}\t{b}{t}\n"));
                    }
                }
            }
            let undirected = case % 2 == 0;
            let graph = Graph::from_text(&edges, None, &fixlog_match::LoadOptions { undirected })
                .expect("a graph");
            let forward = Arc::clone(graph.forward_by_degree());
            for k in 3..=5usize {
                let names: Vec<String> = (0..k).map(|i| format!("n{i}")).collect();
                let mut pairs = Vec::new();
                for i in 0..k {
                    for j in i + 1..k {
                        pairs.push(format!("({})--({})", names[i], names[j]));
                    }
                }
                let chain: Vec<String> = (1..k)
                    .map(|i| format!("id({}) < id({})", names[i - 1], names[i]))
                    .collect();
                for filter in [format!(" WHERE {}", chain.join(" AND ")), String::new()] {
                    let text = format!("MATCH {}{filter} RETURN count(*)", pairs.join(", "));
                    let pattern = Pattern::parse(&text).expect("a pattern");
                    let (kk, factor) = graph
                        .clique_factor(&pattern, Semantics::Iso)
                        .expect("a clique pattern");
                    assert_eq!(kk, k);
                    let steps = clique_steps_of(&forward, k);
                    let cliques = count_on_host(&[&forward], &steps);
                    nonzero += usize::from(cliques > 0);
                    assert_eq!(
                        times_factor(cliques, k, factor).ok(),
                        graph.count_with(&pattern, Semantics::Iso).ok(),
                        "case {case}, undirected {undirected}: {text}\n{edges}"
                    );
                }
            }
        }
        assert!(nonzero > 200, "only {nonzero} counts found a clique");
    }

    #[test]
    fn an_overflowing_clique_count_is_an_error() {
        assert_eq!(times_factor(1 << 40, 3, 6).ok(), Some(6 << 40));
        let err = times_factor(u64::MAX / 3, 4, 24).expect_err("overflows");
        assert!(err.to_string().contains("does not fit in 64 bits"), "{err}");
    }
}
