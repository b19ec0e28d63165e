"""Fit the confidence calibration: from a listed code's score to the chance that a coder accepts it.

Every dev term is searched; each listed code (not one written in the term, which is certain) is one example,
labelled 1 when the term expects it. The score ranks codes; a logistic curve over the score, how far it is behind
its system's best and whether it is that best (Platt scaling with two more inputs) turns it into a probability,
so that "high" means what it says. A small L2 penalty keeps the weights finite. The result is
medrag/data/confidence_model.json, which `medrag db migrate` renders into the finder's SQL settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from medrag.codes.evaluation import DevTerm
from medrag.codes.finder import CodeFinder
from medrag.core.logistic import fit_logistic, log_loss
from medrag.core.tuning import CALIBRATION_INPUTS

# L2 penalty on the weights (not the intercept), in units of the summed log-likelihood.
L2_PENALTY = 1.0


@dataclass(frozen=True)
class Example:
    """One listed code of one term: its score, how far behind its system's best, and whether the term expects it."""

    term: int
    code: str
    score: float
    behind: float
    label: int


def collect_examples(finder: CodeFinder, terms: list[DevTerm]) -> list[Example]:
    """Search every term and turn the codes it lists into labelled examples."""
    examples = []
    for number, item in enumerate(terms):
        search = finder.find(item.term, with_candidates=True)
        scores = {(candidate.system, candidate.code): candidate for candidate in search.candidates}
        for result in search.results:
            candidate = scores.get((result.system, result.scored))
            if candidate is None or candidate.exact:
                continue  # a code written in the term is certain: nothing to calibrate
            examples.append(Example(number, result.code, candidate.score, candidate.behind,
                                    int(result.code in item.expected)))
    return examples


def fit_confidence_model(examples: list[Example], source: str) -> dict[str, Any]:
    """The calibration's weights and what they were fitted on."""
    y = np.array([example.label for example in examples], dtype=float)
    x = np.array([[example.score, example.behind, float(example.behind == 0)] for example in examples], dtype=float)
    beta = fit_logistic(x, y, L2_PENALTY)
    weights = dict(zip(CALIBRATION_INPUTS, (*beta[1:], beta[0]), strict=True))
    return {"fitted_on": source, "terms": len({example.term for example in examples}), "examples": len(examples),
            "accepted": int(y.sum()), "l2_penalty": L2_PENALTY,
            **{name: round(float(value), 4) for name, value in weights.items()},
            "log_loss": round(log_loss(x, y, beta), 4)}
