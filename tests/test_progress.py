"""Progress lines and bars: a line per tenth with count, rate and ETA; an earlier run's share is not announced."""

from __future__ import annotations

import io
import re
import threading

from rich.console import Console

from medrag.core.progress import LineSink, RichSink, format_duration, reporting, track

LINE = re.compile(r"^embed: [\d,]+/1,000 chunks \(\d+%\), [\d,.]+ chunks/s, (ETA \d+:\d\d|[\d.]+ s)$")


def test_a_line_at_each_tenth_and_one_at_the_end() -> None:
    lines: list[str] = []
    with reporting(LineSink(lines.append, quiet=0.0)):
        tracker = track("embed", total=1000, unit="chunks")
        for _ in range(100):
            tracker.advance(10)
        tracker.close()
    assert len(lines) == 10, lines
    assert all(LINE.match(line) for line in lines), lines
    assert [re.search(r"\((\d+)%\)", line).group(1) for line in lines] == [str(p) for p in range(10, 101, 10)]
    assert "ETA" in lines[0] and lines[-1].endswith(" s")  # the last line says how long the stage took


def test_work_done_by_an_earlier_run_counts_in_the_total_not_in_the_rate() -> None:
    lines: list[str] = []
    with reporting(LineSink(lines.append, quiet=0.0)):
        tracker = track("embed", total=1000, unit="chunks", done=600)
        assert tracker.rate == 0.0
        tracker.advance(100)
        tracker.close()
    assert lines[0].startswith("embed: 700/1,000 chunks (70%)")  # 60% was never announced: this run did not do it
    assert len(lines) == 2


def test_without_a_total_lines_come_by_time() -> None:
    lines: list[str] = []
    with reporting(LineSink(lines.append, interval=0.0, quiet=0.0)):
        tracker = track("load", unit="rows")
        tracker.advance(5)
        tracker.advance(5)
        tracker.close()
    assert lines[0].startswith("load: 5 rows,") and lines[-1].startswith("load: 10 rows,")


def test_trackers_outside_reporting_go_nowhere_and_sinks_are_removed_after() -> None:
    lines: list[str] = []
    with reporting(LineSink(lines.append, quiet=0.0)):
        pass
    tracker = track("quiet", total=10)
    tracker.advance(10)
    tracker.close()
    assert lines == []


def test_trackers_advanced_from_threads_count_every_step() -> None:
    lines: list[str] = []
    with reporting(LineSink(lines.append, quiet=0.0)):
        tracker = track("embed", total=8000, unit="chunks")
        workers = [threading.Thread(target=lambda: [tracker.advance(1) for _ in range(2000)]) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        tracker.close()
    assert tracker.done == 8000 and len(lines) == 10


def test_rich_bars_show_count_and_stay_on_screen() -> None:
    screen = io.StringIO()
    sink = RichSink(Console(file=screen, width=120, force_terminal=False))
    with reporting(sink):
        first = track("icd10cm: embed", total=200, unit="chunks")
        first.advance(200)
        first.close()
        second = track("iom: embed", total=50, unit="chunks")  # a new bar after the first display stopped
        second.advance(50)
        second.close()
    output = screen.getvalue()
    assert "icd10cm: embed" in output and "200/200" in output and "iom: embed" in output and "50/50" in output
    assert output.count("icd10cm: embed") == 1  # the finished bar is not drawn again under the next one


def test_a_stage_of_a_moment_gets_only_its_last_line() -> None:
    lines: list[str] = []
    with reporting(LineSink(lines.append)):
        tracker = track("hcpcs: documents", total=100, unit="documents")
        for _ in range(100):
            tracker.advance()
        tracker.close()
    assert len(lines) == 1 and lines[0].startswith("hcpcs: documents: 100/100 documents (100%), ")


def test_durations_read_as_clock_time() -> None:
    assert [format_duration(s) for s in (0, 59.6, 61, 3725)] == ["0:00", "1:00", "1:01", "1:02:05"]
