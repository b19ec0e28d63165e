"""Candidates from every lookup, deduplicated and scored: a score that ranks, a calibrated confidence, tiers.

score = (0.60 lexical + 0.05 rank + 0.20 specificity + 0.15 semantic similarity) x routing prior, where

- lexical: coverage x (0.4 + 0.6 precision) of the code's best wording (its description, an inclusion term, or
  a term of a code above it). Coverage is the share of the term's concepts found in the wording (a word after
  "without" does not count); precision the share of the wording's content the term explains (nonessential
  modifiers in parentheses and filler such as "NOS" set aside; "Other ..." residual codes and, through an
  inherited wording, what the code adds to that ancestor count as unexplained);
  a HCPCS description that starts with the term's head noun gets a little more;
- rank: the code's place after reciprocal-rank fusion of the lookups that found it;
- specificity: a billable leaf (the "unspecified" / "without" / NOS default above its siblings), a HCPCS code
  listed in an LCD; against headers, pregnancy and newborn codes for a term that mentions neither, "not
  otherwise classified" codes, accessories and quality-reporting codes nobody asked for, unrequested modifiers,
  HCPCS codes Medicare does not pay at all (coverage code I: another payer's);
- semantic: cosine similarity of the term and the code's document embedding. Without embeddings the other
  weights are scaled up to sum to one.

A code needs evidence: at least half of the term in its wording, or (without that) a close embedding, and then its
score is capped. The confidence shown is the probability that a coder accepts the code, from the score and the
code's distance to its system's best (Calibration, fitted on the dev set by codes/fit.py); a code written in the
term and found in the tables is exact (confidence 1).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

from medrag.codes.classify import HCPCS, ICD10CM
from medrag.codes.plan import CodeRow, LegHit, Term
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
_DEFAULT_CODE = re.compile(r"(,\s*unspecified\b|\bunspecified\s*$|^unspecified\b|without complications?\b|"
                           r"\buncomplicated\b|\bnot specified\b|\bNOS\b)", re.IGNORECASE)
# "without ..." is the default of its "with ..." siblings (K80.20 "... without obstruction").
_WITHOUT = re.compile(r"\bwithout\b", re.IGNORECASE)
_OTHER = re.compile(r"\bother\b", re.IGNORECASE)
_NOT_OTHERWISE = re.compile(r"not otherwise (classified|specified)|\bunlisted\b|\bmiscellaneous\b", re.IGNORECASE)
_ACCESSORY = re.compile(r"\b(accessory|accessories|attachment|replacement|component|for use with|used with|add-on|"
                        r"each additional)\b", re.IGNORECASE)
# Words that ask for what the penalties above set aside.
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


def is_reporting_code(code: str) -> bool:
    """A HCPCS code that reports a quality measure or functional limitation rather than an item or service."""
    return any(first <= code <= last for first, last in _reporting_ranges())


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


# ICD-10-CM filler and the lexemes it contributes: "without complications", "not elsewhere classified",
# "Pneumonia, unspecified organism" say what is not known, not what the code is.
_FILLER = (
    (re.compile(r"without complications?", re.IGNORECASE), frozenset({"complic"})),
    (re.compile(r"not elsewhere classified", re.IGNORECASE), frozenset({"elsewher", "classifi"})),
    (re.compile(r"not otherwise specified", re.IGNORECASE), frozenset({"otherwis", "specifi"})),
    (re.compile(r"site not specified", re.IGNORECASE), frozenset({"site", "specifi"})),
    (re.compile(r"\bnot specified\b", re.IGNORECASE), frozenset({"specifi"})),
)
_UNSPECIFIED_WHAT = re.compile(r",\s*unspecified\s+(organism|site|type|part|severity|stage|region|side|cause|"
                               r"laterality)\b", re.IGNORECASE)
_UNSPECIFIED_LEXEME = {"organism": "organ", "severity": "sever", "cause": "caus", "laterality": "later"}


@lru_cache(maxsize=65_536)
def _filler(text: str) -> frozenset[str]:
    found = set()
    for pattern, lexemes in _FILLER:
        if pattern.search(text):
            found |= lexemes
    for word in _UNSPECIFIED_WHAT.findall(text):
        found.add(_UNSPECIFIED_LEXEME.get(word.lower(), word.lower()))
    return frozenset(found)


@lru_cache(maxsize=65_536)
def _mentions_other(text: str) -> bool:
    return _OTHER.search(text) is not None


def _is_number(lexeme: str) -> bool:
    # PostgreSQL's parser reads the "-19" of "COVID-19" as a signed number.
    return lexeme.lstrip("-").isdigit()


@lru_cache(maxsize=262_144)  # a code's wordings are scored again in every round and every search that finds it
def _content(lexemes: frozenset[str], numbers_count: bool, text: str = "") -> frozenset[str]:
    filler = _filler(text) if text else frozenset()
    return frozenset(lexeme for lexeme in lexemes if lexeme not in NEUTRAL_LEXEMES and lexeme not in filler
                     and (numbers_count or not _is_number(lexeme)))


def _concept_coverage(concept: Concept, lexemes: frozenset[str]) -> float:
    best = 0.0
    for wording in concept.wordings:
        if wording.lexemes:
            best = max(best, wording.weight * len(wording.lexemes & lexemes) / len(wording.lexemes))
    return best


@dataclass(frozen=True)
class LexicalMatch:
    """How a code's best wording matches the term."""

    score: float = 0.0
    coverage: float = 0.0
    term: str = ""
    nos_default: bool = False  # the term is a "... NOS" wording of the code or a code above it
    head_match: bool = False  # a HCPCS description names the term's head noun first


@dataclass(frozen=True)
class QueryFacts:
    """What scoring reads of a term, worked out once per scoring pass rather than once per candidate."""

    lexemes: frozenset[str]  # every lexeme the term affirms
    explained: frozenset[str]  # lexemes a code's wording may contain and still be explained by the term
    numbers_count: bool  # the term has a number, so a code's numbers are content
    asks_other: bool  # the term says "other"
    asks_without: bool  # the term says "without": a code's "without" clause covers its words


def query_facts(query: TermQuery) -> QueryFacts:
    """The facts of a term's current concepts."""
    lexemes = query.all_lexemes()
    return QueryFacts(lexemes, query.explained_lexemes(), any(_is_number(lexeme) for lexeme in lexemes),
                      "other" in query.text.lower().split(), "without" in lexemes)


def _reference(row: CodeRow, source: str) -> frozenset[str]:
    """Lexemes of the descriptions of `source` (an ancestor of row) and the codes above it."""
    return frozenset().union(*(lexemes for code, lexemes in row.ancestors if source.startswith(code)))


def lexical_match(row: CodeRow, query: TermQuery, extra_terms: tuple[Term, ...] = (),
                  facts: QueryFacts | None = None) -> LexicalMatch:
    """The best wording of a code for the term's concepts of the code's system (see the module docstring).

    extra_terms are wordings found outside the code's table row (the Index entry that led to it); facts, the term's
    query_facts when the caller scores many codes.
    """
    focus, context = query.focus(row.system), query.context(row.system)
    if not focus or not row.terms:
        return LexicalMatch()
    facts = facts or query_facts(query)
    explained_by_query, numbers_count, asks_other = facts.explained, facts.numbers_count, facts.asks_other
    # Words a wording names only in its "without" clause ("Vomiting without nausea") cover none of the term's, nor
    # do those the description excludes, whatever another wording of the code says (an Index entry's aliases).
    asks_without = facts.asks_without
    excluded = row.terms[0].negated
    description_content = _content(row.terms[0].core, numbers_count, row.terms[0].text)
    best = LexicalMatch()
    nos_default = False
    for index, term in enumerate(row.terms + extra_terms):
        inherited = term.source != row.code
        lexemes = term.lexemes if asks_without else term.lexemes - term.negated - excluded
        coverage = sum(_concept_coverage(concept, lexemes) for concept in focus) / len(focus)
        content = _content(term.core, numbers_count, term.text)
        explained = len(content & explained_by_query)
        unexplained = len(content) - explained
        if inherited:
            unexplained += len(description_content - _reference(row, term.source) - explained_by_query)
        if not asks_other and _mentions_other(row.display if index == 0 or inherited else term.text):
            unexplained += 1
        precision = explained / (explained + unexplained) if explained + unexplained else 1.0
        score = coverage * (0.4 + 0.6 * precision) * (INHERITED_TERM_FACTOR if inherited else 1.0)
        if "nos" in term.lexemes and content and content <= explained_by_query:
            nos_default = True
        if (score, coverage) > (best.score, best.coverage):
            best = LexicalMatch(score, coverage, term.text)
    score = best.score
    # HCPCS descriptions name the item first ("External ambulatory infusion pump, insulin"): the term's last word,
    # its head noun, there means the code is that item rather than something for it.
    head_match = row.system == HCPCS and best.coverage > 0 and _concept_coverage(focus[-1], row.head) > 0
    if head_match:
        score = min(1.0, score + HEAD_NOUN_BONUS)
    if context and best.coverage > 0:
        matched = sum(1 for concept in context if _concept_coverage(concept, row.lexemes) > 0)
        score = min(1.0, score + 0.05 * matched / len(context))
    return LexicalMatch(score, best.coverage, best.term, nos_default, head_match)


# The side a wording names, by lexeme: a code of another side than the term's is another code ("Hearing aid,
# monaural" for "hearing aids for both ears", "... left knee" for "right knee").
SIDE_LEXEMES = {"left": "left", "left-sid": "left", "right": "right", "right-sid": "right", "bilater": "both",
                "binaur": "both", "unilater": "one", "monaur": "one"}


def sides_of(lexemes: frozenset[str]) -> frozenset[str]:
    """The sides lexemes name: left, right, both, one; "left" and "right" together are both."""
    sides = {SIDE_LEXEMES[lexeme] for lexeme in lexemes if lexeme in SIDE_LEXEMES}
    return frozenset(sides | {"both"} if {"left", "right"} <= sides else sides)


def _side_fits(side: str, asked: frozenset[str]) -> bool:
    return side in asked or (side == "one" and bool(asked & {"left", "right"})) \
        or (side in ("left", "right") and "one" in asked)


def contradicts(row: CodeRow, query: TermQuery, asked_sides: frozenset[str] = frozenset()) -> bool:
    """The code's description or the titles it is classified under name what the term says is not so ("Alcoholic
    fatty liver" for "fatty liver not caused by alcohol", chapter "Injury, poisoning ..." for "shoulder pain, no
    injury"), or a side the term does not ("monaural" for "both ears"); what the description names only after
    "without" does not count."""
    description = row.terms[0] if row.terms else None
    if description is None:
        return False
    named = (description.lexemes - description.negated) | row.headings
    if asked_sides and not all(_side_fits(side, asked_sides) for side in sides_of(named)):
        return True
    return any(_concept_coverage(concept, named) > 0 for concept in query.negations())


def _asks_for(facts: QueryFacts, what: str) -> bool:
    return bool(facts.lexemes & _ASKS_FOR[what])


def specificity(row: CodeRow, query: TermQuery, wants_modifiers: bool, match: LexicalMatch | None = None,
                facts: QueryFacts | None = None) -> float:
    """How reportable and specific a code is for the term, 0-1 (see the module docstring)."""
    facts = facts or query_facts(query)
    if row.system == ICD10CM:
        if not row.billable and not row.seventh:  # a code reported with a 7th character counts as billable
            value = 0.3
        elif _DEFAULT_CODE.search(row.display) or (match is not None and match.nos_default):
            value = 1.0
        else:
            value = 0.9 if _WITHOUT.search(row.display) else 0.8
        if (row.code.startswith("O") and not _asks_for(facts, "maternity")) or \
                (row.code.startswith("P") and not _asks_for(facts, "newborn")):
            value *= 0.6
        return value
    if row.kind == "modifier":
        return 0.9 if wants_modifiers else 0.3
    if is_reporting_code(row.code) and not _asks_for(facts, "reporting"):
        return 0.4
    # "Tubing, used with suction pump": something for the item, unless the description starts with the item.
    head_match = match is not None and match.head_match
    if _ACCESSORY.search(row.display) and not head_match and not _asks_for(facts, "accessory"):
        return 0.55
    if _NOT_OTHERWISE.search(row.display):
        value = 0.6
    else:
        value = 1.0 if row.listed_in_lcd else 0.85
    # medrag answers Medicare's rules: a code Medicare does not recognise (S0285, a private payer's colonoscopy
    # consultation) is not what a Medicare claim reports for the service
    return value if row.medicare_valid else value * NOT_MEDICARE_FACTOR


def is_default_code(row: CodeRow) -> bool:
    """An 'unspecified' / 'without complications' / NOS code: what an unqualified term is coded to."""
    return row.system == ICD10CM and bool(_DEFAULT_CODE.search(row.display))


def _rank_scores(candidates: list[Candidate]) -> None:
    fused = {candidate.key: sum(LEG_WEIGHTS[hit.leg] / (RRF_K + hit.rank) for hit in candidate.hits.values())
             for candidate in candidates}
    ordered = sorted(candidates, key=lambda candidate: (-fused[candidate.key], candidate.row.code))
    for position, candidate in enumerate(ordered):
        candidate.rank = 1.0 / (1.0 + position / 10.0)


def _semantic(similarity: float | None) -> float | None:
    if similarity is None:
        return None
    return max(0.0, min(1.0, (similarity - SIMILARITY_FLOOR) / (SIMILARITY_TOP - SIMILARITY_FLOOR)))


def routing_priors(scores: dict[str, float]) -> dict[str, float]:
    """How much the classifier's signal for each system scales its codes' confidence (1.0: no doubt).

    Every system is searched; a system with less signal than the strongest one loses up to ROUTING_PRIOR_WEIGHT
    of its confidence, in proportion. Without any signal nothing is scaled.
    """
    strongest = max(scores.values(), default=0.0)
    if strongest <= 0:
        return dict.fromkeys(scores, 1.0)
    return {system: 1.0 - ROUTING_PRIOR_WEIGHT * (1.0 - score / strongest) for system, score in scores.items()}


def score_candidates(pool: CandidatePool, query: TermQuery, *, wants_modifiers: bool,
                     semantic_systems: set[str], priors: dict[str, float] | None = None) -> None:
    """Compute every candidate's features and score in place (candidates without evidence get 0)."""
    facts = query_facts(query)
    asked_sides = sides_of(query.explained_lexemes())
    for system in (ICD10CM, HCPCS):
        candidates = pool.of(system)
        _rank_scores(candidates)
        prior = (priors or {}).get(system, 1.0)
        for candidate in candidates:
            candidate.prior = prior
            match = lexical_match(candidate.row, query, candidate.index_terms(), facts)
            candidate.lexical, candidate.coverage, candidate.best_term = match.score, match.coverage, match.term
            candidate.specificity = specificity(candidate.row, query, wants_modifiers, match, facts)
            # A code whose document has no vector yet (embedding still running) is scored as without vectors.
            has_semantic = system in semantic_systems and candidate.similarity is not None
            candidate.semantic = _semantic(candidate.similarity) if has_semantic else None
            if candidate.exact:
                candidate.score = 1.0
                continue
            if contradicts(candidate.row, query, asked_sides):
                candidate.score = 0.0
                continue
            total = (WEIGHTS["lexical"] * candidate.lexical + WEIGHTS["rank"] * candidate.rank
                     + WEIGHTS["specificity"] * candidate.specificity)
            if has_semantic:
                total += WEIGHTS["semantic"] * (candidate.semantic or 0.0)
            else:
                total /= 1.0 - WEIGHTS["semantic"]
            if candidate.coverage < MIN_COVERAGE:
                # Less than half of the term in the code's wording ("xyzzy plugh" -> "Stoma plug") is a guess,
                # unless the embedding says the code means the term.
                strong = has_semantic and (candidate.similarity or 0.0) >= STRONG_SIMILARITY
                total = min(total, SEMANTIC_ONLY_CAP) if strong else 0.0
            candidate.score = round(min(1.0, total) * prior, 3)
        best = max((candidate.score for candidate in candidates), default=0.0)
        for candidate in candidates:
            candidate.behind = round(best - candidate.score, 3)


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
    return (-candidate.score, not is_default_code(candidate.row), candidate.row.code)


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
