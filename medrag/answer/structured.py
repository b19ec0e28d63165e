"""The structured answer the LLM must return (sentences, each with its source numbers) and how it is parsed."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from medrag.answer.llm import LlmBadReply

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sentences": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "sources": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["text", "sources"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["sentences"],
    "additionalProperties": False,
}
SCHEMA_NAME = "grounded_answer"
# Bounds a small model cannot ramble past: without them it can fill max_tokens and the reply is cut off mid-JSON.
MAX_SENTENCE_CHARS = 300
MAX_CITATIONS = 6


def answer_schema(max_sentences: int, source_count: int) -> dict[str, Any]:
    """ANSWER_SCHEMA bounded so structured output itself forbids what the gates would drop: at most max_sentences
    sentences of bounded length, each citing 1..MAX_CITATIONS of the source numbers given (1..source_count)."""
    schema = copy.deepcopy(ANSWER_SCHEMA)
    sentences = schema["properties"]["sentences"]
    sentences["maxItems"] = max_sentences
    sentences["items"]["properties"]["text"]["maxLength"] = MAX_SENTENCE_CHARS
    cited = sentences["items"]["properties"]["sources"]
    cited.update(minItems=1, maxItems=MAX_CITATIONS)
    cited["items"] = {"type": "integer", "enum": list(range(1, max(1, source_count) + 1))}
    return schema

# "[1]", "[1, 3]", "[2][4]" written inside a sentence: citations too, moved out of the text.
_INLINE_CITATION = re.compile(r"\s*\[(\d+(?:\s*[,;]\s*\d+)*)\]")


@dataclass
class DraftSentence:
    """One answer sentence before validation: its text and the source numbers it cites."""

    text: str
    sources: list[int] = field(default_factory=list)


def draft_from_item(item: Any) -> DraftSentence:
    """A DraftSentence from one `sentences` item; inline [n] markers in the text join the cited numbers."""
    if not isinstance(item, dict) or not isinstance(item.get("text"), str):
        raise LlmBadReply(f"an answer sentence is not {{'text': ..., 'sources': [...]}}: {str(item)[:200]}")
    raw_sources = item.get("sources", [])
    if not isinstance(raw_sources, list):
        raise LlmBadReply(f"'sources' is not a list: {str(raw_sources)[:100]}")
    numbers: list[int] = []
    for value in raw_sources:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise LlmBadReply(f"a source number is not an integer: {value!r}")
        try:
            numbers.append(int(value))
        except ValueError as error:
            raise LlmBadReply(f"a source number is not an integer: {value!r}") from error
    text = item["text"]
    for match in _INLINE_CITATION.finditer(text):
        numbers += [int(n) for n in re.split(r"\s*[,;]\s*", match.group(1))]
    text = " ".join(_INLINE_CITATION.sub("", text).split())
    return DraftSentence(text, list(dict.fromkeys(numbers)))


def parse_answer(value: Any) -> list[DraftSentence]:
    """The sentences of a parsed structured reply; LlmBadReply when it does not have the schema's shape."""
    if not isinstance(value, dict) or not isinstance(value.get("sentences"), list):
        raise LlmBadReply(f"the LLM reply has no 'sentences' list: {str(value)[:200]}")
    return [draft_from_item(item) for item in value["sentences"]]


class SentenceStream:
    """Turns the streamed text of a structured reply into DraftSentences as soon as each one is complete."""

    def __init__(self) -> None:
        self.buffer = ""
        self._position: int | None = None  # where the next item of the sentences array may start
        self._decoder = json.JSONDecoder()
        self.finished = False

    def feed(self, piece: str) -> list[DraftSentence]:
        """Add streamed text; returns the sentences completed by it."""
        self.buffer += piece
        if self._position is None:
            match = re.search(r'"sentences"\s*:\s*\[', self.buffer)
            if not match:
                return []
            self._position = match.end()
        done = []
        while not self.finished:
            index = self._skip_separators(self._position)
            if index >= len(self.buffer):
                break
            if self.buffer[index] == "]":
                self.finished = True
                break
            try:
                item, end = self._decoder.raw_decode(self.buffer, index)
            except ValueError:
                break  # the item is not complete yet
            done.append(draft_from_item(item))
            self._position = end
        return done

    def _skip_separators(self, index: int) -> int:
        while index < len(self.buffer) and self.buffer[index] in " \t\r\n,":
            index += 1
        return index

    def close(self) -> list[DraftSentence]:
        """Check the whole reply parses to the schema's shape; returns all its sentences."""
        try:
            value = json.loads(self.buffer)
        except ValueError as error:
            raise LlmBadReply(f"the LLM reply is not valid JSON: {self.buffer[:200]!r}") from error
        return parse_answer(value)


def complete_sentences(partial_reply: str) -> list[DraftSentence]:
    """The sentences of a reply cut off mid-JSON that were complete before the cut."""
    return SentenceStream().feed(partial_reply)


def stream_sentences(pieces: Iterable[str]) -> Iterator[DraftSentence]:
    """DraftSentences from streamed reply text, each as soon as it is complete; the whole reply is checked last."""
    parser = SentenceStream()
    emitted = 0
    for piece in pieces:
        for sentence in parser.feed(piece):
            emitted += 1
            yield sentence
    sentences = parser.close()
    # The incremental parse saw what the full parse sees; anything it missed (odd whitespace) comes now.
    yield from sentences[emitted:]
