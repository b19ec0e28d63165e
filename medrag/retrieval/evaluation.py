"""Retrieval evaluation: graded relevance by expected (source, key), hit@k, MRR, nDCG@k, recall@k, latency."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medrag.core.errors import MedragError

DEFAULT_KS = (1, 3, 5, 10)


class EvaluationError(MedragError):
    """A question file that cannot be used."""


@dataclass(frozen=True)
class Question:
    """One evaluation question: its category, filters and the documents that answer it, with grades (1-3)."""

    id: str
    question: str
    category: str
    expected: dict[tuple[str, str], int]
    filters: dict[str, Any] = field(default_factory=dict)

    @property
    def answerable(self) -> bool:
        """False for questions the corpus cannot answer (no expected documents)."""
        return bool(self.expected)


def load_questions(path: Path) -> list[Question]:
    """Questions from a JSONL file: {"id", "question", "category", "expected": [{"source","key","grade"}], ...}."""
    questions = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise EvaluationError(f"{path}: {exc.strerror}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            expected = {(e["source"], e["key"]): int(e.get("grade", 1)) for e in item.get("expected", [])}
            questions.append(Question(str(item["id"]), item["question"], item["category"], expected,
                                      item.get("filters", {})))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise EvaluationError(f"{path}: line {number}: {type(exc).__name__}: {exc}") from exc
    if not questions:
        raise EvaluationError(f"{path}: no questions")
    return questions


def graded_ranking(question: Question, ranked: Iterable[tuple[str, str]]) -> list[int]:
    """Grade of each retrieved item in order; a document seen before counts 0 (its chunks are not new evidence)."""
    seen: set[tuple[str, str]] = set()
    grades = []
    for item in ranked:
        grades.append(question.expected.get(item, 0) if item not in seen else 0)
        seen.add(item)
    return grades


def dcg(grades: list[int], k: int) -> float:
    """Discounted cumulative gain with exponential gain (2^grade - 1)."""
    return sum((2**grade - 1) / math.log2(position + 2) for position, grade in enumerate(grades[:k]))


def question_metrics(question: Question, ranked: list[tuple[str, str]], ks: Iterable[int]) -> dict[str, float]:
    """hit@k, recall@k, nDCG@k for each k and the reciprocal rank, for one answerable question."""
    grades = graded_ranking(question, ranked)
    ideal = sorted(question.expected.values(), reverse=True)
    first = next((position for position, grade in enumerate(grades) if grade > 0), None)
    metrics = {"rr": 0.0 if first is None else 1.0 / (first + 1)}
    for k in ks:
        found = sum(1 for grade in grades[:k] if grade > 0)
        metrics[f"hit@{k}"] = 1.0 if found else 0.0
        metrics[f"recall@{k}"] = found / len(question.expected)
        metrics[f"ndcg@{k}"] = dcg(grades, k) / dcg(ideal, k)
    return metrics


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation."""
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[max(0, min(98, round(q) - 1))]


def _aggregate(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = [key for key in rows[0] if key != "latency_ms"]
    out = {key: round(sum(row[key] for row in rows) / len(rows), 4) for key in keys}
    out["mrr"] = out.pop("rr")
    latencies = [row["latency_ms"] for row in rows]
    out["latency_p50_ms"] = round(percentile(latencies, 50), 1)
    out["latency_p95_ms"] = round(percentile(latencies, 95), 1)
    out["questions"] = len(rows)
    return out


def evaluate(
    questions: list[Question],
    retrieve: Callable[[Question, int], tuple[list[tuple[str, str]], float]],
    ks: Iterable[int] = DEFAULT_KS,
) -> dict[str, Any]:
    """Run every answerable question through `retrieve(question, k) -> (ranked keys, ms)` and aggregate."""
    ks = sorted(set(ks))
    per_question, by_category, by_source = [], defaultdict(list), defaultdict(list)
    unanswerable = []
    for question in questions:
        ranked, latency = retrieve(question, max(ks))
        if not question.answerable:
            unanswerable.append({"id": question.id, "latency_ms": latency})
            continue
        metrics = question_metrics(question, ranked, ks) | {"latency_ms": latency}
        per_question.append({"id": question.id, "category": question.category, "question": question.question,
                             "top": [f"{s}:{k}" for s, k in ranked[:5]], **metrics})
        by_category[question.category].append(metrics)
        for source in {source for source, _ in question.expected}:
            by_source[source].append(metrics)
    if not per_question:
        raise EvaluationError("no answerable questions to evaluate")
    return {
        "ks": ks,
        "overall": _aggregate([{k: v for k, v in row.items() if k not in ("id", "category", "question", "top")}
                               for row in per_question]),
        "by_category": {name: _aggregate(rows) for name, rows in sorted(by_category.items())},
        "by_source": {name: _aggregate(rows) for name, rows in sorted(by_source.items())},
        "unanswerable_questions": len(unanswerable),
        "questions": per_question,
    }
