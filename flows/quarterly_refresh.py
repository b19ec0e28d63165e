"""The quarterly refresh as Prefect flows: thin orchestration over the plain stage functions of medrag.refresh.

quarterly_refresh runs one subflow per source (discover -> download -> extract/load -> chunk/enrich -> changes ->
embed/index) in medrag.core.registry.SOURCE_NAMES; a failing source does not stop the others, and the run ends FAILED
naming it. The run publishes what the releases changed as a markdown artifact, then asks the code finder's recent
calls again on the new data (its cache's key names the data, so a refresh leaves every kept answer behind).
Every task calls one plain function, so each stays testable without Prefect through `task.fn`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from pathlib import Path
from typing import Any
from uuid import UUID

from medrag_flows import DEPLOYMENT_NAME, ENTRYPOINT, FLOW_NAME, QUARTERLY_CRON, refresh_timezone
from prefect import Flow, flow, get_run_logger, task, unmapped
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import TaskRun
from prefect.context import TaskRunContext
from prefect.schedules import Cron, Schedule
from prefect.states import State
from sqlalchemy import text
from sqlalchemy.engine import make_url

from medrag.changes.compute import ChangeSetOutcome
from medrag.changes.digest import read_digest
from medrag.changes.render import markdown
from medrag.codes.cache import WarmError, warm_code_cache
from medrag.core.config import Settings, load_settings
from medrag.core.db import get_engine
from medrag.core.errors import MedragError
from medrag.core.progress import LineSink, reporting
from medrag.index.embedding import DocumentEmbedder, EmbedStats, combine_stats, embed_pending
from medrag.ingest.fetch import DownloadError
from medrag.ingest.releases import LoadOutcome
from medrag.refresh import changes_stage, documents_stage, fetch_stage, load_stage, ordered_sources, timed
from medrag.refresh.documents import DocumentStats
from medrag.refresh.fetch_and_load import FetchedRelease

# Two refreshes at once would load the same releases side by side and embed the same chunks twice.
REFRESH_CONCURRENCY = 1
DEPLOYMENT_TAGS = ["medrag"]
# Client errors that another attempt a minute later cannot fix (408 and 429 are about timing, so they can).
_PERMANENT_HTTP_STATUSES = frozenset(range(400, 500)) - {408, 429}
# The key of the digest artifact each run publishes: the Prefect UI keeps its versions, one per run.
DIGEST_ARTIFACT_KEY = "release-changes"


class RefreshFailed(MedragError):
    """One or more sources failed; the others ran. Carries the summary of what did run."""

    def __init__(self, failures: dict[str, str], summary: dict[str, Any] | None = None) -> None:
        named = "; ".join(f"{source}: {reason}" for source, reason in failures.items())
        super().__init__(f"refresh failed for {named}")
        self.failures = failures
        self.summary = summary or {}

    def __reduce__(self) -> tuple[Any, ...]:
        # Prefect may pickle a failed run's exception into result storage; keep both attributes across that.
        return (RefreshFailed, (self.failures, self.summary))


# -- retry and cache policies --------------------------------------------------------------------------------------


def worth_retrying(_task: object, _task_run: TaskRun, state: State) -> bool:
    """Retry a fetch only when a later attempt could succeed: exhausted transient failures, not 404s or bad files."""
    error = state.result(raise_on_failure=False)
    if isinstance(error, DownloadError):
        return error.status not in _PERMANENT_HTTP_STATUSES
    # Other MedragErrors (nothing on the page, a corrupt archive) are about the content, which will not change.
    return not isinstance(error, MedragError)


def database_identity(settings: Settings) -> str:
    """host:port/dbname#oid of the settings' database; the oid changes when a database of that name is re-created."""
    engine = get_engine(settings)
    url = make_url(engine.url)
    with engine.connect() as conn:
        oid = conn.execute(text("SELECT oid FROM pg_database WHERE datname = current_database()")).scalar()
    return f"{url.host}:{url.port}/{url.database}#{oid}"


def load_cache_key(_context: TaskRunContext | None, parameters: dict[str, Any]) -> str:
    """Cache key of a load: database identity + source + sorted (url, sha256) of the release's files."""
    fetched: FetchedRelease = parameters["fetched"]
    identity = {
        "database": database_identity(parameters["settings"]),
        "source": fetched.source,
        "files": sorted([record.url, record.sha256] for record in fetched.records),
    }
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    return f"medrag-load-{fetched.source}-{digest}"


# -- tasks: one plain stage function each ------------------------------------------------------------------------


@task(name="fetch", task_run_name="fetch {source}", retries=2, retry_delay_seconds=[10, 60],
      retry_condition_fn=worth_retrying, cache_policy=NO_CACHE)
def fetch_task(settings: Settings, source: str, release: str | None, force: bool) -> list[FetchedRelease]:
    """Discover + download one source's releases (conditional requests unless forced)."""
    return fetch_stage(settings, source, release, force)


@task(name="load", task_run_name="load {fetched.source} {fetched.label}", cache_key_fn=load_cache_key)
def load_task(settings: Settings, fetched: FetchedRelease, force: bool) -> LoadOutcome:
    """Extract + load one fetched release in one transaction (cached: same files into the same database); the
    documents task makes it current."""
    return load_stage(get_engine(settings), settings, fetched, force)


@task(name="documents", task_run_name="documents {source}", cache_policy=NO_CACHE)
def documents_task(settings: Settings, source: str, force: bool) -> DocumentStats | None:
    """Chunk + enrich the source's newest loaded release (skipped when it has them already), then make it current."""
    return documents_stage(get_engine(settings), source, force)


@task(name="changes", task_run_name="changes {source}", cache_policy=NO_CACHE)
def changes_task(settings: Settings, source: str, force: bool) -> list[ChangeSetOutcome]:
    """What each loaded release changed against the one before it (change sets kept; new pairs computed)."""
    return changes_stage(get_engine(settings), source, force)


@functools.lru_cache(maxsize=2)
def shared_embedder(model_path: str, backend: str, cache_dir: Path) -> DocumentEmbedder:
    """One embedder per model and backend per process: it loads once, and only when something needs embedding."""
    return DocumentEmbedder(model_path, backend=backend, cache_dir=cache_dir)


@task(name="embed", task_run_name="embed after {source} (shard {shard} of {shards})", cache_policy=NO_CACHE)
def embed_task(settings: Settings, source: str, shard: int = 0, shards: int = 1) -> EmbedStats:
    """Give every chunk (of one shard) without a vector one (reused by content hash, else encoded); ANALYZE chunk.

    Embedding is not per source (every pending chunk gets its vector); `source` names the task run.
    """
    embedder = shared_embedder(settings.embedding_model, settings.embedding_backend, settings.models_dir)
    label = f"{source}: embed" + (f" (shard {shard + 1} of {shards})" if shards > 1 else "")
    return embed_pending(get_engine(settings), embedder, shard=shard, shards=shards if shards > 1 else None,
                         label=label)


def embed_stage(settings: Settings, source: str) -> EmbedStats:
    """The embedding stage: one task, or MEDRAG_EMBED_SHARDS tasks mapped over the flow's task runner."""
    if settings.embed_shards <= 1:
        return embed_task(settings, source)
    futures = embed_task.map(unmapped(settings), unmapped(source), shard=list(range(settings.embed_shards)),
                             shards=unmapped(settings.embed_shards))
    return combine_stats([future.result() for future in futures])


@task(name="warm code cache", cache_policy=NO_CACHE)
def warm_task(settings: Settings) -> dict[str, Any]:
    """Ask the code finder's recent calls again on the refreshed data (medrag.codes.cache). A warm-up that stops is
    reported, not a failed refresh: the data is in, and users' first asks only cost the finder again."""
    with reporting(LineSink(get_run_logger().info)):
        try:
            return warm_code_cache(get_engine(settings)).as_json()
        except WarmError as error:
            get_run_logger().warning(str(error))
            return {"error": str(error)}


def source_flow(settings: Settings) -> Flow:
    """The per-source flow, on a Dask cluster's task runner when MEDRAG_DASK_ADDRESS names one."""
    if not settings.dask_address:
        return refresh_source_flow
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError as error:
        raise RuntimeError("MEDRAG_DASK_ADDRESS is set but prefect-dask is not installed: "
                           "pip install 'medrag[dask]'") from error
    return refresh_source_flow.with_options(task_runner=DaskTaskRunner(address=settings.dask_address))


# -- flows ---------------------------------------------------------------------------------------------------------


def _stage_line(message: str) -> None:
    """A progress line for the run's log; `medrag refresh` prints exactly these (see medrag_flows.commands)."""
    get_run_logger().info(message, extra={"medrag_stage": True})


def _load_summary(outcome: LoadOutcome, cached: bool) -> dict[str, Any]:
    if cached:
        # The task did not run: the same files were loaded into this database before.
        return {"label": outcome.label, "status": "unchanged", "rows": {}, "missing": [], "notes": {}, "cached": True}
    return {"label": outcome.label, "status": outcome.status, "rows": dict(outcome.rows),
            "missing": list(outcome.missing), "notes": dict(outcome.notes), "cached": False}


@flow(name="refresh-source", flow_run_name="refresh-{source}")
def refresh_source_flow(source: str, release: str | None = None, force: bool = False) -> dict[str, Any]:
    """discover -> download -> extract/load -> chunk/enrich -> embed/index for one source; a JSON-able summary.

    Progress (bytes, rows, documents, chunks with rate and ETA) goes to the run's log, a line per tenth, so the
    Prefect UI shows it.
    """
    with reporting(LineSink(get_run_logger().info)):
        return _refresh_source(load_settings(), source, release, force)


def _refresh_source(settings: Settings, source: str, release: str | None, force: bool) -> dict[str, Any]:
    seconds: dict[str, float] = {}
    _stage_line(f"{source}: discover + download")
    fetched = timed(seconds, "download", lambda: fetch_task(settings, source, release, force))
    loads = []
    load = load_task.with_options(refresh_cache=force)
    for item in fetched:
        _stage_line(f"{source} {item.label}: extract + load")
        state = timed(seconds, "load", lambda item=item: load(settings, item, force, return_state=True))
        loads.append(_load_summary(state.result(), cached=state.name == "Cached"))
    _stage_line(f"{source}: chunk + enrich")
    documents = timed(seconds, "documents", lambda: documents_task(settings, source, force))
    _stage_line(f"{source}: what changed")
    changes = timed(seconds, "changes", lambda: changes_task(settings, source, force))
    _stage_line(f"{source}: embed + index")
    embedded = timed(seconds, "embed", lambda: embed_stage(settings, source))
    return {
        "releases": [{"label": item.label, "files": len(item.records), "downloaded_bytes": item.downloaded_bytes}
                     for item in fetched],
        "loads": loads,
        "documents": None if documents is None else {
            "label": documents.label, "documents": dict(documents.documents), "chunks": documents.chunks,
            "skipped": documents.skipped,
        },
        "changes": [{"from": item.from_label, "to": item.to_label, "counts": item.counts, "notes": item.notes,
                     "computed": item.computed} for item in changes],
        "embedding": {"embedded": embedded.embedded, "reused": embedded.reused,
                      "chunks_per_second": round(embedded.chunks_per_second, 1),
                      "index_seconds": round(embedded.seconds_index, 3),
                      # the model waiting for texts: reading and tokenising, not the model, set the pace
                      "starved_seconds": round(embedded.seconds_starved, 3), "model": embedded.model},
        "seconds": {stage: round(value, 3) for stage, value in seconds.items()},
    }


def _failure_reason(state: State) -> str:
    error = state.result(raise_on_failure=False)
    reason = str(error) if isinstance(error, BaseException) else (state.message or state.name or "failed")
    return reason.strip().splitlines()[0] if reason.strip() else type(error).__name__


@flow(name=FLOW_NAME)
def quarterly_refresh(release: str | None = None, sources: list[str] | None = None, force: bool = False) -> dict:
    """Refresh the sources in order; FAILED naming the failed sources (after the others ran), else a summary."""
    started = time.perf_counter()
    summary: dict[str, Any] = {"release": release, "force": force, "sources": {}, "failed": {}}
    settings = load_settings()
    per_source = source_flow(settings)
    for source in ordered_sources(sources):
        state = per_source(source, release, force, return_state=True)
        if state.is_completed():
            summary["sources"][source] = state.result()
        else:
            summary["failed"][source] = _failure_reason(state)
    if summary["sources"]:
        publish_digest(list(summary["sources"]))
        summary["code_cache"] = warm_task(settings)
    summary["seconds"] = round(time.perf_counter() - started, 3)
    if summary["failed"]:
        raise RefreshFailed(summary["failed"], summary)
    return summary


def publish_digest(sources: list[str]) -> str:
    """The refreshed sources' digest (their current release against the one before) as the run's markdown artifact,
    shown in the Prefect UI; returns the markdown."""
    from prefect.artifacts import create_markdown_artifact

    with get_engine(load_settings()).connect() as conn:
        digest = markdown(read_digest(conn, sources=sources))
    create_markdown_artifact(markdown=digest, key=DIGEST_ARTIFACT_KEY,
                             description="What this refresh's releases changed (medrag changes --markdown)")
    return digest


# -- the quarterly deployment ------------------------------------------------------------------------------------


def quarterly_schedule(cron: str = QUARTERLY_CRON, timezone: str | None = None) -> Schedule:
    """The refresh schedule: the quarterly cron read in MEDRAG_REFRESH_TIMEZONE (America/New_York by default)."""
    return Cron(cron, timezone=timezone or refresh_timezone())


def serve_quarterly(cron: str = QUARTERLY_CRON, timezone: str | None = None) -> None:
    """Create the 'quarterly' deployment on PREFECT_API_URL's server and run its scheduled runs in this process."""
    quarterly_refresh.serve(name=DEPLOYMENT_NAME, schedules=[quarterly_schedule(cron, timezone)],
                            global_limit=REFRESH_CONCURRENCY, tags=DEPLOYMENT_TAGS)


def ensure_process_work_pool(name: str) -> None:
    """Create the work pool (type process, Prefect's default job template) unless it exists."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound
    from prefect.workers.process import ProcessWorker

    with get_client(sync_client=True) as client:
        try:
            client.read_work_pool(name)
        except ObjectNotFound:
            try:
                client.create_work_pool(WorkPoolCreate(
                    name=name, type=ProcessWorker.type,
                    base_job_template=ProcessWorker.get_default_base_job_template(),
                ))
            except ObjectAlreadyExists:  # another worker created it meanwhile
                pass


def deploy_quarterly(work_pool: str, cron: str = QUARTERLY_CRON, timezone: str | None = None) -> UUID:
    """Register the 'quarterly' deployment for a process work pool (no serving): workers import the flow from the
    medrag installed beside them (its module entrypoint), so nothing is pulled and no source folder is needed."""
    ensure_process_work_pool(work_pool)
    deployment = quarterly_refresh.to_deployment(
        name=DEPLOYMENT_NAME, schedules=[quarterly_schedule(cron, timezone)], work_pool_name=work_pool,
        parameters={"release": None, "sources": None, "force": False}, concurrency_limit=REFRESH_CONCURRENCY,
        tags=DEPLOYMENT_TAGS,
    )
    deployment.entrypoint = ENTRYPOINT
    return deployment.apply()
