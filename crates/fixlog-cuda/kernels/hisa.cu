// HISA: hash-indexed sorted array. Over a relation sorted lexicographically,
// the distinct key prefixes (first kc columns) are numbered 0..u by their
// first occurrence; starts[j] is the offset of key j's first tuple and
// starts[u] = n, so key j's tuples are rows [starts[j], starts[j+1]). An
// open-addressing table (linear probing, power-of-two size) maps a key's hash
// to j; the key itself is read back from the sorted rows to confirm a hit.
#include "hisa.cuh"

extern "C" __global__ void hisa_key_flags(const u32* __restrict__ rows, u64 n, u32 kc, u32* __restrict__ flags) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  u32 f = 0;
  if (i == 0) f = 1;
  else
    for (u32 k = 0; k < kc; k++)
      if (rows[i * ARITY + k] != rows[(i - 1) * ARITY + k]) { f = 1; break; }
  flags[i] = f;
}

extern "C" __global__ void hisa_insert(const u32* __restrict__ rows, const u32* __restrict__ starts, u32 nkeys,
                                       u32 kc, u32* table, u32 mask) {
  u32 j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= nkeys) return;
  const u32* key = rows + (u64)starts[j] * ARITY;
  u32 h = hisa_hash(key, kc) & mask;
  while (atomicCAS(&table[h], EMPTY_SLOT, j) != EMPTY_SLOT) h = (h + 1) & mask;
}

// Range lookup for a batch of keys (kc words each): [begin, end), empty if absent.
extern "C" __global__ void hisa_lookup(const u32* __restrict__ rows, const u32* __restrict__ starts,
                                       const u32* __restrict__ table, u32 mask, u32 kc,
                                       const u32* __restrict__ keys, u64 nq, u32* begin, u32* end) {
  u64 q = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= nq) return;
  u32 key[8];
  for (u32 k = 0; k < kc; k++) key[k] = keys[q * kc + k];
  u32 b, e;
  hisa_find<ARITY>(rows, starts, table, mask, kc, key, b, e);
  begin[q] = b;
  end[q] = e;
}
