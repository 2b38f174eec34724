// Kernel templates of the generated operator kernels (see the kernel contract
// in src/codegen/mod.rs). The generator defines FX_MAP_BLOCK, FX_MAP_ITEMS,
// FX_JW_BLOCK, FX_JW_ITEMS, FX_JD_BLOCK, FX_JD_ITEMS, FX_JC_BLOCK, FX_JN_BLOCK,
// FX_JN_ITEMS, FX_JN_WORDS and FX_JN_RUNS from the Rust constants, then one struct per operator:
//
//   struct Op {
//     static constexpr int IN, INNER, KEY, OUT;  // arities, key length
//     static constexpr bool CAN_FAIL;  // some filter, or a projection that can fail
//     template <class A> static bool key(const A& a, u32* k);
//     template <class A, class B, class O> static bool emit(const A& a, const B& b, O& o);
//   };
//
// `a[c]` is input column c, `b[p]` the word at stored position p of the inner
// row, `o.set(c, v)` sets output column c; `key`/`emit` return false when the
// tuple is dropped (a failing expression or filter). Everything here is
// instantiated for that struct, so column indices are constants and rows of
// up to REG_ROW words stay in registers (wider rows are read where used).
//
// Appending: a block evaluates its items, then reserves room for the rows it
// keeps with ONE atomicAdd on the u64 counter (a block-wide scan gives each
// thread its place). When nothing can fail (no filters, no division) the count
// of a block is known up front, so there is no scan: row k of the block goes
// to base + k, which keeps rows in order and stores coalesced.
//
// Alignment: rows of arity 2 and 4 are read and written as uint2 / uint4, so
// `in`, `rows` and `out` must be aligned to 8 (16) bytes for those arities, as
// for the hand-written kernels.

// One run of an index for P_anti (the same layout as codegen::RunDesc in Rust).
struct RunDesc {
  u64 rows;    // const u32*: rows in index order
  u64 starts;  // const u32*: HISA key starts
  u64 table;   // const u32*: HISA hash table
  u32 mask;    // table size - 1
  u32 pad;
  u64 n;       // rows in the run (0: empty, the pointers are not read)
};

namespace fxk {

constexpr u32 FULL = 0xFFFFFFFFu;
// Input and inner rows of at most this arity are held in registers; wider
// rows are read from memory (L1) where a column is used.
constexpr int REG_ROW = 8;
// Outputs of at most this many words per thread are kept in registers between
// evaluating the filters and writing (otherwise the row is evaluated again).
constexpr int HOLD_WORDS = 16;

// ---- rows -----------------------------------------------------------------------

template <int N, bool REG = (N <= REG_ROW)>
struct RowOf {
  u32 w[N > 0 ? N : 1];
  __device__ __forceinline__ void load(const u32* __restrict__ p, u64 i) {
    if constexpr (N == 2) {
      uint2 v = reinterpret_cast<const uint2*>(p)[i];
      w[0] = v.x;
      w[1] = v.y;
    } else if constexpr (N == 4) {
      uint4 v = reinterpret_cast<const uint4*>(p)[i];
      w[0] = v.x;
      w[1] = v.y;
      w[2] = v.z;
      w[3] = v.w;
    } else {
#pragma unroll
      for (int c = 0; c < N; c++) w[c] = p[i * N + c];
    }
  }
  __device__ __forceinline__ u32 operator[](int c) const { return w[c]; }
};

template <int N>
struct RowOf<N, false> {
  const u32* p;
  __device__ __forceinline__ void load(const u32* __restrict__ q, u64 i) { p = q + i * N; }
  __device__ __forceinline__ u32 operator[](int c) const { return p[c]; }
};

// The inner row of an operator that has none (Scan, Filter).
struct NoRow {
  __device__ __forceinline__ u32 operator[](int) const { return 0u; }
};

// ---- outputs ----------------------------------------------------------------------

template <int N>
struct RegSink {
  u32 w[N > 0 ? N : 1];
  __device__ __forceinline__ void set(int c, u32 v) { w[c] = v; }
};
struct NullSink {
  __device__ __forceinline__ void set(int, u32) {}
};
struct PtrSink {
  u32* p;
  __device__ __forceinline__ void set(int c, u32 v) { p[c] = v; }
};

template <int N>
__device__ __forceinline__ void put_row(u32* __restrict__ out, u64 pos, const u32* w) {
  if constexpr (N == 2) {
    reinterpret_cast<uint2*>(out)[pos] = make_uint2(w[0], w[1]);
  } else if constexpr (N == 4) {
    reinterpret_cast<uint4*>(out)[pos] = make_uint4(w[0], w[1], w[2], w[3]);
  } else {
#pragma unroll
    for (int c = 0; c < N; c++) out[pos * N + c] = w[c];
  }
}

// Evaluates the projection of a row known to pass and writes it at `pos`.
template <class OP, class A, class B>
__device__ __forceinline__ void emit_to(const A& a, const B& b, u32* __restrict__ out, u64 pos) {
  constexpr int OUT = OP::OUT;
  if constexpr (OUT == 0) {
    return;
  } else if constexpr (OUT <= REG_ROW) {
    RegSink<OUT> s;
    OP::emit(a, b, s);
    put_row<OUT>(out, pos, s.w);
  } else {
    PtrSink s{out + pos * OUT};
    OP::emit(a, b, s);
  }
}

// Copies a (held or pointed-to) row of N words to out[pos].
template <int N, bool REG>
__device__ __forceinline__ void copy_row(const RowOf<N, REG>& r, u32* __restrict__ out, u64 pos) {
  if constexpr (N == 0) {
    return;
  } else if constexpr (REG) {
    put_row<N>(out, pos, r.w);
  } else {
    for (int c = 0; c < N; c++) out[pos * N + c] = r.p[c];
  }
}

// ---- reserving room -------------------------------------------------------------

__device__ __forceinline__ u32 warp_inclusive(u32 v, u32 lane) {
#pragma unroll
  for (u32 d = 1; d < 32; d <<= 1) {
    u32 t = __shfl_up_sync(FULL, v, d);
    if (lane >= d) v += t;
  }
  return v;
}

// Every thread of the block calls this with its count `c` of rows to write;
// the block's rows are reserved with one atomicAdd, in thread order. Returns
// where the thread's first row goes relative to the block's first row, which
// is *sbase; the block's row count is sw[B / 32]. `sw`: B / 32 + 1 words of
// shared memory.
template <int B>
__device__ __forceinline__ u32 block_reserve(u32 c, u64* count, u32* sw, u64* sbase) {
  constexpr u32 NW = B / 32;
  static_assert(B % 32 == 0 && NW <= 32, "block size");
  const u32 lane = threadIdx.x & 31u, w = threadIdx.x >> 5;
  u32 incl = warp_inclusive(c, lane);
  if (lane == 31) sw[w] = incl;
  __syncthreads();
  if (w == 0) {
    u32 v = lane < NW ? sw[lane] : 0u;
    u32 s = warp_inclusive(v, lane);
    if (lane < NW) sw[lane] = s - v;
    if (lane == 31) {
      sw[NW] = s;
      *sbase = s ? atomicAdd(count, (u64)s) : 0ull;
    }
  }
  __syncthreads();
  return sw[w] + incl - c;
}

// The same for items in row order r = R0 + j * B + t (item j of thread t):
// `ball[j]` is the warp's ballot of its kept items j. Leaves in cnt[j * NW + w]
// where warp w's kept items j start after the block's base, which it returns.
// `cnt`: I * B / 32 words of shared memory.
template <int B, int I>
__device__ __forceinline__ u64 block_reserve_ballots(const u32 (&ball)[I], u64* count, u32* cnt, u64* sbase) {
  constexpr u32 NW = B / 32, M = I * NW;
  const u32 lane = threadIdx.x & 31u, w = threadIdx.x >> 5;
  if (lane == 0) {
#pragma unroll
    for (int j = 0; j < I; j++) cnt[j * NW + w] = __popc(ball[j]);
  }
  __syncthreads();
  if (w == 0) {
    u32 carry = 0;
    for (u32 c0 = 0; c0 < M; c0 += 32) {
      u32 idx = c0 + lane;
      u32 v = idx < M ? cnt[idx] : 0u;
      u32 s = warp_inclusive(v, lane);
      if (idx < M) cnt[idx] = carry + s - v;
      carry += __shfl_sync(FULL, s, 31);
    }
    if (lane == 0) *sbase = carry ? atomicAdd(count, (u64)carry) : 0ull;
  }
  __syncthreads();
  return *sbase;
}

// ---- P_map -------------------------------------------------------------------------

template <class OP>
__device__ __forceinline__ void map_kernel(const u32* __restrict__ in, u64 n, u32* __restrict__ out, u64* count) {
  constexpr int B = FX_MAP_BLOCK, I = FX_MAP_ITEMS, IN = OP::IN, OUT = OP::OUT;
  constexpr u32 NW = B / 32;
  __shared__ u32 cnt[I * NW];
  __shared__ u64 sbase;
  const u64 r0 = (u64)blockIdx.x * (B * I);
  if constexpr (!OP::CAN_FAIL) {
    // Every row is kept: row r goes to base + (r - r0).
    if (threadIdx.x == 0) {
      u64 m = n > r0 ? n - r0 : 0ull;
      if (m > (u64)(B * I)) m = B * I;
      sbase = m ? atomicAdd(count, m) : 0ull;
    }
    __syncthreads();
    const u64 base = sbase;
#pragma unroll
    for (int j = 0; j < I; j++) {
      u64 r = r0 + (u64)j * B + threadIdx.x;
      if (r < n) {
        RowOf<IN> a;
        a.load(in, r);
        emit_to<OP>(a, NoRow{}, out, base + (r - r0));
      }
    }
  } else {
    constexpr bool HOLD = OUT * I <= HOLD_WORDS;
    const u32 lane = threadIdx.x & 31u, w = threadIdx.x >> 5;
    u32 ball[I];
    RegSink<HOLD ? OUT : 0> held[HOLD ? I : 1];
#pragma unroll
    for (int j = 0; j < I; j++) {
      u64 r = r0 + (u64)j * B + threadIdx.x;
      bool keep = false;
      if (r < n) {
        RowOf<IN> a;
        a.load(in, r);
        if constexpr (HOLD) {
          keep = OP::emit(a, NoRow{}, held[j]);
        } else {
          NullSink s;
          keep = OP::emit(a, NoRow{}, s);
        }
      }
      ball[j] = __ballot_sync(FULL, keep);
    }
    const u64 base = block_reserve_ballots<B, I>(ball, count, cnt, &sbase);
    const u32 lt = (1u << lane) - 1u;
#pragma unroll
    for (int j = 0; j < I; j++) {
      if ((ball[j] >> lane) & 1u) {
        u64 pos = base + cnt[j * NW + w] + __popc(ball[j] & lt);
        if constexpr (HOLD) {
          put_row<OUT>(out, pos, held[j].w);
        } else {
          RowOf<IN> a;
          a.load(in, r0 + (u64)j * B + threadIdx.x);
          emit_to<OP>(a, NoRow{}, out, pos);
        }
      }
    }
  }
}

// ---- P_jcount ----------------------------------------------------------------------

template <class OP>
__device__ __forceinline__ void jcount_kernel(const u32* __restrict__ in, u64 n, const u32* __restrict__ rows,
                                              const u32* __restrict__ starts, const u32* __restrict__ table, u32 mask,
                                              u64 rows_n, u32* __restrict__ counts, u32* __restrict__ begins) {
  constexpr int KEY = OP::KEY;
  const u64 i = (u64)blockIdx.x * FX_JC_BLOCK + threadIdx.x;
  if (i >= n) return;
  u32 c = 0, b = 0;
  if constexpr (KEY == 0) {
    c = (u32)rows_n;
  } else {
    if (rows_n != 0) {
      RowOf<OP::IN> a;
      a.load(in, i);
      u32 key[KEY];
      if (OP::key(a, key)) {
        u32 e;
        hisa_find<OP::INNER>(rows, starts, table, mask, (u32)KEY, key, b, e);
        c = e - b;
      }
    }
  }
  counts[i] = c;
  begins[i] = b;
}

// ---- staging ------------------------------------------------------------------------

// Rows of one or two words that a block writes at consecutive places go
// through shared memory first, so that the stores to global memory are
// coalesced (a thread's own rows are consecutive, so storing them directly
// would make every warp store touch 32 scattered places). One pad slot per
// 32 words keeps the threads' scattered puts free of bank conflicts.
#ifndef FX_STAGE
#define FX_STAGE 1
#endif

template <int OUT>
struct Stage {
  static_assert(OUT == 1 || OUT == 2, "staged rows have one or two words");
  static constexpr u32 PAD_ROWS = 32 / OUT;
  // u64 words of shared memory for `rows` rows.
  __host__ __device__ static constexpr u32 words64(u32 rows) { return (rows + rows / PAD_ROWS) * OUT / 2 + 1; }
  __device__ static __forceinline__ void put(u64* mem, u32 r, const u32* w) {
    u32 slot = r + r / PAD_ROWS;
    if constexpr (OUT == 2) reinterpret_cast<uint2*>(mem)[slot] = make_uint2(w[0], w[1]);
    else reinterpret_cast<u32*>(mem)[slot] = w[0];
  }
  // The block's `m` staged rows to out[base ..]; all threads call it.
  template <int B>
  __device__ static __forceinline__ void flush(const u64* mem, u32 m, u32* __restrict__ out, u64 base) {
    for (u32 r = threadIdx.x; r < m; r += B) {
      u32 slot = r + r / PAD_ROWS;
      if constexpr (OUT == 2) reinterpret_cast<uint2*>(out)[base + r] = reinterpret_cast<const uint2*>(mem)[slot];
      else out[base + r] = reinterpret_cast<const u32*>(mem)[slot];
    }
  }
};

// ---- P_jwrite ------------------------------------------------------------------------

// A launch writes the candidates [kbase, total) of a join (a window: the host runs a
// large join window by window into a buffer sized for what the windows keep, not for
// every candidate); `total` is the window's end, not necessarily the last candidate's.

// Where candidate k comes from: input row i (the last with offsets[i] <= k),
// whose candidates are [start, next), matched with inner rows from b.
template <class OP>
struct Cursor {
  u64 i, start, next;
  u32 b;
  RowOf<OP::IN> a;

  __device__ __forceinline__ void seek(const u32* __restrict__ in, u64 n, const u32* __restrict__ begins,
                                       const u32* __restrict__ offsets, u64 total, u64 k) {
    u64 lo = 0, hi = n;
    while (hi - lo > 1) {
      u64 mid = (lo + hi) >> 1;
      if (offsets[mid] <= k) lo = mid;
      else hi = mid;
    }
    i = lo;
    start = offsets[i];
    next = i + 1 < n ? (u64)offsets[i + 1] : total;
    b = begins[i];
    a.load(in, i);
  }
  // Moves forward to candidate k (at or after the current one). Input rows without
  // candidates lie between, as many as the join is selective (millions of rows of a
  // large input whose few matches are far apart): they are skipped by galloping then
  // bisecting over `offsets`, O(log gap) loads, not walked one by one.
  __device__ __forceinline__ void advance(const u32* __restrict__ in, u64 n, const u32* __restrict__ begins,
                                          const u32* __restrict__ offsets, u64 total, u64 k) {
    if (k < next) return;
    // offsets[i + 1] == next <= k: the row of k is the last row r > i with offsets[r] <= k.
    u64 lo = i + 1, hi = n, step = 1;
    while (lo + step < n) {
      if ((u64)offsets[lo + step] > k) {
        hi = lo + step;
        break;
      }
      lo += step;
      step <<= 1;
    }
    while (hi - lo > 1) {
      u64 mid = (lo + hi) >> 1;
      if ((u64)offsets[mid] <= k) lo = mid;
      else hi = mid;
    }
    i = lo;
    start = offsets[i];
    next = i + 1 < n ? (u64)offsets[i + 1] : total;
    a.load(in, i);
    b = begins[i];
  }
  __device__ __forceinline__ u64 inner(u64 k) const { return (u64)(b + (u32)(k - start)); }
};

template <class OP, int B, int I>
__device__ __forceinline__ void jwrite_kernel(const u32* __restrict__ in, u64 n, const u32* __restrict__ rows,
                                              const u32* __restrict__ begins, const u32* __restrict__ offsets,
                                              u64 kbase, u64 total, u32* __restrict__ out, u64* count) {
  constexpr int OUT = OP::OUT, INNER = OP::INNER;
  static_assert(I <= 32, "a thread's kept candidates are a 32-bit mask");
  constexpr bool HOLD = OUT * I <= HOLD_WORDS;
  constexpr bool STAGE = FX_STAGE && HOLD && (OUT == 1 || OUT == 2);
  constexpr u32 CAP = B * I;
  __shared__ u32 sw[B / 32 + 1];
  __shared__ u64 sbase;
  __shared__ u64 stage[STAGE ? Stage<STAGE ? OUT : 1>::words64(CAP) : 1];
  const u64 K0 = kbase + (u64)blockIdx.x * CAP;
  const u64 k0 = K0 + (u64)threadIdx.x * I;
  if constexpr (!OP::CAN_FAIL) {
    // Every candidate is kept: candidate k goes to base + (k - K0).
    u64 m = total > K0 ? total - K0 : 0ull;
    if (m > (u64)CAP) m = CAP;
    if (threadIdx.x == 0) sbase = m ? atomicAdd(count, m) : 0ull;
    __syncthreads();
    const u64 base = sbase;
    if constexpr (OUT > 0) {
      if (k0 < total) {
        Cursor<OP> cur;
        cur.seek(in, n, begins, offsets, total, k0);
#pragma unroll
        for (int j = 0; j < I; j++) {
          u64 k = k0 + j;
          if (k < total) {
            cur.advance(in, n, begins, offsets, total, k);
            RowOf<INNER> bb;
            bb.load(rows, cur.inner(k));
            if constexpr (STAGE) {
              RegSink<OUT> s;
              OP::emit(cur.a, bb, s);
              Stage<OUT>::put(stage, (u32)(k - K0), s.w);
            } else {
              emit_to<OP>(cur.a, bb, out, base + (k - K0));
            }
          }
        }
      }
      if constexpr (STAGE) {
        __syncthreads();
        Stage<OUT>::template flush<B>(stage, (u32)m, out, base);
      }
    }
  } else {
    u32 keep = 0;
    RegSink<HOLD ? OUT : 0> held[HOLD ? I : 1];
    Cursor<OP> cur;
    if (k0 < total) {
      cur.seek(in, n, begins, offsets, total, k0);
      Cursor<OP> first = cur;
#pragma unroll
      for (int j = 0; j < I; j++) {
        u64 k = k0 + j;
        if (k < total) {
          cur.advance(in, n, begins, offsets, total, k);
          RowOf<INNER> bb;
          bb.load(rows, cur.inner(k));
          bool ok;
          if constexpr (HOLD) {
            ok = OP::emit(cur.a, bb, held[j]);
          } else {
            NullSink s;
            ok = OP::emit(cur.a, bb, s);
          }
          if (ok) keep |= 1u << j;
        }
      }
      cur = first;
    }
    u32 local = block_reserve<B>(__popc(keep), count, sw, &sbase);
    if constexpr (OUT > 0) {
      if constexpr (STAGE) {
#pragma unroll
        for (int j = 0; j < I; j++)
          if ((keep >> j) & 1u) Stage<OUT>::put(stage, local++, held[j].w);
        __syncthreads();
        Stage<OUT>::template flush<B>(stage, sw[B / 32], out, sbase);
      } else {
        u64 pos = sbase + local;
#pragma unroll
        for (int j = 0; j < I; j++) {
          if ((keep >> j) & 1u) {
            if constexpr (HOLD) {
              put_row<OUT>(out, pos, held[j].w);
            } else {
              u64 k = k0 + j;
              cur.advance(in, n, begins, offsets, total, k);
              RowOf<INNER> bb;
              bb.load(rows, cur.inner(k));
              emit_to<OP>(cur.a, bb, out, pos);
            }
            pos++;
          }
        }
      }
    }
  }
}

// ---- P_jwrite_distinct -------------------------------------------------------------

// As jwrite, but a block drops outputs of one or two words that it already
// wrote: a shared-memory hash set of the (packed) rows, about 1.44 slots per
// candidate. A row is dropped only when the very same row is already in the
// set, that is, was kept by this block, so the set of rows written is the
// same. The input rows are sorted, so repeats are mostly close together.
constexpr u32 JD_SLOTS_WANTED = (u32)FX_JD_BLOCK * FX_JD_ITEMS * 23u / 16u;
constexpr u32 JD_SLOTS = JD_SLOTS_WANTED < 5888u ? JD_SLOTS_WANTED : 5888u;  // 46 KiB at most
constexpr u32 JD_PROBES = 64u;
constexpr u64 JD_EMPTY = 0xFFFFFFFFFFFFFFFFull;

// Whether `key` was not yet in the set (and is now), or cannot be held.
__device__ __forceinline__ bool jd_insert(u64* table, u64 key, u32 hash) {
  if (key == JD_EMPTY) return true;
  u32 h = (u32)(((u64)hash * JD_SLOTS) >> 32);
  for (u32 p = 0; p < JD_PROBES; p++) {
    u64 cur = table[h];
    if (cur == key) return false;
    if (cur == JD_EMPTY) {
      cur = atomicCAS(&table[h], JD_EMPTY, key);
      if (cur == JD_EMPTY) return true;  // inserted: this thread writes it
      if (cur == key) return false;
    }
    h = h + 1 == JD_SLOTS ? 0 : h + 1;
  }
  return true;  // table region full: keep (a repeat is harmless)
}

// The rows a distinct join already wrote in this write (every block, every window):
// a device-wide cache of `slots` packed rows (0 < slots < 2^32), one slot per hash,
// in global memory (sized to stay in L2). A row found in its slot is dropped;
// otherwise the thread writes it and puts it in the slot (atomicExch), evicting what
// was there. Sound: the first thread to put a row in a slot found another row there
// and writes it, so whoever finds the row later drops a row that is written. An
// evicted row may be written again (a repeat is harmless: the caller deduplicates).

// Whether the row `key` must be written (it was not in its slot, and now is).
__device__ __forceinline__ bool seen_insert(u64* seen, u64 slots, u64 key, u32 hash) {
  if (key == JD_EMPTY) return true;
  // Another mix than the block's table: keys that share a block slot spread here.
  const u64 h = ((u64)hash_final(hash ^ 0x85ebca6bu) * slots) >> 32;
  if (seen[h] == key) return false;  // a plain read spares the atomic for most repeats
  return atomicExch(&seen[h], key) != key;
}

template <class OP>
__device__ __forceinline__ void jdedup_kernel(const u32* __restrict__ in, u64 n, const u32* __restrict__ rows,
                                              const u32* __restrict__ begins, const u32* __restrict__ offsets,
                                              u64 kbase, u64 total, u32* __restrict__ out, u64* count,
                                              u64* seen, u64 seen_slots, u64* seen_drops) {
  constexpr int B = FX_JD_BLOCK, I = FX_JD_ITEMS, OUT = OP::OUT, INNER = OP::INNER;
  static_assert(OUT == 1 || OUT == 2, "dedup of one or two words");
  static_assert(I <= 32, "a thread's kept candidates are a 32-bit mask");
  __shared__ u64 table[JD_SLOTS];
  __shared__ u32 sw[B / 32 + 1];
  __shared__ u64 sbase;
  for (u32 s = threadIdx.x; s < JD_SLOTS; s += B) table[s] = JD_EMPTY;
  __syncthreads();
  const u64 k0 = kbase + ((u64)blockIdx.x * B + threadIdx.x) * I;
  RegSink<OUT> held[I];
  u32 keep = 0, drops = 0;
  if (k0 < total) {
    Cursor<OP> cur;
    cur.seek(in, n, begins, offsets, total, k0);
#pragma unroll
    for (int j = 0; j < I; j++) {
      u64 k = k0 + j;
      if (k < total) {
        cur.advance(in, n, begins, offsets, total, k);
        RowOf<INNER> bb;
        bb.load(rows, cur.inner(k));
        if (OP::emit(cur.a, bb, held[j])) {
          u64 key;
          u32 h;
          if constexpr (OUT == 2) {
            key = ((u64)held[j].w[0] << 32) | held[j].w[1];
            h = hash_final(hash_mix(hash_mix(0x9747b28cu, held[j].w[0]), held[j].w[1]));
          } else {
            key = held[j].w[0];
            h = hash_final(hash_mix(0x9747b28cu, held[j].w[0]));
          }
          if (jd_insert(table, key, h)) {
            if (seen_slots == 0 || seen_insert(seen, seen_slots, key, h))
              keep |= 1u << j;
            else
              drops++;
          }
        }
      }
    }
  }
  if (seen_slots != 0) {
    const u32 lane = threadIdx.x & 31u, d = warp_inclusive(drops, lane);
    if (lane == 31 && d) atomicAdd(seen_drops, (u64)d);
  }
  u32 local = block_reserve<B>(__popc(keep), count, sw, &sbase);
  // The table is not read any more: it stages the kept rows.
  constexpr bool STAGE = FX_STAGE && Stage<OUT>::words64(B * I) <= JD_SLOTS;
  if constexpr (STAGE) {
#pragma unroll
    for (int j = 0; j < I; j++)
      if ((keep >> j) & 1u) Stage<OUT>::put(table, local++, held[j].w);
    __syncthreads();
    Stage<OUT>::template flush<B>(table, sw[B / 32], out, sbase);
  } else {
    u64 pos = sbase + local;
#pragma unroll
    for (int j = 0; j < I; j++)
      if ((keep >> j) & 1u) put_row<OUT>(out, pos++, held[j].w);
  }
}

template <class OP>
__device__ __forceinline__ void jwrite_distinct_kernel(const u32* __restrict__ in, u64 n, const u32* __restrict__ rows,
                                                       const u32* __restrict__ begins, const u32* __restrict__ offsets,
                                                       u64 kbase, u64 total, u32* __restrict__ out, u64* count,
                                                       u64* seen, u64 seen_slots, u64* seen_drops) {
  if constexpr (OP::OUT == 1 || OP::OUT == 2) {
    jdedup_kernel<OP>(in, n, rows, begins, offsets, kbase, total, out, count, seen, seen_slots, seen_drops);
  } else {
    (void)seen;
    (void)seen_slots;
    (void)seen_drops;
    jwrite_kernel<OP, FX_JD_BLOCK, FX_JD_ITEMS>(in, n, rows, begins, offsets, kbase, total, out, count);
  }
}

// ---- P_jnew -------------------------------------------------------------------------

// A join of two output columns absorbed into a relation `old` of two columns, whose
// output's first column is input column G (`old`: sorted runs of rows (x, y)). Block b
// takes the candidates of input rows [starts[b], starts[b + 1]) (starts[nblocks] is n),
// which share x = a[G] (the caller cuts blocks where a[G] changes), and keeps a bitmap
// of the second output column over [lo, lo + 32 * words) in shared memory: set first
// from old's rows (x, y), then test-and-set by every candidate that passes the filters;
// a row is written only where its bit was clear, so what a block writes is not in
// `old` and not written twice by the block. (Blocks that share x may write the same
// row: the caller deduplicates.) Rows are reserved as P_jwrite's, and written only
// below `cap` (the count goes on, so the caller sees that the buffer was short and
// runs the launch again into a larger one: what a launch writes does not depend on
// the order of its blocks). count[1] += candidates that passed the filters; count[2]
// += those whose second column fell outside the bitmap (the caller then must not use
// the output).
constexpr u32 JN_WORDS = FX_JN_WORDS;  // (codegen::JN_WORDS: 8192 words, 32 KiB)
constexpr u32 JN_RUNS = FX_JN_RUNS;    // runs of `old` at most

template <class OP, int G>
__device__ __forceinline__ void jnew_kernel(const u32* __restrict__ in, u64 n, const u32* __restrict__ rows,
                                            const u32* __restrict__ begins, const u32* __restrict__ offsets,
                                            u64 total, const u32* __restrict__ starts, u64 nblocks,
                                            const u64* __restrict__ olds, u32 nolds, u32 lo, u32 words,
                                            u32* __restrict__ out, u64 cap, u64* count) {
  constexpr int B = FX_JN_BLOCK, I = FX_JN_ITEMS, INNER = OP::INNER;
  static_assert(OP::OUT == 2, "P_jnew writes rows of two words");
  static_assert(G < OP::IN, "the group column is an input column");
  static_assert(I <= 32, "a thread's kept candidates are a 32-bit mask");
  __shared__ u32 bm[JN_WORDS];
  __shared__ u64 span[JN_RUNS][2];
  __shared__ u32 sw[B / 32 + 1];
  __shared__ u64 sbase;
  const u64 b = blockIdx.x;
  if (b >= nblocks || words > JN_WORDS || nolds > JN_RUNS) return;
  const u64 r0 = starts[b], r1 = b + 1 < nblocks ? (u64)starts[b + 1] : n;
  const u64 K0 = offsets[r0], K1 = r1 < n ? (u64)offsets[r1] : total;
  if (K0 >= K1) return;  // (the whole block)
  const u32 x = in[r0 * OP::IN + G];
  const u32 nbits = words * 32u;
  for (u32 w = threadIdx.x; w < words; w += B) bm[w] = 0u;
  if (threadIdx.x < nolds) {
    // old's rows with first column x: [s, e) of run threadIdx.x.
    const u32* r = reinterpret_cast<const u32*>(olds[2 * threadIdx.x]);
    const u64 m = olds[2 * threadIdx.x + 1];
    u64 l = 0, h = m;
    while (l < h) {
      u64 mid = (l + h) >> 1;
      if (r[2 * mid] < x) l = mid + 1;
      else h = mid;
    }
    const u64 s = l;
    h = m;
    while (l < h) {
      u64 mid = (l + h) >> 1;
      if (r[2 * mid] <= x) l = mid + 1;
      else h = mid;
    }
    span[threadIdx.x][0] = s;
    span[threadIdx.x][1] = l;
  }
  __syncthreads();
  for (u32 q = 0; q < nolds; q++) {
    const u32* r = reinterpret_cast<const u32*>(olds[2 * q]);
    for (u64 i = span[q][0] + threadIdx.x; i < span[q][1]; i += B) {
      const u32 d = r[2 * i + 1] - lo;
      if (d < nbits) atomicOr(&bm[d >> 5], 1u << (d & 31u));
    }
  }
  __syncthreads();
  u32 passed = 0, outside = 0;
  Cursor<OP> cur;
  bool placed = false;
  for (u64 t0 = K0; t0 < K1; t0 += (u64)B * I) {
    const u64 k0 = t0 + (u64)threadIdx.x * I;
    u32 keep = 0;
    RegSink<2> held[I];
    if (k0 < K1) {
      if (!placed) {
        cur.seek(in, n, begins, offsets, total, k0);
        placed = true;
      }
#pragma unroll
      for (int j = 0; j < I; j++) {
        const u64 k = k0 + j;
        if (k < K1) {
          cur.advance(in, n, begins, offsets, total, k);
          RowOf<INNER> bb;
          bb.load(rows, cur.inner(k));
          if (OP::emit(cur.a, bb, held[j])) {
            passed++;
            const u32 d = held[j].w[1] - lo;
            if (d >= nbits) {
              outside++;
            } else {
              const u32 bit = 1u << (d & 31u);
              if (!(atomicOr(&bm[d >> 5], bit) & bit)) keep |= 1u << j;
            }
          }
        }
      }
    }
    const u32 local = block_reserve<B>(__popc(keep), count, sw, &sbase);
    u64 pos = sbase + local;
#pragma unroll
    for (int j = 0; j < I; j++) {
      if ((keep >> j) & 1u) {
        if (pos < cap) put_row<2>(out, pos, held[j].w);
        pos++;
      }
    }
    __syncthreads();  // (sw and sbase are reserved again by the next tile)
  }
  const u32 lane = threadIdx.x & 31u;
  const u32 p = warp_inclusive(passed, lane), o = warp_inclusive(outside, lane);
  if (lane == 31) {
    if (p) atomicAdd(&count[1], (u64)p);
    if (o) atomicAdd(&count[2], (u64)o);
  }
}

// ---- P_anti ------------------------------------------------------------------------

template <class OP, class A>
__device__ __forceinline__ bool anti_keeps(const A& a, const RunDesc* __restrict__ runs, u32 nruns) {
  constexpr int KEY = OP::KEY;
  if constexpr (KEY == 0) {
    for (u32 q = 0; q < nruns; q++)
      if (runs[q].n != 0) return false;
    return true;
  } else {
    u32 key[KEY];
    if (!OP::key(a, key)) return true;
    for (u32 q = 0; q < nruns; q++) {
      const RunDesc d = runs[q];
      if (d.n == 0) continue;
      u32 b, e;
      hisa_find<OP::INNER>(reinterpret_cast<const u32*>(d.rows), reinterpret_cast<const u32*>(d.starts),
                           reinterpret_cast<const u32*>(d.table), d.mask, (u32)KEY, key, b, e);
      if (e > b) return false;
    }
    return true;
  }
}

template <class OP>
__device__ __forceinline__ void anti_kernel(const u32* __restrict__ in, u64 n, const RunDesc* __restrict__ runs,
                                            u32 nruns, u32* __restrict__ out, u64* count) {
  constexpr int B = FX_MAP_BLOCK, I = FX_MAP_ITEMS, IN = OP::IN;
  constexpr u32 NW = B / 32;
  constexpr bool HOLD = IN <= REG_ROW && IN * I <= HOLD_WORDS;
  __shared__ u32 cnt[I * NW];
  __shared__ u64 sbase;
  const u64 r0 = (u64)blockIdx.x * (B * I);
  const u32 lane = threadIdx.x & 31u, w = threadIdx.x >> 5;
  u32 ball[I];
  RowOf<HOLD ? IN : 0> held[HOLD ? I : 1];
#pragma unroll
  for (int j = 0; j < I; j++) {
    u64 r = r0 + (u64)j * B + threadIdx.x;
    bool keep = false;
    if (r < n) {
      RowOf<IN> a;
      a.load(in, r);
      keep = anti_keeps<OP>(a, runs, nruns);
      if constexpr (HOLD) held[j] = a;
    }
    ball[j] = __ballot_sync(FULL, keep);
  }
  const u64 base = block_reserve_ballots<B, I>(ball, count, cnt, &sbase);
  const u32 lt = (1u << lane) - 1u;
#pragma unroll
  for (int j = 0; j < I; j++) {
    if ((ball[j] >> lane) & 1u) {
      u64 pos = base + cnt[j * NW + w] + __popc(ball[j] & lt);
      if constexpr (HOLD) {
        copy_row(held[j], out, pos);
      } else {
        RowOf<IN> a;
        a.load(in, r0 + (u64)j * B + threadIdx.x);
        copy_row(a, out, pos);
      }
    }
  }
}

}  // namespace fxk
