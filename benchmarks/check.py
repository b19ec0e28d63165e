"""`medrag check FILE` throughput on the make-run database: lines per second for a file of 10,000 claim lines.

Run from the repository root against a loaded database (DATABASE_URL, or the embedded one of MEDRAG_HOME):
`.venv/bin/python benchmarks/check.py [--lines 10000] [--repeat 2] [--out benchmarks/results/check.json]`. Prints a
table and writes JSON. The file is made from the database's own releases (seeded, so every run checks the same
lines): HCPCS codes of the 2025Q1 release, a tenth of them terminated, modifiers, one to three ICD-10-CM codes of
the fiscal year's release (headers and codes without their 7th character among them), states, and a few bad dates.
Each run times the whole command (`medrag check FILE --format csv`, a new process) and the statement alone
(medrag_check_lines over the same lines, batch by batch, on one connection). CPU per 1,000 lines is the client's
(user + system) and PostgreSQL's (its processes, read from /proc before and after); the command's own server process
ends with it, before it can be read, so PostgreSQL's CPU is measured on the statement's run.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import text

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPO_ROOT / "benchmarks" / "results" / "check.json"
STATES = ("CA", "NY", "TX", "FL", "OH", "WA", "GA", "PA")


def make_lines(engine, count: int, seed: int = 7) -> list[dict[str, str]]:
    """Claim lines drawn from the loaded releases, mostly valid, with the errors coders make mixed in."""
    rng = random.Random(seed)
    with engine.connect() as conn:
        hcpcs = conn.execute(text(
            "SELECT code, termination_date IS NOT NULL FROM hcpcs_code h JOIN release r ON r.id = h.release_id "
            "WHERE r.source = 'hcpcs' AND r.label = '2025Q1' AND h.kind = 'procedure' ORDER BY code")).all()
        modifiers = conn.execute(text(
            "SELECT code FROM hcpcs_code h JOIN release r ON r.id = h.release_id "
            "WHERE r.label = '2025Q1' AND h.kind = 'modifier' AND h.termination_date IS NULL ORDER BY code")
        ).scalars().all()
        dx = conn.execute(text(
            "SELECT c.code FROM icd10cm_code c JOIN release r ON r.id = c.release_id "
            "WHERE r.source = 'icd10cm' AND r.label = 'FY2025' ORDER BY c.code")).scalars().all()
    valid = [code for code, ended in hcpcs if not ended]
    ended = [code for code, terminated in hcpcs if terminated]
    lines = []
    for number in range(count):
        day = f"2025-0{rng.randint(1, 3)}-{rng.randint(1, 28):02d}" if rng.random() > 0.01 else "2025-02-30"
        code = rng.choice(ended) if rng.random() < 0.1 else rng.choice(valid)
        lines.append({"line_id": f"L{number:05d}", "dos": day, "hcpcs": code,
                      "modifiers": ";".join(rng.sample(modifiers, rng.randint(0, 2))),
                      "dx": ";".join(rng.sample(dx, rng.randint(1, 3))),
                      "state": rng.choice(STATES)})
    return lines


def postgres_cpu_seconds() -> float:
    """User + system CPU of every postgres process this user may read (the embedded server's), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().split(")")[-1].split()
            name = stat.read_text().split("(")[1].split(")")[0]
        except OSError:
            continue
        if name.startswith("postgres"):
            total += int(fields[11]) + int(fields[12])
    return total / ticks


def time_command(path: Path) -> dict[str, float]:
    """One `medrag check FILE --format csv` process: seconds and its own CPU."""
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([str(REPO_ROOT / ".venv" / "bin" / "medrag"), "check", str(path), "--format", "csv"],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        sys.exit(f"medrag check failed: {done.stderr.strip().splitlines()[-1]}")
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    client = ((after_children.ru_utime - before_children.ru_utime)
              + (after_children.ru_stime - before_children.ru_stime))
    return {"seconds": seconds, "client_cpu": client, "pg_cpu": None, "findings": len(done.stdout.splitlines()) - 1}


def time_statement(engine, lines: list[dict[str, str]]) -> dict[str, float]:
    """medrag_check_lines over the lines, batch by batch, in this process."""
    from medrag.check.checker import BATCH_LINES, check_lines

    with engine.connect() as conn:  # the pool's connection, opened before the clock starts and kept open after
        conn.execute(text("SELECT 1"))
    pg_before, cpu_before, started = postgres_cpu_seconds(), time.process_time(), time.perf_counter()
    for start in range(0, len(lines), BATCH_LINES):
        check_lines(engine, lines[start:start + BATCH_LINES])
    return {"seconds": time.perf_counter() - started, "client_cpu": time.process_time() - cpu_before,
            "pg_cpu": postgres_cpu_seconds() - pg_before}


def main() -> None:
    """Make the file, time the runs, print the table and write the JSON."""
    from medrag.core.db import get_engine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    engine = get_engine()
    lines = make_lines(engine, args.lines)
    path = REPO_ROOT / "benchmarks" / "results" / "check_lines.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(lines[0]))
        writer.writeheader()
        writer.writerows(lines)
    runs = []
    for _ in range(args.repeat):
        for what, timed in (
                ("medrag check FILE --format csv (a new process)", lambda: time_command(path)),
                ("medrag_check_lines alone, 500 lines a statement", lambda: time_statement(engine, lines))):
            figures = timed()
            per_1000 = 1000 / len(lines)
            runs.append({"what": what, "lines": len(lines), "seconds": round(figures["seconds"], 2),
                         "lines_per_s": round(len(lines) / figures["seconds"], 1),
                         "client_cpu_s_per_1000_lines": round(figures["client_cpu"] * per_1000, 3),
                         "postgres_cpu_s_per_1000_lines": (None if figures["pg_cpu"] is None
                                                           else round(figures["pg_cpu"] * per_1000, 3)),
                         **({"findings": figures["findings"]} if "findings" in figures else {})})
    print(f"{'run':<52} {'lines':>6} {'s':>7} {'lines/s':>8} {'client CPU s/1k':>16} {'PostgreSQL CPU s/1k':>20}")
    for run in runs:
        print(f"{run['what']:<52} {run['lines']:>6} {run['seconds']:>7} {run['lines_per_s']:>8} "
              f"{run['client_cpu_s_per_1000_lines']:>16} {str(run['postgres_cpu_s_per_1000_lines']):>20}")
    report = {"benchmark": "check", "cpus": os.cpu_count(), "goal_lines_per_s": 300, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
