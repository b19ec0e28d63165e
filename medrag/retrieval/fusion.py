"""Fit the search's fusion of legs on what the releases teach, never on the eval sets.

A search ranks a group's documents by the weighted sum of their shares in each leg (medrag_search_documents):
vector_leg_weight / (rrf_k + place) for the vector leg, likewise the full-text and trigram legs, and fit_weight x a
code's fit. The weights are fitted here: each training phrase (medrag.retrieval.training: Index paths, HCPCS short
descriptions, NCD keywords, and misspelled copies of them) is searched, every document its document's group holds
is a row of its unweighted shares (medrag_search_leg_shares), labelled 1 for the pair's document, and a pairwise
logistic regression (medrag.core.pairwise) weighs the legs. The vector leg is the unit (weight 1), the others are
scaled to it. The model and its rows are written side by side, so the fit is checked without the database
(tests/test_fusion_fit.py); the search reads fitted weights from medrag/data/fusion_model.json (medrag.core.tuning).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import Connection, text

from medrag.core import pairwise
from medrag.core.tuning import FUSION_SETTINGS, HAND_SET_FUSION
from medrag.retrieval.search import vector_literal
from medrag.retrieval.training import TrainingPair

FEATURES = ("vector", "text", "trigram", "fit")
KINDS = ("index", "hcpcs_short", "ncd_keyword", "misspelled")
_COLUMNS = ("pair", "kind", "source", "key", *FEATURES, "label")
_SHARES = text("SELECT source, key, grp, vector, text, trigram, fit "
               "FROM medrag_search_leg_shares(CAST(:embedding AS vector), :query)")


class Embedder(Protocol):
    """What the fit needs of a query embedder: one text's vector."""

    def embed(self, text: str) -> list[float]:
        """The text's embedding."""


def collect_rows(conn: Connection, embedder: Embedder, pairs: list[TrainingPair],
                 progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Search every phrase; one row per document of its document's group (none when the legs missed that
    document: nothing to rank it against)."""
    rows = []
    for number, pair in enumerate(pairs):
        found = conn.execute(_SHARES, {"embedding": vector_literal(embedder.embed(pair.phrase)),
                                       "query": pair.phrase}).all()
        group = next((row.grp for row in found if (row.source, row.key) == (pair.source, pair.code)), None)
        rows += [{"pair": number, "kind": pair.kind, "source": row.source, "key": row.key,
                  **{name: float(getattr(row, name)) for name in FEATURES},
                  "label": int((row.source, row.key) == (pair.source, pair.code))}
                 for row in found if group is not None and row.grp == group]
        if progress is not None:
            progress(number + 1, len(pairs))
    return rows


def fit_fusion(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The legs' weights, the vector leg's 1 the unit, and how often each weighting ranks the pair's document first
    of its group on the training rows (the hand-set weights against the fitted ones)."""
    fit = pairwise.fit_pairwise(rows, FEATURES)
    coefficients = dict(zip(FEATURES, (float(value) for value in fit.coefficients), strict=True))
    if coefficients["vector"] <= 0:
        raise pairwise.FitError("the vector leg does not separate the training documents: nothing to scale the legs by")
    weights = {setting: round(max(coefficients[feature], 0.0) / coefficients["vector"], 4)
               for feature, setting in FUSION_SETTINGS.items()}
    return {"weights": weights, "coefficients": {name: round(value, 4) for name, value in coefficients.items()},
            "rows": len(rows), "pairs_found": len({row["pair"] for row in rows}),
            "comparisons": fit.comparisons, "l2_penalty": pairwise.L2_PENALTY, "log_loss": fit.log_loss,
            "first_in_group": {"hand_set": first_in_group(rows, HAND_SET_FUSION),
                               "fitted": first_in_group(rows, weights)}}


def first_in_group(rows: list[dict[str, Any]], weights: dict[str, float]) -> float:
    """Share of the pairs whose document scores above every other document of its group under these weights."""
    own: dict[int, float] = {}
    best_rival: dict[int, float] = {}
    for row in rows:
        score = sum(weights[setting] * row[feature] for feature, setting in FUSION_SETTINGS.items())
        if row["label"]:
            own[row["pair"]] = score
        else:
            best_rival[row["pair"]] = max(score, best_rival.get(row["pair"], float("-inf")))
    firsts = sum(1 for pair, score in own.items() if score > best_rival.get(pair, float("-inf")))
    return round(firsts / len(own), 4) if own else 0.0


def write_rows(rows: list[dict[str, Any]], path: Path) -> None:
    """The rows as gzipped CSV beside the model (medrag.core.pairwise)."""
    pairwise.write_rows(rows, path, _COLUMNS)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows write_rows wrote."""
    return pairwise.read_rows(path, FEATURES)
