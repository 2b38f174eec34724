// Row reshaping and small passes over rows with the arity known at run time only
// (operators whose speed does not matter much, for any arity): one thread per row.

// out[i] = in[i] ++ [base + i] (rows of a and a + 1 words).
extern "C" __global__ void rows_number(const u32* __restrict__ in, u64 n, u32 a, u64 base, u32* __restrict__ out) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const u32* r = in + i * a;
  u32* o = out + i * (a + 1);
  for (u32 k = 0; k < a; k++) o[k] = r[k];
  o[a] = (u32)(base + i);
}

// out[i][p] = in[i][order[p]] (rows of a words).
extern "C" __global__ void rows_permute(const u32* __restrict__ in, u64 n, u32 a, const u32* __restrict__ order,
                                        u32* __restrict__ out) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const u32* r = in + i * a;
  u32* o = out + i * a;
  for (u32 p = 0; p < a; p++) o[p] = r[order[p]];
}

// Where the blocks of P_jnew start (see the kernel contract in src/codegen/mod.rs):
// input row i (rows of a words, candidates from offsets[i], an exclusive scan) begins
// a block where it is the first, its column g differs from the row before's, or its
// candidates begin in another stretch of `stretch` candidates than the row before's.
__device__ __forceinline__ u32 jnew_starts_here(const u32* __restrict__ in, u32 a, u32 g,
                                                const u32* __restrict__ offsets, u64 stretch, u64 i) {
  if (i == 0) return 1u;
  if (in[i * a + g] != in[(i - 1) * a + g]) return 1u;
  return (u32)((u64)offsets[i] / stretch != (u64)offsets[i - 1] / stretch);
}

// Two passes over the input rows. Without `starts` (0): pos[i] = 1 where row i begins a
// block, else 0. With it, `pos` being the exclusive scan of those flags:
// starts[pos[i]] = i where row i begins a block, and *old_rows += the rows of `old`
// (nolds runs of rows of two words sorted, olds[2q] their address and olds[2q + 1]
// their count) whose first column is the block's group value: the rows P_jnew's block
// marks before its candidates.
extern "C" __global__ void jnew_blocks(const u32* __restrict__ in, u64 n, u32 a, u32 g,
                                       const u32* __restrict__ offsets, u64 stretch, u32* __restrict__ pos,
                                       u32* __restrict__ starts, const u64* __restrict__ olds, u32 nolds,
                                       u64* old_rows) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const u32 here = jnew_starts_here(in, a, g, offsets, stretch, i);
  if (starts == nullptr) {
    pos[i] = here;
    return;
  }
  if (!here) return;
  starts[pos[i]] = (u32)i;
  const u32 x = in[i * a + g];
  u64 rows = 0;
  for (u32 q = 0; q < nolds; q++) {
    const u32* r = reinterpret_cast<const u32*>(olds[2 * q]);
    u64 l = 0, h = olds[2 * q + 1];
    while (l < h) {
      u64 mid = (l + h) >> 1;
      if (r[2 * mid] < x) l = mid + 1;
      else h = mid;
    }
    const u64 s = l;
    h = olds[2 * q + 1];
    while (l < h) {
      u64 mid = (l + h) >> 1;
      if (r[2 * mid] <= x) l = mid + 1;
      else h = mid;
    }
    rows += l - s;
  }
  if (rows) atomicAdd(old_rows, rows);
}

// The least and the greatest word of column c of n rows of a words: out[0] = min(out[0],
// ...), out[1] = max(out[1], ...) (the caller sets out to {0xFFFFFFFF, 0} first).
extern "C" __global__ void col_min_max(const u32* __restrict__ rows, u64 n, u32 a, u32 c, u32* out) {
  u32 lo = 0xFFFFFFFFu, hi = 0u;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    u32 v = rows[i * a + c];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  for (int d = 16; d > 0; d >>= 1) {
    u32 l2 = __shfl_down_sync(0xFFFFFFFFu, lo, d), h2 = __shfl_down_sync(0xFFFFFFFFu, hi, d);
    lo = l2 < lo ? l2 : lo;
    hi = h2 > hi ? h2 : hi;
  }
  if ((threadIdx.x & 31u) == 0) {
    atomicMin(&out[0], lo);
    atomicMax(&out[1], hi);
  }
}

// How many leading rows of a join's input make at most `limit` candidates: *out += the
// rows i < n where the sum over the nparts offset arrays (exclusive scans of the rows'
// candidates per index run, parts[q] the address of the q-th) at i is at most limit.
// The sums grow with i and the first is 0, so rows [0, *out - 1) make at most limit
// candidates (the caller sets *out to 0 first and knows the whole input makes more).
extern "C" __global__ void prefix_fit(const u64* __restrict__ parts, u32 nparts, u64 n, u64 limit, u64* out) {
  u64 fit = 0;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    u64 s = 0;
    for (u32 q = 0; q < nparts; q++) s += ((const u32*)parts[q])[i];
    fit += s <= limit ? 1u : 0u;
  }
  for (int d = 16; d > 0; d >>= 1) fit += __shfl_down_sync(0xFFFFFFFFu, fit, d);
  if ((threadIdx.x & 31u) == 0 && fit > 0) atomicAdd(out, fit);
}
