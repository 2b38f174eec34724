#!/usr/bin/env bash
# Runs on the GPU machine from the repository root (packed by scripts/gpu.sh).
# Steps: selftest bench cub tc (default: all), and on request:
#   merge  merge/difference-only bench at 10^8 and 10^9, once per environment
#          setting in $VARIANTS (space-separated; A=1,B=2 sets two in one
#          setting; default: one run with no extra setting)
#   ncu    Nsight Compute metrics (duration, DRAM %, occupancy, stall reasons)
#          of the merge/difference kernels at 10^8, per variant, if ncu exists
#          (NCU_CLOCK=none: at the boost clock, as the bench runs)
# Logs go to $OUT when set.
# Step time limits: T_SELFTEST (300 s), T_BENCH (400 s), T_CUB (300 s), T_TC (500 s),
# T_MERGE (300 s), T_NCU (240 s).
set -u
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/fixlog-out}; mkdir -p "$OUT"
export FIXLOG_KERNEL_CACHE=/tmp/fixlog-kernels PYTHONUNBUFFERED=1
C=$PWD
# Kernels compiled by an earlier call, and this call's going back (see
# scripts/device/kernels.sh, packed beside this script).
. "$C/kernels.sh"
kernels_restore /tmp/fixlog-kernels
trap 'kernels_save /tmp/fixlog-kernels' EXIT
STEPS=(); MAXLOG=9; GRAPHS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --max-log) MAXLOG=$2; shift 2;;
    --graphs) GRAPHS=$2; shift 2;;
    *) STEPS+=("$1"); shift;;
  esac
done
[ ${#STEPS[@]} -eq 0 ] && STEPS=(selftest bench cub tc)
# merge/ncu: one run per setting in $VARIANTS, or one run with none
read -ra VARS <<< "${VARIANTS:-}"; [ ${#VARS[@]} -eq 0 ] && VARS=("")
date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv,noheader
for s in "${STEPS[@]}"; do
  echo "=== $s"; t0=$(date +%s)
  case "$s" in
    selftest) timeout ${T_SELFTEST:-300} ./gpu_selftest > "$OUT/selftest.log" 2>&1; echo "rc=$?"; grep -E "^(FAIL|PASS|kernels|pool|probe)|passed" "$OUT/selftest.log" | head -60;;
    bench) timeout ${T_BENCH:-400} ./gpu_bench "$MAXLOG" > "$OUT/bench.log" 2>&1; echo "rc=$?";;
    cub) timeout ${T_CUB:-300} python3 cub_sort.py "$MAXLOG" > "$OUT/cub.log" 2>&1; echo "rc=$?";;
    tc) timeout ${T_TC:-500} ./tc --data data $GRAPHS > "$OUT/tc.log" 2>&1; echo "rc=$?"; grep -v "^|" "$OUT/tc.log" | tail -15;;
    merge)
      for v in "${VARS[@]}"; do
        env ${v//,/ } FIXLOG_BENCH_MERGE=1 timeout ${T_MERGE:-300} ./gpu_bench "$MAXLOG" > "$OUT/merge${v:+-${v//[=,]/_}}.log" 2>&1
        echo "variant ${v:-default} rc=$?"
      done;;
    ncu)
      NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
      if [ -z "$NCU" ]; then echo "no ncu"; else
        M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__grid_size,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed.sum
        for st in barrier long_scoreboard short_scoreboard mio_throttle lg_throttle wait math_pipe_throttle not_selected selected membar no_instruction branch_resolving sleeping; do
          M=$M,smsp__average_warps_issue_stalled_${st}_per_issue_active.ratio; done
        for v in "${VARS[@]}"; do
          env ${v//,/ } FIXLOG_BENCH_MERGE=1 FIXLOG_BENCH_REPS=1 timeout ${T_NCU:-240} "$NCU" --kernel-name regex:"${NCU_KERNELS:-merge2|diff2|merge_partition}" \
            --clock-control "${NCU_CLOCK:-base}" --launch-count 12 --metrics "$M" ./gpu_bench 8 > "$OUT/ncu${v:+-${v//[=,]/_}}.log" 2>&1
          echo "variant ${v:-default} rc=$?"
        done
      fi;;
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
    merge) for f in "$OUT"/merge*.log; do echo "-- $f"; grep -E "copy bandwidth|^\| (merge|set difference|unique) \||rror" "$f" | cut -c1-80 | awk '!seen[$0]++'; done;;
    ncu) for f in "$OUT"/ncu*.log; do echo "-- $f"; python3 ncu_summary.py "$f"; grep -E "==ERR|rror" "$f" | head -3; done;;
  esac
done
