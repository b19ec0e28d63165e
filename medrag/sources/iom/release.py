"""CMS Internet-Only Manuals (IOM): find the chapter PDFs on cms.gov pages and split chapters into sections.

Discovery reads the IOM index page (one link per manual) and each manual page (one link per chapter PDF).
Extraction turns a chapter PDF into one record per numbered section ("110.1 - Definition of ..."), with
running headers/footers removed and ruled tables rendered as pipe-separated rows.
"""

from __future__ import annotations

import math
import re
import statistics
import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

import pdfplumber
from pdfminer.pdfexceptions import PDFException
from pdfminer.psexceptions import PSException
from pdfplumber.page import Page
from pdfplumber.utils.exceptions import MalformedPDFException, PdfminerException
from sqlalchemy import Connection

from medrag.core.errors import MedragError
from medrag.ingest.copy import copy_rows
from medrag.ingest.releases import LoadReport
from medrag.sources.common import GetPage, ReleaseCandidate, RemoteFile

IOM_INDEX_URL = "https://www.cms.gov/medicare/regulations-guidance/manuals/internet-only-manuals-ioms"
DEFAULT_MANUALS: tuple[str, ...] = ("100-02", "100-03", "100-04")

IOM_SECTION_COLUMNS: list[tuple[str, str]] = [
    ("manual", "text"),
    ("chapter", "text"),
    ("section_number", "text"),
    ("title", "text"),
    ("heading_path", "text[]"),
    ("text", "text"),
    ("page_start", "integer"),
    ("page_end", "integer"),
]


class IomDiscoveryError(MedragError):
    """A CMS IOM web page does not contain the links we expect (the site layout probably changed)."""


class IomFormatError(MedragError):
    """A file that should be a PDF is corrupt, truncated, encrypted or not a PDF at all."""


# ---------------------------------------------------------------------------------------------------------
# Discovery
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChapterLink:
    """One chapter PDF linked from a manual page."""

    url: str
    manual: str
    chapter: str
    part: int | None
    title: str

    @property
    def file_name(self) -> str:
        """The PDF's file name as published, e.g. 'bp102c15.pdf'."""
        return unquote(urlsplit(self.url).path.rsplit("/", 1)[-1])


@dataclass
class _Anchor:
    href: str
    text: str
    context: str = ""


class _LinkCollector(HTMLParser):
    """Collects <a href> links with their text and the text of the enclosing table row or list item."""

    # A manual number may sit in a table cell next to the link rather than in the link text itself.
    _CONTAINERS = frozenset({"tr", "li"})
    _HEADINGS = frozenset({"title", "h1"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors: list[_Anchor] = []
        self.heading_text: list[str] = []
        self._open_anchor: tuple[_Anchor, list[str]] | None = None
        self._containers: list[tuple[str, list[str], list[_Anchor]]] = []
        self._heading_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._close_anchor()
            href = dict(attrs).get("href")
            if href:
                anchor = _Anchor(href=href.strip(), text="")
                self._open_anchor = (anchor, [])
                self.anchors.append(anchor)
                for _, _, members in self._containers:
                    members.append(anchor)
        elif tag in self._CONTAINERS:
            self._containers.append((tag, [], []))
        elif tag in self._HEADINGS:
            self._heading_depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._close_anchor()
        elif tag in self._CONTAINERS:
            # Close up to the matching container; HTML lets </tr> implicitly close an open <li> and vice versa.
            while self._containers:
                open_tag, _, _ = self._containers[-1]
                self._close_container()
                if open_tag == tag:
                    break
        elif tag in self._HEADINGS and self._heading_depth:
            self._heading_depth -= 1

    def handle_data(self, data: str) -> None:
        if self._open_anchor is not None:
            self._open_anchor[1].append(data)
        for _, texts, _ in self._containers:
            texts.append(data)
        if self._heading_depth:
            self.heading_text.append(data)

    def close(self) -> None:
        super().close()
        self._close_anchor()
        while self._containers:
            self._close_container()

    def _close_anchor(self) -> None:
        if self._open_anchor is not None:
            anchor, texts = self._open_anchor
            anchor.text = _collapse_spaces("".join(texts))
            self._open_anchor = None

    def _close_container(self) -> None:
        _, texts, members = self._containers.pop()
        context = _collapse_spaces("".join(texts))
        for anchor in members:
            if not anchor.context:
                anchor.context = context


def _collect_links(html: str) -> _LinkCollector:
    collector = _LinkCollector()
    collector.feed(html)
    collector.close()
    return collector


def _collapse_spaces(text: str) -> str:
    return " ".join(text.split())


def _is_navigable(href: str) -> bool:
    return not href.startswith(("#", "mailto:", "javascript:", "tel:"))


def _manual_number_pattern(manual: str) -> re.Pattern[str]:
    # "100-02" must not match inside "100-021" or "1100-02".
    return re.compile(rf"(?<![\d-]){re.escape(manual)}(?!\d)")


def discover_manual_pages(index_html: str, base_url: str, manuals: Sequence[str] = DEFAULT_MANUALS) -> dict[str, str]:
    """Map each wanted manual number ('100-02') to the absolute URL of its page on the IOM index page."""
    anchors = [a for a in _collect_links(index_html).anchors if _is_navigable(a.href)]
    found: dict[str, str] = {}
    for manual in manuals:
        pattern = _manual_number_pattern(manual)
        # Prefer a link whose own text names the manual; fall back to one in a row/item that names it.
        chosen = next((a for a in anchors if pattern.search(a.text)), None)
        if chosen is None:
            chosen = next(
                (a for a in anchors if pattern.search(a.context) and not _url_path(a.href).endswith(".pdf")),
                None,
            )
        if chosen is not None:
            found[manual] = urljoin(base_url, chosen.href)
    missing = [m for m in manuals if m not in found]
    if missing:
        raise IomDiscoveryError(
            f"IOM index page {base_url}: no link found for manual(s) {', '.join(missing)} "
            f"({len(anchors)} links on the page)"
        )
    return found


_CHAPTER_FILE_RE = re.compile(
    r"^[a-z]+(?P<series>\d{2,3})c(?P<chapter>\d{1,3})(?P<suffix>[a-z]?)(?:[_-]?part[_-]?(?P<part>\d+))?\.pdf$",
    re.IGNORECASE,
)
_MANUAL_IN_TEXT_RE = re.compile(r"(?<![\d-])(100-\d{2})(?!\d)")
# Link texts end with a file-type label: "(PDF)", "(PDF, 442 KB)", "[PDF 1 MB]" or a bare "PDF".
_PDF_LABEL_RE = re.compile(r"\s*[\(\[]\s*PDF\b[^\)\]]*[\)\]]\s*$|(?:^|\s+)PDF\s*$", re.IGNORECASE)


def _url_path(href: str) -> str:
    return unquote(urlsplit(href).path).lower()


def _manual_from_series(series: str) -> str | None:
    # File names carry the publication number without its dash: bp102 -> 100-02, clm104 -> 100-04.
    if len(series) == 3 and series.startswith("1"):
        return f"100-{series[1:]}"
    return None


def _chapter_title(anchor: _Anchor, file_name: str) -> str:
    for candidate in (anchor.text, anchor.context):
        title = _PDF_LABEL_RE.sub("", candidate).strip()
        if title and title.lower() != file_name.lower():
            return title
    return file_name.rsplit(".", 1)[0]


def discover_chapter_pdfs(manual_html: str, base_url: str) -> list[ChapterLink]:
    """List the chapter PDFs linked from one manual page, in page order, with manual/chapter/part parsed."""
    collector = _collect_links(manual_html)
    heading_manual = _MANUAL_IN_TEXT_RE.search(" ".join(collector.heading_text))
    chapters: list[ChapterLink] = []
    seen_urls: set[str] = set()
    for anchor in collector.anchors:
        if not _is_navigable(anchor.href):
            continue
        file_name = unquote(urlsplit(anchor.href).path.rsplit("/", 1)[-1])
        match = _CHAPTER_FILE_RE.match(file_name)
        if match is None:
            continue
        url = urljoin(base_url, anchor.href)
        if url in seen_urls:
            continue
        manual = _manual_from_series(match["series"]) or (heading_manual[1] if heading_manual else None)
        if manual is None:
            raise IomDiscoveryError(
                f"manual page {base_url}: cannot tell which manual {file_name!r} belongs to "
                "(no 100-NN number in the file name or the page heading)"
            )
        # "bp102c01.pdf" is chapter 1, as the manual's own headings number it.
        chapter = str(int(match["chapter"])) + match["suffix"].lower()
        seen_urls.add(url)
        chapters.append(
            ChapterLink(
                url=url,
                manual=manual,
                chapter=chapter,
                part=int(match["part"]) if match["part"] else None,
                title=_chapter_title(anchor, file_name),
            )
        )
    if not chapters:
        raise IomDiscoveryError(
            f"manual page {base_url}: no chapter PDF links found ({len(collector.anchors)} links on the page)"
        )
    return chapters


# ---------------------------------------------------------------------------------------------------------
# Generic PDF text extraction
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PageText:
    """The readable text of one PDF page: body lines in reading order, tables as 'cell | cell' rows."""

    page_number: int
    lines: tuple[str, ...]
    tables: tuple[tuple[str, ...], ...] = ()
    removed_lines: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The page body as one string, one line per text line."""
        return "\n".join(self.lines)


@dataclass
class _Line:
    text: str
    top: float
    bold: bool = False
    is_table: bool = False


@dataclass
class _Page:
    number: int
    lines: list[_Line]
    tables: list[tuple[str, ...]] = field(default_factory=list)
    removed: list[_Line] = field(default_factory=list)


# How many lines at each end of a page may be a running header or footer.
_MARGIN_LINES = 4
# A repeated header/footer sits at the same height on every page; allow for rounding.
_MARGIN_TOP_TOLERANCE = 6.0
_RUNNING_LINE_SHARE = 0.6
# pdfminer raises these, and plain builtins such as KeyError or zlib.error, on damaged objects and streams.
_PDF_READ_ERRORS = (
    PdfminerException,
    MalformedPDFException,
    PDFException,
    PSException,
    zlib.error,
    ValueError,
    KeyError,
    TypeError,
    IndexError,
    AssertionError,
)
_BOLD_FONT_RE = re.compile(r"bold|black|heavy|semibold|demi", re.IGNORECASE)


def _check_pdf_envelope(pdf_path: Path) -> None:
    """Reject files that are plainly not a complete PDF before pdfminer produces a vaguer error."""
    size = pdf_path.stat().st_size
    if size == 0:
        raise IomFormatError(f"{pdf_path}: empty file, expected a PDF")
    with pdf_path.open("rb") as handle:
        head = handle.read(1024)
        handle.seek(max(0, size - 1024))
        tail = handle.read()
    if b"%PDF-" not in head:
        preview = head[:16]
        raise IomFormatError(f"{pdf_path}: not a PDF file (no %PDF- header; starts with {preview!r})")
    # Readers require %%EOF in the last 1 KiB; a download cut short loses it.
    if b"%%EOF" not in tail:
        raise IomFormatError(f"{pdf_path}: truncated PDF ({size} bytes, no %%EOF marker at the end)")


def _render_table(rows: Iterable[Sequence[str | None]]) -> tuple[str, ...]:
    rendered = []
    for row in rows:
        cells = [_collapse_spaces(cell) if cell else "" for cell in row]
        if any(cells):
            rendered.append(" | ".join(cells))
    return tuple(rendered)


def _inside(obj: dict[str, Any], bbox: tuple[float, float, float, float]) -> bool:
    x0, top, x1, bottom = bbox
    center_x = (obj["x0"] + obj["x1"]) / 2
    center_y = (obj["top"] + obj["bottom"]) / 2
    return x0 <= center_x <= x1 and top <= center_y <= bottom


def _is_bold(chars: Sequence[dict[str, Any]]) -> bool:
    visible = [c for c in chars if not c["text"].isspace()]
    if not visible:
        return False
    bold = sum(1 for c in visible if _BOLD_FONT_RE.search(c.get("fontname", "")))
    return bold * 2 > len(visible)


def _read_page(page: Page) -> _Page:
    """Lines of one page in reading order; ruled tables become pipe-separated rows placed where they stand."""
    tables = page.find_tables()
    bboxes = [table.bbox for table in tables]
    # Words inside a table are emitted once, as table rows, not again as loose lines.
    loose = page.filter(lambda obj: not any(_inside(obj, bbox) for bbox in bboxes)) if bboxes else page
    lines = [
        _Line(text=line["text"], top=line["top"], bold=_is_bold(line["chars"]))
        for line in loose.extract_text_lines(strip=True, return_chars=True)
        if line["text"].strip()
    ]
    rendered_tables: list[tuple[str, ...]] = []
    for table in tables:
        rows = _render_table(table.extract())
        if not rows:
            continue
        rendered_tables.append(rows)
        table_top = table.bbox[1]
        # Tiny offsets keep the rows in order when sorted with the loose lines.
        lines.extend(_Line(text=row, top=table_top + i * 1e-3, is_table=True) for i, row in enumerate(rows))
    lines.sort(key=lambda line: line.top)
    return _Page(number=page.page_number, lines=lines, tables=rendered_tables)


def _margin_key(text: str) -> str:
    # Page numbers and revision numbers change from page to page; the shape of the line does not.
    return re.sub(r"\d+", "#", _collapse_spaces(text).lower())


def _margin_candidates(page: _Page) -> list[tuple[str, _Line]]:
    body = [line for line in page.lines if not line.is_table]
    top = [("top", line) for line in body[:_MARGIN_LINES]]
    # On a short page the same line may be both among the first and the last lines; count it once.
    bottom = [("bottom", line) for line in body[max(_MARGIN_LINES, len(body) - _MARGIN_LINES) :]]
    return top + bottom


def _pages_needed_for_running_line(page_count: int) -> int:
    # 60% tolerates a title page without the header, yet two sections that happen to open at the top of
    # two pages (same "(Rev. ...)" line shape at the same height) are not mistaken for a header.
    return max(min(3, page_count), math.ceil(page_count * _RUNNING_LINE_SHARE))


def _strip_running_lines(pages: list[_Page]) -> None:
    """Remove header/footer lines that repeat at the same height on most pages."""
    if len(pages) < 2:
        return
    tops: dict[tuple[str, str], list[float]] = defaultdict(list)
    page_sets: dict[tuple[str, str], set[int]] = defaultdict(set)
    for page in pages:
        for zone, line in _margin_candidates(page):
            key = (zone, _margin_key(line.text))
            tops[key].append(line.top)
            page_sets[key].add(page.number)
    needed = _pages_needed_for_running_line(len(pages))
    running = {key: statistics.median(tops[key]) for key, numbers in page_sets.items() if len(numbers) >= needed}
    if not running:
        return
    for page in pages:
        drop: set[int] = set()
        for zone, line in _margin_candidates(page):
            usual_top = running.get((zone, _margin_key(line.text)))
            if usual_top is not None and abs(line.top - usual_top) <= _MARGIN_TOP_TOLERANCE:
                drop.add(id(line))
        page.removed = [line for line in page.lines if id(line) in drop]
        page.lines = [line for line in page.lines if id(line) not in drop]


def _read_pdf(pdf_path: Path) -> list[_Page]:
    pdf_path = Path(pdf_path)
    _check_pdf_envelope(pdf_path)
    pages: list[_Page] = []
    try:
        with pdfplumber.open(pdf_path) as pdf:
            for page in pdf.pages:
                pages.append(_read_page(page))
                # Long chapters (hundreds of pages) would otherwise keep every parsed page in memory.
                page.close()
    except _PDF_READ_ERRORS as exc:
        raise IomFormatError(f"{pdf_path}: unreadable PDF ({type(exc).__name__}: {exc})") from exc
    if not pages:
        raise IomFormatError(f"{pdf_path}: PDF has no pages")
    _strip_running_lines(pages)
    return pages


def extract_pdf_pages(pdf_path: Path) -> list[PageText]:
    """Text of every page of any CMS PDF, with running headers/footers removed and tables as pipe rows."""
    return [
        PageText(
            page_number=page.number,
            lines=tuple(line.text for line in page.lines),
            tables=tuple(page.tables),
            removed_lines=tuple(line.text for line in page.removed),
        )
        for page in _read_pdf(pdf_path)
    ]


# ---------------------------------------------------------------------------------------------------------
# IOM chapter sections
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IomSection:
    """One numbered section of an IOM chapter; fields are the IOM_SECTION_COLUMNS."""

    manual: str
    chapter: str
    section_number: str
    title: str
    heading_path: list[str]
    text: str | None
    page_start: int
    page_end: int

    def as_row(self) -> dict[str, Any]:
        """The section as a dict keyed by IOM_SECTION_COLUMNS names."""
        return asdict(self)


_SECTION_HEADING_RE = re.compile(r"^(?P<number>\d{1,3}(?:\.\d{1,3}){0,4})\s+[-\u2013\u2014]\s+(?P<title>[A-Za-z(].*)$")
_CHAPTER_HEADING_RE = re.compile(r"^Chapter\s+\d+[A-Za-z]?\b")
_REVISION_LINE_RE = re.compile(r"^\(?Rev\.", re.IGNORECASE)
# A long section title wraps onto at most this many extra bold lines.
_MAX_TITLE_CONTINUATIONS = 2


@dataclass
class _Located:
    page: int
    line: _Line


def _section_key(number: str) -> tuple[int, ...]:
    return tuple(int(part) for part in number.split("."))


def _find_chapter_heading(pages: list[_Page]) -> str | None:
    first = pages[0]
    # The chapter line is usually the running header; on a headerless chapter it opens page 1.
    for line in first.removed + first.lines[:10]:
        if _CHAPTER_HEADING_RE.match(line.text):
            return _collapse_spaces(line.text)
    return None


def _body_start(candidates: list[tuple[int, str]]) -> int:
    """Index of the first real section heading: the first number seen twice ends the table of contents."""
    seen: set[str] = set()
    for position, (_, number) in enumerate(candidates):
        if number in seen:
            return position
        seen.add(number)
    return 0


def _heading_title(flat: list[_Located], index: int, first_title: str) -> tuple[str, int]:
    """The full heading title (joined across wrapped bold lines) and the index of the line after it."""
    title_parts = [first_title]
    heading = flat[index].line
    next_index = index + 1
    while (
        heading.bold
        and next_index < len(flat)
        and len(title_parts) <= _MAX_TITLE_CONTINUATIONS
        and flat[next_index].page == flat[index].page
    ):
        following = flat[next_index].line
        if (
            not following.bold
            or following.is_table
            or _SECTION_HEADING_RE.match(following.text)
            or _REVISION_LINE_RE.match(following.text)
        ):
            break
        title_parts.append(following.text)
        next_index += 1
    return _collapse_spaces(" ".join(title_parts)), next_index


def extract_iom_sections(pdf_path: Path, *, manual: str, chapter: str) -> list[IomSection]:
    """Split an IOM chapter PDF into its numbered sections, skipping the table of contents."""
    pages = _read_pdf(Path(pdf_path))
    chapter_heading = _find_chapter_heading(pages)
    flat = [_Located(page=page.number, line=line) for page in pages for line in page.lines]

    candidates = [
        (position, match["number"])
        for position, located in enumerate(flat)
        if not located.line.is_table and (match := _SECTION_HEADING_RE.match(located.line.text))
    ]
    if not candidates:
        return []

    # Headings ascend, and share the first heading's boldness: a numbered body line such as
    # "2 - The beneficiary ..." or "900 - Series claims ..." is text, not a section.
    body_candidates = candidates[_body_start(candidates) :]
    headings_are_bold = flat[body_candidates[0][0]].line.bold
    headings: list[tuple[int, str]] = []
    for position, number in body_candidates:
        if headings_are_bold and not flat[position].line.bold:
            continue
        if not headings or _section_key(number) > _section_key(headings[-1][1]):
            headings.append((position, number))

    sections: list[IomSection] = []
    path_stack: list[tuple[str, str]] = []
    for order, (position, number) in enumerate(headings):
        match = _SECTION_HEADING_RE.match(flat[position].line.text)
        assert match is not None  # candidates were selected by this same pattern
        title, body_from = _heading_title(flat, position, match["title"])
        body_to = headings[order + 1][0] if order + 1 < len(headings) else len(flat)
        body = flat[body_from:body_to]

        while path_stack and not number.startswith(path_stack[-1][0] + "."):
            path_stack.pop()
        path_stack.append((number, f"{number} - {title}"))
        heading_path = ([chapter_heading] if chapter_heading else []) + [label for _, label in path_stack]

        text = "\n".join(located.line.text for located in body)
        sections.append(
            IomSection(
                manual=manual,
                chapter=chapter,
                section_number=number,
                title=title,
                heading_path=heading_path,
                text=text or None,
                page_start=flat[position].page,
                page_end=body[-1].page if body else flat[position].page,
            )
        )
    return sections


# ---------------------------------------------------------------------------------------------------------
# Source: discover + load, called by the refresh pipeline
# ---------------------------------------------------------------------------------------------------------


def chapter_from_file_name(file_name: str) -> tuple[str, str, int | None]:
    """(manual, chapter, part) from a chapter PDF name such as 'bp102c15.pdf' or 'x-ncd103c1_Part1.pdf'."""
    base = file_name.rsplit("/", 1)[-1]
    # The download store prefixes names with a hash ("0123abcd-bp102c15.pdf"); the CMS name follows the dash.
    match = _CHAPTER_FILE_RE.match(base) or _CHAPTER_FILE_RE.match(base.split("-", 1)[-1])
    manual = _manual_from_series(match["series"]) if match else None
    if match is None or manual is None:
        raise IomDiscoveryError(f"{file_name}: not an IOM chapter PDF name (like bp102c15.pdf)")
    return manual, str(int(match["chapter"])) + match["suffix"].lower(), int(match["part"]) if match["part"] else None


class IomSource:
    """Internet-Only Manuals 100-02/03/04: index page -> manual pages -> chapter PDFs -> table iom_section."""

    name = "iom"
    tables = ("iom_section",)

    def discover(self, page_url: str, get_page: GetPage) -> list[ReleaseCandidate]:
        """One candidate holding every chapter PDF of the three manuals (labelled later from the files)."""
        files = []
        for manual_url in discover_manual_pages(get_page(page_url), page_url).values():
            links = discover_chapter_pdfs(get_page(manual_url), manual_url)
            files += [RemoteFile(link.url, link.title) for link in links]
        return [ReleaseCandidate(None, files)]

    def load(self, conn: Connection, release_id: int, files: list[Path], workdir: Path) -> LoadReport:
        """Extract the sections of every chapter PDF and COPY them into iom_section."""
        total, empty_chapters = 0, []
        for pdf_path in files:
            manual, chapter, _part = chapter_from_file_name(pdf_path.name)
            found = extract_iom_sections(pdf_path, manual=manual, chapter=chapter)
            sections = [section.as_row() for section in found]
            if not sections:
                empty_chapters.append(pdf_path.name.split("-", 1)[-1])
            total += copy_rows(conn, "iom_section", IOM_SECTION_COLUMNS, sections, constants={"release_id": release_id})
        return LoadReport(rows={"iom_section": total}, notes={"chapters_without_sections": empty_chapters})


SOURCE = IomSource()
