//! A spread of device operators for compile checks: every operator kind, arities from
//! 0 to 12 and a few of 32 to 40, key lengths 0 to 3, outputs 0 to 10 (and 32 to 36),
//! every device-able operator, functor and comparison in every type, filters, keys and
//! projections that can fail, index orders that are not the identity, and the
//! transitive-closure join (`tc*`). `examples/kernel_check.rs` compiles their
//! module with NVRTC (and `scripts/kernel-check.sh` runs `ptxas -v` on it), the unit
//! tests generate it, `tests/kernels_emu.rs` runs it on the host and
//! `examples/codegen_gpu.rs` on a GPU.

use super::{expr_host_reason, DeviceOp};
use fixlog_exec::OpSpec;
use fixlog_logical::{BinOp, CmpOp, ColType, Functor, UnaryOp};
use fixlog_plan::{Cond, PExpr};

const TYPES: [ColType; 4] = [
    ColType::Number,
    ColType::Unsigned,
    ColType::Float,
    ColType::Symbol,
];

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

fn cmp(op: CmpOp, ty: ColType, lhs: PExpr, rhs: PExpr) -> Cond {
    Cond::Compare { op, ty, lhs, rhs }
}

/// `n` projected columns over a joined tuple of `width` columns: columns, constants and
/// an occasional expression.
fn projection(n: usize, width: usize, salt: usize) -> Vec<PExpr> {
    (0..n)
        .map(|i| match (width, (i + salt) % 5) {
            (0, _) | (_, 3) => PExpr::Const((i * 7 + salt) as u32),
            (w, 4) => bin(
                BinOp::Add,
                ColType::Number,
                col((i + salt) % w),
                PExpr::Const(1),
            ),
            (w, _) => col((i * 3 + salt) % w),
        })
        .collect()
}

fn filters(width: usize, salt: usize) -> Vec<Cond> {
    if width == 0 {
        return vec![cmp(
            CmpOp::Lt,
            ColType::Number,
            PExpr::Const(1),
            PExpr::Const(2),
        )];
    }
    vec![
        cmp(
            CmpOp::ALL[salt % CmpOp::ALL.len()],
            ColType::Number,
            col(salt % width),
            if width > 1 {
                col((salt + 1) % width)
            } else {
                PExpr::Const(2)
            },
        ),
        cmp(
            CmpOp::Ne,
            ColType::Unsigned,
            bin(
                BinOp::Rem,
                ColType::Unsigned,
                col(width - 1),
                PExpr::Const(3),
            ),
            PExpr::Const(0),
        ),
    ]
}

/// Every unary and binary operator and functor in every type over columns 0 and 1,
/// behind one filter that mostly holds: one `Scan` per type.
fn every_operator(ty: ColType) -> OpSpec {
    let mut project = Vec::new();
    for op in UnaryOp::ALL {
        project.push(PExpr::Unary {
            op,
            ty,
            arg: Box::new(col(0)),
        });
    }
    for op in BinOp::ALL {
        let e = bin(op, ty, col(0), col(1));
        if expr_host_reason(&e).is_none() {
            project.push(e);
        }
    }
    for func in [
        Functor::Ord,
        Functor::ToUnsigned,
        Functor::ToFloat,
        Functor::ToInteger,
    ] {
        project.push(PExpr::Functor {
            func,
            args: vec![col(1)],
        });
    }
    OpSpec::Scan {
        arity: 3,
        filters: vec![cmp(
            CmpOp::Ne,
            ty,
            col(2),
            bin(BinOp::Max, ty, col(0), PExpr::Const(0x3f80_0000)),
        )],
        project,
    }
}

/// Every comparison in type `ty` as filters that hold together (when column 0 is below
/// column 1): one `Filter` per type.
fn every_comparison(ty: ColType) -> OpSpec {
    let filters = if ty == ColType::Symbol {
        vec![
            cmp(CmpOp::Ne, ty, col(0), col(1)),
            cmp(CmpOp::Eq, ty, col(2), col(2)),
        ]
    } else {
        vec![
            cmp(CmpOp::Lt, ty, col(0), col(1)),
            cmp(CmpOp::Le, ty, col(0), col(1)),
            cmp(CmpOp::Gt, ty, col(1), col(0)),
            cmp(CmpOp::Ge, ty, col(1), col(0)),
            cmp(CmpOp::Ne, ty, col(0), col(1)),
            cmp(CmpOp::Eq, ty, col(2), col(2)),
        ]
    };
    OpSpec::Filter {
        arity: 3,
        filters,
        project: vec![col(1), col(0)],
    }
}

fn join(
    input: usize,
    inner: usize,
    key_len: usize,
    out: usize,
    filtered: bool,
    salt: usize,
) -> OpSpec {
    // A rotated order: stored position p holds relation column (p + salt) % inner.
    let order: Vec<usize> = (0..inner).map(|p| (p + salt) % inner).collect();
    let key = (0..key_len)
        .map(|k| {
            if input == 0 {
                PExpr::Const(k as u32)
            } else if k == 1 {
                bin(
                    BinOp::Sub,
                    ColType::Number,
                    col((k + salt) % input),
                    PExpr::Const(1),
                )
            } else {
                col((k + salt) % input)
            }
        })
        .collect();
    let width = input + inner;
    OpSpec::Join {
        input_arity: input,
        order,
        key_len,
        key,
        filters: if filtered {
            filters(width, salt)
        } else {
            Vec::new()
        },
        project: projection(out, width, salt),
        distinct: salt.is_multiple_of(2),
    }
}

/// The operators (see the module docs).
pub fn coverage_ops() -> Vec<DeviceOp> {
    let mut ops = Vec::new();
    let mut add = |prefix: String, spec: OpSpec| ops.push(DeviceOp { prefix, spec });

    // Transitive closure: path(x, z) :- path(x, y), edge(y, z).
    let tc = |filters: Vec<Cond>, distinct: bool| OpSpec::Join {
        input_arity: 2,
        order: vec![0, 1],
        key_len: 1,
        key: vec![col(1)],
        filters,
        project: vec![col(0), col(3)],
        distinct,
    };
    add("tc".into(), tc(Vec::new(), true));
    add(
        "tc_ne".into(),
        tc(vec![cmp(CmpOp::Ne, ColType::Number, col(0), col(3))], true),
    );
    // The same over an index stored in order (1, 0), keyed on column 1.
    add(
        "tc_rev".into(),
        OpSpec::Join {
            input_arity: 2,
            order: vec![1, 0],
            key_len: 1,
            key: vec![col(0)],
            filters: Vec::new(),
            project: vec![col(2), col(1)],
            distinct: false,
        },
    );

    // Keys that fail (division by zero): the input row matches nothing, or is kept by
    // the anti-join; a projection that fails, with three outputs (evaluated twice).
    let div = |op, ty| bin(op, ty, col(0), col(1));
    add(
        "join_div".into(),
        OpSpec::Join {
            input_arity: 2,
            order: vec![1, 0],
            key_len: 1,
            key: vec![div(BinOp::Rem, ColType::Unsigned)],
            filters: Vec::new(),
            project: vec![col(3), div(BinOp::Div, ColType::Number), col(2)],
            distinct: true,
        },
    );
    add(
        "anti_div".into(),
        OpSpec::AntiJoin {
            input_arity: 2,
            order: vec![0, 1],
            key_len: 1,
            key: vec![div(BinOp::Div, ColType::Number)],
        },
    );

    // Wide rows: read from memory where used, projected straight to memory.
    add(
        "scan_wide".into(),
        OpSpec::Scan {
            arity: 40,
            filters: filters(40, 5),
            project: projection(36, 40, 2),
        },
    );
    add("join_wide".into(), join(33, 34, 3, 32, true, 7));
    add("joinw_nf".into(), join(32, 3, 1, 33, false, 4));
    if let OpSpec::Join { order, key, .. } = join(32, 33, 2, 0, false, 3) {
        add(
            "anti_wide".into(),
            OpSpec::AntiJoin {
                input_arity: 32,
                order,
                key_len: 2,
                key,
            },
        );
    }

    for (i, ty) in TYPES.into_iter().enumerate() {
        add(format!("every{i}"), every_operator(ty));
        add(format!("compare{i}"), every_comparison(ty));
    }

    for (i, (arity, out)) in [
        (0, 1),
        (1, 0),
        (1, 1),
        (2, 2),
        (3, 5),
        (4, 4),
        (7, 10),
        (12, 3),
    ]
    .into_iter()
    .enumerate()
    {
        let project = projection(out, arity, i);
        add(
            format!("scan{i}"),
            OpSpec::Scan {
                arity,
                filters: Vec::new(),
                project: project.clone(),
            },
        );
        add(
            format!("filter{i}"),
            OpSpec::Filter {
                arity,
                filters: filters(arity, i),
                project,
            },
        );
    }

    for (i, &(input, inner, key_len, out)) in [
        (0, 0, 0, 0),
        (0, 2, 1, 1),
        (1, 1, 1, 1),
        (1, 3, 0, 2),
        (2, 2, 2, 2),
        (2, 3, 1, 3),
        (3, 2, 1, 4),
        (3, 4, 2, 5),
        (4, 4, 3, 2),
        (5, 7, 3, 6),
        (8, 2, 1, 10),
        (12, 12, 3, 8),
        (2, 12, 1, 10),
        (12, 1, 0, 1),
    ]
    .iter()
    .enumerate()
    {
        add(
            format!("join{i}"),
            join(input, inner, key_len, out, false, i),
        );
        add(
            format!("joinf{i}"),
            join(input, inner, key_len, out, true, i + 1),
        );
    }

    for (i, &(input, inner, key_len)) in [
        (0, 0, 0),
        (1, 1, 1),
        (2, 2, 1),
        (2, 3, 2),
        (4, 4, 3),
        (12, 5, 2),
        (3, 1, 0),
    ]
    .iter()
    .enumerate()
    {
        let OpSpec::Join { order, key, .. } = join(input, inner, key_len, 0, false, i) else {
            continue;
        };
        add(
            format!("anti{i}"),
            OpSpec::AntiJoin {
                input_arity: input,
                order,
                key_len,
                key,
            },
        );
    }
    ops
}
