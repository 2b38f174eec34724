#!/usr/bin/env bash
# Round 30 (docs/gpu-results.md): a full-first plan's top level cut where its joins'
# refusals say (its input ordered first, its first piece the backend's), against the
# landed build. Runs from the repository root after scripts/gpu.sh packed .carry/
# (the build under test) and .carry/landed.tgz holds the landed build's `fixlog` and
# `full_first`. The variant (scripts/device/round30-variant.patch, in git history at
# a287ce7) was measured in round 31 and dropped; the script compares any packed build
# with a landed one. To pack both, from a clean checkout of main:
#   cargo build --release -p fixlog --features cuda --bin fixlog --example full_first
#   mkdir -p /tmp/landed && cp $T/fixlog $T/examples/full_first /tmp/landed && strip /tmp/landed/*
#   (change the tree to the build under test) && scripts/gpu.sh
#   tar czf .carry/landed.tgz -C /tmp/landed fixlog full_first
# ($T: the cargo target directory's release folder, /work/target-cuda/release by default
# in scripts/gpu.sh; build both there so the second build reuses the first's crates.)
#   1. CASES through `fixlog run --stats json`, REPS runs of each build alternating:
#      median evaluation s (min-max) / median peak GiB in use / size.
#   2. SG on GRAPHS through the `full_first` example (library API), CHOICES, both builds.
#   3. With NSYS_ON=1, each of those under Nsight Systems: CUDA API calls and kernels
#      summed (count, total ms), so the cost per piece shows as calls.
#   bash .carry/round30.sh      env CASES, REPS, GRAPHS, CHOICES, LIMIT, NSYS_ON
C=$PWD/.carry; W=/tmp/r30; mkdir -p $W/landed /tmp/fixlog-kernels
export FIXLOG_KERNEL_CACHE=/tmp/fixlog-kernels
[ -f $C/kernels.tgz ] && tar xzf $C/kernels.tgz -C /tmp/fixlog-kernels 2>/dev/null
[ -x $C/full_first ] || tar xzf $C/bin.tgz -C $C
tar xzf $C/landed.tgz -C $W/landed
printf '.decl edge(x: number, y: number)\n.input edge\n.decl sg(x: number, y: number)\n.printsize sg\nsg(x, y) :- edge(p, x), edge(p, y), x != y.\nsg(x, y) :- edge(a, x), sg(a, b), edge(b, y).\n' > $W/SG.dl
printf '.decl edge(x: number, y: number)\n.input edge\n.decl path(x: number, y: number)\n.printsize path\npath(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n' > $W/TC.dl
facts() { mkdir -p $W/$1; [ -f $W/$1/edge.facts ] || zcat $C/data/graphs/$1.tsv.gz > $W/$1/edge.facts; }
one() { # binary, query, graph, limit
  local out; out=$(timeout 60 $1 run $W/$2.dl -F $W/$3 --backend cuda --quiet --stats json ${4:+--gpu-memory-limit $4} 2>&1 >/dev/null | tail -1)
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); r=d["relations"]; print("%.3f %.3f %s" % (d["evaluation_seconds"], d["peak_device_memory_in_use"]/2**30, list(r.values())[-1]))' "$out" 2>/dev/null || echo "ERR:${out:0:80}"
}
med() { python3 -c 'import sys; v=[l.split() for l in sys.stdin if l.strip()]; ok=[x for x in v if not x[0].startswith("ERR")]
if not ok: print(" ".join(v[0])[:80] if v else "?"); sys.exit()
t=sorted(float(x[0]) for x in ok); m=sorted(float(x[1]) for x in ok); s=set(x[2] for x in ok)
print("%.3f (%.3f-%.3f) / %.3f / %s" % (t[len(t)//2], t[0], t[-1], m[len(m)//2], ",".join(s)))'; }
CASES=${CASES:-"SG:CA-HepTh: SG:ego-Facebook: SG:loc-Brightkite: SG:CA-HepTh:1G SG:CA-HepTh:800M SG:loc-Brightkite:1G SG:ego-Facebook:256M TC:CA-HepTh:800M"}
for c in $CASES; do facts $(echo $c | cut -d: -f2); done
one $C/fixlog SG CA-HepTh > /dev/null; one $W/landed/fixlog SG CA-HepTh > /dev/null
echo "| case | limit | landed | new |"
echo "|---|---|---|---|"
for c in $CASES; do
  IFS=: read q g l <<< "$c"
  : > $W/a; : > $W/b
  for r in $(seq ${REPS:-3}); do one $W/landed/fixlog $q $g $l >> $W/a; one $C/fixlog $q $g $l >> $W/b; done
  echo "| $q $g | ${l:-none} | $(med < $W/a) | $(med < $W/b) |"
done
NSYS=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
summ() { python3 - "$1" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows[:14]:
    name = r.get("Name", "")[:60]
    print(f'{r.get("Time (%)","")[:5]:>6}% {float(r.get("Total Time (ns)", 0))/1e6:9.2f} ms {r.get("Instances", r.get("Num Calls","")):>7}  {name}')
PY
}
for g in ${GRAPHS:-CA-HepTh ego-Facebook}; do
  facts $g
  for bb in landed:$W/landed/full_first new:$C/full_first; do
    bn=${bb%%:*}; ff=${bb#*:}
    args="$W/SG.dl $W/$g --backend cuda ${LIMIT:+--gpu-memory-limit $LIMIT}"
    echo "== full_first SG $g${LIMIT:+, limit $LIMIT}, $bn"
    timeout 90 $ff $args --choices ${CHOICES:-never,bysize} --reps 3 2>&1 | tail -3 | cut -c1-220
    [ -n "$NSYS_ON" ] || continue
    [ -z "$NSYS" ] && { echo "(no nsys here)"; continue; }
    rep=$W/p-$g-$bn
    timeout 120 "$NSYS" profile -t cuda -o $rep --force-overwrite true $ff $args --choices bysize > /dev/null 2>&1
    for r in cuda_api_sum cuda_gpu_kern_sum; do
      "$NSYS" stats -r $r --format csv -o $W/s $rep.nsys-rep > /dev/null 2>&1
      echo "-- $r"; summ $W/s_$r.csv
    done
  done
done
