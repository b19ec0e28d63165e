"""The claim-line check measured on hand-checked lines: per rule, accuracy and the precision and recall of errors."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from medrag.check.checker import RULES, VERDICTS, check_lines, line_verdict
from medrag.core.errors import MedragError


@dataclass(frozen=True)
class CheckCase:
    """One claim line and the verdict a coder expects of each rule judged on it."""

    line: dict[str, Any]
    expected: dict[str, str]
    note: str = ""


def read_check_set(path: Path) -> list[CheckCase]:
    """The cases of a JSONL set: {"line": {...}, "expected": {rule: verdict}, "note": "..."} per line."""
    cases = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise MedragError(f"{path} line {number}: not JSON ({error.msg})") from None
        expected = value.get("expected") if isinstance(value, dict) else None
        if not isinstance(value.get("line"), dict) or not isinstance(expected, dict) or not expected:
            raise MedragError(f"{path} line {number}: needs a line object and a non-empty expected object")
        for rule, verdict in expected.items():
            if rule not in RULES or verdict not in VERDICTS:
                raise MedragError(f"{path} line {number}: {rule!r}: {verdict!r} is not a rule and verdict")
        cases.append(CheckCase(value["line"], expected, value.get("note", "")))
    return cases


def _ratio(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 3) if denominator else None


def evaluate(engine: Engine, cases: list[CheckCase]) -> dict[str, Any]:
    """Each judged (line, rule) against the check's verdict for it; the misses listed."""
    results = check_lines(engine, [dict(case.line, line_id=case.line.get("line_id") or str(number))
                                   for number, case in enumerate(cases, start=1)])
    by_rule: dict[str, dict[str, Any]] = {}
    misses = []
    for case, result in zip(cases, results, strict=True):
        for rule, expected in case.expected.items():
            got = line_verdict(result, rule)
            figures = by_rule.setdefault(rule, {"judged": 0, "right": 0, "tp": 0, "fp": 0, "fn": 0})
            figures["judged"] += 1
            figures["right"] += got == expected
            figures["tp"] += got == "error" and expected == "error"
            figures["fp"] += got == "error" and expected != "error"
            figures["fn"] += got != "error" and expected == "error"
            if got != expected:
                message = "; ".join(finding["message"] for finding in result["findings"] if finding["rule"] == rule)
                misses.append({"line_id": result["line_id"], "rule": rule, "expected": expected, "got": got,
                               "message": message})
    report_rules = {
        rule: {"judged": figures["judged"], "accuracy": _ratio(figures["right"], figures["judged"]),
               "error_precision": _ratio(figures["tp"], figures["tp"] + figures["fp"]),
               "error_recall": _ratio(figures["tp"], figures["tp"] + figures["fn"])}
        for rule, figures in sorted(by_rule.items(), key=lambda item: RULES.index(item[0]))}
    judged = sum(figures["judged"] for figures in by_rule.values())
    right = sum(figures["right"] for figures in by_rule.values())
    return {"lines": len(cases), "judgements": judged, "accuracy": _ratio(right, judged), "by_rule": report_rules,
            "misses": misses}
