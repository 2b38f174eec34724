//! The driver's answer to `ExecError::BatchTooLarge`: a backend whose joins refuse to
//! make batches above a few rows where the driver can split their input (as the CUDA
//! backend's joins do above their share of device memory) must give the same results
//! as one that never refuses, with the pieces run again smaller.
//!
//! The backend here is the CPU backend with a join that checks its output's size after
//! making it (the CUDA join counts first; the driver cannot tell the difference).

use fixlog_cpu::{CpuBackend, CpuBatch, CpuCode, CpuIndex, CpuRelation};
use fixlog_exec::driver::{self, DriverOptions, FullFirstUse, RunResult, Tuples};
use fixlog_exec::tuples::RowStore;
use fixlog_exec::{Backend, EvalContext, ExecError, ExecResult, OpSpec, PieceBudget};
use fixlog_logical::{ColType, Value};
use fixlog_syntax::SourceMap;
use std::cell::Cell;

/// The CPU backend, but a join asked to make more than `limit` rows where the input
/// can be split answers `BatchTooLarge` instead.
struct Refusing {
    cpu: CpuBackend,
    limit: usize,
    refused: Cell<usize>,
    /// The largest batch a join made.
    largest: Cell<usize>,
    /// Joins that made more than `limit` rows because the input could not be split.
    unsplittable: Cell<usize>,
    /// Input rows of the joins that made their output (not of those refused).
    joined: Cell<usize>,
    /// Joins that made their output.
    joins: Cell<usize>,
    budget: PieceBudget,
    /// Cut batches only between rows whose first values differ.
    aligned: bool,
    /// Merges so far, and the one (counted from 1) that runs out of memory, once.
    merges: Cell<usize>,
    failing_merge: usize,
    /// Say how many leading input rows fit when refusing (as the CUDA join does from
    /// its counts), found here by joining longer and longer prefixes.
    fits: bool,
    /// Pieces a refusal's prefix was cut for that were refused again.
    refused_prefixes: Cell<usize>,
    /// The input rows that fit, said by the last refusal.
    last_prefix: std::cell::RefCell<Option<Vec<Value>>>,
    /// Prefixes said to fit (of at least one row) that no join has run since.
    prefixes_not_run: std::cell::RefCell<Vec<Vec<Value>>>,
}

impl Refusing {
    fn new(limit: usize) -> Refusing {
        Refusing {
            cpu: CpuBackend::new(),
            limit,
            refused: Cell::new(0),
            largest: Cell::new(0),
            unsplittable: Cell::new(0),
            joined: Cell::new(0),
            joins: Cell::new(0),
            // Large first pieces, so that the refusals do the splitting.
            budget: PieceBudget {
                first_piece_rows: 1 << 20,
                max_batch_rows: 1 << 24,
                max_sort_rows: usize::MAX,
                joins_say_what_fits: false,
            },
            aligned: false,
            merges: Cell::new(0),
            failing_merge: 0,
            fits: false,
            refused_prefixes: Cell::new(0),
            last_prefix: std::cell::RefCell::new(None),
            prefixes_not_run: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// Small pieces and batches, cut between first values.
    fn small_aligned(first_piece_rows: usize, max_batch_rows: usize) -> Refusing {
        Refusing {
            budget: PieceBudget {
                first_piece_rows,
                max_batch_rows,
                max_sort_rows: usize::MAX,
                joins_say_what_fits: false,
            },
            aligned: true,
            ..Refusing::new(usize::MAX)
        }
    }
}

impl Backend for Refusing {
    type Relation = CpuRelation;
    type Index = CpuIndex;
    type Batch = CpuBatch;
    type Code = CpuCode;

    fn name(&self) -> &'static str {
        "refusing"
    }
    fn prepare(&self, ops: &[OpSpec], ctx: &EvalContext) -> ExecResult<Vec<CpuCode>> {
        self.cpu.prepare(ops, ctx)
    }
    fn piece_budget(&self) -> PieceBudget {
        PieceBudget {
            joins_say_what_fits: self.fits,
            ..self.budget
        }
    }
    fn relation_from_rows(&self, arity: usize, rows: Vec<Value>) -> ExecResult<CpuRelation> {
        self.cpu.relation_from_rows(arity, rows)
    }
    fn empty_relation(&self, arity: usize) -> ExecResult<CpuRelation> {
        self.cpu.empty_relation(arity)
    }
    fn relation_rows(&self, rel: &CpuRelation) -> ExecResult<Vec<Value>> {
        self.cpu.relation_rows(rel)
    }
    fn take_rows(&self, rel: CpuRelation) -> ExecResult<RowStore> {
        self.cpu.take_rows(rel)
    }
    fn relation_len(&self, rel: &CpuRelation) -> usize {
        self.cpu.relation_len(rel)
    }
    fn relation_arity(&self, rel: &CpuRelation) -> usize {
        self.cpu.relation_arity(rel)
    }
    fn batch_from_rows(&self, arity: usize, rows: Vec<Value>, len: usize) -> ExecResult<CpuBatch> {
        self.cpu.batch_from_rows(arity, rows, len)
    }
    fn batch_rows(&self, batch: &CpuBatch) -> ExecResult<Vec<Value>> {
        self.cpu.batch_rows(batch)
    }
    fn batch_len(&self, batch: &CpuBatch) -> usize {
        self.cpu.batch_len(batch)
    }
    fn batch_arity(&self, batch: &CpuBatch) -> usize {
        self.cpu.batch_arity(batch)
    }
    fn sort_unique(&self, batch: CpuBatch) -> ExecResult<CpuRelation> {
        self.cpu.sort_unique(batch)
    }
    fn sort_unique_minus(&self, batch: CpuBatch, old: &CpuRelation) -> ExecResult<CpuRelation> {
        self.cpu.sort_unique_minus(batch, old)
    }
    fn relation_batch(&self, rel: &CpuRelation) -> ExecResult<CpuBatch> {
        self.cpu.relation_batch(rel)
    }
    fn split_batch(&self, batch: CpuBatch, rows: usize) -> ExecResult<(CpuBatch, CpuBatch)> {
        let arity = self.cpu.batch_arity(&batch);
        let len = self.cpu.batch_len(&batch);
        if !self.aligned || arity == 0 || rows == 0 {
            return self.cpu.split_batch(batch, rows);
        }
        let values = self.cpu.batch_rows(&batch)?;
        let first = |i: usize| values[i * arity];
        let mut cut = rows;
        while cut < len && first(cut) == first(cut - 1) {
            cut += 1;
        }
        if cut >= len {
            let empty = self.cpu.batch_from_rows(arity, Vec::new(), 0)?;
            return Ok((batch, empty));
        }
        self.cpu.split_batch(batch, cut)
    }
    fn merge(&self, a: &CpuRelation, b: &CpuRelation) -> ExecResult<CpuRelation> {
        self.merges.set(self.merges.get() + 1);
        if self.merges.get() == self.failing_merge {
            return Err(ExecError::OutOfMemory("refused once".into()));
        }
        self.cpu.merge(a, b)
    }
    fn merge_disjoint(&self, a: CpuRelation, b: &CpuRelation) -> ExecResult<CpuRelation> {
        self.cpu.merge_disjoint(a, b)
    }
    fn difference(&self, a: &CpuRelation, b: &CpuRelation) -> ExecResult<CpuRelation> {
        self.cpu.difference(a, b)
    }
    fn build_index(
        &self,
        rel: &CpuRelation,
        order: &[usize],
        key_len: usize,
    ) -> ExecResult<CpuIndex> {
        self.cpu.build_index(rel, order, key_len)
    }
    fn extend_index(&self, index: &mut CpuIndex, delta: &CpuRelation) -> ExecResult<()> {
        self.cpu.extend_index(index, delta)
    }
    fn index_len(&self, index: &CpuIndex) -> usize {
        self.cpu.index_len(index)
    }
    fn unit(&self) -> ExecResult<CpuBatch> {
        self.cpu.unit()
    }
    fn scan(&self, rel: &CpuRelation, code: &CpuCode, ctx: &EvalContext) -> ExecResult<CpuBatch> {
        self.cpu.scan(rel, code, ctx)
    }
    fn join(
        &self,
        input: &CpuBatch,
        inner: &CpuIndex,
        code: &CpuCode,
        ctx: &EvalContext,
    ) -> ExecResult<CpuBatch> {
        if !self.prefixes_not_run.borrow().is_empty() {
            let rows_in = self.cpu.batch_rows(input)?;
            self.prefixes_not_run.borrow_mut().retain(|p| *p != rows_in);
        }
        let out = self.cpu.join(input, inner, code, ctx)?;
        let rows = self.cpu.batch_len(&out);
        let n = self.cpu.batch_len(input);
        if rows > self.limit {
            if ctx.can_split {
                self.refused.set(self.refused.get() + 1);
                let rows_in = self.cpu.batch_rows(input)?;
                if self.last_prefix.borrow().as_ref() == Some(&rows_in) {
                    self.refused_prefixes.set(self.refused_prefixes.get() + 1);
                }
                let fits = if self.fits {
                    let mut k = 0;
                    while k + 1 < n {
                        let (prefix, _) = self.cpu.split_batch(input.clone(), k + 1)?;
                        let made = self.cpu.join(&prefix, inner, code, ctx)?;
                        if self.cpu.batch_len(&made) > self.limit {
                            break;
                        }
                        k += 1;
                    }
                    let (prefix, _) = self.cpu.split_batch(input.clone(), k.max(1))?;
                    let prefix = self.cpu.batch_rows(&prefix)?;
                    if k > 0 {
                        self.prefixes_not_run.borrow_mut().push(prefix.clone());
                    }
                    *self.last_prefix.borrow_mut() = Some(prefix);
                    Some(k)
                } else {
                    None
                };
                return Err(ExecError::BatchTooLarge {
                    rows,
                    limit: self.limit,
                    fits,
                });
            }
            self.unsplittable.set(self.unsplittable.get() + 1);
        }
        self.largest.set(self.largest.get().max(rows));
        self.joined
            .set(self.joined.get() + self.cpu.batch_len(input));
        self.joins.set(self.joins.get() + 1);
        Ok(out)
    }
    fn intersect(
        &self,
        input: &CpuBatch,
        atoms: &[&CpuIndex],
        code: &CpuCode,
        ctx: &EvalContext,
    ) -> ExecResult<CpuBatch> {
        self.cpu.intersect(input, atoms, code, ctx)
    }
    fn antijoin(
        &self,
        input: &CpuBatch,
        inner: &CpuIndex,
        code: &CpuCode,
        ctx: &EvalContext,
    ) -> ExecResult<CpuBatch> {
        self.cpu.antijoin(input, inner, code, ctx)
    }
    fn filter(&self, input: &CpuBatch, code: &CpuCode, ctx: &EvalContext) -> ExecResult<CpuBatch> {
        self.cpu.filter(input, code, ctx)
    }
    fn with_row_numbers(&self, input: &CpuBatch) -> ExecResult<CpuBatch> {
        self.cpu.with_row_numbers(input)
    }
    fn range(&self, input: &CpuBatch, ty: ColType, step: bool) -> ExecResult<CpuBatch> {
        self.cpu.range(input, ty, step)
    }
    fn aggregate(
        &self,
        input: &CpuBatch,
        groups: CpuBatch,
        code: &CpuCode,
        ctx: &EvalContext,
    ) -> ExecResult<CpuBatch> {
        self.cpu.aggregate(input, groups, code, ctx)
    }
}

/// A random graph as facts of `e`: `nodes` nodes, `edges` edges (xorshift, fixed seed).
fn graph_facts(nodes: u64, edges: usize, seed: u64) -> String {
    let mut x = seed | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut s = String::new();
    for _ in 0..edges {
        let (a, b) = (next() % nodes, next() % nodes);
        s.push_str(&format!("e({a}, {b}).\n"));
    }
    s
}

fn run<B: Backend>(backend: &B, text: &str) -> RunResult {
    run_with(backend, text, &DriverOptions::default())
}

fn run_with<B: Backend>(backend: &B, text: &str, options: &DriverOptions) -> RunResult {
    let mut sources = SourceMap::default();
    let program = fixlog_logical::compile_str("split.dl", text, &mut sources)
        .unwrap_or_else(|e| panic!("{}", e.render(&sources)));
    let plan = fixlog_plan::plan(&program).expect("plan");
    let mut initial: Vec<Tuples> = program
        .relations
        .iter()
        .map(|r| Tuples::new(r.types().len()))
        .collect();
    for fact in &program.facts {
        initial[fact.rel].push(&fact.values);
    }
    let symbols = program.symbols.clone();
    driver::run(backend, &program, &plan, initial, &symbols, options).expect("run")
}

/// Runs `text` on the CPU backend and on one whose joins refuse more than `limit`
/// rows; the relations must be equal, and the refusals must have happened.
fn same_with_refusals(text: &str, limit: usize) {
    let plain = run(&CpuBackend::new(), text);
    let refusing = Refusing::new(limit);
    let split = run(&refusing, text);
    assert_eq!(plain.relations, split.relations, "{text}");
    assert_eq!(
        plain.stats.relation_sizes, split.stats.relation_sizes,
        "{text}"
    );
    assert!(refusing.refused.get() > 0, "no join refused: {text}");
    assert_eq!(split.stats.pieces_split, refusing.refused.get());
    assert_eq!(plain.stats.pieces_split, 0);
    // Only joins of a single input tuple may exceed the limit.
    if refusing.unsplittable.get() == 0 {
        assert!(refusing.largest.get() <= limit);
    }
}

/// Transitive closure of the edges `facts`.
fn closure(facts: String) -> String {
    format!(
        ".decl e(x: number, y: number)\n.decl path(x: number, y: number)\n.output path\n\
         path(x, y) :- e(x, y).\npath(x, z) :- path(x, y), e(y, z).\n{facts}"
    )
}

/// Same generation over the edges `facts`: two joins in a row.
fn same_generation(facts: String) -> String {
    format!(
        ".decl e(x: number, y: number)\n.decl sg(x: number, y: number)\n.output sg\n\
         sg(x, y) :- e(p, x), e(p, y), x != y.\n\
         sg(x, y) :- e(a, x), sg(a, b), e(b, y).\n{facts}"
    )
}

/// As [`same_with_refusals`], with refusals that say how many leading rows fit: the
/// driver cuts there, so no prefix cut for a refusal is refused again.
fn same_with_exact_refusals(text: &str, limit: usize) {
    let plain = run(&CpuBackend::new(), text);
    let refusing = Refusing {
        fits: true,
        ..Refusing::new(limit)
    };
    let split = run(&refusing, text);
    assert_eq!(plain.relations, split.relations, "{text}");
    assert!(refusing.refused.get() > 0, "no join refused: {text}");
    assert_eq!(refusing.refused_prefixes.get(), 0, "{text}");
    if refusing.unsplittable.get() == 0 {
        assert!(refusing.largest.get() <= limit);
    }
    // Without the count, the driver's estimate is refused again at times.
    let estimating = Refusing::new(limit);
    run(&estimating, text);
    assert!(refusing.refused.get() <= estimating.refused.get());
}

#[test]
fn refusals_that_say_what_fits() {
    same_with_exact_refusals(&closure(graph_facts(60, 150, 7)), 40);
    same_with_exact_refusals(&same_generation(graph_facts(40, 90, 11)), 25);
}

#[test]
fn full_first_pieces_cut_where_refusals_say() {
    // A full-first plan's top level (pieces that derive disjoint tuples) is ordered
    // before its first piece, which is as large as the backend's first piece: its
    // joins' refusals cut it, each at the rows the join said fit. Every prefix said to
    // fit runs without another refusal, every input tuple is joined once (the pieces
    // and the sets gathered from them share no tuple), and the result is exact.
    let text = same_generation(graph_facts(40, 120, 5));
    let options = DriverOptions {
        full_first: FullFirstUse::Always,
        ..DriverOptions::default()
    };
    let plain = run(&CpuBackend::new(), &text);
    let never = Refusing::new(usize::MAX);
    run_with(&never, &text, &options);
    for limit in [6, 25, 80] {
        let refusing = Refusing {
            fits: true,
            ..Refusing::new(limit)
        };
        let split = run_with(&refusing, &text, &options);
        assert_eq!(plain.relations, split.relations, "limit {limit}");
        assert!(refusing.refused.get() > 0, "no join refused at {limit}");
        assert_eq!(refusing.refused_prefixes.get(), 0, "limit {limit}");
        assert_eq!(
            refusing.prefixes_not_run.borrow().len(),
            0,
            "a prefix said to fit was not run, limit {limit}"
        );
        assert_eq!(refusing.joined.get(), never.joined.get(), "limit {limit}");
    }
}

#[test]
fn first_pieces_grow_with_the_head_relation_where_joins_say_what_fits() {
    // Transitive closure of a chain: iteration i's delta is the n - i paths of length
    // i, the full relation about n * i paths. The backend's own first piece is one
    // row. Where the joins say what fits, the top level's first piece is at least a
    // share (1/32) of the head relation, so once the relation holds 32 deltas every
    // iteration joins its delta whole, in one piece; where they cannot say, pieces
    // start at one row and grow, several an iteration.
    let n = 300;
    let facts: String = (0..n - 1)
        .map(|i| format!("e({i}, {}).\n", i + 1))
        .collect();
    let text = closure(facts);
    let plain = run(&CpuBackend::new(), &text);
    let one_row = |fits| Refusing {
        fits,
        ..Refusing::small_aligned(1, 1 << 24)
    };
    let (saying, growing) = (one_row(true), one_row(false));
    for backend in [&saying, &growing] {
        let got = run(backend, &text);
        assert_eq!(plain.relations, got.relations);
        assert_eq!(backend.refused.get(), 0);
    }
    // One join per iteration (n - 1 of them) once the share passes the delta (after
    // about 32 / (1 + 32 / n) iterations), a few before.
    let iterations = n - 1;
    assert!(
        saying.joins.get() < iterations + 4 * 32,
        "{} joins for {iterations} iterations",
        saying.joins.get()
    );
    assert!(
        growing.joins.get() > 2 * iterations,
        "{} joins for {iterations} iterations",
        growing.joins.get()
    );
}

#[test]
fn full_first_plans_by_size_from_a_head_size() {
    // `BySize` takes a full-first plan by size only once the head relation holds
    // `min_head_rows` tuples: from 0 it takes them from the start, past the final size
    // it is `Never`, in between it switches plans mid-run; the result is the same every
    // way.
    // (The plans join different rows, which tells which one ran.)
    let text = same_generation(graph_facts(40, 120, 5));
    let plain = run(&CpuBackend::new(), &text);
    let joined = |full_first| {
        let backend = Refusing::new(usize::MAX);
        let got = run_with(
            &backend,
            &text,
            &DriverOptions {
                full_first,
                ..DriverOptions::default()
            },
        );
        assert_eq!(plain.relations, got.relations, "{full_first:?}");
        backend.joined.get()
    };
    let final_rows = plain
        .stats
        .relation_sizes
        .iter()
        .find(|(n, _)| n == "sg")
        .map(|(_, k)| *k);
    let final_rows = final_rows.expect("sg's size");
    let never = joined(FullFirstUse::Never);
    let from = |min_head_rows| joined(FullFirstUse::BySize { min_head_rows });
    let by_size = from(0);
    assert_ne!(never, by_size);
    // The head holds tuples before the first iteration: a bound of 1 takes the same plans.
    assert_eq!(from(1), by_size);
    assert_eq!(from(final_rows + 1), never);
    let between = from(final_rows / 2);
    assert!(
        between != never && between != by_size,
        "{never} {between} {by_size}"
    );
}

#[test]
fn transitive_closure_in_pieces() {
    same_with_refusals(&closure(graph_facts(60, 150, 7)), 40);
}

#[test]
fn same_generation_in_pieces() {
    // Two joins in a row: a refusal of the second splits its own input (the first join's
    // sorted output), one of the first splits the pipeline's.
    same_with_refusals(&same_generation(graph_facts(40, 90, 11)), 25);
}

#[test]
fn cutting_the_first_join_does_not_repeat_the_second() {
    // The first join refuses and runs in pieces; its pieces' outputs are gathered into
    // one deduplicated set before the second join, so the joins take exactly the rows
    // they take unsplit: every delta tuple once, every intermediate tuple once. (Cut
    // into pieces deduplicated alone, the intermediate repeated tuples, and SG derived
    // up to 3.7 times as many on the GPU. `derived` itself is no measure here: the
    // CPU join drops repeats within a window, which smaller batches change.)
    let text = same_generation(graph_facts(50, 160, 13));
    let never = Refusing::new(usize::MAX);
    let plain = run(&never, &text);
    let refusing = Refusing::new(12);
    let split = run(&refusing, &text);
    assert_eq!(plain.relations, split.relations);
    assert!(refusing.refused.get() > 0, "no join refused");
    assert_eq!(never.refused.get(), 0);
    assert_eq!(refusing.joined.get(), never.joined.get());
}

#[test]
fn a_bounded_gathered_set_does_not_repeat_the_second_join() {
    // Tiny pieces and batches: the first join's outputs, gathered over pieces, pass
    // the batch budget again and again, and each time the second join runs over what
    // was gathered. The pipeline's input is sorted on the column of `sg(a, b)` that
    // the first join carries (`b`), so what was flushed shares no tuple with what
    // later pieces make, where pieces are cut between values of `b` (as this backend
    // cuts them; the real ones cut by rows, where one value may fall on both sides):
    // every intermediate tuple is still joined once.
    let text = same_generation(graph_facts(50, 160, 13));
    let never = Refusing::new(usize::MAX);
    let plain = run(&never, &text);
    let small = Refusing::small_aligned(3, 8);
    let split = run(&small, &text);
    assert_eq!(plain.relations, split.relations);
    assert_eq!(small.joined.get(), never.joined.get());
}

#[test]
fn a_merge_that_runs_out_of_memory_once_costs_only_time() {
    // Small pieces and batches, so that merges gather the first join's outputs and
    // merge what was gathered for the second join; each run lets a different merge
    // run out of memory once. Wherever it happens (gathering a piece's output: the
    // piece runs again in halves; merging the gathered set: it runs once more, as a
    // backend that makes room after a refusal would), the result is exact.
    let text = same_generation(graph_facts(40, 120, 17));
    let plain = run(&Refusing::new(usize::MAX), &text);
    let counting = Refusing::small_aligned(3, 8);
    run(&counting, &text);
    let merges = counting.merges.get();
    assert!(merges > 20, "{merges} merges");
    for failing_merge in 1..=merges {
        let once = Refusing {
            failing_merge,
            ..Refusing::small_aligned(3, 8)
        };
        let got = run(&once, &text);
        assert_eq!(
            plain.relations, got.relations,
            "merge {failing_merge} failed"
        );
    }
}

#[test]
fn aggregates_and_negation_in_pieces() {
    let text = format!(
        ".decl e(x: number, y: number)\n.decl reach(x: number, y: number)\n\
         .decl deg(x: number, n: number)\n.decl far(x: number, y: number)\n\
         .output deg\n.output far\n\
         reach(x, y) :- e(x, y).\nreach(x, z) :- reach(x, y), e(y, z).\n\
         deg(x, n) :- reach(x, _), n = count : {{ reach(x, y), e(y, _) }}.\n\
         far(x, z) :- reach(x, y), e(y, z), !e(x, z).\n{}",
        graph_facts(30, 70, 3)
    );
    same_with_refusals(&text, 20);
}

#[test]
fn a_limit_of_one_row_still_completes() {
    // Every piece is cut to a single input tuple where a join makes more than one row.
    same_with_refusals(&closure(graph_facts(25, 60, 5)), 1);
}
