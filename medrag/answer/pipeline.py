"""`medrag ask` end to end: checks -> retrieval -> evidence threshold -> context -> generation -> gates -> audit.

Degraded mode: when the vLLM server is down, times out, or answers garbage, ask does not fail. It answers from
the extractive backend instead (same gates), marks the result `degraded` with the reason, and exits 0; the
sources it found are returned either way.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Engine

from medrag.answer.audit import AuditRecord, write_log
from medrag.answer.checks import InvalidQuestion, RewrittenQuery, check_question, rewrite_query
from medrag.answer.context import ContextSource, build_messages, build_sources
from medrag.answer.evidence import Evidence, QueryVector, select_evidence, similarities
from medrag.answer.extractive import extractive_answer, prompt_excerpts, unknown_words
from medrag.answer.llm import ChatClient, LlmError, LlmNotConfigured, LlmTruncated
from medrag.answer.reading import read_documents
from medrag.answer.scoring import ScoredUnit, question_kind, rank_units, unit_pool
from medrag.answer.structured import (
    SCHEMA_NAME,
    answer_schema,
    complete_sentences,
    parse_answer,
    stream_sentences,
)
from medrag.answer.validate import SentenceCheck, Validator, summarize
from medrag.core.config import Settings
from medrag.retrieval.search import SearchFilters, search

BACKENDS = ("auto", "vllm", "extractive")
EXTRACTIVE_MODEL = "extractive"
INSUFFICIENT_EVIDENCE = "insufficient_evidence"
# medrag_question_type's kind for a question that asks for a sum of money, and how a source writes one ($55, 12
# dollars).
AMOUNT_QUESTION = "amount"
MONEY = re.compile(r"\$\s?\d|\b\d[\d,.]*\s+dollars?\b", re.IGNORECASE)
FAILED_VALIDATION = "failed_validation"
INVALID_INPUT = "invalid_input"
# Stages whose time is not the backend's own: the "pipeline overhead" the evaluation reports.
GENERATION_STAGE = "generation"
# What the LLM prompt shows of each document: its best units up to this many words.
PROMPT_WORDS_PER_SOURCE = 400


@dataclass
class AskResult:
    """What `medrag ask` shows: the validated sentences, their sources, the refusal or degradation, timings."""

    question: str
    query: RewrittenQuery
    filters: dict[str, Any]
    evidence: list[Evidence] = field(default_factory=list)
    sources: list[ContextSource] = field(default_factory=list)
    checks: list[SentenceCheck] = field(default_factory=list)
    backend: str = EXTRACTIVE_MODEL
    model: str | None = None
    refused: bool = False
    refusal_reason: str | None = None
    degraded: bool = False
    degraded_reason: str | None = None
    # the refusal gate's evidence: the best unit's probability of stating a required fact, for a question that reached
    # it (sources found, not a sum of money they cannot name, no word the corpus lacks); None otherwise
    gate_probability: float | None = None
    validation: dict[str, Any] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    log_id: int | None = None
    units: list[ScoredUnit] = field(default_factory=list)

    @property
    def sentences(self) -> list[SentenceCheck]:
        """The sentences that passed every gate, in answer order."""
        return [check for check in self.checks if check.passed]

    @property
    def answer(self) -> str:
        """The answer text with inline [n] citations ("" when refused)."""
        return " ".join(cited_sentence(check) for check in self.sentences)

    @property
    def cited_sources(self) -> list[ContextSource]:
        """The sources the shown sentences cite, by number."""
        cited = {n for check in self.sentences for n in check.sources}
        return [source for source in self.sources if source.n in cited]

    def as_json(self) -> dict[str, Any]:
        """The `medrag ask --json` object."""
        hits = []
        for item in self.evidence:
            hit = asdict(item.hit)
            hit.pop("matched", None)
            hit.update(similarity=None if item.similarity is None else round(item.similarity, 4),
                       accepted=item.accepted, rejected_reason=item.reason)
            hits.append(hit)
        return {
            "question": self.question,
            "answer": self.answer,
            "citations": [source.citation() for source in self.cited_sources],
            "refused": self.refused,
            "refusal_reason": self.refusal_reason,
            "degraded": self.degraded,
            "degraded_reason": self.degraded_reason,
            "backend": self.backend,
            "model": self.model,
            "query": self.query.query,
            "validation": {key: value for key, value in self.validation.items() if key != "checks"},
            "hits": hits,
            "timings_ms": self.timings_ms,
        }


def cited_sentence(check: SentenceCheck) -> str:
    """The sentence with its citations before its closing punctuation: "... oxygen [1]."."""
    markers = "".join(f"[{n}]" for n in check.sources)
    text = check.text.rstrip()
    if text and text[-1] in ".!?:;":
        return f"{text[:-1].rstrip()} {markers}{text[-1]}"
    return f"{text} {markers}"


class _Clock:
    """Milliseconds per stage."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.timings: dict[str, float] = {}
        self._mark = self.started

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[stage] = self.timings.get(stage, 0.0) + (now - self._mark) * 1000
        self._mark = now

    def add(self, stage: str, ms: float) -> None:
        self.timings[stage] = self.timings.get(stage, 0.0) + ms

    def total(self) -> dict[str, float]:
        timings = dict(self.timings)
        timings["total"] = (time.perf_counter() - self.started) * 1000
        timings["overhead"] = timings["total"] - timings.get(GENERATION_STAGE, 0.0)
        return {stage: round(ms, 2) for stage, ms in timings.items()}


def choose_backend(requested: str, settings: Settings) -> str:
    """'vllm' or 'extractive': auto means vLLM when VLLM_BASE_URL is set."""
    if requested not in BACKENDS:
        raise LlmNotConfigured(f"unknown backend {requested!r}; choose from {', '.join(BACKENDS)}")
    if requested == "vllm" and not settings.vllm_base_url:
        raise LlmNotConfigured("--llm vllm needs a server: set VLLM_BASE_URL (e.g. http://127.0.0.1:8000/v1)")
    if requested == "auto":
        return "vllm" if settings.vllm_base_url else "extractive"
    return requested


def ask(
    engine: Engine,
    question: str | None,
    *,
    settings: Settings,
    embedder: Any,
    filters: SearchFilters | None = None,
    k: int = 10,
    backend: str = "auto",
    client: ChatClient | None = None,
    stream: bool = False,
    on_sentence: Callable[[SentenceCheck], None] | None = None,
    command: str = "ask",
    route: str | None = None,
    client_address: str | None = None,
    unit_model: dict[str, Any] | None = None,
    log_engine: Engine | None = None,
) -> AskResult:
    """Answer a question from the corpus with cited, validated sentences (or refuse), and audit it.

    route and client_address name the HTTP route and caller when the question came through `medrag serve`;
    unit_model replaces the fitted unit scorer (medrag.answer.scoring) while it is being fitted; log_engine is where
    the query log is written when engine reads a replica (DATABASE_READ_URL).
    """
    clock = _Clock()
    filters = filters or SearchFilters()
    chosen = choose_backend(backend, settings)
    try:
        checked = check_question(question)
    except InvalidQuestion as error:
        refused = AuditRecord(command, question or "", filters.as_json(), refused=True,
                              refusal_reason=f"{INVALID_INPUT}: {error}", route=route, client=client_address)
        write_log(log_engine or engine, refused, mode=settings.log_queries)
        raise
    clock.lap("checks")
    own_client = client is None and chosen == "vllm"
    if own_client:
        client = ChatClient.from_settings(settings)
    try:
        result = _answer(engine, checked, settings, embedder, filters, k, chosen, client, stream, on_sentence,
                         clock, unit_model)
    finally:
        if own_client and client is not None:
            client.close()
    record = AuditRecord(
        command, checked, result.filters,
        retrieved=[item.as_log() for item in result.evidence],
        threshold=settings.answer_min_similarity,
        accepted=[{**item.as_log(), "n": source.n} for source in result.sources for item in [source.evidence]],
        rejected=[item.as_log() for item in result.evidence if not item.accepted],
        model=result.model, refused=result.refused, refusal_reason=result.refusal_reason,
        validation={**result.validation, "backend": result.backend, "degraded": result.degraded,
                    "degraded_reason": result.degraded_reason, "query": result.query.query,
                    "rewrite": result.query.method, "rewrite_note": result.query.note,
                    "withheld_instructions": sum(source.withheld for source in result.sources)},
        timings_ms=clock.total(), route=route, client=client_address,
    )
    result.log_id = write_log(log_engine or engine, record, mode=settings.log_queries)
    clock.lap("audit")
    result.timings_ms = clock.total()
    return result


def _answer(engine: Engine, question: str, settings: Settings, embedder: Any, filters: SearchFilters, k: int,
            backend: str, client: ChatClient | None, stream: bool,
            on_sentence: Callable[[SentenceCheck], None] | None, clock: _Clock,
            unit_model: dict[str, Any] | None = None) -> AskResult:
    rewrite = rewrite_query(question, settings.query_rewrite, client if backend == "vllm" else None,
                            timeout=min(10.0, settings.llm_timeout))
    clock.lap("rewrite")
    recorder = QueryVector(embedder, rewrite.query)
    found = search(engine, question, k=k, filters=filters, embedder=recorder)
    clock.lap("retrieval")
    similarity = similarities(engine, found.hits, recorder.last, embedder)
    evidence = select_evidence(found.hits, similarity, threshold=settings.answer_min_similarity,
                               max_sources=settings.answer_max_sources)
    clock.lap("evidence")
    result = AskResult(question, rewrite, found.filters, evidence,
                       backend=backend, model=EXTRACTIVE_MODEL if backend == "extractive" else None)
    result.sources = build_sources(engine, read_documents(engine, evidence, recorder.last))
    validator = Validator(engine, result.sources, support_min=settings.answer_support_min)
    clock.lap("context")
    if not result.sources:
        result.refused, result.refusal_reason = True, INSUFFICIENT_EVIDENCE
        result.validation = {**summarize([]), "stage": "retrieval"}
        return result
    kind = question_kind(engine, question)
    result.units = rank_units(unit_pool(question, kind, result.sources, embedder, recorder.last, engine),
                              unit_model)
    prompt_excerpts(result.units, words_per_source=PROMPT_WORDS_PER_SOURCE)
    clock.lap("units")
    if kind.question_type == AMOUNT_QUESTION and not any(MONEY.search(item.unit.text) for item in result.units):
        # a question for a sum of money is answered by a sum or not at all: sources that name none (the coverage
        # rules hold no premiums, deductibles or fee schedules) cannot answer it, however close they are
        result.refused, result.refusal_reason = True, INSUFFICIENT_EVIDENCE
        result.validation = {**summarize([]), "stage": "amount"}
        return result

    def emit(checks: Iterable[SentenceCheck]) -> None:
        if on_sentence is not None:
            for check in checks:
                if check.passed:
                    on_sentence(check)

    if backend == "vllm":
        assert client is not None
        try:
            result.model = client.model_name()
            result.checks = _generate(client, question, result.sources, validator, settings, stream, emit, clock)
        except LlmError as error:
            shown = [check for check in getattr(error, "checks", []) if check.passed]
            result.degraded, result.degraded_reason = True, str(error)
            if shown:
                # Sentences already streamed to the user stay; the answer is partial, not replaced.
                result.checks = getattr(error, "checks", [])
            else:
                result.backend, result.model = "extractive (llm failed)", EXTRACTIVE_MODEL
                backend = "extractive"
    unknown: list[str] = []
    if backend == "extractive":
        unknown = unknown_words(engine, question, result.sources, getattr(embedder, "knows_word", None))
        if not unknown and result.units:
            result.gate_probability = max(item.probability for item in result.units)
        drafts = [] if unknown else extractive_answer(result.units, validator,
                                                      max_sentences=settings.answer_max_sentences,
                                                      question_type=kind.question_type)
        clock.lap(GENERATION_STAGE)
        result.checks = validator.check_all(drafts)
        clock.lap("validation")
        emit(result.checks)
    result.validation = summarize(result.checks)
    if validator.notes:
        result.validation["notes"] = validator.notes
    if unknown:
        result.validation["unknown_words"] = unknown
    if not result.checks:
        result.refused, result.refusal_reason = True, INSUFFICIENT_EVIDENCE
        result.validation["stage"] = "generation"
    elif not result.sentences:
        result.refused, result.refusal_reason = True, FAILED_VALIDATION
    return result


def _generate(client: ChatClient, question: str, sources: list[ContextSource], validator: Validator,
              settings: Settings, stream: bool, emit: Callable[[Iterable[SentenceCheck]], None],
              clock: _Clock) -> list[SentenceCheck]:
    """Ask the LLM for a structured answer and run the gates on each sentence (as it arrives when streaming)."""
    messages = build_messages(question, sources, max_sentences=settings.answer_max_sentences)
    schema = answer_schema(settings.answer_max_sentences, len(sources))
    checks: list[SentenceCheck] = []
    if not stream:
        try:
            drafts = parse_answer(client.chat_json(messages, schema, schema_name=SCHEMA_NAME,
                                                   max_tokens=settings.llm_max_tokens))
        except LlmTruncated as error:
            # A reply cut off at max_tokens still holds the sentences completed before the cut.
            drafts = complete_sentences(error.content)
            if not drafts:
                raise
            validator.notes.append(str(error))
        clock.lap(GENERATION_STAGE)
        checks = validator.check_all(drafts)
        clock.lap("validation")
        emit(checks)
        return checks
    pieces = client.stream_chat(messages, schema=schema, schema_name=SCHEMA_NAME,
                                max_tokens=settings.llm_max_tokens)
    try:
        for draft in stream_sentences(pieces):
            clock.lap(GENERATION_STAGE)
            check = validator.check(draft)
            checks.append(check)
            clock.lap("validation")
            emit([check])
    except LlmTruncated as error:
        if not checks:
            raise
        validator.notes.append(str(error))  # what was complete before the cut stands
    except LlmError as error:
        error.checks = checks  # type: ignore[attr-defined] - what was already shown, for the caller
        raise
    clock.lap(GENERATION_STAGE)
    return checks
