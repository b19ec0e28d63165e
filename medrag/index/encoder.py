"""What every way of running the embedding model shares: its pipeline, its tokenizer, length-sorted padded batches.

The ONNX encoder (onnxruntime, CPU) and the torch encoder (CUDA or CPU) differ only in how they run one padded
batch, so a text is cut, padded and pooled the same way whichever made its vector.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from medrag.core.errors import MedragError

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer


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


def load_tokenizer(model_path: Path, max_seq_length: int) -> Tokenizer:
    """The model's fast tokenizer, cutting at max_seq_length word pieces and padding nothing (batches pad)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
    # tokenizer.json ships its own truncation (128) and fixed padding; sentence-transformers cuts at
    # max_seq_length word pieces, special tokens included, and pads each batch to its longest text.
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


@dataclass(frozen=True)
class TokenBatch:
    """Texts tokenised and padded to the longest of them: the model's inputs, and where each row came from."""

    rows: list[int]
    feed: dict[str, np.ndarray]


class BatchEncoder:
    """The model's tokenizer and batching; a subclass says how one padded batch becomes vectors (`run`)."""

    dimension: int
    # Batch widths are rounded up to a multiple of this (1: a batch is as wide as its longest text). A GPU pays for
    # each new input shape's first call; rounded widths let a stage meet only a few (TorchEncoder.warm_up).
    width_multiple = 1

    def __init__(self, model_path: str | Path) -> None:
        self.model_path = Path(model_path)
        self.pipeline = read_pipeline(self.model_path)
        self.tokenizer = load_tokenizer(self.model_path, self.pipeline.max_seq_length)

    def tokenize(self, texts: list[str]) -> list[Encoding]:
        """Word pieces of each text, cut at the model's maximum length (the tokenizer runs in parallel).

        encode_batch_fast skips the character offsets nothing here reads: the same ids, 0.9x the time (20,000 chunk
        texts on 2 cores: 17,000 texts/s against 15,400).
        """
        if self.pipeline.lower_case:
            texts = [text.lower() for text in texts]
        return self.tokenizer.encode_batch_fast(texts, add_special_tokens=True)

    def batches(self, encodings: list[Encoding], batch_size: int) -> Iterator[TokenBatch]:
        """Padded batches of similar length (shortest first), so a batch pads little.

        Built with numpy from each text's word-piece ids alone: the tokenizer pads nothing and is given one text at a
        time, so a text's attention mask is all ones and its token types all zeros. On a GPU this padding is the
        stage's Python work per text (0.35x the time a loop over the tokenizer's lists took, on 20,000 chunk texts).
        """
        lengths = np.fromiter((len(encoding) for encoding in encodings), dtype=np.int64, count=len(encodings))
        order = np.argsort(lengths, kind="stable")
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            row_lengths = lengths[rows]
            kept = np.arange(self.width(int(row_lengths.max()))) < row_lengths[:, None]
            ids = np.zeros(kept.shape, dtype=np.int64)
            # boolean assignment fills row by row, left to right: each row's pieces land in its first cells
            ids[kept] = np.fromiter(itertools.chain.from_iterable(encodings[row].ids for row in rows), dtype=np.int64,
                                    count=int(row_lengths.sum()))
            yield TokenBatch(rows.tolist(), {"input_ids": ids, "attention_mask": kept.astype(np.int64),
                                             "token_type_ids": np.zeros_like(ids)})

    def width(self, longest: int) -> int:
        """A batch's width for its longest text: rounded up to width_multiple, never past the model's length."""
        rounded = -(-longest // self.width_multiple) * self.width_multiple
        return max(longest, min(rounded, self.pipeline.max_seq_length))

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
