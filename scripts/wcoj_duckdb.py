#!/usr/bin/env python3
"""DuckDB's time for the counts of `crates/fixlog/examples/wcoj_bench.rs` (triangles and
4-cliques as SQL self-joins over the undirected edge relation), for docs/wcoj.md.

    python3 scripts/wcoj_duckdb.py [GRAPH...]   # paths relative to shared/data

Times: building the undirected edge table `e` plus the count query (as Fixlog's time
includes deriving `e`), with DuckDB's default settings (all cores)."""
import gzip
import os
import sys
import tempfile
import time

import duckdb

DATA = os.environ.get("FIXLOG_DATA", os.path.join(os.path.dirname(__file__), "../../shared/data"))
GRAPHS = [
    "patterns/g2miner_citeseer/citeseer.edges.tsv.gz",
    "patterns/snap/oregon1_010331.txt.gz",
    "patterns/snap/email-Eu-core.txt.gz",
    "graphs/wiki-Vote.tsv.gz",
    "patterns/snap/email-Enron.txt.gz",
    "graphs/ego-Facebook.tsv.gz",
]
TRIANGLE = """SELECT count(*) FROM e e1 JOIN e e2 ON e2.x = e1.y JOIN e e3 ON e3.x = e1.x AND e3.y = e2.y
WHERE e1.x < e1.y AND e2.x < e2.y"""
CLIQUE4 = """SELECT count(*) FROM e ab JOIN e ac ON ac.x = ab.x JOIN e ad ON ad.x = ab.x
JOIN e bc ON bc.x = ab.y AND bc.y = ac.y JOIN e bd ON bd.x = ab.y AND bd.y = ad.y
JOIN e cd ON cd.x = ac.y AND cd.y = ad.y
WHERE ab.x < ab.y AND ac.y > ab.y AND ad.y > ac.y"""


def main():
    graphs = sys.argv[1:] or GRAPHS
    print("| graph | pattern | count | DuckDB (s) |")
    print("|---|---|---|---|")
    for g in graphs:
        # Comment lines dropped into a plain file (DuckDB's sniffer rejects some headers).
        plain = tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False)
        with gzip.open(os.path.join(DATA, g), "rt") as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    plain.write("\t".join(line.split()[:2]) + "\n")
        plain.close()
        path = plain.name
        for pattern, query in [("triangle", TRIANGLE), ("4-clique", CLIQUE4)]:
            con = duckdb.connect()
            # A bounded spill (a 4-clique's pairwise intermediate fills a disk).
            con.execute(f"SET temp_directory = '{tempfile.gettempdir()}/wcoj_duckdb'")
            con.execute("SET max_temp_directory_size = '4GB'")
            con.execute(
                f"CREATE TABLE edge AS SELECT * FROM read_csv('{path}', delim='\\t', header=false, "
                "columns={'u': 'INTEGER', 'v': 'INTEGER'})"
            )
            start = time.perf_counter()
            con.execute(
                "CREATE TABLE e AS SELECT u AS x, v AS y FROM edge WHERE u <> v "
                "UNION SELECT v, u FROM edge WHERE u <> v"
            )
            try:
                (n,) = con.execute(query).fetchone()
                result = f"{n} | {time.perf_counter() - start:.3f}"
            except duckdb.Error as e:
                seconds = time.perf_counter() - start
                result = f"— | failed after {seconds:.1f} s: {str(e).splitlines()[0][:80]}"
            print(f"| {os.path.basename(g)} | {pattern} | {result} |", flush=True)
            con.close()
        os.unlink(path)


if __name__ == "__main__":
    main()
