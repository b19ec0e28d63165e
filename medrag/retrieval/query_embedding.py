"""Query-time embedding without torch: the model's ONNX export (medrag.index.onnx_model) on one question.

A CLI call that imports torch and loads the model through transformers pays seconds before its first vector;
onnxruntime + tokenizers answer in a fraction of that with the same numbers. Nothing here imports torch unless the
ONNX file has to be made (export_onnx) or cannot be used (the fallback).
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import numpy as np

from medrag.core.config import QUERY_VECTORS_KEPT, Settings
from medrag.core.errors import MedragError
from medrag.index.model_words import read_whole_words
from medrag.index.onnx_model import (
    BACKEND_ONNX,
    BACKEND_ONNX_INT8,
    BACKEND_TORCH,
    OnnxEncoder,
    check_backend,
    export_onnx,
    onnx_path_for,
)

log = logging.getLogger(__name__)


class QueryEmbeddingError(MedragError):
    """The query embedder cannot be built for this model and backend."""


# An answer's units are embedded one per call, as a question is (and as int8 chunks are, INT8_BATCH_TEXTS): each
# vector is its own, and nothing is padded. Against batches of 32 on the first 40 dev questions, one onnxruntime
# thread as the server runs it: the units stage p50 214 -> 142 ms, p95 369 -> 313 ms; fact recall dev 0.8925 ->
# 0.8871 (one fact), holdout unchanged (0.6757, refusal accuracy 0.8947).
MANY_BATCH_TEXTS = 1
# One onnxruntime thread per query: a query is one short text, and its callers run beside it (the code finder's
# lookups, the search statement, other requests). A thread per core would save ~0.3 ms a query while its idle
# workers spin and take the CPU those need (the code finder's process CPU per call: 57 -> 33 ms).
QUERY_THREADS = 1


class _OnnxBackend:
    def __init__(self, encoder: OnnxEncoder) -> None:
        self.encoder = encoder

    def embed(self, text: str) -> np.ndarray:
        # Unit length with or without a Normalize module: chunk vectors are stored normalised (DocumentEmbedder).
        return self.encoder.encode([text], batch_size=1)[0]

    def embed_many(self, texts: list[str]) -> np.ndarray:
        return self.encoder.encode(texts, batch_size=MANY_BATCH_TEXTS)


class _TorchBackend:
    def __init__(self, model_path: Path) -> None:
        from medrag.index.embedding import DocumentEmbedder

        self.embedder = DocumentEmbedder(str(model_path), backend=BACKEND_TORCH, device="cpu", batch_size=1)

    def embed(self, text: str) -> np.ndarray:
        return self.embedder.encode([text])[0]

    def embed_many(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts)


class QueryEmbedder:
    """Turns one question into the same unit vector the indexing model gives, cheaply enough for every CLI call."""

    def __init__(self, backend: _OnnxBackend | _TorchBackend, backend_name: str,
                 model_path: Path | None = None, *, kept: int = QUERY_VECTORS_KEPT) -> None:
        self._backend = backend
        self.backend = backend_name
        self._model_path = model_path
        # the model's vectors by text, the most recently used `kept` (0: none); thread-safe, as the API needs
        self._vector = functools.lru_cache(maxsize=kept)(backend.embed)

    @functools.cached_property
    def _whole_words(self) -> frozenset[str] | None:
        # read on the first misspelt word only (~16 ms of JSON): most questions have none
        return read_whole_words(self._model_path) if self._model_path is not None else None

    @classmethod
    def for_settings(cls, settings: Settings, *, threads: int = QUERY_THREADS) -> QueryEmbedder:
        """The embedder for the configured model and backend, its exports cached in the settings' models folder."""
        return cls.for_model(settings.embedding_model, settings.models_dir, settings.embedding_backend,
                             threads=threads, kept=settings.query_vectors_kept)

    @classmethod
    def for_model(cls, model_path: str | Path, cache_dir: str | Path, backend: str = BACKEND_ONNX, *,
                  threads: int = QUERY_THREADS, kept: int = QUERY_VECTORS_KEPT) -> QueryEmbedder:
        """The embedder for model_path with the backend the chunks were embedded with (ONNX exported if missing).

        threads: onnxruntime threads per query (QUERY_THREADS). When the ONNX path cannot be used,
        the torch backend gives the same float vectors, slower.
        """
        check_backend(backend, QueryEmbeddingError)
        model_path = Path(model_path)
        if backend != BACKEND_TORCH:
            try:
                int8 = backend == BACKEND_ONNX_INT8
                onnx_path = onnx_path_for(model_path, cache_dir, int8=int8)
                if not onnx_path.exists():
                    onnx_path = export_onnx(model_path, cache_dir, int8=int8)
                return cls(_OnnxBackend(OnnxEncoder(model_path, onnx_path, threads=threads)), backend, model_path,
                           kept=kept)
            except Exception as error:  # any failure of the fast path still leaves a correct, slower one
                reason = str(error).splitlines()[0] if str(error) else type(error).__name__
                log.warning("query embedding: no ONNX model (%s); using torch (the model as sentence-transformers "
                            "runs it), start-up is slower", reason)
        return cls(_TorchBackend(model_path), BACKEND_TORCH, model_path, kept=kept)

    def knows_word(self, word: str) -> bool:
        """Is word one token of the model's own? A word it has to spell out in pieces may be a misspelling.

        Without a WordPiece vocabulary every word counts as known, so no word is replaced before embedding.
        """
        return self._whole_words is None or word.lower() in self._whole_words

    def embed(self, text: str) -> list[float]:
        """The unit-length embedding of text, as a list of floats ready for a pgvector parameter (a text embedded
        recently is not embedded again)."""
        return self._vector(text).tolist()

    def embed_many(self, texts: list[str]) -> np.ndarray:
        """Unit-length embeddings of several texts, one per model call (a float32 row per text): an answer's units."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return self._backend.embed_many(texts)
