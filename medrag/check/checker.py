"""The check of claim lines against the releases in force on their dates: medrag_check_lines, batch by batch."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from sqlalchemy import Engine, text

from medrag.core import progress

VERDICTS = ("ok", "error", "warning", "not checked")
RULES = ("input", "date_of_service", "hcpcs_valid", "modifier_valid", "icd10cm_valid", "lcd_coverage",
         "ncd_coverage", "article_dx_support")
# lines per statement: a batch's rules run set-wise, and progress moves a batch at a time
BATCH_LINES = 500

_CHECK = text("SELECT medrag_check_lines(CAST(:lines AS jsonb))")


def check_lines(engine: Engine, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each line's findings, in the order given (one statement)."""
    if not lines:
        return []
    with engine.connect() as conn:
        return conn.execute(_CHECK, {"lines": json.dumps(lines, default=str)}).scalar_one()


def check_stream(engine: Engine, lines: Iterable[dict[str, Any]], *, total: int | None = None,
                 label: str = "check") -> Iterator[dict[str, Any]]:
    """Each line's findings, a batch at a time, with the count, rate and ETA on the progress sinks."""
    tracker = progress.track(label, total=total, unit="lines")
    numbered = iter(lines)
    offset = 0
    try:
        while batch := list(islice(numbered, BATCH_LINES)):
            for result in check_lines(engine, batch):
                result["line_no"] += offset
                yield result
            offset += len(batch)
            tracker.advance(len(batch))
    finally:
        tracker.close()


def line_verdict(result: dict[str, Any], rule: str) -> str | None:
    """A rule's verdict for a line: error over warning over ok over not checked; None when the rule did not run."""
    verdicts = {finding["verdict"] for finding in result["findings"] if finding["rule"] == rule}
    return next((verdict for verdict in ("error", "warning", "ok", "not checked") if verdict in verdicts), None)


class Summary:
    """Counts of findings by rule and verdict, and the lines with an error."""

    def __init__(self) -> None:
        self.lines = 0
        self.counts: Counter[tuple[str, str]] = Counter()
        self.error_lines: list[dict[str, Any]] = []

    def add(self, result: dict[str, Any]) -> None:
        """Count one line's findings."""
        self.lines += 1
        self.counts.update((finding["rule"], finding["verdict"]) for finding in result["findings"])
        if result["errors"]:
            self.error_lines.append(result)

    def as_json(self) -> dict[str, Any]:
        """{lines, lines_with_errors, by_rule: {rule: {verdict: count}}}."""
        by_rule: dict[str, dict[str, int]] = {}
        for (rule, verdict), count in sorted(self.counts.items(), key=lambda item: (RULES.index(item[0][0]),
                                                                                    VERDICTS.index(item[0][1]))):
            by_rule.setdefault(rule, {})[verdict] = count
        return {"lines": self.lines, "lines_with_errors": len(self.error_lines), "by_rule": by_rule}
