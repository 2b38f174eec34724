//! Pass 2: range restriction on the lowered form.

use super::*;

impl RuleCx<'_, '_> {
    /// Check that every variable that must be bound is. `must_bind` are the head
    /// arguments (`in_agg == false`) or the aggregated expression (`in_agg == true`).
    ///
    /// Positive atoms bind their variables; `v = e` binds `v` once `e`'s variables are
    /// bound; an aggregate binds its result once its correlated (injected) variables are
    /// bound. Variables that would be bound if every aggregate's result were, but are
    /// not, depend on an aggregate that depends on them: that is reported at the
    /// aggregate, not at every variable it leaves unbound. Fresh `$` variables are never
    /// reported: one of the variables they are computed from is.
    pub(super) fn range_check(
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
            ground_literal(&mut g, l);
            if let LLit::Agg {
                out,
                arg,
                body,
                outer,
                ..
            } = l
            {
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
                LLit::Cmp { .. } | LLit::Pred { .. } | LLit::Range { .. } => {
                    let mut vs = Vec::new();
                    match l {
                        LLit::Range { args, .. } => args.iter().for_each(|a| a.vars(&mut vs)),
                        _ => l.vars(&mut vs),
                    }
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
    pub(super) fn is_fresh(&self, v: VarId) -> bool {
        self.vars.get(v).is_some_and(|d| d.name.starts_with('$'))
    }

    pub(super) fn unbound(&self, v: VarId, s: Span) -> Diagnostic {
        let name = &self.vars[v].name;
        Diagnostic::error(format!("variable `{name}` is not bound"), s).with_help(format!(
            "`{name}` must occur in a positive atom of the body, or be equated to an expression over bound variables"
        ))
    }
}

/// What a literal grounds, apart from aggregates (each pass treats those its own way):
/// a positive atom binds its variables, `v = e` binds `v` once `e`'s variables are
/// bound, `v = range(...)` binds `v` once its arguments are. Shared by range
/// restriction and the grounding of aggregate witnesses (`witness.rs`).
pub(super) fn ground_literal(g: &mut Grounding, l: &LLit) {
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
        LLit::Range { out, args, .. } => {
            let mut vs = Vec::new();
            args.iter().for_each(|a| a.vars(&mut vs));
            g.rule(*out, vs.into_iter().map(|x| x.0).collect());
        }
        _ => {}
    }
}
