"""The abbreviations of HCPCS short descriptions, read off the release itself.

Each code has a short description (28 characters, the claim's) beside its long one: "Inj gadoterate meglumi 0.1ml"
beside "Injection, gadoterate meglumine, 0.1 ml" (A9575). A word of the short description that the long one does not
hold is aligned with the one word of the long description its letters spell in order, from the same first letter
("inj": injection; "w/c": wheelchair; "ots": off-the-shelf, hyphens aside). Over a release an abbreviation means the
word it is aligned with most often, when that word takes more than half of its alignments, at least
`abbreviation_min_support` of them and more than the long descriptions that use the abbreviation as a word ("seat"
is no abbreviation of seating): in January 2025 "inj" is aligned with injection 639 times of 659 (injectable
among the others), and "ext" with external, extremity and extension, so it means none of them. The code finder
searches a typed abbreviation's word beside it (medrag_code_concepts), so a short description pasted from a claim
finds its code.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, text

# What a description word is stripped of before it is compared: the punctuation around it.
_PUNCTUATION = ".,;:()[]\"'"
_LETTER = re.compile(r"[a-z]")


@dataclass(frozen=True)
class Abbreviation:
    """An abbreviation of a release's short descriptions, the word it stands for and how often it was seen so."""

    abbreviation: str
    word: str
    support: int  # alignments with this word
    aligned: int  # alignments with any word


def description_words(description: str) -> list[str]:
    """A description's words, lower-cased, the punctuation around each stripped ("w/c" stays one word)."""
    return [word for word in (raw.strip(_PUNCTUATION) for raw in description.lower().split()) if word]


def spells(abbreviation: str, word: str) -> bool:
    """Whether the abbreviation's letters occur in the word in order, from its first letter (a slash in the
    abbreviation and hyphens in the word aside), and the abbreviation is the shorter."""
    letters, whole = abbreviation.replace("/", ""), word.replace("-", "")
    if not letters or len(letters) >= len(whole) or letters[0] != whole[0]:
        return False
    remaining = iter(whole)
    return all(letter in remaining for letter in letters)


def mine_abbreviations(descriptions: Iterable[tuple[str, str]], min_support: int) -> list[Abbreviation]:
    """The abbreviations (short, long) description pairs teach, sorted: each short word of two or more characters its
    long description lacks, aligned with the one word of that description it spells, means its most frequent word
    when that word holds most of its alignments, and more than the long descriptions that use the short word."""
    pairs = [(description_words(short), list(dict.fromkeys(description_words(long)))) for short, long in descriptions]
    # how many long descriptions use each word: one they use more often than it stands for a word is a word itself
    # ("seat" is not short for seating), one a few write abbreviated ("inj") still is an abbreviation
    used = Counter(word for _, long_words in pairs for word in long_words)
    alignments: dict[str, Counter[str]] = defaultdict(Counter)
    for short_words, long_words in pairs:
        for word in dict.fromkeys(short_words):
            if word in long_words or len(word) < 2 or not _LETTER.search(word):
                continue
            spelt = [candidate for candidate in long_words if spells(word, candidate)]
            if len(spelt) == 1:
                alignments[word][spelt[0]] += 1
    mined = []
    for abbreviation, words in sorted(alignments.items()):
        word, support = words.most_common(1)[0]
        aligned = sum(words.values())
        if support * 2 > aligned and support >= min_support and support > used[abbreviation]:
            mined.append(Abbreviation(abbreviation, word, support, aligned))
    return mined


_RELEASE_DESCRIPTIONS = text("SELECT short_description, long_description FROM hcpcs_code "
                             "WHERE release_id = :r AND short_description IS NOT NULL "
                             "AND long_description IS NOT NULL ORDER BY code")
_INSERT = text("INSERT INTO hcpcs_abbreviation (release_id, abbreviation, word, support, aligned) "
               "VALUES (:release_id, :abbreviation, :word, :support, :aligned)")


def write_abbreviations(conn: Connection, release_id: int, min_support: int) -> int:
    """Mine a loaded HCPCS release's abbreviations from its hcpcs_code rows into hcpcs_abbreviation; how many."""
    mined = mine_abbreviations(conn.execute(_RELEASE_DESCRIPTIONS, {"r": release_id}).tuples(), min_support)
    conn.execute(text("DELETE FROM hcpcs_abbreviation WHERE release_id = :r"), {"r": release_id})
    if mined:
        conn.execute(_INSERT, [{"release_id": release_id, **vars(item)} for item in mined])
    return len(mined)
