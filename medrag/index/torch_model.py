"""The embedding model on torch: fp16 on a GPU, each batch's copies overlapping the next batch; float32 on a CPU."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from medrag.index.encoder import BatchEncoder, TokenBatch

# Texts per batch on a GPU, where a batch of 64 leaves the card mostly idle (sentence-transformers' encode at
# batch 64 ran at 1.5% of the model's forward-only rate on an H200). Forward-only, shapes warmed, the real chunk
# texts: 62,894 texts/s at 1024, 64,239 at 2048, 64,182 at 4096. The stage filled 13,888, 14,454 and 13,983
# chunks/s at 1024, 2048 and 4096 in one run (windows of 4,096): the same within its noise, and 1024 pads least.
# See docs/results/bench_embed_gpu.json.
CUDA_BATCH_TEXTS = 1024


class TorchEncoder(BatchEncoder):
    """The model's transformer through transformers' AutoModel, pooled and normalised on the device it runs on."""

    def __init__(self, model_path: str | Path, *, device: str = "cpu", width_multiple: int = 1) -> None:
        super().__init__(model_path)
        self.width_multiple = width_multiple
        # Must be set before huggingface_hub is imported: it reads the variable once, at import.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # a "Loading weights" bar would land in the stage's output
        self.torch = torch
        self.device = torch.device(device)
        # fp16 on a GPU (twice the rate; pooling and the vectors stay float32), float32 on a CPU whatever the
        # checkpoint's own type
        dtype = torch.float16 if self.device.type == "cuda" else torch.float32
        model = AutoModel.from_pretrained(str(self.model_path), dtype=dtype).eval().to(self.device)
        self.model = model
        self.dimension = int(model.config.hidden_size)

    def _vectors(self, batch: TokenBatch) -> Any:
        """Launch the model on one batch; the pooled, unit-length float32 vectors as a tensor on the device."""
        torch = self.torch
        with torch.inference_mode():
            feed = {name: torch.from_numpy(array).to(self.device, non_blocking=True)
                    for name, array in batch.feed.items()}
            hidden = self.model(**feed).last_hidden_state
            mask = feed["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            summed = (hidden * mask).sum(dim=1, dtype=torch.float32)
            pooled = summed / mask.sum(dim=1, dtype=torch.float32).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1, eps=1e-12)

    def run(self, batch: TokenBatch) -> np.ndarray:
        """The model on one padded batch: mean-pooled, unit-length vectors in the batch's row order."""
        return self._vectors(batch).cpu().numpy()

    def warm_up(self, batch_size: int) -> int:
        """Run every batch shape a stage can meet once (full batches, each rounded width), so that no text waits
        for a shape's first call; the shapes run. Only rounded widths are few enough to warm."""
        if self.width_multiple <= 1:
            return 0
        widths = sorted({self.width(width) for width in range(1, self.pipeline.max_seq_length + 1)})
        for width in widths:
            ids = np.zeros((batch_size, width), dtype=np.int64)
            self.run(TokenBatch(list(range(batch_size)), {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                                          "token_type_ids": np.zeros_like(ids)}))
        return len(widths)

    def run_all(self, batches: Iterable[TokenBatch]) -> Iterator[tuple[list[int], np.ndarray]]:
        """(rows, vectors) of each batch; on a GPU batch N+1 is padded and launched before batch N is read back."""
        if self.device.type != "cuda":
            yield from super().run_all(batches)
            return
        torch = self.torch
        in_flight: tuple[list[int], Any, Any] | None = None
        for batch in batches:
            vectors = self._vectors(batch)
            host = torch.empty(vectors.shape, dtype=vectors.dtype, pin_memory=True)
            host.copy_(vectors, non_blocking=True)
            done = torch.cuda.Event()
            done.record()
            if in_flight is not None:
                yield self._collect(in_flight)
            in_flight = (batch.rows, host, done)
        if in_flight is not None:
            yield self._collect(in_flight)

    @staticmethod
    def _collect(in_flight: tuple[list[int], Any, Any]) -> tuple[list[int], np.ndarray]:
        rows, host, done = in_flight
        done.synchronize()
        return rows, host.numpy()
