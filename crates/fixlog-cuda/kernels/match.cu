// The level-wise worst-case-optimal matcher of `fixlog match --backend cuda`
// (src/matching.rs): partial matches of `w` graph nodes (one per step bound so far) are
// extended by one step, whose candidates are the intersection of the sorted neighbour
// lists (CSR) of the already-bound nodes its pattern node is adjacent to, cut to its id
// range and checked (filter bits, distinctness, equalities, excluded ids, self-loops).
//
// One warp per partial match: lane k looks up source list k (shared memory), the warp
// takes the shortest list as the lead and its lanes stride over it, each candidate
// checked by binary search in the other lists. `match_count` writes each partial
// match's number of extensions (or, at the last step, adds them to a total: counting
// never materializes the matches); `match_write` writes the extended rows at the
// offsets of an exclusive scan of those counts, in partial-match order and, within
// one, in candidate (id) order — the order of the CPU matcher's depth-first search.

#define MAXV 32
#define MWARPS 8  // warps per block (256 threads)

struct MAdj {
  const u64* off;  // node_count + 1
  const u32* tgt;
};

// Mirrors `matching::StepDesc` (repr(C)).
struct MStep {
  u32 nsrc, nlow, nup, ndist, neq, nexcl, nself, has_bits;
  u32 clo, chi;
  u32 src_step[MAXV];
  u32 src_adj[MAXV];
  u32 low_step[MAXV];
  u32 low_add[MAXV];
  u32 up_step[MAXV];
  u32 up_add[MAXV];
  u32 dist_step[MAXV];
  u32 eq_step[MAXV];
  u32 self_adj[MAXV];
  const u32* excl;
  const u64* bits;
  const u32* all;
  u32 nall, pad;
};

__device__ __forceinline__ u32 m_lower(const u32* __restrict__ p, u32 n, u32 x) {
  u32 lo = 0, hi = n;
  while (lo < hi) {
    u32 m = (lo + hi) >> 1;
    if (p[m] < x) lo = m + 1; else hi = m;
  }
  return lo;
}

__device__ __forceinline__ bool m_contains(const u32* __restrict__ p, u32 n, u32 x) {
  u32 i = m_lower(p, n, x);
  return i < n && p[i] == x;
}

__device__ __forceinline__ u32 m_sat_add(u32 a, u32 b) {
  u32 s = a + b;
  return s < a ? 0xFFFFFFFFu : s;
}

// The step's candidate lists for one partial match, in this warp's shared slots;
// returns the lead list (the shortest), or -1 when the id range is empty.
__device__ __forceinline__ int m_lists(const MStep& s, const MAdj* __restrict__ adj, const u32* __restrict__ row,
                                       const u32** lp, u32* ln, u32 lane) {
  u32 lo = s.clo, hi = s.chi;
  for (u32 i = 0; i < s.nlow; i++) lo = max(lo, m_sat_add(row[s.low_step[i]], s.low_add[i]));
  for (u32 i = 0; i < s.nup; i++) hi = min(hi, m_sat_add(row[s.up_step[i]], s.up_add[i]));
  if (lo >= hi) return -1;
  const u32 nlists = s.nsrc == 0 ? 1 : s.nsrc;
  if (lane < nlists) {
    const u32* p;
    u32 n;
    if (s.nsrc == 0) {
      p = s.all;
      n = s.nall;
    } else {
      const MAdj a = adj[s.src_adj[lane]];
      const u32 v = row[s.src_step[lane]];
      const u64 b = a.off[v], e = a.off[v + 1];
      p = a.tgt + b;
      n = (u32)(e - b);
    }
    const u32 i0 = m_lower(p, n, lo);
    const u32 i1 = m_lower(p, n, hi);
    lp[lane] = p + i0;
    ln[lane] = i1 > i0 ? i1 - i0 : 0;
  }
  __syncwarp();
  // Lead: the shortest list (lowest index among equals), by a warp reduction.
  u32 key = lane < nlists ? ln[lane] : 0xFFFFFFFFu;
  u32 who = lane;
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) {
    u32 k2 = __shfl_xor_sync(0xFFFFFFFFu, key, d);
    u32 w2 = __shfl_xor_sync(0xFFFFFFFFu, who, d);
    if (k2 < key || (k2 == key && w2 < who)) {
      key = k2;
      who = w2;
    }
  }
  return (int)who;
}

__device__ __forceinline__ bool m_accept(const MStep& s, const MAdj* __restrict__ adj, const u32* __restrict__ row,
                                         const u32* const* lp, const u32* ln, int lead, u32 c) {
  for (u32 k = 0; k < s.nsrc; k++)
    if ((int)k != lead && !m_contains(lp[k], ln[k], c)) return false;
  if (s.nsrc != 0 && s.has_bits && !((s.bits[c >> 6] >> (c & 63)) & 1ull)) return false;
  for (u32 i = 0; i < s.ndist; i++)
    if (row[s.dist_step[i]] == c) return false;
  for (u32 i = 0; i < s.neq; i++)
    if (row[s.eq_step[i]] != c) return false;
  for (u32 i = 0; i < s.nexcl; i++)
    if (s.excl[i] == c) return false;
  for (u32 i = 0; i < s.nself; i++) {
    const MAdj a = adj[s.self_adj[i]];
    const u64 b = a.off[c], e = a.off[c + 1];
    if (!m_contains(a.tgt + b, (u32)(e - b), c)) return false;
  }
  return true;
}

// counts[r] = extensions of partial match r (rows of `w` words); with `last`, adds
// them to *total instead.
extern "C" __global__ void match_count(const u32* __restrict__ rows, u64 n, u32 w, const MStep* __restrict__ step,
                                       const MAdj* __restrict__ adj, u64* __restrict__ counts, u64* total, u32 last) {
  __shared__ const u32* s_lp[MWARPS][MAXV];
  __shared__ u32 s_ln[MWARPS][MAXV];
  const u32 lane = threadIdx.x & 31u, wib = threadIdx.x >> 5;
  const u64 r = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (r >= n) return;  // warp-uniform
  const MStep& s = *step;
  const u32* row = rows + r * w;
  const u32** lp = s_lp[wib];
  u32* ln = s_ln[wib];
  const int lead = m_lists(s, adj, row, lp, ln, lane);
  u64 cnt = 0;
  if (lead >= 0) {
    const u32* p = lp[lead];
    const u32 len = ln[lead];
    for (u32 i = lane; i < len; i += 32)
      if (m_accept(s, adj, row, lp, ln, lead, p[i])) cnt++;
  }
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) cnt += __shfl_xor_sync(0xFFFFFFFFu, cnt, d);
  if (lane == 0) {
    if (last) {
      if (cnt) atomicAdd(total, cnt);
    } else {
      counts[r] = cnt;
    }
  }
}

// Rows first..first+n of `rows` extended: row r's extensions go to
// out[(offsets[r] - base) * (w + 1) ...], in candidate order.
extern "C" __global__ void match_write(const u32* __restrict__ rows, u64 first, u64 n, u32 w,
                                       const MStep* __restrict__ step, const MAdj* __restrict__ adj,
                                       const u64* __restrict__ offsets, u64 base, u32* __restrict__ out) {
  __shared__ const u32* s_lp[MWARPS][MAXV];
  __shared__ u32 s_ln[MWARPS][MAXV];
  const u32 lane = threadIdx.x & 31u, wib = threadIdx.x >> 5;
  const u64 q = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (q >= n) return;  // warp-uniform
  const u64 r = first + q;
  const MStep& s = *step;
  const u32* row = rows + r * w;
  const u32** lp = s_lp[wib];
  u32* ln = s_ln[wib];
  const int lead = m_lists(s, adj, row, lp, ln, lane);
  if (lead < 0) return;
  const u32* p = lp[lead];
  const u32 len = ln[lead];
  u64 pos = offsets[r] - base;
  const u32 lt = (1u << lane) - 1u;
  for (u32 i0 = 0; i0 < len; i0 += 32) {
    const u32 i = i0 + lane;
    const u32 c = i < len ? p[i] : 0;
    const bool ok = i < len && m_accept(s, adj, row, lp, ln, lead, c);
    const u32 ball = __ballot_sync(0xFFFFFFFFu, ok);
    if (ok) {
      u32* o = out + (pos + __popc(ball & lt)) * (u64)(w + 1);
      for (u32 k = 0; k < w; k++) o[k] = row[k];
      o[w] = c;
    }
    pos += __popc(ball);
  }
}

// ---- Forward lists in degree order, built on the device (`matching::forward_graph`) ----
// The clique counts of `fixlog match` run along every node's forward list (its
// neighbours above it in degree order). Built here from the edges as read: degrees,
// ranks by a sort of (degree, node) rows, each edge as (lower rank, higher rank), a
// sort and unique of those pairs, and their CSR.

// Degree of every node as read: each edge (s, d) counts at both ends.
extern "C" __global__ void fwd_degree(const u32* __restrict__ pairs, u64 m, u32* __restrict__ deg) {
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < m; i += stride) {
    atomicAdd(&deg[pairs[2 * i]], 1u);
    atomicAdd(&deg[pairs[2 * i + 1]], 1u);
  }
}

// Rows (degree, node), whose sorted order is the degree order (ties by node).
extern "C" __global__ void fwd_rank_rows(const u32* __restrict__ deg, u64 n, u32* __restrict__ rows) {
  const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  rows[2 * i] = deg[i];
  rows[2 * i + 1] = (u32)i;
}

// rank[node] = the node's position in the sorted (degree, node) rows.
extern "C" __global__ void fwd_ranks(const u32* __restrict__ sorted, u64 n, u32* __restrict__ rank) {
  const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  rank[sorted[2 * i + 1]] = (u32)i;
}

// Each edge as (lower rank, higher rank); a self-loop as (n, n), which sorts after
// every pair and is cut off by the offsets.
extern "C" __global__ void fwd_pairs(const u32* __restrict__ pairs, u64 m, const u32* __restrict__ rank,
                                     u32 n, u32* __restrict__ out) {
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < m; i += stride) {
    const u32 a = rank[pairs[2 * i]], b = rank[pairs[2 * i + 1]];
    out[2 * i] = a == b ? n : min(a, b);
    out[2 * i + 1] = a == b ? n : max(a, b);
  }
}

// CSR offsets of k sorted, duplicate-free pairs: off[u] = the first pair whose first
// column is at least u, for u in 0..=n (so off[n] excludes the self-loop rows).
extern "C" __global__ void fwd_offsets(const u32* __restrict__ rows, u64 k, u64 n, u64* __restrict__ off) {
  const u64 u = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (u > n) return;
  u64 lo = 0, hi = k;
  while (lo < hi) {
    const u64 mid = (lo + hi) >> 1;
    if ((u64)rows[2 * mid] < u) lo = mid + 1; else hi = mid;
  }
  off[u] = lo;
}

// targets[i] = the second column of pair i.
extern "C" __global__ void fwd_targets(const u32* __restrict__ rows, u64 k, u32* __restrict__ tgt) {
  const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= k) return;
  tgt[i] = rows[2 * i + 1];
}
