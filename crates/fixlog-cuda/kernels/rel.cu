// Row-wise relational kernels on sorted relations: unique flags, compaction
// by flags + offsets, merge of two sorted relations (merge path, one tile per
// block staged in shared memory), and set difference a - b as keep-flags over
// a (merge-path tiles for balanced sizes, binary search when |a| << |b|).
// The difference kernels only CLEAR flags of tuples found in b, so several
// differences (and unique's flags) compose before one compaction.
#define MERGE_THREADS 256
#if ARITY == 1
#define MERGE_ITEMS 16
#elif ARITY == 2
#define MERGE_ITEMS 8
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

extern "C" __global__ void compact_rows(const u32* __restrict__ rows, u64 n, const u32* __restrict__ flags,
                                        const u32* __restrict__ offsets, u32* __restrict__ out) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && flags[i]) store_row(out, offsets[i], load_row(rows, i));
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

template <bool DIFF>
__device__ void merge_tile(const u32* __restrict__ a, u64 na, const u32* __restrict__ b, u64 nb,
                           u32* __restrict__ out, u32* __restrict__ flags) {
  __shared__ u32 sm[PAD((MERGE_TILE + 1) * ARITY) + 1];
  __shared__ u64 bounds[2];
  const int tid = threadIdx.x;
  u64 total = na + nb;
  u64 k0 = (u64)blockIdx.x * MERGE_TILE;
  u64 k1 = min(k0 + MERGE_TILE, total);
  if (tid < 2) bounds[tid] = merge_path_g(a, na, b, nb, tid ? k1 : k0);
  __syncthreads();
  u64 a0 = bounds[0], a1 = bounds[1];
  u64 b0 = k0 - a0, b1 = k1 - a1;
  int la = (int)(a1 - a0), lb = (int)(b1 - b0);
  int lbh = (DIFF && b1 < nb) ? lb + 1 : lb;
  for (int w = tid; w < la * ARITY; w += MERGE_THREADS) sm[PAD(w)] = a[a0 * ARITY + w];
  for (int w = tid; w < lbh * ARITY; w += MERGE_THREADS) sm[PAD(la * ARITY + w)] = b[b0 * ARITY + w];
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
          if (ib < lbh && row_eq(x, srow(sm, boff + ib))) flags[a0 + ia] = 0u;
        }
        res[k] = x;
        ia++;
      } else {
        res[k] = srow(sm, boff + ib);
        ib++;
      }
    }
  }
  if (!DIFF) {
    __syncthreads();
#pragma unroll
    for (int k = 0; k < MERGE_ITEMS; k++)
      if (d + k < cnt)
#pragma unroll
        for (int c = 0; c < ARITY; c++) sm[PAD((d + k) * ARITY + c)] = res[k].w[c];
    __syncthreads();
    u32* dst = out + k0 * ARITY;
    for (int w = tid; w < cnt * ARITY; w += MERGE_THREADS) dst[w] = sm[PAD(w)];
  }
}

extern "C" __global__ void __launch_bounds__(MERGE_THREADS) merge_rows(const u32* a, u64 na, const u32* b, u64 nb, u32* out) {
  merge_tile<false>(a, na, b, nb, out, nullptr);
}

extern "C" __global__ void __launch_bounds__(MERGE_THREADS) diff_flags_merge(const u32* a, u64 na, const u32* b, u64 nb, u32* flags) {
  merge_tile<true>(a, na, b, nb, nullptr, flags);
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
