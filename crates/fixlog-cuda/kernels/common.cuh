// Shared definitions, prepended by the Rust loader to every kernel source.
// Relations are row-major arrays of fixed-width u32 tuples; ARITY is a
// compile-time constant (one compiled module per arity).
typedef unsigned int u32;
typedef unsigned long long u64;
#ifndef ARITY
#define ARITY 2
#endif
#define EMPTY_SLOT 0xFFFFFFFFu

struct Row {
  u32 w[ARITY];
};

__device__ __forceinline__ Row load_row(const u32* __restrict__ p, u64 i) {
  Row r;
#if ARITY == 2
  uint2 v = reinterpret_cast<const uint2*>(p)[i];
  r.w[0] = v.x; r.w[1] = v.y;
#elif ARITY == 4
  uint4 v = reinterpret_cast<const uint4*>(p)[i];
  r.w[0] = v.x; r.w[1] = v.y; r.w[2] = v.z; r.w[3] = v.w;
#else
#pragma unroll
  for (int k = 0; k < ARITY; k++) r.w[k] = p[i * ARITY + k];
#endif
  return r;
}

__device__ __forceinline__ void store_row(u32* __restrict__ p, u64 i, const Row& r) {
#if ARITY == 2
  reinterpret_cast<uint2*>(p)[i] = make_uint2(r.w[0], r.w[1]);
#elif ARITY == 4
  reinterpret_cast<uint4*>(p)[i] = make_uint4(r.w[0], r.w[1], r.w[2], r.w[3]);
#else
#pragma unroll
  for (int k = 0; k < ARITY; k++) p[i * ARITY + k] = r.w[k];
#endif
}

// Lexicographic comparison: -1, 0, 1.
__device__ __forceinline__ int row_cmp(const Row& a, const Row& b) {
#pragma unroll
  for (int k = 0; k < ARITY; k++) {
    if (a.w[k] < b.w[k]) return -1;
    if (a.w[k] > b.w[k]) return 1;
  }
  return 0;
}
__device__ __forceinline__ bool row_le(const Row& a, const Row& b) { return row_cmp(a, b) <= 0; }
__device__ __forceinline__ bool row_eq(const Row& a, const Row& b) { return row_cmp(a, b) == 0; }

__device__ __forceinline__ u32 hash_mix(u32 h, u32 w) {
  w *= 0xcc9e2d51u;
  w = (w << 15) | (w >> 17);
  w *= 0x1b873593u;
  h ^= w;
  h = (h << 13) | (h >> 19);
  return h * 5u + 0xe6546b64u;
}
__device__ __forceinline__ u32 hash_final(u32 h) {
  h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
  return h;
}
