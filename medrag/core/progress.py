"""Progress of long stages: count, rate and ETA, as a rich bar on a terminal and as plain lines everywhere else.

A stage asks for a Tracker (`track("icd10cm: embed", total=46_881, unit="chunks")`) and advances it; whoever runs
the stage decides where progress goes by installing sinks (`with reporting(RichSink()): ...`): the CLI a bar on a
terminal or a line every 10% on a pipe, the Prefect flow the same lines through its run logger. With no sink
installed a tracker costs a counter update.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console

# A line sink writes a line each time a tracker crosses another tenth of its total, and one when it ends; for a
# stage of unknown size, every LINE_INTERVAL_SECONDS instead. A stage shorter than LINE_QUIET_SECONDS gets only its
# last line: tenths of a second-long stage are noise in a log.
LINE_STEPS = 10
LINE_INTERVAL_SECONDS = 15.0
LINE_QUIET_SECONDS = 2.0


class Sink(Protocol):
    """Somewhere progress is shown: told when a tracker starts, moves and ends."""

    def started(self, tracker: Tracker) -> None:
        """A tracker was created."""

    def moved(self, tracker: Tracker) -> None:
        """A tracker's count (or total) changed."""

    def ended(self, tracker: Tracker) -> None:
        """A tracker is done."""


_sinks: list[Sink] = []
_sinks_lock = threading.Lock()


@contextlib.contextmanager
def reporting(*sinks: Sink) -> Iterator[None]:
    """Show every tracker created inside this block (in any thread) on these sinks too."""
    with _sinks_lock:
        _sinks.extend(sinks)
    try:
        yield
    finally:
        with _sinks_lock:
            for sink in sinks:
                _sinks.remove(sink)


_counting: contextvars.ContextVar[Tracker | None] = contextvars.ContextVar("medrag_counting", default=None)


@contextlib.contextmanager
def counting(tracker: Tracker) -> Iterator[Tracker]:
    """Make tracker the one `count()` advances in this context (deep helpers such as COPY need not be passed it)."""
    token = _counting.set(tracker)
    try:
        with tracker:
            yield tracker
    finally:
        _counting.reset(token)


def count(units: int) -> None:
    """Advance the tracker of the enclosing `counting()` block, if there is one."""
    tracker = _counting.get()
    if tracker is not None:
        tracker.advance(units)


def track(label: str, *, total: int | None = None, unit: str = "items", done: int = 0) -> Tracker:
    """A tracker for one stage, shown on the sinks installed now; `done` is work an earlier run already did."""
    with _sinks_lock:
        sinks = list(_sinks)
    return Tracker(label, total=total, unit=unit, done=done, sinks=sinks)


class Tracker:
    """One stage's count against its total, with the rate and ETA of the work done since it started."""

    def __init__(self, label: str, *, total: int | None, unit: str, done: int = 0, sinks: list[Sink]) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.done = done
        self.initial = done  # done before this run: not part of the rate
        self.started_at = time.monotonic()
        self.closed = False
        self._sinks = sinks
        self._lock = threading.Lock()
        for sink in sinks:
            sink.started(self)

    def advance(self, count: int = 1) -> None:
        """Count `count` more units done."""
        with self._lock:
            self.done += count
        for sink in self._sinks:
            sink.moved(self)

    def set_total(self, total: int) -> None:
        """The total once it is known (a download learns its size from the response)."""
        self.total = total
        for sink in self._sinks:
            sink.moved(self)

    def close(self) -> None:
        """The stage is over (call once; later calls do nothing)."""
        if self.closed:
            return
        self.closed = True
        for sink in self._sinks:
            sink.ended(self)

    def __enter__(self) -> Tracker:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @property
    def seconds(self) -> float:
        """Seconds since the tracker started."""
        return time.monotonic() - self.started_at

    @property
    def rate(self) -> float:
        """Units per second done by this run."""
        seconds = self.seconds
        return (self.done - self.initial) / seconds if seconds > 0 else 0.0

    @property
    def eta_seconds(self) -> float | None:
        """Seconds left at the current rate (None when the total or the rate is not known yet)."""
        if self.total is None or self.rate <= 0:
            return None
        return max(self.total - self.done, 0) / self.rate

    def line(self) -> str:
        """One line: label, count of total with percent, rate and ETA (or elapsed time at the end)."""
        scale, unit = (1e6, "MB") if self.unit == "bytes" else (1, self.unit)
        amount = f"{self.done / scale:,.1f}" if scale > 1 else f"{self.done:,}"
        if self.total is not None:
            amount += f"/{self.total / scale:,.1f}" if scale > 1 else f"/{self.total:,}"
        amount += f" {unit}"
        if self.total:
            amount += f" ({100 * self.done / self.total:.0f}%)"
        parts = [f"{self.label}: {amount}", f"{self.rate / scale:,.1f} {unit}/s"]
        if self.closed:
            parts.append(f"{self.seconds:.1f} s")
        elif (eta := self.eta_seconds) is not None:
            parts.append(f"ETA {format_duration(eta)}")
        return ", ".join(parts)


def format_duration(seconds: float) -> str:
    """A duration as m:ss (or h:mm:ss)."""
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class LineSink:
    """Plain lines through `write` (stderr, a logger): at each tenth of a tracker's total and at its end."""

    def __init__(self, write: Callable[[str], None] | None = None, *, steps: int = LINE_STEPS,
                 interval: float = LINE_INTERVAL_SECONDS, quiet: float = LINE_QUIET_SECONDS) -> None:
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self.steps = steps
        self.interval = interval
        self.quiet = quiet
        self._shown: dict[int, tuple[int, float]] = {}  # tracker id -> (last step shown, time shown)
        self._lock = threading.Lock()

    def started(self, tracker: Tracker) -> None:
        """Remember where the tracker starts: an earlier run's share is not announced again."""
        with self._lock:
            self._shown[id(tracker)] = (self._step(tracker), time.monotonic())

    def moved(self, tracker: Tracker) -> None:
        """A line when the tracker crossed into another tenth (or, without a total, every interval)."""
        if tracker.seconds < self.quiet:
            return
        with self._lock:
            last_step, last_time = self._shown.get(id(tracker), (0, 0.0))
            step, now = self._step(tracker), time.monotonic()
            # the last tenth is the end line's to say
            due = last_step < step < self.steps if tracker.total else now - last_time >= self.interval
            if not due:
                return
            self._shown[id(tracker)] = (step, now)
        self.write(tracker.line())

    def ended(self, tracker: Tracker) -> None:
        """The final line, with the stage's rate and seconds."""
        with self._lock:
            self._shown.pop(id(tracker), None)
        self.write(tracker.line())

    def _step(self, tracker: Tracker) -> int:
        return int(self.steps * tracker.done / tracker.total) if tracker.total else 0


class RichSink:
    """rich progress bars on stderr, one per tracker: count of total, rate and ETA; kept on screen when done."""

    def __init__(self, console: Console | None = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=console or Console(stderr=True), transient=False,
        )
        self._tasks: dict[int, int] = {}
        self._lock = threading.Lock()

    def started(self, tracker: Tracker) -> None:
        """A bar for the tracker (the live display starts with the first one)."""
        with self._lock:
            if not self._tasks:
                self.progress.start()
            self._tasks[id(tracker)] = self.progress.add_task(
                tracker.label, total=tracker.total, completed=tracker.done, rate="")

    def moved(self, tracker: Tracker) -> None:
        """Move the tracker's bar."""
        task = self._tasks.get(id(tracker))
        if task is not None:
            self.progress.update(task, completed=tracker.done, total=tracker.total,
                                 rate=f"{tracker.rate:,.1f} {tracker.unit}/s")

    def ended(self, tracker: Tracker) -> None:
        """Fill the bar; the live display stops when no bar is running."""
        self.moved(tracker)
        with self._lock:
            self._tasks.pop(id(tracker), None)
            if not self._tasks:
                self.progress.stop()
                # the stopped display leaves its bars printed; a later start must not draw them again
                for task in list(self.progress.task_ids):
                    self.progress.remove_task(task)


def terminal_sink() -> Sink:
    """Bars when stderr is a terminal, else a line every tenth: what a person at the CLI should see."""
    return RichSink() if sys.stderr.isatty() else LineSink()
