//! Witnesses of `min`/`max` aggregates, as Soufflé's `GroundWitnesses` transform: a
//! variable of a selection aggregate's body that also occurs outside the aggregate but
//! is bound nowhere outside it (`youngest(p, n) :- n = min a : family(p, a).`) is a
//! *witness*. The aggregate is computed over every binding (the witness is local to
//! it), and the outer body gets a copy of the aggregate's body (its other local
//! variables renamed) with the aggregated expression equal to the result, which binds
//! the witness: every binding that attains the minimum (or maximum) gives a tuple, so
//! ties give one tuple per witness, with no arbitrary choice.

use super::*;

impl RuleCx<'_, '_> {
    pub(super) fn ground_witnesses(&mut self, lits: &mut Vec<LLit>) {
        let has_selection = lits.iter().any(|l| {
            matches!(
                l,
                LLit::Agg {
                    func: ir::AggFunc::Min | ir::AggFunc::Max,
                    ..
                }
            )
        });
        if !has_selection {
            return;
        }
        // What the body grounds with every aggregate's value (as `range_check`).
        let mut g = Grounding::new(self.vars.len());
        let mut agg_outs = Vec::new();
        for l in lits.iter() {
            super::range::ground_literal(&mut g, l);
            if let LLit::Agg { out, .. } = l {
                agg_outs.push(*out);
            }
        }
        let grounded = g.solve(&agg_outs);
        let mut extra = Vec::new();
        for l in lits.iter_mut() {
            let LLit::Agg {
                out,
                func: ir::AggFunc::Min | ir::AggFunc::Max,
                arg: Some(arg),
                body,
                outer,
                span,
            } = l
            else {
                continue;
            };
            let mut vs = Vec::new();
            arg.vars(&mut vs);
            body.iter().for_each(|b| b.vars(&mut vs));
            let mut witnesses: Vec<VarId> = vs
                .iter()
                .map(|x| x.0)
                .filter(|v| outer.contains(v) && !grounded.get(*v).copied().unwrap_or(false))
                .collect();
            witnesses.sort_unstable();
            witnesses.dedup();
            if witnesses.is_empty() {
                continue;
            }
            // The copy for the outer body: the aggregate's own variables renamed.
            let mut copy_map: HashMap<VarId, VarId> = HashMap::new();
            for &(v, _) in &vs {
                if !outer.contains(&v) && !copy_map.contains_key(&v) {
                    let name = self.vars[v].name.trim_start_matches('$').to_string();
                    let fresh = self.fresh_var(&format!("w_{name}_"));
                    copy_map.insert(v, fresh);
                }
            }
            for b in body.iter() {
                extra.push(rename_lit(b, &copy_map));
            }
            extra.push(LLit::Cmp {
                op: ir::CmpOp::Eq,
                lhs: LExpr::Var(*out, *span),
                rhs: rename_expr(arg, &copy_map),
                span: *span,
            });
            // Inside the aggregate the witnesses become local.
            let mut local: HashMap<VarId, VarId> = HashMap::new();
            for &w in &witnesses {
                let name = self.vars[w].name.clone();
                let fresh = self.fresh_var(&format!("{name}_"));
                local.insert(w, fresh);
                outer.remove(&w);
            }
            *body = body.iter().map(|b| rename_lit(b, &local)).collect();
            *arg = rename_expr(arg, &local);
        }
        lits.extend(extra);
    }
}

fn rename_var(v: VarId, map: &HashMap<VarId, VarId>) -> VarId {
    map.get(&v).copied().unwrap_or(v)
}

fn rename_expr(e: &LExpr, map: &HashMap<VarId, VarId>) -> LExpr {
    let mut e = e.clone();
    rename_in(&mut e, map);
    e
}

fn rename_in(e: &mut LExpr, map: &HashMap<VarId, VarId>) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e {
            LExpr::Var(v, _) => *v = rename_var(*v, map),
            LExpr::Unary(_, a, _) | LExpr::Access(_, a, _) => stack.push(a),
            LExpr::Binary(_, a, b, _) => {
                stack.push(a);
                stack.push(b);
            }
            LExpr::Call(_, _, args, _) | LExpr::Record(args, _) | LExpr::Branch(_, _, args, _) => {
                stack.extend(args.iter_mut())
            }
            _ => {}
        }
    }
}

fn rename_lit(l: &LLit, map: &HashMap<VarId, VarId>) -> LLit {
    let mut l = l.clone();
    rename_lit_in(&mut l, map);
    l
}

fn rename_lit_in(l: &mut LLit, map: &HashMap<VarId, VarId>) {
    match l {
        LLit::Atom { args, .. } => {
            for a in args {
                match a {
                    LTerm::Var(v, _) => *v = rename_var(*v, map),
                    LTerm::Const(e) => rename_in(e, map),
                    LTerm::Wild => {}
                }
            }
        }
        LLit::Cmp { lhs, rhs, .. } => {
            rename_in(lhs, map);
            rename_in(rhs, map);
        }
        LLit::Pred { args, .. } => args.iter_mut().for_each(|a| rename_in(a, map)),
        LLit::Range { out, args, .. } => {
            *out = rename_var(*out, map);
            args.iter_mut().for_each(|a| rename_in(a, map));
        }
        LLit::Agg {
            out,
            arg,
            body,
            outer,
            ..
        } => {
            *out = rename_var(*out, map);
            if let Some(a) = arg {
                rename_in(a, map);
            }
            body.iter_mut().for_each(|b| rename_lit_in(b, map));
            *outer = outer.iter().map(|&v| rename_var(v, map)).collect();
        }
        LLit::False(_) => {}
    }
}
