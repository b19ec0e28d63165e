"""`medrag fetch`, `medrag load`, `medrag releases ...`: quarterly releases in, with a summary table."""

from __future__ import annotations

import json
import time

import click
from rich.console import Console
from rich.table import Table

from medrag.core.config import load_settings
from medrag.core.db import get_engine
from medrag.core.errors import MedragError
from medrag.core.registry import SOURCE_NAMES
from medrag.ingest.releases import DIFF_SPECS, LoadOutcome, diff_releases, list_releases
from medrag.refresh import fetch_and_load as pipeline

console = Console(stderr=True)

source_option = click.option(
    "--source", "sources", multiple=True, type=click.Choice(SOURCE_NAMES),
    help="Source(s) to process (default: all four).",
)
release_option = click.option(
    "--release", default=None, help="Release label (e.g. 2019, FY2021, 2026Q1), 'latest' (default) or 'all'."
)


def _progress(message: str) -> None:
    console.print(f"[dim]… {message}[/dim]", highlight=False)


def fetch_table(fetched: list[pipeline.FetchedRelease]) -> Table:
    """Files, bytes and seconds per fetched release."""
    table = Table(title="fetched")
    for column in ("source", "release", "files", "bytes on disk", "downloaded", "seconds"):
        table.add_column(column, justify="right" if column not in ("source", "release") else "left")
    for item in fetched:
        on_disk = sum(record.bytes for record in item.records)
        table.add_row(item.source, item.label, str(len(item.records)), f"{on_disk:,}", f"{item.downloaded_bytes:,}",
                      f"{item.seconds:.1f}")
    return table


def load_table(outcomes: list[LoadOutcome]) -> Table:
    """One line per table loaded (source, release, status, table, rows) plus missing members and seconds."""
    table = Table(title="loaded")
    for column in ("source", "release", "status", "table", "rows", "seconds", "missing members"):
        table.add_column(column, justify="right" if column in ("rows", "seconds") else "left")
    for outcome in outcomes:
        tables = list(outcome.rows.items()) or [("-", None)]
        for index, (name, count) in enumerate(tables):
            first = index == 0
            table.add_row(
                outcome.source if first else "", outcome.label if first else "", outcome.status if first else "",
                name, "-" if count is None else f"{count:,}", f"{outcome.seconds:.1f}" if first else "",
                (", ".join(outcome.missing) or "-") if first else "",
            )
    return table


def run_fetch(sources: tuple[str, ...], release: str | None, force: bool) -> list[pipeline.FetchedRelease]:
    """Fetch every chosen source; a failing source is reported and the others still run."""
    settings = load_settings()
    fetched, failures = [], []
    for name in sources or SOURCE_NAMES:
        try:
            fetched += pipeline.fetch_source(settings, name, release=release, force=force, progress=_progress)
        except MedragError as exc:
            failures.append(f"{name}: {exc}")
            console.print(f"[red]fetch failed[/red] {name}: {exc}", highlight=False)
    console.print(fetch_table(fetched))
    if failures:
        raise MedragError("fetch failed for " + "; ".join(failures))
    return fetched


def run_load(fetched: list[pipeline.FetchedRelease], force: bool) -> list[LoadOutcome]:
    """Load fetched releases; each source in its own transaction, failures reported after the others ran."""
    settings = load_settings()
    engine = get_engine(settings)
    outcomes, failures = [], []
    for item in fetched:
        _progress(f"loading {item.source} {item.label}")
        try:
            outcomes.append(pipeline.load_fetched(engine, settings, item, force=force))
        except MedragError as exc:
            failures.append(str(exc))
            outcomes.append(LoadOutcome(item.source, item.label, "failed", error=str(exc)))
    console.print(load_table(outcomes))
    if failures:
        raise MedragError("; ".join(failures))
    return outcomes


@click.command("fetch")
@source_option
@release_option
@click.option("--force", is_flag=True, help="Download again even when the server says nothing changed.")
def fetch_command(sources: tuple[str, ...], release: str | None, force: bool) -> None:
    """Download releases (conditional requests; unchanged files are not downloaded again)."""
    run_fetch(sources, release, force)


@click.command("load")
@source_option
@release_option
@click.option("--force", is_flag=True, help="Reload even when an identical release is already loaded.")
def load_command(sources: tuple[str, ...], release: str | None, force: bool) -> None:
    """Load fetched releases into the tables (one transaction per source and release)."""
    settings = load_settings()
    fetched = []
    for name in sources or SOURCE_NAMES:
        fetched += pipeline.fetched_releases(settings, name, release)
    run_load(fetched, force)


@click.command("ingest")
@source_option
@release_option
@click.option("--force", is_flag=True, help="Download and reload even when nothing changed.")
def ingest_command(sources: tuple[str, ...], release: str | None, force: bool) -> None:
    """Fetch, then load: the relational part of a refresh."""
    started = time.perf_counter()
    run_load(run_fetch(sources, release, force), force)
    console.print(f"done in {time.perf_counter() - started:.1f} s")


@click.group("releases")
def releases_group() -> None:
    """Releases kept side by side: list them, diff two of them."""


@releases_group.command("list")
@click.option("--source", type=click.Choice(SOURCE_NAMES), default=None)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def releases_list(source: str | None, as_json: bool) -> None:
    """Every release: status, current flag, files, bytes, rows, missing members."""
    with get_engine().connect() as conn:
        rows = list_releases(conn, source)
    if as_json:
        click.echo(json.dumps(rows, default=str, indent=2))
        return
    table = Table()
    for column in ("source", "release", "status", "current", "files", "bytes", "loaded at", "missing members"):
        table.add_column(column)
    for row in rows:
        missing = ", ".join(row["status_detail"].get("missing_members", [])) or "-"
        table.add_row(row["source"], row["label"], row["status"], "yes" if row["is_current"] else "",
                      str(row["files"]), f"{row['bytes']:,}", str(row["loaded_at"] or "-")[:19], missing)
    Console().print(table)


@releases_group.command("diff")
@click.argument("source", type=click.Choice(sorted(DIFF_SPECS)))
@click.argument("old")
@click.argument("new")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of a summary + table.")
@click.option("--limit", default=50, show_default=True, help="Rows shown per change kind in the table.")
def releases_diff(source: str, old: str, new: str, as_json: bool, limit: int) -> None:
    """Codes added, removed, or changed (description, billable flag) between two loaded releases."""
    with get_engine().connect() as conn:
        changes = diff_releases(conn, source, old, new)
    if as_json:
        for change in changes:
            click.echo(json.dumps(change, default=str))
        return
    counts = {kind: sum(1 for c in changes if c["change"] == kind) for kind in ("added", "removed", "changed")}
    click.echo(f"{source} {old} -> {new}: " + ", ".join(f"{n:,} {kind}" for kind, n in counts.items()))
    for kind in ("added", "removed", "changed"):
        shown = [c for c in changes if c["change"] == kind][:limit]
        for change in shown:
            details = {k: v for k, v in change.items() if k not in ("code", "change") and v is not None}
            click.echo(f"  {kind:8} {change['code']:10} {json.dumps(details, default=str)}")


COMMANDS = [fetch_command, load_command, ingest_command, releases_group]
