"""Search latency on the real corpus, and recall/latency at scale with synthetic chunks shaped like the real ones.

Run against the indexed database of `make run` (MEDRAG_HOME / DATABASE_URL as for the CLI):
  .venv/bin/python benchmarks/search.py [--questions eval/retrieval_dev.jsonl] [--scale 300000] [--out ...]
Part 1 (real corpus, warm): p50/p95 of query embedding (ONNX) and of the medrag_search SQL, per query, with the
code finder run each time (its cache off); then, the cache emptied (this empties the database's medrag_code_cache),
each question's first ask (the finder's answer kept) and the same asked again (the kept answer); and of
medrag_search_documents, the search statement without the code finder that fills medrag_search's code slots.
Part 2 (concurrency, --clients): medrag_search alone on 1, 2 and 8 connections at once, closed loop: statements/s and
p50/p95, the bound the database sets before any server's own Python; the finder run each time, then its kept
answers.
Part 3 (scale): a scratch database with `--scale` chunks: real texts and real vectors, each copied with small
Gaussian noise (renormalised) so the copies keep the real clusters; sources in the real proportions. For
unfiltered and filtered (one source, one key) queries: p95 of medrag_search_documents and recall@10 of its vector leg
(medrag_nearest: the HNSW index of each source) against exact search (sequential scan) on the same filter.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import threading
import time
from pathlib import Path

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from scratch import scratch_database  # benchmarks/ is the script's folder, first on sys.path
from sqlalchemy import create_engine

from medrag.cli.retrieval import query_embedder
from medrag.core.db import database_url, get_engine, libpq_url, sqlalchemy_url
from medrag.core.tuning import apply_overrides
from medrag.retrieval.evaluation import load_questions, percentile
from medrag.retrieval.search import search, vector_literal

REPO = Path(__file__).resolve().parents[1]


def pct(values: list[float]) -> dict[str, float]:
    """p50 / p95 / mean in ms, rounded."""
    return {"p50_ms": round(percentile(values, 50), 2), "p95_ms": round(percentile(values, 95), 2),
            "mean_ms": round(statistics.fmean(values), 2), "n": len(values)}


# the search statement without the code finder (what medrag_search calls first)
DOCUMENTS_SQL = "SELECT * FROM medrag_search_documents(%s::vector, %s, 10, '{}'::jsonb)"


def real_corpus(url: str, vectors: list[tuple[str, list[float]]], embedder: object, repeats: int
                ) -> dict[str, object]:
    """Warm per-query timings of the embedding and the SQL on the indexed database: medrag_search with the code
    finder run each time (its cache off), then with its cache emptied, each question's first ask and the same asked
    again."""
    engine = get_engine(url=url)
    finder_each_time = create_engine(sqlalchemy_url(url))
    apply_overrides(finder_each_time, {"code_cache_rows": "0"})
    search(finder_each_time, "warm up", k=10, embedder=embedder)
    embed_ms, sql_ms, documents_ms = [], [], []
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        for _ in range(repeats):
            for question, vector in vectors:
                result = search(finder_each_time, question, k=10, embedder=embedder)
                embed_ms.append(result.timings_ms["embed"])
                sql_ms.append(result.timings_ms["sql"])
                started = time.perf_counter()
                conn.execute(DOCUMENTS_SQL, (vector_literal(vector), question)).fetchall()
                documents_ms.append((time.perf_counter() - started) * 1000)
        chunks = conn.execute("SELECT count(*) FROM chunk_vector").fetchone()[0]
        conn.execute("DELETE FROM medrag_code_cache")
    finder_each_time.dispose()
    first_ms = [search(engine, question, k=10, embedder=embedder).timings_ms["sql"] for question, _ in vectors]
    again_ms = [search(engine, question, k=10, embedder=embedder).timings_ms["sql"] for question, _ in vectors]
    index = recall_and_latency(url, vectors, {}, "none")  # the vector leg against exact search, same questions
    return {"chunks_embedded": chunks, "embed": pct(embed_ms), "sql": pct(sql_ms), "sql_first_ask": pct(first_ms),
            "sql_asked_again": pct(again_ms), "documents_sql": pct(documents_ms),
            "vector_recall_at_10": index["recall_at_10"]}


def fill_scaled(source_url: str, url: str, scale: int, seed: int) -> None:
    """Fill the scratch database at `url` with `scale` chunks copied (with noise) from the real ones."""
    rng = np.random.default_rng(seed)
    with psycopg.connect(libpq_url(source_url)) as conn:
        register_vector(conn)
        real = conn.execute(
            "SELECT d.source, d.key, c.heading, c.text, v.embedding FROM chunk c JOIN chunk_vector v "
            "ON v.chunk_id = c.id JOIN document d ON d.id = c.document_id WHERE d.is_current").fetchall()
    copies = -(-scale // len(real))
    with psycopg.connect(libpq_url(url)) as conn:
        register_vector(conn)
        release = conn.execute("INSERT INTO release (source, label, status, is_current) "
                               "VALUES ('bench', 'scale', 'loaded', true) RETURNING id").fetchone()[0]
        # the HNSW indexes are built once after the load: much faster than row by row
        hnsw_indexes = conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'chunk_vector' "
                                    "AND indexdef LIKE '%USING hnsw%'").fetchall()
        for name, _definition in hnsw_indexes:
            conn.execute(f'DROP INDEX "{name}"')
        written = 0
        for copy_number in range(copies):
            with conn.cursor().copy("COPY document (id, release_id, source, key, version, title, content_hash, "
                                    "is_current) FROM STDIN") as copy:
                for index, (source, key, _heading, _text, _vector) in enumerate(real):
                    if written + index >= scale:
                        break
                    synthetic_key = f"{key}#{copy_number}.{index}"
                    copy.write_row((written + index + 1, release, source, synthetic_key, "", key, "h", True))
            with conn.cursor().copy("COPY chunk (id, document_id, ordinal, text, heading, content_hash) "
                                    "FROM STDIN") as copy:
                for index, (_source, _key, heading, text, _vector) in enumerate(real):
                    if written + index >= scale:
                        break
                    copy.write_row((written + index + 1, written + index + 1, 0, text, heading, "h"))
            with conn.cursor().copy("COPY chunk_vector (chunk_id, source, embedding) "
                                    "FROM STDIN WITH (FORMAT BINARY)") as copy:
                copy.set_types(["bigint", "text", "vector"])
                for index, (source, _key, _heading, _text, vector) in enumerate(real):
                    if written + index >= scale:
                        break
                    vector = vector.to_numpy() if hasattr(vector, "to_numpy") else np.asarray(vector)
                    noisy = vector + rng.normal(0, 0.02, vector.shape).astype(np.float32) if copy_number else vector
                    noisy = noisy / np.linalg.norm(noisy)
                    copy.write_row((written + index + 1, source, noisy.astype(np.float32)))
            written = min(scale, written + len(real))
        conn.execute("SELECT setval('document_id_seq', %s)", (written,))
        conn.execute("SELECT setval('chunk_id_seq', %s)", (written,))
        conn.commit()
        started = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '1GB'")
        for _name, definition in hnsw_indexes:  # as the migrations made them
            conn.execute(definition)
        conn.execute("ANALYZE")
        conn.execute("SELECT medrag_refresh_terms()")  # the full-text query's corpus counts, as a refresh does
        conn.commit()
        print(f"scale: {written:,} chunks, HNSW built in {time.perf_counter() - started:.0f} s", flush=True)


def recall_and_latency(url: str, queries: list[tuple[str, list[float]]], filters: dict,
                       label: str) -> dict[str, object]:
    """p95 of medrag_search_documents (each question with its vector) and recall@10 of its vector leg vs exact
    search: how the document search's index and filters scale (the scratch database has no code tables for the
    finder)."""
    # The vector leg as medrag_search runs it (medrag_nearest, n = 5k + 20 per group for k = 10), its 10 nearest.
    vector_leg = "SELECT chunk_id FROM medrag_nearest(%s::vector, 70, %s::jsonb) ORDER BY distance LIMIT 10"
    exact_search = ("SELECT c.id FROM chunk c JOIN chunk_vector v ON v.chunk_id = c.id "
                    "JOIN document d ON d.id = c.document_id "
                    "WHERE medrag_document_matches(d.source, d.key, d.is_current, "
                    "d.effective_date, d.termination_date, d.metadata, d.release_id, %s::jsonb) "
                    "ORDER BY v.embedding <=> %s::vector LIMIT 10")
    recalls, search_ms = [], []
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        for question, vector in queries:
            literal = vector_literal(vector)
            approximate = {row[0] for row in conn.execute(vector_leg, (literal, json.dumps(filters)))}
            with conn.transaction():
                conn.execute("SET LOCAL enable_indexscan = off")  # a sequential scan: every distance computed
                exact = {row[0] for row in conn.execute(exact_search, (json.dumps(filters), literal))}
            recalls.append(len(approximate & exact) / max(1, len(exact)))
            started = time.perf_counter()
            conn.execute("SELECT * FROM medrag_search_documents(%s::vector, %s, 10, %s::jsonb)",
                         (literal, question, json.dumps(filters))).fetchall()
            search_ms.append((time.perf_counter() - started) * 1000)
    return {"filter": label, "recall_at_10": round(statistics.fmean(recalls), 4), "search": pct(search_ms)}


def concurrent_sql(url: str, queries: list[tuple[str, list[float]]], clients: int, seconds: float,
                   cached: bool) -> dict[str, object]:
    """medrag_search alone, `clients` connections each running the queries back to back for `seconds`: the bound
    the database puts on a server's latency at that concurrency, before any Python of its own. Not cached: the code
    finder runs each time; cached: its answers kept (asked again, after real_corpus asked every question)."""
    latencies: list[float] = []
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(offset: int) -> None:
        with psycopg.connect(libpq_url(url), autocommit=True) as conn:
            if not cached:
                conn.execute("SET medrag.code_cache_rows = 0")
            position = offset
            while time.perf_counter() < deadline:
                question, vector = queries[position % len(queries)]
                position += 1
                started = time.perf_counter()
                conn.execute("SELECT * FROM medrag_search(%s::vector, %s, 10, '{}'::jsonb)",
                             (vector_literal(vector), question)).fetchall()
                with lock:
                    latencies.append((time.perf_counter() - started) * 1000)

    threads = [threading.Thread(target=client, args=(index * len(queries) // clients,)) for index in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"clients": clients, "cached": cached, "seconds": seconds,
            "statements_per_s": round(len(latencies) / seconds, 1), **pct(latencies)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, default=REPO / "eval" / "retrieval_dev.jsonl")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scale", type=int, default=300_000)
    parser.add_argument("--scale-queries", type=int, default=100)
    parser.add_argument("--clients", default="1,2,8",
                        help="connections running medrag_search at once, comma-separated ('' to skip)")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long each --clients run lasts")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "search.json")
    args = parser.parse_args()

    url = database_url()
    questions = [q.question for q in load_questions(args.questions)]
    report: dict[str, object] = {"benchmark": "search", "machine": platform.machine(), "cpus": os.cpu_count()}
    embedder = query_embedder()
    vectors = [(question, embedder.embed(question)) for question in questions]  # every part below reuses them
    report["real_corpus"] = real_corpus(url, vectors, embedder, args.repeats)
    real = report["real_corpus"]
    print(f"real corpus ({real['chunks_embedded']:,} embedded chunks), warm, {real['sql']['n']} queries")
    print(f"  query embedding  p50 {real['embed']['p50_ms']:>7} ms  p95 {real['embed']['p95_ms']:>7} ms")
    sql = real["sql"]
    print(f"  medrag_search    p50 {sql['p50_ms']:>7} ms  p95 {sql['p95_ms']:>7} ms  (the code finder run each time "
          "for its code slots)")
    for name, what in (("sql_first_ask", "first ask, the finder's answer kept"),
                       ("sql_asked_again", "asked again: the kept answer")):
        print(f"  medrag_search    p50 {real[name]['p50_ms']:>7} ms  p95 {real[name]['p95_ms']:>7} ms  ({what})")
    documents = real["documents_sql"]
    print(f"  ..._documents    p50 {documents['p50_ms']:>7} ms  p95 {documents['p95_ms']:>7} ms  (the search statement "
          "alone; goal p95 <= 30)")
    print(f"  vector leg recall@10 vs exact search: {real['vector_recall_at_10']}")

    clients = [int(value) for value in args.clients.split(",") if value.strip()]
    if clients:
        print(f"\nmedrag_search alone, closed loop, {args.seconds:.0f} s per row")
        print(f"  {'finder':>14} {'clients':>7} {'per s':>7} {'p50 ms':>8} {'p95 ms':>8}")
        rows = []
        for cached in (False, True):
            for count in clients:
                rows.append(concurrent_sql(url, vectors, count, args.seconds, cached))
                print(f"  {'answers kept' if cached else 'each time':>14} {count:>7} {rows[-1]['statements_per_s']:>7} "
                      f"{rows[-1]['p50_ms']:>8} {rows[-1]['p95_ms']:>8}", flush=True)
        report["concurrent"] = rows

    if args.scale:
        queries = random.Random(7).sample(vectors, min(args.scale_queries, len(vectors)))
        with scratch_database("medrag_bench_scale", server_url=url) as scaled_url:
            fill_scaled(url, scaled_url, args.scale, seed=7)
            with psycopg.connect(libpq_url(scaled_url)) as conn:
                key = conn.execute("SELECT key FROM document WHERE source = 'ncd' LIMIT 1").fetchone()[0]
            rows = [
                recall_and_latency(scaled_url, queries, {}, "none"),
                recall_and_latency(scaled_url, queries, {"source": ["ncd"]}, "source=ncd"),
                recall_and_latency(scaled_url, queries, {"source": ["ncd"], "key": [key]}, f"key={key}"),
            ]
        report["scale"] = {"chunks": args.scale, "queries": len(queries), "results": rows}
        print(f"\nat scale ({args.scale:,} chunks), {len(queries)} queries")
        print(f"  {'filter':18} {'recall@10':>10} {'p50 ms':>8} {'p95 ms':>8}   (goals: recall >= 0.95, p95 <= 50)")
        for row in rows:
            print(f"  {row['filter']:18} {row['recall_at_10']:>10} {row['search']['p50_ms']:>8} "
                  f"{row['search']['p95_ms']:>8}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwritten {args.out}")


if __name__ == "__main__":
    main()
