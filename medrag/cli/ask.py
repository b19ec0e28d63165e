"""`medrag ask`, `medrag log tail` and `medrag eval answers`: grounded answers, their audit trail, their quality."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import click

from medrag.cli.evaluation import eval_group, overridden_engine, set_option
from medrag.cli.retrieval import build_filters, filter_options, query_embedder
from medrag.core.config import load_settings
from medrag.core.db import get_engine, read_engine
from medrag.core.errors import MedragError

# Exit status of `medrag eval answers` when a goal is missed (2 stays "bad input / unreachable server").
GOALS_MISSED = 1


class LazyEmbedder:
    """The query embedder, loaded on first use: a rejected question never pays for loading the model."""

    def __init__(self) -> None:
        self._embedder: Any = None

    def _loaded(self) -> Any:
        if self._embedder is None:
            self._embedder = query_embedder()
        return self._embedder

    def embed(self, text: str) -> list[float]:
        """Embed text with the configured query embedder."""
        return self._loaded().embed(text)

    def embed_many(self, texts: list[str]) -> Any:
        """Embed an answer's units in batches with the same embedder."""
        return self._loaded().embed_many(texts)

    def knows_word(self, word: str) -> bool:
        """Whether the model has the word as a token of its own (what spares plain English from being "unknown")."""
        return self._loaded().knows_word(word)


def _print_sources(result: Any) -> None:
    sources = result.cited_sources if not result.refused else []
    if sources:
        click.echo("\nSources:")
        for source in sources:
            click.echo(f"  [{source.n}] {source.label}: {source.evidence.hit.title} ({source.release_text})")
            if source.evidence.hit.url:
                click.echo(f"      {source.evidence.hit.url}")
        return
    found = result.evidence[:5]
    if found:
        click.echo("\nClosest sources found (not used as evidence):" if result.refused else "\nSources found:")
        for item in found:
            similarity = "n/a" if item.similarity is None else f"{item.similarity:.2f}"
            click.echo(f"  - {item.hit.source.upper()} {item.hit.key}: {item.hit.title} (similarity {similarity}, "
                       f"{item.hit.release})")


_REFUSALS = {
    "insufficient_evidence": "the sources found do not answer this question",
    "failed_validation": "no sentence of the draft answer passed the citation and code checks",
}


@click.command("ask")
@click.argument("question")
@filter_options
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object.")
@click.option("--stream", is_flag=True, help="Print each sentence as soon as it is generated and validated.")
@click.option("--llm", "backend", type=click.Choice(["vllm", "extractive"]), default=None,
              help="Answer backend (default: vllm when VLLM_BASE_URL is set, else extractive).")
def ask_command(question: str, k: int, as_json: bool, stream: bool, backend: str | None,
                **filter_values: object) -> None:
    """Answer QUESTION from the corpus with cited sentences, or refuse when the evidence is not there."""
    from medrag.answer.pipeline import ask

    settings = load_settings()
    filters = build_filters(**filter_values)
    streamed = stream and not as_json
    if streamed:
        click.echo("Answer:")

    def show(check: Any) -> None:
        from medrag.answer.pipeline import cited_sentence

        # a list keeps its lines: the lead-in, then one item per line
        for line in cited_sentence(check).split("\n"):
            indent = "  " if line.startswith("- ") else ""
            click.echo(textwrap.fill(line, width=100, initial_indent=indent, subsequent_indent=indent + "  "))

    engine, embedder = read_engine(settings), LazyEmbedder()
    result = ask(engine, question, settings=settings, embedder=embedder, filters=filters, k=k,
                 backend=backend or "auto", stream=stream, on_sentence=show if streamed else None,
                 log_engine=get_engine(settings))
    if result.degraded:
        click.echo(f"medrag: warning: the LLM failed ({result.degraded_reason}); "
                   f"answered from the sources' own sentences instead", err=True)
    if as_json:
        click.echo(json.dumps(result.as_json(), default=str))
        return
    if result.refused:
        click.echo(f"No answer: {_REFUSALS.get(result.refusal_reason, result.refusal_reason)} "
                   f"({result.refusal_reason}).")
    elif not streamed:
        click.echo("Answer:")
        for check in result.sentences:
            show(check)
    _print_sources(result)
    timings = ", ".join(f"{name} {ms:.0f} ms" for name, ms in result.timings_ms.items()
                        if name in ("retrieval", "generation", "validation", "total"))
    dropped = result.validation.get("dropped", 0)
    click.echo(f"\n{result.backend}{' (' + result.model + ')' if result.model not in (None, 'extractive') else ''}"
               f"; {dropped} sentence(s) dropped by validation; {timings}; log #{result.log_id}", err=True)


@click.group("log")
def log_group() -> None:
    """The audit log of questions asked (query_log)."""


@log_group.command("tail")
@click.option("-n", "n", default=10, show_default=True, type=click.IntRange(1, 1000), help="Rows to show.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def log_tail(n: int, as_json: bool) -> None:
    """Show the newest query_log rows, oldest first."""
    from medrag.answer.audit import recent_logs

    rows = recent_logs(get_engine(), n)
    if as_json:
        for row in rows:
            click.echo(json.dumps(row, default=str))
        return
    if not rows:
        click.echo("query_log is empty.")
    for row in rows:
        question = row["question"] if row["question"] is not None else f"sha256:{(row['question_hash'] or '')[:16]}"
        verdict = f"refused ({row['refusal_reason']})" if row["refused"] else "answered"
        if (row["validation"] or {}).get("degraded"):
            verdict += ", degraded"
        total = (row["timings_ms"] or {}).get("total")
        accepted = len(row["accepted"] or [])
        via = f" via {row['route']} from {row['client']}" if row.get("route") else ""
        click.echo(f"#{row['id']} {row['created_at']:%Y-%m-%d %H:%M:%S} {row['command']}{via} [{row['model'] or '-'}] "
                   f"{verdict}; {accepted}/{len(row['retrieved'] or [])} chunks accepted"
                   f"{f'; {total:.0f} ms' if total is not None else ''}")
        click.echo(f"    {textwrap.shorten(question, width=110, placeholder=' ...')}")


@eval_group.command("answers")
@click.option("--questions", "questions_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL dev set: question, answerable, expected_keys.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option("--llm", "backend", type=click.Choice(["vllm", "extractive"]), default=None,
              help="Answer backend (default: vllm when VLLM_BASE_URL is set, else extractive).")
@click.option("-k", "k", default=10, show_default=True, type=click.IntRange(1, 200), help="Hits retrieved.")
@set_option
def eval_answers(questions_file: Path, as_json: bool, backend: str | None, k: int, overrides: tuple[str, ...]) -> None:
    """Answer quality on a dev set: citation precision, refusal accuracy, invented codes, latency per stage."""
    from medrag.answer.evaluation import evaluate, load_questions, render_report

    settings = load_settings()
    questions = load_questions(questions_file)
    engine, overridden = overridden_engine(overrides)
    embedder = query_embedder()
    report = evaluate(engine, questions, settings=settings, embedder=embedder, backend=backend or "auto", k=k)
    if as_json:
        click.echo(json.dumps(report.as_json() | {"settings_overridden": overridden}, default=str))
    else:
        click.echo(render_report(report))
    if not report.goals_met:
        sys.exit(GOALS_MISSED)


@eval_group.command("fit-answers")
@click.option("--questions", "questions_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL dev set with facts to fit on (never a holdout).")
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where the fitted model is written (default: the one the scorer reads).")
def fit_answers(questions_file: Path, out_file: Path | None) -> None:
    """Fit the extractive answer's unit scorer on the dev set's required facts (a logistic regression)."""
    from medrag.answer.evaluation import load_questions
    from medrag.answer.fit import collect_examples, fit_unit_model
    from medrag.answer.scoring import MODEL_PATH
    from medrag.core.logistic import write_model

    settings = load_settings()
    engine, embedder = get_engine(settings), query_embedder()
    x, y, asked = collect_examples(engine, load_questions(questions_file), settings=settings, embedder=embedder)
    if not len(y) or not y.sum():
        raise MedragError(f"{questions_file}: no unit of any answer states a required fact; nothing to fit")
    model = fit_unit_model(x, y, source=questions_file.name, questions=asked)
    write_model(model, out_file or MODEL_PATH)
    click.echo(f"{model['units']:,} units of {asked} questions ({model['stating_a_fact']} state a fact): "
               + ", ".join(f"{name} {value:+.2f}" for name, value in model["weights"].items())
               + f", intercept {model['intercept']:+.2f}; log loss {model['log_loss']:.3f} -> {out_file or MODEL_PATH}")


@eval_group.command("fit-refusal")
@click.option("--questions", "questions_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL dev set with answerable and unanswerable questions (never a holdout).")
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where the fitted gate is written (default: the one the registry reads).")
def fit_refusal(questions_file: Path, out_file: Path | None) -> None:
    """Fit the extractive answer's refusal gate (answerable_probability) on the dev set's questions."""
    from medrag.answer.evaluation import evaluate, load_questions
    from medrag.answer.gate import gate_rows, write_gate
    from medrag.core.tuning import HAND_SET_ANSWERABLE_PROBABILITY, REFUSAL_GATE_FILE

    settings = load_settings()
    engine, embedder = get_engine(settings), query_embedder()
    report = evaluate(engine, load_questions(questions_file), settings=settings, embedder=embedder,
                      backend="extractive")
    rows = gate_rows(report.as_json()["questions"])
    if not rows:
        raise MedragError(f"{questions_file}: no question reached the refusal gate; nothing to fit")
    target = out_file or REFUSAL_GATE_FILE
    model = write_gate(rows, questions_file, target, HAND_SET_ANSWERABLE_PROBABILITY)
    click.echo(f"{model['questions']} questions at the gate ({model['answerable']} answerable): threshold "
               f"{model['threshold']} (margin {model['margin']}) puts {model['on_their_side']} on their side, the "
               f"hand-set {model['hand_set']} {model['on_their_side_hand_set']} -> {target}; "
               "`medrag db migrate` is not needed: the answer reads it at start")


COMMANDS = [ask_command, log_group]
