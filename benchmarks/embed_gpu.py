"""The embedding stage on a GPU against the model's forward-only rate, measured in one run on the real chunk texts.

Run where a GPU is: .venv/bin/python benchmarks/embed_gpu.py --chunks chunks.copy.xz [--device cuda]
                    [--batch-sizes 1024,2048,4096] [--stages 4:4096,8:4096:1024] [--free-stages 4:4096]
                    [--out benchmarks/results/embed_gpu.json]
Make the chunk file on a machine with a loaded database (no GPU needed; the file is the chunk table without
vectors, about 4 MB xz-compressed for the full corpus):
                    .venv/bin/python benchmarks/embed_gpu.py --write-chunks chunks.copy.xz
Uses DATABASE_URL if set (a scratch database is created on that server), else a throwaway embedded PostgreSQL.

Reports, all on the same texts (the stage's: one per distinct content hash):
- forward-only: the transformer alone on pre-tokenised, length-sorted batches already on the device, per batch size;
- sentence-transformers' encode at batch 64 (what the torch backend ran before this path), for the ratio;
- agreement: cosine of the device's fp16 vectors to sentence-transformers' float32 ones on the CPU;
- the stage (`embed_pending`, reading, tokenising, encoding and writing with binary COPY, then the vector graphs
  built) from no vectors, once per writer count; its fill rate (without the graph build) over forward-only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import os
import platform
import random
import sys
import time
from pathlib import Path
from typing import IO, Any

import numpy as np
import psycopg
from rates import sentence_transformers_rate, stage_texts
from scratch import scratch_database

from medrag.core.config import load_settings
from medrag.core.db import database_url, get_engine, libpq_url
from medrag.core.progress import LineSink, reporting
from medrag.index.embedding import (
    CUDA_COMMIT_TEXTS,
    CUDA_WRITERS,
    WINDOW_TEXTS,
    DocumentEmbedder,
    embed_pending,
)
from medrag.index.encoder import BatchEncoder, TokenBatch
from medrag.index.onnx_model import BACKEND_TORCH
from medrag.index.torch_model import CUDA_BATCH_TEXTS, TorchEncoder

REPO = Path(__file__).resolve().parents[1]
CHUNK_COLUMNS = "id, document_id, ordinal, text, heading, section, content_hash, source, embedding_text"
ST_BATCH = 64
AGREEMENT_TEXTS = 500


def _open(path: Path, mode: str) -> IO[bytes]:
    if path.suffix == ".xz":
        return lzma.open(path, mode)
    if path.suffix == ".gz":
        return gzip.open(path, mode)
    return path.open(mode)


def write_chunks(url: str, path: Path) -> int:
    """The chunk table without vectors, as COPY text, into path (.xz / .gz compressed by its suffix); rows written."""
    with psycopg.connect(libpq_url(url)) as conn, _open(path, "wb") as out, conn.cursor() as cursor:
        with cursor.copy(f"COPY (SELECT {CHUNK_COLUMNS} FROM chunk ORDER BY id) TO STDOUT") as copy:
            for block in copy:
                out.write(block)
        return conn.execute("SELECT count(*) FROM chunk").fetchone()[0]


def load_chunks(url: str, path: Path, limit: int | None = None) -> int:
    """Fill an empty, migrated database's chunk table from a write_chunks file (the documents it names are absent,
    so foreign keys and the source trigger are off for the load, as a replica applies rows); with limit, keep only
    that many chunks, picked at random."""
    with psycopg.connect(libpq_url(url)) as conn, _open(path, "rb") as source, conn.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        with cursor.copy(f"COPY chunk ({CHUNK_COLUMNS}) FROM STDIN") as copy:
            while block := source.read(1 << 20):
                copy.write(block)
        if limit:
            conn.execute("DELETE FROM chunk WHERE id NOT IN (SELECT id FROM chunk ORDER BY md5(id::text) LIMIT %s)",
                         (limit,))
        conn.commit()
        conn.execute("ANALYZE chunk")
        return conn.execute("SELECT count(*) FROM chunk").fetchone()[0]


def synchronize(encoder: TorchEncoder) -> None:
    """Wait for the device's queued work (a no-op on a CPU)."""
    if encoder.device.type == "cuda":
        encoder.torch.cuda.synchronize()


def forward_only_rate(encoder: TorchEncoder, encodings: list[Any], batch_size: int) -> dict[str, float]:
    """Texts/s of the transformer alone: length-sorted batches placed on the device first, then a tight loop."""
    torch = encoder.torch
    batches = [{name: torch.from_numpy(array).to(encoder.device) for name, array in batch.feed.items()}
               for batch in encoder.batches(encodings, batch_size)]
    with torch.inference_mode():
        for feed in batches:  # an untimed pass first: each input shape's first call chooses kernels
            encoder.model(**feed)
        synchronize(encoder)
        started = time.perf_counter()
        for feed in batches:
            encoder.model(**feed)
        synchronize(encoder)
    seconds = time.perf_counter() - started
    return {"batch_size": batch_size, "texts_per_s": round(len(encodings) / seconds, 1), "seconds": round(seconds, 3)}


def call_overhead_ms(encoder: TorchEncoder, encodings: list[Any], calls: int = 20) -> float:
    """Milliseconds of one forward call on one short text: what every batch pays whatever its size."""
    torch = encoder.torch
    shortest = min(range(len(encodings)), key=lambda index: len(encodings[index].ids))
    batch = next(encoder.batches([encodings[shortest]], 1))
    feed = {name: torch.from_numpy(array).to(encoder.device) for name, array in batch.feed.items()}
    with torch.inference_mode():
        encoder.model(**feed)
        synchronize(encoder)
        started = time.perf_counter()
        for _ in range(calls):
            encoder.model(**feed)
        synchronize(encoder)
    return round((time.perf_counter() - started) / calls * 1000, 2)


def encode_rate(encoder: TorchEncoder, texts: list[str], batch_size: int) -> dict[str, float]:
    """Texts/s of the whole encode path (tokenise, pad, copy in, model, pool, copy out) on the texts in memory."""
    encoder.encode(texts[:batch_size], batch_size=batch_size)  # warm-up
    synchronize(encoder)
    started = time.perf_counter()
    encoder.encode(texts, batch_size=batch_size)
    seconds = time.perf_counter() - started
    return {"batch_size": batch_size, "texts_per_s": round(len(texts) / seconds, 1), "seconds": round(seconds, 3)}


def prepare_rate(encoder: TorchEncoder, texts: list[str], batch_size: int) -> dict[str, float]:
    """Texts/s of tokenising and padding alone, in windows of the stage's size: the reader's bound, which the stage
    cannot outrun."""
    started = time.perf_counter()
    for start in range(0, len(texts), WINDOW_TEXTS):
        list(encoder.batches(encoder.tokenize(texts[start:start + WINDOW_TEXTS]), batch_size))
    seconds = time.perf_counter() - started
    return {"batch_size": batch_size, "texts_per_s": round(len(texts) / seconds, 1), "seconds": round(seconds, 3)}


def agreement(model_path: str, encoder: TorchEncoder, texts: list[str]) -> dict[str, float]:
    """Cosine of the encoder's vectors to sentence-transformers' float32 ones on the CPU (the reference)."""
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(model_path, device="cpu").float().encode(
        texts, batch_size=ST_BATCH, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    cosines = (encoder.encode(texts, batch_size=ST_BATCH) * reference).sum(axis=1)
    return {"texts": len(texts), "cosine_min": round(float(cosines.min()), 5),
            "cosine_mean": round(float(cosines.mean()), 6)}


def reset_vectors(url: str) -> None:
    """Every chunk without a vector again, as after a load (the next stage fills and indexes from nothing)."""
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute("TRUNCATE chunk_vector")
        conn.execute("VACUUM ANALYZE chunk_vector")


class FreeEncoder(BatchEncoder):
    """A model that costs nothing (every vector the same unit vector): the stage around it runs at its own bound."""

    dimension = 384

    def run(self, batch: TokenBatch) -> np.ndarray:
        """One unit vector per row, made without a model."""
        vectors = np.zeros((len(batch.rows), self.dimension), dtype=np.float32)
        vectors[:, 0] = 1.0
        return vectors


class FreeEmbedder(DocumentEmbedder):
    """The stage's embedder with FreeEncoder in place of the model: reading, tokenising, padding and writing alone."""

    def load(self) -> BatchEncoder:
        """The model-free encoder (same tokenizer and batching as the model's)."""
        if self._model is None:
            self._model = FreeEncoder(self.model_path)
            self._model.width_multiple = self.width_multiple
        return self._model


def run_stage(url: str, model_path: str, device: str, batch_size: int, writers: int, commit_texts: int,
              width_multiple: int = 1, *, free: bool = False) -> dict[str, Any]:
    """embed_pending from no vectors on the device: counts and seconds, the fill apart from the graph build.

    free: without the model (FreeEmbedder), the bound the rest of the stage sets. width_multiple: batch widths
    rounded up to it, each rounded shape run once when the model loads (not timed)."""
    maker = FreeEmbedder if free else DocumentEmbedder
    embedder = maker(model_path, backend=BACKEND_TORCH, device=device, batch_size=batch_size,
                     width_multiple=width_multiple)
    embedder.load()  # loading the model is not part of a refresh's stage time here (once per process)
    started = time.perf_counter()
    stats = embed_pending(get_engine(url=url), embedder, writers=writers, commit_texts=commit_texts,
                          label=f"embed ({writers} writers, commits of {commit_texts})")
    seconds = time.perf_counter() - started
    fill_seconds = seconds - stats.seconds_index
    return {"model": "none (free)" if free else stats.model, "writers": writers, "commit_texts": commit_texts,
            "width_multiple": width_multiple,
            "window_texts": WINDOW_TEXTS,
            "batch_size": batch_size, "embedded": stats.embedded, "seconds": round(seconds, 2),
            "fill_seconds": round(fill_seconds, 2), "index_seconds": round(stats.seconds_index, 2),
            "encode_seconds": round(stats.seconds_encode, 2),
            "starved_seconds": round(stats.seconds_starved, 2), "write_seconds": round(stats.seconds_write, 2),
            "fill_chunks_per_s": round(stats.embedded / fill_seconds, 1),
            "stage_chunks_per_s": round(stats.embedded / seconds, 1)}


def measure(url: str, args: argparse.Namespace) -> dict[str, Any]:
    """The whole report (see the module's docstring)."""
    model_path = args.model or load_settings().embedding_model
    loaded = load_chunks(url, args.chunks, args.limit)
    texts = stage_texts(get_engine(url=url))
    print(f"{loaded:,} chunks loaded, {len(texts):,} distinct texts", file=sys.stderr)
    report: dict[str, Any] = {"benchmark": "embed_gpu", "machine": platform.machine(), "cpus": os.cpu_count(),
                              "chunks": loaded, "texts": len(texts)}
    encoder = TorchEncoder(model_path, device=args.device)
    if encoder.device.type == "cuda":
        report["device"] = encoder.torch.cuda.get_device_name()
    else:
        report["device"] = "cpu"
    report["torch"] = encoder.torch.__version__
    started = time.perf_counter()
    encodings = encoder.tokenize(texts)
    report["tokenize_texts_per_s"] = round(len(texts) / (time.perf_counter() - started), 1)
    report["tokens_per_text_mean"] = round(float(np.mean([len(item.ids) for item in encodings])), 1)

    report["prepare"] = prepare_rate(encoder, texts, CUDA_BATCH_TEXTS)
    print(f"tokenise and pad: {report['prepare']}", file=sys.stderr)
    report["forward_call_overhead_ms"] = call_overhead_ms(encoder, encodings)
    report["forward_only"] = [forward_only_rate(encoder, encodings, size) for size in args.batch_sizes]
    best = max(report["forward_only"], key=lambda item: item["texts_per_s"])
    report["forward_only_best"] = best
    print(f"forward-only: {report['forward_only']}", file=sys.stderr)
    report["encode_path"] = encode_rate(encoder, texts, best["batch_size"])
    sample = random.Random(1).sample(texts, min(args.st_sample, len(texts)))
    report["sentence_transformers"] = {
        "batch_size": ST_BATCH, "texts": len(sample),
        "texts_per_s": round(sentence_transformers_rate(model_path, sample, args.device, ST_BATCH), 1)}
    report["agreement"] = agreement(model_path, encoder, random.Random(2).sample(texts, min(AGREEMENT_TEXTS,
                                                                                           len(texts))))
    print(f"sentence-transformers {report['sentence_transformers']}, agreement {report['agreement']}",
          file=sys.stderr)
    del encoder

    report["stage"] = []
    runs = [(stage, False) for stage in args.stages] + [(stage, True) for stage in args.free_stages]
    for position, ((writers, commit_texts, *rest), free) in enumerate(runs):
        if position:
            reset_vectors(url)
        batch_size = rest[0] if rest else best["batch_size"]
        width_multiple = rest[1] if len(rest) > 1 else 1
        report["stage"].append(run_stage(url, model_path, args.device, batch_size, writers, commit_texts,
                                         width_multiple, free=free))
        print(f"stage: {report['stage'][-1]}", file=sys.stderr)
    forward = best["texts_per_s"]
    for item in report["stage"]:
        item["fill_over_forward_only"] = round(item["fill_chunks_per_s"] / forward, 3)
        item["stage_over_forward_only"] = round(item["stage_chunks_per_s"] / forward, 3)
    report["sentence_transformers_over_forward_only"] = round(
        report["sentence_transformers"]["texts_per_s"] / forward, 3)
    return report


def print_table(report: dict[str, Any]) -> None:
    """The report as the table the docs quote."""
    forward = report["forward_only_best"]["texts_per_s"]
    print(f"device {report['device']}, {report['texts']:,} texts, {report['tokens_per_text_mean']} tokens each; "
          f"one forward call on one short text {report['forward_call_overhead_ms']} ms")
    print(f"{'what':62} {'texts/s':>10} {'x forward-only':>15}")
    for item in report["forward_only"]:
        print(f"{'forward-only, batch ' + str(item['batch_size']):62} {item['texts_per_s']:>10,.0f} "
              f"{item['texts_per_s'] / forward:>15.3f}")
    prepare = report["prepare"]
    print(f"{'tokenise and pad only, batch ' + str(prepare['batch_size']):62} {prepare['texts_per_s']:>10,.0f} "
          f"{prepare['texts_per_s'] / forward:>15.3f}")
    encode = report["encode_path"]
    print(f"{'encode path in memory, batch ' + str(encode['batch_size']):62} {encode['texts_per_s']:>10,.0f} "
          f"{encode['texts_per_s'] / forward:>15.3f}")
    st = report["sentence_transformers"]
    print(f"{'sentence-transformers encode, batch ' + str(st['batch_size']):62} {st['texts_per_s']:>10,.0f} "
          f"{st['texts_per_s'] / forward:>15.3f}")
    for item in report["stage"]:
        label = (f"{'stage without the model' if item['model'].startswith('none') else 'stage'} fill, "
                 f"{item['writers']} writer(s), commits of {item['commit_texts']}, batch {item['batch_size']}"
                 f"{', widths x' + str(item['width_multiple']) if item.get('width_multiple', 1) > 1 else ''}")
        print(f"{label:62} {item['fill_chunks_per_s']:>10,.0f} "
              f"{item['fill_over_forward_only']:>15.3f}")
        print(f"{'stage with vector graphs (' + str(item['index_seconds']) + ' s of it)':62} "
              f"{item['stage_chunks_per_s']:>10,.0f} {item['stage_over_forward_only']:>15.3f}")
    agree = report["agreement"]
    print(f"agreement with sentence-transformers float32 on {agree['texts']} texts: cosine min {agree['cosine_min']}, "
          f"mean {agree['cosine_mean']}")


def stage_list(text: str) -> list[tuple[int, ...]]:
    """writers:commit_texts[:batch_size[:width_multiple]],... as tuples of ints."""
    return [tuple(int(x) for x in item.split(":")) for item in text.split(",") if item]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=Path, help="a --write-chunks file to load")
    parser.add_argument("--write-chunks", type=Path, help="write the configured database's chunks here and stop")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--model", help="model folder (default: the configured embedding model)")
    parser.add_argument("--batch-sizes", type=lambda text: [int(x) for x in text.split(",")],
                        default=[1024, 2048, 4096])
    parser.add_argument("--stages", type=stage_list, default=[(CUDA_WRITERS, CUDA_COMMIT_TEXTS, CUDA_BATCH_TEXTS)],
                        help="stage runs as writers:commit_texts[:batch_size[:width_multiple]], comma-separated "
                             "(batch size: the best forward-only one unless given; widths rounded up to a multiple, "
                             "default 1: not rounded)")
    parser.add_argument("--free-stages", type=stage_list, default=[],
                        help="stage runs as --stages, with a model that costs nothing: the rest of the stage's bound")
    parser.add_argument("--st-sample", type=int, default=10000, help="texts sentence-transformers is timed on")
    parser.add_argument("--limit", type=int, help="load only this many chunks (a quick check on a CPU)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "embed_gpu.json")
    args = parser.parse_args()
    if args.write_chunks:
        rows = write_chunks(database_url(), args.write_chunks)
        print(f"{rows:,} chunks written to {args.write_chunks}")
        return
    if not args.chunks:
        parser.error("--chunks or --write-chunks is required")
    if not args.chunks.is_file():
        parser.error(f"--chunks {args.chunks}: no such file (make one with --write-chunks)")
    with scratch_database("medrag_bench_embed_gpu") as url, reporting(LineSink()):
        report = measure(url, args)
    print_table(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
