#!/usr/bin/env bash
# Build the GPU binaries here (no GPU needed: CUDA is loaded at run time), pack them with
# the data they need into .carry/ (git-ignored, at most 64 MiB travels), and print the
# device `run` calls.
#   scripts/gpu.sh
# On the GPU machine (device tool `run`, carry [".carry"]):
#   bash .carry/engine.sh [conformance] [tests] [lowmem] [engine] [output] [cpu] [cspa]
#       the CUDA backend through the product (see scripts/device/engine.sh)
#   bash .carry/run.sh [selftest] [bench] [cub] [tc] [--max-log N] [--graphs "g1 g2"]
#       the device layer's primitives and the hand-wired TC driver
#   bash .carry/ab.sh
#       A/B of two builds packed by hand as .carry/lab.bin.tgz (see scripts/device/ab.sh)
#   python3 .carry/probe_cost.py
#       the cost of an exact membership test inside a join's write (a lab instrument, round 23)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/work/target-cuda}
T=$CARGO_TARGET_DIR/release
cargo build --release -p fixlog-cuda --features cuda,bench --examples
cargo build --release -p fixlog --features cuda --bin fixlog --examples
# The fixlog crate's test binaries that engine.sh runs (paths from cargo's JSON
# messages); only those are built.
SUITES="golden backends differential scale real_data patterns match_backends match_data"
cargo test --release -p fixlog --features cuda --no-run --message-format=json \
    $(printf -- '--test %s ' $SUITES) 2>/dev/null > /tmp/fixlog-tests.json
DATA=${FIXLOG_DATA:-../shared/data}
rm -rf .carry && mkdir -p .carry/data/graphs .carry/tests
for b in gpu_selftest gpu_bench tc cuda_conformance codegen_gpu; do cp "$T/examples/$b" .carry/; done
cp "$T/fixlog" .carry/
[ -f "$T/examples/cspa_gen" ] && cp "$T/examples/cspa_gen" .carry/
cp "$T/examples/full_first" .carry/
[ -f examples/cspa/cspa.dl ] && cp examples/cspa/cspa.dl .carry/
python3 - "$PWD/.carry/tests" /tmp/fixlog-tests.json <<'PY'
import json, shutil, sys
for line in open(sys.argv[2]):
    m = json.loads(line)
    # only the suites engine.sh runs (64 MiB travel in all)
    if (m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]
            and m["target"]["name"] in ("golden", "backends", "differential", "scale", "real_data",
                                        "patterns", "match_backends", "match_data")):
        shutil.copy(m["executable"], sys.argv[1] + "/" + m["target"]["name"])
PY
strip .carry/gpu_selftest .carry/gpu_bench .carry/tc .carry/cuda_conformance .carry/codegen_gpu .carry/fixlog .carry/full_first .carry/tests/* 2>/dev/null || true
[ -f .carry/cspa_gen ] && strip .carry/cspa_gen
cat > .carry/paths <<P
BUILD_ROOT=$PWD
BUILD_BIN=$T/fixlog
P
cp crates/fixlog-cuda/scripts/cub_sort.py crates/fixlog-cuda/scripts/ncu_summary.py crates/fixlog-cuda/scripts/run.sh .carry/
cp scripts/device/engine.sh scripts/device/kernels.sh scripts/device/bench_engine.py scripts/device/ab.sh \
    scripts/device/probe_cost.py .carry/
# The kernel cache the latest device call brought back, in parts (see
# scripts/device/kernels.sh), if any.
K=$(ls -t ${FIXLOG_DEVICE_FILES:-/work/.device}/*/00kernels.txz.0 2>/dev/null | head -1 || true)
[ -n "$K" ] && cat "${K%.0}".? > .carry/kernels.txz
cp "$DATA/ground_truth.tsv" .carry/data/
cp "$DATA"/graphs/*.tsv.gz .carry/data/graphs/
# Pattern data for `fixlog match` (tests and the match step), without the large query sets.
mkdir -p .carry/data/patterns
cp "$DATA/patterns/MANIFEST.md" .carry/data/patterns/
for d in g2miner_citeseer snap sunluo_validate stmatch; do cp -r "$DATA/patterns/$d" .carry/data/patterns/; done
mkdir -p .carry/data/patterns/sunluo && cp -r "$DATA/patterns/sunluo/data_graph" .carry/data/patterns/sunluo/ 2>/dev/null || true
[ -d "$DATA/patterns/sunluo/computed_counts" ] && cp -r "$DATA/patterns/sunluo/computed_counts" .carry/data/patterns/sunluo/
[ -f "$DATA/patterns/sunluo/query_sets/hprd_queries.tar.gz" ] && mkdir -p .carry/data/patterns/sunluo/query_sets && cp "$DATA/patterns/sunluo/query_sets/hprd_queries.tar.gz" .carry/data/patterns/sunluo/query_sets/
# Binaries travel compressed (64 MiB limit); engine.sh unpacks them.
tar czf .carry/bin.tgz -C .carry fixlog full_first cuda_conformance tests && rm -rf .carry/fixlog .carry/full_first .carry/cuda_conformance .carry/tests
du -sh .carry
cat <<'MSG'
packed .carry/. Now call the device tool, e.g.:
  run(command: "bash .carry/engine.sh conformance tests engine", carry: [".carry"], timeout_s: 600)
  run(command: "bash .carry/run.sh selftest tc", carry: [".carry"], timeout_s: 600)
MSG
