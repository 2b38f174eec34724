//! The reference the generated kernels are compared with (tests and the
//! `codegen_gpu` example): random data, and what each operator must produce, built on
//! `fixlog_logical::value` alone.
#![allow(dead_code)]

use fixlog_exec::OpSpec;
use fixlog_logical::value::{compare, eval_binary, eval_functor, eval_unary};
use fixlog_logical::{SymbolTable, Value};
use fixlog_plan::{Cond, PExpr};

/// A small deterministic generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as u32
    }
    /// Mostly values below `small` (so keys match and filters go both ways), sometimes
    /// integer and float edge values or any word.
    pub fn value(&mut self, small: u32) -> u32 {
        const EDGES: [u32; 10] = [
            0,
            u32::MAX,
            0x8000_0000,
            0x7FFF_FFFF,
            0x3F80_0000,
            0xBF80_0000,
            0x7FC0_0000,
            0x7F80_0000,
            31,
            33,
        ];
        match self.next() % 10 {
            0 => EDGES[self.next() as usize % EDGES.len()],
            1 => self.next(),
            _ => self.next() % small,
        }
    }
    /// `n` rows of `arity` values, row-major.
    pub fn rows(&mut self, n: usize, arity: usize, small: u32) -> Vec<u32> {
        (0..n * arity).map(|_| self.value(small)).collect()
    }
}

pub fn eval(e: &PExpr, t: &[Value], syms: &SymbolTable) -> Option<Value> {
    match e {
        PExpr::Col(c) => Some(t[*c]),
        PExpr::Const(v) => Some(*v),
        PExpr::Unary { op, ty, arg } => eval_unary(*op, *ty, eval(arg, t, syms)?),
        PExpr::Binary { op, ty, lhs, rhs } => {
            eval_binary(*op, *ty, eval(lhs, t, syms)?, eval(rhs, t, syms)?)
        }
        PExpr::Functor { func, args } => {
            let v: Option<Vec<Value>> = args.iter().map(|a| eval(a, t, syms)).collect();
            eval_functor(*func, &v?, syms)
        }
    }
}

/// Filters, then projection, of a joined tuple (device-able conditions only).
pub fn emit(
    filters: &[Cond],
    project: &[PExpr],
    t: &[Value],
    syms: &SymbolTable,
) -> Option<Vec<Value>> {
    for f in filters {
        let Cond::Compare { op, ty, lhs, rhs } = f else {
            return None;
        };
        let (Some(a), Some(b)) = (eval(lhs, t, syms), eval(rhs, t, syms)) else {
            return None;
        };
        if !compare(*op, *ty, a, b) {
            return None;
        }
    }
    project.iter().map(|e| eval(e, t, syms)).collect()
}

pub fn chunks(rows: &[u32], arity: usize, n: usize) -> Vec<Vec<u32>> {
    (0..n)
        .map(|i| rows[i * arity..(i + 1) * arity].to_vec())
        .collect()
}

/// Relation rows stored in index order, sorted, without repeats (one run of an index).
pub fn stored(rel: &[Vec<u32>], order: &[usize]) -> Vec<Vec<u32>> {
    let mut s: Vec<Vec<u32>> = rel
        .iter()
        .map(|r| order.iter().map(|&c| r[c]).collect())
        .collect();
    s.sort_unstable();
    s.dedup();
    s
}

pub fn sorted(mut v: Vec<Vec<u32>>) -> Vec<Vec<u32>> {
    v.sort_unstable();
    v
}

/// What `P_map` of a Scan/Filter spec writes for `rows` (`n` rows), in input order.
pub fn map_ref(spec: &OpSpec, rows: &[u32], n: usize, syms: &SymbolTable) -> Vec<Vec<u32>> {
    let (OpSpec::Scan {
        arity,
        filters,
        project,
    }
    | OpSpec::Filter {
        arity,
        filters,
        project,
    }) = spec
    else {
        panic!("not a map: {spec:?}")
    };
    chunks(rows, *arity, n)
        .iter()
        .filter_map(|t| emit(filters, project, t, syms))
        .collect()
}

/// What a join writes for input `rows` (`n` rows) against one run of stored rows: the
/// number of candidates (`P_jcount`'s total) and the rows that pass (`P_jwrite`).
pub fn join_ref(
    spec: &OpSpec,
    rows: &[u32],
    n: usize,
    stored: &[Vec<u32>],
    syms: &SymbolTable,
) -> (u64, Vec<Vec<u32>>) {
    let OpSpec::Join {
        input_arity,
        order,
        key_len,
        key,
        filters,
        project,
        ..
    } = spec
    else {
        panic!("not a join: {spec:?}")
    };
    let mut out = Vec::new();
    let mut candidates = 0u64;
    for t in chunks(rows, *input_arity, n) {
        let Some(k) = key
            .iter()
            .map(|e| eval(e, &t, syms))
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        for s in stored.iter().filter(|s| s[..*key_len] == k[..]) {
            candidates += 1;
            let mut joined = t.clone();
            let mut rel = vec![0; order.len()];
            for (p, &col) in order.iter().enumerate() {
                rel[col] = s[p];
            }
            joined.extend(rel);
            if let Some(o) = emit(filters, project, &joined, syms) {
                out.push(o);
            }
        }
    }
    (candidates, out)
}

/// What `P_anti` keeps of input `rows` (`n` rows) against runs of stored rows.
pub fn anti_ref(
    spec: &OpSpec,
    rows: &[u32],
    n: usize,
    runs: &[Vec<Vec<u32>>],
    syms: &SymbolTable,
) -> Vec<Vec<u32>> {
    let OpSpec::AntiJoin {
        input_arity,
        key_len,
        key,
        ..
    } = spec
    else {
        panic!("not an anti-join: {spec:?}")
    };
    chunks(rows, *input_arity, n)
        .into_iter()
        .filter(|t| {
            match key
                .iter()
                .map(|e| eval(e, t, syms))
                .collect::<Option<Vec<_>>>()
            {
                None => true,
                Some(k) => !runs.iter().flatten().any(|s| s[..*key_len] == k[..]),
            }
        })
        .collect()
}
