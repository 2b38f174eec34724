#!/usr/bin/env bash
# CPU benchmark: transitive closure (TC) and same generation (SG) on the graphs of
# shared/data/ground_truth.tsv, with sizes checked against the ground truth.
#
# Usage: scripts/bench-cpu.sh [options]
#   -g GRAPHS    comma-separated graph names (default: every graph of ground_truth.tsv
#                whose file exists in DATA/graphs)
#   -q QUERIES   comma-separated queries, TC and/or SG (default: TC,SG)
#   -j N         worker threads (default: all cores)
#   -t SECONDS   timeout per run (default: 600); a run over it is reported as skipped
#   -m TUPLES    skip runs whose expected result has more than TUPLES tuples (default: no limit)
#   -d DIR       data directory holding ground_truth.tsv and graphs/
#                (default: $FIXLOG_DATA, else ../shared/data next to the repository)
#   -n           do not build; use the existing release binary
#   -h           this help
#
# Output: a markdown table on stdout (progress on stderr). Times are wall-clock seconds
# of the whole `fixlog run` (load + evaluation); peak MB is the maximum resident set size.
# Soufflé -j2 seconds are the figures quoted in the project issue (same queries, 2 threads);
# "speedup" = Soufflé seconds / our seconds, meaningful only when run with -j 2.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
graphs=""
queries="TC,SG"
jobs="$(nproc)"
limit=600
max_tuples=0
data="${FIXLOG_DATA:-$repo/../shared/data}"
build=1

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

while getopts "g:q:j:t:m:d:nh" opt; do
    case "$opt" in
        g) graphs="$OPTARG" ;;
        q) queries="$OPTARG" ;;
        j) jobs="$OPTARG" ;;
        t) limit="$OPTARG" ;;
        m) max_tuples="$OPTARG" ;;
        d) data="$OPTARG" ;;
        n) build=0 ;;
        h) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done

truth="$data/ground_truth.tsv"
if [[ ! -f "$truth" ]]; then
    echo "error: $truth not found (use -d DIR or set FIXLOG_DATA)" >&2
    exit 1
fi
data="$(cd "$data" && pwd)"
truth="$data/ground_truth.tsv"

target="${CARGO_TARGET_DIR:-$repo/target}"
if [[ $build == 1 ]]; then
    echo "building (cargo build --release -p fixlog) ..." >&2
    (cd "$repo" && cargo build --release -p fixlog --bin fixlog >&2)
fi
bin="$target/release/fixlog"
if [[ ! -x "$bin" ]]; then
    echo "error: $bin not found (build it or drop -n)" >&2
    exit 1
fi

# GNU time gives the peak RSS; without it only the wall time is measured.
gnu_time=""
if [[ -x /usr/bin/time ]] && /usr/bin/time -f '%e' true 2>/dev/null; then
    gnu_time=/usr/bin/time
else
    echo "note: GNU time not found (apt-get install time); peak memory will not be measured" >&2
fi

# JSON field extraction: python3 if present, else a sed fallback good enough for the
# flat fields used here.
json_get() { # json_get FILE EXPR, EXPR in {size:REL, iters:REL}
    local file="$1" what="$2"
    if command -v python3 >/dev/null; then
        python3 - "$file" "$what" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
obj = None
for line in reversed(text.splitlines()):
    line = line.strip()
    if line.startswith("{"):
        try:
            obj = json.loads(line)
            break
        except ValueError:
            pass
if obj is None:
    print("?")
    sys.exit()
kind, rel = sys.argv[2].split(":", 1)
if kind == "size":
    print(obj.get("relations", {}).get(rel, "?"))
else:
    its = [s.get("iterations") for s in obj.get("strata", []) if rel in s.get("relations", [])]
    print(its[0] if its else "?")
EOF
    else
        local rel="${what#*:}"
        if [[ $what == size:* ]]; then
            grep -o "\"$rel\":[0-9]*" "$file" | tail -1 | cut -d: -f2
        else
            grep -o "\"iterations\":[0-9]*,\"relations\":\[\"$rel\"\]" "$file" | head -1 |
                sed 's/.*"iterations":\([0-9]*\).*/\1/'
        fi
    fi
}

souffle_seconds() { # Soufflé -j2 figures from the issue
    case "$1/$2" in
        TC/cal.cedge) echo 0.77 ;;
        TC/ego-Facebook) echo 2.6 ;;
        TC/cti) echo 3.7 ;;
        TC/delaunay_n16) echo 4.1 ;;
        TC/luxembourg_osm) echo 7.4 ;;
        TC/p2p-Gnutella09) echo 11.2 ;;
        TC/wiki-Vote) echo 18.6 ;;
        TC/p2p-Gnutella04) echo 28.1 ;;
        TC/CA-HepTh) echo 66.8 ;;
        SG/OL.cedge) echo 0.31 ;;
        SG/wing) echo 0.50 ;;
        SG/cti) echo 14.8 ;;
        SG/ego-Facebook) echo 286 ;;
        *) echo "" ;;
    esac
}

program() { # program QUERY GRAPH_FILE
    case "$1" in
        TC) cat <<EOF
.decl edge(x: number, y: number)
.input edge(filename="$2")
.decl path(x: number, y: number)
.printsize path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
EOF
        ;;
        SG) cat <<EOF
.decl edge(x: number, y: number)
.input edge(filename="$2")
.decl sg(x: number, y: number)
.printsize sg
sg(x, y) :- edge(p, x), edge(p, y), x != y.
sg(x, y) :- edge(a, x), sg(a, b), edge(b, y).
EOF
        ;;
    esac
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# (dataset, query, relation, value, iterations): the first ground-truth row of each pair.
rows="$(awk -F'\t' 'NR > 1 && ($2 == "TC" || $2 == "SG") && !seen[$1 FS $2]++ { print $1 "\t" $2 "\t" $3 "\t" $4 "\t" $5 }' "$truth")"

selected() { # selected LIST ITEM: is ITEM in the comma-separated LIST (empty = all)?
    [[ -z "$1" ]] && return 0
    [[ ",$1," == *",$2,"* ]]
}

echo "fixlog $("$bin" --version 2>/dev/null | awk '{print $2}') on $(nproc) cores, -j $jobs, timeout ${limit}s, $(date -u +%Y-%m-%d)" >&2
echo
echo "| graph | query | result | expected | ok | iterations | expected iterations | seconds | peak MB | Soufflé -j2 seconds | speedup |"
echo "|---|---|---:|---:|:-:|---:|---:|---:|---:|---:|---:|"
failures=0
for q in ${queries//,/ }; do
    while IFS=$'\t' read -r graph query rel expected exp_iters; do
        [[ $query == "$q" ]] || continue
        selected "$graphs" "$graph" || continue
        file="$data/graphs/$graph.tsv.gz"
        [[ -f "$file" ]] || continue
        souffle="$(souffle_seconds "$query" "$graph")"
        if [[ $max_tuples -gt 0 && $expected -gt $max_tuples ]]; then
            echo "| $graph | $query | skipped (expected $expected > -m $max_tuples) | $expected | | | $exp_iters | | | $souffle | |"
            continue
        fi
        echo "running $query on $graph ..." >&2
        prog="$work/$query.dl"
        program "$query" "$file" >"$prog"
        stats="$work/stats.txt"
        timing="$work/time.txt"
        : >"$timing"
        status=0
        start=$(date +%s.%N)
        if [[ -n $gnu_time ]]; then
            timeout -s KILL "$limit" "$gnu_time" -f '%e %M' -o "$timing" \
                "$bin" run "$prog" -F "$data" -D "$work" -j "$jobs" --stats json --quiet \
                >/dev/null 2>"$stats" || status=$?
        else
            timeout -s KILL "$limit" \
                "$bin" run "$prog" -F "$data" -D "$work" -j "$jobs" --stats json --quiet \
                >/dev/null 2>"$stats" || status=$?
        fi
        end=$(date +%s.%N)
        if [[ $status == 137 || $status == 124 ]]; then
            echo "| $graph | $query | skipped: over ${limit}s | $expected | | | $exp_iters | >$limit | | $souffle | |"
            continue
        fi
        if [[ $status != 0 ]]; then
            echo "| $graph | $query | error (exit $status): $(head -c 200 "$stats" | tr '\n|' '  ') | $expected | ✗ | | $exp_iters | | | $souffle | |"
            failures=$((failures + 1))
            continue
        fi
        if [[ -s $timing ]]; then
            read -r secs kb < <(tail -1 "$timing")
            mb=$(awk -v k="$kb" 'BEGIN { printf "%.0f", k / 1024 }')
        else
            secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
            mb="n/a"
        fi
        size="$(json_get "$stats" "size:$rel")"
        iters="$(json_get "$stats" "iters:$rel")"
        ok="✓"
        if [[ "$size" != "$expected" ]]; then
            ok="✗"
            failures=$((failures + 1))
        elif [[ "$exp_iters" =~ ^[0-9]+$ && "$iters" != "$exp_iters" ]]; then
            ok="✓ (iterations ✗)"
            failures=$((failures + 1))
        fi
        speedup=""
        if [[ -n $souffle ]]; then
            speedup=$(awk -v s="$souffle" -v t="$secs" 'BEGIN { if (t > 0) printf "%.2fx", s / t }')
        fi
        echo "| $graph | $query | $size | $expected | $ok | $iters | $exp_iters | $secs | $mb | $souffle | $speedup |"
    done <<<"$rows"
done
echo
if [[ $failures -gt 0 ]]; then
    echo "$failures run(s) disagreed with the ground truth or failed" >&2
    exit 1
fi
