"""What enriches terse code text, for every source: abbreviations spelled out, and lines fitted to the model's budget.

A code's own description ("Cont airway pressure device") rarely shares words with a question ("does Medicare
pay for a CPAP machine?"). The code sets' document builders (medrag.sources.hcpcs.documents,
medrag.sources.icd10cm.documents) therefore add what a coder knows around a code, using what is here: the
abbreviations in a description spelled out (``data/code_synonyms.csv``), and `fit_lines`, which drops the least
useful optional parts (LCD lists and excludes notes first) when a code has more than the embedding model takes.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

from medrag.core.errors import MedragError
from medrag.index.chunking import TokenCounter, default_token_counter

CODE_SYNONYMS_FILE = "code_synonyms.csv"


class EnrichmentDataError(MedragError):
    """A packaged enrichment table (code synonyms, HCPCS categories) is malformed."""


def data_text(name: str) -> str:
    """A data file packaged with medrag (medrag/data/), as text."""
    return resources.files("medrag").joinpath("data", name).read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------------- synonyms


@dataclass(frozen=True)
class _Synonym:
    abbreviation: str
    expansion: str
    exact_case: bool


@dataclass(frozen=True)
class _SynonymTable:
    synonyms: tuple[_Synonym, ...]
    # One alternation per matching mode, so that a description is scanned twice rather than once per entry.
    any_case: re.Pattern[str] | None
    exact_case: re.Pattern[str] | None


def _alternation(abbreviations: list[str], flags: int) -> re.Pattern[str] | None:
    if not abbreviations:
        return None
    longest_first = sorted(set(abbreviations), key=len, reverse=True)
    return re.compile(rf"(?<![\w-])(?:{'|'.join(map(re.escape, longest_first))})(?![\w-])", flags)


@cache
def _synonym_table() -> _SynonymTable:
    synonyms = []
    for line, row in enumerate(csv.DictReader(data_text(CODE_SYNONYMS_FILE).splitlines()), start=2):
        abbreviation, expansion, match = row["abbreviation"].strip(), row["expansion"].strip(), row["match"]
        if not abbreviation or not expansion or match not in ("exact", "any_case"):
            raise EnrichmentDataError(f"{CODE_SYNONYMS_FILE} line {line}: need abbreviation, expansion, exact|any_case")
        # "exact" marks abbreviations that are also ordinary lower-case words (AIDS/aids, RAD/rad).
        synonyms.append(_Synonym(abbreviation, expansion, match == "exact"))
    return _SynonymTable(
        tuple(synonyms),
        _alternation([item.abbreviation for item in synonyms if not item.exact_case], re.IGNORECASE),
        _alternation([item.abbreviation for item in synonyms if item.exact_case], 0),
    )


def load_synonyms(*, exact_case: bool = True) -> dict[str, list[str]]:
    """Abbreviation -> its expansions, from the packaged code_synonyms.csv (exact_case=False: without the
    abbreviations that are also ordinary words, AIDS / aids, for matching text that has been lower-cased)."""
    synonyms: dict[str, list[str]] = {}
    for synonym in _synonym_table().synonyms:
        if synonym.exact_case and not exact_case:
            continue
        synonyms.setdefault(synonym.abbreviation, []).append(synonym.expansion)
    return synonyms


def expand_abbreviations(text: str) -> list[tuple[str, str]]:
    """(abbreviation, expansion) for each known abbreviation in text whose expansion the text lacks."""
    table = _synonym_table()
    found: set[str] = set()
    if table.any_case is not None:
        found.update(match.group(0).lower() for match in table.any_case.finditer(text))
    exact: set[str] = set()
    if table.exact_case is not None:
        exact.update(match.group(0) for match in table.exact_case.finditer(text))
    lowered = text.lower()
    return [
        (synonym.abbreviation, synonym.expansion)
        for synonym in table.synonyms
        if (synonym.abbreviation in exact if synonym.exact_case else synonym.abbreviation.lower() in found)
        and synonym.expansion.lower() not in lowered
    ]


# --------------------------------------------------------------------------------------------- fitting


@dataclass
class Part:
    """One optional line of a code document: "label: item; item; ...", trimmed item by item."""

    label: str
    items: list[str]
    priority: int  # lower is dropped first
    joiner: str = "; "
    count_dropped: bool = False
    dropped: int = 0

    def render(self) -> str | None:
        """The line as shown, or None when every item was dropped."""
        if not self.items:
            return None
        # An item such as "underlying disease, such as:" introduces the ones after it.
        joined = "".join(
            item + ("" if index == len(self.items) - 1 else " " if item.endswith(":") else self.joiner)
            for index, item in enumerate(self.items)
        )
        more = f" (and {self.dropped} more)" if self.count_dropped and self.dropped else ""
        return f"{self.label}: {joined}{more}"


def fit_lines(lines: Sequence[str | Part], counter: TokenCounter, max_tokens: int) -> str:
    """Render the lines, dropping optional items (lowest priority, last item first) until the text fits."""

    def render() -> str:
        rendered = (line if isinstance(line, str) else line.render() for line in lines)
        return "\n".join(line for line in rendered if line)

    text = render()
    parts = [line for line in lines if isinstance(line, Part) and line.items]
    while counter.count(text) > max_tokens:
        trimmable = [part for part in parts if part.items]
        if not trimmable:
            # Even the required lines are too long (never seen in real code sets): keep their start.
            return counter.truncate(text, max_tokens)
        part = min(trimmable, key=lambda candidate: candidate.priority)
        part.items.pop()
        part.dropped += 1
        text = render()
    return text


def token_budget(counter: TokenCounter | None, max_tokens: int | None) -> tuple[TokenCounter, int]:
    """The counter to use (the model's by default) and the tokens a document may take."""
    counter = counter or default_token_counter()
    return counter, counter.budget() if max_tokens is None else max_tokens


def non_empty(values: Sequence[str] | None) -> list[str]:
    """The values that hold text."""
    return [value for value in (values or []) if value and value.strip()]


