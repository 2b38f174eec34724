// Row-wise relational kernels on sorted relations: unique flags, compaction
// by flags + offsets, merge of two sorted relations, and set difference a - b.
// * Merge: merge path. Bounds of every tile come from merge_partition (one
//   thread per tile boundary), so no block waits on a global binary search.
//   Arity 2 (rows as 64-bit keys) runs persistent and pipelined
//   (merge2_pipe_8); other arities one tile per block (merge_rows).
// * Difference as keep-flags over a (merge-path tiles, or binary search when
//   |a| << |b|): the kernels only CLEAR flags of tuples found in b, so several
//   differences (and unique's flags) compose before one compaction.
// * Difference in one pass: arity 2 scans b's range per tile of a
//   (diff2_tilea_N; diff2_tilea_u_N also drops repeated rows of a, which is
//   unique in one pass when b is empty), each block prefetching into L2 the
//   rows of the tile pf = 2 x SMs ahead; other arities merge-path tiles
//   (diff_merge_compact).
// Compaction and the one-pass differences count kept rows per tile and find
// their output offset by a decoupled look-back over the preceding tiles.
// Round 6 (docs/gpu-results.md) measured the alternatives that are gone:
// persistent pipelined differences (with a counter, static rounds, or a
// deferred look-back warp) and wider look-back windows were all slower.
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

// Bring [p, p + bytes) of global memory into L2 without waiting for it (one
// bulk prefetch instruction per MiB; sm_90 and up, a no-op before).
__device__ __forceinline__ void prefetch_l2(const void* p, u64 bytes) {
#if __CUDA_ARCH__ >= 900
  const u64 g = (u64)__cvta_generic_to_global(p);
  u64 s = g & ~15ull;
  const u64 e = (g + bytes + 15) & ~15ull;
  while (s < e) {
    const u32 n = (u32)min(e - s, 1ull << 20);
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(s), "r"(n) : "memory");
    s += n;
  }
#endif
}

#define LBX_AGG (1ull << 62)
#define LBX_INC (2ull << 62)
#define LBX_VAL ((1ull << 62) - 1)

// Decoupled look-back (as CUB's single-pass scan): tile t publishes its count
// (AGG), walks back over its predecessors' words (lb[1 + t]; lb[0] is a tile
// counter for kernels that take tile ids from it) 32 at a time, one per lane, summing AGG counts until an inclusive
// prefix (INC), and publishes its own INC. It waits only for predecessors
// after the nearest INC. (Round 6 tried 8 predecessors per lane per round:
// slower for one-tile-per-block kernels, whose nearest INC is close.)
// Returns the exclusive prefix to every lane.
__device__ u64 lookback_warp(u64* lb, u32 tile, u64 agg) {
  const int lane = threadIdx.x & 31;
  volatile u64* v = (volatile u64*)(lb + 1);
  if (lane == 0) v[tile] = (tile == 0 ? LBX_INC : LBX_AGG) | agg;
  if (tile == 0) return 0;
  u64 prefix = 0;
  for (long long end = (long long)tile; end > 0; end -= 32) {
    const long long j = end - 32 + lane;
    u64 x = j >= 0 ? v[j] : LBX_INC;  // before tile 0: an inclusive 0
    u32 inc;
    int hl;
    for (;;) {
      inc = __ballot_sync(0xFFFFFFFFu, (x & LBX_INC) != 0);
      hl = inc ? 31 - __clz(inc) : -1;
      const bool pending = lane > hl && (x >> 62) == 0;
      if (!__any_sync(0xFFFFFFFFu, pending)) break;
      if (pending) x = v[j];
    }
    u64 val = lane >= hl ? (x & LBX_VAL) : 0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) val += __shfl_xor_sync(0xFFFFFFFFu, val, o);
    prefix += val;
    if (inc) break;
  }
  if (lane == 0) v[tile] = LBX_INC | (prefix + agg);
  return prefix;
}

// A tile's kept values, one pass: each thread's kept vals (bit k of keep)
// are counted (warp shuffles, then the 8 warp totals), written compacted to
// st in thread order (index i at st[i + (i >> PADSH)]), and warp 0 finds the
// tile's output offset by look-back into *sbase (the last tile also writes
// the total to *dtotal). Returns the tile's kept count. Callers must have
// finished reading st; sync before reading st or *sbase.
template <int ITEMS, int PADSH>
__device__ __forceinline__ u32 tile_compact(u32 keep, const u64 (&vals)[ITEMS], u64* st, u32* wc, u64* sbase, u64* lbk,
                                            u32 tile, bool last, u64* dtotal) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const u32 c = __popc(keep);
  u32 incl = c;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const u32 y = __shfl_up_sync(0xFFFFFFFFu, incl, o);
    if (lane >= o) incl += y;
  }
  if (lane == 31) wc[warp] = incl;
  __syncthreads();  // warp counts in; the caller's reads of st are done
  u32 wex = 0, sum = 0;
#pragma unroll
  for (int w = 0; w < 8; w++) {
    const u32 x = wc[w];
    wex += w < warp ? x : 0;
    sum += x;
  }
  // compact first: vals are dead during warp 0's look-back
  int p = (int)(wex + incl - c);
#pragma unroll
  for (int k = 0; k < ITEMS; k++)
    if ((keep >> k) & 1u) {
      st[p + (p >> PADSH)] = vals[k];
      p++;
    }
  if (warp == 0) {
    const u64 ex = lookback_warp(lbk, tile, sum);
    if (lane == 0) {
      *sbase = ex;
      if (last) *dtotal = ex + sum;
    }
  }
  return sum;
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
// lb: 1 + tiles u64, zero at launch. (Round 7: prefetching the tile's rows
// into L2, with or without look-ahead, made it slower: it already keeps DRAM
// 69% busy, flags included.)
extern "C" __global__ void __launch_bounds__(256) compact_rows(const u32* __restrict__ rows, u64 n, const u32* __restrict__ flags,
                                                           u32* __restrict__ out, u64* lb, u64* total) {
  __shared__ u32 wc[CT_ITEMS * 8];
  __shared__ u64 sbase;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const u32 tile = blockIdx.x;  // in dispatch order, as diff2_tilea
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

// ---- Arity-2 merge on 64-bit keys ----
// A row (c0, c1) is read as one u64 (c1 << 32 | c0, little-endian); swz()
// swaps the halves so that one unsigned 64-bit comparison is the
// lexicographic order of (c0, c1) (a register move, no arithmetic). Tiles
// are staged in shared memory as keys, one 8-byte load/store per row; each
// thread finds its merge-path start by binary search in shared memory, then
// merges ITEMS outputs holding the current a and b keys in registers (one
// shared load per output). Results go back to shared memory in output order
// and out with coalesced 8-byte stores. (Round 4's one-tile-per-block
// kernels, merge and difference, were superseded by merge2_pipe_8 and
// diff2_tilea_N in rounds 6-7 and removed.)
#define M2_THREADS 256
#define SPAD(i) ((i) + ((i) >> 4))  // one 8-byte pad per 16 keys (128 bytes)

__device__ __forceinline__ u64 swz(u64 v) { return (v << 32) | (v >> 32); }

// This thread's part of a staged tile (sk: the tile's la rows of a, then its
// lb rows of b, as raw u64 rows, swz() at every read): merge-path search of
// its diagonal (thread `tid` of 256 takes outputs tid * ITEMS ..), then its
// ITEMS outputs merged from shared memory into res (swizzled keys).
template <int ITEMS>
__device__ __forceinline__ void merge2_path(const u64* sk, int la, int lb, int tid, u64 (&res)[ITEMS]) {
  constexpr int TILE = M2_THREADS * ITEMS;
  const int cnt = la + lb;
  const int d = min(tid * ITEMS, cnt);
  int lo = max(0, d - lb), hi = min(d, la);
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (swz(sk[SPAD(mid)]) <= swz(sk[SPAD(la + d - 1 - mid)])) lo = mid + 1; else hi = mid;
  }
  int ia = lo, ib = d - lo;
  // indices stay within the staged area's allocation (ia <= la, la + ib <= TILE + 1);
  // keys past the ends are never used
  u64 ka = swz(sk[SPAD(ia)]), kb = swz(sk[SPAD(la + ib)]);
#pragma unroll
  for (int k = 0; k < ITEMS; k++) {
    const bool take_a = ib >= lb || (ia < la && ka <= kb);
    res[k] = take_a ? ka : kb;
    if (take_a) ia++; else ib++;
    const u64 nx = swz(sk[SPAD(min(take_a ? ia : la + ib, TILE))]);  // past the end only when d + k >= cnt
    if (take_a) ka = nx; else kb = nx;
  }
}

// Merge of one staged tile (as merge2_path) into output rows k0... Leaves sk
// in use: the caller syncs before restaging it.
template <int ITEMS>
__device__ __forceinline__ void merge2_compute(u64* sk, u64 k0, int la, int lb, u64* __restrict__ out) {
  const int tid = threadIdx.x;
  const int cnt = la + lb;
  const int d = min(tid * ITEMS, cnt);
  u64 res[ITEMS];
  merge2_path<ITEMS>(sk, la, lb, tid, res);
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
}

// ---- Persistent, software-pipelined arity-2 merge (round 6) ----
// A grid of resident blocks (sm_count x occupancy) walks the tiles b, b + G,
// ...; while a block merges tile i from one shared buffer, tile i + 1 streams
// into the other with cp.async (no registers held, no stall on the loads),
// and tile i + 2's merge-path bounds are already in registers.
__device__ __forceinline__ void cp_async8(u64* smem, const u64* gmem) {
  const u32 s = (u32)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait1() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// Tile t's rows of a, then of b, into buf (raw rows, padded by SPAD).
template <int ITEMS>
__device__ __forceinline__ void merge2_stage_async(u64* buf, const u64* a, const u64* b, u64 total, u64 t, u64 a0,
                                                   u64 a1) {
  constexpr int TILE = M2_THREADS * ITEMS;
  const u64 k0 = t * TILE, k1 = min(k0 + (u64)TILE, total);
  const u64 b0 = k0 - a0, b1 = k1 - a1;
  const int la = (int)(a1 - a0);
  const int staged = la + (int)(b1 - b0);
#pragma unroll
  for (int k = 0; k <= ITEMS; k++) {
    const int i = k * M2_THREADS + threadIdx.x;
    if (i < staged) cp_async8(&buf[SPAD(i)], i < la ? a + a0 + i : b + b0 + (u64)(i - la));
  }
}

template <int ITEMS>
__device__ __forceinline__ void merge2_pipe(const u64* __restrict__ a, u64 na, const u64* __restrict__ b, u64 nb,
                                            const u64* __restrict__ bounds, u64 ntiles, u64* __restrict__ out) {
  constexpr int TILE = M2_THREADS * ITEMS;
  constexpr int BUF = SPAD(TILE + 1) + 1;
  __shared__ u64 sk[2 * BUF];
  const u64 total = na + nb;
  const u64 grid = gridDim.x;
  u64 t = blockIdx.x, tn = t + grid;
  u64 ta0 = 0, ta1 = 0, tna0 = 0, tna1 = 0;
  if (t < ntiles) {
    ta0 = bounds[t];
    ta1 = bounds[t + 1];
    merge2_stage_async<ITEMS>(sk, a, b, total, t, ta0, ta1);
  }
  cp_async_commit();
  if (tn < ntiles) {
    tna0 = bounds[tn];
    tna1 = bounds[tn + 1];
    merge2_stage_async<ITEMS>(sk + BUF, a, b, total, tn, tna0, tna1);
  }
  cp_async_commit();
  int cur = 0;
  while (t < ntiles) {
    const u64 tq = tn + grid;  // staged into buffer cur once tile t is done
    u64 tqa0 = 0, tqa1 = 0;
    if (tq < ntiles) {
      tqa0 = bounds[tq];
      tqa1 = bounds[tq + 1];
    }
    cp_async_wait1();  // this thread's part of tile t has landed
    __syncthreads();   // everyone's has
    const u64 k0 = t * TILE, k1 = min(k0 + (u64)TILE, total);
    const int la = (int)(ta1 - ta0), lb = (int)((k1 - ta1) - (k0 - ta0));
    merge2_compute<ITEMS>(sk + cur * BUF, k0, la, lb, out);
    __syncthreads();  // buffer cur is free again
    if (tq < ntiles) merge2_stage_async<ITEMS>(sk + cur * BUF, a, b, total, tq, tqa0, tqa1);
    cp_async_commit();  // possibly empty: one group per iteration keeps wait_group 1 exact
    t = tn; ta0 = tna0; ta1 = tna1;
    tn = tq; tna0 = tqa0; tna1 = tqa1;
    cur ^= 1;
  }
  cp_async_wait_all();
}

// Persistent pipelined merge (grid = resident blocks).
extern "C" __global__ void __launch_bounds__(M2_THREADS) merge2_pipe_8(const u64* a, u64 na, const u64* b, u64 nb, const u64* bounds,
                                                                     u64 ntiles, u64* out) {
  merge2_pipe<8>(a, na, b, nb, bounds, ntiles, out);
}

// ---- Arity-2 set difference, tiles over a only (round 6) ----
// Tile t = 256 * ITEMS consecutive rows of a; its b rows are [bl[t], bl[t + 1]]
// (bl[t] = lower_bound(b, a[t * tile]) from diff2_bpart; one row past the
// range for equal a rows across the tile edge), staged in shared memory with
// cp.async (every load in flight at once) when they fit in CAP rows, else
// searched in global memory. Each thread holds ITEMS consecutive rows of a in
// registers, finds the first in the staged b by a branch-free binary search
// and walks b forward for the others (binary search when the key lies more
// than 16 rows on). No merge of a with b and no merge-path search: 24% fewer
// instructions than the merge kernel per row. Kept rows are compacted in
// shared memory; the tile's offset comes from the decoupled look-back.
#define TILEA_CAP 3072  // rows of b staged per tile (TILEA_CAP in ops.rs)
#define BPAD(i) ((i) + ((i) >> 3))  // one pad per 8 keys: threads walk b about ITEMS apart

// bl[t] = lower_bound(b, a[t * tile]) for t < ntiles, bl[ntiles] = nb; the
// difference's nlb look-back words zeroed on the way (the host launches at
// least nlb threads: one memset less). The search is latency-bound (one
// thread per boundary, a chain of dependent loads): up to `isteps` guarded
// interpolation steps first (two probes in flight at once, 2 sqrt(len) either
// side of the interpolated position), then a binary search of what is left.
// On evenly spread keys, 10^8 rows take about 10 rounds instead of 27; on
// skewed keys every step still narrows one side.
extern "C" __global__ void diff2_bpart(const u64* __restrict__ a, const u64* __restrict__ b, u64 nb, u64 tile, u64 ntiles,
                                       u64* __restrict__ bl, u64* __restrict__ lbw, u64 nlb, u32 isteps) {
  const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (t < nlb) lbw[t] = 0;
  if (t > ntiles) return;
  if (t == ntiles || nb == 0) {
    bl[t] = nb;
    return;
  }
  const u64 key = swz(a[t * tile]);
  // answer in [lo, hi]; b[lo - 1] < key (value kl), b[hi] >= key (value kh)
  u64 lo = 0, hi = nb;
  const u64 k0 = swz(b[0]), kn = swz(b[nb - 1]);
  if (key <= k0) {
    hi = 0;
  } else if (key > kn) {
    lo = nb;
  } else if (isteps > 0) {
    lo = 1;
    hi = nb - 1;
    u64 kl = k0, kh = kn;
    for (u32 s = 0; s < isteps && hi - lo > 32; s++) {
      const double xl = (double)(lo - 1), xh = (double)hi;
      const double x = xl + (double)(key - kl) / (double)(kh - kl) * (xh - xl);
      const u64 d = (u64)(2.0 * sqrt((double)(hi - lo))) + 4;
      const u64 c = (u64)min(max(x, (double)lo), (double)(hi - 1));
      const u64 p1 = c > lo + d ? c - d : lo, p2 = min(c + d, hi - 1);
      const u64 v1 = swz(b[p1]), v2 = swz(b[p2]);  // both loads in flight
      if (v1 >= key) {
        hi = p1;
        kh = v1;
      } else {
        lo = p1 + 1;
        kl = v1;
        if (v2 >= key) {
          hi = min(hi, p2);
          kh = v2;
        } else {
          lo = p2 + 1;
          kl = v2;
        }
      }
    }
  }
  while (lo < hi) {
    const u64 mid = (lo + hi) >> 1;
    if (swz(b[mid]) < key) lo = mid + 1; else hi = mid;
  }
  bl[t] = lo;
}

// First index in [lo, hi) of the sorted raw rows at p (stride BPAD when
// staged in shared memory) whose key is not below x.
template <bool STAGED>
__device__ __forceinline__ u64 lower_bound2(const u64* p, u64 lo, u64 hi, u64 x) {
  while (lo < hi) {
    const u64 mid = (lo + hi) >> 1;
    if (swz(p[STAGED ? BPAD(mid) : mid]) < x) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// Membership of a thread's ITEMS ascending keys in the n sorted raw rows
// staged at sb (stride BPAD, +inf at index n): bit k set if ak[k] is there.
// Branch-free lower_bound of the first key (halving steps clamped to n),
// then a forward walk per key, or a binary search when the key lies more
// than 16 rows on (b denser than a here).
template <int ITEMS, int CAP>
__device__ __forceinline__ u32 tilea_members(const u64* sb, int n, const u64 (&ak)[ITEMS]) {
  constexpr int TOP = CAP <= 1024 ? 1024 : CAP <= 2048 ? 2048 : CAP <= 4096 ? 4096 : 8192;  // power of two >= CAP
  static_assert(CAP <= 8192, "CAP");
  int p = 0;
#pragma unroll
  for (int s = TOP; s > 0; s >>= 1) {  // powers of two summing to 2 TOP - 1 >= n
    const int q = min(p + s, n);
    if (q > p && swz(sb[BPAD(q - 1)]) < ak[0]) p = q;
  }
  u64 y = swz(sb[BPAD(p)]);
  u32 found = (p < n && y == ak[0]) ? 1u : 0u;  // the sentinel equals a key of all ones
#pragma unroll
  for (int k = 1; k < ITEMS; k++) {
    const u64 x = ak[k];
    const int q = min(p + 16, n);
    if (swz(sb[BPAD(q)]) < x) {
      int lo = q + 1, hi = n;
      while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (swz(sb[BPAD(mid)]) < x) lo = mid + 1; else hi = mid;
      }
      p = lo;
      y = swz(sb[BPAD(p)]);
    } else {
      while (y < x) {
        p++;
        y = swz(sb[BPAD(p)]);
      }
    }
    found |= (u32)(p < n && y == x) << k;
  }
  return found;
}

template <int ITEMS, int CAP, bool UNIQ>
__device__ __forceinline__ void diff2_tilea(const u64* __restrict__ a, u64 na, const u64* __restrict__ b, u64 nb,
                                            const u64* __restrict__ bl, u64* __restrict__ out, u64* lbk, u64* dtotal,
                                            u64 pf) {
  constexpr int TILE = 256 * ITEMS;
  __shared__ u64 sb[BPAD(CAP > TILE ? CAP : TILE) + 1];
  __shared__ u32 wc[8];
  __shared__ u64 sbase;
  const int tid = threadIdx.x;
  // tile = block index: blocks are dispatched in increasing order, so the
  // tiles a look-back waits on are running or done (CUB's single-pass scan
  // relies on the same); no tile counter round trip before the first load
  const u32 tile = blockIdx.x;
  const u64 a0 = (u64)tile * TILE;
  const int la = (int)min((u64)TILE, na - a0);
  const int i0 = tid * ITEMS;
  u64 ak[ITEMS];
  if (ITEMS % 2 == 0 && i0 + ITEMS <= la && (reinterpret_cast<size_t>(a + a0 + i0) & 15) == 0) {
    const ulonglong2* v = reinterpret_cast<const ulonglong2*>(a + a0 + i0);
#pragma unroll
    for (int k = 0; k < ITEMS / 2; k++) {
      const ulonglong2 x = v[k];
      ak[2 * k] = swz(x.x);
      ak[2 * k + 1] = swz(x.y);
    }
  } else {
#pragma unroll
    for (int k = 0; k < ITEMS; k++) ak[k] = i0 + k < la ? swz(a[a0 + i0 + k]) : ~0ull;
  }
  const u64 b0 = bl[tile];
  const u64 bend = min(bl[tile + 1] + 1, nb);  // one past: equal rows of a across the tile edge
  const u64 ntiles = (na + TILE - 1) / TILE;
  if (pf > 0 && tid == 255 && tile + pf < ntiles) {
    // look ahead: tile + pf's rows into L2 now, so its block finds them
    // there (DRAM streams while blocks compute and wait on look-backs)
    const u64 t2 = tile + pf, q0 = bl[t2], q1 = min(bl[t2 + 1] + 1, nb);
    prefetch_l2(a + t2 * TILE, min((u64)TILE, na - t2 * TILE) * 8);
    if (q1 > q0 && q1 - q0 <= CAP) prefetch_l2(b + q0, (q1 - q0) * 8);  // else searched, not read
  }
  const u64 nbr = bend > b0 ? bend - b0 : 0;
  u32 found = 0;
  if (nbr <= CAP) {
    const int n = (int)nbr;
    const u64* bc = b + b0;
    // every row's load in flight at once (cp.async: no registers held); a
    // loop that loads and stores a few rows at a time waits a memory round
    // trip per few rows
#pragma unroll
    for (int k = 0; k < (CAP + 255) / 256; k++) {
      const int i = k * 256 + tid;
      if (i < n) cp_async8(&sb[BPAD(i)], bc + i);
    }
    cp_async_commit();
    if (tid == 0) sb[BPAD(n)] = ~0ull;  // +inf sentinel: no bound checks below
    cp_async_wait_all();
    __syncthreads();
    found = tilea_members<ITEMS, CAP>(sb, n, ak);
  } else {
    // b much denser than a here: search each row in global memory
    u64 p = b0;
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
      p = lower_bound2<false>(b, p, bend, ak[k]);
      if (p < bend && swz(b[p]) == ak[k]) found |= 1u << k;
    }
  }
  if (UNIQ) {
    // a row equal to the one before it is not kept (the row before the
    // thread's first is the previous thread's last: a cache hit)
    const u64 g0 = a0 + (u64)i0;
    if (g0 > 0 && i0 < la && swz(a[g0 - 1]) == ak[0]) found |= 1u;
#pragma unroll
    for (int k = 1; k < ITEMS; k++) found |= (u32)(ak[k] == ak[k - 1]) << k;
  }
  u32 keep = 0;
#pragma unroll
  for (int k = 0; k < ITEMS; k++) keep |= (u32)(i0 + k < la && !((found >> k) & 1u)) << k;
  const u32 sum = tile_compact<ITEMS, 3>(keep, ak, sb, wc, &sbase, lbk, tile, a0 + (u64)la == na, dtotal);  // BPAD
  __syncthreads();
  const u64 ob = sbase;
  for (int i = tid; i < (int)sum; i += 256) out[ob + i] = swz(sb[BPAD(i)]);
}

// ITEMS rows of a per thread (tile 256 * ITEMS), up to TILEA_CAP rows of b staged;
// registers bounded for 8 resident blocks per SM (full occupancy: 32
// registers; ITEMS = 8 spills there, 7 does not and measured fastest, round
// 6). The host takes the largest ITEMS whose tile's b range usually fits (b
// up to 1.4, 2.4, 4.8, 9.6 times denser than a). diff2_tilea_u_N: unique(a)
// - b in the same pass (b may be empty: unique alone). Round 7 measured a
// run-time flag instead of the template parameter (4% slower) and 128-thread
// blocks, 16 per SM (0.537 against 0.501 ms at 10^8).
extern "C" __global__ void __launch_bounds__(256, 8)
    diff2_tilea_7(const u64* a, u64 na, const u64* b, u64 nb, const u64* bl, u64* out, u64* lb, u64* total, u64 pf) {
  diff2_tilea<7, TILEA_CAP, false>(a, na, b, nb, bl, out, lb, total, pf);
}
extern "C" __global__ void __launch_bounds__(256, 8)
    diff2_tilea_4(const u64* a, u64 na, const u64* b, u64 nb, const u64* bl, u64* out, u64* lb, u64* total, u64 pf) {
  diff2_tilea<4, TILEA_CAP, false>(a, na, b, nb, bl, out, lb, total, pf);
}
extern "C" __global__ void __launch_bounds__(256, 8)
    diff2_tilea_2(const u64* a, u64 na, const u64* b, u64 nb, const u64* bl, u64* out, u64* lb, u64* total, u64 pf) {
  diff2_tilea<2, TILEA_CAP, false>(a, na, b, nb, bl, out, lb, total, pf);
}
extern "C" __global__ void __launch_bounds__(256, 8)
    diff2_tilea_1(const u64* a, u64 na, const u64* b, u64 nb, const u64* bl, u64* out, u64* lb, u64* total, u64 pf) {
  diff2_tilea<1, TILEA_CAP, false>(a, na, b, nb, bl, out, lb, total, pf);
}
extern "C" __global__ void __launch_bounds__(256, 8)
    diff2_tilea_u_7(const u64* a, u64 na, const u64* b, u64 nb, const u64* bl, u64* out, u64* lb, u64* total, u64 pf) {
  diff2_tilea<7, TILEA_CAP, true>(a, na, b, nb, bl, out, lb, total, pf);
}
extern "C" __global__ void __launch_bounds__(256, 8)
    diff2_tilea_u_4(const u64* a, u64 na, const u64* b, u64 nb, const u64* bl, u64* out, u64* lb, u64* total, u64 pf) {
  diff2_tilea<4, TILEA_CAP, true>(a, na, b, nb, bl, out, lb, total, pf);
}
extern "C" __global__ void __launch_bounds__(256, 8)
    diff2_tilea_u_2(const u64* a, u64 na, const u64* b, u64 nb, const u64* bl, u64* out, u64* lb, u64* total, u64 pf) {
  diff2_tilea<2, TILEA_CAP, true>(a, na, b, nb, bl, out, lb, total, pf);
}
extern "C" __global__ void __launch_bounds__(256, 8)
    diff2_tilea_u_1(const u64* a, u64 na, const u64* b, u64 nb, const u64* bl, u64* out, u64* lb, u64* total, u64 pf) {
  diff2_tilea<1, TILEA_CAP, true>(a, na, b, nb, bl, out, lb, total, pf);
}
