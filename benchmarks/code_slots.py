"""How often the code finder changes what a search lists: medrag_search (the finder fills the code slots) against
its search statement alone (medrag_search_documents: the search's own codes in those slots), per question.

Run from the repository root against a loaded database (DATABASE_URL, or the embedded one of MEDRAG_HOME):
`.venv/bin/python benchmarks/code_slots.py [--sets eval/retrieval_dev.jsonl,eval/retrieval_holdout.jsonl] [-k 10]
[--out benchmarks/results/code_slots.json]`. For each question: whether the search lists a code at all (the finder
is asked only then), whether the finder changed the top k (which documents, or their order), and whether it changed
hit@5 (an expected document in the first five). Also the query analysis medrag_search already has, to see which
cue predicts a change: the query's intent (medrag_query_intent: code, policy or none). Prints a table, writes JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sqlalchemy import text

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPO_ROOT / "benchmarks" / "results" / "code_slots.json"
sys.path.insert(0, str(REPO_ROOT))

from medrag.cli.retrieval import query_embedder  # noqa: E402
from medrag.core.db import get_engine  # noqa: E402
from medrag.retrieval.search import SearchFilters, embedding_text, vector_literal  # noqa: E402

_BOTH = text("""
    SELECT (SELECT coalesce(jsonb_agg(jsonb_build_array(s.source, s.key) ORDER BY s.rank), '[]')
            FROM medrag_search(CAST(:e AS vector), :q, :k, CAST(:f AS jsonb)) s) AS finder,
           (SELECT coalesce(jsonb_agg(jsonb_build_array(d.source, d.key) ORDER BY d.rank), '[]')
            FROM medrag_search_documents(CAST(:e AS vector), :q, :k, CAST(:f AS jsonb)) d) AS own,
           medrag_query_intent(:q) AS intent""")
CODE_SOURCES = ("hcpcs", "icd10cm")


def hit5(listed: list[list[str]], expected: set[tuple[str, str]]) -> bool:
    return any((source, key) in expected for source, key in listed[:5])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="eval/retrieval_dev.jsonl,eval/retrieval_holdout.jsonl")
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    engine, embedder = get_engine(), query_embedder()
    report = {}
    for name in args.sets.split(","):
        rows = []
        for line in Path(name).read_text().splitlines():
            if not line.strip():
                continue
            question = json.loads(line)
            expected = {(item["source"], item["key"]) for item in question.get("expected", [])}
            if not expected:
                continue
            filters = SearchFilters.from_json(question.get("filters"))
            with engine.connect() as conn:
                vector = vector_literal(embedder.embed(embedding_text(conn, question["question"], embedder)))
                found = conn.execute(_BOTH, {"e": vector, "q": question["question"], "k": args.k,
                                             "f": json.dumps(filters.as_json())}).one()
            lists_codes = any(source in CODE_SOURCES for source, _ in found.own)
            rows.append({"id": question.get("id"), "intent": found.intent, "lists_codes": lists_codes,
                         "changed": found.finder != found.own,
                         "hit5_finder": hit5(found.finder, expected), "hit5_own": hit5(found.own, expected)})
        by_intent = {}
        for intent in sorted({str(row["intent"]) for row in rows}):
            group = [row for row in rows if str(row["intent"]) == intent]
            by_intent[intent] = {"questions": len(group), "changed": sum(row["changed"] for row in group),
                                 "hit5_gained": sum(row["hit5_finder"] and not row["hit5_own"] for row in group),
                                 "hit5_lost": sum(row["hit5_own"] and not row["hit5_finder"] for row in group)}
        report[Path(name).stem] = {
            "questions": len(rows), "lists_codes": sum(row["lists_codes"] for row in rows),
            "changed": sum(row["changed"] for row in rows),
            "hit5_finder": round(sum(row["hit5_finder"] for row in rows) / len(rows), 4),
            "hit5_own": round(sum(row["hit5_own"] for row in rows) / len(rows), 4),
            "by_intent": by_intent, "rows": rows}
    print(f"{'set':20}{'questions':>10}{'list codes':>11}{'changed':>9}{'hit@5 finder':>14}{'hit@5 own':>11}")
    for name, figures in report.items():
        print(f"{name:20}{figures['questions']:>10}{figures['lists_codes']:>11}{figures['changed']:>9}"
              f"{figures['hit5_finder']:>14}{figures['hit5_own']:>11}")
        for intent, group in figures["by_intent"].items():
            print(f"  intent {intent:11}{group['questions']:>10}{'':>11}{group['changed']:>9}"
                  f"   gained {group['hit5_gained']}, lost {group['hit5_lost']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
