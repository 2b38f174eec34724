#!/usr/bin/env bash
# Runs on the GPU machine from the repository root (packed by scripts/gpu.sh).
# Steps: selftest bench cub tc (default: all). Logs go to $OUT when set.
# Step time limits: T_SELFTEST (300 s), T_BENCH (400 s), T_CUB (300 s), T_TC (500 s).
set -u
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/fixlog-out}; mkdir -p "$OUT"
export FIXLOG_KERNEL_CACHE=/tmp/fixlog-kernels PYTHONUNBUFFERED=1
STEPS=(); MAXLOG=9; GRAPHS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --max-log) MAXLOG=$2; shift 2;;
    --graphs) GRAPHS=$2; shift 2;;
    *) STEPS+=("$1"); shift;;
  esac
done
[ ${#STEPS[@]} -eq 0 ] && STEPS=(selftest bench cub tc)
date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv,noheader
for s in "${STEPS[@]}"; do
  echo "=== $s"; t0=$(date +%s)
  case "$s" in
    selftest) timeout ${T_SELFTEST:-300} ./gpu_selftest > "$OUT/selftest.log" 2>&1; echo "rc=$?"; grep -E "^(FAIL|PASS|kernels|pool|probe)|passed" "$OUT/selftest.log" | head -60;;
    bench) timeout ${T_BENCH:-400} ./gpu_bench "$MAXLOG" > "$OUT/bench.log" 2>&1; echo "rc=$?";;
    cub) timeout ${T_CUB:-300} python3 cub_sort.py "$MAXLOG" > "$OUT/cub.log" 2>&1; echo "rc=$?";;
    tc) timeout ${T_TC:-500} ./tc --data data $GRAPHS > "$OUT/tc.log" 2>&1; echo "rc=$?"; grep -v "^|" "$OUT/tc.log" | tail -15;;
  esac
  echo "($s: $(( $(date +%s) - t0 ))s)"
done
echo; echo "##### summary"
for s in "${STEPS[@]}"; do
  case "$s" in
    selftest) tail -1 "$OUT/selftest.log";;
    bench) sed -n '/^## primitives/,$p' "$OUT/bench.log"; grep "copy bandwidth" "$OUT/bench.log"; tail -3 "$OUT/bench.log" | grep -iv "^|" ;;
    cub) sed -n '/^## CUB/,$p' "$OUT/cub.log"; tail -2 "$OUT/cub.log" | grep -v "^|";;
    tc) sed -n '/^| graph/,$p' "$OUT/tc.log"; grep -i "error" "$OUT/tc.log" | head -5;;
  esac
done
