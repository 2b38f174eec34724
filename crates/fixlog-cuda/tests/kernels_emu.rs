//! The generated kernels RUN, without a GPU: the module of `codegen::coverage_ops`
//! (every operator kind, arities 0..12, keys 0..3, every device-able operator and type,
//! filters, rotated index orders, the transitive-closure join) is compiled for the
//! host with a small CUDA emulator (`tests/cxx/cuda_emu.h`: one OS thread per CUDA
//! thread, barriers for `__syncthreads` and the warp shuffles and ballots), and each
//! operator's kernels are launched as the kernel contract says (`tests/cxx/emu_main.cpp`:
//! launch shapes from the Rust constants, `P_jcount` → exclusive scan → `P_jwrite` and
//! `P_jwrite_distinct`, past one block's candidates in two windows (`kbase`) as the
//! backend writes into a smaller buffer, `P_anti` over three runs, one empty; input pointer 0 for arity
//! 0) on random data, including edge values. The results must be what
//! `fixlog_logical::value` gives (`tests/common`).
//!
//! The emulator runs blocks one after the other, so rows must come out in input order
//! (the kernels keep the order within a block; across blocks the order is the atomic
//! counter's): `P_map`, `P_anti` and `P_jwrite` are compared row for row, which also
//! checks every reserved position. `P_jwrite_distinct` with one or two output columns
//! may drop repeats: its rows must be the same set, without more rows than `P_jwrite`
//! (counting those its cache of written rows, `seen`, dropped); given a cache of 64
//! slots per candidate it must write no row twice across both windows wherever no two
//! distinct rows share a slot (computed here with the kernel's hash), and given a cache
//! of 7 slots it must still write the same set.
//!
//! What the emulator cannot show: timing, memory coalescing, and the device's own
//! intrinsics (its float semantics are the shims of `tests/cxx/values_shim.h`, checked
//! by `values_cxx.rs`). A missing C++ compiler fails the test: CI has one.

mod common;

use common::{anti_ref, chunks, join_ref, map_ref, stored, Rng};
use fixlog_cuda::codegen::{coverage_ops, module_source, DeviceOp, JN_WORDS};
use fixlog_exec::OpSpec;
use fixlog_logical::SymbolTable;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

const VALUES_SHIM: &str = include_str!("cxx/values_shim.h");
const CUDA_EMU: &str = include_str!("cxx/cuda_emu.h");
const EMU_MAIN: &str = include_str!("cxx/emu_main.cpp");

fn cxx() -> String {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    match Command::new(&cxx).arg("--version").output() {
        Ok(o) if o.status.success() => cxx,
        _ => panic!(
            "kernels_emu needs a host C++ compiler with C++20: `{cxx}` was not found or does \
             not run (install g++ or set CXX)"
        ),
    }
}

/// The table `FX_OPS` of emu_main.cpp.
fn op_table(ops: &[DeviceOp]) -> String {
    let mut t = String::from("static const FxOp FX_OPS[] = {\n");
    for o in ops {
        let p = &o.prefix;
        let s = format!("fxop::op_{p}");
        let dims = format!("{s}::IN, {s}::INNER, {s}::KEY, {s}::OUT");
        let _ = match &o.spec {
            OpSpec::Scan { .. } | OpSpec::Filter { .. } => writeln!(
                t,
                "  {{0, {dims}, {p}_map, nullptr, nullptr, nullptr, nullptr, nullptr, -1}},"
            ),
            OpSpec::Join { .. } => {
                let (jnew, group) = match o.spec.new_rows_shape() {
                    Some(shape) => (format!("{p}_jnew"), shape.group as i64),
                    None => ("nullptr".to_string(), -1),
                };
                writeln!(
                    t,
                    "  {{1, {dims}, nullptr, {p}_jcount, {p}_jwrite, {p}_jwrite_distinct, nullptr, {jnew}, {group}}},"
                )
            }
            OpSpec::AntiJoin { .. } => writeln!(
                t,
                "  {{2, {dims}, nullptr, nullptr, nullptr, nullptr, {p}_anti, nullptr, -1}},"
            ),
            OpSpec::Aggregate { .. } | OpSpec::Intersect { .. } => {
                unreachable!("no aggregates or intersections among the ops")
            }
        };
    }
    t.push_str("};\n");
    t
}

fn put_u32(b: &mut Vec<u8>, v: u32) {
    b.extend(v.to_le_bytes());
}
fn put_u64(b: &mut Vec<u8>, v: u64) {
    b.extend(v.to_le_bytes());
}
fn put_rows(b: &mut Vec<u8>, rows: &[Vec<u32>]) {
    put_u64(b, rows.len() as u64);
    for v in rows.iter().flatten() {
        put_u32(b, *v);
    }
}

/// What one job must answer.
enum Expect {
    Rows(Vec<Vec<u32>>),
    Join {
        candidates: u64,
        rows: Vec<Vec<u32>>,
        may_dedup: bool,
    },
    /// `P_jnew`: the rows it must write (a set: blocks that share a group may repeat
    /// one), the candidates that pass and those outside the bitmap.
    New {
        rows: HashSet<Vec<u32>>,
        passed: u64,
        outside: u64,
    },
}

struct Job {
    /// The operator's index in the list.
    op: usize,
    what: String,
    out_arity: usize,
    expect: Expect,
}

struct Answers {
    bytes: Vec<u8>,
    at: usize,
}

impl Answers {
    fn take(&mut self, bytes: usize, what: &str) -> &[u8] {
        let end = self.at.saturating_add(bytes);
        let Some(b) = self.bytes.get(self.at..end) else {
            panic!("the emulator's answers end early ({what})")
        };
        self.at = end;
        b
    }
    fn u64(&mut self, what: &str) -> u64 {
        let b = self.take(8, what);
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }
    fn rows(&mut self, arity: usize, what: &str) -> Vec<Vec<u32>> {
        let n = self.u64(what) as usize;
        let words: Vec<u32> = self
            .take(n.saturating_mul(arity * 4), what)
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        chunks(&words, arity, n)
    }
}

fn jobs(ops: &[DeviceOp], syms: &SymbolTable) -> (Vec<u8>, Vec<Job>) {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut input = Vec::new();
    let mut jobs = Vec::new();
    for (i, o) in ops.iter().enumerate() {
        let p = &o.prefix;
        match &o.spec {
            OpSpec::Scan { arity, project, .. } | OpSpec::Filter { arity, project, .. } => {
                for n in [0, 1, 1000, 2500] {
                    let rows = rng.rows(n, *arity, 6);
                    put_u32(&mut input, i as u32);
                    put_rows(&mut input, &chunks(&rows, *arity, n));
                    jobs.push(Job {
                        op: i,
                        what: format!("{p}_map, n = {n}"),
                        out_arity: project.len(),
                        expect: Expect::Rows(map_ref(&o.spec, &rows, n, syms)),
                    });
                }
            }
            OpSpec::Join {
                input_arity,
                order,
                key_len,
                project,
                ..
            } => {
                let sizes: &[(usize, usize)] = if *key_len == 0 {
                    &[(1, 40), (37, 0), (120, 50), (2000, 1)]
                } else {
                    &[(1, 40), (37, 0), (400, 80), (2000, 1)]
                };
                for &(n, m) in sizes {
                    let rows = rng.rows(n, *input_arity, 4);
                    let rel = chunks(&rng.rows(m, order.len(), 4), order.len(), m);
                    let st = stored(&rel, order);
                    put_u32(&mut input, i as u32);
                    put_rows(&mut input, &chunks(&rows, *input_arity, n));
                    put_rows(&mut input, &st);
                    let (candidates, rows) = join_ref(&o.spec, &rows, n, &st, syms);
                    jobs.push(Job {
                        op: i,
                        what: format!("{p} join, n = {n}, {} inner rows", st.len()),
                        out_arity: project.len(),
                        expect: Expect::Join {
                            candidates,
                            rows,
                            may_dedup: matches!(project.len(), 1 | 2),
                        },
                    });
                }
                if let Some(shape) = o.spec.new_rows_shape() {
                    for (n, m, clean, words_max) in [
                        (200, 40, true, JN_WORDS),
                        (300, 60, false, JN_WORDS),
                        (150, 40, true, 1),
                    ] {
                        jobs.push(jnew_job(
                            &mut rng,
                            &mut input,
                            (i, o),
                            shape.group,
                            (n, m, clean, words_max),
                            syms,
                        ));
                    }
                }
            }
            OpSpec::AntiJoin {
                input_arity, order, ..
            } => {
                for (n, m, empty) in [(1, 10, false), (2500, 100, false), (500, 50, true)] {
                    let rows = rng.rows(n, *input_arity, 5);
                    let m = if empty { 0 } else { m };
                    let rel = chunks(&rng.rows(m, order.len(), 5), order.len(), m);
                    let (r1, r2) = rel.split_at(m / 3);
                    let runs = [stored(r1, order), Vec::new(), stored(r2, order)];
                    put_u32(&mut input, i as u32);
                    put_rows(&mut input, &chunks(&rows, *input_arity, n));
                    put_u32(&mut input, runs.len() as u32);
                    for r in &runs {
                        put_rows(&mut input, r);
                    }
                    jobs.push(Job {
                        op: i,
                        what: format!("{p}_anti, n = {n}, runs empty: {empty}"),
                        out_arity: *input_arity,
                        expect: Expect::Rows(anti_ref(&o.spec, &rows, n, &runs, syms)),
                    });
                }
            }
            OpSpec::Aggregate { .. } | OpSpec::Intersect { .. } => unreachable!(),
        }
    }
    (input, jobs)
}

/// A job of `P_jnew` for operator `op` (a join of `new_rows_shape`, grouped on input
/// column `group`): `n` input rows sorted on that column (`clean`: small values only,
/// else edge values too), `m` inner rows, and an `old` of two runs holding about half
/// of the join's distinct rows and some others; the bitmap spans the rows' second column, at
/// most `words_max` words (fewer: some candidates fall outside).
fn jnew_job(
    rng: &mut Rng,
    input: &mut Vec<u8>,
    (i, o): (usize, &DeviceOp),
    group: usize,
    (n, m, clean, words_max): (usize, usize, bool, u32),
    syms: &SymbolTable,
) -> Job {
    let OpSpec::Join {
        input_arity, order, ..
    } = &o.spec
    else {
        unreachable!("a join")
    };
    let value = |rng: &mut Rng| {
        if clean {
            rng.next() % 24
        } else {
            rng.value(24)
        }
    };
    // Few groups, so few blocks (the emulator runs a thread per CUDA thread).
    let mut rows: Vec<Vec<u32>> = (0..n)
        .map(|_| {
            (0..*input_arity)
                .map(|c| {
                    if c == group {
                        value(rng) % 6
                    } else {
                        value(rng)
                    }
                })
                .collect()
        })
        .collect();
    rows.sort_by_key(|r| r[group]);
    let flat: Vec<u32> = rows.iter().flatten().copied().collect();
    let rel: Vec<Vec<u32>> = (0..m)
        .map(|_| (0..order.len()).map(|_| value(rng)).collect())
        .collect();
    let st = stored(&rel, order);
    let (candidates, made) = join_ref(&o.spec, &flat, n, &st, syms);
    let mut distinct = made.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let mut old: Vec<Vec<u32>> = distinct
        .into_iter()
        .filter(|_| rng.next().is_multiple_of(2))
        .collect();
    old.extend((0..20).map(|_| vec![value(rng), value(rng)]));
    old.sort_unstable();
    old.dedup();
    let (run_a, run_b): (Vec<Vec<u32>>, Vec<Vec<u32>>) = old
        .iter()
        .cloned()
        .partition(|_| rng.next().is_multiple_of(3));
    let lo = made.iter().map(|r| r[1]).min().unwrap_or(0);
    let hi = made.iter().map(|r| r[1]).max().unwrap_or(0);
    let words = (((hi - lo) / 32 + 1).min(words_max)).max(1);
    let inside = |r: &Vec<u32>| r[1].wrapping_sub(lo) < words * 32;
    let old_set: HashSet<&Vec<u32>> = old.iter().collect();
    let want: HashSet<Vec<u32>> = made
        .iter()
        .filter(|r| inside(r) && !old_set.contains(r))
        .cloned()
        .collect();
    let outside = made.iter().filter(|r| !inside(r)).count() as u64;
    put_u32(input, i as u32 | 0x8000_0000);
    put_rows(input, &rows);
    put_rows(input, &st);
    put_u32(input, 2);
    put_rows(input, &run_a);
    put_rows(input, &run_b);
    put_u32(input, lo);
    put_u32(input, words);
    put_u64(input, 64);
    Job {
        op: i,
        what: format!(
            "{}_jnew, n = {n}, {} candidates, clean: {clean}, {words} words",
            o.prefix, candidates
        ),
        out_arity: 2,
        expect: Expect::New {
            rows: want,
            passed: made.len() as u64,
            outside,
        },
    }
}

#[test]
fn generated_kernels_run_on_the_emulator() {
    let ops = coverage_ops();
    let module = module_source(&ops).expect("generate");
    let main = EMU_MAIN.replace("@FX_OPS@", &op_table(&ops));
    let src = format!("{VALUES_SHIM}\n{CUDA_EMU}\n{module}\n{main}");
    let dir = std::env::temp_dir().join(format!("fixlog-kernels-emu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let file = dir.join("emu.cpp");
    let exe = dir.join("emu");
    std::fs::write(&file, &src).expect("write source");
    let out = Command::new(cxx())
        .args([
            "-std=c++20",
            "-O1",
            "-pthread",
            "-ffp-contract=off",
            "-fno-fast-math",
            "-Wno-unknown-pragmas",
        ])
        .arg(&file)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run the C++ compiler");
    assert!(
        out.status.success(),
        "{} does not compile:\n{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );

    let syms = SymbolTable::new();
    let (input, jobs) = jobs(&ops, &syms);
    // The data makes every operator write rows somewhere, else it tests too little.
    for (i, o) in ops.iter().enumerate() {
        let writes = jobs.iter().filter(|j| j.op == i).any(|j| match &j.expect {
            Expect::Rows(r) | Expect::Join { rows: r, .. } => !r.is_empty(),
            Expect::New { .. } => false,
        });
        assert!(writes, "no job makes {} write a row", o.prefix);
        if o.spec.new_rows_shape().is_some() {
            let new_rows = jobs.iter().filter(|j| j.op == i).any(|j| match &j.expect {
                Expect::New { rows, outside, .. } => !rows.is_empty() && *outside == 0,
                _ => false,
            });
            assert!(new_rows, "no job makes {}_jnew write a row", o.prefix);
        }
    }
    assert!(
        ops.iter().any(|o| o.spec.new_rows_shape().is_some()),
        "no operator has P_jnew"
    );
    let mut child = Command::new(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the emulator");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("emulator output");
    writer.join().expect("writer").expect("write jobs");
    assert!(out.status.success(), "emulator failed: {:?}", out.status);

    let mut a = Answers {
        bytes: out.stdout,
        at: 0,
    };
    let mut failures = Vec::new();
    for j in &jobs {
        match &j.expect {
            Expect::Rows(want) => {
                let got = a.rows(j.out_arity, &j.what);
                if &got != want {
                    failures.push(format!(
                        "{}: {} rows, expected {} (first difference at {:?})",
                        j.what,
                        got.len(),
                        want.len(),
                        got.iter().zip(want).position(|(g, w)| g != w)
                    ));
                }
            }
            Expect::New {
                rows,
                passed,
                outside,
            } => {
                let got = a.rows(2, &j.what);
                let got_passed = a.u64(&j.what);
                let got_outside = a.u64(&j.what);
                let again = a.u64(&j.what);
                let set: HashSet<Vec<u32>> = got.iter().cloned().collect();
                if &set != rows
                    || got_passed != *passed
                    || got_outside != *outside
                    || again != got.len() as u64
                {
                    failures.push(format!(
                        "{}: jnew wrote {} rows ({} distinct, {} expected), {got_passed} \
                         passed ({passed} expected), {got_outside} outside ({outside} \
                         expected), {again} rows counted into a buffer of one",
                        j.what,
                        got.len(),
                        set.len(),
                        rows.len()
                    ));
                }
            }
            Expect::Join {
                candidates,
                rows,
                may_dedup,
            } => {
                let total = a.u64(&j.what);
                let plain = a.rows(j.out_arity, &j.what);
                let distinct = a.rows(j.out_arity, &j.what);
                let set_drops = a.u64(&j.what) as usize;
                let distinct_full_set = a.rows(j.out_arity, &j.what);
                let full_set_drops = a.u64(&j.what) as usize;
                if total != *candidates {
                    failures.push(format!(
                        "{}: jcount found {total} candidates, expected {candidates}",
                        j.what
                    ));
                }
                if &plain != rows {
                    failures.push(format!(
                        "{}: jwrite wrote {} rows, expected {}",
                        j.what,
                        plain.len(),
                        rows.len()
                    ));
                }
                let w: HashSet<&Vec<u32>> = rows.iter().collect();
                // Where no two distinct rows share a slot of the large cache, it
                // drops every repeat.
                let large = 64 * total + 16;
                let slots: HashSet<u64> = w.iter().map(|r| cache_slot(r, large)).collect();
                let no_collision = slots.len() == w.len();
                for (got, drops, seen) in [
                    (&distinct, set_drops, "a large cache"),
                    (&distinct_full_set, full_set_drops, "a cache of 7 slots"),
                ] {
                    let ok = if *may_dedup {
                        let g: HashSet<&Vec<u32>> = got.iter().collect();
                        // The row of all ones is the cache's empty slot: never held.
                        let empty =
                            |r: &&Vec<u32>| r.len() == 2 && r.iter().all(|&x| x == u32::MAX);
                        let no_repeats = got.iter().filter(|r| !empty(r)).count()
                            == g.iter().filter(|r| !empty(r)).count();
                        // Each row the cache dropped is one the blocks kept.
                        g == w
                            && got.len() + drops <= rows.len()
                            && (seen != "a large cache" || !no_collision || no_repeats)
                    } else {
                        got == rows && drops == 0
                    };
                    if !ok {
                        failures.push(format!(
                            "{}: jwrite_distinct with {seen} wrote {} rows, dropped {drops} by the cache ({} expected, {} distinct)",
                            j.what,
                            got.len(),
                            rows.len(),
                            w.len()
                        ));
                    }
                }
            }
        }
    }
    assert_eq!(a.at, a.bytes.len(), "unread answers");
    eprintln!(
        "kernels_emu: {} jobs over {} operators",
        jobs.len(),
        ops.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let _ = std::fs::remove_dir_all(dir);
}

/// The slot of the cache of written rows (`seen_insert` in `pipeline.cuh`) that holds
/// a row of one or two words, in a cache of `slots` slots.
fn cache_slot(row: &[u32], slots: u64) -> u64 {
    fn mix(h: u32, w: u32) -> u32 {
        let w = w
            .wrapping_mul(0xcc9e2d51)
            .rotate_left(15)
            .wrapping_mul(0x1b873593);
        (h ^ w)
            .rotate_left(13)
            .wrapping_mul(5)
            .wrapping_add(0xe6546b64)
    }
    fn fin(mut h: u32) -> u32 {
        h ^= h >> 16;
        h = h.wrapping_mul(0x85ebca6b);
        h ^= h >> 13;
        h = h.wrapping_mul(0xc2b2ae35);
        h ^ (h >> 16)
    }
    let h = fin(row.iter().fold(0x9747b28c, |h, &w| mix(h, w)));
    (fin(h ^ 0x85ebca6b) as u64 * slots) >> 32
}
