//! The magic-set transform (Soufflé's `--magic-transform` / `.pragma
//! "magic-transform"`): a relation asked with some arguments bound (`path("a", y)`) is
//! computed only for the bindings that are asked, instead of whole.
//!
//! For every positive atom over a transformed relation `r` whose arguments are partly
//! bound — by constants or by variables of the literals before it (sideways
//! information passing left to right through positive atoms and equalities) — the
//! atom reads the *adorned* relation `r@bf` (`b` bound, `f` free) instead, and a
//! *magic* rule collects the bound values it asks for into `magic@r@bf` (its body:
//! the literals before the atom that bind them). The adorned relation's rules are
//! `r`'s rules with `magic@r@bf(bound head arguments)` first, their bodies rewritten
//! the same way; `r`'s facts are copied into it. The original relation keeps its rules
//! for the occurrences that are not transformed (all arguments free, negations,
//! aggregates); what no output needs any more is not evaluated (see
//! [`crate::ir::Program::needed_for_outputs`]).
//!
//! Stratification stays valid: magic rules contain positive literals only, negations
//! and aggregates read the original relations, and adorned and magic relations are
//! made per *label* of the rule that asks (the most negations and aggregates on a path
//! of dependencies from its head), so what depends on a negation never feeds the magic
//! set of what the negated relation needs: every negative edge goes to a lower label.
//!
//! Relations transformed: those named (or all, `*`), or declared `magic`, except those
//! declared `no_magic` or excluded, inputs, outputs and `.printsize` relations,
//! relations without rules, `eqrel` and `choice-domain` relations, relations with
//! subsumptive clauses, and relations with a rule that is not pure (a functor with an
//! effect or a result that may differ, see [`crate::ir::Functor::is_pure`]).

use crate::ir::*;
use crate::rewrite::{expr_vars, rule_is_pure, vars_of_expr, vars_of_literal};
use std::collections::{HashMap, HashSet};

/// The adorned copies of relation `rel` that the transform made (named `r@bf`, or
/// `r@bf.1` for the copy of another label; no declared name contains `@`), which hold
/// its facts: facts added to `rel` later (`Fixlog::insert`) belong in them too.
pub fn copies_of(program: &Program, rel: RelId) -> Vec<RelId> {
    let prefix = format!("{}@", program.relations[rel].name);
    program
        .relations
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r.name.strip_prefix(&prefix).is_some_and(|rest| {
                let (adorn, label) = rest.split_once('.').unwrap_or((rest, "0"));
                !adorn.is_empty()
                    && adorn.chars().all(|c| c == 'b' || c == 'f')
                    && label.chars().all(|c| c.is_ascii_digit())
            })
        })
        .map(|(i, _)| i)
        .collect()
}

/// Which relations to transform.
#[derive(Clone, Debug, Default)]
pub struct MagicSpec {
    /// `*` was given: every relation that can be.
    pub all: bool,
    pub names: HashSet<String>,
    /// `magic-transform-exclude`.
    pub exclude: HashSet<String>,
}

impl MagicSpec {
    /// Parse `a,b c` or `*` (names separated by commas or spaces).
    pub fn parse(text: &str) -> MagicSpec {
        let mut spec = MagicSpec::default();
        spec.add(text);
        spec
    }

    pub fn add(&mut self, text: &str) {
        for name in text.split([',', ' ', '\t']).filter(|s| !s.is_empty()) {
            if name == "*" {
                self.all = true;
            } else {
                self.names.insert(name.to_string());
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        !self.all && self.names.is_empty()
    }
}

/// The relations the transform may adorn. `qualifier[r]`: `Some(true)` for `magic`,
/// `Some(false)` for `no_magic`.
pub(crate) fn candidates(
    relations: &[Relation],
    rules: &[Rule],
    subsumptions: &[Rule],
    spec: &MagicSpec,
    qualifier: &dyn Fn(&str) -> Option<bool>,
) -> Vec<bool> {
    let mut has_rules = vec![false; relations.len()];
    let mut pure = vec![true; relations.len()];
    for r in rules {
        has_rules[r.head.rel] = true;
        if !rule_is_pure(r) {
            pure[r.head.rel] = false;
        }
    }
    let mut subsumed = vec![false; relations.len()];
    for r in subsumptions {
        subsumed[r.head.rel] = true;
    }
    relations
        .iter()
        .enumerate()
        .map(|(i, rel)| {
            let asked = match qualifier(&rel.name) {
                Some(q) => q,
                None => spec.all || spec.names.contains(&rel.name),
            };
            asked
                && !spec.exclude.contains(&rel.name)
                && has_rules[i]
                && pure[i]
                && !subsumed[i]
                && rel.inputs.is_empty()
                && rel.outputs.is_empty()
                && !rel.printsize
                && !rel.eqrel
                && rel.choice_domains.is_empty()
        })
        .collect()
}

struct Magic<'a> {
    relations: &'a mut Vec<Relation>,
    original_rules: Vec<Rule>,
    original_facts: Vec<Fact>,
    candidate: Vec<bool>,
    /// (relation, adornment, label) -> (adorned relation, magic relation).
    adorned: HashMap<(RelId, Vec<bool>, usize), (RelId, RelId)>,
    queue: Vec<(RelId, Vec<bool>, usize)>,
    rules: Vec<Rule>,
    facts: Vec<Fact>,
}

/// Transform `rules` and `facts` (before stratification), given the strata of the
/// program as it is and the [`candidates`]. Returns whether anything changed.
pub(crate) fn transform(
    relations: &mut Vec<Relation>,
    facts: &mut Vec<Fact>,
    rules: &mut Vec<Rule>,
    strata: &[Stratum],
    candidate: Vec<bool>,
    ordered_reads: &[(RelId, RelId)],
) -> bool {
    if !candidate.iter().any(|&c| c) {
        return false;
    }
    // A relation's label: the most negations and aggregates on a path of dependencies
    // from it (strata come in dependency order, and within one every edge is positive).
    let mut label = vec![0; relations.len()];
    fn reads(body: &[Literal], under: bool, out: &mut Vec<(RelId, bool)>) {
        for l in body {
            match l {
                Literal::Atom(a) => out.push((a.rel, under)),
                Literal::Negation(a) => out.push((a.rel, true)),
                Literal::Aggregate { body, .. } => reads(body, true, out),
                Literal::Compare { .. } | Literal::Predicate { .. } | Literal::Range { .. } => {}
            }
        }
    }
    for st in strata {
        let mut level = 0;
        for &i in &st.rules {
            let mut rs = Vec::new();
            reads(&rules[i].body, false, &mut rs);
            for (r, neg) in rs {
                if !st.relations.contains(&r) {
                    level = level.max(label[r] + usize::from(neg));
                }
            }
        }
        // A relation filled from another after it is complete (`autoinc()`'s target
        // from its source) reads it as a negation does.
        for &(target, source) in ordered_reads {
            if st.relations.contains(&target) && !st.relations.contains(&source) {
                level = level.max(label[source] + 1);
            }
        }
        for &r in &st.relations {
            label[r] = level;
        }
    }
    let mut m = Magic {
        relations,
        original_rules: rules.clone(),
        original_facts: facts.clone(),
        candidate,
        adorned: HashMap::new(),
        queue: Vec::new(),
        rules: Vec::new(),
        facts: std::mem::take(facts),
    };
    for rule in std::mem::take(rules) {
        let l = label[rule.head.rel];
        let r = m.rewrite(rule, None, l);
        m.rules.push(r);
    }
    let mut rules_of: HashMap<RelId, Vec<usize>> = HashMap::new();
    for (i, r) in m.original_rules.iter().enumerate() {
        rules_of.entry(r.head.rel).or_default().push(i);
    }
    while let Some((rel, adorn, l)) = m.queue.pop() {
        let (ra, ma) = m.adorned[&(rel, adorn.clone(), l)];
        for &i in rules_of.get(&rel).map_or(&[][..], Vec::as_slice) {
            let mut rule = m.original_rules[i].clone();
            let mut args = Vec::new();
            let mut extra = Vec::new();
            for (j, a) in rule.head.args.clone().into_iter().enumerate() {
                if !adorn[j] {
                    continue;
                }
                args.push(match a {
                    Expr::Var(v) => Term::Var(v),
                    Expr::Const(c) => Term::Const(c),
                    e => {
                        let ty = m.relations[rel].columns[j].ty;
                        rule.vars.push(VarInfo {
                            name: format!("$magic{j}"),
                            ty,
                        });
                        let v = rule.vars.len() - 1;
                        extra.push(Literal::Compare {
                            op: CmpOp::Eq,
                            lhs: Expr::Var(v),
                            rhs: e,
                            ty,
                            span: rule.head.span,
                        });
                        Term::Var(v)
                    }
                });
            }
            rule.body.extend(extra);
            rule.head.rel = ra;
            // The body changed shape (the magic atom comes first): the `.plan` no
            // longer applies.
            rule.plan.clear();
            let magic = Atom {
                rel: ma,
                args,
                span: rule.head.span,
            };
            let r = m.rewrite(rule, Some(magic), l);
            m.rules.push(r);
        }
    }
    *rules = m.rules;
    *facts = m.facts;
    true
}

fn term_vars(a: &Atom, bound: &mut HashSet<VarId>) {
    for t in &a.args {
        if let Term::Var(v) = t {
            bound.insert(*v);
        }
    }
}

fn all_bound(es: &[&Expr], bound: &HashSet<VarId>) -> bool {
    let mut vs = Vec::new();
    es.iter().for_each(|e| vars_of_expr(e, &mut vs));
    vs.iter().all(|v| bound.contains(v))
}

impl Magic<'_> {
    fn adorn_id(&mut self, rel: RelId, adorn: &[bool], label: usize) -> (RelId, RelId) {
        let key = (rel, adorn.to_vec(), label);
        if let Some(&ids) = self.adorned.get(&key) {
            return ids;
        }
        let orig = self.relations[rel].clone();
        let suffix: String = adorn.iter().map(|&b| if b { 'b' } else { 'f' }).collect();
        let mut name = format!("{}@{suffix}", orig.name);
        if label > 0 {
            name = format!("{name}.{label}");
        }
        let adorned = Relation {
            name: name.clone(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            printsize: false,
            ..orig.clone()
        };
        let magic = Relation::plain(
            format!("magic@{name}"),
            orig.columns
                .iter()
                .zip(adorn)
                .filter(|(_, &b)| b)
                .map(|(c, _)| c.clone())
                .collect(),
            orig.span,
        );
        self.relations.push(adorned);
        let ra = self.relations.len() - 1;
        self.relations.push(magic);
        let ma = self.relations.len() - 1;
        for f in &self.original_facts {
            if f.rel == rel {
                self.facts.push(Fact {
                    rel: ra,
                    ..f.clone()
                });
            }
        }
        self.adorned.insert(key.clone(), (ra, ma));
        self.queue.push(key);
        (ra, ma)
    }

    /// `rule` with its body's positive atoms over candidates adorned (and `magic`, the
    /// head's magic atom, first); the magic rules it needs go to `self.rules`.
    fn rewrite(&mut self, mut rule: Rule, magic: Option<Atom>, label: usize) -> Rule {
        let mut bound = HashSet::new();
        let mut body = Vec::new();
        let mut prefix: Vec<Literal> = Vec::new();
        if let Some(m) = magic {
            term_vars(&m, &mut bound);
            body.push(Literal::Atom(m.clone()));
            prefix.push(Literal::Atom(m));
        }
        for l in std::mem::take(&mut rule.body) {
            match l {
                Literal::Atom(mut a) => {
                    if a.rel < self.candidate.len() && self.candidate[a.rel] {
                        let adorn: Vec<bool> = a
                            .args
                            .iter()
                            .map(|t| match t {
                                Term::Const(_) => true,
                                Term::Var(v) => bound.contains(v),
                                Term::Wildcard => false,
                            })
                            .collect();
                        if adorn.iter().any(|&b| b) {
                            let (ra, ma) = self.adorn_id(a.rel, &adorn, label);
                            // The bound arguments (those `adorn` marks): as the terms
                            // of the magic atom and as the magic rule's head.
                            let (args, head_args): (Vec<Term>, Vec<Expr>) = a
                                .args
                                .iter()
                                .filter_map(|t| match t {
                                    Term::Const(c) => Some((*t, Expr::Const(*c))),
                                    Term::Var(v) if bound.contains(v) => Some((*t, Expr::Var(*v))),
                                    Term::Var(_) | Term::Wildcard => None,
                                })
                                .unzip();
                            let trivial = matches!(prefix.as_slice(),
                                [Literal::Atom(p)] if p.rel == ma && p.args == args);
                            if !trivial {
                                let head = Head {
                                    rel: ma,
                                    args: head_args,
                                    span: a.span,
                                };
                                self.rules.push(compact(Rule {
                                    head,
                                    body: prefix.clone(),
                                    vars: rule.vars.clone(),
                                    span: rule.span,
                                    plan: Vec::new(),
                                }));
                            }
                            a.rel = ra;
                        }
                    }
                    term_vars(&a, &mut bound);
                    prefix.push(Literal::Atom(a.clone()));
                    body.push(Literal::Atom(a));
                }
                Literal::Compare {
                    op,
                    ref lhs,
                    ref rhs,
                    ..
                } => {
                    let binds = |x: &Expr, y: &Expr, bound: &HashSet<VarId>| match x {
                        Expr::Var(v) if !bound.contains(v) && all_bound(&[y], bound) => Some(*v),
                        _ => None,
                    };
                    let newly = if op == CmpOp::Eq {
                        binds(lhs, rhs, &bound).or_else(|| binds(rhs, lhs, &bound))
                    } else {
                        None
                    };
                    if let Some(v) = newly {
                        bound.insert(v);
                        prefix.push(l.clone());
                    } else if all_bound(&[lhs, rhs], &bound) {
                        prefix.push(l.clone());
                    }
                    body.push(l);
                }
                Literal::Predicate { ref args, .. } => {
                    if all_bound(&args.iter().collect::<Vec<_>>(), &bound) {
                        prefix.push(l.clone());
                    }
                    body.push(l);
                }
                // A range binds its variable, but the magic rules leave it out (their
                // sets only grow by that, which is sound).
                Literal::Negation(_) | Literal::Aggregate { .. } | Literal::Range { .. } => {
                    body.push(l)
                }
            }
        }
        rule.body = body;
        rule
    }
}

/// Drop the variables a rule does not use (the magic rules copy their rule's list).
fn compact(mut rule: Rule) -> Rule {
    let mut used = Vec::new();
    rule.head
        .args
        .iter()
        .for_each(|e| vars_of_expr(e, &mut used));
    rule.body.iter().for_each(|l| vars_of_literal(l, &mut used));
    let mut map = vec![usize::MAX; rule.vars.len()];
    let mut vars = Vec::new();
    used.sort_unstable();
    used.dedup();
    for v in used {
        map[v] = vars.len();
        vars.push(rule.vars[v].clone());
    }
    let f = |v: VarId| map[v];
    rule.head.args = rule
        .head
        .args
        .iter()
        .map(|e| expr_vars(e, &|v| Expr::Var(f(v))))
        .collect();
    rule.body = rule
        .body
        .iter()
        .map(|l| crate::rewrite::rename_literal(l, &f))
        .collect();
    rule.vars = vars;
    rule
}

#[cfg(test)]
mod tests {
    use crate::{compile_str_opts, CheckOptions, Literal, Program};
    use fixlog_syntax::SourceMap;

    fn compile(text: &str, magic: &str) -> Program {
        let mut sm = SourceMap::new();
        let options = CheckOptions {
            magic_transform: Some(magic.into()),
            ..CheckOptions::default()
        };
        compile_str_opts("t.dl", text, &mut sm, &Default::default(), &options)
            .expect("a valid program")
    }

    const TC: &str = r#"
        .decl e(x: symbol, y: symbol)
        e("a", "b").
        .decl p(x: symbol, y: symbol)
        p(x, y) :- e(x, y).
        p(x, y) :- p(x, z), e(z, y).
        .decl q(y: symbol)
        .output q
        q(y) :- p("a", y).
    "#;

    #[test]
    fn a_bound_question_reads_an_adorned_copy_fed_by_a_magic_set() {
        let p = compile(TC, "*");
        let pbf = p.relation_id("p@bf").expect("adorned copy");
        let magic = p.relation_id("magic@p@bf").expect("magic set");
        assert_eq!(p.relations[magic].arity(), 1);
        let q = p.relation_id("q").unwrap();
        // q reads the copy.
        let q_rule = p.rules.iter().find(|r| r.head.rel == q).unwrap();
        assert!(matches!(&q_rule.body[0], Literal::Atom(a) if a.rel == pbf));
        // The magic set's one rule asks "a"; the recursive rule's own question
        // (magic(x) :- magic(x)) is left out.
        let magic_rules: Vec<_> = p.rules.iter().filter(|r| r.head.rel == magic).collect();
        assert_eq!(magic_rules.len(), 1);
        assert!(magic_rules[0].body.is_empty());
        // The copy's rules start with the magic atom.
        let copies: Vec<_> = p.rules.iter().filter(|r| r.head.rel == pbf).collect();
        assert_eq!(copies.len(), 2);
        for r in copies {
            assert!(matches!(&r.body[0], Literal::Atom(a) if a.rel == magic));
        }
    }

    #[test]
    fn only_the_named_relations_and_never_outputs_or_inputs() {
        let p = compile(TC, "q");
        assert!(p.relations.iter().all(|r| !r.name.contains('@')));
        let p = compile(TC, "e, p");
        assert!(p.relation_id("p@bf").is_some());
        assert!(p.relations.iter().all(|r| !r.name.starts_with("e@")));
    }

    #[test]
    fn negated_occurrences_read_the_original() {
        let p = compile(
            r#"
            .decl e(x: number, y: number)
            e(1, 2).
            .decl p(x: number, y: number)
            p(x, y) :- e(x, y).
            .decl q(x: number)
            .output q
            q(x) :- e(x, _), !p(x, 2).
        "#,
            "*",
        );
        assert!(p.relations.iter().all(|r| !r.name.contains('@')));
    }
}
