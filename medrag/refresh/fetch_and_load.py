"""Fetch and load releases of each CMS source: the plain functions under `medrag fetch/load/refresh` and the flows."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path, PurePosixPath

import httpx
from sqlalchemy import Engine

from medrag.core import progress
from medrag.core.config import Settings
from medrag.core.errors import MedragError
from medrag.ingest.fetch import FetchRecord, fetch, get_text
from medrag.ingest.manifest import Manifest, ManifestError
from medrag.ingest.releases import LoadOutcome, load_release, loaded_release_with_same_files
from medrag.sources.common import ReleaseCandidate, quarter_label
from medrag.sources.handlers import release_handler

PAGE_MAX_BYTES = 20 * 1024 * 1024
STATE_DIR = "_state"  # conditional-request state (ETag, Last-Modified, hash) of the latest fetch per URL

Progress = Callable[[str], None]


@dataclass
class FetchedRelease:
    """A release on disk: its files (with hashes) and how many bytes this fetch actually downloaded."""

    source: str
    label: str
    records: list[FetchRecord]
    downloaded_bytes: int = 0
    seconds: float = 0.0

    @property
    def release_dir(self) -> Path:
        """Folder holding this release's manifest.json (the files themselves are content-addressed)."""
        return Path(self.records[0].path).parents[1] / self.label if self.records else Path()


@dataclass
class RefreshSummary:
    """Per source and release: what was fetched and loaded."""

    fetched: list[FetchedRelease] = field(default_factory=list)
    loaded: list[LoadOutcome] = field(default_factory=list)


def _choose(candidates: list[ReleaseCandidate], release: str | None, source: str) -> list[ReleaseCandidate]:
    if not candidates:
        raise MedragError(f"no {source} release found on its page")
    if release in (None, "latest"):
        return candidates[:1]
    if release == "all":
        return candidates
    chosen = [candidate for candidate in candidates if candidate.label == release]
    if not chosen and len(candidates) == 1 and candidates[0].label is None:
        # Sources whose pages carry no release name (MCD, IOM) take the label the user gives.
        return [ReleaseCandidate(release, candidates[0].files)]
    if not chosen:
        found = ", ".join(str(candidate.label) for candidate in candidates)
        raise MedragError(f"{source} release {release!r} not found; the page lists: {found}")
    return chosen


def _label_from_files(records: list[FetchRecord]) -> str:
    """A quarter label from the newest Last-Modified of the files, else from today."""
    stamps = []
    for record in records:
        if record.last_modified:
            try:
                stamps.append(parsedate_to_datetime(record.last_modified).date())
            except (TypeError, ValueError):
                continue
    return quarter_label(max(stamps) if stamps else dt.date.today())


def _store_by_content(result: FetchRecord, files_dir: Path) -> FetchRecord:
    """Move a fresh download to files/<sha256 prefix>-<name> so releases never overwrite each other's bytes."""
    target = files_dir / f"{result.sha256[:16]}-{PurePosixPath(result.path).name}"
    if Path(result.path) != target:
        files_dir.mkdir(parents=True, exist_ok=True)
        os.replace(result.path, target)
        result.path = target
    return result


def fetch_source(
    settings: Settings,
    source_name: str,
    *,
    release: str | None = None,
    force: bool = False,
    client: httpx.Client | None = None,
    progress: Progress | None = None,
) -> list[FetchedRelease]:
    """Discover the source's releases, download the chosen ones (conditionally unless forced), save manifests."""
    source = release_handler(source_name)
    limits = {"timeout": settings.http_timeout, "retries": settings.http_retries, "backoff": 0.5}
    store = settings.downloads_dir / source_name
    state = Manifest.load_or_new(store / STATE_DIR, source_name, "latest")
    report = progress or (lambda _message: None)

    def get_page(url: str) -> str:
        return get_text(url, client=client, max_bytes=PAGE_MAX_BYTES, **limits)

    candidates = _choose(source.discover(settings.source_urls[source_name], get_page), release, source_name)
    fetched = []
    for candidate in candidates:
        started = time.perf_counter()
        records, downloaded = [], 0
        for remote in candidate.files:
            report(f"{source_name}: {remote.url}")
            result = fetch(
                remote.url, store / "incoming", previous=None if force else state.record_for(remote.url), client=client,
                max_bytes=settings.max_download_bytes, **limits,
            )
            if result.changed:
                downloaded += result.bytes
                result = _store_by_content(result, store / "files")
                state.add(result)
            records.append(result)
        state.save(store / STATE_DIR)
        label = candidate.label or _label_from_files(records)
        Manifest(source_name, label, records).save(store / label)
        fetched.append(FetchedRelease(source_name, label, records, downloaded, time.perf_counter() - started))
    return fetched


def fetched_releases(settings: Settings, source_name: str, release: str | None = None) -> list[FetchedRelease]:
    """Releases already on disk for a source (from their manifests), newest label first."""
    store = settings.downloads_dir / source_name
    found = []
    for manifest_path in sorted(store.glob("*/manifest.json"), reverse=True):
        if manifest_path.parent.name == STATE_DIR:
            continue
        try:
            manifest = Manifest.load(manifest_path.parent)
        except ManifestError:
            continue
        if release in (None, "all", "latest") or manifest.label == release:
            found.append(FetchedRelease(source_name, manifest.label, manifest.files))
    if not found:
        raise MedragError(f"nothing fetched for {source_name}{f' release {release}' if release else ''}; "
                          "run `medrag fetch` first")
    return found[:1] if release == "latest" else found


def load_fetched(
    engine: Engine, settings: Settings, fetched: FetchedRelease, *, force: bool = False, promote: bool = True
) -> LoadOutcome:
    """Load a fetched release unless an identical one (same URLs and hashes) is already loaded.

    promote: make it current at once (False: the refresh does it with its documents).
    """
    source = release_handler(fetched.source)
    with engine.connect() as conn:
        same = loaded_release_with_same_files(conn, fetched.source, fetched.records)
    if same and not force:
        return LoadOutcome(fetched.source, same, "unchanged")
    for record in fetched.records:
        if not Path(record.path).is_file():
            raise MedragError(f"{fetched.source} {fetched.label}: {record.path} is gone; run `medrag fetch --force`")
    scratch = settings.downloads_dir / fetched.source / "work"
    scratch.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(dir=scratch))
    try:
        manifest = Manifest(fetched.source, fetched.label, fetched.records).to_dict()
        with progress.counting(progress.track(f"{fetched.source} {fetched.label}: load", unit="rows")):
            return load_release(
                engine, fetched.source, fetched.label, source.tables, fetched.records,
                lambda conn, release_id: source.load(conn, release_id, [Path(r.path) for r in fetched.records],
                                                     workdir),
                manifest, promote=promote,
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
