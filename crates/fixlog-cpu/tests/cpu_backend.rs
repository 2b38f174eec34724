//! The CPU backend: the operator interface's conformance suite (every operator against
//! obviously-correct implementations) in pools of 1 and 4 threads, and what is
//! particular to this backend: results independent of the thread count, few runs.

use fixlog_cpu::{CpuBackend, CpuRelation};
use fixlog_exec::{conformance, Backend, EvalContext, OpSpec};
use fixlog_logical::{SymbolTable, Value};
use fixlog_plan::PExpr;
use std::collections::BTreeSet;

fn pool(n: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .unwrap()
}

#[test]
fn conformance_one_thread() {
    pool(1).install(|| conformance::run_all(&CpuBackend));
}

#[test]
fn conformance_four_threads() {
    pool(4).install(|| conformance::run_all(&CpuBackend));
}

/// The conformance suite with every run of every relation and index spilled to a file
/// at every operator's entry (marks at 0), and every merge written straight to a file:
/// each operator reads its inputs through memory maps.
#[test]
fn conformance_with_everything_spilled() {
    use fixlog_cpu::{budget, spill};
    let root = tempfile::tempdir().unwrap();
    let run_budget = budget::Budget::new(None);
    let run_spill = spill::Spill::new(
        run_budget.clone(),
        spill::SpillSettings {
            temp_dir: Some(root.path().to_path_buf()),
            high: 0,
            low: 0,
            min_bytes: 0,
        },
    );
    let (b, s) = (run_budget.clone(), run_spill.clone());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .start_handler(move |_| {
            budget::set_current(Some(b.clone()));
            spill::set_current(Some(s.clone()));
        })
        .exit_handler(|_| {
            budget::set_current(None);
            spill::set_current(None);
        })
        .build()
        .unwrap();
    pool.install(|| conformance::run_all(&CpuBackend));
    let stats = run_spill.stats();
    assert!(stats.error.is_none(), "{:?}", stats.error);
    assert!(stats.files > 100, "{stats:?}");
    assert!(stats.written_bytes > 0, "{stats:?}");
    let dir = run_spill.dir().unwrap();
    assert!(dir.is_dir());
    run_spill.close();
    assert!(!dir.exists());
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn rows(&mut self, n: usize, domain: u64) -> Vec<Value> {
        (0..n).map(|_| (self.next() % domain) as Value).collect()
    }
}

fn rel(be: &CpuBackend, arity: usize, rows: &[Value]) -> CpuRelation {
    be.relation_from_rows(arity, rows.to_vec()).unwrap()
}

#[test]
fn runs_stay_few() {
    let be = CpuBackend;
    let mut rng = Rng(3);
    let mut full = be.empty_relation(2).unwrap();
    let mut expect = BTreeSet::new();
    for i in 0..300 {
        let n = 1 + (i * 37) % 500;
        let rows = rng.rows(2 * n, 1 << 16);
        let delta = be.difference(&rel(&be, 2, &rows), &full).unwrap();
        full = be.merge_disjoint(full, &delta).unwrap();
        expect.extend(rows.chunks_exact(2).map(|r| r.to_vec()));
        assert!(full.run_count() <= 8, "{} runs", full.run_count());
    }
    let flat: Vec<Value> = expect.into_iter().flatten().collect();
    assert_eq!(be.relation_rows(&full).unwrap(), flat);
}

#[test]
fn results_do_not_depend_on_threads() {
    // TC-like step: delta(x,y) ⋈ edge(y,z) → sort_unique → difference → merge, in pools of
    // 1 and 4 threads; every intermediate must be identical, batch order included.
    let be = CpuBackend;
    let syms = SymbolTable::new();
    let ctx = EvalContext::new(&syms);
    let mut rng = Rng(99);
    let edges = rng.rows(60_000, 3000);
    let specs = [
        OpSpec::Scan {
            arity: 2,
            filters: vec![],
            project: vec![PExpr::Col(0), PExpr::Col(1)],
        },
        OpSpec::Join {
            input_arity: 2,
            order: vec![0, 1],
            key_len: 1,
            key: vec![PExpr::Col(1)],
            filters: vec![],
            project: vec![PExpr::Col(0), PExpr::Col(3)],
            distinct: false,
        },
        OpSpec::Join {
            input_arity: 2,
            order: vec![0, 1],
            key_len: 1,
            key: vec![PExpr::Col(1)],
            filters: vec![],
            project: vec![PExpr::Col(0), PExpr::Col(3)],
            distinct: true,
        },
    ];
    let codes = be.prepare(&specs, &ctx).unwrap();
    let run = |threads: usize| {
        pool(threads).install(|| {
            let edge = rel(&be, 2, &edges);
            let idx = be.build_index(&edge, &[0, 1], 1).unwrap();
            let mut full = edge.clone();
            let mut delta = edge.clone();
            let mut trace = Vec::new();
            for _ in 0..4 {
                let d = be.scan(&delta, &codes[0], &ctx).unwrap();
                let j = be.join(&d, &idx, &codes[1], &ctx).unwrap();
                trace.push(j.rows());
                trace.push(be.join(&d, &idx, &codes[2], &ctx).unwrap().rows());
                let new = be.sort_unique(j).unwrap();
                delta = be.difference(&new, &full).unwrap();
                full = be.merge_disjoint(full, &delta).unwrap();
                trace.push(be.relation_rows(&delta).unwrap());
            }
            trace.push(be.relation_rows(&full).unwrap());
            trace
        })
    };
    assert_eq!(run(1), run(4));
}
