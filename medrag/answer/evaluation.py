"""`medrag eval answers`: answer quality on a dev question set (JSONL), judged by the pipeline's own gates.

Each line: {"id": "...", "question": "...", "answerable": true|false, "expected_keys": ["ncd:240.2", ...],
optionally "type": "eligibility", "facts": ["regex", ...] and "filters": {"source": [...], "state": "CA", ...}}.
Reported: fact recall (the share of required facts the answer states: each fact a regular expression matched
case-insensitively against the answer without its citation markers), overall and per question type; citation
precision (sentences whose citations pass the validation gates / sentences generated), whether cited sources are
the expected ones, refusal accuracy on answerable and unanswerable questions, invented codes, and latency per stage
(p50 / p95).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from medrag.answer.pipeline import GENERATION_STAGE, ask
from medrag.core.config import Settings
from medrag.core.errors import MedragError
from medrag.retrieval.search import SOURCES, QueryError, SearchFilters

# The goals a report says are met or not: refusals and invented codes (issue 6); fact recall on the dev set and the
# stages outside generation (issue 19, which reads the whole determination and scores its units: 300 ms at p95).
GOAL_REFUSAL_ACCURACY = 0.95
GOAL_OVERHEAD_P95_MS = 300.0
GOAL_INVENTED_CODES = 0
GOAL_FACT_RECALL = 0.9
# "retrieval" in the report is everything before generation that finds and prepares evidence.
RETRIEVAL_STAGES = ("checks", "rewrite", "retrieval", "evidence", "context")
QUESTION_TYPES = ("eligibility", "frequency", "coverage", "non_covered", "lcd_codes", "code", "unanswerable")
_CITATION = re.compile(r"\s*\[\d+\]")


class DevSetError(MedragError):
    """The dev question file is missing or malformed."""


@dataclass(frozen=True)
class DevQuestion:
    """One dev-set question with what a correct answer cites (or that it must be refused)."""

    id: str
    question: str
    answerable: bool
    expected_keys: tuple[str, ...] = ()
    filters: dict[str, Any] = field(default_factory=dict)
    type: str | None = None
    facts: tuple[str, ...] = ()

    def search_filters(self) -> SearchFilters:
        """The question's filters as SearchFilters."""
        return SearchFilters.from_json(self.filters)


def load_questions(path: Path) -> list[DevQuestion]:
    """The dev set, checked line by line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise DevSetError(f"cannot read {path}: {error.strerror or error}") from error
    questions, seen = [], set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            item = json.loads(line)
        except ValueError as error:
            raise DevSetError(f"{where}: not JSON ({error})") from error
        if not isinstance(item, dict) or not isinstance(item.get("question"), str) \
                or not isinstance(item.get("answerable"), bool):
            raise DevSetError(f"{where}: needs a string 'question' and a boolean 'answerable'")
        keys = item.get("expected_keys", [])
        if not isinstance(keys, list) or any(not isinstance(key, str) or key.split(":", 1)[0] not in SOURCES
                                             or ":" not in key for key in keys):
            raise DevSetError(f"{where}: expected_keys must be 'source:key' strings, e.g. 'ncd:240.2'")
        if item["answerable"] and not keys:
            raise DevSetError(f"{where}: an answerable question needs expected_keys")
        question_id = str(item.get("id") or number)
        if question_id in seen:
            raise DevSetError(f"{where}: duplicate id {question_id!r}")
        seen.add(question_id)
        filters = item.get("filters") or {}
        if not isinstance(filters, dict):
            raise DevSetError(f"{where}: filters must be an object")
        kind = item.get("type")
        if kind is not None and kind not in QUESTION_TYPES:
            raise DevSetError(f"{where}: type must be one of {', '.join(QUESTION_TYPES)}")
        facts = item.get("facts", [])
        if not isinstance(facts, list) or any(not isinstance(fact, str) or not fact for fact in facts):
            raise DevSetError(f"{where}: facts must be a list of regular expressions")
        for fact in facts:
            try:
                re.compile(fact)
            except re.error as error:
                raise DevSetError(f"{where}: fact {fact!r} is not a regular expression ({error})") from error
        question = DevQuestion(question_id, item["question"], item["answerable"], tuple(keys), filters, kind,
                               tuple(facts))
        try:
            question.search_filters()
        except QueryError as error:
            raise DevSetError(f"{where}: bad filters: {error}") from error
        questions.append(question)
    if not questions:
        raise DevSetError(f"{path} holds no questions")
    return questions


@dataclass
class QuestionOutcome:
    """What the pipeline did with one dev question."""

    question: DevQuestion
    refused: bool
    refusal_reason: str | None
    degraded: bool
    sentences: int
    passed: int
    invented_generated: list[str]
    invented_shown: list[str]
    cited_keys: list[str]
    timings_ms: dict[str, float]
    answer: str
    gate_probability: float | None = None

    @property
    def facts_stated(self) -> list[bool]:
        """For each required fact, whether the answer (without its citation markers) states it."""
        plain = _CITATION.sub("", self.answer)
        return [bool(re.search(fact, plain, re.IGNORECASE)) for fact in self.question.facts]

    @property
    def refusal_correct(self) -> bool:
        """Answered an answerable question, or refused an unanswerable one."""
        return self.refused != self.question.answerable

    @property
    def expected_cited(self) -> bool:
        """At least one cited source is one the dev set expects."""
        return bool(set(self.cited_keys) & set(self.question.expected_keys))


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile (share in 0..1) of values; 0 when there are none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


@dataclass
class EvalReport:
    """Per-question outcomes and the figures over the whole set."""

    outcomes: list[QuestionOutcome]
    backend: str
    model: str | None

    def _latency(self) -> dict[str, dict[str, float]]:
        stages: dict[str, list[float]] = {"retrieval": [], "units": [], "generation": [], "validation": [],
                                          "audit": [], "overhead": [], "total": []}
        for outcome in self.outcomes:
            timings = outcome.timings_ms
            stages["retrieval"].append(sum(timings.get(stage, 0.0) for stage in RETRIEVAL_STAGES))
            stages["generation"].append(timings.get(GENERATION_STAGE, 0.0))
            for stage in ("units", "validation", "audit", "overhead", "total"):
                stages[stage].append(timings.get(stage, 0.0))
        return {stage: {"p50": round(percentile(values, 0.5), 2), "p95": round(percentile(values, 0.95), 2),
                        "max": round(max(values, default=0.0), 2)} for stage, values in stages.items()}

    def figures(self) -> dict[str, Any]:
        """The report's numbers."""
        answerable = [o for o in self.outcomes if o.question.answerable]
        unanswerable = [o for o in self.outcomes if not o.question.answerable]
        generated = sum(o.sentences for o in self.outcomes)
        answered = [o for o in answerable if not o.refused]
        cited = [(key, o) for o in answered for key in o.cited_keys]
        with_facts = [o for o in answerable if o.question.facts]
        return {
            "fact_recall": _fact_recall(with_facts),
            "fact_recall_by_type": {kind: _fact_recall([o for o in with_facts if o.question.type == kind])
                                    for kind in QUESTION_TYPES if any(o.question.type == kind for o in with_facts)},
            "questions_with_facts": len(with_facts),
            "questions_all_facts_stated": sum(all(o.facts_stated) for o in with_facts),
            "questions": len(self.outcomes),
            "answerable": len(answerable),
            "unanswerable": len(unanswerable),
            "refusal_accuracy": _ratio(sum(o.refusal_correct for o in self.outcomes), len(self.outcomes)),
            "answered_when_answerable": _ratio(len(answered), len(answerable)),
            "refused_when_unanswerable": _ratio(sum(o.refused for o in unanswerable), len(unanswerable)),
            "citation_precision": _ratio(sum(o.passed for o in self.outcomes), generated),
            "sentences_generated": generated,
            "sentences_dropped": generated - sum(o.passed for o in self.outcomes),
            "expected_source_cited": _ratio(sum(o.expected_cited for o in answered), len(answered)),
            "cited_sources_expected": _ratio(sum(key in o.question.expected_keys for key, o in cited), len(cited)),
            "invented_codes_generated": sum(len(o.invented_generated) for o in self.outcomes),
            "invented_codes_shown": sum(len(o.invented_shown) for o in self.outcomes),
            "degraded": sum(o.degraded for o in self.outcomes),
            "latency_ms": self._latency(),
        }

    @property
    def goals_met(self) -> bool:
        """Fact recall, refusal accuracy, invented codes shown and overhead p95 all within the goals."""
        figures = self.figures()
        return (figures["fact_recall"] >= GOAL_FACT_RECALL
                and figures["refusal_accuracy"] >= GOAL_REFUSAL_ACCURACY
                and figures["invented_codes_shown"] <= GOAL_INVENTED_CODES
                and figures["latency_ms"]["overhead"]["p95"] <= GOAL_OVERHEAD_P95_MS)

    def as_json(self) -> dict[str, Any]:
        """The `--json` report: figures, goals, and one row per question."""
        return {
            "backend": self.backend, "model": self.model, "figures": self.figures(), "goals_met": self.goals_met,
            "goals": {"fact_recall": GOAL_FACT_RECALL, "refusal_accuracy": GOAL_REFUSAL_ACCURACY,
                      "invented_codes_shown": GOAL_INVENTED_CODES,
                      "overhead_p95_ms": GOAL_OVERHEAD_P95_MS},
            "questions": [
                {"id": o.question.id, "question": o.question.question, "answerable": o.question.answerable,
                 "refused": o.refused, "refusal_reason": o.refusal_reason, "refusal_correct": o.refusal_correct,
                 "degraded": o.degraded, "expected_keys": list(o.question.expected_keys), "cited_keys": o.cited_keys,
                 "sentences": o.sentences, "passed": o.passed, "invented_codes": o.invented_generated,
                 "answer": o.answer, "type": o.question.type, "facts": list(o.question.facts),
                 "facts_stated": o.facts_stated, "gate_probability": o.gate_probability,
                 "timings_ms": o.timings_ms}
                for o in self.outcomes
            ],
        }


def _fact_recall(outcomes: list[QuestionOutcome]) -> float:
    """Required facts stated / required facts, over these questions (a refused question states none)."""
    stated = [flag for o in outcomes for flag in o.facts_stated]
    return _ratio(sum(stated), len(stated))


def _ratio(numerator: float, denominator: float) -> float:
    return round(numerator / denominator, 4) if denominator else 1.0


def evaluate(engine: Engine, questions: list[DevQuestion], *, settings: Settings, embedder: Any,
             backend: str = "auto", k: int = 10) -> EvalReport:
    """Ask every dev question through the full pipeline (audited as command 'eval') and collect the outcomes."""
    outcomes = []
    model = None
    used_backend = backend
    for question in questions:
        result = ask(engine, question.question, settings=settings, embedder=embedder,
                     filters=question.search_filters(), k=k, backend=backend, command="eval")
        model = model or result.model
        used_backend = result.backend if not result.degraded else used_backend
        outcomes.append(QuestionOutcome(
            question=question, refused=result.refused, refusal_reason=result.refusal_reason,
            degraded=result.degraded, sentences=len(result.checks), passed=len(result.sentences),
            invented_generated=[code for check in result.checks for code in check.invented_codes],
            invented_shown=[code for check in result.sentences for code in check.invented_codes],
            cited_keys=[f"{source.source}:{source.key}" for source in result.cited_sources],
            timings_ms=result.timings_ms, answer=result.answer, gate_probability=result.gate_probability,
        ))
    return EvalReport(outcomes, used_backend, model)


def render_report(report: EvalReport) -> str:
    """The report as a few readable lines."""
    f = report.figures()
    lines = [
        f"backend {report.backend}{f' ({report.model})' if report.model else ''}: {f['questions']} questions "
        f"({f['answerable']} answerable, {f['unanswerable']} unanswerable)",
        f"fact recall             {f['fact_recall']:.3f}  ({f['questions_all_facts_stated']} of "
        f"{f['questions_with_facts']} questions state every required fact; goal >= {GOAL_FACT_RECALL}); by type: "
        + ", ".join(f"{kind} {value:.3f}" for kind, value in f["fact_recall_by_type"].items()),
        f"refusal accuracy        {f['refusal_accuracy']:.3f}  (answered {f['answered_when_answerable']:.3f} of "
        f"answerable, refused {f['refused_when_unanswerable']:.3f} of unanswerable; goal >= {GOAL_REFUSAL_ACCURACY})",
        f"citation precision      {f['citation_precision']:.3f}  ({f['sentences_generated']} sentences generated, "
        f"{f['sentences_dropped']} dropped by the gates)",
        f"expected source cited   {f['expected_source_cited']:.3f}  (answered answerable questions); "
        f"cited sources expected {f['cited_sources_expected']:.3f}",
        f"invented codes          {f['invented_codes_shown']} shown, {f['invented_codes_generated']} generated "
        f"and caught (goal {GOAL_INVENTED_CODES} shown)",
        f"degraded answers        {f['degraded']}",
        "latency ms              " + "; ".join(
            f"{stage} p50 {values['p50']:.1f} / p95 {values['p95']:.1f}"
            for stage, values in f["latency_ms"].items()),
        f"goals met: {'yes' if report.goals_met else 'NO'} (overhead p95 goal <= {GOAL_OVERHEAD_P95_MS:.0f} ms)",
    ]
    misses = [o for o in report.outcomes if not o.refusal_correct]
    for outcome in report.outcomes:
        unstated = [fact for fact, stated in zip(outcome.question.facts, outcome.facts_stated, strict=True)
                    if not stated]
        if unstated:
            lines.append(f"  fact not stated: {outcome.question.id}: {', '.join(unstated)}")
    for outcome in misses:
        verdict = "refused" if outcome.refused else "answered"
        lines.append(f"  miss: {outcome.question.id} {verdict} "
                     f"({'answerable' if outcome.question.answerable else 'unanswerable'}): "
                     f"{outcome.question.question}")
    return "\n".join(lines)
