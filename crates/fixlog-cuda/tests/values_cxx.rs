//! The device value semantics against `fixlog_logical::value`, without a GPU.
//!
//! `kernels/values.cuh` and the code the generator writes for expressions are
//! compiled for the host with the system C++ compiler (`c++`, or `$CXX`), with shims
//! that model the CUDA qualifiers and intrinsics (`tests/cxx/values_shim.h`: correctly
//! rounded float operations that return the device's canonical NaN 0x7FFFFFFF,
//! saturating conversions), and
//! evaluated on every pair of a list of edge values for every operator, type,
//! comparison and device functor, plus composite expressions. The results must be the
//! bits `fixlog_logical::value` gives (a dropped tuple included), with one allowance:
//! when both operands of a float operation are NaN, the host's result may carry either
//! one's payload (which one depends on how the compiler ordered the operands).
//!
//! (`kernels_emu.rs` compiles and runs the whole generated module on the host.)
//!
//! A missing C++ compiler fails these tests: CI has one.

mod common;

use common::eval;
use fixlog_cuda::codegen::{pipeline_function, VALUES_CUH};
use fixlog_logical::value::compare;
use fixlog_logical::{BinOp, CmpOp, ColType, Functor, SymbolTable, UnaryOp, Value};
use fixlog_plan::{Cond, PExpr};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SHIMS: &str = include_str!("cxx/values_shim.h");

/// The C++ compiler, or a failure that says how to get one.
fn cxx() -> String {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    match Command::new(&cxx).arg("--version").output() {
        Ok(o) if o.status.success() => cxx,
        _ => panic!(
            "values_cxx needs a host C++ compiler: `{cxx}` was not found or does not run \
             (install g++ or set CXX)"
        ),
    }
}

/// A scratch folder of one test (removed when it passes).
fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fixlog-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch folder");
    d
}

fn compile(dir: &Path, src: &str, name: &str, extra: &[&str]) -> PathBuf {
    let file = dir.join(format!("{name}.cpp"));
    std::fs::write(&file, src).expect("write C++ source");
    let exe = dir.join(name);
    let out = Command::new(cxx())
        .args(["-std=c++17", "-ffp-contract=off", "-fno-fast-math"])
        .args(extra)
        .arg(&file)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run the C++ compiler");
    assert!(
        out.status.success(),
        "{} failed to compile:\n{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

// ---- cases ----------------------------------------------------------------------------

/// Bit patterns read as every type: integer edges, shift counts, float edges (signed
/// zeros, infinities, NaNs with payloads, subnormals, values at the integer limits),
/// and a few pseudo-random words.
fn values() -> Vec<Value> {
    let mut v: Vec<Value> = vec![
        0,
        1,
        2,
        3,
        5,
        7,
        16,
        31,
        32,
        33,
        63,
        64,
        u32::MAX,
        (-2i32) as u32,
        (-3i32) as u32,
        (-7i32) as u32,
        (-31i32) as u32,
        (-32i32) as u32,
        (-33i32) as u32,
        i32::MIN as u32,
        (i32::MIN + 1) as u32,
        i32::MAX as u32,
        (i32::MAX - 1) as u32,
        3_000_000_000,
        0x1234_5678,
        0xDEAD_BEEF,
        65536,
        46341,
    ];
    let floats = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        -2.5,
        2.0,
        3.0,
        7.0,
        -7.0,
        0.1,
        1e-3,
        123.456,
        0.999_999_94,
        -0.999_999_94,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        3e9,
        -3e9,
        2_147_483_648.0,
        -2_147_483_648.0,
        2_147_483_520.0,
        -2_147_483_904.0,
        4_294_967_296.0,
        4_294_967_040.0,
        1e10,
        -1e10,
        16_777_216.0,
    ];
    v.extend(floats.iter().map(|f| f.to_bits()));
    v.extend([
        0x7FC0_0000, // NaN
        0xFFC0_0000, // -NaN (x86's default NaN)
        0x7F80_0001, // signalling NaN
        0xFFA0_0000, // negative signalling NaN
        0x7FC1_2345, // NaN with a payload
        0x0000_0001, // smallest subnormal
        0x007F_FFFF, // largest subnormal
        0x8000_0001,
        0x807F_FFFF,
    ]);
    let mut x: u32 = 0x9E37_79B9;
    for _ in 0..10 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.push(x);
    }
    v
}

/// One function of the test program: filters and a projection over (a, b).
struct Case {
    what: String,
    /// The type of the operation (NaN allowance for floats).
    ty: Option<ColType>,
    filters: Vec<Cond>,
    project: Vec<PExpr>,
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

fn un(op: UnaryOp, ty: ColType, arg: PExpr) -> PExpr {
    PExpr::Unary {
        op,
        ty,
        arg: Box::new(arg),
    }
}

fn fun(func: Functor, args: Vec<PExpr>) -> PExpr {
    PExpr::Functor { func, args }
}

fn cmp(op: CmpOp, ty: ColType, lhs: PExpr, rhs: PExpr) -> Cond {
    Cond::Compare { op, ty, lhs, rhs }
}

const TYPES: [ColType; 4] = [
    ColType::Number,
    ColType::Unsigned,
    ColType::Float,
    ColType::Symbol,
];

fn cases() -> Vec<Case> {
    use BinOp::*;
    let mut cases = Vec::new();
    let mut add = |what: String, ty, filters, project| {
        cases.push(Case {
            what,
            ty,
            filters,
            project,
        })
    };
    for ty in TYPES {
        for op in BinOp::ALL {
            if op == Pow && ty == ColType::Float {
                continue; // host only
            }
            add(
                format!("{op:?} {ty:?}"),
                Some(ty),
                vec![],
                vec![bin(op, ty, col(0), col(1))],
            );
        }
        for op in UnaryOp::ALL {
            add(
                format!("{op:?} {ty:?}"),
                Some(ty),
                vec![],
                vec![un(op, ty, col(0))],
            );
        }
        for op in CmpOp::ALL {
            if ty == ColType::Symbol && !matches!(op, CmpOp::Eq | CmpOp::Ne) {
                continue; // host only
            }
            add(
                format!("{op:?} {ty:?}"),
                None,
                vec![cmp(op, ty, col(0), col(1))],
                vec![PExpr::Const(1)],
            );
        }
    }
    for func in [
        Functor::Ord,
        Functor::ToUnsigned,
        Functor::ToFloat,
        Functor::ToInteger,
    ] {
        add(
            format!("{func:?}"),
            None,
            vec![],
            vec![fun(func, vec![col(0)])],
        );
    }
    let n = ColType::Number;
    let f = ColType::Float;
    // Composite expressions: chained temporaries, failures inside, filters first.
    add(
        "(a + b) * (a - b) where a < b".into(),
        None,
        vec![cmp(CmpOp::Lt, n, col(0), col(1))],
        vec![bin(
            Mul,
            n,
            bin(Add, n, col(0), col(1)),
            bin(Sub, n, col(0), col(1)),
        )],
    );
    add(
        "to_integer(to_float(a) / to_float(b))".into(),
        Some(f),
        vec![],
        vec![fun(
            Functor::ToInteger,
            vec![bin(
                Div,
                f,
                fun(Functor::ToFloat, vec![col(0)]),
                fun(Functor::ToFloat, vec![col(1)]),
            )],
        )],
    );
    add(
        "(a / b) % (b - 1), a, b".into(),
        None,
        vec![],
        vec![
            bin(
                Rem,
                n,
                bin(Div, n, col(0), col(1)),
                bin(Sub, n, col(1), PExpr::Const(1)),
            ),
            col(0),
            col(1),
        ],
    );
    add(
        "to_float(a, a / b): a failing extra argument".into(),
        None,
        vec![],
        vec![fun(
            Functor::ToFloat,
            vec![col(0), bin(Div, n, col(0), col(1))],
        )],
    );
    add(
        "ord(): no argument".into(),
        None,
        vec![],
        vec![fun(Functor::Ord, vec![])],
    );
    add(
        "max(a, -b) where a = b (float), b % a where a /u b > 0".into(),
        Some(f),
        vec![
            cmp(CmpOp::Ne, f, col(0), col(1)),
            cmp(
                CmpOp::Gt,
                ColType::Unsigned,
                bin(Div, ColType::Unsigned, col(0), col(1)),
                PExpr::Const(0),
            ),
        ],
        vec![
            bin(Max, f, col(0), un(UnaryOp::Neg, f, col(1))),
            bin(Rem, f, col(1), col(0)),
        ],
    );
    add(
        "a ^ (b band 7), 1 bshl b, a bshr b (number)".into(),
        None,
        vec![],
        vec![
            bin(Pow, n, col(0), bin(BAnd, n, col(1), PExpr::Const(7))),
            bin(BShl, n, PExpr::Const(1), col(1)),
            bin(BShr, n, col(0), col(1)),
        ],
    );
    cases
}

// ---- the reference -------------------------------------------------------------------

fn reference(c: &Case, row: &[Value], syms: &SymbolTable) -> Option<Vec<Value>> {
    for f in &c.filters {
        let Cond::Compare { op, ty, lhs, rhs } = f else {
            unreachable!("no predicates in the cases")
        };
        let (x, y) = (eval(lhs, row, syms)?, eval(rhs, row, syms)?);
        if !compare(*op, *ty, x, y) {
            return None;
        }
    }
    c.project.iter().map(|e| eval(e, row, syms)).collect()
}

fn is_nan(v: Value) -> bool {
    f32::from_bits(v).is_nan()
}

/// Whether a device result `dev` may stand for the host's `host` of a float operation
/// on (a, b) (see the module docs).
fn nan_allowance(host: Value, dev: Value, a: Value, b: Value) -> bool {
    if !(is_nan(host) && is_nan(dev)) {
        return false;
    }
    if !cfg!(target_arch = "x86_64") {
        return true; // other hosts have other NaN rules: only "NaN" is comparable
    }
    let quiet = |v: Value| v | 0x0040_0000;
    is_nan(a)
        && is_nan(b)
        && [quiet(a), quiet(b)].contains(&host)
        && [quiet(a), quiet(b)].contains(&dev)
}

const MAX_OUT: usize = 4;

#[test]
fn device_values_match_the_reference() {
    let cases = cases();
    let vals = values();
    // The program: one generated function per case, run on every pair of values read
    // from stdin; per pair it writes the flag and MAX_OUT words.
    let mut src = String::from(SHIMS);
    src.push_str(VALUES_CUH);
    for (i, c) in cases.iter().enumerate() {
        assert!(c.project.len() <= MAX_OUT);
        let f = pipeline_function(&format!("case{i}"), 2, &c.filters, &c.project)
            .unwrap_or_else(|e| panic!("{}: {e}", c.what));
        src.push_str(&f);
    }
    src.push_str("typedef bool (*Fn)(const u32*, u32*);\nstatic const Fn FNS[] = {");
    for i in 0..cases.len() {
        src.push_str(&format!("case{i}, "));
    }
    src.push_str(&format!(
        r#"}};
int main() {{
  u32 n = 0;
  if (fread(&n, 4, 1, stdin) != 1) return 2;
  static u32 v[4096];
  if (n > 4096 || fread(v, 4, n, stdin) != n) return 2;
  for (u32 f = 0; f < sizeof(FNS) / sizeof(FNS[0]); f++)
    for (u32 i = 0; i < n; i++)
      for (u32 j = 0; j < n; j++) {{
        u32 row[2] = {{v[i], v[j]}};
        u32 rec[1 + {MAX_OUT}] = {{0}};
        rec[0] = FNS[f](row, rec + 1) ? 1u : 0u;
        fwrite(rec, 4, 1 + {MAX_OUT}, stdout);
      }}
  return 0;
}}
"#
    ));
    let dir = scratch("values-cxx");
    let exe = compile(&dir, &src, "values", &["-O1"]);

    let mut child = Command::new(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the test program");
    {
        let mut stdin = child.stdin.take().expect("stdin");
        let mut bytes = (vals.len() as u32).to_le_bytes().to_vec();
        for v in &vals {
            bytes.extend(v.to_le_bytes());
        }
        stdin.write_all(&bytes).expect("write values");
    }
    let out = child.wait_with_output().expect("test program output");
    assert!(
        out.status.success(),
        "test program failed: {:?}",
        out.status
    );
    let words: Vec<u32> = out
        .stdout
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let rec = 1 + MAX_OUT;
    assert_eq!(words.len(), cases.len() * vals.len() * vals.len() * rec);

    let syms = SymbolTable::new();
    let mut checked = 0usize;
    let mut allowed = 0usize;
    let mut failures = Vec::new();
    for (ci, c) in cases.iter().enumerate() {
        for (i, &a) in vals.iter().enumerate() {
            for (j, &b) in vals.iter().enumerate() {
                let at = ((ci * vals.len() + i) * vals.len() + j) * rec;
                let r = &words[at..at + rec];
                let dev = (r[0] == 1).then(|| r[1..1 + c.project.len()].to_vec());
                let host = reference(c, &[a, b], &syms);
                checked += 1;
                if dev == host {
                    continue;
                }
                let excused = c.ty == Some(ColType::Float)
                    && matches!((&host, &dev), (Some(h), Some(d))
                        if h.len() == d.len()
                            && h.iter().zip(d).all(|(&h, &d)| h == d || nan_allowance(h, d, a, b)));
                if excused {
                    allowed += 1;
                } else if failures.len() < 40 {
                    failures.push(format!(
                        "{}: a = {a:#010x}, b = {b:#010x}: device {dev:x?}, reference {host:x?}",
                        c.what
                    ));
                }
            }
        }
    }
    eprintln!(
        "values_cxx: {checked} cases ({} functions x {} x {} values), {allowed} NaN payload allowances",
        cases.len(),
        vals.len(),
        vals.len()
    );
    assert!(
        failures.is_empty(),
        "device semantics differ from fixlog_logical::value:\n{}",
        failures.join("\n")
    );
    let _ = std::fs::remove_dir_all(dir);
}
