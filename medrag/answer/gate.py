"""The answer's refusal gate, fitted: the evidence probability below which the sources are taken not to answer.

The extractive answer quotes the sources only when their best unit's probability of stating a required fact (the
unit scorer's, medrag.answer.scoring) reaches `answerable_probability` (medrag/core/tuning.py). `medrag eval
fit-refusal` fits that threshold on a dev set's questions that reach the gate: answerable ones should pass it,
unanswerable ones should not. The threshold is the one that puts most questions on their side, and of those that do
as well, the middle of the widest gap between two questions' probabilities (a maximum-margin cut, so it does not
sit on one question). It is written with the rows it was fitted on, so a test refits them and gets it again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PLACES = 4


@dataclass(frozen=True)
class GateRow:
    """One dev question at the gate: whether it is answerable, and its best unit's probability."""

    question_id: str
    answerable: bool
    probability: float


def _accuracy(rows: list[GateRow], threshold: float) -> int:
    return sum((row.probability >= threshold) == row.answerable for row in rows)


def fit_threshold(rows: list[GateRow]) -> dict[str, Any]:
    """The maximum-margin threshold among those that put the most rows on their side (answerable at or above)."""
    if not rows:
        raise ValueError("no question reached the refusal gate: nothing to fit")
    points = sorted({row.probability for row in rows})
    # a cut below every point answers all; above every point refuses all; else the middle of two neighbours
    cuts = [(points[0] / 2, points[0]), *(((a + b) / 2, b - a) for a, b in zip(points, points[1:], strict=False)),
            ((points[-1] + 1) / 2, 1 - points[-1])]
    best = max(cuts, key=lambda cut: (_accuracy(rows, cut[0]), cut[1], -cut[0]))
    threshold = round(best[0], PLACES)
    return {"threshold": threshold, "margin": round(best[1], PLACES), "questions": len(rows),
            "answerable": sum(row.answerable for row in rows),
            "unanswerable": sum(not row.answerable for row in rows),
            "on_their_side": _accuracy(rows, threshold)}


def gate_rows(report_rows: list[dict[str, Any]]) -> list[GateRow]:
    """The rows of an answer evaluation's questions (its `--json` rows) that reached the gate."""
    return [GateRow(row["id"], bool(row["answerable"]), float(row["gate_probability"]))
            for row in report_rows if row.get("gate_probability") is not None]


def write_gate(rows: list[GateRow], questions_file: Path, out_file: Path, hand_set: float) -> dict[str, Any]:
    """Fit the gate on the rows and write it, with the rows and the question set's name and hash."""
    model = fit_threshold(rows) | {
        "hand_set": hand_set, "on_their_side_hand_set": _accuracy(rows, hand_set),
        "set": questions_file.name, "sha256": hashlib.sha256(questions_file.read_bytes()).hexdigest(),
        "rows": [[row.question_id, row.answerable, round(row.probability, 6)] for row in rows]}
    out_file.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    return model
