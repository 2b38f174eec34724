//! The CPU backend's operators against obviously-correct implementations (BTreeSet,
//! nested loops), on random inputs and on edge cases, in pools of 1 and 4 threads.

use fixlog_exec::cpu::{CpuBackend, CpuBatch, CpuRelation};
use fixlog_exec::{Backend, EvalContext};
use fixlog_logical::value::{eval_binary, eval_functor};
use fixlog_logical::{AggFunc, BinOp, CmpOp, ColType, Functor, SymbolTable, Value};
use fixlog_plan::{Cond, PExpr};
use proptest::prelude::*;
use std::collections::BTreeSet;

// ---- helpers ----------------------------------------------------------------------------

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u32) -> u32 {
        (self.next() % n as u64) as u32
    }
}

fn random_rows(rng: &mut Rng, arity: usize, n: usize, domain: u32) -> Vec<Value> {
    (0..n * arity)
        .map(|_| match rng.below(50) {
            0 => u32::MAX,
            1 => u32::MAX - rng.below(3),
            _ => rng.below(domain),
        })
        .collect()
}

fn to_set(arity: usize, rows: &[Value]) -> BTreeSet<Vec<Value>> {
    if arity == 0 {
        return BTreeSet::new();
    }
    rows.chunks_exact(arity).map(|r| r.to_vec()).collect()
}

fn flat(set: &BTreeSet<Vec<Value>>) -> Vec<Value> {
    set.iter().flatten().copied().collect()
}

fn sorted_rows(arity: usize, rows: &[Value], len: usize) -> Vec<Vec<Value>> {
    let mut v: Vec<Vec<Value>> = if arity == 0 {
        vec![Vec::new(); len]
    } else {
        rows.chunks_exact(arity).map(|r| r.to_vec()).collect()
    };
    v.sort();
    v
}

fn rel(be: &CpuBackend, arity: usize, rows: &[Value]) -> CpuRelation {
    be.relation_from_rows(arity, rows.to_vec()).unwrap()
}

/// A relation made of several runs: merged piece by piece.
fn multi_run_rel(be: &CpuBackend, arity: usize, rows: &[Value], pieces: usize) -> CpuRelation {
    let mut r = be.empty_relation(arity);
    let n = rows.len() / arity.max(1);
    let step = n.div_ceil(pieces.max(1)).max(1);
    let mut lo = 0;
    while lo < n {
        let hi = (lo + step).min(n);
        let part = rel(be, arity, &rows[lo * arity..hi * arity]);
        r = be.merge(&r, &part).unwrap();
        lo = hi;
    }
    r
}

fn batch_of(arity: usize, rows: &[Value]) -> CpuBatch {
    CpuBatch::from_rows(arity, rows.to_vec(), rows.len() / arity.max(1))
}

fn pool(n: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .unwrap()
}

/// Naive evaluation of a plan expression over a joined tuple.
fn eval(e: &PExpr, t: &[Value], syms: &SymbolTable) -> Option<Value> {
    match e {
        PExpr::Col(c) => Some(t[*c]),
        PExpr::Const(v) => Some(*v),
        PExpr::Unary { op, ty, arg } => {
            fixlog_logical::value::eval_unary(*op, *ty, eval(arg, t, syms)?)
        }
        PExpr::Binary { op, ty, lhs, rhs } => {
            eval_binary(*op, *ty, eval(lhs, t, syms)?, eval(rhs, t, syms)?)
        }
        PExpr::Functor { func, args } => {
            let v: Option<Vec<Value>> = args.iter().map(|a| eval(a, t, syms)).collect();
            eval_functor(*func, &v?, syms)
        }
    }
}

fn holds(c: &Cond, t: &[Value], syms: &SymbolTable) -> bool {
    match c {
        Cond::Compare { op, ty, lhs, rhs } => match (eval(lhs, t, syms), eval(rhs, t, syms)) {
            (Some(a), Some(b)) => fixlog_logical::value::compare_with_symbols(*op, *ty, a, b, syms),
            _ => false,
        },
        Cond::Predicate { .. } => unimplemented!(),
    }
}

fn emit(
    filters: &[Cond],
    project: &[PExpr],
    t: &[Value],
    syms: &SymbolTable,
) -> Option<Vec<Value>> {
    if !filters.iter().all(|f| holds(f, t, syms)) {
        return None;
    }
    project.iter().map(|e| eval(e, t, syms)).collect()
}

fn col(c: usize) -> PExpr {
    PExpr::Col(c)
}

// ---- set operations ---------------------------------------------------------------------

fn check_sort_unique(arity: usize, rows: &[Value]) {
    let be = CpuBackend;
    let r = rel(&be, arity, rows);
    let expect = to_set(arity, rows);
    assert_eq!(be.relation_len(&r), expect.len());
    assert_eq!(be.relation_rows(&r), flat(&expect));
}

fn check_set_ops(arity: usize, a: &[Value], b: &[Value], pa: usize, pb: usize) {
    let be = CpuBackend;
    let (ra, rb) = (
        multi_run_rel(&be, arity, a, pa),
        multi_run_rel(&be, arity, b, pb),
    );
    let (sa, sb) = (to_set(arity, a), to_set(arity, b));
    assert_eq!(be.relation_rows(&ra), flat(&sa));
    let u = be.merge(&ra, &rb).unwrap();
    let su: BTreeSet<_> = sa.union(&sb).cloned().collect();
    assert_eq!(be.relation_len(&u), su.len());
    assert_eq!(be.relation_rows(&u), flat(&su));
    let d = be.difference(&ra, &rb).unwrap();
    let sd: BTreeSet<_> = sa.difference(&sb).cloned().collect();
    assert_eq!(be.relation_len(&d), sd.len());
    assert_eq!(be.relation_rows(&d), flat(&sd));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn prop_sort_unique(arity in 1usize..11, seed in 1u64.., n in 0usize..600, domain in 1u32..50) {
        let mut rng = Rng(seed);
        check_sort_unique(arity, &random_rows(&mut rng, arity, n, domain));
    }

    #[test]
    fn prop_set_ops(arity in 1usize..10, seed in 1u64.., na in 0usize..400, nb in 0usize..400,
                    domain in 1u32..12, pa in 1usize..6, pb in 1usize..4) {
        let mut rng = Rng(seed);
        let a = random_rows(&mut rng, arity, na, domain);
        let b = random_rows(&mut rng, arity, nb, domain);
        check_set_ops(arity, &a, &b, pa, pb);
    }
}

#[test]
fn sort_unique_large_radix_paths() {
    let mut rng = Rng(42);
    for &(arity, n, domain) in &[
        (1, 100_000, 1 << 20),
        (2, 200_000, 5000),
        (2, 70_000, u32::MAX),
        (3, 50_000, 40),
        (4, 40_000, 1 << 30),
        (8, 20_000, 3),
        (9, 20_000, 4),
        (2, 100_000, 1), // all equal except the u32::MAX noise
    ] {
        check_sort_unique(arity, &random_rows(&mut rng, arity, n, domain));
    }
}

#[test]
fn set_ops_large() {
    let mut rng = Rng(7);
    for &(arity, na, nb, domain, pa, pb) in &[
        (2, 150_000, 100_000, 600, 5, 2),
        (2, 200_000, 300, 600, 3, 1),
        (1, 100, 200_000, 1 << 18, 1, 4),
        (3, 80_000, 80_000, 50, 2, 3),
        (10, 40_000, 40_000, 3, 2, 2),
    ] {
        let a = random_rows(&mut rng, arity, na, domain);
        let b = random_rows(&mut rng, arity, nb, domain);
        check_set_ops(arity, &a, &b, pa, pb);
    }
}

#[test]
fn lsm_runs_stay_few() {
    let be = CpuBackend;
    let mut rng = Rng(3);
    let mut full = be.empty_relation(2);
    let mut expect = BTreeSet::new();
    for i in 0..300 {
        let n = 1 + (i * 37) % 500;
        let rows = random_rows(&mut rng, 2, n, 1 << 16);
        let delta = be.difference(&rel(&be, 2, &rows), &full).unwrap();
        full = be.merge(&full, &delta).unwrap();
        expect.extend(to_set(2, &rows));
        assert!(full.run_count() <= 8, "{} runs", full.run_count());
    }
    assert_eq!(be.relation_rows(&full), flat(&expect));
    // A delta computed against one relation, merged into another: no shortcut taken.
    let a = rel(&be, 2, &[1, 1, 2, 2]);
    let b = rel(&be, 2, &[2, 2, 3, 3]);
    let d = be.difference(&b, &a).unwrap(); // {3,3}, disjoint from a
    let other = rel(&be, 2, &[3, 3, 4, 4]);
    let m = be.merge(&other, &d).unwrap();
    assert_eq!(be.relation_rows(&m), vec![3, 3, 4, 4]);
    let m = be.merge(&a, &d).unwrap();
    assert_eq!(be.relation_rows(&m), vec![1, 1, 2, 2, 3, 3]);
}

#[test]
fn arity_zero() {
    let be = CpuBackend;
    let empty = be.empty_relation(0);
    let one = be
        .sort_unique(be.concat(0, vec![be.unit(), be.unit()]).unwrap())
        .unwrap();
    assert_eq!(be.relation_len(&empty), 0);
    assert_eq!(be.relation_len(&one), 1);
    assert_eq!(be.relation_len(&be.merge(&one, &one).unwrap()), 1);
    assert_eq!(be.relation_len(&be.merge(&empty, &one).unwrap()), 1);
    assert_eq!(be.relation_len(&be.difference(&one, &one).unwrap()), 0);
    assert_eq!(be.relation_len(&be.difference(&one, &empty).unwrap()), 1);
    assert_eq!(
        be.relation_len(&be.relation_from_rows(0, vec![]).unwrap()),
        0
    );
    let ctx = EvalContext {
        symbols: &SymbolTable::new(),
    };
    // Join of the unit with a nullary relation, projecting a constant.
    let idx = be.build_index(&one, &[], 0).unwrap();
    let out = be
        .join(&be.unit(), &idx, &[], &[], &[PExpr::Const(7)], &ctx)
        .unwrap();
    assert_eq!(out.rows(), vec![7]);
    let idx0 = be.build_index(&empty, &[], 0).unwrap();
    assert_eq!(
        be.join(&be.unit(), &idx0, &[], &[], &[], &ctx)
            .unwrap()
            .len(),
        0
    );
    assert_eq!(be.antijoin(be.unit(), &idx, &[], &ctx).unwrap().len(), 0);
    assert_eq!(be.antijoin(be.unit(), &idx0, &[], &ctx).unwrap().len(), 1);
    let mut idx0 = idx0;
    be.extend_index(&mut idx0, &one).unwrap();
    assert_eq!(be.index_len(&idx0), 1);
    // Scan of a nullary relation projecting nothing: one empty tuple.
    let s = be.scan(&one, &[], &[], &ctx).unwrap();
    assert_eq!((s.len(), be.batch_arity(&s)), (1, 0));
    // Projection to arity 0 from arity 2.
    let r = rel(&be, 2, &[1, 2, 3, 4]);
    let s = be.scan(&r, &[], &[], &ctx).unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(be.relation_len(&be.sort_unique(s).unwrap()), 1);
}

// ---- joins and pipelines ----------------------------------------------------------------

fn reference_join(
    input: &[Vec<Value>],
    inner: &BTreeSet<Vec<Value>>,
    order: &[usize],
    key: &[PExpr],
    filters: &[Cond],
    project: &[PExpr],
    syms: &SymbolTable,
) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for r in input {
        let Some(k): Option<Vec<Value>> = key.iter().map(|e| eval(e, r, syms)).collect() else {
            continue;
        };
        for t in inner {
            if k.iter().enumerate().all(|(i, &v)| t[order[i]] == v) {
                let joined: Vec<Value> = r.iter().chain(t.iter()).copied().collect();
                if let Some(o) = emit(filters, project, &joined, syms) {
                    out.push(o);
                }
            }
        }
    }
    out.sort();
    out
}

/// A random projection/filter over `width` joined columns.
fn random_pipeline(rng: &mut Rng, width: usize, out_arity: usize) -> (Vec<Cond>, Vec<PExpr>) {
    let mut project = Vec::new();
    for _ in 0..out_arity {
        project.push(match rng.below(6) {
            0 => PExpr::Const(rng.below(5)),
            1 => PExpr::Binary {
                op: BinOp::Add,
                ty: ColType::Number,
                lhs: Box::new(col(rng.below(width as u32) as usize)),
                rhs: Box::new(PExpr::Const(1)),
            },
            2 => PExpr::Binary {
                op: BinOp::Div,
                ty: ColType::Number,
                lhs: Box::new(PExpr::Const(100)),
                rhs: Box::new(col(rng.below(width as u32) as usize)),
            },
            _ => col(rng.below(width as u32) as usize),
        });
    }
    let mut filters = Vec::new();
    for _ in 0..rng.below(3) {
        let ops = [
            CmpOp::Eq,
            CmpOp::Ne,
            CmpOp::Lt,
            CmpOp::Le,
            CmpOp::Gt,
            CmpOp::Ge,
        ];
        let ty = if rng.below(2) == 0 {
            ColType::Number
        } else {
            ColType::Unsigned
        };
        filters.push(Cond::Compare {
            op: ops[rng.below(6) as usize],
            ty,
            lhs: col(rng.below(width as u32) as usize),
            rhs: if rng.below(2) == 0 {
                col(rng.below(width as u32) as usize)
            } else {
                PExpr::Const(rng.below(6))
            },
        });
    }
    (filters, project)
}

fn random_order(rng: &mut Rng, arity: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..arity).collect();
    for i in (1..arity).rev() {
        order.swap(i, rng.below(i as u32 + 1) as usize);
    }
    order
}

fn check_join(
    seed: u64,
    in_arity: usize,
    inner_arity: usize,
    n_in: usize,
    n_inner: usize,
    domain: u32,
) {
    let be = CpuBackend;
    let syms = SymbolTable::new();
    let ctx = EvalContext { symbols: &syms };
    let mut rng = Rng(seed);
    let input_rows = random_rows(&mut rng, in_arity, n_in, domain);
    let inner_rows = random_rows(&mut rng, inner_arity, n_inner, domain);
    let order = random_order(&mut rng, inner_arity);
    let key_len = rng.below(inner_arity as u32 + 1) as usize;
    let key: Vec<PExpr> = (0..key_len)
        .map(|_| {
            if in_arity > 0 && rng.below(4) > 0 {
                col(rng.below(in_arity as u32) as usize)
            } else {
                PExpr::Const(rng.below(domain))
            }
        })
        .collect();
    let width = in_arity + inner_arity;
    let (filters, project) = if width == 0 {
        (vec![], vec![PExpr::Const(1)])
    } else {
        let k = rng.below(4) as usize;
        random_pipeline(&mut rng, width, k)
    };
    // Inner relation split in runs, indexed, then extended with the rest.
    let half = (n_inner / 2) * inner_arity;
    let first = multi_run_rel(&be, inner_arity, &inner_rows[..half], 2);
    let rest = rel(&be, inner_arity, &inner_rows[half..]);
    let rest = be.difference(&rest, &first).unwrap();
    let mut index = be.build_index(&first, &order, key_len).unwrap();
    be.extend_index(&mut index, &rest).unwrap();
    let all = to_set(inner_arity, &inner_rows);
    assert_eq!(be.index_len(&index), all.len());
    let input = batch_of(in_arity, &input_rows);
    let input_v: Vec<Vec<Value>> = if in_arity == 0 {
        vec![]
    } else {
        input_rows
            .chunks_exact(in_arity)
            .map(|r| r.to_vec())
            .collect()
    };
    let expect = reference_join(&input_v, &all, &order, &key, &filters, &project, &syms);
    let mut results = Vec::new();
    for threads in [1, 4] {
        let out = pool(threads)
            .install(|| be.join(&input, &index, &key, &filters, &project, &ctx))
            .unwrap();
        assert_eq!(be.batch_arity(&out), project.len());
        assert_eq!(sorted_rows(project.len(), &out.rows(), out.len()), expect);
        results.push(out.rows());
    }
    assert_eq!(
        results[0], results[1],
        "join output order depends on threads"
    );
    // join_distinct: the same set, possibly fewer repeats, never a row join did not make.
    let expect_set: BTreeSet<Vec<Value>> = expect.iter().cloned().collect();
    let mut distinct_results = Vec::new();
    for threads in [1, 4] {
        let out = pool(threads)
            .install(|| be.join_distinct(&input, &index, &key, &filters, &project, &ctx))
            .unwrap();
        assert_eq!(be.batch_arity(&out), project.len());
        let rows = sorted_rows(project.len(), &out.rows(), out.len());
        assert!(rows.len() <= expect.len());
        let set: BTreeSet<Vec<Value>> = rows.into_iter().collect();
        assert_eq!(set, expect_set);
        distinct_results.push(out.rows());
    }
    assert_eq!(
        distinct_results[0], distinct_results[1],
        "join_distinct output depends on threads"
    );
    // Antijoin against the same index and key (key over input columns only).
    if key
        .iter()
        .all(|k| !matches!(k, PExpr::Col(c) if *c >= in_arity))
    {
        let kept = be.antijoin(input.clone(), &index, &key, &ctx).unwrap();
        let expect: Vec<Vec<Value>> = {
            let mut v: Vec<Vec<Value>> = input_v
                .iter()
                .filter(|r| {
                    let k: Vec<Value> = key.iter().map(|e| eval(e, r, &syms).unwrap()).collect();
                    !all.iter()
                        .any(|t| k.iter().enumerate().all(|(i, &v)| t[order[i]] == v))
                })
                .cloned()
                .collect();
            v.sort();
            v
        };
        if in_arity > 0 {
            assert_eq!(sorted_rows(in_arity, &kept.rows(), kept.len()), expect);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn prop_join(seed in 1u64.., in_arity in 1usize..4, inner_arity in 1usize..5,
                 n_in in 0usize..80, n_inner in 0usize..120, domain in 1u32..8) {
        check_join(seed, in_arity, inner_arity, n_in, n_inner, domain);
    }
}

#[test]
fn join_edge_cases() {
    // Wide inner (arity 9+), all-equal keys, sizes not multiple of chunk sizes.
    check_join(11, 2, 10, 300, 700, 3);
    check_join(12, 1, 2, 2000, 5000, 2);
    check_join(13, 3, 9, 1000, 1000, 4);
    check_join(14, 2, 2, 4099, 10_007, 200);
    check_join(15, 1, 1, 1, 1, 1);
}

#[test]
fn join_drops_failing_expressions() {
    let be = CpuBackend;
    let syms = SymbolTable::new();
    let ctx = EvalContext { symbols: &syms };
    let inner = rel(&be, 2, &[0, 1, 1, 2, 2, 0]);
    let index = be.build_index(&inner, &[0, 1], 1).unwrap();
    let input = batch_of(1, &[0, 1, 2]);
    // head: 10 / y — dropped where y == 0.
    let project = vec![PExpr::Binary {
        op: BinOp::Div,
        ty: ColType::Number,
        lhs: Box::new(PExpr::Const(10)),
        rhs: Box::new(col(2)),
    }];
    let out = be
        .join(&input, &index, &[col(0)], &[], &project, &ctx)
        .unwrap();
    assert_eq!(
        sorted_rows(1, &out.rows(), out.len()),
        vec![vec![5], vec![10]]
    );
    // A mismatched key is an error, not a panic.
    assert!(be.join(&input, &index, &[], &[], &project, &ctx).is_err());
}

#[test]
fn symbols_in_filters_and_functors() {
    let be = CpuBackend;
    let syms = SymbolTable::new();
    let ctx = EvalContext { symbols: &syms };
    let (b, a, c) = (syms.intern("b"), syms.intern("a"), syms.intern("c"));
    let r = rel(&be, 1, &[b, a, c]);
    let filters = vec![Cond::Compare {
        op: CmpOp::Lt,
        ty: ColType::Symbol,
        lhs: col(0),
        rhs: PExpr::Const(c),
    }];
    let project = vec![PExpr::Functor {
        func: Functor::Cat,
        args: vec![col(0), PExpr::Const(syms.intern("!"))],
    }];
    let out = be.scan(&r, &filters, &project, &ctx).unwrap();
    let mut got: Vec<String> = out
        .rows()
        .iter()
        .map(|&v| syms.resolve(v).to_string())
        .collect();
    got.sort();
    assert_eq!(got, vec!["a!", "b!"]);
}

#[test]
fn scan_filter_row_numbers() {
    let be = CpuBackend;
    let syms = SymbolTable::new();
    let ctx = EvalContext { symbols: &syms };
    let mut rng = Rng(5);
    for &(arity, n) in &[(1usize, 10usize), (3, 5000), (9, 777)] {
        let rows = random_rows(&mut rng, arity, n, 20);
        let r = multi_run_rel(&be, arity, &rows, 3);
        let set = to_set(arity, &rows);
        // Identity scan.
        let proj: Vec<PExpr> = (0..arity).map(col).collect();
        let s = be.scan(&r, &[], &proj, &ctx).unwrap();
        assert_eq!(
            sorted_rows(arity, &s.rows(), s.len()),
            set.iter().cloned().collect::<Vec<_>>()
        );
        // Filtered, projected scan and filter.
        let (filters, project) = random_pipeline(&mut rng, arity, 2);
        let s = be.scan(&r, &filters, &project, &ctx).unwrap();
        let mut expect: Vec<Vec<Value>> = set
            .iter()
            .filter_map(|t| emit(&filters, &project, t, &syms))
            .collect();
        expect.sort();
        assert_eq!(sorted_rows(2, &s.rows(), s.len()), expect);
        let input = batch_of(arity, &rows);
        let f = be.filter(&input, &filters, &project, &ctx).unwrap();
        let mut expect: Vec<Vec<Value>> = rows
            .chunks_exact(arity)
            .filter_map(|t| emit(&filters, &project, t, &syms))
            .collect();
        expect.sort();
        assert_eq!(sorted_rows(2, &f.rows(), f.len()), expect);
        // Row numbers: input order preserved, numbers 0..len.
        let joined = be
            .concat(arity, vec![input.clone(), input.clone()])
            .unwrap();
        let w = be.with_row_numbers(&joined).unwrap();
        assert_eq!(be.batch_arity(&w), arity + 1);
        let wr = w.rows();
        let jr = joined.rows();
        for (i, row) in wr.chunks_exact(arity + 1).enumerate() {
            assert_eq!(&row[..arity], &jr[i * arity..(i + 1) * arity]);
            assert_eq!(row[arity] as usize, i);
        }
    }
}

#[test]
fn aggregates() {
    let be = CpuBackend;
    let syms = SymbolTable::new();
    let ctx = EvalContext { symbols: &syms };
    let input = batch_of(1, &[10, 20, 30]);
    let n = |x: i32| x as u32;
    // groups: row 0 -> {5, -3}, row 1 -> {}, row 2 -> {7}
    let groups = || batch_of(2, &[0, 5, 0, n(-3), 2, 7]);
    let proj = vec![col(0), col(1)];
    let run = |func, ty, groups: CpuBatch| {
        let out = be
            .aggregate(&input, groups, func, ty, &[], &proj, &ctx)
            .unwrap();
        sorted_rows(2, &out.rows(), out.len())
    };
    assert_eq!(
        run(AggFunc::Count, ColType::Number, batch_of(1, &[0, 0, 2])),
        vec![vec![10, 2], vec![20, 0], vec![30, 1]]
    );
    assert_eq!(
        run(AggFunc::Sum, ColType::Number, groups()),
        vec![vec![10, 2], vec![20, 0], vec![30, 7]]
    );
    assert_eq!(
        run(AggFunc::Min, ColType::Number, groups()),
        vec![vec![10, n(-3)], vec![30, 7]]
    );
    assert_eq!(
        run(AggFunc::Max, ColType::Number, groups()),
        vec![vec![10, 5], vec![30, 7]]
    );
    assert_eq!(
        run(AggFunc::Min, ColType::Unsigned, groups()),
        vec![vec![10, 5], vec![30, 7]]
    );
    assert_eq!(
        run(AggFunc::Mean, ColType::Number, groups()),
        vec![vec![10, 1.0f32.to_bits()], vec![30, 7.0f32.to_bits()]]
    );
    let fg = batch_of(2, &[1, 1.5f32.to_bits(), 1, 2.0f32.to_bits()]);
    assert_eq!(
        run(AggFunc::Sum, ColType::Float, fg),
        vec![
            vec![10, 0.0f32.to_bits()],
            vec![20, 3.5f32.to_bits()],
            vec![30, 0.0f32.to_bits()]
        ]
    );
    // Filter on the aggregate value: count > 0.
    let filters = vec![Cond::Compare {
        op: CmpOp::Gt,
        ty: ColType::Number,
        lhs: col(1),
        rhs: PExpr::Const(0),
    }];
    let out = be
        .aggregate(
            &input,
            batch_of(1, &[0, 0, 2]),
            AggFunc::Count,
            ColType::Number,
            &filters,
            &[col(0)],
            &ctx,
        )
        .unwrap();
    assert_eq!(
        sorted_rows(1, &out.rows(), out.len()),
        vec![vec![10], vec![30]]
    );
    // Symbols: min by string.
    let (z, a) = (syms.intern("zz"), syms.intern("aa"));
    let sg = batch_of(2, &[0, z, 0, a]);
    assert_eq!(run(AggFunc::Min, ColType::Symbol, sg), vec![vec![10, a]]);
}

#[test]
fn determinism_of_a_pipeline() {
    // TC-like step: delta(x,y) ⋈ edge(y,z) → sort_unique → difference → merge, in pools of
    // 1 and 4 threads; every intermediate must be identical.
    let be = CpuBackend;
    let syms = SymbolTable::new();
    let ctx = EvalContext { symbols: &syms };
    let mut rng = Rng(99);
    let edges = random_rows(&mut rng, 2, 30_000, 3000);
    let run = |threads: usize| {
        pool(threads).install(|| {
            let edge = rel(&be, 2, &edges);
            let idx = be.build_index(&edge, &[0, 1], 1).unwrap();
            let mut full = edge.clone();
            let mut delta = edge.clone();
            let mut trace = Vec::new();
            for _ in 0..4 {
                let d = be.scan(&delta, &[], &[col(0), col(1)], &ctx).unwrap();
                let j = be
                    .join(&d, &idx, &[col(1)], &[], &[col(0), col(3)], &ctx)
                    .unwrap();
                trace.push(j.rows());
                let new = be.sort_unique(j).unwrap();
                delta = be.difference(&new, &full).unwrap();
                full = be.merge(&full, &delta).unwrap();
                trace.push(be.relation_rows(&delta));
            }
            trace.push(be.relation_rows(&full));
            trace
        })
    };
    assert_eq!(run(1), run(4));
}

#[test]
fn join_distinct_drops_repeats_of_a_fanning_join() {
    // Every input row (x, y) joins 50 inner rows (y, z) with z in 0..50, and the
    // projection keeps (x, z): 40 rows per x repeat the same 50 outputs.
    let be = CpuBackend;
    let syms = SymbolTable::new();
    let ctx = EvalContext { symbols: &syms };
    let mut input = Vec::new();
    for x in 0..20u32 {
        for y in 0..40u32 {
            input.extend_from_slice(&[x, y]);
        }
    }
    let mut inner = Vec::new();
    for y in 0..40u32 {
        for z in 0..50u32 {
            inner.extend_from_slice(&[y, z]);
        }
    }
    let index = be.build_index(&rel(&be, 2, &inner), &[0, 1], 1).unwrap();
    let batch = batch_of(2, &input);
    let project = [col(0), col(3)];
    let all = be
        .join(&batch, &index, &[col(1)], &[], &project, &ctx)
        .unwrap();
    let distinct = be
        .join_distinct(&batch, &index, &[col(1)], &[], &project, &ctx)
        .unwrap();
    assert_eq!(all.len(), 20 * 40 * 50);
    // The window is per unit of parallel work (a few input rows), so a repeat survives
    // once per unit that an x spans; most are dropped.
    assert!(
        distinct.len() * 10 <= all.len(),
        "{} of {} rows kept",
        distinct.len(),
        all.len()
    );
    let set: BTreeSet<Vec<Value>> = sorted_rows(2, &distinct.rows(), distinct.len())
        .into_iter()
        .collect();
    assert_eq!(set.len(), 20 * 50);
}
