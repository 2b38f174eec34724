//! Pass 1: lowering a rule's AST to the lowered form, deciding variable scopes as
//! Soufflé does and desugaring expression arguments and nested aggregates.

use super::*;

impl RuleCx<'_, '_> {
    pub(super) fn lower_scope(
        &mut self,
        lits: &[&ast::Literal],
        extra: &[&ast::Expr],
        visible: &Scope,
    ) -> (Vec<LLit>, Vec<Option<LExpr>>) {
        let mut names = Vec::new();
        for e in extra {
            collect_direct_expr(e, &mut names);
        }
        for l in lits {
            collect_direct_lit(l, &mut names);
        }
        let outside: HashSet<&str> = names
            .iter()
            .map(|(n, _)| n.as_str())
            .chain(visible.keys().map(String::as_str))
            .collect();
        let scopes = self.aggregate_scopes(lits, extra, visible, &outside);
        self.injected.extend(scopes);
        let mut scope = visible.clone();
        for (n, _) in names {
            if let std::collections::hash_map::Entry::Vacant(slot) = scope.entry(n) {
                let v = self.new_var(slot.key().clone());
                slot.insert(v);
            }
        }
        let mut out = Vec::new();
        let extras = extra
            .iter()
            .map(|e| match e {
                ast::Expr::Wildcard(_) => None,
                e => self.lower_expr(e, &scope, &mut out),
            })
            .collect();
        for l in lits {
            self.lower_lit(l, &scope, &mut out);
        }
        (out, extras)
    }

    /// Soufflé's scoping of the names of the aggregates directly in one scope (a rule
    /// body with its head, or an aggregate body with its aggregated expression): for
    /// each aggregate (by the address of its AST node), the names that are *injected*,
    /// that is, refer to the enclosing scope's variable (bound before the aggregate
    /// runs, and grouped on); every other name of the aggregate is local to it.
    ///
    /// A name of aggregate `A` (see [`aggregate_names`]; never one of its aggregated
    /// expression) is injected when it is grounded in the scope without `A`'s own value:
    /// by a positive atom, by the enclosing scopes, or by an equality over grounded
    /// values, the values of the scope's other aggregates counting as grounded but not
    /// `A`'s. So the `m` inside `r(m) :- m = count : { e(m, _) }` is local: outside, it is
    /// grounded only through the aggregate itself. A name that occurs outside `A` in the
    /// scope but is not grounded there even with every aggregate's value (a "witness"
    /// in Soufflé's terms, which Fixlog does not support) is also taken as injected, so
    /// that range restriction reports it as not bound outside the aggregate.
    pub(super) fn aggregate_scopes<'x>(
        &self,
        lits: &[&'x ast::Literal],
        extra: &[&'x ast::Expr],
        visible: &'x Scope,
        outside: &HashSet<&str>,
    ) -> Vec<(usize, HashSet<String>)> {
        let mut scan = ScopeScan {
            g: Grounding::new(0),
            ids: HashMap::new(),
            aggs: Vec::new(),
        };
        for name in visible.keys() {
            let i = scan.item(name);
            scan.g.fact(i);
        }
        for l in lits {
            match l {
                ast::Literal::Atom(a) => {
                    let predicate = matches!(a.name.name.as_str(), "contains" | "match")
                        && !self.ck.rel_ids.contains_key(&a.name.name);
                    for e in &a.args {
                        scan.needs(e);
                        if let (ast::Expr::Var(id), false) = (e, predicate) {
                            let i = scan.item(&id.name);
                            scan.g.fact(i);
                        }
                    }
                }
                ast::Literal::Negation { atom, .. } => {
                    for e in &atom.args {
                        scan.needs(e);
                    }
                }
                ast::Literal::Compare { op, lhs, rhs, .. } => {
                    let l_needs = scan.needs(lhs);
                    let r_needs = scan.needs(rhs);
                    if *op == ast::CmpOp::Eq {
                        if let ast::Expr::Var(id) = lhs {
                            let i = scan.item(&id.name);
                            scan.g.rule(i, r_needs.clone());
                        }
                        if let ast::Expr::Var(id) = rhs {
                            let i = scan.item(&id.name);
                            scan.g.rule(i, l_needs);
                        }
                    }
                }
                ast::Literal::Bool(..) => {}
            }
        }
        for e in extra {
            scan.needs(e);
        }
        let ScopeScan { g, ids, aggs } = scan;
        let agg_items: Vec<usize> = aggs.iter().map(|(_, i)| *i).collect();
        let none = g.solve(&[]);
        let all = g.solve(&agg_items);
        let mut out = Vec::new();
        for (a, agg_item) in &aggs {
            let (names, target) = aggregate_names(a);
            let mut injected = HashSet::new();
            let mut undecided = Vec::new();
            for n in names.difference(&target) {
                match ids.get(n) {
                    Some(&i) if none[i] => {
                        injected.insert(n.to_string());
                    }
                    Some(&i) if all[i] => undecided.push((*n, i)),
                    _ if outside.contains(n) => {
                        injected.insert(n.to_string());
                    }
                    _ => {}
                }
            }
            if !undecided.is_empty() {
                let others: Vec<usize> = agg_items
                    .iter()
                    .copied()
                    .filter(|i| i != agg_item)
                    .collect();
                let without = g.solve(&others);
                for (n, i) in undecided {
                    if without[i] {
                        injected.insert(n.to_string());
                    }
                }
            }
            out.push((*a as *const ast::Expr as usize, injected));
        }
        out
    }

    pub(super) fn lower_lit(&mut self, l: &ast::Literal, scope: &Scope, out: &mut Vec<LLit>) {
        match l {
            ast::Literal::Atom(a) => self.lower_atom(a, false, a.span, scope, out),
            ast::Literal::Negation { atom, span } => self.lower_atom(atom, true, *span, scope, out),
            ast::Literal::Compare {
                op: ast::CmpOp::Eq,
                lhs,
                rhs,
                span,
            } if !self.fact_mode
                && [lhs, rhs]
                    .iter()
                    .any(|e| matches!(e, ast::Expr::Constructor { .. }) && !is_const(e)) =>
            {
                let (whole, ctor) =
                    if matches!(rhs, ast::Expr::Constructor { .. }) && !is_const(rhs) {
                        (lhs, rhs)
                    } else {
                        (rhs, lhs)
                    };
                self.lower_record_equality(whole, ctor, *span, scope, out);
            }
            ast::Literal::Compare { op, lhs, rhs, span } => {
                let l = self.lower_expr(lhs, scope, out);
                let r = self.lower_expr(rhs, scope, out);
                if let (Some(lhs), Some(rhs)) = (l, r) {
                    let op = match op {
                        ast::CmpOp::Eq => ir::CmpOp::Eq,
                        ast::CmpOp::Ne => ir::CmpOp::Ne,
                        ast::CmpOp::Lt => ir::CmpOp::Lt,
                        ast::CmpOp::Le => ir::CmpOp::Le,
                        ast::CmpOp::Gt => ir::CmpOp::Gt,
                        ast::CmpOp::Ge => ir::CmpOp::Ge,
                    };
                    out.push(LLit::Cmp {
                        op,
                        lhs,
                        rhs,
                        span: *span,
                    });
                }
            }
            ast::Literal::Bool(true, _) => {}
            ast::Literal::Bool(false, s) => out.push(LLit::False(*s)),
        }
    }

    pub(super) fn lower_atom(
        &mut self,
        a: &ast::Atom,
        negated: bool,
        span: Span,
        scope: &Scope,
        out: &mut Vec<LLit>,
    ) {
        let pred = match a.name.name.as_str() {
            "contains" => Some(ir::Predicate::Contains),
            "match" => Some(ir::Predicate::Match),
            _ => None,
        };
        if let Some(pred) = pred.filter(|_| !self.ck.rel_ids.contains_key(&a.name.name)) {
            if a.args.len() != 2 {
                self.error(Diagnostic::error(
                    format!(
                        "`{}` takes 2 arguments but {} were given",
                        a.name.name,
                        a.args.len()
                    ),
                    a.span,
                ));
                return;
            }
            let args: Vec<Option<LExpr>> = a
                .args
                .iter()
                .map(|e| self.lower_expr(e, scope, out))
                .collect();
            if let Some(args) = args.into_iter().collect::<Option<Vec<_>>>() {
                out.push(LLit::Pred {
                    pred,
                    args,
                    negated,
                    span,
                });
            }
            return;
        }
        let Some(rel) = self.ck.resolve_atom(a) else {
            return;
        };
        let partial_record =
            |e: &ast::Expr| matches!(e, ast::Expr::Constructor { .. }) && records::has_wildcard(e);
        if negated && a.args.iter().any(partial_record) {
            self.lower_negated_pattern(rel, a, span, scope, out);
            return;
        }
        let mut args = Vec::new();
        for e in &a.args {
            let t = match e {
                ast::Expr::Var(id) => match scope.get(&id.name) {
                    Some(&v) => LTerm::Var(v, id.span),
                    None => {
                        let v = self.new_var(id.name.clone());
                        LTerm::Var(v, id.span)
                    }
                },
                ast::Expr::Wildcard(_) => LTerm::Wild,
                ast::Expr::Constructor { span, .. } if !negated && !is_const(e) => {
                    // A pattern: a fresh variable for the value, matched field by field.
                    let v = self.fresh_var("");
                    self.destructure(v, e, scope, out);
                    LTerm::Var(v, *span)
                }
                e if is_const(e) => {
                    self.const_context += 1;
                    let x = self.lower_expr(e, scope, out);
                    self.const_context -= 1;
                    match x {
                        Some(x) => LTerm::Const(x),
                        None => return,
                    }
                }
                e => match self.lower_expr(e, scope, out) {
                    Some(LExpr::Var(v, s)) => LTerm::Var(v, s),
                    Some(x) => {
                        let v = self.fresh_var("");
                        let s = e.span();
                        out.push(LLit::Cmp {
                            op: ir::CmpOp::Eq,
                            lhs: LExpr::Var(v, s),
                            rhs: x,
                            span: s,
                        });
                        LTerm::Var(v, s)
                    }
                    None => return,
                },
            };
            args.push(t);
        }
        out.push(LLit::Atom {
            rel,
            args,
            negated,
            span,
        });
    }

    pub(super) fn lower_expr(
        &mut self,
        e: &ast::Expr,
        scope: &Scope,
        out: &mut Vec<LLit>,
    ) -> Option<LExpr> {
        Some(match e {
            ast::Expr::Var(id) => {
                if self.fact_mode {
                    self.error(Diagnostic::error(
                        format!(
                            "variable `{}` in a fact: facts may only contain constants",
                            id.name
                        ),
                        id.span,
                    ));
                    return None;
                }
                let v = match scope.get(&id.name) {
                    Some(&v) => v,
                    None => self.new_var(id.name.clone()),
                };
                LExpr::Var(v, id.span)
            }
            ast::Expr::Wildcard(s) => {
                self.error(Diagnostic::error(
                    "`_` can only be used as an argument of an atom",
                    *s,
                ));
                return None;
            }
            ast::Expr::Int(v, s) => LExpr::Int(i128::from(*v), *s),
            ast::Expr::Unsigned(v, s) => LExpr::Unsigned(*v, *s),
            ast::Expr::Float(v, s) => LExpr::Float(*v, *s),
            ast::Expr::Str(v, s) => LExpr::Str(v.clone(), *s),
            ast::Expr::Constructor { ctor, args, span } => {
                return self.lower_constructor(ctor, args, *span, scope, out)
            }
            ast::Expr::Unary { op, arg, span } => {
                if let (ast::UnaryOp::Neg, ast::Expr::Int(v, _)) = (op, arg.as_ref()) {
                    return Some(LExpr::Int(-i128::from(*v), *span));
                }
                let a = self.lower_expr(arg, scope, out)?;
                let op = match op {
                    ast::UnaryOp::Neg => ir::UnaryOp::Neg,
                    ast::UnaryOp::BNot => ir::UnaryOp::BNot,
                    ast::UnaryOp::LNot => ir::UnaryOp::LNot,
                };
                LExpr::Unary(op, Box::new(a), *span)
            }
            ast::Expr::Binary { .. } => {
                // Down the left spine iteratively: `x + x + ... + x` with 100,000 terms
                // is a tree that deep. Operands are lowered left to right.
                let mut spine = Vec::new();
                let mut leaf = e;
                while let ast::Expr::Binary { op, lhs, rhs, span } = leaf {
                    spine.push((bin_op(*op), rhs.as_ref(), *span));
                    leaf = lhs;
                }
                let mut acc = self.lower_expr(leaf, scope, out);
                let mut depth = acc.as_ref().map_or(0, |a| self.depth_if_split(a));
                for (op, rhs, span) in spine.into_iter().rev() {
                    let r = self.lower_expr(rhs, scope, out);
                    acc = match (acc, r) {
                        (Some(a), Some(r)) => {
                            let (a, d) = self.bounded(a, depth, span, out);
                            let rd = self.depth_if_split(&r);
                            let (r, rd) = self.bounded(r, rd, rhs.span(), out);
                            depth = d.max(rd) + 1;
                            Some(LExpr::Binary(op, Box::new(a), Box::new(r), span))
                        }
                        _ => None,
                    };
                }
                return acc;
            }
            ast::Expr::Call {
                name,
                args,
                user,
                span,
            } => {
                if !*user && name.name == "as" {
                    // The parser gives the type's name as a string constant.
                    let (Some(value), Some(ast::Expr::Str(ty, ty_span)), 2) =
                        (args.first(), args.get(1), args.len())
                    else {
                        self.error(Diagnostic::error(
                            "`as` takes a value and a type: `as(value, Type)`",
                            *span,
                        ));
                        return None;
                    };
                    let ty = self.ck.resolve_type(&ast::Ident {
                        name: ty.clone(),
                        span: *ty_span,
                    });
                    let value = self.lower_expr(value, scope, out)?;
                    return Some(LExpr::Call(Builtin::Cast(ty?), "as", vec![value], *span));
                }
                let lowered: Vec<Option<LExpr>> = args
                    .iter()
                    .map(|a| self.lower_expr(a, scope, out))
                    .collect();
                let args: Vec<LExpr> = lowered.into_iter().collect::<Option<Vec<_>>>()?;
                if *user {
                    return self.lower_user_call(name, args, *span);
                }
                return self.lower_call(name, args, *span, out);
            }
            ast::Expr::Aggregate {
                kind,
                arg,
                body,
                span,
            } => {
                if self.fact_mode {
                    self.error(Diagnostic::error(
                        "aggregates cannot be used in facts",
                        *span,
                    ));
                    return None;
                }
                let conj = match dnf(body, MAX_EXPANSION) {
                    Ok(c) if c.len() == 1 => c.into_iter().next().unwrap_or_default(),
                    _ => {
                        self.error(Diagnostic::error(
                            "disjunction (`;`) inside an aggregate body is not supported",
                            body.span(),
                        ).with_help("define the alternatives as a separate relation and aggregate over it"));
                        return None;
                    }
                };
                let extra: Vec<&ast::Expr> = arg.iter().map(|a| a.as_ref()).collect();
                // Only the injected names refer to the enclosing scope; every other name
                // of the aggregate is local to it.
                let injected = self
                    .injected
                    .get(&(e as *const ast::Expr as usize))
                    .cloned()
                    .unwrap_or_default();
                let inner: Scope = scope
                    .iter()
                    .filter(|(n, _)| injected.contains(n.as_str()))
                    .map(|(n, v)| (n.clone(), *v))
                    .collect();
                let (blits, bargs) = self.lower_scope(&conj, &extra, &inner);
                let arg = match bargs.into_iter().next() {
                    Some(Some(a)) => Some(a),
                    Some(None) => return None,
                    None => None,
                };
                let func = match kind {
                    ast::AggKind::Count => ir::AggFunc::Count,
                    ast::AggKind::Sum => ir::AggFunc::Sum,
                    ast::AggKind::Min => ir::AggFunc::Min,
                    ast::AggKind::Max => ir::AggFunc::Max,
                    ast::AggKind::Mean => ir::AggFunc::Mean,
                };
                let out_var = self.fresh_var(kind.keyword());
                out.push(LLit::Agg {
                    out: out_var,
                    func,
                    arg,
                    body: blits,
                    outer: scope.values().copied().collect(),
                    span: *span,
                });
                LExpr::Var(out_var, *span)
            }
        })
    }

    /// Whether long expressions are cut into equalities over fresh variables: in rules,
    /// except in atom arguments that must stay constants.
    pub(super) fn splitting(&self) -> bool {
        !self.fact_mode && self.const_context == 0
    }

    pub(super) fn depth_if_split(&self, e: &LExpr) -> usize {
        if self.splitting() {
            e.depth()
        } else {
            0
        }
    }

    /// `e` (of height `depth`) as it may be used as an operand: when splitting and `e` is
    /// [`MAX_EXPR_DEPTH`] high, a fresh variable bound to it by an equality in `out`. So
    /// no expression of a rule's IR is higher than that (plus nesting of parentheses,
    /// which the parser bounds), and no later pass recurses deeply, whatever the length
    /// of a chain of operators. The equality computes the same value at the same point,
    /// so any chain (float, `-`, `/`) keeps its meaning.
    pub(super) fn bounded(
        &mut self,
        e: LExpr,
        depth: usize,
        span: Span,
        out: &mut Vec<LLit>,
    ) -> (LExpr, usize) {
        if !self.splitting() || depth < MAX_EXPR_DEPTH || matches!(e, LExpr::Var(..)) {
            return (e, depth);
        }
        let v = self.fresh_var("");
        out.push(LLit::Cmp {
            op: ir::CmpOp::Eq,
            lhs: LExpr::Var(v, span),
            rhs: e,
            span,
        });
        (LExpr::Var(v, span), 1)
    }

    /// `@f(args)`: a call of a functor declared with `.functor`.
    fn lower_user_call(
        &mut self,
        name: &ast::Ident,
        args: Vec<LExpr>,
        span: Span,
    ) -> Option<LExpr> {
        let n = name.name.as_str();
        let Some(&k) = self.ck.functor_ids.get(n) else {
            let d = Diagnostic::error(format!("unknown user-defined functor `@{n}`"), name.span);
            let d = match suggest(n, self.ck.functor_ids.keys().map(String::as_str)) {
                Some(s) => d.with_help(format!("did you mean `@{s}`?")),
                None => d.with_help(format!("declare it with `.functor {n}(...): type`")),
            };
            self.error(d);
            return None;
        };
        let decl = &self.ck.functors[k as usize];
        let arity = decl.params.len();
        if args.len() != arity {
            self.error(Diagnostic::error(
                format!(
                    "`@{n}` takes {arity} argument{} but {} {} given",
                    if arity == 1 { "" } else { "s" },
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
                span,
            ));
            return None;
        }
        let result = decl.result;
        Some(LExpr::Call(
            Builtin::User(k, result),
            "a user-defined functor",
            args,
            span,
        ))
    }

    pub(super) fn lower_call(
        &mut self,
        name: &ast::Ident,
        args: Vec<LExpr>,
        span: Span,
        out: &mut Vec<LLit>,
    ) -> Option<LExpr> {
        let n = name.name.as_str();
        let (builtin, arity, static_name): (Builtin, usize, &'static str) = match n {
            "min" | "max" => {
                if args.len() < 2 {
                    self.error(Diagnostic::error(
                        format!(
                            "`{n}` takes at least 2 arguments but {} were given",
                            args.len()
                        ),
                        span,
                    ));
                    return None;
                }
                let op = if n == "min" {
                    ir::BinOp::Min
                } else {
                    ir::BinOp::Max
                };
                let mut it = args.into_iter();
                let mut acc = it.next()?;
                let mut depth = self.depth_if_split(&acc);
                for x in it {
                    let (a, d) = self.bounded(acc, depth, span, out);
                    let xd = self.depth_if_split(&x);
                    let (x, xd) = self.bounded(x, xd, span, out);
                    depth = d.max(xd) + 1;
                    acc = LExpr::Binary(op, Box::new(a), Box::new(x), span);
                }
                return Some(acc);
            }
            "autoinc" => {
                if !args.is_empty() {
                    self.error(Diagnostic::error(
                        format!("`autoinc` takes no arguments but {} were given", args.len()),
                        span,
                    ));
                    return None;
                }
                if self.fact_mode {
                    self.error(
                        Diagnostic::error("`autoinc()` cannot be used in a fact", span)
                            .with_help("write a rule: `r(autoinc()) :- true.`"),
                    );
                    return None;
                }
                let v = self.fresh_var("autoinc");
                self.vars[v].ty = Some(ColType::Number);
                self.vars[v].origin = Some((span, "the result of `autoinc()`".to_string()));
                self.autoinc.push((v, span));
                return Some(LExpr::Var(v, span));
            }
            "recursive_iteration_cnt" => {
                if !args.is_empty() {
                    self.error(Diagnostic::error(
                        format!(
                            "`recursive_iteration_cnt` takes no arguments but {} were given",
                            args.len()
                        ),
                        span,
                    ));
                    return None;
                }
                if self.fact_mode {
                    self.error(
                        Diagnostic::error(
                            "`recursive_iteration_cnt()` cannot be used in a fact",
                            span,
                        )
                        .with_help("write a rule: `r(recursive_iteration_cnt()) :- true.`"),
                    );
                    return None;
                }
                // The counter is the one tuple of `$iteration`, which the driver sets
                // before each step (see `ir::Program::iteration`).
                let rel = self.ck.iteration_relation(span);
                let v = self.fresh_var("iteration");
                self.vars[v].ty = Some(ColType::Unsigned);
                self.vars[v].origin = Some((
                    span,
                    "the result of `recursive_iteration_cnt()`".to_string(),
                ));
                out.push(LLit::Atom {
                    rel,
                    args: vec![LTerm::Var(v, span)],
                    negated: false,
                    span,
                });
                return Some(LExpr::Var(v, span));
            }
            "range" => {
                if self.fact_mode {
                    self.error(
                        Diagnostic::error("`range` cannot be used in a fact", span)
                            .with_help("write a rule: `r(x) :- x = range(from, to).`"),
                    );
                    return None;
                }
                if !(2..=3).contains(&args.len()) {
                    self.error(Diagnostic::error(
                        format!(
                            "`range` takes 2 or 3 arguments (from, to[, step]) but {} {} given",
                            args.len(),
                            if args.len() == 1 { "was" } else { "were" }
                        ),
                        span,
                    ));
                    return None;
                }
                let v = self.fresh_var("range");
                out.push(LLit::Range { out: v, args, span });
                return Some(LExpr::Var(v, span));
            }
            "cat" => {
                if args.is_empty() {
                    self.error(Diagnostic::error("`cat` needs at least 1 argument", span));
                    return None;
                }
                (Builtin::Cat, args.len(), "cat")
            }
            "strlen" => (Builtin::Strlen, 1, "strlen"),
            "substr" => (Builtin::Substr, 3, "substr"),
            "ord" => (Builtin::Ord, 1, "ord"),
            "to_number" => (Builtin::ToNumber, 1, "to_number"),
            "to_string" => (Builtin::ToString, 1, "to_string"),
            "to_unsigned" => (Builtin::ToUnsigned, 1, "to_unsigned"),
            "to_float" => (Builtin::ToFloat, 1, "to_float"),
            "itou" => (
                Builtin::Fixed(ColType::Number, ColType::Unsigned),
                1,
                "itou",
            ),
            "itof" => (Builtin::Fixed(ColType::Number, ColType::Float), 1, "itof"),
            "utoi" => (
                Builtin::Fixed(ColType::Unsigned, ColType::Number),
                1,
                "utoi",
            ),
            "utof" => (Builtin::Fixed(ColType::Unsigned, ColType::Float), 1, "utof"),
            "ftoi" => (Builtin::Fixed(ColType::Float, ColType::Number), 1, "ftoi"),
            "ftou" => (Builtin::Fixed(ColType::Float, ColType::Unsigned), 1, "ftou"),
            "contains" | "match" => {
                self.error(
                    Diagnostic::error(
                        format!("`{n}` is a predicate (true or false), not a value"),
                        span,
                    )
                    .with_help(format!("use it as a literal of the body: `{n}(a, b)`")),
                );
                return None;
            }
            _ => {
                let d = if self.ck.rel_ids.contains_key(n) {
                    Diagnostic::error(
                        format!("`{n}` is a relation, not a functor: atoms cannot be nested inside expressions"),
                        span,
                    )
                    .with_help("bind its value with a separate atom in the body")
                } else {
                    let d = Diagnostic::error(format!("unknown functor `{n}`"), name.span);
                    match suggest(n, BUILTIN_FUNCTORS.iter().copied()) {
                        Some(s) => d.with_help(format!("did you mean `{s}`?")),
                        None => d,
                    }
                };
                self.error(d);
                return None;
            }
        };
        if args.len() != arity {
            self.error(Diagnostic::error(
                format!(
                    "`{n}` takes {arity} argument{} but {} {} given",
                    if arity == 1 { "" } else { "s" },
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
                span,
            ));
            return None;
        }
        Some(LExpr::Call(builtin, static_name, args, span))
    }
}
