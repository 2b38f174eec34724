//! Tests of the generator's text (no compiler needed; `tests/values_cxx.rs` compiles
//! it for the host, `examples/kernel_check.rs` with NVRTC).

use super::*;
use crate::kernels::defined_kernels;
use fixlog_logical::{AggFunc, Predicate, UnaryOp};
use proptest::prelude::*;

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

fn op(prefix: &str, spec: OpSpec) -> DeviceOp {
    DeviceOp {
        prefix: prefix.into(),
        spec,
    }
}

fn tc() -> OpSpec {
    OpSpec::Join {
        input_arity: 2,
        order: vec![0, 1],
        key_len: 1,
        key: vec![col(1)],
        filters: vec![],
        project: vec![col(0), col(3)],
        distinct: true,
    }
}

fn scan(arity: usize, filters: Vec<Cond>, project: Vec<PExpr>) -> OpSpec {
    OpSpec::Scan {
        arity,
        filters,
        project,
    }
}

/// The kernels a spec must get, by the contract (`P_jnew` for joins of
/// `new_rows_shape`).
fn expected_kernels(prefix: &str, spec: &OpSpec) -> Vec<String> {
    let suffixes: &[&str] = match spec {
        OpSpec::Scan { .. } | OpSpec::Filter { .. } => &["map"],
        OpSpec::Join { .. } if spec.new_rows_shape().is_some() => {
            &["jcount", "jwrite", "jwrite_distinct", "jnew"]
        }
        OpSpec::Join { .. } => &["jcount", "jwrite", "jwrite_distinct"],
        OpSpec::AntiJoin { .. } => &["anti"],
        OpSpec::Aggregate { .. } | OpSpec::Intersect { .. } => &[],
    };
    suffixes.iter().map(|s| format!("{prefix}_{s}")).collect()
}

/// The text of operator `prefix`'s struct.
fn op_struct<'a>(src: &'a str, prefix: &str) -> &'a str {
    let start = src.find(&format!("struct op_{prefix} {{")).expect("struct");
    let end = src[start..].find("};").expect("end of struct");
    &src[start..start + end]
}

#[test]
fn transitive_closure_join() {
    let src = module_source(&[op("tc", tc())]).unwrap();
    assert_eq!(
        defined_kernels(&src),
        vec!["tc_jcount", "tc_jwrite", "tc_jwrite_distinct", "tc_jnew"]
    );
    // Grouped on input column 0, the output's first.
    assert!(src.contains("fxk::jnew_kernel<fxop::op_tc, 0>("), "{src}");
    let s = op_struct(&src, "tc");
    assert!(s.contains("IN = 2, INNER = 2, KEY = 1, OUT = 2;"), "{s}");
    assert!(s.contains("CAN_FAIL = false;"), "{s}");
    assert!(s.contains("k[0] = a[1];"), "{s}");
    assert!(s.contains("o.set(0, a[0]);"), "{s}");
    assert!(s.contains("o.set(1, b[1]);"), "{s}");
    assert!(!s.contains("ok"), "{s}");
    // Self-contained: the headers are inlined, the launch constants defined.
    assert!(!src.contains("#include"));
    for name in [
        "FX_MAP_BLOCK",
        "FX_JW_ITEMS",
        "FX_JD_BLOCK",
        "hisa_find",
        "namespace fxv",
        "namespace fxk",
    ] {
        assert!(src.contains(name), "{name}");
    }
    assert!(src.contains(&format!("#define FX_JW_BLOCK {JW_BLOCK}\n")));
}

#[test]
fn inner_columns_read_their_stored_position() {
    // Index stored in order (2, 0, 1): relation column 0 is at position 1, column 1 at
    // position 2, column 2 at position 0.
    let spec = OpSpec::Join {
        input_arity: 1,
        order: vec![2, 0, 1],
        key_len: 1,
        key: vec![col(0)],
        filters: vec![],
        project: vec![col(1), col(2), col(3), col(0)],
        distinct: false,
    };
    let src = module_source(&[op("j", spec)]).unwrap();
    let s = op_struct(&src, "j");
    for (c, v) in ["b[1]", "b[2]", "b[0]", "a[0]"].iter().enumerate() {
        assert!(s.contains(&format!("o.set({c}, {v});")), "{s}");
    }
}

#[test]
fn kinds_get_their_kernels() {
    let ops = vec![
        op("s", scan(3, vec![], vec![col(2), PExpr::Const(7)])),
        op(
            "f",
            OpSpec::Filter {
                arity: 0,
                filters: vec![],
                project: vec![],
            },
        ),
        op(
            "a",
            OpSpec::AntiJoin {
                input_arity: 2,
                order: vec![1, 0],
                key_len: 2,
                key: vec![col(1), col(0)],
            },
        ),
        op("t", tc()),
    ];
    let src = module_source(&ops).unwrap();
    let want: Vec<String> = ops
        .iter()
        .flat_map(|o| expected_kernels(&o.prefix, &o.spec))
        .collect();
    assert_eq!(defined_kernels(&src), want);
    assert!(op_struct(&src, "s").contains("o.set(1, 0x7u);"));
    let a = op_struct(&src, "a");
    assert!(
        a.contains("k[0] = a[1];") && a.contains("k[1] = a[0];"),
        "{a}"
    );
}

#[test]
fn failing_operations_use_ok() {
    let div = bin(BinOp::Div, ColType::Number, col(0), col(1));
    let spec = scan(
        2,
        vec![Cond::Compare {
            op: CmpOp::Lt,
            ty: ColType::Float,
            lhs: col(0),
            rhs: PExpr::Const(0x3f80_0000),
        }],
        vec![
            div,
            PExpr::Functor {
                func: Functor::ToFloat,
                args: vec![],
            },
        ],
    );
    let src = module_source(&[op("d", spec)]).unwrap();
    let s = op_struct(&src, "d");
    assert!(s.contains("CAN_FAIL = true;"), "{s}");
    assert!(s.contains("bool ok = true;"), "{s}");
    assert!(s.contains("fxv::div_n(a[0], a[1], ok)"), "{s}");
    assert!(
        s.contains("if (!fxv::lt_f(a[0], 0x3f800000u)) return false;"),
        "{s}"
    );
    assert!(s.contains("ok = false;"), "{s}");
    assert!(s.contains("if (!ok) return false;"), "{s}");
    // A filter alone makes an operator fallible, without `ok`.
    let spec = scan(
        1,
        vec![Cond::Compare {
            op: CmpOp::Eq,
            ty: ColType::Symbol,
            lhs: col(0),
            rhs: PExpr::Const(3),
        }],
        vec![col(0)],
    );
    let src = module_source(&[op("e", spec)]).unwrap();
    let s = op_struct(&src, "e");
    assert!(s.contains("CAN_FAIL = true;") && !s.contains("ok"), "{s}");
    assert!(s.contains("fxv::eq_i(a[0], 0x3u)"), "{s}");
}

#[test]
fn nested_expressions_are_ssa() {
    // (a0 + a1) * -(a0) in unsigned, then to_float.
    let e = PExpr::Functor {
        func: Functor::ToFloat,
        args: vec![bin(
            BinOp::Mul,
            ColType::Unsigned,
            bin(BinOp::Add, ColType::Unsigned, col(0), col(1)),
            PExpr::Unary {
                op: UnaryOp::Neg,
                ty: ColType::Unsigned,
                arg: Box::new(col(0)),
            },
        )],
    };
    let src = pipeline_function("f", 2, &[], &[e]).unwrap();
    assert!(
        src.contains("const u32 t0 = fxv::add_i(a[0], a[1]);"),
        "{src}"
    );
    assert!(src.contains("const u32 t1 = fxv::neg_i(a[0]);"), "{src}");
    assert!(src.contains("const u32 t2 = fxv::mul_i(t0, t1);"), "{src}");
    assert!(src.contains("const u32 t3 = fxv::n2f(t2);"), "{src}");
    assert!(src.contains("o[0] = t3;"), "{src}");
}

fn err_of(spec: OpSpec) -> String {
    module_source(&[op("x", spec)]).unwrap_err()
}

#[test]
fn what_cannot_be_generated_is_an_error() {
    let host_only = [
        PExpr::Functor {
            func: Functor::Cat,
            args: vec![col(0), col(0)],
        },
        PExpr::Functor {
            func: Functor::Strlen,
            args: vec![col(0)],
        },
        bin(BinOp::Pow, ColType::Float, col(0), col(0)),
    ];
    for e in host_only {
        let msg = err_of(scan(1, vec![], vec![e.clone()]));
        assert!(msg.contains("device"), "{msg}");
        assert!(pipeline_function("f", 1, &[], &[e]).is_err());
    }
    let sym_lt = Cond::Compare {
        op: CmpOp::Lt,
        ty: ColType::Symbol,
        lhs: col(0),
        rhs: col(0),
    };
    assert!(err_of(scan(1, vec![sym_lt.clone()], vec![])).contains("strings"));
    assert!(pipeline_function("f", 1, &[sym_lt], &[]).is_err());
    let pred = Cond::Predicate {
        pred: Predicate::Contains,
        args: vec![col(0), col(0)],
        negated: false,
    };
    assert!(err_of(scan(1, vec![pred.clone()], vec![])).contains("contains"));
    assert!(pipeline_function("f", 1, &[pred], &[]).is_err());
    assert!(err_of(OpSpec::Aggregate {
        input_arity: 1,
        func: AggFunc::Count,
        ty: ColType::Number,
        filters: vec![],
        project: vec![col(0)],
    })
    .contains("aggregate"));

    // Columns out of range: projection, filter, key (which sees the input only).
    assert!(err_of(scan(2, vec![], vec![col(2)])).contains("column 2"));
    assert!(err_of(scan(
        0,
        vec![Cond::Compare {
            op: CmpOp::Eq,
            ty: ColType::Number,
            lhs: col(0),
            rhs: col(0),
        }],
        vec![]
    ))
    .contains("column 0"));
    let join = |order: Vec<usize>, key_len, key: Vec<PExpr>, project: Vec<PExpr>| OpSpec::Join {
        input_arity: 2,
        order,
        key_len,
        key,
        filters: vec![],
        project,
        distinct: false,
    };
    assert!(err_of(join(vec![0, 1], 1, vec![col(1)], vec![col(4)])).contains("column 4"));
    assert!(err_of(join(vec![0, 1], 1, vec![col(2)], vec![col(0)])).contains("column 2"));
    assert!(err_of(join(vec![0, 0], 1, vec![col(1)], vec![])).contains("permutation"));
    assert!(err_of(join(vec![0, 2], 1, vec![col(1)], vec![])).contains("permutation"));
    assert!(err_of(join(vec![0, 1], 3, vec![col(1); 3], vec![])).contains("key of 3"));
    assert!(err_of(join(vec![0, 1], 1, vec![], vec![])).contains("key expressions"));
    let anti = OpSpec::AntiJoin {
        input_arity: 1,
        order: vec![0],
        key_len: 1,
        key: vec![col(1)],
    };
    assert!(err_of(anti).contains("column 1"));

    // Prefixes.
    for bad in ["", "1a", "a-b", "a__b", "_a", "é", "a b"] {
        assert!(module_source(&[op(bad, tc())]).is_err(), "{bad:?}");
    }
    assert!(module_source(&[op("a", tc()), op("a", tc())])
        .unwrap_err()
        .contains("share"));
    assert!(module_source(&[op("int", tc())]).is_ok());
    assert!(module_source(&[]).is_ok());
}

#[test]
fn coverage_ops_generate() {
    let ops = coverage_ops();
    assert!(ops.iter().all(|o| spec_host_reason(&o.spec).is_none()));
    let src = module_source(&ops).unwrap();
    let want: Vec<String> = ops
        .iter()
        .flat_map(|o| expected_kernels(&o.prefix, &o.spec))
        .collect();
    assert_eq!(defined_kernels(&src), want);
    // Every device-able binary operator appears in every type.
    for f in [
        "add_i", "add_f", "div_n", "div_u", "div_f", "rem_n", "rem_u", "rem_f", "pow_n", "pow_u",
        "shr_n", "shr_u", "shl", "land_f", "lor_i", "min_n", "min_u", "min_f", "max_f", "lt_n",
        "lt_u", "lt_f", "eq_i", "eq_f", "ne_f", "neg_f", "neg_i", "lnot_f", "bnot", "n2f", "f2n",
    ] {
        assert!(src.contains(&format!("fxv::{f}(")), "{f}");
    }
}

// ---- no panics on any spec ---------------------------------------------------------

fn ty() -> impl Strategy<Value = ColType> {
    prop_oneof![
        Just(ColType::Number),
        Just(ColType::Unsigned),
        Just(ColType::Float),
        Just(ColType::Symbol),
    ]
}

fn binop() -> impl Strategy<Value = BinOp> {
    (0..BinOp::ALL.len()).prop_map(|i| BinOp::ALL[i])
}

/// Device functors four times as often as host ones.
fn functor() -> impl Strategy<Value = Functor> {
    prop_oneof![
        4 => (0..4usize).prop_map(|i| {
            [
                Functor::Ord,
                Functor::ToUnsigned,
                Functor::ToFloat,
                Functor::ToInteger,
            ][i]
        }),
        1 => (0..5usize).prop_map(|i| {
            [
                Functor::Cat,
                Functor::Strlen,
                Functor::Substr,
                Functor::ToNumber,
                Functor::ToString,
            ][i]
        }),
    ]
}

/// Expressions over `width` columns, now and then reading one out of range.
fn expr(width: usize) -> impl Strategy<Value = PExpr> {
    let leaf = prop_oneof![
        8 => (0..width.max(1)).prop_map(move |c| if width == 0 {
            PExpr::Const(c as u32)
        } else {
            PExpr::Col(c)
        }),
        3 => any::<u32>().prop_map(PExpr::Const),
        1 => (width..width + 3).prop_map(PExpr::Col),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            ((0..UnaryOp::ALL.len()), ty(), inner.clone()).prop_map(|(o, ty, a)| PExpr::Unary {
                op: UnaryOp::ALL[o],
                ty,
                arg: Box::new(a),
            }),
            (binop(), ty(), inner.clone(), inner.clone())
                .prop_map(|(op, ty, l, r)| bin(op, ty, l, r)),
            (functor(), prop::collection::vec(inner, 0..3))
                .prop_map(|(func, args)| PExpr::Functor { func, args }),
        ]
    })
}

fn cond(width: usize) -> impl Strategy<Value = Cond> {
    prop_oneof![
        8 => ((0..CmpOp::ALL.len()), ty(), expr(width), expr(width)).prop_map(|(o, ty, lhs, rhs)| {
            Cond::Compare {
                op: CmpOp::ALL[o],
                ty,
                lhs,
                rhs,
            }
        }),
        1 => (prop::collection::vec(expr(width), 0..3), any::<bool>()).prop_map(|(args, negated)| {
            Cond::Predicate {
                pred: Predicate::Match,
                args,
                negated,
            }
        }),
    ]
}

/// Orders that are usually permutations of 0..n, sometimes not.
fn order() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        8 => (0..6usize).prop_flat_map(|n| Just((0..n).collect::<Vec<_>>()).prop_shuffle()),
        1 => prop::collection::vec(0..6usize, 0..5),
    ]
}

fn pipeline(width: usize) -> impl Strategy<Value = (Vec<Cond>, Vec<PExpr>)> {
    (
        prop::collection::vec(cond(width), 0..3),
        prop::collection::vec(expr(width), 0..5),
    )
}

/// An index (order, key length, key over `input` columns), usually consistent.
fn index(input: usize) -> impl Strategy<Value = (Vec<usize>, usize, Vec<PExpr>)> {
    order().prop_flat_map(move |order| {
        let n = order.len();
        prop_oneof![
            8 => (0..=n).prop_flat_map(move |k| prop::collection::vec(expr(input), k..=k))
                .prop_map(|key| (key.len(), key)),
            1 => (0..4usize, prop::collection::vec(expr(input), 0..4)),
        ]
        .prop_map(move |(key_len, key)| (order.clone(), key_len, key))
    })
}

fn spec() -> impl Strategy<Value = OpSpec> {
    prop_oneof![
        (0..6usize).prop_flat_map(|arity| pipeline(arity).prop_map(move |(filters, project)| {
            OpSpec::Scan {
                arity,
                filters,
                project,
            }
        })),
        (0..6usize).prop_flat_map(|arity| pipeline(arity).prop_map(move |(filters, project)| {
            OpSpec::Filter {
                arity,
                filters,
                project,
            }
        })),
        (0..5usize)
            .prop_flat_map(|input| (Just(input), index(input)))
            .prop_flat_map(|(input, (order, key_len, key))| {
                let width = input + order.len();
                (pipeline(width), any::<bool>()).prop_map(move |((filters, project), distinct)| {
                    OpSpec::Join {
                        input_arity: input,
                        order: order.clone(),
                        key_len,
                        key: key.clone(),
                        filters,
                        project,
                        distinct,
                    }
                })
            }),
        (0..5usize)
            .prop_flat_map(|input| (Just(input), index(input)))
            .prop_map(|(input_arity, (order, key_len, key))| OpSpec::AntiJoin {
                input_arity,
                order,
                key_len,
                key,
            }),
    ]
}

/// Whether the generator must accept `spec`, decided independently of it.
fn acceptable(spec: &OpSpec) -> bool {
    fn cols_ok(e: &PExpr, width: usize) -> bool {
        match e {
            PExpr::Col(c) => *c < width,
            PExpr::Const(_) => true,
            PExpr::Unary { arg, .. } => cols_ok(arg, width),
            PExpr::Binary { lhs, rhs, .. } => cols_ok(lhs, width) && cols_ok(rhs, width),
            PExpr::Functor { args, .. } => args.iter().all(|a| cols_ok(a, width)),
        }
    }
    let conds_ok = |fs: &[Cond], width| {
        fs.iter().all(|f| match f {
            Cond::Compare { lhs, rhs, .. } => cols_ok(lhs, width) && cols_ok(rhs, width),
            Cond::Predicate { .. } => false,
        })
    };
    let index_ok = |order: &[usize], key_len: usize, key: &[PExpr], input| {
        let mut sorted = order.to_vec();
        sorted.sort_unstable();
        sorted.iter().copied().eq(0..order.len())
            && key_len <= order.len()
            && key.len() == key_len
            && key.iter().all(|k| cols_ok(k, input))
    };
    spec_host_reason(spec).is_none()
        && match spec {
            OpSpec::Scan {
                arity,
                filters,
                project,
            }
            | OpSpec::Filter {
                arity,
                filters,
                project,
            } => conds_ok(filters, *arity) && project.iter().all(|e| cols_ok(e, *arity)),
            OpSpec::Join {
                input_arity,
                order,
                key_len,
                key,
                filters,
                project,
                ..
            } => {
                let width = input_arity + order.len();
                index_ok(order, *key_len, key, *input_arity)
                    && conds_ok(filters, width)
                    && project.iter().all(|e| cols_ok(e, width))
            }
            OpSpec::AntiJoin {
                input_arity,
                order,
                key_len,
                key,
            } => index_ok(order, *key_len, key, *input_arity),
            OpSpec::Aggregate { .. } | OpSpec::Intersect { .. } => false,
        }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_spec_generates_or_errs(specs in prop::collection::vec(spec(), 1..3)) {
        let ops: Vec<DeviceOp> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| op(&format!("p{i}"), s.clone()))
            .collect();
        let all_ok = specs.iter().all(acceptable);
        match module_source(&ops) {
            Ok(src) => {
                prop_assert!(all_ok, "accepted {specs:?}");
                let want: Vec<String> = ops
                    .iter()
                    .flat_map(|o| expected_kernels(&o.prefix, &o.spec))
                    .collect();
                prop_assert_eq!(defined_kernels(&src), want);
            }
            Err(e) => prop_assert!(!all_ok, "rejected {specs:?}: {e}"),
        }
    }
}
