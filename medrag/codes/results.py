"""What a code search returns: the codes with confidence and tier, related documents, a summary and a trace."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from medrag.codes.classify import HCPCS, ICD10CM
from medrag.codes.clinical_tables import ExternalCode
from medrag.codes.consolidate import GUESS

NO_CODES = "No matching codes found"


@dataclass(frozen=True)
class Related:
    """A document tied to a code: the LCDs listing a HCPCS code (with contractors), an ICD-10-CM code's parent."""

    source: str
    key: str
    title: str
    contractors: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """{"source", "key", "title"}, plus "contractors" for an LCD."""
        item: dict[str, Any] = {"source": self.source, "key": self.key, "title": self.title}
        if self.source == "lcd":
            item["contractors"] = list(self.contractors)
        return item


@dataclass(frozen=True)
class CodeMatch:
    """One code found for a term."""

    system: str
    code: str
    display: str
    confidence: float
    tier: str
    billable: bool | None
    related: tuple[Related, ...] = ()
    scored: str = ""  # the code as scored, before the 7th character it is reported with (T39.1X1 for T39.1X1A)

    def as_json(self) -> dict[str, Any]:
        """The result object of `medrag codes --json`."""
        return {"system": self.system, "code": self.code, "display": self.display, "confidence": self.confidence,
                "tier": self.tier, "billable": self.billable, "related": [item.as_json() for item in self.related]}


@dataclass(frozen=True)
class ScoredCode:
    """A candidate as the finder scored it (listed or not): what `medrag eval fit-confidence` fits on."""

    system: str
    code: str
    exact: bool
    score: float
    behind: float  # how far the score is below its system's best
    confidence: float
    tier: str | None
    features: dict[str, Any] = field(default_factory=dict)  # lexical, coverage, rank, specificity, semantic, prior


@dataclass
class CodeSearch:
    """A term, the codes found (sorted by confidence), a plain-English summary and the reasoning trace."""

    query: str
    systems: list[str]
    results: list[CodeMatch] = field(default_factory=list)
    summary: str = ""
    trace: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    external: list[ExternalCode] | None = None  # NLM Clinical Tables answers, only when asked for
    # every scored candidate, for fitting the confidence model (only when find is asked for them); never printed
    candidates: list[ScoredCode] = field(default_factory=list, repr=False, compare=False)
    encounter: str | None = None  # the encounter the term names (classify.INITIAL ...), which picks 7th characters
    cached: bool = False  # answered from medrag_code_cache: the same call on the same data was answered before

    def as_json(self) -> dict[str, Any]:
        """The `medrag codes --json` object (with "external" only when external tables were asked)."""
        out = {"query": self.query, "results": [result.as_json() for result in self.results],
               "summary": self.summary, "trace": list(self.trace), "cached": self.cached}
        if self.external is not None:
            out["external"] = [code.as_json() for code in self.external]
        return out


def _describe(match: CodeMatch) -> str:
    details = [f"{match.tier} confidence {match.confidence:.2f}"]
    if match.system == ICD10CM and match.billable is not None:
        details.append("billable" if match.billable else "not billable: report a code below it")
    lcds = [item.key for item in match.related if item.source == "lcd"]
    if lcds:
        details.append(f"listed in {len(lcds)} LCD{'s' if len(lcds) > 1 else ''} ({', '.join(lcds[:3])}"
                       f"{', ...' if len(lcds) > 3 else ''})")
    return f"{match.code} {match.display} ({'; '.join(details)})"


def summarize(query: str, systems: list[str], results: list[CodeMatch]) -> str:
    """One paragraph: how many codes per system and the best of each, or that nothing matched."""
    if not results:
        return f'{NO_CODES} for "{query}" in {" or ".join(systems)}.'
    if all(result.tier == GUESS for result in results):
        best = results[0]
        return (f'No code holds enough of "{query}" to be more than a guess: {len(results)} guesses (confidence 0), '
                f"those holding the most of the term first. Best guess: {best.system} {best.code} {best.display}.")
    counts = []
    for system in (ICD10CM, HCPCS):
        count = sum(1 for result in results if result.system == system)
        if count:
            counts.append(f"{count} {system} code{'s' if count > 1 else ''}")
    sentences = [f'{" and ".join(counts)} for "{query}".']
    for system in (ICD10CM, HCPCS):
        best = next((result for result in results if result.system == system), None)
        if best is not None:
            sentences.append(f"Best {system} match: {_describe(best)}.")
    return " ".join(sentences)
