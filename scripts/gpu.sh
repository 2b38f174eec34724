#!/usr/bin/env bash
# Build the fixlog-cuda GPU test/bench binaries here, pack them with the data
# they need into .carry/ (git-ignored), and print the device `run` call.
#   scripts/gpu.sh            build + pack
# On the GPU machine (device tool `run`, carry [".carry"]):
#   bash .carry/run.sh [selftest] [bench] [cub] [tc] [--max-log N] [--graphs "g1 g2"]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/work/target-cuda}
cargo build --release -p fixlog-cuda --features cuda,bench --examples
DATA=${FIXLOG_DATA:-../shared/data}
rm -rf .carry && mkdir -p .carry/data/graphs
for b in gpu_selftest gpu_bench tc; do cp "$CARGO_TARGET_DIR/release/examples/$b" .carry/; done
strip .carry/gpu_selftest .carry/gpu_bench .carry/tc 2>/dev/null || true
cp crates/fixlog-cuda/scripts/cub_sort.py crates/fixlog-cuda/scripts/ncu_summary.py crates/fixlog-cuda/scripts/run.sh .carry/
cp "$DATA/ground_truth.tsv" .carry/data/
cp "$DATA"/graphs/*.tsv.gz .carry/data/graphs/
du -sh .carry
cat <<'MSG'
packed .carry/. Now call the device tool:
  run(command: "bash .carry/run.sh", carry: [".carry"], timeout_s: 600)
(steps: selftest bench cub tc; e.g. "bash .carry/run.sh tc --graphs 'usroads fe_ocean'")
MSG
