//! The checker: AST to the logical IR ([`crate::ir`]).
//!
//! It resolves names and types, expands multi-head rules and `;` disjunctions, desugars
//! expression arguments of atoms and aggregates nested in expressions into fresh `$`
//! variables, checks range restriction, infers the type of every variable and operator,
//! folds constants, and finally stratifies ([`crate::stratify`]).
//!
//! Each rule goes through three passes (files `lower`, `range`, `typing`; the form and
//! the rule context they share are in `lowered`) over a small "lowered" form (`LLit`/`LExpr`: the
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

mod debug_delta;
mod lattice;
mod lower;
mod lowered;
mod range;
mod records;
mod relation_kinds;
mod typing;
mod witness;

use crate::ground::Grounding;
use crate::ir::{self, ColType, RelId, Value, VarId};
use crate::stratify::stratify_autoinc;
use crate::symbols::SymbolTable;
use crate::value;
use fixlog_syntax::ast;
use fixlog_syntax::{Diagnostic, Diagnostics, SourceMap, Span};
use lowered::*;
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

/// Options of the front end that change the program it produces.
#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    /// `--magic-transform`: relation names separated by commas, or `*`; given, it
    /// replaces the program's `.pragma "magic-transform"` (as in Soufflé, the command
    /// line wins). See [`crate::magic`].
    pub magic_transform: Option<String>,
    /// `--magic-transform-exclude`: relations never transformed.
    pub magic_transform_exclude: Option<String>,
}

/// Check a parsed program and produce the stratified logical IR.
pub fn check(program: &ast::Program, sources: &SourceMap) -> Result<ir::Program, Diagnostics> {
    check_with(program, sources, &CheckOptions::default())
}

/// [`check`] with [`CheckOptions`].
pub fn check_with(
    program: &ast::Program,
    sources: &SourceMap,
    options: &CheckOptions,
) -> Result<ir::Program, Diagnostics> {
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
        record_types: Vec::new(),
        branches: HashMap::new(),
        facts: Vec::new(),
        rules: Vec::new(),
        subsumptions: Vec::new(),
        warnings: Vec::new(),
        inline: HashSet::new(),
        magic_qualifier: HashMap::new(),
        autoincs: Vec::new(),
        iteration: None,
        lattices: HashMap::new(),
        lattice_cols: HashMap::new(),
        lattice_fresh: 0,
        functors: Vec::new(),
        functor_ids: HashMap::new(),
        debug_pending: Vec::new(),
        debug_deltas: Vec::new(),
    };
    // The parser's warnings (the deprecated `$`) come first; all are sorted at the end.
    ck.warnings.extend(program.warnings.iter().cloned());
    ck.run(program);
    if !ck.errors.is_empty() {
        return Err(finish_errors(ck.errors));
    }
    // `inline` relations are unfolded into the rules that use them (`crate::inline`).
    let inline: Vec<bool> = ck
        .relations
        .iter()
        .map(|r| ck.inline.contains(&r.name))
        .collect();
    // An inline relation has no loop of its own for `.limitsize` to stop.
    for (rel, _) in ck.relations.iter().zip(&inline).filter(|(_, &i)| i) {
        if let Some(limit) = rel.limitsize {
            ck.warnings.push(
                Diagnostic::error(
                    format!(
                        "`.limitsize` of inline relation `{}` has no effect",
                        rel.name
                    ),
                    limit.span,
                )
                .with_note("an inline relation is unfolded into the rules that use it"),
            );
        }
    }
    for a in &ck.autoincs {
        if inline[a.target] {
            ck.errors.push(Diagnostic::error(
                format!(
                    "inline relation `{}` cannot have `autoinc()` in a head",
                    ck.relations[a.target].name
                ),
                a.span,
            ));
        }
    }
    if !ck.errors.is_empty() {
        return Err(finish_errors(ck.errors));
    }
    crate::inline::inline(
        crate::inline::Parts {
            relations: &mut ck.relations,
            facts: &mut ck.facts,
            rules: &mut ck.rules,
            subsumptions: &mut ck.subsumptions,
        },
        &inline,
        sources,
    )
    .map_err(finish_errors)?;
    // The relations after the inline ones moved down.
    let moved = |r: RelId| r - inline[..r].iter().filter(|&&i| i).count();
    for a in &mut ck.autoincs {
        a.source = moved(a.source);
        a.target = moved(a.target);
    }
    ck.iteration = ck.iteration.map(moved);
    for d in &mut ck.debug_deltas {
        d.source = moved(d.source);
        d.target = moved(d.target);
    }
    // Dependencies no rule states: `autoinc()`'s numbered relation reads its source, a
    // `debug_delta` relation its source.
    let reads: Vec<(RelId, RelId, Span)> = ck
        .autoincs
        .iter()
        .map(|a| (a.target, a.source, a.span))
        .chain(ck.debug_deltas.iter().map(|d| (d.target, d.source, d.span)))
        .collect();
    let errors = debug_delta::reads_in_own_stratum(
        &ck.relations,
        &ck.rules,
        &ck.subsumptions,
        &reads,
        &ck.debug_deltas,
    );
    if !errors.is_empty() {
        return Err(finish_errors(errors));
    }
    let mut strata = stratify_autoinc(&ck.relations, &ck.rules, &ck.subsumptions, &reads)
        .map_err(|e| finish_errors(e.0))?;
    // Soufflé rejects `autoinc()` in recursive rules; numbers are drawn in stratum order.
    {
        let stratum_of = |rel: RelId| strata.iter().position(|s| s.relations.contains(&rel));
        for a in &ck.autoincs {
            if stratum_of(a.target).is_some_and(|s| strata[s].recursive) {
                ck.errors.push(
                    Diagnostic::error("`autoinc()` cannot be used in a recursive rule", a.span)
                        .with_help("as in Soufflé: derive the tuples first, then number them in a rule that reads them"),
                );
            }
        }
    }
    if !ck.errors.is_empty() {
        return Err(finish_errors(ck.errors));
    }
    check_plan_versions(&ck.rules, &strata).map_err(finish_errors)?;
    // The magic-set transform (`crate::magic`): the command line's relations, or the
    // program's pragmas.
    let mut spec = crate::magic::MagicSpec::default();
    match &options.magic_transform {
        Some(m) => spec.add(m),
        None => pragma_values(program, "magic-transform").for_each(|v| spec.add(v)),
    }
    let mut exclude = crate::magic::MagicSpec::default();
    match &options.magic_transform_exclude {
        Some(m) => exclude.add(m),
        None => pragma_values(program, "magic-transform-exclude").for_each(|v| exclude.add(v)),
    }
    spec.exclude = exclude.names;
    // `autoinc()` draws one counter in stratum order, which the transform changes: a
    // program that uses it is left as it is (its numbers stay those of a plain run). So
    // is a program with `.limitsize`, which stops a stratum's loop: the transform makes
    // other strata.
    // The same holds for `recursive_iteration_cnt()` and `debug_delta` relations, whose
    // values follow the strata's loops.
    let limited = ck.relations.iter().any(|r| r.limitsize.is_some())
        || ck.iteration.is_some()
        || !ck.debug_deltas.is_empty();
    if ck.autoincs.is_empty()
        && !limited
        && (!spec.is_empty() || ck.magic_qualifier.values().any(|&q| q))
    {
        let mut candidates =
            crate::magic::candidates(&ck.relations, &ck.rules, &ck.subsumptions, &spec, &|name| {
                ck.magic_qualifier.get(name).copied()
            });
        // What `autoinc()` numbers is numbered by the driver: never copied.
        for a in &ck.autoincs {
            candidates[a.source] = false;
            candidates[a.target] = false;
        }
        // A lattice relation holds one tuple per key, which a copy would not keep.
        for (r, rel) in ck.relations.iter().enumerate() {
            if rel.lattice.is_some() {
                candidates[r] = false;
            }
        }
        if crate::magic::transform(
            &mut ck.relations,
            &mut ck.facts,
            &mut ck.rules,
            &strata,
            candidates,
            &reads.iter().map(|&(t, s, _)| (t, s)).collect::<Vec<_>>(),
        ) {
            strata = stratify_autoinc(&ck.relations, &ck.rules, &ck.subsumptions, &reads)
                .map_err(|e| finish_errors(e.0))?;
        }
    }
    let stratum_of = |rel: RelId| strata.iter().position(|s| s.relations.contains(&rel));
    ck.autoincs.sort_by_key(|a| stratum_of(a.target));
    ck.warnings.extend(debug_delta::not_recursive_warnings(
        &ck.relations,
        &strata,
        &ck.debug_deltas,
    ));
    ck.symbols
        .records()
        .set_types(std::mem::take(&mut ck.record_types));
    let warnings = finish_errors(ck.warnings).0;
    Ok(ir::Program {
        relations: ck.relations,
        facts: ck.facts,
        rules: ck.rules,
        subsumptions: ck.subsumptions,
        strata,
        symbols: ck.symbols,
        warnings,
        autoincs: ck.autoincs,
        iteration: ck.iteration,
        functors: ck.functors,
        debug_deltas: ck.debug_deltas,
    })
}

/// Every `.plan` version must exist: 0 for a rule that is not recursive, one per atom
/// over a relation of its own stratum for a recursive one (Soufflé's numbering).
fn check_plan_versions(rules: &[ir::Rule], strata: &[ir::Stratum]) -> Result<(), Vec<Diagnostic>> {
    let mut errors = Vec::new();
    for st in strata {
        for &i in &st.rules {
            let rule = &rules[i];
            if rule.plan.is_empty() {
                continue;
            }
            let recursive = rule
                .body
                .iter()
                .filter(|l| {
                    matches!(l, ir::Literal::Atom(a) if st.recursive && st.relations.contains(&a.rel))
                })
                .count();
            let versions = recursive.max(1);
            for p in &rule.plan {
                if p.version >= versions {
                    errors.push(Diagnostic::error(
                        format!(
                            "`.plan` version {} does not exist: this rule has {versions} version(s) (0{})",
                            p.version,
                            if recursive > 1 {
                                format!(" to {}, one per atom over a relation of its recursive stratum", versions - 1)
                            } else {
                                String::new()
                            }
                        ),
                        p.span,
                    ));
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The values of the program's `.pragma "key" "value"`s for `key`.
fn pragma_values<'p>(program: &'p ast::Program, key: &'p str) -> impl Iterator<Item = &'p str> {
    program.items.iter().filter_map(move |i| match i {
        ast::Item::Pragma { args, .. } if args.first().map(String::as_str) == Some(key) => {
            Some(args.get(1).map_or("*", String::as_str))
        }
        _ => None,
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
        ir::Functor::Pack(t) | ir::Functor::Field(_, t) => t,
        ir::Functor::User { result, .. } => result,
    }
}

/// The name of a base type as written in programs.
pub fn type_name(t: ColType) -> &'static str {
    match t {
        ColType::Number => "number",
        ColType::Unsigned => "unsigned",
        ColType::Float => "float",
        ColType::Symbol => "symbol",
        ColType::Record(_) => "record",
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
    /// The record and ADT types, indexed by `ColType::Record`'s id.
    record_types: Vec<crate::records::RecordType>,
    /// ADT branch name -> (its type's id, its index, where it is declared).
    branches: HashMap<String, (u32, usize, Span)>,
    facts: Vec<ir::Fact>,
    rules: Vec<ir::Rule>,
    /// See [`ir::Program::subsumptions`].
    subsumptions: Vec<ir::Rule>,
    /// Soufflé's warnings (see [`ir::Program::warnings`]).
    warnings: Vec<Diagnostic>,
    /// Relations declared `inline`.
    inline: HashSet<String>,
    /// Relations declared `magic` (true) or `no_magic` (false).
    magic_qualifier: HashMap<String, bool>,
    autoincs: Vec<ir::AutoInc>,
    /// The relation of `recursive_iteration_cnt()` ([`ir::Program::iteration`]), made
    /// when a rule first uses the counter.
    iteration: Option<RelId>,
    /// `.lattice` declarations by type name (`check/lattice.rs`).
    lattices: HashMap<String, lattice::LatticeDecl>,
    /// Relations with lattice attributes: their lattices' names, column by column.
    lattice_cols: HashMap<RelId, Vec<String>>,
    /// Fresh variables made by the lattice rewrite of bodies.
    lattice_fresh: usize,
    /// User-defined functors (`.functor`) and their indexes by name.
    functors: Vec<ir::FunctorDecl>,
    functor_ids: HashMap<String, u32>,
    /// `debug_delta` relations declared, each with the name of its source, until their
    /// columns are resolved (`check/debug_delta.rs`).
    debug_pending: Vec<(RelId, ast::Ident)>,
    /// The resolved ones ([`ir::Program::debug_deltas`]).
    debug_deltas: Vec<ir::DebugDelta>,
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

    /// The relation `$iteration(n: unsigned)` that stands for `recursive_iteration_cnt()`
    /// (see [`ir::Program::iteration`]), made on first use.
    pub(super) fn iteration_relation(&mut self, span: Span) -> RelId {
        if let Some(r) = self.iteration {
            return r;
        }
        let r = self.relations.len();
        self.relations.push(ir::Relation::plain(
            "$iteration".to_string(),
            vec![ir::Column {
                name: "iteration".to_string(),
                ty: ColType::Unsigned,
                type_name: "unsigned".to_string(),
            }],
            span,
        ));
        self.iteration = Some(r);
        r
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
        self.lattice_decls(program);
        // Then relations (also usable before their declaration).
        for item in &program.items {
            match item {
                ast::Item::Decl(d) => self.decl(d),
                ast::Item::Functor {
                    name,
                    params,
                    result,
                    stateful,
                    span,
                } => self.functor_decl(name, params, result, *stateful, *span),
                _ => {}
            }
        }
        self.resolve_debug_deltas();
        self.lattice_lubs();
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
        // Soufflé's warning for relations that nothing fills (the engine fills the
        // `debug_delta` ones).
        for (id, rel) in self.relations.iter().enumerate() {
            if rel.inputs.is_empty()
                && !has_clauses.contains(rel.name.as_str())
                && !rel.name.starts_with('$')
                && !self.debug_deltas.iter().any(|d| d.target == id)
            {
                self.warnings.push(Diagnostic::error(
                    format!("no rules/facts defined for relation `{}`", rel.name),
                    rel.span,
                ));
            }
        }
    }

    /// A `.functor` declaration: its types must be (subtypes of) the four base types.
    fn functor_decl(
        &mut self,
        name: &ast::Ident,
        params: &[ast::Ident],
        result: &ast::Ident,
        stateful: bool,
        span: Span,
    ) {
        if let Some(&prev) = self.functor_ids.get(&name.name) {
            let loc = self.sources.location(self.functors[prev as usize].span);
            self.error(
                Diagnostic::error(
                    format!("functor `{}` is declared more than once", name.name),
                    name.span,
                )
                .with_note(format!("first declared at {loc}")),
            );
            return;
        }
        let mut ok = true;
        let mut ty = |ck: &mut Self, t: &ast::Ident| match ck.resolve_type(t) {
            Some(ColType::Record(_)) => {
                ck.error(Diagnostic::error(
                    format!(
                        "functor `{}`: record and ADT types (`{}`) cannot be passed to or returned by user-defined functors",
                        name.name, t.name
                    ),
                    t.span,
                ));
                ok = false;
                ColType::Number
            }
            Some(c) => c,
            None => {
                ok = false;
                ColType::Number
            }
        };
        let params: Vec<ColType> = params.iter().map(|p| ty(self, p)).collect();
        let result = ty(self, result);
        if !ok {
            return;
        }
        self.functor_ids
            .insert(name.name.clone(), self.functors.len() as u32);
        self.functors.push(ir::FunctorDecl {
            name: name.name.clone(),
            params,
            result,
            stateful,
            span,
        });
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
                } else if let Some((m, _)) =
                    found.iter().find(|(_, t)| matches!(t, ColType::Record(_)))
                {
                    self.error(Diagnostic::error(
                        format!(
                            "union type `{}` has the record or ADT type `{}` as a member: unions of record types are not supported (as in Soufflé)",
                            decl.name.name, m.name
                        ),
                        m.span,
                    ));
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
            ast::TypeDef::Record(_) | ast::TypeDef::Adt(_) => return self.record_type(decl),
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
        if let Some(source) = &d.debug_delta {
            self.debug_decl(d, source);
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
        let mut rel = ir::Relation::plain(d.name.name.clone(), columns, d.span);
        for q in &d.qualifiers {
            match q.name.as_str() {
                "eqrel" => {
                    if let Some(e) = relation_kinds::eqrel_error(d, &rel) {
                        self.error(Diagnostic::error(e, q.span));
                    }
                    rel.eqrel = true;
                }
                "input" => rel.inputs.push(ir::IoDirective {
                    params: BTreeMap::new(),
                    span: q.span,
                }),
                "output" => rel.outputs.push(ir::IoDirective {
                    params: BTreeMap::new(),
                    span: q.span,
                }),
                "printsize" => rel.printsize = true,
                "inline" => {
                    self.inline.insert(d.name.name.clone());
                }
                "magic" | "no_magic" => {
                    self.magic_qualifier
                        .insert(d.name.name.clone(), q.name == "magic");
                }
                // Storage representations (`btree`, `brie`, `btree_delete`) and the
                // component qualifiers change no result: accepted and ignored.
                _ => {}
            }
        }
        rel.choice_domains = self.choice_domains(d, &rel);
        if let Some(cols) = self.decl_lattice_columns(d) {
            self.lattice_cols.insert(self.relations.len(), cols);
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
        let limit = match d.kind {
            ast::DirectiveKind::LimitSize => self
                .limitsize_param(d)
                .map(|n| ir::LimitSize { n, span: d.span }),
            _ => None,
        };
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
            if d.kind == ast::DirectiveKind::Input && self.is_debug_target(id) {
                self.error(
                    Diagnostic::error(
                        format!(
                            "`{}` is a `debug_delta` relation: it cannot be an input",
                            r.name
                        ),
                        r.span,
                    )
                    .with_note("the engine fills it with the new tuples of each iteration"),
                );
                continue;
            }
            let rel = &mut self.relations[id];
            match d.kind {
                ast::DirectiveKind::Input => rel.inputs.push(io),
                ast::DirectiveKind::Output => rel.outputs.push(io),
                ast::DirectiveKind::PrintSize => rel.printsize = true,
                ast::DirectiveKind::LimitSize => match rel.limitsize {
                    // As Soufflé's parser: one `.limitsize` per relation.
                    Some(previous) => {
                        let note =
                            format!("the first is at {}", self.sources.location(previous.span));
                        self.error(
                            Diagnostic::error(
                                format!("`.limitsize` is given twice for relation `{}`", r.name),
                                r.span,
                            )
                            .with_note(note),
                        );
                    }
                    None => rel.limitsize = limit,
                },
            }
        }
    }

    /// The limit of `.limitsize r(n=N)`: its one parameter `n`, an integer (negative
    /// reads as 0); `None` after reporting what is wrong.
    fn limitsize_param(&mut self, d: &ast::Directive) -> Option<u64> {
        let mut n = None;
        let mut ok = true;
        for (key, value) in &d.params {
            if key.name != "n" {
                self.error(
                    Diagnostic::error(
                        format!("unknown parameter `{}` of `.limitsize`", key.name),
                        key.span,
                    )
                    .with_help("`.limitsize` takes the number of tuples: `.limitsize r(n=1000)`"),
                );
                ok = false;
                continue;
            }
            match value.trim().parse::<i64>() {
                Ok(v) if n.is_none() => n = Some(v.max(0) as u64),
                Ok(_) => {
                    self.error(Diagnostic::error(
                        "the parameter `n` of `.limitsize` is given twice",
                        key.span,
                    ));
                    ok = false;
                }
                Err(_) => {
                    self.error(Diagnostic::error(
                        format!("`n` of `.limitsize` must be an integer, found `{value}`"),
                        key.span,
                    ));
                    ok = false;
                }
            }
        }
        if n.is_none() && ok {
            self.error(
                Diagnostic::error("`.limitsize` needs the parameter `n`", d.span)
                    .with_help("give the number of tuples: `.limitsize r(n=1000)`"),
            );
        }
        n.filter(|_| ok)
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

    /// The clause's `.plan` for one of its rules, with its atom numbers checked
    /// (versions are checked after stratification, by [`check_plan_versions`]).
    fn plan_order(&mut self, c: &ast::Clause, rule: &ir::Rule) -> Vec<ir::PlanVersion> {
        let atoms = rule
            .body
            .iter()
            .filter(|l| matches!(l, ir::Literal::Atom(_)))
            .count();
        let mut out: Vec<ir::PlanVersion> = Vec::new();
        for entry in &c.plan {
            let mut order = Vec::new();
            let mut seen = vec![false; atoms];
            for &(n, span) in &entry.order {
                if n == 0 || n as usize > atoms {
                    self.error(Diagnostic::error(
                        format!(
                            "`.plan` names atom {n}, but this rule's body has {atoms} atom(s), numbered from 1"
                        ),
                        span,
                    ));
                    return Vec::new();
                }
                if std::mem::replace(&mut seen[n as usize - 1], true) {
                    self.error(Diagnostic::error(
                        format!("`.plan` names atom {n} twice"),
                        span,
                    ));
                    return Vec::new();
                }
                order.push(n as usize - 1);
            }
            if order.len() != atoms {
                self.error(Diagnostic::error(
                    format!(
                        "`.plan` version {} orders {} atom(s), but this rule's body has {atoms}: it must order all of them",
                        entry.version,
                        order.len()
                    ),
                    entry.span,
                ));
                return Vec::new();
            }
            if out.iter().any(|p| p.version as u64 == entry.version) {
                self.error(Diagnostic::error(
                    format!("`.plan` gives version {} twice", entry.version),
                    entry.span,
                ));
                return Vec::new();
            }
            out.push(ir::PlanVersion {
                version: usize::try_from(entry.version).unwrap_or(usize::MAX),
                order,
                span: entry.span,
            });
        }
        out
    }

    fn clause(&mut self, c: &ast::Clause) {
        if let Some(dominating) = &c.dominating {
            self.subsumptive_clause(c, dominating);
            return;
        }
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
            let Some(rel) = self.resolve_head(head) else {
                continue;
            };
            for conj in &conjuncts {
                let before = self.errors.len();
                // Lattice arguments in the body (`check/lattice.rs`).
                let rewritten = self.lattice_body(conj);
                if self.errors.len() != before {
                    continue;
                }
                let refs: Vec<&ast::Literal>;
                let conj: &[&ast::Literal] = match &rewritten {
                    Some(lits) => {
                        refs = lits.iter().collect();
                        &refs
                    }
                    None => conj,
                };
                let mut cx = RuleCx::new(self, false);
                let rule = cx.rule(head, rel, conj, c.span);
                let autoinc = std::mem::take(&mut cx.autoinc);
                if let Some(mut rule) = rule {
                    if self.errors.len() == before {
                        if autoinc.is_empty() {
                            rule.plan = self.plan_order(c, &rule);
                            self.rules.push(rule);
                        } else {
                            // The rule is split in two: a `.plan` is not applied.
                            self.split_autoinc(rule, &autoinc);
                        }
                    }
                }
            }
        }
    }

    fn fact(&mut self, head: &ast::Atom, span: Span) {
        let Some(rel) = self.resolve_head(head) else {
            return;
        };
        // A fact calling a user-defined functor is computed when the program runs (the
        // library is bound after checking): a rule with an empty body.
        if head.args.iter().any(calls_user_functor) {
            let before = self.errors.len();
            let mut cx = RuleCx::new(self, false);
            if let Some(rule) = cx.rule(head, rel, &[], span) {
                if self.errors.len() == before {
                    self.rules.push(rule);
                }
            }
            return;
        }
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

impl Checker<'_> {
    /// Writes a rule with `autoinc()` in its head as the two rules of [`ir::AutoInc`].
    fn split_autoinc(&mut self, rule: ir::Rule, autoinc: &[(VarId, Span)]) {
        fn expr_vars(e: &ir::Expr, out: &mut std::collections::BTreeSet<VarId>) {
            match e {
                ir::Expr::Var(v) => {
                    out.insert(*v);
                }
                ir::Expr::Const(_) => {}
                ir::Expr::Unary { arg, .. } => expr_vars(arg, out),
                ir::Expr::Binary { lhs, rhs, .. } => {
                    expr_vars(lhs, out);
                    expr_vars(rhs, out);
                }
                ir::Expr::Functor { args, .. } => args.iter().for_each(|a| expr_vars(a, out)),
            }
        }
        // The body's variables (an aggregate's correlated ones occur outside it too).
        let mut vs = std::collections::BTreeSet::new();
        for l in &rule.body {
            match l {
                ir::Literal::Atom(a) | ir::Literal::Negation(a) => {
                    for t in &a.args {
                        if let ir::Term::Var(v) = t {
                            vs.insert(*v);
                        }
                    }
                }
                ir::Literal::Compare { lhs, rhs, .. } => {
                    expr_vars(lhs, &mut vs);
                    expr_vars(rhs, &mut vs);
                }
                ir::Literal::Predicate { args, .. } => {
                    args.iter().for_each(|a| expr_vars(a, &mut vs));
                }
                ir::Literal::Range { out, args, .. } => {
                    vs.insert(*out);
                    args.iter().for_each(|a| expr_vars(a, &mut vs));
                }
                ir::Literal::Aggregate { out, .. } => {
                    vs.insert(*out);
                }
            }
        }
        let vs: Vec<VarId> = vs.into_iter().collect();
        let column = |v: VarId| {
            let ty = rule.vars[v].ty;
            ir::Column {
                name: rule.vars[v].name.trim_start_matches('$').to_string(),
                ty,
                type_name: self.type_label(ty),
            }
        };
        let n = self.autoincs.len();
        let head_name = self.relations[rule.head.rel].name.clone();
        let span = autoinc[0].1;
        let relation =
            |name: String, columns: Vec<ir::Column>| ir::Relation::plain(name, columns, span);
        let source_cols: Vec<ir::Column> = vs.iter().map(|&v| column(v)).collect();
        let mut target_cols = vec![ir::Column {
            name: "autoinc".to_string(),
            ty: ColType::Number,
            type_name: "number".to_string(),
        }];
        target_cols.extend(source_cols.iter().cloned());
        let source = self.relations.len();
        self.relations
            .push(relation(format!("$autoinc{n}_{head_name}"), source_cols));
        let target = self.relations.len();
        self.relations.push(relation(
            format!("$autoinc{n}_{head_name}_numbered"),
            target_cols,
        ));
        let c0 = autoinc[0].0;
        let mut body = vec![ir::Literal::Atom(ir::Atom {
            rel: target,
            args: std::iter::once(c0)
                .chain(vs.iter().copied())
                .map(ir::Term::Var)
                .collect(),
            span,
        })];
        for (j, &(c, s)) in autoinc.iter().enumerate().skip(1) {
            body.push(ir::Literal::Compare {
                op: ir::CmpOp::Eq,
                lhs: ir::Expr::Var(c),
                rhs: ir::Expr::Binary {
                    op: ir::BinOp::Add,
                    ty: ColType::Number,
                    lhs: Box::new(ir::Expr::Var(c0)),
                    rhs: Box::new(ir::Expr::Const(j as Value)),
                },
                ty: ColType::Number,
                span: s,
            });
        }
        self.rules.push(ir::Rule {
            head: ir::Head {
                rel: source,
                args: vs.iter().map(|&v| ir::Expr::Var(v)).collect(),
                span: rule.head.span,
            },
            body: rule.body,
            vars: rule.vars.clone(),
            span: rule.span,
            plan: Vec::new(),
        });
        self.rules.push(ir::Rule {
            head: rule.head,
            body,
            vars: rule.vars,
            span: rule.span,
            plan: Vec::new(),
        });
        self.autoincs.push(ir::AutoInc {
            source,
            target,
            per_tuple: autoinc.len() as u32,
            span,
        });
    }
}
