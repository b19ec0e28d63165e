"""A local HTTP mirror of the CMS/CDC download sites, serving the site medrag.ingest.mirror.build_mirror writes.

The pages and archives (MCD downloads page + nested export zips, the HCPCS quarterly page, ICD-10-CM code-table
zips, IOM manual pages linking chapter PDFs) are built from the real files in cms_dir by medrag.ingest.mirror. This
serves them on a real ThreadingHTTPServer with ETag/Last-Modified/304 support, a request log, and fault URLs
(redirect, N failures, truncated body, slow body, conditionals ignored, chunked body, attachment name) minted per
test so faults never leak between tests.
"""

from __future__ import annotations

import email.utils
import hashlib
import itertools
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

# The site's layout is product code (medrag.ingest.mirror); tests import its URL paths and link texts from here.
from medrag.ingest.mirror import (  # noqa: F401 - re-exported for the tests
    HCPCS_LAYOUT_LINK_TEXT,
    HCPCS_LAYOUT_ZIP,
    HCPCS_PAGE,
    HCPCS_ZIP,
    HCPCS_ZIP_LINK_TEXT,
    ICD10CM_2021_LINK_TEXT,
    ICD10CM_2021_ZIP,
    ICD10CM_2026_LINK_TEXT,
    ICD10CM_2026_ZIP,
    ICD10CM_PAGE,
    IOM_DOWNLOADS,
    IOM_INDEX_PAGE,
    IOM_ITEMS,
    IOM_MANUALS,
    MCD_ALL_DATA_ZIP,
    MCD_CURRENT_LCD_ZIP,
    MCD_EXPORTS,
    MCD_NCD_ZIP,
    MCD_PAGE,
    IomChapter,
    IomManual,
    build_mirror,
)

_CONTENT_TYPES = {
    ".zip": "application/zip",
    ".pdf": "application/pdf",
    ".xml": "application/xml",
    ".txt": "text/plain; charset=utf-8",
}
# Pages sit at extensionless URL paths (or .aspx, as the MCD site does).
_PAGE_CONTENT_TYPE = "text/html; charset=utf-8"
_CHUNK = 64 * 1024


class _Resource:
    """A file the mirror serves, with a strong ETag from its content hash (computed on first use)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._etag: str | None = None
        suffix = PurePosixPath(path.name).suffix.lower()
        self.content_type = _CONTENT_TYPES.get(suffix, _PAGE_CONTENT_TYPE if suffix in ("", ".aspx") else
                                               "application/octet-stream")

    def path(self) -> Path:
        """The file on disk."""
        return self._path

    def etag(self) -> str:
        """Strong ETag derived from the content hash."""
        with self._lock:
            if self._etag is None:
                self._etag = f'"{hashlib.sha256(self._path.read_bytes()).hexdigest()[:32]}"'
            return self._etag

    def last_modified(self) -> float:
        """Modification time of the served file (epoch seconds)."""
        return self._path.stat().st_mtime


@dataclass
class RequestRecord:
    """One request the mirror received (status 0 until the status line is sent)."""

    method: str
    path: str
    status: int
    body_bytes: int
    headers: dict[str, str]


@dataclass
class _Fault:
    """Misbehaviour attached to one minted URL."""

    kind: str
    target: str
    failures_left: int = 0
    status: int = 503
    retry_after: str | None = None
    send_bytes: int | None = None
    delay: float = 0.0
    redirect_status: int = 301
    attachment_name: str | None = None
    served: list[int] = field(default_factory=list)


class CmsMirror:
    """The running mirror: base_url, url(path), the request log, fault URLs and stop()."""

    def __init__(self, routes: dict[str, _Resource]) -> None:
        self.routes = routes
        self._faults: dict[str, _Fault] = {}
        self._log: list[RequestRecord] = []
        self._lock = threading.Lock()
        self._tokens = itertools.count(1)
        self._server = _MirrorServer(("127.0.0.1", 0), _Handler, self)
        host, port = self._server.server_address[:2]
        self.base_url = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="cms-mirror", daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        """Absolute URL of a mirror path."""
        return self.base_url + path

    def source_file(self, path: str) -> Path:
        """The file on disk served at `path`, for comparing hashes."""
        return self.routes[path].path()

    @property
    def requests(self) -> list[RequestRecord]:
        """A snapshot of the request log, oldest first."""
        with self._lock:
            return list(self._log)

    def requests_to(self, path_or_url: str) -> list[RequestRecord]:
        """Logged requests for one path (or absolute URL of this mirror)."""
        path = path_or_url.removeprefix(self.base_url)
        return [record for record in self.requests if record.path == path]

    def redirect_url(self, path: str, status: int = 301) -> str:
        """A URL that answers `status` with Location: the real `path`."""
        return self._mint(_Fault("redirect", path, redirect_status=status))

    def flaky_url(self, path: str, failures: int, status: int = 503, retry_after: str | None = None) -> str:
        """A URL that answers `status` (with optional Retry-After) `failures` times, then serves `path`."""
        return self._mint(_Fault("flaky", path, failures_left=failures, status=status, retry_after=retry_after))

    def truncated_url(self, path: str, send_bytes: int | None = None) -> str:
        """A URL that announces the full Content-Length, sends `send_bytes` (default half) and hangs up."""
        return self._mint(_Fault("truncated", path, send_bytes=send_bytes))

    def slow_url(self, path: str, delay: float) -> str:
        """A URL that sends headers, then waits `delay` seconds before the body."""
        return self._mint(_Fault("slow", path, delay=delay))

    def unconditional_url(self, path: str) -> str:
        """A URL that sends ETag/Last-Modified but ignores If-None-Match/If-Modified-Since (always 200)."""
        return self._mint(_Fault("unconditional", path))

    def chunked_url(self, path: str) -> str:
        """A URL that serves `path` with chunked transfer encoding (no Content-Length)."""
        return self._mint(_Fault("chunked", path))

    def attachment_url(self, path: str, filename: str) -> str:
        """A URL that serves `path` with Content-Disposition: attachment; filename=`filename`."""
        return self._mint(_Fault("attachment", path, attachment_name=filename))

    def stop(self) -> None:
        """Shut the server down and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _mint(self, fault: _Fault) -> str:
        """Register a fault under a fresh URL whose last segment keeps the real file name."""
        if fault.target not in self.routes:
            raise KeyError(f"mirror has no path {fault.target!r}")
        token = f"f{next(self._tokens)}"
        with self._lock:
            self._faults[token] = fault
        return self.url(f"/_fault/{token}{fault.target}")

    def _resolve(self, path: str) -> tuple[_Fault | None, str]:
        """(fault, real path) for a request path."""
        if not path.startswith("/_fault/"):
            return None, path
        token, _, rest = path.removeprefix("/_fault/").partition("/")
        with self._lock:
            fault = self._faults.get(token)
        return fault, "/" + rest

    def _record(self, record: RequestRecord) -> None:
        """Append to the request log."""
        with self._lock:
            self._log.append(record)

    def _take_failure(self, fault: _Fault) -> bool:
        """Consume one injected failure; False when none are left."""
        with self._lock:
            if fault.failures_left <= 0:
                return False
            fault.failures_left -= 1
            return True


class _MirrorServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that knows its mirror and never waits for hung handler threads on close."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], mirror: CmsMirror):
        self.mirror = mirror
        super().__init__(address, handler)

    def handle_error(self, request: object, client_address: object) -> None:
        """Clients that hang up early (size caps, timeouts, truncation tests) are expected, not errors."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """Serves routes with validators, conditional GET and the injected faults."""

    protocol_version = "HTTP/1.1"
    server: _MirrorServer
    _entry: RequestRecord

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        """GET."""
        self._serve(send_body=True)

    def do_HEAD(self) -> None:  # noqa: N802 - http.server naming
        """HEAD."""
        self._serve(send_body=False)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - signature from the base class
        """Stay quiet; the request log records what tests need."""

    def send_response(self, code: int, message: str | None = None) -> None:
        """Log the status before the client can see it, so tests never race the log."""
        self._entry.status = code
        super().send_response(code, message)

    def _serve(self, send_body: bool) -> None:
        """Answer one request; it is logged on arrival so counts are right while a slow answer is in flight."""
        mirror = self.server.mirror
        self._entry = RequestRecord(self.command, unquote(urlsplit(self.path).path), 0, 0,
                                    dict(self.headers.items()))
        mirror._record(self._entry)
        try:
            self._answer(mirror, self._entry.path, send_body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _write_body(self, data: bytes) -> None:
        """Write body bytes, counting them first so the log is current when the client receives them."""
        self._entry.body_bytes += len(data)
        self.wfile.write(data)

    def _answer(self, mirror: CmsMirror, path: str, send_body: bool) -> None:
        """Pick and send the response."""
        fault, real_path = mirror._resolve(path)
        resource = mirror.routes.get(real_path)
        if resource is None or (path.startswith("/_fault/") and fault is None):
            self._simple(404, f"Not Found: {path}\n", send_body)
        elif fault is not None and fault.kind == "redirect":
            self._simple(fault.redirect_status, "", send_body, {"Location": real_path})
        elif fault is not None and fault.kind == "flaky" and mirror._take_failure(fault):
            extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            self._simple(fault.status, "Service Unavailable\n", send_body, extra)
        else:
            validators = {
                "ETag": resource.etag(),
                "Last-Modified": email.utils.formatdate(resource.last_modified(), usegmt=True),
            }
            honours_conditionals = fault is None or fault.kind != "unconditional"
            if honours_conditionals and self._not_modified(resource):
                self._simple(304, "", False, validators)
            else:
                self._send_file(resource, fault, validators, send_body)

    def _not_modified(self, resource: _Resource) -> bool:
        """RFC 9110 order: If-None-Match decides when present, else If-Modified-Since."""
        if_none_match = self.headers.get("If-None-Match")
        if if_none_match is not None:
            tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
            return "*" in tags or resource.etag() in tags
        if_modified_since = self.headers.get("If-Modified-Since")
        if if_modified_since:
            try:
                since = email.utils.parsedate_to_datetime(if_modified_since).timestamp()
            except (TypeError, ValueError):
                return False
            return int(resource.last_modified()) <= since
        return False

    def _simple(self, status: int, text: str, send_body: bool, headers: dict[str, str] | None = None) -> None:
        """A small fixed response."""
        body = text.encode("utf-8")
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if status != 304:
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body and body:
            self._write_body(body)

    def _send_file(self, resource: _Resource, fault: _Fault | None, validators: dict[str, str],
                   send_body: bool) -> None:
        """200 with the file, shaped by the fault (truncated, slow, chunked, attachment)."""
        data = resource.path().read_bytes()
        kind = fault.kind if fault is not None else "plain"
        self.send_response(200)
        self.send_header("Content-Type", resource.content_type)
        for name, value in validators.items():
            self.send_header(name, value)
        if fault is not None and fault.kind == "attachment":
            self.send_header("Content-Disposition", f'attachment; filename="{fault.attachment_name}"')
        if kind == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not send_body:
            return
        if fault is not None and fault.kind == "slow":
            self.wfile.flush()
            time.sleep(fault.delay)
        if fault is not None and fault.kind == "truncated":
            cut = fault.send_bytes if fault.send_bytes is not None else len(data) // 2
            self._write_body(data[:cut])
            self.wfile.flush()
            self.close_connection = True
        elif kind == "chunked":
            for start in range(0, len(data), _CHUNK):
                piece = data[start:start + _CHUNK]
                self._entry.body_bytes += len(piece)
                self.wfile.write(f"{len(piece):X}\r\n".encode() + piece + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        else:
            self._write_body(data)


def start_cms_mirror(build_dir: Path, cms_dir: Path) -> CmsMirror:
    """Build the mirror site under build_dir from the real files in cms_dir and start serving it."""
    # Root-relative hrefs ("/files/zip/...") as cms.gov writes them: this mirror is always served from its root.
    files = build_mirror(cms_dir, build_dir, root_relative_links=True)
    return CmsMirror({url_path: _Resource(path) for url_path, path in files.items()})
