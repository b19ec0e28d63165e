"""The embedded backend: an answer made of the sources' own best units, each citing its document.

Deterministic and quoting only: every unit (a sentence, a list with its lead-in, one item with its lead-in) is copied
verbatim from the document it cites, so it cannot claim what the sources do not say. The units come scored
(medrag.answer.scoring); the answer is a direct first sentence, then the best others up to ANSWER_WORDS, plus the
criteria list an eligibility question asks for, with no two units that say the same thing.
"""

from __future__ import annotations

import re

from sqlalchemy import Engine, text

from medrag.answer.context import WITHHELD, ContextSource
from medrag.answer.scoring import CONDITION_TYPES, ScoredUnit
from medrag.answer.structured import DraftSentence
from medrag.answer.units import ITEM, LIST, SENTENCE
from medrag.answer.validate import STOPWORDS, Validator, content_words, stem

# A readable answer: about this many words, plus the criteria list the question asks for.
ANSWER_WORDS = 150
# A unit is quoted only when the model gives it at least this probability of stating a required fact, and at least
# this share of the best unit's (fitted on answers_dev.jsonl by fact recall; docs/evaluation.md).
MIN_PROBABILITY = 0.1
RELATIVE_PROBABILITY = 0.25
# Two units whose content words overlap this much say the same thing.
SAME_THING = 0.8


def _lines(item: ScoredUnit) -> set[str]:
    """The list items a unit quotes (empty for a sentence): what two list units can share."""
    return {line.removeprefix("- ") for line in item.unit.text.split("\n") if line.startswith("- ")}


def _redundant(item: ScoredUnit, chosen: list[ScoredUnit]) -> bool:
    words = set(content_words(item.unit.text))
    for other in chosen:
        if other.source is item.source and _lines(item) and _lines(item) & _lines(other):
            return True
        other_words = set(content_words(other.unit.text))
        if len(words & other_words) / max(1, len(words | other_words)) > SAME_THING:
            return True
    return False


def _merge_items(chosen: list[ScoredUnit]) -> list[tuple[ContextSource, int, str]]:
    """(source, position, text) to quote: items of one list chosen apart are quoted together under their lead-in."""
    quoted: list[tuple[ContextSource, int, str]] = []
    lists: dict[tuple[int, str], int] = {}
    for item in chosen:
        unit = item.unit
        if unit.kind == ITEM and "\n- " in unit.text:
            lead, line = unit.text.split("\n- ", 1)
            key = (item.source.n, lead)
            if key in lists:
                source, position, joined = quoted[lists[key]]
                quoted[lists[key]] = (source, position, f"{joined}\n- {line}")
                continue
            lists[key] = len(quoted)
        quoted.append((item.source, unit.position, unit.text))
    return quoted


def extractive_answer(pool: list[ScoredUnit], validator: Validator, *, max_sentences: int,
                      question_type: str | None = None) -> list[DraftSentence]:
    """A direct first sentence, then the best other units within ANSWER_WORDS (the criteria list of a question about
    conditions beyond them), each citing its document; the first stays first, the others in document order."""
    if not pool:
        return []
    best = max(item.probability for item in pool)
    floor = max(MIN_PROBABILITY, RELATIVE_PROBABILITY * best)
    ranked = [item for item in sorted(pool, key=lambda item: -item.probability) if item.probability >= floor]
    statements = [item for item in ranked if item.unit.kind == SENTENCE]
    order = ([statements[0]] if statements else []) + ranked
    chosen: list[ScoredUnit] = []
    words, criteria_list = 0, False
    for item in order:
        if len(chosen) >= max_sentences:
            break
        if item in chosen or _redundant(item, chosen):
            continue
        is_list = item.unit.kind in (LIST, ITEM)
        beyond_budget = is_list and question_type in CONDITION_TYPES and not criteria_list
        if not beyond_budget and chosen and words + item.unit.words > ANSWER_WORDS:
            continue
        if not validator.check(DraftSentence(item.unit.text, [item.source.n])).passed:
            continue  # e.g. a source sentence naming a code the tables do not have
        chosen.append(item)
        if beyond_budget:
            criteria_list = True
        else:
            words += item.unit.words
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
_RAW_WORD = re.compile(r"[a-z][a-z0-9]+(?:[-'][a-z0-9]+)*|(?<![\w.])[0-9]{5}(?![\w.])")


def unknown_words(engine: Engine, question: str, sources: list[ContextSource]) -> list[str]:
    """Words of the question that no source given contains and no chunk of the whole corpus contains either.

    Such a word names something the corpus knows nothing about (a drug brand, a plan, a typo): quoting sentences
    that merely share the question's other words would answer a different question, so the extractive backend
    refuses instead.
    """
    # What retrieval found, not the whole documents read beyond it: a word that only a far corner of a long
    # determination holds does not make the question one the sources answer.
    seen = set().union(*(content_words(f"{source.header()}\n{source.retrieved or source.body}")
                         for source in sources)) if sources else set()
    missing = sorted({word for word in _RAW_WORD.findall(question.lower())
                      if word not in STOPWORDS and len(word) > 2 and stem(word) not in seen})
    if not missing:
        return []
    with engine.connect() as conn:
        known = set(conn.execute(_IN_CORPUS, {"words": missing}).scalars())
    return [word for word in missing if word not in known]
