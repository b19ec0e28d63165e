"""medrag.ingest.fetch and medrag.ingest.manifest against the local CMS mirror (real HTTP server, real CMS bytes)."""

from __future__ import annotations

import hashlib
import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from cms_mirror import (
    HCPCS_PAGE,
    HCPCS_ZIP,
    HCPCS_ZIP_LINK_TEXT,
    ICD10CM_2026_LINK_TEXT,
    ICD10CM_PAGE,
    IOM_INDEX_PAGE,
    CmsMirror,
)

from medrag.ingest.archive import read_member
from medrag.ingest.fetch import DownloadError, FetchRecord, fetch, get_text
from medrag.ingest.manifest import MANIFEST_NAME, Manifest, ManifestError, previous_record

HCPCS_NAME = "2019-Alpha-Numeric-HCPCS-File.zip"
LIMITS = {"max_bytes": 50 * 1024 * 1024, "timeout": 10.0, "retries": 3, "backoff": 0.01}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


@pytest.fixture(scope="module")
def hcpcs_source(cms_dir: Path) -> Path:
    return cms_dir / "hcpcs" / HCPCS_NAME


def test_full_download_matches_the_source_bytes(cms_mirror: CmsMirror, hcpcs_source: Path, tmp_path: Path):
    result = fetch(cms_mirror.url(HCPCS_ZIP), tmp_path, **LIMITS)

    assert result.path == tmp_path / "2019-alpha-numeric-hcpcs-file.zip"
    assert result.sha256 == _sha256(hcpcs_source) == _sha256(result.path)
    assert result.bytes == hcpcs_source.stat().st_size == 1_943_834
    assert (result.changed, result.status) == (True, 200)
    assert result.etag and result.etag.startswith('"')
    assert result.last_modified and result.last_modified.endswith("GMT")
    assert result.final_url == result.url == cms_mirror.url(HCPCS_ZIP)
    assert _files_in(tmp_path) == ["2019-alpha-numeric-hcpcs-file.zip"]


def test_second_fetch_with_previous_is_a_304_and_writes_nothing(cms_mirror: CmsMirror, tmp_path: Path):
    url = cms_mirror.url(HCPCS_ZIP)
    first = fetch(url, tmp_path / "2026-q1", **LIMITS)
    mark = len(cms_mirror.requests)

    second = fetch(url, tmp_path / "2026-q2", previous=first, **LIMITS)

    assert (second.changed, second.status) == (False, 304)
    assert second.path == first.path and second.sha256 == first.sha256 and second.bytes == first.bytes
    assert _files_in(tmp_path / "2026-q2") == []
    [request] = cms_mirror.requests[mark:]
    assert request.headers["If-None-Match"] == first.etag
    assert (request.status, request.body_bytes) == (304, 0)


def test_if_modified_since_alone_also_gives_304(cms_mirror: CmsMirror, tmp_path: Path):
    url = cms_mirror.url(HCPCS_ZIP)
    first = fetch(url, tmp_path / "a", **LIMITS)
    first.etag = None
    mark = len(cms_mirror.requests)

    second = fetch(url, tmp_path / "b", previous=first, **LIMITS)

    assert (second.changed, second.status, second.path) == (False, 304, first.path)
    [request] = cms_mirror.requests[mark:]
    assert "If-None-Match" not in request.headers
    assert request.headers["If-Modified-Since"] == first.last_modified


def test_server_ignoring_conditionals_with_same_bytes_is_unchanged(cms_mirror: CmsMirror, tmp_path: Path):
    url = cms_mirror.unconditional_url(HCPCS_ZIP)
    first = fetch(url, tmp_path / "a", **LIMITS)

    second = fetch(url, tmp_path / "b", previous=first, **LIMITS)

    assert (second.changed, second.status) == (False, 200)
    assert second.path == first.path and second.sha256 == first.sha256
    assert _files_in(tmp_path / "b") == []
    assert [r.body_bytes for r in cms_mirror.requests_to(url)] == [1_943_834, 1_943_834]


def test_different_bytes_than_previous_is_changed(cms_mirror: CmsMirror, hcpcs_source: Path, tmp_path: Path):
    stale = FetchRecord(
        url=cms_mirror.url(HCPCS_ZIP), final_url=cms_mirror.url(HCPCS_ZIP), path=hcpcs_source, sha256="0" * 64,
        bytes=1, etag=None, last_modified=None, fetched_at=datetime.now(UTC), changed=True, status=200,
    )

    result = fetch(cms_mirror.url(HCPCS_ZIP), tmp_path, previous=stale, **LIMITS)

    assert result.changed is True
    assert result.path == tmp_path / "2019-alpha-numeric-hcpcs-file.zip"
    assert result.sha256 == _sha256(hcpcs_source)


def test_previous_whose_file_vanished_is_not_used_for_conditionals(cms_mirror: CmsMirror, tmp_path: Path):
    first = fetch(cms_mirror.url(HCPCS_ZIP), tmp_path / "a", **LIMITS)
    first.path.unlink()

    second = fetch(cms_mirror.url(HCPCS_ZIP), tmp_path / "b", previous=first, **LIMITS)

    assert (second.status, second.path) == (200, tmp_path / "b" / "2019-alpha-numeric-hcpcs-file.zip")
    assert second.path.stat().st_size == 1_943_834


def test_redirect_is_followed_and_final_url_recorded(cms_mirror: CmsMirror, hcpcs_source: Path, tmp_path: Path):
    url = cms_mirror.redirect_url(HCPCS_ZIP)

    result = fetch(url, tmp_path, **LIMITS)

    assert result.url == url
    assert result.final_url == cms_mirror.url(HCPCS_ZIP)
    assert result.sha256 == _sha256(hcpcs_source)
    assert [r.status for r in cms_mirror.requests_to(url)] == [301]


def test_content_disposition_names_the_file(cms_mirror: CmsMirror, hcpcs_source: Path, tmp_path: Path):
    result = fetch(cms_mirror.attachment_url(HCPCS_ZIP, "HCPC2019_ANWEB_v2.zip"), tmp_path, **LIMITS)

    assert result.path == tmp_path / "HCPC2019_ANWEB_v2.zip"
    assert result.sha256 == _sha256(hcpcs_source)


def test_503_twice_then_success_is_retried(cms_mirror: CmsMirror, hcpcs_source: Path, tmp_path: Path):
    url = cms_mirror.flaky_url(HCPCS_ZIP, failures=2, status=503)

    result = fetch(url, tmp_path, **LIMITS)

    assert result.sha256 == _sha256(hcpcs_source)
    assert [r.status for r in cms_mirror.requests_to(url)] == [503, 503, 200]


def test_retries_are_bounded_and_the_error_names_the_url(cms_mirror: CmsMirror, tmp_path: Path):
    url = cms_mirror.flaky_url(HCPCS_ZIP, failures=10, status=502)

    with pytest.raises(DownloadError, match=r"giving up after 3 attempt\(s\).*HTTP 502") as caught:
        fetch(url, tmp_path, **{**LIMITS, "retries": 2})

    assert url in str(caught.value) and caught.value.status == 502
    assert [r.status for r in cms_mirror.requests_to(url)] == [502, 502, 502]
    assert _files_in(tmp_path) == []


def test_retry_after_is_honoured(cms_mirror: CmsMirror, tmp_path: Path):
    url = cms_mirror.flaky_url(HCPCS_ZIP, failures=1, status=429, retry_after="1")

    started = time.monotonic()
    fetch(url, tmp_path, **{**LIMITS, "backoff": 0.001})

    assert time.monotonic() - started >= 0.95
    assert [r.status for r in cms_mirror.requests_to(url)] == [429, 200]


def test_retry_after_is_capped(cms_mirror: CmsMirror, tmp_path: Path):
    url = cms_mirror.flaky_url(HCPCS_ZIP, failures=1, status=503, retry_after="3600")

    started = time.monotonic()
    fetch(url, tmp_path, **LIMITS, max_retry_after=0.2)

    assert 0.2 <= time.monotonic() - started < 5
    assert [r.status for r in cms_mirror.requests_to(url)] == [503, 200]


def test_404_is_not_retried_and_is_clear(cms_mirror: CmsMirror, tmp_path: Path):
    url = cms_mirror.url("/files/zip/2031-alpha-numeric-hcpcs-file.zip")

    with pytest.raises(DownloadError, match=r"HTTP 404 .*not retried") as caught:
        fetch(url, tmp_path, **LIMITS)

    assert url in str(caught.value) and caught.value.status == 404
    assert len(cms_mirror.requests_to(url)) == 1


def test_truncated_response_fails_and_leaves_nothing(cms_mirror: CmsMirror, tmp_path: Path):
    url = cms_mirror.truncated_url(HCPCS_ZIP)

    with pytest.raises(DownloadError, match="giving up after 2 attempt") as caught:
        fetch(url, tmp_path, **{**LIMITS, "retries": 1})

    assert url in str(caught.value)
    assert "971917" in str(caught.value) and "1943834" in str(caught.value)
    assert _files_in(tmp_path) == []
    assert [r.body_bytes for r in cms_mirror.requests_to(url)] == [971_917, 971_917]


def test_declared_size_over_the_cap_is_refused(cms_mirror: CmsMirror, tmp_path: Path):
    with pytest.raises(DownloadError, match="Content-Length 1943834 exceeds the size cap of 1000000"):
        fetch(cms_mirror.url(HCPCS_ZIP), tmp_path, **{**LIMITS, "max_bytes": 1_000_000})

    assert _files_in(tmp_path) == []


def test_streamed_size_over_the_cap_is_aborted(cms_mirror: CmsMirror, tmp_path: Path):
    url = cms_mirror.chunked_url(HCPCS_ZIP)

    with pytest.raises(DownloadError, match="exceeds the size cap of 1000000 bytes; aborted"):
        fetch(url, tmp_path, **{**LIMITS, "max_bytes": 1_000_000})

    assert _files_in(tmp_path) == []
    assert len(cms_mirror.requests_to(url)) == 1


def test_chunked_response_without_length_downloads(cms_mirror: CmsMirror, hcpcs_source: Path, tmp_path: Path):
    result = fetch(cms_mirror.chunked_url(HCPCS_ZIP), tmp_path, **LIMITS)

    assert result.sha256 == _sha256(hcpcs_source)


def test_read_timeout_is_retried_then_reported(cms_mirror: CmsMirror, tmp_path: Path):
    url = cms_mirror.slow_url(HCPCS_ZIP, delay=2.0)

    with pytest.raises(DownloadError, match="ReadTimeout"):
        fetch(url, tmp_path, **{**LIMITS, "timeout": 0.3, "retries": 1})

    assert len(cms_mirror.requests_to(url)) == 2
    assert _files_in(tmp_path) == []


def test_connection_refused_is_retried_then_reported(tmp_path: Path):
    with pytest.raises(DownloadError, match=r"giving up after 2 attempt\(s\).*ConnectError"):
        fetch("http://127.0.0.1:9/nothing.zip", tmp_path, **{**LIMITS, "retries": 1})


def test_caller_supplied_client_is_used_and_left_open(cms_mirror: CmsMirror, tmp_path: Path):
    with httpx.Client(headers={"User-Agent": "medrag-test"}) as client:
        url = cms_mirror.redirect_url(HCPCS_ZIP)
        result = fetch(url, tmp_path, client=client, **LIMITS)
        assert not client.is_closed

    assert result.final_url == cms_mirror.url(HCPCS_ZIP)
    assert cms_mirror.requests_to(url)[0].headers["User-Agent"] == "medrag-test"


def test_file_url_copies_with_hashing(hcpcs_source: Path, tmp_path: Path):
    first = fetch(hcpcs_source.as_uri(), tmp_path / "a", **LIMITS)

    assert first.path == tmp_path / "a" / HCPCS_NAME
    assert first.sha256 == _sha256(hcpcs_source) and first.bytes == 1_943_834
    assert (first.changed, first.status) == (True, 200)

    second = fetch(hcpcs_source.as_uri(), tmp_path / "b", previous=first, **LIMITS)
    assert (second.changed, second.path) == (False, first.path)
    assert _files_in(tmp_path / "b") == []


def test_file_url_size_cap_and_missing_file(hcpcs_source: Path, tmp_path: Path):
    with pytest.raises(DownloadError, match="size cap of 1000"):
        fetch(hcpcs_source.as_uri(), tmp_path, **{**LIMITS, "max_bytes": 1000})
    assert _files_in(tmp_path) == []

    missing = hcpcs_source.with_name("2031-Alpha-Numeric-HCPCS-File.zip")
    with pytest.raises(DownloadError, match="does not exist"):
        fetch(missing.as_uri(), tmp_path, **LIMITS)


@pytest.mark.parametrize("url", ["ftp://ftp.cdc.gov/pub/icd10cm.zip", "gopher://x/y", "cms.gov/files/a.zip"])
def test_other_schemes_are_rejected(url: str, tmp_path: Path):
    with pytest.raises(DownloadError, match="unsupported URL scheme .*only http, https and file"):
        fetch(url, tmp_path, **LIMITS)
    with pytest.raises(DownloadError, match="unsupported URL scheme"):
        get_text(url, **LIMITS)


def test_get_text_returns_the_page(cms_mirror: CmsMirror):
    page = get_text(cms_mirror.url(HCPCS_PAGE), **LIMITS)

    assert f'href="{HCPCS_ZIP}">{HCPCS_ZIP_LINK_TEXT}</a>' in page


def test_get_text_retries_and_caps(cms_mirror: CmsMirror):
    url = cms_mirror.flaky_url(HCPCS_PAGE, failures=1, status=500)
    assert "Quarterly Update" in get_text(url, **LIMITS)
    assert [r.status for r in cms_mirror.requests_to(url)] == [500, 200]

    with pytest.raises(DownloadError, match="size cap of 100 bytes"):
        get_text(cms_mirror.url(HCPCS_PAGE), **{**LIMITS, "max_bytes": 100})
    with pytest.raises(DownloadError, match="HTTP 404"):
        get_text(cms_mirror.url("/medicare/no-such-page"), **LIMITS)


def _links(page: str) -> dict[str, str]:
    return {html_text: href for href, html_text in re.findall(r'<a href="([^"]+)">([^<]+)</a>', page)}


def test_mirror_pages_lead_to_the_real_release_bytes(cms_mirror: CmsMirror, cms_dir: Path, tmp_path: Path):
    icd_links = _links(get_text(cms_mirror.url(ICD10CM_PAGE), **LIMITS))
    icd_zip = fetch(cms_mirror.url(icd_links[ICD10CM_2026_LINK_TEXT]), tmp_path, **LIMITS)
    xml = read_member(icd_zip.path, "icd10c-tabular-April-1-2026.xml", max_bytes=20_000_000)
    assert xml == (cms_dir / "icd10cm" / "icd10c-tabular-April-1-2026.xml").read_bytes()

    manuals = _links(get_text(cms_mirror.url(IOM_INDEX_PAGE), **LIMITS))
    assert sorted(manuals)[0].startswith("100-02 - Medicare Benefit Policy Manual") and len(manuals) == 3
    chapters = _links(get_text(cms_mirror.url(manuals[sorted(manuals)[0]]), **LIMITS))
    chapter_15 = chapters["Chapter 15 - Covered Medical and Other Health Services (PDF)"]
    pdf = fetch(cms_mirror.url(chapter_15), tmp_path, **LIMITS)
    assert pdf.path.name == "bp102c15.pdf"
    assert pdf.sha256 == _sha256(cms_dir / "pdf_standins" / "2019-HCPCS-Index.pdf")
    assert pdf.path.read_bytes()[:5] == b"%PDF-"


def test_manifest_round_trip_and_lookup(cms_mirror: CmsMirror, tmp_path: Path):
    release = tmp_path / "hcpcs" / "2026-q1"
    result = fetch(cms_mirror.url(HCPCS_ZIP), release, **LIMITS)
    manifest = Manifest(source="hcpcs", label="2026-q1")
    manifest.add(result)
    manifest.add(result)

    saved = manifest.save(release)

    assert saved == release / MANIFEST_NAME
    assert sorted(_files_in(release)) == ["2019-alpha-numeric-hcpcs-file.zip", MANIFEST_NAME]
    on_disk = json.loads(saved.read_text(encoding="utf-8"))
    assert on_disk["files"][0]["sha256"] == result.sha256 and len(on_disk["files"]) == 1
    loaded = Manifest.load(release)
    assert loaded == manifest
    assert loaded.record_for(cms_mirror.url(HCPCS_ZIP)) == result
    assert loaded.record_for(cms_mirror.url("/other.zip")) is None

    later = tmp_path / "hcpcs" / "2026-q2"
    previous = previous_record([later, release], cms_mirror.url(HCPCS_ZIP))
    assert previous == result
    again = fetch(cms_mirror.url(HCPCS_ZIP), later, previous=previous, **LIMITS)
    assert (again.changed, again.status) == (False, 304)


def test_bad_manifest_names_the_file(tmp_path: Path):
    with pytest.raises(ManifestError, match="manifest not found"):
        Manifest.load(tmp_path)
    (tmp_path / MANIFEST_NAME).write_text("{not json", encoding="utf-8")
    with pytest.raises(ManifestError, match=f"{tmp_path / MANIFEST_NAME}: unreadable manifest"):
        Manifest.load(tmp_path)
    (tmp_path / MANIFEST_NAME).write_text('{"source": "hcpcs"}', encoding="utf-8")
    with pytest.raises(ManifestError, match="invalid manifest .*label"):
        Manifest.load(tmp_path)
