"""medrag.ingest.mirror and `medrag mirror build`: a static CMS-like site on disk that the refresh reads as is."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import shutil
import subprocess
import sys
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from medrag.core.config import load_settings, source_urls_for
from medrag.ingest.mirror import (
    HCPCS_2025_ZIP,
    HCPCS_LAYOUT_ZIP,
    HCPCS_PAGE,
    HCPCS_ZIP,
    ICD10CM_2021_ZIP,
    ICD10CM_2025_CODES_ZIP,
    ICD10CM_2025_INDEX_ZIP,
    ICD10CM_2026_ZIP,
    IOM_DOWNLOADS,
    IOM_MANUALS,
    MCD_ALL_DATA_ZIP,
    MCD_NCD_ZIP,
    MirrorError,
    build_mirror,
)
from medrag.refresh import fetch_and_load as pipeline
from medrag.sources.common import quarter_label

PAGE_SUFFIXES = ("", ".aspx")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree(root: Path) -> dict[str, tuple[str, int]]:
    """URL path -> (SHA-256, mtime_ns) of every file under root, hidden ones included."""
    return {"/" + p.relative_to(root).as_posix(): (_sha256(p), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built(cms_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path], list[str]]:
    """(dest, URL path -> file, URL paths written) of one build from the real corpus."""
    dest = tmp_path_factory.mktemp("mirror") / "site"
    written: list[str] = []
    return dest, build_mirror(cms_dir, dest, on_write=written.append), written


def test_every_page_and_file_sits_at_its_cms_url_path(built, cms_dir: Path) -> None:
    dest, files, written = built

    assert sorted(written) == sorted(files) and len(files) == 21
    assert files == {url: dest / url.lstrip("/") for url in files}
    assert sorted(_tree(dest)) == sorted(files)  # nothing else: no temporary or intermediate files left over
    assert _sha256(files[HCPCS_ZIP]) == _sha256(cms_dir / "hcpcs" / "2019-Alpha-Numeric-HCPCS-File.zip")
    assert _sha256(files[HCPCS_2025_ZIP]) == _sha256(cms_dir / "hcpcs" / "january-2025-alpha-numeric-hcpcs-file.zip")
    assert _sha256(files[ICD10CM_2025_CODES_ZIP]) == _sha256(cms_dir / "icd10cm" / "fy2025" / "icd10cm-codes-2025.zip")
    chapter = IOM_MANUALS[0].chapters[1]
    assert _sha256(files[f"{IOM_DOWNLOADS}/{chapter.file_name}"]) == _sha256(cms_dir / "pdf_standins" / chapter.standin)


def test_rebuild_writes_nothing_and_a_fresh_build_has_the_same_bytes(built, cms_dir: Path, tmp_path: Path) -> None:
    dest, files, _written = built
    before = _tree(dest)

    rewritten: list[str] = []
    assert build_mirror(cms_dir, dest, on_write=rewritten.append) == files
    assert rewritten == []
    assert _tree(dest) == before  # same bytes and the same mtimes

    fresh = tmp_path / "fresh"
    build_mirror(cms_dir, fresh)
    assert {url: sha for url, (sha, _mtime) in _tree(fresh).items()} == {
        url: sha for url, (sha, _mtime) in before.items()
    }


def test_zips_hold_the_cms_members_in_order_with_fixed_dates(built) -> None:
    _dest, files, _written = built
    zips = {}
    for url, path in files.items():
        # those are copied as CMS and CDC made them
        if url.endswith(".zip") and url not in (HCPCS_ZIP, HCPCS_2025_ZIP, HCPCS_LAYOUT_ZIP, ICD10CM_2025_CODES_ZIP):
            with zipfile.ZipFile(path) as archive:
                zips[url] = archive.infolist()
    names = {url: [info.filename for info in infos] for url, infos in zips.items()}

    assert names[MCD_ALL_DATA_ZIP] == ["ncd.zip", "current_lcd.zip"]
    assert names[MCD_NCD_ZIP] == ["ncd_csv.zip", "ncd data dictionary.pdf", "readme_first.txt"]
    assert names[ICD10CM_2021_ZIP] == ["icd10cm_tabular_2021.xml", "icd10cm-order-Jan-2021.txt"]
    assert names[ICD10CM_2026_ZIP] == ["icd10c-tabular-April-1-2026.xml"]
    assert names[ICD10CM_2025_INDEX_ZIP] == [
        "icd-10-cm-eindex-2025.xml", "icd-10-cm-drug-2025.xml", "icd-10-cm-neoplasm-2025.xml",
        "icd10cm-index-2025.xsd", "icd-10-cm-drug-neoplasm-2025.xsd", "DERIVED-index-to-diseases-2025.csv"]
    assert len(zips) == 6 and {info.date_time for infos in zips.values() for info in infos} == {(1980, 1, 1, 0, 0, 0)}


def _corpus_with_own_ncd_readme(cms_dir: Path, root: Path) -> Path:
    """A corpus of symlinks to cms_dir whose mcd/ncd/readme_first.txt is a private, editable copy."""
    (root / "mcd" / "ncd").mkdir(parents=True)
    for entry in ("README.md", "hcpcs", "icd10cm", "pdf_standins"):
        (root / entry).symlink_to(cms_dir / entry)
    (root / "mcd" / "current_lcd").symlink_to(cms_dir / "mcd" / "current_lcd")
    for entry in (cms_dir / "mcd" / "ncd").iterdir():
        if entry.name != "readme_first.txt":
            (root / "mcd" / "ncd" / entry.name).symlink_to(entry)
    shutil.copyfile(cms_dir / "mcd" / "ncd" / "readme_first.txt", root / "mcd" / "ncd" / "readme_first.txt")
    return root


def test_a_changed_input_rewrites_only_the_files_built_from_it(built, cms_dir: Path, tmp_path: Path) -> None:
    dest = tmp_path / "site"
    shutil.copytree(built[0], dest)  # copy2: the copies keep their mtimes
    corpus = _corpus_with_own_ncd_readme(cms_dir, tmp_path / "cms")
    before = _tree(dest)

    with (corpus / "mcd" / "ncd" / "readme_first.txt").open("a", encoding="utf-8") as readme:
        readme.write("Updated for the next quarter.\r\n")
    rewritten: list[str] = []
    build_mirror(corpus, dest, on_write=rewritten.append)

    assert rewritten == [MCD_NCD_ZIP, MCD_ALL_DATA_ZIP]
    after = _tree(dest)
    assert {url for url in after if after[url] != before[url]} == set(rewritten)


def test_page_links_are_relative_and_resolve_under_http_and_file_bases(built) -> None:
    dest, files, _written = built
    pages = [url for url in files if Path(url).suffix in PAGE_SUFFIXES]
    assert len(pages) == 7

    for page in pages:
        hrefs = re.findall(r'href="([^"]+)"', files[page].read_text(encoding="utf-8"))
        assert hrefs, page
        for href in hrefs:
            assert not href.startswith("/") and "://" not in href, (page, href)
            over_http = urljoin(f"http://mirror.test{page}", href)
            over_file = urljoin((dest / page.lstrip("/")).as_uri(), href)
            assert urlsplit(over_http).path in files, (page, href)
            assert Path(urlsplit(over_file).path).is_file(), (page, href)


def test_root_relative_links_for_a_site_served_from_its_root(cms_dir: Path, tmp_path: Path) -> None:
    files = build_mirror(cms_dir, tmp_path / "site", root_relative_links=True)

    assert f'href="{HCPCS_ZIP}"' in files[HCPCS_PAGE].read_text(encoding="utf-8")


def test_the_pipeline_discovers_and_fetches_every_source_from_the_file_mirror(built, tmp_path: Path) -> None:
    dest, files, _written = built
    settings = dataclasses.replace(load_settings(), home=tmp_path / "home",
                                   source_urls=source_urls_for(f"mirror:{dest}"))
    mirror_files = {path.as_uri(): path for path in files.values()}
    pdfs = [files[f"{IOM_DOWNLOADS}/{chapter.file_name}"] for manual in IOM_MANUALS for chapter in manual.chapters]

    def fetch_all() -> list[pipeline.FetchedRelease]:
        return [fetched for source, release in (("hcpcs", None), ("icd10cm", "all"), ("mcd", None), ("iom", None))
                for fetched in pipeline.fetch_source(settings, source, release=release)]

    first = fetch_all()

    assert [(f.source, f.label, len(f.records)) for f in first] == [
        ("hcpcs", "2025Q1", 1), ("icd10cm", "FY2026", 1), ("icd10cm", "FY2025", 2), ("icd10cm", "FY2021", 1),
        ("mcd", _quarter_of(files[MCD_ALL_DATA_ZIP]), 1), ("iom", _quarter_of(*pdfs), 4),
    ]
    assert [Path(r.url).name for f in first for r in f.records] == [
        Path(HCPCS_2025_ZIP).name, Path(ICD10CM_2026_ZIP).name, Path(ICD10CM_2025_CODES_ZIP).name,
        Path(ICD10CM_2025_INDEX_ZIP).name, Path(ICD10CM_2021_ZIP).name, "all_data.zip",
        "bp102c01.pdf", "bp102c15.pdf", "ncd103c1_Part1.pdf", "clm104c12.pdf",
    ]
    for fetched in first:
        assert fetched.downloaded_bytes == sum(record.bytes for record in fetched.records) > 0
        for record in fetched.records:
            assert record.sha256 == _sha256(mirror_files[record.url]) == _sha256(Path(record.path))

    again = fetch_all()
    assert [(f.source, f.label) for f in again] == [(f.source, f.label) for f in first]
    assert [f.downloaded_bytes for f in again] == [0] * len(first)
    assert not [record for f in again for record in f.records if record.changed]


def _quarter_of(*paths: Path) -> str:
    """The release label the pipeline gives files served with these mtimes as Last-Modified."""
    return quarter_label(max(datetime.fromtimestamp(path.stat().st_mtime, UTC).date() for path in paths))


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "medrag", *args], capture_output=True, text=True, timeout=120)


def test_cli_builds_and_prints_the_source_setting(built, cms_dir: Path) -> None:
    dest, files, _written = built
    before = _tree(dest)

    result = run_cli("mirror", "build", str(cms_dir), str(dest))

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"MEDRAG_SOURCE=mirror:{dest}"]
    assert f"{len(files)} files under {dest} (0 written, {len(files)} unchanged)" in result.stderr
    assert _tree(dest) == before


@pytest.mark.parametrize("corpus", ["missing", "no files"])
def test_cli_refuses_a_folder_that_is_not_the_corpus(corpus: str, tmp_path: Path) -> None:
    cms_dir = tmp_path / "cms"
    if corpus == "no files":
        cms_dir.mkdir()
        (cms_dir / "README.md").write_text("# not the corpus\n")
        (cms_dir / "hcpcs").mkdir()

    result = run_cli("mirror", "build", str(cms_dir), str(tmp_path / "site"))

    assert result.returncode == 2
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1
    expected = "no README.md" if corpus == "missing" else "lacks 21 file(s) the mirror needs: hcpcs/2019-Alpha"
    assert result.stderr.startswith(f"medrag: error: {cms_dir} ") and expected in result.stderr
    assert not (tmp_path / "site").exists()


def test_an_unwritable_destination_is_a_mirror_error(cms_dir: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "files"
    blocker.write_text("a file where the site needs a folder")

    with pytest.raises(MirrorError, match="cannot write the mirror under"):
        build_mirror(cms_dir, blocker / "site")
