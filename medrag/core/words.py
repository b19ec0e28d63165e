"""The one tokenizer of medrag's word rules: what a word is, for the code finder, the synonyms and the answers.

A word is a run of letters (accented ones too) and digits, joined by inner hyphens or apostrophes ("x-ray",
"crohn's", "sjögren's"). The finder's SQL
reads the same pattern (rendered into generated.sql by medrag.codes.classify), so PostgreSQL and Python split a term
alike. The answers' variants are built from it here: a word that may hold a code's dot (g47.33), and a question's
content word (a letter first, two characters at least).
"""

from __future__ import annotations

import re

# letters (Latin-1's accented ones too: "sjögren", "ménière") and digits, joined by any of `joiners`
_WORD_TEMPLATE = r"[a-z0-9à-öø-ÿ]+(?:[{joiners}][a-z0-9à-öø-ÿ]+)*"

WORD_PATTERN = _WORD_TEMPLATE.format(joiners="-'")
WORD = re.compile(WORD_PATTERN)
# a word or a code kept whole: g47.33, 240.2, e0601
CODE_WORD = re.compile(_WORD_TEMPLATE.format(joiners="-'."))
# a word that starts with a letter and has two characters at least, or a five-digit number (a CPT-like code)
CONTENT_WORD = re.compile(rf"(?=[a-z][a-z0-9]){WORD_PATTERN}|(?<![\w.])[0-9]{{5}}(?![\w.])")
# a term of words separated by single spaces, as the synonym table writes its query terms
TERM = re.compile(rf"{WORD_PATTERN}(?: {WORD_PATTERN})*")


def words(text: str) -> list[str]:
    """The words of a text, lower-cased, with typographic apostrophes read as plain ones."""
    return WORD.findall(text.lower().replace("\u2019", "'"))
