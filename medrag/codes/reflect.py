"""After each round of lookups: are the results good enough, too few (broaden) or too general (narrow)?

Too few for a system means nothing reaches the possible tier, or the best code matches the term poorly (part of
it uncovered, or buried in a long description). Broadening then, in order: synonyms and abbreviations from the
table, spelling corrections of words that matched nothing, and (when still nothing) leaving qualifiers such as
"left" or "acute" out of the lookups; a system the classifier skipped is searched when no system found anything.
Too general means a header (a non-billable ICD-10-CM category such as E11) is among the best codes: its billable
codes are fetched so that leaf codes come first. Each action is taken once; the finder stops after three rounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from medrag.codes.classify import ICD10CM
from medrag.codes.consolidate import MIN_SCORE, CandidatePool, ranked
from medrag.codes.synonyms import SynonymTable
from medrag.codes.terms import Concept, TermQuery

MIN_SPELLING_LENGTH = 4
# A best code below this lexical score leaves room to broaden (a term half covered, or buried in a long text).
GOOD_LEXICAL = 0.75
MAX_HEADERS = 5


@dataclass
class Decision:
    """What the next round does (nothing when done), and why."""

    reasons: list[str] = field(default_factory=list)
    expansions: list[tuple[Concept, tuple[str, ...]]] = field(default_factory=list)  # concept, synonym wordings
    misspelled: dict[str, list[str]] = field(default_factory=dict)  # system -> words to correct by trigram
    dropped: list[str] = field(default_factory=list)  # qualifiers left out of the lookups (already applied)
    headers: list[str] = field(default_factory=list)  # ICD-10-CM headers whose billable codes to fetch

    @property
    def done(self) -> bool:
        """Nothing left to try."""
        return not (self.expansions or self.misspelled or self.dropped or self.headers)


@dataclass
class ReflectState:
    """What earlier rounds already tried, so that no action repeats."""

    spelling_tried: set[tuple[str, str]] = field(default_factory=set)
    synonyms_tried: set[str] = field(default_factory=set)
    headers_expanded: set[str] = field(default_factory=set)
    known_words: frozenset[str] = frozenset()  # words the corpus knows: never spelling-corrected


def _is_weak(pool: CandidatePool, system: str) -> tuple[bool, str]:
    results = ranked(pool, system)
    if not results:
        return True, f"{system}: nothing at or above {MIN_SCORE}"
    best = results[0]
    if best.exact or best.lexical >= GOOD_LEXICAL:
        return False, ""
    return True, (f"{system}: best code {best.row.code} covers {best.coverage:.0%} of the term "
                  f"(lexical {best.lexical:.2f})")


def reflect(pool: CandidatePool, query: TermQuery, systems: list[str], *, state: ReflectState,
            synonyms: SynonymTable, priors: dict[str, float] | None = None) -> Decision:
    """Decide the next round from the scored pool (qualifiers left out are marked on the query itself).

    A weak system is broadened when the classifier favours it (its routing prior is the highest), or when no
    system found anything: a supply term is not spelled-corrected against diagnoses while HCPCS answers it.
    """
    decision = Decision()
    weak = {}
    priors = priors or {}
    favoured = max((priors.get(system, 1.0) for system in systems), default=1.0)
    nothing_found = all(not ranked(pool, system) for system in systems)
    for system in systems:
        is_weak, reason = _is_weak(pool, system)
        if is_weak and (priors.get(system, 1.0) >= favoured or nothing_found):
            weak[system] = reason
    for system, reason in weak.items():
        pending = []
        for concept in query.focus(system):
            entry = synonyms.get(concept.text)
            if entry is not None and concept.text not in state.synonyms_tried:
                state.synonyms_tried.add(concept.text)
                pending.append((concept, entry.expansions))
        if pending:
            wordings = "; ".join(f"{concept.text} -> {' | '.join(expansions)}" for concept, expansions in pending)
            decision.reasons.append(f"{reason}; broaden with synonyms: {wordings}")
            decision.expansions += pending
            continue
        unmatched = _unmatched_words(pool, query, system, state)
        if unmatched:
            decision.reasons.append(f"{reason}; broaden: correct the spelling of {', '.join(unmatched)}")
            decision.misspelled[system] = unmatched
            continue
        if not ranked(pool, system):
            qualifiers = [concept for concept in query.focus(system) if concept.qualifier and not concept.dropped]
            if qualifiers and len(qualifiers) < len(query.focus(system)):
                decision.reasons.append(f"{reason}; broaden: leave out {', '.join(c.text for c in qualifiers)}")
                for concept in qualifiers:
                    concept.dropped = True
                decision.dropped += [concept.text for concept in qualifiers]
    if ICD10CM in systems:
        # Headers among the best codes, before ranked() hides those with a code below them in the list.
        scored = sorted((c for c in pool.of(ICD10CM) if c.score >= MIN_SCORE), key=lambda c: -c.score)
        headers = [candidate.row.code for candidate in scored[:MAX_HEADERS]
                   if candidate.is_header and not candidate.exact and candidate.row.code not in state.headers_expanded]
        if headers:
            state.headers_expanded.update(headers)
            decision.headers = headers
            decision.reasons.append(f"{ICD10CM}: too general: narrow {', '.join(headers)} to billable leaf codes")
    return decision


def _unmatched_words(pool: CandidatePool, query: TermQuery, system: str, state: ReflectState) -> list[str]:
    """Typed words of the system's concepts that no candidate of the system contains, not yet corrected."""
    seen = frozenset().union(*(candidate.row.lexemes for candidate in pool.of(system)),
                             *(term.lexemes for candidate in pool.of(system) for term in candidate.index_terms()))
    words = []
    for concept in query.focus(system):
        # A concept the synonym table knows is not misspelled; one already matched or corrected needs nothing.
        if concept.lexemes & seen or len(concept.wordings) > 1 or concept.text in state.synonyms_tried:
            continue
        for word in concept.words:
            if (len(word) >= MIN_SPELLING_LENGTH and not word.isdigit() and word not in state.known_words
                    and (system, word) not in state.spelling_tried):
                state.spelling_tried.add((system, word))
                words.append(word)
    return words
