//! Turning checked rules into pipelines of operators.
//!
//! For every rule (and every delta variant of a recursive rule) the planner
//! 1. picks the first atom: the delta atom for a variant (the delta is the smallest
//!    input of an iteration), else the first positive atom in body order, or `Unit` when
//!    there is none;
//! 2. repeatedly joins the positive atom with the most bound arguments (constants and
//!    variables already bound), ties broken by body order — so every join after the first
//!    has a key whenever the body is connected, and no cross product is built that could
//!    be avoided;
//! 3. applies every comparison, predicate and binding `v = expr` in the first operator
//!    whose joined tuple has their variables, each negation as an anti-join as soon as
//!    its variables are bound, and each aggregate once its correlated variables are;
//! 4. projects after each operator only the variables still needed, and fuses the head's
//!    projection (with its arithmetic) into the last operator.
//!
//! The index for a join over relation `r` is `r` sorted with the key columns first (in
//! argument order) followed by the remaining columns; indexes are shared by every rule
//! that needs the same (relation, order, key length).

use crate::ir::*;
use fixlog_logical::{self as logical, AggFunc, ColType, Literal, Program, RelId, Term, VarId};
use fixlog_syntax::Diagnostic;
use std::collections::{BTreeSet, HashMap, HashSet};

mod wcoj;

/// The final projection of a pipeline, given where each variable is (`None` if one it
/// needs is not bound).
type OutputFn<'f> = dyn Fn(&HashMap<VarId, PExpr>) -> Option<Vec<PExpr>> + 'f;

/// The pseudo-variable of an aggregate sub-pipeline's row-number column.
const ROW_VAR: VarId = usize::MAX;

/// Plans every stratum of a checked program with the default options.
///
/// The checker guarantees range restriction, so every rule it accepts can be planned;
/// should a rule still not be (a bug), the error names the rule instead of the planner
/// panicking.
pub fn plan(program: &Program) -> Result<Plan, Diagnostic> {
    plan_with(program, &PlanOptions::default())
}

/// [`plan`] with the given options (the join strategy).
pub fn plan_with(program: &Program, options: &PlanOptions) -> Result<Plan, Diagnostic> {
    let mut indexes = Vec::new();
    let mut index_ids = HashMap::new();
    let mut strata = Vec::new();
    for stratum in &program.strata {
        let in_stratum: HashSet<RelId> = stratum.relations.iter().copied().collect();
        let mut init = Vec::new();
        let mut recursive_rules = Vec::new();
        for &rule_idx in &stratum.rules {
            let rule = &program.rules[rule_idx];
            let recursive_atoms: Vec<usize> = rule
                .body
                .iter()
                .enumerate()
                .filter_map(|(i, lit)| match lit {
                    Literal::Atom(a) if stratum.recursive && in_stratum.contains(&a.rel) => Some(i),
                    _ => None,
                })
                .collect();
            let mut planner = RulePlanner {
                indexes: &mut indexes,
                index_ids: &mut index_ids,
                vars: &rule.vars,
                wcoj: false,
                bound_order: Vec::new(),
                join: wcoj::choose(rule, options.join),
                forced: None,
                head_first: None,
                full_first: None,
            };
            // The rule's `.plan`: per version, its atoms' order as body positions.
            let atom_pos: Vec<usize> = rule
                .body
                .iter()
                .enumerate()
                .filter(|(_, l)| matches!(l, Literal::Atom(_)))
                .map(|(i, _)| i)
                .collect();
            let user_plan = |version: usize| {
                rule.plan.iter().find(|p| p.version == version).map(|p| {
                    let text = format!(
                        "{}: ({})",
                        p.version,
                        p.order
                            .iter()
                            .map(|k| (k + 1).to_string())
                            .collect::<Vec<_>>()
                            .join(",")
                    );
                    (
                        p.order.iter().map(|&k| atom_pos[k]).collect::<Vec<_>>(),
                        text,
                    )
                })
            };
            if recursive_atoms.is_empty() {
                planner.forced = user_plan(0);
                init.push(planner.plan_rule(rule_idx, rule, None)?);
            } else {
                for (version, &i) in recursive_atoms.iter().enumerate() {
                    planner.forced = user_plan(version);
                    recursive_rules.push(planner.plan_rule(rule_idx, rule, Some(i))?);
                }
            }
        }
        let mut subsumptions = Vec::new();
        for (rule_idx, rule) in program.subsumptions.iter().enumerate() {
            if in_stratum.contains(&rule.head.rel) {
                let mut planner = RulePlanner {
                    indexes: &mut indexes,
                    index_ids: &mut index_ids,
                    vars: &rule.vars,
                    wcoj: false,
                    bound_order: Vec::new(),
                    join: wcoj::choose(rule, options.join),
                    forced: None,
                    head_first: None,
                    full_first: None,
                };
                subsumptions.push(planner.plan_rule(rule_idx, rule, None)?);
            }
        }
        strata.push(StratumPlan {
            relations: stratum.relations.clone(),
            recursive: stratum.recursive,
            init,
            recursive_rules,
            subsumptions,
        });
    }
    Ok(Plan {
        relations: program
            .relations
            .iter()
            .map(|r| RelationInfo {
                name: r.name.clone(),
                types: r.types(),
                eqrel: r.eqrel,
                choice_domains: r.choice_domains.clone(),
                limitsize: r.limitsize.map(|l| l.n),
            })
            .collect(),
        indexes,
        strata,
    })
}

/// An internal planning error about `rule`.
fn internal(rule: &logical::Rule, what: &str) -> Diagnostic {
    Diagnostic::error(
        format!("internal error: this rule cannot be planned ({what}); please report it"),
        rule.span,
    )
}

struct RulePlanner<'a> {
    indexes: &'a mut Vec<IndexSpec>,
    /// Where each index is in `indexes`.
    index_ids: &'a mut HashMap<IndexSpec, IndexId>,
    vars: &'a [logical::VarInfo],
    /// Whether the top-level body is planned with worst-case-optimal join steps (set
    /// per rule plan from `join`).
    wcoj: bool,
    /// The variables in the order the top-level body binds them (for `explain`).
    bound_order: Vec<VarId>,
    /// The rule's join choice, without the variable order.
    join: Option<String>,
    /// The `.plan` of the variant being planned: its atoms (body positions) in the
    /// order to join them, and the entry as text (for `explain`).
    forced: Option<(Vec<usize>, String)>,
    /// The variable of the head's first argument, in a delta variant (see
    /// `Tracker::best_atom_binding`).
    head_first: Option<VarId>,
    /// While planning a [`FullFirst`] variant: the atom scanned first.
    full_first: Option<usize>,
}

/// The operator being built: where each bound variable is in its joined tuple, and the
/// filters collected for it.
struct OpBuilder {
    env: HashMap<VarId, PExpr>,
    filters: Vec<Cond>,
}

impl RulePlanner<'_> {
    fn index(&mut self, rel: RelId, order: Vec<usize>, key_len: usize) -> IndexId {
        let spec = IndexSpec {
            rel,
            order,
            key_len,
        };
        if let Some(&i) = self.index_ids.get(&spec) {
            return i;
        }
        self.index_ids.insert(spec.clone(), self.indexes.len());
        self.indexes.push(spec);
        self.indexes.len() - 1
    }

    fn plan_rule(
        &mut self,
        rule_idx: usize,
        rule: &logical::Rule,
        delta: Option<usize>,
    ) -> Result<RulePlan, Diagnostic> {
        let keep: HashSet<VarId> = rule.head.args.iter().flat_map(expr_vars).collect();
        let head = &rule.head.args;
        // A `.plan` joins pairwise, in its order.
        self.wcoj = self.join.is_some() && self.forced.is_none();
        self.bound_order.clear();
        self.head_first = delta.and(match head.first() {
            Some(logical::Expr::Var(v)) => Some(*v),
            _ => None,
        });
        let ops = self
            .plan_body(&rule.body, delta, None, &keep, &|env| {
                head.iter().map(|e| to_pexpr(e, env)).collect()
            })
            .map_err(|what| internal(rule, what))?;
        let plan_note = self.forced.as_ref().map(|(order, text)| match delta {
            Some(d) if order.first() != Some(&d) => format!(
                "`.plan {text}` adjusted: a delta variant reads its delta (atom {}) first, then the other atoms in the plan's order",
                1 + rule.body[..d]
                    .iter()
                    .filter(|l| matches!(l, Literal::Atom(_)))
                    .count()
            ),
            _ => format!("`.plan {text}` honoured"),
        });
        let join = match self.join.as_ref().filter(|_| self.wcoj) {
            Some(reason) => JoinChoice::Wcoj {
                reason: reason.clone(),
                order: self
                    .bound_order
                    .iter()
                    .map(|&v| self.vars.get(v).map_or("?".into(), |i| i.name.clone()))
                    .collect(),
            },
            None => JoinChoice::Pairwise,
        };
        let full_first = match delta {
            Some(d) if !self.wcoj && self.forced.is_none() => {
                self.plan_full_first(rule, d, &keep)?
            }
            _ => None,
        };
        Ok(RulePlan {
            rule: rule_idx,
            delta_atom: delta,
            head: rule.head.rel,
            ops,
            join,
            plan_note,
            full_first,
        })
    }

    /// The [`FullFirst`] plan of the delta variant of `rule` that reads atom `d`, where
    /// the delta atom does not bind the head's first variable and a full atom does,
    /// sharing a variable with the delta atom (the first such atom in body order).
    fn plan_full_first(
        &mut self,
        rule: &logical::Rule,
        d: usize,
        keep: &HashSet<VarId>,
    ) -> Result<Option<FullFirst>, Diagnostic> {
        let Some(h) = self.head_first else {
            return Ok(None);
        };
        let atom_vars = |i: usize| -> Vec<VarId> {
            match rule.body.get(i) {
                Some(Literal::Atom(a)) => term_vars(&a.args).collect(),
                _ => Vec::new(),
            }
        };
        let delta_vars = atom_vars(d);
        if delta_vars.contains(&h) {
            return Ok(None);
        }
        let Some(outer) = (0..rule.body.len()).find(|&i| {
            let vars = atom_vars(i);
            i != d && vars.contains(&h) && vars.iter().any(|v| delta_vars.contains(v))
        }) else {
            return Ok(None);
        };
        let Some(Literal::Atom(outer_atom)) = rule.body.get(outer) else {
            return Ok(None);
        };
        let head = &rule.head.args;
        self.full_first = Some(outer);
        let ops = self.plan_body(&rule.body, Some(d), None, keep, &|env| {
            head.iter().map(|e| to_pexpr(e, env)).collect()
        });
        self.full_first = None;
        let ops = ops.map_err(|what| internal(rule, what))?;
        // (The delta is joined as soon as the scan's filters and anti-joins ran.)
        let joins_delta = ops.iter().any(|op| {
            matches!(
                op,
                Op::Join {
                    version: Version::Delta,
                    ..
                }
            )
        });
        Ok(joins_delta.then_some(FullFirst {
            outer: outer_atom.rel,
            ops,
        }))
    }

    /// Plans `body` into a pipeline.
    ///
    /// `input`: for an aggregate's sub-pipeline, the variables of the input batch's
    /// columns. `keep`: variables needed after the body. `output`: the final projection,
    /// given where the variables are in the last operator's output (`None` if one is
    /// not bound).
    ///
    /// Each step costs time in the literals the newly bound variables occur in (see
    /// [`Tracker`]), not in the whole body: a rule with k recursive atoms has k
    /// variants of k operators each, planned in about k² log k time (it was k³).
    ///
    /// `Err` (an internal error, which the checker's range restriction rules out)
    /// describes what could not be placed.
    fn plan_body(
        &mut self,
        body: &[Literal],
        delta: Option<usize>,
        input: Option<Vec<VarId>>,
        keep: &HashSet<VarId>,
        output: &OutputFn,
    ) -> Result<Vec<Op>, &'static str> {
        let mut t = Tracker::new(body, keep);
        let mut ops: Vec<Op> = Vec::new();
        // Worst-case-optimal steps for the rule's own body, never for an aggregate's
        // (whose results count multiplicities).
        let wcoj = self.wcoj && input.is_none();
        let top = input.is_none();
        // The variable of the first scan's first column (see `best_atom_carrying`).
        let mut lead: Option<VarId> = None;
        let mut schema: Vec<VarId> = match input {
            Some(schema) => {
                for &v in &schema {
                    t.bind(v);
                }
                schema
            }
            None => {
                let forced_first = self.forced.as_ref().and_then(|(o, _)| o.first().copied());
                let first = self
                    .full_first
                    .or(delta)
                    .or(forced_first)
                    .or_else(|| t.first_atom());
                match first {
                    Some(i) => {
                        let Some(Literal::Atom(atom)) = body.get(i) else {
                            return Err("the delta literal is not an atom");
                        };
                        t.remove(i);
                        let mut op = OpBuilder {
                            env: HashMap::new(),
                            filters: Vec::new(),
                        };
                        bind_atom_columns(&mut op, &atom.args, 0, &[], &mut t);
                        if wcoj {
                            self.bound_order.extend(term_vars(&atom.args));
                        }
                        absorb(&mut op, &mut t);
                        let (mut project, mut schema) = t.project_live(&op.env);
                        if self.full_first.is_some() {
                            // The head's first variable first: the driver sorts the
                            // scan on its first column (see `FullFirst`).
                            let h = self
                                .head_first
                                .and_then(|h| schema.iter().position(|&v| v == h))
                                .ok_or("a full-first scan lacks the head's first variable")?;
                            schema[..=h].rotate_right(1);
                            project[..=h].rotate_right(1);
                        }
                        lead = schema.first().copied();
                        ops.push(Op::Scan {
                            rel: atom.rel,
                            version: version_of(delta, i),
                            filters: op.filters,
                            project,
                        });
                        schema
                    }
                    None => {
                        ops.push(Op::Unit);
                        Vec::new()
                    }
                }
            }
        };

        loop {
            let env_in = schema_env(&schema);

            // Negations whose variables are bound: anti-joins.
            if let Some(i) = t.ready_negation() {
                t.remove(i);
                let Literal::Negation(atom) = &body[i] else {
                    return Err("a negation moved");
                };
                let (key_cols, key) = atom_key(&atom.args, &env_in).ok_or("a negation's key")?;
                let key_len = key_cols.len();
                let index =
                    self.index(atom.rel, complete_order(key_cols, atom.args.len()), key_len);
                ops.push(Op::AntiJoin { index, key });
                continue;
            }

            // Filters and bindings computable on the current batch.
            let mut op = OpBuilder {
                env: env_in.clone(),
                filters: Vec::new(),
            };
            if absorb(&mut op, &mut t) {
                let (project, new_schema) = t.project_live(&op.env);
                ops.push(Op::Filter {
                    filters: op.filters,
                    project,
                });
                schema = new_schema;
                continue;
            }

            // Aggregates whose correlated variables are bound.
            if let Some(i) = t.ready_aggregate() {
                t.remove(i);
                let Literal::Aggregate {
                    out,
                    func,
                    arg,
                    body: sub,
                    ..
                } = &body[i]
                else {
                    return Err("an aggregate moved");
                };
                let ty = match (func, arg) {
                    (AggFunc::Count, _) | (_, None) => ColType::Number,
                    (_, Some(a)) => self.expr_type(a).unwrap_or(self.vars[*out].ty),
                };
                let arity = schema.len();
                let correlated = t.is_correlated(i);
                let mut sub_schema = if correlated {
                    schema.clone()
                } else {
                    Vec::new()
                };
                sub_schema.push(ROW_VAR);
                let mut sub_keep: HashSet<VarId> = [ROW_VAR].into_iter().collect();
                if let Some(a) = arg {
                    sub_keep.extend(expr_vars(a));
                }
                let sub_ops = self.plan_body(sub, None, Some(sub_schema), &sub_keep, &|env| {
                    let mut out = vec![env.get(&ROW_VAR)?.clone()];
                    if let Some(a) = arg {
                        out.push(to_pexpr(a, env)?);
                    }
                    Some(out)
                })?;
                let mut op = OpBuilder {
                    env: env_in,
                    filters: Vec::new(),
                };
                match op.env.get(out) {
                    // `x = agg` with `x` bound already: a comparison.
                    Some(bound) => op.filters.push(Cond::Compare {
                        op: logical::CmpOp::Eq,
                        ty: ColType::Unsigned,
                        lhs: bound.clone(),
                        rhs: PExpr::Col(arity),
                    }),
                    None => {
                        op.env.insert(*out, PExpr::Col(arity));
                        t.bind(*out);
                    }
                }
                absorb(&mut op, &mut t);
                let (project, new_schema) = t.project_live(&op.env);
                ops.push(Op::Aggregate {
                    func: *func,
                    ty,
                    correlated,
                    sub: sub_ops,
                    filters: op.filters,
                    project,
                });
                schema = new_schema;
                continue;
            }

            // Ranges whose arguments are bound: the arguments are appended to the batch,
            // then each tuple is repeated with each value of its range.
            if let Some(i) = t.ready_range() {
                t.remove(i);
                let Literal::Range { out, ty, args, .. } = &body[i] else {
                    return Err("a range moved");
                };
                let arity = schema.len();
                let mut project: Vec<PExpr> = (0..arity).map(PExpr::Col).collect();
                for a in args {
                    project.push(to_pexpr(a, &env_in).ok_or("a range's argument is unbound")?);
                }
                ops.push(Op::Filter {
                    filters: Vec::new(),
                    project,
                });
                ops.push(Op::Range {
                    ty: *ty,
                    step: args.len() == 3,
                });
                let value = PExpr::Col(arity + args.len());
                let mut op = OpBuilder {
                    env: env_in,
                    filters: Vec::new(),
                };
                match op.env.get(out) {
                    Some(bound) => op.filters.push(Cond::Compare {
                        op: logical::CmpOp::Eq,
                        ty: *ty,
                        lhs: bound.clone(),
                        rhs: value,
                    }),
                    None => {
                        op.env.insert(*out, value);
                        t.bind(*out);
                    }
                }
                absorb(&mut op, &mut t);
                let (project, new_schema) = t.project_live(&op.env);
                ops.push(Op::Filter {
                    filters: op.filters,
                    project,
                });
                schema = new_schema;
                continue;
            }

            // Worst-case-optimal: an atom whose variables are all bound is an existence
            // check (a join on its whole key); otherwise the next variable is bound by
            // intersecting every atom it occurs in (a join when it occurs in one).
            let next = if wcoj {
                match wcoj::next_step(&t) {
                    Some(wcoj::Step::Join(i)) => Some(i),
                    Some(wcoj::Step::Intersect { var, atoms }) => {
                        self.bound_order.push(var);
                        let mut parts = Vec::with_capacity(atoms.len());
                        for &i in &atoms {
                            let Literal::Atom(atom) = &body[i] else {
                                return Err("an intersected literal is not an atom");
                            };
                            let (mut cols, key) = atom_key_bound(&atom.args, &env_in);
                            let key_len = cols.len();
                            let var_col = atom
                                .args
                                .iter()
                                .position(|a| *a == Term::Var(var))
                                .ok_or("an intersected atom lacks its variable")?;
                            cols.push(var_col);
                            let index = self.index(
                                atom.rel,
                                complete_order(cols, atom.args.len()),
                                key_len,
                            );
                            parts.push(IntersectAtom { index, key });
                        }
                        let mut op = OpBuilder {
                            env: env_in,
                            filters: Vec::new(),
                        };
                        op.env.insert(var, PExpr::Col(schema.len()));
                        t.bind(var);
                        for &i in &atoms {
                            if t.vars[i].iter().all(|v| t.bound.contains(v)) {
                                t.remove(i);
                            }
                        }
                        absorb(&mut op, &mut t);
                        let (project, new_schema) = t.project_live(&op.env);
                        ops.push(Op::Intersect {
                            atoms: parts,
                            filters: op.filters,
                            project,
                        });
                        schema = new_schema;
                        continue;
                    }
                    None => None,
                }
            } else {
                // The next join: the next atom of the `.plan`, or else the atom with
                // the most bound arguments (first in body order among equals; for the
                // first join after a scan, among equals one that binds the head's
                // first variable, else one that carries the scan's first column, where
                // one does).
                match self.forced.as_ref().filter(|_| top) {
                    Some((order, _)) => order.iter().copied().find(|&i| t.alive[i]),
                    // A full-first plan joins the delta right after its scan.
                    None if top
                        && self.full_first.is_some()
                        && delta.is_some_and(|d| t.alive[d]) =>
                    {
                        delta
                    }
                    None => match lead.filter(|_| ops.len() == 1) {
                        Some(v) => self
                            .head_first
                            .and_then(|h| t.best_atom_binding(h))
                            .or_else(|| t.best_atom_carrying(v)),
                        None => t.best_atom(),
                    },
                }
            };
            let Some(i) = next else {
                break;
            };
            t.remove(i);
            let Literal::Atom(atom) = &body[i] else {
                return Err("a join moved");
            };
            let (key_cols, key) = atom_key_bound(&atom.args, &env_in);
            let key_len = key_cols.len();
            let index = self.index(
                atom.rel,
                complete_order(key_cols.clone(), atom.args.len()),
                key_len,
            );
            let mut op = OpBuilder {
                env: env_in,
                filters: Vec::new(),
            };
            if wcoj {
                self.bound_order
                    .extend(term_vars(&atom.args).filter(|v| !op.env.contains_key(v)));
            }
            bind_atom_columns(&mut op, &atom.args, schema.len(), &key_cols, &mut t);
            absorb(&mut op, &mut t);
            let (project, new_schema) = t.project_live(&op.env);
            ops.push(Op::Join {
                index,
                version: version_of(delta, i),
                key,
                filters: op.filters,
                project,
            });
            schema = new_schema;
        }

        if t.left > 0 {
            return Err("some literals need variables that are never bound");
        }
        let out = output(&schema_env(&schema)).ok_or("the output needs an unbound variable")?;
        fuse_projection(&mut ops, out).ok_or("a projection is out of range")?;
        Ok(ops)
    }

    /// The type of an aggregated expression.
    fn expr_type(&self, e: &logical::Expr) -> Option<ColType> {
        use logical::{Expr, Functor};
        match e {
            Expr::Var(v) => Some(self.vars[*v].ty),
            Expr::Const(_) => None,
            Expr::Unary { ty, .. } | Expr::Binary { ty, .. } => Some(*ty),
            Expr::Functor { func, .. } => Some(match func {
                Functor::Cat | Functor::Substr | Functor::ToString => ColType::Symbol,
                Functor::Strlen | Functor::Ord | Functor::ToNumber | Functor::ToInteger => {
                    ColType::Number
                }
                Functor::ToUnsigned => ColType::Unsigned,
                Functor::ToFloat => ColType::Float,
                Functor::Convert(_, to) => *to,
                Functor::Pack(t) | Functor::Field(_, t) => *t,
                Functor::User { result, .. } => *result,
            }),
        }
    }
}

fn version_of(delta: Option<usize>, literal: usize) -> Version {
    if delta == Some(literal) {
        Version::Delta
    } else {
        Version::Full
    }
}

/// Variable → column of a batch with the given schema.
fn schema_env(schema: &[VarId]) -> HashMap<VarId, PExpr> {
    schema
        .iter()
        .enumerate()
        .map(|(c, &v)| (v, PExpr::Col(c)))
        .collect()
}

/// Key of a negated atom: every column that is not `_`.
fn atom_key(args: &[Term], env: &HashMap<VarId, PExpr>) -> Option<(Vec<usize>, Vec<PExpr>)> {
    let mut cols = Vec::new();
    let mut key = Vec::new();
    for (c, t) in args.iter().enumerate() {
        match t {
            Term::Var(v) => {
                cols.push(c);
                key.push(env.get(v)?.clone());
            }
            Term::Const(k) => {
                cols.push(c);
                key.push(PExpr::Const(*k));
            }
            Term::Wildcard => {}
        }
    }
    Some((cols, key))
}

/// Key of a joined atom: constants and variables bound before the join (first
/// occurrence of each).
fn atom_key_bound(args: &[Term], env: &HashMap<VarId, PExpr>) -> (Vec<usize>, Vec<PExpr>) {
    let mut cols = Vec::new();
    let mut key = Vec::new();
    for (c, t) in args.iter().enumerate() {
        match t {
            Term::Var(v) if env.contains_key(v) => {
                if let Some(e) = env.get(v) {
                    cols.push(c);
                    key.push(e.clone());
                }
            }
            Term::Const(k) => {
                cols.push(c);
                key.push(PExpr::Const(*k));
            }
            _ => {}
        }
    }
    (cols, key)
}

/// Key columns followed by the other columns in order.
fn complete_order(mut key_cols: Vec<usize>, arity: usize) -> Vec<usize> {
    for c in 0..arity {
        if !key_cols.contains(&c) {
            key_cols.push(c);
        }
    }
    key_cols
}

/// Binds the variables of an atom whose columns start at `offset` in the joined tuple.
/// Columns in `key_cols` are already equal to their key; constants elsewhere and repeated
/// variables become equality filters (on the bits, as joins compare).
fn bind_atom_columns(
    op: &mut OpBuilder,
    args: &[Term],
    offset: usize,
    key_cols: &[usize],
    tracker: &mut Tracker,
) {
    for (c, t) in args.iter().enumerate() {
        if key_cols.contains(&c) {
            continue;
        }
        let col = PExpr::Col(offset + c);
        match t {
            Term::Var(v) => match op.env.get(v) {
                Some(e) => op.filters.push(Cond::Compare {
                    op: logical::CmpOp::Eq,
                    ty: ColType::Unsigned,
                    lhs: col,
                    rhs: e.clone(),
                }),
                None => {
                    op.env.insert(*v, col);
                    tracker.bind(*v);
                }
            },
            Term::Const(k) => op.filters.push(Cond::Compare {
                op: logical::CmpOp::Eq,
                ty: ColType::Unsigned,
                lhs: col,
                rhs: PExpr::Const(*k),
            }),
            Term::Wildcard => {}
        }
    }
}

/// Height of the plan expressions the planner builds by inlining bindings (`v = e` puts
/// `e` wherever `v` is used). A literal that would exceed it waits for the next
/// operator, where its variables are columns: a sum of 10,000 terms, which the checker
/// cuts into a chain of bindings, is computed over a few operators instead of as one
/// expression 10,000 deep (which evaluating would recurse through).
const MAX_PLAN_DEPTH: usize = 64;

/// The height of a plan expression (a leaf is 1).
fn pexpr_depth(e: &PExpr) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(e, 1)];
    while let Some((e, d)) = stack.pop() {
        deepest = deepest.max(d);
        match e {
            PExpr::Unary { arg, .. } => stack.push((arg, d + 1)),
            PExpr::Binary { lhs, rhs, .. } => {
                stack.push((lhs, d + 1));
                stack.push((rhs, d + 1));
            }
            PExpr::Functor { args, .. } => stack.extend(args.iter().map(|a| (a, d + 1))),
            PExpr::Col(_) | PExpr::Const(_) => {}
        }
    }
    deepest
}

/// `e` over `env` ([`to_pexpr`]), unless inlining the bindings it uses would make it
/// higher than [`MAX_PLAN_DEPTH`] (it then waits until they are columns).
fn placed(e: &logical::Expr, env: &HashMap<VarId, PExpr>) -> Option<PExpr> {
    let pe = to_pexpr(e, env)?;
    if pexpr_depth(&pe) > MAX_PLAN_DEPTH
        && expr_vars(e)
            .iter()
            .any(|v| !matches!(env.get(v), Some(PExpr::Col(_))))
    {
        return None;
    }
    Some(pe)
}

/// Moves every comparison, predicate and binding whose variables are bound in `op` into
/// `op`, until none is left to move; returns whether any moved.
///
/// In passes over the candidates in body order, as a scan of the whole body would (a
/// literal made ready by one after it waits for the next pass), so filters keep their
/// order; but only literals with at most one unbound variable are looked at.
fn absorb(op: &mut OpBuilder, t: &mut Tracker) -> bool {
    let mut any = false;
    loop {
        let mut changed = false;
        let mut cursor = 0;
        while let Some(&i) = t.candidates.range(cursor..).next() {
            cursor = i + 1;
            if let Some(newly_bound) = try_absorb(op, &t.body[i]) {
                t.remove(i);
                if let Some(v) = newly_bound {
                    t.bind(v);
                }
                changed = true;
            }
        }
        if !changed {
            return any;
        }
        any = true;
    }
}

/// Moves one comparison or predicate into `op` if it can be computed there: `Some`
/// with the variable it binds, if any.
fn try_absorb(op: &mut OpBuilder, lit: &Literal) -> Option<Option<VarId>> {
    match lit {
        Literal::Compare {
            op: cmp,
            lhs,
            rhs,
            ty,
            ..
        } => {
            if let (Some(l), Some(r)) = (placed(lhs, &op.env), placed(rhs, &op.env)) {
                op.filters.push(Cond::Compare {
                    op: *cmp,
                    ty: *ty,
                    lhs: l,
                    rhs: r,
                });
                return Some(None);
            }
            if *cmp != logical::CmpOp::Eq {
                return None;
            }
            for (a, e) in [(lhs, rhs), (rhs, lhs)] {
                if let logical::Expr::Var(v) = a {
                    if !op.env.contains_key(v) {
                        let value = placed(e, &op.env)?;
                        op.env.insert(*v, value);
                        return Some(Some(*v));
                    }
                }
            }
            None
        }
        Literal::Predicate {
            pred,
            args,
            negated,
            ..
        } => {
            let args = args
                .iter()
                .map(|a| placed(a, &op.env))
                .collect::<Option<_>>()?;
            op.filters.push(Cond::Predicate {
                pred: *pred,
                args,
                negated: *negated,
            });
            Some(None)
        }
        _ => None,
    }
}

/// The literals of a body still to place, and, kept up to date as variables get bound,
/// what the planner asks of them at every step: the atom with the most bound arguments,
/// the negations and aggregates that can run, the comparisons that may be computable,
/// and which variables are still used. Binding a variable costs time in the literals it
/// occurs in, not in the body.
struct Tracker<'b> {
    body: &'b [Literal],
    keep: &'b HashSet<VarId>,
    alive: Vec<bool>,
    /// Literals not placed yet.
    left: usize,
    /// The distinct variables of each literal ([`literal_vars`]).
    vars: Vec<Vec<VarId>>,
    /// The literals each variable occurs in.
    occurs: HashMap<VarId, Vec<usize>>,
    bound: HashSet<VarId>,
    /// Literals not placed yet that use each variable.
    uses: HashMap<VarId, usize>,
    /// Per atom, its arguments that are constants or bound variables; the atoms by
    /// (most such arguments, first in body order).
    atom_n: Vec<usize>,
    atoms: BTreeSet<(std::cmp::Reverse<usize>, usize)>,
    /// Per negation, comparison and predicate: its distinct unbound variables.
    unbound: Vec<usize>,
    neg_ready: BTreeSet<usize>,
    /// Comparisons computable or binding one variable, and predicates computable, as
    /// far as their variables tell.
    candidates: BTreeSet<usize>,
    /// Aggregates not placed yet (body order), with their correlated variables.
    aggs: Vec<(usize, Vec<VarId>)>,
    correlated: HashSet<usize>,
    /// Ranges not placed yet (body order), with their arguments' variables.
    ranges: Vec<(usize, Vec<VarId>)>,
}

impl<'b> Tracker<'b> {
    fn new(body: &'b [Literal], keep: &'b HashSet<VarId>) -> Tracker<'b> {
        let n = body.len();
        let vars: Vec<Vec<VarId>> = body
            .iter()
            .map(|l| {
                let mut v = literal_vars(l);
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect();
        let mut occurs: HashMap<VarId, Vec<usize>> = HashMap::new();
        let mut uses: HashMap<VarId, usize> = HashMap::new();
        for (i, vs) in vars.iter().enumerate() {
            for &v in vs {
                occurs.entry(v).or_default().push(i);
                *uses.entry(v).or_default() += 1;
            }
        }
        let mut t = Tracker {
            body,
            keep,
            alive: vec![true; n],
            left: n,
            vars,
            occurs,
            bound: HashSet::new(),
            uses,
            atom_n: vec![0; n],
            atoms: BTreeSet::new(),
            unbound: vec![0; n],
            neg_ready: BTreeSet::new(),
            candidates: BTreeSet::new(),
            aggs: Vec::new(),
            correlated: HashSet::new(),
            ranges: Vec::new(),
        };
        for (i, lit) in body.iter().enumerate() {
            match lit {
                Literal::Atom(a) => {
                    t.atom_n[i] = a
                        .args
                        .iter()
                        .filter(|x| matches!(x, Term::Const(_)))
                        .count();
                    t.atoms.insert((std::cmp::Reverse(t.atom_n[i]), i));
                }
                Literal::Negation(_) | Literal::Compare { .. } | Literal::Predicate { .. } => {
                    t.unbound[i] = t.vars[i].len();
                    t.update_ready(i);
                }
                Literal::Range { args, .. } => {
                    t.ranges
                        .push((i, args.iter().flat_map(expr_vars).collect()));
                }
                Literal::Aggregate { body: sub, .. } => {
                    // Correlated: the sub-body's variables that occur outside it.
                    let mut inner: Vec<VarId> = sub.iter().flat_map(literal_vars).collect();
                    inner.sort_unstable();
                    inner.dedup();
                    inner.retain(|v| {
                        keep.contains(v)
                            || t.occurs.get(v).is_some_and(|ls| ls.iter().any(|&j| j != i))
                    });
                    if !inner.is_empty() {
                        t.correlated.insert(i);
                    }
                    t.aggs.push((i, inner));
                }
            }
        }
        t
    }

    /// Re-files a negation, comparison or predicate after its unbound count changed.
    fn update_ready(&mut self, i: usize) {
        let n = self.unbound[i];
        match &self.body[i] {
            Literal::Negation(_) if n == 0 => {
                self.neg_ready.insert(i);
            }
            Literal::Predicate { .. } if n == 0 => {
                self.candidates.insert(i);
            }
            Literal::Compare { .. } if n == 0 => {
                self.candidates.insert(i);
            }
            Literal::Compare {
                op: logical::CmpOp::Eq,
                lhs,
                rhs,
                ..
            } if n == 1 => {
                // A binding `v = e` with `e` bound?
                let binds = |a: &logical::Expr, e: &logical::Expr| match a {
                    logical::Expr::Var(v) => !self.bound.contains(v) && !expr_vars(e).contains(v),
                    _ => false,
                };
                if binds(lhs, rhs) || binds(rhs, lhs) {
                    self.candidates.insert(i);
                }
            }
            _ => {}
        }
    }

    fn bind(&mut self, v: VarId) {
        if !self.bound.insert(v) {
            return;
        }
        let Some(lits) = self.occurs.get(&v).cloned() else {
            return;
        };
        for i in lits {
            if !self.alive[i] {
                continue;
            }
            match &self.body[i] {
                Literal::Atom(a) => {
                    let m = a
                        .args
                        .iter()
                        .filter(|x| matches!(x, Term::Var(w) if *w == v))
                        .count();
                    self.atoms.remove(&(std::cmp::Reverse(self.atom_n[i]), i));
                    self.atom_n[i] += m;
                    self.atoms.insert((std::cmp::Reverse(self.atom_n[i]), i));
                }
                Literal::Negation(_) | Literal::Compare { .. } | Literal::Predicate { .. } => {
                    self.unbound[i] = self.unbound[i].saturating_sub(1);
                    self.update_ready(i);
                }
                Literal::Aggregate { .. } | Literal::Range { .. } => {}
            }
        }
    }

    fn remove(&mut self, i: usize) {
        if !self.alive.get(i).copied().unwrap_or(false) {
            return;
        }
        self.alive[i] = false;
        self.left -= 1;
        self.atoms.remove(&(std::cmp::Reverse(self.atom_n[i]), i));
        self.neg_ready.remove(&i);
        self.candidates.remove(&i);
        self.aggs.retain(|(j, _)| *j != i);
        self.ranges.retain(|(j, _)| *j != i);
        for v in &self.vars[i] {
            if let Some(u) = self.uses.get_mut(v) {
                *u = u.saturating_sub(1);
            }
        }
    }

    /// The first positive atom in body order.
    fn first_atom(&self) -> Option<usize> {
        (0..self.body.len()).find(|&i| self.alive[i] && matches!(self.body[i], Literal::Atom(_)))
    }

    fn best_atom(&self) -> Option<usize> {
        self.atoms.first().map(|&(_, i)| i)
    }

    /// Among atoms with as many bound arguments as [`Self::best_atom`]'s, the first in
    /// body order that binds `var` (unbound so far), if one does. Used with the head's
    /// first variable for the first join after a delta's scan: in a pipeline of a
    /// scan and two joins (SG's), the second join's input then comes sorted on that
    /// variable and its output leads with it, the shape whose new tuples both backends
    /// find group by group (`fixlog_exec::NewRowsShape`: SG CA-HepTh on the GPU 0.089
    /// → 0.071 s, loc-Brightkite 0.180 → 0.126; 14 → 11-12 s on two CPU threads for
    /// ego-Facebook; docs/gpu-results.md, round 27).
    fn best_atom_binding(&self, var: VarId) -> Option<usize> {
        if self.bound.contains(&var) {
            return None;
        }
        let &(most, _) = self.atoms.first()?;
        self.atoms
            .iter()
            .take_while(|&&(n, _)| n == most)
            .map(|&(_, i)| i)
            .find(|&i| self.vars[i].contains(&var))
    }

    /// [`Self::best_atom`], but among atoms with as many bound arguments the first
    /// one in body order that does not use `var`, where there is one: a join on such
    /// an atom carries `var` into its output. Why: a pipeline of a scan and two joins
    /// runs over the scan's output sorted on a column the first join carries (the
    /// executor's `carried_first`, so that the pieces it cuts make disjoint sets for
    /// the second join); where that column is the scan's first, the scan of a sorted
    /// relation (a delta) is already in that order and is used as it is, not copied
    /// and sorted again (SG's delta variant before round 27: 0.29 GiB less on the
    /// device for CA-HepTh). Where an atom binds the head's first variable, that one
    /// goes first instead ([`Self::best_atom_binding`]).
    fn best_atom_carrying(&self, var: VarId) -> Option<usize> {
        let &(most, first) = self.atoms.first()?;
        self.atoms
            .iter()
            .take_while(|&&(n, _)| n == most)
            .map(|&(_, i)| i)
            .find(|&i| !self.vars[i].contains(&var))
            .or(Some(first))
    }

    fn ready_negation(&self) -> Option<usize> {
        self.neg_ready.first().copied()
    }

    fn ready_aggregate(&self) -> Option<usize> {
        self.aggs
            .iter()
            .find(|(_, vs)| vs.iter().all(|v| self.bound.contains(v)))
            .map(|(i, _)| *i)
    }

    fn ready_range(&self) -> Option<usize> {
        self.ranges
            .iter()
            .find(|(_, vs)| vs.iter().all(|v| self.bound.contains(v)))
            .map(|(i, _)| *i)
    }

    fn is_correlated(&self, i: usize) -> bool {
        self.correlated.contains(&i)
    }

    /// The projection onto the variables still needed (in variable order, for a
    /// deterministic plan) and the schema it produces.
    fn project_live(&self, env: &HashMap<VarId, PExpr>) -> (Vec<PExpr>, Vec<VarId>) {
        let mut schema: Vec<VarId> = env
            .keys()
            .copied()
            .filter(|v| self.keep.contains(v) || self.uses.get(v).is_some_and(|&u| u > 0))
            .collect();
        schema.sort_unstable();
        let project = schema.iter().filter_map(|v| env.get(v).cloned()).collect();
        (project, schema)
    }
}

/// Replaces the last operator's projection by `out` (given over its output columns), or
/// appends a `Filter` when the last operator does not project. `None` if `out` reads a
/// column the last operator does not have.
fn fuse_projection(ops: &mut Vec<Op>, out: Vec<PExpr>) -> Option<()> {
    match ops.last_mut() {
        Some(Op::Scan { project, .. })
        | Some(Op::Join { project, .. })
        | Some(Op::Intersect { project, .. })
        | Some(Op::Filter { project, .. })
        | Some(Op::Aggregate { project, .. }) => {
            let composed = out
                .iter()
                .map(|e| subst_cols(e, project))
                .collect::<Option<_>>()?;
            *project = composed;
        }
        _ => ops.push(Op::Filter {
            filters: Vec::new(),
            project: out,
        }),
    }
    Some(())
}

/// `e` with every `Col(i)` replaced by `cols[i]`; `None` if some `i` is out of range.
pub fn subst_cols(e: &PExpr, cols: &[PExpr]) -> Option<PExpr> {
    Some(match e {
        PExpr::Col(i) => cols.get(*i)?.clone(),
        PExpr::Const(k) => PExpr::Const(*k),
        PExpr::Unary { op, ty, arg } => PExpr::Unary {
            op: *op,
            ty: *ty,
            arg: Box::new(subst_cols(arg, cols)?),
        },
        PExpr::Binary { op, ty, lhs, rhs } => PExpr::Binary {
            op: *op,
            ty: *ty,
            lhs: Box::new(subst_cols(lhs, cols)?),
            rhs: Box::new(subst_cols(rhs, cols)?),
        },
        PExpr::Functor { func, args } => PExpr::Functor {
            func: *func,
            args: args
                .iter()
                .map(|a| subst_cols(a, cols))
                .collect::<Option<_>>()?,
        },
    })
}

/// A logical expression as a plan expression; `None` if one of its variables is not
/// bound in `env`.
fn to_pexpr(e: &logical::Expr, env: &HashMap<VarId, PExpr>) -> Option<PExpr> {
    use logical::Expr;
    Some(match e {
        Expr::Var(v) => env.get(v)?.clone(),
        Expr::Const(k) => PExpr::Const(*k),
        Expr::Unary { op, ty, arg } => PExpr::Unary {
            op: *op,
            ty: *ty,
            arg: Box::new(to_pexpr(arg, env)?),
        },
        Expr::Binary { op, ty, lhs, rhs } => PExpr::Binary {
            op: *op,
            ty: *ty,
            lhs: Box::new(to_pexpr(lhs, env)?),
            rhs: Box::new(to_pexpr(rhs, env)?),
        },
        Expr::Functor { func, args } => PExpr::Functor {
            func: *func,
            args: args
                .iter()
                .map(|a| to_pexpr(a, env))
                .collect::<Option<_>>()?,
        },
    })
}

pub(crate) fn expr_vars(e: &logical::Expr) -> Vec<VarId> {
    use logical::Expr;
    match e {
        Expr::Var(v) => vec![*v],
        Expr::Const(_) => Vec::new(),
        Expr::Unary { arg, .. } => expr_vars(arg),
        Expr::Binary { lhs, rhs, .. } => {
            let mut v = expr_vars(lhs);
            v.extend(expr_vars(rhs));
            v
        }
        Expr::Functor { args, .. } => args.iter().flat_map(expr_vars).collect(),
    }
}

fn term_vars(args: &[Term]) -> impl Iterator<Item = VarId> + '_ {
    args.iter().filter_map(|t| match t {
        Term::Var(v) => Some(*v),
        _ => None,
    })
}

/// Every variable a literal mentions (for an aggregate: its result, its argument and its
/// body's variables).
fn literal_vars(lit: &Literal) -> Vec<VarId> {
    match lit {
        Literal::Atom(a) | Literal::Negation(a) => term_vars(&a.args).collect(),
        Literal::Compare { lhs, rhs, .. } => {
            let mut v = expr_vars(lhs);
            v.extend(expr_vars(rhs));
            v
        }
        Literal::Predicate { args, .. } => args.iter().flat_map(expr_vars).collect(),
        Literal::Range { out, args, .. } => {
            let mut v = vec![*out];
            v.extend(args.iter().flat_map(expr_vars));
            v
        }
        Literal::Aggregate { out, arg, body, .. } => {
            let mut v = vec![*out];
            if let Some(a) = arg {
                v.extend(expr_vars(a));
            }
            v.extend(body.iter().flat_map(literal_vars));
            v
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixlog_logical::{CmpOp, Expr, VarInfo};
    use fixlog_syntax::SourceMap;

    /// A checked program whose first rule is then given a variable nothing binds (which
    /// the checker never lets through), in a comparison or in the head.
    fn broken(in_head: bool) -> (SourceMap, Program) {
        let mut sm = SourceMap::new();
        let mut p = fixlog_logical::compile_str(
            "t.dl",
            ".decl e(x: number)\n.decl r(x: number)\nr(x) :- e(x), x > 1.\n",
            &mut sm,
        )
        .expect("a valid program");
        let rule = &mut p.rules[0];
        rule.vars.push(VarInfo {
            name: "ghost".into(),
            ty: ColType::Number,
        });
        let ghost = Expr::Var(rule.vars.len() - 1);
        if in_head {
            rule.head.args[0] = ghost;
        } else if let Some(Literal::Compare { op, rhs, .. }) = rule.body.get_mut(1) {
            *op = CmpOp::Lt;
            *rhs = ghost;
        }
        (sm, p)
    }

    #[test]
    fn a_plan_orders_the_atoms_and_a_delta_variant_starts_at_its_delta() {
        let mut sm = SourceMap::new();
        let p = fixlog_logical::compile_str(
            "t.dl",
            ".decl a(x: number, y: number)\n.decl b(x: number, y: number)\n\
             .decl c(x: number, y: number)\na(1, 2). b(2, 3). c(3, 4).\n\
             .decl r(x: number, y: number)\n\
             r(x, w) :- a(x, y), b(y, z), c(z, w).\n.plan 0: (3, 2, 1)\n\
             r(x, z) :- r(x, y), c(y, z).\n.plan 0: (2, 1)\n",
            &mut sm,
        )
        .expect("a valid program");
        let plan = plan(&p).unwrap();
        let rel = |name: &str| p.relation_id(name).unwrap();
        let stratum = plan
            .strata
            .iter()
            .find(|s| s.relations.contains(&rel("r")))
            .unwrap();
        // The rule run once: c, then b, then a.
        let init = &stratum.init[0];
        let read: Vec<RelId> = init
            .ops
            .iter()
            .filter_map(|op| match op {
                Op::Scan { rel, .. } => Some(*rel),
                Op::Join { index, .. } => Some(plan.indexes[*index].rel),
                _ => None,
            })
            .collect();
        assert_eq!(read, vec![rel("c"), rel("b"), rel("a")]);
        assert!(init.plan_note.as_deref().unwrap().ends_with("honoured"));
        assert_eq!(init.join, JoinChoice::Pairwise);
        // The recursive rule's delta variant reads Δr first whatever the plan says.
        let delta = &stratum.recursive_rules[0];
        assert!(matches!(
            delta.ops[0],
            Op::Scan {
                version: Version::Delta,
                ..
            }
        ));
        assert!(delta.plan_note.as_deref().unwrap().contains("adjusted"));
    }

    /// Same generation.
    const SG: &str = ".decl edge(x: number, y: number)\n.input edge\n\
                      .decl sg(x: number, y: number)\n\
                      sg(x, y) :- edge(p, x), edge(p, y), x != y.\n\
                      sg(x, y) :- edge(a, x), sg(a, b), edge(b, y).\n";

    /// The operators of the first delta variant of `rel`'s rules in `src`.
    fn first_delta_ops(src: &str, rel: &str) -> Vec<Op> {
        first_delta_variant(src, rel).ops
    }

    #[test]
    fn the_first_join_after_a_scan_binds_the_heads_first_variable_among_equals() {
        // SG's delta variant: `edge(a, x)` and `edge(b, y)` both have one bound
        // argument after Δsg(a, b); the join on `a` binds x, the head's first
        // variable, so it goes first (the join on `b` would carry a, the scan's first
        // column, which decided before): the second join's input, (x, b), comes sorted on
        // x, and its output's first column is its input's first (a join whose new rows
        // a backend can find group by group: `fixlog_exec::NewRowsShape`).
        let ops = first_delta_ops(SG, "sg");
        let [Op::Scan {
            version: Version::Delta,
            project: scanned,
            ..
        }, Op::Join {
            key,
            project: joined,
            ..
        }, Op::Join { project: last, .. }] = &ops[..]
        else {
            panic!("a scan and two joins: {ops:?}");
        };
        // Δsg(a, b) as it is; the first join's key is a (column 0), and x (column 3,
        // the inner's second) leads its output; the last join writes (x, y) with x its
        // input's column 0.
        assert_eq!(scanned, &vec![PExpr::Col(0), PExpr::Col(1)]);
        assert_eq!(key, &vec![PExpr::Col(0)]);
        assert_eq!(joined.first(), Some(&PExpr::Col(3)));
        assert_eq!(last.first(), Some(&PExpr::Col(0)));
    }

    #[test]
    fn the_first_join_after_a_scan_carries_its_first_column_where_none_binds_the_head() {
        // The head's first variable, a, comes from the scan, so no join binds it: the
        // first join is the first in body order among `f(b, d)` and `e(b, c)` (both
        // bound on b) that does not use a, the scan's first column, and carries a.
        let ops = first_delta_ops(
            ".decl e(x: number, y: number)\n.input e\n\
             .decl p(x: number, y: number)\n\
             p(x, y) :- e(x, y).\n\
             p(a, d) :- f(b, d), p(a, b), e(b, c), c != d.\n\
             .decl f(x: number, y: number)\n.input f\n",
            "p",
        );
        let [Op::Scan { .. }, Op::Join {
            project: joined, ..
        }, Op::Join { .. }] = &ops[..]
        else {
            panic!("a scan and two joins: {ops:?}");
        };
        assert!(joined.contains(&PExpr::Col(0)), "{ops:?}");
    }

    /// The first delta variant of `rel`'s rules in `src`.
    fn first_delta_variant(src: &str, rel: &str) -> RulePlan {
        let mut sm = SourceMap::new();
        let p = fixlog_logical::compile_str("t.dl", src, &mut sm).expect("a valid program");
        let plan = plan(&p).unwrap();
        let id = p.relation_id(rel).unwrap();
        plan.strata
            .iter()
            .find(|s| s.relations.contains(&id))
            .unwrap()
            .recursive_rules[0]
            .clone()
    }

    #[test]
    fn a_delta_that_does_not_bind_the_heads_first_variable_has_a_full_first_plan() {
        // SG: Δsg(a, b) binds neither x nor y; edge(a, x) binds x and shares a with
        // the delta, so the full-first plan scans it with x first, joins Δsg on a
        // next (through an index over the delta), then edge on b.
        let variant = first_delta_variant(SG, "sg");
        let ff = variant.full_first.expect("a full-first plan");
        let [Op::Scan {
            version: Version::Full,
            project: scanned,
            ..
        }, Op::Join {
            version: Version::Delta,
            key,
            ..
        }, Op::Join {
            version: Version::Full,
            project: last,
            ..
        }] = &ff.ops[..]
        else {
            panic!("a scan, a delta join and a join: {:?}", ff.ops);
        };
        // edge(a, x) as (x, a): x, the head's first variable, is the scan's column 0;
        // the delta's key is a; the last join writes x, its input's column 0, first.
        assert_eq!(scanned, &vec![PExpr::Col(1), PExpr::Col(0)]);
        assert_eq!(key, &vec![PExpr::Col(1)]);
        assert_eq!(last.first(), Some(&PExpr::Col(0)));

        // Transitive closure's delta binds x itself: no full-first plan.
        let tc = first_delta_variant(
            ".decl e(x: number, y: number)\n.input e\n.decl p(x: number, y: number)\n\
             p(x, y) :- e(x, y).\np(x, z) :- p(x, y), e(y, z).\n",
            "p",
        );
        assert!(tc.full_first.is_none());
        // Nor where the head's first argument is not a variable, or where the atom
        // binding it shares nothing with the delta (it would be a product).
        for src in [
            ".decl e(x: number, y: number)\n.input e\n.decl p(x: number, y: number)\n\
             p(x, y) :- e(x, y).\np(x + 1, z) :- e(a, x), p(a, z).\n",
            ".decl e(x: number, y: number)\n.input e\n.decl p(x: number, y: number)\n\
             p(x, y) :- e(x, y).\np(x, z) :- e(x, x), p(a, z), e(a, a).\n",
        ] {
            assert!(first_delta_variant(src, "p").full_first.is_none(), "{src}");
        }
        // A `.plan` is the user's order: no full-first plan beside it.
        let planned = first_delta_variant(
            ".decl edge(x: number, y: number)\n.input edge\n\
             .decl sg(x: number, y: number)\n\
             sg(x, y) :- edge(p, x), edge(p, y), x != y.\n\
             sg(x, y) :- edge(a, x), sg(a, b), edge(b, y).\n.plan 0: (2, 1, 3)\n",
            "sg",
        );
        assert!(planned.full_first.is_none());
    }

    #[test]
    fn a_rule_that_cannot_be_planned_is_an_error_naming_it() {
        for in_head in [false, true] {
            let (sm, p) = broken(in_head);
            let Err(e) = plan(&p) else {
                panic!("planned a rule with an unbound variable (in head: {in_head})")
            };
            assert!(e.message.starts_with("internal error"), "{}", e.message);
            assert_eq!(e.span.map(|s| sm.location(s)).as_deref(), Some("t.dl:3:1"));
        }
        let (_, mut p) = broken(false);
        p.rules.clear();
        p.strata.iter_mut().for_each(|s| s.rules.clear());
        assert!(plan(&p).is_ok());
    }
}
