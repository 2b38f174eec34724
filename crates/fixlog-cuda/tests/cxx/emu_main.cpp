// Driver of tests/kernels_emu.rs, appended to values_shim.h, cuda_emu.h and
// the generated module; the test puts the table FX_OPS of its operators in
// place of the marker line below. Reads jobs from
// stdin, runs the operator's kernels as the backend would (launch shapes of
// the contract, exclusive scan of the counts, HISA tables built with the
// module's own hisa_hash), writes what they produced to stdout.
//
// Job:  u32 op, u64 n, n * IN words;
//       join: u64 m, m * INNER words (one run, stored rows, sorted);
//       anti: u32 runs, per run u64 m and m * INNER words.
// Answer: map/anti: u64 count, count * OUT (IN) words;
//         join: u64 candidates, then for jwrite, jwrite_distinct with a cache of
//         written rows (`seen`) of 64 * candidates + 16 slots, and jwrite_distinct
//         with a cache of 7 slots: u64 count, count * OUT words (and for
//         jwrite_distinct u64 rows the set dropped).
// Job of P_jnew (op | JNEW_JOB): u32 op, u64 n, n * IN words (sorted: groups), u64 m,
//       m * INNER words (one index run), u32 runs, per run u64 r and r * 2 words (old,
//       sorted), u32 lo, u32 words, u64 stretch. Blocks start where the group column
//       changes or a new stretch of candidates begins (as jnew_blocks). Answer: u64
//       count, count * 2 words, u64 passed, u64 outside; then the count of a second
//       launch into a buffer of one row (it must count the same).
#include <vector>

struct FxOp {
  int kind;  // 0 map, 1 join, 2 anti
  int in, inner, key, out;
  void (*map)(const u32*, u64, u32*, u64*);
  void (*jcount)(const u32*, u64, const u32*, const u32*, const u32*, u32, u64, u32*, u32*);
  void (*jwrite)(const u32*, u64, const u32*, const u32*, const u32*, u64, u64, u32*, u64*);
  void (*jdistinct)(const u32*, u64, const u32*, const u32*, const u32*, u64, u64, u32*, u64*, u64*, u64, u64*);
  void (*anti)(const u32*, u64, const RunDesc*, u32, u32*, u64*);
  void (*jnew)(const u32*, u64, const u32*, const u32*, const u32*, u64, const u32*, u64, const u64*, u32, u32,
               u32, u32*, u64, u64*);
  int group;  // P_jnew's group column (-1: no P_jnew)
};
static const u32 JNEW_JOB = 0x80000000u;

@FX_OPS@

static bool rd(void* p, size_t bytes) { return bytes == 0 || fread(p, 1, bytes, stdin) == bytes; }
static void wr(const void* p, size_t bytes) {
  if (bytes) fwrite(p, 1, bytes, stdout);
}
static std::vector<u32> rd_words(u64 n) {
  std::vector<u32> v(n ? n : 1);
  if (!rd(v.data(), n * 4)) exit(3);
  return v;
}
static u64 blocks(u64 n, u64 per) { return (n + per - 1) / per; }

// A HISA over `m` stored rows of arity `a`, keyed by the first `kc` words (as
// Gpu::hisa_table builds it).
struct HostHisa {
  std::vector<u32> starts, table;
  u32 mask = 0;
};
static HostHisa build_hisa(const std::vector<u32>& rows, u64 m, int a, int kc) {
  HostHisa h;
  for (u64 i = 0; i < m; i++) {
    bool first = i == 0;
    for (int k = 0; k < kc && !first; k++) first = rows[i * a + k] != rows[(i - 1) * a + k];
    if (first) h.starts.push_back((u32)i);
  }
  u64 nkeys = h.starts.size();
  h.starts.push_back((u32)m);
  u64 size = 2;
  while (size < 2 * nkeys) size *= 2;
  h.table.assign(size, EMPTY_SLOT);
  h.mask = (u32)(size - 1);
  for (u64 j = 0; j < nkeys; j++) {
    u32 slot = hisa_hash(&rows[(u64)h.starts[j] * a], (u32)kc) & h.mask;
    while (h.table[slot] != EMPTY_SLOT) slot = (slot + 1) & h.mask;
    h.table[slot] = (u32)j;
  }
  return h;
}

static void answer_rows(const std::vector<u32>& out, u64 count, int arity) {
  wr(&count, 8);
  wr(out.data(), count * arity * 4);
}

static bool jnew_job(u32 opi) {
  if (opi >= sizeof(FX_OPS) / sizeof(FX_OPS[0])) exit(4);
  const FxOp& op = FX_OPS[opi];
  if (op.jnew == nullptr) exit(5);
  u64 n, m;
  if (!rd(&n, 8)) return false;
  std::vector<u32> input = rd_words(n * op.in);
  if (!rd(&m, 8)) return false;
  std::vector<u32> rows = rd_words(m * op.inner);
  u32 nruns;
  if (!rd(&nruns, 4)) return false;
  std::vector<std::vector<u32>> old(nruns);
  std::vector<u64> olds;
  for (u32 r = 0; r < nruns; r++) {
    u64 k;
    if (!rd(&k, 8)) return false;
    old[r] = rd_words(k * 2);
    olds.push_back((u64)(uintptr_t)old[r].data());
    olds.push_back(k);
  }
  olds.push_back(0);
  u32 lo, words;
  u64 stretch;
  if (!rd(&lo, 4) || !rd(&words, 4) || !rd(&stretch, 8)) return false;
  HostHisa h;
  if (op.key > 0) h = build_hisa(rows, m, op.inner, op.key);
  const u32* rp = m == 0 || op.inner == 0 ? nullptr : rows.data();
  const u32* sp = op.key > 0 ? h.starts.data() : nullptr;
  const u32* tp = op.key > 0 ? h.table.data() : nullptr;
  std::vector<u32> counts(n + 1), begins(n + 1), offsets(n + 1), starts;
  fx_launch(blocks(n, FX_JC_BLOCK), FX_JC_BLOCK,
            [&] { op.jcount(input.data(), n, rp, sp, tp, h.mask, m, counts.data(), begins.data()); });
  u64 total = 0;
  for (u64 i = 0; i < n; i++) {
    offsets[i] = (u32)total;
    total += counts[i];
  }
  // As jnew_blocks (misc.cu).
  for (u64 i = 0; i < n; i++) {
    bool first = i == 0 || input[i * op.in + op.group] != input[(i - 1) * op.in + op.group] ||
                 offsets[i] / stretch != offsets[i - 1] / stretch;
    if (first) starts.push_back((u32)i);
  }
  u64 nb = starts.size();
  starts.push_back(0);
  std::vector<u32> out(total * 2 + 2);
  u64 count[3] = {0, 0, 0};
  fx_launch(nb, FX_JN_BLOCK, [&] {
    op.jnew(input.data(), n, rp, begins.data(), offsets.data(), total, starts.data(), nb, olds.data(), nruns, lo,
            words, out.data(), total + 1, count);
  });
  answer_rows(out, count[0], 2);
  wr(&count[1], 8);
  wr(&count[2], 8);
  u64 again[3] = {0, 0, 0};
  fx_launch(nb, FX_JN_BLOCK, [&] {
    op.jnew(input.data(), n, rp, begins.data(), offsets.data(), total, starts.data(), nb, olds.data(), nruns, lo,
            words, out.data(), 1, again);
  });
  wr(&again[0], 8);
  return true;
}

int main() {
  u32 opi;
  while (fread(&opi, 4, 1, stdin) == 1) {
    if (opi & JNEW_JOB) {
      if (!jnew_job(opi & ~JNEW_JOB)) return 3;
      fflush(stdout);
      continue;
    }
    if (opi >= sizeof(FX_OPS) / sizeof(FX_OPS[0])) return 4;
    const FxOp& op = FX_OPS[opi];
    u64 n;
    if (!rd(&n, 8)) return 3;
    std::vector<u32> input = rd_words(n * op.in);
    const u32* in = op.in == 0 ? nullptr : input.data();  // the contract: may be 0
    if (op.kind == 0) {
      std::vector<u32> out(n * op.out + 1);
      u64 count = 0;
      fx_launch(blocks(n, FX_MAP_BLOCK * FX_MAP_ITEMS), FX_MAP_BLOCK, [&] { op.map(in, n, out.data(), &count); });
      answer_rows(out, count, op.out);
    } else if (op.kind == 1) {
      u64 m;
      if (!rd(&m, 8)) return 3;
      std::vector<u32> rows = rd_words(m * op.inner);
      HostHisa h;
      if (op.key > 0) h = build_hisa(rows, m, op.inner, op.key);
      const u32* rp = m == 0 || op.inner == 0 ? nullptr : rows.data();
      const u32* sp = op.key > 0 ? h.starts.data() : nullptr;
      const u32* tp = op.key > 0 ? h.table.data() : nullptr;
      std::vector<u32> counts(n + 1), begins(n + 1), offsets(n + 1);
      fx_launch(blocks(n, FX_JC_BLOCK), FX_JC_BLOCK,
                [&] { op.jcount(in, n, rp, sp, tp, h.mask, m, counts.data(), begins.data()); });
      u64 total = 0;
      for (u64 i = 0; i < n; i++) {
        offsets[i] = (u32)total;
        total += counts[i];
      }
      wr(&total, 8);
      for (int distinct = 0; distinct < 3; distinct++) {
        std::vector<u32> out(total * op.out + 1);
        u64 count = 0;
        // Kept across both windows, as the backend keeps it across one write's.
        std::vector<u64> seen(distinct == 1 ? 64 * total + 16 : 7, ~0ull);
        u64 drops = 0;
        // In two windows of candidates, [0, cut) and [cut, total), split off a block's
        // boundary, as the backend writes a join into a buffer smaller than its
        // candidates: the rows (and, for jwrite, their order) are those of one launch.
        // (Only past one block's candidates.)
        const u64 cut = total > (u64)FX_JD_BLOCK * FX_JD_ITEMS ? total / 3 : 0;
        const u64 win[3] = {0, cut, total};
        for (int w = 0; w < 2; w++) {
          const u64 from = win[w], to = win[w + 1];
          if (to == from) continue;
          if (distinct)
            fx_launch(blocks(to - from, FX_JD_BLOCK * FX_JD_ITEMS), FX_JD_BLOCK, [&] {
              op.jdistinct(in, n, rp, begins.data(), offsets.data(), from, to, out.data(), &count, seen.data(),
                           (u64)seen.size(), &drops);
            });
          else
            fx_launch(blocks(to - from, FX_JW_BLOCK * FX_JW_ITEMS), FX_JW_BLOCK, [&] {
              op.jwrite(in, n, rp, begins.data(), offsets.data(), from, to, out.data(), &count);
            });
        }
        answer_rows(out, count, op.out);
        if (distinct) wr(&drops, 8);
      }
    } else {
      u32 nruns;
      if (!rd(&nruns, 4)) return 3;
      std::vector<std::vector<u32>> rows(nruns);
      std::vector<HostHisa> hisa(nruns);
      std::vector<RunDesc> runs(nruns);
      for (u32 r = 0; r < nruns; r++) {
        u64 m;
        if (!rd(&m, 8)) return 3;
        rows[r] = rd_words(m * op.inner);
        RunDesc d{};
        d.n = m;
        if (m > 0) {
          d.rows = (u64)(uintptr_t)rows[r].data();
          if (op.key > 0) {
            hisa[r] = build_hisa(rows[r], m, op.inner, op.key);
            d.starts = (u64)(uintptr_t)hisa[r].starts.data();
            d.table = (u64)(uintptr_t)hisa[r].table.data();
            d.mask = hisa[r].mask;
          }
        }
        runs[r] = d;
      }
      std::vector<u32> out(n * op.in + 1);
      u64 count = 0;
      fx_launch(blocks(n, FX_MAP_BLOCK * FX_MAP_ITEMS), FX_MAP_BLOCK,
                [&] { op.anti(in, n, runs.data(), nruns, out.data(), &count); });
      answer_rows(out, count, op.in);
    }
    fflush(stdout);
  }
  return 0;
}
