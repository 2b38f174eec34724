#!/usr/bin/env python3
"""Benchmark `fixlog match` against DuckDB and Kùzu: triangles, 4-cycles and 4-cliques
counted on the shared graphs read as undirected. Prints a Markdown table.

    cargo build --release -p fixlog      # the binary is read from $CARGO_TARGET_DIR if set
    python3 scripts/bench-match.py [--threads 2] [--timeout 60] [--runs 3] [GRAPH ...]

GRAPH is a path to an edge list (`src dst` per line, `#` comments, gzip or not); the
default is every graph of shared/data/patterns/snap and shared/data/graphs.

All three systems count the same thing: each subgraph once (UNIQ), with the symmetry
broken by `id` comparisons in the same way (a < b < c for triangles, a < b < c < d for
4-cliques, a the smallest and b < d for the 4-cycle a-b-c-d), over the graph made simple
(undirected, no self-loops, no repeated edges). Fixlog also counts EMB (no symmetry
breaking: every injective map) for comparison with subgraph-matching systems.

* fixlog: the whole process (`fixlog match --undirected -j N`), loading and gunzipping
  included, median of --runs runs; "match" is the matching time it reports (--stats).
* DuckDB: the SQL self-join on a table holding both directions of every edge, data
  already loaded (`SET threads = N`), median of --runs runs.
* Kùzu: the same MATCH (undirected `-[:E]-` over a rel table holding every edge once),
  data already loaded (`max_num_threads = N`), median of --runs runs.

DuckDB and Kùzu are optional (pip install duckdb kuzu); without them their columns are
empty. A query that passes --timeout seconds shows as `>T`.
"""

import argparse
import gzip
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("FIXLOG_DATA", os.path.join(ROOT, "..", "..", "shared", "data"))
if not os.path.isdir(os.path.join(DATA, "patterns")):
    DATA = os.path.join(ROOT, "..", "shared", "data")
FIXLOG = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "fixlog")

QUERIES = {
    "triangles": {
        "fixlog": "MATCH (a)--(b)--(c)--(a) WHERE id(a) < id(b) AND id(b) < id(c) RETURN count(*)",
        "fixlog_emb": "MATCH (a)--(b)--(c)--(a) RETURN count(*)",
        "sql": "SELECT count(*) FROM e ab, e bc, e ac WHERE ab.d = bc.s AND ac.s = ab.s AND ac.d = bc.d "
        "AND ab.s < ab.d AND bc.s < bc.d",
        "cypher": "MATCH (a:N)-[:E]-(b:N)-[:E]-(c:N)-[:E]-(a) WHERE a.id < b.id AND b.id < c.id RETURN count(*)",
    },
    "4-cycles": {
        "fixlog": "MATCH (a)--(b)--(c)--(d)--(a) WHERE id(a) < id(b) AND id(a) < id(c) AND id(a) < id(d) "
        "AND id(b) < id(d) RETURN count(*)",
        "fixlog_emb": "MATCH (a)--(b)--(c)--(d)--(a) RETURN count(*)",
        "sql": "SELECT count(*) FROM e ab, e bc, e cd, e da WHERE ab.d = bc.s AND bc.d = cd.s AND cd.d = da.s "
        "AND da.d = ab.s AND ab.s < ab.d AND ab.s < bc.d AND ab.s < cd.d AND ab.d < cd.d",
        "cypher": "MATCH (a:N)-[:E]-(b:N)-[:E]-(c:N)-[:E]-(d:N)-[:E]-(a) WHERE a.id < b.id AND a.id < c.id "
        "AND a.id < d.id AND b.id < d.id RETURN count(*)",
    },
    "4-cliques": {
        "fixlog": "MATCH (a)--(b)--(c)--(a), (a)--(d), (b)--(d), (c)--(d) "
        "WHERE id(a) < id(b) AND id(b) < id(c) AND id(c) < id(d) RETURN count(*)",
        "fixlog_emb": "MATCH (a)--(b)--(c)--(a), (a)--(d), (b)--(d), (c)--(d) RETURN count(*)",
        "sql": "SELECT count(*) FROM e ab, e bc, e ac, e ad, e bd, e cd WHERE ab.d = bc.s AND ac.s = ab.s "
        "AND ac.d = bc.d AND ad.s = ab.s AND bd.s = ab.d AND cd.s = bc.d AND ad.d = bd.d AND bd.d = cd.d "
        "AND ab.s < ab.d AND bc.s < bc.d AND cd.s < cd.d",
        "cypher": "MATCH (a:N)-[:E]-(b:N)-[:E]-(c:N)-[:E]-(a), (a)-[:E]-(d:N), (b)-[:E]-(d), (c)-[:E]-(d) "
        "WHERE a.id < b.id AND b.id < c.id AND c.id < d.id RETURN count(*)",
    },
}


def default_graphs():
    graphs = []
    for sub in ("patterns/snap", "graphs"):
        d = os.path.join(DATA, sub)
        graphs += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".gz"))
    return graphs


def timed_median(runs, fn):
    """Median time of `runs` calls of fn (one call when it takes over 2 s)."""
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
        if result is None:
            return None, None
        if times[0] > 2:
            break
    return statistics.median(times), result


def run_fixlog(graph, pattern, threads, timeout):
    cmd = [FIXLOG, "match", "--edges", graph, "--undirected", "-j", str(threads), "--stats", pattern]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    match = re.search(r"match ([0-9.]+) s", out.stderr)
    return int(out.stdout.strip()), float(match.group(1)) if match else float("nan")


def fmt(seconds, timeout):
    if seconds is None:
        return f">{timeout:g}"
    return f"{seconds:.3f}" if seconds < 10 else f"{seconds:.1f}"


class DuckDB:
    def __init__(self, graph, threads, workdir):
        import duckdb

        self.con = duckdb.connect()
        self.con.execute(f"SET threads = {threads}")
        # Lines as text, split on tabs or spaces (SNAP files use either).
        self.con.execute(
            "CREATE TABLE lines AS SELECT regexp_split_to_array(trim(line), '\\s+') AS f FROM read_csv(?, "
            "delim = '\x01', quote = '', escape = '', header = false, columns = {'line': 'VARCHAR'}, "
            "auto_detect = false, strict_mode = false) WHERE trim(line) <> '' AND NOT starts_with(trim(line), '#')",
            [graph],
        )
        self.con.execute("CREATE TABLE raw AS SELECT CAST(f[1] AS BIGINT) AS s, CAST(f[2] AS BIGINT) AS d FROM lines")
        self.con.execute(
            "CREATE TABLE u AS SELECT DISTINCT least(s, d) AS s, greatest(s, d) AS d FROM raw WHERE s <> d"
        )
        self.con.execute("CREATE TABLE e AS SELECT s, d FROM u UNION ALL SELECT d, s FROM u")
        self.nodes = self.con.execute(
            "SELECT count(*) FROM (SELECT s FROM u UNION SELECT d FROM u)"
        ).fetchone()[0]
        self.edges = self.con.execute("SELECT count(*) FROM u").fetchone()[0]
        self.edges_csv = os.path.join(workdir, "edges.csv")
        self.nodes_csv = os.path.join(workdir, "nodes.csv")
        self.con.execute(f"COPY u TO '{self.edges_csv}' (HEADER false)")
        self.con.execute(
            f"COPY (SELECT s FROM u UNION SELECT d FROM u ORDER BY 1) TO '{self.nodes_csv}' (HEADER false)"
        )

    def count(self, sql, timeout):
        timer = threading.Timer(timeout, self.con.interrupt)
        timer.start()
        try:
            return self.con.execute(sql).fetchone()[0]
        except Exception:
            return None
        finally:
            timer.cancel()


class Kuzu:
    def __init__(self, duck, threads, workdir):
        import kuzu

        self.db = kuzu.Database(os.path.join(workdir, "kuzu"), max_num_threads=threads)
        self.con = kuzu.Connection(self.db, num_threads=threads)
        self.con.execute("CREATE NODE TABLE N(id INT64, PRIMARY KEY(id))")
        self.con.execute("CREATE REL TABLE E(FROM N TO N)")
        self.con.execute(f"COPY N FROM '{duck.nodes_csv}' (header = false)")
        self.con.execute(f"COPY E FROM '{duck.edges_csv}' (header = false)")

    def count(self, cypher, timeout):
        self.con.set_query_timeout(int(timeout * 1000))
        try:
            result = self.con.execute(cypher)
            return result.get_next()[0]
        except Exception:
            return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("graphs", nargs="*")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", default="triangles,4-cycles,4-cliques")
    parser.add_argument("--no-others", action="store_true", help="fixlog only")
    args = parser.parse_args()
    if not os.path.exists(FIXLOG):
        sys.exit(f"build first: cargo build --release -p fixlog ({FIXLOG} not found)")
    graphs = args.graphs or default_graphs()
    queries = args.queries.split(",")
    print(
        "| graph | nodes | edges | query | count (UNIQ) | fixlog s | fixlog match s | fixlog EMB s "
        "| DuckDB s | Kùzu s | DuckDB / fixlog |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for graph in graphs:
        name = os.path.basename(graph).split(".")[0]
        with tempfile.TemporaryDirectory() as workdir:
            duck = kuzu_db = None
            if not args.no_others:
                try:
                    duck = DuckDB(graph, args.threads, workdir)
                    kuzu_db = Kuzu(duck, args.threads, workdir)
                except ImportError as e:
                    print(f"(no {e.name}: its column stays empty)", file=sys.stderr)
            for q in queries:
                spec = QUERIES[q]
                t_fix, fix = timed_median(args.runs, lambda: run_fixlog(graph, spec["fixlog"], args.threads, args.timeout))
                count, match_s = fix if fix else (None, None)
                t_emb, _ = timed_median(1, lambda: run_fixlog(graph, spec["fixlog_emb"], args.threads, args.timeout))
                t_duck = t_kuzu = None
                duck_count = kuzu_count = None
                if duck:
                    t_duck, duck_count = timed_median(args.runs if count is not None else 1, lambda: duck.count(spec["sql"], args.timeout))
                if kuzu_db:
                    t_kuzu, kuzu_count = timed_median(args.runs if count is not None else 1, lambda: kuzu_db.count(spec["cypher"], args.timeout))
                for other, c in (("DuckDB", duck_count), ("Kùzu", kuzu_count)):
                    if c is not None and count is not None and c != count:
                        print(f"MISMATCH {name} {q}: fixlog {count}, {other} {c}", file=sys.stderr)
                ratio = f"{t_duck / t_fix:.1f}x" if t_duck and t_fix else ""
                nodes = duck.nodes if duck else ""
                edges = duck.edges if duck else ""
                print(
                    f"| {name} | {nodes} | {edges} | {q} | {count if count is not None else '?'} "
                    f"| {fmt(t_fix, args.timeout)} | {fmt(match_s, args.timeout)} | {fmt(t_emb, args.timeout)} "
                    f"| {fmt(t_duck, args.timeout) if duck else ''} | {fmt(t_kuzu, args.timeout) if kuzu_db else ''} | {ratio} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
