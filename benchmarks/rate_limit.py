"""What the API's rate limit costs per request: the shared bucket in PostgreSQL against the process's own.

Run from the repository root against a loaded database (DATABASE_URL, or the embedded one of MEDRAG_HOME):
`.venv/bin/python benchmarks/rate_limit.py [--calls 3000] [--out benchmarks/results/rate_limit.json]`. Both limiters
take `--calls` tokens, one client per 100 calls (a busy API's mix of clients), at a rate no call is refused, on one
connection pool as the server has. Prints a table (wall p50 / p95 per call; CPU per call: this process's and
PostgreSQL's, read from /proc) and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

from check import postgres_cpu_seconds  # noqa: E402

from medrag.core.db import get_engine  # noqa: E402
from medrag.serve.guard import RateLimiter, SharedRateLimiter  # noqa: E402

RESULTS = REPO_ROOT / "benchmarks" / "results" / "rate_limit.json"
ALWAYS = 10**9  # tokens a minute: no call waits


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(limiter, calls: int) -> dict[str, float]:
    """Per call: wall p50 / p95 (ms), and CPU (ms) of this process and of PostgreSQL."""
    times = []
    cpu, pg = _cpu(), postgres_cpu_seconds()
    for n in range(calls):
        started = time.perf_counter()
        assert limiter.wait_seconds(f"client-{n // 100}") == 0
        times.append((time.perf_counter() - started) * 1000)
    cpu, pg = _cpu() - cpu, postgres_cpu_seconds() - pg
    times.sort()
    return {"calls": calls, "p50_ms": round(times[len(times) // 2], 3),
            "p95_ms": round(times[int(len(times) * 0.95)], 3), "client_cpu_ms": round(cpu * 1000 / calls, 3),
            "postgres_cpu_ms": round(pg * 1000 / calls, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    engine = get_engine()
    shared = SharedRateLimiter(engine, ALWAYS)
    shared.wait_seconds("warm-up")
    report = {"process": measure(RateLimiter(ALWAYS), args.calls), "database": measure(shared, args.calls)}
    print(f"{'store':10}{'p50 ms':>10}{'p95 ms':>10}{'client CPU ms':>15}{'PostgreSQL CPU ms':>19}")
    for store, figures in report.items():
        print(f"{store:10}{figures['p50_ms']:>10}{figures['p95_ms']:>10}{figures['client_cpu_ms']:>15}"
              f"{figures['postgres_cpu_ms']:>19}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
