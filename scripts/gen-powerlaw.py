#!/usr/bin/env python3
"""A power-law graph for benchmarking `fixlog match` (Chung-Lu: each edge's two ends are
drawn with probability proportional to a weight w_i = (i + offset) ** -alpha), written
as an edge list `src<TAB>dst`, one line per drawn edge (self-loops skipped; repeated
edges are left for the loader, which stores each once). Node ids are a random
permutation of 0..n, so the id order says nothing about degrees, as in real data.

With the defaults (400K nodes, 3.2M drawn edges, alpha 0.75, offset 10) read with
`--undirected`: about 3M distinct edges, hubs of about 10K neighbours: a scaled-down
copy of the 4M-node, 30M-edge graph with hubs of about 30K neighbours on which
counting in id order was slow.

    scripts/gen-powerlaw.py --out /tmp/powerlaw.tsv
"""

import argparse
import itertools
import random


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=400_000)
    p.add_argument("--edges", type=int, default=3_200_000, help="edges drawn")
    p.add_argument("--alpha", type=float, default=0.75)
    p.add_argument("--offset", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    rng = random.Random(a.seed)
    cum = list(itertools.accumulate((i + a.offset) ** -a.alpha for i in range(a.nodes)))
    ids = list(range(a.nodes))
    rng.shuffle(ids)
    with open(a.out, "w") as f:
        written = 0
        while written < a.edges:
            batch = min(1 << 20, a.edges - written)
            src = rng.choices(ids, cum_weights=cum, k=batch)
            dst = rng.choices(ids, cum_weights=cum, k=batch)
            f.write("".join(f"{s}\t{d}\n" for s, d in zip(src, dst) if s != d))
            written += batch


if __name__ == "__main__":
    main()
