"""The code finder's or the search statement's SQL before and after a change, timed in pairs: the difference per
call with its 95% interval.

Run from the repository root against a loaded database (DATABASE_URL, or the embedded one of MEDRAG_HOME):
`.venv/bin/python benchmarks/paired.py --before REV [--entry codes|search] [--terms eval/codes_dev.jsonl,...]
[--top 5] [--passes 3]`. Prints a table and writes benchmarks/results/paired.json.

On a shared machine the same code's p95 moves by more between runs minutes apart than a change of a few milliseconds
does, so two benchmark runs cannot tell such a change apart. Here both versions run side by side on the same database:
every function in sql/*.sql or generated.sql whose definition differs between REV and the working tree, and the entry
itself (medrag_find_codes, or medrag_search_documents with --entry search), is installed into two scratch schemas (the
REV definitions and the working tree's), the entry of each set to read its own schema first. One session runs each
term through both, in random order, so slow spells of the machine fall on both, and so does whatever differs between
database sessions: with one session per version, two runs of the same change differed by more than their 95% intervals
allowed (a session-wide bias of about a millisecond either way). The public functions are not touched; the schemas are
dropped at the end. Only function bodies are compared: for a change of indexes, create the old ones beside the new for
the run (and drop them after); generated.sql's functions are compared as each revision's Python renders them. A change
of tables needs the two codes benchmarked on their own databases.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
SQL_DIR = REPO_ROOT / "sql"
RESULTS = REPO_ROOT / "benchmarks" / "results" / "paired.json"
# what each entry runs: the function timed, and its call (term, top, embedding)
ENTRIES = {"codes": ("medrag_find_codes", "{schema}.medrag_find_codes(%(term)s, NULL, NULL, %(top)s, %(embedding)s)"),
           "search": ("medrag_search_documents",
                      "count(*) FROM {schema}.medrag_search_documents(%(embedding)s, %(term)s, %(top)s, '{{}}')")}
SCHEMAS = {"before": "medrag_paired_before", "after": "medrag_paired_after"}
# generated.sql creates medrag_settings() with a plain CREATE (it is dropped first): both forms are definitions
_CREATE = r"^CREATE (?:OR REPLACE )?FUNCTION "
_FUNCTION = re.compile(_CREATE + r"(\w+)\(.*?^\$\$;$", re.S | re.M)


def functions(script: str) -> dict[str, str]:
    """Each function definition of a SQL script by name (a name defined twice keeps its last definition).

    A function a DO block creates (a constant such as medrag_code_synonyms(), built while the script runs:
    medrag.core.constants_sql) is only a template here: it is left out, and both versions read the installed one."""
    found = {}
    for match in _FUNCTION.finditer(script):
        if "$function$" in match.group(0):
            # the template reached past its own $function$ into the next definition: read again from that one
            found.update(functions(match.group(0)[match.group(0).rindex("$function$") + len("$function$"):]))
        else:
            found[match.group(1)] = match.group(0)
    return found


# renders generated.sql with the medrag package first on sys.path (a revision's, unpacked), and says if it was not
_RENDER = ("import sys, medrag; from medrag.schema.generated_sql import generated_script; "
           "assert medrag.__file__.startswith(sys.argv[1]), medrag.__file__; print(generated_script())")


def generated_definitions(revision: str | None) -> str:
    """generated.sql as the Python rules of a git revision render it, or the working tree's when revision is None."""
    if revision is None:
        from medrag.schema.generated_sql import generated_script

        return generated_script()
    with tempfile.TemporaryDirectory() as unpacked:
        archive = subprocess.run(["git", "archive", revision, "medrag"], cwd=REPO_ROOT, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", unpacked], input=archive, check=True)
        rendered = subprocess.run([sys.executable, "-c", _RENDER, unpacked], cwd=unpacked, capture_output=True,
                                  text=True, env={**os.environ, "PYTHONPATH": unpacked})
        if rendered.returncode != 0:
            raise SystemExit(f"error: cannot render generated.sql at {revision}: "
                             f"{rendered.stderr.strip().splitlines()[-1]}")
        return rendered.stdout


def definitions(revision: str | None) -> dict[str, str]:
    """The function definitions of sql/*.sql and of generated.sql at a git revision, or in the working tree when
    revision is None."""
    found: dict[str, str] = functions(generated_definitions(revision))
    for path in sorted(SQL_DIR.glob("*.sql")):
        if revision is None:
            script = path.read_text()
        else:
            shown = subprocess.run(["git", "show", f"{revision}:{path.relative_to(REPO_ROOT)}"], cwd=REPO_ROOT,
                                   capture_output=True, text=True)
            script = shown.stdout if shown.returncode == 0 else ""
        found.update(functions(script))
    return found


def install(conn: Any, schema: str, chosen: dict[str, str], entry: str) -> None:
    """Create the schema afresh with the chosen definitions, each qualified by it; the entry reads that schema first."""
    conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    conn.execute(f"CREATE SCHEMA {schema}")
    # a body is read at call time, through the entry's search_path: checked now, it would call the public versions
    conn.execute("SET check_function_bodies = off")
    for name, body in chosen.items():
        conn.execute(re.sub(_CREATE + rf"{name}\(", f"CREATE FUNCTION {schema}.{name}(", body, count=1, flags=re.M))
    # the functions it calls by their plain names (inlined legs, the finder's statements) resolve to this schema's
    # versions first, in any session
    conn.execute(f"ALTER FUNCTION {schema}.{entry} SET search_path = {schema}, public")


def read_terms(paths: list[Path]) -> list[str]:
    """The terms (code sets) or questions (retrieval sets) of JSONL eval files, in file order."""
    terms = []
    for path in paths:
        for line in path.read_text().splitlines():
            if line.strip():
                item = json.loads(line)
                terms.append(item.get("term") or item["question"])
    return terms


def summary(values: list[float]) -> dict[str, float]:
    """Mean, p50 and p95 in milliseconds, rounded for the report."""
    return {"mean": round(float(np.mean(values)), 2), "p50": round(float(np.percentile(values, 50)), 2),
            "p95": round(float(np.percentile(values, 95)), 2)}


def main() -> None:
    """Install both versions, time every term on both in random order, report the paired difference."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="git revision whose sql/*.sql functions are the 'before'")
    parser.add_argument("--entry", choices=sorted(ENTRIES), default="codes",
                        help="codes: medrag_find_codes; search: the search statement (medrag_search_documents)")
    parser.add_argument("--terms", default="eval/codes_dev.jsonl", help="comma-separated JSONL eval files")
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import psycopg
    from pgvector.psycopg import register_vector

    from medrag.cli.retrieval import query_embedder
    from medrag.core.db import database_url, libpq_url

    entry, call = ENTRIES[args.entry]
    old, new = definitions(args.before), definitions(None)
    changed = sorted({name for name in {*old, *new} if old.get(name) != new.get(name)})
    if not changed:
        raise SystemExit(f"error: no function in sql/*.sql or generated.sql differs between {args.before} "
                         "and the working tree")
    # a function one side lacks is installed on the other side only (a helper added or removed by the change)
    chosen = {side: {name: source[name] for name in {*changed, entry} if name in source}
              for side, source in (("before", old), ("after", new))}
    terms = read_terms([REPO_ROOT / path for path in args.terms.split(",")])
    url = libpq_url(database_url())
    with psycopg.connect(url, autocommit=True) as admin:
        register_vector(admin)
        # the search reads every source's vectors, the finder the code sets'
        probe = ("SELECT EXISTS (SELECT FROM chunk_vector)" if args.entry == "search" else
                 "SELECT medrag_has_embeddings('icd10cm') OR medrag_has_embeddings('hcpcs')")
        embedded = admin.execute(probe).fetchone()[0]
        embedder = query_embedder() if embedded else None
        embeddings = {term: (np.array(embedder.embed(term), dtype=np.float32) if embedder else None) for term in terms}
        try:
            for side, schema in SCHEMAS.items():
                install(admin, schema, chosen[side], entry)

            def timed(side: str, term: str) -> float:
                started = time.perf_counter()
                admin.execute(f"SELECT {call.format(schema=SCHEMAS[side])}",
                              {"term": term, "top": args.top, "embedding": embeddings[term]}).fetchall()
                return (time.perf_counter() - started) * 1000

            for term in terms:  # one untimed pass: both versions plan and cache what they will reuse
                timed("before", term)
                timed("after", term)
            times: dict[str, list[float]] = {"before": [], "after": []}
            order = random.Random(args.seed)
            total = args.passes * len(terms)
            for number in range(args.passes):
                for term in terms:
                    sides = ["before", "after"]
                    order.shuffle(sides)
                    for side in sides:
                        times[side].append(timed(side, term))
                print(f"pass {number + 1}/{args.passes}: {len(times['after'])}/{total} pairs", flush=True)
        finally:
            for schema in SCHEMAS.values():
                admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")

    difference = np.array(times["before"]) - np.array(times["after"])
    half_width = 1.96 * difference.std(ddof=1) / np.sqrt(len(difference))
    report = {
        "before": args.before, "entry": entry, "changed_functions": changed, "terms": args.terms, "top": args.top,
        "passes": args.passes, "pairs": len(difference), "vectors": bool(embedded),
        "before_ms": summary(times["before"]), "after_ms": summary(times["after"]),
        "saved_ms": {"mean": round(float(difference.mean()), 2), "median": round(float(np.median(difference)), 2),
                     "ci95": [round(float(difference.mean() - half_width), 2),
                              round(float(difference.mean() + half_width), 2)]},
        "machine": {"cpus": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 2)},
    }
    print(f"changed: {', '.join(changed)}")
    print(f"{'':<8} {'mean ms':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for side in ("before", "after"):
        row = report[f"{side}_ms"]
        print(f"{side:<8} {row['mean']:>8.1f} {row['p50']:>8.1f} {row['p95']:>8.1f}")
    saved = report["saved_ms"]
    low, high = saved["ci95"]
    print(f"saved per call: mean {saved['mean']:.2f} ms (95% interval {low:.2f} .. {high:.2f}), "
          f"median {saved['median']:.2f} ms, {len(difference)} pairs")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
