"""Fit the answer's unit scorer: which features of a unit say it states what the question needs.

Every answerable dev question with required facts is asked; each unit of the documents read is one example,
labelled 1 when it matches one of the question's facts. An L2-penalised logistic regression over the unit's features
(medrag.answer.scoring.FEATURES) gives the weights, written to medrag/data/answer_unit_model.json.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from sqlalchemy import Engine

from medrag.answer.evaluation import DevQuestion
from medrag.answer.pipeline import ask
from medrag.answer.scoring import FEATURES, neutral_model
from medrag.core.config import Settings
from medrag.core.logistic import fit_logistic, log_loss

# L2 penalty on the weights (not the intercept), in units of the summed log-likelihood.
L2_PENALTY = 1.0


def collect_examples(engine: Engine, questions: list[DevQuestion], *, settings: Settings,
                     embedder: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """Features and labels of every unit read for the dev questions with facts, and how many questions gave any."""
    rows, labels, asked = [], [], 0
    for question in questions:
        if not question.answerable or not question.facts:
            continue
        result = ask(engine, question.question, settings=settings, embedder=embedder,
                     filters=question.search_filters(), backend="extractive", command="eval",
                     unit_model=neutral_model())
        asked += bool(result.units)
        for item in result.units:
            rows.append([item.features[name] for name in FEATURES])
            labels.append(float(any(re.search(fact, item.unit.text, re.IGNORECASE) for fact in question.facts)))
    return np.array(rows, dtype=float), np.array(labels, dtype=float), asked


def fit_unit_model(x: np.ndarray, y: np.ndarray, *, source: str, questions: int) -> dict[str, Any]:
    """The scorer's weights and what they were fitted on."""
    beta = fit_logistic(x, y, L2_PENALTY)
    return {"fitted_on": source, "questions": questions, "units": int(len(y)), "stating_a_fact": int(y.sum()),
            "l2_penalty": L2_PENALTY,
            "weights": {name: round(float(value), 4) for name, value in zip(FEATURES, beta[1:], strict=True)},
            "intercept": round(float(beta[0]), 4), "log_loss": round(log_loss(x, y, beta), 4)}
