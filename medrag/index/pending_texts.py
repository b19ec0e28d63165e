"""The embedding stage's input: the chunks still without a vector, read in windows, tokenised and padded ahead of
the model, on a thread beside it (a CPU) or in reader processes kept with the model (a GPU).

On a GPU one reader thread, sharing Python's lock with the writers and the model's launches, could not keep up:
the stage without any model filled at 0.30 of the forward-only rate. Processes each read their own range of
content hashes, with their own tokenizer and connection, and send back padded batches.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg

from medrag.core.errors import MedragError
from medrag.index.encoder import BatchEncoder, TokenBatch

# The text a chunk's vector is computed from, as SQL over the chunk table; the one place it is defined, so the
# indexing stage, any re-check and the query side all agree on what a chunk "says": its embedding_text when the
# document builder gave one (HCPCS codes: the item's descriptions), else heading and text.
EMBED_TEXT_SQL = "coalesce(embedding_text, coalesce(heading || E'\\n', '') || text)"


def pending(table: str) -> str:
    """SQL: the chunk has no vector of the model %(model)s (a vector of another model, or of an unknown maker, is a
    point in another space)."""
    return f"NOT EXISTS (SELECT 1 FROM chunk_vector AS own WHERE own.chunk_id = {table}id AND own.model_id = %(model)s)"


PENDING = pending("chunk.")

# Optionally only chunks of some document sources (tests embed the prose sources, not 53k code documents).
_IN_SOURCES = "(%(sources)s::text[] IS NULL OR {table}source = ANY(%(sources)s))"
# Optionally one shard of the texts (their content hash hashed, modulo the shard count): workers embedding shards
# at once never touch the same rows.
_IN_SHARD = "(%(shards)s::int IS NULL OR mod(abs(hashtext({table}content_hash)), %(shards)s::int) = %(shard)s::int)"


def in_scope(table: str = "") -> str:
    """SQL: the chunk is in the stage's sources and shard (%(sources)s, %(shards)s, %(shard)s)."""
    return f"{_IN_SOURCES.format(table=table)} AND {_IN_SHARD.format(table=table)}"


# Each pending text once, with the chunks that say it (their ids and sources: the vector is written straight to
# their rows), in one range of content hashes [low, high). Keyset pagination on content_hash: each window starts
# after the last hash seen, so a window that fills nothing (a concurrent writer, say) can never make the loop spin
# on the same rows.
_SELECT_PENDING_TEXTS = f"""
SELECT content_hash, (array_agg({EMBED_TEXT_SQL} ORDER BY id))[1], array_agg(id ORDER BY id),
       array_agg(source ORDER BY id)
FROM chunk
WHERE {PENDING} AND content_hash > %(after)s AND content_hash >= %(low)s
  AND (%(high)s::text IS NULL OR content_hash < %(high)s) AND {in_scope()}
GROUP BY content_hash
ORDER BY content_hash
LIMIT %(limit)s
"""


class ReaderFailed(MedragError):
    """A reader of pending texts (thread or process) stopped with an error; its message, on one line."""


@dataclass(frozen=True)
class PendingText:
    """A text to embed, and the chunks (ids and sources) that say it: its vector is written to each."""

    content_hash: str
    chunk_ids: list[int]
    sources: list[str]


@dataclass(frozen=True)
class Window:
    """Pending texts read together, and their length-sorted padded batches (rows index texts)."""

    texts: list[PendingText]
    batches: list[TokenBatch]


@dataclass(frozen=True)
class WindowRequest:
    """What one reader reads: the texts of a scope in one range of content hashes, in windows of window_texts."""

    url: str
    scope: dict[str, Any]
    low: str
    high: str | None
    batch_size: int
    window_texts: int


def hash_ranges(readers: int) -> list[tuple[str, str | None]]:
    """[low, high) bounds splitting content hashes (hex digests) into `readers` ranges; the outer ends are open."""
    cuts = [f"{256 * part // readers:02x}" for part in range(1, readers)]
    return list(zip(["", *cuts], [*cuts, None], strict=True))


def read_range(request: WindowRequest, encoder: BatchEncoder, windows: Any, stop: threading.Event | None = None
               ) -> None:
    """Put each window of the request's texts on `windows`, tokenised and padded, then None; an error is put as a
    ReaderFailed instead."""
    try:
        with psycopg.connect(request.url, autocommit=True) as conn:
            after = ""
            select = {**request.scope, "low": request.low, "high": request.high, "limit": request.window_texts}
            while not (stop and stop.is_set()) and (
                    rows := conn.execute(_SELECT_PENDING_TEXTS, {**select, "after": after}).fetchall()):
                texts = [PendingText(content_hash, chunk_ids, sources) for content_hash, _, chunk_ids, sources in rows]
                pieces = encoder.tokenize([text for _, text, _, _ in rows])
                windows.put(Window(texts, list(encoder.batches(pieces, request.batch_size))))
                after = rows[-1][0]  # keyset paging: rows being written have hashes <= this, never re-read
        windows.put(None)
    except Exception as error:  # noqa: BLE001 - whatever stopped the reader reaches the stage, on one line
        reason = str(error).splitlines()[0] if str(error) else ""
        windows.put(ReaderFailed(f"reading pending texts failed: {type(error).__name__}: {reason}"))


@contextlib.contextmanager
def thread_windows(request: WindowRequest, encoder: BatchEncoder) -> Iterator[Iterator[Window]]:
    """The request's windows from one thread reading a window ahead of the model (on a CPU, the model needs the
    cores more than a second reader would help)."""
    windows: queue.Queue[Any] = queue.Queue(maxsize=1)
    stop = threading.Event()
    reader = threading.Thread(target=read_range, args=(request, encoder, windows, stop), name="medrag-embed-read",
                              daemon=True)
    reader.start()
    try:
        yield _receive(windows, [reader])
    finally:
        stop.set()
        while reader.is_alive():  # a reader blocked on the full queue finishes its put once this drains it
            with contextlib.suppress(queue.Empty):
                windows.get(timeout=0.1)


def _receive(windows: Any, readers: list[Any]) -> Iterator[Window]:
    """Windows as they arrive until every reader has said it is done; a reader's error is raised here."""
    finished = 0
    while finished < len(readers):
        try:
            item = windows.get(timeout=1.0)
        except queue.Empty:
            # a reader killed from outside (out of memory, say) never says it is done
            if sum(not reader.is_alive() for reader in readers) > finished:
                raise ReaderFailed("a reader of pending texts stopped without finishing") from None
            continue
        if item is None:
            finished += 1
        elif isinstance(item, ReaderFailed):
            raise item
        else:
            yield item


def _serve_reads(model_path: str, cache_words: bool, requests: Any, windows: Any) -> None:
    """A reader process: one tokenizer (its word cache kept between requests), reading each request it is sent."""
    encoder = BatchEncoder(model_path)
    encoder.word_pieces.cache_words = cache_words
    windows.put("ready")
    while (request := requests.get()) is not None:
        read_range(request, encoder, windows)


class ReaderPool:
    """Reader processes kept with a model on a GPU, started while the model loads (a process starts in about a
    second there), each reading its own range of content hashes for a stage."""

    def __init__(self, model_path: str, cache_words: bool, processes: int) -> None:
        context = multiprocessing.get_context("spawn")  # the parent holds CUDA and threads: never fork it
        self._windows = context.Queue(maxsize=2 * processes)
        self._requests = [context.SimpleQueue() for _ in range(processes)]
        self._processes = [context.Process(target=_serve_reads, args=(model_path, cache_words, requests,
                                                                      self._windows),
                                           name=f"medrag-embed-read-{part}", daemon=True)
                           for part, requests in enumerate(self._requests)]
        for process in self._processes:
            process.start()
        self._ready = 0
        self.busy = threading.Lock()  # one stage at a time: another (a shard beside it) reads on a thread

    @property
    def size(self) -> int:
        """Reader processes."""
        return len(self._processes)

    def wait_ready(self) -> None:
        """Wait until every reader has its tokenizer loaded."""
        while self._ready < self.size:
            try:
                item = self._windows.get(timeout=1.0)
            except queue.Empty:
                if any(not process.is_alive() for process in self._processes):
                    raise ReaderFailed("a reader process of the embedding stage did not start") from None
                continue
            if item == "ready":
                self._ready += 1

    @contextlib.contextmanager
    def windows(self, request: WindowRequest) -> Iterator[Iterator[Window]]:
        """The request's windows, read by every process over its own hash range. A stage that stops early closes
        the pool (its readers would still be sending windows); the embedder starts another when next asked."""
        self.wait_ready()
        for requests, (low, high) in zip(self._requests, hash_ranges(self.size), strict=True):
            requests.put(WindowRequest(request.url, request.scope, low, high, request.batch_size,
                                       request.window_texts))
        exhausted = False

        def receive() -> Iterator[Window]:
            nonlocal exhausted
            yield from _receive(self._windows, self._processes)
            exhausted = True

        try:
            yield receive()
        finally:
            if not exhausted:
                self.close()

    @property
    def closed(self) -> bool:
        """True once the processes were stopped."""
        return not self._processes

    def close(self) -> None:
        """Stop the reader processes."""
        for process in self._processes:
            process.terminate()
        for process in self._processes:
            process.join()
        self._processes = []
