"""A term as concepts: the words typed, grouped by synonym phrases, each with the wordings it may be matched by.

"copd exacerbation" is two concepts; broadening gives "copd" a second wording ("chronic obstructive pulmonary
disease"), a spelling correction gives "tuberculosus" the wording "tuberculosis". A code covers a concept when
one of its wordings' lexemes is in the code's description or inclusion terms, so a term is measured against the
same concepts however it was broadened. Lexemes come from PostgreSQL's english configuration (the same stemming
the full-text index uses).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from medrag.codes.classify import QUALIFIER_WORDS, SYSTEMS, Classification, words_of
from medrag.codes.synonyms import SynonymTable

TYPED = "typed"
COMPOUND = "compound"  # the typed word as the corpus writes it, hyphenated ("checkup": check-up)
SYNONYM = "synonym"
SPELLING = "spelling"
# A corrected word is less certain than one the user typed.
ORIGIN_WEIGHT = {TYPED: 1.0, COMPOUND: 1.0, SYNONYM: 1.0, SPELLING: 0.9}
AS_TYPED = (TYPED, COMPOUND)
MIN_PATTERN = 3  # the trigram index needs three characters
# A negation ("fatty liver not caused by alcohol", "shoulder pain, no injury") reaches from its cue to the end of the
# clause: a comma or other stop, or a word that starts another clause. "without" is not a cue here: codes say it
# too ("Vomiting without nausea"), and their "without" clauses are matched as written (consolidate.lexical_match);
# nor is the "not" of the Tabular's own filler ("not elsewhere classified", "not otherwise specified"), nor a "not
# enough" (too little of something is a deficiency, which codes name: "anemia from not enough iron").
_NEGATION = re.compile(r"\b(?:not(?!\s+(?:elsewhere|otherwise|specified|further|enough|sufficient|adequate))|no|"
                       r"never|denies|denied|"
                       r"negative for|(?:did|does|do|is|was|has|had)n't)\b"
                       r"([^,;.:()]*?)(?=[,;.:()]|\b(?:but|and|with|or|who|which)\b|$)", re.IGNORECASE)


@dataclass(frozen=True)
class Wording:
    """One way to say a concept: its words, their lexemes and where the wording came from."""

    words: tuple[str, ...]
    lexemes: frozenset[str]
    origin: str

    @property
    def weight(self) -> float:
        """How much a match on this wording counts (spelling corrections a little less)."""
        return ORIGIN_WEIGHT[self.origin]


@dataclass
class Concept:
    """A word or synonym phrase of the term, with its wordings and the systems it is about."""

    words: tuple[str, ...]
    wordings: list[Wording]
    systems: frozenset[str]
    qualifier: bool = False
    dropped: bool = False  # a qualifier left out of the lookups while broadening (still counted when scoring)
    negated: bool = False  # said not to be so ("not caused by alcohol"): never searched for, contradicted by a code
    # Lexemes of the concept's synonyms: a code's "continuous positive airway pressure" is explained by "cpap"
    # even before the synonym is searched for.
    explains: frozenset[str] = frozenset()

    @property
    def text(self) -> str:
        """The concept as typed."""
        return " ".join(self.words)

    @property
    def lexemes(self) -> frozenset[str]:
        """Every lexeme of every wording."""
        return frozenset().union(*(wording.lexemes for wording in self.wordings))

    @property
    def search_wordings(self) -> list[Wording]:
        """What the lookups search for: a synonym or a correction once there is one (the typed words found
        too little), else the words as typed."""
        alternatives = [wording for wording in self.wordings if wording.origin not in AS_TYPED]
        return alternatives or self.wordings

    def add(self, wording: Wording) -> bool:
        """Add a wording unless one with the same lexemes is there; True when added."""
        if not wording.lexemes or any(existing.lexemes == wording.lexemes for existing in self.wordings):
            return False
        self.wordings.append(wording)
        return True


@dataclass
class TermQuery:
    """The concepts of a term; which are focus for each system, and the lookups' inputs derived from them."""

    text: str
    concepts: list[Concept] = field(default_factory=list)

    def focus(self, system: str) -> list[Concept]:
        """Concepts a code of `system` should cover (not the negated ones)."""
        return [concept for concept in self.concepts if system in concept.systems and not concept.negated]

    def context(self, system: str) -> list[Concept]:
        """Concepts about another system (a multi-intent term's other half): a bonus, never required."""
        return [concept for concept in self.concepts if system not in concept.systems and not concept.negated]

    def negations(self) -> list[Concept]:
        """Concepts the term says are not so: a code that names one contradicts the term."""
        return [concept for concept in self.concepts if concept.negated]

    def all_lexemes(self) -> frozenset[str]:
        """Every lexeme of every concept the term affirms."""
        return frozenset().union(*(concept.lexemes for concept in self.concepts if not concept.negated))

    def explained_lexemes(self) -> frozenset[str]:
        """Lexemes a code's wording may contain and still be explained by the term (synonyms included; not what the
        term negates, unless another of its concepts says it)."""
        explains = frozenset().union(*(concept.explains for concept in self.concepts if not concept.negated))
        negated = frozenset().union(*(concept.lexemes for concept in self.negations()))
        return self.all_lexemes() | explains | frozenset(f"non{lexeme}" for lexeme in negated)

    def searched(self, system: str) -> list[Concept]:
        """Focus concepts the lookups search for (dropped qualifiers left out)."""
        return [concept for concept in self.focus(system) if not concept.dropped]

    def patterns(self, system: str) -> tuple[str, ...]:
        """ILIKE patterns for the description words lookup: '%stem%' per lexeme of each searched wording."""
        patterns: list[str] = []
        for concept in self.searched(system):
            for wording in concept.search_wordings:
                for word in wording.words:
                    patterns += [f"%{stem}%" for stem in _stems_in_word(word, wording.lexemes)]
        return tuple(dict.fromkeys(patterns))

    def tsquery(self, system: str) -> str:
        """Full-text query: every searched concept (AND), each by any of its wordings (OR), lexemes AND-ed."""
        clauses = []
        for concept in self.searched(system):
            options = [" & ".join(_quote(lexeme) for lexeme in sorted(wording.lexemes))
                       for wording in concept.search_wordings if wording.lexemes]
            if options:
                clauses.append("(" + " | ".join(f"({option})" for option in options) + ")")
        return " & ".join(clauses)

    def searched_lexemes(self, system: str) -> tuple[str, ...]:
        """Every lexeme of every wording of the searched concepts (the index leg matches any of them)."""
        found = {lexeme for concept in self.searched(system) for wording in concept.wordings
                 for lexeme in wording.lexemes}
        return tuple(sorted(found))

    def describe(self) -> str:
        """'copd (= chronic obstructive pulmonary disease) + exacerbation' for the trace."""
        parts = []
        for concept in self.concepts:
            extra = [" ".join(wording.words) for wording in concept.wordings if wording.origin != TYPED]
            parts.append(("not " if concept.negated else "") + concept.text
                         + (f" (= {' | '.join(extra)})" if extra else "") + (" [dropped]" if concept.dropped else ""))
        return " + ".join(parts)


def _quote(lexeme: str) -> str:
    return "'" + lexeme.replace("'", "''") + "'"


def _stems_in_word(word: str, lexemes: Iterable[str]) -> list[str]:
    """Substrings of the typed word that its lexemes stand for ("injuries" -> "injur", "x-ray" -> "x-ray", "ray")."""
    stems = []
    for lexeme in lexemes:
        if lexeme in word:
            stem = lexeme
        else:
            # Snowball rewrites endings ("injuri", "famili"): the shared prefix is what descriptions contain.
            length = 0
            while length < min(len(word), len(lexeme)) and word[length] == lexeme[length]:
                length += 1
            stem = word[:length]
        if len(stem) >= MIN_PATTERN and all(ch.isalnum() or ch in "-'" for ch in stem):
            stems.append(stem)
    return stems


def negated_words(text: str) -> frozenset[str]:
    """Words the term says only inside a negation ("fatty liver not caused by alcohol": caused, by, alcohol)."""
    inside = {word for match in _NEGATION.finditer(text) for word in words_of(match.group(1))}
    outside = words_of(_NEGATION.sub(" ", text))
    return frozenset(inside - set(outside))


def build_term_query(
    text: str,
    classification: Classification,
    synonyms: SynonymTable,
    lexemes_of: Callable[[Sequence[str]], dict[str, tuple[str, ...]]],
    systems: Sequence[str],
    compounds_of: Callable[[Sequence[str]], dict[str, tuple[tuple[str, str], ...]]] | None = None,
) -> TermQuery:
    """Concepts of a classified term: synonym phrases grouped, stop words left out, focus systems assigned.

    `systems` are the systems being searched; with more than one, words that signal only one of them are focus
    for that one alone. `compounds_of` gives the hyphenated forms of typed words ("checkup": check-up, with its
    lexeme), each a second wording of its word.
    """
    words = list(classification.words)
    spans: list[tuple[int, int]] = []
    index = 0
    for match in synonyms.matches(words):
        spans += [(position, position + 1) for position in range(index, match.start)]
        spans.append((match.start, match.end))
        index = match.end
    spans += [(position, position + 1) for position in range(index, len(words))]
    matched = {(match.start, match.end): match.entry for match in synonyms.matches(words)}
    expansion_words = {word for entry in matched.values() for expansion in entry.expansions
                       for word in words_of(expansion)}
    lexemes = lexemes_of(sorted(set(words) | expansion_words))
    compounds = compounds_of(sorted(set(words))) if compounds_of else {}
    exclusive = {system: classification.exclusive_words(system) for system in SYSTEMS}
    negated = negated_words(text)
    query = TermQuery(text)
    for start, end in spans:
        concept_words = tuple(words[start:end])
        concept_lexemes = frozenset(lexeme for word in concept_words for lexeme in lexemes.get(word, ()))
        entry = matched.get((start, end))
        if not concept_lexemes and entry is not None:
            # a stop word the table gives a meaning ("both": bilateral) is its expansions from the start
            concept = _stop_word_concept(concept_words, entry.expansions, lexemes)
            if concept is not None:
                query.concepts.append(concept)
            continue
        if not concept_lexemes:
            continue  # stop words ("of", "the", "with")
        # A word that signals only one system is that system's business in a multi-intent term.
        owners = {system for system in SYSTEMS if set(concept_words) & exclusive[system]}
        focus = frozenset(owners) if owners and len(systems) > 1 else frozenset(SYSTEMS)
        qualifier = all(word in QUALIFIER_WORDS for word in concept_words)
        explains = frozenset(lexeme for expansion in (entry.expansions if entry else ())
                             for word in words_of(expansion) for lexeme in lexemes.get(word, ()))
        wordings = [Wording(concept_words, concept_lexemes, TYPED)]
        if len(concept_words) == 1:
            wordings += [Wording((compound,), frozenset({lexeme}), COMPOUND)
                         for compound, lexeme in compounds.get(concept_words[0], ())]
        query.concepts.append(Concept(concept_words, wordings, focus, qualifier, explains=explains,
                                      negated=set(concept_words) <= negated))
    return query


def _stop_word_concept(words: tuple[str, ...], expansions: Sequence[str],
                       lexemes: dict[str, tuple[str, ...]]) -> Concept | None:
    """A concept of words with no lexemes of their own, worded by their synonyms: a qualifier, about any system."""
    wordings = []
    for expansion in expansions:
        expansion_words = tuple(words_of(expansion))
        expansion_lexemes = frozenset(lexeme for word in expansion_words for lexeme in lexemes.get(word, ()))
        if expansion_lexemes:
            wordings.append(Wording(expansion_words, expansion_lexemes, SYNONYM))
    if not wordings:
        return None
    return Concept(words, wordings, frozenset(SYSTEMS), qualifier=True)
