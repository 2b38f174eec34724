#!/usr/bin/env bash
# A/B of fixlog builds on the GPU machine, through `fixlog run --backend cuda --stats
# json`: TC and SG on shared graphs, each variant in turn, REPS rounds; prints
# "evaluation s/peak GiB in use" per run in a table. A lab instrument: the builds come
# packed as .carry/lab.bin.tgz holding fixlog-old and fixlog-new (e.g. the last landed
# binary and a lab build), with the graphs in .carry/data/graphs.
#   bash .carry/ab.sh        env CASES ("TC:CA-HepTh SG:ego-Facebook ..."), REPS (3),
#                            VARIANTS ("old new new+SWITCH new+NAME=VALUE ...": the binary,
#                            then FIXLOG_LAB_SWITCH=1 / FIXLOG_LAB_NAME=VALUE in the env,
#                            for switches a lab build reads)
C=$PWD/.carry
tar xzf $C/lab.bin.tgz -C $C
export FIXLOG_KERNEL_CACHE=/tmp/fixlog-kernels; mkdir -p /tmp/fixlog-kernels
W=/tmp/ab; mkdir -p $W
printf '.decl edge(x: number, y: number)\n.input edge\n.decl path(x: number, y: number)\n.printsize path\npath(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n' > $W/TC.dl
printf '.decl edge(x: number, y: number)\n.input edge\n.decl sg(x: number, y: number)\n.printsize sg\nsg(x, y) :- edge(p, x), edge(p, y), x != y.\nsg(x, y) :- edge(a, x), sg(a, b), edge(b, y).\n' > $W/SG.dl
CASES=${CASES:-"TC:CA-HepTh TC:loc-Brightkite TC:p2p-Gnutella31 SG:ego-Facebook SG:CA-HepTh SG:loc-Brightkite"}
VARIANTS=${VARIANTS:-"old new new+RELEASE_SPARES new+NO_MAPPED new+NO_INPLACE new+NO_DEFER new+NO_MAPPED+NO_INPLACE+NO_DEFER"}
for c in $CASES; do g=${c#*:}; mkdir -p $W/$g; [ -f $W/$g/edge.facts ] || zcat $C/data/graphs/$g.tsv.gz > $W/$g/edge.facts; done
# warm the kernel cache with both binaries
for b in old new; do $C/fixlog-$b run $W/TC.dl -F $W/CA-HepTh --backend cuda --quiet > /dev/null 2>&1; $C/fixlog-$b run $W/SG.dl -F $W/CA-HepTh --backend cuda --quiet >/dev/null 2>&1; done
declare -A RES
for c in $CASES; do q=${c%%:*}; g=${c#*:}
  for r in $(seq ${REPS:-3}); do
    for v in $VARIANTS; do
      bin=${v%%+*}; envs=""; rest=${v#$bin}
      for e in ${rest//+/ }; do case $e in *=*) envs="$envs FIXLOG_LAB_$e";; *) envs="$envs FIXLOG_LAB_$e=1";; esac; done
      out=$(env $envs $C/fixlog-$bin run $W/$q.dl -F $W/$g --backend cuda --stats json --quiet 2>&1 >/dev/null | tail -1)
      x=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("%.3f/%.3f" % (d["evaluation_seconds"], d["peak_device_memory_in_use"]/2**30))' "$out" 2>/dev/null || echo "ERR:${out:0:80}")
      RES["$c|$v"]="${RES["$c|$v"]} $x"
    done
  done
  echo "done $c" >&2
done
echo "| case | $(echo $VARIANTS | sed 's/ / | /g') |"
for c in $CASES; do line="| $c"; for v in $VARIANTS; do line="$line |${RES["$c|$v"]}"; done; echo "$line |"; done
