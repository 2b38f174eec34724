//! The operator interface's conformance suite: every [`Backend`] operator against
//! obviously-correct implementations (sets, nested loops), on random inputs and edge
//! cases. One suite for every backend: the CPU backend runs it in its tests, the CUDA
//! backend on a GPU machine (`fixlog-cuda`'s `cuda_conformance` example).
//!
//! Each check panics with the seed and the shapes of a failing case. [`checks`] lists
//! them by name so that a runner can report every failure, not just the first.

use crate::backend::{
    Absorbed, Backend, EvalContext, ExecError, ExecResult, IntersectAtomSpec, OpSpec,
};
use fixlog_logical::value::{compare_with_symbols, eval_binary, eval_functor, eval_unary};
use fixlog_logical::{AggFunc, BinOp, CmpOp, ColType, Functor, SymbolTable, UnaryOp, Value};
use fixlog_plan::{Cond, PExpr};
use std::collections::BTreeSet;

/// A named check of the suite.
pub type Check<B> = (&'static str, fn(&B));

/// Every check, in order.
pub fn checks<B: Backend>() -> Vec<Check<B>> {
    vec![
        ("sort_unique", sort_unique::<B>),
        ("sort_unique_large", sort_unique_large::<B>),
        ("set_ops", set_ops::<B>),
        ("set_ops_large", set_ops_large::<B>),
        ("runs_stay_few", runs_stay_few::<B>),
        ("arity_zero", arity_zero::<B>),
        ("joins", joins::<B>),
        ("join_edge_cases", join_edge_cases::<B>),
        (
            "join_drops_failing_expressions",
            join_drops_failing_expressions::<B>,
        ),
        ("typed_comparisons", typed_comparisons::<B>),
        ("arithmetic", arithmetic::<B>),
        (
            "symbols_in_filters_and_functors",
            symbols_in_filters_and_functors::<B>,
        ),
        ("scan_filter_row_numbers", scan_filter_row_numbers::<B>),
        ("aggregates", aggregates::<B>),
        ("join_distinct_fanning", join_distinct_fanning::<B>),
        ("join_large_input", join_large_input::<B>),
        ("join_absorbed", join_absorbed::<B>),
        ("join_absorbed_grouped", join_absorbed_grouped::<B>),
        ("intersections", intersections::<B>),
    ]
}

/// Runs every check; panics on the first failure.
pub fn run_all<B: Backend>(be: &B) {
    for (_, check) in checks::<B>() {
        check(be);
    }
}

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
        (self.next() % n.max(1) as u64) as u32
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

fn rel<B: Backend>(be: &B, arity: usize, rows: &[Value]) -> B::Relation {
    be.relation_from_rows(arity, rows.to_vec()).unwrap()
}

fn rows_of<B: Backend>(be: &B, r: &B::Relation) -> Vec<Value> {
    be.relation_rows(r).unwrap()
}

/// A relation made of several runs: merged piece by piece.
fn multi_run_rel<B: Backend>(be: &B, arity: usize, rows: &[Value], pieces: usize) -> B::Relation {
    let mut r = be.empty_relation(arity).unwrap();
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

fn batch_of<B: Backend>(be: &B, arity: usize, rows: &[Value]) -> B::Batch {
    be.batch_from_rows(arity, rows.to_vec(), rows.len() / arity.max(1))
        .unwrap()
}

fn batch_sorted<B: Backend>(be: &B, b: &B::Batch) -> Vec<Vec<Value>> {
    sorted_rows(
        be.batch_arity(b),
        &be.batch_rows(b).unwrap(),
        be.batch_len(b),
    )
}

fn prepare<B: Backend>(be: &B, spec: OpSpec, syms: &SymbolTable) -> B::Code {
    let ctx = EvalContext::new(syms);
    let mut codes = be.prepare(&[spec], &ctx).unwrap();
    assert_eq!(codes.len(), 1);
    codes.pop().unwrap()
}

/// Naive evaluation of a plan expression over a joined tuple.
fn eval(e: &PExpr, t: &[Value], syms: &SymbolTable) -> Option<Value> {
    match e {
        PExpr::Col(c) => Some(t[*c]),
        PExpr::Const(v) => Some(*v),
        PExpr::Unary { op, ty, arg } => eval_unary(*op, *ty, eval(arg, t, syms)?),
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
            (Some(a), Some(b)) => compare_with_symbols(*op, *ty, a, b, syms),
            _ => false,
        },
        Cond::Predicate {
            pred,
            args,
            negated,
        } => {
            let Some(v) = args
                .iter()
                .map(|a| eval(a, t, syms))
                .collect::<Option<Vec<_>>>()
            else {
                return false;
            };
            fixlog_logical::value::eval_predicate(*pred, &v, *negated, syms)
        }
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

fn bin(op: BinOp, ty: ColType, lhs: PExpr, rhs: PExpr) -> PExpr {
    PExpr::Binary {
        op,
        ty,
        lhs: Box::new(lhs),
        rhs: Box::new(rhs),
    }
}

fn scan_spec(arity: usize, filters: Vec<Cond>, project: Vec<PExpr>) -> OpSpec {
    OpSpec::Scan {
        arity,
        filters,
        project,
    }
}

fn filter_spec(arity: usize, filters: Vec<Cond>, project: Vec<PExpr>) -> OpSpec {
    OpSpec::Filter {
        arity,
        filters,
        project,
    }
}

#[allow(clippy::too_many_arguments)]
fn join_spec(
    input_arity: usize,
    order: &[usize],
    key_len: usize,
    key: Vec<PExpr>,
    filters: Vec<Cond>,
    project: Vec<PExpr>,
    distinct: bool,
) -> OpSpec {
    OpSpec::Join {
        input_arity,
        order: order.to_vec(),
        key_len,
        key,
        filters,
        project,
        distinct,
    }
}

/// Scan of a relation through a spec; the result sorted.
fn scan_rows<B: Backend>(
    be: &B,
    r: &B::Relation,
    spec: OpSpec,
    syms: &SymbolTable,
) -> Vec<Vec<Value>> {
    scan_all(be, r, &[spec], syms).pop().unwrap_or_default()
}

/// Scans of a relation through several specs prepared in one call; each result sorted.
fn scan_all<B: Backend>(
    be: &B,
    r: &B::Relation,
    specs: &[OpSpec],
    syms: &SymbolTable,
) -> Vec<Vec<Vec<Value>>> {
    let ctx = EvalContext::new(syms);
    let codes = be.prepare(specs, &ctx).unwrap();
    assert_eq!(codes.len(), specs.len());
    codes
        .iter()
        .map(|code| batch_sorted(be, &be.scan(r, code, &ctx).unwrap()))
        .collect()
}

// ---- set operations ---------------------------------------------------------------------

fn check_sort_unique<B: Backend>(be: &B, arity: usize, rows: &[Value]) {
    let r = rel(be, arity, rows);
    let expect = to_set(arity, rows);
    assert_eq!(be.relation_len(&r), expect.len(), "arity {arity}");
    assert_eq!(rows_of(be, &r), flat(&expect), "arity {arity}");
    // The same through a batch with repeats.
    let n = rows.len() / arity.max(1);
    let b = be.batch_from_rows(arity, rows.to_vec(), n).unwrap();
    let r = be.sort_unique(b).unwrap();
    assert_eq!(rows_of(be, &r), flat(&expect), "arity {arity} (batch)");
}

fn check_set_ops<B: Backend>(be: &B, arity: usize, a: &[Value], b: &[Value], pa: usize, pb: usize) {
    let what = format!("arity {arity}, |a| {}, |b| {}", a.len(), b.len());
    let (ra, rb) = (
        multi_run_rel(be, arity, a, pa),
        multi_run_rel(be, arity, b, pb),
    );
    let (sa, sb) = (to_set(arity, a), to_set(arity, b));
    assert_eq!(rows_of(be, &ra), flat(&sa), "{what}");
    let u = be.merge(&ra, &rb).unwrap();
    let su: BTreeSet<_> = sa.union(&sb).cloned().collect();
    assert_eq!(be.relation_len(&u), su.len(), "{what}");
    assert_eq!(rows_of(be, &u), flat(&su), "{what}");
    let d = be.difference(&ra, &rb).unwrap();
    let sd: BTreeSet<_> = sa.difference(&sb).cloned().collect();
    assert_eq!(be.relation_len(&d), sd.len(), "{what}");
    assert_eq!(rows_of(be, &d), flat(&sd), "{what}");
    // merge_disjoint of b − a into a is the union.
    let bd = be.difference(&rb, &ra).unwrap();
    let u2 = be.merge_disjoint(ra.clone(), &bd).unwrap();
    assert_eq!(rows_of(be, &u2), flat(&su), "{what} (merge_disjoint)");
    // sort_unique_minus of a batch of b (with repeats) against a.
    let nb = b.len() / arity.max(1);
    let doubled: Vec<Value> = b.iter().chain(b.iter()).copied().collect();
    let batch = be.batch_from_rows(arity, doubled, 2 * nb).unwrap();
    let nm = be.sort_unique_minus(batch, &ra).unwrap();
    let snm: BTreeSet<_> = sb.difference(&sa).cloned().collect();
    assert_eq!(rows_of(be, &nm), flat(&snm), "{what} (sort_unique_minus)");
    // A relation's batch sorted is the relation (a backend may share its runs), and
    // so are the pieces it is cut into, sorted and merged again.
    let whole = be.sort_unique(be.relation_batch(&u).unwrap()).unwrap();
    assert_eq!(
        rows_of(be, &whole),
        flat(&su),
        "{what} (a relation's batch sorted)"
    );
    let (head, tail) = be
        .split_batch(be.relation_batch(&u).unwrap(), su.len() / 3)
        .unwrap();
    let (head, tail) = (be.sort_unique(head).unwrap(), be.sort_unique(tail).unwrap());
    let again = be.merge(&head, &tail).unwrap();
    assert_eq!(
        rows_of(be, &again),
        flat(&su),
        "{what} (a relation's pieces sorted)"
    );
}

fn sort_unique<B: Backend>(be: &B) {
    for seed in 1..48u64 {
        let mut rng = Rng(seed * 7919);
        let arity = 1 + rng.below(10) as usize;
        let n = rng.below(600) as usize;
        let domain = 1 + rng.below(50);
        check_sort_unique(be, arity, &random_rows(&mut rng, arity, n, domain));
    }
}

fn sort_unique_large<B: Backend>(be: &B) {
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
        check_sort_unique(be, arity, &random_rows(&mut rng, arity, n, domain));
    }
}

fn set_ops<B: Backend>(be: &B) {
    for seed in 1..48u64 {
        let mut rng = Rng(seed * 104_729);
        let arity = 1 + rng.below(9) as usize;
        let (na, nb) = (rng.below(400) as usize, rng.below(400) as usize);
        let domain = 1 + rng.below(12);
        let (pa, pb) = (1 + rng.below(5) as usize, 1 + rng.below(3) as usize);
        let a = random_rows(&mut rng, arity, na, domain);
        let b = random_rows(&mut rng, arity, nb, domain);
        check_set_ops(be, arity, &a, &b, pa, pb);
    }
}

fn set_ops_large<B: Backend>(be: &B) {
    let mut rng = Rng(7);
    for &(arity, na, nb, domain, pa, pb) in &[
        (2, 150_000, 100_000, 600, 5, 2),
        (2, 200_000, 300, 600, 3, 1),
        (1, 100, 200_000, 1 << 18, 1, 4),
        (3, 80_000, 80_000, 50, 2, 3),
        (10, 40_000, 40_000, 3, 2, 2),
        // Two columns, a union past a million rows of one run and a run at least half
        // its size (a backend may merge and deduplicate at once): few repeats between
        // them, then many.
        (2, 700_000, 500_000, 1 << 16, 1, 1),
        (2, 700_000, 600_000, 1000, 1, 2),
    ] {
        let a = random_rows(&mut rng, arity, na, domain);
        let b = random_rows(&mut rng, arity, nb, domain);
        check_set_ops(be, arity, &a, &b, pa, pb);
    }
}

fn runs_stay_few<B: Backend>(be: &B) {
    let mut rng = Rng(3);
    let mut full = be.empty_relation(2).unwrap();
    let mut expect = BTreeSet::new();
    for i in 0..300 {
        let n = 1 + (i * 37) % 500;
        let rows = random_rows(&mut rng, 2, n, 1 << 16);
        let delta = be.difference(&rel(be, 2, &rows), &full).unwrap();
        full = be.merge_disjoint(full, &delta).unwrap();
        expect.extend(to_set(2, &rows));
    }
    assert_eq!(rows_of(be, &full), flat(&expect));
    // A delta computed against one relation, merged into another with `merge`.
    let a = rel(be, 2, &[1, 1, 2, 2]);
    let b = rel(be, 2, &[2, 2, 3, 3]);
    let d = be.difference(&b, &a).unwrap(); // {3,3}, disjoint from a
    let other = rel(be, 2, &[3, 3, 4, 4]);
    let m = be.merge(&other, &d).unwrap();
    assert_eq!(rows_of(be, &m), vec![3, 3, 4, 4]);
    let m = be.merge(&a, &d).unwrap();
    assert_eq!(rows_of(be, &m), vec![1, 1, 2, 2, 3, 3]);
}

fn arity_zero<B: Backend>(be: &B) {
    let syms = SymbolTable::new();
    let ctx = EvalContext::new(&syms);
    let empty = be.empty_relation(0).unwrap();
    let two_units = be.batch_from_rows(0, Vec::new(), 2).unwrap();
    let one = be.sort_unique(two_units).unwrap();
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
    // Join of the unit with a nullary relation, projecting a constant.
    let idx = be.build_index(&one, &[], 0).unwrap();
    let code = prepare(
        be,
        join_spec(0, &[], 0, vec![], vec![], vec![PExpr::Const(7)], false),
        &syms,
    );
    let out = be.join(&be.unit().unwrap(), &idx, &code, &ctx).unwrap();
    assert_eq!(be.batch_rows(&out).unwrap(), vec![7]);
    let idx0 = be.build_index(&empty, &[], 0).unwrap();
    let code = prepare(
        be,
        join_spec(0, &[], 0, vec![], vec![], vec![], false),
        &syms,
    );
    let out = be.join(&be.unit().unwrap(), &idx0, &code, &ctx).unwrap();
    assert_eq!(be.batch_len(&out), 0);
    let anti = prepare(
        be,
        OpSpec::AntiJoin {
            input_arity: 0,
            order: vec![],
            key_len: 0,
            key: vec![],
        },
        &syms,
    );
    let unit = be.unit().unwrap();
    assert_eq!(
        be.batch_len(&be.antijoin(&unit, &idx, &anti, &ctx).unwrap()),
        0
    );
    assert_eq!(
        be.batch_len(&be.antijoin(&unit, &idx0, &anti, &ctx).unwrap()),
        1
    );
    let mut idx0 = idx0;
    be.extend_index(&mut idx0, &one).unwrap();
    assert_eq!(be.index_len(&idx0), 1);
    // Scan of a nullary relation projecting nothing: one empty tuple.
    let code = prepare(be, scan_spec(0, vec![], vec![]), &syms);
    let s = be.scan(&one, &code, &ctx).unwrap();
    assert_eq!((be.batch_len(&s), be.batch_arity(&s)), (1, 0));
    // Projection to arity 0 from arity 2.
    let r = rel(be, 2, &[1, 2, 3, 4]);
    let code = prepare(be, scan_spec(2, vec![], vec![]), &syms);
    let s = be.scan(&r, &code, &ctx).unwrap();
    assert_eq!(be.batch_len(&s), 2);
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

const TYPES: [ColType; 3] = [ColType::Number, ColType::Unsigned, ColType::Float];

/// A random projection/filter over `width` joined columns.
fn random_pipeline(rng: &mut Rng, width: usize, out_arity: usize) -> (Vec<Cond>, Vec<PExpr>) {
    let c = |rng: &mut Rng| col(rng.below(width as u32) as usize);
    let mut project = Vec::new();
    for _ in 0..out_arity {
        project.push(match rng.below(7) {
            0 => PExpr::Const(rng.below(5)),
            1 => bin(BinOp::Add, ColType::Number, c(rng), PExpr::Const(1)),
            2 => bin(BinOp::Div, ColType::Number, PExpr::Const(100), c(rng)),
            3 => {
                let ty = TYPES[rng.below(3) as usize];
                let ops = [BinOp::Sub, BinOp::Mul, BinOp::Max, BinOp::Rem, BinOp::BXor];
                bin(ops[rng.below(5) as usize], ty, c(rng), c(rng))
            }
            _ => c(rng),
        });
    }
    let mut filters = Vec::new();
    for _ in 0..rng.below(3) {
        let ty = TYPES[rng.below(3) as usize];
        filters.push(Cond::Compare {
            op: CmpOp::ALL[rng.below(CmpOp::ALL.len() as u32) as usize],
            ty,
            lhs: c(rng),
            rhs: if rng.below(2) == 0 {
                c(rng)
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

/// One random join case: its data and the specs of its join, distinct join and
/// anti-join (prepared together with other cases', one `prepare` call for many).
struct JoinCase {
    what: String,
    in_arity: usize,
    inner_arity: usize,
    input_rows: Vec<Value>,
    inner_rows: Vec<Value>,
    order: Vec<usize>,
    key_len: usize,
    key: Vec<PExpr>,
    filters: Vec<Cond>,
    project: Vec<PExpr>,
}

impl JoinCase {
    fn new(
        seed: u64,
        in_arity: usize,
        inner_arity: usize,
        n_in: usize,
        n_inner: usize,
        domain: u32,
    ) -> JoinCase {
        let what = format!(
            "seed {seed}, arities {in_arity}/{inner_arity}, sizes {n_in}/{n_inner}, domain {domain}"
        );
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
        JoinCase {
            what,
            in_arity,
            inner_arity,
            input_rows,
            inner_rows,
            order,
            key_len,
            key,
            filters,
            project,
        }
    }

    /// Join, distinct join, anti-join.
    fn specs(&self) -> [OpSpec; 3] {
        let join = |distinct| {
            join_spec(
                self.in_arity,
                &self.order,
                self.key_len,
                self.key.clone(),
                self.filters.clone(),
                self.project.clone(),
                distinct,
            )
        };
        [
            join(false),
            join(true),
            OpSpec::AntiJoin {
                input_arity: self.in_arity,
                order: self.order.clone(),
                key_len: self.key_len,
                key: self.key.clone(),
            },
        ]
    }

    fn check<B: Backend>(&self, be: &B, codes: &[B::Code], syms: &SymbolTable) {
        let what = &self.what;
        let ctx = EvalContext::new(syms);
        let (in_arity, inner_arity) = (self.in_arity, self.inner_arity);
        let (order, key) = (&self.order, &self.key);
        // Inner relation split in runs, indexed, then extended with the rest.
        let half = (self.inner_rows.len() / inner_arity / 2) * inner_arity;
        let first = multi_run_rel(be, inner_arity, &self.inner_rows[..half], 2);
        let rest = rel(be, inner_arity, &self.inner_rows[half..]);
        let rest = be.difference(&rest, &first).unwrap();
        let mut index = be.build_index(&first, order, self.key_len).unwrap();
        be.extend_index(&mut index, &rest).unwrap();
        let all = to_set(inner_arity, &self.inner_rows);
        assert_eq!(be.index_len(&index), all.len(), "{what}");
        let input = batch_of(be, in_arity, &self.input_rows);
        let input_v: Vec<Vec<Value>> = if in_arity == 0 {
            vec![]
        } else {
            self.input_rows
                .chunks_exact(in_arity)
                .map(|r| r.to_vec())
                .collect()
        };
        let (filters, project) = (&self.filters, &self.project);
        let expect = reference_join(&input_v, &all, order, key, filters, project, syms);
        let out = be.join(&input, &index, &codes[0], &ctx).unwrap();
        assert_eq!(be.batch_arity(&out), project.len(), "{what}");
        assert_eq!(
            batch_sorted(be, &out),
            expect,
            "{what}: {filters:?} {project:?}"
        );
        // A distinct join: the same set, possibly fewer repeats, never a row join did
        // not make.
        let expect_set: BTreeSet<Vec<Value>> = expect.iter().cloned().collect();
        let out = be.join(&input, &index, &codes[1], &ctx).unwrap();
        assert_eq!(be.batch_arity(&out), project.len(), "{what}");
        let rows = batch_sorted(be, &out);
        assert!(rows.len() <= expect.len(), "{what}");
        let set: BTreeSet<Vec<Value>> = rows.into_iter().collect();
        assert_eq!(set, expect_set, "{what} (distinct)");
        // Anti-join against the same index and key (key over input columns only).
        if key
            .iter()
            .all(|k| !matches!(k, PExpr::Col(c) if *c >= in_arity))
        {
            let kept = be.antijoin(&input, &index, &codes[2], &ctx).unwrap();
            let mut expect: Vec<Vec<Value>> = input_v
                .iter()
                .filter(|r| {
                    let k: Vec<Value> = key.iter().map(|e| eval(e, r, syms).unwrap()).collect();
                    !all.iter()
                        .any(|t| k.iter().enumerate().all(|(i, &v)| t[order[i]] == v))
                })
                .cloned()
                .collect();
            expect.sort();
            if in_arity > 0 {
                assert_eq!(batch_sorted(be, &kept), expect, "{what} (anti-join)");
            }
        }
    }
}

/// Checks join cases whose operators are prepared in one call.
fn check_join_cases<B: Backend>(be: &B, cases: &[JoinCase]) {
    let syms = SymbolTable::new();
    let specs: Vec<OpSpec> = cases.iter().flat_map(|c| c.specs()).collect();
    let codes = be.prepare(&specs, &EvalContext::new(&syms)).unwrap();
    assert_eq!(codes.len(), specs.len());
    for (case, codes) in cases.iter().zip(codes.chunks(3)) {
        case.check(be, codes, &syms);
    }
}

fn joins<B: Backend>(be: &B) {
    let cases: Vec<JoinCase> = (1..96u64)
        .map(|seed| {
            let mut rng = Rng(seed * 15_485_863);
            let in_arity = 1 + rng.below(3) as usize;
            let inner_arity = 1 + rng.below(4) as usize;
            let n_in = rng.below(80) as usize;
            let n_inner = rng.below(120) as usize;
            let domain = 1 + rng.below(7);
            JoinCase::new(seed, in_arity, inner_arity, n_in, n_inner, domain)
        })
        .collect();
    check_join_cases(be, &cases);
}

fn join_edge_cases<B: Backend>(be: &B) {
    // Wide inner (arity 9+), all-equal keys, sizes not multiple of chunk sizes.
    let cases = [
        JoinCase::new(11, 2, 10, 300, 700, 3),
        JoinCase::new(12, 1, 2, 2000, 5000, 2),
        JoinCase::new(13, 3, 9, 1000, 1000, 4),
        JoinCase::new(14, 2, 2, 4099, 10_007, 200),
        JoinCase::new(15, 1, 1, 1, 1, 1),
        JoinCase::new(16, 2, 3, 100_000, 3000, 1000),
    ];
    check_join_cases(be, &cases);
}

fn join_drops_failing_expressions<B: Backend>(be: &B) {
    let syms = SymbolTable::new();
    let ctx = EvalContext::new(&syms);
    let inner = rel(be, 2, &[0, 1, 1, 2, 2, 0]);
    let index = be.build_index(&inner, &[0, 1], 1).unwrap();
    let input = batch_of(be, 1, &[0, 1, 2]);
    // head: 10 / y — dropped where y == 0.
    let project = vec![bin(BinOp::Div, ColType::Number, PExpr::Const(10), col(2))];
    let code = prepare(
        be,
        join_spec(1, &[0, 1], 1, vec![col(0)], vec![], project.clone(), false),
        &syms,
    );
    let out = be.join(&input, &index, &code, &ctx).unwrap();
    assert_eq!(batch_sorted(be, &out), vec![vec![5], vec![10]]);
    // A key expression that fails drops the input row: key 6 / (x - 1).
    let key = vec![bin(
        BinOp::Div,
        ColType::Number,
        PExpr::Const(2),
        bin(BinOp::Sub, ColType::Number, col(0), PExpr::Const(1)),
    )];
    let code = prepare(
        be,
        join_spec(
            1,
            &[0, 1],
            1,
            key.clone(),
            vec![],
            vec![col(0), col(2)],
            false,
        ),
        &syms,
    );
    let out = be.join(&input, &index, &code, &ctx).unwrap();
    // x=0: key 2/-1 = -2: no match; x=1: dropped; x=2: key 2 -> (2,0).
    assert_eq!(batch_sorted(be, &out), vec![vec![2, 0]]);
    // ... and keeps it in an anti-join.
    let code = prepare(
        be,
        OpSpec::AntiJoin {
            input_arity: 1,
            order: vec![0, 1],
            key_len: 1,
            key,
        },
        &syms,
    );
    let out = be.antijoin(&input, &index, &code, &ctx).unwrap();
    assert_eq!(batch_sorted(be, &out), vec![vec![0], vec![1]]);
    // A mismatched key is an error, not a panic.
    let bad = be.prepare(
        &[join_spec(1, &[0, 1], 1, vec![], vec![], project, false)],
        &ctx,
    );
    assert!(bad.is_err());
}

/// Comparisons in each type's own order: signed, unsigned, IEEE.
fn typed_comparisons<B: Backend>(be: &B) {
    let syms = SymbolTable::new();
    let f = |x: f32| x.to_bits();
    let values: Vec<Value> = vec![
        0,
        1,
        2,
        u32::MAX,
        (-5i32) as u32,
        i32::MIN as u32,
        i32::MAX as u32,
        f(1.5),
        f(-1.5),
        f(-0.0),
        f(f32::INFINITY),
        f(f32::NEG_INFINITY),
        f(f32::NAN),
        f(1e-40),
    ];
    let mut rows = Vec::new();
    for &a in &values {
        for &b in &values {
            rows.extend_from_slice(&[a, b]);
        }
    }
    let r = rel(be, 2, &rows);
    let set = to_set(2, &rows);
    let mut cases = Vec::new();
    for ty in TYPES {
        for op in CmpOp::ALL {
            let filters = vec![Cond::Compare {
                op,
                ty,
                lhs: col(0),
                rhs: col(1),
            }];
            cases.push((format!("{op:?} on {ty:?}"), filters));
        }
    }
    let project = vec![col(0), col(1)];
    let specs: Vec<OpSpec> = cases
        .iter()
        .map(|(_, f)| scan_spec(2, f.clone(), project.clone()))
        .collect();
    for ((what, filters), got) in cases.iter().zip(scan_all(be, &r, &specs, &syms)) {
        let expect: Vec<Vec<Value>> = set
            .iter()
            .filter_map(|t| emit(filters, &project, t, &syms))
            .collect();
        assert_eq!(got, expect, "{what}");
    }
}

/// Every operator in every type, on edge values, against `fixlog_logical::value`.
fn arithmetic<B: Backend>(be: &B) {
    let syms = SymbolTable::new();
    let f = |x: f32| x.to_bits();
    let values: Vec<Value> = vec![
        0,
        1,
        2,
        3,
        31,
        32,
        33,
        u32::MAX,
        (-1i32) as u32,
        (-7i32) as u32,
        i32::MIN as u32,
        i32::MAX as u32,
        f(1.5),
        f(-2.25),
        f(-0.0),
        f(f32::INFINITY),
        f(f32::NAN),
        f(3e9),
        f(-3e9),
        f(1e-40),
        f(0.1),
    ];
    let mut rows = Vec::new();
    for &a in &values {
        for &b in &values {
            rows.extend_from_slice(&[a, b]);
        }
    }
    let r = rel(be, 2, &rows);
    let set = to_set(2, &rows);
    let functors = [
        Functor::Ord,
        Functor::ToFloat,
        Functor::ToUnsigned,
        Functor::ToInteger,
    ];
    // One expression per scan (a failing one drops the row), all prepared at once.
    let mut exprs = Vec::new();
    for ty in TYPES {
        for op in BinOp::ALL {
            exprs.push(bin(op, ty, col(0), col(1)));
        }
        for op in UnaryOp::ALL {
            exprs.push(PExpr::Unary {
                op,
                ty,
                arg: Box::new(col(0)),
            });
        }
    }
    for func in functors {
        exprs.push(PExpr::Functor {
            func,
            args: vec![col(0)],
        });
    }
    let projects: Vec<Vec<PExpr>> = exprs
        .iter()
        .map(|e| vec![col(0), col(1), e.clone()])
        .collect();
    let specs: Vec<OpSpec> = projects
        .iter()
        .map(|p| scan_spec(2, vec![], p.clone()))
        .collect();
    for (p, got) in projects.iter().zip(scan_all(be, &r, &specs, &syms)) {
        let expect: Vec<Vec<Value>> = set.iter().filter_map(|t| emit(&[], p, t, &syms)).collect();
        assert_eq!(got, expect, "{:?}", p[2]);
    }
}

fn symbols_in_filters_and_functors<B: Backend>(be: &B) {
    let syms = SymbolTable::new();
    let (b, a, c) = (syms.intern("b"), syms.intern("a"), syms.intern("c"));
    let r = rel(be, 1, &[b, a, c]);
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
    let got = scan_rows(be, &r, scan_spec(1, filters, project), &syms);
    let mut got: Vec<String> = got.iter().map(|v| syms.resolve(v[0]).to_string()).collect();
    got.sort();
    assert_eq!(got, vec!["a!", "b!"]);
    // strlen in a join's filter, symbol equality in its key.
    let inner = rel(be, 2, &[a, 1, b, 2, c, 3]);
    let index = be.build_index(&inner, &[0, 1], 1).unwrap();
    let input = batch_of(be, 1, &[a, b, c, syms.intern("zzz")]);
    let filters = vec![Cond::Compare {
        op: CmpOp::Ge,
        ty: ColType::Number,
        lhs: PExpr::Functor {
            func: Functor::Strlen,
            args: vec![PExpr::Functor {
                func: Functor::Cat,
                args: vec![col(0), col(1)],
            }],
        },
        rhs: PExpr::Const(2),
    }];
    let code = prepare(
        be,
        join_spec(1, &[0, 1], 1, vec![col(0)], filters, vec![col(2)], false),
        &syms,
    );
    let out = be
        .join(&input, &index, &code, &EvalContext::new(&syms))
        .unwrap();
    assert_eq!(batch_sorted(be, &out), vec![vec![1], vec![2], vec![3]]);
}

fn scan_filter_row_numbers<B: Backend>(be: &B) {
    let syms = SymbolTable::new();
    let ctx = EvalContext::new(&syms);
    let mut rng = Rng(5);
    for &(arity, n) in &[(1usize, 10usize), (3, 5000), (9, 777), (2, 300_000)] {
        let rows = random_rows(&mut rng, arity, n, 20);
        let r = multi_run_rel(be, arity, &rows, 3);
        let set = to_set(arity, &rows);
        // Identity scan.
        let proj: Vec<PExpr> = (0..arity).map(col).collect();
        let got = scan_rows(be, &r, scan_spec(arity, vec![], proj), &syms);
        assert_eq!(got, set.iter().cloned().collect::<Vec<_>>());
        // Filtered, projected scan and filter.
        let (filters, project) = random_pipeline(&mut rng, arity, 2);
        let got = scan_rows(
            be,
            &r,
            scan_spec(arity, filters.clone(), project.clone()),
            &syms,
        );
        let mut expect: Vec<Vec<Value>> = set
            .iter()
            .filter_map(|t| emit(&filters, &project, t, &syms))
            .collect();
        expect.sort();
        assert_eq!(got, expect, "arity {arity}: {filters:?} {project:?}");
        let input = batch_of(be, arity, &rows);
        let code = prepare(
            be,
            filter_spec(arity, filters.clone(), project.clone()),
            &syms,
        );
        let f = be.filter(&input, &code, &ctx).unwrap();
        let mut expect: Vec<Vec<Value>> = rows
            .chunks_exact(arity)
            .filter_map(|t| emit(&filters, &project, t, &syms))
            .collect();
        expect.sort();
        assert_eq!(batch_sorted(be, &f), expect);
        // Row numbers: input order preserved, numbers 0..len.
        let (head, tail) = be.split_batch(input, n / 3).unwrap();
        assert_eq!(be.batch_len(&head) + be.batch_len(&tail), n);
        let w = be.with_row_numbers(&tail).unwrap();
        assert_eq!(be.batch_arity(&w), arity + 1);
        let wr = be.batch_rows(&w).unwrap();
        let tr = be.batch_rows(&tail).unwrap();
        assert_eq!(wr.len(), tr.len() / arity * (arity + 1));
        for (i, row) in wr.chunks_exact(arity + 1).enumerate() {
            assert_eq!(&row[..arity], &tr[i * arity..(i + 1) * arity]);
            assert_eq!(row[arity] as usize, i);
        }
    }
}

fn aggregates<B: Backend>(be: &B) {
    let syms = SymbolTable::new();
    let ctx = EvalContext::new(&syms);
    let input = batch_of(be, 1, &[10, 20, 30]);
    let n = |x: i32| x as u32;
    // groups: row 0 -> {5, -3}, row 1 -> {}, row 2 -> {7}
    let groups = || batch_of(be, 2, &[0, 5, 0, n(-3), 2, 7]);
    let run = |func, ty, groups: B::Batch, filters: Vec<Cond>, project: Vec<PExpr>| {
        let code = prepare(
            be,
            OpSpec::Aggregate {
                input_arity: 1,
                func,
                ty,
                filters,
                project,
            },
            &syms,
        );
        let out = be.aggregate(&input, groups, &code, &ctx).unwrap();
        batch_sorted(be, &out)
    };
    let proj = || vec![col(0), col(1)];
    assert_eq!(
        run(
            AggFunc::Count,
            ColType::Number,
            batch_of(be, 1, &[0, 0, 2]),
            vec![],
            proj()
        ),
        vec![vec![10, 2], vec![20, 0], vec![30, 1]]
    );
    assert_eq!(
        run(AggFunc::Sum, ColType::Number, groups(), vec![], proj()),
        vec![vec![10, 2], vec![20, 0], vec![30, 7]]
    );
    assert_eq!(
        run(AggFunc::Min, ColType::Number, groups(), vec![], proj()),
        vec![vec![10, n(-3)], vec![30, 7]]
    );
    assert_eq!(
        run(AggFunc::Max, ColType::Number, groups(), vec![], proj()),
        vec![vec![10, 5], vec![30, 7]]
    );
    assert_eq!(
        run(AggFunc::Min, ColType::Unsigned, groups(), vec![], proj()),
        vec![vec![10, 5], vec![30, 7]]
    );
    assert_eq!(
        run(AggFunc::Mean, ColType::Number, groups(), vec![], proj()),
        vec![vec![10, 1.0f32.to_bits()], vec![30, 7.0f32.to_bits()]]
    );
    let fg = batch_of(be, 2, &[1, 1.5f32.to_bits(), 1, 2.0f32.to_bits()]);
    assert_eq!(
        run(AggFunc::Sum, ColType::Float, fg, vec![], proj()),
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
    assert_eq!(
        run(
            AggFunc::Count,
            ColType::Number,
            batch_of(be, 1, &[0, 0, 2]),
            filters,
            vec![col(0)]
        ),
        vec![vec![10], vec![30]]
    );
    // Symbols: min by string.
    let (z, a) = (syms.intern("zz"), syms.intern("aa"));
    let sg = batch_of(be, 2, &[0, z, 0, a]);
    assert_eq!(
        run(AggFunc::Min, ColType::Symbol, sg, vec![], proj()),
        vec![vec![10, a]]
    );
}

fn join_distinct_fanning<B: Backend>(be: &B) {
    // Every input row (x, y) joins 50 inner rows (y, z) with z in 0..50, and the
    // projection keeps (x, z): 40 rows per x repeat the same 50 outputs.
    let syms = SymbolTable::new();
    let ctx = EvalContext::new(&syms);
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
    let index = be.build_index(&rel(be, 2, &inner), &[0, 1], 1).unwrap();
    let batch = batch_of(be, 2, &input);
    let project = vec![col(0), col(3)];
    let all = prepare(
        be,
        join_spec(2, &[0, 1], 1, vec![col(1)], vec![], project.clone(), false),
        &syms,
    );
    let distinct = prepare(
        be,
        join_spec(2, &[0, 1], 1, vec![col(1)], vec![], project, true),
        &syms,
    );
    let all = be.join(&batch, &index, &all, &ctx).unwrap();
    let distinct = be.join(&batch, &index, &distinct, &ctx).unwrap();
    assert_eq!(be.batch_len(&all), 20 * 40 * 50);
    // Repeats close together are dropped (how many depends on the backend's window);
    // most are.
    assert!(
        be.batch_len(&distinct) * 10 <= be.batch_len(&all),
        "{} of {} rows kept",
        be.batch_len(&distinct),
        be.batch_len(&all)
    );
    let set: BTreeSet<Vec<Value>> = batch_sorted(be, &distinct).into_iter().collect();
    assert_eq!(set.len(), 20 * 50);
}

/// An order-free hash of a row of two columns, for checksums of large outputs.
fn mix(x: Value, y: Value) -> u64 {
    (x as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .rotate_left(17)
        ^ (y as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
}

/// The join of `join_large_input` and `join_absorbed`: input `(x, k)` on `k` with
/// an index of `(k, v)` sorted on both columns, giving `(x, v)`.
fn pairs_join_code<B: Backend>(be: &B, syms: &SymbolTable, distinct: bool) -> B::Code {
    prepare(
        be,
        join_spec(
            2,
            &[0, 1],
            1,
            vec![col(1)],
            vec![],
            vec![col(0), col(3)],
            distinct,
        ),
        syms,
    )
}

/// A join over an input larger than the CUDA driver's first piece (2^22 rows), so one
/// operator call counts and writes millions of rows, against an index of two runs: every
/// input row `(i, i % K)` meets `(k, 3k)` in one run and `(k, 3k + 1)` in the other, so the
/// output is known row by row; it is checked by count and by an order-free checksum,
/// plain and distinct. The input and output take about 130 MB: a backend under a
/// smaller memory limit may refuse them (`ExecError::OutOfMemory`, a refusal, not a
/// wrong answer).
fn join_large_input<B: Backend>(be: &B) {
    const N: u32 = (1 << 22) + (1 << 20) + 12_345;
    const K: u32 = 1 << 16;
    let syms = SymbolTable::new();
    let ctx = EvalContext::new(&syms);
    let input: Vec<Value> = (0..N).flat_map(|i| [i, i % K]).collect();
    let first: Vec<Value> = (0..K).flat_map(|k| [k, 3 * k]).collect();
    let second: Vec<Value> = (0..K).flat_map(|k| [k, 3 * k + 1]).collect();
    let refused = |e: &ExecError| matches!(e, ExecError::OutOfMemory(_));
    let expected = (0..N).fold(0u64, |sum, i| {
        let k = i % K;
        sum.wrapping_add(mix(i, 3 * k))
            .wrapping_add(mix(i, 3 * k + 1))
    });
    let setup = || -> ExecResult<(B::Index, B::Batch)> {
        let mut index = be.build_index(&be.relation_from_rows(2, first.clone())?, &[0, 1], 1)?;
        be.extend_index(&mut index, &be.relation_from_rows(2, second.clone())?)?;
        Ok((index, be.batch_from_rows(2, input.clone(), N as usize)?))
    };
    let (index, batch) = match setup() {
        Err(e) if refused(&e) => return,
        done => done.unwrap(),
    };
    for distinct in [false, true] {
        let code = pairs_join_code(be, &syms, distinct);
        let out = match be.join(&batch, &index, &code, &ctx) {
            Err(e) if refused(&e) => return,
            done => done.unwrap(),
        };
        assert_eq!(be.batch_len(&out), 2 * N as usize, "distinct: {distinct}");
        let rows = be.batch_rows(&out).unwrap();
        let sum = rows
            .chunks_exact(2)
            .fold(0u64, |sum, r| sum.wrapping_add(mix(r[0], r[1])));
        assert_eq!(sum, expected, "distinct: {distinct}");
    }
}

/// [`Backend::join_absorbed`] as the driver uses it, against the rows it must equal:
/// `sort_unique(join) − old`, whichever way the backend answers (its rows, which are
/// then deduplicated and subtracted, or its new tuples). The join writes 21M rows
/// (more than a CUDA join writes at once without mapping its output piece by piece,
/// so the CUDA backend drops window by window), each twice (every input row comes
/// twice), and `old` is two runs that hold some of them and rows the join never
/// makes. Checked by count, order, and an order-free checksum, plain and distinct;
/// the inputs and output take about 250 MB, so a backend under a smaller memory limit
/// may refuse them (`ExecError::OutOfMemory`, a refusal, not a wrong answer).
fn join_absorbed<B: Backend>(be: &B) {
    const N: u32 = (1 << 22) + (1 << 20) + 12_345;
    const K: u32 = 1 << 16;
    // Input row i is (i / 2, (i / 2) % K); key k meets (k, 4k + j) for j < 4, two in
    // each run of the index.
    let input: Vec<Value> = (0..N).flat_map(|i| [i / 2, (i / 2) % K]).collect();
    let run = |js: [u32; 2]| -> Vec<Value> {
        (0..K)
            .flat_map(|k| js.map(|j| [k, 4 * k + j]))
            .flatten()
            .collect()
    };
    // `old`: (x, 4k + 0 and 2) for x a multiple of 3, (x, 4k + 1) for x a multiple of
    // 5, and rows the join never makes.
    let in_old = |x: u32, j: u32| {
        (x.is_multiple_of(3) && j.is_multiple_of(2)) || (x.is_multiple_of(5) && j == 1)
    };
    let xs = N.div_ceil(2);
    let old_a: Vec<Value> = (0..xs)
        .flat_map(|x| {
            let k = x % K;
            let mut rows = Vec::new();
            if x.is_multiple_of(3) {
                rows.extend([x, 4 * k, x, 4 * k + 2]);
            }
            if x.is_multiple_of(7) {
                rows.extend([x, 1_000_000_000 + x]);
            }
            rows
        })
        .collect();
    let old_b: Vec<Value> = (0..xs)
        .filter(|x| x.is_multiple_of(5))
        .flat_map(|x| [x, 4 * (x % K) + 1])
        .collect();
    let refused = |e: &ExecError| matches!(e, ExecError::OutOfMemory(_));
    let (mut count, mut expected) = (0usize, 0u64);
    for x in 0..xs {
        for j in 0..4 {
            if !in_old(x, j) {
                count += 1;
                expected = expected.wrapping_add(mix(x, 4 * (x % K) + j));
            }
        }
    }
    let setup = || -> ExecResult<(B::Index, B::Relation, B::Batch)> {
        let mut index = be.build_index(&be.relation_from_rows(2, run([0, 1]))?, &[0, 1], 1)?;
        be.extend_index(&mut index, &be.relation_from_rows(2, run([2, 3]))?)?;
        let old = be.merge_disjoint(
            be.relation_from_rows(2, old_a.clone())?,
            &be.relation_from_rows(2, old_b.clone())?,
        )?;
        Ok((
            index,
            old,
            be.batch_from_rows(2, input.clone(), N as usize)?,
        ))
    };
    match setup() {
        Err(e) if refused(&e) => {}
        done => {
            let (index, old, batch) = done.unwrap();
            check_absorbed(be, &index, &old, &batch, count, expected);
        }
    }
}

/// `join_absorbed` where the input comes grouped by the output's first column, many
/// candidates a group, repeated, and second columns spanning 60,000 values (the shape
/// where the CUDA backend deduplicates in a bitmap per group, `P_jnew`): 600 groups
/// `x = 3g + 1` of 400 keys each (every input row twice), each key meeting 3 rows in
/// each of the index's two runs; `old` holds a share of the output (by group and run
/// row) and rows outside the join's span. Checked by count, order and an order-free
/// checksum.
fn join_absorbed_grouped<B: Backend>(be: &B) {
    const GROUPS: u32 = 600;
    const KEYS_PER_GROUP: u32 = 400;
    const KEYS: u32 = 4096;
    let key = |g: u32, t: u32| (g * 37 + t * 5) % KEYS;
    let value = |k: u32, j: u32| 13 * k + j;
    let input: Vec<Value> = (0..GROUPS)
        .flat_map(|g| (0..KEYS_PER_GROUP * 2).flat_map(move |t| [3 * g + 1, key(g, t / 2)]))
        .collect();
    let run = |js: std::ops::Range<u32>| -> Vec<Value> {
        (0..KEYS)
            .flat_map(|k| js.clone().flat_map(move |j| [k, value(k, j)]))
            .collect()
    };
    let in_old = |g: u32, j: u32| {
        (g.is_multiple_of(3) && j.is_multiple_of(2)) || (g.is_multiple_of(5) && j == 1)
    };
    let old_a: Vec<Value> = (0..GROUPS)
        .flat_map(|g| {
            let mut rows = Vec::new();
            let mut vs: Vec<u32> = (0..KEYS_PER_GROUP)
                .flat_map(|t| {
                    (0..6u32)
                        .filter(move |&j| g.is_multiple_of(3) && j.is_multiple_of(2))
                        .map(move |j| value(key(g, t), j))
                })
                .collect();
            vs.push(70_000 + g);
            vs.sort_unstable();
            for v in vs {
                rows.extend([3 * g + 1, v]);
            }
            rows
        })
        .collect();
    let old_b: Vec<Value> = (0..GROUPS)
        .filter(|g| g.is_multiple_of(5))
        .flat_map(|g| {
            let mut vs: Vec<u32> = (0..KEYS_PER_GROUP).map(|t| value(key(g, t), 1)).collect();
            vs.sort_unstable();
            vs.into_iter().flat_map(move |v| [3 * g + 1, v])
        })
        .collect();
    let (mut count, mut expected) = (0usize, 0u64);
    for g in 0..GROUPS {
        for t in 0..KEYS_PER_GROUP {
            for j in 0..6 {
                if !in_old(g, j) {
                    count += 1;
                    expected = expected.wrapping_add(mix(3 * g + 1, value(key(g, t), j)));
                }
            }
        }
    }
    let refused = |e: &ExecError| matches!(e, ExecError::OutOfMemory(_));
    let setup = || -> ExecResult<(B::Index, B::Relation, B::Batch)> {
        let mut index = be.build_index(&be.relation_from_rows(2, run(0..3))?, &[0, 1], 1)?;
        be.extend_index(&mut index, &be.relation_from_rows(2, run(3..6))?)?;
        let old = be.merge_disjoint(
            be.relation_from_rows(2, old_a.clone())?,
            &be.relation_from_rows(2, old_b.clone())?,
        )?;
        let n = input.len() / 2;
        Ok((index, old, be.batch_from_rows(2, input.clone(), n)?))
    };
    match setup() {
        Err(e) if refused(&e) => {}
        done => {
            let (index, old, batch) = done.unwrap();
            check_absorbed(be, &index, &old, &batch, count, expected);
        }
    }
}

/// `pairs_join_code`'s join of `batch` with `index` absorbed into `old`, plain and
/// distinct: its new tuples (given back, or the rows less `old`) must be `count`
/// tuples, sorted and unique, whose `mix` checksum is `expected`. A refusal
/// (`ExecError::OutOfMemory`) ends the check.
fn check_absorbed<B: Backend>(
    be: &B,
    index: &B::Index,
    old: &B::Relation,
    batch: &B::Batch,
    count: usize,
    expected: u64,
) {
    let syms = SymbolTable::new();
    let ctx = EvalContext::new(&syms);
    for distinct in [false, true] {
        let code = pairs_join_code(be, &syms, distinct);
        let new = be
            .join_absorbed(batch, index, &code, &ctx, old)
            .and_then(|out| match out {
                Absorbed::Rows(rows) => be.sort_unique_minus(rows, old),
                Absorbed::New { tuples, .. } => Ok(tuples),
            });
        let new = match new {
            Err(ExecError::OutOfMemory(_)) => return,
            done => done.unwrap(),
        };
        assert_eq!(be.relation_len(&new), count, "distinct: {distinct}");
        let rows = be.relation_rows(&new).unwrap();
        assert!(
            rows.chunks_exact(2)
                .zip(rows.chunks_exact(2).skip(1))
                .all(|(a, b)| a < b),
            "distinct: {distinct}: not sorted and unique"
        );
        let sum = rows
            .chunks_exact(2)
            .fold(0u64, |sum, r| sum.wrapping_add(mix(r[0], r[1])));
        assert_eq!(sum, expected, "distinct: {distinct}");
    }
}

// ---- worst-case-optimal intersections -----------------------------------------------------

/// One atom of a random intersection case: its relation's rows and its index spec.
struct IntersectAtomCase {
    arity: usize,
    rows: Vec<Value>,
    spec: IntersectAtomSpec,
}

/// `OpSpec::Intersect` against nested loops: for every input row, every value of the
/// new column of atom 0's matching tuples that every other atom's matching tuples also
/// have, once; then filter and project `input ++ [value]`. Atoms of arity 1 to 3 with
/// random orders and key lengths, relations of several runs and indexes extended with
/// disjoint runs, keys from input columns, constants and expressions that can fail
/// (`100 / #c`: a failing key matches nothing), values near `u32::MAX`.
fn intersections<B: Backend>(be: &B) {
    let syms = SymbolTable::new();
    let ctx = EvalContext::new(&syms);
    for seed in 1..120u64 {
        let mut rng = Rng(seed * 32_452_843);
        let in_arity = rng.below(3) as usize;
        let domain = 1 + rng.below(if seed % 4 == 0 { 40 } else { 8 });
        let n_in = if in_arity == 0 {
            1
        } else {
            rng.below(60) as usize
        };
        let n_atoms = 2 + rng.below(2) as usize;
        let atoms: Vec<IntersectAtomCase> = (0..n_atoms)
            .map(|_| {
                let arity = 1 + rng.below(3) as usize;
                let n = rng.below(if seed % 5 == 0 { 2000 } else { 150 }) as usize;
                let rows = random_rows(&mut rng, arity, n, domain);
                let order = random_order(&mut rng, arity);
                let key_len = rng.below(arity as u32) as usize;
                let key = (0..key_len)
                    .map(|_| match rng.below(6) {
                        _ if in_arity == 0 => PExpr::Const(rng.below(domain)),
                        0 => PExpr::Const(rng.below(domain)),
                        1 => bin(
                            BinOp::Div,
                            ColType::Number,
                            PExpr::Const(100),
                            col(rng.below(in_arity as u32) as usize),
                        ),
                        _ => col(rng.below(in_arity as u32) as usize),
                    })
                    .collect();
                IntersectAtomCase {
                    arity,
                    rows,
                    spec: IntersectAtomSpec {
                        order,
                        key_len,
                        key,
                    },
                }
            })
            .collect();
        let input_rows = random_rows(&mut rng, in_arity, n_in, domain);
        let width = in_arity + 1;
        let (filters, project) = if rng.below(3) == 0 {
            (Vec::new(), (0..width).map(col).collect())
        } else {
            let k = 1 + rng.below(3) as usize;
            random_pipeline(&mut rng, width, k)
        };
        let what = format!("seed {seed}, input arity {in_arity}, {n_atoms} atoms, domain {domain}");
        let spec = |distinct| OpSpec::Intersect {
            input_arity: in_arity,
            atoms: atoms.iter().map(|a| a.spec.clone()).collect(),
            filters: filters.clone(),
            project: project.clone(),
            distinct,
        };
        let codes = be.prepare(&[spec(false), spec(true)], &ctx).unwrap();
        assert_eq!(codes.len(), 2, "{what}");
        // Indexes: part of the rows in several runs, extended with the rest.
        let mut indexes = Vec::new();
        let mut sets = Vec::new();
        for a in &atoms {
            let half = (a.rows.len() / a.arity / 2) * a.arity;
            let first = multi_run_rel(be, a.arity, &a.rows[..half], 3);
            let rest = rel(be, a.arity, &a.rows[half..]);
            let rest = be.difference(&rest, &first).unwrap();
            let mut index = be
                .build_index(&first, &a.spec.order, a.spec.key_len)
                .unwrap();
            be.extend_index(&mut index, &rest).unwrap();
            indexes.push(index);
            sets.push(to_set(a.arity, &a.rows));
        }
        // Nested loops.
        let input_v: Vec<Vec<Value>> = if in_arity == 0 {
            vec![Vec::new(); n_in]
        } else {
            input_rows
                .chunks_exact(in_arity)
                .map(|r| r.to_vec())
                .collect()
        };
        let mut expect = Vec::new();
        for r in &input_v {
            let mut common: Option<BTreeSet<Value>> = None;
            for (a, set) in atoms.iter().zip(&sets) {
                let order = &a.spec.order;
                let key: Option<Vec<Value>> =
                    a.spec.key.iter().map(|e| eval(e, r, &syms)).collect();
                let values: BTreeSet<Value> = match key {
                    None => BTreeSet::new(),
                    Some(k) => set
                        .iter()
                        .filter(|t| k.iter().enumerate().all(|(i, &v)| t[order[i]] == v))
                        .map(|t| t[order[a.spec.key_len]])
                        .collect(),
                };
                common = Some(match common {
                    None => values,
                    Some(c) => c.intersection(&values).copied().collect(),
                });
            }
            for v in common.unwrap_or_default() {
                let joined: Vec<Value> = r.iter().copied().chain([v]).collect();
                if let Some(o) = emit(&filters, &project, &joined, &syms) {
                    expect.push(o);
                }
            }
        }
        expect.sort();
        let input = be
            .batch_from_rows(in_arity, input_rows.clone(), input_v.len())
            .unwrap();
        let refs: Vec<&B::Index> = indexes.iter().collect();
        let out = be.intersect(&input, &refs, &codes[0], &ctx).unwrap();
        assert_eq!(be.batch_arity(&out), project.len(), "{what}");
        assert_eq!(
            batch_sorted(be, &out),
            expect,
            "{what}: {filters:?} {project:?}"
        );
        let out = be.intersect(&input, &refs, &codes[1], &ctx).unwrap();
        let rows = batch_sorted(be, &out);
        assert!(rows.len() <= expect.len(), "{what} (distinct)");
        let got: BTreeSet<Vec<Value>> = rows.into_iter().collect();
        let expect: BTreeSet<Vec<Value>> = expect.into_iter().collect();
        assert_eq!(got, expect, "{what} (distinct)");
    }
}
