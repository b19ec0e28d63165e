"""Download one release file (http, https or file URL): streamed, hashed, capped, retried, conditional."""

from __future__ import annotations

import contextlib
import email.message
import email.utils
import hashlib
import os
import re
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, TypeVar
from urllib.parse import unquote, urlsplit

import httpx

from medrag.core import progress
from medrag.core.errors import MedragError

ALLOWED_SCHEMES = frozenset({"http", "https", "file"})
TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})
# Network failures worth another attempt; UnsupportedProtocol, LocalProtocolError or ProxyError are not.
TRANSIENT_TRANSPORT_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
DEFAULT_MAX_RETRY_AFTER = 60.0
CHUNK_SIZE = 1024 * 1024
USER_AGENT = "medrag/0.1 (Medicare reference data refresher)"

_T = TypeVar("_T")


class DownloadError(MedragError):
    """A download failed for good: bad URL, HTTP error, truncated body, size cap, exhausted retries."""

    def __init__(self, message: str, *, url: str, status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


class _TransientFailure(Exception):
    """An attempt failed in a way another attempt may fix (carries the wait the server asked for)."""

    def __init__(self, message: str, *, retry_after: float | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


@dataclass
class FetchRecord:
    """What one fetch produced: kept in the release manifest and passed back as `previous` next time."""

    url: str
    final_url: str
    path: Path
    sha256: str
    bytes: int
    etag: str | None
    last_modified: str | None
    fetched_at: datetime
    changed: bool
    status: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (path as string, fetched_at as ISO 8601)."""
        data = asdict(self)
        data["path"] = str(self.path)
        data["fetched_at"] = self.fetched_at.isoformat()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FetchRecord:
        """Rebuild a record from `to_dict` output; KeyError/ValueError on a malformed dict."""
        return cls(
            url=str(data["url"]),
            final_url=str(data["final_url"]),
            path=Path(data["path"]),
            sha256=str(data["sha256"]),
            bytes=int(data["bytes"]),
            etag=data.get("etag"),
            last_modified=data.get("last_modified"),
            fetched_at=datetime.fromisoformat(data["fetched_at"]),
            changed=bool(data["changed"]),
            status=int(data["status"]),
        )


# What `fetch` returns is exactly what the manifest stores and what is passed back as `previous`.
FetchResult = FetchRecord


def fetch(
    url: str,
    dest_dir: Path,
    *,
    previous: FetchRecord | None = None,
    client: httpx.Client | None = None,
    max_bytes: int,
    timeout: float,
    retries: int,
    backoff: float,
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
) -> FetchResult:
    """Download `url` into `dest_dir` (atomic, hashed, size-capped); unchanged content gives changed=False."""
    scheme = _checked_scheme(url)
    dest_dir = Path(dest_dir)
    dest_dir.mkdir(parents=True, exist_ok=True)
    usable_previous = previous if previous is not None and Path(previous.path).is_file() else None
    if scheme == "file":
        return _fetch_file_url(url, dest_dir, usable_previous, max_bytes)
    headers = _conditional_headers(usable_previous)

    def consume(response: httpx.Response) -> FetchResult:
        if response.status_code == 304:
            return _not_modified_result(url, response, usable_previous)
        return _stream_to_file(url, response, dest_dir, usable_previous, max_bytes)

    with _client_scope(client, timeout) as http:
        return _with_retries(
            http, url, headers, consume,
            timeout=timeout, retries=retries, backoff=backoff, max_retry_after=max_retry_after,
        )


def get_text(
    url: str,
    *,
    client: httpx.Client | None = None,
    max_bytes: int,
    timeout: float,
    retries: int,
    backoff: float,
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
) -> str:
    """Fetch an HTML/text page into memory with the same URL rules, retry policy and size cap as `fetch`."""
    scheme = _checked_scheme(url)
    if scheme == "file":
        path = _file_url_path(url)
        with _open_local(url, path) as source:
            data = _read_capped(url, _iter_file(source), max_bytes)
        return data.decode("utf-8", errors="replace")

    def consume(response: httpx.Response) -> str:
        if response.status_code == 304:
            raise DownloadError(f"{url}: unexpected 304 Not Modified for an unconditional request",
                                url=url, status=304)
        _reject_declared_oversize(url, response, max_bytes)
        data = _read_capped(url, response.iter_bytes(CHUNK_SIZE), max_bytes)
        _check_complete(url, response)
        try:
            return data.decode(response.charset_encoding or "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know; CMS pages are UTF-8 anyway
            return data.decode("utf-8", errors="replace")

    with _client_scope(client, timeout) as http:
        return _with_retries(
            http, url, {}, consume,
            timeout=timeout, retries=retries, backoff=backoff, max_retry_after=max_retry_after,
        )


def _checked_scheme(url: str) -> str:
    """The URL's scheme, or DownloadError when it is not http, https or file."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        shown = scheme or "(none)"
        raise DownloadError(
            f"{url}: unsupported URL scheme {shown!r}; only http, https and file URLs are allowed", url=url
        )
    return scheme


@contextlib.contextmanager
def _client_scope(client: httpx.Client | None, timeout: float) -> Iterator[httpx.Client]:
    """Use the caller's httpx.Client, or make (and afterwards close) one of our own."""
    if client is not None:
        yield client
        return
    with httpx.Client(follow_redirects=True, timeout=timeout, headers={"User-Agent": USER_AGENT}) as owned:
        yield owned


def _with_retries(
    client: httpx.Client,
    url: str,
    headers: dict[str, str],
    consume: Callable[[httpx.Response], _T],
    *,
    timeout: float,
    retries: int,
    backoff: float,
    max_retry_after: float,
) -> _T:
    """GET `url` and hand the open response to `consume`, retrying transient failures with backoff."""
    attempt = 0
    while True:
        try:
            return _attempt(client, url, headers, consume, timeout)
        except _TransientFailure as failure:
            last_failure = failure
        if attempt >= retries:
            break
        time.sleep(_retry_delay(attempt, backoff, last_failure.retry_after, max_retry_after))
        attempt += 1
    raise DownloadError(
        f"{url}: giving up after {retries + 1} attempt(s); last error: {last_failure}",
        url=url, status=last_failure.status,
    )


def _attempt(
    client: httpx.Client,
    url: str,
    headers: dict[str, str],
    consume: Callable[[httpx.Response], _T],
    timeout: float,
) -> _T:
    """One GET: check the status, let `consume` read the body; transient trouble raises _TransientFailure."""
    try:
        with client.stream("GET", url, headers=headers, follow_redirects=True, timeout=timeout) as response:
            status = response.status_code
            if status in TRANSIENT_STATUSES:
                raise _TransientFailure(
                    f"HTTP {status} from {response.url}",
                    retry_after=_parse_retry_after(response.headers.get("Retry-After")),
                    status=status,
                )
            if status >= 400 or (300 <= status < 400 and status != 304):
                raise DownloadError(
                    f"{url}: HTTP {status} {response.reason_phrase} from {response.url} (not retried)",
                    url=url, status=status,
                )
            return consume(response)
    except TRANSIENT_TRANSPORT_ERRORS as exc:
        raise _TransientFailure(f"{type(exc).__name__}: {exc or 'no detail'}") from exc
    except httpx.TooManyRedirects as exc:
        raise DownloadError(f"{url}: too many redirects ({exc})", url=url) from exc
    except httpx.HTTPError as exc:
        raise DownloadError(f"{url}: {type(exc).__name__}: {exc}", url=url) from exc


def _retry_delay(attempt: int, backoff: float, retry_after: float | None, max_retry_after: float) -> float:
    """Seconds to wait before the next attempt: the server's Retry-After (capped) or exponential backoff."""
    if retry_after is not None:
        return min(retry_after, max_retry_after)
    return backoff * (2**attempt)


def _parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds from now (it may be delta-seconds or an HTTP date); None when absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _conditional_headers(previous: FetchRecord | None) -> dict[str, str]:
    """If-None-Match / If-Modified-Since from the previous fetch, when it left validators."""
    headers: dict[str, str] = {}
    if previous is None:
        return headers
    if previous.etag:
        headers["If-None-Match"] = previous.etag
    if previous.last_modified:
        headers["If-Modified-Since"] = previous.last_modified
    return headers


def _not_modified_result(url: str, response: httpx.Response, previous: FetchRecord | None) -> FetchResult:
    """A 304 answer: point at the previous file, write nothing."""
    if previous is None:
        raise DownloadError(f"{url}: server answered 304 Not Modified to an unconditional request",
                            url=url, status=304)
    return FetchResult(
        url=url,
        final_url=str(response.url),
        path=Path(previous.path),
        sha256=previous.sha256,
        bytes=previous.bytes,
        etag=response.headers.get("ETag") or previous.etag,
        last_modified=response.headers.get("Last-Modified") or previous.last_modified,
        fetched_at=datetime.now(UTC),
        changed=False,
        status=304,
    )


def _stream_to_file(
    url: str, response: httpx.Response, dest_dir: Path, previous: FetchRecord | None, max_bytes: int
) -> FetchResult:
    """Stream a 2xx body to `<name>.part` while hashing, verify it is complete, then move it into place."""
    _reject_declared_oversize(url, response, max_bytes)
    name = _file_name(response.headers.get("Content-Disposition"), str(response.url), url)
    target = dest_dir / name
    sha256, size = _write_part(url, response.iter_bytes(CHUNK_SIZE), target, max_bytes,
                               check_complete=lambda: _check_complete(url, response),
                               expected_size=_content_length(response))
    return _finish(
        url=url, final_url=str(response.url), target=target, sha256=sha256, size=size, previous=previous,
        etag=response.headers.get("ETag"), last_modified=response.headers.get("Last-Modified"),
        status=response.status_code,
    )


def _write_part(
    url: str,
    chunks: Iterator[bytes],
    target: Path,
    max_bytes: int,
    check_complete: Callable[[], None] = lambda: None,
    expected_size: int | None = None,
) -> tuple[str, int]:
    """Write chunks to `<target>.part` with SHA-256, a size cap and progress; the .part is removed on any failure."""
    part = target.with_name(target.name + ".part")
    digest = hashlib.sha256()
    size = 0
    try:
        with part.open("wb") as out, progress.track(f"download {target.name}", total=expected_size,
                                                    unit="bytes") as tracker:
            for chunk in chunks:
                size += len(chunk)
                if size > max_bytes:
                    raise DownloadError(
                        f"{url}: download exceeds the size cap of {max_bytes} bytes; aborted", url=url
                    )
                digest.update(chunk)
                out.write(chunk)
                tracker.advance(len(chunk))
            check_complete()
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return digest.hexdigest(), size


def _finish(
    *,
    url: str,
    final_url: str,
    target: Path,
    sha256: str,
    size: int,
    previous: FetchRecord | None,
    etag: str | None,
    last_modified: str | None,
    status: int,
) -> FetchResult:
    """Keep the previous file when the bytes are identical, else move the .part over the final name."""
    part = target.with_name(target.name + ".part")
    unchanged = previous is not None and previous.sha256 == sha256
    if previous is not None and unchanged:
        part.unlink(missing_ok=True)
        path = Path(previous.path)
    else:
        os.replace(part, target)
        path = target
    return FetchResult(
        url=url, final_url=final_url, path=path, sha256=sha256, bytes=size, etag=etag,
        last_modified=last_modified, fetched_at=datetime.now(UTC), changed=not unchanged, status=status,
    )


def _reject_declared_oversize(url: str, response: httpx.Response, max_bytes: int) -> None:
    """Fail before reading anything when Content-Length already exceeds the cap."""
    declared = _content_length(response)
    if declared is not None and declared > max_bytes:
        raise DownloadError(
            f"{url}: Content-Length {declared} exceeds the size cap of {max_bytes} bytes; not downloaded",
            url=url, status=response.status_code,
        )


def _check_complete(url: str, response: httpx.Response) -> None:
    """Compare the bytes received on the wire with Content-Length: a short body means a truncated download."""
    declared = _content_length(response)
    received = response.num_bytes_downloaded
    if declared is not None and received != declared:
        raise _TransientFailure(
            f"truncated response from {response.url}: got {received} of {declared} bytes (Content-Length)"
        )


def _content_length(response: httpx.Response) -> int | None:
    """Content-Length as an int, or None when absent or unparsable."""
    value = response.headers.get("Content-Length")
    if value is None or not value.strip().isdigit():
        return None
    return int(value)


_UNSAFE_NAME_CHARS = re.compile(r"[\x00-\x1f<>:\"|?*]")


def _file_name(content_disposition: str | None, final_url: str, original_url: str) -> str:
    """Local file name: Content-Disposition filename, else the last URL path segment; never a path."""
    candidates: list[str] = []
    if content_disposition:
        message = email.message.Message()
        message["Content-Disposition"] = content_disposition
        disposition_name = message.get_filename()
        if disposition_name:
            candidates.append(disposition_name)
    candidates += [unquote(urlsplit(final_url).path), unquote(urlsplit(original_url).path)]
    for candidate in candidates:
        name = _UNSAFE_NAME_CHARS.sub("_", re.split(r"[/\\]", candidate)[-1]).strip()
        if name and name not in {".", ".."}:
            return name
    return "download"


def _file_url_path(url: str) -> Path:
    """Local path of a file:// URL (only local hosts)."""
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise DownloadError(f"{url}: file URLs must name a local path, not host {parts.netloc!r}", url=url)
    return Path(urllib.request.url2pathname(parts.path))


def _open_local(url: str, path: Path) -> IO[bytes]:
    """Open a local source file, turning OS errors into DownloadError."""
    if not path.is_file():
        raise DownloadError(f"{url}: local file {path} does not exist or is not a regular file", url=url)
    try:
        return path.open("rb")
    except OSError as exc:
        raise DownloadError(f"{url}: cannot read {path}: {exc}", url=url) from exc


def _iter_file(source: IO[bytes]) -> Iterator[bytes]:
    """Read a binary file in chunks."""
    while chunk := source.read(CHUNK_SIZE):
        yield chunk


def _read_capped(url: str, chunks: Iterator[bytes], max_bytes: int) -> bytes:
    """Join chunks into memory, failing as soon as they pass the size cap."""
    buffer = bytearray()
    for chunk in chunks:
        buffer += chunk
        if len(buffer) > max_bytes:
            raise DownloadError(
                f"{url}: response exceeds the size cap of {max_bytes} bytes; aborted", url=url
            )
    return bytes(buffer)


def _fetch_file_url(url: str, dest_dir: Path, previous: FetchRecord | None, max_bytes: int) -> FetchResult:
    """Copy a local file (file:// URL) with the same hashing, cap and atomic move as an HTTP download."""
    source_path = _file_url_path(url)
    target = dest_dir / _file_name(None, url, url)
    if target.exists() and target.resolve() == source_path.resolve():
        raise DownloadError(f"{url}: source and destination are the same file ({target})", url=url)
    with _open_local(url, source_path) as source:
        sha256, size = _write_part(url, _iter_file(source), target, max_bytes,
                                   expected_size=source_path.stat().st_size)
    modified = email.utils.formatdate(source_path.stat().st_mtime, usegmt=True)
    return _finish(
        url=url, final_url=url, target=target, sha256=sha256, size=size, previous=previous,
        etag=None, last_modified=modified, status=200,
    )
