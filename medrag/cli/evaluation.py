"""`medrag eval ...`: measure retrieval (and, from their own modules, answers and code lookup) on question sets."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from sqlalchemy import Engine, create_engine

from medrag.core.db import get_engine
from medrag.core.errors import MedragError
from medrag.core.tuning import apply_overrides, override_in_process, parse_overrides
from medrag.retrieval.evaluation import DEFAULT_KS, Question, evaluate, load_questions
from medrag.retrieval.search import SearchFilters, search

if TYPE_CHECKING:
    from medrag.retrieval.training import TrainingPair


@click.group("eval")
def eval_group() -> None:
    """Evaluate medrag on a question set and print the figures."""


# `eval answers` (medrag.cli.ask) and `eval codes` (medrag.cli.codes) attach themselves to this group.

# Every eval command measures a run with settings changed the same way: SET medrag.<name> on each connection.
set_option = click.option("--set", "overrides", multiple=True, metavar="NAME=VALUE",
                          help="Run with a setting changed (medrag_settings(), e.g. rrf_k=30); repeatable.")


# An evaluation measures the finder itself, not the answers its cache kept (--set code_cache_rows=N measures those).
UNCACHED = ("code_cache_rows=0",)


def overridden_engine(overrides: tuple[str, ...]) -> tuple[Engine, dict[str, str]]:
    """An engine of its own for the run, the --set overrides on every connection, and the checked overrides.

    Its own: the process's shared engine (get_engine) keeps the registry's values for whatever else it serves.
    """
    settings = parse_overrides((*UNCACHED, *overrides))
    engine = create_engine(get_engine().url, pool_pre_ping=True)
    apply_overrides(engine, settings)
    override_in_process(settings)
    return engine, settings


def parse_ks(value: str) -> list[int]:
    """'1,3,5,10' -> [1, 3, 5, 10]."""
    try:
        ks = sorted({int(part) for part in value.split(",") if part.strip()})
    except ValueError as exc:
        raise MedragError(f"-k takes comma-separated whole numbers such as 1,3,5,10, not {value!r}") from exc
    if not ks or ks[0] < 1 or ks[-1] > 200:
        raise MedragError("-k values must be between 1 and 200")
    return ks


@eval_group.command("retrieval")
@click.option("--questions", "questions_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=Path("eval/retrieval_dev.jsonl"), show_default=True)
@click.option("-k", "ks", default=",".join(map(str, DEFAULT_KS)), show_default=True, help="Cut-offs, e.g. 1,3,5,10.")
@click.option("--json", "as_json", is_flag=True, help="Print the full report (per question too) as JSON.")
@click.option("--text-only", is_flag=True, help="No query vector: what medrag_search_text ranks.")
@set_option
def eval_retrieval(questions_file: Path, ks: str, as_json: bool, text_only: bool,
                   overrides: tuple[str, ...]) -> None:
    """hit@k, MRR, nDCG@k (graded), recall@k and latency p50/p95, overall, per category and per source."""
    from medrag.cli.retrieval import query_embedder

    cutoffs = parse_ks(ks)
    questions = load_questions(questions_file)
    engine, settings = overridden_engine(overrides)
    embedder = None if text_only else query_embedder()
    # the first call pays connection and ONNX session
    search(engine, "warm up", k=1, embedder=embedder)

    def retrieve(question: Question, k: int) -> tuple[list[tuple[str, str]], float]:
        started = time.perf_counter()
        result = search(engine, question.question, k=k, filters=SearchFilters.from_json(question.filters),
                        embedder=embedder)
        return [(hit.source, hit.key) for hit in result.hits], (time.perf_counter() - started) * 1000

    report = evaluate(questions, retrieve, cutoffs) | {"settings_overridden": settings}
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    columns = [f"hit@{k}" for k in cutoffs] + ["mrr"] + [f"ndcg@{k}" for k in cutoffs] + \
              [f"recall@{k}" for k in cutoffs] + ["latency_p50_ms", "latency_p95_ms", "questions"]
    click.echo(f"{'':22}" + "".join(f"{name:>11}" for name in columns))
    rows = [("overall", report["overall"])] + [(f"category {n}", m) for n, m in report["by_category"].items()] + \
           [(f"source {n}", m) for n, m in report["by_source"].items()]
    for name, metrics in rows:
        click.echo(f"{name[:22]:22}" + "".join(f"{metrics[column]:>11}" for column in columns))
    click.echo(f"({report['unanswerable_questions']} unanswerable questions are not scored here; "
               "see `medrag eval answers`)")
    misses = [q for q in report["questions"] if q[f"hit@{cutoffs[-1]}"] == 0]
    for miss in misses:
        click.echo(f"miss {miss['id']}: {miss['question']!r} -> {', '.join(miss['top'])}", err=True)


# The fits on release pairs (fit-ranker, fit-fusion) share how pairs are chosen and how a fit is written.
seed_option = click.option("--seed", default=7, show_default=True, type=int,
                           help="Which pairs: the same seed, the same pairs.")


def writable(out_file: Path) -> Path:
    """The --out file, checked before the work: its folder exists and can be written."""
    folder = out_file.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise MedragError(f"--out {out_file}: folder {folder} does not exist or cannot be written")
    return out_file


def write_fit(out_file: Path, pairs: list[TrainingPair], seed: int, fitted: dict[str, Any],
              rows: list[dict[str, Any]], write_rows: Callable[[list[dict[str, Any]], Path], None]) -> str:
    """The model (the training set's size by kind, seed and hash, then the fit) to out_file, its rows beside it;
    returns the training set in words for the command's line."""
    from medrag.core.logistic import write_model
    from medrag.core.pairwise import rows_path
    from medrag.retrieval.training import pairs_hash

    sizes = {kind: sum(1 for pair in pairs if pair.kind == kind) for kind in dict.fromkeys(p.kind for p in pairs)}
    write_model({"training": {"pairs": len(pairs), "by_kind": sizes, "seed": seed, "sha256": pairs_hash(pairs)},
                 **fitted}, out_file)
    write_rows(rows, rows_path(out_file))
    return f"{len(pairs)} pairs ({', '.join(f'{kind} {n}' for kind, n in sizes.items())})"


@eval_group.command("fit-fusion")
@click.option("--per-kind", default=250, show_default=True, type=click.IntRange(min=10),
              help="Training pairs of each kind (Index paths, HCPCS short descriptions, NCD keywords, misspelled).")
@seed_option
@click.option("--out", "out_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Where the fitted model is written (its rows beside it, NAME.rows.csv.gz). Copied to "
                   "medrag/data/fusion_model.json, the search uses its weights after `medrag db migrate`.")
def fit_fusion_command(per_kind: int, seed: int, out_file: Path) -> None:
    """Fit the search's leg weights on (phrase, document) pairs the current releases give, never the eval sets."""
    from medrag.cli.retrieval import query_embedder
    from medrag.core import progress
    from medrag.retrieval.fusion import KINDS, collect_rows, fit_fusion, write_rows
    from medrag.retrieval.training import training_pairs

    writable(out_file)
    embedder = query_embedder()
    with get_engine().connect() as conn:
        pairs = training_pairs(conn, per_kind, seed, KINDS)
        with progress.track("fit-fusion: search", total=len(pairs), unit="phrases") as tracker:
            rows = collect_rows(conn, embedder, pairs, progress=lambda _done, _total: tracker.advance())
    model = fit_fusion(rows)
    trained = write_fit(out_file, pairs, seed, model, rows, write_rows)
    first = model["first_in_group"]
    click.echo(f"{trained}, {model['pairs_found']} found by a leg, {model['rows']:,} rows: weights "
               + ", ".join(f"{name} {value}" for name, value in model["weights"].items())
               + f"; the pair's document first in its group {first['hand_set']:.3f} hand-set, "
               f"{first['fitted']:.3f} fitted -> {out_file}")


COMMANDS = [eval_group]
