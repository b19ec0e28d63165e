"""What a source's document builder writes: document drafts of titled sections, and code lines fitted to a budget.

A source turns a loaded release's tables into drafts (medrag.sources.<name>.documents); the index chunks and
embeds them (medrag.index). A code's document stays one chunk: its optional lines (LCD lists, excludes notes) are
trimmed by `fit_lines` until the text fits the tokens the embedding model takes, counted by the model's own
tokenizer, which the index passes in as a `TokenCounting`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Protocol

from sqlalchemy import Connection, text


class TokenCounting(Protocol):
    """What a document builder needs of the embedding model's tokenizer (medrag.index.chunking.TokenCounter)."""

    def count(self, text: str) -> int:
        """Word pieces of text, special tokens excluded."""
        ...

    def budget(self, max_seq_length: int | None = None) -> int:
        """Word pieces a chunk's heading and text may take together."""
        ...

    def truncate(self, text: str, max_tokens: int) -> str:
        """The start of text that fits max_tokens word pieces."""
        ...


@dataclass(frozen=True)
class Section:
    """A titled span of a document: heading path (e.g. "NCD 240.2 > Indications and Limitations") and text."""

    heading: str
    text: str
    section: str | None = None
    page_start: int | None = None
    page_end: int | None = None


@dataclass
class DocumentDraft:
    """A document before it has an id: identity, dates, filter metadata and its titled sections."""

    source: str
    key: str
    title: str
    sections: list[Section]
    version: str = ""
    url: str | None = None
    effective_date: date | None = None
    termination_date: date | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # what a one-chunk document is embedded from when not its heading + text (see chunk.embedding_text)
    embedding_text: str | None = None


def day(value: date | datetime | None) -> date | None:
    """A date column's value as a date (MCD exports give some as timestamps)."""
    return value.date() if isinstance(value, datetime) else value


def rows(conn: Connection, sql: str, **params: Any) -> list[dict[str, Any]]:
    """Every row of a query as a dict: what the source document builders read their tables with."""
    return [dict(row) for row in conn.execute(text(sql), params).mappings()]


def code_budget(counter: TokenCounting, heading: str) -> int:
    """Tokens left for a code document's text once its heading is in: codes stay one chunk each."""
    return counter.budget() - counter.count(heading) - 1


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


def fit_lines(lines: Sequence[str | Part], counter: TokenCounting, max_tokens: int) -> str:
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


def non_empty(values: Sequence[str] | None) -> list[str]:
    """The values that hold text."""
    return [value for value in (values or []) if value and value.strip()]
