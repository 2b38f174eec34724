// Host stand-ins for the CUDA qualifiers and float intrinsics that values.cuh
// uses, modelling the device: correctly rounded operations (SSE, no FMA with
// -ffp-contract=off) that return the device's canonical NaN 0x7FFFFFFF for
// every NaN result, and saturating conversions (cvt.rzi: NaN -> 0).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <math.h>
typedef unsigned int u32;
typedef unsigned long long u64;
#define __device__
#define __host__
#define __forceinline__ inline
static inline float __uint_as_float(u32 a) { float f; std::memcpy(&f, &a, 4); return f; }
static inline u32 __float_as_uint(float f) { u32 a; std::memcpy(&a, &f, 4); return a; }
static inline float dev_nan(float r) { return r != r ? __uint_as_float(0x7FFFFFFFu) : r; }
static inline float __fadd_rn(float a, float b) { return dev_nan(a + b); }
static inline float __fsub_rn(float a, float b) { return dev_nan(a - b); }
static inline float __fmul_rn(float a, float b) { return dev_nan(a * b); }
static inline float __fdiv_rn(float a, float b) { return dev_nan(a / b); }
static inline float dev_fmodf(float a, float b) { return dev_nan(fmodf(a, b)); }
#define fmodf dev_fmodf
static inline int __float2int_rz(float x) {
  if (x != x) return 0;
  if (x >= 2147483648.0f) return 2147483647;
  if (x < -2147483648.0f) return (int)0x80000000u;
  return (int)x;
}
static inline float __int2float_rn(int x) { return (float)x; }
