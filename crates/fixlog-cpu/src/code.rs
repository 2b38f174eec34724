//! Operators lowered once per run ([`fixlog_exec::Backend::prepare`]): each
//! [`OpSpec`]'s expressions compiled to closures-free trees over the two rows an
//! operator reads (see [`crate::eval`]).

use crate::eval::{compile_expr, CExpr, Pipeline, Src};
use crate::new_rows::NewRowsJoin;
use fixlog_exec::{EvalContext, ExecError, ExecResult, OpSpec};
use fixlog_logical::{AggFunc, ColType, Value};
use fixlog_plan::PExpr;

/// A join or anti-join key, compiled over the input row.
#[derive(Debug)]
pub struct KeyCode {
    pub(crate) exprs: Vec<CExpr>,
    /// `Some` when every key expression is a column or a constant (no interpreter).
    pub(crate) simple: Option<Vec<Src>>,
}

impl KeyCode {
    fn new(key: &[PExpr]) -> KeyCode {
        let exprs: Vec<CExpr> = key.iter().map(|e| compile_expr(e, &Src::In)).collect();
        let simple = exprs.iter().map(|e| e.as_src()).collect();
        KeyCode { exprs, simple }
    }

    pub(crate) fn len(&self) -> usize {
        self.exprs.len()
    }

    /// Evaluates the key of input row `r` into `buf`; false if an expression failed.
    #[inline(always)]
    pub(crate) fn eval(&self, r: &[Value], ctx: &EvalContext, buf: &mut [Value]) -> bool {
        if let Some(srcs) = &self.simple {
            for (k, s) in buf.iter_mut().zip(srcs) {
                *k = match *s {
                    Src::In(c) => r[c],
                    Src::Inner(_) => 0,
                    Src::Const(v) => v,
                };
            }
            true
        } else {
            for (k, e) in buf.iter_mut().zip(&self.exprs) {
                match e.eval(r, &[], ctx.symbols) {
                    Some(v) => *k = v,
                    None => return false,
                }
            }
            true
        }
    }
}

/// One prepared operator of the CPU backend.
#[derive(Debug)]
pub enum CpuCode {
    /// A scan or a filter: filters and projection over the input row.
    Map {
        arity: usize,
        pipe: Pipeline,
    },
    Join {
        input_arity: usize,
        order: Vec<usize>,
        key: KeyCode,
        /// Over the input row and the inner row as stored (in index order).
        pipe: Pipeline,
        out_arity: usize,
        distinct: bool,
        /// Where, absorbed into a relation, it can give back its new rows from a bitmap
        /// per group (see [`crate::new_rows`]).
        new_rows: Option<Box<NewRowsJoin>>,
    },
    Intersect(IntersectCode),
    AntiJoin {
        input_arity: usize,
        order: Vec<usize>,
        key: KeyCode,
    },
    Aggregate {
        input_arity: usize,
        func: AggFunc,
        ty: ColType,
        /// Over the input row and the one-value row `[aggregate]`.
        pipe: Pipeline,
        out_arity: usize,
    },
}

/// A worst-case-optimal join step (see [`crate::leapfrog`]).
#[derive(Debug)]
pub struct IntersectCode {
    pub(crate) input_arity: usize,
    pub(crate) atoms: Vec<IntersectAtomCode>,
    /// Over the input row and the one-value row `[new value]`.
    pub(crate) pipe: Pipeline,
    pub(crate) out_arity: usize,
    pub(crate) distinct: bool,
}

/// One atom of an intersection: its index's order (checked against the index given),
/// the key length (the new value is the stored column right after the key) and key.
#[derive(Debug)]
pub struct IntersectAtomCode {
    pub(crate) order: Vec<usize>,
    pub(crate) key_len: usize,
    pub(crate) key: KeyCode,
}

impl CpuCode {
    pub fn prepare(spec: &OpSpec) -> ExecResult<CpuCode> {
        Ok(match spec {
            OpSpec::Scan {
                arity,
                filters,
                project,
            }
            | OpSpec::Filter {
                arity,
                filters,
                project,
            } => CpuCode::Map {
                arity: *arity,
                pipe: Pipeline::new(filters, project, &Src::In),
            },
            OpSpec::Join {
                input_arity,
                order,
                key_len,
                key,
                filters,
                project,
                distinct,
            } => {
                check_key(key.len(), *key_len, order.len())?;
                let a = *input_arity;
                let inv = inverse(order)?;
                let map = |c: usize| {
                    if c < a {
                        Src::In(c)
                    } else {
                        Src::Inner(inv.get(c - a).copied().unwrap_or(0))
                    }
                };
                let new_rows = spec.new_rows_shape().map(|shape| {
                    Box::new(NewRowsJoin {
                        group: shape.group,
                        second: shape.second,
                        spans: std::sync::Mutex::new(Vec::new()),
                    })
                });
                CpuCode::Join {
                    input_arity: a,
                    order: order.clone(),
                    key: KeyCode::new(key),
                    pipe: Pipeline::new(filters, project, &map),
                    out_arity: project.len(),
                    distinct: *distinct,
                    new_rows,
                }
            }
            OpSpec::Intersect {
                input_arity,
                atoms,
                filters,
                project,
                distinct,
            } => {
                let mut codes = Vec::with_capacity(atoms.len());
                for at in atoms {
                    check_key(at.key.len(), at.key_len, at.order.len())?;
                    if at.key_len >= at.order.len() {
                        return Err(ExecError::Backend(format!(
                            "an intersected index of {} columns has no column after its key of {}",
                            at.order.len(),
                            at.key_len
                        )));
                    }
                    inverse(&at.order)?;
                    codes.push(IntersectAtomCode {
                        order: at.order.clone(),
                        key_len: at.key_len,
                        key: KeyCode::new(&at.key),
                    });
                }
                let a = *input_arity;
                let map = |c: usize| if c < a { Src::In(c) } else { Src::Inner(0) };
                CpuCode::Intersect(IntersectCode {
                    input_arity: a,
                    atoms: codes,
                    pipe: Pipeline::new(filters, project, &map),
                    out_arity: project.len(),
                    distinct: *distinct,
                })
            }
            OpSpec::AntiJoin {
                input_arity,
                order,
                key_len,
                key,
            } => {
                check_key(key.len(), *key_len, order.len())?;
                inverse(order)?;
                CpuCode::AntiJoin {
                    input_arity: *input_arity,
                    order: order.clone(),
                    key: KeyCode::new(key),
                }
            }
            OpSpec::Aggregate {
                input_arity,
                func,
                ty,
                filters,
                project,
            } => {
                let a = *input_arity;
                let map = |c: usize| if c < a { Src::In(c) } else { Src::Inner(0) };
                CpuCode::Aggregate {
                    input_arity: a,
                    func: *func,
                    ty: *ty,
                    pipe: Pipeline::new(filters, project, &map),
                    out_arity: project.len(),
                }
            }
        })
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self {
            CpuCode::Map { .. } => "scan or filter",
            CpuCode::Join { .. } => "join",
            CpuCode::Intersect(_) => "intersection",
            CpuCode::AntiJoin { .. } => "anti-join",
            CpuCode::Aggregate { .. } => "aggregate",
        }
    }
}

fn check_key(exprs: usize, key_len: usize, arity: usize) -> ExecResult<()> {
    if exprs != key_len || key_len > arity {
        return Err(ExecError::Backend(format!(
            "join key has {exprs} expressions but the index's key has {key_len} of {arity} columns"
        )));
    }
    Ok(())
}

/// `inv[c]`: the position of relation column `c` in a row stored in `order`.
pub(crate) fn inverse(order: &[usize]) -> ExecResult<Vec<usize>> {
    let mut inv = vec![usize::MAX; order.len()];
    for (p, &c) in order.iter().enumerate() {
        match inv.get_mut(c) {
            Some(slot) if *slot == usize::MAX => *slot = p,
            _ => {
                return Err(ExecError::Backend(format!(
                    "index order {order:?} is not a permutation of its columns"
                )))
            }
        }
    }
    Ok(inv)
}

/// An error for an operator given a code prepared for another kind or shape.
pub(crate) fn wrong_code(op: &str, code: &CpuCode) -> ExecError {
    ExecError::Backend(format!(
        "internal error: {op} given the code of a {}",
        code.kind()
    ))
}
