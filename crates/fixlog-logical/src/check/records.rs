//! Records and algebraic data types in the checker: their declarations, and their
//! terms through the three passes of a rule.
//!
//! A constructor (`[a, b]`, `nil`, `$B(a)`) builds a value: in a head, a functor
//! argument or the bound side of an equality it becomes `Functor::Pack`. In a positive
//! body atom (`r([x, [y, z]])`) it is a pattern: the atom gets a fresh variable and the
//! pattern becomes equalities over reads of that variable (`x = v.0`, `w = v.1`,
//! `y = w.0`, ...; an ADT branch also checks the tag), which bind or filter as the
//! planner sees fit, so packing and unpacking are ordinary expressions for every later
//! stage. An equality `p = [x, y]` is lowered both ways (`p = pack(x, y)` and
//! `x = p.0, y = p.1`), so it binds `p` from `x` and `y` or `x` and `y` from `p`,
//! whichever the rest of the rule grounds; the other direction is then a (true)
//! filter.

use super::*;
use crate::records::{self, RecordShape, RecordType};

impl Checker<'_> {
    /// Declares the record or ADT type `decl` (already marked as being resolved) and
    /// resolves its fields; the type's id exists before its fields are resolved, so
    /// recursive types (`.type L = [h: number, t: L]`) refer to themselves.
    pub(super) fn record_type(&mut self, decl: &ast::TypeDecl) -> Option<ColType> {
        let id = u32::try_from(self.record_types.len()).ok()?;
        let t = ColType::Record(id);
        self.record_types.push(RecordType {
            name: decl.name.name.clone(),
            shape: RecordShape::Record(Vec::new()),
        });
        self.type_state
            .insert(decl.name.name.clone(), TypeState::Done(Some(t)));
        let shape = match &decl.def {
            ast::TypeDef::Record(fields) => RecordShape::Record(self.fields(fields)),
            ast::TypeDef::Adt(branches) => {
                let mut out = Vec::new();
                for (i, b) in branches.iter().enumerate() {
                    if let Some((_, _, prev)) = self.branches.get(&b.name.name) {
                        let loc = self.sources.location(*prev);
                        self.error(
                            Diagnostic::error(
                                format!("branch `{}` is declared more than once", b.name.name),
                                b.name.span,
                            )
                            .with_note(format!("first declared at {loc}")),
                        );
                        continue;
                    }
                    self.branches
                        .insert(b.name.name.clone(), (id, i, b.name.span));
                    out.push(records::Branch {
                        name: b.name.name.clone(),
                        fields: self.fields(&b.fields),
                    });
                }
                RecordShape::Adt(out)
            }
            _ => return None,
        };
        if let Some(r) = self.record_types.get_mut(id as usize) {
            r.shape = shape;
        }
        Some(t)
    }

    fn fields(&mut self, attrs: &[ast::Attribute]) -> Vec<records::Field> {
        let mut seen: HashSet<&str> = HashSet::new();
        let mut out = Vec::new();
        for a in attrs {
            if !seen.insert(a.name.name.as_str()) {
                self.error(Diagnostic::error(
                    format!("field `{}` appears more than once", a.name.name),
                    a.name.span,
                ));
            }
            let ty = self.resolve_type(&a.ty).unwrap_or(ColType::Number);
            out.push(records::Field {
                name: a.name.name.clone(),
                ty,
            });
        }
        out
    }

    /// A type as messages name it: the declared name of a record or ADT type.
    pub(super) fn type_label(&self, t: ColType) -> String {
        match t {
            ColType::Record(id) => match self.record_types.get(id as usize) {
                Some(r) => r.name.clone(),
                None => "record".to_string(),
            },
            t => type_name(t).to_string(),
        }
    }
}

/// `1 field`, `2 fields`.
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Whether a `_` occurs in a constructor (then it is only a pattern, never packed).
pub(super) fn has_wildcard(e: &ast::Expr) -> bool {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e {
            ast::Expr::Wildcard(_) => return true,
            ast::Expr::Constructor { args, .. } => stack.extend(args.iter()),
            _ => {}
        }
    }
    false
}

impl RuleCx<'_, '_> {
    /// The branch `$name`: its ADT and index, or an error.
    fn branch(&mut self, name: &ast::Ident) -> Option<(u32, usize)> {
        if let Some(&(t, b, _)) = self.ck.branches.get(&name.name) {
            return Some((t, b));
        }
        let mut d = Diagnostic::error(format!("unknown branch `${}`", name.name), name.span);
        if let Some(s) = suggest(&name.name, self.ck.branches.keys().map(String::as_str)) {
            d = d.with_help(format!("did you mean `${s}`?"));
        }
        self.error(d);
        None
    }

    /// A constructor as a value (`Functor::Pack` once typed).
    pub(super) fn lower_constructor(
        &mut self,
        ctor: &ast::Constructor,
        args: &[ast::Expr],
        span: Span,
        scope: &Scope,
        out: &mut Vec<LLit>,
    ) -> Option<LExpr> {
        let mut lowered = Vec::new();
        for a in args {
            lowered.push(self.lower_expr(a, scope, out));
        }
        let lowered: Vec<LExpr> = lowered.into_iter().collect::<Option<_>>()?;
        Some(match ctor {
            ast::Constructor::Record => LExpr::Record(lowered, span),
            ast::Constructor::Nil => LExpr::Nil(span),
            ast::Constructor::Branch(name) => {
                let (t, b) = self.branch(name)?;
                LExpr::Branch(t, b, lowered, span)
            }
        })
    }

    /// `whole = ctor` in a body: both directions (see the module docs); `ctor` is a
    /// constructor.
    pub(super) fn lower_record_equality(
        &mut self,
        whole: &ast::Expr,
        ctor: &ast::Expr,
        span: Span,
        scope: &Scope,
        out: &mut Vec<LLit>,
    ) {
        let untyped = |e: &ast::Expr| {
            matches!(
                e,
                ast::Expr::Constructor {
                    ctor: ast::Constructor::Record | ast::Constructor::Nil,
                    ..
                }
            )
        };
        if untyped(whole) && untyped(ctor) {
            self.error(
                Diagnostic::error(
                    "cannot tell the record type of either side of this `=`",
                    span,
                )
                .with_help("compare with a variable of a record type, or a branch `$Name(...)`"),
            );
            return;
        }
        let Some(w) = self.lower_expr(whole, scope, out) else {
            return;
        };
        let v = match w {
            LExpr::Var(v, _) => v,
            w => {
                let v = self.fresh_var("");
                out.push(LLit::Cmp {
                    op: ir::CmpOp::Eq,
                    lhs: LExpr::Var(v, whole.span()),
                    rhs: w,
                    span,
                });
                v
            }
        };
        if !has_wildcard(ctor) {
            if let Some(c) = self.lower_expr(ctor, scope, out) {
                out.push(LLit::Cmp {
                    op: ir::CmpOp::Eq,
                    lhs: LExpr::Var(v, whole.span()),
                    rhs: c,
                    span,
                });
            }
        }
        self.destructure(v, ctor, scope, out);
    }

    /// `!r(.., [x, _], ..)`: a record pattern with `_` cannot be built, so the negation
    /// is "no tuple of `r` matches": `count : { r(.., v, ..), <pattern on v> } = 0`,
    /// with the rule's variables correlated into the count.
    pub(super) fn lower_negated_pattern(
        &mut self,
        rel: RelId,
        a: &ast::Atom,
        span: Span,
        scope: &Scope,
        out: &mut Vec<LLit>,
    ) {
        let mut body = Vec::new();
        let mut args = Vec::new();
        for e in &a.args {
            match e {
                ast::Expr::Wildcard(_) => args.push(LTerm::Wild),
                ast::Expr::Constructor { span, .. } if !is_const(e) => {
                    let v = self.fresh_var("");
                    self.destructure(v, e, scope, &mut body);
                    args.push(LTerm::Var(v, *span));
                }
                e => match self.lower_expr(e, scope, &mut body) {
                    Some(LExpr::Var(v, s)) => args.push(LTerm::Var(v, s)),
                    Some(x) => {
                        let v = self.fresh_var("");
                        body.push(LLit::Cmp {
                            op: ir::CmpOp::Eq,
                            lhs: LExpr::Var(v, e.span()),
                            rhs: x,
                            span: e.span(),
                        });
                        args.push(LTerm::Var(v, e.span()));
                    }
                    None => return,
                },
            }
        }
        body.insert(
            0,
            LLit::Atom {
                rel,
                args,
                negated: false,
                span: a.span,
            },
        );
        let count = self.fresh_var("count");
        out.push(LLit::Agg {
            out: count,
            func: ir::AggFunc::Count,
            arg: None,
            body,
            outer: scope.values().copied().collect(),
            span,
        });
        out.push(LLit::Cmp {
            op: ir::CmpOp::Eq,
            lhs: LExpr::Var(count, span),
            rhs: LExpr::Int(0, span),
            span,
        });
    }

    /// The pattern `ctor` matched against the (bound) variable `v`: equalities over
    /// reads of `v`'s fields, the tag of an ADT branch, `v = nil` for `nil`.
    pub(super) fn destructure(
        &mut self,
        v: VarId,
        ctor: &ast::Expr,
        scope: &Scope,
        out: &mut Vec<LLit>,
    ) {
        // (variable, pattern) pairs still to match: nested patterns are a worklist.
        let mut todo = vec![(v, ctor)];
        while let Some((v, e)) = todo.pop() {
            let ast::Expr::Constructor { ctor, args, span } = e else {
                continue;
            };
            let var = LExpr::Var(v, *span);
            let accesses: Vec<Access> = match ctor {
                ast::Constructor::Nil => {
                    out.push(LLit::Cmp {
                        op: ir::CmpOp::Eq,
                        lhs: var,
                        rhs: LExpr::Nil(*span),
                        span: *span,
                    });
                    continue;
                }
                ast::Constructor::Record => {
                    // A record pattern never matches `nil` (even `[_, _]`).
                    out.push(LLit::Cmp {
                        op: ir::CmpOp::Ne,
                        lhs: var,
                        rhs: LExpr::Nil(*span),
                        span: *span,
                    });
                    (0..args.len())
                        .map(|index| Access::Field {
                            index,
                            arity: args.len(),
                        })
                        .collect()
                }
                ast::Constructor::Branch(name) => {
                    let Some((_, b)) = self.branch(name) else {
                        continue;
                    };
                    out.push(LLit::Cmp {
                        op: ir::CmpOp::Eq,
                        lhs: LExpr::Access(Access::Tag, Box::new(var), *span),
                        rhs: LExpr::Unsigned(b as u64, *span),
                        span: *span,
                    });
                    (0..args.len())
                        .map(|index| Access::BranchField {
                            branch: b,
                            index,
                            arity: args.len(),
                        })
                        .collect()
                }
            };
            for (acc, a) in accesses.into_iter().zip(args) {
                let read = LExpr::Access(acc, Box::new(LExpr::Var(v, *span)), a.span());
                match a {
                    ast::Expr::Wildcard(_) => {}
                    ast::Expr::Constructor { .. } => {
                        let w = self.fresh_var("");
                        out.push(LLit::Cmp {
                            op: ir::CmpOp::Eq,
                            lhs: LExpr::Var(w, a.span()),
                            rhs: read,
                            span: a.span(),
                        });
                        todo.push((w, a));
                    }
                    a => {
                        if let Some(x) = self.lower_expr(a, scope, out) {
                            out.push(LLit::Cmp {
                                op: ir::CmpOp::Eq,
                                lhs: x,
                                rhs: read,
                                span: a.span(),
                            });
                        }
                    }
                }
            }
        }
    }

    /// The record type and shape behind `t`, if it is one.
    fn shape(&self, t: Option<ColType>) -> Option<(u32, &RecordShape)> {
        match t {
            Some(ColType::Record(id)) => self
                .ck
                .record_types
                .get(id as usize)
                .map(|r| (id, &r.shape)),
            _ => None,
        }
    }

    /// The type a read gives, from the type of the value it reads.
    fn access_type(&self, acc: Access, of: Option<ColType>) -> Option<ColType> {
        let (_, shape) = self.shape(of)?;
        match (acc, shape) {
            (Access::Tag, RecordShape::Adt(_)) => Some(ColType::Unsigned),
            (Access::Field { index, .. }, RecordShape::Record(f)) => f.get(index).map(|f| f.ty),
            (Access::BranchField { branch, index, .. }, RecordShape::Adt(bs)) => bs
                .get(branch)
                .and_then(|b| b.fields.get(index))
                .map(|f| f.ty),
            _ => None,
        }
    }

    /// `infer` of the record terms (`None` for the others).
    pub(super) fn infer_record(&self, e: &LExpr) -> Option<Option<ColType>> {
        Some(match e {
            LExpr::Record(..) | LExpr::Nil(_) => None,
            LExpr::Branch(t, ..) => Some(ColType::Record(*t)),
            LExpr::Access(acc, a, _) => self.access_type(*acc, self.infer(a)),
            _ => return None,
        })
    }

    /// `propagate` into the fields of a constructor.
    pub(super) fn propagate_record(&mut self, e: &LExpr, expected: Option<ColType>) -> bool {
        let field_types: Vec<ColType> = match (e, self.shape(expected)) {
            (LExpr::Record(_, _), Some((_, RecordShape::Record(f)))) => {
                f.iter().map(|f| f.ty).collect()
            }
            (LExpr::Branch(t, b, _, _), _) => match self.shape(Some(ColType::Record(*t))) {
                Some((_, RecordShape::Adt(bs))) => bs
                    .get(*b)
                    .map(|b| b.fields.iter().map(|f| f.ty).collect())
                    .unwrap_or_default(),
                _ => Vec::new(),
            },
            _ => return false,
        };
        let args = match e {
            LExpr::Record(args, _) | LExpr::Branch(_, _, args, _) => args,
            _ => return false,
        };
        let mut changed = false;
        for (a, t) in args.iter().zip(field_types) {
            changed |= self.propagate(a, Some(t));
        }
        changed
    }

    fn mismatch_record(&mut self, span: Span, what: &str, found: ColType, expected: ColType) {
        let (f, x) = (self.ck.type_label(found), self.ck.type_label(expected));
        self.error(Diagnostic::error(
            format!("type mismatch: {what} is a `{f}` but a `{x}` is expected here"),
            span,
        ));
    }

    /// `emit_expr` of the record terms.
    pub(super) fn emit_record(
        &mut self,
        e: &LExpr,
        expected: Option<ColType>,
    ) -> Option<(ir::Expr, ColType)> {
        match e {
            LExpr::Nil(s) | LExpr::Record(_, s) => {
                let what = if matches!(e, LExpr::Nil(_)) {
                    "`nil`"
                } else {
                    "a record `[...]`"
                };
                let Some(t) = expected else {
                    self.error(
                        Diagnostic::error(
                            format!("cannot tell the record type of {what} here"),
                            *s,
                        )
                        .with_help("use it where a record type is known: an attribute of a record type, or an equality with a typed variable"),
                    );
                    return None;
                };
                let fields: Vec<ColType> = match self.shape(Some(t)) {
                    Some((_, RecordShape::Record(f))) => f.iter().map(|f| f.ty).collect(),
                    _ => {
                        let label = self.ck.type_label(t);
                        let adt = matches!(self.shape(Some(t)), Some((_, RecordShape::Adt(_))));
                        let help = if adt {
                            " (write a branch `$Name(...)` for an algebraic data type)"
                        } else {
                            ""
                        };
                        self.error(Diagnostic::error(
                            format!(
                                "type mismatch: {what} is used where a `{label}` is expected{help}"
                            ),
                            *s,
                        ));
                        return None;
                    }
                };
                let LExpr::Record(args, _) = e else {
                    return Some((ir::Expr::Const(0), t));
                };
                if args.len() != fields.len() {
                    let label = self.ck.type_label(t);
                    self.error(Diagnostic::error(
                        format!(
                            "record type `{label}` has {} but this record has {}",
                            count(fields.len(), "field"),
                            args.len()
                        ),
                        *s,
                    ));
                    return None;
                }
                self.emit_pack(t, None, args, &fields)
            }
            LExpr::Branch(rt, b, args, s) => {
                let t = ColType::Record(*rt);
                if let Some(x) = expected.filter(|x| *x != t) {
                    self.mismatch_record(*s, "this branch", t, x);
                    return None;
                }
                let Some((_, RecordShape::Adt(bs))) = self.shape(Some(t)) else {
                    return None;
                };
                let branch = bs.get(*b)?;
                let fields: Vec<ColType> = branch.fields.iter().map(|f| f.ty).collect();
                if args.len() != fields.len() {
                    let msg = format!(
                        "branch `${}` has {} but {} given",
                        branch.name,
                        count(fields.len(), "field"),
                        count(args.len(), "argument"),
                    );
                    self.error(Diagnostic::error(msg, *s));
                    return None;
                }
                self.emit_pack(t, Some(*b), args, &fields)
            }
            LExpr::Access(acc, a, s) => {
                // `s` is the field's span; `a` (the variable) has the whole pattern's.
                let pattern = a.span();
                let (x, of) = self.emit_expr(a, None)?;
                let Some((_, shape)) = self.shape(Some(of)) else {
                    let label = self.ck.type_label(of);
                    self.error(Diagnostic::error(
                        format!("type mismatch: a record pattern is matched against a `{label}`"),
                        pattern,
                    ));
                    return None;
                };
                let (index, arity, wanted) = match (acc, shape) {
                    (Access::Tag, RecordShape::Adt(_)) => (0, None, None),
                    (Access::Field { index, arity }, RecordShape::Record(f)) => {
                        (*index, Some(*arity), Some(f.len()))
                    }
                    (
                        Access::BranchField {
                            branch,
                            index,
                            arity,
                        },
                        RecordShape::Adt(bs),
                    ) => (
                        index + 1,
                        Some(*arity),
                        bs.get(*branch).map(|b| b.fields.len()),
                    ),
                    (Access::Field { .. }, RecordShape::Adt(_)) => {
                        let label = self.ck.type_label(of);
                        self.error(Diagnostic::error(
                            format!("type mismatch: a record pattern `[...]` is matched against the algebraic data type `{label}`"),
                            pattern,
                        ));
                        return None;
                    }
                    _ => {
                        let label = self.ck.type_label(of);
                        self.error(Diagnostic::error(
                            format!("type mismatch: a branch pattern is matched against the record type `{label}`"),
                            pattern,
                        ));
                        return None;
                    }
                };
                if arity != wanted {
                    let label = self.ck.type_label(of);
                    self.error(Diagnostic::error(
                        format!(
                            "the pattern has {} but `{label}` has {} here",
                            count(arity.unwrap_or(0), "field"),
                            wanted.unwrap_or(0)
                        ),
                        pattern,
                    ));
                    return None;
                }
                let ty = self.access_type(*acc, Some(of))?;
                if let Some(x) = expected.filter(|x| *x != ty) {
                    self.mismatch_record(*s, "this field", ty, x);
                    return None;
                }
                let index = u32::try_from(index).ok()?;
                Some((
                    ir::Expr::Functor {
                        func: ir::Functor::Field(index, ty),
                        args: vec![x],
                    },
                    ty,
                ))
            }
            _ => None,
        }
    }

    /// `Pack` of the fields (after the branch index of an ADT value), folded when
    /// every field is a constant.
    fn emit_pack(
        &mut self,
        t: ColType,
        branch: Option<usize>,
        args: &[LExpr],
        fields: &[ColType],
    ) -> Option<(ir::Expr, ColType)> {
        let mut out = Vec::new();
        if let Some(b) = branch {
            out.push(ir::Expr::Const(Value::try_from(b).ok()?));
        }
        let mut failed = false;
        for (a, ft) in args.iter().zip(fields) {
            match self.emit_expr(a, Some(*ft)) {
                Some((x, _)) => out.push(x),
                None => failed = true,
            }
        }
        if failed {
            return None;
        }
        let consts: Option<Vec<Value>> = out
            .iter()
            .map(|x| match x {
                ir::Expr::Const(c) => Some(*c),
                _ => None,
            })
            .collect();
        if let Some(cs) = consts {
            if let Some(v) = self.ck.symbols.records().pack(&cs) {
                return Some((ir::Expr::Const(v), t));
            }
        }
        Some((
            ir::Expr::Functor {
                func: ir::Functor::Pack(t),
                args: out,
            },
            t,
        ))
    }
}
