"""Query embeddings kept by text (MEDRAG_QUERY_VECTORS_KEPT): `medrag serve` with none kept against the default.

Run against the indexed database of `make run` (MEDRAG_HOME / DATABASE_URL as for the CLI), its code cache warm:
  .venv/bin/python benchmarks/query_vectors.py [--rounds 2] [--seconds 20] [--out docs/results/bench_query_vectors.json]
Each round runs benchmarks/serve.py at 8 clients with the code finder's cache as it is (`--finder-cache warm`) and the
server's MEDRAG_QUERY_VECTORS_KEPT 0, then the default; alternating spreads whatever else the machine does over both.
The figures of benchmarks/finder_cache.py per run, their medians per setting and the ratios to none kept.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from finder_cache import medians_and_ratios, serve_run, write_and_print

from medrag.core.config import QUERY_VECTORS_KEPT

REPO = Path(__file__).resolve().parents[1]
SETTINGS = {"none kept": "0", "kept": str(QUERY_VECTORS_KEPT)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0, help="Length of each load run.")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "query_vectors.json")
    args = parser.parse_args()
    runs = []
    for round_number in range(1, args.rounds + 1):
        for setting, kept in SETTINGS.items():
            figures = serve_run("warm", args.seconds, {"MEDRAG_QUERY_VECTORS_KEPT": kept})
            runs.append({"round": round_number, "query_vectors": setting, **figures})
            print(json.dumps(runs[-1]), flush=True)
    medians, ratios = medians_and_ratios(runs, "query_vectors", list(SETTINGS), "none kept")
    report = {"benchmark": f"benchmarks/serve.py --clients 8 --seconds {args.seconds:g} --finder-cache warm, "
                           f"MEDRAG_QUERY_VECTORS_KEPT 0 and {QUERY_VECTORS_KEPT}, {args.rounds} rounds",
              "runs": runs, "medians": medians, "kept_over_none": ratios["kept"]}
    write_and_print(report, args.out)

if __name__ == "__main__":
    main()
