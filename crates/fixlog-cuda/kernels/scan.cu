// Device-wide exclusive scan (reduce / scan partials / downsweep), driven
// from Rust: CUB's device-wide headers do not compile under NVRTC, its
// block-level ones do. Also index compaction and a device-side RNG fill.
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#define SCAN_THREADS 256
#define SCAN_ITEMS 16
#define SCAN_TILE (SCAN_THREADS * SCAN_ITEMS)

// FLAG: count non-zero inputs (stream compaction) instead of summing values.
template <typename T, bool FLAG>
__device__ void scan_reduce_impl(const T* __restrict__ in, u64 n, u64* __restrict__ partials) {
  typedef cub::BlockReduce<u64, SCAN_THREADS> BR;
  __shared__ typename BR::TempStorage tmp;
  u64 base = (u64)blockIdx.x * SCAN_TILE;
  u64 s = 0;
#pragma unroll
  for (int k = 0; k < SCAN_ITEMS; k++) {
    u64 i = base + (u64)k * SCAN_THREADS + threadIdx.x;
    if (i < n) s += FLAG ? (u64)(in[i] != 0) : (u64)in[i];
  }
  s = BR(tmp).Sum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// Exclusive scan of one tile per block; `offsets` (may be null) holds the
// exclusive prefix of the tile sums. The last block writes the grand total.
template <typename TI, typename TO, bool FLAG>
__device__ void scan_down_impl(const TI* in, u64 n, const u64* offsets, TO* out, u64* total) {
  typedef cub::BlockLoad<TI, SCAN_THREADS, SCAN_ITEMS, cub::BLOCK_LOAD_TRANSPOSE> BL;
  typedef cub::BlockStore<TO, SCAN_THREADS, SCAN_ITEMS, cub::BLOCK_STORE_TRANSPOSE> BS;
  typedef cub::BlockScan<u64, SCAN_THREADS> BSc;
  __shared__ union {
    typename BL::TempStorage load;
    typename BS::TempStorage store;
    typename BSc::TempStorage scan;
  } tmp;
  u64 base = (u64)blockIdx.x * SCAN_TILE;
  int valid = (int)min((u64)SCAN_TILE, n - base);
  TI items[SCAN_ITEMS];
  BL(tmp.load).Load(in + base, items, valid, (TI)0);
  __syncthreads();
  u64 v[SCAN_ITEMS];
#pragma unroll
  for (int k = 0; k < SCAN_ITEMS; k++) v[k] = FLAG ? (u64)(items[k] != 0) : (u64)items[k];
  u64 agg;
  BSc(tmp.scan).ExclusiveSum(v, v, agg);
  u64 off = offsets ? offsets[blockIdx.x] : 0;
  TO o[SCAN_ITEMS];
#pragma unroll
  for (int k = 0; k < SCAN_ITEMS; k++) o[k] = (TO)(v[k] + off);
  __syncthreads();
  BS(tmp.store).Store(out + base, o, valid);
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) *total = off + agg;
}

extern "C" __global__ void scan_reduce_u32(const u32* in, u64 n, u64* partials) {
  scan_reduce_impl<u32, false>(in, n, partials);
}
extern "C" __global__ void scan_reduce_flag(const u32* in, u64 n, u64* partials) {
  scan_reduce_impl<u32, true>(in, n, partials);
}
extern "C" __global__ void scan_reduce_u64(const u64* in, u64 n, u64* partials) {
  scan_reduce_impl<u64, false>(in, n, partials);
}
extern "C" __global__ void scan_down_u32(const u32* in, u64 n, const u64* offsets, u32* out, u64* total) {
  scan_down_impl<u32, u32, false>(in, n, offsets, out, total);
}
extern "C" __global__ void scan_down_flag(const u32* in, u64 n, const u64* offsets, u32* out, u64* total) {
  scan_down_impl<u32, u32, true>(in, n, offsets, out, total);
}
extern "C" __global__ void scan_down_u64(const u64* in, u64 n, const u64* offsets, u64* out, u64* total) {
  scan_down_impl<u64, u64, false>(in, n, offsets, out, total);
}

extern "C" __global__ void fill_u32(u32* out, u64 n, u32 v) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = v;
}

// out[offsets[i]] = i for flagged i; out[total] = n is written by the host.
extern "C" __global__ void compact_index(const u32* flags, const u32* offsets, u64 n, u32* out) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && flags[i]) out[offsets[i]] = (u32)i;
}

// Fill `n` words with a hash of (seed, index), masked: deterministic random data.
extern "C" __global__ void fill_random(u32* out, u64 n, u32 seed, u32 mask) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    u32 h = hash_mix(seed, (u32)i);
    h = hash_mix(h, (u32)(i >> 32));
    out[i] = hash_final(h) & mask;
  }
}

// flags[i] = (i % period) < keep  -- deterministic flag patterns for benches.
extern "C" __global__ void fill_flags(u32* out, u64 n, u32 seed) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = hash_final(hash_mix(seed, (u32)i)) & 1u;
}
