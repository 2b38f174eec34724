#!/usr/bin/env bash
# Round 29 (docs/gpu-results.md): the join that says how many input rows fit, and the
# full-first bound below the top, against main before them. Runs from the repository
# root after scripts/gpu.sh packed .carry/ and .carry/old.tgz holds the older build's
# `fixlog` (main at 1218355). Alternates old and new, REPS runs each (default 3), and
# prints the median evaluation s / peak GiB in use / size per case; then the operators
# of SG with full-first plans forced and not (the `full_first` example).
#   bash .carry/round29.sh      env CASES ("SG:CA-HepTh:1G TC:CA-HepTh:800M ...")
C=$PWD/.carry; W=/tmp/r29; mkdir -p $W/old /tmp/fixlog-kernels
export FIXLOG_KERNEL_CACHE=/tmp/fixlog-kernels
[ -f $C/kernels.tgz ] && tar xzf $C/kernels.tgz -C /tmp/fixlog-kernels 2>/dev/null
tar xzf $C/bin.tgz -C $C; tar xzf $C/old.tgz -C $W/old
# A third build to compare, where packed (.carry/v2.tgz: `fixlog`, the variant).
V2=""; [ -f $C/v2.tgz ] && { mkdir -p $W/v2; tar xzf $C/v2.tgz -C $W/v2; V2=$W/v2/fixlog; }
printf '.decl edge(x: number, y: number)\n.input edge\n.decl sg(x: number, y: number)\n.printsize sg\nsg(x, y) :- edge(p, x), edge(p, y), x != y.\nsg(x, y) :- edge(a, x), sg(a, b), edge(b, y).\n' > $W/SG.dl
printf '.decl edge(x: number, y: number)\n.input edge\n.decl path(x: number, y: number)\n.printsize path\npath(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n' > $W/TC.dl
one() { # binary, query, graph, limit
  local out; out=$(timeout 60 $1 run $W/$2.dl -F $W/$3 --backend cuda --quiet --stats json ${4:+--gpu-memory-limit $4} 2>&1 >/dev/null | tail -1)
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); r=d["relations"]; print("%.3f %.3f %s" % (d["evaluation_seconds"], d["peak_device_memory_in_use"]/2**30, list(r.values())[-1]))' "$out" 2>/dev/null || echo "ERR:${out:0:80}"
}
med() { python3 -c 'import sys; v=[l.split() for l in sys.stdin if l.strip()]; ok=[x for x in v if not x[0].startswith("ERR")]
if not ok: print(" ".join(v[0])[:80] if v else "?"); sys.exit()
t=sorted(float(x[0]) for x in ok); m=sorted(float(x[1]) for x in ok); s=set(x[2] for x in ok)
print("%.3f (%.3f-%.3f) / %.3f / %s" % (t[len(t)//2], t[0], t[-1], m[len(m)//2], ",".join(s)))'; }
CASES=${CASES:-"SG:CA-HepTh:1G SG:CA-HepTh:800M SG:loc-Brightkite:1G SG:ego-Facebook:256M SG:CA-HepTh: SG:ego-Facebook: TC:CA-HepTh:800M TC:loc-Brightkite:1600M"}
for c in $CASES; do g=$(echo $c | cut -d: -f2); mkdir -p $W/$g; [ -f $W/$g/edge.facts ] || zcat $C/data/graphs/$g.tsv.gz > $W/$g/edge.facts; done
one $C/fixlog SG CA-HepTh > /dev/null; one $W/old/fixlog SG CA-HepTh > /dev/null
echo "| case | limit | old (1218355) | new |${V2:+ variant |}"
echo "|---|---|---|---|${V2:+---|}"
for c in $CASES; do
  IFS=: read q g l <<< "$c"
  : > $W/a; : > $W/b; : > $W/c
  for r in $(seq ${REPS:-3}); do
    one $W/old/fixlog $q $g $l >> $W/a; one $C/fixlog $q $g $l >> $W/b
    [ -n "$V2" ] && one $V2 $q $g $l >> $W/c
  done
  echo "| $q $g | ${l:-none} | $(med < $W/a) | $(med < $W/b) |${V2:+ $(med < $W/c) |}"
done
for g in ${OPS_GRAPHS-CA-HepTh ego-Facebook}; do
  echo "== full_first SG $g, no limit"
  timeout 60 $C/full_first $W/SG.dl $W/$g --backend cuda --choices never,bysize --operators 2>&1 | cut -c1-200 | tail -30
done
