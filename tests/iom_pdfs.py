"""Writes IOM-style chapter PDFs with reportlab, laid out like CMS manual chapters (no real IOM PDF is offline).

The layout mirrors a real chapter: a running header (manual name, chapter line) and footer (revision, page
number) on every page, a table of contents page listing the section headings with no body, then bold
numbered section headings ("110.1 - ...") each followed by a "(Rev. ...)" line, body text, and a ruled table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reportlab.lib import colors
from reportlab.lib.pagesizes import letter
from reportlab.lib.utils import simpleSplit
from reportlab.pdfgen.canvas import Canvas
from reportlab.platypus import Table, TableStyle

MANUAL_HEADER = "Medicare Benefit Policy Manual"
CHAPTER_HEADER = "Chapter 15 - Covered Medical and Other Health Services"
REVISION_FOOTER = "Rev. 11435, 06-22-22"

TABLE_ROWS: list[list[str]] = [
    ["Item", "HCPCS code", "Reasonable useful lifetime"],
    ["Hospital bed, fixed height", "E0250", "5 years"],
    ["Walker, folding, wheeled", "E0143", "5 years"],
    ["Oxygen concentrator", "E1390", "5 years"],
]

SECTION_110_TITLE = "Durable Medical Equipment - General"
SECTION_110_1_TITLE = "Definition of Durable Medical Equipment"
SECTION_110_2_TITLE = (
    "Repairs, Maintenance, Replacement, and Delivery of Durable Medical Equipment Furnished Under the Part B Benefit"
)
SECTION_120_TITLE = "Prosthetic Devices"

# Each block: (kind, payload). Kinds: toc_title, toc, heading, rev, text, table, page_break.
CHAPTER_BLOCKS: list[tuple[str, object]] = [
    ("toc_title", "Table of Contents"),
    ("rev", "(Rev. 11435, 06-22-22)"),
    ("text", "Transmittals for Chapter 15"),
    ("toc", f"110 - {SECTION_110_TITLE}"),
    ("toc", f"110.1 - {SECTION_110_1_TITLE}"),
    ("toc", f"110.2 - {SECTION_110_2_TITLE}"),
    ("toc", f"120 - {SECTION_120_TITLE}"),
    ("page_break", None),
    ("heading", f"110 - {SECTION_110_TITLE}"),
    ("rev", "(Rev. 1, 10-01-03)"),
    ("text", "B3-2100, A3-3113, HO-235"),
    (
        "text",
        "Expenses incurred by a beneficiary for the rental or purchase of durable medical equipment are "
        "reimbursable if the equipment is used in the patient's home and is necessary and reasonable for "
        "the treatment of an illness or injury.",
    ),
    ("heading", f"110.1 - {SECTION_110_1_TITLE}"),
    ("rev", "(Rev. 1, 10-01-03)"),
    (
        "text",
        "Durable medical equipment is equipment which can withstand repeated use, is primarily and "
        "customarily used to serve a medical purpose, and generally is not useful to a person in the "
        "absence of an illness or injury.",
    ),
    ("page_break", None),
    (
        "text",
        "The contractor determines the reasonable useful lifetime of an item from the schedule below "
        "when no other information is available.",
    ),
    ("text", "2 - Equipment that meets the definition is covered only when it is appropriate for home use."),
    ("table", TABLE_ROWS),
    ("text", "Replacement before the end of the lifetime requires a new physician order."),
    ("heading", f"110.2 - {SECTION_110_2_TITLE}"),
    ("rev", "(Rev. 173, 05-08-13)"),
    (
        "text",
        "Medicare pays for repairs to make beneficiary-owned equipment serviceable when the repair is necessary.",
    ),
    ("page_break", None),
    ("text", "900 - Series claims for rental equipment are billed once a month."),
    (
        "text",
        "Routine periodic servicing such as testing, cleaning and checking of equipment is not covered "
        "because the owner is expected to perform it.",
    ),
    ("heading", f"120 - {SECTION_120_TITLE}"),
    ("rev", "(Rev. 11435, 06-22-22)"),
    (
        "text",
        "Prosthetic devices which replace all or part of an internal body organ are covered when "
        "furnished on a physician's order.",
    ),
]


@dataclass(frozen=True)
class ExpectedSection:
    """What extraction must find for one generated section."""

    number: str
    title: str
    page_start: int
    page_end: int


EXPECTED_SECTIONS: list[ExpectedSection] = [
    ExpectedSection("110", SECTION_110_TITLE, 2, 2),
    ExpectedSection("110.1", SECTION_110_1_TITLE, 2, 3),
    ExpectedSection("110.2", SECTION_110_2_TITLE, 3, 4),
    ExpectedSection("120", SECTION_120_TITLE, 4, 4),
]

_PAGE_WIDTH, _PAGE_HEIGHT = letter
_LEFT = 72.0
_TEXT_WIDTH = _PAGE_WIDTH - 2 * _LEFT
_BODY_TOP = _PAGE_HEIGHT - 100
_LEADING = 15.0


class _ChapterWriter:
    """Draws blocks top-down, adding the running header and footer to every page."""

    def __init__(self, path: Path) -> None:
        self.canvas = Canvas(str(path), pagesize=letter)
        self.page_number = 1
        self.y = _BODY_TOP
        self._draw_running_lines()

    def _draw_running_lines(self) -> None:
        self.canvas.setFont("Times-Roman", 10)
        self.canvas.drawString(_LEFT, _PAGE_HEIGHT - 50, MANUAL_HEADER)
        self.canvas.drawString(_LEFT, _PAGE_HEIGHT - 64, CHAPTER_HEADER)
        self.canvas.drawString(_LEFT, 50, REVISION_FOOTER)
        self.canvas.drawCentredString(_PAGE_WIDTH / 2, 34, str(self.page_number))

    def page_break(self) -> None:
        """Finish the page and start the next one."""
        self.canvas.showPage()
        self.page_number += 1
        self.y = _BODY_TOP
        self._draw_running_lines()

    def lines(self, text: str, font: str, size: float = 12) -> None:
        """Draw text wrapped to the text width."""
        self.canvas.setFont(font, size)
        for line in simpleSplit(text, font, size, _TEXT_WIDTH):
            self.canvas.drawString(_LEFT, self.y, line)
            self.y -= _LEADING
        self.y -= 4

    def table(self, rows: list[list[str]]) -> None:
        """Draw a ruled table (grid lines make pdfplumber see it as a table)."""
        table = Table(rows, colWidths=[200, 90, 150])
        table.setStyle(
            TableStyle(
                [
                    ("GRID", (0, 0), (-1, -1), 0.75, colors.black),
                    ("FONT", (0, 0), (-1, -1), "Times-Roman", 11),
                    ("FONT", (0, 0), (-1, 0), "Times-Bold", 11),
                ]
            )
        )
        _, height = table.wrapOn(self.canvas, _TEXT_WIDTH, self.y)
        table.drawOn(self.canvas, _LEFT, self.y - height)
        self.y -= height + 18

    def save(self) -> None:
        """Write the PDF file."""
        self.canvas.save()


def write_iom_chapter_pdf(path: Path, blocks: list[tuple[str, object]] = CHAPTER_BLOCKS) -> Path:
    """Write a 4-page IOM-style chapter (TOC page + sections 110, 110.1, 110.2, 120) to path."""
    writer = _ChapterWriter(path)
    for kind, payload in blocks:
        if kind == "page_break":
            writer.page_break()
        elif kind == "table":
            writer.table(payload)  # type: ignore[arg-type]
        elif kind in ("heading", "toc_title"):
            writer.lines(str(payload), "Times-Bold")
        else:
            writer.lines(str(payload), "Times-Roman")
    writer.save()
    return path
