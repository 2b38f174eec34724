//! `fixlog match`: load the graph, parse the pattern, then explain, count or list.
//!
//! Rows are written as they come from the matcher (which hands them over in a fixed
//! order whatever `-j` is) through one buffered writer; a closed pipe (`| head`) ends
//! the listing quietly.

use fixlog::graph::{Graph, LoadOptions, Output, Pattern, Semantics};
use fixlog::{BackendKind, Error};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

pub struct MatchCommand {
    pub pattern: String,
    pub edges: PathBuf,
    pub nodes: Option<PathBuf>,
    pub undirected: bool,
    pub semantics: Semantics,
    pub jobs: Option<usize>,
    pub explain: bool,
    pub stats: bool,
    pub backend: BackendKind,
    pub gpu_memory_limit: Option<usize>,
}

pub fn run(command: &MatchCommand) -> Result<(), Error> {
    if command.jobs == Some(0) {
        return Err(Error::BadInput("-j must be at least 1".into()));
    }
    // The pattern first: a typo should not wait for a large graph to load.
    let pattern = Pattern::parse(&command.pattern)?;
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(j) = command.jobs {
        pool = pool.num_threads(j);
    }
    let pool = pool.build().map_err(|e| {
        Error::BadInput(format!(
            "cannot start {} threads: {e}",
            command.jobs.unwrap_or(0)
        ))
    })?;
    pool.install(|| run_in_pool(command, &pattern))
}

fn run_in_pool(command: &MatchCommand, pattern: &Pattern) -> Result<(), Error> {
    let start = Instant::now();
    let options = LoadOptions {
        undirected: command.undirected,
    };
    let graph = Graph::load(&command.edges, command.nodes.as_deref(), &options)?;
    let loaded = start.elapsed();
    if command.explain {
        print!("{}", graph.explain(pattern, command.semantics));
        return Ok(());
    }
    // Opening the GPU (context, kernels from the disk cache: a few tenths of a second)
    // is timed apart from matching.
    let setup = Instant::now();
    // A 4-cycle count by wedges on the CPU beats the GPU's generic plan: `auto` keeps
    // it on the CPU.
    let wedges = matches!(
        graph.count_path(pattern, command.semantics),
        fixlog::graph::CountPath::FourCycle { .. }
    );
    let gpu = gpu_for(command, pattern.nodes.len(), wedges)?;
    let setup = setup.elapsed();
    // Deciding the node order of a count on the CPU, and renumbering the graph by
    // degree when it is the degree order (built once per graph, like an adjacency), or
    // building the forward lists of a clique count or the lists of a 4-cycle count, is
    // timed apart from matching. The GPU decides on its own (see
    // `GpuMatcher::count_with`): a clique count along the same forward lists, built
    // within its plan time, anything else (4-cycles too) in id order.
    let ordering = Instant::now();
    let order = match pattern.output {
        Output::Count if gpu.is_none() => Some(graph.count_order(pattern, command.semantics)),
        _ => None,
    };
    let degree_order = order.as_ref().is_some_and(|o| o.degree_order);
    let descending = order.as_ref().is_some_and(|o| o.descending);
    let forward_lists = order.as_ref().is_some_and(|o| o.forward_lists);
    let cycle_wedges = order.as_ref().is_some_and(|o| o.cycle_wedges);
    let ordering = ordering.elapsed();
    #[cfg(not(feature = "cuda"))]
    let _ = setup;
    let matching = Instant::now();
    // The GPU's node order, when it is not the id order: said after the run.
    let (rows, on, gpu_order) = match gpu {
        #[cfg(feature = "cuda")]
        Some(gpu) => {
            let rows = match pattern.output {
                Output::Count => {
                    let count = gpu.count_with(&graph, pattern, command.semantics)?;
                    println!("{count}");
                    1
                }
                Output::Nodes(_) => {
                    list(|f| gpu.for_each_row(&graph, pattern, command.semantics, f))?
                }
            };
            let t = gpu.times();
            let gpu_order = t.forward_lists.map(|built| {
                format!(
                    "degree order (forward lists built {}in {:.3} s, within the plan time)",
                    if t.forward_on_device {
                        "on the device "
                    } else {
                        ""
                    },
                    built.as_secs_f64()
                )
            });
            (
                rows,
                format!(
                    "the GPU ({}; opened in {:.3} s; plan {:.3} s, upload {:.3} s ({:.1} MB of \
                     {}), run {:.4} s)",
                    gpu.device(),
                    setup.as_secs_f64(),
                    t.plan.as_secs_f64(),
                    t.upload.as_secs_f64(),
                    t.uploaded_bytes as f64 / 1e6,
                    if t.forward_on_device {
                        "edges, sent within the plan time"
                    } else {
                        "lists"
                    },
                    t.run.as_secs_f64()
                ),
                gpu_order,
            )
        }
        #[cfg(not(feature = "cuda"))]
        Some(never) => match never {},
        None => {
            let rows = match pattern.output {
                Output::Count => {
                    let count = graph.count_with(pattern, command.semantics)?;
                    println!("{count}");
                    1
                }
                Output::Nodes(_) => {
                    list(|f| Ok(graph.for_each_row(pattern, command.semantics, f)))?
                }
            };
            let threads = rayon::current_num_threads();
            (
                rows,
                format!("{threads} thread{}", if threads == 1 { "" } else { "s" }),
                None,
            )
        }
    };
    if command.stats {
        let order = if let Some(gpu_order) = gpu_order {
            gpu_order
        } else if cycle_wedges {
            format!(
                "4-cycle wedge count (lists in degree order built in {:.3} s)",
                ordering.as_secs_f64()
            )
        } else if degree_order {
            format!(
                "degree order{} ({} in {:.3} s)",
                if descending { ", descending" } else { "" },
                if forward_lists {
                    "forward lists built"
                } else {
                    "renumbered"
                },
                ordering.as_secs_f64()
            )
        } else {
            "id order".to_string()
        };
        let matched = matching.elapsed();
        // (Counting the stored edges would build an adjacency the match did not need.)
        let edges = match graph.edge_count_if_known() {
            Some(n) => format!("{n} stored edges"),
            None => format!("{} edges read", graph.edges_read()),
        };
        eprintln!(
            "fixlog match: {} nodes, {edges}; load {:.3} s, match {:.3} s, {} row{}, {order}, on {on}",
            graph.node_count(),
            loaded.as_secs_f64(),
            matched.as_secs_f64(),
            rows,
            if rows == 1 { "" } else { "s" },
        );
    }
    Ok(())
}

#[cfg(feature = "cuda")]
type GpuMatcher = fixlog::graph::gpu::GpuMatcher;
#[cfg(not(feature = "cuda"))]
enum GpuMatcher {}

/// The GPU to match on, if the backend choice gives one: `cuda` must have one; `auto`
/// takes one where the probe finds a usable GPU, it opens and the pattern is within the
/// GPU matcher's size (32 nodes), unless the CPU counts the pattern by wedges (a
/// 4-cycle count: `cpu_wedges`), else the CPU.
fn gpu_for(
    command: &MatchCommand,
    pattern_nodes: usize,
    cpu_wedges: bool,
) -> Result<Option<GpuMatcher>, Error> {
    #[cfg(feature = "cuda")]
    {
        match command.backend {
            BackendKind::Cpu => Ok(None),
            BackendKind::Cuda => GpuMatcher::new(command.gpu_memory_limit).map(Some),
            BackendKind::Auto => {
                if pattern_nodes > fixlog_cuda::matching::MAX_STEPS
                    || cpu_wedges
                    || !fixlog_cuda::probe().available
                {
                    return Ok(None);
                }
                Ok(GpuMatcher::new(command.gpu_memory_limit).ok())
            }
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (command.gpu_memory_limit, pattern_nodes, cpu_wedges);
        match command.backend {
            BackendKind::Cuda => Err(Error::NoGpu(fixlog_cuda::probe().reason)),
            _ => Ok(None),
        }
    }
}

/// Writes one line per row `for_each_row` hands over; returns the number of lines.
fn list(
    for_each_row: impl FnOnce(&mut dyn FnMut(&[u64]) -> bool) -> Result<u64, Error>,
) -> Result<u64, Error> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut failure: Option<std::io::Error> = None;
    let mut line = Vec::with_capacity(64);
    let mut number = itoa::Buffer::new();
    let rows = for_each_row(&mut |row: &[u64]| {
        line.clear();
        for (i, id) in row.iter().enumerate() {
            if i > 0 {
                line.push(b'\t');
            }
            line.extend_from_slice(number.format(*id).as_bytes());
        }
        line.push(b'\n');
        match out.write_all(&line) {
            Ok(()) => true,
            Err(e) => {
                failure = Some(e);
                false
            }
        }
    })?;
    let failure = failure.or_else(|| out.flush().err());
    match failure {
        Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(rows),
        Some(e) => Err(Error::WriteFile {
            path: PathBuf::from("<stdout>"),
            source: e,
        }),
        None => Ok(rows),
    }
}
