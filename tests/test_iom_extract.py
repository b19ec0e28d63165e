"""IOM discovery and PDF extraction, on reportlab-generated IOM-style chapters and real CMS PDFs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from iom_pdfs import (
    CHAPTER_HEADER,
    EXPECTED_SECTIONS,
    MANUAL_HEADER,
    REVISION_FOOTER,
    SECTION_110_1_TITLE,
    SECTION_110_2_TITLE,
    SECTION_110_TITLE,
    SECTION_120_TITLE,
    TABLE_ROWS,
    write_iom_chapter_pdf,
)

from medrag.core.errors import MedragError
from medrag.sources.iom.release import (
    IOM_SECTION_COLUMNS,
    ChapterLink,
    IomDiscoveryError,
    IomFormatError,
    IomSection,
    PageText,
    discover_chapter_pdfs,
    discover_manual_pages,
    extract_iom_sections,
    extract_pdf_pages,
)

# ---------------------------------------------------------------------------------------------------------
# (a) generated IOM-style chapter
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GeneratedChapter:
    path: Path
    pages: list[PageText]
    sections: list[IomSection]


@pytest.fixture(scope="module")
def chapter(tmp_path_factory: pytest.TempPathFactory) -> GeneratedChapter:
    """A 4-page chapter 15 of 100-02, extracted once for all tests in this module."""
    path = write_iom_chapter_pdf(tmp_path_factory.mktemp("iom") / "bp102c15.pdf")
    return GeneratedChapter(
        path=path,
        pages=extract_pdf_pages(path),
        sections=extract_iom_sections(path, manual="100-02", chapter="15"),
    )


def _section(chapter: GeneratedChapter, number: str) -> IomSection:
    return next(s for s in chapter.sections if s.section_number == number)


def test_sections_found_with_titles_and_page_ranges(chapter: GeneratedChapter) -> None:
    found = [(s.section_number, s.title, s.page_start, s.page_end) for s in chapter.sections]
    expected = [(e.number, e.title, e.page_start, e.page_end) for e in EXPECTED_SECTIONS]
    assert found == expected
    assert {(s.manual, s.chapter) for s in chapter.sections} == {("100-02", "15")}


def test_table_of_contents_creates_no_sections(chapter: GeneratedChapter) -> None:
    # Page 1 lists every heading; none of those entries may become a section of its own.
    assert len(chapter.pages) == 4
    assert "110.1 - Definition of Durable Medical Equipment" in chapter.pages[0].lines
    assert all(s.page_start > 1 for s in chapter.sections)
    assert all(s.text for s in chapter.sections)
    all_text = "\n".join(s.text or "" for s in chapter.sections)
    assert "Transmittals for Chapter 15" not in all_text
    assert "Table of Contents" not in all_text


def test_running_headers_and_footers_are_removed(chapter: GeneratedChapter) -> None:
    for page in chapter.pages:
        assert page.removed_lines == (MANUAL_HEADER, CHAPTER_HEADER, REVISION_FOOTER, str(page.page_number))
        assert MANUAL_HEADER not in page.lines
        assert CHAPTER_HEADER not in page.lines
        assert REVISION_FOOTER not in page.lines
        assert str(page.page_number) not in page.lines
    for section in chapter.sections:
        assert MANUAL_HEADER not in (section.text or "")
        assert REVISION_FOOTER not in (section.text or "").splitlines()


def test_section_revision_lines_survive_header_detection(chapter: GeneratedChapter) -> None:
    # "(Rev. 11435, 06-22-22)" on the TOC page and "(Rev. 1, 10-01-03)" under heading 110 sit at the same
    # height on pages 1 and 2: a look-alike of a running line that must stay.
    assert (_section(chapter, "110").text or "").splitlines()[0] == "(Rev. 1, 10-01-03)"
    assert (_section(chapter, "110.2").text or "").splitlines()[0] == "(Rev. 173, 05-08-13)"


def test_section_text_spans_pages_in_reading_order(chapter: GeneratedChapter) -> None:
    text = " ".join((_section(chapter, "110.1").text or "").split())
    first = text.index("Durable medical equipment is equipment which can withstand repeated use")
    second = text.index("The contractor determines the reasonable useful lifetime")
    last = text.index("Replacement before the end of the lifetime requires a new physician order.")
    assert first < second < last
    assert "Medicare pays for repairs" not in text


def test_table_rows_present_once_as_pipe_rows(chapter: GeneratedChapter) -> None:
    all_text = "\n".join(s.text or "" for s in chapter.sections)
    rendered_rows = [" | ".join(row) for row in TABLE_ROWS]
    for rendered in rendered_rows:
        assert all_text.count(rendered) == 1, rendered
    # Every cell occurs only inside its rendered row, never again as loose words.
    for cell in {cell for row in TABLE_ROWS for cell in row}:
        assert all_text.count(cell) == sum(rendered.count(cell) for rendered in rendered_rows), cell
    assert " | ".join(TABLE_ROWS[1]) in (_section(chapter, "110.1").text or "")
    table_page = chapter.pages[2]
    assert table_page.tables == (tuple(" | ".join(row) for row in TABLE_ROWS),)


def test_heading_path_follows_section_numbers(chapter: GeneratedChapter) -> None:
    assert _section(chapter, "110.1").heading_path == [
        CHAPTER_HEADER,
        f"110 - {SECTION_110_TITLE}",
        f"110.1 - {SECTION_110_1_TITLE}",
    ]
    assert _section(chapter, "110.2").heading_path[-2:] == [
        f"110 - {SECTION_110_TITLE}",
        f"110.2 - {SECTION_110_2_TITLE}",
    ]
    assert _section(chapter, "120").heading_path == [CHAPTER_HEADER, f"120 - {SECTION_120_TITLE}"]


def test_wrapped_heading_title_is_joined_not_left_in_body(chapter: GeneratedChapter) -> None:
    section = _section(chapter, "110.2")
    assert section.title == SECTION_110_2_TITLE
    assert not (section.text or "").startswith("Furnished")


def test_numbered_body_lines_are_not_sections(chapter: GeneratedChapter) -> None:
    # Both lines look like headings ("N - Capitalized words") but are regular text under bold headings.
    assert "2 - Equipment that meets the definition" in (_section(chapter, "110.1").text or "")
    assert "900 - Series claims for rental equipment" in (_section(chapter, "110.2").text or "")
    assert {s.section_number for s in chapter.sections} == {e.number for e in EXPECTED_SECTIONS}


def test_section_rows_use_the_column_names(chapter: GeneratedChapter) -> None:
    row = chapter.sections[0].as_row()
    assert list(row) == [name for name, _ in IOM_SECTION_COLUMNS]
    assert isinstance(row["heading_path"], list)
    assert dict(IOM_SECTION_COLUMNS)["heading_path"] == "text[]"


# ---------------------------------------------------------------------------------------------------------
# (b) real CMS PDFs
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hcpcs_index_pages(cms_dir: Path) -> list[PageText]:
    """The 2019 HCPCS Index PDF, extracted once."""
    return extract_pdf_pages(cms_dir / "pdf_standins" / "2019-HCPCS-Index.pdf")


@pytest.fixture(scope="module")
def drug_table_pages(cms_dir: Path) -> list[PageText]:
    """The 2019 Table of Drugs PDF, extracted once."""
    return extract_pdf_pages(cms_dir / "pdf_standins" / "2019-Table-of-Drugs.pdf")


def test_hcpcs_index_pages_and_terms(hcpcs_index_pages: list[PageText]) -> None:
    assert len(hcpcs_index_pages) == 48
    assert [p.page_number for p in hcpcs_index_pages] == list(range(1, 49))
    first = hcpcs_index_pages[0]
    assert first.lines[0] == "HCPCS 2019 Index"
    assert "Abatacept, J0129" in first.lines
    assert "Xylocaine HCl, J2000" in hcpcs_index_pages[-1].lines
    assert hcpcs_index_pages[-1].lines[-1] == "Last Updated October 26, 2018"


def test_hcpcs_index_running_header_with_page_number_removed(hcpcs_index_pages: list[PageText]) -> None:
    for page in hcpcs_index_pages:
        assert page.removed_lines == (f"2019 HCPCS Alpha-Numeric Index {page.page_number}",)
        assert not any(line.startswith("2019 HCPCS Alpha-Numeric Index") for line in page.lines)


def test_drug_table_rows_keep_drug_and_code_on_one_line(drug_table_pages: list[PageText]) -> None:
    assert len(drug_table_pages) == 35
    assert drug_table_pages[0].lines[0] == "2019 Table of Drugs"
    assert "Abatacept 10 mg IV J0129" in drug_table_pages[0].lines
    assert "Adalimumab 20 mg SC J0135" in drug_table_pages[1].lines
    assert "Zoledronic Acid 1 mg IV J3489" in drug_table_pages[-1].lines
    coded_rows = [line for page in drug_table_pages for line in page.lines if re.search(r" [A-Z]\d{4}\b", line)]
    assert all(not re.fullmatch(r"[A-Z]\d{4},?", line) for line in coded_rows), "code split from its drug"


def test_drug_table_page_numbers_removed_but_letter_headings_kept(drug_table_pages: list[PageText]) -> None:
    for page in drug_table_pages:
        assert page.removed_lines == (str(page.page_number),)
        assert page.lines[-1] != str(page.page_number)
    # Page 5 opens with the letter heading "B": a one-off first line, not a running header.
    assert drug_table_pages[4].lines[0] == "B"
    assert drug_table_pages[-1].lines[-1] == "Last updated October 26, 2018"


# ---------------------------------------------------------------------------------------------------------
# (c) damaged input
# ---------------------------------------------------------------------------------------------------------


def test_truncated_real_pdf_raises_format_error(cms_dir: Path, tmp_path: Path) -> None:
    source = (cms_dir / "pdf_standins" / "2019-HCPCS-Index.pdf").read_bytes()
    truncated = tmp_path / "2019-HCPCS-Index-half.pdf"
    truncated.write_bytes(source[: len(source) // 2])
    with pytest.raises(IomFormatError, match=r"2019-HCPCS-Index-half\.pdf: truncated PDF"):
        extract_pdf_pages(truncated)


def test_truncated_pdf_with_eof_marker_raises_format_error(cms_dir: Path, tmp_path: Path) -> None:
    # A cut-off body followed by a stray %%EOF passes the envelope check; pdfminer must still be caught.
    source = (cms_dir / "pdf_standins" / "2019-Table-of-Drugs.pdf").read_bytes()
    damaged = tmp_path / "clm104c12.pdf"
    damaged.write_bytes(source[: len(source) // 2] + b"\n%%EOF\n")
    with pytest.raises(IomFormatError, match=r"clm104c12\.pdf: unreadable PDF"):
        extract_iom_sections(damaged, manual="100-04", chapter="12")


def test_html_saved_as_pdf_raises_format_error(tmp_path: Path) -> None:
    not_pdf = tmp_path / "bp102c15.pdf"
    not_pdf.write_text("<!DOCTYPE html><html><body>Page not found</body></html>", encoding="utf-8")
    with pytest.raises(IomFormatError, match=r"bp102c15\.pdf: not a PDF file") as raised:
        extract_iom_sections(not_pdf, manual="100-02", chapter="15")
    assert isinstance(raised.value, MedragError)


def test_empty_file_raises_format_error(tmp_path: Path) -> None:
    empty = tmp_path / "ncd103c1_Part1.pdf"
    empty.write_bytes(b"")
    with pytest.raises(IomFormatError, match=r"ncd103c1_Part1\.pdf: empty file"):
        extract_pdf_pages(empty)


# ---------------------------------------------------------------------------------------------------------
# (d) discovery on pages shaped like cms.gov
# ---------------------------------------------------------------------------------------------------------

INDEX_URL = "https://www.cms.gov/medicare/regulations-guidance/manuals/internet-only-manuals-ioms"
ITEMS = "/regulations-and-guidance/guidance/manuals/internet-only-manuals-ioms-items"

INDEX_HTML = f"""<!DOCTYPE html>
<html lang="en"><head><title>Internet-Only Manuals (IOMs) | CMS</title></head>
<body>
<nav><a href="/medicare">Medicare</a> <a href="#main-content">Skip to main content</a></nav>
<main id="main-content">
<h1>Internet-Only Manuals (IOMs)</h1>
<p>The CMS Online Manual System is used by CMS program components, partners, contractors, and State
Survey Agencies to administer CMS programs.</p>
<table class="usa-table">
<thead><tr><th>Publication #</th><th>Title</th></tr></thead>
<tbody>
<tr><td><a href="{ITEMS}/cms050111">100-01 Medicare General Information, Eligibility and Entitlement
Manual</a></td></tr>
<tr><td><a href="{ITEMS}/cms012673">100-02 Medicare Benefit Policy Manual</a></td></tr>
<tr><td><a href="{ITEMS}/cms014961">100-03 Medicare National Coverage Determinations (NCD) Manual</a></td></tr>
<tr><td><a href="{ITEMS}/cms018912">100-04 Medicare Claims Processing Manual</a></td></tr>
<tr><td><a href="{ITEMS}/cms019017">100-05 Medicare Secondary Payer Manual</a></td></tr>
</tbody></table>
</main></body></html>
"""

BENEFIT_POLICY_URL = f"https://www.cms.gov{ITEMS}/cms012673"
DOWNLOADS = "/regulations-and-guidance/guidance/manuals/downloads"

BENEFIT_POLICY_HTML = f"""<!DOCTYPE html>
<html><head><title>Medicare Benefit Policy Manual | CMS</title></head><body>
<h1>Medicare Benefit Policy Manual</h1>
<div class="field--name-body">
<p>Publication # 100-02. Manual updates are issued through transmittals.</p>
<h2>Downloads</h2>
<ul>
<li><a href="{DOWNLOADS}/bp102c01.pdf">Chapter 1 - Inpatient Hospital Services Covered Under Part A (PDF)</a></li>
<li><a href="{DOWNLOADS}/bp102c15.pdf">Chapter 15 - Covered Medical and Other Health Services (PDF)</a></li>
<li><a href="/Regulations-and-Guidance/Guidance/Transmittals">Transmittals</a></li>
<li><a href="{DOWNLOADS}/bp102c16.pdf">Chapter 16 - General Exclusions From Coverage&nbsp;(PDF, 442 KB)</a></li>
</ul>
<p>See also <a href="{DOWNLOADS}/bp102c15.pdf">chapter 15</a>.</p>
</div></body></html>
"""

NCD_URL = f"https://www.cms.gov{ITEMS}/cms014961"
NCD_HTML = f"""<html><head><title>Medicare National Coverage Determinations (NCD) Manual | CMS</title></head>
<body><h1>Medicare National Coverage Determinations (NCD) Manual</h1><ul>
<li><a href="{DOWNLOADS}/ncd103c1_Part1.pdf">Chapter 1, Part 1 (Sections 10 - 80.12) Coverage Determinations
(PDF)</a></li>
<li><a href="{DOWNLOADS}/ncd103c1_Part4.pdf">Chapter 1, Part 4 (Sections 200 - 310.1) Coverage Determinations
(PDF)</a></li>
<li><a href="{DOWNLOADS}/ncd103c1_Part1.pdf">PDF</a></li>
</ul></body></html>
"""

CLAIMS_URL = f"https://www.cms.gov{ITEMS}/cms018912"
CLAIMS_HTML = f"""<html><body><h1>Medicare Claims Processing Manual</h1>
<table>
<tr><td>Chapter 6 - SNF Inpatient Part A Billing and SNF Consolidated Billing</td>
<td><a href="{DOWNLOADS}/clm104c06.pdf">PDF</a></td></tr>
<tr><td><a href="https://www.cms.gov{DOWNLOADS}/clm104c12.pdf">Chapter 12 - Physicians/Nonphysician
Practitioners (PDF)</a></td></tr></table></body></html>
"""


def test_discover_manual_pages_from_index() -> None:
    pages = discover_manual_pages(INDEX_HTML, INDEX_URL)
    assert pages == {
        "100-02": f"https://www.cms.gov{ITEMS}/cms012673",
        "100-03": f"https://www.cms.gov{ITEMS}/cms014961",
        "100-04": f"https://www.cms.gov{ITEMS}/cms018912",
    }


def test_discover_manual_pages_when_number_sits_in_its_own_cell() -> None:
    html = f"""<table><tr><td>100-04</td><td><a href="{ITEMS}/cms018912">Medicare Claims Processing
    Manual</a></td></tr><tr><td>100-02</td><td><a href="{ITEMS}/cms012673">Medicare Benefit Policy
    Manual</a></td></tr></table>"""
    assert discover_manual_pages(html, INDEX_URL, manuals=("100-04",)) == {
        "100-04": f"https://www.cms.gov{ITEMS}/cms018912"
    }


def test_discover_manual_pages_names_missing_manual() -> None:
    html = INDEX_HTML.replace("100-03 Medicare National", "Medicare National")
    with pytest.raises(IomDiscoveryError, match=r"internet-only-manuals-ioms: no link found for manual\(s\) 100-03"):
        discover_manual_pages(html, INDEX_URL)


def test_discover_chapter_pdfs_benefit_policy() -> None:
    chapters = discover_chapter_pdfs(BENEFIT_POLICY_HTML, BENEFIT_POLICY_URL)
    assert chapters == [
        ChapterLink(
            url=f"https://www.cms.gov{DOWNLOADS}/bp102c01.pdf",
            manual="100-02",
            chapter="1",
            part=None,
            title="Chapter 1 - Inpatient Hospital Services Covered Under Part A",
        ),
        ChapterLink(
            url=f"https://www.cms.gov{DOWNLOADS}/bp102c15.pdf",
            manual="100-02",
            chapter="15",
            part=None,
            title="Chapter 15 - Covered Medical and Other Health Services",
        ),
        ChapterLink(
            url=f"https://www.cms.gov{DOWNLOADS}/bp102c16.pdf",
            manual="100-02",
            chapter="16",
            part=None,
            title="Chapter 16 - General Exclusions From Coverage",
        ),
    ]
    assert chapters[1].file_name == "bp102c15.pdf"


def test_discover_chapter_pdfs_ncd_parts() -> None:
    chapters = discover_chapter_pdfs(NCD_HTML, NCD_URL)
    assert [(c.manual, c.chapter, c.part, c.file_name) for c in chapters] == [
        ("100-03", "1", 1, "ncd103c1_Part1.pdf"),
        ("100-03", "1", 4, "ncd103c1_Part4.pdf"),
    ]
    assert chapters[0].title == "Chapter 1, Part 1 (Sections 10 - 80.12) Coverage Determinations"


def test_discover_chapter_pdfs_claims_processing_title_beside_link() -> None:
    # Chapter 6 has a bare "PDF" link with its title in the neighbouring cell; chapter 12 an absolute URL.
    sixth, twelfth = discover_chapter_pdfs(CLAIMS_HTML, CLAIMS_URL)
    assert (sixth.url, sixth.manual, sixth.chapter, sixth.part, sixth.title) == (
        f"https://www.cms.gov{DOWNLOADS}/clm104c06.pdf",
        "100-04",
        "6",
        None,
        "Chapter 6 - SNF Inpatient Part A Billing and SNF Consolidated Billing",
    )
    assert (twelfth.url, twelfth.chapter, twelfth.title) == (
        f"https://www.cms.gov{DOWNLOADS}/clm104c12.pdf",
        "12",
        "Chapter 12 - Physicians/Nonphysician Practitioners",
    )


def test_discover_chapter_pdfs_without_chapter_links_raises() -> None:
    with pytest.raises(IomDiscoveryError, match=r"cms012673: no chapter PDF links found"):
        discover_chapter_pdfs(INDEX_HTML, BENEFIT_POLICY_URL)
