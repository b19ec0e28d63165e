"""The API's request and response models: /openapi.json documents every field the CLI's --json prints.

The routes return the CLI's own JSON (the same as_json methods); these models describe it, and the tests check
every response against them with unknown fields forbidden, so a field added to one side fails until both agree.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    """A model that rejects fields it does not declare."""

    model_config = ConfigDict(extra="forbid")


class InvalidField(Strict):
    """One invalid field of a 422."""

    field: str = Field(description="Where: a query parameter or a body field, dotted (lines.0.dos).")
    message: str


class ErrorResponse(Strict):
    """Every 4xx/5xx body: RFC 9457 problem details (application/problem+json)."""

    type: str = Field(description="about:blank: the status says what kind of problem it is.")
    title: str = Field(description="The status's phrase (Bad Request, Unprocessable Content, ...).")
    status: int
    detail: str = Field(description="What was wrong, in one line: what the CLI prints after \"medrag: error:\".")
    instance: str = Field(description="The path asked for, within the app.")
    error: str = Field(description="The same line as detail, for clients of the earlier {\"error\": ...} body.")
    errors: list[InvalidField] | None = Field(default=None, description="A 422's invalid fields, every one.")


class SearchHit(Strict):
    """One ranked chunk with its document's identity."""

    rank: int
    score: float = Field(description="The search's fused score, or the code finder's confidence (see ranked_by)")
    ranked_by: str = Field(description="'search' (the search statement placed it) or 'codes' (the code finder chose "
                                       "the code for this code slot; score is its confidence)")
    source: str = Field(description="ncd, lcd, article, iom, hcpcs or icd10cm")
    key: str = Field(description="Document key: 240.2, L33718, E0601, 100-02/15/110 ...")
    title: str
    heading: str
    text: str
    chunk_id: int
    document_id: int
    release: str
    url: str | None


class SearchResponse(Strict):
    """`medrag search --json`."""

    query: str
    filters: dict[str, Any] = Field(description="The filters as applied (the jsonb medrag_search takes).")
    hits: list[SearchHit]
    timings_ms: dict[str, float]


class AskFilters(Strict):
    """The metadata filters of a question (the CLI's --source, --key, --release ... options)."""

    source: list[str] | str | None = None
    key: list[str] | str | None = None
    release: str | None = Field(None, description="'current' (default), 'all' or a release label.")
    as_of: str | None = Field(None, description="Only documents in force on this date, YYYY-MM-DD.")
    contractor: str | None = None
    state: str | None = Field(None, description="Two-letter state code.")
    manual: str | None = None
    chapter: str | None = None


class AskRequest(Strict):
    """The body of POST /ask."""

    question: str
    filters: AskFilters = Field(default_factory=AskFilters)
    llm: Literal["vllm", "extractive"] | None = Field(
        None, description="Answer backend; default vllm when VLLM_BASE_URL is set, else extractive.")
    k: int = Field(10, ge=1, le=200, description="Hits retrieved.")


class AskHit(SearchHit):
    """A retrieved chunk and whether it was accepted as evidence."""

    similarity: float | None
    accepted: bool
    rejected_reason: str | None


class Citation(Strict):
    """A source the answer cites, by its number in the answer."""

    n: int
    source: str
    key: str
    title: str
    url: str | None
    release: str
    authority: str = Field(description="Whose rule it is and where it applies (national, local: contractors and "
                                       "states, code set).")


class AskResponse(Strict):
    """`medrag ask --json` (and the final event of a streamed answer)."""

    question: str
    answer: str = Field(description="The validated sentences with inline [n] citations; empty when refused.")
    citations: list[Citation]
    refused: bool
    refusal_reason: str | None = Field(description="insufficient_evidence or failed_validation when refused.")
    degraded: bool = Field(description="True when the LLM failed and the sources' own sentences answered.")
    degraded_reason: str | None
    backend: str
    model: str | None
    query: str = Field(description="The question as searched (abbreviations expanded).")
    validation: dict[str, Any]
    hits: list[AskHit]
    timings_ms: dict[str, float]


class SentenceEvent(Strict):
    """One validated sentence of a streamed answer (SSE event `sentence`)."""

    index: int
    text: str = Field(description="The sentence with its [n] citations.")
    sources: list[int]


class RelatedDocument(Strict):
    """An LCD listing a HCPCS code (with its contractors), or an ICD-10-CM code's parent."""

    source: str
    key: str
    title: str
    contractors: list[str] | None = None


class CodeResult(Strict):
    """One code found for a term."""

    system: str
    code: str
    display: str
    confidence: float
    tier: str = Field(description="high, medium or possible: how far to trust the confidence; guess when no code "
                      "holds enough of the term (confidence 0).")
    billable: bool | None
    related: list[RelatedDocument]


class CodesResponse(Strict):
    """`medrag codes --json`."""

    query: str
    results: list[CodeResult]
    summary: str
    trace: list[str]
    cached: bool = Field(description="Answered from the code finder's cache (the same call on the same data).")


MAX_CHECK_LINES = 1000


class ClaimLine(Strict):
    """One claim line to check; a list is a JSON array or one string separated by ';', ',' or spaces."""

    line_id: str | int | None = None
    dos: str | None = Field(default=None, description="Date of service, YYYY-MM-DD.")
    hcpcs: str | None = None
    modifiers: list[str] | str = []
    dx: list[str] | str = Field(default=[], description="ICD-10-CM diagnosis codes.")
    state: str | None = Field(default=None, description="Two-letter state, for the LCDs of its contractors.")


class CheckRequest(Strict):
    """`POST /check`: up to 1,000 claim lines."""

    lines: list[ClaimLine] = Field(min_length=1, max_length=MAX_CHECK_LINES)


class CheckFinding(Strict):
    """One rule's verdict on a line, with the release row it rests on."""

    rule: str
    verdict: Literal["ok", "error", "warning", "not checked"]
    message: str
    basis: dict[str, Any] | None = None
    candidates: list[dict[str, Any]] | None = None


class CheckedLine(Strict):
    """A line as read, and its findings in rule order."""

    line_no: int
    line_id: str
    dos: str | None
    hcpcs: str | None
    modifiers: list[str]
    dx: list[str]
    state: str | None
    errors: int
    findings: list[CheckFinding]


class CheckResponse(Strict):
    """`medrag check FILE --json`: every line's findings and the counts by rule and verdict."""

    lines: list[CheckedLine]
    summary: dict[str, Any]


class ReleaseRow(Strict):
    """One row of `medrag releases list --json`."""

    source: str
    label: str
    status: str
    is_current: bool
    loaded_at: str | None
    status_detail: dict[str, Any]
    bytes: int
    files: int


class ReleaseChange(BaseModel):
    """One line of `medrag releases diff --json`: the code, the change, and old_/new_ values of the compared columns."""

    model_config = ConfigDict(extra="allow")
    code: str
    change: Literal["added", "removed", "changed"]


class YourCode(Strict):
    """A code of the coder's list that a change touches, and how: code, parent, child or listed."""

    code: str
    relation: Literal["code", "parent", "child", "listed"]


class Change(Strict):
    """One change: the item, what changed (old and new values where a field did), when, and the codes it touches."""

    change_id: int
    item_kind: Literal["hcpcs", "icd10cm", "ncd", "lcd", "iom"]
    item: str
    change: str = Field(description="added, removed, deleted, terminated, redescribed, respelled, became_header, "
                                    "became_billable, needs_seventh_character, needs_placeholder, coverage_changed, "
                                    "pricing_changed, betos_changed, revised, retired, took_effect, updated, "
                                    "code_added, code_removed, changed")
    field: str | None
    old_value: str | None
    new_value: str | None
    effective_date: str | None
    title: str | None
    codes: list[str]
    detail: dict[str, Any] = Field(description="e.g. sentences_added, sentences_removed, revision, parent")
    your_codes: list[YourCode] | None = Field(default=None, description="With codes: the ones this change touches.")


class ChangeSet(Strict):
    """One comparison: a release against the one before it, or (from_label null) the dates an export gives itself."""

    change_set_id: int
    source: str
    from_label: str | None
    to_label: str
    scope: Literal["releases", "within"]
    since: str | None
    counts: dict[str, int]
    notes: list[str] = Field(description="What was not compared, and where a release's own change list disagrees.")
    changes: list[Change]


class ChangesGap(Strict):
    """A source that cannot say what changed, and why (one loaded release, nothing loaded)."""

    source: str
    message: str


class ChangesResponse(Strict):
    """GET /changes and `medrag changes --json`: the change sets asked for and the sources that could not say."""

    codes: list[str] | None
    sets: list[ChangeSet]
    gaps: list[ChangesGap]


class Health(Strict):
    """GET /health: what a load balancer or an operator needs to know."""

    status: Literal["ok", "unavailable"]
    database: dict[str, Any] = Field(description="reachable, error, schema_revision, schema_head, schema_at_head")
    releases: dict[str, str] = Field(description="The current release label per source.")
    embedding_model: dict[str, Any] = Field(description="loaded, name, backend")
    vllm: dict[str, Any] = Field(description="configured, reachable, base_url, error")
