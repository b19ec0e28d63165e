"""A full refresh of the real corpus, timed by stage, with the embedding stage measured against the bare model.

Run: .venv/bin/python benchmarks/ingest.py [--cms-dir ../shared/cms] [--sources mcd,hcpcs,icd10cm,iom]
                                          [--out benchmarks/results/ingest.json]
Uses DATABASE_URL if set (a scratch database is created on that server), else a throwaway embedded PostgreSQL.
Reports: seconds by stage (download, load, documents, embed) per source, COPY rows/s of the load stage, chunks/s of
the embedding stage vs SentenceTransformer.encode on the same texts in the same run (goal >= 0.9), the time of a
second, unchanged refresh, and peak memory (max RSS).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import resource
import shutil
import tempfile
import time
from pathlib import Path

from scratch import scratch_database  # benchmarks/ is the script's folder, first on sys.path

from medrag.core.config import load_settings, source_urls_for
from medrag.core.db import get_engine
from medrag.index.embedding import EMBED_TEXT_SQL, DocumentEmbedder, embed_pending
from medrag.ingest.mirror import build_mirror
from medrag.refresh import ordered_sources, refresh_source

REPO = Path(__file__).resolve().parents[1]


def refresh_all(settings, engine, sources: list[str], embedder: DocumentEmbedder) -> dict[str, object]:
    """One refresh of every source: seconds by stage, rows loaded, embedding stats."""
    stages: dict[str, float] = {}
    rows = 0
    per_source = {}
    for source in sources:
        result = refresh_source(settings, engine, source, release="all" if source == "icd10cm" else None)
        for stage, seconds in result.seconds.items():
            stages[stage] = stages.get(stage, 0.0) + seconds
        loaded = sum(sum(outcome.rows.values()) for outcome in result.loaded)
        rows += loaded
        per_source[source] = {"rows": loaded, "seconds": {k: round(v, 2) for k, v in result.seconds.items()},
                              "chunks": sum(d.chunks for d in result.documents)}
    started = time.perf_counter()
    stats = embed_pending(engine, embedder, batch_size=1024)
    stages["embed"] = time.perf_counter() - started
    return {"stages": stages, "rows": rows, "per_source": per_source, "embed": dataclasses.asdict(stats)}


def measure(url: str, scratch: Path, cms_dir: Path, sources: list[str]) -> dict[str, object]:
    """First and second refresh from a mirror of cms_dir, and the bare model on the same texts: the report."""
    build_mirror(cms_dir, scratch / "mirror")
    settings = dataclasses.replace(load_settings(), database_url=url, home=scratch / "home",
                                   source_urls=source_urls_for(f"mirror:{scratch / 'mirror'}"))
    engine = get_engine(url=url)
    embedder = DocumentEmbedder(settings.embedding_model)
    embedder.load()

    started = time.perf_counter()
    first = refresh_all(settings, engine, sources, embedder)
    first_seconds = time.perf_counter() - started

    # The bare model on exactly the texts the stage embedded (one per distinct content hash), same process.
    with engine.connect() as conn:
        texts = conn.exec_driver_sql(
            f"SELECT DISTINCT ON (content_hash) {EMBED_TEXT_SQL} FROM chunk ORDER BY content_hash").scalars().all()
    started = time.perf_counter()
    embedder.model.encode(list(texts), batch_size=embedder.batch_size, normalize_embeddings=True,
                          convert_to_numpy=True)
    bare_seconds = time.perf_counter() - started

    started = time.perf_counter()
    second = refresh_all(settings, engine, sources, embedder)
    second_seconds = time.perf_counter() - started

    stage_rate = first["embed"]["embedded"] / first["stages"]["embed"] if first["stages"]["embed"] else 0.0
    bare_rate = len(texts) / bare_seconds if bare_seconds else 0.0
    peak_mb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    return {
        "benchmark": "ingest", "machine": platform.machine(), "cpus": os.cpu_count(), "device": embedder.device,
        "sources": sources, "first_refresh_seconds": round(first_seconds, 1),
        "stages_seconds": {k: round(v, 1) for k, v in first["stages"].items()},
        "per_source": first["per_source"],
        "rows_loaded": first["rows"], "load_rows_per_s": round(first["rows"] / first["stages"]["load"]),
        "chunks_embedded": first["embed"]["embedded"], "distinct_texts": len(texts),
        "embed_stage_chunks_per_s": round(stage_rate, 1), "bare_encode_texts_per_s": round(bare_rate, 1),
        "embed_stage_over_bare": round(stage_rate / bare_rate, 3) if bare_rate else None,
        # encoding and writing overlap (batch N is written while N+1 is encoded): their sum exceeds the stage
        "embed_stage_encode_seconds": round(first["embed"]["seconds_encode"], 1),
        "embed_stage_write_seconds": round(first["embed"]["seconds_write"], 1),
        "second_refresh_seconds": round(second_seconds, 1),
        "second_refresh_embedded": second["embed"]["embedded"],
        "second_over_first": round(second_seconds / first_seconds, 4),
        "peak_rss_mb": round(peak_mb),
        # other work on the machine skews the stage/bare ratio: the load average says how quiet it was
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cms-dir", type=Path, default=REPO.parent / "shared" / "cms")
    parser.add_argument("--sources", default="mcd,hcpcs,icd10cm,iom")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "ingest.json")
    args = parser.parse_args()
    sources = ordered_sources(args.sources.split(","))

    scratch = Path(tempfile.mkdtemp(prefix="medrag-ingest-bench-", dir="/tmp"))
    try:
        with scratch_database("medrag_bench_ingest") as url:
            report = measure(url, scratch, args.cms_dir, sources)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{'stage':12} {'seconds':>9}")
    for stage, seconds in report["stages_seconds"].items():
        print(f"{stage:12} {seconds:>9}")
    print(f"\nfirst refresh {report['first_refresh_seconds']} s; load {report['load_rows_per_s']:,} rows/s (COPY)")
    print(f"embedding stage {report['embed_stage_chunks_per_s']} chunks/s vs bare encode "
          f"{report['bare_encode_texts_per_s']} texts/s = {report['embed_stage_over_bare']} (goal >= 0.9), "
          f"device {report['device']}")
    print(f"second refresh {report['second_refresh_seconds']} s ({report['second_over_first']:.2%} of the first), "
          f"{report['second_refresh_embedded']} chunks re-embedded; peak RSS {report['peak_rss_mb']} MB")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
