//! The CPU backend's joins that give back only their new rows (`join_absorbed` over
//! input grouped by the output's first column, `fixlog_cpu`'s `new_rows`) against the
//! ordinary way (`join`, then sort, deduplicate and subtract `old`), on random inputs:
//! groups large enough for the bitmap (and some too small for it), second columns of
//! small and wide spans (edge values included, past the bitmap's span), filters,
//! inner indexes and `old` relations of several runs, 1 and 4 threads.

use fixlog_cpu::CpuBackend;
use fixlog_exec::{Absorbed, Backend, EvalContext, OpSpec};
use fixlog_logical::{CmpOp, ColType, SymbolTable, Value};
use fixlog_plan::{Cond, PExpr};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as u32
    }
    fn below(&mut self, n: u32) -> u32 {
        self.next() % n.max(1)
    }
}

/// `n` rows of `arity` values below `domain` (with `edges`, now and then an edge
/// value, which makes the span too wide for the bitmap).
fn rows(rng: &mut Rng, n: usize, arity: usize, domain: u32, edges: bool) -> Vec<Vec<Value>> {
    (0..n)
        .map(|_| {
            (0..arity)
                .map(|_| match rng.below(if edges { 50 } else { u32::MAX }) {
                    0 => u32::MAX,
                    1 => 0x8000_0000,
                    _ => rng.below(domain),
                })
                .collect()
        })
        .collect()
}

fn relation(be: &CpuBackend, mut rows: Vec<Vec<Value>>, runs: usize) -> fixlog_cpu::CpuRelation {
    rows.sort_unstable();
    rows.dedup();
    let arity = rows.first().map_or(2, |r| r.len());
    let mut rel = be.empty_relation(arity).unwrap();
    let size = rows.len().div_ceil(runs.max(1)).max(1);
    for part in rows.chunks(size) {
        let run = be.relation_from_rows(arity, part.concat()).unwrap();
        rel = be.merge_disjoint(rel, &run).unwrap();
    }
    rel
}

/// One random case; whether the join gave back its new rows itself.
fn case(be: &CpuBackend, seed: u64) -> bool {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let syms = SymbolTable::new();
    let ctx = EvalContext::new(&syms);
    let in_arity = 2 + rng.below(2) as usize;
    let group = rng.below(in_arity as u32) as usize;
    let domain = [16, 200, 5000][rng.below(3) as usize];
    let edges = seed % 4 == 1;
    // Rows per group: large (the bitmap) or a few (the ordinary way).
    let groups = 1 + rng.below(if seed.is_multiple_of(3) { 400 } else { 12 }) as usize;
    let n = 40 + rng.below(1500) as usize;
    let mut input = rows(&mut rng, n, in_arity, domain, edges);
    for r in &mut input {
        r[group] = rng.below(groups as u32);
    }
    input.sort_by_key(|r| r[group]);
    // The inner relation: (k, v), keyed on k from input column `key_col`.
    let key_col = rng.below(in_arity as u32) as usize;
    let m = 10 + rng.below(600) as usize;
    let inner_rows = rows(&mut rng, m, 2, domain, edges);
    let inner = relation(be, inner_rows, 1);
    let mut index = be.build_index(&inner, &[0, 1], 1).unwrap();
    if rng.below(2) == 0 {
        let more = relation(be, rows(&mut rng, 50, 2, domain, edges), 1);
        let more = be.difference(&more, &inner).unwrap();
        be.extend_index(&mut index, &more).unwrap();
    }
    // The second output column: the inner's value, or an input column.
    let second = if rng.below(4) == 0 {
        PExpr::Col(rng.below(in_arity as u32) as usize)
    } else {
        PExpr::Col(in_arity + 1)
    };
    let filters = if rng.below(2) == 0 {
        vec![Cond::Compare {
            op: CmpOp::Ne,
            ty: ColType::Number,
            lhs: PExpr::Col(group),
            rhs: second.clone(),
        }]
    } else {
        Vec::new()
    };
    let spec = OpSpec::Join {
        input_arity: in_arity,
        order: vec![0, 1],
        key_len: 1,
        key: vec![PExpr::Col(key_col)],
        filters,
        project: vec![PExpr::Col(group), second],
        distinct: rng.below(2) == 0,
    };
    assert!(spec.new_rows_shape().is_some());
    let code = be
        .prepare(std::slice::from_ref(&spec), &ctx)
        .unwrap()
        .remove(0);
    let batch = be
        .batch_from_rows(in_arity, input.concat(), input.len())
        .unwrap();
    // `old`: some of what the join makes and other rows, in several runs.
    let made = be.join(&batch, &index, &code, &ctx).unwrap();
    let made_rows: Vec<Vec<Value>> = be
        .batch_rows(&made)
        .unwrap()
        .chunks(2)
        .map(|r| r.to_vec())
        .collect();
    let mut old_rows: Vec<Vec<Value>> = made_rows
        .iter()
        .filter(|_| rng.below(3) == 0)
        .cloned()
        .collect();
    old_rows.extend(rows(&mut rng, 30, 2, domain, true));
    let old = relation(be, old_rows, 1 + rng.below(4) as usize);
    let want = be.sort_unique_minus(made, &old).unwrap();
    let (got, new) = match be.join_absorbed(&batch, &index, &code, &ctx, &old).unwrap() {
        Absorbed::New { tuples, .. } => (tuples, true),
        Absorbed::Rows(rows) => (be.sort_unique_minus(rows, &old).unwrap(), false),
    };
    assert_eq!(
        be.relation_rows(&got).unwrap(),
        be.relation_rows(&want).unwrap(),
        "seed {seed}: {spec:?}"
    );
    new
}

#[test]
fn new_rows_match_the_ordinary_join() {
    for threads in [1, 4] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let new = pool.install(|| (0..300).filter(|&seed| case(&CpuBackend, seed)).count());
        // Both ways are exercised.
        assert!((60..240).contains(&new), "{new} of 300 cases gave new rows");
        eprintln!("{threads} threads: {new} of 300 cases gave new rows");
    }
}
