"""Candidates from every lookup, deduplicated and scored: a score that ranks, a calibrated confidence, tiers.

PostgreSQL scores the candidates (medrag_score_codes in sql/codes.sql, which says what the score weighs): one
set statement per system and round over the codes' stored details, the first of the finder's steps in SQL, where
psql's medrag_search can share them once the others are too (docs/codes.md). The numbers it weighs evidence by are
named here and rendered into generated.sql (medrag_code_settings). The confidence shown is the probability that a
coder accepts the code, from the score and the code's distance to its system's best (Calibration, fitted on the dev
set by codes/fit.py); a code written in the term and found in the tables is exact (confidence 1).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from sqlalchemy import Engine, text

from medrag.codes.classify import HCPCS, ICD10CM
from medrag.codes.plan import CodeRelease, CodeRow, LegHit, Term
from medrag.codes.terms import Concept, TermQuery
from medrag.sources.hcpcs.categories import hcpcs_category_ranges

HIGH, MEDIUM, POSSIBLE = "high", "medium", "possible"
# Tiers of the calibrated confidence (the probability that a coder accepts the code); every listed code is at least
# possible.
TIERS = ((0.8, HIGH), (0.5, MEDIUM), (0.0, POSSIBLE))
# The score a code needs to be listed at all (and below which a system's search is broadened).
MIN_SCORE = 0.3
# How far a system the classifier hears less about is scaled down (routing_priors); chosen on the dev set.
ROUTING_PRIOR_WEIGHT = 0.3
WEIGHTS = {"lexical": 0.60, "rank": 0.05, "specificity": 0.20, "semantic": 0.15}
# The calibration of scores into confidences, fitted on the dev terms by `medrag eval fit-confidence` (codes/fit.py).
CONFIDENCE_MODEL_FILE = Path(__file__).parents[1] / "data" / "confidence_model.json"
CALIBRATION_INPUTS = ("score_weight", "behind_weight", "best_weight", "intercept")
# Lookups' weights in reciprocal-rank fusion (RRF_K dampens the difference between neighbouring ranks).
LEG_WEIGHTS = {"exact": 2.0, "words": 1.0, "fulltext": 1.0, "trigram": 0.7, "vector": 1.0, "children": 0.8,
               "index": 1.0}
RRF_K = 20
# Cosine similarities of all-MiniLM-L6-v2 between a term and a code document: below the floor says nothing,
# from the top up it is as good as it gets; a code with less than half of the term in its wording needs
# STRONG_SIMILARITY. Measured: on the dev terms the expected codes' documents lie at 0.41-0.66 (median 0.57); on the
# descriptive dev terms ("patient is allergic to penicillin": Z88.0 at 0.58, its nearest code) at 0.35-0.82, median
# 0.51; gibberish's nearest at <= 0.28. 0.60 -> 0.55 -> 0.50: descriptive dev top-1 / top-5 0.40 / 0.55 -> 0.45 / 0.60
# -> 0.45 / 0.65, dev unchanged; at 0.50 holdout unchanged, second holdout 0.647 / 0.765 -> 0.662 / 0.779.
# Swept with the cap such a code's score keeps (codes/ offline re-ranking of the same candidates, then the finder):
# strong 0.45 and cap 0.55 (was 0.50, 0.45): descriptive dev 0.45 / 0.65 -> 0.50 / 0.725, second holdout top-1
# 0.662 -> 0.676, dev and holdout unchanged; 0.55 as strong lost descriptive top-5, caps above 0.55 gained nothing.
SIMILARITY_FLOOR, SIMILARITY_TOP, STRONG_SIMILARITY = 0.30, 0.70, 0.45
SEMANTIC_ONLY_CAP = 0.55
MIN_COVERAGE = 0.5
# Lexemes that say nothing about what a code is.
NEUTRAL_LEXEMES = frozenset({"unspecifi", "nos", "per", "each", "without", "uncompl"})
INHERITED_TERM_FACTOR = 0.95
# What a HCPCS code's specificity keeps when the release marks it not payable by Medicare (coverage code I). On the
# dev terms 0.8 moved one (screening colonoscopy: S0285 first, now G0121) and 0.6 also lost ondansetron 4 mg (S0119,
# an expected code, fell behind an injection); at 0.8 no holdout term moved.
NOT_MEDICARE_FACTOR = 0.8
HEAD_NOUN_BONUS = 0.05
# Words that ask for what the specificity penalties set aside.
_ASKS_FOR = {
    "accessory": frozenset({"accessori", "attach", "replac", "compon", "part", "add-on", "addit"}),
    "reporting": frozenset({"qualiti", "measur", "report", "document", "mip", "pqrs"}),
    "maternity": frozenset({"pregnanc", "pregnant", "deliveri", "postpartum", "puerperium", "puerper", "labor",
                            "gestat", "matern", "obstetr", "childbirth", "trimest", "antepartum"}),
    "newborn": frozenset({"newborn", "neonat", "perinat", "fetus", "fetal", "infant", "birth"}),
}


@cache
def _reporting_ranges() -> tuple[tuple[str, str], ...]:
    """HCPCS ranges of quality-measure and functional-limitation reporting codes (hcpcs_categories.csv)."""
    return tuple((item.first_code, item.last_code) for item in hcpcs_category_ranges()
                 if "reporting" in item.category.lower())


@dataclass
class Candidate:
    """A code some lookup found, where each lookup placed it, and its scores once scored."""

    row: CodeRow
    hits: dict[str, LegHit] = field(default_factory=dict)
    similarity: float | None = None  # cosine to the term; None without a vector
    similarity_read: bool = False
    exact: bool = False
    lexical: float = 0.0
    coverage: float = 0.0
    best_term: str = ""
    rank: float = 0.0
    specificity: float = 0.0
    semantic: float | None = None
    prior: float = 1.0
    is_default: bool = False  # an "unspecified" / "without complications" / NOS ICD-10-CM code
    score: float = 0.0  # the weighted evidence: what ranks codes and decides which are listed
    behind: float = 0.0  # how far the score is below the best score of its system

    @property
    def confidence(self) -> float:
        """The probability that a coder accepts the code: 1 for a code written in the term, else the calibrated
        score (0 without evidence)."""
        if self.exact:
            return 1.0
        return round(calibration().probability(self.score, self.behind), 3) if self.score > 0 else 0.0

    @property
    def key(self) -> tuple[str, str]:
        """(system, code)."""
        return self.row.system, self.row.code

    @property
    def is_header(self) -> bool:
        """An ICD-10-CM code that is not billable because codes below it are."""
        return self.row.system == ICD10CM and not self.row.billable and self.row.has_children

    @property
    def tier(self) -> str | None:
        """high / medium / possible, or None below the possible tier."""
        for floor, name in TIERS:
            if self.score >= MIN_SCORE and (self.confidence > floor or (name == POSSIBLE and self.confidence >= floor)):
                return name
        return None

    def index_terms(self) -> tuple[Term, ...]:
        """The Index entry that led to this code, as one more wording of it (what a coder looked up); for a code
        under the header the Index gave, a wording of that header (what the code adds to it is unexplained)."""
        hit = self.hits.get("index")
        if hit is None or not hit.lexemes:
            return ()
        return (Term(hit.evidence, hit.via or self.row.code, hit.lexemes, hit.core, hit.negated),)

    def explain(self) -> str:
        """The features behind the confidence, for the trace."""
        semantic = "n/a" if self.semantic is None else f"{self.semantic:.2f}"
        legs = "+".join(sorted(self.hits))
        prior = "" if self.prior == 1.0 else f", routing prior {self.prior:.2f}"
        index = f"; {self.hits['index'].evidence}" if "index" in self.hits else ""
        return (f"{self.row.code} {self.score:.2f} -> confidence {self.confidence:.2f} (lexical {self.lexical:.2f}, "
                f"rank {self.rank:.2f}, "
                f"specificity {self.specificity:.2f}, semantic {semantic}{prior}; {legs}{index})")


class CandidatePool:
    """Every code found so far, per system, merged across lookups and rounds.

    Lookups report codes; a code becomes a candidate once its details are read (a code the release does not
    have, or a terminated HCPCS code, never does).
    """

    def __init__(self) -> None:
        self.candidates: dict[tuple[str, str], Candidate] = {}
        self._pending: dict[tuple[str, str], dict[str, LegHit]] = {}
        self._absent: set[tuple[str, str]] = set()

    def add(self, system: str, code: str, hit: LegHit) -> None:
        """Record that a lookup found a code (the best rank per lookup kind is kept)."""
        key = (system, code)
        if key in self._absent:
            return
        hits = self.candidates[key].hits if key in self.candidates else self._pending.setdefault(key, {})
        previous = hits.get(hit.leg)
        if previous is None or hit.rank < previous.rank:
            hits[hit.leg] = hit
        if hit.leg == "exact" and key in self.candidates:
            self.candidates[key].exact = True

    def without_details(self, system: str) -> list[str]:
        """Codes of a system found but not yet read."""
        return [code for (pending_system, code) in self._pending if pending_system == system]

    def attach(self, system: str, rows: dict[str, CodeRow]) -> None:
        """Make candidates of the pending codes that have details; forget the others."""
        for code in self.without_details(system):
            hits = self._pending.pop((system, code))
            if code not in rows:
                self._absent.add((system, code))
                continue
            self.candidates[(system, code)] = Candidate(rows[code], hits, exact="exact" in hits)

    def of(self, system: str) -> list[Candidate]:
        """The candidates of one system."""
        return [candidate for candidate in self.candidates.values() if candidate.row.system == system]

    def __len__(self) -> int:
        return len(self.candidates)


# The side a wording names, by lexeme: a code of another side than the term's is another code ("Hearing aid,
# monaural" for "hearing aids for both ears", "... left knee" for "right knee").
SIDE_LEXEMES = {"left": "left", "left-sid": "left", "right": "right", "right-sid": "right", "bilater": "both",
                "binaur": "both", "unilater": "one", "monaur": "one"}


def routing_priors(scores: dict[str, float]) -> dict[str, float]:
    """How much the classifier's signal for each system scales its codes' confidence (1.0: no doubt).

    Every system is searched; a system with less signal than the strongest one loses up to ROUTING_PRIOR_WEIGHT
    of its confidence, in proportion. Without any signal nothing is scaled.
    """
    strongest = max(scores.values(), default=0.0)
    if strongest <= 0:
        return dict.fromkeys(scores, 1.0)
    return {system: 1.0 - ROUTING_PRIOR_WEIGHT * (1.0 - score / strongest) for system, score in scores.items()}


_SCORE = text("SELECT * FROM medrag_score_codes(:release_id, CAST(:kinds AS text[]), CAST(:candidates AS jsonb), "
              "CAST(:term AS jsonb))")


def score_candidates(engine: Engine, releases: dict[str, CodeRelease], pool: CandidatePool, query: TermQuery, *,
                     kinds: dict[str, Sequence[str]], wants_modifiers: bool, semantic_systems: set[str],
                     priors: dict[str, float] | None = None) -> None:
    """Compute every candidate's features and score in place (candidates without evidence get 0), in PostgreSQL."""
    with engine.connect() as conn:
        for system in (ICD10CM, HCPCS):
            candidates = {candidate.row.code: candidate for candidate in pool.of(system)}
            if not candidates:
                continue
            prior = (priors or {}).get(system, 1.0)
            term = term_json(query, system, wants_modifiers=wants_modifiers, prior=prior,
                             semantic=system in semantic_systems)
            rows = conn.execute(_SCORE, {
                "release_id": releases[system].release_id, "kinds": list(kinds[system]), "term": json.dumps(term),
                "candidates": json.dumps([candidate_json(candidate) for candidate in candidates.values()])})
            for row in rows:
                candidate = candidates[row.code]
                candidate.prior, candidate.is_default = prior, row.is_default
                candidate.lexical, candidate.coverage, candidate.best_term = row.lexical, row.coverage, row.best_term
                candidate.rank, candidate.specificity, candidate.semantic = row.rank, row.specificity, row.semantic
                candidate.score, candidate.behind = row.score, row.behind


def _wordings(concept: Concept) -> list[list]:
    return [[wording.weight, sorted(wording.lexemes)] for wording in concept.wordings]


def term_json(query: TermQuery, system: str, *, wants_modifiers: bool, prior: float, semantic: bool) -> dict:
    """What medrag_score_codes reads of a term's current concepts, for the codes of one system."""
    return {"system": system, "focus": [_wordings(concept) for concept in query.focus(system)],
            "context": [_wordings(concept) for concept in query.context(system)],
            "negations": [_wordings(concept) for concept in query.negations()],
            "lexemes": sorted(query.all_lexemes()), "explained": sorted(query.explained_lexemes()),
            "asks_other": "other" in query.text.lower().split(), "wants_modifiers": wants_modifiers,
            "prior": prior, "semantic": semantic}


def candidate_json(candidate: Candidate) -> dict:
    """What medrag_score_codes reads of a candidate besides its code's details: how the lookups found it."""
    index = [[term.text, term.source, sorted(term.lexemes), sorted(term.core), sorted(term.negated)]
             for term in candidate.index_terms()]
    return {"code": candidate.row.code, "exact": candidate.exact, "similarity": candidate.similarity,
            "hits": [[hit.leg, hit.rank] for hit in candidate.hits.values()], "index": index[0] if index else None}


def code_settings_sql() -> str:
    """medrag_code_settings(): the numbers and word lists medrag_score_codes (sql/codes.sql) weighs evidence by,
    rendered from this module into generated.sql."""
    def literal(value: object) -> str:
        return "'" + json.dumps(value).replace("'", "''") + "'::jsonb"

    floats = {"lexical_weight": WEIGHTS["lexical"], "rank_weight": WEIGHTS["rank"],
              "specificity_weight": WEIGHTS["specificity"], "semantic_weight": WEIGHTS["semantic"],
              "similarity_floor": SIMILARITY_FLOOR, "similarity_top": SIMILARITY_TOP,
              "strong_similarity": STRONG_SIMILARITY, "semantic_only_cap": SEMANTIC_ONLY_CAP,
              "min_coverage": MIN_COVERAGE, "inherited_term_factor": INHERITED_TERM_FACTOR,
              "not_medicare_factor": NOT_MEDICARE_FACTOR, "head_noun_bonus": HEAD_NOUN_BONUS}
    columns = [f"{value!r}::float8 AS {name}" for name, value in floats.items()]
    columns += [f"{RRF_K} AS rrf_k", f"{literal(LEG_WEIGHTS)} AS leg_weights",
                "ARRAY[" + ", ".join(f"'{lexeme}'" for lexeme in sorted(NEUTRAL_LEXEMES))
                + "]::text[] AS neutral_lexemes",
                f"{literal({what: sorted(words) for what, words in _ASKS_FOR.items()})} AS asks_for",
                f"{literal(SIDE_LEXEMES)} AS side_lexemes",
                f"{literal([list(pair) for pair in _reporting_ranges()])} AS reporting_ranges"]
    body = ",\n           ".join(columns)
    return f"""
-- The numbers and word lists of the code finder's scoring (medrag/codes/consolidate.py renders this function)
CREATE OR REPLACE FUNCTION medrag_code_settings()
RETURNS TABLE (lexical_weight float8, rank_weight float8, specificity_weight float8, semantic_weight float8,
               similarity_floor float8, similarity_top float8, strong_similarity float8, semantic_only_cap float8,
               min_coverage float8, inherited_term_factor float8, not_medicare_factor float8, head_noun_bonus float8,
               rrf_k integer, leg_weights jsonb, neutral_lexemes text[], asks_for jsonb, side_lexemes jsonb,
               reporting_ranges jsonb)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT {body}
$$;
"""


@dataclass(frozen=True)
class Calibration:
    """Scores to probabilities: a logistic curve over a code's score, how far it is behind its system's best and
    whether it is that best, fitted on the dev terms' listed codes (Platt scaling with two more inputs)."""

    score_weight: float
    behind_weight: float
    best_weight: float
    intercept: float

    def probability(self, score: float, behind: float) -> float:
        """sigmoid(score_weight x score + behind_weight x behind + best_weight x [behind = 0] + intercept)."""
        z = (self.score_weight * score + self.behind_weight * behind + self.best_weight * (behind == 0)
             + self.intercept)
        return 1.0 / (1.0 + math.exp(-z))


@cache
def calibration(path: Path = CONFIDENCE_MODEL_FILE) -> Calibration:
    """The calibration shipped with medrag (data/confidence_model.json)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return Calibration(*(float(data[name]) for name in CALIBRATION_INPUTS))


def _sort_key(candidate: Candidate) -> tuple:
    return (-candidate.score, not candidate.is_default, candidate.row.code)


def ranked(pool: CandidatePool, system: str) -> list[Candidate]:
    """A system's candidates at or above the possible tier, best first, headers left out when a code under them
    made the list (the billable code is what gets reported)."""
    passing = sorted((candidate for candidate in pool.of(system) if candidate.score >= MIN_SCORE),
                     key=_sort_key)
    codes = [candidate.row.code for candidate in passing]
    return [candidate for candidate in passing
            if not (candidate.is_header and not candidate.exact
                    and any(code != candidate.row.code and code.startswith(candidate.row.code) for code in codes))]


def top_results(pool: CandidatePool, systems: list[str], top: int) -> list[Candidate]:
    """The top N of each system (by score), merged and sorted by confidence: what a reader compares across systems."""
    chosen = [candidate for system in systems for candidate in ranked(pool, system)[:top]]
    return sorted(chosen, key=lambda candidate: (-candidate.confidence, *_sort_key(candidate)))
