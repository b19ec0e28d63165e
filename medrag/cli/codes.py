"""`medrag codes TERM` and `medrag eval codes`: clinical terms to ICD-10-CM / HCPCS codes, and its evaluation."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from medrag.cli.evaluation import eval_group, overridden_engine, seed_option, set_option, writable, write_fit
from medrag.cli.retrieval import query_embedder
from medrag.codes.clinical_tables import DEFAULT_BASE_URL
from medrag.codes.finder import DEFAULT_TOP, MAX_TOP, CodeFinder, clean_term
from medrag.codes.results import CodeSearch
from medrag.core.db import get_engine, read_engine
from medrag.core.tuning import CONFIDENCE_MODEL_FILE

if TYPE_CHECKING:
    from medrag.codes.evaluation import EvalReport

GOALS_MISSED = 1
# The dev-set goals of issue 7 (accuracy decides the exit status; latency depends on the machine).
GOAL_TOP1, GOAL_TOP5, GOAL_P95_MS = 0.85, 0.95, 150.0


@click.command("codes")
@click.argument("term")
@click.option("--system", "systems", multiple=True, metavar="ICD-10-CM|HCPCS",
              help="Search only this code system (repeatable); default: both.")
@click.option("--release", default=None, help="Release label (FY2021, 2019 ...); default: the current ones.")
@click.option("--top", default=DEFAULT_TOP, show_default=True, type=click.IntRange(1, MAX_TOP),
              help="Codes per system.")
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object.")
@click.option("--external", is_flag=True,
              help="Also ask the NLM Clinical Tables API for LOINC, RxTerms, UCUM and HPO codes (network).")
@click.option("--external-url", default=DEFAULT_BASE_URL, show_default=True, help="Clinical Tables API base URL.")
def codes_command(term: str, systems: tuple[str, ...], release: str | None, top: int, as_json: bool,
                  external: bool, external_url: str) -> None:
    """ICD-10-CM and HCPCS codes for a clinical term (or a code), with confidence, related LCDs and a trace."""
    clean_term(term)
    with CodeFinder(read_engine(), embedder_factory=query_embedder, cached=True) as finder:
        search = finder.find(term, systems=systems, release=release, top=top,
                             external_url=external_url if external else None)
    if as_json:
        click.echo(json.dumps(search.as_json()))
        return
    click.echo(render(search))


def render(search: CodeSearch) -> str:
    """The human-readable answer: summary, one block per code, then the reasoning trace."""
    lines = [search.summary, ""]
    for result in search.results:
        billable = "" if result.billable is None else ("  billable" if result.billable else "  not billable")
        lines.append(f"{result.system:<9} {result.code:<8} {result.confidence:.2f} {result.tier:<8} "
                     f"{result.display}{billable}")
        for item in result.related:
            who = f" ({'; '.join(item.contractors)})" if item.contractors else ""
            relation = "parent" if item.source == "icd10cm" else item.source.upper()
            # Without lcd.csv in the export an LCD's title is just "LCD L33718": not worth printing twice.
            title = "" if item.title == f"LCD {item.key}" else f" {item.title}"
            lines.append(f"{'':28}{relation} {item.key}{title}{who}")
    if search.results:
        lines.append("")
    if search.external is not None:
        lines.append("External (NLM Clinical Tables; not from the local code tables):")
        lines += [f"  {code.system:<8} {code.code:<12} {code.display}" for code in search.external] or ["  nothing"]
        lines.append("")
    lines.append("Trace:")
    lines += [f"  - {step}" for step in search.trace]
    return "\n".join(lines)


def calibration_line(report: EvalReport) -> str:
    """Per confidence tier, the codes listed and the share of them expected, on one line."""
    first = report.first_high
    return ("  calibration: " + "; ".join(f"{tier} {figures['listed']} listed, {figures['correct']:.0%} expected"
                                          for tier, figures in report.calibration.items())
            + f"; first results high: {first['listed']}, {first['correct']:.0%} expected")


@eval_group.command("codes")
@click.option("--terms", "terms_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL dev set: term, system, expected (codes a coder would accept).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@set_option
def eval_codes(terms_file: Path, as_json: bool, overrides: tuple[str, ...]) -> None:
    """Code lookup on a dev set: top-1 / top-5 accuracy and warm p50 / p95 latency."""
    from medrag.codes.evaluation import evaluate, read_dev_set

    terms = read_dev_set(terms_file)
    engine, settings = overridden_engine(overrides)
    with CodeFinder(engine, embedder_factory=query_embedder) as finder:
        report = evaluate(finder, terms)
    goals = {"top1": report.top1 >= GOAL_TOP1, "top5": report.top5 >= GOAL_TOP5,
             "p95_ms": report.latency_ms["p95"] <= GOAL_P95_MS}
    if as_json:
        click.echo(json.dumps({**report.as_json(), "goals_met": goals, "settings_overridden": settings}))
    else:
        click.echo(f"{report.terms} terms: top-1 {report.top1:.3f} (goal {GOAL_TOP1}), top-5 {report.top5:.3f} "
                   f"(goal {GOAL_TOP5}); latency p50 {report.latency_ms['p50']:.0f} ms, "
                   f"p95 {report.latency_ms['p95']:.0f} ms (goal {GOAL_P95_MS:.0f})")
        for system, figures in report.by_system.items():
            click.echo(f"  {system}: {figures['terms']} terms, top-1 {figures['top1']:.3f}, "
                       f"top-5 {figures['top5']:.3f}")
        click.echo(calibration_line(report))
        for miss in report.misses:
            where = f"rank {miss.rank}" if miss.rank else "not found"
            click.echo(f"  miss ({where}): {miss.term!r} expected {', '.join(miss.expected[:4])}; "
                       f"got {', '.join(miss.found) or 'nothing'}")
    if not (goals["top1"] and goals["top5"]):
        sys.exit(GOALS_MISSED)



@eval_group.command("pairs")
@click.option("--per-kind", default=1000, show_default=True, type=click.IntRange(min=1),
              help="Pairs of each kind.")
@click.option("--kind", "kinds", multiple=True,
              metavar="index|inclusion|hcpcs_short|negation|drug|reference|side|index_side|neoplasm",
              help="Which kinds of pair (repeatable); default: all: Index paths, inclusion terms, HCPCS short "
                   "descriptions, Index paths and inclusion terms that state a negation, Table of Drugs rows and "
                   "columns, Index entries that refer elsewhere, Tabular descriptions that name a side, Index paths "
                   "to a code of unspecified side with a side named, Index entries that send the reader to a "
                   "Neoplasm Table column with a site of the table.")
@seed_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@set_option
def eval_pairs(per_kind: int, kinds: tuple[str, ...], seed: int, as_json: bool, overrides: tuple[str, ...]) -> None:
    """Code lookup on (phrase, code) pairs the current releases give, never the eval sets: top-1 / top-5 by kind."""
    from medrag.codes.evaluation import PAIR_SYSTEMS, accuracy_by, evaluate, pair_terms
    from medrag.core import progress
    from medrag.retrieval.training import pairs_hash, training_pairs

    unknown = [kind for kind in kinds if kind not in PAIR_SYSTEMS]
    if unknown:
        raise click.BadParameter(f"{unknown[0]!r} is not one of {', '.join(PAIR_SYSTEMS)}", param_hint="--kind")
    engine, settings = overridden_engine(overrides)
    with engine.connect() as conn:
        pairs = training_pairs(conn, per_kind, seed, kinds or tuple(PAIR_SYSTEMS))
    with progress.track("eval pairs", total=len(pairs), unit="phrases") as tracker, \
            CodeFinder(engine, embedder_factory=query_embedder) as finder:
        report = evaluate(finder, pair_terms(pairs), progress=tracker.advance)
    by_kind = accuracy_by(report, [pair.kind for pair in pairs])
    if as_json:
        click.echo(json.dumps({**report.as_json(), "by_kind": by_kind, "seed": seed, "per_kind": per_kind,
                               "sha256": pairs_hash(pairs), "settings_overridden": settings}))
        return
    click.echo(f"{report.terms} pairs (seed {seed}): top-1 {report.top1:.3f}, top-5 {report.top5:.3f}; latency "
               f"p50 {report.latency_ms['p50']:.0f} ms, p95 {report.latency_ms['p95']:.0f} ms")
    for kind, figures in by_kind.items():
        click.echo(f"  {kind}: {figures['terms']} pairs, top-1 {figures['top1']:.3f}, top-5 {figures['top5']:.3f}")
    click.echo(calibration_line(report))


@eval_group.command("fit-confidence")
@click.option("--terms", "terms_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL dev set to fit on (never a holdout).")
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=CONFIDENCE_MODEL_FILE,
              show_default=True, help="Where the fitted model is written.")
def fit_confidence(terms_file: Path, out_file: Path) -> None:
    """Fit the code finder's confidence calibration (a logistic curve from score to probability)."""
    from medrag.codes.evaluation import read_dev_set
    from medrag.codes.fit import collect_examples, fit_confidence_model
    from medrag.core.logistic import write_model

    terms = read_dev_set(terms_file)
    with CodeFinder(get_engine(), embedder_factory=query_embedder) as finder:
        examples = collect_examples(finder, terms)
    model = fit_confidence_model(examples, terms_file.name)
    write_model(model, out_file)
    click.echo(f"{model['examples']:,} listed codes of {model['terms']} terms ({model['accepted']} accepted): "
               f"confidence = sigmoid({model['score_weight']:.2f} x score {model['behind_weight']:+.2f} x behind "
               f"{model['best_weight']:+.2f} x best {model['intercept']:+.2f}), "
               f"log loss {model['log_loss']:.3f} -> {out_file}; `medrag db migrate` puts it to use")

@eval_group.command("fit-ranker")
@click.option("--per-kind", default=150, show_default=True, type=click.IntRange(min=10),
              help="Training pairs of each kind (Index paths, inclusion terms, HCPCS short descriptions).")
@seed_option
@click.option("--out", "out_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Where the fitted model is written (its feature rows beside it, NAME.rows.csv.gz). Copied to "
                   "medrag/data/ranker_model.json, the finder scores with it after `medrag db migrate`.")
def fit_ranker(per_kind: int, seed: int, out_file: Path) -> None:
    """Fit the finder's score weights on (phrase, code) pairs the current releases give, never the eval sets."""
    from medrag.codes.ranker import KINDS, collect_rows, fit_weights, write_rows
    from medrag.core import progress
    from medrag.retrieval.training import training_pairs

    writable(out_file)
    engine = get_engine()
    with engine.connect() as conn:
        pairs = training_pairs(conn, per_kind, seed, KINDS)
    with progress.track("fit-ranker: search", total=len(pairs), unit="phrases") as tracker, \
            CodeFinder(engine, embedder_factory=query_embedder) as finder:
        rows = collect_rows(finder, pairs, progress=lambda _done, _total: tracker.advance())
    model = fit_weights(rows)
    trained = write_fit(out_file, pairs, seed, model, rows, write_rows)
    click.echo(f"{trained}, {model['rows']:,} candidate rows ({model['positives']} the pair's code): weights "
               + ", ".join(f"{name} {value:.3f}" for name, value in model["weights"].items())
               + f"; log loss {model['log_loss']:.3f} -> {out_file}")


COMMANDS = [codes_command]
