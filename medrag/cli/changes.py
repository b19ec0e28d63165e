"""`medrag changes`: what each release changed, for everyone or for a coder's own code list."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import click

from medrag.core.db import get_engine
from medrag.core.errors import MedragError
from medrag.core.registry import SOURCE_NAMES


def _date(value: str | None) -> dt.date | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError as exc:
        raise MedragError(f"--since {value!r} is not a date (YYYY-MM-DD)") from exc


@click.command("changes")
@click.option("--source", "sources", multiple=True, type=click.Choice(SOURCE_NAMES),
              help="Source(s) to report (default: every source).")
@click.option("--from", "from_label", help="The older release (with --to and one --source), e.g. FY2025.")
@click.option("--to", "to_label", help="The newer release (with --from), e.g. FY2026.")
@click.option("--since", help="Every change dated on or after this day (YYYY-MM-DD), in every kept change set.")
@click.option("--codes", "codes_file", type=click.Path(dir_okay=False, path_type=Path),
              help="A file of codes (one per line, HCPCS or ICD-10-CM, with or without the dot): only what "
                   "touches them (the code, its header, an LCD or NCD that lists it).")
@click.option("--json", "as_json", is_flag=True, help="Print the digest as one JSON object.")
@click.option("--csv", "as_csv", is_flag=True, help="Print every change as a CSV row.")
@click.option("--markdown", "as_markdown", is_flag=True, help="Print the digest as markdown (the refresh's artifact).")
@click.option("--limit", default=25, show_default=True, type=click.IntRange(min=1),
              help="Changes shown per kind in markdown (per change set in the summary: 10).")
def changes_command(sources: tuple[str, ...], from_label: str | None, to_label: str | None, since: str | None,
                    codes_file: Path | None, as_json: bool, as_csv: bool, as_markdown: bool, limit: int) -> None:
    """What changed: by default the last refresh of each source (its current release against the one before).

    Change sets not computed yet (or computed by an older medrag) are computed first; a source with one loaded
    release says so instead of printing an empty digest.
    """
    from medrag.changes.codes import read_code_list
    from medrag.changes.compute import change_set_between, update_changes
    from medrag.changes.digest import read_digest
    from medrag.changes.render import csv_text, markdown, summary_text

    if sum((as_json, as_csv, as_markdown)) > 1:
        raise MedragError("choose one of --json, --csv and --markdown")
    if bool(from_label) != bool(to_label):
        raise MedragError("--from and --to go together")
    codes = read_code_list(codes_file) if codes_file else None
    since_day = _date(since)
    engine = get_engine()
    if from_label and to_label:
        if len(sources) != 1:
            raise MedragError("--from/--to name one source's releases: give one --source")
        change_set_between(engine, sources[0], from_label, to_label)
    else:
        for source in sources or SOURCE_NAMES:
            update_changes(engine, source)
    with engine.connect() as conn:
        digest = read_digest(conn, sources=list(sources) or None, from_label=from_label, to_label=to_label,
                             since=since_day, codes=codes)
    if as_json:
        click.echo(json.dumps(digest.as_json(), default=str))
    elif as_csv:
        click.echo(csv_text(digest), nl=False)
    elif as_markdown:
        click.echo(markdown(digest, limit=limit))
    else:
        click.echo(summary_text(digest))


COMMANDS = [changes_command]
