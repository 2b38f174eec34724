//! `fixlog match`: load the graph, parse the pattern, then explain, count or list.
//!
//! Rows are written as they come from the matcher (which hands them over in a fixed
//! order whatever `-j` is) through one buffered writer; a closed pipe (`| head`) ends
//! the listing quietly.

use fixlog::graph::{Graph, LoadOptions, Output, Pattern, Semantics};
use fixlog::Error;
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
    let matching = Instant::now();
    let rows = match pattern.output {
        Output::Count => {
            let count = graph.count_with(pattern, command.semantics);
            println!("{count}");
            1
        }
        Output::Nodes(_) => list(&graph, pattern, command.semantics)?,
    };
    if command.stats {
        eprintln!(
            "fixlog match: {} nodes, {} stored edges; load {:.3} s, match {:.3} s, {} row{}, {} thread{}",
            graph.node_count(),
            graph.edge_count(),
            loaded.as_secs_f64(),
            matching.elapsed().as_secs_f64(),
            rows,
            if rows == 1 { "" } else { "s" },
            rayon::current_num_threads(),
            if rayon::current_num_threads() == 1 { "" } else { "s" },
        );
    }
    Ok(())
}

/// Writes one line per match; returns the number of lines.
fn list(graph: &Graph, pattern: &Pattern, semantics: Semantics) -> Result<u64, Error> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut failure: Option<std::io::Error> = None;
    let mut line = Vec::with_capacity(64);
    let mut number = itoa::Buffer::new();
    let rows = graph.for_each_row(pattern, semantics, |row| {
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
    });
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
