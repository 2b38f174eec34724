// Typed value semantics on the device: the same results, bit for bit, as
// fixlog_logical::value (eval_unary, eval_binary, compare, convert), which is
// the one definition; see its module docs for every choice.
//
// Values are u32 words; the function's suffix says how the bits are read:
// _n number (i32), _u unsigned (u32; also symbols and the bits of floats for
// bitwise operators), _f float (IEEE f32), _i the same for number and
// unsigned. A function that can fail (integer division or remainder by zero)
// clears `ok` and returns 0: the tuple being formed is dropped.
//
// Floats use the _rn intrinsics (correct rounding, never fused into an FMA)
// and no flush to zero, as the host's SSE arithmetic. A NaN result is given
// the bits an x86-64 host gives it (the first NaN operand, quieted; otherwise
// the default NaN 0xFFC00000, which prints as "-nan"), since the device's
// canonical NaN (0x7FFFFFFF) would print differently. Conversions to integers
// are written out (saturation, NaN to 0) rather than left to the intrinsics.
//
// Compiled for the host as well (tests/values_cxx.rs, with shims for the
// qualifiers and intrinsics), so it includes nothing and uses only u32 and the
// intrinsics below.

namespace fxv {

__device__ __forceinline__ float fval(u32 a) { return __uint_as_float(a); }
__device__ __forceinline__ u32 fbits(float x) { return __float_as_uint(x); }
__device__ __forceinline__ bool is_nan(u32 a) { return (a & 0x7FFFFFFFu) > 0x7F800000u; }

// The bits of a float result `r` of `x op y` as on an x86-64 host.
__device__ __forceinline__ u32 host_nan(u32 r, u32 x, u32 y) {
  if (!is_nan(r)) return r;
  if (is_nan(x)) return x | 0x00400000u;
  if (is_nan(y)) return y | 0x00400000u;
  return 0xFFC00000u;
}

// ---- unary ----------------------------------------------------------------------

__device__ __forceinline__ u32 neg_i(u32 a) { return 0u - a; }
__device__ __forceinline__ u32 neg_f(u32 a) { return a ^ 0x80000000u; }
__device__ __forceinline__ u32 bnot(u32 a) { return ~a; }
__device__ __forceinline__ u32 lnot_i(u32 a) { return a == 0u ? 1u : 0u; }
__device__ __forceinline__ u32 lnot_f(u32 a) { return fval(a) == 0.0f ? 0x3F800000u : 0u; }

// ---- integer arithmetic (wrapping) ------------------------------------------------

__device__ __forceinline__ u32 add_i(u32 a, u32 b) { return a + b; }
__device__ __forceinline__ u32 sub_i(u32 a, u32 b) { return a - b; }
__device__ __forceinline__ u32 mul_i(u32 a, u32 b) { return a * b; }

__device__ __forceinline__ u32 div_n(u32 a, u32 b, bool& ok) {
  if (b == 0u) {
    ok = false;
    return 0u;
  }
  if (b == 0xFFFFFFFFu) return 0u - a;  // x / -1 = -x, so i32::MIN / -1 wraps
  return (u32)((int)a / (int)b);
}
__device__ __forceinline__ u32 rem_n(u32 a, u32 b, bool& ok) {
  if (b == 0u) {
    ok = false;
    return 0u;
  }
  if (b == 0xFFFFFFFFu) return 0u;  // i32::MIN % -1 is 0 (and would trap)
  return (u32)((int)a % (int)b);
}
__device__ __forceinline__ u32 div_u(u32 a, u32 b, bool& ok) {
  if (b == 0u) {
    ok = false;
    return 0u;
  }
  return a / b;
}
__device__ __forceinline__ u32 rem_u(u32 a, u32 b, bool& ok) {
  if (b == 0u) {
    ok = false;
    return 0u;
  }
  return a % b;
}

// Exponentiation by squaring, wrapping (Rust's wrapping_pow; the same bits for
// i32 and u32).
__device__ __forceinline__ u32 pow_u(u32 base, u32 e) {
  u32 r = 1u;
  while (e != 0u) {
    if (e & 1u) r *= base;
    e >>= 1;
    base *= base;
  }
  return r;
}
// A negative exponent gives what (int) pow(a, b) gives: 1 for base 1, +-1 for
// base -1, 0 otherwise.
__device__ __forceinline__ u32 pow_n(u32 a, u32 b) {
  if ((int)b < 0) {
    if (a == 1u) return 1u;
    if (a == 0xFFFFFFFFu) return (b & 1u) ? 0xFFFFFFFFu : 1u;
    return 0u;
  }
  return pow_u(a, b);
}

__device__ __forceinline__ u32 band(u32 a, u32 b) { return a & b; }
__device__ __forceinline__ u32 bor(u32 a, u32 b) { return a | b; }
__device__ __forceinline__ u32 bxor(u32 a, u32 b) { return a ^ b; }
__device__ __forceinline__ u32 shl(u32 a, u32 b) { return a << (b & 31u); }
__device__ __forceinline__ u32 shr_n(u32 a, u32 b) { return (u32)((int)a >> (int)(b & 31u)); }
__device__ __forceinline__ u32 shr_u(u32 a, u32 b) { return a >> (b & 31u); }
__device__ __forceinline__ u32 land_i(u32 a, u32 b) { return (a != 0u && b != 0u) ? 1u : 0u; }
__device__ __forceinline__ u32 lor_i(u32 a, u32 b) { return (a != 0u || b != 0u) ? 1u : 0u; }

// min/max as written in value.rs: `b < a ? b : a` and `a < b ? b : a`.
__device__ __forceinline__ u32 min_n(u32 a, u32 b) { return (int)b < (int)a ? b : a; }
__device__ __forceinline__ u32 max_n(u32 a, u32 b) { return (int)a < (int)b ? b : a; }
__device__ __forceinline__ u32 min_u(u32 a, u32 b) { return b < a ? b : a; }
__device__ __forceinline__ u32 max_u(u32 a, u32 b) { return a < b ? b : a; }

// ---- float arithmetic (IEEE, round to nearest even) -------------------------------

__device__ __forceinline__ u32 add_f(u32 a, u32 b) { return host_nan(fbits(__fadd_rn(fval(a), fval(b))), a, b); }
__device__ __forceinline__ u32 sub_f(u32 a, u32 b) { return host_nan(fbits(__fsub_rn(fval(a), fval(b))), a, b); }
__device__ __forceinline__ u32 mul_f(u32 a, u32 b) { return host_nan(fbits(__fmul_rn(fval(a), fval(b))), a, b); }
__device__ __forceinline__ u32 div_f(u32 a, u32 b) { return host_nan(fbits(__fdiv_rn(fval(a), fval(b))), a, b); }
// fmodf is exact; its invalid cases are NaN, given the host's bits as above
// (glibc computes them as (x * y) / (x * y)).
__device__ __forceinline__ u32 rem_f(u32 a, u32 b) { return host_nan(fbits(fmodf(fval(a), fval(b))), a, b); }
__device__ __forceinline__ u32 land_f(u32 a, u32 b) {
  return (fval(a) != 0.0f && fval(b) != 0.0f) ? 0x3F800000u : 0u;
}
__device__ __forceinline__ u32 lor_f(u32 a, u32 b) {
  return (fval(a) != 0.0f || fval(b) != 0.0f) ? 0x3F800000u : 0u;
}
__device__ __forceinline__ u32 min_f(u32 a, u32 b) { return fval(b) < fval(a) ? b : a; }
__device__ __forceinline__ u32 max_f(u32 a, u32 b) { return fval(a) < fval(b) ? b : a; }

// ---- comparisons ------------------------------------------------------------------

__device__ __forceinline__ bool eq_i(u32 a, u32 b) { return a == b; }
__device__ __forceinline__ bool ne_i(u32 a, u32 b) { return a != b; }
__device__ __forceinline__ bool lt_n(u32 a, u32 b) { return (int)a < (int)b; }
__device__ __forceinline__ bool le_n(u32 a, u32 b) { return (int)a <= (int)b; }
__device__ __forceinline__ bool gt_n(u32 a, u32 b) { return (int)a > (int)b; }
__device__ __forceinline__ bool ge_n(u32 a, u32 b) { return (int)a >= (int)b; }
__device__ __forceinline__ bool lt_u(u32 a, u32 b) { return a < b; }
__device__ __forceinline__ bool le_u(u32 a, u32 b) { return a <= b; }
__device__ __forceinline__ bool gt_u(u32 a, u32 b) { return a > b; }
__device__ __forceinline__ bool ge_u(u32 a, u32 b) { return a >= b; }
__device__ __forceinline__ bool eq_f(u32 a, u32 b) { return fval(a) == fval(b); }
__device__ __forceinline__ bool ne_f(u32 a, u32 b) { return fval(a) != fval(b); }
__device__ __forceinline__ bool lt_f(u32 a, u32 b) { return fval(a) < fval(b); }
__device__ __forceinline__ bool le_f(u32 a, u32 b) { return fval(a) <= fval(b); }
__device__ __forceinline__ bool gt_f(u32 a, u32 b) { return fval(a) > fval(b); }
__device__ __forceinline__ bool ge_f(u32 a, u32 b) { return fval(a) >= fval(b); }

// ---- conversions (the functors to_integer and to_float; value::convert) ----------

// float -> number: toward zero, saturating, NaN -> 0.
__device__ __forceinline__ u32 f2n(u32 a) {
  float x = fval(a);
  if (x != x) return 0u;
  if (x >= 2147483648.0f) return 0x7FFFFFFFu;
  if (x <= -2147483648.0f) return 0x80000000u;
  return (u32)__float2int_rz(x);
}
__device__ __forceinline__ u32 n2f(u32 a) { return fbits(__int2float_rn((int)a)); }

}  // namespace fxv
