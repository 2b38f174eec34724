//! CUDA C++ generated for a program's operators.
//!
//! Every operator's expressions and conditions are known before evaluation starts
//! (`fixlog_exec::Backend::prepare`), so instead of interpreting them in a kernel the
//! CUDA backend writes them out as C++ and compiles all operators of a program into one
//! NVRTC module (cached on disk by the hash of its source, so a second run of the same
//! program compiles nothing). Each operator becomes a struct with its key, filters and
//! projection as inline functions, instantiated into the kernel templates of
//! `kernels/pipeline.cuh`; the typed value semantics are in `kernels/values.cuh` and
//! agree bit for bit with `fixlog_logical::value`.
//!
//! What cannot run on the device ([`expr_host_reason`], [`cond_host_reason`]) — string
//! functors and predicates (they need the host's symbol table), ordering comparisons of
//! symbols (they compare strings), float `^` (`powf` differs between libraries in the
//! last bit) — is left to the host by the backend, which then asks for kernels of a
//! reduced operator (see `crate::backend`).
//!
//! # The kernel contract
//!
//! For the device operator with prefix `P` (see [`DeviceOp`]), by [`OpSpec`] kind
//! (`u32` words, rows row-major, `u64` = `unsigned long long`):
//!
//! - `Scan`/`Filter` (input arity `A`, output arity `OUT`):
//!   `P_map(const u32* in, u64 n, u32* out, u64* count)`: every row passing the filters
//!   whose projection does not fail is written to `out` at a position reserved with
//!   one `atomicAdd` on `*count` per block (`*count` zeroed by the caller; order across
//!   blocks arbitrary). Launch: `MAP_BLOCK` threads, `ceil(n / (MAP_BLOCK * MAP_ITEMS))`
//!   blocks.
//! - `Join` (input arity `IN`, inner arity `INNER` stored in index order, key length
//!   `KEY`, output arity `OUT`):
//!   `P_jcount(const u32* in, u64 n, const u32* rows, const u32* starts,
//!   const u32* table, u32 mask, u64 rows_n, u32* counts, u32* begins)`: per input row,
//!   the key (a failing key expression: count 0) and its range `[b, e)` in one run of the
//!   index (HISA `hisa_find`; `KEY == 0`: the whole run `[0, rows_n)`); `counts[i] = e - b`,
//!   `begins[i] = b`. Launch: 256 threads, `ceil(n / 256)` blocks.
//!   `P_jwrite(const u32* in, u64 n, const u32* rows, const u32* begins,
//!   const u32* offsets, u64 kbase, u64 total, u32* out, u64* count)`: `offsets` is the
//!   exclusive scan of `counts`; the launch writes the candidates `[kbase, total)` (all
//!   of them: `kbase` 0 and `total` the sum of `counts`; a window of them where the host
//!   writes a large join into a smaller buffer); each thread takes `JW_ITEMS`
//!   consecutive candidates `k`, finds input row `i` (the last with `offsets[i] <= k`) and inner row
//!   `begins[i] + k - offsets[i]`, evaluates filters and projection over
//!   (input row, inner row) and appends what passes as `P_map` does. Launch: `JW_BLOCK`
//!   threads, `ceil((total - kbase) / (JW_BLOCK * JW_ITEMS))` blocks.
//!   `P_jwrite_distinct(..., u64* count, u64* seen, u64 seen_slots, u64* seen_drops)`:
//!   `P_jwrite`'s parameters and result set, but when `OUT` is 1 or 2 each block drops
//!   outputs it already wrote (a shared-memory hash set), and with `seen_slots` > 0
//!   (below 2^32) every block also drops outputs found in `seen`, a cache of the rows
//!   written (any block, any window): `seen_slots` `u64` that the caller filled with
//!   `0xFF` bytes before the first window and keeps across the windows of one write
//!   (a row is `w0`, or `w0 << 32 | w1`; one slot per hash, a written row evicts what
//!   its slot held), and adds the number of rows it dropped so to `*seen_drops`
//!   (`seen` and `seen_drops` unused when `seen_slots` is 0 or `OUT` > 2). Launch:
//!   `JD_BLOCK` threads, `ceil((total - kbase) / (JD_BLOCK * JD_ITEMS))` blocks.
//!   `P_jnew(const u32* in, u64 n, const u32* rows, const u32* begins,
//!   const u32* offsets, u64 total, const u32* starts, u64 nblocks, const u64* olds,
//!   u32 nolds, u32 lo, u32 words, u32* out, u64 cap, u64* count)`, only for joins of
//!   [`OpSpec::new_rows_shape`] (output `(a[G], y)`): the rows of `P_jwrite`'s set that are not
//!   in `old` (`nolds <= JN_RUNS` runs of rows of two words sorted, `olds[2q]` the rows'
//!   address and `olds[2q + 1]` their count), each at most once per block: block `b`
//!   takes the candidates of input rows `[starts[b], starts[b + 1])` (`starts[nblocks]`
//!   read as `n`), which must share `a[G]`, and deduplicates them in a bitmap of
//!   `words <= JN_WORDS` words over second columns `[lo, lo + 32 * words)`, first set
//!   from `old`'s rows with first column `a[G]`. Rows are appended as `P_jwrite`'s,
//!   written only below `cap` (`count[0]` counts them all); `count[1]` counts the
//!   candidates that passed the filters, `count[2]` those whose second column fell
//!   outside the bitmap (not deduplicated: the output must then not be used). Launch:
//!   `JN_BLOCK` threads, `nblocks` blocks.
//! - `AntiJoin` (input arity `IN`, key length `KEY`):
//!   `P_anti(const u32* in, u64 n, const RunDesc* runs, u32 nruns, u32* out, u64* count)`:
//!   keeps (appends, as `P_map`) every input row whose key fails or is found in no run
//!   (`KEY == 0`: kept when every run is empty). [`RunDesc`] is shared with the kernels.
//! - `Aggregate`: no kernels (aggregates are combined on the host).
//!
//! A joined column `c < IN` is input column `c`; `c >= IN` is relation column `c - IN`
//! of the inner relation, which a stored inner row holds at position `inv[c - IN]`
//! (`inv` the inverse of the index order).
//!
//! # What the kernels guarantee besides the contract
//!
//! - Alignment: rows of 2 and 4 words are read and written as `uint2`/`uint4`, so `in`,
//!   `rows` and `out` must be 8- (16-) byte aligned for those arities (as for join.cu).
//! - Order: within a block rows come out in input order (`P_map`, `P_anti`) or
//!   candidate order (`P_jwrite`); only the blocks' order is the atomic counter's.
//! - `P_jwrite_distinct` drops a row only when the same block already kept the very
//!   same row, or the row is in `seen` (the first thread to put a row there found
//!   another one and wrote it), so the set of rows is exactly `P_jwrite`'s.
//! - A block that keeps rows reserves them with one `atomicAdd` on `*count` (a block
//!   that keeps none makes no atomic), so several launches may append to one buffer.
//! - Rows of one or two words are staged in shared memory and stored coalesced
//!   (`FX_STAGE`, on by default); `__launch_bounds__(block, 1)`: no spills (ptxas 13 with
//!   the block size alone aims at 32 registers at 256 threads), and a launch never
//!   asks for more registers than a block can have.
//! - NaN results of float arithmetic carry the bits an x86-64 host gives them (first
//!   NaN operand quieted, else the default NaN `0xFFC00000`, "-nan"), not the device's
//!   canonical `0x7FFFFFFF`, so that the output is bit-identical to the CPU backend's.
//!
//! Tests: `generate_tests` (the text; a proptest over random specs, valid or not),
//! `tests/values_cxx.rs` (`values.cuh` and generated expressions on the host against
//! `fixlog_logical::value`), `tests/kernels_emu.rs` (the whole module of
//! [`coverage_ops`] run on the host by a small CUDA emulator, against a reference);
//! `examples/kernel_check.rs` (NVRTC, and ptxas in `scripts/kernel-check.sh`) and
//! `examples/codegen_gpu.rs` (the same check on a GPU, and the transitive-closure join
//! timed against join.cu).

mod coverage;
mod generate;
#[cfg(test)]
mod generate_tests;

pub use coverage::coverage_ops;
pub use generate::{module_source, pipeline_function, VALUES_CUH};

use fixlog_exec::OpSpec;
use fixlog_logical::{BinOp, CmpOp, ColType, Functor};
use fixlog_plan::{Cond, PExpr};

/// Threads per block and rows per thread of `P_map` and `P_anti`.
pub const MAP_BLOCK: u32 = 256;
pub const MAP_ITEMS: u32 = 4;
/// Threads per block and candidates per thread of `P_jwrite`.
pub const JW_BLOCK: u32 = 256;
pub const JW_ITEMS: u32 = 8;
/// Threads per block and candidates per thread of `P_jwrite_distinct`.
pub const JD_BLOCK: u32 = 512;
pub const JD_ITEMS: u32 = 8;
/// Threads per block of `P_jcount`.
pub const JC_BLOCK: u32 = 256;
/// Threads per block and candidates per thread (per tile) of `P_jnew`.
pub const JN_BLOCK: u32 = 256;
pub const JN_ITEMS: u32 = 4;
/// Words of `P_jnew`'s bitmap (`fxk::JN_WORDS`): second columns spanning at most
/// `32 * JN_WORDS` values.
pub const JN_WORDS: u32 = 8192;
/// Runs of the relation `P_jnew` subtracts, at most (`fxk::JN_RUNS`).
pub const JN_RUNS: usize = 32;

/// One run of an index, as `P_anti` reads it (same layout as `struct RunDesc` in
/// `pipeline.cuh`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunDesc {
    pub rows: u64,
    pub starts: u64,
    pub table: u64,
    pub mask: u32,
    pub pad: u32,
    pub n: u64,
}

/// An operator to generate kernels for: kernel names start with `prefix`; every
/// expression of `spec` runs on the device ([`spec_host_reason`] is `None`) and `spec`
/// is not an aggregate.
#[derive(Clone, Debug)]
pub struct DeviceOp {
    pub prefix: String,
    pub spec: OpSpec,
}

/// Why an expression must be evaluated on the host, or `None` if the device can.
pub fn expr_host_reason(e: &PExpr) -> Option<String> {
    match e {
        PExpr::Col(_) | PExpr::Const(_) => None,
        PExpr::Unary { arg, .. } => expr_host_reason(arg),
        PExpr::Binary { op, ty, lhs, rhs } => {
            if *op == BinOp::Pow && *ty == ColType::Float {
                return Some("float `^` is computed on the host (powf)".into());
            }
            expr_host_reason(lhs).or_else(|| expr_host_reason(rhs))
        }
        PExpr::Functor { func, args } => {
            let name = match func {
                Functor::Cat => Some("cat"),
                Functor::Strlen => Some("strlen"),
                Functor::Substr => Some("substr"),
                Functor::ToNumber => Some("to_number"),
                Functor::ToString => Some("to_string"),
                Functor::Ord | Functor::ToUnsigned | Functor::ToFloat | Functor::ToInteger => None,
                // Soufflé's conversions (x86-64 truncation, text) run on the host.
                Functor::Convert(..) => {
                    return Some(
                        "conversions other than number<->float/unsigned run on the host".into(),
                    )
                }
                // Records live in the run's record table, on the host.
                Functor::Pack(_) => {
                    return Some("building a record or ADT value needs the record table".into())
                }
                Functor::Field(..) => {
                    return Some("reading a record's field needs the record table".into())
                }
                // A function of a shared library, called on the host.
                Functor::User { .. } => {
                    return Some("a user-defined functor (`@f`) is called on the host".into())
                }
            };
            if let Some(name) = name {
                return Some(format!("`{name}` needs the symbol table"));
            }
            args.iter().find_map(expr_host_reason)
        }
    }
}

/// Why a condition must be evaluated on the host, or `None` if the device can.
pub fn cond_host_reason(c: &Cond) -> Option<String> {
    match c {
        Cond::Compare { op, ty, lhs, rhs } => {
            if *ty == ColType::Symbol && !matches!(op, CmpOp::Eq | CmpOp::Ne) {
                return Some("ordering symbols compares their strings".into());
            }
            expr_host_reason(lhs).or_else(|| expr_host_reason(rhs))
        }
        Cond::Predicate { pred, .. } => Some(format!(
            "`{}` needs the symbol strings",
            match pred {
                fixlog_logical::Predicate::Contains => "contains",
                fixlog_logical::Predicate::Match => "match",
            }
        )),
    }
}

/// Why some filter or projection must run on the host, or `None`.
pub fn pipeline_host_reason(filters: &[Cond], project: &[PExpr]) -> Option<String> {
    filters
        .iter()
        .find_map(cond_host_reason)
        .or_else(|| project.iter().find_map(expr_host_reason))
}

/// Why a key must be computed on the host, or `None`.
pub fn key_host_reason(key: &[PExpr]) -> Option<String> {
    key.iter().find_map(expr_host_reason)
}

/// Why an operator cannot run entirely on the device, or `None`.
pub fn spec_host_reason(spec: &OpSpec) -> Option<String> {
    match spec {
        OpSpec::Scan {
            filters, project, ..
        }
        | OpSpec::Filter {
            filters, project, ..
        } => pipeline_host_reason(filters, project),
        OpSpec::Join {
            key,
            filters,
            project,
            ..
        } => key_host_reason(key).or_else(|| pipeline_host_reason(filters, project)),
        OpSpec::AntiJoin { key, .. } => key_host_reason(key),
        OpSpec::Intersect {
            atoms,
            filters,
            project,
            ..
        } => atoms
            .iter()
            .find_map(|a| key_host_reason(&a.key))
            .or_else(|| pipeline_host_reason(filters, project)),
        OpSpec::Aggregate { .. } => Some("aggregates are combined on the host".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_reasons() {
        let col = PExpr::Col(0);
        assert_eq!(expr_host_reason(&col), None);
        let cat = PExpr::Functor {
            func: Functor::Cat,
            args: vec![col.clone(), col.clone()],
        };
        assert!(expr_host_reason(&cat).unwrap().contains("cat"));
        let nested = PExpr::Binary {
            op: BinOp::Add,
            ty: ColType::Number,
            lhs: Box::new(col.clone()),
            rhs: Box::new(PExpr::Functor {
                func: Functor::Strlen,
                args: vec![col.clone()],
            }),
        };
        assert!(expr_host_reason(&nested).unwrap().contains("strlen"));
        let lt = |ty| Cond::Compare {
            op: CmpOp::Lt,
            ty,
            lhs: col.clone(),
            rhs: col.clone(),
        };
        assert!(cond_host_reason(&lt(ColType::Symbol)).is_some());
        assert!(cond_host_reason(&lt(ColType::Float)).is_none());
        let fpow = PExpr::Binary {
            op: BinOp::Pow,
            ty: ColType::Float,
            lhs: Box::new(col.clone()),
            rhs: Box::new(col.clone()),
        };
        assert!(expr_host_reason(&fpow).is_some());
        // Soufflé's conversions (x86-64 float truncation, text) are host-only.
        let conv = PExpr::Functor {
            func: Functor::Convert(ColType::Float, ColType::Number),
            args: vec![col.clone()],
        };
        assert!(expr_host_reason(&conv).is_some());
    }
}
