//! Where each operator of a plan runs on the CUDA backend, for `fixlog explain
//! --backend cuda` and the docs. The backend ([`crate::backend`]) makes the same
//! decisions from the same functions of [`crate::codegen`].
//!
//! Relations kept in a shape are folded by the driver on the host, for both backends
//! (`fixlog_exec::maintain`; `explain` says so once per relation): for an `eqrel` or
//! `choice-domain` relation, each step's new tuples (already deduplicated and without
//! the tuples the relation holds, on the device) are copied to the host, folded through
//! the union-find or the choice, and the tuples the relation gains are copied back and
//! merged on the device. The full relation and its indexes never leave the device; the
//! union-find and the held domain values live on the host. Subsumptive clauses are
//! ordinary pipelines (placed as above) whose result is subtracted on the device.

use crate::codegen::{key_host_reason, pipeline_host_reason};
use fixlog_plan::Op;

/// A short note on where `op` runs: `device`, or what runs on the host and why.
pub fn note(op: &Op) -> String {
    match op {
        Op::Unit => "device".into(),
        Op::Scan {
            filters, project, ..
        }
        | Op::Filter { filters, project } => match pipeline_host_reason(filters, project) {
            None => "device".into(),
            Some(why) => format!("host: {why}"),
        },
        Op::Join {
            key,
            filters,
            project,
            ..
        } => match (key_host_reason(key), pipeline_host_reason(filters, project)) {
            (None, None) => "device".into(),
            (Some(why), _) => format!("key on the host ({why}), join on the device"),
            (None, Some(why)) => {
                format!("join on the device, filter and projection on the host: {why}")
            }
        },
        Op::Intersect {
            atoms,
            filters,
            project,
        } => {
            let base = "device, composed: join with the first atom, semi-joins with the others \
                        (no leapfrog kernel yet)";
            match (
                atoms.iter().find_map(|a| key_host_reason(&a.key)),
                pipeline_host_reason(filters, project),
            ) {
                (None, None) => base.into(),
                (Some(why), _) => format!("{base}; keys on the host ({why})"),
                (None, Some(why)) => format!("{base}; filter and projection on the host: {why}"),
            }
        }
        Op::AntiJoin { key, .. } => match key_host_reason(key) {
            None => "device".into(),
            Some(why) => format!("key on the host ({why}), lookup on the device"),
        },
        Op::Range { .. } => {
            "host: `range` has no kernel (the batch is read to the host, each tuple \
             repeated per value, and sent back)"
                .into()
        }
        Op::Aggregate { .. } => {
            "sub-pipeline as marked; groups aggregated and combined on the host".into()
        }
    }
}
