# A lab instrument (round 23, CuPy on the GPU machine: python3 probe_cost.py): what an exact membership test
# against a full relation would cost inside a join's write, beside what the absorbed join's output costs today
# (sorting it). Shaped like SG CA-HepTh's largest second join: ~70M full rows as u64 keys, 93.5M candidates
# (94% present), 58.7M kept by the join's own deduplication.
import cupy as cp, time
def timed(f, reps=5):
    f(); cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(); cp.cuda.Device().synchronize(); ts.append(time.perf_counter() - t)
    return min(ts) * 1e3
rng = cp.random.default_rng(1)
nodes = 10_000
full = cp.unique(rng.integers(0, nodes * nodes, size=80_000_000, dtype=cp.uint64))[:70_900_000]
full = (full // nodes) << 32 | (full % nodes)
full.sort()
present = full[rng.integers(0, full.size, size=88_000_000)]
absent = ((rng.integers(0, nodes, size=5_500_000, dtype=cp.uint64)) << 32) | rng.integers(nodes, 2 * nodes, size=5_500_000, dtype=cp.uint64)
cand = cp.concatenate([present, absent]); cand = cand[cp.random.permutation(cand.size)]
kept = cand[:58_700_000].copy()
print(f"full {full.size/1e6:.1f}M rows, candidates {cand.size/1e6:.1f}M, kept {kept.size/1e6:.1f}M")
t_search = timed(lambda: cp.searchsorted(full, cand))
# candidates grouped as a join makes them: per input row, one y and an ascending run of x
grouped = cp.sort(cand.reshape(-1, 16), axis=1).ravel()
t_search_g = timed(lambda: cp.searchsorted(full, grouped))
t_sort = timed(lambda: cp.sort(kept))
t_copy = timed(lambda: kept.copy())
print(f"| what | ms |\n|---|---|\n| binary search of {cand.size/1e6:.1f}M candidates in {full.size/1e6:.1f}M rows (random order) | {t_search:.2f} |\n| the same, candidates in ascending runs of 16 | {t_search_g:.2f} |\n| sort of the {kept.size/1e6:.1f}M rows kept (cupy radix sort, u64) | {t_sort:.2f} |\n| copy of those rows | {t_copy:.2f} |")
