// LSD radix sort of row-major tuples, 8-bit digits, least significant word
// first. Per digit: radix_hist (per-block histograms, digit-major so that one
// exclusive scan gives every (digit, block) its output offset), a device-wide
// scan from Rust, then radix_scatter (stable block-local ranking with CUB's
// BlockRadixSort on the digit, rows staged in shared memory, written out in
// striped order so that runs of equal digits are written coalesced).
// Digits whose bits never vary (radix_bits) are skipped by the host.
#include <cub/block/block_radix_sort.cuh>

#define SORT_THREADS 256
#if ARITY <= 2
#define SORT_ITEMS 8
#elif ARITY <= 4
#define SORT_ITEMS 6
#else
#define SORT_ITEMS 4
#endif
#define SORT_TILE (SORT_THREADS * SORT_ITEMS)

// orand[0..ARITY) = OR of each word, orand[ARITY..2*ARITY) = AND of each word.
extern "C" __global__ void radix_bits(const u32* __restrict__ rows, u64 n, u32* orand) {
  u32 o[ARITY], a[ARITY];
#pragma unroll
  for (int k = 0; k < ARITY; k++) { o[k] = 0; a[k] = 0xFFFFFFFFu; }
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    Row r = load_row(rows, i);
#pragma unroll
    for (int k = 0; k < ARITY; k++) { o[k] |= r.w[k]; a[k] &= r.w[k]; }
  }
#pragma unroll
  for (int k = 0; k < ARITY; k++) {
    for (int s = 16; s > 0; s >>= 1) {
      o[k] |= __shfl_xor_sync(0xFFFFFFFFu, o[k], s);
      a[k] &= __shfl_xor_sync(0xFFFFFFFFu, a[k], s);
    }
  }
  if ((threadIdx.x & 31) == 0) {
#pragma unroll
    for (int k = 0; k < ARITY; k++) { atomicOr(&orand[k], o[k]); atomicAnd(&orand[ARITY + k], a[k]); }
  }
}

extern "C" __global__ void radix_hist(const u32* __restrict__ rows, u64 n, u32 word, u32 shift, u32* hist) {
  __shared__ u32 cnt[256];
  cnt[threadIdx.x] = 0;
  __syncthreads();
  u64 base = (u64)blockIdx.x * SORT_TILE;
#pragma unroll
  for (int k = 0; k < SORT_ITEMS; k++) {
    u64 i = base + (u64)k * SORT_THREADS + threadIdx.x;
    if (i < n) atomicAdd(&cnt[(rows[i * ARITY + word] >> shift) & 255u], 1u);
  }
  __syncthreads();
  hist[(u64)threadIdx.x * gridDim.x + blockIdx.x] = cnt[threadIdx.x];
}

extern "C" __global__ void __launch_bounds__(SORT_THREADS) radix_scatter(const u32* __restrict__ in, u32* __restrict__ out, u64 n, u32 word, u32 shift, const u32* __restrict__ offsets) {
  typedef cub::BlockRadixSort<u32, SORT_THREADS, SORT_ITEMS, u32> BRS;
  __shared__ union {
    typename BRS::TempStorage sort;
    u32 rows[SORT_TILE * ARITY];
  } sm;
  __shared__ u32 start[257];
  __shared__ u32 goff[256];
  u64 base = (u64)blockIdx.x * SORT_TILE;
  int valid = (int)min((u64)SORT_TILE, n - base);
  // digits + local indices, blocked arrangement
  u32 keys[SORT_ITEMS], vals[SORT_ITEMS];
#pragma unroll
  for (int k = 0; k < SORT_ITEMS; k++) {
    int j = threadIdx.x * SORT_ITEMS + k;
    vals[k] = j;
    keys[k] = j < valid ? ((in[(base + j) * ARITY + word] >> shift) & 255u) : 256u;
  }
  goff[threadIdx.x] = offsets[(u64)threadIdx.x * gridDim.x + blockIdx.x];
  BRS(sm.sort).SortBlockedToStriped(keys, vals, 0, valid == SORT_TILE ? 8 : 9);
  if (threadIdx.x == 0) start[256] = valid;
  __syncthreads();
  // stage digits of each rank into shared memory (reuse the union after the sort)
  u32* rk = sm.rows;  // SORT_TILE words
#pragma unroll
  for (int k = 0; k < SORT_ITEMS; k++) rk[k * SORT_THREADS + threadIdx.x] = keys[k];
  __syncthreads();
#pragma unroll
  for (int k = 0; k < SORT_ITEMS; k++) {
    int r = k * SORT_THREADS + threadIdx.x;
    if (r < valid && (r == 0 || rk[r - 1] != keys[k])) start[keys[k]] = r;
  }
  __syncthreads();
  // stage the tile's rows (coalesced) into shared memory
  const u32* src = in + base * ARITY;
  for (int w = threadIdx.x; w < valid * ARITY; w += SORT_THREADS) sm.rows[w] = src[w];
  __syncthreads();
#pragma unroll
  for (int k = 0; k < SORT_ITEMS; k++) {
    int r = k * SORT_THREADS + threadIdx.x;
    if (r < valid) {
      u32 d = keys[k];
      u64 dst = (u64)goff[d] + (u32)(r - start[d]);
      u32 j = vals[k];
      Row row;
#pragma unroll
      for (int c = 0; c < ARITY; c++) row.w[c] = sm.rows[j * ARITY + c];
      store_row(out, dst, row);
    }
  }
}
