"""Per-release manifest.json: which URLs were fetched into a release directory, with hashes and validators."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from medrag.core.errors import MedragError
from medrag.ingest.fetch import FetchRecord

MANIFEST_NAME = "manifest.json"


class ManifestError(MedragError):
    """A manifest.json that cannot be read: not JSON, or missing/invalid fields."""


@dataclass
class Manifest:
    """The files of one release of one source (e.g. source='hcpcs', label='2026-q1')."""

    source: str
    label: str
    files: list[FetchRecord] = field(default_factory=list)
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def record_for(self, url: str) -> FetchRecord | None:
        """The record fetched from `url` (the `previous` to pass to `fetch`), or None."""
        for record in self.files:
            if record.url == url:
                return record
        return None

    def add(self, record: FetchRecord) -> None:
        """Add a record, replacing any earlier record for the same URL."""
        self.files = [existing for existing in self.files if existing.url != record.url]
        self.files.append(record)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "source": self.source,
            "label": self.label,
            "created_at": self.created_at.isoformat(),
            "files": [record.to_dict() for record in self.files],
        }

    def save(self, release_dir: Path) -> Path:
        """Write `<release_dir>/manifest.json` atomically (temp file + fsync + rename); returns its path."""
        release_dir = Path(release_dir)
        release_dir.mkdir(parents=True, exist_ok=True)
        target = release_dir / MANIFEST_NAME
        handle, temp_name = tempfile.mkstemp(prefix=".manifest-", suffix=".tmp", dir=release_dir)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(self.to_dict(), out, indent=2, sort_keys=True)
                out.write("\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp_name, target)
        except BaseException:
            Path(temp_name).unlink(missing_ok=True)
            raise
        return target

    @classmethod
    def load(cls, release_dir: Path) -> Manifest:
        """Read `<release_dir>/manifest.json`; ManifestError naming the file when it is missing or invalid."""
        path = Path(release_dir) / MANIFEST_NAME
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ManifestError(f"{path}: manifest not found") from exc
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ManifestError(f"{path}: unreadable manifest: {exc}") from exc
        try:
            return cls(
                source=str(data["source"]),
                label=str(data["label"]),
                created_at=datetime.fromisoformat(data["created_at"]),
                files=[FetchRecord.from_dict(item) for item in data["files"]],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ManifestError(f"{path}: invalid manifest ({type(exc).__name__}: {exc})") from exc

    @classmethod
    def load_or_new(cls, release_dir: Path, source: str, label: str) -> Manifest:
        """The release's manifest if one was saved, else an empty one for `source`/`label`."""
        if (Path(release_dir) / MANIFEST_NAME).exists():
            return cls.load(release_dir)
        return cls(source=source, label=label)


def previous_record(release_dirs: list[Path], url: str) -> FetchRecord | None:
    """The record for `url` in the first of `release_dirs` (newest first) whose manifest has one."""
    for release_dir in release_dirs:
        if not (Path(release_dir) / MANIFEST_NAME).exists():
            continue
        record = Manifest.load(release_dir).record_for(url)
        if record is not None:
            return record
    return None
