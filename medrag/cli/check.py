"""`medrag check`: claim lines against the releases in force on their dates of service, and `medrag eval check`."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

import click

from medrag.check.checker import Summary, check_lines, check_stream
from medrag.check.lines import claim_line, count_lines, read_claim_file
from medrag.cli.evaluation import eval_group
from medrag.core.db import get_engine
from medrag.core.errors import MedragError

HAS_ERRORS = 1
FINDING_COLUMNS = ("line_no", "line_id", "rule", "verdict", "message", "release", "code", "effective", "termination")


def _finding_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for finding in result["findings"]:
        basis = finding.get("basis") or {}
        message = finding["message"]
        if finding.get("candidates"):
            message += "; " + ", ".join(f"{item['relation']} {item['code']} (from {item['effective']}: "
                                        f"{item['description']})" for item in finding["candidates"])
        rows.append({"line_no": result["line_no"], "line_id": result["line_id"], "rule": finding["rule"],
                     "verdict": finding["verdict"], "message": message,
                     "release": f"{basis['source']} {basis['release']}" if basis.get("release") else "",
                     "code": basis.get("code") or basis.get("id") or "", "effective": basis.get("effective") or "",
                     "termination": basis.get("termination") or ""})
    return rows


def render_line(result: dict[str, Any]) -> str:
    """One line's findings as a table: verdict, rule, message and the release row each rests on."""
    width = max(len(finding["verdict"]) for finding in result["findings"])
    rule_width = max(len(finding["rule"]) for finding in result["findings"])
    out = []
    for row in _finding_rows(result):
        where = " ".join(part for part in (row["release"], row["code"]) if part)
        dates = f" [{row['effective'] or '?'} .. {row['termination'] or ''}]" if row["effective"] else ""
        out.append(f"{row['verdict']:<{width}}  {row['rule']:<{rule_width}}  {row['message']}"
                   + (f"  <- {where}{dates}" if where else ""))
    return "\n".join(out)


def render_summary(summary: Summary, shown: int = 20) -> str:
    """Counts by rule and verdict, then the lines with errors (the first `shown`)."""
    data = summary.as_json()
    out = [f"{data['lines']:,} line(s), {data['lines_with_errors']:,} with errors"]
    for rule, verdicts in data["by_rule"].items():
        out.append(f"  {rule:<20} " + ", ".join(f"{verdict} {count:,}" for verdict, count in verdicts.items()))
    for result in summary.error_lines[:shown]:
        errors = [finding["message"] for finding in result["findings"] if finding["verdict"] == "error"]
        out.append(f"line {result['line_no']} ({result['line_id']}): " + "; ".join(errors))
    if len(summary.error_lines) > shown:
        out.append(f"... and {len(summary.error_lines) - shown:,} more line(s) with errors (--format csv lists all)")
    return "\n".join(out)


@click.command("check")
@click.argument("claim_file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--dos", help="Date of service, YYYY-MM-DD (one line from the options).")
@click.option("--hcpcs", help="HCPCS Level II code of the line.")
@click.option("--modifier", "modifiers", multiple=True, help="A modifier (repeatable).")
@click.option("--dx", "diagnoses", multiple=True, help="An ICD-10-CM diagnosis code (repeatable).")
@click.option("--state", help="Two-letter state of the service, for the LCDs of its contractors.")
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object.")
@click.option("--format", "output", type=click.Choice(["summary", "csv", "jsonl"]), default="summary",
              show_default=True, help="For a file: a summary, or every finding as CSV or every line as JSONL.")
def check_command(claim_file: Path | None, dos: str | None, hcpcs: str | None, modifiers: tuple[str, ...],
                  diagnoses: tuple[str, ...], state: str | None, as_json: bool, output: str) -> None:
    """Check claim lines against the releases in force on their dates of service; exit 1 when a line has an error.

    One line from the options (--dos and at least --hcpcs or --dx), or every line of a CSV or JSONL FILE with the
    columns line_id, dos, hcpcs, modifiers, dx, state (lists separated by ';' or spaces).
    """
    engine = get_engine()
    if claim_file is None:
        if not dos or not (hcpcs or diagnoses):
            raise MedragError("give a claim FILE, or --dos with --hcpcs and/or --dx")
        result = check_lines(engine, [claim_line(dos=dos, hcpcs=hcpcs, modifiers=modifiers, dx=diagnoses,
                                                 state=state)])[0]
        click.echo(json.dumps(result) if as_json else render_line(result))
        sys.exit(HAS_ERRORS if result["errors"] else 0)
    if any((dos, hcpcs, modifiers, diagnoses, state)):
        raise MedragError("give either a claim FILE or one line's options, not both")
    summary = Summary()
    results = check_stream(engine, read_claim_file(claim_file), total=count_lines(claim_file), label="check")
    if as_json:
        lines = []
        for result in results:
            summary.add(result)
            lines.append(result)
        click.echo(json.dumps({"lines": lines, "summary": summary.as_json()}))
    elif output == "jsonl":
        for result in results:
            summary.add(result)
            click.echo(json.dumps(result))
    elif output == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=FINDING_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for result in results:
            summary.add(result)
            writer.writerows(_finding_rows(result))
    else:
        for result in results:
            summary.add(result)
        click.echo(render_summary(summary))
    sys.exit(HAS_ERRORS if summary.error_lines else 0)


@eval_group.command("check")
@click.option("--lines", "lines_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL set: each {line, expected: {rule: verdict}}.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def eval_check(lines_file: Path, as_json: bool) -> None:
    """Per-rule precision and recall of the claim-line check on a set of hand-checked lines."""
    from medrag.check.evaluation import evaluate, read_check_set

    report = evaluate(get_engine(), read_check_set(lines_file))
    if as_json:
        click.echo(json.dumps(report))
    else:
        click.echo(f"{report['lines']} lines, {report['judgements']} judged rule verdicts; accuracy "
                   f"{report['accuracy']:.3f}")
        click.echo(f"{'rule':<20} {'judged':>6} {'accuracy':>8} {'error P':>8} {'error R':>8}")
        for rule, figures in report["by_rule"].items():
            click.echo(f"{rule:<20} {figures['judged']:>6} {figures['accuracy']:>8.3f} "
                       f"{_figure(figures['error_precision']):>8} {_figure(figures['error_recall']):>8}")
        for miss in report["misses"]:
            click.echo(f"  miss: line {miss['line_id']} {miss['rule']}: expected {miss['expected']}, got "
                       f"{miss['got']} ({miss['message']})")
    if report["misses"]:
        sys.exit(HAS_ERRORS)


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


COMMANDS = [check_command]
