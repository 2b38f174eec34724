//! `.decl d = debug_delta(r)` (Soufflé 2.4.1+; see [`ir::DebugDelta`]): the relation
//! `d` gets `r`'s attributes and an `unsigned` iteration (named `<iteration>`, as
//! Soufflé's `DebugDeltaRelationTransformer` names it); the engine fills it.
//!
//! What a program may not do with `d`, each a located error: give it rules, facts,
//! subsumptive clauses or `.input`; declare it `eqrel` or `inline`; name an unknown
//! relation, another `debug_delta` relation, an `inline` relation or itself as `r`;
//! read `d` in `r`'s stratum (it is complete only when that stratum ends). A `d` whose
//! `r` is not recursive stays empty (as in Soufflé), with a warning.

use super::Checker;
use crate::ir::{self, ColType, Literal, RelId, Rule, Stratum};
use fixlog_syntax::{ast, Diagnostic, Span};
use std::collections::HashSet;

impl Checker<'_> {
    /// A `debug_delta` declaration: the relation is registered now (its name may be
    /// used anywhere), its columns once every declaration is known
    /// ([`Checker::resolve_debug_deltas`]).
    pub(super) fn debug_decl(&mut self, d: &ast::Decl, source: &ast::Ident) {
        let mut rel = ir::Relation::plain(d.name.name.clone(), Vec::new(), d.span);
        for q in &d.qualifiers {
            match q.name.as_str() {
                "output" => rel.outputs.push(ir::IoDirective {
                    params: Default::default(),
                    span: q.span,
                }),
                "printsize" => rel.printsize = true,
                "input" | "eqrel" | "inline" => self.error(
                    Diagnostic::error(
                        format!(
                            "`debug_delta` relation `{}` cannot be declared `{}`",
                            d.name.name, q.name
                        ),
                        q.span,
                    )
                    .with_note(format!(
                        "`{}` holds the new tuples of each iteration of `{}`, which the engine writes",
                        d.name.name, source.name
                    )),
                ),
                // Representations and `magic`/`no_magic` change nothing here.
                _ => {}
            }
        }
        let id = self.relations.len();
        self.rel_ids.insert(d.name.name.clone(), id);
        self.relations.push(rel);
        self.debug_pending.push((id, source.clone()));
    }

    /// Gives every `debug_delta` relation its columns: those of its source and the
    /// iteration. Called when all declarations are known.
    pub(super) fn resolve_debug_deltas(&mut self) {
        let pending = std::mem::take(&mut self.debug_pending);
        let targets: HashSet<RelId> = pending.iter().map(|(t, _)| *t).collect();
        for (target, source) in pending {
            let name = self.relations[target].name.clone();
            let Some(&src) = self.rel_ids.get(&source.name) else {
                self.unknown_relation(&source, " in `debug_delta(...)`");
                continue;
            };
            let problem = if src == target {
                Some(format!("`{name}` cannot be the `debug_delta` of itself"))
            } else if targets.contains(&src) {
                Some(format!(
                    "`{}` is a `debug_delta` relation: it has no iterations of its own to record",
                    source.name
                ))
            } else if self.inline.contains(&source.name) {
                Some(format!(
                    "`{}` is `inline`: it is unfolded into the rules that use it and has no iterations to record",
                    source.name
                ))
            } else {
                None
            };
            if let Some(p) = problem {
                self.error(Diagnostic::error(p, source.span));
                continue;
            }
            let mut columns = self.relations[src].columns.clone();
            columns.push(ir::Column {
                name: "<iteration>".to_string(),
                ty: ColType::Unsigned,
                type_name: "unsigned".to_string(),
            });
            self.relations[target].columns = columns;
            self.debug_deltas.push(ir::DebugDelta {
                source: src,
                target,
                span: source.span,
            });
        }
    }

    /// Whether `rel` is a `debug_delta` relation (declared so, resolved or not).
    pub(super) fn is_debug_target(&self, rel: RelId) -> bool {
        self.debug_deltas.iter().any(|d| d.target == rel)
    }

    /// [`Checker::resolve_atom`] for the head of a clause, a fact or a subsumptive
    /// clause: a `debug_delta` relation has none.
    pub(super) fn resolve_head(&mut self, a: &ast::Atom) -> Option<RelId> {
        let rel = self.resolve_atom(a)?;
        if let Some(d) = self.debug_deltas.iter().find(|d| d.target == rel) {
            let source = self.relations[d.source].name.clone();
            self.error(
                Diagnostic::error(
                    format!(
                        "`{}` is a `debug_delta` relation: it cannot have rules or facts",
                        a.name.name
                    ),
                    a.span,
                )
                .with_note(format!(
                    "the engine fills it with the new tuples of each iteration of `{source}`"
                )),
            );
            return None;
        }
        Some(rel)
    }
}

/// Every relation a body reads (positive, negated, inside aggregates), with the atom.
fn body_atoms<'r>(body: &'r [Literal], out: &mut Vec<&'r ir::Atom>) {
    for l in body {
        match l {
            Literal::Atom(a) | Literal::Negation(a) => out.push(a),
            Literal::Aggregate { body, .. } => body_atoms(body, out),
            Literal::Compare { .. } | Literal::Predicate { .. } | Literal::Range { .. } => {}
        }
    }
}

/// A `debug_delta` relation read where its source depends on it (so within the
/// source's stratum, once the stratifier adds `target → source`): one error per
/// `debug_delta` relation, at the first atom that reads it on such a cycle. Checked
/// before stratifying, so that a negated or aggregated read gets this message rather
/// than the stratifier's.
pub(super) fn reads_in_own_stratum(
    relations: &[ir::Relation],
    rules: &[Rule],
    subsumptions: &[Rule],
    extra_reads: &[(RelId, RelId, Span)],
    debug_deltas: &[ir::DebugDelta],
) -> Vec<Diagnostic> {
    let n = relations.len();
    // What each relation reads.
    let mut reads: Vec<Vec<RelId>> = vec![Vec::new(); n];
    for r in rules.iter().chain(subsumptions) {
        let mut atoms = Vec::new();
        body_atoms(&r.body, &mut atoms);
        if let Some(out) = reads.get_mut(r.head.rel) {
            out.extend(atoms.iter().map(|a| a.rel));
        }
    }
    for &(t, s, _) in extra_reads {
        if let Some(out) = reads.get_mut(t) {
            out.push(s);
        }
    }
    let mut errors = Vec::new();
    for d in debug_deltas {
        // The relations `source` depends on, itself included.
        let mut seen = vec![false; n];
        let mut work = vec![d.source];
        while let Some(r) = work.pop() {
            if r >= n || std::mem::replace(&mut seen[r], true) {
                continue;
            }
            work.extend(reads[r].iter().copied());
        }
        if !seen.get(d.target).copied().unwrap_or(false) {
            continue;
        }
        let target = &relations[d.target].name;
        let source = &relations[d.source].name;
        let found = rules.iter().chain(subsumptions).find_map(|r| {
            if !seen.get(r.head.rel).copied().unwrap_or(false) {
                return None;
            }
            let mut atoms = Vec::new();
            body_atoms(&r.body, &mut atoms);
            atoms
                .iter()
                .find(|a| a.rel == d.target)
                .map(|a| (r.head.rel, a.span))
        });
        let (span, note) = match found {
            Some((head, span)) if head == d.source => (span, None),
            Some((head, span)) => (
                span,
                Some(format!(
                    "`{source}` depends on `{}`, which reads `{target}`",
                    relations[head].name
                )),
            ),
            None => (d.span, None),
        };
        let mut e = Diagnostic::error(
            format!(
                "`{target}` (the `debug_delta` of `{source}`) cannot be read in the stratum of `{source}`: it is complete only when that stratum ends"
            ),
            span,
        )
        .with_help(format!(
            "read `{target}` in relations that `{source}` does not depend on"
        ));
        if let Some(note) = note {
            e = e.with_note(note);
        }
        errors.push(e);
    }
    errors
}

/// Soufflé records a `debug_delta` only in a recursive stratum's loop: the relation of
/// a source that is not recursive stays empty (a warning).
pub(super) fn not_recursive_warnings(
    relations: &[ir::Relation],
    strata: &[Stratum],
    debug_deltas: &[ir::DebugDelta],
) -> Vec<Diagnostic> {
    debug_deltas
        .iter()
        .filter(|d| {
            !strata
                .iter()
                .any(|s| s.recursive && s.relations.contains(&d.source))
        })
        .map(|d| {
            Diagnostic::error(
                format!(
                    "`{}` is not recursive: its `debug_delta` relation `{}` stays empty",
                    relations[d.source].name, relations[d.target].name
                ),
                d.span,
            )
            .with_note(
                "a `debug_delta` relation records the new tuples of each iteration of a recursive stratum's loop",
            )
        })
        .collect()
}
