#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, after scripts/gpu.sh packed .carry/.
# The CUDA backend through the product (steps, default: conformance tests engine):
#   conformance  the operator interface's conformance suite on the CUDA backend, then
#                again with the device pool capped at 64 MiB
#   tests        the fixlog crate's suites with FIXLOG_TEST_BACKEND=cuda: golden cases,
#                backend selection, random differential programs (FIXLOG_DIFF_CASES,
#                default 80: 300 did not finish in the step's 400 s on an H100, 80 took
#                253 s, round 22), scale tests, real-data TC/SG (all graphs of the suite,
#                the ones CI skips as slow included)
#   lowmem       golden and small real-data suites with the GPU capped at LOWMEM bytes
#                (default 128 MiB), the larger real-data graphs at LOWMEM_BIG (default 2 GiB)
#   fullfirst    SG through the `full_first` example: the product's choice of full-first
#                plans, by size, never, always (FF_GRAPHS, FF_LIMITS: "none 1G ...",
#                FF_CHOICES, REPS)
#   engine       TC and SG on the shared graphs through `fixlog run --backend cuda`
#                (GRAPHS: comma list; REPS, default 1; LIMIT: --gpu-memory-limit;
#                FIXLOG_BIN: another fixlog binary, e.g. an older build to compare)
#   output       the same with outputs written (end-to-end), on OUTPUT_GRAPHS (TC)
#   cpu          the same graphs on the CPU backend of this machine (16 cores)
#   cspa         CSPA on generated facts (CSPA_PRESETS, default httpd), GPU against CPU
#   cspa_ab      CSPA (CSPA_PRESETS) through the packed binary and another (CSPA_B, default
#                .carry/new/fixlog), alternately, REPS times: time, phases, same outputs
#   output_ab    TC with its output written (OUTPUT_GRAPHS, default fe_body p2p-Gnutella31)
#                through the packed binary (A) and another (OUTPUT_B, default
#                .carry/old/fixlog), into each of OUTPUT_DIRS (default /dev/shm /tmp):
#                wall time and the unload and write phases, the two outputs compared
#                byte for byte; the disk's and memory's write speed (dd) first
#   profile      CSPA (PROFILE_PRESET, default httpd) under Nsight Systems when present:
#                the GPU kernels' time by name, and the CUDA API calls (syncs, copies)
#   bigmatch     triangles and 4-cliques of a large random power-law graph made here
#                (BIG_NODES, BIG_EDGES; default 4M nodes, 32M undirected edges), GPU
#                against CPU (BIG_BACKENDS), edges per second
#   matchprof    the GPU matcher on that graph (MATCHPROF_QUERY: tri or clique4) under
#                Nsight Compute: kernel time by name
# Step time limits: T_CONF (240 s), T_TESTS (400 s), T_ENGINE (400 s), T_CSPA (300 s),
# each cut to what is left of DEADLINE_S (default 570 s from the start, inside the
# device's 600 s a call): a step that would outrun the call is cut short, later steps
# are skipped, and the summary and the kernel cache are still written (round 31's first
# call lost both when the device's limit struck mid-step).
set -u
END=$(( $(date +%s) + ${DEADLINE_S:-570} ))
# The seconds a step may take: its own limit, or what is left before END (15 s kept for
# the summary and the kernel cache), whichever is less.
lim() { local l=$(( END - $(date +%s) - 15 )); [ $l -lt 1 ] && l=1; [ "$1" -lt $l ] && echo "$1" || echo $l; }
ROOT=$PWD
C=$ROOT/.carry
OUT=${OUT:-/tmp/fixlog-out}; mkdir -p "$OUT"
export FIXLOG_KERNEL_CACHE=/tmp/fixlog-kernels RUST_BACKTRACE=1
# Kernels compiled by an earlier call, and this call's going back (see kernels.sh).
. "$C/kernels.sh"
kernels_restore /tmp/fixlog-kernels
trap 'kernels_save /tmp/fixlog-kernels' EXIT
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
# Nsight Compute's per-kernel CSV (gpu__time_duration) summed by kernel name.
ncu_table() {
  python3 - "$1" <<'PY'
import csv, sys, io
lines = [l for l in open(sys.argv[1]) if l.startswith('"')]
rows = list(csv.DictReader(io.StringIO("".join(lines))))
tot = {}
for r in rows:
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    name = r.get("Kernel Name", "?").split("(")[0][:60]
    n = int(float(r.get("Invocations", "1") or 1))
    avg = float(str(r.get("Average", r.get("Metric Value", "0"))).replace(",", ""))
    unit = r.get("Metric Unit", "nsecond")
    scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}.get(unit, 1e-6)
    t, c = tot.get(name, (0.0, 0))
    tot[name] = (t + avg * n * scale, c + n)
all_ms = sum(t for t, _ in tot.values())
print(f"kernels: {sum(c for _, c in tot.values())} launches, {all_ms:.1f} ms on the device")
for name, (t, c) in sorted(tot.items(), key=lambda kv: -kv[1][0])[:20]:
    print(f"{100*t/max(all_ms,1e-9):5.1f}% {t:9.1f} ms {c:7d}  {name}")
PY
}
# The large random power-law graph of the bigmatch step (made once per machine).
big_graph() {
  n=${BIG_NODES:-4000000}; m=${BIG_EDGES:-32000000}; f=/tmp/big-$n-$m.tsv
  [ -f $f ] || python3 - $n $m $f <<'PY'
import sys, numpy as np
n, m, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(7)
# Chung-Lu style power-law graph: endpoints drawn with weight ~ rank^-0.6, plus locality
w = (np.arange(1, n + 1, dtype=np.float64)) ** -0.6; w /= w.sum()
perm = rng.permutation(n)
a = perm[rng.choice(n, size=m, p=w)]
b = perm[rng.choice(n, size=m, p=w)]
# half of the edges close local triangles: b near a in a random order
loc = rng.random(m) < 0.5
b[loc] = (a[loc] + rng.integers(1, 64, size=loc.sum())) % n
keep = a != b
try:
    import pandas as pd
    pd.DataFrame({"a": a[keep], "b": b[keep]}).to_csv(path, sep="\t", header=False, index=False)
except ImportError:
    np.savetxt(path, np.stack([a[keep], b[keep]], 1), fmt="%d", delimiter="\t")
PY
  echo $f
}
TRI='MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)'
CLIQUE4='MATCH (a)--(b)--(c)--(a), (a)--(d), (b)--(d), (c)--(d) WHERE id(a) < id(b) AND id(b) < id(c) AND id(c) < id(d) RETURN count(*)'
STEPS=("$@"); [ ${#STEPS[@]} -eq 0 ] && STEPS=(conformance tests engine)
date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
summary=()
for s in "${STEPS[@]}"; do
  echo "=== $s"; t0=$(date +%s)
  [ $(( END - t0 )) -lt 30 ] && { echo "skipped: DEADLINE_S reached"; summary+=("$s: skipped (DEADLINE_S)"); continue; }
  case "$s" in
    conformance)
      timeout $(lim ${T_CONF:-240}) "$C/cuda_conformance" > "$OUT/conformance.log" 2>&1; echo "rc=$?"
      grep -E "^(FAIL|PASS)|conformance on" "$OUT/conformance.log"
      timeout $(lim ${T_CONF:-240}) "$C/cuda_conformance" --memory-limit $((64<<20)) > "$OUT/conformance-64m.log" 2>&1; echo "rc (64 MiB)=$?"
      grep -E "^FAIL|conformance on" "$OUT/conformance-64m.log"
      summary+=("conformance: $(tail -1 "$OUT/conformance.log" | cut -c1-60) | 64 MiB: $(tail -1 "$OUT/conformance-64m.log" | cut -c1-60)");;
    tests)
      for t in ${SUITES:-golden backends differential scale real_data patterns match_backends match_data}; do
        [ -x "$C/tests/$t" ] || { echo "no test binary $t"; continue; }
        extra=""; [ $t = real_data ] && extra=--include-ignored
        FIXLOG_TEST_BACKEND=cuda FIXLOG_DIFF_CASES=${FIXLOG_DIFF_CASES:-80} timeout $(lim ${T_TESTS:-400}) "$C/tests/$t" $extra --test-threads ${TEST_THREADS:-2} > "$OUT/test-$t.log" 2>&1
        rc=$?; r=$(grep -E "^test result" "$OUT/test-$t.log" | tail -1)
        echo "$t rc=$rc $r"; summary+=("tests $t (cuda): rc=$rc $r")
        [ $rc -ne 0 ] && grep -E "panicked|FAILED|failed|differs|error" "$OUT/test-$t.log" | head -20
      done;;
    lowmem)
      for t in golden real_data real_data_big; do
        bin=$t; limit=${LOWMEM:-$((128<<20))}; extra=""
        [ $t = real_data_big ] && { bin=real_data; limit=${LOWMEM_BIG:-$((2<<30))}; extra=--ignored; }
        FIXLOG_TEST_BACKEND=cuda FIXLOG_TEST_GPU_MEMORY_LIMIT=$limit timeout $(lim ${T_TESTS:-400}) "$C/tests/$bin" $extra --test-threads 1 > "$OUT/lowmem-$t.log" 2>&1
        rc=$?; r=$(grep -E "^test result" "$OUT/lowmem-$t.log" | tail -1)
        echo "$t (limit $limit) rc=$rc $r"; summary+=("lowmem $t (limit $limit): rc=$rc $r")
        [ $rc -ne 0 ] && grep -E "panicked|FAILED|differs|error" "$OUT/lowmem-$t.log" | head -20
      done;;
    fullfirst)
      # SG with full-first plans at the product's choice, by size, never and always
      # (the `full_first` example, through the library API), without and with limits.
      printf '.decl edge(x: number, y: number)\n.input edge\n.decl sg(x: number, y: number)\n.printsize sg\nsg(x, y) :- edge(p, x), edge(p, y), x != y.\nsg(x, y) :- edge(a, x), sg(a, b), edge(b, y).\n' > /tmp/SG.dl
      for g in ${FF_GRAPHS:-CA-HepTh loc-Brightkite ego-Facebook fe_body}; do
        mkdir -p /tmp/ff/$g; [ -f /tmp/ff/$g/edge.facts ] || zcat "$C/data/graphs/$g.tsv.gz" > /tmp/ff/$g/edge.facts
        for l in ${FF_LIMITS:-none}; do
          echo "== SG $g, limit $l"
          timeout $(lim ${T_FF:-120}) "$C/full_first" /tmp/SG.dl /tmp/ff/$g --backend cuda --reps ${REPS:-1} \
            ${FF_CHOICES:+--choices $FF_CHOICES} $([ $l != none ] && echo --gpu-memory-limit $l) 2>&1 | tail -5
        done
      done | tee "$OUT/fullfirst.log"
      summary+=("fullfirst: see tables");;
    engine)
      timeout $(lim ${T_ENGINE:-400}) python3 "$C/bench_engine.py" "${FIXLOG_BIN:-$C/fixlog}" "$C/data" --backend cuda \
        --reps ${REPS:-1} ${GRAPHS:+--graphs "$GRAPHS"} ${QUERIES:+--queries "$QUERIES"} \
        ${LIMIT:+--limit "$LIMIT"} > "$OUT/engine.log" 2>&1; echo "rc=$?"
      summary+=("engine: see table");;
    output)
      timeout $(lim ${T_ENGINE:-400}) python3 "$C/bench_engine.py" "$C/fixlog" "$C/data" --backend cuda --queries TC \
        --graphs "${OUTPUT_GRAPHS:-SF.cedge,fe_body,p2p-Gnutella31}" --output > "$OUT/output.log" 2>&1; echo "rc=$?";;
    cpu)
      timeout $(lim ${T_ENGINE:-400}) python3 "$C/bench_engine.py" "$C/fixlog" "$C/data" --backend cpu \
        --graphs "${CPU_GRAPHS:-cal.cedge,ego-Facebook,SF.cedge}" > "$OUT/cpu.log" 2>&1; echo "rc=$?";;
    cspa)
      for p in ${CSPA_PRESETS:-httpd}; do
        d=/tmp/cspa-$p; mkdir -p $d/out-gpu $d/out-cpu
        "$C/cspa_gen" --preset $p --out $d > /dev/null || { echo "cspa_gen failed"; continue; }
        /usr/bin/time -v timeout $(lim ${T_CSPA:-300}) "$C/fixlog" run "$C/cspa.dl" -F $d -D $d/out-gpu --backend cuda --stats > "$OUT/cspa-$p-gpu.log" 2>&1; echo "gpu rc=$?"
        /usr/bin/time -v timeout $(lim ${T_CSPA:-300}) "$C/fixlog" run "$C/cspa.dl" -F $d -D $d/out-cpu --backend cpu --stats > "$OUT/cspa-$p-cpu.log" 2>&1; echo "cpu rc=$?"
        if diff -rq $d/out-gpu $d/out-cpu > /dev/null; then same=identical; else same=DIFFERENT; fi
        echo "cspa $p: outputs $same"; grep -E "^[A-Za-z]+\s[0-9]+$|total|peak|phases|Maximum resident" "$OUT/cspa-$p-gpu.log" "$OUT/cspa-$p-cpu.log"
        summary+=("cspa $p: GPU vs CPU outputs $same")
      done;;
    output_ab)
      B=${OUTPUT_B:-$C/old/fixlog}
      for d in ${OUTPUT_DIRS:-/dev/shm /tmp}; do
        echo "dd into $d: $(dd if=/dev/zero of=$d/dd.bin bs=16M count=256 2>&1 | tail -1)"; rm -f $d/dd.bin
      done
      printf '.decl edge(x: number, y: number)\n.input edge\n.decl path(x: number, y: number)\n.output path\npath(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n' > /tmp/TCout.dl
      for g in ${OUTPUT_GRAPHS:-fe_body p2p-Gnutella31}; do
        mkdir -p /tmp/oab/$g; [ -f /tmp/oab/$g/edge.facts ] || zcat "$C/data/graphs/$g.tsv.gz" > /tmp/oab/$g/edge.facts
        for d in ${OUTPUT_DIRS:-/dev/shm /tmp}; do
          for v in A B; do
            bin=$C/fixlog; [ $v = B ] && bin=$B
            rm -rf $d/oab-$v; mkdir -p $d/oab-$v
            /usr/bin/time -f "wall %e s" timeout $(lim ${T_ENGINE:-400}) "$bin" run /tmp/TCout.dl -F /tmp/oab/$g -D $d/oab-$v --backend cuda --stats --quiet > "$OUT/oab-$g-$v.log" 2>&1
            line="TC $g into $d, $v: rc=$? $(grep -E '^wall' "$OUT/oab-$g-$v.log") | $(grep -E '^phases' "$OUT/oab-$g-$v.log")"
            echo "$line"; summary+=("$line")
          done
          if cmp -s $d/oab-A/path.csv $d/oab-B/path.csv; then same=identical; else same=DIFFERENT; fi
          echo "TC $g into $d: A and B outputs $same ($(stat -c %s $d/oab-A/path.csv) bytes)"; summary+=("TC $g into $d: outputs $same")
          rm -rf $d/oab-A $d/oab-B
        done
      done;;
    cspa_ab)
      # CSPA through two builds alternately (A: the packed binary, B: CSPA_B, default
      # .carry/new/fixlog), REPS each (default 2): wall time, phases, outputs equal.
      B=${CSPA_B:-$C/new/fixlog}
      for p in ${CSPA_PRESETS:-httpd}; do
        d=/tmp/cspa-$p; mkdir -p $d
        [ -f $d/assign.facts ] || "$C/cspa_gen" --preset $p --out $d > /dev/null
        for r in $(seq ${REPS:-2}); do
          for v in A B; do
            bin=$C/fixlog; [ $v = B ] && bin=$B
            rm -rf $d/out-$v; mkdir -p $d/out-$v
            /usr/bin/time -f "wall %e s, max RSS %M KB" timeout $(lim ${T_CSPA:-300}) "$bin" run "$C/cspa.dl" -F $d -D $d/out-$v --backend cuda --stats > "$OUT/cspa-$p-$v-$r.log" 2>&1
            line="cspa $p $v rep $r: rc=$? $(grep -E '^wall' "$OUT/cspa-$p-$v-$r.log") | $(grep -E '^phases' "$OUT/cspa-$p-$v-$r.log") | $(grep -E 'peak device' "$OUT/cspa-$p-$v-$r.log")"
            echo "$line"; summary+=("$line")
          done
        done
        if diff -rq $d/out-A $d/out-B > /dev/null; then same=identical; else same=DIFFERENT; fi
        echo "cspa $p: A and B outputs $same"; summary+=("cspa $p: A and B outputs $same")
      done;;
    profile)
      p=${PROFILE_PRESET:-httpd}; d=/tmp/cspa-$p; mkdir -p $d/out-prof
      [ -f $d/assign.facts ] || "$C/cspa_gen" --preset $p --out $d > /dev/null
      NSYS=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
      NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
      if [ -z "$NSYS" ] && [ -n "$NCU" ]; then
        # No Nsight Systems on the machine: Nsight Compute, one metric (the kernel's
        # duration, one replay pass), summed per kernel name.
        timeout $(lim ${T_CSPA:-300}) "$NCU" --metrics gpu__time_duration.sum --csv --print-summary per-kernel \
          "$C/fixlog" run "$C/cspa.dl" -F $d -D $d/out-prof --backend cuda --stats > "$OUT/profile-$p.csv" 2> "$OUT/profile-$p.log"; echo "ncu rc=$?"
        grep -E "total|phases" "$OUT/profile-$p.log" | head -5
        ncu_table "$OUT/profile-$p.csv"
      elif [ -z "$NSYS" ]; then echo "no nsys or ncu here"; else
        timeout $(lim ${T_CSPA:-300}) "$NSYS" profile -t cuda -o "$OUT/cspa-$p" --force-overwrite true \
          "$C/fixlog" run "$C/cspa.dl" -F $d -D $d/out-prof --backend cuda --stats > "$OUT/profile-$p.log" 2>&1; echo "nsys rc=$?"
        grep -E "total|phases|join|dedup|merge" "$OUT/profile-$p.log" | head
        "$NSYS" stats -r cuda_gpu_kern_sum --format csv -o "$OUT/kern" "$OUT/cspa-$p.nsys-rep" > /dev/null 2>&1
        "$NSYS" stats -r cuda_api_sum --format csv -o "$OUT/api" "$OUT/cspa-$p.nsys-rep" > /dev/null 2>&1
        for f in "$OUT"/kern*.csv "$OUT"/api*.csv; do
          echo "-- $f"; python3 - "$f" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows[:18]:
    name = r.get("Name", "")[:70]
    print(f'{r.get("Time (%)","")[:5]:>6}% {float(r.get("Total Time (ns)", 0))/1e6:10.1f} ms {r.get("Instances", r.get("Num Calls","")):>8}  {name}')
PY
        done
        rm -f "$OUT"/cspa-$p.nsys-rep "$OUT"/*.sqlite
      fi;;
    bigmatch)
      f=$(big_graph)
      echo "graph $f: $(wc -l < $f) lines"
      for q in tri clique4; do
        case $q in
          tri) pat='MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)';;
          clique4) pat='MATCH (a)--(b)--(c)--(a), (a)--(d), (b)--(d), (c)--(d) WHERE id(a) < id(b) AND id(b) < id(c) AND id(c) < id(d) RETURN count(*)';;
        esac
        line="big $q"
        for b in ${BIG_BACKENDS:-cuda cpu}; do
          r=$(timeout $(lim ${T_MATCH:-120}) "$C/fixlog" match --edges "$f" --undirected --backend $b --stats "$pat" 2>"$OUT/big-$q-$b.err"); rc=$?
          line="$line | $b rc=$rc count=$r $(grep "fixlog match:" "$OUT/big-$q-$b.err" | sed 's/fixlog match: //')"
        done
        echo "$line"; summary+=("$line")
      done;;
    matchprof)
      f=$(big_graph); q=${MATCHPROF_QUERY:-tri}; pat=$TRI; [ $q = clique4 ] && pat=$CLIQUE4
      NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
      timeout $(lim ${T_MATCH:-300}) "$NCU" --metrics gpu__time_duration.sum --csv --print-summary per-kernel \
        "$C/fixlog" match --edges "$f" --undirected --backend cuda --stats "$pat" > "$OUT/matchprof-$q.csv" 2> "$OUT/matchprof-$q.log"; echo "ncu rc=$?"
      grep "fixlog match" "$OUT/matchprof-$q.log"
      ncu_table "$OUT/matchprof-$q.csv";;
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
            r=$(timeout $(lim ${T_MATCH:-120}) "$C/fixlog" match --edges "$f" --undirected --backend $b --stats "$pat" 2>"$OUT/match-$g-$q-$b.err")
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
for f in engine output cpu; do [ -f "$OUT/$f.log" ] && { echo "-- $f"; sed -n '/^## fixlog run/,$p' "$OUT/$f.log"; }; done
exit 0
