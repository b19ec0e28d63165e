"""What every way of running the embedding model shares: its pipeline, its tokenizer, length-sorted padded batches.

The ONNX encoder (onnxruntime, CPU) and the torch encoder (CUDA or CPU) differ only in how they run one padded
batch, so a text is cut, padded and pooled the same way whichever made its vector.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from medrag.core.errors import MedragError
from medrag.index.word_pieces import Pieces, WordPieces, ragged_take

if TYPE_CHECKING:
    from tokenizers import Tokenizer


class UnsupportedModelError(MedragError):
    """The model folder is not a Transformer -> mean Pooling sentence-transformers model this package can run."""


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
        raise UnsupportedModelError(f"{folder} is not a sentence-transformers model folder: {error}") from error
    kinds = [module["type"].rsplit(".", 1)[-1] for module in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise UnsupportedModelError(f"unsupported sentence-transformers pipeline {kinds} in {folder}")
    pooling_path = folder / modules[1]["path"] / "config.json"
    try:
        pooling = json.loads(pooling_path.read_text())
    except (OSError, ValueError) as error:
        raise UnsupportedModelError(f"cannot read the pooling config {pooling_path}: {error}") from error
    modes = sorted(key for key, enabled in pooling.items() if key.startswith("pooling_mode") and enabled)
    if modes != ["pooling_mode_mean_tokens"]:
        raise UnsupportedModelError(f"only mean pooling is supported, {pooling_path} asks for {modes}")
    return ModelPipeline(
        max_seq_length=int(st_config["max_seq_length"]),
        lower_case=bool(st_config.get("do_lower_case")),
    )


def load_tokenizer(model_path: Path) -> Tokenizer:
    """The model's fast tokenizer, cutting and padding nothing (batches cut at the model's length and pad)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
    # tokenizer.json ships its own truncation (128) and fixed padding; sentence-transformers cuts at
    # max_seq_length word pieces, special tokens included, and pads each batch to its longest text.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def special_tokens(tokenizer: Tokenizer) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a text's own pieces ([CLS] and [SEP] for BERT)."""
    marked = tokenizer.encode("a", add_special_tokens=True).ids
    bare = tokenizer.encode("a", add_special_tokens=False).ids
    for start in range(len(marked) - len(bare) + 1):
        if marked[start:start + len(bare)] == bare:
            return marked[:start], marked[start + len(bare):]
    raise UnsupportedModelError("the tokenizer's special tokens do not surround the text")


def mean_pool(token_embeddings: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """Average of the token vectors the attention mask keeps, as sentence-transformers' mean Pooling does."""
    weights = attention_mask[..., None].astype(token_embeddings.dtype)
    summed = (token_embeddings * weights).sum(axis=1)
    return summed / np.clip(weights.sum(axis=1), 1e-9, None)


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as sentence-transformers' Normalize (torch's F.normalize, eps 1e-12) does."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.clip(norms, 1e-12, None)


@dataclass(frozen=True)
class TokenBatch:
    """Texts tokenised and padded to the longest of them: the model's inputs, and where each row came from.

    Only the ids and each row's length are kept (what travels from a reader process); the rest of the feed is
    made from them when the model runs.
    """

    rows: list[int]
    ids: np.ndarray  # int64, one row per text, padded with zeros
    lengths: np.ndarray  # int64, tokens per row, special tokens included

    @functools.cached_property
    def feed(self) -> dict[str, np.ndarray]:
        """The model's inputs: ids, an attention mask of ones over each text, token types all zero (one text)."""
        mask = (np.arange(self.ids.shape[1]) < self.lengths[:, None]).astype(np.int64)
        return {"input_ids": self.ids, "attention_mask": mask, "token_type_ids": np.zeros_like(self.ids)}


class BatchEncoder:
    """The model's tokenizer and batching; a subclass says how one padded batch becomes vectors (`run`)."""

    dimension: int

    def __init__(self, model_path: str | Path) -> None:
        self.model_path = Path(model_path)
        self.pipeline = read_pipeline(self.model_path)
        tokenizer = load_tokenizer(self.model_path)
        self.word_pieces = WordPieces(tokenizer)
        self.prefix, self.suffix = special_tokens(tokenizer)

    def tokenize(self, texts: list[str]) -> Pieces:
        """Word pieces of each text, without special tokens and uncut (batches add and cut them)."""
        if self.pipeline.lower_case:
            texts = [text.lower() for text in texts]
        return self.word_pieces.encode(texts)

    def batches(self, pieces: Pieces, batch_size: int) -> Iterator[TokenBatch]:
        """Padded batches of similar length (shortest first), so a batch pads little.

        Each text is its pieces cut to fit the model's maximum length with the special tokens around them, as the
        tokenizer's own truncation does; the attention mask is all ones over it and the token types all zeros (one
        text per row). Built with numpy: on a GPU this is the stage's work per text that holds Python's lock.
        """
        prefix, suffix = np.asarray(self.prefix, dtype=np.int64), np.asarray(self.suffix, dtype=np.int64)
        kept_pieces = np.minimum(pieces.lengths, self.pipeline.max_seq_length - len(prefix) - len(suffix))
        lengths = kept_pieces + len(prefix) + len(suffix)
        starts = pieces.starts
        order = np.argsort(lengths, kind="stable")
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            row_pieces = kept_pieces[rows]
            columns = np.arange(lengths[rows].max())
            ids = np.zeros((len(rows), len(columns)), dtype=np.int64)
            ids[:, :len(prefix)] = prefix
            own = (columns >= len(prefix)) & (columns < len(prefix) + row_pieces[:, None])
            # boolean assignment fills row by row, left to right: each row's pieces land in order
            ids[own] = ragged_take(pieces.ids, starts[rows], row_pieces)
            for position, token in enumerate(suffix):
                ids[np.arange(len(rows)), len(prefix) + row_pieces + position] = token
            yield TokenBatch(rows.tolist(), ids, lengths[rows])

    def run(self, batch: TokenBatch) -> np.ndarray:
        """The model on one padded batch: mean-pooled, unit-length float32 vectors in the batch's row order."""
        raise NotImplementedError

    def run_all(self, batches: Iterable[TokenBatch]) -> Iterator[tuple[list[int], np.ndarray]]:
        """(rows, vectors) of each batch in turn; an encoder that can overlap batches overrides this."""
        for batch in batches:
            yield batch.rows, self.run(batch)

    def encode(self, texts: list[str], *, batch_size: int = 64) -> np.ndarray:
        """Vectors for texts, in their order: float32, L2-normalised, one row per text."""
        vectors = np.empty((len(texts), self.dimension), dtype=np.float32)
        for rows, batch_vectors in self.run_all(self.batches(self.tokenize(texts), batch_size)):
            vectors[rows] = batch_vectors
        return vectors
