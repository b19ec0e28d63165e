"""The embedded backend: an answer made of the sources' own best-matching sentences, each citing its source.

Deterministic and quoting only: every sentence is copied verbatim from the source it cites, so it cannot claim
what the sources do not say. Sentences are scored by how much of the question's (idf-weighted) content they
cover, with the source's similarity and authority (national before local) breaking ties.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from sqlalchemy import Engine, text

from medrag.answer.context import AUTHORITY_RANK, WITHHELD, ContextSource
from medrag.answer.structured import DraftSentence
from medrag.answer.validate import STOPWORDS, Validator, content_words, stem
from medrag.index.chunking import split_sentences
from medrag.index.enrichment import expand_abbreviations
from medrag.sources.registry import code_kind_names

CODE_SOURCES = code_kind_names()
MIN_WORDS = 4
MAX_WORDS = 80
# A sentence must cover this share of the question's weighted terms to be quoted at all, and at least this share
# of what the best sentence covers (so that one sentence naming the asked-for code outranks ten that only share
# the words "HCPCS code").
MIN_COVERAGE = 0.2
RELATIVE_COVERAGE = 0.6
_CLOSED = re.compile(r"[.!?][\"'\u2019\u201d)\]]*$")
_LABELLED = re.compile(r"^[A-Z][\w /()-]{1,40}:\s")
_BULLET = re.compile(r"^\s*(?:[-*\u2022\u25aa\u25cf]|\(?[0-9a-zA-Z]{1,3}[.)])\s+")


@dataclass
class Candidate:
    """A sentence of a source that could be quoted."""

    source: ContextSource
    position: int
    text: str
    words: frozenset[str]
    coverage: float = 0.0
    score: float = 0.0


def candidates(sources: list[ContextSource]) -> list[Candidate]:
    """Every quotable sentence of the sources: whole sentences of reasonable length, no withheld text."""
    found = []
    for source in sources:
        position = 0
        about = frozenset(content_words(f"{source.label} {source.evidence.hit.title}"))
        for line in source.body.split("\n"):
            line = _BULLET.sub("", line).strip()
            if not line:
                continue
            for sentence in split_sentences(line):
                position += 1
                word_count = len(sentence.split())
                if WITHHELD in sentence or not MIN_WORDS <= word_count <= MAX_WORDS:
                    continue
                if sum(ch.isalpha() for ch in sentence) < len(sentence) / 2:
                    continue  # tables, code lists, page furniture
                if not _is_statement(sentence, source):
                    continue
                # A sentence is about its document: "the seat lift" in NCD 280.4 needs no "seat lift" of its own.
                words = frozenset(content_words(sentence)) | about
                found.append(Candidate(source, position, sentence, words))
    return found


def _is_statement(sentence: str, source: ContextSource) -> bool:
    """A sentence that says something: closing punctuation, a "Label: value" line, or a code set's description."""
    if _CLOSED.search(sentence) or _LABELLED.match(sentence):
        return True
    return source.source in CODE_SOURCES  # "HCPCS E0601: Continuous positive airway pressure device"


def _alternatives(question: str) -> dict[str, list[frozenset[str]]]:
    """Each abbreviation of the question (as a content word) -> the word sets of its expansions."""
    alternatives: dict[str, list[frozenset[str]]] = {}
    for abbreviation, expansion in expand_abbreviations(question):
        for term in content_words(abbreviation):
            alternatives.setdefault(term, []).append(frozenset(content_words(expansion)))
    return alternatives


def score_candidates(question: str, pool: list[Candidate]) -> None:
    """Set each candidate's coverage (idf-weighted share of the question's content words it contains, an
    abbreviation counting as present when its expansion is) and score (coverage plus a bonus for similarity)."""
    terms = set(content_words(question))
    if not terms or not pool:
        return
    alternatives = _alternatives(question)

    def has(candidate: Candidate, term: str) -> bool:
        return term in candidate.words or any(words <= candidate.words for words in alternatives.get(term, ()))

    present = {term: [has(candidate, term) for candidate in pool] for term in terms}
    weights = {term: math.log(1 + len(pool) / (1 + sum(flags))) + 0.1 for term, flags in present.items()}
    total = sum(weights.values())
    for index, candidate in enumerate(pool):
        coverage = sum(weight for term, weight in weights.items() if present[term][index]) / total
        candidate.coverage = coverage
        candidate.score = coverage + 0.1 * (candidate.source.evidence.similarity or 0.0) if coverage else 0.0


def _near_duplicate(words: frozenset[str], chosen: list[Candidate]) -> bool:
    return any(len(words & other.words) / max(1, len(words | other.words)) > 0.8 for other in chosen)


def question_intent(engine: Engine, question: str) -> str | None:
    """What the question asks for, as medrag_search reads it: 'policy', 'code' or None (sql/search.sql)."""
    with engine.connect() as conn:
        return conn.execute(_INTENT, {"question": question}).scalar()


def _group(candidate: Candidate) -> str:
    return "code" if candidate.source.source in CODE_SOURCES else "policy"


def extractive_answer(query: str, sources: list[ContextSource], validator: Validator, *, max_sentences: int,
                      intent: str | None = None) -> list[DraftSentence]:
    """Up to max_sentences quoted sentences that answer the query, in source order, each citing its source:
    sentences of documents the query names first, then the best-covering ones, from the kind of source the query
    asks for (intent 'policy': determinations and manuals; 'code': code sets) whenever that kind has any."""
    pool = candidates(sources)
    score_candidates(query, pool)
    # "Is CPAP covered for sleep apnea?" is answered by the NCD, not by the ICD-10-CM code whose description
    # happens to hold the same words.
    asked_for = [candidate for candidate in pool
                 if _group(candidate) == intent and candidate.coverage >= MIN_COVERAGE]
    if asked_for:
        pool = asked_for + [candidate for candidate in pool
                            if candidate.source.evidence.exact and _group(candidate) != intent]
    best = max((candidate.coverage for candidate in pool), default=0.0)
    floor = max(MIN_COVERAGE, RELATIVE_COVERAGE * best)
    # A document the question names (E0601, G47.33, L33797) is what it asks about: its sentences come first.
    ranked = sorted(
        (candidate for candidate in pool
         if candidate.coverage >= floor or (candidate.source.evidence.exact and candidate.coverage > 0)),
        key=lambda c: (not c.source.evidence.exact, -round(c.score, 6), AUTHORITY_RANK.get(c.source.source, 9),
                       c.source.n, c.position),
    )
    chosen: list[Candidate] = []
    for candidate in ranked:
        if len(chosen) >= max_sentences:
            break
        if _near_duplicate(candidate.words, chosen):
            continue
        if not validator.check(DraftSentence(candidate.text, [candidate.source.n])).passed:
            continue  # e.g. a source sentence naming a code the tables do not have
        chosen.append(candidate)
    chosen.sort(key=lambda c: (c.source.n, c.position))
    return [DraftSentence(candidate.text, [candidate.source.n]) for candidate in chosen]


_INTENT = text("SELECT medrag_query_intent(:question)")
_IN_CORPUS = text("""
    SELECT word FROM unnest(CAST(:words AS text[])) AS word
    WHERE EXISTS (SELECT 1 FROM chunk WHERE tsv @@ plainto_tsquery('english', word))
""")
# words, and five-digit CPT codes (99213): a CPT code the corpus never mentions is as unknown as a brand name
_RAW_WORD = re.compile(r"[a-z][a-z0-9]+(?:[-'][a-z0-9]+)*|(?<![\w.])[0-9]{5}(?![\w.])")


def unknown_words(engine: Engine, question: str, sources: list[ContextSource]) -> list[str]:
    """Words of the question that no source given contains and no chunk of the whole corpus contains either.

    Such a word names something the corpus knows nothing about (a drug brand, a plan, a typo): quoting sentences
    that merely share the question's other words would answer a different question, so the extractive backend
    refuses instead.
    """
    pool = candidates(sources)
    seen = set().union(*(candidate.words for candidate in pool)) if pool else set()
    seen |= set().union(*(content_words(source.searchable_text()) for source in sources)) if sources else set()
    missing = sorted({word for word in _RAW_WORD.findall(question.lower())
                      if word not in STOPWORDS and len(word) > 2 and stem(word) not in seen})
    if not missing:
        return []
    with engine.connect() as conn:
        known = set(conn.execute(_IN_CORPUS, {"words": missing}).scalars())
    return [word for word in missing if word not in known]
