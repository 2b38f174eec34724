// Row-wise relational kernels on sorted relations: unique flags, compaction
// by flags + offsets, merge of two sorted relations (merge path, one tile per
// block staged in shared memory), and set difference a - b as keep-flags over
// a (merge-path tiles for balanced sizes, binary search when |a| << |b|).
// The difference kernels only CLEAR flags of tuples found in b, so several
// differences (and unique's flags) compose before one compaction.
// Merge-path bounds of every tile come from merge_partition (one thread per
// tile boundary), so no block waits on a global binary search.
// Compaction is one pass: each tile counts its kept rows with warp ballots,
// finds its output offset by decoupled look-back over the preceding tiles
// (tile ids taken in launch order from a counter), and writes; set
// difference a - b (merge method) is the same, fused with the merge tile.
#define MERGE_THREADS 256
#if ARITY == 1
#define MERGE_ITEMS 16
#elif ARITY == 2
#define MERGE_ITEMS 8  // 16 measured slower (merge 1e9: 9.07 ms against 7.43)
#elif ARITY <= 4
#define MERGE_ITEMS 4
#else
#define MERGE_ITEMS 2
#endif
#define MERGE_TILE (MERGE_THREADS * MERGE_ITEMS)

extern "C" __global__ void unique_flags(const u32* __restrict__ rows, u64 n, u32* __restrict__ flags) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) flags[i] = (i == 0) ? 1u : (row_eq(load_row(rows, i), load_row(rows, i - 1)) ? 0u : 1u);
}

#define LBX_AGG (1ull << 62)
#define LBX_INC (2ull << 62)
#define LBX_VAL ((1ull << 62) - 1)

// One warp per tile: publish the tile's count, look back over the preceding
// tiles 32 at a time (lb[1 + t]; lb[0] is the tile counter; a lane per
// predecessor, as CUB's single-pass scan does), publish the inclusive count.
// Returns the exclusive prefix to every lane.
__device__ u64 lookback_warp(u64* lb, u32 tile, u64 agg) {
  const int lane = threadIdx.x & 31;
  volatile u64* v = (volatile u64*)(lb + 1);
  if (tile == 0) {
    if (lane == 0) v[0] = LBX_INC | agg;
    return 0;
  }
  if (lane == 0) v[tile] = LBX_AGG | agg;
  u64 prefix = 0;
  for (int end = (int)tile;; end -= 32) {
    const int j = end - 32 + lane;
    u64 x = LBX_INC;  // before tile 0: an inclusive 0
    if (j >= 0) {
      do {
        x = v[j];
      } while ((x >> 62) == 0);
    }
    const u32 inc = __ballot_sync(0xFFFFFFFFu, (x & LBX_INC) != 0);
    const int hi = inc ? 31 - __clz(inc) : 0;
    u64 val = lane >= hi ? (x & LBX_VAL) : 0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) val += __shfl_xor_sync(0xFFFFFFFFu, val, o);
    prefix += val;
    if (inc) break;
  }
  if (lane == 0) v[tile] = LBX_INC | (prefix + agg);
  return prefix;
}

// Exclusive scan of `cnt` (<= 256) per-warp counts wc[] in place by warp 0;
// returns the sum to lane 0 of warp 0 (others: garbage).
__device__ __forceinline__ u32 warp0_scan(u32* wc, int cnt) {
  const int lane = threadIdx.x & 31;
  const int per = (cnt + 31) / 32;
  u32 s = 0;
  for (int e = 0; e < per; e++) {
    int i = lane * per + e;
    if (i < cnt) s += wc[i];
  }
  u32 incl = s;
  for (int o = 1; o < 32; o <<= 1) {
    u32 y = __shfl_up_sync(0xFFFFFFFFu, incl, o);
    if (lane >= o) incl += y;
  }
  u32 run = incl - s;
  for (int e = 0; e < per; e++) {
    int i = lane * per + e;
    if (i < cnt) { u32 c = wc[i]; wc[i] = run; run += c; }
  }
  return __shfl_sync(0xFFFFFFFFu, incl, 31);
}

#define CT_ITEMS 16
#define CT_TILE (256 * CT_ITEMS)

// out = rows with a non-zero flag, in order; *total = their number.
// lb: 1 + tiles u64, zero at launch.
extern "C" __global__ void __launch_bounds__(256) compact_rows(const u32* __restrict__ rows, u64 n, const u32* __restrict__ flags,
                                                           u32* __restrict__ out, u64* lb, u64* total) {
  __shared__ u32 wc[CT_ITEMS * 8];
  __shared__ u64 sbase;
  __shared__ u32 stile;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) stile = (u32)atomicAdd((unsigned long long*)&lb[0], 1ull);
  __syncthreads();
  const u32 tile = stile;
  const u64 base = (u64)tile * CT_TILE;
  u32 keep = 0, pos[CT_ITEMS];
#pragma unroll
  for (int k = 0; k < CT_ITEMS; k++) {
    u64 i = base + k * 256 + threadIdx.x;
    bool f = i < n && flags[i] != 0;
    u32 m = __ballot_sync(0xFFFFFFFFu, f);
    if (lane == 0) wc[k * 8 + warp] = __popc(m);
    pos[k] = __popc(m & ((1u << lane) - 1u));
    keep |= (u32)f << k;
  }
  __syncthreads();
  if (warp == 0) {
    u32 sum = warp0_scan(wc, CT_ITEMS * 8);
    u64 ex = lookback_warp(lb, tile, sum);
    if (lane == 0) {
      sbase = ex;
      if ((u64)tile == (n - 1) / CT_TILE) *total = ex + sum;
    }
  }
  __syncthreads();
  const u64 ob = sbase;
#pragma unroll
  for (int k = 0; k < CT_ITEMS; k++) {
    if ((keep >> k) & 1u) {
      u64 i = base + k * 256 + threadIdx.x;
      store_row(out, ob + wc[k * 8 + warp] + pos[k], load_row(rows, i));
    }
  }
}

// Merge-path split of every tile boundary: bounds[t] = elements of a among the
// first min(t * tile, na + nb) outputs, t = 0..=ntiles.
__device__ u64 merge_path_g(const u32* a, u64 na, const u32* b, u64 nb, u64 diag);
extern "C" __global__ void merge_partition(const u32* __restrict__ a, u64 na, const u32* __restrict__ b, u64 nb, u64 tile,
                                           u64 ntiles, u64* __restrict__ bounds) {
  u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (t > ntiles) return;
  bounds[t] = merge_path_g(a, na, b, nb, min(t * tile, na + nb));
}

// Shared-memory word index with one padding word per 32: threads that merge
// rows ITEMS apart would otherwise hit the same few banks.
#define PAD(w) ((w) + ((w) >> 5))

__device__ __forceinline__ Row srow(const u32* s, int i) {
  Row r;
#pragma unroll
  for (int k = 0; k < ARITY; k++) r.w[k] = s[PAD(i * ARITY + k)];
  return r;
}

// Number of elements of `a` among the first `diag` outputs of the merge (ties: a first).
__device__ u64 merge_path_g(const u32* a, u64 na, const u32* b, u64 nb, u64 diag) {
  u64 lo = diag > nb ? diag - nb : 0, hi = min(diag, na);
  while (lo < hi) {
    u64 mid = (lo + hi) >> 1;
    if (row_le(load_row(a, mid), load_row(b, diag - 1 - mid))) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// DIFF: mode 1 clears flags of a-rows found in b; mode 2 writes a - b to out
// (compacted, look-back in lb, count to *dtotal).
template <int DIFF>
__device__ void merge_tile(const u32* __restrict__ a, u64 na, const u32* __restrict__ b, u64 nb,
                           const u64* __restrict__ bounds, u32* __restrict__ out, u32* __restrict__ flags,
                           u64* lbk, u64* dtotal) {
  __shared__ u32 sm[PAD((MERGE_TILE + 1) * ARITY) + 1];
  __shared__ unsigned char keepf[DIFF == 2 ? MERGE_TILE : 1];
  __shared__ u32 wc[MERGE_ITEMS * 8];
  __shared__ u64 sbase;
  __shared__ u32 stile;
  const int tid = threadIdx.x;
  u32 tile = blockIdx.x;
  if (DIFF == 2) {
    if (tid == 0) stile = (u32)atomicAdd((unsigned long long*)&lbk[0], 1ull);
    __syncthreads();
    tile = stile;
  }
  u64 total = na + nb;
  u64 k0 = (u64)tile * MERGE_TILE;
  u64 k1 = min(k0 + MERGE_TILE, total);
  u64 a0 = bounds[tile], a1 = bounds[tile + 1];
  u64 b0 = k0 - a0, b1 = k1 - a1;
  int la = (int)(a1 - a0), lb = (int)(b1 - b0);
  int lbh = (DIFF && b1 < nb) ? lb + 1 : lb;
  // stage a[a0..a1) then b[b0..b0+lbh) row by row: unrolled, so every load
  // of a thread is in flight at once
  const int staged = la + lbh;
#pragma unroll
  for (int k = 0; k <= MERGE_ITEMS; k++) {
    int i = k * MERGE_THREADS + tid;
    if (i < staged) {
      Row x = i < la ? load_row(a, a0 + i) : load_row(b, b0 + (u64)(i - la));
#pragma unroll
      for (int c = 0; c < ARITY; c++) sm[PAD(i * ARITY + c)] = x.w[c];
    }
  }
  __syncthreads();
  // rows of a are at 0.., rows of b at la.. (srow pads the combined index)
  const int boff = la;
  int cnt = la + lb;
  int d = min(tid * MERGE_ITEMS, cnt);
  int lo = max(0, d - lb), hi = min(d, la);
  while (lo < hi) {
    int mid = (lo + hi) >> 1;
    if (row_le(srow(sm, mid), srow(sm, boff + d - 1 - mid))) lo = mid + 1; else hi = mid;
  }
  int ia = lo, ib = d - lo;
  Row res[MERGE_ITEMS];
#pragma unroll
  for (int k = 0; k < MERGE_ITEMS; k++) {
    if (d + k < cnt) {
      bool take_a = ib >= lb || (ia < la && row_le(srow(sm, ia), srow(sm, boff + ib)));
      if (take_a) {
        Row x = srow(sm, ia);
        if (DIFF) {
          bool found = ib < lbh && row_eq(x, srow(sm, boff + ib));
          if (DIFF == 1 && found) flags[a0 + ia] = 0u;
          if (DIFF == 2) keepf[ia] = found ? 0 : 1;
        }
        res[k] = x;
        ia++;
      } else {
        res[k] = srow(sm, boff + ib);
        ib++;
      }
    }
  }
  if (DIFF == 2) {
    // compact the tile's a-rows (la of them, local order) by their keep flags
    __syncthreads();
    const int lane = tid & 31, warp = tid >> 5;
    u32 keep = 0, pos[MERGE_ITEMS];
#pragma unroll
    for (int k = 0; k < MERGE_ITEMS; k++) {
      int i = k * MERGE_THREADS + tid;
      bool f = i < la && keepf[i];
      u32 m = __ballot_sync(0xFFFFFFFFu, f);
      if (lane == 0) wc[k * 8 + warp] = __popc(m);
      pos[k] = __popc(m & ((1u << lane) - 1u));
      keep |= (u32)f << k;
    }
    __syncthreads();
    if (warp == 0) {
      u32 sum = warp0_scan(wc, MERGE_ITEMS * 8);
      u64 ex = lookback_warp(lbk, tile, sum);
      if (lane == 0) {
        sbase = ex;
        if (k1 == total) *dtotal = ex + sum;
      }
    }
    __syncthreads();
    const u64 ob = sbase;
#pragma unroll
    for (int k = 0; k < MERGE_ITEMS; k++)
      if ((keep >> k) & 1u) store_row(out, ob + wc[k * 8 + warp] + pos[k], srow(sm, k * MERGE_THREADS + tid));
  }
  if (!DIFF) {
    __syncthreads();
#pragma unroll
    for (int k = 0; k < MERGE_ITEMS; k++)
      if (d + k < cnt)
#pragma unroll
        for (int c = 0; c < ARITY; c++) sm[PAD((d + k) * ARITY + c)] = res[k].w[c];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < MERGE_ITEMS; k++) {
      int i = k * MERGE_THREADS + tid;
      if (i < cnt) store_row(out, k0 + i, srow(sm, i));
    }
  }
}

extern "C" __global__ void __launch_bounds__(MERGE_THREADS) merge_rows(const u32* a, u64 na, const u32* b, u64 nb, const u64* bounds, u32* out) {
  merge_tile<0>(a, na, b, nb, bounds, out, nullptr, nullptr, nullptr);
}

extern "C" __global__ void __launch_bounds__(MERGE_THREADS) diff_flags_merge(const u32* a, u64 na, const u32* b, u64 nb, const u64* bounds, u32* flags) {
  merge_tile<1>(a, na, b, nb, bounds, nullptr, flags, nullptr, nullptr);
}

// a - b in one pass: merge-path tile, keep-flags in shared memory, block-local
// compaction, decoupled look-back for the output offset.
extern "C" __global__ void __launch_bounds__(MERGE_THREADS) diff_merge_compact(const u32* a, u64 na, const u32* b, u64 nb, const u64* bounds,
                                                                             u32* out, u64* lb, u64* total) {
  merge_tile<2>(a, na, b, nb, bounds, out, nullptr, lb, total);
}

extern "C" __global__ void diff_flags_search(const u32* __restrict__ a, u64 na, const u32* __restrict__ b, u64 nb,
                                             u32* __restrict__ flags) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= na) return;
  Row x = load_row(a, i);
  u64 lo = 0, hi = nb;
  while (lo < hi) {
    u64 mid = (lo + hi) >> 1;
    if (row_cmp(load_row(b, mid), x) < 0) lo = mid + 1; else hi = mid;
  }
  if (lo < nb && row_eq(load_row(b, lo), x)) flags[i] = 0u;
}

// ---- Arity-2 merge / difference on 64-bit keys (round 4) ----
// A row (c0, c1) is read as one u64 (c1 << 32 | c0, little-endian); swz()
// swaps the halves so that one unsigned 64-bit comparison is the
// lexicographic order of (c0, c1) (a register move, no arithmetic). Tiles
// are staged in shared memory as keys, one 8-byte load/store per row; each
// thread finds its merge-path start by binary search in shared memory, then
// merges ITEMS outputs holding the current a and b keys in registers (one
// shared load per output). Merge: results go back to shared memory in output
// order and out with coalesced 8-byte stores. Difference: kept a-rows are
// counted per thread, placed by a block scan into shared memory (compacted),
// the tile's output offset comes from the decoupled look-back, and the rows
// are stored coalesced.
#define M2_THREADS 256
#define SPAD(i) ((i) + ((i) >> 4))  // one 8-byte pad per 16 keys (128 bytes)

__device__ __forceinline__ u64 swz(u64 v) { return (v << 32) | (v >> 32); }

template <int ITEMS, int DIFF>
__device__ __forceinline__ void merge2_tile(const u64* __restrict__ a, u64 na, const u64* __restrict__ b, u64 nb,
                                            const u64* __restrict__ bounds, u64* __restrict__ out, u64* lbk,
                                            u64* dtotal) {
  constexpr int TILE = M2_THREADS * ITEMS;
  __shared__ u64 sk[SPAD(TILE + 1) + 1];
  __shared__ u32 wc[M2_THREADS / 32];
  __shared__ u64 sbase;
  __shared__ u32 stile;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  u32 tile = blockIdx.x;
  if (DIFF) {
    if (tid == 0) stile = (u32)atomicAdd((unsigned long long*)&lbk[0], 1ull);
    __syncthreads();
    tile = stile;
  }
  const u64 total = na + nb;
  const u64 k0 = (u64)tile * TILE;
  const u64 k1 = min(k0 + (u64)TILE, total);
  const u64 a0 = bounds[tile], a1 = bounds[tile + 1];
  const u64 b0 = k0 - a0, b1 = k1 - a1;
  const int la = (int)(a1 - a0), lb = (int)(b1 - b0);
  const int lbh = (DIFF && b1 < nb) ? lb + 1 : lb;
  const int staged = la + lbh;
#pragma unroll
  for (int k = 0; k <= ITEMS; k++) {
    const int i = k * M2_THREADS + tid;
    if (i < staged) sk[SPAD(i)] = swz(i < la ? a[a0 + i] : b[b0 + (u64)(i - la)]);
  }
  __syncthreads();
  const int cnt = la + lb;
  const int d = min(tid * ITEMS, cnt);
  int lo = max(0, d - lb), hi = min(d, la);
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (sk[SPAD(mid)] <= sk[SPAD(la + d - 1 - mid)]) lo = mid + 1; else hi = mid;
  }
  int ia = lo, ib = d - lo;
  // indices stay within the staged area's allocation (ia <= la, la + ib <= TILE + 1);
  // keys past the ends are never used
  u64 ka = sk[SPAD(ia)], kb = sk[SPAD(la + ib)];
  u64 res[ITEMS];
  u32 keep = 0;
#pragma unroll
  for (int k = 0; k < ITEMS; k++) {
    const bool take_a = ib >= lb || (ia < la && ka <= kb);
    res[k] = take_a ? ka : kb;
    if (DIFF) {
      const bool kept = d + k < cnt && take_a && !(ib < lbh && ka == kb);
      keep |= (u32)kept << k;
    }
    if (take_a) ia++; else ib++;
    const u64 nx = sk[SPAD(min(take_a ? ia : la + ib, TILE))];  // past the end only when d + k >= cnt
    if (take_a) ka = nx; else kb = nx;
  }
  if (!DIFF) {
    __syncthreads();
#pragma unroll
    for (int k = 0; k < ITEMS; k++)
      if (d + k < cnt) sk[SPAD(d + k)] = res[k];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
      const int i = k * M2_THREADS + tid;
      if (i < cnt) out[k0 + i] = swz(sk[SPAD(i)]);
    }
  } else {
    const u32 c = __popc(keep);
    u32 incl = c;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const u32 y = __shfl_up_sync(0xFFFFFFFFu, incl, o);
      if (lane >= o) incl += y;
    }
    if (lane == 31) wc[warp] = incl;
    __syncthreads();  // every merge read of sk is done; warp counts are in
    u32 wex = 0, sum = 0;
#pragma unroll
    for (int w = 0; w < M2_THREADS / 32; w++) {
      const u32 x = wc[w];
      wex += w < warp ? x : 0;
      sum += x;
    }
    if (warp == 0) {
      const u64 ex = lookback_warp(lbk, tile, sum);
      if (lane == 0) {
        sbase = ex;
        if (k1 == total) *dtotal = ex + sum;
      }
    }
    int p = (int)(wex + incl - c);
#pragma unroll
    for (int k = 0; k < ITEMS; k++)
      if ((keep >> k) & 1u) {
        sk[SPAD(p)] = res[k];  // SPAD uses its argument twice: no p++ inside
        p++;
      }
    __syncthreads();
    const u64 ob = sbase;
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
      const int i = k * M2_THREADS + tid;
      if (i < (int)sum) out[ob + i] = swz(sk[SPAD(i)]);
    }
  }
}

// Arity 2 only (rows read as u64); ITEMS 8, 12, 16 (Gpu picks, see ops.rs).
extern "C" __global__ void __launch_bounds__(M2_THREADS) merge2_rows_8(const u64* a, u64 na, const u64* b, u64 nb, const u64* bounds, u64* out) {
  merge2_tile<8, 0>(a, na, b, nb, bounds, out, nullptr, nullptr);
}
extern "C" __global__ void __launch_bounds__(M2_THREADS) diff2_merge_compact_8(const u64* a, u64 na, const u64* b, u64 nb, const u64* bounds,
                                                                              u64* out, u64* lb, u64* total) {
  merge2_tile<8, 1>(a, na, b, nb, bounds, out, lb, total);
}
extern "C" __global__ void __launch_bounds__(M2_THREADS) merge2_rows_12(const u64* a, u64 na, const u64* b, u64 nb, const u64* bounds, u64* out) {
  merge2_tile<12, 0>(a, na, b, nb, bounds, out, nullptr, nullptr);
}
extern "C" __global__ void __launch_bounds__(M2_THREADS) diff2_merge_compact_12(const u64* a, u64 na, const u64* b, u64 nb, const u64* bounds,
                                                                              u64* out, u64* lb, u64* total) {
  merge2_tile<12, 1>(a, na, b, nb, bounds, out, lb, total);
}
extern "C" __global__ void __launch_bounds__(M2_THREADS) merge2_rows_16(const u64* a, u64 na, const u64* b, u64 nb, const u64* bounds, u64* out) {
  merge2_tile<16, 0>(a, na, b, nb, bounds, out, nullptr, nullptr);
}
extern "C" __global__ void __launch_bounds__(M2_THREADS) diff2_merge_compact_16(const u64* a, u64 na, const u64* b, u64 nb, const u64* bounds,
                                                                              u64* out, u64* lb, u64* total) {
  merge2_tile<16, 1>(a, na, b, nb, bounds, out, lb, total);
}
