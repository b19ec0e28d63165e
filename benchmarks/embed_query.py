"""Query-embedding cost, sentence-transformers vs the ONNX path: cold process start-up and warm per-query latency.

Run from the repository root: `.venv/bin/python benchmarks/embed_query.py`. Prints a table and writes
benchmarks/results/embed_query.json. Queries are built from the real NCD titles in ../shared/cms (MEDRAG_CMS_DIR).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPO_ROOT / "benchmarks" / "results" / "embed_query.json"
CMS_DIR = Path(os.environ.get("MEDRAG_CMS_DIR", REPO_ROOT.parent / "shared" / "cms"))
NCD_TRKG = CMS_DIR / "mcd" / "ncd" / "ncd_csv" / "ncd_trkg.csv"
FIRST_QUERY = "Is acupuncture for chronic low back pain covered by Medicare?"

# Each program is what a CLI call does up to its first query vector, nothing more.
COLD_PROGRAMS = {
    "python_only": "pass",
    "sentence_transformers": (
        "import os; os.environ.setdefault('HF_HUB_OFFLINE', '1')\n"
        "from sentence_transformers import SentenceTransformer\n"
        "model = SentenceTransformer({model!r}, device='cpu')\n"
        "model.encode([{query!r}], normalize_embeddings=True)\n"
    ),
    "onnx": (
        "from medrag.retrieval.query_embedding import QueryEmbedder\n"
        "QueryEmbedder.for_model({model!r}, {cache!r}).embed({query!r})\n"
    ),
}


def ncd_queries(count: int) -> list[str]:
    """Questions a coder might ask, one per real NCD title."""
    from medrag.sources.mcd.release import ncd_documents, read_mcd_csv

    titles = sorted({doc["title"] for doc in ncd_documents(read_mcd_csv(NCD_TRKG)) if doc["title"]})
    if len(titles) < count:
        raise SystemExit(f"only {len(titles)} NCD titles in {NCD_TRKG}, {count} queries asked for")
    return [f"What does Medicare cover for {title}?" for title in titles[:count]]


def cold_seconds(program: str, runs: int) -> list[float]:
    """Wall-clock seconds of `runs` fresh interpreters running program, interpreter start-up included."""
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", program], check=True, cwd=REPO_ROOT, capture_output=True)
        timings.append(time.perf_counter() - started)
    return timings


def warm_milliseconds(embed: Any, queries: list[str]) -> list[float]:
    """Per-query latency of an already loaded embedder, after one untimed warm-up call."""
    embed(queries[0])
    timings = []
    for query in queries:
        started = time.perf_counter()
        embed(query)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def percentiles(values: list[float]) -> dict[str, float]:
    """p50 and p95 of values, rounded for the report."""
    return {"p50": round(float(np.percentile(values, 50)), 2), "p95": round(float(np.percentile(values, 95)), 2)}


def main() -> None:
    """Measure both paths and write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per cold measurement (median taken)")
    parser.add_argument("--queries", type=int, default=200, help="queries for the warm latency")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from medrag.core.config import load_settings
    from medrag.retrieval.query_embedding import BACKEND_ONNX, QueryEmbedder, export_onnx

    model_path = load_settings().embedding_model
    queries = ncd_queries(args.queries)
    # Other work on a small shared machine skews both paths (torch's thread pool most): recorded with the figures.
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="medrag-onnx-") as cache_dir:
        started = time.perf_counter()
        export_onnx(model_path, cache_dir)
        export_seconds = time.perf_counter() - started

        cold = {}
        for name, template in COLD_PROGRAMS.items():
            program = template.format(model=model_path, cache=cache_dir, query=FIRST_QUERY)
            runs = cold_seconds(program, args.runs)
            cold[name] = {"median_s": round(statistics.median(runs), 3), "runs_s": [round(run, 3) for run in runs]}

        onnx_embedder = QueryEmbedder.for_model(model_path, cache_dir)
        assert onnx_embedder.backend == BACKEND_ONNX
        warm_onnx = warm_milliseconds(onnx_embedder.embed, queries)

    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(model_path, device="cpu")
    warm_st = warm_milliseconds(lambda query: reference.encode([query], normalize_embeddings=True), queries)

    report = {
        "what": "query embedding: cold process start-up to first vector, and warm per-query latency",
        "model": model_path,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_1m": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        },
        "runs": args.runs,
        "queries": len(queries),
        "onnx_export_s": round(export_seconds, 2),
        "cold_start_s": cold,
        "warm_latency_ms": {"sentence_transformers": percentiles(warm_st), "onnx": percentiles(warm_onnx)},
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")

    print(f"{'path':<24}{'cold start + 1st query (median s)':>36}{'warm p50 ms':>14}{'warm p95 ms':>14}")
    print(f"{'python only (baseline)':<24}{cold['python_only']['median_s']:>36.3f}{'':>14}{'':>14}")
    for name, label in (("sentence_transformers", "sentence-transformers"), ("onnx", "onnx + tokenizers")):
        warm = report["warm_latency_ms"][name]
        print(f"{label:<24}{cold[name]['median_s']:>36.3f}{warm['p50']:>14.2f}{warm['p95']:>14.2f}")
    load = report["machine"]["load_average_1m"]
    print(f"one-time ONNX export: {export_seconds:.1f} s; load average {load['before']} -> {load['after']}")
    print(f"report: {args.output}")


if __name__ == "__main__":
    main()
