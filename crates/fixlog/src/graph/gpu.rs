//! Pattern matching on the GPU: the plan of the CPU matcher (`fixlog_match::plan`) run by
//! the device's level-wise matcher (`fixlog_cuda::matching`), so counts and rows are
//! the same as on the CPU, in the same order.
//!
//! A [`GpuMatcher`] holds a CUDA context and the device copies of the adjacencies the
//! last pattern needed (kept while the next pattern needs the same ones, so many
//! patterns on one graph upload it once); each pattern is planned on the host
//! (candidate filters included), its steps translated and uploaded, and run.

use super::{Graph, Pattern, Semantics};
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
    /// The adjacencies on the device, in the order of `device`'s table.
    uploaded: RefCell<Option<(Vec<Arc<Adjacency>>, DeviceGraph)>>,
    /// Where the time of the last pattern went.
    times: std::cell::Cell<MatchTimes>,
}

/// Where the time of a pattern run on the GPU went (`fixlog match --stats`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MatchTimes {
    /// Planning on the host (candidate filters included).
    pub plan: Duration,
    /// Copying the adjacencies (unless already there) and the steps to the device.
    pub upload: Duration,
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
            uploaded: RefCell::new(None),
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

    /// The number of matches (as [`Graph::count_with`]), counted in id order: the
    /// degree-ordered copy that the CPU counts on where it may ([`Graph::count_order`])
    /// made the GPU slower, not faster (docs/gpu-results.md, round 11: triangles of a
    /// 30M-edge power-law graph, 3.7 s in id order against 4.0 s plus 4.5 s of
    /// renumbering), so the device keeps the graph as loaded until a measurement says
    /// otherwise. (The device cache is keyed on the adjacencies held, so a copy would
    /// be told apart.)
    pub fn count_with(
        &self,
        graph: &Graph,
        pattern: &Pattern,
        semantics: Semantics,
    ) -> Result<u64, Error> {
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
        let mut uploaded = self.uploaded.borrow_mut();
        // The same adjacencies (held, so their addresses cannot be reused) of a graph
        // of the same size: the device copy is still right. A graph and its
        // degree-ordered copy (`Graph::degree_ordered`) share no adjacency, so a plan
        // on one never reuses the other's device copy.
        let reuse = matches!(&*uploaded, Some((have, device))
            if device.node_count() == graph.node_count()
                && have.len() == wanted.len()
                && have.iter().zip(&wanted).all(|(a, b)| Arc::ptr_eq(a, b)));
        if !reuse {
            *uploaded = None; // give the device memory back first
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
            let device =
                DeviceGraph::upload(&self.gpu, graph.node_count(), &refs).map_err(gpu_error)?;
            *uploaded = Some((wanted, device));
        }
        let Some((_, device)) = &*uploaded else {
            return Err(Error::BadInput(
                "internal error: the graph is not on the device".into(),
            ));
        };
        let program = DeviceProgram::upload(&self.gpu, device, &steps).map_err(gpu_error)?;
        let upload = uploading.elapsed();
        let running = Instant::now();
        let out = f(&self.gpu, device, &program).map_err(gpu_error);
        self.times.set(MatchTimes {
            upload,
            run: running.elapsed(),
            ..self.times.get()
        });
        out
    }
}
