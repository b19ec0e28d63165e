"""Query-time embedding without torch: the sentence-transformers model exported once to ONNX, run by onnxruntime.

A CLI call that imports torch and loads the model through sentence-transformers pays seconds before its first
vector; onnxruntime + tokenizers answer in a fraction of that with the same numbers. Nothing here imports torch or
sentence_transformers unless the ONNX file has to be made (export_onnx) or cannot be used (the fallback).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from medrag.core.errors import MedragError

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

ONNX_INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
ONNX_OUTPUT_NAME = "token_embeddings"
# Part of every cache key: a change to how the graph is exported must not reuse files made the old way.
EXPORT_FORMAT = "medrag-onnx-1"
# The exported graph must reproduce the torch model to this (per token-embedding value) or it is not kept.
EXPORT_TOLERANCE = 1e-4
BACKEND_ONNX = "onnx"
BACKEND_SENTENCE_TRANSFORMERS = "sentence-transformers"


class QueryEmbeddingError(MedragError):
    """The ONNX query embedder cannot serve this model (unsupported pipeline, or the export failed)."""


@dataclass(frozen=True)
class ModelPipeline:
    """What the sentence-transformers pipeline of a model does after the transformer, read from its config files."""

    max_seq_length: int
    lower_case: bool


def read_pipeline(model_path: str | Path) -> ModelPipeline:
    """Check that the model is Transformer -> mean Pooling (-> Normalize), the only pipeline this path reproduces."""
    folder = Path(model_path)
    try:
        modules = json.loads((folder / "modules.json").read_text())
        st_config = json.loads((folder / "sentence_bert_config.json").read_text())
    except (OSError, ValueError) as error:
        raise QueryEmbeddingError(f"{folder} is not a sentence-transformers model folder: {error}") from error
    kinds = [module["type"].rsplit(".", 1)[-1] for module in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise QueryEmbeddingError(f"unsupported sentence-transformers pipeline {kinds} in {folder}")
    pooling_path = folder / modules[1]["path"] / "config.json"
    try:
        pooling = json.loads(pooling_path.read_text())
    except (OSError, ValueError) as error:
        raise QueryEmbeddingError(f"cannot read the pooling config {pooling_path}: {error}") from error
    modes = sorted(key for key, enabled in pooling.items() if key.startswith("pooling_mode") and enabled)
    if modes != ["pooling_mode_mean_tokens"]:
        raise QueryEmbeddingError(f"only mean pooling is supported, {pooling_path} asks for {modes}")
    return ModelPipeline(
        max_seq_length=int(st_config["max_seq_length"]),
        lower_case=bool(st_config.get("do_lower_case")),
    )


def model_fingerprint(model_path: str | Path) -> str:
    """A short hash of the model folder's files (relative path, size, modification time) and the export format."""
    # Size and mtime rather than the bytes: hashing 90 MB of weights would cost every CLI call ~0.15 s, the very
    # start-up this module exists to avoid; a re-installed or edited model gets a new mtime and so a new key.
    folder = Path(model_path)
    digest = hashlib.sha256(EXPORT_FORMAT.encode())
    for path in sorted(item for item in folder.rglob("*") if item.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(folder).as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def onnx_path_for(model_path: str | Path, cache_dir: str | Path) -> Path:
    """Where the ONNX export of this model (as it is now on disk) lives in cache_dir."""
    return Path(cache_dir) / f"query-encoder-{model_fingerprint(model_path)}.onnx"


def export_onnx(model_path: str | Path, target: str | Path) -> Path:
    """Export the model to ONNX in the cache directory `target` (once: an existing export is kept) and return it."""
    read_pipeline(model_path)
    onnx_path = onnx_path_for(model_path, target)
    if onnx_path.exists():
        return onnx_path
    onnx_path.parent.mkdir(parents=True, exist_ok=True)
    # Written beside its final name and renamed: a CLI call running meanwhile sees no file or a whole one.
    handle, partial = tempfile.mkstemp(prefix=onnx_path.stem + ".", suffix=".partial", dir=onnx_path.parent)
    os.close(handle)
    try:
        _export_with_torch(Path(model_path), Path(partial))
        os.chmod(partial, 0o644)  # mkstemp's 0600 would hide the export from a CLI run by another user
        os.replace(partial, onnx_path)
    finally:
        Path(partial).unlink(missing_ok=True)
    return onnx_path


def _export_with_torch(model_path: Path, target: Path) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    # Eager attention traces to plain MatMul/Softmax; the fused SDPA path is not what the legacy exporter handles.
    model = AutoModel.from_pretrained(str(model_path), attn_implementation="eager").eval()

    class TokenEmbeddings(torch.nn.Module):
        """The transformer by keyword (its positional signature changes between versions), token states out."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            output = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return output.last_hidden_state

    wrapper = TokenEmbeddings().eval()
    # Two rows, the second padded, so the traced graph keeps the attention-mask arithmetic general.
    input_ids = torch.tensor([[101, 7592, 2088, 2003, 102], [101, 7592, 102, 0, 0]])
    sample = (input_ids, (input_ids != 0).long(), torch.zeros_like(input_ids))
    with torch.no_grad():
        expected = wrapper(*sample).numpy()
    dynamic = {name: {0: "batch", 1: "sequence"} for name in (*ONNX_INPUT_NAMES, ONNX_OUTPUT_NAME)}
    with warnings.catch_warnings(), torch.no_grad():
        # The legacy (TorchScript) exporter works offline without onnxscript; its deprecation and tracer notes
        # are about graphs with data-dependent control flow, which a BERT encoder does not have.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            wrapper,
            sample,
            str(target),
            dynamo=False,
            input_names=list(ONNX_INPUT_NAMES),
            output_names=[ONNX_OUTPUT_NAME],
            dynamic_axes=dynamic,
            opset_version=17,
        )
    session = _open_session(target)
    feed = dict(zip(ONNX_INPUT_NAMES, (tensor.numpy() for tensor in sample), strict=True))
    actual = session.run([ONNX_OUTPUT_NAME], feed)[0]
    mask = sample[1].numpy().astype(bool)
    error = float(np.abs(actual - expected)[mask].max())
    if error > EXPORT_TOLERANCE:
        raise QueryEmbeddingError(f"the ONNX export of {model_path} differs from the model by {error:.2e}")


def _open_session(onnx_path: Path) -> onnxruntime.InferenceSession:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only: its start-up notes would reach the CLI's stderr
    return onnxruntime.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])


def _load_tokenizer(model_path: Path, max_seq_length: int) -> Tokenizer:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
    # tokenizer.json ships its own truncation (128) and fixed padding; sentence-transformers cuts at
    # max_seq_length word pieces, special tokens included, and a single query needs no padding.
    tokenizer.enable_truncation(max_length=max_seq_length)
    tokenizer.no_padding()
    return tokenizer


def mean_pool(token_embeddings: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """Average of the token vectors the attention mask keeps, as sentence-transformers' mean Pooling does."""
    weights = attention_mask[..., None].astype(token_embeddings.dtype)
    summed = (token_embeddings * weights).sum(axis=1)
    return summed / np.clip(weights.sum(axis=1), 1e-9, None)


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as sentence-transformers' Normalize (torch's F.normalize, eps 1e-12) does."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.clip(norms, 1e-12, None)


class _OnnxBackend:
    def __init__(self, model_path: Path, onnx_path: Path, pipeline: ModelPipeline) -> None:
        self.tokenizer = _load_tokenizer(model_path, pipeline.max_seq_length)
        self.session = _open_session(onnx_path)
        self.pipeline = pipeline

    def embed(self, text: str) -> np.ndarray:
        encoding = self.tokenizer.encode(text.lower() if self.pipeline.lower_case else text)
        rows = [encoding.ids, encoding.attention_mask, encoding.type_ids]
        feed = {name: np.asarray([row], dtype=np.int64) for name, row in zip(ONNX_INPUT_NAMES, rows, strict=True)}
        token_embeddings = self.session.run([ONNX_OUTPUT_NAME], feed)[0]
        pooled = mean_pool(token_embeddings, feed["attention_mask"])
        # Unit length with or without a Normalize module: chunk vectors are stored normalised (DocumentEmbedder).
        return l2_normalize(pooled)[0]


class _SentenceTransformersBackend:
    def __init__(self, model_path: Path) -> None:
        from medrag.index.embedding import DocumentEmbedder

        self.embedder = DocumentEmbedder(str(model_path), device="cpu", batch_size=1)

    def embed(self, text: str) -> np.ndarray:
        return self.embedder.encode([text])[0]


def read_whole_words(model_path: str | Path) -> frozenset[str] | None:
    """The words a WordPiece model has as one token of its own (None for another tokenizer, or none to read)."""
    try:
        model = json.loads((Path(model_path) / "tokenizer.json").read_text())["model"]
    except (OSError, ValueError, KeyError):
        return None
    if model.get("type") != "WordPiece":
        return None
    return frozenset(token for token in model["vocab"] if token.isalpha())


class QueryEmbedder:
    """Turns one question into the same unit vector the indexing model gives, cheaply enough for every CLI call."""

    def __init__(self, backend: _OnnxBackend | _SentenceTransformersBackend, backend_name: str,
                 model_path: Path | None = None) -> None:
        self._backend = backend
        self.backend = backend_name
        self._model_path = model_path

    @functools.cached_property
    def _whole_words(self) -> frozenset[str] | None:
        # read on the first misspelt word only (~16 ms of JSON): most questions have none
        return read_whole_words(self._model_path) if self._model_path is not None else None

    @classmethod
    def for_model(cls, model_path: str | Path, cache_dir: str | Path) -> QueryEmbedder:
        """The ONNX embedder for model_path (exported into cache_dir if missing), else sentence-transformers."""
        model_path = Path(model_path)
        try:
            pipeline = read_pipeline(model_path)
            onnx_path = onnx_path_for(model_path, cache_dir)
            if not onnx_path.exists():
                onnx_path = export_onnx(model_path, cache_dir)
            return cls(_OnnxBackend(model_path, onnx_path, pipeline), BACKEND_ONNX, model_path)
        except Exception as error:  # any failure of the fast path still leaves a correct, slower one
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            log.warning("query embedding: no ONNX model (%s); using sentence-transformers, start-up is slower", reason)
            return cls(_SentenceTransformersBackend(model_path), BACKEND_SENTENCE_TRANSFORMERS, model_path)

    def knows_word(self, word: str) -> bool:
        """Is word one token of the model's own? A word it has to spell out in pieces may be a misspelling.

        Without a WordPiece vocabulary every word counts as known, so no word is replaced before embedding.
        """
        return self._whole_words is None or word.lower() in self._whole_words

    def embed(self, text: str) -> list[float]:
        """The unit-length embedding of text, as a list of floats ready for a pgvector parameter."""
        return self._backend.embed(text).tolist()
