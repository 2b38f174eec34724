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

// The longest list of a CSR of n lists: *out = max(off[u + 1] - off[u]) (out zeroed).
extern "C" __global__ void fwd_longest(const u64* __restrict__ off, u64 n, u32* __restrict__ out) {
  const u64 stride = (u64)gridDim.x * blockDim.x;
  u32 best = 0;
  for (u64 u = (u64)blockIdx.x * blockDim.x + threadIdx.x; u < n; u += stride)
    best = max(best, (u32)(off[u + 1] - off[u]));
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) best = max(best, __shfl_xor_sync(0xFFFFFFFFu, best, d));
  if ((threadIdx.x & 31u) == 0 && best) atomicMax(out, best);
}

// ---- Clique counts along the forward lists (`matching::count_cliques_forward`) ----
// The forward lists in rank numbering (offsets u64[n + 1], targets u32, every list
// ascending and holding only nodes above its own) find every clique once, at its
// lowest node u, its other nodes ascending in N+(u). A triangle u < v < w is a forward
// edge (u, v) and a w in both N+(u) and N+(v); since N+(v) holds only nodes above v,
// only the tail of N+(u) after v can meet it: triangles = the sum over forward edges e
// = (u, v) of |tail(e) ∩ N+(v)|. A 4-clique u < v < w < x is such a triangle and an x
// in I(e) = tail(e) ∩ N+(v) after w and in N+(w): the sum over forward edges of the
// sum over w in I(e) of |I(e) after w ∩ N+(w)|. No level is materialized.
//
// Edge-parallel, balanced within the warp: a warp takes 32 consecutive forward edges
// (lane l the edge base + l; its source u by binary search in the offsets), so low- and
// high-degree nodes alike fill its lanes. An intersection of two sorted lists is
// min(|a|, |b|) items: each element of the shorter binary-searched in the longer.
// `c_hits` runs the items of all 32 lanes' intersections flattened: a warp scan of the
// item counts, then rounds of 32 items, item j taken by lane j mod 32 (its owner lane
// by a 5-step binary search over the scan, read with shuffles). Warps stride over the
// edge chunks of a grid of resident blocks (chunk c to warp c mod warps: a hub's run
// of long lists is spread over many warps); a lane sums in a register, a block adds
// once to the total.
//
// clique4_count takes the edges of its 32 with min(|tail|, |N+(v)|) >= 2 (a 4-clique
// needs |I| >= 2) one at a time: the warp writes I (ascending, by ballot) to its
// C4_SHARED words of shared memory (when min(|tail|, |N+(v)|), the bound on |I|, fits;
// else to its slice of `scratch`, one per warp of the grid, `scratch_words` each, which
// the host allocates only when the longest list is over C4_SHARED), then runs
// `c_hits` over its members w, 32 at a time: the shorter of (I after w) and N+(w) is
// searched in the other.
//
// Lengths fit u32: a list holds at most about sqrt(2m) nodes (degree order), so the
// items of one warp round are far below 2^32.

#define CWARPS 8        // warps per block (256 threads)
#define C4_SHARED 512   // words of one warp's I in shared memory (clique4_count)

// The source of forward edge e (e < off[n]): the last u < n with off[u] <= e.
__device__ __forceinline__ u32 c_source(const u64* __restrict__ off, u32 n, u64 e) {
  u32 lo = 0, hi = n;  // off[lo] <= e < off[hi]
  while (hi - lo > 1) {
    const u32 mid = lo + ((hi - lo) >> 1);
    if (off[mid] <= e) lo = mid; else hi = mid;
  }
  return lo;
}

// Lane l's intersection is the cnt elements a[0..cnt), each looked up in the sorted
// b[0..blen); the items of all lanes are run flattened (see above). Returns the hits
// of the items this lane ran.
__device__ __forceinline__ u32 c_hits(const u32* a, u32 cnt, const u32* b, u32 blen, u32 lane) {
  u32 inc = cnt;  // inclusive scan of the item counts
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const u32 t = __shfl_up_sync(0xFFFFFFFFu, inc, d);
    if (lane >= (u32)d) inc += t;
  }
  const u32 items = __shfl_sync(0xFFFFFFFFu, inc, 31);
  const u32 first = inc - cnt;
  const u64 pa = (u64)a, pb = (u64)b;
  u32 hits = 0;
  for (u32 base = 0; base < items; base += 32) {
    const u32 j = base + lane;
    // Owner: the first lane whose inclusive count is above j (the lanes at or below
    // j, counted by a binary search over the ascending scan).
    u32 o = 0;
#pragma unroll
    for (u32 s = 16; s > 0; s >>= 1)
      if (__shfl_sync(0xFFFFFFFFu, inc, o + s - 1) <= j) o += s;
    const u32 k = j - __shfl_sync(0xFFFFFFFFu, first, o);
    const u32* oa = (const u32*)__shfl_sync(0xFFFFFFFFu, pa, o);
    const u32* ob = (const u32*)__shfl_sync(0xFFFFFFFFu, pb, o);
    const u32 on = __shfl_sync(0xFFFFFFFFu, blen, o);
    if (j < items && m_contains(ob, on, oa[k])) hits++;
  }
  return hits;
}

// Lane's forward edge e (< m): the shorter of tail(e) and N+(v) as (a, alen), the
// other as (b, blen), as indices into tgt.
__device__ __forceinline__ void c_edge(const u64* __restrict__ off, const u32* __restrict__ tgt, u32 n, u64 e,
                                       u64& a, u32& alen, u64& b, u32& blen) {
  const u32 u = c_source(off, n, e);
  const u32 tail = (u32)(off[u + 1] - e - 1);
  const u32 v = tgt[e];
  const u64 vb = off[v];
  const u32 dv = (u32)(off[v + 1] - vb);
  if (tail <= dv) {
    a = e + 1; alen = tail; b = vb; blen = dv;
  } else {
    a = vb; alen = dv; b = e + 1; blen = tail;
  }
}

// Adds the sum of the lanes' `hits` of this block to *total (every thread calls it).
__device__ __forceinline__ void c_block_add(u64 hits, u64* total) {
  __shared__ u64 s_sum[CWARPS];
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) hits += __shfl_xor_sync(0xFFFFFFFFu, hits, d);
  if ((threadIdx.x & 31u) == 0) s_sum[threadIdx.x >> 5] = hits;
  __syncthreads();
  if (threadIdx.x == 0) {
    u64 t = 0;
#pragma unroll
    for (int w = 0; w < CWARPS; w++) t += s_sum[w];
    if (t) atomicAdd(total, t);
  }
}

// *total += the triangles of the forward lists (off[0..=n], m = off[n] edges in tgt).
extern "C" __global__ void __launch_bounds__(256) tri_count(const u64* __restrict__ off,
                                                             const u32* __restrict__ tgt, u32 n, u64 m,
                                                             u64* total) {
  const u32 lane = threadIdx.x & 31u;
  const u64 warp = (u64)blockIdx.x * CWARPS + (threadIdx.x >> 5);
  const u64 stride = (u64)gridDim.x * CWARPS * 32;
  u64 hits = 0;
  for (u64 base = warp * 32; base < m; base += stride) {  // warp-uniform
    const u64 e = base + lane;
    u64 a = 0, b = 0;
    u32 alen = 0, blen = 0;
    if (e < m) c_edge(off, tgt, n, e, a, alen, b, blen);
    hits += c_hits(tgt + a, alen, tgt + b, blen, lane);
  }
  c_block_add(hits, total);
}

// *total += the 4-cliques of the forward lists (as tri_count); `scratch`: `scratch_words`
// words per warp of the grid, for an I over C4_SHARED (0 when no list is that long).
extern "C" __global__ void __launch_bounds__(256) clique4_count(const u64* __restrict__ off,
                                                                 const u32* __restrict__ tgt, u32 n, u64 m,
                                                                 u32* scratch, u32 scratch_words, u64* total) {
  __shared__ u32 s_set[CWARPS][C4_SHARED];
  const u32 lane = threadIdx.x & 31u, wib = threadIdx.x >> 5;
  const u32 lt = (1u << lane) - 1u;
  const u64 warp = (u64)blockIdx.x * CWARPS + wib;
  const u64 stride = (u64)gridDim.x * CWARPS * 32;
  u64 hits = 0;
  for (u64 base = warp * 32; base < m; base += stride) {  // warp-uniform
    const u64 e = base + lane;
    u64 a = 0, b = 0;
    u32 alen = 0, blen = 0;
    if (e < m) c_edge(off, tgt, n, e, a, alen, b, blen);
    u32 pending = __ballot_sync(0xFFFFFFFFu, alen >= 2);
    while (pending) {  // warp-uniform
      const u32 l = __ffs(pending) - 1;
      pending &= pending - 1;
      const u64 ea = __shfl_sync(0xFFFFFFFFu, a, l), eb = __shfl_sync(0xFFFFFFFFu, b, l);
      const u32 ealen = __shfl_sync(0xFFFFFFFFu, alen, l), eblen = __shfl_sync(0xFFFFFFFFu, blen, l);
      u32* set = ealen <= C4_SHARED ? s_set[wib] : scratch + warp * scratch_words;
      __syncwarp();  // the last edge's readers of the set are done
      // I = tail(e) ∩ N+(v), ascending.
      u32 size = 0;
      for (u32 i0 = 0; i0 < ealen; i0 += 32) {
        const u32 i = i0 + lane;
        u32 x = 0;
        bool in = false;
        if (i < ealen) {
          x = tgt[ea + i];
          in = m_contains(tgt + eb, eblen, x);
        }
        const u32 ball = __ballot_sync(0xFFFFFFFFu, in);
        if (in) set[size + __popc(ball & lt)] = x;
        size += __popc(ball);
      }
      __syncwarp();
      // Pairs w < x of I joined by a forward edge (w, x): x in (I after w) ∩ N+(w).
      for (u32 p0 = 0; p0 + 1 < size; p0 += 32) {  // warp-uniform
        const u32 p = p0 + lane;
        const u32* pa = set;
        const u32* pb = set;
        u32 cnt = 0, plen = 0;
        if (p + 1 < size) {
          const u32 w = set[p];
          const u64 wb = off[w];
          const u32 dw = (u32)(off[w + 1] - wb), t = size - p - 1;
          if (t <= dw) {
            pa = set + p + 1; cnt = t; pb = tgt + wb; plen = dw;
          } else {
            pa = tgt + wb; cnt = dw; pb = set + p + 1; plen = t;
          }
        }
        hits += c_hits(pa, cnt, pb, plen, lane);
      }
    }
  }
  c_block_add(hits, total);
}
