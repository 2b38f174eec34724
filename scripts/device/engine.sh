#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, after scripts/gpu.sh packed .carry/.
# The CUDA backend through the product (steps, default: conformance tests engine):
#   conformance  the operator interface's conformance suite on the CUDA backend, then
#                again with the device pool capped at 64 MiB
#   tests        the fixlog crate's suites with FIXLOG_TEST_BACKEND=cuda: golden cases,
#                backend selection, random differential programs (FIXLOG_DIFF_CASES,
#                default 300), scale tests, real-data TC/SG (all graphs of the suite,
#                the ones CI skips as slow included)
#   lowmem       golden and small real-data suites with the GPU capped at LOWMEM bytes
#                (default 128 MiB), the larger real-data graphs at LOWMEM_BIG (default 2 GiB)
#   engine       TC and SG on the shared graphs through `fixlog run --backend cuda`
#                (GRAPHS: comma list; REPS, default 1; LIMIT: --gpu-memory-limit;
#                FIXLOG_BIN: another fixlog binary, e.g. an older build to compare)
#   output       the same with outputs written (end-to-end), on OUTPUT_GRAPHS (TC)
#   cpu          the same graphs on the CPU backend of this machine (16 cores)
#   cspa         CSPA on generated facts (CSPA_PRESETS, default httpd), GPU against CPU
# Step time limits: T_CONF (240 s), T_TESTS (400 s), T_ENGINE (400 s), T_CSPA (300 s).
set -u
ROOT=$PWD
C=$ROOT/.carry
OUT=${OUT:-/tmp/fixlog-out}; mkdir -p "$OUT"
export FIXLOG_KERNEL_CACHE=/tmp/fixlog-kernels RUST_BACKTRACE=1
# Kernels compiled by an earlier call (fresh machines start with an empty disk cache):
# scripts/gpu.sh packs the latest $OUT/kernels.tgz it finds; this call's cache goes back
# the same way.
mkdir -p /tmp/fixlog-kernels
[ -f "$C/kernels.tgz" ] && tar xzf "$C/kernels.tgz" -C /tmp/fixlog-kernels 2>/dev/null
trap 'tar czf "$OUT/kernels.tgz" -C /tmp/fixlog-kernels . 2>/dev/null' EXIT
# Binaries packed compressed by scripts/gpu.sh.
[ -f "$C/bin.tgz" ] && tar xzf "$C/bin.tgz" -C "$C"
# The test binaries find the repository and the fixlog binary at the paths they were
# built with: recreate those.
if [ -f "$C/paths" ]; then
  . "$C/paths"
  if [ "$BUILD_ROOT" != "$ROOT" ] && [ ! -e "$BUILD_ROOT" ]; then mkdir -p "$(dirname "$BUILD_ROOT")"; ln -s "$ROOT" "$BUILD_ROOT"; fi
  mkdir -p "$(dirname "$BUILD_BIN")"; cp "$C/fixlog" "$BUILD_BIN"
fi
export FIXLOG_DATA=$C/data
STEPS=("$@"); [ ${#STEPS[@]} -eq 0 ] && STEPS=(conformance tests engine)
date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
summary=()
for s in "${STEPS[@]}"; do
  echo "=== $s"; t0=$(date +%s)
  case "$s" in
    conformance)
      timeout ${T_CONF:-240} "$C/cuda_conformance" > "$OUT/conformance.log" 2>&1; echo "rc=$?"
      grep -E "^(FAIL|PASS)|conformance on" "$OUT/conformance.log"
      timeout ${T_CONF:-240} "$C/cuda_conformance" --memory-limit $((64<<20)) > "$OUT/conformance-64m.log" 2>&1; echo "rc (64 MiB)=$?"
      grep -E "^FAIL|conformance on" "$OUT/conformance-64m.log"
      summary+=("conformance: $(tail -1 "$OUT/conformance.log" | cut -c1-60) | 64 MiB: $(tail -1 "$OUT/conformance-64m.log" | cut -c1-60)");;
    tests)
      for t in golden backends differential scale real_data patterns match_backends match_data; do
        [ -x "$C/tests/$t" ] || { echo "no test binary $t"; continue; }
        extra=""; [ $t = real_data ] && extra=--include-ignored
        FIXLOG_TEST_BACKEND=cuda FIXLOG_DIFF_CASES=${FIXLOG_DIFF_CASES:-300} timeout ${T_TESTS:-400} "$C/tests/$t" $extra --test-threads ${TEST_THREADS:-2} > "$OUT/test-$t.log" 2>&1
        rc=$?; r=$(grep -E "^test result" "$OUT/test-$t.log" | tail -1)
        echo "$t rc=$rc $r"; summary+=("tests $t (cuda): rc=$rc $r")
        [ $rc -ne 0 ] && grep -E "panicked|FAILED|failed|differs|error" "$OUT/test-$t.log" | head -20
      done;;
    lowmem)
      for t in golden real_data real_data_big; do
        bin=$t; limit=${LOWMEM:-$((128<<20))}; extra=""
        [ $t = real_data_big ] && { bin=real_data; limit=${LOWMEM_BIG:-$((2<<30))}; extra=--ignored; }
        FIXLOG_TEST_BACKEND=cuda FIXLOG_TEST_GPU_MEMORY_LIMIT=$limit timeout ${T_TESTS:-400} "$C/tests/$bin" $extra --test-threads 1 > "$OUT/lowmem-$t.log" 2>&1
        rc=$?; r=$(grep -E "^test result" "$OUT/lowmem-$t.log" | tail -1)
        echo "$t (limit $limit) rc=$rc $r"; summary+=("lowmem $t (limit $limit): rc=$rc $r")
        [ $rc -ne 0 ] && grep -E "panicked|FAILED|differs|error" "$OUT/lowmem-$t.log" | head -20
      done;;
    engine)
      timeout ${T_ENGINE:-400} python3 "$C/bench_engine.py" "${FIXLOG_BIN:-$C/fixlog}" "$C/data" --backend cuda \
        --reps ${REPS:-1} ${GRAPHS:+--graphs "$GRAPHS"} ${QUERIES:+--queries "$QUERIES"} \
        ${LIMIT:+--limit "$LIMIT"} > "$OUT/engine.log" 2>&1; echo "rc=$?"
      summary+=("engine: see table");;
    output)
      timeout ${T_ENGINE:-400} python3 "$C/bench_engine.py" "$C/fixlog" "$C/data" --backend cuda --queries TC \
        --graphs "${OUTPUT_GRAPHS:-SF.cedge,fe_body,p2p-Gnutella31}" --output > "$OUT/output.log" 2>&1; echo "rc=$?";;
    cpu)
      timeout ${T_ENGINE:-400} python3 "$C/bench_engine.py" "$C/fixlog" "$C/data" --backend cpu \
        --graphs "${CPU_GRAPHS:-cal.cedge,ego-Facebook,SF.cedge}" > "$OUT/cpu.log" 2>&1; echo "rc=$?";;
    cspa)
      for p in ${CSPA_PRESETS:-httpd}; do
        d=/tmp/cspa-$p; mkdir -p $d/out-gpu $d/out-cpu
        "$C/cspa_gen" --preset $p --out $d > /dev/null || { echo "cspa_gen failed"; continue; }
        /usr/bin/time -v timeout ${T_CSPA:-300} "$C/fixlog" run "$C/cspa.dl" -F $d -D $d/out-gpu --backend cuda --stats > "$OUT/cspa-$p-gpu.log" 2>&1; echo "gpu rc=$?"
        /usr/bin/time -v timeout ${T_CSPA:-300} "$C/fixlog" run "$C/cspa.dl" -F $d -D $d/out-cpu --backend cpu --stats > "$OUT/cspa-$p-cpu.log" 2>&1; echo "cpu rc=$?"
        if diff -rq $d/out-gpu $d/out-cpu > /dev/null; then same=identical; else same=DIFFERENT; fi
        echo "cspa $p: outputs $same"; grep -E "^[A-Za-z]+\s[0-9]+$|total|peak|phases|Maximum resident" "$OUT/cspa-$p-gpu.log" "$OUT/cspa-$p-cpu.log"
        summary+=("cspa $p: GPU vs CPU outputs $same")
      done;;
    match)
      # `fixlog match` on the GPU against the CPU (16 cores): counts must agree; time of
      # the whole process and the matcher's own time (--stats). MATCH_GRAPHS: SNAP-style
      # edge lists under data/patterns/snap or data/graphs (read as undirected).
      for g in ${MATCH_GRAPHS:-email-Enron ego-Facebook wiki-Vote loc-Brightkite CA-HepTh p2p-Gnutella31 usroads}; do
        f=$(ls "$C"/data/patterns/snap/$g.txt.gz "$C"/data/graphs/$g.tsv.gz 2>/dev/null | head -1)
        [ -n "$f" ] || { echo "no graph $g"; continue; }
        for q in tri4 tri clique4 cycle4; do
          case $q in
            tri) pat='MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)';;
            tri4) pat='MATCH (a)--(b)--(c)--(a) RETURN count(*)';;
            clique4) pat='MATCH (a)--(b)--(c)--(a), (a)--(d), (b)--(d), (c)--(d) WHERE id(a) < id(b) AND id(b) < id(c) AND id(c) < id(d) RETURN count(*)';;
            cycle4) pat='MATCH (a)--(b)--(c)--(d)--(a) WHERE id(a) < id(b) AND id(a) < id(c) AND id(a) < id(d) AND id(b) < id(d) RETURN count(*)';;
          esac
          line="$g $q"
          for b in cuda cpu; do
            t0=$(date +%s.%N)
            r=$(timeout ${T_MATCH:-120} "$C/fixlog" match --edges "$f" --undirected --backend $b --stats "$pat" 2>"$OUT/match-$g-$q-$b.err")
            rc=$?; t1=$(date +%s.%N)
            m=$(grep -o "match [0-9.]* s" "$OUT/match-$g-$q-$b.err" | head -1)
            line="$line | $b rc=$rc count=$r ${m} process $(awk "BEGIN{printf \"%.3f\", $t1 - $t0}") s"
          done
          echo "$line"; summary+=("match: $line")
        done
      done;;
    *) echo "unknown step $s";;
  esac
  echo "($s: $(( $(date +%s) - t0 ))s)"
done
echo; echo "##### summary"
for l in "${summary[@]}"; do echo "$l"; done
for f in engine output cpu; do [ -f "$OUT/$f.log" ] && sed -n '/^## fixlog run/,$p' "$OUT/$f.log"; done
exit 0
