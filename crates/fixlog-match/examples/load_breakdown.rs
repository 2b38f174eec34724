use fixlog_match::graph::{AdjacencyKey, Direction};
use fixlog_match::{GraphBuilder, Pattern, Semantics};
use std::io::Read;
use std::path::Path;
use std::time::Instant;

fn main() {
    let t0 = Instant::now();
    let args: Vec<String> = std::env::args().collect();
    let path = Path::new(&args[1]);
    let threads: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let raw = std::fs::read(path).unwrap();
        let read = ms(t);
        let t = Instant::now();
        let mut out = Vec::with_capacity(raw.len() * 4);
        flate2::read::MultiGzDecoder::new(raw.as_slice()).read_to_end(&mut out).unwrap();
        let gunzip = ms(t);
        let t = Instant::now();
        let text = String::from_utf8(out).unwrap();
        let utf8 = ms(t);
        let t = Instant::now();
        let mut b = GraphBuilder::new(true);
        fixlog_match::load::add_edges(&mut b, &text, path).unwrap();
        let parse = ms(t);
        let t = Instant::now();
        let g = b.build().unwrap();
        let build = ms(t);
        let p = Pattern::parse(&std::env::var("Q").unwrap_or("MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)".into())).unwrap();
        let t = Instant::now();
        let _ = g.count_order(&p, Semantics::Iso);
        let order = ms(t);
        let t = Instant::now();
        let n = g.count_with(&p, Semantics::Iso);
        let count = ms(t);
        let t = Instant::now();
        let e = g.edge_count();
        let stats = ms(t);
        let _ = (AdjacencyKey { direction: Direction::Out, edge_type: None }, e);
        println!("{n}: read {read:.1} gunzip {gunzip:.1} utf8 {utf8:.1} parse {parse:.1} build {build:.1} order {order:.1} count {count:.1} stats {stats:.1} total {:.1}", ms(t0));
    });
}
