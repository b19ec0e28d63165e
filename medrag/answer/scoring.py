"""How well each unit of the sources answers the question: a logistic model over a few inspectable features.

The features are the unit's meaning (cosine to the question with the query's own embedding model), the question's
words it holds (idf-weighted), where it stands (covered / non-covered indications, background, references), its
kind (a criteria list, one item), and whether it is what this kind of question wants (a frequency for "how
often", a criteria list for "who qualifies" or "is X covered", a coverage statement for "is X covered"). Their
weights are fitted on the dev set's required facts (`medrag eval fit-answers`, medrag/data/answer_unit_model.json),
not set by hand.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine, text

from medrag.answer.context import WITHHELD, ContextSource
from medrag.answer.reading import CODE_SOURCES
from medrag.answer.units import ITEM, LIST, PLACES, Unit
from medrag.answer.validate import content_words
from medrag.core.errors import MedragError
from medrag.core.synonyms import expand_abbreviations

MODEL_PATH = Path(__file__).resolve().parent.parent / "data" / "answer_unit_model.json"
FEATURES = ("similarity", "coverage", *(f"place_{place}" for place in PLACES if place != "listing"), "list", "item",
            "threshold", "repeated", "frequency_for_how_often", "criteria_for_conditions", "statement_for_yes_no",
            "asked_kind", "named", "first_document")
# A count as CMS writes it: in digits or in words ("up to six times the first year", "every three months").
_COUNT = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_FREQUENCY = re.compile(
    rf"\b(?:annual(?:ly)?|once\s+(?:every|a|per|in)|every\s+{_COUNT}|per\s+(?:year|month|week)|{_COUNT}\s+"
    r"(?:or\s+more\s+)?(?:months?|years?|sessions?|visits?|times|hours?|days?|weeks?)|twice|frequency|biennial)\b",
    re.IGNORECASE)
_STATEMENT = re.compile(
    r"\b(?:non-?covered|not\s+(?:a\s+)?covered|(?:is|are|be|been|remains?)\s+(?:not\s+|only\s+)?covered|"
    r"will\s+(?:not\s+)?cover|covers?|"
    r"nationally\s+(?:non-?)?covered|reasonable\s+and\s+necessary|coverage\s+is)\b", re.IGNORECASE)
# A measured limit: a value with its unit, a range, a comparison ("55 mm Hg", "50-77 years", "at or below 88%",
# "greater than or equal to 15 events"). What a coder must be told is most often such a number; counted in a policy's
# text only (a code's description or an LCD's code list states sizes, not limits).
_THRESHOLD = re.compile(
    r"\d\s*(?:%|percent|mm\s*hg|mg|kg|ml|pack[- ]years?|years?|months?|weeks?|days?|hours?|minutes?|sessions?|"
    r"visits?|events?|times)\b|\b\d+\s*(?:-|\u2013|to|through)\s*\d+\b|[\u2264\u2265<>]\s*\d|"
    r"\b(?:at\s+or\s+(?:below|above)|(?:greater|less|more|fewer)\s+than|at\s+least|no\s+more\s+than|"
    r"or\s+(?:more|less|older|younger))\b", re.IGNORECASE)
# Questions whose answer is a set of conditions: who qualifies, and "is X covered?" (covered when ...).
CONDITION_TYPES = ("eligibility", "coverage", "frequency")
# A question about codes (medrag_question_type): what a code describes, which codes or contractors an LCD lists.
CODE_QUESTION = "code"
# Units embedded one by one (the best by chunk similarity and words held): embedding every unit of a long
# determination costs a second on 2 cores; the others are measured by the stored vector of their chunk.
EMBED_UNITS = 24
EMBED_WORDS = 48
# How many other current documents hold a unit's own first words: text that many determinations repeat word for word
# (the Coverage with Evidence Development study standards, "The study has a written protocol ...") is boilerplate,
# seldom what was asked. The policy chunks' own full-text index (migration 0021) finds the candidates, strpos
# confirms the exact words: 6 ms a question, against 53 through the index over every chunk, whose posting lists the
# code documents fill. The code sources are written into the statement so the planner can match that index's
# predicate. One subquery per probe, so that each uses the index: a join of all probes at once is planned as a scan
# of every policy chunk per probe.
REPEATED_PROBE_WORDS = 8
_REPEATED_SQL = text(f"""
    SELECT probe, (SELECT count(DISTINCT c.document_id)
                   FROM chunk c JOIN document d ON d.id = c.document_id AND d.is_current
                   WHERE c.tsv @@ plainto_tsquery('english', probe) AND strpos(c.text, probe) > 0
                     AND c.source <> ALL(ARRAY[{", ".join(f"'{source}'" for source in CODE_SOURCES)}]::text[]))
           AS documents
    FROM unnest(CAST(:probes AS text[])) AS probe
""")
_KIND_SQL = text("SELECT medrag_question_type(:question) AS question_type, medrag_query_intent(:question) AS intent")


class AnswerModelError(MedragError):
    """The answer's unit model file is missing or does not match the features."""


def states_coverage(text: str) -> bool:
    """Whether a unit says what is or is not covered: the direct answer to "is X covered?"."""
    return bool(_STATEMENT.search(text))


@dataclass(frozen=True)
class QuestionKind:
    """What a question asks for, as SQL reads it: the answer type and the kind of source (sql/search.sql)."""

    question_type: str | None
    intent: str | None


@dataclass
class ScoredUnit:
    """A unit of a source with its features and the model's probability that it states a required fact."""

    unit: Unit
    source: ContextSource
    features: dict[str, float]
    probability: float = 0.0


def question_kind(engine: Engine, question: str) -> QuestionKind:
    """The question's type (frequency, code, eligibility, coverage or None) and intent (policy, code or None)."""
    with engine.connect() as conn:
        row = conn.execute(_KIND_SQL, {"question": question}).one()
    return QuestionKind(row.question_type, row.intent)


@cache
def load_model(path: Path = MODEL_PATH) -> dict[str, Any]:
    """The fitted weights (read once per process)."""
    try:
        model = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise AnswerModelError(f"cannot read the answer model {path}: {error}") from error
    if set(model.get("weights", {})) != set(FEATURES):
        raise AnswerModelError(f"{path} does not match the scorer's features; run `medrag eval fit-answers`")
    return model


def coverage(question: str, pool: list[ScoredUnit]) -> list[float]:
    """The idf-weighted share of the question's content words each unit holds (its document's name counting as
    held; an abbreviation counting when its expansion is)."""
    terms = set(content_words(question))
    if not terms or not pool:
        return [0.0] * len(pool)
    alternatives: dict[str, list[frozenset[str]]] = {}
    for abbreviation, expansion in expand_abbreviations(question):
        for term in content_words(abbreviation):
            alternatives.setdefault(term, []).append(frozenset(content_words(expansion)))
    words = [frozenset(content_words(f"{item.unit.text} {item.source.label} {item.source.evidence.hit.title}"))
             for item in pool]

    def has(unit_words: frozenset[str], term: str) -> bool:
        return term in unit_words or any(option <= unit_words for option in alternatives.get(term, ()))

    present = {term: [has(unit_words, term) for unit_words in words] for term in terms}
    weights = {term: math.log(1 + len(pool) / (1 + sum(flags))) + 0.1 for term, flags in present.items()}
    total = sum(weights.values())
    return [sum(weight for term, weight in weights.items() if present[term][index]) / total
            for index in range(len(pool))]


def _features(item: ScoredUnit, kind: QuestionKind, similarity: float, held: float, repeated: int, first: bool
              ) -> dict[str, float]:
    unit = item.unit
    group = "code" if item.source.source in CODE_SOURCES else "policy"
    return {"similarity": similarity, "coverage": held,
            **{f"place_{place}": float(unit.place == place) for place in PLACES if place != "listing"},
            "list": float(unit.kind == LIST), "item": float(unit.kind == ITEM),
            "threshold": float(group == "policy" and unit.place != "listing" and bool(_THRESHOLD.search(unit.text))),
            "repeated": math.log1p(repeated),
            "frequency_for_how_often": float(kind.question_type == "frequency"
                                             and bool(_FREQUENCY.search(unit.text))),
            "criteria_for_conditions": float(kind.question_type in CONDITION_TYPES and unit.kind in (LIST, ITEM)),
            "statement_for_yes_no": float(kind.question_type == "coverage" and states_coverage(unit.text)),
            "asked_kind": float(kind.intent == group),
            "named": float(item.source.evidence.exact),
            "first_document": float(first)}


def _own_words(unit: Unit, count: int) -> str:
    """The first words of what a unit itself says: an item's own line, not its lead-in."""
    return " ".join(unit.text.split("\n- ")[-1].split("\n")[0].split()[:count])


def repeated_elsewhere(engine: Engine, pool: list[ScoredUnit]) -> list[int]:
    """For each prose unit of a policy document, how many other current documents hold its own first words (a
    listing's lines, an LCD's contractors and codes, are shared by design and count none)."""
    probes = {index: _own_words(item.unit, REPEATED_PROBE_WORDS) for index, item in enumerate(pool)
              if item.source.source not in CODE_SOURCES and item.unit.place not in ("listing", "reference")}
    probes = {index: probe for index, probe in probes.items() if len(probe.split()) == REPEATED_PROBE_WORDS}
    if not probes:
        return [0] * len(pool)
    with engine.connect() as conn:
        rows = conn.execute(_REPEATED_SQL, {"probes": sorted(set(probes.values()))})
        documents = {row.probe: row.documents for row in rows}
    return [max(0, documents.get(probes.get(index, ""), 1) - 1) for index in range(len(pool))]


def _chunk_similarity(unit: Unit, source: ContextSource) -> float:
    """The similarity of the best chunk of the source that holds the unit (its first words), else the source's."""
    probe = " ".join(unit.text.split("\n- ")[-1].split()[:12])
    found = [chunk.similarity for chunk in source.chunks
             if chunk.similarity is not None and probe in chunk.words]
    return max(found, default=source.evidence.similarity or 0.0)


def _embedding_text(unit: Unit) -> str:
    """What is embedded of a unit: its first EMBED_WORDS words (an item's own line before its lead-in)."""
    lead, _, item = unit.text.rpartition("\n- ")
    words = (item + " " + lead).split() if lead else unit.text.split()
    return " ".join(words[:EMBED_WORDS])


def unit_pool(question: str, kind: QuestionKind, sources: list[ContextSource], embedder: Any,
              query_vector: list[float] | None, engine: Engine | None = None) -> list[ScoredUnit]:
    """Every quotable unit of the sources with its features (not yet scored); without an engine no unit counts as
    repeated elsewhere."""
    pool = [ScoredUnit(unit, source, {}) for source in sources for unit in source.units
            if WITHHELD not in unit.text]
    if not pool:
        return []
    held = coverage(question, pool)
    similarity = [_chunk_similarity(item.unit, item.source) for item in pool]
    if query_vector is not None and embedder is not None:
        chosen = sorted(range(len(pool)), key=lambda index: -(similarity[index] + held[index]))[:EMBED_UNITS]
        vectors = np.asarray(embedder.embed_many([_embedding_text(pool[index].unit) for index in chosen]),
                             dtype=np.float32)
        for index, value in zip(chosen, vectors @ np.asarray(query_vector, dtype=np.float32), strict=True):
            similarity[index] = float(value)
    repeated = repeated_elsewhere(engine, pool) if engine is not None else [0] * len(pool)
    first = sources[0].n
    for index, item in enumerate(pool):
        item.features = _features(item, kind, similarity[index], held[index], repeated[index],
                                  item.source.n == first)
    return pool


def rank_units(pool: list[ScoredUnit], model: dict[str, Any] | None = None) -> list[ScoredUnit]:
    """The pool with each unit's probability under the model (the fitted one by default), best first."""
    if not pool:
        return pool
    model = model or load_model()
    weights = np.array([model["weights"][name] for name in FEATURES])
    x = np.array([[item.features[name] for name in FEATURES] for item in pool])
    for item, logit in zip(pool, x @ weights + model["intercept"], strict=True):
        item.probability = float(1.0 / (1.0 + math.exp(-logit)))
    pool.sort(key=lambda item: (-item.probability, item.source.n, item.unit.position))
    return pool


def neutral_model() -> dict[str, Any]:
    """Zero weights: what the fit collects features under, whatever the stored model says."""
    return {"weights": dict.fromkeys(FEATURES, 0.0), "intercept": 0.0}
