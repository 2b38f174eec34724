//! Soufflé's components: `.comp`, `.init`, inheritance, `.override`, type parameters.
//!
//! [`expand`] turns a program with components into a plain one before the checker sees
//! it, as Soufflé's `ComponentInstantiation` pass does, and with the same rules:
//!
//! - `.init x = C<A, B>` copies the types, relations, directives and clauses of `C` (and
//!   of its bases, and of the instances `C` itself declares, recursively), binding `C`'s
//!   type parameters to `A` and `B`. A parameter is replaced where a type is named
//!   (attribute types, `.type` definitions) and where a component is named (`.init`s and
//!   base lists: `.init s = Selector` instantiates whatever `Selector` is bound to).
//!   Relation names in atoms are not parameters, in Soufflé as here.
//! - Every type and relation collected for the instance is renamed `x.name`, and so is
//!   every reference to it in the collected clauses, directives and declarations; other
//!   names are left alone, so they refer to the enclosing scope (an enclosing instance,
//!   or the program). A clause whose head relation the component does not declare is an
//!   *orphan*: it travels up to the scope that declares that relation (renamed on the
//!   way), or to the program.
//! - A base's clauses for a relation that a derived component `.override`s are dropped;
//!   the relation must be declared `overridable` in the base.
//!
//! Components are looked up as Soufflé does: in the components nested in the current
//! component, then in those of its bases, then in the enclosing components, then at the
//! top level. Copies keep their spans, so errors the checker finds in instantiated code
//! point into the component's body.
//!
//! Errors (each located): unknown component, wrong number of type parameters, cyclic
//! inheritance, `.override` of a relation that is not inherited or not `overridable`,
//! `.override` outside a component, name clashes between components, instances,
//! relations and types of the program, an instance declared twice in one scope, and
//! instantiation deeper than 100 levels or larger than [`MAX_ITEMS`] copied items.

use fixlog_syntax::ast::{self, Ident, Item};
use fixlog_syntax::{Diagnostic, SourceMap, Span};
use std::collections::{HashMap, HashSet};

/// Deepest nesting of instantiations (and of inheritance), as Soufflé's
/// `MAX_INSTANTIATION_DEPTH`.
const MAX_DEPTH: usize = 100;

/// Most items (declarations, clauses, directives) all instantiations together may copy
/// or rename: components that instantiate each other twice per level multiply.
pub const MAX_ITEMS: usize = 1 << 20;

/// Whether the program uses components at all (if not, [`expand`] has nothing to do).
pub fn has_components(program: &ast::Program) -> bool {
    program.items.iter().any(|i| {
        matches!(
            i,
            Item::Component(_) | Item::Init(_) | Item::Override { .. }
        )
    })
}

/// Expand every component instantiation of `program` into plain declarations, types,
/// directives and clauses; component declarations disappear.
pub fn expand(
    program: &ast::Program,
    sources: &SourceMap,
) -> Result<ast::Program, Vec<Diagnostic>> {
    let mut ex = Expander {
        sources,
        comps: Vec::new(),
        global: Vec::new(),
        errors: Vec::new(),
        copied: 0,
        exhausted: false,
        chain: Vec::new(),
    };
    for item in &program.items {
        if let Item::Component(c) = item {
            let id = ex.register(c, None);
            ex.global.push(id);
        }
    }
    ex.check_program(program);
    if !ex.errors.is_empty() {
        return Err(ex.errors);
    }
    let mut items = Vec::with_capacity(program.items.len());
    for item in &program.items {
        match item {
            Item::Component(_) | Item::Override { .. } => {}
            Item::Init(init) => {
                let mut orphans = Vec::new();
                let content = ex.instantiate(init, None, &mut orphans, &Binding::new(), MAX_DEPTH);
                items.extend(content.types.into_iter().map(Item::Type));
                items.extend(content.decls.into_iter().map(Item::Decl));
                items.extend(content.directives.into_iter().map(Item::Directive));
                items.extend(content.clauses.into_iter().map(Item::Clause));
                items.extend(content.others);
                items.extend(orphans.into_iter().map(Item::Clause));
            }
            other => items.push(other.clone()),
        }
    }
    if ex.errors.is_empty() {
        Ok(ast::Program {
            items,
            warnings: program.warnings.clone(),
        })
    } else {
        Err(ex.errors)
    }
}

/// Type parameter → actual name.
type Binding = HashMap<String, String>;

/// Soufflé's `TypeBinding::extend`: a fresh binding of `formals` to `actuals`, each
/// actual first looked up in `outer` (so `.comp B<K> : A<K>` passes on what `K` is).
/// A count mismatch (reported elsewhere) keeps `outer`.
fn extend(outer: &Binding, formals: &[Ident], actuals: &[Ident]) -> Binding {
    if formals.len() != actuals.len() {
        return outer.clone();
    }
    formals
        .iter()
        .zip(actuals)
        .map(|(f, a)| {
            let actual = outer.get(&a.name).unwrap_or(&a.name).clone();
            (f.name.clone(), actual)
        })
        .collect()
}

struct Comp<'a> {
    ast: &'a ast::Component,
    /// The component this one is declared in.
    parent: Option<usize>,
    /// Components declared directly in this one, in order.
    nested: Vec<usize>,
}

impl Comp<'_> {
    fn name(&self) -> &str {
        &self.ast.head.name.name
    }
}

fn inits(c: &ast::Component) -> impl Iterator<Item = &ast::Init> {
    c.items.iter().filter_map(|i| match i {
        Item::Init(init) => Some(init),
        _ => None,
    })
}

fn overrides(c: &ast::Component) -> impl Iterator<Item = &Ident> {
    c.items.iter().filter_map(|i| match i {
        Item::Override { name, .. } => Some(name),
        _ => None,
    })
}

fn decls(c: &ast::Component) -> impl Iterator<Item = &ast::Decl> {
    c.items.iter().filter_map(|i| match i {
        Item::Decl(d) => Some(d),
        _ => None,
    })
}

/// What an instantiation produces, before it is added to the enclosing scope.
#[derive(Default)]
struct Content {
    types: Vec<ast::TypeDecl>,
    decls: Vec<ast::Decl>,
    directives: Vec<ast::Directive>,
    clauses: Vec<ast::Clause>,
    /// Items passed through for the checker to judge (`.functor`, a leftover
    /// `.include`).
    others: Vec<Item>,
}

impl Content {
    fn append(&mut self, other: Content) {
        self.types.extend(other.types);
        self.decls.extend(other.decls);
        self.directives.extend(other.directives);
        self.clauses.extend(other.clauses);
        self.others.extend(other.others);
    }
}

struct Expander<'a> {
    sources: &'a SourceMap,
    comps: Vec<Comp<'a>>,
    /// Top-level components.
    global: Vec<usize>,
    errors: Vec<Diagnostic>,
    /// Items copied so far (bounded by [`MAX_ITEMS`]).
    copied: usize,
    exhausted: bool,
    /// The `.init`s being expanded, outermost first (for notes on errors).
    chain: Vec<(&'a str, Span)>,
}

impl<'a> Expander<'a> {
    fn register(&mut self, c: &'a ast::Component, parent: Option<usize>) -> usize {
        let id = self.comps.len();
        self.comps.push(Comp {
            ast: c,
            parent,
            nested: Vec::new(),
        });
        for item in &c.items {
            if let Item::Component(n) = item {
                let child = self.register(n, Some(id));
                self.comps[id].nested.push(child);
            }
        }
        id
    }

    /// Soufflé's `ComponentLookup::getComponent`: `name` (through `binding`) among the
    /// components nested in `scope`, in its bases, in its enclosing components, and at
    /// the top level.
    fn lookup(&self, scope: Option<usize>, name: &str, binding: &Binding) -> Option<usize> {
        self.lookup_in(scope, name, binding, &mut HashSet::new(), 0)
    }

    fn lookup_in(
        &self,
        scope: Option<usize>,
        name: &str,
        binding: &Binding,
        searched: &mut HashSet<usize>,
        depth: usize,
    ) -> Option<usize> {
        let bound = binding.get(name).map_or(name, String::as_str);
        let mut scope = scope;
        while let Some(id) = scope {
            let comp = &self.comps[id];
            if let Some(&n) = comp.nested.iter().find(|&&n| self.comps[n].name() == bound) {
                return Some(n);
            }
            // Each scope's bases are searched once (inheritance may be cyclic; the
            // cycle is reported by the checks), and no deeper than instantiation may go.
            if depth < MAX_DEPTH && searched.insert(id) {
                for base in &comp.ast.bases {
                    let b =
                        self.lookup_in(comp.parent, &base.name.name, binding, searched, depth + 1);
                    if b == Some(id) {
                        return None;
                    }
                    if let Some(b) = b {
                        if let Some(found) =
                            self.lookup_in(Some(b), name, binding, searched, depth + 1)
                        {
                            return Some(found);
                        }
                    }
                }
            }
            scope = comp.parent;
        }
        self.global
            .iter()
            .copied()
            .find(|&g| self.comps[g].name() == bound)
    }

    fn location(&self, span: Span) -> String {
        self.sources.location(span)
    }

    // ---- checks before instantiation (Soufflé's ComponentChecker) ----

    fn check_program(&mut self, program: &'a ast::Program) {
        // Names of the program's scope: types, relations, components, instances.
        let mut names: HashMap<&str, (&str, Span)> = HashMap::new();
        for item in &program.items {
            match item {
                Item::Type(t) => {
                    names.entry(&t.name.name).or_insert(("type", t.name.span));
                }
                Item::Decl(d) => {
                    names
                        .entry(&d.name.name)
                        .or_insert(("relation", d.name.span));
                }
                _ => {}
            }
        }
        for item in &program.items {
            let (what, name) = match item {
                Item::Component(c) => ("component", &c.head.name),
                Item::Init(i) => ("instance", &i.name),
                Item::Override { span, .. } => {
                    self.errors.push(Diagnostic::error(
                        "`.override` is only allowed inside a component",
                        *span,
                    ));
                    continue;
                }
                _ => continue,
            };
            if let Some(&(kind, prev)) = names.get(name.name.as_str()) {
                let loc = self.location(prev);
                let msg = if kind == what {
                    format!("{what} `{}` is declared more than once", name.name)
                } else {
                    format!(
                        "{what} `{}` has the same name as a {kind} (Soufflé: name clash)",
                        name.name
                    )
                };
                self.errors.push(
                    Diagnostic::error(msg, name.span)
                        .with_note(format!("the {kind} `{}` is declared at {loc}", name.name)),
                );
            } else {
                names.insert(&name.name, (what, name.span));
            }
        }
        for g in self.global.clone() {
            self.check_component(g, &Binding::new());
        }
        for item in &program.items {
            if let Item::Init(init) = item {
                self.check_reference(None, &init.component, &Binding::new());
            }
        }
    }

    /// Soufflé's `checkComponentReference`: a component named where a component is
    /// expected exists (unless it is a type parameter: then only instantiation can
    /// tell) and gets as many type arguments as it has parameters.
    fn check_reference(
        &mut self,
        scope: Option<usize>,
        ty: &ast::ComponentType,
        binding: &Binding,
    ) {
        if binding.contains_key(&ty.name.name) {
            return;
        }
        match self.lookup(scope, &ty.name.name, binding) {
            None => self.unknown_component(&ty.name),
            Some(c) => {
                self.check_arguments(c, ty);
            }
        }
    }

    fn unknown_component(&mut self, name: &Ident) {
        let mut d = Diagnostic::error(format!("unknown component `{}`", name.name), name.span);
        let names: Vec<&str> = self.comps.iter().map(Comp::name).collect();
        if let Some(s) = crate::check::suggest(&name.name, names) {
            d = d.with_help(format!("did you mean `{s}`?"));
        }
        self.errors.push(self.noted(d));
    }

    /// Whether `ty` gives component `c` as many type arguments as it has parameters
    /// (reporting it if not).
    fn check_arguments(&mut self, c: usize, ty: &ast::ComponentType) -> bool {
        let comp = &self.comps[c];
        let want = comp.ast.head.params.len();
        let got = ty.params.len();
        if want == got {
            return true;
        }
        let d = Diagnostic::error(
            format!(
                "component `{}` takes {want} type parameter{} but {got} {} given",
                comp.name(),
                if want == 1 { "" } else { "s" },
                if got == 1 { "was" } else { "were" },
            ),
            ty.span,
        )
        .with_note(format!(
            "`{}` is declared at {}",
            comp.name(),
            self.location(comp.ast.head.span)
        ));
        self.errors.push(self.noted(d));
        false
    }

    fn check_component(&mut self, id: usize, binding: &Binding) {
        let comp = self.comps[id].ast;
        let parent = self.comps[id].parent;
        // Inside the component its own parameters stand for unknown components.
        let placeholders: Vec<Ident> = comp
            .head
            .params
            .iter()
            .map(|p| Ident {
                name: String::new(),
                span: p.span,
            })
            .collect();
        let active = extend(&Binding::new(), &comp.head.params, &placeholders);
        for base in &comp.bases {
            self.check_reference(parent, base, &active);
        }
        // Every component this one inherits from, directly or not.
        let mut ancestors: Vec<usize> = Vec::new();
        let mut todo = vec![id];
        while let Some(cur) = todo.pop() {
            let scope = self.comps[cur].parent;
            for base in &self.comps[cur].ast.bases {
                if let Some(b) = self.lookup(scope, &base.name.name, binding) {
                    if !ancestors.contains(&b) {
                        ancestors.push(b);
                        todo.push(b);
                    }
                }
            }
        }
        let name = &comp.head.name.name;
        if ancestors.contains(&id) {
            self.errors.push(Diagnostic::error(
                format!("component `{name}` inherits from itself (a cycle in inheritance)"),
                comp.head.name.span,
            ));
        }
        let overrides: Vec<&Ident> = overrides(comp).collect();
        for o in overrides {
            if decls(comp).any(|d| d.name.name == o.name) {
                self.errors.push(Diagnostic::error(
                    format!(
                        "`.override {}` in component `{name}`, which declares `{}` itself: only an inherited relation can be overridden",
                        o.name, o.name
                    ),
                    o.span,
                ));
            }
            for &a in &ancestors {
                if a == id {
                    continue;
                }
                let base = &self.comps[a];
                if let Some(d) = decls(base.ast).find(|d| {
                    d.name.name == o.name && !d.qualifiers.iter().any(|q| q.name == "overridable")
                }) {
                    let d = Diagnostic::error(
                        format!(
                            "relation `{}` of component `{}` is not overridable",
                            o.name,
                            base.name()
                        ),
                        o.span,
                    )
                    .with_note(format!(
                        "`{}` is declared at {}",
                        o.name,
                        self.location(d.span)
                    ))
                    .with_help(format!(
                        "declare it with the qualifier `overridable`: `.decl {}(...) overridable`",
                        o.name
                    ));
                    self.errors.push(d);
                }
            }
        }
        // Instances declared twice in this body.
        let mut seen: HashMap<&str, Span> = HashMap::new();
        for init in inits(comp) {
            if let Some(prev) = seen.get(init.name.name.as_str()) {
                let loc = self.location(*prev);
                self.errors.push(
                    Diagnostic::error(
                        format!(
                            "instance `{}` is declared more than once in component `{name}`",
                            init.name.name
                        ),
                        init.name.span,
                    )
                    .with_note(format!("first declared at {loc}")),
                );
            } else {
                seen.insert(&init.name.name, init.name.span);
            }
        }
        for n in self.comps[id].nested.clone() {
            self.check_component(n, &active);
        }
        for init in inits(comp) {
            self.check_reference(Some(id), &init.component, &active);
        }
    }

    // ---- instantiation (Soufflé's ComponentInstantiation) ----

    /// Adds the instantiation chain to an error found while instantiating: the three
    /// innermost instances and the outermost one.
    fn noted(&self, mut d: Diagnostic) -> Diagnostic {
        let n = self.chain.len();
        for (i, (name, span)) in self.chain.iter().enumerate().rev() {
            if n > 4 && i > 0 && i + 3 < n {
                if i == n - 4 {
                    d = d.with_note(format!("... in {} more instances", n - 4));
                }
                continue;
            }
            d = d.with_note(format!(
                "in instance `{name}` declared at {}",
                self.location(*span)
            ));
        }
        d
    }

    /// A component named through a type parameter (the checks before instantiation
    /// could not know what it is bound to) that does not exist.
    fn unbound_component(&mut self, name: &Ident, binding: &Binding) {
        let d = match binding.get(&name.name) {
            Some(actual) => Diagnostic::error(
                format!(
                    "unknown component `{actual}` (the type parameter `{}`)",
                    name.name
                ),
                name.span,
            ),
            None => Diagnostic::error(format!("unknown component `{}`", name.name), name.span),
        };
        self.errors.push(self.noted(d));
    }

    /// Counts `n` more copied items; false (once reported) past [`MAX_ITEMS`].
    fn charge(&mut self, n: usize, at: Span) -> bool {
        self.copied += n;
        if self.copied > MAX_ITEMS && !self.exhausted {
            self.exhausted = true;
            let d = Diagnostic::error(
                format!("component instantiation copies or renames more than {MAX_ITEMS} items"),
                at,
            );
            self.errors.push(self.noted(d));
        }
        !self.exhausted
    }

    /// The content `init` brings into the scope of the component `enclosing` (`None`:
    /// the program), renamed under the instance's name.
    fn instantiate(
        &mut self,
        init: &'a ast::Init,
        enclosing: Option<usize>,
        orphans: &mut Vec<ast::Clause>,
        binding: &Binding,
        depth: usize,
    ) -> Content {
        let mut res = Content::default();
        if self.exhausted {
            return res;
        }
        if depth == 0 {
            let d = Diagnostic::error(
                format!("component instantiation is nested more than {MAX_DEPTH} levels deep"),
                init.span,
            );
            self.errors.push(self.noted(d));
            return res;
        }
        let Some(comp) = self.lookup(enclosing, &init.component.name.name, binding) else {
            // A type parameter bound to something that is not a component.
            self.unbound_component(&init.component.name, binding);
            return res;
        };
        if !self.check_arguments(comp, &init.component) {
            return res;
        }
        self.chain.push((&init.name.name, init.span));
        let active = extend(
            binding,
            &self.comps[comp].ast.head.params,
            &init.component.params,
        );
        let body = self.comps[comp].ast;
        for nested in inits(body) {
            let content = self.instantiate(nested, Some(comp), orphans, &active, depth - 1);
            res.append(content);
        }
        let scope = self.comps[comp].parent;
        self.collect(
            comp,
            &active,
            scope,
            &mut res,
            orphans,
            &HashSet::new(),
            depth,
        );
        self.chain.pop();
        // Renaming touches everything collected so far: counted too, so that nested
        // instances (each renamed once per enclosing level) stay within the bound.
        let size = res.types.len() + res.decls.len() + res.directives.len() + res.clauses.len();
        if !self.charge(size + orphans.len(), init.span) {
            return Content::default();
        }
        rename(&init.name.name, &mut res, orphans);
        res
    }

    /// Soufflé's `collectContent`: copies of the content of `comp` and its bases into
    /// `res`, with clauses of `overridden` relations left out and clauses whose head
    /// `res` does not declare added to `orphans`.
    #[allow(clippy::too_many_arguments)]
    fn collect(
        &mut self,
        comp: usize,
        binding: &Binding,
        enclosing: Option<usize>,
        res: &mut Content,
        orphans: &mut Vec<ast::Clause>,
        overridden: &HashSet<String>,
        depth: usize,
    ) {
        let ast = self.comps[comp].ast;
        let mut super_overridden = overridden.clone();
        super_overridden.extend(overrides(ast).map(|o| o.name.clone()));
        for base in &ast.bases {
            if self.exhausted {
                return;
            }
            if depth <= 1 {
                let d = Diagnostic::error(
                    format!("inheritance is nested more than {MAX_DEPTH} levels deep"),
                    base.span,
                );
                self.errors.push(self.noted(d));
                return;
            }
            let Some(b) = self.lookup(enclosing, &base.name.name, binding) else {
                self.unbound_component(&base.name, binding);
                continue;
            };
            if !self.check_arguments(b, base) {
                continue;
            }
            let active = extend(binding, &self.comps[b].ast.head.params, &base.params);
            let body = self.comps[b].ast;
            for nested in inits(body) {
                let content = self.instantiate(nested, Some(b), orphans, &active, depth - 1);
                res.append(content);
            }
            let scope = self.comps[b].parent;
            self.collect(
                b,
                &active,
                scope,
                res,
                orphans,
                &super_overridden,
                depth - 1,
            );
        }
        if !self.charge(ast.items.len(), ast.span) {
            return;
        }
        let subst = |id: &mut Ident| {
            if let Some(actual) = binding.get(&id.name) {
                id.name = actual.clone();
            }
        };
        let mut lattices = Vec::new();
        for item in &ast.items {
            match item {
                Item::Type(t) => {
                    let mut t = t.clone();
                    subst(&mut t.name);
                    match &mut t.def {
                        ast::TypeDef::Subtype(base) => subst(base),
                        ast::TypeDef::Union(members) => members.iter_mut().for_each(subst),
                        ast::TypeDef::Record(fields) => {
                            fields.iter_mut().for_each(|f| subst(&mut f.ty))
                        }
                        ast::TypeDef::Adt(branches) => branches
                            .iter_mut()
                            .flat_map(|b| b.fields.iter_mut())
                            .for_each(|f| subst(&mut f.ty)),
                    }
                    res.types.push(t);
                }
                Item::Decl(d) => {
                    let mut d = d.clone();
                    d.attrs.iter_mut().for_each(|a| subst(&mut a.ty));
                    res.decls.push(d);
                }
                Item::Directive(d) => res.directives.push(d.clone()),
                Item::Functor { .. } | Item::Include { .. } => res.others.push(item.clone()),
                // A lattice names a type, which instantiation would prefix: kept to the
                // top level (where a component's relations can use it).
                Item::Lattice { span, .. } => lattices.push(*span),
                Item::Clause(_)
                | Item::Component(_)
                | Item::Init(_)
                | Item::Override { .. }
                | Item::Pragma { .. }
                | Item::Once { .. } => {}
            }
        }
        for span in lattices {
            self.errors.push(
                Diagnostic::error("`.lattice` inside a component is not supported", span)
                    .with_help("declare the lattice at the top level of the program"),
            );
        }
        let declared: HashSet<&str> = res.decls.iter().map(|d| d.name.name.as_str()).collect();
        let mut local = Vec::new();
        for item in &ast.items {
            let Item::Clause(c) = item else { continue };
            // A multi-head clause is split by head, as Soufflé's parser does.
            for (i, head) in c.heads.iter().enumerate() {
                let first = head.name.name.split('.').next().unwrap_or("");
                if overridden.contains(first) {
                    continue;
                }
                let clause = if c.heads.len() == 1 {
                    c.clone()
                } else {
                    ast::Clause {
                        heads: vec![c.heads[i].clone()],
                        body: c.body.clone(),
                        dominating: c.dominating.clone(),
                        plan: c.plan.clone(),
                        span: c.span,
                    }
                };
                if declared.contains(head.name.name.as_str()) {
                    local.push(clause);
                } else {
                    orphans.push(clause);
                }
            }
        }
        let (adopted, rest): (Vec<_>, Vec<_>) =
            std::mem::take(orphans).into_iter().partition(|c| {
                c.heads
                    .first()
                    .is_some_and(|h| declared.contains(h.name.name.as_str()))
            });
        *orphans = rest;
        res.clauses.extend(local);
        res.clauses.extend(adopted);
    }
}

/// Prefixes the types and relations of `res` with `prefix.` and renames every reference
/// to them in `res` and in `orphans`.
fn rename(prefix: &str, res: &mut Content, orphans: &mut [ast::Clause]) {
    let qualify = |name: &str| format!("{prefix}.{name}");
    let mut types: HashMap<String, String> = HashMap::new();
    for t in &mut res.types {
        let new = qualify(&t.name.name);
        types.insert(std::mem::replace(&mut t.name.name, new.clone()), new);
    }
    let mut relations: HashMap<String, String> = HashMap::new();
    for d in &mut res.decls {
        let new = qualify(&d.name.name);
        relations.insert(std::mem::replace(&mut d.name.name, new.clone()), new);
    }
    let fix = |map: &HashMap<String, String>, id: &mut Ident| {
        if let Some(new) = map.get(&id.name) {
            id.name = new.clone();
        }
    };
    for d in &mut res.decls {
        d.attrs.iter_mut().for_each(|a| fix(&types, &mut a.ty));
        if let Some(source) = &mut d.debug_delta {
            fix(&relations, source);
        }
    }
    for t in &mut res.types {
        match &mut t.def {
            ast::TypeDef::Subtype(base) => fix(&types, base),
            ast::TypeDef::Union(members) => members.iter_mut().for_each(|m| fix(&types, m)),
            ast::TypeDef::Record(fields) => fields.iter_mut().for_each(|f| fix(&types, &mut f.ty)),
            ast::TypeDef::Adt(branches) => branches
                .iter_mut()
                .flat_map(|b| b.fields.iter_mut())
                .for_each(|f| fix(&types, &mut f.ty)),
        }
    }
    for d in &mut res.directives {
        d.relations.iter_mut().for_each(|r| fix(&relations, r));
    }
    for c in res.clauses.iter_mut().chain(orphans.iter_mut()) {
        rename_atoms(c, &relations);
    }
}

enum Node<'x> {
    Body(&'x mut ast::Body),
    Expr(&'x mut ast::Expr),
}

/// Renames the relations of every atom of `clause` (heads, body, negations, aggregate
/// bodies) found in `map`. Iterative: an expression may be a chain 100,000 deep.
fn rename_atoms(clause: &mut ast::Clause, map: &HashMap<String, String>) {
    let fix = |id: &mut Ident| {
        if let Some(new) = map.get(&id.name) {
            id.name = new.clone();
        }
    };
    let mut stack: Vec<Node> = Vec::new();
    for h in clause.heads.iter_mut().chain(clause.dominating.as_mut()) {
        fix(&mut h.name);
        stack.extend(h.args.iter_mut().map(Node::Expr));
    }
    if let Some(body) = &mut clause.body {
        stack.push(Node::Body(body));
    }
    while let Some(node) = stack.pop() {
        match node {
            Node::Body(ast::Body::Literal(l)) => match l {
                ast::Literal::Atom(a) | ast::Literal::Negation { atom: a, .. } => {
                    fix(&mut a.name);
                    stack.extend(a.args.iter_mut().map(Node::Expr));
                }
                ast::Literal::Compare { lhs, rhs, .. } => {
                    stack.push(Node::Expr(lhs));
                    stack.push(Node::Expr(rhs));
                }
                ast::Literal::Bool(..) => {}
            },
            Node::Body(ast::Body::And(parts, _) | ast::Body::Or(parts, _)) => {
                stack.extend(parts.iter_mut().map(Node::Body));
            }
            Node::Expr(e) => match e {
                ast::Expr::Unary { arg, .. } => stack.push(Node::Expr(arg)),
                ast::Expr::Binary { lhs, rhs, .. } => {
                    stack.push(Node::Expr(lhs));
                    stack.push(Node::Expr(rhs));
                }
                ast::Expr::Call { args, .. } => stack.extend(args.iter_mut().map(Node::Expr)),
                ast::Expr::Aggregate { arg, body, .. } => {
                    if let Some(arg) = arg {
                        stack.push(Node::Expr(arg));
                    }
                    stack.push(Node::Body(body));
                }
                _ => {}
            },
        }
    }
}
