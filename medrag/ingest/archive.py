"""Safe zip handling for downloaded releases: no path escapes, no zip bombs, clear errors on bad archives."""

from __future__ import annotations

import re
import stat
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from medrag.core.errors import MedragError

DEFAULT_MAX_TOTAL_BYTES = 4 * 1024**3
# Real CMS/CDC members compress 1x-15x (CSV, fixed-width text, XML); deflate bombs reach about 1000x.
DEFAULT_MAX_RATIO = 100.0
DEFAULT_MAX_MEMBERS = 10_000
DEFAULT_MAX_DEPTH = 3
# Tiny members (a few KB of blanks) legitimately compress far beyond any sane ratio; bombs need volume.
RATIO_FLOOR_BYTES = 1024 * 1024
CHUNK_SIZE = 1024 * 1024
MAX_NAMES_IN_MESSAGE = 40

_DRIVE_LETTER = re.compile(r"^[A-Za-z]:")
# Everything zipfile/zlib raise for damaged data: CRC mismatch, bad deflate stream, unexpected end.
_CORRUPTION_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError)


class ArchiveError(MedragError):
    """A zip that is unsafe (path escape, bomb, too many members), corrupt, truncated or lacks a member."""


@dataclass
class _Budget:
    """Limits shared by every archive extracted in one call, nested archives included."""

    max_total_bytes: int
    max_ratio: float
    max_members: int
    total_bytes: int = 0
    members: int = 0


def open_zip_safely(path: Path, *, max_members: int = DEFAULT_MAX_MEMBERS) -> zipfile.ZipFile:
    """Open a zip, rejecting corrupt/truncated files, unsafe member names, symlinks and too many members."""
    path = Path(path)
    try:
        archive = zipfile.ZipFile(path)
    except FileNotFoundError as exc:
        raise ArchiveError(f"{path}: zip archive not found") from exc
    except (*_CORRUPTION_ERRORS, ValueError) as exc:
        raise ArchiveError(f"{path}: corrupt or truncated zip archive ({exc})") from exc
    try:
        infos = archive.infolist()
        if len(infos) > max_members:
            raise ArchiveError(f"{path}: {len(infos)} members exceed the limit of {max_members}")
        seen: set[str] = set()
        for info in infos:
            relative = _safe_member_path(path, info)
            if str(relative) in seen:
                raise ArchiveError(f"{path}: member {info.filename!r} appears more than once")
            seen.add(str(relative))
    except BaseException:
        archive.close()
        raise
    return archive


def safe_extract(
    zip_path: Path,
    dest_dir: Path,
    *,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    max_ratio: float = DEFAULT_MAX_RATIO,
    max_members: int = DEFAULT_MAX_MEMBERS,
) -> list[Path]:
    """Extract every member under `dest_dir` within the limits; returns the extracted file paths."""
    budget = _Budget(max_total_bytes=max_total_bytes, max_ratio=max_ratio, max_members=max_members)
    return _extract(Path(zip_path), Path(dest_dir), budget)


def extract_nested(
    zip_path: Path,
    dest_dir: Path,
    *,
    depth: int = DEFAULT_MAX_DEPTH,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    max_ratio: float = DEFAULT_MAX_RATIO,
    max_members: int = DEFAULT_MAX_MEMBERS,
) -> list[Path]:
    """Extract a zip and, recursively, each inner *.zip into a folder named after it (ncd.zip -> ncd/).

    Expanded inner zips are deleted, so the tree holds only real files; the limits apply to the whole tree,
    and a zip still nested deeper than `depth` levels is an ArchiveError. Returns the files, sorted.
    """
    budget = _Budget(max_total_bytes=max_total_bytes, max_ratio=max_ratio, max_members=max_members)
    return sorted(_extract_nested(Path(zip_path), Path(dest_dir), depth, budget, label=str(zip_path)))


def read_member(source: Path | zipfile.ZipFile, name: str, max_bytes: int) -> bytes:
    """Read one member into memory (size-capped, CRC-checked); a missing member lists what is there."""
    if isinstance(source, zipfile.ZipFile):
        return _read_member(source, _archive_label(source), name, max_bytes)
    with open_zip_safely(Path(source)) as archive:
        return _read_member(archive, str(source), name, max_bytes)


def _read_member(archive: zipfile.ZipFile, label: str, name: str, max_bytes: int) -> bytes:
    """read_member on an open archive."""
    try:
        info = archive.getinfo(name)
    except KeyError:
        raise ArchiveError(f"{label}: no member {name!r}; members are: {_listing(archive)}") from None
    if info.file_size > max_bytes:
        raise ArchiveError(
            f"{label}: member {name!r} declares {info.file_size} bytes, over the cap of {max_bytes}"
        )
    buffer = bytearray()
    with _open_member(archive, label, info) as stream:
        for chunk in _member_chunks(stream, label, info):
            buffer += chunk
            if len(buffer) > max_bytes:
                raise ArchiveError(f"{label}: member {name!r} decompresses past the cap of {max_bytes} bytes")
    return bytes(buffer)


def _extract_nested(zip_path: Path, dest_dir: Path, depth: int, budget: _Budget, label: str) -> list[Path]:
    """Extract one level, then recurse into the inner zips it produced."""
    files: list[Path] = []
    for extracted in _extract(zip_path, dest_dir, budget, label=label):
        if extracted.suffix.lower() != ".zip":
            files.append(extracted)
            continue
        inner_label = f"{label} -> {extracted.name}"
        if depth <= 1:
            raise ArchiveError(f"{inner_label}: zips nested deeper than the depth limit; refusing")
        inner_dest = extracted.with_suffix("")
        if inner_dest.exists() and not inner_dest.is_dir():
            raise ArchiveError(f"{inner_label}: cannot extract into {inner_dest}: a file of that name exists")
        files += _extract_nested(extracted, inner_dest, depth - 1, budget, inner_label)
        extracted.unlink()
    return files


def _extract(zip_path: Path, dest_dir: Path, budget: _Budget, label: str | None = None) -> list[Path]:
    """Extract one archive within `budget`; on any failure the files this call wrote are removed."""
    label = label or str(zip_path)
    dest_dir.mkdir(parents=True, exist_ok=True)
    root = dest_dir.resolve()
    written: list[Path] = []
    try:
        with _open_labelled(zip_path, label, budget.max_members) as archive:
            infos = archive.infolist()
            budget.members += len(infos)
            if budget.members > budget.max_members:
                raise ArchiveError(f"{label}: {budget.members} members in all exceed the limit of "
                                   f"{budget.max_members}")
            _check_declared_sizes(label, infos, budget)
            for info in infos:
                target = root / _safe_member_path(Path(label), info)
                if not target.resolve().is_relative_to(root):
                    raise ArchiveError(f"{label}: member {info.filename!r} would land outside {root}")
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                written.append(target)
                _extract_member(archive, label, info, target, budget)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    return written


def _open_labelled(zip_path: Path, label: str, max_members: int) -> zipfile.ZipFile:
    """open_zip_safely, but errors name the archive by its nesting label (outer.zip -> inner.zip)."""
    if label == str(zip_path):
        return open_zip_safely(zip_path, max_members=max_members)
    try:
        return open_zip_safely(zip_path, max_members=max_members)
    except ArchiveError as exc:
        raise ArchiveError(f"{label}: {str(exc).removeprefix(str(zip_path) + ': ')}") from exc


def _check_declared_sizes(label: str, infos: list[zipfile.ZipInfo], budget: _Budget) -> None:
    """Reject before writing anything when the headers already announce a bomb."""
    declared_total = budget.total_bytes + sum(info.file_size for info in infos)
    if declared_total > budget.max_total_bytes:
        raise ArchiveError(
            f"{label}: declared uncompressed size {declared_total} bytes exceeds the cap of "
            f"{budget.max_total_bytes}"
        )
    for info in infos:
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > RATIO_FLOOR_BYTES and ratio > budget.max_ratio:
            raise ArchiveError(
                f"{label}: member {info.filename!r} has compression ratio {ratio:.0f}:1, over the cap of "
                f"{budget.max_ratio:.0f}:1 (possible zip bomb)"
            )


def _extract_member(
    archive: zipfile.ZipFile, label: str, info: zipfile.ZipInfo, target: Path, budget: _Budget
) -> None:
    """Stream one member to disk, counting the bytes actually produced, since headers can lie."""
    produced = 0
    with _open_member(archive, label, info) as stream, target.open("wb") as out:
        for chunk in _member_chunks(stream, label, info):
            produced += len(chunk)
            budget.total_bytes += len(chunk)
            if budget.total_bytes > budget.max_total_bytes:
                raise ArchiveError(
                    f"{label}: member {info.filename!r} takes extraction past the cap of "
                    f"{budget.max_total_bytes} bytes (possible zip bomb)"
                )
            if produced > info.file_size:
                raise ArchiveError(
                    f"{label}: member {info.filename!r} decompresses to more than its declared "
                    f"{info.file_size} bytes (lying header)"
                )
            if produced > RATIO_FLOOR_BYTES and produced / max(info.compress_size, 1) > budget.max_ratio:
                raise ArchiveError(
                    f"{label}: member {info.filename!r} expands past {budget.max_ratio:.0f}:1 "
                    "(possible zip bomb)"
                )
            out.write(chunk)


def _open_member(archive: zipfile.ZipFile, label: str, info: zipfile.ZipInfo) -> IO[bytes]:
    """archive.open with damaged, encrypted or unsupported members reported as ArchiveError."""
    try:
        return archive.open(info)
    except (*_CORRUPTION_ERRORS, RuntimeError, NotImplementedError) as exc:
        raise ArchiveError(f"{label}: cannot open member {info.filename!r}: {exc}") from exc


def _member_chunks(stream: IO[bytes], label: str, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """Yield decompressed chunks; CRC and deflate errors become ArchiveError naming the member."""
    while True:
        try:
            chunk = stream.read(CHUNK_SIZE)
        except _CORRUPTION_ERRORS as exc:
            raise ArchiveError(f"{label}: member {info.filename!r} is corrupt or truncated: {exc}") from exc
        if not chunk:
            return
        yield chunk


def _safe_member_path(archive_path: Path, info: zipfile.ZipInfo) -> PurePosixPath:
    """The member's relative path, or ArchiveError for absolute, drive-letter, '..' or symlink members."""
    name = info.filename
    normalized = name.replace("\\", "/")
    problem = None
    if not normalized.strip("/") or "\x00" in normalized:
        problem = "has an empty or invalid name"
    elif normalized.startswith("/"):
        problem = "is an absolute path"
    elif _DRIVE_LETTER.match(normalized):
        problem = "names a drive letter"
    elif ".." in normalized.split("/"):
        problem = "contains '..' (zip-slip)"
    elif stat.S_ISLNK(info.external_attr >> 16):
        problem = "is a symbolic link"
    parts = [part for part in normalized.split("/") if part not in ("", ".")]
    if not problem and not parts:
        problem = "has an empty name"
    if problem:
        raise ArchiveError(f"{archive_path}: member {name!r} {problem}; refusing to use this archive")
    return PurePosixPath(*parts)


def _archive_label(archive: zipfile.ZipFile) -> str:
    """A name for an open archive in messages."""
    return str(archive.filename) if archive.filename else "<zip in memory>"


def _listing(archive: zipfile.ZipFile) -> str:
    """Member names for an error message, shortened when there are many."""
    names = archive.namelist()
    shown = ", ".join(names[:MAX_NAMES_IN_MESSAGE])
    if len(names) > MAX_NAMES_IN_MESSAGE:
        shown += f", ... ({len(names) - MAX_NAMES_IN_MESSAGE} more)"
    return shown or "(none)"
