"""Fit the code finder's score weights on what the releases teach, never on the eval sets.

Training pairs come from the current releases: an ICD-10-CM Index path read as a coder would say it ("Calculus >
ureter" -> "ureter calculus" -> N20.1), a Tabular inclusion term -> its code, a HCPCS short description -> its code.
Each phrase is searched; every candidate the finder scores (not one written in the phrase) is a row of its four
features (lexical, rank, specificity, semantic), labelled 1 when it is the pair's code. A pairwise logistic
regression (the pair's code against each other candidate of its phrase) gives each feature's weight, kept
non-negative and summing to one as the score needs. The model (with the training set's size by kind and its hash)
and its rows are written side by side, so that the fit can be checked without the database
(tests/test_codes_ranker.py). The finder scores with fitted weights only from medrag/data/ranker_model.json
(medrag.codes.consolidate); the fit of this stop lost on the dev set and is kept as a result,
docs/results/ranker_fit.json, not as a setting.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Connection, text

from medrag.codes.finder import CodeFinder
from medrag.core.logistic import fit_logistic, log_loss

FEATURES = ("lexical", "rank", "specificity", "semantic")
KINDS = ("index", "inclusion", "hcpcs_short")
# L2 penalty on the weights (not the intercept), in units of the summed log-likelihood.
L2_PENALTY = 1.0

# One statement per kind; each draws `per_kind` pairs in a fixed pseudo-random order (md5 of seed and key), so the
# same releases and seed give the same pairs.
_PAIRS = {
    # Index to Diseases paths of at most three levels whose code is complete; each level's first wording, innermost
    # first ("Cyst > ovary, ovarian > serous" -> "serous ovary cyst"), nonessential modifiers left out
    "index": """
        SELECT lower(array_to_string(ARRAY(SELECT btrim(split_part(regexp_replace(part, '\\s*\\([^)]*\\)', '', 'g'),
                                                                 ',', 1))
                                           FROM unnest(string_to_array(e.path, ' > ')) WITH ORDINALITY AS p(part, n)
                                           ORDER BY n DESC), ' ')) AS phrase, e.code
        FROM v_icd10cm_index e
        WHERE e.index_name = 'diseases' AND e.code ~ '^[A-Z][0-9A-Z.]+[0-9A-Z]$'
          AND e.level <= 2 AND e.path !~* '(NEC|NOS|see |specified|other|unspecified)'
          -- the newest release with an Index (the Index of a year comes with its code tables, not always loaded)
          AND e.release = (SELECT max(i.release) FROM v_icd10cm_index i WHERE i.index_name = 'diseases')
        ORDER BY md5(:seed || e.entry_id::text) LIMIT :n""",
    "inclusion": """
        SELECT lower(term) AS phrase, c.code
        FROM icd10cm_code c JOIN release r ON r.id = c.release_id AND r.is_current,
             unnest(c.inclusion_terms) AS term
        WHERE c.billable AND c.seventh_character IS NULL AND term !~* '(NEC|NOS|other|unspecified)'
        ORDER BY md5(:seed || c.code || term) LIMIT :n""",
    "hcpcs_short": """
        SELECT lower(h.short_description) AS phrase, h.code
        FROM hcpcs_code h JOIN release r ON r.id = h.release_id AND r.is_current
        WHERE h.kind = 'procedure' AND h.termination_date IS NULL AND h.short_description !~* '(NOC|NOS|misc)'
        ORDER BY md5(:seed || h.code) LIMIT :n""",
}


@dataclass(frozen=True)
class TrainingPair:
    """A phrase the releases pair with a code, and where the pair came from."""

    kind: str
    phrase: str
    code: str


def training_pairs(conn: Connection, per_kind: int, seed: int) -> list[TrainingPair]:
    """`per_kind` pairs of each kind from the current releases, in a fixed order."""
    pairs = []
    for kind in KINDS:
        rows = conn.execute(text(_PAIRS[kind]), {"seed": str(seed), "n": per_kind}).all()
        pairs += [TrainingPair(kind, " ".join(phrase.split()), code) for phrase, code in rows if phrase.strip()]
    return pairs


def pairs_hash(pairs: list[TrainingPair]) -> str:
    """SHA-256 of the pairs (kind, phrase, code), one per line in order: which training set a model came from."""
    digest = hashlib.sha256()
    for pair in pairs:
        digest.update(f"{pair.kind}\t{pair.phrase}\t{pair.code}\n".encode())
    return digest.hexdigest()


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
    """A pairwise logistic regression (learning to rank): within each phrase, the pair's code against every other
    candidate, on the difference of their features (both orders, no intercept needed: it fits to zero). The weights
    are clipped at zero and scaled to sum to one, as the score needs. Ranking within a phrase is what the score does;
    a pointwise fit over all rows learns mostly how easy each phrase was (chosen on the dev set: pointwise weights
    lost 0.11 of dev top-1)."""
    by_pair: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_pair.setdefault(row["pair"], []).append(row)
    differences = []
    for candidates in by_pair.values():
        for positive in (row for row in candidates if row["label"]):
            differences += [[positive[name] - row[name] for name in FEATURES]
                            for row in candidates if not row["label"]]
    x = np.array(differences, dtype=float)
    x, y = np.vstack([x, -x]), np.concatenate([np.ones(len(x)), np.zeros(len(x))])
    beta = fit_logistic(x, y, L2_PENALTY)
    raw = np.clip(beta[1:], 0.0, None)
    if raw.sum() <= 0:
        raise ValueError("no feature separates the training codes: every fitted weight is at most zero")
    weights = raw / raw.sum()
    return {"weights": {name: round(float(value), 4) for name, value in zip(FEATURES, weights, strict=True)},
            "coefficients": {name: round(float(value), 4) for name, value in zip(FEATURES, beta[1:], strict=True)},
            "rows": len(rows), "positives": int(sum(row["label"] for row in rows)), "comparisons": len(differences),
            "l2_penalty": L2_PENALTY, "log_loss": round(log_loss(x, y, beta), 4)}


def rows_path(model_path: Path) -> Path:
    """Where a model's feature rows are kept: beside it, `<name>.rows.csv.gz`."""
    return model_path.with_name(model_path.stem + ".rows.csv.gz")


def write_rows(rows: list[dict[str, Any]], path: Path) -> None:
    """The feature rows as gzipped CSV (mtime 0: the same rows give the same bytes)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=["pair", "kind", "code", *FEATURES, "label"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped:
        zipped.write(buffer.getvalue().encode())


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The feature rows write_rows wrote."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [{**row, "pair": int(row["pair"]), "label": int(row["label"]),
                 **{name: float(row[name]) for name in FEATURES}} for row in csv.DictReader(handle)]
