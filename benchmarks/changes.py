"""What-changed digest speed on the make-run database: every loaded pair computed, and a 1,000-code list matched.

Run from the repository root against a loaded database (DATABASE_URL, or the embedded one of MEDRAG_HOME):
`.venv/bin/python benchmarks/changes.py [--codes 1000] [--repeat 2] [--out benchmarks/results/changes.json]`.
Prints a table and writes JSON. Each repeat (1) computes every change set again (each source's releases side by
side and the MCD export's own dates; `update_changes(..., force=True)`), then reads and renders the default digest
as markdown; (2) runs `medrag changes --codes FILE --json` as a new process with FILE holding 1,000 codes drawn
(seeded) from the loaded releases, half of them codes a change touches, written with and without their dots; (3)
matches the same list in this process alone. CPU is the client's (user + system) and PostgreSQL's (its processes,
from /proc); the command's own PostgreSQL backend ends with it, before it can be read, so PostgreSQL's CPU for a
code list is the in-process run's.
"""

from __future__ import annotations

import argparse
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
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from check import postgres_cpu_seconds  # noqa: E402 - the benchmarks folder is not a package

RESULTS = REPO_ROOT / "benchmarks" / "results" / "changes.json"
GOALS = {"compute_all_pairs_s": 10.0, "codes_command_s": 2.0}


def code_list(engine, count: int, seed: int = 11) -> list[str]:
    """`count` codes: half touched by a change, half not, as coders write them (ICD-10-CM with or without the dot)."""
    rng = random.Random(seed)
    with engine.connect() as conn:
        touched = conn.execute(text("SELECT DISTINCT item FROM release_change WHERE item_kind IN ('hcpcs', "
                                    "'icd10cm') ORDER BY item")).scalars().all()
        every = conn.execute(text("SELECT code FROM hcpcs_code UNION SELECT code FROM icd10cm_code ORDER BY 1")
                             ).scalars().all()
    chosen = rng.sample(touched, count // 2) + rng.sample(every, count - count // 2)
    return [code.replace(".", "") if rng.random() < 0.5 else code for code in chosen]


def compute_all(engine) -> dict[str, object]:
    """Every change set computed again, then the default digest read and rendered."""
    from medrag.changes.compute import update_changes
    from medrag.changes.digest import read_digest
    from medrag.changes.render import markdown
    from medrag.core.registry import SOURCE_NAMES

    pg_before, cpu_before, started = postgres_cpu_seconds(), time.process_time(), time.perf_counter()
    sets = [outcome for source in SOURCE_NAMES for outcome in update_changes(engine, source, force=True)]
    computed = time.perf_counter() - started
    with engine.connect() as conn:
        page = markdown(read_digest(conn))
    return {"what": "compute every change set, then the default digest as markdown",
            "change_sets": len(sets), "changes": sum(sum(item.counts.values()) for item in sets),
            "pairs": [f"{item.source} {item.from_label or '(own dates)'} -> {item.to_label}: "
                      f"{sum(item.counts.values())} in {item.seconds:.2f} s" for item in sets],
            "compute_s": round(computed, 2), "seconds": round(time.perf_counter() - started, 2),
            "markdown_bytes": len(page.encode()), "client_cpu_s": round(time.process_time() - cpu_before, 2),
            "postgres_cpu_s": round(postgres_cpu_seconds() - pg_before, 2)}


def codes_command(path: Path, count: int) -> dict[str, object]:
    """`medrag changes --codes FILE --json`, a new process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([str(REPO_ROOT / ".venv" / "bin" / "medrag"), "changes", "--codes", str(path), "--json"],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"medrag changes failed: {done.stderr.strip().splitlines()[-1]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    data = json.loads(done.stdout)
    return {"what": f"medrag changes --codes FILE --json ({count} codes, a new process)", "seconds": round(seconds, 2),
            "changes": sum(len(item["changes"]) for item in data["sets"]),
            "client_cpu_s": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2),
            "postgres_cpu_s": None}  # its backend process is gone by now


def codes_read(engine, codes: list[str]) -> dict[str, object]:
    """The same list matched in this process (the digest read and filtered, no start-up)."""
    from medrag.changes.digest import read_digest

    pg_before, cpu_before, started = postgres_cpu_seconds(), time.process_time(), time.perf_counter()
    with engine.connect() as conn:
        digest = read_digest(conn, codes=codes)
    return {"what": f"read_digest(codes=...) alone ({len(codes)} codes)",
            "seconds": round(time.perf_counter() - started, 2),
            "changes": sum(len(item.changes) for item in digest.sets),
            "client_cpu_s": round(time.process_time() - cpu_before, 2),
            "postgres_cpu_s": round(postgres_cpu_seconds() - pg_before, 2)}


def main() -> None:
    """Time the runs, print the table and write the JSON."""
    from medrag.core.db import get_engine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--codes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    engine = get_engine()
    runs = [compute_all(engine)]  # the change sets must exist before a code list is drawn from them
    codes = code_list(engine, args.codes)
    path = REPO_ROOT / "benchmarks" / "results" / "changes_codes.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(codes) + "\n")
    for repeat in range(args.repeat):
        if repeat:
            runs.append(compute_all(engine))
        runs += [codes_command(path, len(codes)), codes_read(engine, codes)]
    print(f"{'run':<70} {'s':>6} {'changes':>8} {'client CPU s':>13} {'PostgreSQL CPU s':>17}")
    for run in runs:
        print(f"{run['what']:<70} {run['seconds']:>6} {run['changes']:>8} {run['client_cpu_s']:>13} "
              f"{str(run['postgres_cpu_s']):>17}")
    for pair in runs[0]["pairs"]:
        print(f"  {pair}")
    report = {"benchmark": "changes", "cpus": os.cpu_count(), "goals": GOALS, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
