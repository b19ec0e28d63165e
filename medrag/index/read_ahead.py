"""Windows read in order on one thread and prepared on several, handed over in order: the model never waits on one.

On a GPU the model embeds a window of 4,096 chunk texts in about the time one thread tokenises it, so a single
reader that reads, tokenises and pads each window in turn sets the stage's pace. Reading stays on one thread (keyset
pages follow each other on one connection); tokenising and padding, which run mostly outside the interpreter lock,
run on `workers` threads.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar, cast

Window = TypeVar("Window")
Prepared = TypeVar("Prepared")

_DONE = object()
_POLL_SECONDS = 0.1


class ReadAhead(Generic[Window, Prepared]):
    """Iterate prepare(window) for each window `read` yields, in order, with up to `ahead` windows in preparation."""

    def __init__(self, read: Callable[[], Iterable[Window]], prepare: Callable[[Window], Prepared], *,
                 workers: int = 1, ahead: int | None = None) -> None:
        self.read = read
        self.prepare = prepare
        self.workers = max(1, workers)
        self.ahead = ahead or self.workers + 1
        self._handed: queue.Queue[object] = queue.Queue(maxsize=self.ahead)
        self._stop = threading.Event()

    def _offer(self, item: object) -> bool:
        """Put item in the hand-over queue, waiting for room unless the consumer has stopped; False if it has."""
        while not self._stop.is_set():
            try:
                self._handed.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def _feed(self) -> None:
        """Read windows in order, submit each one's preparation, hand the futures over in the same order."""
        try:
            with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="medrag-prepare") as pool:
                for window in self.read():
                    if not self._offer(pool.submit(self.prepare, window)):
                        return
        except BaseException as error:  # handed to the consumer, raised there
            self._offer(error)
            return
        self._offer(_DONE)

    def __iter__(self) -> Iterator[Prepared]:
        feeder = threading.Thread(target=self._feed, name="medrag-read", daemon=True)
        feeder.start()
        try:
            while (item := self._handed.get()) is not _DONE:
                if isinstance(item, BaseException):
                    raise item
                yield cast("Future[Prepared]", item).result()
        finally:
            self._stop.set()  # a consumer that stops early (an error, a break) releases the feeder
            feeder.join()
