#!/usr/bin/env bash
# A/B of fixlog builds on the GPU machine, through `fixlog run --backend cuda --stats
# json`: TC and SG on shared graphs, each variant in turn, REPS rounds; prints
# "evaluation s/peak GiB in use" per run in a table (with "/WRONG:size,iterations" where
# the result or the iterations differ from ground_truth.tsv). A lab instrument: the builds come
# packed as .carry/lab.bin.tgz holding fixlog-old and fixlog-new (e.g. the last landed
# binary and a lab build), with the graphs in .carry/data/graphs.
#   bash .carry/ab.sh        env CASES ("TC:CA-HepTh SG:ego-Facebook:256M ...": query, graph,
#                            optional --gpu-memory-limit), REPS (3),
#                            VARIANTS ("old new new+SWITCH new+NAME=VALUE ...": the binary,
#                            then FIXLOG_LAB_SWITCH=1 / FIXLOG_LAB_NAME=VALUE in the env,
#                            for switches a lab build reads)
C=$PWD/.carry
tar xzf $C/lab.bin.tgz -C $C
export FIXLOG_KERNEL_CACHE=/tmp/fixlog-kernels OUT=${OUT:-/tmp/fixlog-out}; mkdir -p "$OUT"
. $C/kernels.sh; kernels_restore /tmp/fixlog-kernels; trap 'kernels_save /tmp/fixlog-kernels' EXIT
W=/tmp/ab; mkdir -p $W
printf '.decl edge(x: number, y: number)\n.input edge\n.decl path(x: number, y: number)\n.printsize path\npath(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n' > $W/TC.dl
printf '.decl edge(x: number, y: number)\n.input edge\n.decl sg(x: number, y: number)\n.printsize sg\nsg(x, y) :- edge(p, x), edge(p, y), x != y.\nsg(x, y) :- edge(a, x), sg(a, b), edge(b, y).\n' > $W/SG.dl
CASES=${CASES:-"TC:CA-HepTh TC:loc-Brightkite TC:p2p-Gnutella31 SG:ego-Facebook SG:CA-HepTh SG:loc-Brightkite"}
VARIANTS=${VARIANTS:-"old new new+RELEASE_SPARES new+NO_MAPPED new+NO_INPLACE new+NO_DEFER new+NO_MAPPED+NO_INPLACE+NO_DEFER"}
for c in $CASES; do g=${c#*:}; g=${g%%:*}; mkdir -p $W/$g; [ -f $W/$g/edge.facts ] || zcat $C/data/graphs/$g.tsv.gz > $W/$g/edge.facts; done
# warm the kernel cache with both binaries
for b in old new; do $C/fixlog-$b run $W/TC.dl -F $W/CA-HepTh --backend cuda --quiet > /dev/null 2>&1; $C/fixlog-$b run $W/SG.dl -F $W/CA-HepTh --backend cuda --quiet >/dev/null 2>&1; done
declare -A RES
# One line per case as it finishes (a run cut short by a timeout keeps what it had).
echo "| case | $(echo $VARIANTS | sed 's/ / | /g') |"
for c in $CASES; do IFS=: read q g lim <<< "$c"
  for r in $(seq ${REPS:-3}); do
    for v in $VARIANTS; do
      bin=${v%%+*}; envs=""; rest=${v#$bin}
      for e in ${rest//+/ }; do case $e in *=*) envs="$envs FIXLOG_LAB_$e";; *) envs="$envs FIXLOG_LAB_$e=1";; esac; done
      out=$(env $envs $C/fixlog-$bin run $W/$q.dl -F $W/$g --backend cuda --stats json --quiet ${lim:+--gpu-memory-limit $lim} 2>&1 >/dev/null | tail -1)
      x=$(python3 - "$out" "$C/data/ground_truth.tsv" "$g" "$q" <<'PY' 2>/dev/null || echo "ERR:${out:0:80}"
import json, sys
d = json.loads(sys.argv[1])
rel = {"TC": "path", "SG": "sg"}[sys.argv[4]]
want = None
for line in open(sys.argv[2]):
    f = line.rstrip("\n").split("\t")
    if len(f) > 4 and f[0] == sys.argv[3] and f[1] == sys.argv[4]:
        want = (int(f[3]), int(f[4]) if f[4].isdigit() else None)
        break
got = (d["relations"][rel], max(s["iterations"] for s in d["strata"]))
ok = want is None or (got[0] == want[0] and (want[1] is None or got[1] == want[1]))
print("%.3f/%.3f%s" % (d["evaluation_seconds"], d["peak_device_memory_in_use"] / 2**30, "" if ok else "/WRONG:%d,%d" % got))
PY
)
      RES["$c|$v"]="${RES["$c|$v"]} $x"
    done
  done
  line="| $c"; for v in $VARIANTS; do line="$line |${RES["$c|$v"]}"; done; echo "$line |"
done
