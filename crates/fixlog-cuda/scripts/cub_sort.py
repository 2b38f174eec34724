"""CUB's device radix sort on the same GPU, through CuPy (cupy.sort: keys-only,
CUB/Thrust radix sort) and PyTorch (torch.sort: returns indices too).
Prints a markdown table: n, dtype, ms, Mkeys/s."""
import sys, time
import cupy as cp

maxlog = int(sys.argv[1]) if len(sys.argv) > 1 else 9
rows = []
def bench(fn, reps):
    ts = []
    for _ in range(reps):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record(); fn(); e.record(); e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e))
    ts.sort(); return ts[len(ts) // 2]
for lg in range(6, maxlog + 1):
    n = 10 ** lg
    for dt in (cp.uint32, cp.uint64):
        x = cp.random.randint(0, 2**63 - 1, size=n, dtype=cp.int64).astype(dt)
        if dt == cp.uint64:
            x = x ^ (x << 1)
        cp.sort(x); cp.cuda.Device().synchronize()
        ms = bench(lambda: cp.sort(x), 3 if lg >= 9 else 5)
        rows.append(f"| cupy.sort | {cp.dtype(dt).name} | {n:.0e} | {ms:.3f} | {n/ms/1e6:.2f} |")
        print(rows[-1], flush=True)
        del x
        cp.get_default_memory_pool().free_all_blocks()
try:
    import torch
    for lg in range(6, maxlog + 1):
        n = 10 ** lg
        for dt in (torch.int32, torch.int64):
            x = torch.randint(-2**31 if dt == torch.int32 else -2**62, 2**31 - 1 if dt == torch.int32 else 2**62, (n,), dtype=dt, device="cuda")
            torch.sort(x); torch.cuda.synchronize()
            ts = []
            for _ in range(3 if lg >= 9 else 5):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); torch.sort(x); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
            ts.sort(); ms = ts[len(ts) // 2]
            rows.append(f"| torch.sort (+indices) | {str(dt).split('.')[1]} | {n:.0e} | {ms:.3f} | {n/ms/1e6:.2f} |")
            print(rows[-1], flush=True)
            del x; torch.cuda.empty_cache()
except Exception as ex:
    print("torch:", ex)
print("\n## CUB radix sort (same GPU)\n| sort | dtype | n | ms | Gkeys/s |\n|---|---|---|---|---|")
print("\n".join(rows))
