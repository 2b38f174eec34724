// LSD radix sort of tuples, 8-bit digits, least significant word first, in
// the onesweep design (Adinets & Merrill 2022, CUB's DeviceRadixSort):
//  * onesweep_hist: ONE read of the input counts the digits of every pass;
//  * onesweep_offsets: exclusive scan of those histograms = the global start
//    of every (pass, digit);
//  * onesweep_pass (one launch per digit pass and portion): each block takes a
//    tile (dynamic tile id, so that look-back only waits on running blocks),
//    ranks its digits with CUB's BlockRadixRankMatchEarlyCounts, publishes its
//    per-digit counts at once, finds its per-digit offsets by decoupled
//    look-back over the preceding tiles, stages the tile in shared memory in
//    rank order and writes it out (runs of one digit are contiguous). Each
//    pass reads every row once and writes it once. Look-back words hold
//    30-bit counts, so a pass is launched per portion of at most 2^28 rows;
//    the last tile of a portion writes the digit starts of the next portion
//    (the per-portion split of a later pass depends on the earlier passes,
//    so the upfront histogram cannot give it).
// Digits are named by slot s = (ARITY-1-word)*4 + byte; `dmask` has bit s set
// for each digit that varies (others are skipped), passes run in slot order.
#include <cub/block/block_radix_rank.cuh>
#include <cub/block/block_scan.cuh>

#define OS_THREADS 256
#if ARITY == 1
#define OS_ITEMS 16
#elif ARITY == 2
#define OS_ITEMS 12
#elif ARITY <= 4
#define OS_ITEMS 8
#else
#define OS_ITEMS 4
#endif
#define OS_TILE (OS_THREADS * OS_ITEMS)
#define LB_AGG 0x40000000u
#define LB_INC 0x80000000u
#define LB_VAL 0x3FFFFFFFu

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

__device__ __forceinline__ u32 row_word(const Row& r, u32 word) {
  // masks, not a select: the compiler turns a select loop into an indexed
  // local-memory array
  u32 v = 0;
#pragma unroll
  for (int k = 0; k < ARITY; k++) v |= r.w[k] & (0u - (u32)((u32)k == word));
  return v;
}

// hist[pass][256] (u64, zeroed by the host) += digit counts of rows [begin, end).
extern "C" __global__ void __launch_bounds__(256) onesweep_hist(const u32* __restrict__ rows, u64 begin, u64 end, u32 dmask, u64* hist) {
  __shared__ u32 sh[ARITY * 4 * 256];
  const int np = __popc(dmask);
  for (int i = threadIdx.x; i < np * 256; i += blockDim.x) sh[i] = 0;
  __syncthreads();
  for (u64 i = begin + (u64)blockIdx.x * blockDim.x + threadIdx.x; i < end; i += (u64)gridDim.x * blockDim.x) {
    Row r = load_row(rows, i);
#pragma unroll
    for (int s = 0; s < ARITY * 4; s++) {
      if ((dmask >> s) & 1u) {
        const int w = ARITY - 1 - s / 4, b = s % 4;
        const int p = __popc(dmask & ((1u << s) - 1u));
        atomicAdd(&sh[p * 256 + ((r.w[w] >> (8 * b)) & 255u)], 1u);
      }
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < np * 256; i += blockDim.x)
    if (sh[i]) atomicAdd((unsigned long long*)&hist[i], (unsigned long long)sh[i]);
}

// One block per pass, 256 threads (one per digit). hist: [np][256] counts;
// offs[pass * stride_p + d] = global start of digit d in that pass (the digit
// starts of the first portion; later portions' follow at +256, +512, ...).
extern "C" __global__ void __launch_bounds__(256) onesweep_offsets(const u64* __restrict__ hist, u64 stride_p, u64* __restrict__ offs) {
  typedef cub::BlockScan<u64, 256> BS;
  __shared__ typename BS::TempStorage tmp;
  const u32 p = blockIdx.x, d = threadIdx.x;
  u64 base;
  BS(tmp).ExclusiveSum(hist[(u64)p * 256 + d], base);
  offs[p * stride_p + d] = base;
}

struct DigitOf {
  u32 shift;
  __device__ __forceinline__ u32 Digit(u32 k) const { return (k >> shift) & 255u; }
};

// Publishes each digit's tile count in the look-back array as soon as it is known.
struct Publish {
  u32* lb;     // this tile's 256 entries
  u32* cnt;    // shared: count per digit
  bool first;  // tile 0: the count is already the inclusive prefix
  int pad;     // rows of padding (counted in digit 255)
  __device__ __forceinline__ void operator()(int (&bins)[1]) {
    u32 c = (u32)bins[0] - (threadIdx.x == 255 ? (u32)pad : 0u);
    cnt[threadIdx.x] = c;
    *(volatile u32*)&lb[threadIdx.x] = (first ? LB_INC : LB_AGG) | c;
  }
};

typedef cub::BlockRadixRankMatchEarlyCounts<OS_THREADS, 8, false, cub::BLOCK_SCAN_WARP_SCANS, cub::WARP_MATCH_ANY> OsRank;

// One digit pass over rows [begin, end) (one portion). goffs: 256 global
// starts of this (pass, portion); the last tile writes the next portion's
// at goffs + 256. lb: tiles*256 look-back words and, before
// them, a tile counter, all zero at launch.
extern "C" __global__ void __launch_bounds__(OS_THREADS) onesweep_pass(const u32* __restrict__ in, u32* __restrict__ out, u64 begin, u64 end,
                                                                       u32 word, u32 shift, u64* goffs, u32* __restrict__ lb) {
  __shared__ union {
    typename OsRank::TempStorage rank;
    u32 rows[OS_TILE * ARITY];
  } sm;
  __shared__ u64 sdst[256];
  __shared__ u32 scnt[256];
  __shared__ u32 stile;
  if (threadIdx.x == 0) stile = atomicAdd(&lb[0], 1u);
  __syncthreads();
  const u32 tile = stile;
  u32* tlb = lb + 256 + (u64)tile * 256;
  const u64 base = begin + (u64)tile * OS_TILE;
  const int valid = (int)min((u64)OS_TILE, end - base);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  Row r[OS_ITEMS];
  u32 keys[OS_ITEMS];
#pragma unroll
  for (int u = 0; u < OS_ITEMS; u++) {
    int j = warp * 32 * OS_ITEMS + u * 32 + lane;  // warp-striped: the order the ranking keeps stable
    if (j < valid) {
      r[u] = load_row(in, base + j);
      keys[u] = row_word(r[u], word);
    } else {
      keys[u] = 0xFFFFFFFFu;  // digit 255, after every real row of the tile
    }
  }
  int ranks[OS_ITEMS];
  int excl[1];
  Publish pub{tlb, scnt, tile == 0, OS_TILE - valid};
  OsRank(sm.rank).RankKeys(keys, ranks, DigitOf{shift}, excl, pub);
  // decoupled look-back: thread d sums digit d's counts of the preceding tiles
  {
    const u32 d = threadIdx.x;
    u32 prefix = 0;
    if (tile > 0) {
      for (int j = (int)tile - 1; j >= 0;) {
        u32 v = *(volatile u32*)&lb[256 + (u64)j * 256 + d];
        if ((v & (LB_AGG | LB_INC)) == 0) continue;
        prefix += v & LB_VAL;
        if (v & LB_INC) break;
        j--;
      }
      *(volatile u32*)&tlb[d] = LB_INC | (prefix + scnt[d]);
    }
    const u64 g = goffs[d];
    sdst[d] = g + prefix - (u64)(u32)excl[0];
    if (base + OS_TILE >= end) goffs[256 + d] = g + prefix + scnt[d];
  }
  __syncthreads();  // ranking's shared memory is reused for the rows
#pragma unroll
  for (int u = 0; u < OS_ITEMS; u++) {
    if (ranks[u] < valid) {
#pragma unroll
      for (int c = 0; c < ARITY; c++) sm.rows[ranks[u] * ARITY + c] = r[u].w[c];
    }
  }
  __syncthreads();
  for (int p = threadIdx.x; p < valid; p += OS_THREADS) {
    Row x;
#if ARITY == 2
    uint2 v2 = reinterpret_cast<const uint2*>(sm.rows)[p];
    x.w[0] = v2.x; x.w[1] = v2.y;
#else
#pragma unroll
    for (int c = 0; c < ARITY; c++) x.w[c] = sm.rows[p * ARITY + c];
#endif
    u32 dg = (row_word(x, word) >> shift) & 255u;
    store_row(out, sdst[dg] + p, x);
  }
}
