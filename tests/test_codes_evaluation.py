"""The code finder's eval report: what its calibration figures count."""

from __future__ import annotations

from medrag.codes.evaluation import EvalReport, TermOutcome


def _outcome(tiers: list[tuple[str, bool]]) -> TermOutcome:
    rank = next((n + 1 for n, (_, hit) in enumerate(tiers) if hit), None)
    return TermOutcome("term", "ICD-10-CM", ["A00"], ["A00"] * len(tiers), rank, 1.0, tiers)


def test_first_high_counts_only_first_results_and_calibration_every_listed_code() -> None:
    """A pair expects one code: a right first code tiered high and a second "high" code count 1 of 2 in the
    calibration, 1 of 1 among first results; a term whose first code is only medium counts in neither."""
    report = EvalReport(3, 0.67, 0.67, {"p50": 1.0, "p95": 1.0, "max": 1.0}, outcomes=[
        _outcome([("high", True), ("high", False)]),
        _outcome([("high", False), ("possible", True)]),
        _outcome([("medium", True), ("high", False)]),
    ])
    assert report.calibration["high"] == {"listed": 4, "correct": 0.25}
    assert report.first_high == {"listed": 2, "correct": 0.5}
    assert report.as_json()["first_high"] == report.first_high
    assert EvalReport(0, 0.0, 0.0, {}, outcomes=[]).first_high == {"listed": 0, "correct": 0.0}
