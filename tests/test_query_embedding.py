"""The ONNX query embedder against sentence-transformers itself, on real NCD text and the real model."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer

from medrag.core.config import SettingsError, load_settings
from medrag.index.embedding import DocumentEmbedder
from medrag.index.model_words import read_whole_words
from medrag.index.onnx_model import (
    BACKEND_ONNX,
    BACKEND_ONNX_INT8,
    BACKEND_TORCH,
    DIGESTS_FOLDER,
    mean_pool,
    model_content_digest,
    model_fingerprint,
    onnx_path_for,
)
from medrag.retrieval.query_embedding import QueryEmbedder, QueryEmbeddingError
from medrag.sources.mcd.release import ncd_documents, read_mcd_csv

NCD_TRKG = Path("mcd/ncd/ncd_csv/ncd_trkg.csv")
MAX_SEQ_LENGTH = 256


@pytest.fixture(scope="module")
def model_path() -> Path:
    """The packaged all-MiniLM-L6-v2 folder."""
    return Path(load_settings().embedding_model)


@pytest.fixture(scope="module")
def reference_model(model_path: Path) -> SentenceTransformer:
    """sentence-transformers' own pipeline for the model, the thing the ONNX path must reproduce."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return SentenceTransformer(str(model_path), device="cpu")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty ONNX cache for this module."""
    return tmp_path_factory.mktemp("onnx_cache")


@pytest.fixture(scope="module")
def onnx_embedder(model_path: Path, cache_dir: Path) -> QueryEmbedder:
    """The embedder a first call builds: it exports the model into the empty cache."""
    embedder = QueryEmbedder.for_model(model_path, cache_dir)
    assert embedder.backend == BACKEND_ONNX
    return embedder


@pytest.fixture(scope="module")
def ncd_texts(cms_dir: Path) -> list[str]:
    """50 real texts from short to long: NCD titles, single paragraphs and whole narratives (some > 256 tokens)."""
    documents = [doc for doc in ncd_documents(read_mcd_csv(cms_dir / NCD_TRKG)) if doc["indications_limitations"]]
    titles = [doc["title"] for doc in documents[:20]]
    paragraphs = [
        paragraph
        for doc in documents[20:80]
        for paragraph in doc["indications_limitations"].split("\n\n")
        if 100 <= len(paragraph) <= 900
    ][:20]
    narratives = sorted((doc["indications_limitations"] for doc in documents[80:]), key=len)[-10:]
    texts = titles + paragraphs + narratives
    assert len(texts) == 50
    return texts


def test_onnx_vectors_match_sentence_transformers(
    onnx_embedder: QueryEmbedder, reference_model: SentenceTransformer, ncd_texts: list[str], model_path: Path
) -> None:
    untruncated = Tokenizer.from_file(str(model_path / "tokenizer.json"))
    untruncated.no_truncation()
    untruncated.no_padding()
    token_counts = [len(untruncated.encode(text).ids) for text in ncd_texts]
    assert min(token_counts) < 32 and max(token_counts) > 4 * MAX_SEQ_LENGTH  # truncation is exercised

    expected = reference_model.encode(ncd_texts, normalize_embeddings=True, convert_to_numpy=True)
    actual = np.array([onnx_embedder.embed(text) for text in ncd_texts], dtype=np.float32)
    assert actual.shape == expected.shape == (50, 384)
    cosines = np.sum(actual * expected, axis=1) / (np.linalg.norm(actual, axis=1) * np.linalg.norm(expected, axis=1))
    assert float(cosines.min()) >= 0.9999
    assert float(np.abs(actual - expected).max()) <= 1e-4
    np.testing.assert_allclose(np.linalg.norm(actual, axis=1), 1.0, atol=1e-5)


def test_a_long_text_is_cut_where_sentence_transformers_cuts_it(
    onnx_embedder: QueryEmbedder, reference_model: SentenceTransformer, ncd_texts: list[str]
) -> None:
    longest = ncd_texts[-1]
    # Words appended far past the 256th word piece change nothing, for either pipeline.
    extended = longest + " Unrelated trailing words about dermatology and orthodontics."
    np.testing.assert_allclose(onnx_embedder.embed(extended), onnx_embedder.embed(longest), atol=1e-6)
    expected = reference_model.encode([extended], normalize_embeddings=True, convert_to_numpy=True)[0]
    assert float(np.abs(np.asarray(onnx_embedder.embed(extended)) - expected).max()) <= 1e-4


def test_mean_pool_ignores_padding() -> None:
    tokens = np.arange(2 * 4 * 3, dtype=np.float32).reshape(2, 4, 3)
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]])
    pooled = mean_pool(tokens, mask)
    np.testing.assert_allclose(pooled[0], tokens[0].mean(axis=0))
    np.testing.assert_allclose(pooled[1], tokens[1, :2].mean(axis=0))


def test_the_export_is_cached_and_reused(onnx_embedder: QueryEmbedder, model_path: Path, cache_dir: Path) -> None:
    onnx_path = onnx_path_for(model_path, cache_dir)
    assert [path.name for path in cache_dir.glob("*.onnx")] == [onnx_path.name]
    made_at = onnx_path.stat().st_mtime_ns
    again = QueryEmbedder.for_model(model_path, cache_dir)
    assert again.backend == BACKEND_ONNX
    assert onnx_path.stat().st_mtime_ns == made_at
    assert again.embed("home oxygen therapy") == onnx_embedder.embed("home oxygen therapy")


def test_copies_of_one_model_share_one_export(model_path: Path, tmp_path: Path) -> None:
    # a fresh virtualenv's copy: the same bytes, new modification times
    copy = Path(shutil.copytree(model_path, tmp_path / "copy", copy_function=shutil.copyfile))
    cache = tmp_path / "cache"
    assert model_fingerprint(copy) != model_fingerprint(model_path)
    assert onnx_path_for(copy, cache) == onnx_path_for(model_path, cache)
    assert onnx_path_for(copy, cache, int8=True) == onnx_path_for(model_path, cache, int8=True)
    assert sorted(path.read_text() for path in (cache / DIGESTS_FOLDER).iterdir()) == [model_content_digest(copy)] * 2
    # other weights: another export
    config = copy / "config.json"
    config.write_text(config.read_text() + "\n")
    assert onnx_path_for(copy, cache) != onnx_path_for(model_path, cache)


def test_the_remembered_digest_is_what_names_the_export(model_path: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = onnx_path_for(model_path, cache)
    memo = cache / DIGESTS_FOLDER / model_fingerprint(model_path)
    memo.write_text("0123456789abcdef")
    assert onnx_path_for(model_path, cache) != first
    memo.write_text("not a digest")
    assert onnx_path_for(model_path, cache) == first
    assert memo.read_text() == model_content_digest(model_path)


def test_query_time_never_imports_torch(onnx_embedder: QueryEmbedder, model_path: Path, cache_dir: Path) -> None:
    program = (
        "import json, sys\n"
        "import medrag.retrieval.query_embedding as qe\n"
        "after_import = sorted(name for name in ('torch', 'sentence_transformers') if name in sys.modules)\n"
        f"embedder = qe.QueryEmbedder.for_model({str(model_path)!r}, {str(cache_dir)!r})\n"
        "vector = embedder.embed('Is acupuncture for chronic low back pain covered?')\n"
        "after_query = sorted(name for name in ('torch', 'sentence_transformers') if name in sys.modules)\n"
        "print(json.dumps([after_import, after_query, embedder.backend, len(vector)]))\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(result.stdout) == [[], [], BACKEND_ONNX, 384]


def test_falls_back_to_sentence_transformers_when_no_onnx_can_be_made(
    model_path: Path,
    reference_model: SentenceTransformer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory would go")
    with caplog.at_level(logging.WARNING, logger="medrag.retrieval.query_embedding"):
        embedder = QueryEmbedder.for_model(model_path, blocker / "cache")
    assert embedder.backend == BACKEND_TORCH
    [warning] = caplog.records
    assert "sentence-transformers" in warning.getMessage() and "\n" not in warning.getMessage()
    question = "Is home oxygen covered for cluster headaches?"
    expected = reference_model.encode([question], normalize_embeddings=True, convert_to_numpy=True)[0]
    np.testing.assert_allclose(embedder.embed(question), expected, atol=1e-5)


def test_an_int8_question_is_embedded_as_the_int8_chunks_are(model_path: Path, cache_dir: Path) -> None:
    question = "Who qualifies for home oxygen therapy?"
    query = QueryEmbedder.for_model(model_path, cache_dir, BACKEND_ONNX_INT8)
    assert query.backend == BACKEND_ONNX_INT8
    chunk = DocumentEmbedder(str(model_path), backend=BACKEND_ONNX_INT8, cache_dir=cache_dir).encode([question])[0]
    np.testing.assert_allclose(query.embed(question), chunk, atol=1e-6)
    with pytest.raises(QueryEmbeddingError, match="unknown embedding backend 'fp8'"):
        QueryEmbedder.for_model(model_path, cache_dir, "fp8")


def test_knows_the_words_it_has_as_one_token(onnx_embedder: QueryEmbedder, model_path: Path, tmp_path: Path) -> None:
    """A whole-word token is a word the model knows; a misspelling is spelt out in pieces."""
    assert onnx_embedder.knows_word("look") and onnx_embedder.knows_word("Tiny")  # uncased WordPiece
    assert not onnx_embedder.knows_word("demensia") and not onnx_embedder.knows_word("therepy")
    whole_words = read_whole_words(model_path)
    assert whole_words and "##ing" not in whole_words and "[CLS]" not in whole_words
    # another tokenizer's vocabulary is not read: every word then counts as known, and none is replaced
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE", "vocab": {"look": 1}}}))
    assert read_whole_words(tmp_path) is None and read_whole_words(tmp_path / "missing") is None
    assert QueryEmbedder(onnx_embedder._backend, BACKEND_ONNX, None).knows_word("demensia")


def test_a_question_asked_again_is_not_embedded_again_and_a_kept_size_of_0_keeps_none(
        model_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    question = "Does Medicare cover a power wheelchair at home?"
    kept = QueryEmbedder.for_model(model_path, cache_dir, kept=2)
    first = kept.embed(question)
    kept.embed("another question")
    again = kept.embed(question)
    assert again == first and again is not first  # a fresh list: a caller may change its own
    assert (kept._vector.cache_info().hits, kept._vector.cache_info().currsize) == (1, 2)
    kept.embed("a third question")  # past the size the least recently used goes ("another question")
    kept.embed("another question")
    assert kept._vector.cache_info().hits == 1
    none_kept = QueryEmbedder.for_model(model_path, cache_dir, kept=0)
    assert none_kept.embed(question) == none_kept.embed(question) == first
    assert none_kept._vector.cache_info().currsize == 0
    monkeypatch.setenv("MEDRAG_QUERY_VECTORS_KEPT", "-1")
    with pytest.raises(SettingsError, match="MEDRAG_QUERY_VECTORS_KEPT must be 0 or more, got -1"):
        load_settings()
