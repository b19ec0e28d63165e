"""The embedding stage's backends on real NCD text: ONNX and int8 against torch, model identity, resuming a kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import Engine, text

from medrag.core.config import load_settings
from medrag.core.progress import LineSink, Tracker, reporting
from medrag.index.embedding import DocumentEmbedder, defer_indexes, embed_pending, vector_status
from medrag.index.onnx_model import BACKEND_ONNX, BACKEND_ONNX_INT8, BACKEND_TORCH
from medrag.sources.mcd.release import ncd_documents, read_mcd_csv

NCD_TRKG = Path("mcd/ncd/ncd_csv/ncd_trkg.csv")
NCD_INDEX = "chunk_vector_ncd_hnsw"
POLICY_INDEX = "chunk_vector_policy_hnsw"  # the NCDs' group graph: a fill that doubles the NCDs doubles it here


@pytest.fixture(scope="module")
def ncd_sentences(cms_dir: Path) -> list[str]:
    """Distinct real sentences and paragraphs of NCD narratives, short to long (a few over 256 word pieces)."""
    texts: list[str] = []
    for document in ncd_documents(read_mcd_csv(cms_dir / NCD_TRKG)):
        for paragraph in (document["indications_limitations"] or "").split("\n\n"):
            texts.extend(sentence.strip() for sentence in paragraph.split(". ") if len(sentence.strip()) > 30)
            if len(paragraph) > 200:
                texts.append(paragraph)
    unique = list(dict.fromkeys(texts))
    assert len(unique) > 800
    return unique


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ONNX export cache for the module (the float and int8 files are made once)."""
    return tmp_path_factory.mktemp("onnx-cache")


def _embedder(backend: str, cache_dir: Path) -> DocumentEmbedder:
    return DocumentEmbedder(load_settings().embedding_model, backend=backend, cache_dir=cache_dir, device="cpu")


@pytest.fixture(scope="module")
def torch_vectors(ncd_sentences: list[str]) -> np.ndarray:
    """sentence-transformers' own vectors for the first 300 texts: the reference."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(load_settings().embedding_model, device="cpu")
    return model.encode(ncd_sentences[:300], normalize_embeddings=True, convert_to_numpy=True)


# (backend, lowest cosine to sentence-transformers of any text, mean cosine): torch runs the same float32 model
# (its own batching and pooling); the float export is the same model to rounding; int8 moves every vector a little
# (a per-batch activation scale), the short sentences most.
AGREEMENT = [(BACKEND_TORCH, 0.99999, 0.99999), (BACKEND_ONNX, 0.999, 0.9999), (BACKEND_ONNX_INT8, 0.98, 0.99)]


@pytest.mark.parametrize(("backend", "minimum", "mean"), AGREEMENT)
def test_backend_vectors_equal_the_sentence_transformers_ones(
    backend: str, minimum: float, mean: float, ncd_sentences: list[str], torch_vectors: np.ndarray, cache_dir: Path
) -> None:
    vectors = _embedder(backend, cache_dir).encode(ncd_sentences[:300])
    assert vectors.dtype == np.float32 and vectors.shape == torch_vectors.shape
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * torch_vectors).sum(axis=1)
    assert cosines.min() >= minimum and cosines.mean() >= mean, (backend, cosines.min(), cosines.mean())


def test_rounded_batch_widths_pad_more_and_change_no_vector(ncd_sentences: list[str], torch_vectors: np.ndarray,
                                                            cache_dir: Path) -> None:
    """Widths rounded up to 32 (for a GPU's few input shapes): padding the attention mask hides, capped at the
    model's length; a batch's texts keep their vectors."""
    rounded = DocumentEmbedder(load_settings().embedding_model, backend=BACKEND_TORCH, cache_dir=cache_dir,
                               device="cpu", width_multiple=32)
    model = rounded.load()
    widths = {batch.feed["input_ids"].shape[1] for batch in rounded.prepare(ncd_sentences[:300])}
    longest = model.pipeline.max_seq_length
    assert widths <= {*range(32, longest, 32), longest} and len(widths) > 1, widths
    assert model.width(1) == 32 and model.width(longest - 1) == longest and model.width(longest + 5) == longest + 5
    cosines = (rounded.encode(ncd_sentences[:300]) * torch_vectors).sum(axis=1)
    assert cosines.min() >= 0.99999, cosines.min()
    assert model.warm_up(4) == len({model.width(width) for width in range(1, longest + 1)})


def test_an_int8_vector_does_not_depend_on_the_texts_beside_it(ncd_sentences: list[str], cache_dir: Path) -> None:
    """One text per int8 call: a chunk gets the vector it gets alone, as its question does."""
    int8 = _embedder(BACKEND_ONNX_INT8, cache_dir)
    texts = ncd_sentences[:40]
    together = int8.encode(texts)
    alone = np.stack([int8.encode([text])[0] for text in texts[::7]])
    np.testing.assert_allclose(together[::7], alone, atol=1e-6)
    assert int8.identity.export_format.endswith("/batch-1")
    # batches of 64, as before, share one activation scale: the same text comes out differently
    batched = DocumentEmbedder(load_settings().embedding_model, backend=BACKEND_ONNX_INT8, cache_dir=cache_dir,
                               batch_size=64)
    assert not np.allclose(batched.encode(texts)[::7], alone, atol=1e-4)
    assert batched.identity != int8.identity


def _insert(engine: Engine, label: str, texts: list[str]) -> list[int]:
    with engine.begin() as conn:
        release = conn.execute(text("INSERT INTO release (source, label) VALUES ('mcd', :l) RETURNING id"),
                               {"l": label}).scalar_one()
        document = conn.execute(text(
            "INSERT INTO document (release_id, source, key, title, content_hash) "
            "VALUES (:r, 'ncd', :k, 'NCD sentences', :k) RETURNING id"), {"r": release, "k": label}).scalar_one()
        return list(conn.execute(text(
            "INSERT INTO chunk (document_id, ordinal, text, content_hash) "
            "SELECT :d, ordinality, t, md5(t) FROM unnest(CAST(:texts AS text[])) WITH ORDINALITY AS u(t, ordinality) "
            "RETURNING id"), {"d": document, "texts": texts}).scalars())


def _models(engine: Engine, chunk_ids: list[int]) -> dict[str, int]:
    with engine.connect() as conn:
        return dict(conn.execute(text(
            "SELECT coalesce(m.backend, 'none'), count(*) FROM chunk c LEFT JOIN chunk_vector v ON v.chunk_id = c.id "
            "LEFT JOIN embedding_model m ON m.id = v.model_id WHERE c.id = ANY(:ids) GROUP BY 1"),
            {"ids": chunk_ids}).all())


def test_a_change_of_backend_embeds_again_instead_of_reusing(
    engine: Engine, ncd_sentences: list[str], cache_dir: Path
) -> None:
    texts = ncd_sentences[300:340]
    chunk_ids = _insert(engine, "backend-1", texts)
    first = embed_pending(engine, _embedder(BACKEND_ONNX, cache_dir), sources=["ncd"])
    assert (first.embedded, first.reused) == (40, 0) and "onnx" in first.model
    assert _models(engine, chunk_ids) == {BACKEND_ONNX: 40}

    idle = _embedder(BACKEND_ONNX, cache_dir)
    assert embed_pending(engine, idle, sources=["ncd"]).embedded == 0 and not idle.is_loaded

    # Another backend: the same texts are sent to the model again, nothing is reused from the other one.
    again = embed_pending(engine, _embedder(BACKEND_ONNX_INT8, cache_dir), sources=["ncd"])
    assert (again.embedded, again.reused) == (40, 0)
    assert _models(engine, chunk_ids) == {BACKEND_ONNX_INT8: 40}

    # ...and a new release of the same texts reuses the vectors of the backend configured now.
    twins = _insert(engine, "backend-2", texts[:10])
    reused = embed_pending(engine, _embedder(BACKEND_ONNX_INT8, cache_dir), sources=["ncd"])
    assert (reused.embedded, reused.reused) == (0, 10)
    assert _models(engine, twins) == {BACKEND_ONNX_INT8: 10}

    # A vector whose maker was never recorded (made before revision 0016) counts as pending too.
    with engine.begin() as conn:
        conn.execute(text("UPDATE chunk_vector SET model_id = NULL WHERE chunk_id = ANY(:ids)"), {"ids": twins[:3]})
    assert embed_pending(engine, _embedder(BACKEND_ONNX_INT8, cache_dir), sources=["ncd"]).reused == 3

    # what `medrag db status` says: every chunk current for int8, every one pending for the float backend
    int8 = vector_status(engine, _embedder(BACKEND_ONNX_INT8, cache_dir))
    assert (int8.chunks, int8.current, int8.pending) == (50, 50, 0) and "onnx-int8" in int8.model
    assert vector_status(engine, _embedder(BACKEND_ONNX, cache_dir)).pending == 50


def _index_exists(engine: Engine, name: str) -> bool:
    with engine.connect() as conn:
        return conn.execute(text("SELECT to_regclass(:n) IS NOT NULL"), {"n": name}).scalar_one()


def test_a_bulk_fill_builds_the_vector_graph_after_the_fill(
    engine: Engine, ncd_sentences: list[str], cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import medrag.index.embedding as embedding

    monkeypatch.setattr(embedding, "DEFER_INDEX_MIN_ROWS", 50)
    _insert(engine, "bulk", ncd_sentences[340:500])  # 160 new rows against the ~50 the graph holds
    stats = embed_pending(engine, _embedder(BACKEND_ONNX_INT8, cache_dir), sources=["ncd"])
    assert stats.embedded == 160 and stats.seconds_index > 0
    assert _index_exists(engine, NCD_INDEX) and _index_exists(engine, POLICY_INDEX)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM medrag_deferred_index")).scalar_one() == 0
        conn.execute(text("SET enable_seqscan = off"))  # 210 rows: the planner would scan them all otherwise
        plan = conn.execute(text(
            "EXPLAIN SELECT chunk_id FROM chunk_vector WHERE source = 'ncd' ORDER BY embedding <=> "
            "(SELECT embedding FROM chunk_vector WHERE source = 'ncd' LIMIT 1) LIMIT 5")).scalars()
        assert NCD_INDEX in "\n".join(plan)

    # A stage killed between dropping and rebuilding leaves the definition behind: the next stage builds it,
    # even with nothing to embed.
    import psycopg

    from medrag.core.db import libpq_url

    with psycopg.connect(libpq_url(engine.url.render_as_string(hide_password=False)), autocommit=True) as conn:
        assert sorted(defer_indexes(conn, {"ncd": 10_000})) == [NCD_INDEX, POLICY_INDEX]
    assert not _index_exists(engine, NCD_INDEX) and not _index_exists(engine, POLICY_INDEX)
    idle = _embedder(BACKEND_ONNX_INT8, cache_dir)
    assert embed_pending(engine, idle, sources=["ncd"]).embedded == 0 and not idle.is_loaded
    assert _index_exists(engine, NCD_INDEX) and _index_exists(engine, POLICY_INDEX)


KILLED_RUN = """
import sys
from medrag.core.db import get_engine
from medrag.index.embedding import DocumentEmbedder, embed_pending
embedder = DocumentEmbedder(sys.argv[2], backend=sys.argv[3], cache_dir=sys.argv[4])
embed_pending(get_engine(url=sys.argv[1]), embedder, batch_size=16, sources=["ncd"])
"""


def test_a_run_killed_midway_is_finished_by_the_next_which_starts_from_what_was_done(
    engine: Engine, ncd_sentences: list[str], cache_dir: Path
) -> None:
    texts = ncd_sentences[500:1300] if len(ncd_sentences) >= 1300 else ncd_sentences[500:]
    chunk_ids = _insert(engine, "killed", texts)
    _embedder(BACKEND_ONNX_INT8, cache_dir).load()  # the export exists: the child only loads it
    url = engine.url.render_as_string(hide_password=False)
    child = subprocess.Popen([sys.executable, "-c", KILLED_RUN, url, load_settings().embedding_model,
                              BACKEND_ONNX_INT8, str(cache_dir)], stderr=subprocess.PIPE)

    def done() -> int:
        return _models(engine, chunk_ids).get(BACKEND_ONNX_INT8, 0)

    deadline = time.monotonic() + 120
    while done() < 64 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL, child.stderr.read().decode()
    already = done()
    assert 64 <= already < len(texts), "the kill came too late to test anything"

    trackers: list[Tracker] = []
    lines: list[str] = []
    sink = LineSink(lines.append)
    sink.started = lambda tracker: (trackers.append(tracker), LineSink.started(sink, tracker))
    with reporting(sink):
        stats = embed_pending(engine, _embedder(BACKEND_ONNX_INT8, cache_dir), sources=["ncd"])
    assert (stats.embedded, stats.reused) == (len(texts) - already, 0)
    assert done() == len(texts)
    # the display starts from the texts already embedded (this test's and the module's earlier ones), not from 0
    [tracker] = trackers
    assert tracker.initial == tracker.total - (len(texts) - already) and tracker.done == tracker.total
    assert lines[-1].startswith(f"embed: {tracker.total:,}/{tracker.total:,} chunks (100%)")
