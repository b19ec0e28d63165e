"""Input checks and query rewriting: reject unusable questions, spell out abbreviations, optionally ask the LLM."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from medrag.core.errors import MedragError
from medrag.core.identifiers import AFTER, ANY_IDENTIFIER, BEFORE
from medrag.core.synonyms import expand_abbreviations
from medrag.retrieval.search import MAX_QUERY_CHARS, QueryError, validate_query

if TYPE_CHECKING:
    from medrag.answer.llm import ChatClient

REWRITE_MODES = ("off", "expand", "llm")
# Identifiers a rewrite must keep: dropping "E0601" or "L33718" would send retrieval somewhere else entirely.
_IDENTIFIER = re.compile(rf"{BEFORE}(?:{ANY_IDENTIFIER}){AFTER}")
_REWRITE_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
    "additionalProperties": False,
}
_REWRITE_PROMPT = (
    "Rewrite the user's Medicare coverage or coding question as one short search query for a retrieval system over "
    "CMS manuals, NCDs, LCDs, HCPCS and ICD-10-CM. Spell out abbreviations, keep every code and identifier exactly, "
    "add no facts. Reply with JSON {\"query\": \"...\"}."
)


class InvalidQuestion(QueryError):
    """The question cannot be asked: empty, too long, or holding control characters."""


class RewriteError(MedragError):
    """MEDRAG_QUERY_REWRITE names no known mode."""


@dataclass
class RewrittenQuery:
    """The question as asked and the query retrieval runs, with how it was derived."""

    question: str
    query: str
    method: str = "none"
    expansions: list[str] = field(default_factory=list)
    note: str | None = None


def check_question(question: str | None) -> str:
    """The question with whitespace collapsed, or InvalidQuestion (empty, over the size limit, control chars)."""
    try:
        return validate_query(question)
    except QueryError as error:
        raise InvalidQuestion(str(error).replace("the query", "the question")) from error


def expand_query(question: str) -> RewrittenQuery:
    """The question plus the expansions of the abbreviations it uses (CPAP -> continuous positive airway pressure)."""
    expansions = []
    for _abbreviation, expansion in expand_abbreviations(question):
        if expansion not in expansions:
            expansions.append(expansion)
    if not expansions:
        return RewrittenQuery(question, question, "none")
    query = f"{question} ({'; '.join(expansions)})"
    if len(query) > MAX_QUERY_CHARS:
        return RewrittenQuery(question, question, "none", note="expansion would exceed the query size limit")
    return RewrittenQuery(question, query, "expand", expansions)


def llm_rewrite(question: str, client: ChatClient, *, timeout: float) -> str:
    """A retrieval query written by the LLM; raises on any failure or a rewrite that drops an identifier."""
    reply = client.chat_json(
        [{"role": "system", "content": _REWRITE_PROMPT}, {"role": "user", "content": question}],
        _REWRITE_SCHEMA, schema_name="search_query", max_tokens=96, timeout=timeout,
    )
    rewritten = reply.get("query") if isinstance(reply, dict) else None
    if not isinstance(rewritten, str):
        raise InvalidQuestion("the rewrite has no query string")
    rewritten = check_question(rewritten)
    missing = [token for token in _IDENTIFIER.findall(question) if token.upper() not in rewritten.upper()]
    if missing:
        raise InvalidQuestion(f"the rewrite dropped {', '.join(missing)}")
    return rewritten


def rewrite_query(question: str, mode: str, client: ChatClient | None = None, *, timeout: float = 10.0
                  ) -> RewrittenQuery:
    """The query retrieval should run for a checked question: as is, expanded, or LLM-rewritten (else expanded)."""
    if mode not in REWRITE_MODES:
        raise RewriteError(f"MEDRAG_QUERY_REWRITE must be one of {', '.join(REWRITE_MODES)}, not {mode!r}")
    if mode == "off":
        return RewrittenQuery(question, question, "none")
    expanded = expand_query(question)
    if mode == "expand" or client is None:
        return expanded
    try:
        rewritten = llm_rewrite(question, client, timeout=timeout)
    except Exception as error:  # noqa: BLE001 - any rewrite failure falls back to the expanded question
        expanded.note = f"LLM rewrite failed ({type(error).__name__}: {str(error)[:120]}); used the expanded question"
        return expanded
    # The original words stay in the query: the rewrite adds recall, it must not lose what was asked.
    combined = f"{question} ({rewritten})" if rewritten.lower() != question.lower() else question
    if len(combined) > MAX_QUERY_CHARS:
        combined = question
    return RewrittenQuery(question, combined, "llm", expanded.expansions)
