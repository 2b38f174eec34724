#!/usr/bin/env bash
# Compile every CUDA kernel (all arity variants, and the generated operator
# kernels of codegen::coverage_ops as generated.ptx) with NVRTC for sm_90 and
# run ptxas -v on the PTX: compile errors, registers, spills and shared memory
# per kernel, without a GPU. Needs NVRTC + ptxas + CCCL headers; by default from a
# Python venv with the CUDA 13 wheels:
#   python3 -m venv /work/cudatools && /work/cudatools/bin/pip install \
#     "nvidia-cuda-nvrtc==13.*" "nvidia-cuda-nvcc==13.*" "nvidia-cuda-cccl==13.*"
#   scripts/kernel-check.sh [FILTER_REGEX]
set -euo pipefail
cd "$(dirname "$0")/.."
CU=${CUDA_WHEEL_ROOT:-$(ls -d /work/cudatools/lib/python3*/site-packages/nvidia/cu13 2>/dev/null | head -1)}
[ -d "$CU" ] || { echo "no CUDA wheel root (set CUDA_WHEEL_ROOT)"; exit 2; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/work/target-cuda}
cargo build -q --release -p fixlog-cuda --features cuda --example kernel_check
OUT=${OUT:-/tmp/fixlog-ptx}
rm -rf "$OUT"
LD_LIBRARY_PATH="$CU/lib:${LD_LIBRARY_PATH:-}" "$CARGO_TARGET_DIR/release/examples/kernel_check" "$OUT" sm_90 "$CU/include/cccl" "$CU/include"
for f in "$OUT"/*.ptx; do
  "$CU/bin/ptxas" -arch=sm_90 -v "$f" -o /dev/null 2>&1 |
    awk -v m="$(basename "$f" .ptx)" '/Compiling entry function/ {fn=$(NF-2); gsub(/\x27/,"",fn)}
      /bytes stack frame/ {sp=$5}
      /Used [0-9]+ registers/ {r=$5; sm=0; for(i=2;i<=NF;i++) if($i=="smem") sm=$(i-2);
        printf "%-14s %-26s regs %3s  spill-bytes %3s  smem %6s\n", m, fn, r, sp, sm}'
done | grep -E "${1:-.}" || true
