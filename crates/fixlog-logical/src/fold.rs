//! Constant folding of typed 32-bit values.
//!
//! The checker folds constant sub-expressions (`-1`, `1+2`, `to_string(3)`) so that facts
//! get plain values and so that a conversion functor never has a bare constant argument
//! (the argument's type must be derivable from the expression, see
//! [`crate::check::expr_type`]). Folding is conservative: whatever could be ambiguous at
//! run time (division by zero, a negative exponent, a shift by 32 or more) is left
//! unfolded and yields `None`.
//!
//! Integer arithmetic wraps (two's complement), as Soufflé's compiled code does on
//! every platform it runs on.

use crate::ir::{BinOp, ColType, Functor, UnaryOp, Value};
use crate::symbols::SymbolTable;

fn f(v: Value) -> f32 {
    f32::from_bits(v)
}

fn i(v: Value) -> i32 {
    v as i32
}

fn b(x: bool) -> Value {
    x as Value
}

/// `op v` in type `ty`.
pub fn unary(op: UnaryOp, ty: ColType, v: Value) -> Option<Value> {
    Some(match (op, ty) {
        (UnaryOp::Neg, ColType::Number) => i(v).wrapping_neg() as Value,
        (UnaryOp::Neg, ColType::Float) => (-f(v)).to_bits(),
        (UnaryOp::BNot, ColType::Number | ColType::Unsigned) => !v,
        (UnaryOp::LNot, ColType::Number | ColType::Unsigned) => b(v == 0),
        (UnaryOp::LNot, ColType::Float) => b(f(v) == 0.0),
        _ => return None,
    })
}

/// `l op r` in type `ty`.
pub fn binary(op: BinOp, ty: ColType, l: Value, r: Value) -> Option<Value> {
    use BinOp::*;
    match ty {
        ColType::Number => {
            let (x, y) = (i(l), i(r));
            Some(match op {
                Add => x.wrapping_add(y) as Value,
                Sub => x.wrapping_sub(y) as Value,
                Mul => x.wrapping_mul(y) as Value,
                Div if y != 0 => x.wrapping_div(y) as Value,
                Rem if y != 0 => x.wrapping_rem(y) as Value,
                Pow if y >= 0 => x.wrapping_pow(y as u32) as Value,
                BAnd => l & r,
                BOr => l | r,
                BXor => l ^ r,
                BShl if (0..32).contains(&y) => (x << y) as Value,
                BShr if (0..32).contains(&y) => (x >> y) as Value,
                LAnd => b(x != 0 && y != 0),
                LOr => b(x != 0 || y != 0),
                Min => x.min(y) as Value,
                Max => x.max(y) as Value,
                _ => return None,
            })
        }
        ColType::Unsigned => Some(match op {
            Add => l.wrapping_add(r),
            Sub => l.wrapping_sub(r),
            Mul => l.wrapping_mul(r),
            Div if r != 0 => l / r,
            Rem if r != 0 => l % r,
            Pow => l.wrapping_pow(r),
            BAnd => l & r,
            BOr => l | r,
            BXor => l ^ r,
            BShl if r < 32 => l << r,
            BShr if r < 32 => l >> r,
            LAnd => b(l != 0 && r != 0),
            LOr => b(l != 0 || r != 0),
            Min => l.min(r),
            Max => l.max(r),
            _ => return None,
        }),
        ColType::Float => {
            let (x, y) = (f(l), f(r));
            Some(
                match op {
                    Add => x + y,
                    Sub => x - y,
                    Mul => x * y,
                    Div => x / y,
                    Pow => x.powf(y),
                    Min => x.min(y),
                    Max => x.max(y),
                    _ => return None,
                }
                .to_bits(),
            )
        }
        ColType::Symbol => None,
    }
}

/// Text of a value of type `ty` as `to_string` gives it.
pub fn format_value(ty: ColType, v: Value, symbols: &SymbolTable) -> String {
    match ty {
        ColType::Number => i(v).to_string(),
        ColType::Unsigned => v.to_string(),
        ColType::Float => f(v).to_string(),
        ColType::Symbol => symbols.resolve(v).to_string(),
    }
}

/// A functor applied to constants. `arg_tys` are the arguments' types.
/// `in_fact`: also fold the functors whose run-time behaviour on bad input (an
/// out-of-range `substr`, a non-numeric `to_number`) is the evaluator's to define;
/// in a fact such input is reported by the caller instead.
pub fn functor(
    func: Functor,
    arg_tys: &[ColType],
    args: &[Value],
    symbols: &SymbolTable,
    in_fact: bool,
) -> Option<Value> {
    let sym = |k: usize| args.get(k).map(|&v| symbols.resolve(v));
    match func {
        Functor::Cat => {
            let mut s = String::new();
            for &a in args {
                s.push_str(&symbols.resolve(a));
            }
            Some(symbols.intern(&s))
        }
        Functor::Strlen => Some(sym(0)?.len() as Value),
        Functor::Ord => args.first().copied(),
        Functor::Substr if in_fact => {
            let s = sym(0)?;
            let start = i(*args.get(1)?);
            let len = i(*args.get(2)?);
            if start < 0 || len < 0 {
                return None;
            }
            let start = start as usize;
            let end = start.saturating_add(len as usize).min(s.len());
            let sub = s.get(start..end)?;
            Some(symbols.intern(sub))
        }
        Functor::ToNumber if in_fact => Some(sym(0)?.trim().parse::<i32>().ok()? as Value),
        Functor::Substr | Functor::ToNumber => None,
        Functor::ToString => {
            let ty = *arg_tys.first()?;
            Some(symbols.intern(&format_value(ty, *args.first()?, symbols)))
        }
        Functor::ToUnsigned => {
            let v = *args.first()?;
            Some(match arg_tys.first()? {
                ColType::Number => i(v) as u32,
                ColType::Float => f(v) as u32,
                ColType::Unsigned => v,
                ColType::Symbol => return None,
            })
        }
        Functor::ToFloat => {
            let v = *args.first()?;
            Some(match arg_tys.first()? {
                ColType::Number => (i(v) as f32).to_bits(),
                ColType::Unsigned => (v as f32).to_bits(),
                ColType::Float => v,
                ColType::Symbol => return None,
            })
        }
        Functor::ToInteger => {
            let v = *args.first()?;
            Some(match arg_tys.first()? {
                ColType::Number => v,
                ColType::Unsigned => v,
                ColType::Float => f(v) as i32 as Value,
                ColType::Symbol => return None,
            })
        }
    }
}
