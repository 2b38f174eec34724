//! What values mean: the single definition of comparisons, arithmetic, functors,
//! predicates, parsing, printing and output order for the four column types.
//!
//! Every backend, the facts loader/writer and the reference evaluator of the test suite
//! call these functions, so they cannot disagree. Values are 32-bit ([`Value`]); the
//! [`ColType`] says how the bits are read:
//!
//! | type       | bits                  | order                         |
//! |------------|-----------------------|-------------------------------|
//! | `number`   | two's complement i32  | signed                        |
//! | `unsigned` | u32                   | unsigned                      |
//! | `float`    | IEEE 754 f32          | numeric                       |
//! | `symbol`   | id in [`SymbolTable`] | `=`/`!=` by id, `<` etc. by the strings (bytewise) |
//!
//! Choices where Soufflé's behaviour is undefined or a crash, documented once here:
//! - integer `+ - *` and unary `-` wrap (two's complement);
//! - integer `/` and `%` by zero give `None`: the tuple being formed is dropped (Soufflé
//!   crashes with SIGFPE). `i32::MIN / -1` wraps to `i32::MIN`, `i32::MIN % -1` is 0.
//!   Float `/` and `%` follow IEEE 754 (infinities, NaN), as in Soufflé;
//! - integer `^` is exponentiation by squaring with wrapping multiplication; a negative
//!   exponent gives what Soufflé's `(int) pow(a, b)` gives: 1 for base 1, ±1 for base -1,
//!   and 0 otherwise (base 0 included); float `^` is `powf`;
//! - shift amounts are masked with `& 31`; `bshr` is arithmetic for `number`, logical
//!   for `unsigned` (and for float/symbol bits);
//! - `land`, `lor`, `lnot` give 1 or 0 (1.0 or 0.0 for floats);
//! - `min`/`max` are `std::min`/`std::max` (`b < a ? b : a`), typed;
//! - arithmetic on `symbol` operands treats the ids as unsigned (the checker should never
//!   produce it).
//!
//! Functors (see [`eval_functor`]): string lengths and offsets count **bytes**, as
//! Soufflé's `std::string` does.

use crate::ir::{BinOp, CmpOp, ColType, Functor, Predicate, UnaryOp, Value};
use crate::records::RecordView;
use crate::symbols::SymbolTable;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};

// ---- bit conversions ---------------------------------------------------------------

#[inline]
pub fn as_i32(v: Value) -> i32 {
    v as i32
}
#[inline]
pub fn as_f32(v: Value) -> f32 {
    f32::from_bits(v)
}
#[inline]
pub fn from_i32(x: i32) -> Value {
    x as u32
}
#[inline]
pub fn from_f32(x: f32) -> Value {
    x.to_bits()
}
#[inline]
fn from_bool(b: bool) -> Value {
    b as Value
}

// ---- comparisons -------------------------------------------------------------------

#[inline]
fn cmp_result<T: PartialOrd>(op: CmpOp, a: T, b: T) -> bool {
    match op {
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
    }
}

/// Whether `compare(op, ty, ..)` needs the symbol strings: ordering comparisons of
/// symbols. Use [`compare_with_symbols`] for those.
#[inline]
pub fn needs_symbols(op: CmpOp, ty: ColType) -> bool {
    ty == ColType::Symbol && !matches!(op, CmpOp::Eq | CmpOp::Ne)
}

/// `a op b` in type `ty`, without the symbol table.
///
/// Floats compare as IEEE numbers (`0.0 == -0.0`, NaN is unequal to everything).
/// Symbols: `=`/`!=` compare ids, which is exact; the ordering operators also compare
/// ids here, which is *not* the language's meaning — callers that may see them
/// ([`needs_symbols`]) must use [`compare_with_symbols`].
#[inline]
pub fn compare(op: CmpOp, ty: ColType, a: Value, b: Value) -> bool {
    match ty {
        ColType::Number => cmp_result(op, as_i32(a), as_i32(b)),
        ColType::Unsigned | ColType::Symbol | ColType::Record(_) => cmp_result(op, a, b),
        ColType::Float => cmp_result(op, as_f32(a), as_f32(b)),
    }
}

/// `a op b` in type `ty`; ordering comparisons of symbols compare the strings bytewise
/// (as C++'s `std::string::compare`, which Soufflé uses).
pub fn compare_with_symbols(
    op: CmpOp,
    ty: ColType,
    a: Value,
    b: Value,
    symbols: &SymbolTable,
) -> bool {
    if needs_symbols(op, ty) {
        if a == b {
            return matches!(op, CmpOp::Le | CmpOp::Ge);
        }
        let (sa, sb) = (symbols.resolve(a), symbols.resolve(b));
        cmp_result(op, sa.as_bytes(), sb.as_bytes())
    } else {
        compare(op, ty, a, b)
    }
}

/// A total order on the values of one type, for sorting output and for `min`/`max`
/// aggregates: signed for `number`, unsigned for `unsigned`, IEEE `totalOrder` for
/// `float` (numeric order; `-0.0 < +0.0`; NaNs at the ends), bytewise string order for
/// `symbol` (`strings` is [`SymbolTable::snapshot`]; ids missing from it order by id,
/// after all known strings).
pub fn value_cmp(ty: ColType, a: Value, b: Value, strings: &[Arc<str>]) -> Ordering {
    match ty {
        ColType::Number => as_i32(a).cmp(&as_i32(b)),
        // Ids (creation order); output orders records by value (`output_order`).
        ColType::Unsigned | ColType::Record(_) => a.cmp(&b),
        ColType::Float => as_f32(a).total_cmp(&as_f32(b)),
        ColType::Symbol => {
            if a == b {
                return Ordering::Equal;
            }
            match (strings.get(a as usize), strings.get(b as usize)) {
                (Some(x), Some(y)) => x.as_bytes().cmp(y.as_bytes()),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => a.cmp(&b),
            }
        }
    }
}

/// What ordering or printing columns of `types` needs of the symbol table, taken once
/// so that no value locks it: its strings where a column is a symbol or a record (whose
/// fields may be symbols), its records where a column is a record; nothing otherwise.
pub fn symbol_views(
    types: &[ColType],
    symbols: &SymbolTable,
) -> (Vec<Arc<str>>, Option<RecordView>) {
    let has_records = types.iter().any(|t| matches!(t, ColType::Record(_)));
    let strings = if has_records || types.contains(&ColType::Symbol) {
        symbols.snapshot()
    } else {
        Vec::new()
    };
    (
        strings,
        has_records.then(|| RecordView::new(symbols.records())),
    )
}

/// The order in which output tuples are written: column by column, each by
/// [`value_cmp`] of its type. Takes one snapshot of the symbols ([`symbol_views`]), so
/// the comparator does not lock.
pub fn output_order(
    types: &[ColType],
    symbols: &SymbolTable,
) -> impl Fn(&[Value], &[Value]) -> Ordering + Send + Sync {
    let types = types.to_vec();
    let (strings, records) = symbol_views(&types, symbols);
    move |a: &[Value], b: &[Value]| {
        let base = |t: ColType, x: Value, y: Value| value_cmp(t, x, y, &strings);
        for (i, &ty) in types.iter().enumerate() {
            let (x, y) = (a.get(i).copied(), b.get(i).copied());
            match (x, y) {
                (Some(x), Some(y)) => {
                    let o = match (ty, &records) {
                        (ColType::Record(rt), Some(view)) => view.compare(rt, x, y, &base),
                        _ => base(ty, x, y),
                    };
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                _ => return x.cmp(&y),
            }
        }
        a.len().cmp(&b.len())
    }
}

// ---- arithmetic --------------------------------------------------------------------

/// `op a` in type `ty`. `-` wraps for integers; `bnot` flips the bits; `lnot` gives
/// 1 (1.0) for zero and 0 (0.0) otherwise. Never fails today; `Option` for symmetry.
#[inline]
/// The values of `range(from, to[, step])` in `ty` (number, unsigned or float), in
/// order, as Soufflé's `runRange` yields them: with a step `s > 0`, `from, from + s,
/// ...` while `< to`; with `s < 0`, while `> to`; with `s = 0`, `from` once if `from !=
/// to` (else nothing). Without a step it is 1, or -1 when `from > to` (for `unsigned`,
/// counting down from `from` to `to + 1`). Where Soufflé's counter would overflow (and
/// wrap, or be undefined) or a float stops changing (`x + s == x`), the range ends.
/// `emit` returns `false` to stop early.
pub fn range_values(
    ty: ColType,
    from: Value,
    to: Value,
    step: Option<Value>,
    mut emit: impl FnMut(Value) -> bool,
) {
    match ty {
        ColType::Float => {
            let (a, b) = (as_f32(from), as_f32(to));
            let s = step.map_or(if a <= b { 1.0 } else { -1.0 }, as_f32);
            if matches!(
                s.partial_cmp(&0.0),
                Some(Ordering::Less | Ordering::Greater)
            ) {
                let mut x = a;
                while (s > 0.0 && x < b) || (s < 0.0 && b < x) {
                    if !emit(from_f32(x)) {
                        return;
                    }
                    let next = x + s;
                    if next == x {
                        return;
                    }
                    x = next;
                }
            } else if a != b {
                emit(from);
            }
        }
        ColType::Unsigned => {
            let (a, b) = (i64::from(from), i64::from(to));
            let s = match step {
                Some(s) => i64::from(s),
                None if a <= b => 1,
                None => -1,
            };
            int_range(a, b, s, u32::MAX.into(), |x| emit(x as u32));
        }
        _ => {
            let (a, b) = (i64::from(as_i32(from)), i64::from(as_i32(to)));
            let s = match step {
                Some(s) => i64::from(as_i32(s)),
                None if a <= b => 1,
                None => -1,
            };
            int_range(a, b, s, i32::MAX.into(), |x| emit(x as i32 as u32));
        }
    }
}

fn int_range(a: i64, b: i64, s: i64, max: i64, mut emit: impl FnMut(i64) -> bool) {
    if s == 0 {
        if a != b {
            emit(a);
        }
        return;
    }
    let mut x = a;
    while (s > 0 && x < b) || (s < 0 && b < x) {
        if !emit(x) {
            return;
        }
        x += s;
        if x > max || x < -max - 1 {
            return;
        }
    }
}

pub fn eval_unary(op: UnaryOp, ty: ColType, a: Value) -> Option<Value> {
    Some(match (op, ty) {
        (UnaryOp::Neg, ColType::Float) => from_f32(-as_f32(a)),
        (UnaryOp::Neg, _) => a.wrapping_neg(),
        (UnaryOp::BNot, _) => !a,
        (UnaryOp::LNot, ColType::Float) => from_f32(if as_f32(a) == 0.0 { 1.0 } else { 0.0 }),
        (UnaryOp::LNot, _) => from_bool(a == 0),
    })
}

fn pow_i32(base: i32, exp: i32) -> i32 {
    if exp < 0 {
        return match base {
            1 => 1,
            -1 => {
                if exp % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    base.wrapping_pow(exp as u32)
}

/// `a op b` in type `ty`; `None` for integer division or remainder by zero (the tuple
/// is dropped). See the module docs for every choice.
#[inline]
pub fn eval_binary(op: BinOp, ty: ColType, a: Value, b: Value) -> Option<Value> {
    match ty {
        ColType::Number => {
            let (x, y) = (as_i32(a), as_i32(b));
            Some(from_i32(match op {
                BinOp::Add => x.wrapping_add(y),
                BinOp::Sub => x.wrapping_sub(y),
                BinOp::Mul => x.wrapping_mul(y),
                BinOp::Div => {
                    if y == 0 {
                        return None;
                    }
                    x.wrapping_div(y)
                }
                BinOp::Rem => {
                    if y == 0 {
                        return None;
                    }
                    x.wrapping_rem(y)
                }
                BinOp::Pow => pow_i32(x, y),
                BinOp::BAnd => x & y,
                BinOp::BOr => x | y,
                BinOp::BXor => x ^ y,
                BinOp::BShl => x.wrapping_shl(b & 31),
                BinOp::BShr => x >> (b & 31),
                BinOp::LAnd => (x != 0 && y != 0) as i32,
                BinOp::LOr => (x != 0 || y != 0) as i32,
                BinOp::Min => {
                    if y < x {
                        y
                    } else {
                        x
                    }
                }
                BinOp::Max => {
                    if x < y {
                        y
                    } else {
                        x
                    }
                }
            }))
        }
        ColType::Float => {
            let (x, y) = (as_f32(a), as_f32(b));
            let r = match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::Div => x / y,
                BinOp::Rem => x % y,
                BinOp::Pow => x.powf(y),
                BinOp::LAnd => (x != 0.0 && y != 0.0) as u32 as f32,
                BinOp::LOr => (x != 0.0 || y != 0.0) as u32 as f32,
                BinOp::Min => {
                    if y < x {
                        y
                    } else {
                        x
                    }
                }
                BinOp::Max => {
                    if x < y {
                        y
                    } else {
                        x
                    }
                }
                // Bitwise operators on floats work on the bits.
                BinOp::BAnd | BinOp::BOr | BinOp::BXor | BinOp::BShl | BinOp::BShr => {
                    return eval_binary(op, ColType::Unsigned, a, b)
                }
            };
            Some(from_f32(r))
        }
        // The checker allows no arithmetic on records.
        ColType::Record(_) => None,
        ColType::Unsigned | ColType::Symbol => Some(match op {
            BinOp::Add => a.wrapping_add(b),
            BinOp::Sub => a.wrapping_sub(b),
            BinOp::Mul => a.wrapping_mul(b),
            BinOp::Div => {
                if b == 0 {
                    return None;
                }
                a / b
            }
            BinOp::Rem => {
                if b == 0 {
                    return None;
                }
                a % b
            }
            BinOp::Pow => a.wrapping_pow(b),
            BinOp::BAnd => a & b,
            BinOp::BOr => a | b,
            BinOp::BXor => a ^ b,
            BinOp::BShl => a.wrapping_shl(b & 31),
            BinOp::BShr => a >> (b & 31),
            BinOp::LAnd => from_bool(a != 0 && b != 0),
            BinOp::LOr => from_bool(a != 0 || b != 0),
            BinOp::Min => a.min(b),
            BinOp::Max => a.max(b),
        }),
    }
}

/// Evaluates an expression on the host, `Var(i)` being `vars[i]` (`None` for an
/// unbound variable, a division by zero, a failed conversion or functor: no value).
/// Used by the driver for a lattice's `Lub` (`crate::ir::LatticeColumns`).
pub fn eval_expr(e: &crate::ir::Expr, vars: &[Value], symbols: &SymbolTable) -> Option<Value> {
    use crate::ir::Expr;
    match e {
        Expr::Var(v) => vars.get(*v).copied(),
        Expr::Const(c) => Some(*c),
        Expr::Unary { op, ty, arg } => eval_unary(*op, *ty, eval_expr(arg, vars, symbols)?),
        Expr::Binary { op, ty, lhs, rhs } => eval_binary(
            *op,
            *ty,
            eval_expr(lhs, vars, symbols)?,
            eval_expr(rhs, vars, symbols)?,
        ),
        Expr::Functor { func, args } => {
            let args: Option<Vec<Value>> =
                args.iter().map(|a| eval_expr(a, vars, symbols)).collect();
            eval_functor(*func, &args?, symbols)
        }
    }
}

/// Converts a numeric value between types, as C++'s `static_cast` (float to integer
/// truncates toward zero and saturates; NaN gives 0; integer to integer keeps the bits).
pub fn convert(from: ColType, to: ColType, v: Value) -> Value {
    use ColType::*;
    match (from, to) {
        (Float, Float) => v,
        (Float, Number) => from_i32(as_f32(v) as i32),
        (Float, _) => as_f32(v) as u32,
        (Number, Float) => from_f32(as_i32(v) as f32),
        (Unsigned | Symbol, Float) => from_f32(v as f32),
        _ => v,
    }
}

// ---- functors ----------------------------------------------------------------------

/// A functor applied to its (already evaluated) arguments; `None` drops the tuple.
///
/// - `cat(s1, ..)`: the concatenation, interned;
/// - `strlen(s)`: length in bytes;
/// - `substr(s, start, len)`: bytes `[start, start+len)`, as C++ `std::string::substr`
///   in Soufflé: a negative `start` or one past the end gives the empty string (Soufflé
///   prints a warning and does the same), a negative `len` or one reaching past the end
///   takes the rest. A cut through a multi-byte UTF-8 character is replaced by U+FFFD
///   (symbols are Rust strings);
/// - `ord(s)`: the symbol's id as a number;
/// - `to_number(s)`: decimal (or `0x`/`0b`) i32 as [`parse_value`] reads it; an invalid
///   string gives `None` (Soufflé prints an error and gives 0);
/// - `to_string(n)`: the decimal form of a `number`, interned;
/// - conversions: the plan does not carry the argument's type, so `to_float` reads its
///   argument as a `number`, `to_unsigned` as a `number` (bits kept), `to_integer` as a
///   `float` (truncated). Use [`convert`] where the source type is known.
pub fn eval_functor(func: Functor, args: &[Value], symbols: &SymbolTable) -> Option<Value> {
    let arg = |i: usize| args.get(i).copied();
    match func {
        Functor::Cat => {
            let mut s = String::new();
            for &a in args {
                s.push_str(&symbols.resolve(a));
            }
            Some(symbols.intern(&s))
        }
        Functor::Strlen => Some(from_i32(symbols.resolve(arg(0)?).len() as i32)),
        Functor::Substr => {
            let s = symbols.resolve(arg(0)?);
            let bytes = s.as_bytes();
            let (start, len) = (as_i32(arg(1)?), as_i32(arg(2)?));
            let n = bytes.len();
            if start < 0 || start as usize > n {
                return Some(symbols.intern(""));
            }
            let start = start as usize;
            let end = if len < 0 {
                n
            } else {
                start.saturating_add(len as usize).min(n)
            };
            let sub = String::from_utf8_lossy(&bytes[start..end]);
            Some(symbols.intern(&sub))
        }
        Functor::Ord => arg(0),
        Functor::ToNumber => {
            let s = symbols.resolve(arg(0)?);
            parse_int(&s, true).ok()
        }
        Functor::ToString => Some(symbols.intern(&as_i32(arg(0)?).to_string())),
        Functor::ToUnsigned => Some(convert(ColType::Number, ColType::Unsigned, arg(0)?)),
        Functor::ToFloat => Some(convert(ColType::Number, ColType::Float, arg(0)?)),
        Functor::ToInteger => Some(convert(ColType::Float, ColType::Number, arg(0)?)),
        Functor::Convert(from, to) => convert_souffle(from, to, arg(0)?, symbols),
        Functor::Pack(_) => symbols.records().pack(args),
        Functor::Field(i, _) => symbols.records().field(arg(0)?, i as usize),
        Functor::User { index, .. } => symbols.call_functor(index, args),
    }
}

/// A conversion as Soufflé 2.5 computes it (its functors `F2I`, `F2U`, `U2F`, `I2F`,
/// `I2U`, `U2I`, `F2S`, `I2S`, `U2S`, `S2F`, `S2I`, `S2U`: a C++ `static_cast`, or
/// `std::to_string`, or parsing), on x86-64 where the C++ is undefined:
///
/// - float to `number`: truncation toward zero; NaN and values out of the 32-bit range
///   give `-2147483648` (`cvttss2si`'s "integer indefinite");
/// - float to `unsigned`: compilers convert through a 64-bit signed integer and keep
///   its low 32 bits, so `-1.5` gives 4294967295 and `5e9` gives 705032704; NaN and
///   magnitudes of 2^63 and more give 0;
/// - `unsigned`/`number` to float: rounded to nearest (even);
/// - `number` <-> `unsigned`: the bits stay;
/// - to `symbol`: `std::to_string`, so floats have six decimals (`2.500000`, `-0.000000`,
///   `inf`, `nan`);
/// - from `symbol`: parsed as [`parse_value`] reads a fact (`None`, dropping the tuple,
///   where Soufflé prints an error and stops).
pub fn convert_souffle(
    from: ColType,
    to: ColType,
    v: Value,
    symbols: &SymbolTable,
) -> Option<Value> {
    use ColType::*;
    Some(match (from, to) {
        (a, b) if a == b => v,
        (Number, Unsigned) | (Unsigned, Number) => v,
        (Number, Float) => from_f32(as_i32(v) as f32),
        (Unsigned, Float) => from_f32(v as f32),
        (Float, Number) => {
            let x = as_f32(v);
            if x.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&x) {
                from_i32(i32::MIN)
            } else {
                from_i32(x as i32)
            }
        }
        (Float, Unsigned) => {
            let x = as_f32(v);
            const TWO_63: f32 = 9_223_372_036_854_775_808.0;
            if x.is_nan() || !(-TWO_63..TWO_63).contains(&x) {
                0
            } else {
                (x as i64) as u32
            }
        }
        (Number, Symbol) => symbols.intern(&as_i32(v).to_string()),
        (Unsigned, Symbol) => symbols.intern(&v.to_string()),
        (Float, Symbol) => {
            let x = as_f32(v);
            let text = if x.is_nan() {
                if x.is_sign_negative() { "-nan" } else { "nan" }.to_string()
            } else if x.is_infinite() {
                if x < 0.0 { "-inf" } else { "inf" }.to_string()
            } else {
                let t = format!("{:.6}", x as f64);
                if x == 0.0 && x.is_sign_negative() && !t.starts_with('-') {
                    format!("-{t}")
                } else {
                    t
                }
            };
            symbols.intern(&text)
        }
        (Symbol, t) => parse_value(&symbols.resolve(v), t, symbols).ok()?,
        // Unreachable: every pair is above.
        _ => v,
    })
}

// ---- predicates --------------------------------------------------------------------

const REGEX_CACHE_LIMIT: usize = 1024;

thread_local! {
    static REGEX_CACHE: RefCell<HashMap<Arc<str>, Option<regex::Regex>>> =
        RefCell::new(HashMap::new());
}

/// Whether warnings found while evaluating (an invalid regular expression in `match`)
/// are printed on stderr. On by default; `fixlog run -w` turns them off.
static RUNTIME_WARNINGS: AtomicBool = AtomicBool::new(true);

/// Most distinct invalid patterns warned about (each once); later ones are silent.
const WARNED_PATTERNS_LIMIT: usize = 64;

/// Invalid patterns already warned about (each is reported once per process).
static WARNED_PATTERNS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Turns the warnings printed during evaluation on or off (for the whole process).
pub fn set_runtime_warnings(enabled: bool) {
    RUNTIME_WARNINGS.store(enabled, AtomicOrdering::Relaxed);
}

/// Prints Soufflé's warning for an invalid pattern, once per pattern.
fn warn_invalid_pattern(pattern: &str, text: &str, negated: bool, why: &str) {
    if !RUNTIME_WARNINGS.load(AtomicOrdering::Relaxed) {
        return;
    }
    let Ok(mut seen) = WARNED_PATTERNS.lock() else {
        return;
    };
    if seen.len() >= WARNED_PATTERNS_LIMIT || seen.iter().any(|p| p == pattern) {
        return;
    }
    seen.push(pattern.to_string());
    let why: String = why.split_whitespace().collect::<Vec<_>>().join(" ");
    eprintln!(
        "warning: wrong pattern provided for {}match(\"{pattern}\",\"{text}\"): {why} (`match` and `!match` are false for it; warned once per pattern)",
        if negated { "!" } else { "" }
    );
}

/// Whether the whole of `text` matches `pattern` (Rust `regex` syntax, which agrees with
/// Soufflé's ECMAScript `std::regex` on the common subset); `Err` with the reason when
/// the pattern is invalid. Compiled patterns are cached per thread.
pub fn regex_full_match(pattern: &Arc<str>, text: &str) -> Result<bool, String> {
    REGEX_CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(re) = cache.get(pattern) {
            if let Some(re) = re {
                return Ok(re.is_match(text));
            }
        } else {
            if cache.len() >= REGEX_CACHE_LIMIT {
                cache.clear();
            }
            match regex::Regex::new(&format!("^(?:{pattern})$")) {
                Ok(re) => {
                    let m = re.is_match(text);
                    cache.insert(pattern.clone(), Some(re));
                    return Ok(m);
                }
                Err(_) => {
                    cache.insert(pattern.clone(), None);
                }
            }
        }
        // Invalid (cached as such): the reason, computed again only on this rare path.
        Err(regex::Regex::new(pattern)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "invalid regular expression".to_string()))
    })
}

/// `contains(needle, haystack)` / `match(regex, text)` over symbols, or their negation
/// (`!contains(..)`, `!match(..)`). As in Soufflé, an invalid regular expression makes
/// both `match` and `!match` false (with a warning on stderr, once per pattern).
/// Missing arguments give `false`.
pub fn eval_predicate(
    pred: Predicate,
    args: &[Value],
    negated: bool,
    symbols: &SymbolTable,
) -> bool {
    let (Some(&a), Some(&b)) = (args.first(), args.get(1)) else {
        return false;
    };
    let (a, b) = (symbols.resolve(a), symbols.resolve(b));
    match pred {
        Predicate::Contains => b.contains(&*a) != negated,
        Predicate::Match => match regex_full_match(&a, &b) {
            Ok(m) => m != negated,
            Err(why) => {
                warn_invalid_pattern(&a, &b, negated, &why);
                false
            }
        },
    }
}

// ---- parsing -----------------------------------------------------------------------

/// Integer text: optional sign, then `0x`/`0X` hex, `0b`/`0B` binary or decimal digits.
/// `signed` selects the i32 range (else u32, no minus sign).
fn parse_int(text: &str, signed: bool) -> Result<Value, String> {
    let (neg, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (radix, digits) = if let Some(d) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
        (16, d)
    } else if let Some(d) = body.strip_prefix("0b").or(body.strip_prefix("0B")) {
        (2, d)
    } else {
        (10, body)
    };
    let what = if signed { "number" } else { "unsigned" };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!("`{text}` is not a valid {what}"));
    }
    let mag = u64::from_str_radix(digits, radix)
        .map_err(|_| format!("`{text}` is not a valid {what} (out of range)"))?;
    if signed {
        let v = if neg { -(mag as i128) } else { mag as i128 };
        if v < i32::MIN as i128 || v > i32::MAX as i128 {
            return Err(format!("`{text}` is out of the range of a 32-bit number"));
        }
        Ok(from_i32(v as i32))
    } else {
        if neg && mag != 0 {
            return Err(format!("`{text}` is negative; an unsigned cannot be"));
        }
        u32::try_from(mag).map_err(|_| format!("`{text}` is out of the range of a 32-bit unsigned"))
    }
}

/// Reads one field of a facts file as a value of type `ty`.
///
/// - `number`: optional `+`/`-`, then decimal, `0x` hex or `0b` binary digits, in i32
///   range; `unsigned`: the same without `-`, in u32 range;
/// - `float`: Rust's `f32` syntax (`1`, `-2.5`, `.5`, `1e-3`, `inf`, `nan`);
/// - `symbol`: the text exactly as given, interned.
///
/// No whitespace is trimmed (the loader splits fields and handles line endings).
pub fn parse_value(text: &str, ty: ColType, symbols: &SymbolTable) -> Result<Value, String> {
    match ty {
        ColType::Number => parse_int(text, true),
        ColType::Unsigned => parse_int(text, false),
        ColType::Float => text
            .parse::<f32>()
            .map(from_f32)
            .map_err(|_| format!("`{text}` is not a valid float")),
        ColType::Symbol => Ok(symbols.intern(text)),
        ColType::Record(rt) => {
            crate::records::parse_record(text, rt, symbols.records(), &|t, ty| {
                parse_value(t, ty, symbols)
            })
        }
    }
}

// ---- printing ----------------------------------------------------------------------

/// Appends a float as Soufflé 2.5 writes it: C++ `ostream << float` on a stream set to
/// `std::setprecision(std::numeric_limits<float>::max_digits10)` (its CSV and stdout
/// writers do so since Soufflé 2.0), which is C's `printf("%.9g")` of the value: 9
/// significant digits rounded half to even from the exact binary value, trailing zeros
/// removed, scientific notation (`1e+10`, `9.99999975e-05`) when the exponent is < -4
/// or >= 9; `inf`, `-inf`, `nan`, `-nan`, `-0`. Nine digits read back to the same
/// `float`; they are not the shortest such form (`0.1` prints as `0.100000001`).
pub fn write_float(out: &mut String, f: f32) {
    write_float_digits(out, f, 9);
}

/// Appends a float as C's `printf("%.Ng")` writes it for `digits` = N significant
/// digits (at least 1), the rules [`write_float`] gives for 9. Soufflé's JSON writer
/// uses C++'s default stream precision, 6 (`0.1` is `0.1`, `1234567` is
/// `1.23457e+06`).
pub fn write_float_digits(out: &mut String, f: f32, digits: u32) {
    let d = f as f64;
    if d.is_nan() {
        out.push_str(if d.is_sign_negative() { "-nan" } else { "nan" });
        return;
    }
    if d.is_infinite() {
        out.push_str(if d < 0.0 { "-inf" } else { "inf" });
        return;
    }
    if d == 0.0 {
        out.push_str(if d.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    let p = digits.clamp(1, 17) as i32;
    // The exponent after rounding to p significant digits.
    let sci = format!("{:.*e}", (p - 1) as usize, d);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    if (-4..p).contains(&x) {
        let fixed = format!("{:.*}", (p - 1 - x) as usize, d);
        out.push_str(strip_zeros(&fixed));
    } else {
        out.push_str(strip_zeros(mant));
        let _ = write!(out, "e{}{:02}", if x < 0 { '-' } else { '+' }, x.abs());
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Appends `v` printed as type `ty`; `strings` is a [`SymbolTable::snapshot`] (writers
/// take one snapshot for a whole relation). An id missing from the snapshot is printed
/// as `<symbol N>`.
pub fn write_value(out: &mut String, v: Value, ty: ColType, strings: &[Arc<str>]) {
    match ty {
        ColType::Number => out.push_str(itoa::Buffer::new().format(as_i32(v))),
        ColType::Unsigned => out.push_str(itoa::Buffer::new().format(v)),
        ColType::Float => write_float(out, as_f32(v)),
        ColType::Symbol => match strings.get(v as usize) {
            Some(s) => out.push_str(s),
            None => {
                let _ = write!(out, "<symbol {v}>");
            }
        },
        // Writers that may see records use `write_record` (it needs the record table).
        ColType::Record(_) => {
            let _ = write!(out, "<record {v}>");
        }
    }
}

/// Appends `v`, a value of the record or ADT type `ty` (see [`RecordView::write`]).
pub fn write_record(
    out: &mut String,
    v: Value,
    ty: crate::records::RecordTypeId,
    strings: &[Arc<str>],
    records: &RecordView,
) {
    records.write(out, ty, v, &mut |o, t, x| write_value(o, x, t, strings));
}

/// `v` printed as type `ty` (see [`write_value`]; this one resolves through the table).
pub fn format_value(v: Value, ty: ColType, symbols: &SymbolTable) -> String {
    let mut out = String::new();
    match ty {
        ColType::Symbol => {
            if (v as usize) < symbols.len() {
                out.push_str(&symbols.resolve(v));
            } else {
                let _ = write!(out, "<symbol {v}>");
            }
        }
        ColType::Record(rt) => {
            let strings = symbols.snapshot();
            write_record(
                &mut out,
                v,
                rt,
                &strings,
                &RecordView::new(symbols.records()),
            );
        }
        _ => write_value(&mut out, v, ty, &[]),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(x: i32) -> Value {
        from_i32(x)
    }
    fn f(x: f32) -> Value {
        from_f32(x)
    }
    fn fmt_f(x: f32) -> String {
        let mut s = String::new();
        write_float(&mut s, x);
        s
    }

    #[test]
    fn comparisons() {
        assert!(compare(CmpOp::Lt, ColType::Number, n(-1), n(0)));
        assert!(!compare(CmpOp::Lt, ColType::Unsigned, n(-1), n(0)));
        assert!(compare(CmpOp::Eq, ColType::Float, f(0.0), f(-0.0)));
        assert!(!compare(
            CmpOp::Eq,
            ColType::Float,
            f(f32::NAN),
            f(f32::NAN)
        ));
        assert!(compare(CmpOp::Ne, ColType::Float, f(f32::NAN), f(f32::NAN)));
        assert!(compare(CmpOp::Gt, ColType::Float, f(1.5), f(-2.0)));
        assert!(compare(CmpOp::Ge, ColType::Number, n(3), n(3)));
        let t = SymbolTable::new();
        let (b, a) = (t.intern("b"), t.intern("a"));
        assert!(needs_symbols(CmpOp::Lt, ColType::Symbol));
        assert!(!needs_symbols(CmpOp::Eq, ColType::Symbol));
        assert!(compare_with_symbols(CmpOp::Lt, ColType::Symbol, a, b, &t));
        assert!(!compare_with_symbols(CmpOp::Lt, ColType::Symbol, b, a, &t));
        assert!(compare_with_symbols(CmpOp::Le, ColType::Symbol, a, a, &t));
        assert!(compare_with_symbols(CmpOp::Ne, ColType::Symbol, a, b, &t));
    }

    #[test]
    fn arithmetic() {
        use BinOp::*;
        let num = |op, a, b| eval_binary(op, ColType::Number, n(a), n(b)).map(as_i32);
        assert_eq!(num(Add, i32::MAX, 1), Some(i32::MIN));
        assert_eq!(num(Sub, 3, 5), Some(-2));
        assert_eq!(num(Mul, 1 << 20, 1 << 20), Some(0));
        assert_eq!(num(Div, 7, -2), Some(-3));
        assert_eq!(num(Div, 7, 0), None);
        assert_eq!(num(Rem, 7, 0), None);
        assert_eq!(num(Rem, -7, 2), Some(-1));
        assert_eq!(num(Div, i32::MIN, -1), Some(i32::MIN));
        assert_eq!(num(Rem, i32::MIN, -1), Some(0));
        assert_eq!(num(Pow, 2, 10), Some(1024));
        assert_eq!(num(Pow, 2, -1), Some(0));
        assert_eq!(num(Pow, -1, -3), Some(-1));
        assert_eq!(num(Pow, 1, -3), Some(1));
        assert_eq!(num(Pow, 3, 0), Some(1));
        assert_eq!(num(BShr, -8, 1), Some(-4));
        assert_eq!(num(BShl, 1, 33), Some(2));
        assert_eq!(num(BAnd, 6, 3), Some(2));
        assert_eq!(num(BOr, 6, 3), Some(7));
        assert_eq!(num(BXor, 6, 3), Some(5));
        assert_eq!(num(LAnd, 6, 0), Some(0));
        assert_eq!(num(LOr, 6, 0), Some(1));
        assert_eq!(num(Min, -6, 3), Some(-6));
        assert_eq!(num(Max, -6, 3), Some(3));
        let uns = |op, a: u32, b: u32| eval_binary(op, ColType::Unsigned, a, b);
        assert_eq!(uns(BShr, 0x8000_0000, 31), Some(1));
        assert_eq!(uns(Sub, 0, 1), Some(u32::MAX));
        assert_eq!(uns(Div, 7, 0), None);
        assert_eq!(uns(Max, u32::MAX, 1), Some(u32::MAX));
        assert_eq!(uns(Pow, 2, 32), Some(0));
        let fl = |op, a: f32, b: f32| eval_binary(op, ColType::Float, f(a), f(b)).map(as_f32);
        assert_eq!(fl(Add, 1.5, 2.25), Some(3.75));
        assert_eq!(fl(Div, 1.0, 0.0), Some(f32::INFINITY));
        assert_eq!(fl(Pow, 2.0, 0.5), Some(2f32.powf(0.5)));
        assert_eq!(fl(Min, 1.0, -1.0), Some(-1.0));
        assert_eq!(fl(LAnd, 1.0, 2.0), Some(1.0));
        assert_eq!(
            eval_unary(UnaryOp::Neg, ColType::Number, n(i32::MIN)),
            Some(n(i32::MIN))
        );
        assert_eq!(
            eval_unary(UnaryOp::Neg, ColType::Float, f(1.5)),
            Some(f(-1.5))
        );
        assert_eq!(
            eval_unary(UnaryOp::BNot, ColType::Number, n(0)),
            Some(n(-1))
        );
        assert_eq!(eval_unary(UnaryOp::LNot, ColType::Number, n(5)), Some(0));
        assert_eq!(eval_unary(UnaryOp::LNot, ColType::Number, n(0)), Some(1));
        assert_eq!(
            eval_unary(UnaryOp::LNot, ColType::Float, f(0.0)),
            Some(f(1.0))
        );
    }

    #[test]
    fn functors() {
        let t = SymbolTable::new();
        let s = |x: &str| t.intern(x);
        let r = |v: Option<Value>| v.map(|v| t.resolve(v).to_string());
        assert_eq!(
            r(eval_functor(Functor::Cat, &[s("ab"), s("c"), s("")], &t)),
            Some("abc".into())
        );
        assert_eq!(eval_functor(Functor::Strlen, &[s("héllo")], &t), Some(6));
        let sub =
            |x: &str, a: i32, b: i32| r(eval_functor(Functor::Substr, &[s(x), n(a), n(b)], &t));
        assert_eq!(sub("hello", 1, 3), Some("ell".into()));
        assert_eq!(sub("hello", 3, 10), Some("lo".into()));
        assert_eq!(sub("hello", 5, 1), Some("".into()));
        assert_eq!(sub("hello", 6, 1), Some("".into()));
        assert_eq!(sub("hello", -1, 1), Some("".into()));
        assert_eq!(sub("hello", 2, -1), Some("llo".into()));
        assert_eq!(eval_functor(Functor::Ord, &[s("zz")], &t), Some(s("zz")));
        assert_eq!(
            eval_functor(Functor::ToNumber, &[s("-42")], &t),
            Some(n(-42))
        );
        assert_eq!(eval_functor(Functor::ToNumber, &[s("4x")], &t), None);
        assert_eq!(
            r(eval_functor(Functor::ToString, &[n(-7)], &t)),
            Some("-7".into())
        );
        assert_eq!(eval_functor(Functor::ToFloat, &[n(-3)], &t), Some(f(-3.0)));
        assert_eq!(
            eval_functor(Functor::ToUnsigned, &[n(-1)], &t),
            Some(u32::MAX)
        );
        assert_eq!(
            eval_functor(Functor::ToInteger, &[f(-3.7)], &t),
            Some(n(-3))
        );
        assert_eq!(
            eval_functor(Functor::ToInteger, &[f(f32::NAN)], &t),
            Some(0)
        );
        assert_eq!(
            convert(ColType::Unsigned, ColType::Float, u32::MAX),
            f(u32::MAX as f32)
        );
        assert_eq!(convert(ColType::Float, ColType::Unsigned, f(-1.0)), 0);
    }

    #[test]
    fn souffle_conversions() {
        use ColType::*;
        let t = SymbolTable::new();
        let c = |from, to, v| convert_souffle(from, to, v, &t);
        let text = |v: Option<Value>| v.map(|v| t.resolve(v).to_string());
        // Float to number: truncation, x86-64's INT_MIN out of range and for NaN.
        assert_eq!(c(Float, Number, f(-2.75)), Some(n(-2)));
        assert_eq!(c(Float, Number, f(2147483520.0)), Some(n(2147483520)));
        assert_eq!(c(Float, Number, f(2147483648.0)), Some(n(i32::MIN)));
        assert_eq!(c(Float, Number, f(-2147483648.0)), Some(n(i32::MIN)));
        assert_eq!(c(Float, Number, f(-3e9)), Some(n(i32::MIN)));
        assert_eq!(c(Float, Number, f(f32::NAN)), Some(n(i32::MIN)));
        // Float to unsigned: through a 64-bit integer, low 32 bits.
        assert_eq!(c(Float, Unsigned, f(-1.5)), Some(u32::MAX));
        assert_eq!(c(Float, Unsigned, f(5e9)), Some(705_032_704));
        assert_eq!(c(Float, Unsigned, f(3e9)), Some(3_000_000_000));
        assert_eq!(c(Float, Unsigned, f(1e20)), Some(0));
        assert_eq!(c(Float, Unsigned, f(f32::NAN)), Some(0));
        // Unsigned to float rounds to nearest even.
        assert_eq!(c(Unsigned, Float, u32::MAX), Some(f(4294967296.0)));
        assert_eq!(c(Unsigned, Float, 16_777_217), Some(f(16777216.0)));
        assert_eq!(c(Number, Unsigned, n(-1)), Some(u32::MAX));
        // To text: std::to_string.
        assert_eq!(text(c(Float, Symbol, f(2.5))), Some("2.500000".into()));
        assert_eq!(text(c(Float, Symbol, f(-0.0))), Some("-0.000000".into()));
        assert_eq!(text(c(Float, Symbol, f(f32::INFINITY))), Some("inf".into()));
        assert_eq!(text(c(Float, Symbol, f(f32::NAN))), Some("nan".into()));
        assert_eq!(
            text(c(Unsigned, Symbol, u32::MAX)),
            Some("4294967295".into())
        );
        // From text.
        assert_eq!(c(Symbol, Float, t.intern("2.25")), Some(f(2.25)));
        assert_eq!(
            c(Symbol, Unsigned, t.intern("4000000000")),
            Some(4_000_000_000)
        );
        assert_eq!(c(Symbol, Unsigned, t.intern("-1")), None);
        assert_eq!(c(Symbol, Float, t.intern("x")), None);
    }

    #[test]
    fn predicates() {
        let t = SymbolTable::new();
        let s = |x: &str| t.intern(x);
        let p = |pred, a: &str, b: &str, negated| eval_predicate(pred, &[s(a), s(b)], negated, &t);
        assert!(p(Predicate::Contains, "ell", "hello", false));
        assert!(p(Predicate::Contains, "", "hello", false));
        assert!(!p(Predicate::Contains, "hello", "ell", false));
        assert!(p(Predicate::Contains, "hello", "ell", true));
        assert!(!p(Predicate::Contains, "ell", "hello", true));
        assert!(p(Predicate::Match, "h.*o", "hello", false));
        assert!(!p(Predicate::Match, "h.*o", "hello", true));
        assert!(!p(Predicate::Match, "ell", "hello", false));
        assert!(p(Predicate::Match, "ell", "hello", true));
        assert!(p(Predicate::Match, "a|b", "b", false));
        // An invalid pattern: neither `match` nor `!match` holds (twice: cached path).
        set_runtime_warnings(false);
        for _ in 0..2 {
            assert!(!p(Predicate::Match, "((", "((", false));
            assert!(!p(Predicate::Match, "((", "((", true));
            assert!(!p(Predicate::Match, "[a", "x", true));
        }
        set_runtime_warnings(true);
        assert!(regex_full_match(&Arc::from("(("), "x").is_err());
        // Cached path.
        assert!(p(Predicate::Match, "h.*o", "ho", false));
    }

    #[test]
    fn parsing() {
        let t = SymbolTable::new();
        let p = |x: &str, ty| parse_value(x, ty, &t);
        assert_eq!(p("42", ColType::Number), Ok(42));
        assert_eq!(p("-42", ColType::Number), Ok(n(-42)));
        assert_eq!(p("+7", ColType::Number), Ok(7));
        assert_eq!(p("0x1F", ColType::Number), Ok(31));
        assert_eq!(p("-0b101", ColType::Number), Ok(n(-5)));
        assert_eq!(p("-2147483648", ColType::Number), Ok(n(i32::MIN)));
        assert!(p("2147483648", ColType::Number).is_err());
        assert!(p("", ColType::Number).is_err());
        assert!(p("12a", ColType::Number).is_err());
        assert!(p("0x", ColType::Number).is_err());
        assert!(p(" 1", ColType::Number).is_err());
        assert_eq!(p("4294967295", ColType::Unsigned), Ok(u32::MAX));
        assert!(p("4294967296", ColType::Unsigned).is_err());
        assert!(p("-1", ColType::Unsigned).is_err());
        assert_eq!(p("-0", ColType::Unsigned), Ok(0));
        assert_eq!(p("1.5", ColType::Float), Ok(f(1.5)));
        assert_eq!(p("-3", ColType::Float), Ok(f(-3.0)));
        assert_eq!(p("1e3", ColType::Float), Ok(f(1000.0)));
        assert!(p("x", ColType::Float).is_err());
        let id = p("hello world", ColType::Symbol).unwrap();
        assert_eq!(&*t.resolve(id), "hello world");
    }

    #[test]
    fn printing() {
        let t = SymbolTable::new();
        assert_eq!(format_value(n(-5), ColType::Number, &t), "-5");
        assert_eq!(format_value(u32::MAX, ColType::Unsigned, &t), "4294967295");
        let id = t.intern("abc");
        assert_eq!(format_value(id, ColType::Symbol, &t), "abc");
        assert_eq!(format_value(99, ColType::Symbol, &t), "<symbol 99>");
        // Expected strings: C's printf("%.9g") of the float's value (computed with
        // Python's `'%.9g' % x` on the value rounded to 32 bits).
        assert_eq!(fmt_f(0.0), "0");
        assert_eq!(fmt_f(-0.0), "-0");
        assert_eq!(fmt_f(1.0), "1");
        assert_eq!(fmt_f(0.5), "0.5");
        assert_eq!(fmt_f(0.1), "0.100000001");
        assert_eq!(fmt_f(-2.25), "-2.25");
        assert_eq!(fmt_f(100000.0), "100000");
        assert_eq!(fmt_f(1000000.0), "1000000");
        assert_eq!(fmt_f(1234567.0), "1234567");
        assert_eq!(fmt_f(16777217.0), "16777216");
        assert_eq!(fmt_f(1e10), "1e+10");
        assert_eq!(fmt_f(123456.7), "123456.703");
        assert_eq!(fmt_f(std::f32::consts::PI), "3.14159274");
        assert_eq!(fmt_f(2.718_281_7), "2.71828175");
        assert_eq!(fmt_f(0.0009765625), "0.0009765625");
        assert_eq!(fmt_f(0.0001), "9.99999975e-05");
        assert_eq!(fmt_f(0.00001), "9.99999975e-06");
        assert_eq!(fmt_f(1.5e-7), "1.50000005e-07");
        assert_eq!(fmt_f(1e-10), "1.00000001e-10");
        // 2^-13 = 0.0001220703125: a tie at 9 digits, rounded to even.
        assert_eq!(fmt_f(2f32.powi(-13)), "0.000122070312");
        assert_eq!(fmt_f(f32::MAX), "3.40282347e+38");
        assert_eq!(fmt_f(f32::from_bits(1)), "1.40129846e-45");
        assert_eq!(fmt_f(f32::INFINITY), "inf");
        assert_eq!(fmt_f(f32::NEG_INFINITY), "-inf");
        assert_eq!(fmt_f(f32::NAN), "nan");
        assert_eq!(fmt_f(1e38), "9.99999968e+37");
        // Six digits, C's `%g` (Python's `'%g' % x` on the value rounded to 32 bits).
        let g = |x: f32| {
            let mut s = String::new();
            write_float_digits(&mut s, x, 6);
            s
        };
        let six = [
            (0.1, "0.1"),
            (1234567.0, "1.23457e+06"),
            (123456.7, "123457"),
            (100000.0, "100000"),
            (1000000.0, "1e+06"),
            (std::f32::consts::PI, "3.14159"),
            (0.0001, "0.0001"),
            (1e-5, "1e-05"),
            (2.5, "2.5"),
            (0.5f32.powi(20), "9.53674e-07"),
            (16777217.0, "1.67772e+07"),
            (999999.5, "1e+06"),
            (1e38, "1e+38"),
            (-0.0, "-0"),
            (f32::NAN, "nan"),
        ];
        for (x, want) in six {
            assert_eq!(g(x), want, "{x}");
        }
    }

    #[test]
    fn printed_floats_read_back() {
        // Nine significant digits identify every float: parsing the text gives the bits.
        let t = SymbolTable::new();
        let mut bits: u32 = 1;
        for _ in 0..100_000 {
            bits = bits.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let x = f32::from_bits(bits);
            if x.is_nan() {
                continue;
            }
            let s = fmt_f(x);
            assert_eq!(parse_value(&s, ColType::Float, &t), Ok(bits), "{s}");
        }
    }

    #[test]
    fn output_orders() {
        let t = SymbolTable::new();
        let (b, a) = (t.intern("b"), t.intern("a"));
        let ord = output_order(&[ColType::Symbol, ColType::Number, ColType::Float], &t);
        assert_eq!(ord(&[b, 0, 0], &[a, 0, 0]), Ordering::Greater);
        assert_eq!(ord(&[a, n(-1), 0], &[a, 1, 0]), Ordering::Less);
        assert_eq!(ord(&[a, 1, f(-1.0)], &[a, 1, f(0.5)]), Ordering::Less);
        assert_eq!(ord(&[a, 1, f(0.5)], &[a, 1, f(0.5)]), Ordering::Equal);
        let u = output_order(&[ColType::Unsigned], &t);
        assert_eq!(u(&[n(-1)], &[1]), Ordering::Greater);
    }
}
