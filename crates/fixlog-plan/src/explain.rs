//! `fixlog explain`: the strata and the plan of every rule variant in words.
//!
//! Columns are written `#i` (column `i` of the operator's joined tuple, see
//! [`crate::ir`]); an index is written `rel[key columns | other columns]`.

use crate::ir::*;
use fixlog_logical::{self as logical, Program};
use fixlog_syntax::SourceMap;
use std::fmt::Write;

pub fn explain(program: &Program, plan: &Plan, sources: &SourceMap) -> String {
    explain_with_notes(program, plan, sources, &|_| None)
}

/// [`explain`], with a note after each operator where `note` gives one (the CUDA
/// backend says there whether the operator runs on the device or on the host).
pub fn explain_with_notes(
    program: &Program,
    plan: &Plan,
    sources: &SourceMap,
    note: &dyn Fn(&Op) -> Option<String>,
) -> String {
    FUNCTOR_NAMES.with(|n| {
        *n.borrow_mut() = program.functors.iter().map(|f| f.name.clone()).collect();
    });
    let mut out = String::new();
    for (n, stratum) in plan.strata.iter().enumerate() {
        let names: Vec<&str> = stratum
            .relations
            .iter()
            .map(|&r| plan.relations[r].name.as_str())
            .collect();
        let _ = writeln!(
            out,
            "stratum {n}: {}{}",
            names.join(", "),
            if stratum.recursive {
                " (recursive)"
            } else {
                ""
            }
        );
        for &rel in &stratum.relations {
            if let Some(line) = storage_line(&plan.relations[rel]) {
                let _ = writeln!(out, "  {line}");
            }
        }
        let mut numbered = false;
        for a in &program.autoincs {
            if stratum.relations.contains(&a.target) {
                numbered = true;
                let _ = writeln!(
                    out,
                    "  {}: autoinc() numbers, on the host (every backend): the driver numbers the tuples of {} in output order from the run's counter",
                    plan.relations[a.target].name, plan.relations[a.source].name
                );
            }
        }
        for d in &program.debug_deltas {
            if stratum.relations.contains(&d.target) {
                numbered = true;
                let _ = writeln!(
                    out,
                    "  {}: debug_delta of {}, filled on the host (every backend) during the loop of {}'s stratum: each iteration's new tuples, with the iteration's number",
                    plan.relations[d.target].name,
                    plan.relations[d.source].name,
                    plan.relations[d.source].name
                );
            }
        }
        if stratum.init.is_empty() && stratum.recursive_rules.is_empty() && !numbered {
            let _ = writeln!(out, "  (no rules: facts and inputs only)");
        }
        for (title, rules, logical_rules) in [
            ("once", &stratum.init, &program.rules),
            ("each iteration", &stratum.recursive_rules, &program.rules),
            (
                "subsumption, after every step",
                &stratum.subsumptions,
                &program.subsumptions,
            ),
        ] {
            for rule_plan in rules.iter() {
                let Some(rule) = logical_rules.get(rule_plan.rule) else {
                    continue;
                };
                let text: String = sources
                    .snippet(rule.span)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                let _ = writeln!(
                    out,
                    "  rule {} ({title}): {text}",
                    sources.location(rule.span)
                );
                if let Some(d) = rule_plan.delta_atom {
                    if let logical::Literal::Atom(a) = &rule.body[d] {
                        let _ = writeln!(
                            out,
                            "    delta variant: reads the new tuples of body atom {} ({})",
                            d + 1,
                            plan.relations[a.rel].name
                        );
                    }
                }
                if let Some(n) = &rule_plan.plan_note {
                    let _ = writeln!(out, "    {n}");
                }
                match &rule_plan.join {
                    JoinChoice::Pairwise => {}
                    JoinChoice::Wcoj { reason, order } => {
                        let _ = writeln!(
                            out,
                            "    worst-case-optimal join: {reason}; variable order {}",
                            order.join(", ")
                        );
                    }
                }
                write_ops(&mut out, plan, &rule_plan.ops, 4, note);
                if let (Some(ff), Some(logical::Literal::Atom(d))) = (
                    &rule_plan.full_first,
                    rule_plan.delta_atom.and_then(|d| rule.body.get(d)),
                ) {
                    // When it runs is `fixlog`'s choice (`full_first_use`; 32M is
                    // `fixlog::GPU_FULL_FIRST_MIN_HEAD_ROWS`).
                    let _ = writeln!(
                        out,
                        "    full-first plan (on the CPU, and on the GPU under --gpu-memory-limit or once {} holds 32M tuples, in an iteration where Δ{} has at least as many tuples as {}; pieces cut from {} sorted on the head's first variable):",
                        plan.relations[rule.head.rel].name,
                        plan.relations[d.rel].name,
                        plan.relations[ff.outer].name,
                        plan.relations[ff.outer].name
                    );
                    write_ops(&mut out, plan, &ff.ops, 6, note);
                }
                let verb = if std::ptr::eq(rules, &stratum.subsumptions) {
                    "remove from"
                } else {
                    "insert into"
                };
                let _ = writeln!(
                    out,
                    "    ──▶ {verb} {}",
                    plan.relations[rule_plan.head].name
                );
            }
        }
    }
    let _ = writeln!(out, "indexes:");
    for (i, ix) in plan.indexes.iter().enumerate() {
        let _ = writeln!(out, "  #{i}: {}", index_name(plan, ix));
    }
    out
}

/// How the driver keeps a relation, where it is not a plain set of derived tuples.
fn storage_line(rel: &RelationInfo) -> Option<String> {
    if rel.eqrel {
        return Some(format!(
            "{}: eqrel (each step's new pairs are closed through a union-find on the host; the delta is every pair of the classes they merge; the relation itself stays in the backend)",
            rel.name
        ));
    }
    if rel.choice_domains.is_empty() {
        return None;
    }
    let domains: Vec<String> = rel
        .choice_domains
        .iter()
        .map(|d| {
            let cols: Vec<String> = d.iter().map(|c| format!("#{c}")).collect();
            format!("({})", cols.join(", "))
        })
        .collect();
    Some(format!(
        "{}: choice-domain {} (each step's new tuples are chosen on the host, smallest first in output order, when no kept tuple has their domain values; the relation itself stays in the backend)",
        rel.name,
        domains.join(", ")
    ))
}

fn index_name(plan: &Plan, ix: &IndexSpec) -> String {
    let key: Vec<String> = ix.order[..ix.key_len]
        .iter()
        .map(|c| c.to_string())
        .collect();
    let rest: Vec<String> = ix.order[ix.key_len..]
        .iter()
        .map(|c| c.to_string())
        .collect();
    format!(
        "{}[{} | {}]",
        plan.relations[ix.rel].name,
        key.join(","),
        rest.join(",")
    )
}

fn write_ops(
    out: &mut String,
    plan: &Plan,
    ops: &[Op],
    indent: usize,
    note: &dyn Fn(&Op) -> Option<String>,
) {
    let pad = " ".repeat(indent);
    for op in ops {
        let mark = note(op).map(|n| format!("   [{n}]")).unwrap_or_default();
        match op {
            Op::Unit => {
                let _ = writeln!(out, "{pad}unit (one empty tuple){mark}");
            }
            Op::Scan {
                rel,
                version,
                filters,
                project,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}scan {}{}{} → {}{mark}",
                    version_mark(*version),
                    plan.relations[*rel].name,
                    filters_text(filters),
                    exprs(project)
                );
            }
            Op::Join {
                index,
                version,
                key,
                filters,
                project,
            } => {
                let ix = &plan.indexes[*index];
                let _ = writeln!(
                    out,
                    "{pad}join {}{} on key {} using index #{index} {}{} → {}{mark}",
                    version_mark(*version),
                    plan.relations[ix.rel].name,
                    exprs(key),
                    index_name(plan, ix),
                    filters_text(filters),
                    exprs(project)
                );
            }
            Op::Intersect {
                atoms,
                filters,
                project,
            } => {
                let parts: Vec<String> = atoms
                    .iter()
                    .map(|a| {
                        let ix = &plan.indexes[a.index];
                        format!(
                            "{} on key {} using index #{} {}",
                            plan.relations[ix.rel].name,
                            exprs(&a.key),
                            a.index,
                            index_name(plan, ix)
                        )
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "{pad}intersect (worst-case-optimal; joined tuple: input, new value) {}{} → {}{mark}",
                    parts.join(" ∩ "),
                    filters_text(filters),
                    exprs(project)
                );
            }
            Op::AntiJoin { index, key } => {
                let ix = &plan.indexes[*index];
                let _ = writeln!(
                    out,
                    "{pad}anti-join (negation) {} on key {} using index #{index} {}{mark}",
                    plan.relations[ix.rel].name,
                    exprs(key),
                    index_name(plan, ix)
                );
            }
            Op::Range { ty, step } => {
                let args = if *step {
                    "the last three columns (from, to, step)"
                } else {
                    "the last two columns (from, to)"
                };
                let _ = writeln!(
                    out,
                    "{pad}range ({ty:?}) over {args}: input ++ [each value]{mark}"
                );
            }
            Op::Filter { filters, project } => {
                let _ = writeln!(
                    out,
                    "{pad}filter{} → {}{mark}",
                    filters_text(filters),
                    exprs(project)
                );
            }
            Op::Aggregate {
                func,
                ty,
                correlated,
                sub,
                filters,
                project,
            } => {
                let per = if *correlated {
                    "per input tuple"
                } else {
                    "once (uncorrelated)"
                };
                let _ = writeln!(out, "{pad}aggregate {func:?} ({ty:?}) {per} over:");
                write_ops(out, plan, sub, indent + 4, note);
                let _ = writeln!(
                    out,
                    "{pad}  then{} → {}{mark}",
                    filters_text(filters),
                    exprs(project)
                );
            }
        }
    }
}

fn version_mark(v: Version) -> &'static str {
    match v {
        Version::Full => "",
        Version::Delta => "Δ",
    }
}

fn filters_text(filters: &[Cond]) -> String {
    if filters.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = filters.iter().map(cond).collect();
    format!(" where {}", parts.join(" and "))
}

fn exprs(es: &[PExpr]) -> String {
    let parts: Vec<String> = es.iter().map(expr).collect();
    format!("({})", parts.join(", "))
}

fn cond(c: &Cond) -> String {
    match c {
        Cond::Compare { op, lhs, rhs, .. } => {
            let op = match op {
                logical::CmpOp::Eq => "=",
                logical::CmpOp::Ne => "!=",
                logical::CmpOp::Lt => "<",
                logical::CmpOp::Le => "<=",
                logical::CmpOp::Gt => ">",
                logical::CmpOp::Ge => ">=",
            };
            format!("{} {op} {}", expr(lhs), expr(rhs))
        }
        Cond::Predicate {
            pred,
            args,
            negated,
        } => format!(
            "{}{:?}{}",
            if *negated { "!" } else { "" },
            pred,
            exprs(args)
        ),
    }
}

thread_local! {
    /// The user-defined functors' names of the program being explained.
    static FUNCTOR_NAMES: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn expr(e: &PExpr) -> String {
    match e {
        PExpr::Col(c) => format!("#{c}"),
        PExpr::Const(k) => format!("{k}"),
        PExpr::Unary { op, arg, .. } => format!("{op:?}({})", expr(arg)),
        PExpr::Binary { op, lhs, rhs, .. } => {
            let sym = match op {
                logical::BinOp::Add => "+",
                logical::BinOp::Sub => "-",
                logical::BinOp::Mul => "*",
                logical::BinOp::Div => "/",
                logical::BinOp::Rem => "%",
                logical::BinOp::Pow => "^",
                other => return format!("{other:?}({}, {})", expr(lhs), expr(rhs)),
            };
            format!("({} {sym} {})", expr(lhs), expr(rhs))
        }
        PExpr::Functor {
            func: logical::Functor::User { index, .. },
            args,
        } => {
            let name = FUNCTOR_NAMES.with(|n| n.borrow().get(*index as usize).cloned());
            format!(
                "@{}{}",
                name.unwrap_or_else(|| index.to_string()),
                exprs(args)
            )
        }
        PExpr::Functor { func, args } => format!("{func:?}{}", exprs(args)),
    }
}
