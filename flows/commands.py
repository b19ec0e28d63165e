"""`medrag refresh` and `medrag flows serve|deploy`: the quarterly refresh through Prefect, in-process or scheduled.

Prefect is imported inside the commands, after its environment defaults are set: importing it configures its
logging and settings once, and costs a second or two that the other medrag commands should not pay.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from collections.abc import Iterator
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click
import httpx
from medrag_flows import DEPLOYMENT_NAME, FLOW_NAME, QUARTERLY_CRON, refresh_timezone, work_pool_name
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from medrag.changes.render import counts_line
from medrag.core.errors import MedragError
from medrag.core.registry import SOURCE_NAMES

# Where `prefect server start --host 127.0.0.1` listens; used when neither the environment nor a Prefect profile
# names a server.
LOCAL_PREFECT_API_URL = "http://127.0.0.1:4200/api"
PREFECT_ENVIRONMENT_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # The temporary server `medrag refresh` starts when no server is configured needs longer than Prefect's 20 s
    # default on a busy two-core machine.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "HF_HUB_OFFLINE": "1",
}
TABLE_WIDTH = 160

progress_console = Console(stderr=True, highlight=False)


def prefect_environment(*, quiet_console: bool) -> None:
    """Set medrag's Prefect defaults (the user's own variables win); call before the first `import prefect`."""
    for name, value in PREFECT_ENVIRONMENT_DEFAULTS.items():
        os.environ.setdefault(name, value)
    if quiet_console:
        # Keep Prefect's per-task chatter and failed runs' tracebacks out of the terminal (the command prints one
        # line per stage and one error line); they still reach the API, and the UI, in full.
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")


class StageLines(logging.Handler):
    """Prints the flow's stage lines (log records marked medrag_stage) to stderr, one line each."""

    def emit(self, record: logging.LogRecord) -> None:
        """Print the record's message when it is a stage line."""
        if getattr(record, "medrag_stage", False):
            progress_console.print(f"[dim]… {escape(record.getMessage())}[/dim]")


def refresh_table(summary: dict[str, Any]) -> Table:
    """Per source and release: status, rows per table, documents, chunks, vectors embedded / reused, seconds."""
    table = Table(title="refreshed")
    columns = ("source", "release", "status", "downloaded", "table", "rows", "documents", "chunks", "embedded",
               "reused", "seconds")
    for column in columns:
        table.add_column(column, justify="left" if column in ("source", "release", "status", "table") else "right")
    done_by_source, failed = summary.get("sources", {}), summary.get("failed", {})
    for source in [name for name in SOURCE_NAMES if name in done_by_source or name in failed]:
        if source in failed:
            table.add_row(source, "", "failed", *[""] * (len(columns) - 3))
            continue
        done = done_by_source[source]
        documents = done["documents"]
        written = documents is not None and not documents["skipped"]
        totals = [
            f"{sum(documents['documents'].values()):,}" if written else "-",
            f"{documents['chunks']:,}" if written else "-",
            f"{done['embedding']['embedded']:,}", f"{done['embedding']['reused']:,}",
            f"{sum(done['seconds'].values()):.1f}",
        ]
        downloaded = {release["label"]: release["downloaded_bytes"] for release in done["releases"]}
        lines = [(load, name, count)
                 for load in done["loads"] for name, count in (load["rows"].items() or [("-", None)])]
        for index, (load, name, count) in enumerate(lines or [(None, "-", None)]):
            status = "" if load is None else load["status"] + (" (cached)" if load["cached"] else "")
            release = "" if load is None else load["label"]
            table.add_row(
                source if index == 0 else "", release, status, f"{downloaded.get(release, 0):,}" if load else "",
                name, "-" if count is None else f"{count:,}", *(totals if index == 0 else [""] * len(totals)),
            )
    return table


def changes_table(summary: dict[str, Any]) -> Table:
    """Per source: each release against the one before (and an export's own dates) with its counts of changes; a
    source with one release says so."""
    table = Table(title="what changed (medrag changes)")
    for column in ("source", "from", "to", "changes", "notes"):
        table.add_column(column)
    for source in [name for name in SOURCE_NAMES if name in summary.get("sources", {})]:
        change_sets = summary["sources"][source].get("changes") or []
        if not any(item["from"] for item in change_sets):
            table.add_row(source, "", "", "one loaded release: nothing to compare yet", "")
        for item in change_sets:
            table.add_row(source, item["from"] or "(its own dates)", item["to"], counts_line(item["counts"]),
                          f"{len(item['notes'])}" if item["notes"] else "")
    return table


def load_warnings(summary: dict[str, Any]) -> list[str]:
    """Lines for what a load kept quiet about: chapter PDFs in which no numbered section was found."""
    warnings = []
    for source, done in summary.get("sources", {}).items():
        for load in done["loads"]:
            empty = load.get("notes", {}).get("chapters_without_sections") or []
            if empty:
                warnings.append(f"warning: {source} {load['label']}: {len(empty)} chapter PDF(s) without numbered "
                                f"sections, nothing loaded from them: {', '.join(empty)}")
    return warnings


def _print_summary(summary: dict[str, Any]) -> None:
    output = Console(width=TABLE_WIDTH if not Console().is_terminal else shutil.get_terminal_size().columns)
    output.print(refresh_table(summary))
    output.print(changes_table(summary))
    for line in load_warnings(summary):
        output.print(line, style="yellow", highlight=False)
    warmed = summary.get("code_cache")
    if warmed:
        output.print(f"code cache: {warmed['error']}" if "error" in warmed else
                     f"code cache warmed: {warmed['asked']} calls asked again in {warmed['seconds']:.1f} s",
                     style="yellow" if "error" in warmed else None, highlight=False)
    failed = len(summary.get("failed", {}))
    output.print(f"refreshed {len(summary.get('sources', {}))} source(s), {failed} failed, "
                 f"in {summary.get('seconds', 0.0):.1f} s total", highlight=False)


@click.command("refresh")
@click.option("--source", "sources", multiple=True, type=click.Choice(SOURCE_NAMES),
              help="Source(s) to refresh (default: all four, in the order mcd, hcpcs, icd10cm, iom).")
@click.option("--release", default=None, help="Release label (e.g. 2019, FY2021, 2026Q1), 'latest' (default) or 'all'.")
@click.option("--force", is_flag=True, help="Download, reload, rebuild documents and bypass the load cache.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the flow's summary as JSON (rows, documents, chunks, vectors, seconds per stage).")
def refresh_command(sources: tuple[str, ...], release: str | None, force: bool, as_json: bool) -> None:
    """Fetch, load, chunk and embed through the Prefect flow, in this process; print what was loaded."""
    prefect_environment(quiet_console=True)
    from medrag_flows.quarterly_refresh import RefreshFailed, quarterly_refresh

    stage_lines = StageLines()
    flow_logger = logging.getLogger("prefect.flow_runs")
    flow_logger.addHandler(stage_lines)
    failure: RefreshFailed | None = None
    try:
        summary = quarterly_refresh(release=release, sources=list(sources) or None, force=force)
    except RefreshFailed as exc:
        summary, failure = exc.summary, exc
    finally:
        flow_logger.removeHandler(stage_lines)
    if as_json:
        click.echo(json.dumps(summary, indent=2, default=str))
    else:
        _print_summary(summary)
    if failure is not None:
        raise MedragError(str(failure))


@click.group("flows")
def flows_group() -> None:
    """The quarterly refresh as a Prefect deployment: serve it here, or register it for a work pool."""


@contextlib.contextmanager
def prefect_server() -> Iterator[str]:
    """Within: Prefect talks to PREFECT_API_URL (environment or profile, else the local default), checked healthy."""
    import prefect.settings

    api_url = prefect.settings.PREFECT_API_URL.value() or LOCAL_PREFECT_API_URL
    try:
        httpx.get(f"{api_url.rstrip('/')}/health", timeout=10).raise_for_status()
    except httpx.HTTPError as exc:
        raise MedragError(f"no Prefect server answers at {api_url} ({exc}); start one with "
                          "`prefect server start --host 127.0.0.1` or set PREFECT_API_URL") from exc
    with prefect.settings.temporary_settings(updates={prefect.settings.PREFECT_API_URL: api_url}):
        yield api_url


def _checked_schedule(cron: str, timezone: str) -> None:
    from medrag_flows.quarterly_refresh import quarterly_schedule

    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise MedragError(f"unknown timezone {timezone!r}; use an IANA name such as America/New_York") from exc
    try:
        quarterly_schedule(cron, timezone)
    except ValueError as exc:  # pydantic's ValidationError: the cron string does not parse
        raise MedragError(f"invalid cron {cron!r}: {str(exc).splitlines()[-1].strip()}") from exc


cron_option = click.option("--cron", default=QUARTERLY_CRON, show_default=True,
                           help="Cron expression of the refresh schedule.")
timezone_option = click.option("--timezone", default=None,
                               help="IANA timezone the cron is read in (default: $MEDRAG_REFRESH_TIMEZONE, "
                                    "else America/New_York).")


@flows_group.command("serve")
@cron_option
@timezone_option
def serve_command(cron: str, timezone: str | None) -> None:
    """Create the quarterly deployment on the Prefect server and run its scheduled refreshes in this process."""
    prefect_environment(quiet_console=False)
    timezone = timezone or refresh_timezone()
    _checked_schedule(cron, timezone)
    from medrag_flows.quarterly_refresh import serve_quarterly

    with prefect_server() as api_url:
        click.echo(f"serving {FLOW_NAME}/{DEPLOYMENT_NAME} on {api_url}: cron '{cron}' in {timezone}", err=True)
        serve_quarterly(cron, timezone)


@flows_group.command("deploy")
@cron_option
@timezone_option
@click.option("--work-pool", default=None, help="Process work pool (default: $MEDRAG_WORK_POOL, else medrag-pool).")
def deploy_command(cron: str, timezone: str | None, work_pool: str | None) -> None:
    """Register the quarterly deployment for a work pool (created if missing) without serving it."""
    prefect_environment(quiet_console=False)
    timezone, work_pool = timezone or refresh_timezone(), work_pool or work_pool_name()
    _checked_schedule(cron, timezone)
    from medrag_flows.quarterly_refresh import deploy_quarterly

    with prefect_server() as api_url:
        deployment_id = deploy_quarterly(work_pool, cron, timezone)
    click.echo(f"deployment {FLOW_NAME}/{DEPLOYMENT_NAME} ({deployment_id}) on {api_url}: work pool {work_pool}, "
               f"cron '{cron}' in {timezone}")


COMMANDS = [refresh_command, flows_group]
