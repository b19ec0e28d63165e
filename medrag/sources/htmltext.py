"""Turn the HTML narratives of CMS exports (MCD NCD/LCD fields) into clean, readable plain text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

# Blocks that stand apart from their neighbours with a blank line.
_PARAGRAPH_TAGS = frozenset(
    {
        "p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "hr", "address", "center",
        "section", "article", "header", "footer", "aside", "nav", "form", "fieldset", "figure", "dl",
    }
)
# Blocks that only need to start on a line of their own.
_LINE_TAGS = frozenset({"div", "dt", "dd", "caption", "figcaption", "main", "details", "summary"})
_LIST_TAGS = frozenset({"ul", "ol", "menu", "dir"})
_CELL_TAGS = frozenset({"td", "th"})
_SKIPPED_TAGS = frozenset({"script", "style", "template", "head", "title", "noscript"})
_VOID_TAGS = frozenset({"br", "hr", "img", "input", "meta", "link", "col", "area", "base", "wbr", "source"})

# Nested list items are indented this much per level (medrag.answer.units reads the nesting back).
LIST_INDENT = "  "
_MAX_BREAK = 2  # a blank line is the most vertical space the text ever needs
_WHITESPACE = re.compile(r"\s+")
# Zero-width characters and soft hyphens only survive as invisible noise in search text.
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
# C1 controls appear when cp1252 text was decoded as Latin-1; the cp1252 meaning is the intended one.
_C1_CONTROL = re.compile("[\u0080-\u009f]")


def _repair_c1(match: re.Match[str]) -> str:
    """Map one C1 control character to the cp1252 character it stood for (or drop it)."""
    return bytes([ord(match.group(0))]).decode("cp1252", errors="ignore")


@dataclass
class _ListState:
    ordered: bool
    next_number: int = 1
    item_indent: str = ""  # where wrapped text of the current item lines up
    implicit: bool = False  # opened by a stray <li>; its </li> ends it


@dataclass
class _Cell:
    text: str
    rowspan: int = 1
    colspan: int = 1


@dataclass
class _TableState:
    row: list[_Cell] | None = None
    cell: list[str] | None = None
    cell_rowspan: int = 1
    cell_colspan: int = 1
    # column index -> [text, rows still covered] for cells with rowspan > 1
    spans: dict[int, list] = field(default_factory=dict)


@dataclass
class _Writer:
    """Accumulates text with pending line breaks so that runs of blocks never pile up blank lines."""

    parts: list[str] = field(default_factory=list)
    pending_break: int = 0
    pending_prefix: str | None = None
    continuation_indent: str = ""
    at_line_start: bool = True

    def request_break(self, count: int) -> None:
        """Ask for at least `count` newlines before the next text."""
        self.pending_break = max(self.pending_break, count)

    def add_hard_break(self) -> None:
        """A <br>: each one adds a newline, up to a blank line."""
        self.pending_break = min(_MAX_BREAK, self.pending_break + 1)

    def write(self, text: str) -> None:
        """Append collapsed inline text, emitting pending breaks and list markers first."""
        if self.pending_break or self.at_line_start:
            text = text.lstrip(" ")
        if not text:
            return
        if self.pending_break and self.parts:
            self._strip_trailing_spaces()
            self.parts.append("\n" * self.pending_break)
            self.at_line_start = True
        self.pending_break = 0
        if self.at_line_start:
            if self.pending_prefix is not None:
                self.parts.append(self.pending_prefix)
                self.pending_prefix = None
            elif self.continuation_indent:
                self.parts.append(self.continuation_indent)
        self.parts.append(text)
        self.at_line_start = False

    def _strip_trailing_spaces(self) -> None:
        while self.parts and self.parts[-1].endswith(" "):
            stripped = self.parts[-1].rstrip(" ")
            if stripped:
                self.parts[-1] = stripped
                return
            self.parts.pop()

    def text(self) -> str:
        """The finished text: trailing spaces trimmed on every line, no leading/trailing blank lines."""
        lines = "".join(self.parts).split("\n")
        return "\n".join(line.rstrip() for line in lines).strip("\n")


class _NarrativeParser(HTMLParser):
    """Streaming HTML-to-text converter; tolerant of the mis-nested tags common in MCD exports."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._writer = _Writer()
        self._lists: list[_ListState] = []
        self._tables: list[_TableState] = []
        self._skip_depth = 0
        self._pre_depth = 0

    # -- HTMLParser callbacks -------------------------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """Open a block, list, list item, table part or skipped element."""
        if tag in _SKIPPED_TAGS:
            self._skip_depth += 1
            return
        if self._skip_depth:
            return
        if tag == "br":
            self._hard_break()
        elif tag in _LIST_TAGS:
            self._open_list(ordered=tag == "ol", attrs=attrs)
        elif tag == "li":
            self._open_item(attrs)
        elif tag == "table":
            self._block_break(_MAX_BREAK)
            self._tables.append(_TableState())
        elif tag == "tr":
            self._open_row()
        elif tag in _CELL_TAGS:
            self._open_cell(attrs)
        elif tag in _PARAGRAPH_TAGS:
            if tag == "pre":
                self._pre_depth += 1
            self._block_break(_MAX_BREAK)
        elif tag in _LINE_TAGS:
            self._block_break(1)

    def handle_endtag(self, tag: str) -> None:
        """Close whatever the tag opened; stray end tags only add the break they imply."""
        if tag in _SKIPPED_TAGS:
            self._skip_depth = max(0, self._skip_depth - 1)
            return
        if self._skip_depth:
            return
        if tag == "br":
            # Browsers read a stray </br> as <br>.
            self._hard_break()
        elif tag in _LIST_TAGS:
            self._close_list()
        elif tag == "li":
            if self._lists and self._lists[-1].implicit:
                self._close_list()
            else:
                self._block_break(1)
        elif tag == "table":
            self._close_table()
        elif tag == "tr":
            self._close_row()
        elif tag in _CELL_TAGS:
            self._close_cell()
        elif tag in _PARAGRAPH_TAGS:
            if tag == "pre":
                self._pre_depth = max(0, self._pre_depth - 1)
            self._block_break(_MAX_BREAK)
        elif tag in _LINE_TAGS:
            self._block_break(1)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """`<br />` must count once, not as an open plus a close."""
        self.handle_starttag(tag, attrs)
        if tag not in _VOID_TAGS:
            self.handle_endtag(tag)

    def handle_data(self, data: str) -> None:
        """Write text, whitespace-collapsed except inside <pre>."""
        if self._skip_depth or not data:
            return
        data = _INVISIBLE.sub("", data)
        if self._pre_depth and not self._in_cell():
            lines = data.replace("\r\n", "\n").split("\n")
            for index, line in enumerate(lines):
                if index:
                    self._hard_break()
                self._emit(_WHITESPACE.sub(" ", line))
            return
        self._emit(_WHITESPACE.sub(" ", data))

    # -- structure helpers ----------------------------------------------------------------------------------

    def _in_cell(self) -> bool:
        return bool(self._tables) and self._tables[-1].cell is not None

    def _emit(self, text: str) -> None:
        table = self._tables[-1] if self._tables else None
        if table is not None and table.row is not None and table.cell is None and text.strip():
            # Text directly inside <tr> (malformed) still belongs to that row.
            table.cell = []
        if table is not None and table.cell is not None:
            table.cell.append(text)
        else:
            self._writer.write(text)

    def _block_break(self, count: int) -> None:
        if self._in_cell():
            self._tables[-1].cell.append(" ")
            return
        # Inside a list item, paragraphs only need a new line, not a blank one.
        self._writer.request_break(1 if self._lists else count)

    def _hard_break(self) -> None:
        if self._in_cell():
            self._tables[-1].cell.append(" ")
        else:
            self._writer.add_hard_break()

    def _open_list(self, ordered: bool, attrs: list[tuple[str, str | None]]) -> None:
        start = 1
        if ordered:
            start_attr = dict(attrs).get("start")
            if start_attr and start_attr.strip().isdigit():
                start = int(start_attr.strip())
        self._block_break(1 if self._lists else _MAX_BREAK)
        self._lists.append(_ListState(ordered=ordered, next_number=start))

    def _close_list(self) -> None:
        if self._lists:
            self._lists.pop()
        self._writer.pending_prefix = None
        self._writer.continuation_indent = self._lists[-1].item_indent if self._lists else ""
        self._block_break(1 if self._lists else _MAX_BREAK)

    def _open_item(self, attrs: list[tuple[str, str | None]]) -> None:
        if not self._lists:
            # A stray <li> with no list around it still reads best as a bullet.
            self._lists.append(_ListState(ordered=False, implicit=True))
        state = self._lists[-1]
        if state.ordered:
            value_attr = dict(attrs).get("value")
            if value_attr and value_attr.strip().isdigit():
                state.next_number = int(value_attr.strip())
            marker = f"{state.next_number}. "
            state.next_number += 1
        else:
            marker = "- "
        if self._in_cell():
            self._tables[-1].cell.append(f" {marker}")
            return
        indent = LIST_INDENT * (len(self._lists) - 1)
        state.item_indent = indent + " " * len(marker)
        self._writer.request_break(1)
        self._writer.pending_prefix = indent + marker
        self._writer.continuation_indent = state.item_indent

    def _open_row(self) -> None:
        if not self._tables:
            self._tables.append(_TableState())
        self._close_row()
        self._tables[-1].row = []

    def _open_cell(self, attrs: list[tuple[str, str | None]]) -> None:
        if not self._tables:
            self._tables.append(_TableState())
        table = self._tables[-1]
        self._close_cell()
        if table.row is None:
            table.row = []
        table.cell = []
        table.cell_rowspan = _span_attr(attrs, "rowspan")
        table.cell_colspan = _span_attr(attrs, "colspan")

    def _close_cell(self) -> None:
        if not self._tables:
            return
        table = self._tables[-1]
        if table.cell is None:
            return
        if table.row is None:
            table.row = []
        text = _WHITESPACE.sub(" ", "".join(table.cell)).strip()
        table.row.append(_Cell(text, table.cell_rowspan, table.cell_colspan))
        table.cell = None

    def _close_row(self) -> None:
        if not self._tables:
            return
        self._close_cell()
        table = self._tables[-1]
        if table.row is None:
            return
        cells = _fill_row_spans(table.row, table.spans)
        table.row = None
        if not any(cells):
            return
        line = " | ".join(cells)
        if len(self._tables) > 1 and self._tables[-2].cell is not None:
            # A table nested in a cell flattens into that cell's text.
            self._tables[-2].cell.append(f" {line};")
        else:
            self._writer.request_break(1)
            self._writer.write(line)

    def _close_table(self) -> None:
        if not self._tables:
            return
        self._close_row()
        self._tables.pop()
        self._block_break(_MAX_BREAK)

    def result(self) -> str:
        """Flush unclosed tables and return the text."""
        while self._tables:
            self._close_table()
        return self._writer.text()


def _span_attr(attrs: list[tuple[str, str | None]], name: str) -> int:
    """A rowspan/colspan attribute as a sane positive integer (1 when absent or garbage)."""
    value = (dict(attrs).get(name) or "").strip()
    return min(int(value), 1000) if value.isdigit() and int(value) > 0 else 1


def _fill_row_spans(row: list[_Cell], spans: dict[int, list]) -> list[str]:
    """Lay out one row's cells, repeating the text of cells from rows above that span into this row."""
    texts: list[str] = []
    column = 0

    def take_spans() -> None:
        nonlocal column
        while column in spans:
            span = spans[column]
            texts.append(span[0])
            span[1] -= 1
            if span[1] <= 0:
                del spans[column]
            column += 1

    for cell in row:
        take_spans()
        texts.append(cell.text)
        if cell.rowspan > 1:
            spans[column] = [cell.text, cell.rowspan - 1]
        column += cell.colspan
    take_spans()
    return texts


def html_to_text(html: str) -> str:
    """Convert an HTML narrative to plain text: paragraphs, bullets, numbered lists and pipe-table rows."""
    if not html:
        return ""
    html = _C1_CONTROL.sub(_repair_c1, html)
    parser = _NarrativeParser()
    parser.feed(html)
    parser.close()
    return parser.result()
