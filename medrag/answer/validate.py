"""Validation gates every answer sentence passes before it is shown, whichever backend wrote it.

1. it cites at least one source;  2. every number it cites is a source that was given;
3. every code-like token (HCPCS, ICD-10-CM, NCD section, LCD / Article id) exists in the code tables and appears
in a source it cites;  4. its content words are found in the text of the sources it cites, and each cited source
holds a fair share of them (a citation must support the sentence; titles and header lines do not count).
A sentence failing any gate is dropped; the reasons are kept for the audit log.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, text

from medrag.answer.context import ContextSource
from medrag.answer.structured import DraftSentence
from medrag.core import identifiers
from medrag.core.identifiers import AFTER, AFTER_CATEGORY, BEFORE, CODE_BEFORE
from medrag.core.identifiers import dotted_icd10cm as _icd_key
from medrag.core.words import CODE_WORD

NO_CITATION = "no_citation"
UNKNOWN_SOURCE = "unknown_source"
UNKNOWN_CODE = "unknown_code"
CODE_NOT_IN_SOURCES = "code_not_in_cited_sources"
UNSUPPORTED = "unsupported"
UNSUPPORTED_CITATION = "unsupported_citation"
EMPTY = "empty_sentence"

_NCD = re.compile(identifiers.NCD, re.IGNORECASE)
_LCD = re.compile(rf"{BEFORE}{identifiers.LCD}{AFTER}")
_ARTICLE = re.compile(rf"{BEFORE}({identifiers.ARTICLE}){AFTER}")
_ICD_DOTTED = re.compile(rf"{CODE_BEFORE}({identifiers.ICD10CM_DOTTED}){AFTER}")
_FIVE_CHAR = re.compile(rf"{CODE_BEFORE}({identifiers.HCPCS_OR_UNDOTTED_ICD10CM}){AFTER}")
_ICD_UNDOTTED = re.compile(rf"{CODE_BEFORE}({identifiers.ICD10CM_UNDOTTED}){AFTER}")
_ICD_CATEGORY = re.compile(rf"{CODE_BEFORE}({identifiers.ICD10CM_CATEGORY_IN_TEXT}){AFTER_CATEGORY}")
# "vitamin B12" is not a code (CODE_BEFORE); "ICD-10 code E99" is one (that does not exist), "E99 and" maybe.
_CODE_CUE = re.compile(r"(?:ICD|code|codes|category|diagnosis|dx)\W{0,3}(?:\w+\W{1,3}){0,2}$", re.IGNORECASE)

STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between
both but by can cannot could did do does doing down during each either few for from further had has have having
he her here hers him his how i if in into is it its itself just may me might more most must my no nor not of off
on once only or other our out over own per same shall she should so some such than that the their them then there
these they this those through to too under until up upon very was we were what when where which while who whom why
will with would you your yours medicare cms covered cover covers coverage under pay pays paid
""".split())


@dataclass(frozen=True)
class CodeToken:
    """A code-like token of an answer: its kind, as written, and the key it is looked up by."""

    kind: str  # hcpcs_or_icd, icd10cm, icd10cm_category, ncd, lcd, article
    written: str
    key: str
    cued: bool = True


def content_words(value: str) -> list[str]:
    """Lower-cased words that carry meaning (stopwords and one-letter words dropped), lightly stemmed."""
    words = []
    for word in CODE_WORD.findall(value.lower()):
        if word in STOPWORDS or len(word) < 2:
            continue
        words.append(stem(word))
    return words


def stem(word: str) -> str:
    """A crude suffix strip so that 'supplies'/'supply' and 'beneficiaries'/'beneficiary' meet."""
    for suffix, replacement in (("ies", "y"), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)] + replacement
    return word


def find_code_tokens(sentence: str) -> list[CodeToken]:
    """Every code-like token in a sentence, each once."""
    tokens: dict[tuple[str, str], CodeToken] = {}

    def add(token: CodeToken) -> None:
        tokens.setdefault((token.kind, token.key), token)

    taken: list[tuple[int, int]] = []
    for match in _NCD.finditer(sentence):
        add(CodeToken("ncd", match.group(0), match.group(1)))
        taken.append(match.span())
    for match in _LCD.finditer(sentence):
        add(CodeToken("lcd", match.group(0), "L" + match.group(1)))
        taken.append(match.span())
    for match in _ARTICLE.finditer(sentence):
        add(CodeToken("article", match.group(1), match.group(1)))
        taken.append(match.span())

    def free(span: tuple[int, int]) -> bool:
        return all(span[1] <= start or span[0] >= end for start, end in taken)

    for match in _ICD_DOTTED.finditer(sentence):
        if free(match.span()):
            add(CodeToken("icd10cm", match.group(1), _icd_key(match.group(1))))
            taken.append(match.span())
    for match in _FIVE_CHAR.finditer(sentence):
        if free(match.span()):
            add(CodeToken("hcpcs_or_icd", match.group(1), match.group(1)))
            taken.append(match.span())
    # Shorter and undotted forms collide with ordinary words ("vitamin B12", "P100"): they are codes when they
    # exist, or when the words before them say a code follows.
    for match in _ICD_UNDOTTED.finditer(sentence):
        if free(match.span()):
            cued = bool(_CODE_CUE.search(sentence[: match.start()]))
            add(CodeToken("icd10cm", match.group(1), _icd_key(match.group(1)), cued))
            taken.append(match.span())
    for match in _ICD_CATEGORY.finditer(sentence):
        if free(match.span()):
            cued = bool(_CODE_CUE.search(sentence[: match.start()]))
            add(CodeToken("icd10cm_category", match.group(1), match.group(1), cued))
    return list(tokens.values())


_EXISTING_SQL = text("""
    SELECT 'hcpcs' AS kind, code AS key FROM hcpcs_code WHERE code = ANY(:hcpcs)
    UNION SELECT 'icd10cm', code FROM icd10cm_code WHERE code = ANY(:icd)
    UNION SELECT 'ncd', section FROM ncd WHERE section = ANY(:ncd)
    UNION SELECT source, key FROM document WHERE source IN ('lcd', 'article') AND key = ANY(:documents)
""")


class CodeTables:
    """Answers "does this code exist?" from the code tables, with a per-answer cache."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._known: dict[tuple[str, str], bool] = {}

    def _lookup(self, tokens: Iterable[CodeToken]) -> None:
        wanted = {"hcpcs": set(), "icd": set(), "ncd": set(), "documents": set()}
        for token in tokens:
            if token.kind == "hcpcs_or_icd":
                wanted["hcpcs"].add(token.key)
                wanted["icd"].add(_icd_key(token.key))
            elif token.kind in ("icd10cm", "icd10cm_category"):
                wanted["icd"].add(token.key)
            elif token.kind == "ncd":
                wanted["ncd"].add(token.key)
            else:
                wanted["documents"].add(token.key)
        pending = {kind: sorted(keys - {key for (k, key) in self._known if k == kind}) for kind, keys in
                   wanted.items()}
        if not any(pending.values()):
            return
        with self.engine.connect() as conn:
            found = {(row.kind, row.key) for row in conn.execute(_EXISTING_SQL, pending)}
        for kind, keys in pending.items():
            table_kind = {"hcpcs": "hcpcs", "icd": "icd10cm", "ncd": "ncd"}.get(kind)
            for key in keys:
                if table_kind:
                    self._known[(kind, key)] = (table_kind, key) in found
                else:
                    self._known[(kind, key)] = ("lcd", key) in found or ("article", key) in found

    def exists(self, token: CodeToken) -> bool:
        """Whether the token names a code, NCD, LCD or Article that is in the tables."""
        self._lookup([token])
        if token.kind == "hcpcs_or_icd":
            return self._known[("hcpcs", token.key)] or self._known[("icd", _icd_key(token.key))]
        kind = {"icd10cm": "icd", "icd10cm_category": "icd", "ncd": "ncd"}.get(token.kind, "documents")
        return self._known[(kind, token.key)]

    def prefetch(self, sentences: Iterable[DraftSentence]) -> None:
        """Look up every code of these sentences in one round trip."""
        self._lookup(token for sentence in sentences for token in find_code_tokens(sentence.text))


def appears_in(token: CodeToken, source_text: str) -> bool:
    """Whether the code is written in the source text (ICD-10-CM with or without its dot)."""
    haystack = source_text.upper()
    if token.kind == "ncd":
        # "240.2" is not "240.21" nor "1240.2"
        return re.search(rf"(?<![0-9.]){re.escape(token.key)}(?![0-9]|\.[0-9])", haystack) is not None
    if token.kind == "lcd":
        forms = {token.key, token.key[1:]}
    elif token.kind in ("icd10cm", "icd10cm_category", "hcpcs_or_icd"):
        forms = {token.key, token.key.replace(".", ""), _icd_key(token.key)}
    else:
        forms = {token.key}
    # A category (E11) appears in a source that writes one of its codes (E11.9).
    return any(re.search(rf"(?<![A-Z0-9.]){re.escape(form)}(?![A-Z0-9])", haystack) for form in forms)


@dataclass
class SentenceCheck:
    """One sentence, the sources it cites, and the gates it failed (none: it is shown)."""

    text: str
    sources: list[int]
    reasons: list[str] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)
    invented_codes: list[str] = field(default_factory=list)
    support: float | None = None

    @property
    def passed(self) -> bool:
        """True when every gate passed."""
        return not self.reasons

    def as_log(self) -> dict[str, Any]:
        """The audit form of this check."""
        return {"text": self.text, "sources": self.sources, "passed": self.passed, "reasons": self.reasons,
                "codes": self.codes, "support": None if self.support is None else round(self.support, 3)}


class Validator:
    """The gates for one answer: the sources that were given and the code tables to check codes against."""

    def __init__(self, engine: Engine, sources: list[ContextSource], *, support_min: float) -> None:
        self.sources = {source.n: source for source in sources}
        self.tables = CodeTables(engine)
        self.support_min = support_min
        self.notes: list[str] = []  # remarks on the answer as a whole (a reply cut off at max_tokens)
        # What a source says: its text (and its identifier), not the title, heading, release or authority lines
        # of its header; a sentence repeating those says nothing.
        self._words = {n: set(content_words(f"{source.label}\n{source.body}")) for n, source in self.sources.items()}

    def check(self, sentence: DraftSentence) -> SentenceCheck:
        """Run every gate on one sentence."""
        result = SentenceCheck(sentence.text, list(sentence.sources))
        if not sentence.text.strip():
            result.reasons.append(EMPTY)
            return result
        if not sentence.sources:
            result.reasons.append(NO_CITATION)
        unknown = [n for n in sentence.sources if n not in self.sources]
        if unknown:
            result.reasons.append(f"{UNKNOWN_SOURCE}:{','.join(map(str, unknown))}")
        cited = [self.sources[n] for n in sentence.sources if n in self.sources]
        cited_text = "\n".join(source.searchable_text() for source in cited)
        for token in find_code_tokens(sentence.text):
            exists = self.tables.exists(token)
            if not exists and not token.cued:
                continue  # an uncued letter-digit-digit word that is no code ("vitamin B12")
            result.codes.append(token.key)
            if not exists:
                result.reasons.append(f"{UNKNOWN_CODE}:{token.written}")
                result.invented_codes.append(token.written)
            elif not appears_in(token, cited_text):
                result.reasons.append(f"{CODE_NOT_IN_SOURCES}:{token.written}")
        words = set(content_words(sentence.text))
        if words and cited:
            known = set().union(*(self._words[source.n] for source in cited))
            result.support = len(words & known) / len(words)
            if result.support < self.support_min:
                result.reasons.append(UNSUPPORTED)
            elif len(cited) > 1:
                # Citing every source is not support: each one must carry part of the sentence.
                idle = [source.n for source in cited
                        if len(words & self._words[source.n]) / len(words) < self.support_min / 2]
                if idle:
                    result.reasons.append(f"{UNSUPPORTED_CITATION}:{','.join(map(str, idle))}")
        return result

    def check_all(self, sentences: list[DraftSentence]) -> list[SentenceCheck]:
        """Run every gate on each sentence (code lookups batched)."""
        self.tables.prefetch(sentences)
        return [self.check(sentence) for sentence in sentences]


def summarize(checks: list[SentenceCheck]) -> dict[str, Any]:
    """The validation outcome for the answer and the audit log: passed, partial, or rejected."""
    passed = sum(check.passed for check in checks)
    if not checks:
        outcome = "empty"
    elif passed == len(checks):
        outcome = "passed"
    elif passed:
        outcome = "partial"
    else:
        outcome = "rejected"
    return {
        "outcome": outcome, "sentences": len(checks), "passed": passed, "dropped": len(checks) - passed,
        "invented_codes": sorted({code for check in checks for code in check.invented_codes}),
        "checks": [check.as_log() for check in checks],
    }
