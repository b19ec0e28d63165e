"""Tokenising and padding in worker processes, for a model that outruns one process's tokenizer (a GPU).

The tokenizer runs in Rust on every core, but handing it the texts and reading back each text's word pieces runs
under the interpreter lock, which the stage's reading, writing and model launches hold too. Worker processes each
have their own; they return padded numpy batches, which cross the process boundary as buffers.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from medrag.index.encoder import BatchEncoder, TokenBatch

_worker_encoder: BatchEncoder | None = None


def _start_worker(model_path: str, threads: int) -> None:
    """Load the tokenizer once per worker, its Rust thread pool sized so the workers share the cores."""
    global _worker_encoder
    os.environ["RAYON_NUM_THREADS"] = str(threads)  # read when the tokenizer first runs in this process
    _worker_encoder = BatchEncoder(model_path)


def _worker_batches(texts: list[str], batch_size: int) -> list[TokenBatch]:
    encoder = _worker_encoder
    if encoder is None:
        raise RuntimeError("tokenizer worker not started")
    return list(encoder.batches(encoder.tokenize(texts), batch_size))


def _ready() -> bool:
    return _worker_encoder is not None


class TokenizerProcesses:
    """A pool of processes that tokenise and pad texts the way BatchEncoder does, started once and kept."""

    def __init__(self, model_path: str | Path, processes: int) -> None:
        self.processes = processes
        threads = max(1, (os.cpu_count() or 1) // processes)
        # spawn, not fork: the parent may hold a CUDA context and threads, neither of which survives a fork
        self._pool = ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_start_worker, initargs=(str(model_path), threads))
        # start every worker now (model loading time), not on the stage's first windows
        for future in [self._pool.submit(_ready) for _ in range(processes * 2)]:
            future.result()

    def batches(self, texts: list[str], batch_size: int) -> list[TokenBatch]:
        """Length-sorted, padded batches of the texts (rows index texts), made in a worker process."""
        return self._pool.submit(_worker_batches, texts, batch_size).result()

    def close(self) -> None:
        """Stop the workers."""
        self._pool.shutdown(cancel_futures=True)
