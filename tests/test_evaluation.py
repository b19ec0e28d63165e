"""Retrieval metrics on hand-computed cases: graded nDCG with the ideal ranking, MRR, hit@k, recall@k."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from medrag.retrieval.evaluation import EvaluationError, Question, evaluate, load_questions, question_metrics


def q(expected: dict[tuple[str, str], int], category: str = "c") -> Question:
    return Question("q1", "question", category, expected)


def test_metrics_for_a_hand_worked_ranking() -> None:
    question = q({("ncd", "240.2"): 3, ("lcd", "L33718"): 1})
    ranked = [("hcpcs", "E0601"), ("ncd", "240.2"), ("ncd", "240.2"), ("lcd", "L33718")]
    metrics = question_metrics(question, ranked, [1, 3, 5])
    assert metrics["rr"] == 0.5
    assert (metrics["hit@1"], metrics["hit@3"]) == (0.0, 1.0)
    assert (metrics["recall@3"], metrics["recall@5"]) == (0.5, 1.0)
    # DCG@5 = (2^3-1)/log2(3) + 0 (duplicate chunk of 240.2) + (2^1-1)/log2(5); ideal = 7/log2(2) + 1/log2(3)
    dcg = 7 / math.log2(3) + 1 / math.log2(5)
    ideal = 7 / math.log2(2) + 1 / math.log2(3)
    assert metrics["ndcg@5"] == pytest.approx(dcg / ideal)


def test_perfect_ranking_scores_one_and_miss_scores_zero() -> None:
    question = q({("ncd", "240.2"): 2, ("ncd", "240.4"): 1})
    perfect = question_metrics(question, [("ncd", "240.2"), ("ncd", "240.4")], [1, 2])
    assert perfect["ndcg@2"] == pytest.approx(1.0) and perfect["rr"] == 1.0
    swapped = question_metrics(question, [("ncd", "240.4"), ("ncd", "240.2")], [2])
    assert swapped["ndcg@2"] < 1.0  # the ideal order puts the grade-2 document first
    miss = question_metrics(question, [("hcpcs", "E0601")], [1, 5])
    assert miss["rr"] == 0.0 and miss["hit@5"] == 0.0 and miss["ndcg@5"] == 0.0


def test_evaluate_aggregates_by_category_and_source_and_skips_unanswerable() -> None:
    questions = [
        Question("a", "oxygen", "ncd", {("ncd", "240.2"): 1}),
        Question("b", "cpap", "hcpcs", {("hcpcs", "E0601"): 1}),
        Question("c", "weather", "unanswerable", {}),
    ]
    answers = {"a": [("ncd", "240.2")], "b": [("ncd", "240.2"), ("hcpcs", "E0601")], "c": []}
    report = evaluate(questions, lambda question, k: (answers[question.id], 5.0), [1, 5])
    assert report["overall"]["hit@1"] == 0.5 and report["overall"]["mrr"] == 0.75
    assert report["by_category"]["hcpcs"]["hit@5"] == 1.0
    assert report["by_source"]["ncd"]["questions"] == 1
    assert report["unanswerable_questions"] == 1


def test_question_file_errors_name_the_line(tmp_path: Path) -> None:
    good = {"id": "1", "question": "x", "category": "c", "expected": [{"source": "ncd", "key": "1", "grade": 2}]}
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(EvaluationError, match="line 2"):
        load_questions(path)
    path.write_text(json.dumps(good) + "\n")
    assert load_questions(path)[0].expected == {("ncd", "1"): 2}
