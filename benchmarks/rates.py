"""The model's own rates, the yardsticks of the embedding stage: bare batches in a loop, and the library's encode."""

from __future__ import annotations

import os
import time

from sqlalchemy import Engine

from medrag.index.embedding import EMBED_TEXT_SQL, DocumentEmbedder

BARE_BATCH = 64


def stage_texts(engine: Engine) -> list[str]:
    """The texts the embedding stage sends to the model: one per distinct content hash."""
    with engine.connect() as conn:
        return list(conn.exec_driver_sql(
            f"SELECT DISTINCT ON (content_hash) {EMBED_TEXT_SQL} FROM chunk ORDER BY content_hash").scalars())


def bare_rate(embedder: DocumentEmbedder, texts: list[str]) -> float:
    """Texts/s of the model alone: pre-tokenised, length-sorted batches of the stage's size in a tight loop."""
    model = embedder.model
    batches = embedder.prepare(texts)
    started = time.perf_counter()
    for batch in batches:
        model.run(batch)
    return len(texts) / (time.perf_counter() - started)


def sentence_transformers_rate(model_path: str, texts: list[str], device: str = "cpu",
                               batch_size: int = BARE_BATCH) -> float:
    """Texts/s of sentence-transformers' own encode (length-sorted texts): the first release's embedding stage."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_path, device=device)
    if device == "cuda":
        model.half()
    ordered = sorted(texts, key=len)
    started = time.perf_counter()
    model.encode(ordered, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
                 show_progress_bar=False)
    return len(texts) / (time.perf_counter() - started)
