"""A static copy of the CMS/CDC download pages, built from a local folder of the real release files.

`build_mirror` writes every page and file at its cms.gov URL path under a destination folder, so
`MEDRAG_SOURCE=mirror:DEST` (file:// URLs) or any static HTTP server over DEST stands in for the real sites:
the MCD downloads page and its nested export zips, the HCPCS quarterly-update page, the ICD-10-CM code-table
zips and the IOM manual pages linking chapter PDFs (real CMS PDFs stand in for the chapters, none is offline).
"""

from __future__ import annotations

import hashlib
import html
import io
import os
import posixpath
import shutil
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from medrag.core.errors import MedragError

MCD_PAGE = "/medicare-coverage-database/downloads/downloads.aspx"
MCD_EXPORTS = "/medicare-coverage-database/downloads/exports"
MCD_ALL_DATA_ZIP = f"{MCD_EXPORTS}/all_data.zip"
MCD_NCD_ZIP = f"{MCD_EXPORTS}/ncd.zip"
MCD_CURRENT_LCD_ZIP = f"{MCD_EXPORTS}/current_lcd.zip"

HCPCS_PAGE = "/medicare/coding-billing/healthcare-common-procedure-system/quarterly-update"
HCPCS_ZIP = "/files/zip/2019-alpha-numeric-hcpcs-file.zip"
HCPCS_ZIP_LINK_TEXT = "2019 Alpha-Numeric HCPCS File (ZIP)"
HCPCS_2025_ZIP = "/files/zip/january-2025-alpha-numeric-hcpcs-file.zip"
HCPCS_2025_LINK_TEXT = "January 2025 Alpha-Numeric HCPCS File (ZIP)"
HCPCS_LAYOUT_ZIP = "/files/zip/hcpcs-record-layout.zip"
HCPCS_LAYOUT_LINK_TEXT = "HCPCS Record Layout (ZIP)"

ICD10CM_PAGE = "/medicare/coding-billing/icd-10-codes/icd-10-cm-files"
ICD10CM_2021_ZIP = "/files/zip/2021-code-tables-and-index.zip"
ICD10CM_2021_LINK_TEXT = "2021 Code Tables and Index (ZIP)"
ICD10CM_2026_ZIP = "/files/zip/2026-code-tables-tabular-and-index.zip"
ICD10CM_2026_LINK_TEXT = "2026 Code Tables, Tabular and Index (ZIP)"
ICD10CM_2025_CODES_ZIP = "/files/zip/2025-code-descriptions-tabular-order.zip"
ICD10CM_2025_CODES_LINK_TEXT = "2025 Code Descriptions in Tabular Order (ZIP)"
ICD10CM_2025_INDEX_ZIP = "/files/zip/2025-code-tables-tabular-and-index.zip"
ICD10CM_2025_INDEX_LINK_TEXT = "2025 Code Tables, Tabular and Index (ZIP)"

IOM_INDEX_PAGE = "/medicare/regulations-guidance/manuals/internet-only-manuals-ioms"
IOM_ITEMS = "/regulations-and-guidance/guidance/manuals/internet-only-manuals-ioms-items"
IOM_DOWNLOADS = "/regulations-and-guidance/guidance/manuals/downloads"

# Zip's own epoch for every member: archive bytes then depend only on the input bytes, never on the build time.
ZIP_DATE_TIME = (1980, 1, 1, 0, 0, 0)
# zlib's default level, as CMS's own archives use: nested MCD zips keep realistic sizes (archive limits are tested
# against them), and the whole mirror still builds in about a second.
ZIP_COMPRESS_LEVEL = 6
_UNIX = 3  # ZipInfo.create_system: fixed, or archives built on Windows would differ by one byte per member
_COPY_CHUNK = 1024 * 1024

OnWrite = Callable[[str], None]


class MirrorError(MedragError):
    """The corpus folder is not a usable CMS corpus, or the mirror cannot be written."""


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

# (part folder under mcd/, its data dictionary) for the two MCD exports in all_data.zip.
MCD_PARTS: tuple[tuple[str, str], ...] = (("ncd", "ncd data dictionary.pdf"),
                                          ("current_lcd", "lcd data dictionary.pdf"))
_MCD_PART_URLS = {"ncd": MCD_NCD_ZIP, "current_lcd": MCD_CURRENT_LCD_ZIP}

HCPCS_FILES = {HCPCS_ZIP: "hcpcs/2019-Alpha-Numeric-HCPCS-File.zip",
               HCPCS_2025_ZIP: "hcpcs/january-2025-alpha-numeric-hcpcs-file.zip",
               HCPCS_LAYOUT_ZIP: "hcpcs/2019-HCPCS-Record-Layout.zip"}
# Each code-tables zip: (arcname, file under cms_dir).
ICD10CM_ZIPS: dict[str, tuple[tuple[str, str], ...]] = {
    ICD10CM_2021_ZIP: (("icd10cm_tabular_2021.xml", "icd10cm/icd10cm_tabular_2021.xml"),
                       ("icd10cm-order-Jan-2021.txt", "icd10cm/icd10cm-order-Jan-2021.txt")),
    ICD10CM_2026_ZIP: (("icd10c-tabular-April-1-2026.xml", "icd10cm/icd10c-tabular-April-1-2026.xml"),),
    # CDC's FY2025 "table and index" zip holds the tabular XML and the four index files; offline there is no
    # tabular XML and no Index to Diseases XML, so the labelled derived CSV stands in for the latter (the loader
    # records which file each index came from).
    ICD10CM_2025_INDEX_ZIP: tuple((name, f"icd10cm/fy2025/{name}") for name in (
        "icd-10-cm-eindex-2025.xml", "icd-10-cm-drug-2025.xml", "icd-10-cm-neoplasm-2025.xml",
        "icd10cm-index-2025.xsd", "icd-10-cm-drug-neoplasm-2025.xsd", "DERIVED-index-to-diseases-2025.csv")),
}
# CDC zips served as published.
ICD10CM_FILES = {ICD10CM_2025_CODES_ZIP: "icd10cm/fy2025/icd10cm-codes-2025.zip"}


def build_mirror(
    cms_dir: Path, dest: Path, *, root_relative_links: bool = False, on_write: OnWrite | None = None
) -> dict[str, Path]:
    """Write the CMS-like site under dest from the corpus in cms_dir; returns URL path -> file for every page/file.

    Files whose bytes would not change are left alone (same mtime). Links are relative to each page, so they
    resolve under both http:// and file:// bases; root_relative_links=True writes "/files/..." hrefs instead,
    which only an HTTP server at the site root resolves. on_write(url_path) is called for each file written.
    """
    cms_dir, dest = Path(cms_dir), Path(dest)
    check_corpus(cms_dir)
    site = _Site(dest, root_relative_links, on_write or (lambda _path: None))
    try:
        dest.mkdir(parents=True, exist_ok=True)
        _build_mcd(site, cms_dir / "mcd")
        _build_hcpcs(site, cms_dir)
        _build_icd10cm(site, cms_dir)
        _build_iom(site, cms_dir / "pdf_standins")
    except OSError as exc:
        raise MirrorError(f"cannot write the mirror under {dest}: {exc}") from exc
    return dict(site.files)


def check_corpus(cms_dir: Path) -> None:
    """Raise MirrorError unless cms_dir holds README.md and every file the mirror is built from."""
    if not (cms_dir / "README.md").is_file():
        raise MirrorError(f"{cms_dir} is not a CMS corpus folder (no README.md there)")
    missing = [name for name in _corpus_files() if not (cms_dir / name).is_file()]
    missing += [f"mcd/{part}/{part}_csv/*" for part, _dictionary in MCD_PARTS if not _csv_files(cms_dir / "mcd" / part)]
    if missing:
        raise MirrorError(f"{cms_dir} lacks {len(missing)} file(s) the mirror needs: {', '.join(missing)}")


def _corpus_files() -> list[str]:
    """Paths under cms_dir (besides the MCD CSV folders) that the mirror reads."""
    names = list(HCPCS_FILES.values())
    names += [source for members in ICD10CM_ZIPS.values() for _arcname, source in members]
    names += list(ICD10CM_FILES.values())
    for part, dictionary in MCD_PARTS:
        names += [f"mcd/{part}/{dictionary}", f"mcd/{part}/readme_first.txt"]
    names += sorted({f"pdf_standins/{c.standin}" for manual in IOM_MANUALS for c in manual.chapters})
    return names


def _csv_files(part_dir: Path) -> list[Path]:
    """The CSV export files of one MCD part (mcd/ncd -> mcd/ncd/ncd_csv/*), sorted by name."""
    csv_dir = part_dir / f"{part_dir.name}_csv"
    return sorted(p for p in csv_dir.iterdir() if p.is_file()) if csv_dir.is_dir() else []


class _Site:
    """Writes pages and files at their URL paths under dest, touching only files whose bytes change."""

    def __init__(self, dest: Path, root_relative_links: bool, on_write: OnWrite) -> None:
        self.dest = dest
        self.root_relative_links = root_relative_links
        self.on_write = on_write
        self.files: dict[str, Path] = {}

    def href(self, page: str, target: str) -> str:
        """The href that leads from `page` to `target` (both URL paths)."""
        if self.root_relative_links:
            return target
        return posixpath.relpath(target, posixpath.dirname(page))

    def link(self, page: str, target: str, text: str) -> str:
        """One anchor on `page` pointing at `target`."""
        return f'<a href="{html.escape(self.href(page, target))}">{html.escape(text)}</a>'

    def page(self, url_path: str, title: str, body: Iterable[str]) -> None:
        """An HTML page in the CMS site's skeleton."""
        document = (
            f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)} | CMS"
            f"</title></head>\n<body><main><h1>{html.escape(title)}</h1>\n" + "\n".join(body)
            + "\n</main></body></html>\n"
        )
        self._write(url_path, lambda out: out.write(document.encode("utf-8")))

    def copy(self, url_path: str, source: Path) -> None:
        """A corpus file served as is."""

        def produce(out: BinaryIO) -> None:
            with source.open("rb") as src:
                shutil.copyfileobj(src, out, _COPY_CHUNK)

        self._write(url_path, produce)

    def zip(self, url_path: str, members: list[tuple[str, Path | bytes]]) -> None:
        """A deterministic zip of (arcname, file or bytes) members."""
        self._write(url_path, lambda out: write_zip(out, members))

    def path_of(self, url_path: str) -> Path:
        """Where the file served at url_path lives under dest."""
        return self.dest / url_path.lstrip("/")

    def _write(self, url_path: str, produce: Callable[[BinaryIO], object]) -> None:
        """Produce the bytes into a temporary file beside the target; replace the target only if they differ."""
        target = self.path_of(url_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        building = target.with_name(f".{target.name}.{os.getpid()}.building")
        try:
            with building.open("wb") as out:
                produce(out)
            if not (target.is_file() and _same_bytes(building, target)):
                os.replace(building, target)
                self.on_write(url_path)
        finally:
            building.unlink(missing_ok=True)
        self.files[url_path] = target


def write_zip(out: BinaryIO, members: list[tuple[str, Path | bytes]]) -> None:
    """Write a deflated zip of (arcname, file or bytes) members, in order, with fixed dates: same bytes every time.

    The order is the caller's (CMS's own order, e.g. ncd.zip before current_lcd.zip in all_data.zip); folder
    listings are passed sorted by name, so no member order depends on the file system.
    """
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for arcname, source in members:
            info = zipfile.ZipInfo(arcname, date_time=ZIP_DATE_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = _UNIX
            info.external_attr = 0o644 << 16
            data = source if isinstance(source, bytes) else source.read_bytes()
            archive.writestr(info, data, compresslevel=ZIP_COMPRESS_LEVEL)


def _same_bytes(first: Path, second: Path) -> bool:
    """True when both files hold identical bytes (sizes first, then a hash of each)."""
    if first.stat().st_size != second.stat().st_size:
        return False
    return _sha256(first) == _sha256(second)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(_COPY_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _build_mcd(site: _Site, mcd: Path) -> None:
    """all_data.zip -> {ncd.zip, current_lcd.zip} -> {<part>_csv.zip, data dictionary PDF, readme_first.txt}."""
    for part, dictionary in MCD_PARTS:
        csv_zip = io.BytesIO()
        write_zip(csv_zip, [(p.name, p) for p in _csv_files(mcd / part)])
        site.zip(_MCD_PART_URLS[part], [
            (f"{part}_csv.zip", csv_zip.getvalue()),
            (dictionary, mcd / part / dictionary),
            ("readme_first.txt", mcd / part / "readme_first.txt"),
        ])
    site.zip(MCD_ALL_DATA_ZIP, [(f"{part}.zip", site.path_of(url)) for part, url in _MCD_PART_URLS.items()])
    site.page(MCD_PAGE, "Medicare Coverage Database Downloads", [
        "<h2>Download the entire database</h2>",
        f"<p>{site.link(MCD_PAGE, MCD_ALL_DATA_ZIP, 'Download All Data')} (ZIP)</p>",
        "<h2>National Coverage Documents</h2>",
        f"<p>{site.link(MCD_PAGE, MCD_NCD_ZIP, 'Download NCD')} (ZIP)</p>",
        "<h2>Local Coverage Documents</h2>",
        f"<p>{site.link(MCD_PAGE, MCD_CURRENT_LCD_ZIP, 'Download Current LCDs')} (ZIP)</p>",
    ])


def _build_hcpcs(site: _Site, cms_dir: Path) -> None:
    """The quarterly-update page with the real release zip and a record-layout decoy."""
    for url_path, source in HCPCS_FILES.items():
        site.copy(url_path, cms_dir / source)
    site.page(HCPCS_PAGE, "Quarterly Update", [
        "<p>HCPCS quarterly update files are listed below.</p>",
        "<h2>Related Links</h2><ul>",
        f"<li>{site.link(HCPCS_PAGE, HCPCS_LAYOUT_ZIP, HCPCS_LAYOUT_LINK_TEXT)}</li>",
        f"<li>{site.link(HCPCS_PAGE, HCPCS_2025_ZIP, HCPCS_2025_LINK_TEXT)}</li>",
        f"<li>{site.link(HCPCS_PAGE, HCPCS_ZIP, HCPCS_ZIP_LINK_TEXT)}</li>",
        "</ul>",
    ])


def _build_icd10cm(site: _Site, cms_dir: Path) -> None:
    """A code-tables page linking the FY2021, FY2025 (two zips) and FY2026 (April update) zips."""
    for url_path, members in ICD10CM_ZIPS.items():
        site.zip(url_path, [(arcname, cms_dir / source) for arcname, source in members])
    for url_path, source in ICD10CM_FILES.items():
        site.copy(url_path, cms_dir / source)
    site.page(ICD10CM_PAGE, "ICD-10-CM Files", [
        "<h2>2026 ICD-10-CM</h2>",
        f"<p>{site.link(ICD10CM_PAGE, ICD10CM_2026_ZIP, ICD10CM_2026_LINK_TEXT)}</p>",
        "<h2>2025 ICD-10-CM</h2>",
        f"<p>{site.link(ICD10CM_PAGE, ICD10CM_2025_CODES_ZIP, ICD10CM_2025_CODES_LINK_TEXT)}</p>",
        f"<p>{site.link(ICD10CM_PAGE, ICD10CM_2025_INDEX_ZIP, ICD10CM_2025_INDEX_LINK_TEXT)}</p>",
        "<h2>2021 ICD-10-CM</h2>",
        f"<p>{site.link(ICD10CM_PAGE, ICD10CM_2021_ZIP, ICD10CM_2021_LINK_TEXT)}</p>",
    ])


def _build_iom(site: _Site, standins: Path) -> None:
    """The IOM index page, one page per manual, and chapter PDFs copied from the real stand-in PDFs."""
    index_items = []
    for manual in IOM_MANUALS:
        index_items.append(f"<li>{site.link(IOM_INDEX_PAGE, manual.page, f'{manual.number} - {manual.title}')}</li>")
        rows = []
        for chapter in manual.chapters:
            pdf = f"{IOM_DOWNLOADS}/{chapter.file_name}"
            site.copy(pdf, standins / chapter.standin)
            rows.append(f"<tr><td>{site.link(manual.page, pdf, chapter.link_text + ' (PDF)')}</td></tr>")
        site.page(manual.page, f"{manual.title} ({manual.number})",
                  ["<table><tbody>", *rows, "</tbody></table>"])
    site.page(IOM_INDEX_PAGE, "Internet-Only Manuals (IOMs)", ["<ul>", *index_items, "</ul>"])
