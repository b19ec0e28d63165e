"""Fit the confidence calibration: from a listed code's score to the chance that a coder accepts it.

Every dev term is searched; each listed code (not one written in the term, which is certain) is one example,
labelled 1 when the term expects it. The score ranks codes; a logistic curve over the score, how far it is behind
its system's best and whether it is that best (Platt scaling with two more inputs) turns it into a probability,
so that "high" means what it says. A small L2 penalty keeps the weights finite. The result is
medrag/data/confidence_model.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from medrag.codes.consolidate import CALIBRATION_INPUTS, Candidate
from medrag.codes.evaluation import DevTerm
from medrag.codes.finder import CodeFinder, seventh_character_form

# L2 penalty on the weights (not the intercept), in units of the summed log-likelihood.
L2_PENALTY = 1.0
_ITERATIONS = 50


@dataclass(frozen=True)
class Example:
    """One listed code of one term: its score, how far behind its system's best, and whether the term expects it."""

    term: int
    code: str
    score: float
    behind: float
    label: int


def reported_code(candidate: Candidate) -> str:
    """The code a result shows for the candidate (its 7th-character form when it needs one)."""
    form = seventh_character_form(candidate)
    return form.code if form is not None else candidate.row.code


def collect_examples(finder: CodeFinder, terms: list[DevTerm]) -> list[Example]:
    """Search every term and turn the codes it lists into labelled examples."""
    examples = []
    for number, item in enumerate(terms):
        search = finder.find(item.term)
        scores = {(candidate.row.system, reported_code(candidate)): candidate for candidate in search.candidates}
        for result in search.results:
            candidate = scores.get((result.system, result.code))
            if candidate is None or candidate.exact:
                continue  # a code written in the term is certain: nothing to calibrate
            examples.append(Example(number, result.code, candidate.score, candidate.behind,
                                    int(result.code in item.expected)))
    return examples


def fit_logistic(x: np.ndarray, y: np.ndarray, penalty: float = L2_PENALTY) -> np.ndarray:
    """Newton's method for L2-penalised logistic regression; returns [intercept, weights...]."""
    design = np.hstack([np.ones((x.shape[0], 1)), x])
    beta = np.zeros(design.shape[1])
    ridge = penalty * np.eye(design.shape[1])
    ridge[0, 0] = 0.0
    for _ in range(_ITERATIONS):
        p = 1.0 / (1.0 + np.exp(-design @ beta))
        gradient = design.T @ (y - p) - ridge @ beta
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + ridge
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta


def _log_loss(x: np.ndarray, y: np.ndarray, beta: np.ndarray) -> float:
    p = 1.0 / (1.0 + np.exp(-(beta[0] + x @ beta[1:])))
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def fit_confidence_model(examples: list[Example], source: str) -> dict[str, Any]:
    """The calibration's weights and what they were fitted on."""
    y = np.array([example.label for example in examples], dtype=float)
    x = np.array([[example.score, example.behind, float(example.behind == 0)] for example in examples], dtype=float)
    beta = fit_logistic(x, y)
    weights = dict(zip(CALIBRATION_INPUTS, (*beta[1:], beta[0]), strict=True))
    return {"fitted_on": source, "terms": len({example.term for example in examples}), "examples": len(examples),
            "accepted": int(y.sum()), "l2_penalty": L2_PENALTY,
            **{name: round(float(value), 4) for name, value in weights.items()},
            "log_loss": round(_log_loss(x, y, beta), 4)}


def write_model(model: dict[str, Any], path: Path) -> None:
    """The model as indented JSON (reviewed in diffs like any setting)."""
    path.write_text(json.dumps(model, indent=2) + "\n", encoding="utf-8")
