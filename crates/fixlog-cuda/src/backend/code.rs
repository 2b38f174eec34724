//! Operators prepared for the GPU: what runs on the device, what on the host.
//!
//! [`prepare`] looks at every operator of a run once. Whatever the device can evaluate
//! ([`crate::codegen`]'s rules) becomes kernels of one generated module, compiled once
//! per program (and cached on disk). What it cannot is split off to the host with the
//! least data crossing the bus:
//! - a scan or filter with a host-only expression runs on the host (its input is
//!   downloaded, its output uploaded);
//! - a join whose filters or projection need the host runs on the device with the whole
//!   joined tuple as output, and the host filters and projects that (the column
//!   numbering is the same);
//! - a join or anti-join whose key needs the host has its key computed on the host and
//!   appended to the input; the lookup still runs on the device;
//! - aggregates are folded and combined on the host (`fixlog_exec::aggregate`), their
//!   sub-pipelines run where their own operators say.
//!
//! Relations never move: only the batches of the operators that need the host do.
//!
//! A worst-case-optimal intersection ([`OpSpec::Intersect`]) has no kernel of its own
//! yet: [`prepare`] lowers it into device operators that already exist (see
//! [`IntersectCode`]), so its relations stay on the device and its keys, filters and
//! projection are placed by the same rules as a join's.

use crate::codegen::{self, key_host_reason, pipeline_host_reason, DeviceOp};
use crate::error::Result;
use crate::gpu::{arity_defines, Gpu};
use crate::kernels;
use crate::CudaError;
use cudarc::driver::CudaFunction;
use fixlog_cpu::eval::{compile_expr, CExpr, Src};
use fixlog_cpu::{CpuBackend, CpuCode};
use fixlog_exec::{NewRowsShape, OpSpec, SecondColumn};
use fixlog_plan::{Cond, PExpr};

/// The fewest operators a generated module holds: NVRTC's fixed cost per module (its
/// headers) is worth sharing across several operators.
const OPS_PER_MODULE_MIN: usize = 4;

/// Kernels of one device join (see the kernel contract in [`crate::codegen`]).
pub struct JoinKernels {
    pub(crate) count: CudaFunction,
    pub(crate) write: CudaFunction,
    pub(crate) write_distinct: CudaFunction,
}

pub enum MapExec {
    /// The projection is the input row itself and there is no filter.
    Identity,
    Device(CudaFunction),
    Host(CpuCode),
}

pub struct MapCode {
    pub(crate) arity: usize,
    pub(crate) out_arity: usize,
    pub(crate) exec: MapExec,
}

pub struct JoinCode {
    pub(crate) input_arity: usize,
    pub(crate) order: Vec<usize>,
    pub(crate) key_len: usize,
    /// Keys the device cannot compute: evaluated on the host and appended to the input
    /// (a row whose key fails joins nothing and is dropped).
    pub(crate) host_key: Option<Vec<CExpr>>,
    pub(crate) kernels: JoinKernels,
    /// Whether the device join may drop repeated outputs.
    pub(crate) distinct: bool,
    /// Arity of the device join's output.
    pub(crate) device_out: usize,
    /// Filters and projection the device cannot evaluate, applied on the host to the
    /// device's output (the whole joined tuple).
    pub(crate) host_after: Option<CpuCode>,
    /// The share of its candidates the last write of this join kept (conditions and
    /// the deduplication drop the rest): how large a buffer the next write needs
    /// (`CudaBackend::device_join`). `None` until a write has run.
    pub(crate) kept_share: std::cell::Cell<Option<f64>>,
    /// Whether the next writes use the cache of written rows.
    pub(crate) written_cache: Backoff,
    /// Where the join, absorbed into a relation, can give back its new rows from a
    /// bitmap per group (`P_jnew`, `CudaBackend::join_new_rows`); `None` for other
    /// shapes.
    pub(crate) new_rows: Option<Box<NewRowsCode>>,
}

/// A join of [`fixlog_exec::NewRowsShape`]: its `P_jnew` kernel and where the output's
/// columns come from.
pub(crate) struct NewRowsCode {
    pub(crate) kernel: CudaFunction,
    /// The input column that is the output's first (the blocks' groups).
    pub(crate) group: usize,
    /// Where the output's second column is read.
    pub(crate) second: SecondColumn,
    /// The new rows of the join's last run as a share of its candidates (how large a
    /// buffer the next run starts with); `None` before the first.
    pub(crate) share: std::cell::Cell<Option<f64>>,
    /// Whether the next run tries the bitmap (see [`Backoff`]).
    pub(crate) tries: Backoff,
    /// The span of the second column over an index run (keyed by the run's address
    /// and length), computed once per run: a stale entry can only be too narrow or too
    /// wide, and a candidate outside the span makes the join run the ordinary way.
    pub(crate) spans: std::cell::RefCell<Vec<(usize, usize, u32, u32)>>,
}

/// An optional way of running an operator that pays only on some data, tried again
/// after it did not pay: it sits out 1, 2, 4, ... 64 calls after each failure in a
/// row, so an operator whose data changes is tried again now and then.
///
/// Used for the device-wide cache of rows a distinct join of one or two words wrote
/// (`P_jwrite_distinct`'s `seen`, made by `CudaBackend::device_join`). The cache costs
/// an atomic in L2 for every row the blocks keep and pays only where many of those
/// rows repeat across blocks: SG's first join on ego-Facebook writes 69M rows for 4.7M
/// distinct, and with the cache the run's peak fell from 1.11 to 0.46 GiB (SG CA-HepTh
/// 2.70 to 2.06; times 0.034 to 0.038 s and 0.092 to 0.086); on TC, whose input is
/// sorted by the column the output keeps, the blocks already catch most repeats and
/// the cache on every write took up to 1.17x the time (1.4x on the 8 ms of TC
/// ego-Facebook; docs/gpu-results.md, round 18). So a write uses the cache unless the
/// last write that did dropped fewer rows with it than it wrote.
///
/// And for the bitmap joins (`CudaBackend::join_new_rows`), which count and cut the
/// first chunk of their input before they know whether its groups are large enough to
/// pay: a join that ran the ordinary way skips that probe for a while.
#[derive(Default)]
pub(crate) struct Backoff {
    /// Calls to sit out before trying again.
    skip: std::cell::Cell<u32>,
    /// How many calls it sits out after failing next.
    backoff: std::cell::Cell<u32>,
}

impl Backoff {
    /// Most calls it sits out.
    const BACKOFF_MAX: u32 = 64;

    /// Whether this call tries (a call that does not counts toward the calls to sit
    /// out).
    pub(crate) fn this_time(&self) -> bool {
        match self.skip.get() {
            0 => true,
            k => {
                self.skip.set(k - 1);
                false
            }
        }
    }

    /// Whether a call that tried paid.
    pub(crate) fn record(&self, paid: bool) {
        if paid {
            self.backoff.set(0);
        } else {
            let b = self.backoff.get().max(1);
            self.skip.set(b);
            self.backoff.set((b * 2).min(Self::BACKOFF_MAX));
        }
    }
}

pub struct AntiCode {
    pub(crate) input_arity: usize,
    pub(crate) order: Vec<usize>,
    pub(crate) key_len: usize,
    /// As in [`JoinCode::host_key`]; a row whose key fails is kept.
    pub(crate) host_key: Option<Vec<CExpr>>,
    pub(crate) kernel: CudaFunction,
}

/// A worst-case-optimal intersection composed of existing device operators: the input
/// numbered (`input ++ [row]`, so that repeated input tuples stay apart), joined with
/// the first atom's index keeping `input ++ [row, value]`, then joined with every
/// other atom's index on its key with the new column equal to `value` (a semi-join
/// keeping the same columns); a step whose atom has columns after the new one may
/// repeat rows and is sorted and deduplicated after it; finally the spec's filters and
/// projection over `input ++ [value]`. Exact (each value once per input tuple) and
/// simple; not a leapfrog kernel: the first atom's range is materialized.
pub struct IntersectCode {
    pub(crate) input_arity: usize,
    /// One join per atom, in the spec's order.
    pub(crate) joins: Vec<CudaCode>,
    /// Per atom: its step may repeat rows (the atom has columns after the new one).
    pub(crate) dedup: Vec<bool>,
    /// Filters and projection of `input ++ [row, value]`.
    pub(crate) finish: Box<CudaCode>,
}

/// One prepared operator of the CUDA backend.
pub enum CudaCode {
    Map(MapCode),
    Join(JoinCode),
    Intersect(IntersectCode),
    AntiJoin(AntiCode),
    /// Aggregates are combined on the host.
    Aggregate {
        input_arity: usize,
        cpu: CpuCode,
    },
}

impl CudaCode {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            CudaCode::Map(_) => "scan or filter",
            CudaCode::Join(_) => "join",
            CudaCode::Intersect(_) => "intersection",
            CudaCode::AntiJoin(_) => "anti-join",
            CudaCode::Aggregate { .. } => "aggregate",
        }
    }
}

/// What an operator needs from the generated module, before it is compiled.
enum Pending {
    Map {
        arity: usize,
        out_arity: usize,
        /// `Some(prefix)` on the device; `None`: identity or host.
        prefix: Option<String>,
        host: Option<CpuCode>,
    },
    Join {
        input_arity: usize,
        order: Vec<usize>,
        key_len: usize,
        host_key: Option<Vec<CExpr>>,
        prefix: String,
        distinct: bool,
        device_out: usize,
        host_after: Option<CpuCode>,
        new_rows: Option<NewRowsShape>,
    },
    AntiJoin {
        input_arity: usize,
        order: Vec<usize>,
        key_len: usize,
        host_key: Option<Vec<CExpr>>,
        prefix: String,
    },
    Aggregate {
        input_arity: usize,
        cpu: CpuCode,
    },
}

/// `Col(c)` for `c >= from` becomes `Col(c + by)` (room for `by` columns inserted at
/// `from`).
fn shift_expr(e: &PExpr, from: usize, by: usize) -> PExpr {
    e.map_columns(&|c| if c >= from { c + by } else { c })
}

fn shift_cond(c: &Cond, from: usize, by: usize) -> Cond {
    c.map_columns(&|c| if c >= from { c + by } else { c })
}

fn cols(range: std::ops::Range<usize>) -> Vec<PExpr> {
    range.map(PExpr::Col).collect()
}

fn is_identity(arity: usize, filters: &[Cond], project: &[PExpr]) -> bool {
    filters.is_empty()
        && project.len() == arity
        && project.iter().enumerate().all(|(i, e)| *e == PExpr::Col(i))
}

fn cpu_code(cpu: &CpuBackend, spec: &OpSpec) -> Result<CpuCode> {
    cpu.prepare_one(spec)
        .map_err(|e| CudaError::Invalid(e.to_string()))
}

/// The operators an intersection is composed of (see [`IntersectCode`]): one join per
/// atom, then the filter; and per atom whether its step may repeat rows.
fn intersect_steps(spec: &OpSpec) -> Result<(Vec<OpSpec>, Vec<bool>)> {
    let OpSpec::Intersect {
        input_arity,
        atoms,
        filters,
        project,
        distinct,
    } = spec
    else {
        return Err(CudaError::Invalid("not an intersection".into()));
    };
    let a = *input_arity;
    let mut steps = Vec::with_capacity(atoms.len() + 1);
    let mut dedup = Vec::with_capacity(atoms.len());
    for (i, atom) in atoms.iter().enumerate() {
        let Some(&value_col) = atom.order.get(atom.key_len) else {
            return Err(CudaError::Invalid(format!(
                "an intersected index of {} columns has no column after its key of {}",
                atom.order.len(),
                atom.key_len
            )));
        };
        // Joined tuple: input, row number, (value,) then the atom's relation columns.
        let (input_arity, filters, project) = if i == 0 {
            let mut project = cols(0..a + 1);
            project.push(PExpr::Col(a + 1 + value_col));
            (a + 1, Vec::new(), project)
        } else {
            let filter = Cond::Compare {
                op: fixlog_logical::CmpOp::Eq,
                ty: fixlog_logical::ColType::Unsigned,
                lhs: PExpr::Col(a + 2 + value_col),
                rhs: PExpr::Col(a + 1),
            };
            (a + 2, vec![filter], cols(0..a + 2))
        };
        steps.push(OpSpec::Join {
            input_arity,
            order: atom.order.clone(),
            key_len: atom.key_len,
            key: atom.key.clone(),
            filters,
            project,
            distinct: *distinct,
        });
        dedup.push(atom.order.len() > atom.key_len + 1);
    }
    // The value moves from column `a` of the spec's joined tuple to `a + 1`.
    steps.push(OpSpec::Filter {
        arity: a + 2,
        filters: filters.iter().map(|c| shift_cond(c, a, 1)).collect(),
        project: project.iter().map(|e| shift_expr(e, a, 1)).collect(),
    });
    Ok((steps, dedup))
}

/// Lowers every operator: generates and compiles the module of device kernels, and
/// prepares the host parts. Intersections are first replaced by the operators they
/// are composed of ([`IntersectCode`]).
pub(crate) fn prepare(gpu: &Gpu, cpu: &CpuBackend, specs: &[OpSpec]) -> Result<Vec<CudaCode>> {
    let mut flat = Vec::with_capacity(specs.len());
    // Per spec: `None`, or the intersection's input arity and per-atom dedup flags.
    let mut composed = Vec::with_capacity(specs.len());
    for spec in specs {
        match spec {
            OpSpec::Intersect { input_arity, .. } => {
                let (steps, dedup) = intersect_steps(spec)?;
                flat.extend(steps);
                composed.push(Some((*input_arity, dedup)));
            }
            other => {
                flat.push(other.clone());
                composed.push(None);
            }
        }
    }
    let mut codes = prepare_flat(gpu, cpu, &flat)?.into_iter();
    let mut next = || {
        codes
            .next()
            .ok_or_else(|| CudaError::Invalid("an operator was not prepared".into()))
    };
    let mut out = Vec::with_capacity(specs.len());
    for c in composed {
        out.push(match c {
            None => next()?,
            Some((input_arity, dedup)) => {
                let joins = dedup.iter().map(|_| next()).collect::<Result<Vec<_>>>()?;
                CudaCode::Intersect(IntersectCode {
                    input_arity,
                    joins,
                    dedup,
                    finish: Box::new(next()?),
                })
            }
        });
    }
    Ok(out)
}

/// [`prepare`] for specs without intersections.
fn prepare_flat(gpu: &Gpu, cpu: &CpuBackend, specs: &[OpSpec]) -> Result<Vec<CudaCode>> {
    let mut device: Vec<DeviceOp> = Vec::new();
    let mut pending = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        let prefix = format!("op{i}");
        pending.push(match spec {
            OpSpec::Scan {
                arity,
                filters,
                project,
            }
            | OpSpec::Filter {
                arity,
                filters,
                project,
            } => {
                let (prefix, host) = if is_identity(*arity, filters, project) {
                    (None, None)
                } else if pipeline_host_reason(filters, project).is_some() {
                    let host = OpSpec::Filter {
                        arity: *arity,
                        filters: filters.clone(),
                        project: project.clone(),
                    };
                    (None, Some(cpu_code(cpu, &host)?))
                } else {
                    device.push(DeviceOp {
                        prefix: prefix.clone(),
                        spec: spec.clone(),
                    });
                    (Some(prefix), None)
                };
                Pending::Map {
                    arity: *arity,
                    out_arity: project.len(),
                    prefix,
                    host,
                }
            }
            OpSpec::Join {
                input_arity,
                order,
                key_len,
                key,
                filters,
                project,
                distinct,
            } => {
                if key.len() != *key_len || *key_len > order.len() {
                    return Err(CudaError::Invalid(format!(
                        "join key has {} expressions but the index's key has {key_len} of {} columns",
                        key.len(),
                        order.len()
                    )));
                }
                let a = *input_arity;
                let inner = order.len();
                // Host keys go after the input columns; inner columns shift past them.
                let (host_key, dev_in, dev_key, filters, project) =
                    if key_host_reason(key).is_some() {
                        let k = key.len();
                        let compiled = key.iter().map(|e| compile_expr(e, &Src::In)).collect();
                        (
                            Some(compiled),
                            a + k,
                            cols(a..a + k),
                            filters.iter().map(|c| shift_cond(c, a, k)).collect(),
                            project.iter().map(|e| shift_expr(e, a, k)).collect(),
                        )
                    } else {
                        (None, a, key.clone(), filters.clone(), project.clone())
                    };
                let (dev_filters, dev_project, host_after) =
                    if pipeline_host_reason(&filters, &project).is_some() {
                        let width = dev_in + inner;
                        let after = OpSpec::Filter {
                            arity: width,
                            filters,
                            project,
                        };
                        (Vec::new(), cols(0..width), Some(cpu_code(cpu, &after)?))
                    } else {
                        (filters, project, None)
                    };
                let device_out = dev_project.len();
                let distinct = *distinct && host_after.is_none();
                let spec = OpSpec::Join {
                    input_arity: dev_in,
                    order: order.clone(),
                    key_len: *key_len,
                    key: dev_key,
                    filters: dev_filters,
                    project: dev_project,
                    distinct,
                };
                // (The generator writes `P_jnew` for every join of this shape; the
                // backend uses it only where the device's rows are the join's output.)
                let new_rows = spec
                    .new_rows_shape()
                    .filter(|_| host_key.is_none() && host_after.is_none());
                device.push(DeviceOp {
                    prefix: prefix.clone(),
                    spec,
                });
                Pending::Join {
                    input_arity: a,
                    order: order.clone(),
                    key_len: *key_len,
                    host_key,
                    prefix,
                    distinct,
                    device_out,
                    host_after,
                    new_rows,
                }
            }
            OpSpec::AntiJoin {
                input_arity,
                order,
                key_len,
                key,
            } => {
                if key.len() != *key_len || *key_len > order.len() {
                    return Err(CudaError::Invalid(format!(
                        "anti-join key has {} expressions but the index's key has {key_len} of {} columns",
                        key.len(),
                        order.len()
                    )));
                }
                let a = *input_arity;
                let (host_key, dev_in, dev_key) = if key_host_reason(key).is_some() {
                    let k = key.len();
                    let compiled = key.iter().map(|e| compile_expr(e, &Src::In)).collect();
                    (Some(compiled), a + k, cols(a..a + k))
                } else {
                    (None, a, key.clone())
                };
                device.push(DeviceOp {
                    prefix: prefix.clone(),
                    spec: OpSpec::AntiJoin {
                        input_arity: dev_in,
                        order: order.clone(),
                        key_len: *key_len,
                        key: dev_key,
                    },
                });
                Pending::AntiJoin {
                    input_arity: a,
                    order: order.clone(),
                    key_len: *key_len,
                    host_key,
                    prefix,
                }
            }
            OpSpec::Aggregate { input_arity, .. } => Pending::Aggregate {
                input_arity: *input_arity,
                cpu: cpu_code(cpu, spec)?,
            },
            OpSpec::Intersect { .. } => {
                return Err(CudaError::Invalid(
                    "an intersection reached the kernel generator undivided".into(),
                ))
            }
        });
    }

    // The operators' kernels, compiled as a few modules at once on several threads
    // (NVRTC compiles one module on one thread; a large program is seconds of it).
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 16);
    let per_module = device.len().div_ceil(threads).max(OPS_PER_MODULE_MIN);
    let mut sources = Vec::new();
    let mut module_of = std::collections::HashMap::new();
    for (m, chunk) in device.chunks(per_module.max(1)).enumerate() {
        let source = codegen::module_source(chunk).map_err(CudaError::Invalid)?;
        for op in chunk {
            module_of.insert(op.prefix.clone(), m);
        }
        sources.push((format!("ops{m}"), source));
    }
    let modules = gpu.load_sources(&sources, &["--fmad=false".to_string()])?;
    // The primitives of every arity the operators touch (sorting, merging and indexing
    // their outputs and inputs), compiled in parallel now rather than one by one on
    // first use.
    let mut arities: Vec<usize> = specs
        .iter()
        .flat_map(|s| match s {
            OpSpec::Scan { arity, project, .. } | OpSpec::Filter { arity, project, .. } => {
                vec![*arity, project.len()]
            }
            OpSpec::Join {
                input_arity,
                order,
                project,
                ..
            } => vec![*input_arity, order.len(), project.len()],
            OpSpec::AntiJoin {
                input_arity, order, ..
            } => vec![*input_arity, order.len()],
            OpSpec::Intersect {
                input_arity,
                atoms,
                project,
                ..
            } => {
                let mut v = vec![*input_arity + 1, *input_arity + 2, project.len()];
                v.extend(atoms.iter().map(|at| at.order.len()));
                v
            }
            OpSpec::Aggregate {
                input_arity,
                project,
                ..
            } => vec![*input_arity, project.len()],
        })
        .filter(|a| (1..=8).contains(a))
        .collect();
    arities.sort_unstable();
    arities.dedup();
    let mut wanted: Vec<(&str, String)> = vec![
        (kernels::SCAN, String::new()),
        (kernels::MISC, String::new()),
    ];
    for &a in &arities {
        for m in [kernels::SORT, kernels::REL, kernels::HISA] {
            wanted.push((m, arity_defines(a)));
        }
    }
    gpu.load_modules(&wanted)?;
    let function = |prefix: &str, kernel: &str| -> Result<CudaFunction> {
        let m = module_of
            .get(prefix)
            .and_then(|&m| modules.get(m))
            .ok_or_else(|| CudaError::Invalid(format!("no generated module holds {prefix}")))?;
        gpu.module_function(m, &format!("{prefix}_{kernel}"))
    };
    pending
        .into_iter()
        .map(|p| {
            Ok(match p {
                Pending::Map {
                    arity,
                    out_arity,
                    prefix,
                    host,
                } => CudaCode::Map(MapCode {
                    arity,
                    out_arity,
                    exec: match (prefix, host) {
                        (Some(p), _) => MapExec::Device(function(&p, "map")?),
                        (None, Some(h)) => MapExec::Host(h),
                        (None, None) => MapExec::Identity,
                    },
                }),
                Pending::Join {
                    input_arity,
                    order,
                    key_len,
                    host_key,
                    prefix,
                    distinct,
                    device_out,
                    host_after,
                    new_rows,
                } => CudaCode::Join(JoinCode {
                    input_arity,
                    order,
                    key_len,
                    host_key,
                    kernels: JoinKernels {
                        count: function(&prefix, "jcount")?,
                        write: function(&prefix, "jwrite")?,
                        write_distinct: function(&prefix, "jwrite_distinct")?,
                    },
                    distinct,
                    device_out,
                    host_after,
                    kept_share: std::cell::Cell::new(None),
                    written_cache: Backoff::default(),
                    new_rows: match new_rows {
                        Some(NewRowsShape { group, second }) => Some(Box::new(NewRowsCode {
                            kernel: function(&prefix, "jnew")?,
                            group,
                            second,
                            share: std::cell::Cell::new(None),
                            tries: Backoff::default(),
                            spans: std::cell::RefCell::new(Vec::new()),
                        })),
                        None => None,
                    },
                }),
                Pending::AntiJoin {
                    input_arity,
                    order,
                    key_len,
                    host_key,
                    prefix,
                } => CudaCode::AntiJoin(AntiCode {
                    input_arity,
                    order,
                    key_len,
                    host_key,
                    kernel: function(&prefix, "anti")?,
                }),
                Pending::Aggregate { input_arity, cpu } => CudaCode::Aggregate { input_arity, cpu },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixlog_logical::{BinOp, ColType};

    #[test]
    fn a_backoff_sits_out_calls_that_do_not_pay() {
        let set = Backoff::default();
        assert!(set.this_time());
        // Paid: tried again at once.
        set.record(true);
        assert!(set.this_time());
        // Did not pay, again and again: sits out 1, 2, 4, ... calls, at most 64.
        let mut waits = Vec::new();
        for _ in 0..8 {
            set.record(false);
            let mut k = 0;
            while !set.this_time() {
                k += 1;
            }
            waits.push(k);
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 64]);
        // Paid once more: no wait, and the next failure waits one call again.
        set.record(true);
        assert!(set.this_time());
        set.record(false);
        assert!(!set.this_time());
        assert!(set.this_time());
    }

    #[test]
    fn shifting_moves_inner_columns_only() {
        let e = PExpr::Binary {
            op: BinOp::Add,
            ty: ColType::Number,
            lhs: Box::new(PExpr::Col(1)),
            rhs: Box::new(PExpr::Col(3)),
        };
        let s = shift_expr(&e, 2, 2);
        assert_eq!(
            s,
            PExpr::Binary {
                op: BinOp::Add,
                ty: ColType::Number,
                lhs: Box::new(PExpr::Col(1)),
                rhs: Box::new(PExpr::Col(5)),
            }
        );
        assert!(is_identity(2, &[], &[PExpr::Col(0), PExpr::Col(1)]));
        assert!(!is_identity(2, &[], &[PExpr::Col(1), PExpr::Col(0)]));
    }
}
