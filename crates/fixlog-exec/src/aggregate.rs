//! Aggregate values, computed the same way by every backend.
//!
//! An aggregate sub-pipeline yields groups: `[row number]` rows for `count`, `[row
//! number, value]` rows otherwise, in whatever order the backend produced them. The
//! value of each group must not depend on that order, or two backends (or two thread
//! counts) could print different sums. Integer sums wrap and `min`/`max`/`count` are
//! order-free anyway; floating-point `sum` and `mean` are not associative, so their
//! values are added in a canonical order: ascending by IEEE total order within each
//! group.

use crate::backend::{ExecError, ExecResult};
use fixlog_logical::value::{as_f32, as_i32, eval_binary, from_f32, from_i32, value_cmp};
use fixlog_logical::{AggFunc, BinOp, ColType, SymbolTable, Value};

/// Number of columns the groups of `func` have (`[row]` or `[row, value]`).
pub fn group_arity(func: AggFunc) -> usize {
    if func == AggFunc::Count {
        1
    } else {
        2
    }
}

/// The aggregate of each of `n` groups (input rows), from group rows of `arity`
/// columns given as row-major slices. `None` where the aggregate of an empty group is
/// undefined (`min`, `max`, `mean`): the input row is dropped.
pub fn fold(
    n: usize,
    arity: usize,
    groups: &[&[Value]],
    func: AggFunc,
    ty: ColType,
    symbols: &SymbolTable,
) -> ExecResult<Vec<Option<Value>>> {
    let need = group_arity(func);
    if arity < need {
        return Err(ExecError::Backend(format!(
            "aggregate groups of arity {arity}; {func:?} needs {need}"
        )));
    }
    let rows = || groups.iter().flat_map(|s| s.chunks_exact(arity));
    let row_of = |g: &[Value]| -> ExecResult<usize> {
        let i = g[0] as usize;
        if i >= n {
            return Err(ExecError::Backend(format!(
                "aggregate group row number {i} out of range ({n} input tuples)"
            )));
        }
        Ok(i)
    };
    let mut count: Vec<u64> = vec![0; n];
    for g in rows() {
        count[row_of(g)?] += 1;
    }
    let float_order = ty == ColType::Float && matches!(func, AggFunc::Sum | AggFunc::Mean);
    if float_order || func == AggFunc::Mean {
        // Values grouped by row, each group in canonical order.
        let mut pairs: Vec<(u32, Value)> = rows().map(|g| (g[0], g[1])).collect();
        pairs.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| as_f32(a.1).total_cmp(&as_f32(b.1)))
                .then_with(|| a.1.cmp(&b.1))
        });
        let mut out: Vec<Option<Value>> = count
            .iter()
            .map(|&c| match func {
                AggFunc::Sum => Some(from_f32(0.0)),
                _ => (c > 0).then_some(0),
            })
            .collect();
        let mut start = 0;
        while start < pairs.len() {
            let row = pairs[start].0;
            let mut end = start;
            while end < pairs.len() && pairs[end].0 == row {
                end += 1;
            }
            let values = pairs[start..end].iter().map(|p| p.1);
            out[row as usize] = Some(if func == AggFunc::Sum {
                let mut acc = 0f32;
                for v in values {
                    acc += as_f32(v);
                }
                from_f32(acc)
            } else {
                let mut sum = 0f64;
                for v in values {
                    sum += match ty {
                        ColType::Number => as_i32(v) as f64,
                        ColType::Float => as_f32(v) as f64,
                        ColType::Unsigned | ColType::Symbol | ColType::Record(_) => v as f64,
                    };
                }
                from_f32((sum / (end - start) as f64) as f32)
            });
            start = end;
        }
        return Ok(out);
    }
    let strings = if ty == ColType::Symbol && matches!(func, AggFunc::Min | AggFunc::Max) {
        symbols.snapshot()
    } else {
        Vec::new()
    };
    let mut acc: Vec<Value> = vec![0; n];
    let mut seen: Vec<bool> = vec![false; n];
    if need == 2 {
        for g in rows() {
            let i = row_of(g)?;
            let v = g[1];
            let first = !seen[i];
            seen[i] = true;
            match func {
                AggFunc::Sum => acc[i] = eval_binary(BinOp::Add, ty, acc[i], v).unwrap_or(acc[i]),
                AggFunc::Min => {
                    if first || value_cmp(ty, v, acc[i], &strings).is_lt() {
                        acc[i] = v;
                    }
                }
                AggFunc::Max => {
                    if first || value_cmp(ty, v, acc[i], &strings).is_gt() {
                        acc[i] = v;
                    }
                }
                AggFunc::Count | AggFunc::Mean => {}
            }
        }
    }
    Ok((0..n)
        .map(|i| match func {
            AggFunc::Count => Some(from_i32(count[i] as i32)),
            AggFunc::Sum => Some(acc[i]),
            AggFunc::Min | AggFunc::Max => (count[i] > 0).then_some(acc[i]),
            AggFunc::Mean => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(x: f32) -> Value {
        from_f32(x)
    }

    #[test]
    fn float_sums_do_not_depend_on_group_order() {
        let syms = SymbolTable::default();
        let a = [0, f(1e8), 0, f(1.0), 0, f(-1e8), 0, f(1.0)];
        let b = [0, f(1.0), 0, f(-1e8), 0, f(1.0), 0, f(1e8)];
        for func in [AggFunc::Sum, AggFunc::Mean] {
            let x = fold(1, 2, &[&a], func, ColType::Float, &syms).unwrap();
            let y = fold(1, 2, &[&b[..4], &b[4..]], func, ColType::Float, &syms).unwrap();
            assert_eq!(x, y);
        }
    }

    #[test]
    fn empty_groups() {
        let syms = SymbolTable::default();
        let g = [1u32, 5];
        let ty = ColType::Number;
        assert_eq!(
            fold(2, 1, &[&[1]], AggFunc::Count, ty, &syms).unwrap(),
            vec![Some(0), Some(1)]
        );
        assert_eq!(
            fold(2, 2, &[&g], AggFunc::Sum, ty, &syms).unwrap(),
            vec![Some(0), Some(5)]
        );
        assert_eq!(
            fold(2, 2, &[&g], AggFunc::Min, ty, &syms).unwrap(),
            vec![None, Some(5)]
        );
        assert_eq!(
            fold(2, 2, &[&g], AggFunc::Mean, ty, &syms).unwrap(),
            vec![None, Some(f(5.0))]
        );
        assert_eq!(
            fold(2, 2, &[&[0, 0]], AggFunc::Sum, ColType::Float, &syms).unwrap(),
            vec![Some(0), Some(f(0.0))]
        );
        assert!(fold(1, 2, &[&g], AggFunc::Max, ty, &syms).is_err());
    }
}
