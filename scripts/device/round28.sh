#!/usr/bin/env bash
# Round 28's full-first calls (a lab script, kept for the record in
# docs/gpu-results.md): same generation with and without full-first plans, with and
# without --gpu-memory-limit, and where the time of a full-first run goes (--stats).
# Builds packed as .carry/lab.bin.tgz (fixlog-old: main before full-first plans;
# fixlog-new: a lab build, which read FIXLOG_LAB_FULL_FIRST=never|bysize|always into
# `RunOptions::full_first`; unset, the product's choice: the landed binary has no such
# switch, the library has `RunOptions::full_first`). Run from the repository root:
#   bash scripts/device/round28.sh      env CASES ("CA-HepTh-1G ego-Facebook- ...")
C=$PWD/.carry; W=/tmp/ab; mkdir -p $W /tmp/k
tar xzf $C/lab.bin.tgz -C $C
export FIXLOG_KERNEL_CACHE=/tmp/k; [ -f $C/kernels.tgz ] && tar xzf $C/kernels.tgz -C /tmp/k 2>/dev/null
printf '.decl edge(x: number, y: number)\n.input edge\n.decl sg(x: number, y: number)\n.printsize sg\nsg(x, y) :- edge(p, x), edge(p, y), x != y.\nsg(x, y) :- edge(a, x), sg(a, b), edge(b, y).\n' > $W/SG.dl
for g in CA-HepTh loc-Brightkite ego-Facebook; do mkdir -p $W/$g; zcat $C/data/graphs/$g.tsv.gz > $W/$g/edge.facts; done
one() { # binary, full-first, graph, limit
  local out; out=$(FIXLOG_LAB_FULL_FIRST=$2 timeout 30 $C/fixlog-$1 run $W/SG.dl -F $W/$3 --backend cuda --quiet --stats json ${4:+--gpu-memory-limit $4} 2>&1 >/dev/null | tail -1)
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("%.3f/%.3f/%s" % (d["evaluation_seconds"], d["peak_device_memory_in_use"]/2**30, d["relations"]["sg"]))' "$out" 2>/dev/null || echo "ERR:${out:0:60}"
}
for b in old new; do one $b "" CA-HepTh > /dev/null; done
echo "| case | limit | old | new | new+bysize | new+never |"
for c in ${CASES:-"CA-HepTh-1G" "CA-HepTh-800M" "loc-Brightkite-1G" "loc-Brightkite-1200M" "ego-Facebook-256M" "ego-Facebook-" "CA-HepTh-"}; do
  c=${c%-*}" "${c##*-}
  set -- $c; l=${2:-}
  echo "| $1 | $2 | $(one old "" $1 $l) | $(one new "" $1 $l) | $(one new bysize $1 $l) | $(one new never $1 $l) |"
done
echo "== new, ego-Facebook at 256M, --stats"
timeout 30 $C/fixlog-new run $W/SG.dl -F $W/ego-Facebook --backend cuda --quiet --stats --gpu-memory-limit 256M 2>&1 | grep -vE '^\s+(edge|sg)\s' | tail -12
