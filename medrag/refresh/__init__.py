"""The stages of a refresh as plain functions (the Prefect flows in flows/ are thin orchestration over these)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import Engine, text

from medrag.changes.compute import ChangeSetOutcome, update_changes
from medrag.core.config import Settings
from medrag.core.registry import SOURCE_NAMES, spec
from medrag.ingest.releases import LoadOutcome, newest_loaded_label
from medrag.refresh import fetch_and_load as pipeline
from medrag.refresh.documents import DocumentStats, build_documents, make_current

Progress = Callable[[str], None]


@dataclass
class SourceRefresh:
    """Everything one source's refresh did, stage by stage, with seconds per stage."""

    source: str
    fetched: list[pipeline.FetchedRelease] = field(default_factory=list)
    loaded: list[LoadOutcome] = field(default_factory=list)
    documents: list[DocumentStats] = field(default_factory=list)
    changes: list[ChangeSetOutcome] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


def ordered_sources(sources: list[str] | tuple[str, ...] | None) -> list[str]:
    """The requested sources (all by default) in refresh order; unknown names are a MedragError."""
    wanted = list(sources or SOURCE_NAMES)
    for name in wanted:
        spec(name)  # validates the name
    return [name for name in SOURCE_NAMES if name in wanted]


def fetch_stage(settings: Settings, source: str, release: str | None, force: bool) -> list[pipeline.FetchedRelease]:
    """Discover + download (conditional unless forced)."""
    return pipeline.fetch_source(settings, source, release=release, force=force)


def load_stage(engine: Engine, settings: Settings, fetched: pipeline.FetchedRelease, force: bool) -> LoadOutcome:
    """Extract + load one fetched release in one transaction (or report it unchanged); not yet current."""
    return pipeline.load_fetched(engine, settings, fetched, force=force, promote=False)


def current_label(engine: Engine, source: str) -> str | None:
    """Label of the source's current release."""
    with engine.connect() as conn:
        return conn.execute(text("SELECT label FROM release WHERE source = :s AND is_current"), {"s": source}).scalar()


def documents_stage(engine: Engine, source: str, force: bool) -> DocumentStats | None:
    """Chunk + enrich the source's newest loaded release (skipped when it has its documents), then make it current.

    Until that last commit the previous release stays current for every reader (codes, search, answers), and a
    refresh that fails before it leaves the previous release current.
    """
    with engine.connect() as conn:
        label = newest_loaded_label(conn, source)
    if label is None:
        return None
    stats = build_documents(engine, source, label, force=force)
    make_current(engine, source, label)
    return stats


def changes_stage(engine: Engine, source: str, force: bool) -> list[ChangeSetOutcome]:
    """What each loaded release changed against the one before it (computed once per pair, again when forced)."""
    return update_changes(engine, source, force=force)


def timed(seconds: dict[str, float], stage: str, work: Callable[[], object]) -> object:
    """Run one stage and add its wall time to `seconds[stage]`."""
    started = time.perf_counter()
    try:
        return work()
    finally:
        seconds[stage] = seconds.get(stage, 0.0) + time.perf_counter() - started


def refresh_source(
    settings: Settings, engine: Engine, source: str, *, release: str | None = None, force: bool = False,
    progress: Progress | None = None,
) -> SourceRefresh:
    """discover -> download -> extract/load -> chunk/enrich -> changes for one source (embedding is a separate
    stage)."""
    say = progress or (lambda _message: None)
    result = SourceRefresh(source)
    say(f"{source}: discover + download")
    result.fetched = timed(result.seconds, "download", lambda: fetch_stage(settings, source, release, force))
    for fetched in result.fetched:
        say(f"{source} {fetched.label}: extract + load")
        result.loaded.append(timed(result.seconds, "load", lambda f=fetched: load_stage(engine, settings, f, force)))
    say(f"{source}: chunk + enrich")
    documents = timed(result.seconds, "documents", lambda: documents_stage(engine, source, force))
    if documents is not None:
        result.documents.append(documents)
    say(f"{source}: what changed")
    result.changes = timed(result.seconds, "changes", lambda: changes_stage(engine, source, force))
    return result
