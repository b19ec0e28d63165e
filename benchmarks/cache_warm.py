"""The code cache after a refresh: users' first asks with the cache left cold, and after the refresh's warm-up.

Run against the indexed database of `make run` (MEDRAG_HOME / DATABASE_URL as for the CLI):
  .venv/bin/python benchmarks/cache_warm.py [--out docs/results/bench_cache_warm.json]
Every question of the retrieval dev and holdout sets is searched once (medrag_search, top 10, with its embedding) so
the cache holds them, as users' asks would have left it. A refresh is then stood in for by moving one release's
loaded_at by a random fraction of a second (a new data version, as a load writes one; moved back at the end):
- cold: the same searches again, each the first ask on the new data (the finder runs and its answer is kept);
- warmed: another new version, `warm_code_cache` (what the refresh ends with), then the same searches;
- asked again: the same searches once more, on the same data (every one kept, as long after a refresh).
The search's SQL milliseconds (p50 / p95) per phase, and the warm-up's calls, seconds and milliseconds a call, one
connection, so one core of PostgreSQL's CPU a call. Leaves medrag_code_cache holding the warmed answers.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from sqlalchemy import text

from medrag.cli.retrieval import query_embedder
from medrag.codes.cache import warm_code_cache
from medrag.core.db import get_engine
from medrag.retrieval.evaluation import load_questions
from medrag.retrieval.search import search

REPO = Path(__file__).resolve().parents[1]
NEW_VERSION = "UPDATE release SET loaded_at = loaded_at + :by WHERE id = (SELECT min(id) FROM release)"


def percentiles(values: list[float]) -> dict[str, float]:
    """p50 and p95 of milliseconds."""
    ordered = sorted(values)
    return {"p50_ms": round(statistics.median(ordered), 1),
            "p95_ms": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "cache_warm.json")
    parser.add_argument("--questions", type=Path, nargs="+",
                        default=[REPO / "eval" / "retrieval_dev.jsonl", REPO / "eval" / "retrieval_holdout.jsonl"])
    args = parser.parse_args()
    engine, embedder = get_engine(), query_embedder()
    questions = list(dict.fromkeys(q.question for path in args.questions for q in load_questions(path)))

    def searched() -> list[float]:
        return [search(engine, question, k=10, embedder=embedder).timings_ms["sql"] for question in questions]

    searched()  # the cache as users left it
    phases: dict[str, dict[str, float]] = {}
    moved = 0  # microseconds, drawn so that no earlier run's version (and its kept answers) comes back
    try:
        for phase in ("cold", "warmed"):
            step = random.randint(1, 10**6)
            with engine.begin() as conn:
                conn.execute(text(NEW_VERSION), {"by": f"{step} microseconds"})
            moved += step
            if phase == "warmed":
                started = time.perf_counter()
                stats = warm_code_cache(engine)
                warm = {**stats.as_json(), "ms_per_call": round((time.perf_counter() - started) * 1000
                                                                / max(stats.asked, 1), 1)}
            phases[phase] = percentiles(searched())
            print(phase, json.dumps(phases[phase]), flush=True)
        phases["asked_again"] = percentiles(searched())
    finally:
        with engine.begin() as conn:
            conn.execute(text(NEW_VERSION), {"by": f"{-moved} microseconds"})
    report = {"benchmark": "benchmarks/cache_warm.py: medrag_search on the retrieval dev + holdout questions after a "
                           "new data version, cache cold against warmed by the refresh's warm-up",
              "questions": len(questions), "first_asks_after_refresh": phases, "warm_up": warm}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
