//! Pass 3: type inference to a fixpoint and emission of the logical IR, checking every
//! use against the inferred types.

use super::*;

impl RuleCx<'_, '_> {
    pub(super) fn describe_origin(&self, v: VarId) -> String {
        match &self.vars[v].origin {
            Some((s, why)) => format!("{} ({why})", self.ck.sources.location(*s)),
            None => "elsewhere".to_string(),
        }
    }

    /// Give variables the types of the atom columns they occur in.
    pub(super) fn seed(&mut self, lits: &[LLit]) {
        for l in lits {
            match l {
                LLit::Atom { rel, args, .. } => {
                    for (i, a) in args.iter().enumerate() {
                        let LTerm::Var(v, s) = a else { continue };
                        let rel_data = &self.ck.relations[*rel];
                        let col = &rel_data.columns[i];
                        let why = format!("attribute `{}` of `{}`", col.name, rel_data.name);
                        let cty = col.ty;
                        match self.vars[*v].ty {
                            None => {
                                self.vars[*v].ty = Some(cty);
                                self.vars[*v].origin = Some((*s, why));
                            }
                            Some(t) if t != cty => {
                                let name = self.vars[*v].name.clone();
                                let d = Diagnostic::error(
                                    format!(
                                        "type mismatch: variable `{name}` is used as a `{}` here ({why}) but as a `{}` at {}",
                                        self.ck.type_label(cty),
                                        self.ck.type_label(t),
                                        self.describe_origin(*v)
                                    ),
                                    *s,
                                );
                                self.error(d);
                            }
                            Some(_) => {}
                        }
                    }
                }
                LLit::Agg { body, .. } => self.seed(body),
                _ => {}
            }
        }
    }

    /// The type of an expression as far as it is known now.
    pub(super) fn infer(&self, e: &LExpr) -> Option<ColType> {
        match e {
            LExpr::Var(v, _) => self.vars[*v].ty,
            LExpr::Int(..) => None,
            LExpr::Unsigned(..) => Some(ColType::Unsigned),
            LExpr::Float(..) => Some(ColType::Float),
            LExpr::Str(..) => Some(ColType::Symbol),
            LExpr::Unary(_, a, _) => self.infer(a),
            LExpr::Binary(..) => {
                // infer(a).or(infer(b)) down the left spine, without recursing along it.
                let mut rhs = Vec::new();
                let mut leaf = e;
                while let LExpr::Binary(_, a, b, _) = leaf {
                    rhs.push(b.as_ref());
                    leaf = a;
                }
                self.infer(leaf)
                    .or_else(|| rhs.iter().rev().find_map(|b| self.infer(b)))
            }
            LExpr::Call(b, _, _, _) => Some(b.result()),
            LExpr::Record(..) | LExpr::Nil(_) | LExpr::Branch(..) | LExpr::Access(..) => {
                self.infer_record(e).flatten()
            }
        }
    }

    /// Push an expected type into an expression; returns whether a variable got a type.
    pub(super) fn propagate(&mut self, e: &LExpr, expected: Option<ColType>) -> bool {
        match e {
            LExpr::Var(v, s) => {
                if let (Some(t), None) = (expected, self.vars[*v].ty) {
                    self.vars[*v].ty = Some(t);
                    self.vars[*v].origin = Some((*s, "from its use in an expression".to_string()));
                    true
                } else {
                    false
                }
            }
            LExpr::Unary(_, a, _) => {
                let t = expected.or_else(|| self.infer(a));
                self.propagate(a, t)
            }
            LExpr::Binary(_, a, b, _) => {
                let t = expected.or_else(|| self.infer(a)).or_else(|| self.infer(b));
                let x = self.propagate(a, t);
                self.propagate(b, t) | x
            }
            LExpr::Call(bi, _, args, _) => {
                let mut changed = false;
                // The argument of `to_number` and the other overloaded conversions has
                // its own type (a symbol is parsed, a float truncated, ...): nothing is
                // pushed into it, so a variable bound elsewhere (`x = 2.5`,
                // `m = mean ...`) keeps its type, as in Soufflé.
                for (i, a) in args.iter().enumerate() {
                    let t = match bi {
                        Builtin::User(k, _) => self.ck.functors[*k as usize].params.get(i).copied(),
                        _ => bi.arg_type(i),
                    };
                    changed |= self.propagate(a, t);
                }
                changed
            }
            LExpr::Record(..) | LExpr::Branch(..) => self.propagate_record(e, expected),
            _ => false,
        }
    }

    pub(super) fn propagate_lits(&mut self, lits: &[LLit]) -> bool {
        let mut changed = false;
        for l in lits {
            match l {
                LLit::Atom { .. } | LLit::False(_) => {}
                LLit::Cmp { lhs, rhs, .. } => {
                    let t = self.infer(lhs).or_else(|| self.infer(rhs));
                    changed |= self.propagate(lhs, t);
                    changed |= self.propagate(rhs, t);
                }
                LLit::Pred { args, .. } => {
                    for a in args {
                        changed |= self.propagate(a, Some(ColType::Symbol));
                    }
                }
                LLit::Range { out, args, span } => {
                    let t = self.vars[*out]
                        .ty
                        .or_else(|| args.iter().find_map(|a| self.infer(a)));
                    changed |= self.propagate(&LExpr::Var(*out, *span), t);
                    for a in args {
                        changed |= self.propagate(a, t);
                    }
                }
                LLit::Agg {
                    out,
                    func,
                    arg,
                    body,
                    span,
                    ..
                } => {
                    changed |= self.propagate_lits(body);
                    let out_ty = match func {
                        ir::AggFunc::Count => Some(ColType::Number),
                        ir::AggFunc::Mean => Some(ColType::Float),
                        // A symbol argument is an error reported at emission; do not let
                        // it make the result a symbol too.
                        _ => arg
                            .as_ref()
                            .and_then(|a| self.infer(a))
                            .filter(|t| *t != ColType::Symbol),
                    };
                    changed |= self.propagate(&LExpr::Var(*out, *span), out_ty);
                    if let (Some(a), ir::AggFunc::Sum | ir::AggFunc::Min | ir::AggFunc::Max) =
                        (arg, func)
                    {
                        let t = self.vars[*out].ty;
                        changed |= self.propagate(a, t);
                    }
                }
            }
        }
        changed
    }

    pub(super) fn mismatch(&mut self, span: Span, what: &str, found: ColType, expected: ColType) {
        let (found, expected) = (self.ck.type_label(found), self.ck.type_label(expected));
        self.error(Diagnostic::error(
            format!("type mismatch: {what} is a `{found}` but a `{expected}` is expected here"),
            span,
        ));
    }

    pub(super) fn encode_int(&mut self, v: i128, ty: ColType, span: Span) -> Option<Value> {
        match ty {
            ColType::Number => match i32::try_from(v) {
                Ok(x) => Some(x as u32),
                Err(_) => {
                    self.error(Diagnostic::error(
                        format!("number `{v}` is out of range: a `number` is a 32-bit signed integer ({} to {})", i32::MIN, i32::MAX),
                        span,
                    ));
                    None
                }
            },
            ColType::Unsigned => match u32::try_from(v) {
                Ok(x) => Some(x),
                Err(_) => {
                    self.error(Diagnostic::error(
                        format!("number `{v}` is out of range: an `unsigned` is a 32-bit unsigned integer (0 to {})", u32::MAX),
                        span,
                    ));
                    None
                }
            },
            ColType::Float => Some((v as f32).to_bits()),
            ColType::Record(_) => {
                let label = self.ck.type_label(ty);
                self.error(Diagnostic::error(
                    format!(
                        "type mismatch: the number `{v}` is used where a `{label}` is expected"
                    ),
                    span,
                ));
                None
            }
            ColType::Symbol => {
                self.error(
                    Diagnostic::error(
                        format!(
                            "type mismatch: the number `{v}` is used where a `symbol` is expected"
                        ),
                        span,
                    )
                    .with_help("write a string constant in double quotes"),
                );
                None
            }
        }
    }

    /// Emit a typed IR expression; `expected` is the type the context needs.
    pub(super) fn emit_expr(
        &mut self,
        e: &LExpr,
        expected: Option<ColType>,
    ) -> Option<(ir::Expr, ColType)> {
        match e {
            LExpr::Var(v, s) => {
                let t = self.vars[*v].ty.unwrap_or(ColType::Number);
                if let Some(x) = expected.filter(|x| *x != t) {
                    let what = format!("variable `{}`", self.vars[*v].name);
                    self.mismatch(*s, &what, t, x);
                    return None;
                }
                Some((ir::Expr::Var(*v), t))
            }
            LExpr::Int(v, s) => {
                let t = expected.unwrap_or(ColType::Number);
                let c = self.encode_int(*v, t, *s)?;
                Some((ir::Expr::Const(c), t))
            }
            LExpr::Unsigned(v, s) => {
                if let Some(x) = expected.filter(|x| *x != ColType::Unsigned) {
                    self.mismatch(*s, "this constant", ColType::Unsigned, x);
                    return None;
                }
                let c = self.encode_int(i128::from(*v), ColType::Unsigned, *s)?;
                Some((ir::Expr::Const(c), ColType::Unsigned))
            }
            LExpr::Float(v, s) => {
                if let Some(x) = expected.filter(|x| *x != ColType::Float) {
                    self.mismatch(*s, "this constant", ColType::Float, x);
                    return None;
                }
                Some((ir::Expr::Const((*v as f32).to_bits()), ColType::Float))
            }
            LExpr::Str(v, s) => {
                if let Some(x) = expected.filter(|x| *x != ColType::Symbol) {
                    self.error(Diagnostic::error(
                        format!(
                            "type mismatch: a string constant is used where a `{}` is expected",
                            type_name(x)
                        ),
                        *s,
                    ));
                    return None;
                }
                Some((ir::Expr::Const(self.ck.symbols.intern(v)), ColType::Symbol))
            }
            LExpr::Unary(op, a, s) => {
                let t = expected
                    .or_else(|| self.infer(a))
                    .unwrap_or(ColType::Number);
                let ok = match op {
                    ir::UnaryOp::Neg => matches!(t, ColType::Number | ColType::Float),
                    ir::UnaryOp::BNot | ir::UnaryOp::LNot => {
                        matches!(t, ColType::Number | ColType::Unsigned)
                    }
                };
                if !ok {
                    let name = match op {
                        ir::UnaryOp::Neg => "-",
                        ir::UnaryOp::BNot => "bnot",
                        ir::UnaryOp::LNot => "lnot",
                    };
                    self.error(Diagnostic::error(
                        format!("`{name}` cannot be applied to a `{}` value", type_name(t)),
                        *s,
                    ));
                    return None;
                }
                let (x, _) = self.emit_expr(a, Some(t))?;
                if let ir::Expr::Const(c) = x {
                    if let Some(v) = value::eval_unary(*op, t, c) {
                        return Some((ir::Expr::Const(v), t));
                    }
                }
                Some((
                    ir::Expr::Unary {
                        op: *op,
                        ty: t,
                        arg: Box::new(x),
                    },
                    t,
                ))
            }
            LExpr::Binary(..) => self.emit_chain(e, expected),
            LExpr::Record(..) | LExpr::Nil(_) | LExpr::Branch(..) | LExpr::Access(..) => {
                self.emit_record(e, expected)
            }
            LExpr::Call(Builtin::Cast(target), _, args, s) => {
                let a = args.first()?;
                let at = self.infer(a).unwrap_or(ColType::Number);
                let numeric =
                    |t: ColType| matches!(t, ColType::Number | ColType::Unsigned | ColType::Float);
                if at != *target && !(numeric(at) && numeric(*target)) {
                    let (from, to) = (self.ck.type_label(at), self.ck.type_label(*target));
                    let help = match (at, *target) {
                        (ColType::Symbol, _) => "`as` reads a value's bits without converting them; a symbol's bits are its id in the symbol table: use `to_number`, `to_unsigned` or `to_float` to parse its text",
                        (_, ColType::Symbol) => "`as` reads a value's bits without converting them; a number's bits are no symbol: use `to_string` to write its text",
                        _ => "`as` reads a value's bits as another type of the same kind: between `number`, `unsigned` and `float`, or between a type and its subtypes",
                    };
                    self.error(
                        Diagnostic::error(
                            format!("`as` cannot reinterpret a `{from}` value as a `{to}`"),
                            *s,
                        )
                        .with_help(help),
                    );
                    return None;
                }
                let (x, _) = self.emit_expr(a, Some(at))?;
                if let Some(x) = expected.filter(|x| x != target) {
                    self.mismatch(*s, "the result of `as`", *target, x);
                    return None;
                }
                Some((x, *target))
            }
            LExpr::Call(bi, name, args, s) => {
                let (func, arg_tys): (Option<ir::Functor>, Vec<ColType>) = match bi {
                    Builtin::User(k, result) => (
                        Some(ir::Functor::User {
                            index: *k,
                            result: *result,
                        }),
                        self.ck.functors[*k as usize].params.clone(),
                    ),
                    Builtin::Cat => (Some(ir::Functor::Cat), vec![ColType::Symbol; args.len()]),
                    Builtin::Strlen => (Some(ir::Functor::Strlen), vec![ColType::Symbol]),
                    Builtin::Ord => (Some(ir::Functor::Ord), vec![ColType::Symbol]),
                    Builtin::Substr => (
                        Some(ir::Functor::Substr),
                        vec![ColType::Symbol, ColType::Number, ColType::Number],
                    ),
                    Builtin::ToNumber
                    | Builtin::ToString
                    | Builtin::ToUnsigned
                    | Builtin::ToFloat
                    | Builtin::Fixed(..)
                    | Builtin::Cast(_) => {
                        let target = bi.result();
                        let at = match bi {
                            Builtin::Fixed(from, _) => *from,
                            _ => args
                                .first()
                                .and_then(|a| self.infer(a))
                                .unwrap_or(ColType::Number),
                        };
                        if let ColType::Record(_) = at {
                            let label = self.ck.type_label(at);
                            self.error(Diagnostic::error(
                                format!(
                                    "`{name}` cannot convert a value of the record type `{label}`"
                                ),
                                *s,
                            ));
                            return None;
                        }
                        (conversion(at, target), vec![at])
                    }
                };
                let result = bi.result();
                let mut out_args = Vec::new();
                let mut failed = false;
                for (a, t) in args.iter().zip(&arg_tys) {
                    match self.emit_expr(a, Some(*t)) {
                        Some((x, _)) => out_args.push(x),
                        None => failed = true,
                    }
                }
                if failed {
                    return None;
                }
                if let Some(x) = expected.filter(|x| *x != result) {
                    let shown = match bi {
                        Builtin::User(k, _) => format!("@{}", self.ck.functors[*k as usize].name),
                        _ => name.to_string(),
                    };
                    self.mismatch(*s, &format!("the result of `{shown}`"), result, x);
                    return None;
                }
                let Some(func) = func else {
                    // An identity conversion.
                    return out_args.into_iter().next().map(|x| (x, result));
                };
                let consts: Option<Vec<Value>> = out_args
                    .iter()
                    .map(|x| match x {
                        ir::Expr::Const(c) => Some(*c),
                        _ => None,
                    })
                    .collect();
                if let Some(cs) = consts {
                    if let Some(v) = value::eval_functor(func, &cs, &self.ck.symbols) {
                        return Some((ir::Expr::Const(v), result));
                    }
                }
                Some((
                    ir::Expr::Functor {
                        func,
                        args: out_args,
                    },
                    result,
                ))
            }
        }
    }

    /// [`RuleCx::emit_expr`] of a binary expression, iterating down its left spine (a
    /// constant chain in a fact or an atom argument is not split and may be 100,000
    /// deep). Every node of the spine gets the top's type, as recursion would give it.
    /// Once folding a constant fails (division by zero), the chain's value is that
    /// failing node: the whole expression fails at run time anyway.
    pub(super) fn emit_chain(
        &mut self,
        e: &LExpr,
        expected: Option<ColType>,
    ) -> Option<(ir::Expr, ColType)> {
        let t = expected
            .or_else(|| self.infer(e))
            .unwrap_or(ColType::Number);
        // The spine, top first.
        let mut spine: Vec<(ir::BinOp, &LExpr, Span)> = Vec::new();
        let mut leaf = e;
        while let LExpr::Binary(op, a, b, s) = leaf {
            spine.push((*op, b, *s));
            leaf = a;
        }
        if let ColType::Record(_) = t {
            let (op, _, s) = spine[0];
            let label = self.ck.type_label(t);
            self.error(Diagnostic::error(
                format!(
                    "arithmetic on records: `{}` is applied to a `{label}` value",
                    binop_name(op)
                ),
                s,
            ));
            return None;
        }
        if t == ColType::Symbol {
            let (op, _, s) = spine[0];
            self.error(
                Diagnostic::error(
                    format!(
                        "arithmetic on symbols: `{}` needs numeric operands",
                        binop_name(op)
                    ),
                    s,
                )
                .with_help("convert with `to_number(...)`, or use `cat(...)` to join strings"),
            );
            return None;
        }
        let bitwise = |op: ir::BinOp| {
            matches!(
                op,
                ir::BinOp::BAnd
                    | ir::BinOp::BOr
                    | ir::BinOp::BXor
                    | ir::BinOp::BShl
                    | ir::BinOp::BShr
                    | ir::BinOp::LAnd
                    | ir::BinOp::LOr
            )
        };
        // The topmost node a float cannot use: it fails without looking below itself.
        if let Some(i) = spine
            .iter()
            .position(|(op, _, _)| t == ColType::Float && bitwise(*op))
        {
            let (op, _, s) = spine[i];
            // The operands above it are still checked (for their own errors).
            for &(_, b, _) in &spine[..i] {
                let _ = self.emit_expr(b, Some(t));
            }
            self.error(Diagnostic::error(
                format!("`{}` is not defined on `float` values", binop_name(op)),
                s,
            ));
            return None;
        }
        let mut acc = self.emit_expr(leaf, Some(t)).map(|(x, _)| x);
        let mut failed = false;
        for &(op, b, _) in spine.iter().rev() {
            let y = self.emit_expr(b, Some(t)).map(|(y, _)| y);
            acc = match (acc, y) {
                (Some(x), Some(y)) if failed => {
                    let _ = y;
                    Some(x)
                }
                (Some(x), Some(y)) => {
                    if let (ir::Expr::Const(l), ir::Expr::Const(r)) = (&x, &y) {
                        if let Some(v) = value::eval_binary(op, t, *l, *r) {
                            acc = Some(ir::Expr::Const(v));
                            continue;
                        }
                        failed = true;
                    }
                    Some(ir::Expr::Binary {
                        op,
                        ty: t,
                        lhs: Box::new(x),
                        rhs: Box::new(y),
                    })
                }
                _ => None,
            };
        }
        acc.map(|x| (x, t))
    }

    pub(super) fn emit_lits(&mut self, lits: &[LLit]) -> Vec<ir::Literal> {
        let mut out = Vec::new();
        for l in lits {
            if let Some(x) = self.emit_lit(l) {
                out.push(x);
            }
        }
        out
    }

    pub(super) fn emit_lit(&mut self, l: &LLit) -> Option<ir::Literal> {
        match l {
            LLit::Atom {
                rel,
                args,
                negated,
                span,
            } => {
                let types = self.ck.relations[*rel].types();
                let mut terms = Vec::new();
                for (a, t) in args.iter().zip(types) {
                    terms.push(match a {
                        LTerm::Var(v, _) => ir::Term::Var(*v),
                        LTerm::Wild => ir::Term::Wildcard,
                        LTerm::Const(e) => match self.emit_expr(e, Some(t))? {
                            (ir::Expr::Const(c), _) => ir::Term::Const(c),
                            _ => {
                                self.error(Diagnostic::error(
                                    "this expression cannot be evaluated to a constant (division by zero?)",
                                    e.span(),
                                ));
                                return None;
                            }
                        },
                    });
                }
                let atom = ir::Atom {
                    rel: *rel,
                    args: terms,
                    span: *span,
                };
                Some(if *negated {
                    ir::Literal::Negation(atom)
                } else {
                    ir::Literal::Atom(atom)
                })
            }
            LLit::Cmp { op, lhs, rhs, span } => {
                let (li, ri) = (self.infer(lhs), self.infer(rhs));
                if let (Some(a), Some(b)) = (li, ri) {
                    if a != b {
                        let (a, b) = (self.ck.type_label(a), self.ck.type_label(b));
                        self.error(Diagnostic::error(
                            format!("cannot compare a `{a}` with a `{b}`"),
                            *span,
                        ).with_help("convert one side, e.g. with `to_number`, `to_string` or `to_float`"));
                        return None;
                    }
                }
                let untyped_record = |e: &LExpr| matches!(e, LExpr::Record(..) | LExpr::Nil(_));
                if li.or(ri).is_none() && (untyped_record(lhs) || untyped_record(rhs)) {
                    // `nil = nil`, `[1] = [1]`: no side says which record type.
                    let culprit = if untyped_record(lhs) { lhs } else { rhs };
                    let _ = self.emit_expr(culprit, None);
                    return None;
                }
                let t = li.or(ri).unwrap_or(ColType::Number);
                if matches!(t, ColType::Record(_)) && !matches!(op, ir::CmpOp::Eq | ir::CmpOp::Ne) {
                    let label = self.ck.type_label(t);
                    self.error(Diagnostic::error(
                        format!("values of the record type `{label}` can only be compared with `=` and `!=`"),
                        *span,
                    ));
                    return None;
                }
                let x = self.emit_expr(lhs, Some(t));
                let y = self.emit_expr(rhs, Some(t));
                let ((lhs, _), (rhs, _)) = (x?, y?);
                Some(ir::Literal::Compare {
                    op: *op,
                    lhs,
                    rhs,
                    ty: t,
                    span: *span,
                })
            }
            LLit::Pred {
                pred,
                args,
                negated,
                span,
            } => {
                let mut out = Vec::new();
                for a in args {
                    out.push(self.emit_expr(a, Some(ColType::Symbol))?.0);
                }
                Some(ir::Literal::Predicate {
                    pred: *pred,
                    args: out,
                    negated: *negated,
                    span: *span,
                })
            }
            LLit::Agg {
                out,
                func,
                arg,
                body,
                span,
                ..
            } => {
                let body = self.emit_lits(body);
                let (arg, result) = match (func, arg) {
                    (ir::AggFunc::Count, _) | (_, None) => (None, ColType::Number),
                    (f, Some(a)) => {
                        let t = self
                            .infer(a)
                            .or(self.vars[*out].ty)
                            .unwrap_or(ColType::Number);
                        if t == ColType::Symbol || matches!(t, ColType::Record(_)) {
                            let kw = match f {
                                ir::AggFunc::Sum => "sum",
                                ir::AggFunc::Min => "min",
                                ir::AggFunc::Max => "max",
                                _ => "mean",
                            };
                            self.error(Diagnostic::error(
                                format!(
                                    "`{kw}` needs a numeric expression, found a `{}`",
                                    self.ck.type_label(t)
                                ),
                                a.span(),
                            ));
                            return None;
                        }
                        let (x, _) = self.emit_expr(a, Some(t))?;
                        let r = if *f == ir::AggFunc::Mean {
                            ColType::Float
                        } else {
                            t
                        };
                        (Some(x), r)
                    }
                };
                let out_ty = self.vars[*out].ty.unwrap_or(ColType::Number);
                if out_ty != result {
                    self.mismatch(*span, "the aggregate's result", result, out_ty);
                    return None;
                }
                Some(ir::Literal::Aggregate {
                    out: *out,
                    func: *func,
                    arg,
                    body,
                    span: *span,
                })
            }
            LLit::Range { out, args, span } => {
                let t = self.vars[*out].ty.unwrap_or(ColType::Number);
                if !matches!(t, ColType::Number | ColType::Unsigned | ColType::Float) {
                    self.error(Diagnostic::error(
                        format!(
                            "`range` counts in `number`, `unsigned` or `float`, not in `{}`",
                            self.ck.type_label(t)
                        ),
                        *span,
                    ));
                    return None;
                }
                let mut out_args = Vec::new();
                for a in args {
                    out_args.push(self.emit_expr(a, Some(t))?.0);
                }
                Some(ir::Literal::Range {
                    out: *out,
                    ty: t,
                    args: out_args,
                    span: *span,
                })
            }
            LLit::False(span) => Some(ir::Literal::Compare {
                op: ir::CmpOp::Ne,
                lhs: ir::Expr::Const(0),
                rhs: ir::Expr::Const(0),
                ty: ColType::Number,
                span: *span,
            }),
        }
    }
}

/// How a conversion `from -> to` is written with the IR's functors: `Ok(None)` when
/// the bits stay as they are (`number` <-> `unsigned`, identities). Every pair of types
/// converts, as Soufflé's overloads of `to_number`, `to_unsigned`, `to_float` and
/// `to_string` do (see [`crate::value::convert_souffle`]).
pub(super) fn conversion(from: ColType, to: ColType) -> Option<ir::Functor> {
    use ColType::*;
    match (from, to) {
        (a, b) if a == b => None,
        (Number, Unsigned) | (Unsigned, Number) => None,
        (Symbol, Number) => Some(ir::Functor::ToNumber),
        (Number, Symbol) => Some(ir::Functor::ToString),
        (Number, Float) => Some(ir::Functor::ToFloat),
        (from, to) => Some(ir::Functor::Convert(from, to)),
    }
}

pub(super) fn binop_name(op: ir::BinOp) -> &'static str {
    match op {
        ir::BinOp::Add => "+",
        ir::BinOp::Sub => "-",
        ir::BinOp::Mul => "*",
        ir::BinOp::Div => "/",
        ir::BinOp::Rem => "%",
        ir::BinOp::Pow => "^",
        ir::BinOp::BAnd => "band",
        ir::BinOp::BOr => "bor",
        ir::BinOp::BXor => "bxor",
        ir::BinOp::BShl => "bshl",
        ir::BinOp::BShr => "bshr",
        ir::BinOp::LAnd => "land",
        ir::BinOp::LOr => "lor",
        ir::BinOp::Min => "min",
        ir::BinOp::Max => "max",
    }
}
