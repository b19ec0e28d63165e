"""`medrag codes` latency, warm: p50 / p95 per call over the dev-set terms, lexical only and with vectors.

Run from the repository root against a loaded database (DATABASE_URL, or the embedded one of MEDRAG_HOME):
`.venv/bin/python benchmarks/codes.py [--terms eval/codes_dev.jsonl] [--repeat 3] [--modes lexical,vector,cold]
[--cold-calls 10]`. Prints a table and writes benchmarks/results/codes.json. The vector mode runs only when the
current code documents have embeddings. One untimed pass warms the process first; the timed passes then reuse the
finder's cached code details, as a long-running process would. The cold mode times what a coder at a shell waits
for: a new `medrag codes TERM` process per call (start-up, query embedding model, lookups), for the first
--cold-calls terms.
Each warm mode also reports CPU per call: the database server's (its sessions' processes, read from /proc, so only
for a server on this machine; null otherwise) and this process's own, over the timed passes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPO_ROOT / "benchmarks" / "results" / "codes.json"
DEV_SET = REPO_ROOT / "eval" / "codes_dev.jsonl"


def percentiles(values: list[float]) -> dict[str, float]:
    """p50, p95 and max of values in milliseconds, rounded for the report."""
    return {"p50": round(float(np.percentile(values, 50)), 1), "p95": round(float(np.percentile(values, 95)), 1),
            "max": round(max(values), 1)}


def server_cpu_seconds(pids: set[int]) -> float | None:
    """User + system CPU seconds of the server processes pids (/proc), or None when one cannot be read (a remote
    server, another user's /proc)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def track_backends(engine: Any) -> set[int]:
    """The server process id of each connection the engine opens from now on (the pool emptied first)."""
    from sqlalchemy import event

    pids: set[int] = set()

    def remember(dbapi_connection: Any, _record: Any) -> None:
        with dbapi_connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pids.add(cursor.fetchone()[0])
        dbapi_connection.commit()

    event.listen(engine, "connect", remember)
    engine.dispose()
    return pids


def run_mode(finder: Any, terms: list[Any], repeat: int, pids: set[int]) -> dict[str, Any]:
    """Warm up with one pass, then time `repeat` passes: per-call latency, CPU, rounds, accuracy of the last pass."""
    for item in terms:
        finder.find(item.term)
    server_before, client_before = server_cpu_seconds(pids), time.process_time()
    totals, rounds, stages = [], [], {}
    hits1 = hits5 = 0
    for number in range(repeat):
        for item in terms:
            started = time.perf_counter()
            search = finder.find(item.term)
            totals.append((time.perf_counter() - started) * 1000)
            rounds.append(sum(1 for name in search.timings_ms if name.startswith("round_")))
            for name, ms in search.timings_ms.items():
                stages.setdefault(name, []).append(ms)
            if number == repeat - 1:
                codes = [result.code for result in search.results]
                hits1 += bool(codes) and codes[0] in item.expected
                hits5 += any(code in item.expected for code in codes[:5])
    server_after = server_cpu_seconds(pids)
    server_ms = (None if server_before is None or server_after is None
                 else round((server_after - server_before) * 1000 / len(totals), 1))
    return {
        "calls": len(totals), "latency_ms": percentiles(totals),
        "cpu_ms_per_call": {"server": server_ms,
                            "client": round((time.process_time() - client_before) * 1000 / len(totals), 1)},
        "stages_ms": {name: percentiles(values) for name, values in sorted(stages.items()) if name != "total"},
        "mean_rounds": round(statistics.mean(rounds), 2),
        "top1": round(hits1 / len(terms), 3), "top5": round(hits5 / len(terms), 3),
    }


def run_cold(terms: list[Any], calls: int) -> dict[str, Any]:
    """A new `medrag codes TERM --json` process per term: wall-clock time per call and accuracy of what it printed."""
    medrag = Path(sys.executable).with_name("medrag")
    totals, hits1, hits5 = [], 0, 0
    chosen = terms[:calls]
    for item in chosen:
        started = time.perf_counter()
        completed = subprocess.run([str(medrag), "codes", item.term, "--json"], capture_output=True, text=True,
                                   check=True)
        totals.append((time.perf_counter() - started) * 1000)
        codes = [result["code"] for result in json.loads(completed.stdout)["results"]]
        hits1 += bool(codes) and codes[0] in item.expected
        hits5 += any(code in item.expected for code in codes[:5])
    return {"calls": len(totals), "latency_ms": percentiles(totals), "mean_rounds": None,
            "top1": round(hits1 / len(chosen), 3), "top5": round(hits5 / len(chosen), 3)}


def database_facts(engine: Any) -> dict[str, Any]:
    """Release labels and how many current code documents have vectors."""
    from sqlalchemy import text

    with engine.connect() as conn:
        releases = conn.execute(text(
            "SELECT source, label FROM release WHERE is_current AND source IN ('icd10cm', 'hcpcs') ORDER BY source"
        )).all()
        embedded = conn.execute(text(
            "SELECT d.source, count(v.chunk_id), count(*) FROM chunk c LEFT JOIN chunk_vector v ON v.chunk_id = c.id "
            "JOIN document d ON d.id = c.document_id WHERE d.is_current AND d.source IN ('icd10cm', 'hcpcs') "
            "GROUP BY d.source ORDER BY d.source"
        )).all()
    return {"releases": {source: label for source, label in releases},
            "code_chunks_embedded": {source: f"{done}/{total}" for source, done, total in embedded}}


def main() -> None:
    """Benchmark both modes and write the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--terms", type=Path, default=DEV_SET)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--modes", default="lexical,vector,cold", help="Comma-separated: lexical, vector, cold.")
    parser.add_argument("--cold-calls", type=int, default=10, help="Terms timed in the cold mode.")
    args = parser.parse_args()
    wanted = set(args.modes.split(","))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from medrag.cli.retrieval import query_embedder
    from medrag.codes import SYSTEMS, CodeFinder
    from medrag.codes.evaluation import read_dev_set
    from medrag.codes.plan import has_code_embeddings
    from medrag.core.db import get_engine

    engine = get_engine()
    pids = track_backends(engine)
    terms = read_dev_set(args.terms)
    modes: dict[str, Any] = {}
    if "lexical" in wanted:
        with CodeFinder(engine) as finder:
            modes["lexical"] = run_mode(finder, terms, args.repeat, pids)
    if "vector" in wanted and any(has_code_embeddings(engine, system) for system in SYSTEMS):
        with CodeFinder(engine, embedder=query_embedder()) as finder:
            modes["vector"] = run_mode(finder, terms, args.repeat, pids)
    if "cold" in wanted:
        modes["cold"] = run_cold(terms, args.cold_calls)
    report = {
        "terms": len(terms), "repeat": args.repeat, "database": database_facts(engine), "modes": modes,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average_1m": round(os.getloadavg()[0], 2)},
    }
    print(f"{'mode':<8} {'calls':>6} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'rounds':>7} {'top-1':>6} {'top-5':>6} "
          f"{'server CPU ms':>14} {'client CPU ms':>14}")
    for name, mode in modes.items():
        latency = mode["latency_ms"]
        rounds = "-" if mode["mean_rounds"] is None else f"{mode['mean_rounds']:.2f}"
        cpu = mode.get("cpu_ms_per_call") or {}
        print(f"{name:<8} {mode['calls']:>6} {latency['p50']:>8.1f} {latency['p95']:>8.1f} {latency['max']:>8.1f} "
              f"{rounds:>7} {mode['top1']:>6.3f} {mode['top5']:>6.3f} {str(cpu.get('server', '-')):>14} "
              f"{str(cpu.get('client', '-')):>14}")
    print(f"database: {report['database']}; load average {report['machine']['load_average_1m']}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
