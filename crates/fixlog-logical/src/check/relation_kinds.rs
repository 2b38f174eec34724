//! What the checker does for relations that are not plain sets of derived tuples:
//! `eqrel` declarations (binary, both attributes of one type), `choice-domain`
//! attributes, and subsumptive clauses `a(x) <= a(y) :- body.`, which become the rules
//! of the tuples they remove ([`ir::Program::subsumptions`]). The driver keeps these
//! relations so (`fixlog_exec::maintain`, `fixlog_exec::driver`); here they are only
//! checked and lowered.

use super::Checker;
use crate::ir;
use fixlog_syntax::ast;
use fixlog_syntax::Diagnostic;

impl Checker<'_> {
    /// The columns of each `choice-domain` of `d`, reporting unknown attributes and
    /// choice on an `eqrel` relation.
    pub(super) fn choice_domains(&mut self, d: &ast::Decl, rel: &ir::Relation) -> Vec<Vec<usize>> {
        let mut domains = Vec::new();
        for domain in &d.choice_domains {
            if rel.eqrel {
                self.error(Diagnostic::error(
                    format!(
                        "`{}` is an `eqrel` relation and cannot have a `choice-domain`",
                        d.name.name
                    ),
                    domain.span,
                ));
                continue;
            }
            let mut columns = Vec::new();
            for a in &domain.attrs {
                match rel.columns.iter().position(|c| c.name == a.name) {
                    Some(c) if columns.contains(&c) => self.error(Diagnostic::error(
                        format!("attribute `{}` appears twice in this choice domain", a.name),
                        a.span,
                    )),
                    Some(c) => columns.push(c),
                    None => self.error(Diagnostic::error(
                        format!(
                            "`{}` is not an attribute of `{}` (in `choice-domain`)",
                            a.name, d.name.name
                        ),
                        a.span,
                    )),
                }
            }
            if columns.len() == domain.attrs.len() {
                domains.push(columns);
            }
        }
        domains
    }

    /// `dominated <= dominating :- body.`: checked as the clause
    /// `dominated :- dominated, dominating, body, (d1 != g1 ; ... ; dn != gn).` whose
    /// rules are the relation's subsumptions (see [`ir::Program::subsumptions`]).
    pub(super) fn subsumptive_clause(&mut self, c: &ast::Clause, dominating: &ast::Atom) {
        let (Some(dominated), Some(body)) = (c.heads.first(), &c.body) else {
            return;
        };
        if let Some(&rel) = self.rel_ids.get(&dominated.name.name) {
            if self.lattice_cols.contains_key(&rel) {
                self.error(Diagnostic::error(
                    format!(
                        "`{}` has lattice attributes and cannot have subsumptive clauses",
                        dominated.name.name
                    ),
                    c.span,
                ));
                return;
            }
        }
        if dominated.name.name != dominating.name.name {
            self.error(Diagnostic::error(
                format!(
                    "the two atoms of a subsumptive clause must be of one relation (`{}` and `{}`)",
                    dominated.name.name, dominating.name.name
                ),
                dominating.span,
            ));
            return;
        }
        let Some(rel) = self.resolve_head(dominated) else {
            return;
        };
        if self.resolve_atom(dominating).is_none() {
            return;
        }
        let kind = if self.relations[rel].eqrel {
            Some("an `eqrel` relation: a subsumptive clause cannot remove its pairs")
        } else if !self.relations[rel].choice_domains.is_empty() {
            Some("a `choice-domain` relation: a subsumptive clause cannot remove its tuples")
        } else {
            None
        };
        if let Some(kind) = kind {
            self.error(Diagnostic::error(
                format!("`{}` is {kind}", dominated.name.name),
                c.span,
            ));
            return;
        }
        let mut wildcard = false;
        for arg in dominated.args.iter().chain(&dominating.args) {
            if let ast::Expr::Wildcard(s) = arg {
                self.error(Diagnostic::error(
                    "`_` in the head of a subsumptive clause",
                    *s,
                ));
                wildcard = true;
            }
        }
        if wildcard {
            return;
        }
        // Columns where both atoms name the same variable cannot differ.
        let same_var = |d: &ast::Expr, g: &ast::Expr| matches!((d, g), (ast::Expr::Var(a), ast::Expr::Var(b)) if a.name == b.name);
        let differ: Vec<ast::Body> = dominated
            .args
            .iter()
            .zip(&dominating.args)
            .filter(|(d, g)| !same_var(d, g))
            .map(|(d, g)| {
                ast::Body::Literal(ast::Literal::Compare {
                    op: ast::CmpOp::Ne,
                    lhs: d.clone(),
                    rhs: g.clone(),
                    span: c.span,
                })
            })
            .collect();
        if differ.is_empty() {
            // The two atoms are one tuple: nothing else dominates it.
            return;
        }
        let lowered = ast::Clause {
            heads: vec![dominated.clone()],
            body: Some(ast::Body::And(
                vec![
                    ast::Body::Literal(ast::Literal::Atom(dominated.clone())),
                    ast::Body::Literal(ast::Literal::Atom(dominating.clone())),
                    body.clone(),
                    ast::Body::Or(differ, c.span),
                ],
                body.span(),
            )),
            dominating: None,
            plan: Vec::new(),
            span: c.span,
        };
        let before = self.rules.len();
        let autoincs_before = self.autoincs.len();
        self.clause(&lowered);
        if let Some(a) = self.autoincs.get(autoincs_before) {
            let span = a.span;
            self.autoincs.truncate(autoincs_before);
            self.error(Diagnostic::error(
                "`autoinc()` cannot be used in a subsumptive clause",
                span,
            ));
        }
        let rules: Vec<ir::Rule> = self.rules.drain(before..).collect();
        self.subsumptions.extend(rules);
    }
}

/// Why `d` cannot be an `eqrel` relation, if it cannot: Soufflé's eqrel relations are
/// binary with both attributes of the same type.
pub(super) fn eqrel_error(d: &ast::Decl, rel: &ir::Relation) -> Option<String> {
    match &rel.columns[..] {
        [a, b] if a.ty == b.ty => None,
        [a, b] => Some(format!(
            "the attributes of the `eqrel` relation `{}` have different types (`{}` and `{}`)",
            d.name.name, a.type_name, b.type_name
        )),
        cols => Some(format!(
            "an `eqrel` relation must have two attributes; `{}` has {}",
            d.name.name,
            cols.len()
        )),
    }
}
