"""Fit the code finder's score weights on what the releases teach, never on the eval sets.

Training pairs come from the current releases (medrag.retrieval.training): an ICD-10-CM Index path read as a coder
would say it, a Tabular inclusion term -> its code, a HCPCS short description -> its code. Each phrase is searched;
every candidate the finder scores (not one written in the phrase) is a row of its four features (lexical, rank,
specificity, semantic), labelled 1 when it is the pair's code. A pairwise logistic regression (medrag.core.pairwise:
the pair's code against each other candidate of its phrase) gives each feature's weight, kept non-negative and
summing to one as the score needs. The model (with the training set's size by kind and its hash) and its rows are
written side by side, so that the fit can be checked without the database (tests/test_codes_ranker.py). The finder
scores with fitted weights only from medrag/data/ranker_model.json (medrag.codes.consolidate); the fit of this stop
lost on the dev set and is kept as a result, docs/results/ranker_fit.json, not as a setting.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from medrag.codes.finder import CodeFinder
from medrag.core import pairwise
from medrag.retrieval.training import TrainingPair

FEATURES = ("lexical", "rank", "specificity", "semantic")
KINDS = ("index", "inclusion", "hcpcs_short")
_COLUMNS = ("pair", "kind", "code", *FEATURES, "label")


def collect_rows(finder: CodeFinder, pairs: list[TrainingPair],
                 progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Search every phrase; one row per scored candidate that is not written in the phrase."""
    rows = []
    for number, pair in enumerate(pairs):
        search = finder.find(pair.phrase, with_candidates=True)
        for candidate in search.candidates:
            if candidate.exact:
                continue
            values = {name: float(candidate.features.get(name) or 0.0) for name in FEATURES}
            rows.append({"pair": number, "kind": pair.kind, "code": candidate.code, **values,
                         "label": int(candidate.code == pair.code)})
        if progress is not None:
            progress(number + 1, len(pairs))
    return rows


def fit_weights(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A pairwise logistic regression (medrag.core.pairwise) of the pair's code against each other candidate. The
    weights are clipped at zero and scaled to sum to one, as the score needs (chosen on the dev set: pointwise weights
    lost 0.11 of dev top-1)."""
    fit = pairwise.fit_pairwise(rows, FEATURES)
    raw = [max(float(value), 0.0) for value in fit.coefficients]
    if sum(raw) <= 0:
        raise pairwise.FitError("no feature separates the training codes: every fitted weight is at most zero")
    return {"weights": {name: round(value / sum(raw), 4) for name, value in zip(FEATURES, raw, strict=True)},
            "coefficients": {name: round(float(value), 4)
                             for name, value in zip(FEATURES, fit.coefficients, strict=True)},
            "rows": len(rows), "positives": int(sum(row["label"] for row in rows)), "comparisons": fit.comparisons,
            "l2_penalty": pairwise.L2_PENALTY, "log_loss": fit.log_loss}


rows_path = pairwise.rows_path


def write_rows(rows: list[dict[str, Any]], path: Path) -> None:
    """The feature rows as gzipped CSV (medrag.core.pairwise)."""
    pairwise.write_rows(rows, path, _COLUMNS)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The feature rows write_rows wrote."""
    return pairwise.read_rows(path, FEATURES)
