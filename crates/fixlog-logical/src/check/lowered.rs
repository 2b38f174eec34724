//! The lowered form of one rule (`LLit`/`LExpr`: the AST with variables resolved to
//! [`VarId`]s and the desugaring done, no types yet), the rule context that the three
//! passes share, and `RuleCx::rule`, which runs them.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Builtin {
    Cat,
    Strlen,
    Substr,
    Ord,
    /// `to_number`: from a symbol (parse) or from another numeric type.
    ToNumber,
    ToString,
    ToUnsigned,
    ToFloat,
    /// `itou`, `ftoi`, ...: conversion from a fixed type to another.
    Fixed(ColType, ColType),
    /// `as(value, T)`: the value's bits read as a `T` (no conversion, as in Soufflé).
    Cast(ColType),
    /// `@f(...)`: user-defined functor `index` (of `Checker::functors`) and its result.
    User(u32, ColType),
}

impl Builtin {
    pub(super) fn result(self) -> ColType {
        match self {
            Builtin::Cat | Builtin::Substr | Builtin::ToString => ColType::Symbol,
            Builtin::Strlen | Builtin::Ord | Builtin::ToNumber => ColType::Number,
            Builtin::ToUnsigned => ColType::Unsigned,
            Builtin::ToFloat => ColType::Float,
            Builtin::Fixed(_, to) | Builtin::Cast(to) => to,
            Builtin::User(_, result) => result,
        }
    }

    /// The type each argument must have, when fixed.
    pub(super) fn arg_type(self, i: usize) -> Option<ColType> {
        match self {
            Builtin::Cat | Builtin::Strlen | Builtin::Ord => Some(ColType::Symbol),
            Builtin::Substr => Some(if i == 0 {
                ColType::Symbol
            } else {
                ColType::Number
            }),
            Builtin::Fixed(from, _) => Some(from),
            Builtin::ToNumber
            | Builtin::ToString
            | Builtin::ToUnsigned
            | Builtin::ToFloat
            | Builtin::Cast(_) => None,
            // Given by the declaration (`RuleCx::propagate` and `emit_expr` read it).
            Builtin::User(..) => None,
        }
    }
}

#[derive(Clone, Debug)]
pub(super) enum LExpr {
    Var(VarId, Span),
    /// An integer literal, already negated if written `-n`.
    Int(i128, Span),
    Unsigned(u64, Span),
    Float(f64, Span),
    Str(String, Span),
    Unary(ir::UnaryOp, Box<LExpr>, Span),
    Binary(ir::BinOp, Box<LExpr>, Box<LExpr>, Span),
    Call(Builtin, &'static str, Vec<LExpr>, Span),
    /// `[a, b]`: a record of the type the context gives.
    Record(Vec<LExpr>, Span),
    /// `nil`: the empty record of the type the context gives.
    Nil(Span),
    /// `$B(a, b)`: branch `.1` of the ADT `.0` (a `ColType::Record` index).
    Branch(u32, usize, Vec<LExpr>, Span),
    /// A part of the record the expression (a variable) holds, read by a pattern.
    Access(Access, Box<LExpr>, Span),
}

/// What a pattern reads from a record or ADT value (see `RuleCx::destructure`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Access {
    /// Field `index` of a record, matched by a pattern of `arity` fields.
    Field { index: usize, arity: usize },
    /// Field `index` of branch `branch` of an ADT (the branch has `arity` in the
    /// pattern).
    BranchField {
        branch: usize,
        index: usize,
        arity: usize,
    },
    /// The branch index of an ADT value (an `unsigned`).
    Tag,
}

impl LExpr {
    pub(super) fn span(&self) -> Span {
        match self {
            LExpr::Var(_, s)
            | LExpr::Int(_, s)
            | LExpr::Unsigned(_, s)
            | LExpr::Float(_, s)
            | LExpr::Str(_, s)
            | LExpr::Unary(_, _, s)
            | LExpr::Binary(_, _, _, s)
            | LExpr::Call(_, _, _, s)
            | LExpr::Record(_, s)
            | LExpr::Nil(s)
            | LExpr::Branch(_, _, _, s)
            | LExpr::Access(_, _, s) => *s,
        }
    }

    /// Every variable occurrence, left to right (iterative: constant chains in facts and
    /// atom arguments are not split and may be deep).
    pub(super) fn vars(&self, out: &mut Vec<(VarId, Span)>) {
        let mut stack = vec![self];
        while let Some(e) = stack.pop() {
            match e {
                LExpr::Var(v, s) => out.push((*v, *s)),
                LExpr::Unary(_, a, _) => stack.push(a),
                LExpr::Binary(_, a, b, _) => {
                    stack.push(b);
                    stack.push(a);
                }
                LExpr::Call(_, _, args, _)
                | LExpr::Record(args, _)
                | LExpr::Branch(_, _, args, _) => stack.extend(args.iter().rev()),
                LExpr::Access(_, a, _) => stack.push(a),
                _ => {}
            }
        }
    }

    /// The height of the tree (a leaf is 1).
    pub(super) fn depth(&self) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(self, 1)];
        while let Some((e, d)) = stack.pop() {
            deepest = deepest.max(d);
            match e {
                LExpr::Unary(_, a, _) => stack.push((a, d + 1)),
                LExpr::Binary(_, a, b, _) => {
                    stack.push((a, d + 1));
                    stack.push((b, d + 1));
                }
                LExpr::Call(_, _, args, _)
                | LExpr::Record(args, _)
                | LExpr::Branch(_, _, args, _) => stack.extend(args.iter().map(|a| (a, d + 1))),
                LExpr::Access(_, a, _) => stack.push((a, d + 1)),
                _ => {}
            }
        }
        deepest
    }
}

/// Dropped with an explicit stack, like `ast::Expr` (deep constant chains).
impl Drop for LExpr {
    fn drop(&mut self) {
        fn take_children(e: &mut LExpr, out: &mut Vec<LExpr>) {
            let hole = || LExpr::Int(0, Span::default());
            match e {
                LExpr::Unary(_, a, _) => out.push(std::mem::replace(&mut **a, hole())),
                LExpr::Binary(_, a, b, _) => {
                    out.push(std::mem::replace(&mut **a, hole()));
                    out.push(std::mem::replace(&mut **b, hole()));
                }
                LExpr::Call(_, _, args, _)
                | LExpr::Record(args, _)
                | LExpr::Branch(_, _, args, _) => out.append(args),
                LExpr::Access(_, a, _) => out.push(std::mem::replace(&mut **a, hole())),
                _ => {}
            }
        }
        let mut stack = Vec::new();
        take_children(self, &mut stack);
        while let Some(mut e) = stack.pop() {
            take_children(&mut e, &mut stack);
        }
    }
}

#[derive(Clone, Debug)]
pub(super) enum LTerm {
    Var(VarId, Span),
    Wild,
    Const(LExpr),
}

#[derive(Clone, Debug)]
pub(super) enum LLit {
    Atom {
        rel: RelId,
        args: Vec<LTerm>,
        negated: bool,
        span: Span,
    },
    Cmp {
        op: ir::CmpOp,
        lhs: LExpr,
        rhs: LExpr,
        span: Span,
    },
    Pred {
        pred: ir::Predicate,
        args: Vec<LExpr>,
        negated: bool,
        span: Span,
    },
    Agg {
        out: VarId,
        func: ir::AggFunc,
        arg: Option<LExpr>,
        body: Vec<LLit>,
        /// The variables visible where the aggregate occurs.
        outer: HashSet<VarId>,
        span: Span,
    },
    /// `out = range(args)`: binds `out` once the arguments are bound.
    Range {
        out: VarId,
        args: Vec<LExpr>,
        span: Span,
    },
    False(Span),
}

impl LLit {
    /// Every variable occurrence, including those in nested aggregates.
    pub(super) fn vars(&self, out: &mut Vec<(VarId, Span)>) {
        match self {
            LLit::Atom { args, .. } => {
                for a in args {
                    match a {
                        LTerm::Var(v, s) => out.push((*v, *s)),
                        LTerm::Const(e) => e.vars(out),
                        LTerm::Wild => {}
                    }
                }
            }
            LLit::Cmp { lhs, rhs, .. } => {
                lhs.vars(out);
                rhs.vars(out);
            }
            LLit::Pred { args, .. } => args.iter().for_each(|a| a.vars(out)),
            LLit::Range {
                out: o, args, span, ..
            } => {
                out.push((*o, *span));
                args.iter().for_each(|a| a.vars(out));
            }
            LLit::Agg {
                out: o,
                arg,
                body,
                span,
                ..
            } => {
                out.push((*o, *span));
                if let Some(a) = arg {
                    a.vars(out);
                }
                body.iter().for_each(|l| l.vars(out));
            }
            LLit::False(_) => {}
        }
    }
}

pub(super) struct VarData {
    pub(super) name: String,
    pub(super) ty: Option<ColType>,
    /// Where the type was decided and why (for mismatch messages).
    pub(super) origin: Option<(Span, String)>,
}

pub(super) struct RuleCx<'c, 'a> {
    pub(super) ck: &'c mut Checker<'a>,
    pub(super) vars: Vec<VarData>,
    pub(super) fresh: usize,
    /// Checking a fact: variables and aggregates are errors; all functors are folded.
    pub(super) fact_mode: bool,
    /// Inside an atom argument that must fold to a constant (no splitting there).
    pub(super) const_context: usize,
    /// For each aggregate of the scopes lowered so far (by the address of its AST
    /// node), the names that refer to the enclosing scope (see
    /// [`RuleCx::aggregate_scopes`]).
    pub(super) injected: HashMap<usize, HashSet<String>>,
    /// The variables standing for the `autoinc()`s lowered so far (see
    /// [`ir::AutoInc`]), with their places.
    pub(super) autoinc: Vec<(VarId, Span)>,
}

/// The variable names of an expression left to right (not those inside aggregates) and
/// the aggregates it contains (not those nested in aggregate bodies). Iterative: a flat
/// sum of 100,000 terms is a chain that deep.
pub(super) fn expr_parts<'e>(
    e: &'e ast::Expr,
    names: &mut Vec<(&'e str, Span)>,
    aggs: &mut Vec<&'e ast::Expr>,
) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e {
            ast::Expr::Var(id) => names.push((id.name.as_str(), id.span)),
            ast::Expr::Unary { arg, .. } => stack.push(arg),
            ast::Expr::Binary { lhs, rhs, .. } => {
                stack.push(rhs);
                stack.push(lhs);
            }
            ast::Expr::Call { args, .. } | ast::Expr::Constructor { args, .. } => {
                stack.extend(args.iter().rev())
            }
            ast::Expr::Aggregate { .. } => aggs.push(e),
            _ => {}
        }
    }
}

/// Every variable occurrence in `exprs`, those inside aggregates (their bodies and
/// aggregated expressions) included, in no particular order.
pub(super) fn all_var_occurrences<'e>(
    exprs: impl Iterator<Item = &'e ast::Expr>,
    out: &mut Vec<(&'e str, Span)>,
) {
    let mut stack: Vec<&'e ast::Expr> = exprs.collect();
    while let Some(e) = stack.pop() {
        let mut aggs = Vec::new();
        expr_parts(e, out, &mut aggs);
        for a in aggs {
            if let ast::Expr::Aggregate { arg, body, .. } = a {
                stack.extend(arg.as_deref());
                let mut lits = Vec::new();
                body_literals(body, &mut lits);
                for l in lits {
                    stack.extend(literal_exprs(l));
                }
            }
        }
    }
}

/// The expressions of a literal.
pub(super) fn literal_exprs(l: &ast::Literal) -> Vec<&ast::Expr> {
    match l {
        ast::Literal::Atom(a) | ast::Literal::Negation { atom: a, .. } => a.args.iter().collect(),
        ast::Literal::Compare { lhs, rhs, .. } => vec![lhs, rhs],
        ast::Literal::Bool(..) => Vec::new(),
    }
}

pub(super) fn collect_direct_expr(e: &ast::Expr, out: &mut Vec<(String, Span)>) {
    let mut names = Vec::new();
    expr_parts(e, &mut names, &mut Vec::new());
    out.extend(names.into_iter().map(|(n, s)| (n.to_string(), s)));
}

pub(super) fn collect_direct_lit(l: &ast::Literal, out: &mut Vec<(String, Span)>) {
    for e in literal_exprs(l) {
        collect_direct_expr(e, out);
    }
}

/// Every literal of a body, whatever its `,`/`;` structure.
pub(super) fn body_literals<'b>(b: &'b ast::Body, out: &mut Vec<&'b ast::Literal>) {
    match b {
        ast::Body::Literal(l) => out.push(l),
        ast::Body::And(parts, _) | ast::Body::Or(parts, _) => {
            parts.iter().for_each(|p| body_literals(p, out))
        }
    }
}

/// The names of an aggregate, as Soufflé scopes them: `.0` every name that may refer to
/// an enclosing scope (those of its body and of its aggregated expression, and those of
/// aggregates nested in it except their own aggregated expressions'), `.1` the names of
/// its aggregated expression, which are always local to it.
pub(super) fn aggregate_names(a: &ast::Expr) -> (HashSet<&str>, HashSet<&str>) {
    let ast::Expr::Aggregate { arg, body, .. } = a else {
        return (HashSet::new(), HashSet::new());
    };
    let mut names = Vec::new();
    let mut nested = Vec::new();
    let mut target = Vec::new();
    if let Some(arg) = arg {
        expr_parts(arg, &mut target, &mut nested);
    }
    let mut lits = Vec::new();
    body_literals(body, &mut lits);
    for l in lits {
        for e in literal_exprs(l) {
            expr_parts(e, &mut names, &mut nested);
        }
    }
    let target: HashSet<&str> = target.into_iter().map(|(n, _)| n).collect();
    let mut all: HashSet<&str> = names.into_iter().map(|(n, _)| n).collect();
    all.extend(target.iter().copied());
    for b in nested {
        let (inner, inner_target) = aggregate_names(b);
        all.extend(inner.difference(&inner_target).copied());
    }
    (all, target)
}

/// Whether an expression calls a user-defined functor (`@f(...)`), iteratively.
pub(super) fn calls_user_functor(e: &ast::Expr) -> bool {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e {
            ast::Expr::Call { user: true, .. } => return true,
            ast::Expr::Unary { arg, .. } => stack.push(arg),
            ast::Expr::Binary { lhs, rhs, .. } => {
                stack.push(rhs);
                stack.push(lhs);
            }
            ast::Expr::Call { args, .. } | ast::Expr::Constructor { args, .. } => {
                stack.extend(args.iter())
            }
            _ => {}
        }
    }
    false
}

/// Whether an expression is made of constants only (iterative, like [`expr_parts`]).
pub(super) fn is_const(e: &ast::Expr) -> bool {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e {
            ast::Expr::Int(..)
            | ast::Expr::Unsigned(..)
            | ast::Expr::Float(..)
            | ast::Expr::Str(..) => {}
            ast::Expr::Unary { arg, .. } => stack.push(arg),
            ast::Expr::Binary { lhs, rhs, .. } => {
                stack.push(rhs);
                stack.push(lhs);
            }
            ast::Expr::Call { args, user, .. } => {
                if *user {
                    return false;
                }
                stack.extend(args.iter());
            }
            ast::Expr::Constructor { args, .. } => stack.extend(args.iter()),
            ast::Expr::Var(_) | ast::Expr::Wildcard(_) | ast::Expr::Aggregate { .. } => {
                return false
            }
        }
    }
    true
}

pub(super) type Scope = HashMap<String, VarId>;

/// The grounding problem of one scope, by name (see [`RuleCx::aggregate_scopes`]).
pub(super) struct ScopeScan<'x> {
    pub(super) g: Grounding,
    pub(super) ids: HashMap<&'x str, usize>,
    /// The scope's aggregates and their items (grounded when their value counts).
    pub(super) aggs: Vec<(&'x ast::Expr, usize)>,
}

impl<'x> ScopeScan<'x> {
    pub(super) fn item(&mut self, name: &'x str) -> usize {
        let g = &mut self.g;
        *self.ids.entry(name).or_insert_with(|| g.add_item())
    }

    /// The items an expression needs to be grounded: its names and its aggregates
    /// (which get an item each here).
    pub(super) fn needs(&mut self, e: &'x ast::Expr) -> Vec<usize> {
        let mut names = Vec::new();
        let mut aggs = Vec::new();
        expr_parts(e, &mut names, &mut aggs);
        let mut out: Vec<usize> = names.into_iter().map(|(n, _)| self.item(n)).collect();
        for a in aggs {
            let i = self.g.add_item();
            self.aggs.push((a, i));
            out.push(i);
        }
        out
    }
}

impl<'c, 'a> RuleCx<'c, 'a> {
    pub(super) fn new(ck: &'c mut Checker<'a>, fact_mode: bool) -> Self {
        RuleCx {
            ck,
            vars: Vec::new(),
            fresh: 0,
            fact_mode,
            const_context: 0,
            injected: HashMap::new(),
            autoinc: Vec::new(),
        }
    }

    pub(super) fn new_var(&mut self, name: String) -> VarId {
        self.vars.push(VarData {
            name,
            ty: None,
            origin: None,
        });
        self.vars.len() - 1
    }

    pub(super) fn fresh_var(&mut self, prefix: &str) -> VarId {
        self.fresh += 1;
        let name = format!("${prefix}{}", self.fresh);
        self.new_var(name)
    }

    pub(super) fn error(&mut self, d: Diagnostic) {
        self.ck.error(d);
    }

    pub(super) fn rule(
        &mut self,
        head: &ast::Atom,
        rel: RelId,
        conj: &[&ast::Literal],
        span: Span,
    ) -> Option<ir::Rule> {
        let before = self.ck.errors.len();
        for a in &head.args {
            if let ast::Expr::Wildcard(s) = a {
                self.error(
                    Diagnostic::error("`_` cannot be used in the head of a rule", *s).with_help(
                        "a head argument needs a value: use a variable bound in the body",
                    ),
                );
            }
        }
        let head_exprs: Vec<&ast::Expr> = head.args.iter().collect();
        let (mut body, head_args) = self.lower_scope(conj, &head_exprs, &HashMap::new());
        if self.ck.errors.len() != before {
            return None;
        }
        self.ground_witnesses(&mut body);
        if !self.autoinc.is_empty() {
            let mut in_body = Vec::new();
            body.iter().for_each(|l| l.vars(&mut in_body));
            for &(v, s) in &self.autoinc.clone() {
                if in_body.iter().any(|x| x.0 == v) {
                    self.error(
                        Diagnostic::error("`autoinc()` can only be used in the head of a rule", s)
                            .with_help("number the tuples in the head: `r(x, autoinc()) :- ...`"),
                    );
                }
            }
            if self.ck.errors.len() != before {
                return None;
            }
            // Every binding of the body gets a number: name the `_` of positive atoms.
            for l in body.iter_mut() {
                if let LLit::Atom {
                    args,
                    negated: false,
                    span,
                    ..
                } = l
                {
                    let span = *span;
                    for a in args.iter_mut() {
                        if matches!(a, LTerm::Wild) {
                            self.fresh += 1;
                            let v = self.new_var(format!("$_{}", self.fresh));
                            *a = LTerm::Var(v, span);
                        }
                    }
                }
            }
        }
        let head_args: Vec<LExpr> = head_args.into_iter().flatten().collect();
        self.range_check(&body, &head_args, &HashSet::new(), false);
        // Types.
        self.seed(&body);
        let col_types = self.ck.relations[rel].types();
        for _ in 0..self.vars.len() + 2 {
            let mut changed = false;
            for (e, t) in head_args.iter().zip(&col_types) {
                changed |= self.propagate(e, Some(*t));
            }
            changed |= self.propagate_lits(&body);
            if !changed {
                break;
            }
        }
        for v in &mut self.vars {
            if v.ty.is_none() {
                v.ty = Some(ColType::Number);
            }
        }
        let mut args = Vec::new();
        for (e, t) in head_args.iter().zip(&col_types) {
            if let Some((x, _)) = self.emit_expr(e, Some(*t)) {
                args.push(x);
            }
        }
        let body = self.emit_lits(&body);
        if self.ck.errors.len() != before || args.len() != col_types.len() {
            return None;
        }
        Some(ir::Rule {
            head: ir::Head {
                rel,
                args,
                span: head.span,
            },
            body,
            vars: self
                .vars
                .iter()
                .map(|v| ir::VarInfo {
                    name: v.name.clone(),
                    ty: v.ty.unwrap_or(ColType::Number),
                })
                .collect(),
            span,
            plan: Vec::new(),
        })
    }
}
