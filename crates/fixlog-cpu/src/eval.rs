//! Expressions and conditions compiled for the tuple loops.
//!
//! A plan's [`PExpr::Col`] numbers the columns of the *joined tuple*; the loops never
//! build that tuple. Compilation resolves each column to where it lives: the input row
//! (`In`) or the second row (`Inner`: the inner row of a join, stored in index order, or
//! the aggregate's value), so evaluation reads the two slices directly. Projections made
//! only of columns and constants take a copy loop without the interpreter.

use fixlog_logical::value::{
    compare, compare_with_symbols, eval_binary, eval_functor, eval_predicate, eval_unary,
    needs_symbols,
};
use fixlog_logical::{BinOp, CmpOp, ColType, Functor, Predicate, SymbolTable, UnaryOp, Value};
use fixlog_plan::{Cond, PExpr};

/// Where a joined-tuple column lives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Src {
    In(usize),
    Inner(usize),
    Const(Value),
}

#[derive(Clone, Debug)]
pub enum CExpr {
    Leaf(Src),
    Unary {
        op: UnaryOp,
        ty: ColType,
        arg: Box<CExpr>,
    },
    Binary {
        op: BinOp,
        ty: ColType,
        lhs: Box<CExpr>,
        rhs: Box<CExpr>,
    },
    Functor {
        func: Functor,
        args: Vec<CExpr>,
    },
}

#[derive(Clone, Debug)]
pub enum CCond {
    Compare {
        op: CmpOp,
        ty: ColType,
        symbolic: bool,
        lhs: CExpr,
        rhs: CExpr,
    },
    Predicate {
        pred: Predicate,
        args: Vec<CExpr>,
        negated: bool,
    },
}

/// Maps a joined-tuple column to its place.
pub type ColMap<'a> = &'a dyn Fn(usize) -> Src;

pub fn compile_expr(e: &PExpr, map: ColMap) -> CExpr {
    match e {
        PExpr::Col(c) => CExpr::Leaf(map(*c)),
        PExpr::Const(v) => CExpr::Leaf(Src::Const(*v)),
        PExpr::Unary { op, ty, arg } => CExpr::Unary {
            op: *op,
            ty: *ty,
            arg: Box::new(compile_expr(arg, map)),
        },
        PExpr::Binary { op, ty, lhs, rhs } => CExpr::Binary {
            op: *op,
            ty: *ty,
            lhs: Box::new(compile_expr(lhs, map)),
            rhs: Box::new(compile_expr(rhs, map)),
        },
        PExpr::Functor { func, args } => CExpr::Functor {
            func: *func,
            args: args.iter().map(|a| compile_expr(a, map)).collect(),
        },
    }
}

pub fn compile_cond(c: &Cond, map: ColMap) -> CCond {
    match c {
        Cond::Compare { op, ty, lhs, rhs } => CCond::Compare {
            op: *op,
            ty: *ty,
            symbolic: needs_symbols(*op, *ty),
            lhs: compile_expr(lhs, map),
            rhs: compile_expr(rhs, map),
        },
        Cond::Predicate {
            pred,
            args,
            negated,
        } => CCond::Predicate {
            pred: *pred,
            args: args.iter().map(|a| compile_expr(a, map)).collect(),
            negated: *negated,
        },
    }
}

#[inline(always)]
fn leaf(s: Src, a: &[Value], b: &[Value]) -> Value {
    match s {
        Src::In(i) => a[i],
        Src::Inner(i) => b[i],
        Src::Const(v) => v,
    }
}

impl CExpr {
    /// The value, or `None` when a functor or operator fails (the tuple is dropped).
    #[inline]
    pub fn eval(&self, a: &[Value], b: &[Value], syms: &SymbolTable) -> Option<Value> {
        match self {
            CExpr::Leaf(s) => Some(leaf(*s, a, b)),
            CExpr::Unary { op, ty, arg } => eval_unary(*op, *ty, arg.eval(a, b, syms)?),
            CExpr::Binary { op, ty, lhs, rhs } => {
                eval_binary(*op, *ty, lhs.eval(a, b, syms)?, rhs.eval(a, b, syms)?)
            }
            CExpr::Functor { func, args } => {
                let mut vals = [0 as Value; 8];
                if args.len() <= vals.len() {
                    for (v, e) in vals.iter_mut().zip(args) {
                        *v = e.eval(a, b, syms)?;
                    }
                    eval_functor(*func, &vals[..args.len()], syms)
                } else {
                    let vals = args
                        .iter()
                        .map(|e| e.eval(a, b, syms))
                        .collect::<Option<Vec<_>>>()?;
                    eval_functor(*func, &vals, syms)
                }
            }
        }
    }

    pub fn as_src(&self) -> Option<Src> {
        match self {
            CExpr::Leaf(s) => Some(*s),
            _ => None,
        }
    }
}

impl CCond {
    /// Whether the joined tuple passes; a failing expression fails the condition.
    #[inline]
    pub fn holds(&self, a: &[Value], b: &[Value], syms: &SymbolTable) -> bool {
        match self {
            CCond::Compare {
                op,
                ty,
                symbolic,
                lhs,
                rhs,
            } => {
                let (Some(x), Some(y)) = (lhs.eval(a, b, syms), rhs.eval(a, b, syms)) else {
                    return false;
                };
                if *symbolic {
                    compare_with_symbols(*op, *ty, x, y, syms)
                } else {
                    compare(*op, *ty, x, y)
                }
            }
            CCond::Predicate {
                pred,
                args,
                negated,
            } => {
                let Some(vals) = args
                    .iter()
                    .map(|e| e.eval(a, b, syms))
                    .collect::<Option<Vec<_>>>()
                else {
                    return false;
                };
                eval_predicate(*pred, &vals, *negated, syms)
            }
        }
    }
}

/// A compiled filter list plus projection.
#[derive(Debug)]
pub struct Pipeline {
    pub filters: Vec<CCond>,
    pub project: Vec<CExpr>,
    /// `Some` when every projected expression is a column or a constant.
    pub simple: Option<Vec<Src>>,
}

impl Pipeline {
    pub fn new(filters: &[Cond], project: &[PExpr], map: ColMap) -> Pipeline {
        let filters: Vec<CCond> = filters.iter().map(|c| compile_cond(c, map)).collect();
        let project: Vec<CExpr> = project.iter().map(|e| compile_expr(e, map)).collect();
        let simple = project.iter().map(|e| e.as_src()).collect();
        Pipeline {
            filters,
            project,
            simple,
        }
    }

    /// Evaluates the filters and appends the projection of the joined tuple `a ++ b` to
    /// `out`; returns whether a row was written.
    #[inline(always)]
    pub fn emit(&self, a: &[Value], b: &[Value], syms: &SymbolTable, out: &mut Vec<Value>) -> bool {
        for f in &self.filters {
            if !f.holds(a, b, syms) {
                return false;
            }
        }
        if let Some(simple) = &self.simple {
            for &s in simple {
                out.push(leaf(s, a, b));
            }
            true
        } else {
            let mark = out.len();
            for e in &self.project {
                match e.eval(a, b, syms) {
                    Some(v) => out.push(v),
                    None => {
                        out.truncate(mark);
                        return false;
                    }
                }
            }
            true
        }
    }

    /// Whether the projection is exactly the input row (no filters, `In(0..arity)`).
    pub fn is_identity(&self, arity: usize) -> bool {
        self.filters.is_empty()
            && self.simple.as_ref().is_some_and(|s| {
                s.len() == arity && s.iter().enumerate().all(|(i, &x)| x == Src::In(i))
            })
    }
}
