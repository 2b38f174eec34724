// Two-pass join of an outer relation (arity AO, row-major) against a HISA
// inner relation (arity AI): join_count writes the number of output tuples
// per outer tuple (filters applied), the host scans the counts, and
// join_write writes each outer tuple's projected outputs at its offset.
// The spec is passed by value. join_count: one thread per outer tuple (one
// HISA lookup each); it also records where each match range begins.
// join_write_lb (no filters): load-balanced, each thread writes JW_ITEMS
// consecutive outputs, finding its outer tuple by a binary search over the
// scanned counts, so a high-degree key no longer serialises on one thread.
// join_write (with filters): one thread per outer tuple.
#include "hisa.cuh"

#ifndef AO
#define AO ARITY
#endif
#ifndef AI
#define AI 2
#endif

#define REF_INNER 256u
#define REF_CONST 0xFFFFu

struct JoinSpec {
  u32 kc;
  u32 okey[8];     // outer column of each key column
  u32 nout;
  u32 proj[8];     // value refs: col (outer) or REF_INNER|col (inner)
  u32 nfilt;
  u32 filt[4][4];  // lhs ref, op (0 ==, 1 !=, 2 <, 3 <=, 4 >, 5 >=), rhs ref or REF_CONST, constant
};

__device__ __forceinline__ u32 outer_col(const Row& o, u32 c) {
  u32 v = 0;
#pragma unroll
  for (int k = 0; k < AO; k++)
    if ((u32)k == c) v = o.w[k];
  return v;
}
__device__ __forceinline__ u32 getv(const Row& o, const u32* irow, u32 ref) {
  return (ref & REF_INNER) ? irow[ref & 255u] : outer_col(o, ref & 255u);
}
__device__ __forceinline__ bool passes(const JoinSpec& s, const Row& o, const u32* irow) {
  for (u32 f = 0; f < s.nfilt; f++) {
    u32 l = getv(o, irow, s.filt[f][0]);
    u32 r = s.filt[f][2] == REF_CONST ? s.filt[f][3] : getv(o, irow, s.filt[f][2]);
    bool ok;
    switch (s.filt[f][1]) {
      case 0: ok = l == r; break;
      case 1: ok = l != r; break;
      case 2: ok = l < r; break;
      case 3: ok = l <= r; break;
      case 4: ok = l > r; break;
      default: ok = l >= r; break;
    }
    if (!ok) return false;
  }
  return true;
}

extern "C" __global__ void join_count(const u32* __restrict__ outer, u64 no, const u32* __restrict__ inner,
                                      const u32* __restrict__ starts, const u32* __restrict__ table, u32 mask,
                                      JoinSpec spec, u32* __restrict__ counts, u32* __restrict__ begins) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= no) return;
  Row o = load_row(outer, i);
  u32 key[8];
  for (u32 k = 0; k < spec.kc; k++) key[k] = outer_col(o, spec.okey[k]);
  u32 b, e;
  hisa_find<AI>(inner, starts, table, mask, spec.kc, key, b, e);
  u32 c = e - b;
  if (begins) begins[i] = b;
  if (spec.nfilt) {
    c = 0;
    for (u32 r = b; r < e; r++) c += passes(spec, o, inner + (u64)r * AI) ? 1u : 0u;
  }
  counts[i] = c;
}

extern "C" __global__ void join_write(const u32* __restrict__ outer, u64 no, const u32* __restrict__ inner,
                                      const u32* __restrict__ starts, const u32* __restrict__ table, u32 mask,
                                      JoinSpec spec, const u32* __restrict__ offsets, u32* __restrict__ out) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= no) return;
  Row o = load_row(outer, i);
  u32 key[8];
  for (u32 k = 0; k < spec.kc; k++) key[k] = outer_col(o, spec.okey[k]);
  u32 b, e;
  hisa_find<AI>(inner, starts, table, mask, spec.kc, key, b, e);
  u64 pos = offsets[i];
  for (u32 r = b; r < e; r++) {
    const u32* irow = inner + (u64)r * AI;
    if (spec.nfilt && !passes(spec, o, irow)) continue;
    u32* dst = out + pos * spec.nout;
    for (u32 c = 0; c < spec.nout; c++) dst[c] = getv(o, irow, spec.proj[c]);
    pos++;
  }
}

#define JW_ITEMS 8
extern "C" __global__ void __launch_bounds__(256) join_write_lb(const u32* __restrict__ outer, u64 no, const u32* __restrict__ inner,
                                                             const u32* __restrict__ begins, const u32* __restrict__ offsets,
                                                             u64 total, JoinSpec spec, u32* __restrict__ out) {
  u64 k = ((u64)blockIdx.x * blockDim.x + threadIdx.x) * JW_ITEMS;
  if (k >= total) return;
  // last outer tuple whose first output is <= k
  u64 lo = 0, hi = no;
  while (hi - lo > 1) {
    u64 mid = (lo + hi) >> 1;
    if (offsets[mid] <= k) lo = mid; else hi = mid;
  }
  u64 i = lo;
  u64 next = i + 1 < no ? offsets[i + 1] : total;
  u64 start = offsets[i];
  Row o = load_row(outer, i);
  u32 b = begins[i];
  u64 kend = min(k + JW_ITEMS, total);
  for (; k < kend; k++) {
    while (k >= next) {
      i++;
      start = next;
      next = i + 1 < no ? offsets[i + 1] : total;
      if (start < next) {
        o = load_row(outer, i);
        b = begins[i];
      }
    }
    const u32* irow = inner + (u64)(b + (u32)(k - start)) * AI;
    u32* dst = out + k * spec.nout;
    for (u32 c = 0; c < spec.nout; c++) dst[c] = getv(o, irow, spec.proj[c]);
  }
}
