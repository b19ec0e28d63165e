"""The code finder's cache: what a first ask costs, and `medrag serve` under load with the cache off and on.

Run against the indexed database of `make run` (MEDRAG_HOME / DATABASE_URL as for the CLI):
  .venv/bin/python benchmarks/finder_cache.py [--rounds 2] [--seconds 20] [--out docs/results/bench_finder_cache.json]
Part 1, paired: for each retrieval dev question (its embedding, top 10, as medrag_search asks), medrag_find_codes
alone and medrag_find_codes_cached on an empty cache (a miss: the key, the finder, the write, the commit), in random
order per question on one connection; the mean difference with its 95% interval. This empties medrag_code_cache.
Part 2: each round runs benchmarks/serve.py at 8 clients with `--finder-cache off` (the finder on every request),
`on` (its cache emptied first, so the run includes filling it) and `warm` (the cache as the `on` run left it).
Alternating spreads whatever else the machine does over all three. Per run: mixed and search-only requests/s with
the CPU milliseconds a request cost the server and PostgreSQL, /search p50/p95, paced p95, errors; the median of
each figure per setting, and the ratios to off.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

from medrag.cli.retrieval import query_embedder
from medrag.core.db import database_url, libpq_url
from medrag.retrieval.evaluation import load_questions
from medrag.retrieval.search import vector_literal

REPO = Path(__file__).resolve().parents[1]
SETTINGS = ("off", "on", "warm")
FRESH = "SELECT medrag_find_codes(%s, NULL, NULL, 10, %s::vector)"
FIRST_ASK = "SELECT medrag_find_codes_cached(%s, NULL, NULL, 10, %s::vector) ->> 'cached'"
FIGURES = ("mixed_req_s", "mixed_server_cpu_ms", "mixed_postgres_cpu_ms", "search_only_req_s", "search_only_p50_ms",
           "search_only_p95_ms", "search_only_server_cpu_ms", "search_only_postgres_cpu_ms", "paced_8_search_p95_ms",
           "paced_32_search_p95_ms", "codes_p50_ms", "errors")


def figures(report: dict) -> dict[str, float]:
    """The figures of one benchmarks/serve.py report this comparison keeps."""
    mixed = next(run for run in report["runs"] if run["clients"] == 8)
    search_only = report["search_only_8_clients"]["routes"]["search"]
    paced = {run["clients"]: run["routes"]["search"] for run in report["paced_runs"]}
    return {"mixed_req_s": mixed["requests_per_s"], "mixed_server_cpu_ms": mixed["cpu_ms_per_request"]["server"],
            "mixed_postgres_cpu_ms": mixed["cpu_ms_per_request"]["postgres"],
            "search_only_req_s": report["search_only_8_clients"]["requests_per_s"],
            "search_only_server_cpu_ms": report["search_only_8_clients"]["cpu_ms_per_request"]["server"],
            "search_only_postgres_cpu_ms": report["search_only_8_clients"]["cpu_ms_per_request"]["postgres"],
            "search_only_p50_ms": search_only["p50_ms"], "search_only_p95_ms": search_only["p95_ms"],
            "paced_8_search_p95_ms": paced[8]["p95_ms"], "paced_32_search_p95_ms": paced[32]["p95_ms"],
            "codes_p50_ms": mixed["routes"]["codes"]["p50_ms"],
            "errors": sum(run["errors"] for run in (*report["runs"], report["search_only_8_clients"],
                                                     *report["paced_runs"]))}


def serve_run(finder_cache: str, seconds: float, env: dict[str, str] | None = None) -> dict[str, float]:
    """One benchmarks/serve.py run (8 clients, no CLI part) with the cache off or on, the server's environment
    changed by env."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "serve.json"
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "serve.py"), "--clients", "8", "--seconds",
                        str(seconds), "--cli-per-route", "0", "--finder-cache", finder_cache, "--out", str(out)],
                       check=True, stdout=subprocess.DEVNULL, env={**os.environ, **(env or {})})
        return figures(json.loads(out.read_text()))


def medians_and_ratios(runs: list[dict], column: str, settings: list[str], base: str
                       ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Each figure's median over the runs of each setting (runs[i][column]), and each other setting's ratio to base."""
    medians = {setting: {name: round(statistics.median(run[name] for run in runs if run[column] == setting), 1)
                         for name in FIGURES} for setting in settings}
    ratios = {setting: {name: round(medians[setting][name] / medians[base][name], 2) for name in FIGURES
                        if medians[base][name]} for setting in settings if setting != base}
    return medians, ratios


def write_and_print(report: dict, out: Path) -> None:
    """Write the report's JSON and print its medians, a row per figure and a column per setting."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    medians = report["medians"]
    print(f"{'figure':28}" + "".join(f" {setting:>10}" for setting in medians))
    for name in FIGURES:
        print(f"{name:28}" + "".join(f" {medians[setting][name]:>10}" for setting in medians))
    print(f"written {out}")


def timed(conn: psycopg.Connection, statement: str, question: str, vector: str) -> float:
    """Milliseconds of one statement."""
    started = time.perf_counter()
    conn.execute(statement, (question, vector)).fetchone()
    return (time.perf_counter() - started) * 1000


def first_ask_cost(questions_file: Path, seed: int) -> dict[str, object]:
    """Paired per question: the finder alone against the cache's first ask (a miss, kept), in random order."""
    questions = [question.question for question in load_questions(questions_file)]
    embedder = query_embedder()
    vectors = [vector_literal(embedder.embed(question)) for question in questions]
    rng = random.Random(seed)
    alone, first, differences = [], [], []
    with psycopg.connect(libpq_url(database_url()), autocommit=True) as conn:
        conn.execute("DELETE FROM medrag_code_cache")
        conn.execute(FRESH, ("warm up", None))
        for question, vector in zip(questions, vectors, strict=True):
            order = [FRESH, FIRST_ASK] if rng.random() < 0.5 else [FIRST_ASK, FRESH]
            times = {statement: timed(conn, statement, question, vector) for statement in order}
            alone.append(times[FRESH])
            first.append(times[FIRST_ASK])
            differences.append(times[FIRST_ASK] - times[FRESH])
    mean = statistics.fmean(differences)
    half = 1.96 * statistics.stdev(differences) / len(differences) ** 0.5
    return {"questions": len(differences), "finder_alone_p50_ms": round(statistics.median(alone), 2),
            "first_ask_p50_ms": round(statistics.median(first), 2),
            "first_ask_minus_finder_mean_ms": round(mean, 2),
            "ci95_ms": [round(mean - half, 2), round(mean + half, 2)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0, help="Length of each load run.")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "finder_cache.json")
    parser.add_argument("--questions", type=Path, default=REPO / "eval" / "retrieval_dev.jsonl")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    first_ask = first_ask_cost(args.questions, args.seed)
    print(f"first ask - finder alone, paired over {first_ask['questions']} questions: mean "
          f"{first_ask['first_ask_minus_finder_mean_ms']} ms, 95% interval {first_ask['ci95_ms']}", flush=True)
    runs = []
    for round_number in range(1, args.rounds + 1):
        for finder_cache in SETTINGS:
            runs.append({"round": round_number, "finder_cache": finder_cache, **serve_run(finder_cache, args.seconds)})
            print(json.dumps(runs[-1]), flush=True)
    medians, ratios = medians_and_ratios(runs, "finder_cache", list(SETTINGS), "off")
    report = {"benchmark": f"benchmarks/serve.py --clients 8 --seconds {args.seconds:g}, finder cache off, on "
                           f"(emptied first), warm, {args.rounds} rounds", "first_ask": first_ask, "runs": runs,
              "medians": medians, "over_off": ratios}
    write_and_print(report, args.out)


if __name__ == "__main__":
    main()
