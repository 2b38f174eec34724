//! Where the time of one `fixlog match` count goes, stage by stage, through the
//! library's own calls (what the CLI runs, in the same order):
//!
//! ```text
//! cargo run --release -p fixlog-match --example load_breakdown -- EDGES [THREADS] [PATTERN]
//! ```
//!
//! Prints milliseconds for reading and gunzipping the file (`load::read_text`),
//! parsing it (`load::add_edges`), numbering the nodes (`GraphBuilder::build`),
//! deciding the node order (`Graph::count_order`, which builds what the count needs:
//! the forward lists of a clique, or the degree-ordered copy), counting, and the stored
//! edge count `--stats` prints. The edge list is read as undirected; THREADS defaults
//! to 2, PATTERN to the symmetry-broken triangle.

use fixlog_match::{GraphBuilder, Pattern, Semantics};
use std::path::Path;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let start = Instant::now();
    let args: Vec<String> = std::env::args().collect();
    let path = Path::new(
        args.get(1)
            .ok_or("usage: load_breakdown EDGES [THREADS] [PATTERN]")?,
    );
    let threads: usize = args.get(2).map_or(Ok(2), |s| s.parse())?;
    let pattern = Pattern::parse(args.get(3).map_or(
        "MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)",
        String::as_str,
    ))?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    pool.install(|| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let text = fixlog_match::load::read_text(path)?;
        let read = ms(t);
        let t = Instant::now();
        let mut builder = GraphBuilder::new(true);
        fixlog_match::load::add_edges(&mut builder, &text, path)?;
        drop(text);
        let parse = ms(t);
        let t = Instant::now();
        let graph = builder.build()?;
        let build = ms(t);
        let t = Instant::now();
        let order = graph.count_order(&pattern, Semantics::Iso);
        let ordering = ms(t);
        let t = Instant::now();
        let count = graph.count_with(&pattern, Semantics::Iso).unwrap();
        let counting = ms(t);
        let t = Instant::now();
        let edges = graph.edge_count();
        let stats = ms(t);
        println!(
            "count {count} ({} order), {edges} stored edges; ms: read+gunzip {read:.1}, \
             parse {parse:.1}, build {build:.1}, order {ordering:.1}, count {counting:.1}, \
             edge count {stats:.1}, total {:.1}",
            if order.degree_order { "degree" } else { "id" },
            ms(start)
        );
        Ok(())
    })
}
