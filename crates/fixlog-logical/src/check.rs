//! The checker: AST to the logical IR ([`crate::ir`]).
//!
//! It resolves names and types, expands multi-head rules and `;` disjunctions, desugars
//! expression arguments of atoms and aggregates nested in expressions into fresh `$`
//! variables, checks range restriction, infers the type of every variable and operator,
//! folds constants, and finally stratifies ([`crate::stratify`]).
//!
//! Each rule goes through three passes over a small "lowered" form (`LLit`/`LExpr`: the
//! AST with variables resolved to [`VarId`]s and the desugaring done, but no types yet):
//!
//! 1. lowering, which also decides variable scopes as Soufflé does: a variable inside an
//!    aggregate body is the same as an outer variable of that name (it is *injected*, or
//!    correlated) only if the enclosing scope grounds that name without the aggregate's
//!    own result; the names of the aggregated expression are always local; every other
//!    name is local to the aggregate, so two sibling aggregates may reuse a local name
//!    (see `RuleCx::aggregate_scopes`);
//! 2. range restriction, on the lowered form because it still knows where every variable
//!    occurrence is in the text, by a linear-time fixpoint (`ground`) in which an
//!    aggregate binds its result only once its injected variables are bound (aggregates
//!    that need each other are reported);
//! 3. typing: atom columns fix variable types; then types flow through equalities,
//!    operators, functors and aggregates to a fixpoint; what is left defaults to
//!    `number`; the final emission pass checks every use against those types and reports
//!    mismatches.
//!
//! Errors are collected, not thrown: a bad literal drops its rule, the other rules are
//! still checked, and everything found is reported together.

use crate::ground::Grounding;
use crate::ir::{self, ColType, RelId, Value, VarId};
use crate::stratify::stratify;
use crate::symbols::SymbolTable;
use crate::value;
use fixlog_syntax::ast;
use fixlog_syntax::{Diagnostic, Diagnostics, SourceMap, Span};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Most rules a single clause may expand into (through `;` and multiple heads) beyond
/// one per literal of its body: a flat disjunction of 10,000 alternatives is 10,000
/// rules, but `(a;b), (c;d), ...` multiplies.
const MAX_EXPANSION: usize = 4096;

/// Height of the expressions a rule's lowering keeps; higher operands are bound to
/// fresh variables (see `RuleCx::bounded`).
const MAX_EXPR_DEPTH: usize = 32;

/// `ast` to `ir` binary operator.
fn bin_op(op: ast::BinOp) -> ir::BinOp {
    match op {
        ast::BinOp::Add => ir::BinOp::Add,
        ast::BinOp::Sub => ir::BinOp::Sub,
        ast::BinOp::Mul => ir::BinOp::Mul,
        ast::BinOp::Div => ir::BinOp::Div,
        ast::BinOp::Rem => ir::BinOp::Rem,
        ast::BinOp::Pow => ir::BinOp::Pow,
        ast::BinOp::BAnd => ir::BinOp::BAnd,
        ast::BinOp::BOr => ir::BinOp::BOr,
        ast::BinOp::BXor => ir::BinOp::BXor,
        ast::BinOp::BShl => ir::BinOp::BShl,
        ast::BinOp::BShr => ir::BinOp::BShr,
        ast::BinOp::LAnd => ir::BinOp::LAnd,
        ast::BinOp::LOr => ir::BinOp::LOr,
    }
}

/// Check a parsed program and produce the stratified logical IR.
pub fn check(program: &ast::Program, sources: &SourceMap) -> Result<ir::Program, Diagnostics> {
    // Components are instantiated first, into plain items (see `crate::components`).
    let expanded;
    let program = if crate::components::has_components(program) {
        expanded = crate::components::expand(program, sources).map_err(finish_errors)?;
        &expanded
    } else {
        program
    };
    let mut ck = Checker {
        sources,
        errors: Vec::new(),
        type_decls: HashMap::new(),
        type_state: HashMap::new(),
        relations: Vec::new(),
        rel_ids: HashMap::new(),
        symbols: SymbolTable::new(),
        facts: Vec::new(),
        rules: Vec::new(),
        warnings: Vec::new(),
    };
    ck.run(program);
    if !ck.errors.is_empty() {
        return Err(finish_errors(ck.errors));
    }
    let strata = stratify(&ck.relations, &ck.rules).map_err(|e| finish_errors(e.0))?;
    let warnings = finish_errors(ck.warnings).0;
    Ok(ir::Program {
        relations: ck.relations,
        facts: ck.facts,
        rules: ck.rules,
        strata,
        symbols: ck.symbols,
        warnings,
    })
}

/// Sort by position and drop duplicates (a clause expanded into several rules reports a
/// problem of its shared part once per rule).
fn finish_errors(errors: Vec<Diagnostic>) -> Diagnostics {
    let mut seen = HashSet::new();
    let mut out: Vec<Diagnostic> = Vec::new();
    for d in errors {
        let key = (d.message.clone(), d.span);
        if seen.insert(key) {
            out.push(d);
        }
    }
    out.sort_by_key(|d| d.span.map(|s| (s.file, s.start)));
    Diagnostics(out)
}

/// The type of an expression of `rule`, if it has one of its own (a bare constant has
/// none: its type is the context's). The argument of a conversion functor (`to_string`,
/// `to_float`, ...) is never a bare constant, so its type is always known from this.
pub fn expr_type(rule: &ir::Rule, e: &ir::Expr) -> Option<ColType> {
    match e {
        ir::Expr::Var(v) => rule.vars.get(*v).map(|v| v.ty),
        ir::Expr::Const(_) => None,
        ir::Expr::Unary { ty, .. } | ir::Expr::Binary { ty, .. } => Some(*ty),
        ir::Expr::Functor { func, .. } => Some(functor_result(*func)),
    }
}

fn functor_result(f: ir::Functor) -> ColType {
    match f {
        ir::Functor::Cat | ir::Functor::Substr | ir::Functor::ToString => ColType::Symbol,
        ir::Functor::Strlen | ir::Functor::Ord | ir::Functor::ToNumber | ir::Functor::ToInteger => {
            ColType::Number
        }
        ir::Functor::ToUnsigned => ColType::Unsigned,
        ir::Functor::ToFloat => ColType::Float,
        ir::Functor::Convert(_, to) => to,
    }
}

/// The name of a base type as written in programs.
pub fn type_name(t: ColType) -> &'static str {
    match t {
        ColType::Number => "number",
        ColType::Unsigned => "unsigned",
        ColType::Float => "float",
        ColType::Symbol => "symbol",
    }
}

/// The closest of `candidates` to `name`, if it is close enough to be a likely typo.
pub fn suggest<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (levenshtein(name, c), c))
        .filter(|(d, c)| *d <= limit && *d < name.chars().count() && *d < c.chars().count())
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

enum TypeState {
    Resolving,
    Done(Option<ColType>),
}

struct Checker<'a> {
    sources: &'a SourceMap,
    errors: Vec<Diagnostic>,
    type_decls: HashMap<String, &'a ast::TypeDecl>,
    type_state: HashMap<String, TypeState>,
    relations: Vec<ir::Relation>,
    rel_ids: HashMap<String, RelId>,
    symbols: SymbolTable,
    facts: Vec<ir::Fact>,
    rules: Vec<ir::Rule>,
    /// Soufflé's warnings (see [`ir::Program::warnings`]).
    warnings: Vec<Diagnostic>,
}

fn builtin_type(name: &str) -> Option<ColType> {
    Some(match name {
        "number" => ColType::Number,
        "unsigned" => ColType::Unsigned,
        "float" => ColType::Float,
        "symbol" => ColType::Symbol,
        _ => return None,
    })
}

const BUILTIN_FUNCTORS: &[&str] = &[
    "cat",
    "strlen",
    "substr",
    "ord",
    "to_number",
    "to_string",
    "to_unsigned",
    "to_float",
    "itou",
    "utoi",
    "itof",
    "ftoi",
    "utof",
    "ftou",
    "min",
    "max",
];

impl<'a> Checker<'a> {
    fn error(&mut self, d: Diagnostic) {
        self.errors.push(d);
    }

    fn run(&mut self, program: &'a ast::Program) {
        // Types first (they may be used before they are declared).
        for item in &program.items {
            if let ast::Item::Type(t) = item {
                if builtin_type(&t.name.name).is_some() {
                    self.error(Diagnostic::error(
                        format!(
                            "`{}` is a built-in type and cannot be redeclared",
                            t.name.name
                        ),
                        t.name.span,
                    ));
                } else if let Some(prev) = self.type_decls.get(&t.name.name) {
                    let loc = self.sources.location(prev.name.span);
                    self.error(
                        Diagnostic::error(
                            format!("type `{}` is declared more than once", t.name.name),
                            t.name.span,
                        )
                        .with_note(format!("first declared at {loc}")),
                    );
                } else {
                    self.type_decls.insert(t.name.name.clone(), t);
                }
            }
        }
        for item in &program.items {
            if let ast::Item::Type(t) = item {
                if self
                    .type_decls
                    .get(&t.name.name)
                    .is_some_and(|d| std::ptr::eq(*d, t))
                {
                    let name = t.name.clone();
                    self.resolve_type(&name);
                }
            }
        }
        // Then relations (also usable before their declaration).
        for item in &program.items {
            match item {
                ast::Item::Decl(d) => self.decl(d),
                ast::Item::Functor { span, .. } => self.error(Diagnostic::error(
                    "user-defined functors (`.functor`) are not supported",
                    *span,
                )),
                _ => {}
            }
        }
        let mut has_clauses: HashSet<&str> = HashSet::new();
        for item in &program.items {
            if let ast::Item::Clause(c) = item {
                has_clauses.extend(c.heads.iter().map(|h| h.name.name.as_str()));
            }
        }
        for item in &program.items {
            match item {
                ast::Item::Directive(d) => self.directive(d),
                ast::Item::Clause(c) => self.clause(c),
                ast::Item::Include { span, .. } => self.error(Diagnostic::error(
                    "`.include` was not resolved (parse with `parse_file` or `parse_str`)",
                    *span,
                )),
                _ => {}
            }
        }
        // Soufflé's warning for relations that nothing fills.
        for rel in &self.relations {
            if rel.inputs.is_empty() && !has_clauses.contains(rel.name.as_str()) {
                self.warnings.push(Diagnostic::error(
                    format!("no rules/facts defined for relation `{}`", rel.name),
                    rel.span,
                ));
            }
        }
    }

    fn resolve_type(&mut self, name: &ast::Ident) -> Option<ColType> {
        if let Some(t) = builtin_type(&name.name) {
            return Some(t);
        }
        match self.type_state.get(&name.name) {
            Some(TypeState::Done(t)) => return *t,
            Some(TypeState::Resolving) => {
                self.error(Diagnostic::error(
                    format!("type `{}` is defined in terms of itself", name.name),
                    name.span,
                ));
                return None;
            }
            None => {}
        }
        let Some(decl) = self.type_decls.get(&name.name).copied() else {
            let mut d = Diagnostic::error(format!("unknown type `{}`", name.name), name.span);
            let cands: Vec<&str> = ["number", "unsigned", "float", "symbol"]
                .into_iter()
                .chain(self.type_decls.keys().map(String::as_str))
                .collect();
            d = match suggest(&name.name, cands) {
                Some(s) => d.with_help(format!("did you mean `{s}`?")),
                None => d.with_help(
                    "use `number`, `unsigned`, `float`, `symbol` or a type declared with `.type`",
                ),
            };
            self.error(d);
            return None;
        };
        self.type_state
            .insert(name.name.clone(), TypeState::Resolving);
        let t = match &decl.def {
            ast::TypeDef::Subtype(base) => self.resolve_type(base),
            ast::TypeDef::Union(members) => {
                let mut found: Vec<(&ast::Ident, ColType)> = Vec::new();
                let mut failed = false;
                for m in members {
                    match self.resolve_type(m) {
                        Some(t) => found.push((m, t)),
                        None => failed = true,
                    }
                }
                if failed {
                    None
                } else if let Some(&(m2, t2)) = found.iter().find(|(_, t)| *t != found[0].1) {
                    let (m1, t1) = found[0];
                    self.error(Diagnostic::error(
                        format!(
                            "union type `{}` mixes incompatible types: `{}` is a `{}` but `{}` is a `{}`",
                            decl.name.name,
                            m1.name,
                            type_name(t1),
                            m2.name,
                            type_name(t2)
                        ),
                        decl.name.span,
                    ));
                    None
                } else {
                    found.first().map(|f| f.1)
                }
            }
            ast::TypeDef::Record(span) => {
                self.error(Diagnostic::error(
                    format!("record types are not supported (type `{}`)", decl.name.name),
                    *span,
                ));
                None
            }
            ast::TypeDef::Adt(span) => {
                self.error(Diagnostic::error(
                    format!(
                        "algebraic data types are not supported (type `{}`)",
                        decl.name.name
                    ),
                    *span,
                ));
                None
            }
        };
        self.type_state
            .insert(name.name.clone(), TypeState::Done(t));
        t
    }

    fn decl(&mut self, d: &ast::Decl) {
        if let Some(&prev) = self.rel_ids.get(&d.name.name) {
            let loc = self.sources.location(self.relations[prev].span);
            self.error(
                Diagnostic::error(
                    format!("relation `{}` is declared more than once", d.name.name),
                    d.name.span,
                )
                .with_note(format!("first declared at {loc}")),
            );
            return;
        }
        let mut columns = Vec::new();
        let mut seen: HashMap<&str, Span> = HashMap::new();
        for a in &d.attrs {
            if seen.insert(a.name.name.as_str(), a.name.span).is_some() {
                self.error(Diagnostic::error(
                    format!(
                        "attribute `{}` appears more than once in `{}`",
                        a.name.name, d.name.name
                    ),
                    a.name.span,
                ));
            }
            let ty = self.resolve_type(&a.ty).unwrap_or(ColType::Number);
            columns.push(ir::Column {
                name: a.name.name.clone(),
                ty,
                type_name: a.ty.name.clone(),
            });
        }
        let mut rel = ir::Relation {
            name: d.name.name.clone(),
            columns,
            span: d.span,
            inputs: Vec::new(),
            outputs: Vec::new(),
            printsize: false,
        };
        for q in &d.qualifiers {
            match q.name.as_str() {
                "eqrel" => self.error(Diagnostic::error(
                    "`eqrel` relations are not supported",
                    q.span,
                ).with_help("declare a plain relation and write the equivalence rules (reflexive, symmetric, transitive) explicitly")),
                "input" => rel.inputs.push(ir::IoDirective {
                    params: BTreeMap::new(),
                    span: q.span,
                }),
                "output" => rel.outputs.push(ir::IoDirective {
                    params: BTreeMap::new(),
                    span: q.span,
                }),
                "printsize" => rel.printsize = true,
                _ => {}
            }
        }
        self.rel_ids
            .insert(d.name.name.clone(), self.relations.len());
        self.relations.push(rel);
    }

    fn unknown_relation(&mut self, name: &ast::Ident, context: &str) {
        let mut d = Diagnostic::error(
            format!("unknown relation `{}`{context}", name.name),
            name.span,
        );
        let cands: Vec<&str> = self.relations.iter().map(|r| r.name.as_str()).collect();
        d = match suggest(&name.name, cands) {
            Some(s) => d.with_help(format!("did you mean `{s}`?")),
            None => d.with_help(format!("declare it with `.decl {}(...)`", name.name)),
        };
        self.error(d);
    }

    fn directive(&mut self, d: &ast::Directive) {
        for r in &d.relations {
            let Some(&id) = self.rel_ids.get(&r.name) else {
                self.unknown_relation(r, &format!(" in `{}`", d.kind.keyword()));
                continue;
            };
            let params: BTreeMap<String, String> = d
                .params
                .iter()
                .map(|(k, v)| (k.name.clone(), v.clone()))
                .collect();
            let io = ir::IoDirective {
                params,
                span: d.span,
            };
            let rel = &mut self.relations[id];
            match d.kind {
                ast::DirectiveKind::Input => rel.inputs.push(io),
                ast::DirectiveKind::Output => rel.outputs.push(io),
                ast::DirectiveKind::PrintSize => rel.printsize = true,
                ast::DirectiveKind::LimitSize => {
                    self.error(Diagnostic::error("`.limitsize` is not supported", d.span));
                    return;
                }
            }
        }
    }

    /// The relation of an atom, checking that it exists and that the arity matches.
    fn resolve_atom(&mut self, a: &ast::Atom) -> Option<RelId> {
        let Some(&id) = self.rel_ids.get(&a.name.name) else {
            self.unknown_relation(&a.name, "");
            return None;
        };
        let arity = self.relations[id].arity();
        if arity != a.args.len() {
            self.error(Diagnostic::error(
                format!(
                    "`{}` has {} attribute{} but {} argument{} {} given",
                    a.name.name,
                    arity,
                    if arity == 1 { "" } else { "s" },
                    a.args.len(),
                    if a.args.len() == 1 { "" } else { "s" },
                    if a.args.len() == 1 { "was" } else { "were" },
                ),
                a.span,
            ));
            return None;
        }
        Some(id)
    }

    fn clause(&mut self, c: &ast::Clause) {
        let Some(body) = &c.body else {
            for head in &c.heads {
                let span = if c.heads.len() == 1 {
                    c.span
                } else {
                    head.span
                };
                self.fact(head, span);
            }
            return;
        };
        // The expansion may be as large as the clause (a flat disjunction), not more
        // than a few times that: `(a;b), (c;d), ...` multiplies.
        let mut literals = Vec::new();
        body_literals(body, &mut literals);
        let budget = MAX_EXPANSION.max(4 * (literals.len() + c.heads.len()));
        let conjuncts = match dnf(body, budget) {
            Ok(v) => v,
            Err(()) => {
                self.error(
                    Diagnostic::error(
                        format!("this body expands into more than {budget} alternatives"),
                        body.span(),
                    )
                    .with_help("split the rule, or move the disjunctions into separate relations"),
                );
                return;
            }
        };
        if conjuncts.len().saturating_mul(c.heads.len()) > budget {
            self.error(Diagnostic::error(
                format!("this clause expands into more than {budget} rules"),
                c.span,
            ));
            return;
        }
        // Soufflé's warning for variables that occur once, per rule the clause expands
        // into (each head with each alternative of the body), aggregates included;
        // names starting with `_` are exempt.
        for head in &c.heads {
            for conj in &conjuncts {
                let mut occurrences = Vec::new();
                let exprs = head
                    .args
                    .iter()
                    .chain(conj.iter().flat_map(|l| literal_exprs(l)));
                all_var_occurrences(exprs, &mut occurrences);
                let mut count: HashMap<&str, (usize, Span)> = HashMap::new();
                for (name, span) in occurrences {
                    count.entry(name).or_insert((0, span)).0 += 1;
                }
                for (name, (n, span)) in count {
                    if n == 1 && !name.starts_with('_') {
                        self.warnings.push(Diagnostic::error(
                            format!("variable `{name}` only occurs once"),
                            span,
                        ));
                    }
                }
            }
        }
        for head in &c.heads {
            let Some(rel) = self.resolve_atom(head) else {
                continue;
            };
            for conj in &conjuncts {
                let before = self.errors.len();
                let mut cx = RuleCx::new(self, false);
                let rule = cx.rule(head, rel, conj, c.span);
                if let Some(rule) = rule {
                    if self.errors.len() == before {
                        self.rules.push(rule);
                    }
                }
            }
        }
    }

    fn fact(&mut self, head: &ast::Atom, span: Span) {
        let Some(rel) = self.resolve_atom(head) else {
            return;
        };
        let types = self.relations[rel].types();
        let mut cx = RuleCx::new(self, true);
        let mut values = Vec::new();
        let scope = HashMap::new();
        let mut sink = Vec::new();
        for (arg, ty) in head.args.iter().zip(types) {
            if let ast::Expr::Wildcard(s) = arg {
                cx.ck.error(Diagnostic::error(
                    "`_` in a fact: facts may only contain constants",
                    *s,
                ));
                continue;
            }
            let Some(le) = cx.lower_expr(arg, &scope, &mut sink) else {
                continue;
            };
            let Some((e, _)) = cx.emit_expr(&le, Some(ty)) else {
                continue;
            };
            match e {
                ir::Expr::Const(v) => values.push(v),
                _ => cx.ck.error(Diagnostic::error(
                    "this expression cannot be evaluated to a constant (division by zero, or an out-of-range argument?)",
                    arg.span(),
                )),
            }
        }
        if values.len() == head.args.len() {
            self.facts.push(ir::Fact { rel, values, span });
        }
    }
}

/// Disjunctive normal form of a body: a list of conjunctions. `Err` if there would be
/// more than `limit`.
fn dnf(b: &ast::Body, limit: usize) -> Result<Vec<Vec<&ast::Literal>>, ()> {
    match b {
        ast::Body::Literal(l) => Ok(vec![vec![l]]),
        ast::Body::Or(parts, _) => {
            let mut out = Vec::new();
            for p in parts {
                out.extend(dnf(p, limit)?);
                if out.len() > limit {
                    return Err(());
                }
            }
            Ok(out)
        }
        ast::Body::And(parts, _) => {
            let mut acc: Vec<Vec<&ast::Literal>> = vec![Vec::new()];
            for p in parts {
                let alts = dnf(p, limit)?;
                if acc.len().saturating_mul(alts.len()) > limit {
                    return Err(());
                }
                if let [alt] = &alts[..] {
                    // No alternatives: extend in place (a long conjunction stays linear).
                    acc.iter_mut().for_each(|a| a.extend(alt.iter().copied()));
                    continue;
                }
                let mut next = Vec::with_capacity(acc.len() * alts.len());
                for a in &acc {
                    for alt in &alts {
                        let mut c = a.clone();
                        c.extend(alt.iter().copied());
                        next.push(c);
                    }
                }
                acc = next;
            }
            Ok(acc)
        }
    }
}

// ---------------------------------------------------------------------------------------
// The lowered form of one rule.

#[derive(Clone, Copy, Debug, PartialEq)]
enum Builtin {
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
}

impl Builtin {
    fn result(self) -> ColType {
        match self {
            Builtin::Cat | Builtin::Substr | Builtin::ToString => ColType::Symbol,
            Builtin::Strlen | Builtin::Ord | Builtin::ToNumber => ColType::Number,
            Builtin::ToUnsigned => ColType::Unsigned,
            Builtin::ToFloat => ColType::Float,
            Builtin::Fixed(_, to) => to,
        }
    }

    /// The type each argument must have, when fixed.
    fn arg_type(self, i: usize) -> Option<ColType> {
        match self {
            Builtin::Cat | Builtin::Strlen | Builtin::Ord => Some(ColType::Symbol),
            Builtin::Substr => Some(if i == 0 {
                ColType::Symbol
            } else {
                ColType::Number
            }),
            Builtin::Fixed(from, _) => Some(from),
            Builtin::ToNumber | Builtin::ToString | Builtin::ToUnsigned | Builtin::ToFloat => None,
        }
    }
}

#[derive(Clone, Debug)]
enum LExpr {
    Var(VarId, Span),
    /// An integer literal, already negated if written `-n`.
    Int(i128, Span),
    Unsigned(u64, Span),
    Float(f64, Span),
    Str(String, Span),
    Unary(ir::UnaryOp, Box<LExpr>, Span),
    Binary(ir::BinOp, Box<LExpr>, Box<LExpr>, Span),
    Call(Builtin, &'static str, Vec<LExpr>, Span),
}

impl LExpr {
    fn span(&self) -> Span {
        match self {
            LExpr::Var(_, s)
            | LExpr::Int(_, s)
            | LExpr::Unsigned(_, s)
            | LExpr::Float(_, s)
            | LExpr::Str(_, s)
            | LExpr::Unary(_, _, s)
            | LExpr::Binary(_, _, _, s)
            | LExpr::Call(_, _, _, s) => *s,
        }
    }

    /// Every variable occurrence, left to right (iterative: constant chains in facts and
    /// atom arguments are not split and may be deep).
    fn vars(&self, out: &mut Vec<(VarId, Span)>) {
        let mut stack = vec![self];
        while let Some(e) = stack.pop() {
            match e {
                LExpr::Var(v, s) => out.push((*v, *s)),
                LExpr::Unary(_, a, _) => stack.push(a),
                LExpr::Binary(_, a, b, _) => {
                    stack.push(b);
                    stack.push(a);
                }
                LExpr::Call(_, _, args, _) => stack.extend(args.iter().rev()),
                _ => {}
            }
        }
    }

    /// The height of the tree (a leaf is 1).
    fn depth(&self) -> usize {
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
                LExpr::Call(_, _, args, _) => stack.extend(args.iter().map(|a| (a, d + 1))),
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
                LExpr::Call(_, _, args, _) => out.append(args),
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
enum LTerm {
    Var(VarId, Span),
    Wild,
    Const(LExpr),
}

#[derive(Clone, Debug)]
enum LLit {
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
    False(Span),
}

impl LLit {
    /// Every variable occurrence, including those in nested aggregates.
    fn vars(&self, out: &mut Vec<(VarId, Span)>) {
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

struct VarData {
    name: String,
    ty: Option<ColType>,
    /// Where the type was decided and why (for mismatch messages).
    origin: Option<(Span, String)>,
}

struct RuleCx<'c, 'a> {
    ck: &'c mut Checker<'a>,
    vars: Vec<VarData>,
    fresh: usize,
    /// Checking a fact: variables and aggregates are errors; all functors are folded.
    fact_mode: bool,
    /// Inside an atom argument that must fold to a constant (no splitting there).
    const_context: usize,
    /// For each aggregate of the scopes lowered so far (by the address of its AST
    /// node), the names that refer to the enclosing scope (see
    /// [`RuleCx::aggregate_scopes`]).
    injected: HashMap<usize, HashSet<String>>,
}

/// The variable names of an expression left to right (not those inside aggregates) and
/// the aggregates it contains (not those nested in aggregate bodies). Iterative: a flat
/// sum of 100,000 terms is a chain that deep.
fn expr_parts<'e>(
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
            ast::Expr::Call { args, .. } => stack.extend(args.iter().rev()),
            ast::Expr::Aggregate { .. } => aggs.push(e),
            _ => {}
        }
    }
}

/// Every variable occurrence in `exprs`, those inside aggregates (their bodies and
/// aggregated expressions) included, in no particular order.
fn all_var_occurrences<'e>(
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
fn literal_exprs(l: &ast::Literal) -> Vec<&ast::Expr> {
    match l {
        ast::Literal::Atom(a) | ast::Literal::Negation { atom: a, .. } => a.args.iter().collect(),
        ast::Literal::Compare { lhs, rhs, .. } => vec![lhs, rhs],
        ast::Literal::Bool(..) => Vec::new(),
    }
}

fn collect_direct_expr(e: &ast::Expr, out: &mut Vec<(String, Span)>) {
    let mut names = Vec::new();
    expr_parts(e, &mut names, &mut Vec::new());
    out.extend(names.into_iter().map(|(n, s)| (n.to_string(), s)));
}

fn collect_direct_lit(l: &ast::Literal, out: &mut Vec<(String, Span)>) {
    for e in literal_exprs(l) {
        collect_direct_expr(e, out);
    }
}

/// Every literal of a body, whatever its `,`/`;` structure.
fn body_literals<'b>(b: &'b ast::Body, out: &mut Vec<&'b ast::Literal>) {
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
fn aggregate_names(a: &ast::Expr) -> (HashSet<&str>, HashSet<&str>) {
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

/// Whether an expression is made of constants only (iterative, like [`expr_parts`]).
fn is_const(e: &ast::Expr) -> bool {
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
            ast::Expr::Var(_) | ast::Expr::Wildcard(_) | ast::Expr::Aggregate { .. } => {
                return false
            }
        }
    }
    true
}

type Scope = HashMap<String, VarId>;

/// The grounding problem of one scope, by name (see [`RuleCx::aggregate_scopes`]).
struct ScopeScan<'x> {
    g: Grounding,
    ids: HashMap<&'x str, usize>,
    /// The scope's aggregates and their items (grounded when their value counts).
    aggs: Vec<(&'x ast::Expr, usize)>,
}

impl<'x> ScopeScan<'x> {
    fn item(&mut self, name: &'x str) -> usize {
        let g = &mut self.g;
        *self.ids.entry(name).or_insert_with(|| g.add_item())
    }

    /// The items an expression needs to be grounded: its names and its aggregates
    /// (which get an item each here).
    fn needs(&mut self, e: &'x ast::Expr) -> Vec<usize> {
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
    fn new(ck: &'c mut Checker<'a>, fact_mode: bool) -> Self {
        RuleCx {
            ck,
            vars: Vec::new(),
            fresh: 0,
            fact_mode,
            const_context: 0,
            injected: HashMap::new(),
        }
    }

    fn new_var(&mut self, name: String) -> VarId {
        self.vars.push(VarData {
            name,
            ty: None,
            origin: None,
        });
        self.vars.len() - 1
    }

    fn fresh_var(&mut self, prefix: &str) -> VarId {
        self.fresh += 1;
        let name = format!("${prefix}{}", self.fresh);
        self.new_var(name)
    }

    fn error(&mut self, d: Diagnostic) {
        self.ck.error(d);
    }

    fn rule(
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
        let (body, head_args) = self.lower_scope(conj, &head_exprs, &HashMap::new());
        if self.ck.errors.len() != before {
            return None;
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
        })
    }

    // --- lowering -----------------------------------------------------------------

    fn lower_scope(
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
    fn aggregate_scopes<'x>(
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

    fn lower_lit(&mut self, l: &ast::Literal, scope: &Scope, out: &mut Vec<LLit>) {
        match l {
            ast::Literal::Atom(a) => self.lower_atom(a, false, a.span, scope, out),
            ast::Literal::Negation { atom, span } => self.lower_atom(atom, true, *span, scope, out),
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

    fn lower_atom(
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

    fn lower_expr(&mut self, e: &ast::Expr, scope: &Scope, out: &mut Vec<LLit>) -> Option<LExpr> {
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
                if *user {
                    self.error(Diagnostic::error(
                        format!("user-defined functors (`@{}`) are not supported", name.name),
                        *span,
                    ));
                    return None;
                }
                let lowered: Vec<Option<LExpr>> = args
                    .iter()
                    .map(|a| self.lower_expr(a, scope, out))
                    .collect();
                let args: Vec<LExpr> = lowered.into_iter().collect::<Option<Vec<_>>>()?;
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
    fn splitting(&self) -> bool {
        !self.fact_mode && self.const_context == 0
    }

    fn depth_if_split(&self, e: &LExpr) -> usize {
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
    fn bounded(
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

    fn lower_call(
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

    // --- range restriction ------------------------------------------------------------

    /// Check that every variable that must be bound is. `must_bind` are the head
    /// arguments (`in_agg == false`) or the aggregated expression (`in_agg == true`).
    ///
    /// Positive atoms bind their variables; `v = e` binds `v` once `e`'s variables are
    /// bound; an aggregate binds its result once its correlated (injected) variables are
    /// bound. Variables that would be bound if every aggregate's result were, but are
    /// not, depend on an aggregate that depends on them: that is reported at the
    /// aggregate, not at every variable it leaves unbound. Fresh `$` variables are never
    /// reported: one of the variables they are computed from is.
    fn range_check(
        &mut self,
        lits: &[LLit],
        must_bind: &[LExpr],
        outer_bound: &HashSet<VarId>,
        in_agg: bool,
    ) {
        let mut g = Grounding::new(self.vars.len());
        for &v in outer_bound {
            g.fact(v);
        }
        let mut agg_outs = Vec::new();
        // Per aggregate literal: its correlated variables (with a span each).
        let mut correlated: Vec<Vec<(VarId, Span)>> = Vec::new();
        for l in lits {
            match l {
                LLit::Atom {
                    args,
                    negated: false,
                    ..
                } => {
                    for a in args {
                        if let LTerm::Var(v, _) = a {
                            g.fact(*v);
                        }
                    }
                }
                LLit::Cmp {
                    op: ir::CmpOp::Eq,
                    lhs,
                    rhs,
                    ..
                } => {
                    for (a, b) in [(lhs, rhs), (rhs, lhs)] {
                        if let LExpr::Var(v, _) = a {
                            let mut vs = Vec::new();
                            b.vars(&mut vs);
                            g.rule(*v, vs.into_iter().map(|x| x.0).collect());
                        }
                    }
                }
                LLit::Agg {
                    out,
                    arg,
                    body,
                    outer,
                    ..
                } => {
                    let mut vs = Vec::new();
                    if let Some(a) = arg {
                        a.vars(&mut vs);
                    }
                    for b in body {
                        b.vars(&mut vs);
                    }
                    vs.retain(|(v, _)| outer.contains(v));
                    g.rule(*out, vs.iter().map(|x| x.0).collect());
                    agg_outs.push(*out);
                    correlated.push(vs);
                }
                _ => {}
            }
        }
        let grounded = g.solve(&[]);
        let bound = |v: &VarId| grounded.get(*v).copied().unwrap_or(false);
        let if_aggs = if agg_outs.is_empty() {
            grounded.clone()
        } else {
            g.solve(&agg_outs)
        };
        // Not bound, and not because of a circular dependency through an aggregate
        // (reported at the aggregate).
        let unbound = |v: &VarId| !bound(v) && !if_aggs.get(*v).copied().unwrap_or(false);
        let mut reported: HashSet<VarId> = HashSet::new();
        for e in must_bind {
            let mut vs = Vec::new();
            e.vars(&mut vs);
            for (v, s) in vs {
                if unbound(&v) && !self.is_fresh(v) && reported.insert(v) {
                    let name = self.vars[v].name.clone();
                    let d = if in_agg {
                        Diagnostic::error(
                            format!("variable `{name}` in the aggregated expression is not bound in the aggregate's body"),
                            s,
                        )
                    } else {
                        Diagnostic::error(
                            format!("variable `{name}` in the head is not bound in the body"),
                            s,
                        )
                        .with_help(format!(
                            "bind it with a positive atom, or with an equality `{name} = ...` over bound variables"
                        ))
                    };
                    self.error(d);
                }
            }
        }
        // Variables that occur somewhere other than in negated atoms.
        let mut non_negated: HashSet<VarId> = HashSet::new();
        for e in must_bind {
            let mut vs = Vec::new();
            e.vars(&mut vs);
            non_negated.extend(vs.into_iter().map(|x| x.0));
        }
        for l in lits {
            if !matches!(l, LLit::Atom { negated: true, .. }) {
                let mut vs = Vec::new();
                l.vars(&mut vs);
                non_negated.extend(vs.into_iter().map(|x| x.0));
            }
        }
        let mut aggs_seen = 0;
        for l in lits {
            match l {
                LLit::Atom {
                    args,
                    negated: true,
                    ..
                } => {
                    for a in args {
                        if let LTerm::Var(v, s) = a {
                            if unbound(v) && !self.is_fresh(*v) && reported.insert(*v) {
                                let name = self.vars[*v].name.clone();
                                let d = if non_negated.contains(v) {
                                    self.unbound(*v, *s)
                                } else {
                                    Diagnostic::error(
                                        format!("variable `{name}` only occurs in a negated atom, so it is never bound"),
                                        *s,
                                    )
                                    .with_help(format!(
                                        "replace `{name}` by `_` if any value will do, or bind it with a positive atom"
                                    ))
                                };
                                self.error(d);
                            }
                        }
                    }
                }
                LLit::Cmp { .. } | LLit::Pred { .. } => {
                    let mut vs = Vec::new();
                    l.vars(&mut vs);
                    for (v, s) in vs {
                        if unbound(&v) && !self.is_fresh(v) && reported.insert(v) {
                            let d = self.unbound(v, s);
                            self.error(d);
                        }
                    }
                }
                LLit::Agg {
                    arg, body, span, ..
                } => {
                    let vars = correlated.get(aggs_seen).cloned().unwrap_or_default();
                    aggs_seen += 1;
                    let mut circular = false;
                    for &(v, s) in &vars {
                        if bound(&v) || !reported.insert(v) {
                            continue;
                        }
                        let name = self.vars[v].name.clone();
                        if unbound(&v) {
                            self.error(
                                Diagnostic::error(
                                    format!("variable `{name}` is used inside an aggregate but is not bound outside it"),
                                    s,
                                )
                                .with_help(format!(
                                    "bind `{name}` with a positive atom outside the aggregate, or rename it to make it local to the aggregate"
                                )),
                            );
                        } else if !circular {
                            circular = true;
                            self.error(
                                Diagnostic::error(
                                    format!("circular dependency: this aggregate needs `{name}`, which is bound only through an aggregate's result that needs this one"),
                                    *span,
                                )
                                .with_help(format!(
                                    "bind `{name}` with a positive atom outside the aggregates, or rename it inside this aggregate to make it local"
                                )),
                            );
                        }
                    }
                    let outer: HashSet<VarId> = vars.iter().map(|x| x.0).collect();
                    let must: Vec<LExpr> = arg.iter().cloned().collect();
                    self.range_check(body, &must, &outer, true);
                }
                LLit::Atom { .. } | LLit::False(_) => {}
            }
        }
    }

    /// A variable the desugaring introduced (`$count1`, `$2`, ...), not one of the text.
    fn is_fresh(&self, v: VarId) -> bool {
        self.vars.get(v).is_some_and(|d| d.name.starts_with('$'))
    }

    fn unbound(&self, v: VarId, s: Span) -> Diagnostic {
        let name = &self.vars[v].name;
        Diagnostic::error(format!("variable `{name}` is not bound"), s).with_help(format!(
            "`{name}` must occur in a positive atom of the body, or be equated to an expression over bound variables"
        ))
    }

    // --- typing -------------------------------------------------------------------------

    fn describe_origin(&self, v: VarId) -> String {
        match &self.vars[v].origin {
            Some((s, why)) => format!("{} ({why})", self.ck.sources.location(*s)),
            None => "elsewhere".to_string(),
        }
    }

    /// Give variables the types of the atom columns they occur in.
    fn seed(&mut self, lits: &[LLit]) {
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
                                        type_name(cty),
                                        type_name(t),
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
    fn infer(&self, e: &LExpr) -> Option<ColType> {
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
        }
    }

    /// Push an expected type into an expression; returns whether a variable got a type.
    fn propagate(&mut self, e: &LExpr, expected: Option<ColType>) -> bool {
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
                    changed |= self.propagate(a, bi.arg_type(i));
                }
                changed
            }
            _ => false,
        }
    }

    fn propagate_lits(&mut self, lits: &[LLit]) -> bool {
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

    fn mismatch(&mut self, span: Span, what: &str, found: ColType, expected: ColType) {
        self.error(Diagnostic::error(
            format!(
                "type mismatch: {what} is a `{}` but a `{}` is expected here",
                type_name(found),
                type_name(expected)
            ),
            span,
        ));
    }

    fn encode_int(&mut self, v: i128, ty: ColType, span: Span) -> Option<Value> {
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
    fn emit_expr(&mut self, e: &LExpr, expected: Option<ColType>) -> Option<(ir::Expr, ColType)> {
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
            LExpr::Call(bi, name, args, s) => {
                let (func, arg_tys): (Option<ir::Functor>, Vec<ColType>) = match bi {
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
                    | Builtin::Fixed(..) => {
                        let target = bi.result();
                        let at = match bi {
                            Builtin::Fixed(from, _) => *from,
                            _ => args
                                .first()
                                .and_then(|a| self.infer(a))
                                .unwrap_or(ColType::Number),
                        };
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
                    self.mismatch(*s, &format!("the result of `{name}`"), result, x);
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
    fn emit_chain(&mut self, e: &LExpr, expected: Option<ColType>) -> Option<(ir::Expr, ColType)> {
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

    fn emit_lits(&mut self, lits: &[LLit]) -> Vec<ir::Literal> {
        let mut out = Vec::new();
        for l in lits {
            if let Some(x) = self.emit_lit(l) {
                out.push(x);
            }
        }
        out
    }

    fn emit_lit(&mut self, l: &LLit) -> Option<ir::Literal> {
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
                        self.error(Diagnostic::error(
                            format!("cannot compare a `{}` with a `{}`", type_name(a), type_name(b)),
                            *span,
                        ).with_help("convert one side, e.g. with `to_number`, `to_string` or `to_float`"));
                        return None;
                    }
                }
                let t = li.or(ri).unwrap_or(ColType::Number);
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
                        if t == ColType::Symbol {
                            let kw = match f {
                                ir::AggFunc::Sum => "sum",
                                ir::AggFunc::Min => "min",
                                ir::AggFunc::Max => "max",
                                _ => "mean",
                            };
                            self.error(Diagnostic::error(
                                format!("`{kw}` needs a numeric expression, found a `symbol`"),
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
fn conversion(from: ColType, to: ColType) -> Option<ir::Functor> {
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

fn binop_name(op: ir::BinOp) -> &'static str {
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
