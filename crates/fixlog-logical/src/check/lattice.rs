//! Soufflé 2.5's lattices: `.lattice T<> { Bottom -> e, Top -> e, Lub -> f(_, _),
//! Glb -> g(_, _) }` and lattice attributes `x: T<>`.
//!
//! A relation with lattice attributes (the last ones; the others are its key) holds at
//! most one tuple per key, whose lattice values are the least upper bound (`Lub`) of
//! every value derived for the key. That is storage, done by the driver on the host
//! (`fixlog_exec::maintain`) from [`ir::LatticeColumns`]: here each `Lub` is lowered
//! once, through a synthetic clause `$lattice_T(a, b, LUB(a, b)) :- $lattice_T(a, b, _).`
//! whose head expression is taken out (the rule is dropped; the empty relation stays).
//!
//! What a lattice argument means in a rule body is Soufflé's `LatticeTransformer`
//! (`ast/transform/InsertLatticeOperations.cpp`), applied here to each conjunction of
//! a clause before it is lowered, for lattices with a `Glb` and a `Bottom` (the others
//! match stored values exactly, as in Soufflé):
//! - a lattice argument `e` of a positive atom that the rest of the body grounds (a
//!   constant, or variables bound elsewhere) holds when the stored value is above it:
//!   the atom reads a fresh variable `v` and the body gets `GLB(v, e) = e`;
//! - a variable `x` that is a lattice argument of several positive atoms and bound by
//!   nothing else stands for their greatest lower bound: each occurrence becomes a
//!   fresh variable, and the body gets `x = GLB(x1, GLB(x2, ...))` and `x != BOTTOM`
//!   (`x` may not occur in other literals: an error, as in Soufflé);
//! - a negated atom with lattice arguments `!r(k, e)` holds when no stored tuple of the
//!   key overlaps `e`: `count : { r(k, v), GLB(v, e) != BOTTOM } = 0` (Soufflé's
//!   disjunction `!r(k, _) ; r(k, v), GLB(v, e) = BOTTOM`, for a relation that holds
//!   one tuple per key).
//!
//! Atoms inside aggregate bodies are left as written (they read the stored values).

use super::Checker;
use crate::ir::{self, ColType, RelId};
use fixlog_syntax::ast::{self, CmpOp, Expr, Ident};
use fixlog_syntax::{Diagnostic, Span};
use std::collections::{HashMap, HashSet};

/// A `.lattice` declaration, checked.
pub(super) struct LatticeDecl {
    pub(super) ty: ColType,
    pub(super) type_name: String,
    pub(super) span: Span,
    pub(super) lub: Option<Expr>,
    pub(super) glb: Option<Expr>,
    pub(super) bottom: Option<Expr>,
    /// The lowered `Lub` (see the module doc), once made.
    pub(super) lowered_lub: Option<ir::Expr>,
}

const OPERATORS: &[&str] = &["Bottom", "Top", "Lub", "Glb", "Leq"];

/// The deepest a lattice operator's expression may be nested.
const MAX_DEPTH: usize = 64;

/// How deeply `e` is nested (operators, calls, constructors; 1 for a leaf), found
/// without recursion: an operator of 100,000 terms is a tree that deep.
fn depth(e: &Expr) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(e, 1usize)];
    while let Some((e, d)) = stack.pop() {
        deepest = deepest.max(d);
        match e {
            Expr::Unary { arg, .. } => stack.push((arg, d + 1)),
            Expr::Binary { lhs, rhs, .. } => {
                stack.push((lhs, d + 1));
                stack.push((rhs, d + 1));
            }
            Expr::Call { args, .. } | Expr::Constructor { args, .. } => {
                stack.extend(args.iter().map(|a| (a, d + 1)));
            }
            _ => {}
        }
    }
    deepest
}

/// The number of `_` in `e` (aggregates excluded).
fn wildcards(e: &Expr) -> usize {
    match e {
        Expr::Wildcard(_) => 1,
        Expr::Unary { arg, .. } => wildcards(arg),
        Expr::Binary { lhs, rhs, .. } => wildcards(lhs) + wildcards(rhs),
        Expr::Call { args, .. } | Expr::Constructor { args, .. } => {
            args.iter().map(wildcards).sum()
        }
        _ => 0,
    }
}

/// `e` with its `_`s replaced, left to right, by `args`.
fn fill(e: &Expr, args: &mut Vec<Expr>) -> Expr {
    match e {
        Expr::Wildcard(s) => {
            if args.is_empty() {
                Expr::Wildcard(*s)
            } else {
                args.remove(0)
            }
        }
        Expr::Unary { op, arg, span } => Expr::Unary {
            op: *op,
            arg: Box::new(fill(arg, args)),
            span: *span,
        },
        Expr::Binary { op, lhs, rhs, span } => {
            let lhs = fill(lhs, args);
            let rhs = fill(rhs, args);
            Expr::Binary {
                op: *op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
                span: *span,
            }
        }
        Expr::Call {
            name,
            args: a,
            user,
            span,
        } => Expr::Call {
            name: name.clone(),
            args: a.iter().map(|x| fill(x, args)).collect(),
            user: *user,
            span: *span,
        },
        Expr::Constructor {
            ctor,
            args: a,
            span,
        } => Expr::Constructor {
            ctor: ctor.clone(),
            args: a.iter().map(|x| fill(x, args)).collect(),
            span: *span,
        },
        other => other.clone(),
    }
}

fn var(name: &str, span: Span) -> Expr {
    Expr::Var(Ident {
        name: name.to_string(),
        span,
    })
}

/// The variable names of `e` (aggregates excluded).
fn names(e: &Expr, out: &mut Vec<String>) {
    let mut found = Vec::new();
    super::lowered::expr_parts(e, &mut found, &mut Vec::new());
    out.extend(found.into_iter().map(|(n, _)| n.to_string()));
}

impl Checker<'_> {
    /// Reads the `.lattice` declarations (after the types, before the relations).
    pub(super) fn lattice_decls(&mut self, program: &ast::Program) {
        for item in &program.items {
            let ast::Item::Lattice { name, ops, span } = item else {
                continue;
            };
            let Some(ty) = self.resolve_type(name) else {
                continue;
            };
            if let Some(prev) = self.lattices.get(&name.name) {
                let loc = self.sources.location(prev.span);
                self.error(
                    Diagnostic::error(
                        format!("lattice `{}` is declared more than once", name.name),
                        name.span,
                    )
                    .with_note(format!("first declared at {loc}")),
                );
                continue;
            }
            let mut decl = LatticeDecl {
                ty,
                type_name: name.name.clone(),
                span: *span,
                lub: None,
                glb: None,
                bottom: None,
                lowered_lub: None,
            };
            let mut seen: HashSet<&str> = HashSet::new();
            let mut top = false;
            for (op, e) in ops {
                if !OPERATORS.contains(&op.name.as_str()) {
                    self.error(
                        Diagnostic::error(
                            format!("unknown lattice operator `{}`", op.name),
                            op.span,
                        )
                        .with_help("the operators are `Bottom`, `Top`, `Lub`, `Glb` and `Leq`"),
                    );
                    continue;
                }
                if !seen.insert(op.name.as_str()) {
                    self.error(Diagnostic::error(
                        format!("lattice operator `{}` is given twice", op.name),
                        op.span,
                    ));
                    continue;
                }
                // (The passes below recurse over the expression: bound its depth first.)
                let depth = depth(e);
                if depth > MAX_DEPTH {
                    self.error(Diagnostic::error(
                        format!(
                            "lattice operator `{}` is nested {depth} levels deep; at most {MAX_DEPTH}",
                            op.name
                        ),
                        e.span(),
                    ));
                    continue;
                }
                let binary = matches!(op.name.as_str(), "Lub" | "Glb" | "Leq");
                let n = wildcards(e);
                if binary && n != 2 {
                    self.error(
                        Diagnostic::error(
                            format!(
                                "`{}` must have two `_` standing for its arguments, found {n}",
                                op.name
                            ),
                            e.span(),
                        )
                        .with_help(format!("as in Soufflé: `{} -> @f(_, _)`", op.name)),
                    );
                    continue;
                }
                if !binary && n != 0 {
                    self.error(Diagnostic::error(
                        format!("`{}` must be a value, without `_`", op.name),
                        e.span(),
                    ));
                    continue;
                }
                match op.name.as_str() {
                    "Lub" => decl.lub = Some(e.clone()),
                    "Glb" => decl.glb = Some(e.clone()),
                    "Bottom" => decl.bottom = Some(e.clone()),
                    "Top" => top = true,
                    _ => {}
                }
            }
            if !seen.contains("Lub") {
                self.error(Diagnostic::error(
                    format!("lattice `{}<>` does not define `Lub`", name.name),
                    *span,
                ));
            }
            // Soufflé's warnings.
            for (missing, what) in [
                (decl.bottom.is_none(), "Bottom"),
                (decl.glb.is_none(), "Glb"),
                (!top, "Top"),
            ] {
                if missing {
                    self.warnings.push(Diagnostic::error(
                        format!("lattice `{}<>` does not define {what}", name.name),
                        *span,
                    ));
                }
            }
            self.lattices.insert(name.name.clone(), decl);
        }
    }

    /// The lattice attributes of a declaration (`x: T<>`), checked: `T` has a
    /// `.lattice`, they come last, and the relation is no `eqrel`, `choice-domain` or
    /// `inline` relation. Returns their columns' lattice names.
    pub(super) fn decl_lattice_columns(&mut self, d: &ast::Decl) -> Option<Vec<String>> {
        let first = d.attrs.iter().position(|a| a.lattice.is_some())?;
        let mut names = Vec::new();
        let mut ok = true;
        for a in &d.attrs[first..] {
            let Some(at) = a.lattice else {
                self.error(
                    Diagnostic::error(
                        format!(
                            "attribute `{}` of `{}` follows a lattice attribute: lattice attributes come last",
                            a.name.name, d.name.name
                        ),
                        a.name.span,
                    )
                    .with_help("move the lattice attributes (`x: T<>`) to the end"),
                );
                ok = false;
                continue;
            };
            if !self.lattices.contains_key(&a.ty.name) {
                self.error(
                    Diagnostic::error(
                        format!("type `{}` is not a lattice", a.ty.name),
                        a.ty.span.join(at),
                    )
                    .with_help(format!(
                        "declare it with `.lattice {}<> {{ Lub -> ..., ... }}`",
                        a.ty.name
                    )),
                );
                ok = false;
                continue;
            }
            names.push(a.ty.name.clone());
        }
        let kind = if d.qualifiers.iter().any(|q| q.name == "eqrel") {
            Some("an `eqrel` relation")
        } else if !d.choice_domains.is_empty() {
            Some("a `choice-domain` relation")
        } else if d.qualifiers.iter().any(|q| q.name == "inline") {
            Some("an `inline` relation")
        } else {
            None
        };
        if let Some(kind) = kind {
            self.error(Diagnostic::error(
                format!(
                    "`{}` is {kind} and cannot have lattice attributes",
                    d.name.name
                ),
                d.attrs[first].lattice.unwrap_or(d.name.span),
            ));
            ok = false;
        }
        ok.then_some(names)
    }

    /// Fills [`ir::Relation::lattice`] of every relation with lattice attributes
    /// (after the declarations, before the clauses).
    pub(super) fn lattice_lubs(&mut self) {
        let mut rels: Vec<(RelId, Vec<String>)> = self
            .lattice_cols
            .iter()
            .map(|(&r, c)| (r, c.clone()))
            .collect();
        rels.sort();
        for (rel, cols) in rels {
            let mut lubs = Vec::new();
            for name in &cols {
                match self.lowered_lub(name) {
                    Some(e) => lubs.push(e),
                    None => return,
                }
            }
            let key_len = self.relations[rel].columns.len() - cols.len();
            self.relations[rel].lattice = Some(ir::LatticeColumns { key_len, lubs });
        }
    }

    /// The `Lub` of lattice `name` lowered over `Var(0)` (new) and `Var(1)` (held).
    fn lowered_lub(&mut self, name: &str) -> Option<ir::Expr> {
        let decl = self.lattices.get(name)?;
        if let Some(e) = &decl.lowered_lub {
            return Some(e.clone());
        }
        let lub = decl.lub.as_ref()?.clone();
        let (ty, type_name, span) = (decl.ty, decl.type_name.clone(), lub.span());
        let rel_name = format!("$lattice_{name}");
        let rel = self.relations.len();
        let column = |n: &str| ir::Column {
            name: n.to_string(),
            ty,
            type_name: type_name.clone(),
        };
        self.relations.push(ir::Relation::plain(
            rel_name.clone(),
            vec![column("new"), column("held"), column("lub")],
            span,
        ));
        self.rel_ids.insert(rel_name.clone(), rel);
        let (a, b) = ("$lattice_new", "$lattice_held");
        let head = ast::Atom {
            name: Ident {
                name: rel_name.clone(),
                span,
            },
            args: vec![
                var(a, span),
                var(b, span),
                fill(&lub, &mut vec![var(a, span), var(b, span)]),
            ],
            span,
        };
        let body = ast::Atom {
            name: Ident {
                name: rel_name,
                span,
            },
            args: vec![var(a, span), var(b, span), Expr::Wildcard(span)],
            span,
        };
        let clause = ast::Clause {
            heads: vec![head],
            body: Some(ast::Body::Literal(ast::Literal::Atom(body))),
            dominating: None,
            plan: Vec::new(),
            span,
        };
        let (rules, errors) = (self.rules.len(), self.errors.len());
        self.clause(&clause);
        if self.errors.len() != errors || self.rules.len() != rules + 1 {
            return None;
        }
        let rule = self.rules.pop()?;
        let slot = |e: &ir::Expr| match e {
            ir::Expr::Var(v) => Some(*v),
            _ => None,
        };
        let (va, vb) = (slot(&rule.head.args[0])?, slot(&rule.head.args[1])?);
        let mut lowered = rule.head.args[2].clone();
        if !renumber(&mut lowered, va, vb) || rule.body.len() != 1 {
            self.error(Diagnostic::error(
                "this `Lub` is too complex: write it as one expression of its two arguments (a functor call such as `@lub(_, _)`, or `max(_, _)`)",
                span,
            ));
            return None;
        }
        if let Some(d) = self.lattices.get_mut(name) {
            d.lowered_lub = Some(lowered.clone());
        }
        Some(lowered)
    }

    /// Soufflé's meaning of lattice arguments in a conjunction (see the module doc);
    /// `None` when the conjunction has none to rewrite.
    pub(super) fn lattice_body(&mut self, conj: &[&ast::Literal]) -> Option<Vec<ast::Literal>> {
        if self.lattice_cols.is_empty() {
            return None;
        }
        // (column, lattice) of an atom's relation, for lattices with Glb and Bottom;
        // none for an atom of the wrong arity (an error reported with the atom).
        let columns = |ck: &Self, atom: &ast::Atom| -> Vec<(usize, String)> {
            let Some(&rel) = ck.rel_ids.get(&atom.name.name) else {
                return Vec::new();
            };
            let Some(cols) = ck.lattice_cols.get(&rel) else {
                return Vec::new();
            };
            let arity = ck.relations.get(rel).map_or(0, |r| r.columns.len());
            if atom.args.len() != arity {
                return Vec::new();
            }
            let first = arity.saturating_sub(cols.len());
            cols.iter()
                .enumerate()
                .filter(|(_, l)| {
                    ck.lattices
                        .get(*l)
                        .is_some_and(|d| d.glb.is_some() && d.bottom.is_some())
                })
                .map(|(i, l)| (first + i, l.clone()))
                .collect()
        };
        let touched = conj.iter().any(|l| match l {
            ast::Literal::Atom(a) | ast::Literal::Negation { atom: a, .. } => {
                !columns(self, a).is_empty()
            }
            _ => false,
        });
        if !touched {
            return None;
        }
        // Grounded variables: those of positive atoms outside lattice positions, then
        // `x = e` with `e` grounded, to a fixpoint.
        let mut grounded: HashSet<String> = HashSet::new();
        for l in conj {
            if let ast::Literal::Atom(a) = l {
                let lat: Vec<usize> = columns(self, a).into_iter().map(|(c, _)| c).collect();
                for (i, e) in a.args.iter().enumerate() {
                    if !lat.contains(&i) {
                        let mut n = Vec::new();
                        names(e, &mut n);
                        grounded.extend(n);
                    }
                }
            }
        }
        loop {
            let before = grounded.len();
            for l in conj {
                if let ast::Literal::Compare {
                    op: CmpOp::Eq,
                    lhs,
                    rhs,
                    ..
                } = l
                {
                    for (x, e) in [(lhs, rhs), (rhs, lhs)] {
                        if let Expr::Var(x) = x {
                            let mut n = Vec::new();
                            names(e, &mut n);
                            if n.iter().all(|v| grounded.contains(v)) {
                                grounded.insert(x.name.clone());
                            }
                        }
                    }
                }
            }
            if grounded.len() == before {
                break;
            }
        }
        let is_grounded = |e: &Expr, grounded: &HashSet<String>| {
            let mut n = Vec::new();
            names(e, &mut n);
            n.iter().all(|v| grounded.contains(v)) && !matches!(e, Expr::Aggregate { .. })
        };
        let mut out: Vec<ast::Literal> = Vec::new();
        let mut added: Vec<ast::Literal> = Vec::new();
        // Ungrounded lattice variables: name -> (lattice, places (literal, argument)).
        let mut ungrounded: HashMap<String, (String, Vec<(usize, usize)>)> = HashMap::new();
        let mut order: Vec<String> = Vec::new();
        for l in conj.iter() {
            match l {
                ast::Literal::Atom(a) => {
                    let mut a = a.clone();
                    for (c, lattice) in columns(self, &a) {
                        let arg = &a.args[c];
                        if matches!(arg, Expr::Wildcard(_)) {
                            continue;
                        }
                        let span = arg.span();
                        if is_grounded(arg, &grounded) {
                            let v = self.fresh_lattice_var();
                            let glb = self.glb(&lattice, var(&v, span), arg.clone());
                            added.push(ast::Literal::Compare {
                                op: CmpOp::Eq,
                                lhs: glb,
                                rhs: arg.clone(),
                                span,
                            });
                            a.args[c] = var(&v, span);
                        } else if let Expr::Var(x) = arg {
                            let entry = ungrounded
                                .entry(x.name.clone())
                                .or_insert_with(|| (lattice.clone(), Vec::new()));
                            if entry.1.is_empty() {
                                order.push(x.name.clone());
                            }
                            entry.1.push((out.len(), c));
                        } else {
                            self.error(
                                Diagnostic::error("this lattice argument is not grounded", span)
                                    .with_help(
                                    "bind its variables elsewhere in the body, or use a variable",
                                ),
                            );
                        }
                    }
                    out.push(ast::Literal::Atom(a));
                }
                ast::Literal::Negation { atom, span } => {
                    let cols = columns(self, atom);
                    if cols
                        .iter()
                        .all(|(c, _)| matches!(atom.args[*c], Expr::Wildcard(_)))
                    {
                        out.push((*l).clone());
                        continue;
                    }
                    // `count : { r(k, v..), GLB(v, e) != BOTTOM, ... } = 0`
                    let mut inner = atom.clone();
                    let mut lits = Vec::new();
                    for (c, lattice) in cols {
                        let arg = atom.args[c].clone();
                        if matches!(arg, Expr::Wildcard(_)) {
                            continue;
                        }
                        let s = arg.span();
                        let v = self.fresh_lattice_var();
                        inner.args[c] = var(&v, s);
                        let glb = self.glb(&lattice, var(&v, s), arg);
                        let bottom = self.bottom(&lattice, s);
                        lits.push(ast::Body::Literal(ast::Literal::Compare {
                            op: CmpOp::Ne,
                            lhs: glb,
                            rhs: bottom,
                            span: s,
                        }));
                    }
                    let mut parts = vec![ast::Body::Literal(ast::Literal::Atom(inner))];
                    parts.extend(lits);
                    out.push(ast::Literal::Compare {
                        op: CmpOp::Eq,
                        lhs: Expr::Aggregate {
                            kind: ast::AggKind::Count,
                            arg: None,
                            body: Box::new(ast::Body::And(parts, *span)),
                            span: *span,
                        },
                        rhs: Expr::Int(0, *span),
                        span: *span,
                    });
                }
                other => out.push((*other).clone()),
            }
        }
        for name in order {
            let Some((lattice, places)) = ungrounded.remove(&name) else {
                continue;
            };
            if places.len() < 2 {
                continue;
            }
            // Any other occurrence of the variable is an error (Soufflé's).
            let mut all = Vec::new();
            for l in &out {
                let exprs = super::lowered::literal_exprs(l);
                super::lowered::all_var_occurrences(exprs.into_iter(), &mut all);
            }
            let uses: Vec<Span> = all
                .iter()
                .filter(|(n, _)| *n == name)
                .map(|(_, s)| *s)
                .collect();
            if uses.len() > places.len() {
                let lattice_spans: HashSet<Span> = places
                    .iter()
                    .filter_map(|&(li, c)| match &out[li] {
                        ast::Literal::Atom(a) => Some(a.args[c].span()),
                        _ => None,
                    })
                    .collect();
                let at = uses
                    .iter()
                    .find(|s| !lattice_spans.contains(s))
                    .copied()
                    .unwrap_or_default();
                self.error(
                    Diagnostic::error(
                        format!(
                            "lattice variable `{name}` stands for the greatest lower bound of its lattice arguments and cannot be used in other literals"
                        ),
                        at,
                    )
                    .with_help("bind it elsewhere in the body, or compare a copy in another rule"),
                );
                continue;
            }
            let mut fresh = Vec::new();
            for &(li, c) in &places {
                let v = self.fresh_lattice_var();
                if let ast::Literal::Atom(a) = &mut out[li] {
                    let span = a.args[c].span();
                    a.args[c] = var(&v, span);
                    fresh.push(var(&v, span));
                }
            }
            let span = places
                .first()
                .and_then(|&(li, c)| match &out[li] {
                    ast::Literal::Atom(a) => Some(a.args[c].span()),
                    _ => None,
                })
                .unwrap_or_default();
            let mut acc: Option<Expr> = None;
            for v in fresh {
                acc = Some(match acc {
                    None => v,
                    Some(cur) => self.glb(&lattice, v, cur),
                });
            }
            let Some(acc) = acc else { continue };
            added.push(ast::Literal::Compare {
                op: CmpOp::Eq,
                lhs: var(&name, span),
                rhs: acc,
                span,
            });
            let bottom = self.bottom(&lattice, span);
            added.push(ast::Literal::Compare {
                op: CmpOp::Ne,
                lhs: var(&name, span),
                rhs: bottom,
                span,
            });
        }
        out.extend(added);
        Some(out)
    }

    fn fresh_lattice_var(&mut self) -> String {
        self.lattice_fresh += 1;
        format!("$lattice{}", self.lattice_fresh)
    }

    /// `GLB(a, b)` of lattice `name` (which has one).
    fn glb(&self, name: &str, a: Expr, b: Expr) -> Expr {
        match self.lattices.get(name).and_then(|d| d.glb.as_ref()) {
            Some(g) => fill(g, &mut vec![a, b]),
            None => a,
        }
    }

    /// `BOTTOM` of lattice `name` (which has one), placed at `span`.
    fn bottom(&self, name: &str, span: Span) -> Expr {
        match self.lattices.get(name).and_then(|d| d.bottom.as_ref()) {
            Some(b) => b.clone(),
            None => Expr::Wildcard(span),
        }
    }
}

/// Renames `Var(a)` to `Var(0)` and `Var(b)` to `Var(1)`; false if `e` has another
/// variable.
fn renumber(e: &mut ir::Expr, a: usize, b: usize) -> bool {
    match e {
        ir::Expr::Var(v) => {
            if *v == a {
                *v = 0;
            } else if *v == b {
                *v = 1;
            } else {
                return false;
            }
            true
        }
        ir::Expr::Const(_) => true,
        ir::Expr::Unary { arg, .. } => renumber(arg, a, b),
        ir::Expr::Binary { lhs, rhs, .. } => renumber(lhs, a, b) && renumber(rhs, a, b),
        ir::Expr::Functor { args, .. } => args.iter_mut().all(|x| renumber(x, a, b)),
    }
}
