"""The Index's word forms: the words one Index title lists as forms of one word ("Pancreas, pancreatic").

A term says "pancreatic cancer" or "testicular cancer"; the Tabular and the Neoplasm Table say "pancreas" and
"testis", and the stemmer keeps the noun and its adjective apart ("pancrea", "pancreat"). The Index itself pairs them:
a main term or subterm whose title is a comma list of single words names one word in its forms ("Testicle,
testicular, testis", "Esophagus, esophageal", "Calculus, calculi, calculous"). Such a list also joins a word with
one that only qualifies it ("Abruption, placenta", "Column, spinal, vertebral"), so two of its words are taken for
forms of one word only when they are spelled alike but for their endings (same_word). The code finder and the search
read the pairs (medrag_word_forms) as another wording of a typed word.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from medrag.sources.icd10cm.index import DRUGS, ParsedIndex

# Two forms of one word begin with at least this many letters alike ("test" is no form of "testament")...
SHARED_MIN_LETTERS = 4
# ...after which the shorter keeps at most this many letters of its own ("pancrea|s", "testic|le", "pharyn|x")...
SHORTER_ENDING_MAX = 2
# ...and the longer at most this many: an adjective's or a plural's ending ("pancrea|tic", "testic|ular",
# "pharyn|geal"), not a second word run into it ("pleur|ocutaneous", "cervic|othoracic", "herpes|virus").
LONGER_ENDING_MAX = 4
# An inflammation is a condition of its organ, not the organ's name in another form ("Pleura > pleuritis",
# "Ovary > ovaritis").
_INFLAMMATION = re.compile(r"(?:itis|isy)$")
_WORD_LIST = re.compile(r"^[a-z'-]+(?:, [a-z'-]+)+$")

WORD_FORM_COLUMNS: list[tuple[str, str]] = [
    ("word", "text"),
    ("form", "text"),
]


def same_word(first: str, second: str) -> bool:
    """Whether two lower-case words are one word in two forms: spelled alike but for short endings, neither an
    inflammation of the other."""
    if first == second or bool(_INFLAMMATION.search(first)) != bool(_INFLAMMATION.search(second)):
        return False
    shared = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        shared += 1
    shorter, longer = sorted((len(first), len(second)))
    return (shared >= SHARED_MIN_LETTERS and shorter - shared <= SHORTER_ENDING_MAX
            and longer - shared <= LONGER_ENDING_MAX)


def title_word_forms(title: str) -> list[tuple[str, str]]:
    """The pairs of one Index title's comma-listed words that are forms of one word, both ways round: a word is a
    form of another through a third ("testicular" and "testis" through "testicle")."""
    text = title.strip().lower()
    if not _WORD_LIST.match(text):
        return []
    groups: list[set[str]] = []
    for word in dict.fromkeys(text.split(", ")):
        joined = [group for group in groups if any(same_word(word, other) for other in group)]
        merged = {word}.union(*joined)
        groups = [group for group in groups if group not in joined] + [merged]
    return [(word, other) for group in groups for word in sorted(group) for other in sorted(group) if word != other]


def word_form_rows(indexes: Iterable[ParsedIndex]) -> list[dict]:
    """Rows of icd10cm_word_form for a release's indexes: each word with each other form its Index titles list.

    Not the Table of Drugs': its lists name chemicals, which endings tell apart ("Sulfur, sulfurous, sulfuryl").
    """
    pairs: set[tuple[str, str]] = set()
    for parsed in indexes:
        if parsed.index_name == DRUGS:
            continue
        for entry in parsed.entries:
            pairs.update(title_word_forms(entry.title))
    return [{"word": word, "form": form} for word, form in sorted(pairs)]
