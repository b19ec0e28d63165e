"""Code-lookup evaluation: top-1 / top-5 accuracy and warm latency of the finder over a JSONL dev set.

Each line is {"term": "...", "system": "ICD-10-CM" | "HCPCS", "expected": ["E11.9", ...]}: a term in plain words
and the codes a coder would accept for it. A term is a top-k hit when one of its expected codes is among the
first k results (all systems, sorted by confidence as `medrag codes` prints them), as listed or before the 7th
character it is listed with (the Index names T67.01, the finder reports T67.01XA). The pairs the releases give
(medrag.retrieval.training: an Index path, an inclusion term, a HCPCS short description and its code) are terms
too: a measure of the finder that no eval set's wording has shaped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from medrag.codes.classify import HCPCS, ICD10CM, SYSTEMS
from medrag.codes.consolidate import GUESS, HIGH, MEDIUM, POSSIBLE
from medrag.codes.finder import CodeFinder
from medrag.core.errors import MedragError
from medrag.retrieval.training import TrainingPair

_TIER_ORDER = (HIGH, MEDIUM, POSSIBLE, GUESS)
# The code system each kind of release pair names (an NCD keyword names a document, not a code).
PAIR_SYSTEMS = {"index": ICD10CM, "inclusion": ICD10CM, "hcpcs_short": HCPCS, "negation": ICD10CM, "drug": ICD10CM,
                "reference": ICD10CM, "side": ICD10CM, "index_side": ICD10CM, "neoplasm": ICD10CM}


class DevSetError(MedragError):
    """The terms file is missing or malformed."""


@dataclass(frozen=True)
class DevTerm:
    """One evaluation item."""

    term: str
    system: str
    expected: tuple[str, ...]


@dataclass
class TermOutcome:
    """How the finder did on one term."""

    term: str
    system: str
    expected: list[str]
    found: list[str]
    rank: int | None  # 1-based position of the first expected code, None when absent
    milliseconds: float
    tiers: list[tuple[str, bool]] = field(default_factory=list)  # (tier, expected?) of every listed code


@dataclass
class EvalReport:
    """Accuracy and latency over a dev set, with every term's outcome."""

    terms: int
    top1: float
    top5: float
    latency_ms: dict[str, float]
    by_system: dict[str, dict[str, float]] = field(default_factory=dict)
    outcomes: list[TermOutcome] = field(default_factory=list)

    @property
    def calibration(self) -> dict[str, dict[str, float]]:
        """Per tier, how many codes were listed and the share of them the terms expect (high should be >= 0.9)."""
        listed: dict[str, list[bool]] = {}
        for outcome in self.outcomes:
            for tier, expected in outcome.tiers:
                listed.setdefault(tier, []).append(expected)
        return {tier: {"listed": len(values), "correct": round(sum(values) / len(values), 3)}
                for tier, values in sorted(listed.items(), key=lambda item: _TIER_ORDER.index(item[0]))}

    @property
    def first_high(self) -> dict[str, float]:
        """The first results tiered high and the share of them the terms expect (the goal: >= 0.95). A pair expects
        one code, so a second "high" code counts against `calibration` even when the first is right."""
        firsts = [outcome.tiers[0][1] for outcome in self.outcomes if outcome.tiers and outcome.tiers[0][0] == HIGH]
        return {"listed": len(firsts), "correct": round(sum(firsts) / len(firsts), 3) if firsts else 0.0}

    @property
    def misses(self) -> list[TermOutcome]:
        """Terms whose first result was not an expected code."""
        return [outcome for outcome in self.outcomes if outcome.rank != 1]

    def as_json(self) -> dict[str, Any]:
        """The `medrag eval codes --json` object."""
        return {"terms": self.terms, "top1": self.top1, "top5": self.top5, "latency_ms": self.latency_ms,
                "by_system": self.by_system, "calibration": self.calibration, "first_high": self.first_high,
                "misses": [{key: value for key, value in asdict(outcome).items() if key != "tiers"}
                           for outcome in self.misses]}


def read_dev_set(path: Path) -> list[DevTerm]:
    """The terms of a JSONL dev set, checked line by line."""
    if not path.is_file():
        raise DevSetError(f"terms file {path} not found")
    terms = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise DevSetError(f"{path} line {number}: not JSON ({error.msg})") from None
        if not isinstance(item, dict):
            raise DevSetError(f"{path} line {number}: expected an object")
        term, system, expected = item.get("term"), item.get("system"), item.get("expected")
        if not isinstance(term, str) or not term.strip():
            raise DevSetError(f"{path} line {number}: 'term' must be a non-empty string")
        if system not in SYSTEMS:
            raise DevSetError(f"{path} line {number}: 'system' must be one of {', '.join(SYSTEMS)}")
        if not isinstance(expected, list) or not expected or not all(isinstance(c, str) for c in expected):
            raise DevSetError(f"{path} line {number}: 'expected' must be a non-empty list of codes")
        terms.append(DevTerm(term, system, tuple(expected)))
    if not terms:
        raise DevSetError(f"{path} holds no terms")
    return terms


def pair_terms(pairs: list[TrainingPair]) -> list[DevTerm]:
    """Release pairs as eval terms: the phrase, the system of its code, and the code."""
    return [DevTerm(pair.phrase, PAIR_SYSTEMS[pair.kind], (pair.code,)) for pair in pairs]


def accuracy_by(report: EvalReport, groups: list[str]) -> dict[str, dict[str, float]]:
    """Terms, top-1 and top-5 per group, groups[i] naming the group of the report's i-th term."""
    grouped: dict[str, list[TermOutcome]] = {}
    for group, outcome in zip(groups, report.outcomes, strict=True):
        grouped.setdefault(group, []).append(outcome)
    return {group: {"terms": len(outcomes), **_accuracy(outcomes)} for group, outcomes in grouped.items()}


def _percentile(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 1) if values else 0.0


def evaluate(finder: CodeFinder, terms: list[DevTerm], *, top: int = 5, warmup: int = 1,
             progress: Callable[[], None] | None = None) -> EvalReport:
    """Run every term through the finder (after `warmup` untimed searches) and score the results; progress is
    called after each term."""
    for item in terms[:warmup]:
        finder.find(item.term, top=top)
    outcomes = []
    for item in terms:
        started = time.perf_counter()
        search = finder.find(item.term, top=top)
        milliseconds = (time.perf_counter() - started) * 1000
        found = [result.code for result in search.results]
        expected = [result.code in item.expected or result.scored in item.expected for result in search.results]
        rank = next((index + 1 for index, hit in enumerate(expected) if hit), None)
        tiers = [(result.tier, hit) for result, hit in zip(search.results, expected, strict=True)]
        outcomes.append(TermOutcome(item.term, item.system, list(item.expected), found[:5], rank,
                                    round(milliseconds, 1), tiers))
        if progress is not None:
            progress()
    latencies = [outcome.milliseconds for outcome in outcomes]
    by_system = {}
    for system in SYSTEMS:
        subset = [outcome for outcome in outcomes if outcome.system == system]
        if subset:
            by_system[system] = {"terms": len(subset), **_accuracy(subset)}
    return EvalReport(len(outcomes), **_accuracy(outcomes),
                      latency_ms={"p50": _percentile(latencies, 50), "p95": _percentile(latencies, 95),
                                  "max": round(max(latencies), 1)},
                      by_system=by_system, outcomes=outcomes)


def _accuracy(outcomes: list[TermOutcome]) -> dict[str, float]:
    count = len(outcomes)
    return {"top1": round(sum(1 for o in outcomes if o.rank == 1) / count, 3),
            "top5": round(sum(1 for o in outcomes if o.rank is not None and o.rank <= 5) / count, 3)}
