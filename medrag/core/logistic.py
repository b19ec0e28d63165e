"""L2-penalised logistic regression, small and inspectable: how medrag fits the weights of its evidence.

Used for the code finder's confidence (medrag/codes/fit.py) and the answer's unit scorer (medrag/answer/fit.py);
each writes its coefficients to one JSON file under medrag/data, reviewed in diffs like any setting.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

_ITERATIONS = 50


def fit_logistic(x: np.ndarray, y: np.ndarray, penalty: float) -> np.ndarray:
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


def log_loss(x: np.ndarray, y: np.ndarray, beta: np.ndarray) -> float:
    """Mean log loss of the fitted model on (x, y)."""
    p = 1.0 / (1.0 + np.exp(-(beta[0] + x @ beta[1:])))
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def write_model(model: dict[str, Any], path: Path) -> None:
    """The model as indented JSON (reviewed in diffs like any setting)."""
    path.write_text(json.dumps(model, indent=2) + "\n", encoding="utf-8")
