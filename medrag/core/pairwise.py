"""Learning to rank from labelled candidate rows: the pairwise logistic fit and the rows on disk.

The code finder's score weights (medrag/codes/ranker.py) and the search's fusion weights (medrag/retrieval/fusion.py)
are fitted the same way: a phrase the releases pair with one code or document is searched, every candidate it meets
is a row of features labelled 1 when it is the pair's, and a logistic regression on the difference of the pair's
candidate and each other one (both orders) gives each feature's weight. Ranking within a phrase is what a score
does; a pointwise fit over all rows learns mostly how easy each phrase was.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from medrag.core.errors import MedragError
from medrag.core.logistic import fit_logistic, log_loss

# L2 penalty on the weights, in units of the summed log-likelihood.
L2_PENALTY = 1.0


class FitError(MedragError, ValueError):
    """The rows cannot be fitted: nothing to compare, or no feature that separates."""


@dataclass(frozen=True)
class PairwiseFit:
    """The fitted coefficients (one per feature), how many comparisons they came from, and their log loss."""

    coefficients: np.ndarray
    comparisons: int
    log_loss: float


def fit_pairwise(rows: list[dict[str, Any]], features: Sequence[str],
                 rival: Callable[[dict[str, Any], dict[str, Any]], bool] = lambda _positive, _row: True,
                 ) -> PairwiseFit:
    """Within each pair (rows sharing "pair"), its labelled row against every unlabelled row `rival` admits, on the
    difference of their features; no intercept is needed (both orders: it fits to zero)."""
    by_pair: dict[Hashable, list[dict[str, Any]]] = {}
    for row in rows:
        by_pair.setdefault(row["pair"], []).append(row)
    differences = []
    for candidates in by_pair.values():
        for positive in (row for row in candidates if row["label"]):
            differences += [[positive[name] - row[name] for name in features]
                            for row in candidates if not row["label"] and rival(positive, row)]
    if not differences:
        raise FitError("no training pair has both its own candidate and another one to rank it against "
                       "(are the current releases loaded and indexed?)")
    x = np.array(differences, dtype=float)
    x, y = np.vstack([x, -x]), np.concatenate([np.ones(len(x)), np.zeros(len(x))])
    beta = fit_logistic(x, y, L2_PENALTY)
    return PairwiseFit(beta[1:], len(differences), round(log_loss(x, y, beta), 4))


def rows_path(model_path: Path) -> Path:
    """Where a model's feature rows are kept: beside it, `<name>.rows.csv.gz`."""
    return model_path.with_name(model_path.stem + ".rows.csv.gz")


def write_rows(rows: list[dict[str, Any]], path: Path, columns: Sequence[str]) -> None:
    """The feature rows as gzipped CSV (mtime 0: the same rows give the same bytes)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped:
        zipped.write(buffer.getvalue().encode())


def read_rows(path: Path, features: Sequence[str]) -> list[dict[str, Any]]:
    """The feature rows write_rows wrote: pair and label as integers, the features as floats."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [{**row, "pair": int(row["pair"]), "label": int(row["label"]),
                 **{name: float(row[name]) for name in features}} for row in csv.DictReader(handle)]
