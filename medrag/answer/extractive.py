"""The embedded backend: an answer made of the sources' own best units, each citing its document.

Deterministic and quoting only: every unit (a sentence, a list with its lead-in, one item with its lead-in) is copied
verbatim from the document it cites, so it cannot claim what the sources do not say. The units come scored
(medrag.answer.scoring); the answer is a direct first sentence, then the best others up to answer_words, plus the
criteria list an eligibility question asks for, with no two units that say the same thing.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlalchemy import Engine, text

from medrag.answer.context import WITHHELD, ContextSource
from medrag.answer.scoring import CODE_QUESTION, CONDITION_TYPES, ScoredUnit, states_coverage
from medrag.answer.structured import DraftSentence
from medrag.answer.units import ITEM, LIST, LISTING, SENTENCE
from medrag.answer.validate import STOPWORDS, Validator, content_words, stem
from medrag.core import tuning
from medrag.core.words import CONTENT_WORD

# Its numbers are the registry's (medrag/core/tuning.py): answer_words, asked_list_words, the refusal gate
# answerable_probability, the quoting floors min_probability and relative_probability, and same_thing.


def _lines(item: ScoredUnit) -> set[str]:
    """The list items a unit quotes, nested ones included (empty for a sentence): what two list units can share."""
    return {line.strip().removeprefix("- ") for line in item.unit.text.split("\n") if line.lstrip().startswith("- ")}


def _split_lead(text: str) -> tuple[str, str]:
    """(lead-in, the list lines after it) of a quoted list or item; ("", text) for text without one."""
    lead, _, lines = text.partition("\n- ")
    return (lead, lines) if lines else ("", text)


def _lead(item: ScoredUnit) -> str:
    """The lead-in an item is quoted under ("" for a sentence or a whole list)."""
    return _split_lead(item.unit.text)[0] if item.unit.kind == ITEM else ""


def _asked_list(item: ScoredUnit, question_type: str | None) -> tuple[int, str] | None:
    """(source, what) when the unit is part of what the question asks to be listed, else None: for a question about
    conditions, a list or list item of a document (its criteria: "Group I" and "Group II" are two lists, covered and
    non-covered indications two more); for a question about codes, a line of a listing section (an LCD's codes, its
    contractors)."""
    if question_type in CONDITION_TYPES and item.unit.kind in (LIST, ITEM):
        return item.source.n, "criteria"
    if question_type == CODE_QUESTION and _in_listing(item):
        return item.source.n, item.unit.section
    return None


def _in_listing(item: ScoredUnit) -> bool:
    """A line of a document's listing section (an LCD's codes or contractors); a code document's own lines (its
    description, its category) are facts about one code, not a list."""
    return item.unit.place == LISTING and bool(item.unit.section)


def _redundant(item: ScoredUnit, chosen: list[ScoredUnit]) -> bool:
    words = set(content_words(item.unit.text))
    for other in chosen:
        if other.source is item.source and _lines(item) and _lines(item) & _lines(other):
            return True
        if item.unit.text in other.unit.text or other.unit.text in item.unit.text:
            return True  # a sentence an item already quotes
        other_words = set(content_words(other.unit.text))
        if len(words & other_words) / max(1, len(words | other_words)) > tuning.value("same_thing"):
            return True
    return False


def _whole_lists(pool: list[ScoredUnit]) -> dict[tuple[int, str], ScoredUnit]:
    """(source, lead-in) -> the whole list quoted under that lead-in, where the list is short enough to be a unit."""
    lists: dict[tuple[int, str], ScoredUnit] = {}
    for item in pool:
        if item.unit.kind == LIST and "\n- " in item.unit.text:
            lists.setdefault((item.source.n, _split_lead(item.unit.text)[0]), item)
    return lists


def _quoted_with(item: ScoredUnit) -> tuple[tuple[int, str, str], str, str] | None:
    """(group, lead-in, line) for a unit quoted together with others chosen apart: an item under its list's lead-in,
    a line of a listing section with the section's other lines; None for a unit quoted on its own."""
    lead = _lead(item)
    if lead:
        return (item.source.n, "list", lead), lead, "- " + _split_lead(item.unit.text)[1]
    if _in_listing(item):
        return (item.source.n, LISTING, item.unit.section), "", item.unit.text
    return None


def _quotes(chosen: list[ScoredUnit]) -> int:
    """How many quotes the chosen units make once grouped (what max_sentences counts)."""
    groups = [_quoted_with(item) for item in chosen]
    return len({group[0] for group in groups if group}) + sum(1 for group in groups if group is None)


def _merge_items(chosen: list[ScoredUnit]) -> list[tuple[ContextSource, int, str]]:
    """(source, position, text) to quote: items of one list chosen apart are quoted together under their lead-in, and
    the lines of one listing together, in the order the document gives them."""
    quoted: list[tuple[ContextSource, int, str]] = []
    groups: dict[tuple[int, str, str], tuple[int, str, list[tuple[int, str]]]] = {}  # -> (index, lead-in, lines)
    for item in chosen:
        unit, grouped = item.unit, _quoted_with(item)
        if grouped is not None:
            key, lead, line = grouped
            if key in groups:
                groups[key][2].append((unit.position, line))
                continue
            groups[key] = (len(quoted), lead, [(unit.position, line)])
        quoted.append((item.source, unit.position, unit.text))
    for index, lead, lines in groups.values():
        if len(lines) > 1:
            source, position, _ = quoted[index]
            quoted[index] = (source, position, "\n".join([lead] * bool(lead) + [line for _, line in sorted(lines)]))
    return quoted


def extractive_answer(pool: list[ScoredUnit], validator: Validator, *, max_sentences: int,
                      question_type: str | None = None) -> list[DraftSentence]:
    """A direct first sentence, then the best other units within answer_words (the criteria list of a question about
    conditions beyond them), each citing its document; the first stays first, the others in document order."""
    if not pool:
        return []
    best = max(item.probability for item in pool)
    if best < tuning.value("answerable_probability"):
        return []
    floor = max(tuning.value("min_probability"), tuning.value("relative_probability") * best)
    ranked = [item for item in sorted(pool, key=lambda item: -item.probability) if item.probability >= floor]
    # the direct first sentence comes from the document the best unit stands in; to "is X covered?", it is that
    # document's coverage statement where it has one
    statements = [item for item in ranked if item.unit.kind == SENTENCE]
    statements = [item for item in statements if item.source is ranked[0].source] or statements
    # a definition or a history is never the direct answer: without another sentence, the best unit comes first
    statements = [item for item in statements if item.unit.place != "background"]
    if question_type == "coverage":
        statements = [item for item in statements if states_coverage(item.unit.text)] or statements
    # of those, the one that holds most of the question's words: a direct answer echoes what was asked
    statements.sort(key=lambda item: (-item.features["coverage"], -item.probability))
    order = ([statements[0]] if statements else []) + ranked
    # one criterion of a short list is quoted with its siblings: "all of the following" read in part misleads
    whole_lists = _whole_lists(pool)
    chosen: list[ScoredUnit] = []
    words = asked_words = 0
    asked_list: tuple[int, str] | None = None  # what is asked to be listed (_asked_list), beyond the budget
    leads: set[tuple[int, str]] = set()  # a lead-in shared by items quoted together is read, and counted, once
    for item in order:
        whole = whole_lists.get((item.source.n, _lead(item))) if item.unit.kind == ITEM else None
        if whole is not None and _lines(item) <= _lines(whole):
            item = whole
        if item in chosen or _redundant(item, chosen) or _quotes([*chosen, item]) > max_sentences:
            continue
        lead = (item.source.n, _lead(item))
        asked = _asked_list(item, question_type)
        # what is asked to be listed is quoted whole: its first unit and every other one of it
        beyond_budget = (asked is not None and asked_list in (None, asked)
                         and asked_words + item.unit.words <= tuning.value("asked_list_words"))
        size = item.unit.words - (len(lead[1].split()) if lead in leads else 0)
        if not beyond_budget and chosen and words + size > tuning.value("answer_words"):
            continue
        if not validator.check(DraftSentence(item.unit.text, [item.source.n])).passed:
            continue  # e.g. a source sentence naming a code the tables do not have
        chosen.append(item)
        leads.add(lead)
        if beyond_budget:
            asked_list = asked
            asked_words += item.unit.words
        else:
            words += size
    first, rest = chosen[:1], sorted(chosen[1:], key=lambda item: (item.source.n, item.unit.position))
    return [DraftSentence(quote, [source.n]) for source, _position, quote in _merge_items(first + rest)]


def prompt_excerpts(pool: list[ScoredUnit], *, words_per_source: int) -> None:
    """Give each source the text the LLM prompt shows: its best units, in document order, up to words_per_source."""
    by_source: dict[int, list[ScoredUnit]] = {}
    for item in pool:  # best first
        by_source.setdefault(item.source.n, []).append(item)
    for items in by_source.values():
        kept, words = [], 0
        for item in items:
            if words + item.unit.words > words_per_source and kept:
                continue
            kept.append(item)
            words += item.unit.words
        kept.sort(key=lambda item: item.unit.position)
        source = items[0].source
        # what was withheld is never a unit; the marker still tells the model that something was
        source.excerpt = "\n".join([item.unit.text for item in kept] + ([WITHHELD] if source.withheld else []))


_IN_CORPUS = text("""
    SELECT word FROM unnest(CAST(:words AS text[])) AS word
    WHERE EXISTS (SELECT 1 FROM chunk WHERE tsv @@ plainto_tsquery('english', word))
""")
# words, and five-digit CPT codes (99213): a CPT code the corpus never mentions is as unknown as a brand name
# English contractions are their first word: "hasn't" is "has", "patient's" "patient", "won't" "will".
_CONTRACTION = re.compile(r"(?:n't|'(?:s|re|ve|ll|d|m))$")
_IRREGULAR_CONTRACTIONS = {"won't": "will", "can't": "can", "shan't": "shall"}


def _uncontracted(word: str) -> str:
    return _IRREGULAR_CONTRACTIONS.get(word) or _CONTRACTION.sub("", word)


# A name the question gives as an example of what it asks about ("a pressure sensor such as CardioMEMS", "a clip
# repair (like MitraClip)"): the question is answered by what it is an example of.
_EXAMPLE = re.compile(r"\b(?:such\s+as|like|e\.g\.|for\s+example|for\s+instance)\s+([a-z][a-z0-9-]*)", re.IGNORECASE)


def _examples(question: str) -> set[str]:
    return {word.lower() for word in _EXAMPLE.findall(question)}


def unknown_words(engine: Engine, question: str, sources: list[ContextSource],
                  knows_word: Callable[[str], bool] | None = None) -> list[str]:
    """Words of the question that no source given contains and no chunk of the whole corpus contains either.

    Such a word names something the corpus knows nothing about (a drug brand, a plan, a typo): quoting sentences
    that merely share the question's other words would answer a different question, so the extractive backend
    refuses instead. knows_word (the embedding model's vocabulary) spares the plain words of a long question
    ("happen") that CMS's texts never use: a model with a token of its own for a word knows it as common English.
    """
    # What retrieval found, not the whole documents read beyond it: a word that only a far corner of a long
    # determination holds does not make the question one the sources answer.
    seen = set().union(*(content_words(f"{source.header()}\n{source.retrieved or source.body}")
                         for source in sources)) if sources else set()
    # a hyphenated compound ("treatment-resistant", "out-of-office") is known when each of its words is
    missing: dict[str, list[str]] = {}
    examples = _examples(question)
    for word in sorted({_uncontracted(word) for word in CONTENT_WORD.findall(question.lower())} - examples):
        if word in STOPWORDS or len(word) <= 2 or stem(word) in seen:
            continue
        parts = [part for part in word.split("-") if part not in STOPWORDS and len(part) > 2] or [word]
        unseen = [part for part in parts if stem(part) not in seen and not (knows_word and knows_word(part))]
        if unseen:
            missing[word] = unseen
    if not missing:
        return []
    with engine.connect() as conn:
        known = set(conn.execute(_IN_CORPUS, {"words": sorted({part for parts in missing.values() for part in parts})
                                              }).scalars())
    return [word for word, parts in missing.items() if not set(parts) <= known]
