"""One line per profiled kernel from `ncu --metrics ...` text output: duration,
DRAM throughput (% of peak), active warps, occupancy limits, shared-memory
bank conflicts, and the four largest stall reasons (warps per issue)."""
import re
import sys

kernels = []
cur = None
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"^  ([A-Za-z_0-9]+) \((\d+), 1, 1\)x\((\d+), 1, 1\)", line)
    if m:
        cur = {"name": m.group(1), "grid": m.group(2), "m": {}}
        kernels.append(cur)
        continue
    m = re.match(r"^\s+([a-z_0-9.]+)\s+(\S*)\s+([0-9.,]+)\s*$", line)
    if m and cur is not None:
        cur["m"][m.group(1)] = (m.group(2), float(m.group(3).replace(",", "")))
for k in kernels:
    mm = k["m"]

    def g(key):
        for name, (unit, v) in mm.items():
            if name.startswith(key):
                return v, unit
        return float("nan"), ""

    dur, unit = g("gpu__time_duration")
    stalls = sorted(
        ((v, n.split("stalled_")[1].split("_per_issue")[0]) for n, (u, v) in mm.items() if "stalled_" in n),
        reverse=True,
    )[:4]
    print(
        f"{k['name']:<24} grid {k['grid']:>7} | {dur:9.1f} {unit:<5} | dram {g('dram__throughput')[0]:5.1f}% "
        f"| warps {g('sm__warps_active')[0]:5.1f}% | occ-lim reg {g('launch__occupancy_limit_registers')[0]:.0f} "
        f"smem {g('launch__occupancy_limit_shared_mem')[0]:.0f} | bank-confl {g('l1tex__data_bank_conflicts')[0]:.3g} "
        f"| stalls " + ", ".join(f"{n} {v:.2f}" for v, n in stalls)
    )
