#!/usr/bin/env bash
# Counting in id order against counting in degree order, through `fixlog match`
# (the product: one process per query, loading included), before/after binaries.
#
#   scripts/bench-order.sh BEFORE_BINARY AFTER_BINARY GRAPH... > rows.md
#
# Env: RUNS (3), JOBS (2), TIMEOUT seconds per run (120), QUERIES (triangles 4-cliques
# 4-cycles). Prints one markdown row per graph, query and binary: the count, the whole
# process's median wall time and CPU time (user + system, all threads: steadier than
# wall time on a shared machine), and the medians of the `--stats` load, match and
# (after) order/renumbering times. A run past TIMEOUT prints `>TIMEOUT`.
set -u
before=$1 after=$2
shift 2
RUNS=${RUNS:-3} JOBS=${JOBS:-2} TIMEOUT=${TIMEOUT:-120}
read -r -a queries <<< "${QUERIES:-triangles 4-cliques 4-cycles}"
declare -A text=(
  [triangles]='MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)'
  [4-cliques]='MATCH (a)--(b)--(c)--(a), (a)--(d), (b)--(d), (c)--(d) WHERE id(a) < id(b) AND id(b) < id(c) AND id(c) < id(d) RETURN count(*)'
  [4-cycles]='MATCH (a)--(b)--(c)--(d)--(a) WHERE id(a) < id(b) AND id(a) < id(c) AND id(a) < id(d) AND id(b) < id(d) RETURN count(*)'
)
median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "-"; else print v[int((NR + 1) / 2)]}'; }
for graph in "$@"; do
  for q in "${queries[@]}"; do
    for which in before after; do
      bin=${!which}
      walls=() cpus=() loads=() matches=() renumbers=() count= timed_out=
      for _ in $(seq "$RUNS"); do
        err=$(mktemp) cpu=$(mktemp)
        start=$(date +%s.%N)
        out=$(/usr/bin/time -f '%U %S' -o "$cpu" timeout "$TIMEOUT" "$bin" match --edges "$graph" \
          --undirected -j "$JOBS" --stats "${text[$q]}" 2>"$err")
        rc=$?
        end=$(date +%s.%N)
        if [ $rc -ne 0 ]; then timed_out=1; rm -f "$err" "$cpu"; break; fi
        cpus+=("$(awk 'END {print $1 + $2}' "$cpu")")
        rm -f "$cpu"
        count=$out
        walls+=("$(echo "$end - $start" | bc)")
        loads+=("$(grep -o 'load [0-9.]*' "$err" | cut -d' ' -f2)")
        matches+=("$(grep -o 'match [0-9.]* s' "$err" | cut -d' ' -f2)")
        renumbers+=("$(grep -oE '(renumbered|forward lists built) in [0-9.]*' "$err" | awk '{print $NF}')")
        rm -f "$err"
      done
      name=$(basename "$graph")
      if [ -n "$timed_out" ]; then
        echo "| $name | $q | $which | | >$TIMEOUT | | | | |"
        continue
      fi
      printf '| %s | %s | %s | %s | %.3f | %s | %s | %s | %s |\n' "$name" "$q" "$which" "$count" \
        "$(printf '%s\n' "${walls[@]}" | median)" \
        "$(printf '%s\n' "${cpus[@]}" | median)" \
        "$(printf '%s\n' "${loads[@]}" | median)" \
        "$(printf '%s\n' "${matches[@]}" | median)" \
        "$(printf '%s\n' "${renumbers[@]}" | grep . | median)"
    done
  done
done
