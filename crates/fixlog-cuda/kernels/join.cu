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
    if (k >= next) {
      // skip outer tuples without outputs: gallop, then bisect (see pipeline.cuh)
      u64 lo = i + 1, hi = no, step = 1;
      while (lo + step < no) {
        if (offsets[lo + step] > k) { hi = lo + step; break; }
        lo += step;
        step <<= 1;
      }
      while (hi - lo > 1) {
        u64 mid = (lo + hi) >> 1;
        if (offsets[mid] <= k) lo = mid; else hi = mid;
      }
      i = lo;
      start = offsets[i];
      next = i + 1 < no ? offsets[i + 1] : total;
      o = load_row(outer, i);
      b = begins[i];
    }
    const u32* irow = inner + (u64)(b + (u32)(k - start)) * AI;
    u32* dst = out + k * spec.nout;
    for (u32 c = 0; c < spec.nout; c++) dst[c] = getv(o, irow, spec.proj[c]);
  }
}

// join_write_dedup (no filters, two output columns): like join_write_lb, but
// each block (512 threads x 8 = 4,096 consecutive outputs) drops outputs it
// already produced, through a shared-memory hash set of (col0, col1) pairs.
// An output is dropped only when the very same pair is already in the set
// (inserted by this block, hence written by it), so the distinct outputs are
// exactly the same; survivors go to out[*count ..] (atomic per block, so the
// order of blocks is arbitrary). The outer rows are sorted, so one block's
// outputs share few first columns and repeats are close together.
#define JD_THREADS 512
#define JD_ITEMS 8
#define JD_SLOTS 5888u   // ~1.44 slots per output: 46 KiB of shared memory
#define JD_PROBES 64u
#define JD_EMPTY 0xFFFFFFFFFFFFFFFFull
extern "C" __global__ void __launch_bounds__(JD_THREADS) join_write_dedup(
    const u32* __restrict__ outer, u64 no, const u32* __restrict__ inner, const u32* __restrict__ begins,
    const u32* __restrict__ offsets, u64 total, JoinSpec spec, u32* __restrict__ out, u32* __restrict__ count) {
  __shared__ u64 table[JD_SLOTS];
  __shared__ u32 wsum[JD_THREADS / 32];
  __shared__ u32 base;
  for (u32 s = threadIdx.x; s < JD_SLOTS; s += JD_THREADS) table[s] = JD_EMPTY;
  __syncthreads();
  u64 k = ((u64)blockIdx.x * JD_THREADS + threadIdx.x) * JD_ITEMS;
  u32 va[JD_ITEMS], vb[JD_ITEMS];
  u32 mask = 0;
  if (k < total) {
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
#pragma unroll
    for (u32 j = 0; j < JD_ITEMS; j++) {
      u64 kk = k + j;
      va[j] = 0;
      vb[j] = 0;
      if (kk < total) {
        while (kk >= next) {
          i++;
          start = next;
          next = i + 1 < no ? offsets[i + 1] : total;
          if (start < next) {
            o = load_row(outer, i);
            b = begins[i];
          }
        }
        const u32* irow = inner + (u64)(b + (u32)(kk - start)) * AI;
        u32 x = getv(o, irow, spec.proj[0]);
        u32 z = getv(o, irow, spec.proj[1]);
        va[j] = x;
        vb[j] = z;
        u64 key = ((u64)x << 32) | z;
        bool keep = true;
        if (key != JD_EMPTY) {
          u32 h = (u32)(((u64)hash_final(hash_mix(hash_mix(0x9747b28cu, x), z)) * JD_SLOTS) >> 32);
          for (u32 p = 0; p < JD_PROBES; p++) {
            u64 cur = table[h];
            if (cur == key) { keep = false; break; }
            if (cur == JD_EMPTY) {
              cur = atomicCAS(&table[h], JD_EMPTY, key);
              if (cur == JD_EMPTY) break;          // inserted: this thread writes it
              if (cur == key) { keep = false; break; }
            }
            h = h + 1 == JD_SLOTS ? 0 : h + 1;
          }
        }
        if (keep) mask |= 1u << j;
      }
    }
  }
  // block-wide exclusive scan of the kept counts
  u32 c = __popc(mask);
  u32 lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  u32 incl = c;
#pragma unroll
  for (u32 d = 1; d < 32; d <<= 1) {
    u32 t = __shfl_up_sync(0xFFFFFFFFu, incl, d);
    if (lane >= d) incl += t;
  }
  if (lane == 31) wsum[w] = incl;
  __syncthreads();
  if (threadIdx.x == 0) {
    u32 s = 0;
    for (u32 q = 0; q < JD_THREADS / 32; q++) {
      u32 t = wsum[q];
      wsum[q] = s;
      s += t;
    }
    base = s ? atomicAdd(count, s) : 0u;
  }
  __syncthreads();
  u64 pos = (u64)base + wsum[w] + incl - c;
  uint2* dst = reinterpret_cast<uint2*>(out);
#pragma unroll
  for (u32 j = 0; j < JD_ITEMS; j++)
    if (mask & (1u << j)) dst[pos++] = make_uint2(va[j], vb[j]);
}
