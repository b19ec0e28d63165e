"""A local HTTP mirror laid out like the CMS/CDC download sites, built from the real files in cms_dir.

Pages and archives follow the real sites' shapes (MCD downloads page + nested export zips, the HCPCS quarterly
page, ICD-10-CM code-table zips, IOM manual pages linking chapter PDFs). It runs on a real ThreadingHTTPServer
with ETag/Last-Modified/304 support, a request log, and fault URLs (redirect, N failures, truncated body, slow
body, conditionals ignored, chunked body, attachment name) minted per test so faults never leak between tests.
"""

from __future__ import annotations

import email.utils
import hashlib
import html
import itertools
import sys
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

MCD_PAGE = "/medicare-coverage-database/downloads/downloads.aspx"
MCD_EXPORTS = "/medicare-coverage-database/downloads/exports"
MCD_ALL_DATA_ZIP = f"{MCD_EXPORTS}/all_data.zip"
MCD_NCD_ZIP = f"{MCD_EXPORTS}/ncd.zip"
MCD_CURRENT_LCD_ZIP = f"{MCD_EXPORTS}/current_lcd.zip"

HCPCS_PAGE = "/medicare/coding-billing/healthcare-common-procedure-system/quarterly-update"
HCPCS_ZIP = "/files/zip/2019-alpha-numeric-hcpcs-file.zip"
HCPCS_ZIP_LINK_TEXT = "2019 Alpha-Numeric HCPCS File (ZIP)"
HCPCS_LAYOUT_ZIP = "/files/zip/hcpcs-record-layout.zip"
HCPCS_LAYOUT_LINK_TEXT = "HCPCS Record Layout (ZIP)"

ICD10CM_PAGE = "/medicare/coding-billing/icd-10-codes/icd-10-cm-files"
ICD10CM_2021_ZIP = "/files/zip/2021-code-tables-and-index.zip"
ICD10CM_2021_LINK_TEXT = "2021 Code Tables and Index (ZIP)"
ICD10CM_2026_ZIP = "/files/zip/2026-code-tables-tabular-and-index.zip"
ICD10CM_2026_LINK_TEXT = "2026 Code Tables, Tabular and Index (ZIP)"

IOM_INDEX_PAGE = "/medicare/regulations-guidance/manuals/internet-only-manuals-ioms"
IOM_ITEMS = "/regulations-and-guidance/guidance/manuals/internet-only-manuals-ioms-items"
IOM_DOWNLOADS = "/regulations-and-guidance/guidance/manuals/downloads"


@dataclass(frozen=True)
class IomChapter:
    """One chapter PDF link on a manual page; the bytes come from a real CMS PDF standing in for it."""

    file_name: str
    link_text: str
    standin: str


@dataclass(frozen=True)
class IomManual:
    """One IOM manual page (e.g. 100-02) and its chapter links."""

    number: str
    title: str
    page: str
    chapters: tuple[IomChapter, ...]


IOM_MANUALS: tuple[IomManual, ...] = (
    IomManual("100-02", "Medicare Benefit Policy Manual", f"{IOM_ITEMS}/cms012673", (
        IomChapter("bp102c01.pdf", "Chapter 1 - Inpatient Hospital Services Covered Under Part A",
                   "2019-Table-of-Drugs.pdf"),
        IomChapter("bp102c15.pdf", "Chapter 15 - Covered Medical and Other Health Services",
                   "2019-HCPCS-Index.pdf"),
    )),
    IomManual("100-03", "Medicare National Coverage Determinations (NCD) Manual", f"{IOM_ITEMS}/cms014961", (
        IomChapter("ncd103c1_Part1.pdf", "Chapter 1, Part 1 - Coverage Determinations (Sections 10 - 80.12)",
                   "2019-Table-of-Drugs.pdf"),
    )),
    IomManual("100-04", "Medicare Claims Processing Manual", f"{IOM_ITEMS}/cms018912", (
        IomChapter("clm104c12.pdf", "Chapter 12 - Physicians/Nonphysician Practitioners",
                   "2019-HCPCS-Index.pdf"),
    )),
)

_CONTENT_TYPES = {
    ".zip": "application/zip",
    ".pdf": "application/pdf",
    ".xml": "application/xml",
    ".txt": "text/plain; charset=utf-8",
    ".html": "text/html; charset=utf-8",
}
_CHUNK = 64 * 1024


class _Resource:
    """A file the mirror serves, built on first request (the ICD-10-CM zips take a moment to deflate)."""

    def __init__(self, build: Callable[[], Path], content_type: str) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._path: Path | None = None
        self._etag: str | None = None
        self.content_type = content_type

    def path(self) -> Path:
        """The file on disk, building it the first time."""
        with self._lock:
            if self._path is None:
                self._path = self._build()
                digest = hashlib.sha256(self._path.read_bytes()).hexdigest()
                self._etag = f'"{digest[:32]}"'
            return self._path

    def etag(self) -> str:
        """Strong ETag derived from the content hash."""
        self.path()
        assert self._etag is not None
        return self._etag

    def last_modified(self) -> float:
        """Modification time of the served file (epoch seconds)."""
        return self.path().stat().st_mtime


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


def build_site(build_dir: Path, cms_dir: Path) -> dict[str, _Resource]:
    """Routes (URL path -> resource) of the whole mirror; archives and pages are written under build_dir."""
    build_dir.mkdir(parents=True, exist_ok=True)
    routes: dict[str, _Resource] = {}
    routes.update(_mcd_routes(build_dir / "mcd", cms_dir / "mcd"))
    routes.update(_hcpcs_routes(build_dir / "hcpcs", cms_dir / "hcpcs"))
    routes.update(_icd10cm_routes(build_dir / "icd10cm", cms_dir / "icd10cm"))
    routes.update(_iom_routes(build_dir / "iom", cms_dir / "pdf_standins"))
    return routes


def _file(path: Path) -> _Resource:
    """Serve an existing file as is."""
    return _Resource(lambda: path, _CONTENT_TYPES.get(path.suffix.lower(), "application/octet-stream"))


def _zip(target: Path, members: Callable[[], list[tuple[str, Path]]]) -> _Resource:
    """A zip built from (arcname, source file) pairs on first request."""

    def build() -> Path:
        _write_zip(target, members())
        return target

    return _Resource(build, "application/zip")


def _page(target: Path, title: str, body: str) -> _Resource:
    """An HTML page written right away (pages are tiny)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)} | CMS"
        f"</title></head>\n<body><main><h1>{html.escape(title)}</h1>\n{body}\n</main></body></html>\n",
        encoding="utf-8",
    )
    return _Resource(lambda: target, _CONTENT_TYPES[".html"])


def _link(href: str, text: str) -> str:
    """One anchor."""
    return f'<a href="{html.escape(href)}">{html.escape(text)}</a>'


def _write_zip(target: Path, members: list[tuple[str, Path]]) -> None:
    """Write a deflated zip (level 1: these are test fixtures, build speed matters more than size)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".building")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for arcname, source in members:
            info = zipfile.ZipInfo.from_file(source, arcname)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with source.open("rb") as src, archive.open(info, "w") as dst:
                while chunk := src.read(1024 * 1024):
                    dst.write(chunk)
    partial.replace(target)


def _mcd_routes(out: Path, mcd: Path) -> dict[str, _Resource]:
    """all_data.zip -> {ncd.zip, current_lcd.zip} -> {<part>_csv.zip, data dictionary PDF, readme_first.txt}."""

    def part_zip(part: str, dictionary: str) -> Path:
        csv_zip = out / "parts" / part / f"{part}_csv.zip"
        _write_zip(csv_zip, [(p.name, p) for p in sorted((mcd / part / f"{part}_csv").iterdir())])
        outer = out / "parts" / f"{part}.zip"
        _write_zip(outer, [
            (csv_zip.name, csv_zip),
            (dictionary, mcd / part / dictionary),
            ("readme_first.txt", mcd / part / "readme_first.txt"),
        ])
        return outer

    ncd = _Resource(lambda: part_zip("ncd", "ncd data dictionary.pdf"), "application/zip")
    lcd = _Resource(lambda: part_zip("current_lcd", "lcd data dictionary.pdf"), "application/zip")
    all_data = _zip(out / "all_data.zip", lambda: [("ncd.zip", ncd.path()), ("current_lcd.zip", lcd.path())])
    page = _page(out / "downloads.html", "Medicare Coverage Database Downloads", "\n".join([
        "<h2>Download the entire database</h2>",
        f"<p>{_link(MCD_ALL_DATA_ZIP, 'Download All Data')} (ZIP)</p>",
        "<h2>National Coverage Documents</h2>",
        f"<p>{_link(MCD_NCD_ZIP, 'Download NCD')} (ZIP)</p>",
        "<h2>Local Coverage Documents</h2>",
        f"<p>{_link(MCD_CURRENT_LCD_ZIP, 'Download Current LCDs')} (ZIP)</p>",
    ]))
    return {MCD_PAGE: page, MCD_ALL_DATA_ZIP: all_data, MCD_NCD_ZIP: ncd, MCD_CURRENT_LCD_ZIP: lcd}


def _hcpcs_routes(out: Path, hcpcs: Path) -> dict[str, _Resource]:
    """The quarterly-update page with the real release zip and a record-layout decoy."""
    page = _page(out / "quarterly-update.html", "Quarterly Update", "\n".join([
        "<p>HCPCS quarterly update files are listed below.</p>",
        "<h2>Related Links</h2><ul>",
        f"<li>{_link(HCPCS_LAYOUT_ZIP, HCPCS_LAYOUT_LINK_TEXT)}</li>",
        f"<li>{_link(HCPCS_ZIP, HCPCS_ZIP_LINK_TEXT)}</li>",
        "</ul>",
    ]))
    return {
        HCPCS_PAGE: page,
        HCPCS_ZIP: _file(hcpcs / "2019-Alpha-Numeric-HCPCS-File.zip"),
        HCPCS_LAYOUT_ZIP: _file(hcpcs / "2019-HCPCS-Record-Layout.zip"),
    }


def _icd10cm_routes(out: Path, icd: Path) -> dict[str, _Resource]:
    """A code-tables page linking the FY2021 and FY2026 (April update) zips."""
    page = _page(out / "icd-10-cm-files.html", "ICD-10-CM Files", "\n".join([
        "<h2>2026 ICD-10-CM</h2>",
        f"<p>{_link(ICD10CM_2026_ZIP, ICD10CM_2026_LINK_TEXT)}</p>",
        "<h2>2021 ICD-10-CM</h2>",
        f"<p>{_link(ICD10CM_2021_ZIP, ICD10CM_2021_LINK_TEXT)}</p>",
    ]))
    fy2021 = _zip(out / "2021-code-tables-and-index.zip", lambda: [
        ("icd10cm_tabular_2021.xml", icd / "icd10cm_tabular_2021.xml"),
        ("icd10cm-order-Jan-2021.txt", icd / "icd10cm-order-Jan-2021.txt"),
    ])
    fy2026 = _zip(out / "2026-code-tables-tabular-and-index.zip", lambda: [
        ("icd10c-tabular-April-1-2026.xml", icd / "icd10c-tabular-April-1-2026.xml"),
    ])
    return {ICD10CM_PAGE: page, ICD10CM_2021_ZIP: fy2021, ICD10CM_2026_ZIP: fy2026}


def _iom_routes(out: Path, standins: Path) -> dict[str, _Resource]:
    """The IOM index page, one page per manual, and chapter PDFs served from the real stand-in PDFs."""
    routes: dict[str, _Resource] = {}
    index_items = []
    for manual in IOM_MANUALS:
        index_items.append(f"<li>{_link(manual.page, f'{manual.number} - {manual.title}')}</li>")
        rows = []
        for chapter in manual.chapters:
            href = f"{IOM_DOWNLOADS}/{chapter.file_name}"
            rows.append(f"<tr><td>{_link(href, chapter.link_text + ' (PDF)')}</td></tr>")
            routes[href] = _file(standins / chapter.standin)
        routes[manual.page] = _page(out / f"{manual.number}.html", f"{manual.title} ({manual.number})",
                                    "<table><tbody>\n" + "\n".join(rows) + "\n</tbody></table>")
    routes[IOM_INDEX_PAGE] = _page(out / "index.html", "Internet-Only Manuals (IOMs)",
                                   "<ul>\n" + "\n".join(index_items) + "\n</ul>")
    return routes


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
        """The file on disk served at `path` (built on demand), for comparing hashes."""
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
    return CmsMirror(build_site(build_dir, cms_dir))
