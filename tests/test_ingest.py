"""Quarterly releases in, end to end: the real CMS files served by a local mirror, loaded into a real Postgres."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text

from medrag.core.config import load_settings, source_urls_for
from medrag.core.db import libpq_url
from medrag.ingest.releases import LoadError, diff_releases
from medrag.refresh import fetch_and_load as pipeline


@pytest.fixture(scope="module")
def settings(cms_mirror, db_url: str, tmp_path_factory: pytest.TempPathFactory):
    """Settings pointing at the mirror, a private download dir and the module's database."""
    home = tmp_path_factory.mktemp("medrag-home")
    return dataclasses.replace(
        load_settings(),
        database_url=db_url,
        home=home,
        source="mirror",
        source_urls=source_urls_for(f"mirror:{cms_mirror.base_url}"),
        http_retries=2,
    )


@pytest.fixture(scope="module")
def first_ingest(settings, engine):
    """Fetch and load every source once (ICD-10-CM: every release on the page; HCPCS: 2019, whose record file the
    spot checks read byte for byte)."""
    outcomes = {}
    for source, release in (("hcpcs", "2019"), ("icd10cm", "all"), ("mcd", None), ("iom", None)):
        for fetched in pipeline.fetch_source(settings, source, release=release):
            outcome = pipeline.load_fetched(engine, settings, fetched)
            outcomes[(source, outcome.label)] = outcome
    return outcomes


def scalar(engine, sql: str, **params):
    with engine.connect() as conn:
        return conn.execute(text(sql), params).scalar()


def current_release_id(engine, source: str) -> int:
    return scalar(engine, "SELECT id FROM release WHERE source = :s AND is_current", s=source)


# -- counts and spot checks against the source bytes ----------------------------------------------------------------


def test_row_counts_match_the_files(first_ingest, engine) -> None:
    hcpcs = current_release_id(engine, "hcpcs")
    assert scalar(engine, "SELECT count(*) FROM hcpcs_code WHERE release_id=:r AND kind='procedure'", r=hcpcs) == 6440
    assert scalar(engine, "SELECT count(*) FROM hcpcs_code WHERE release_id=:r AND kind='modifier'", r=hcpcs) == 360
    fy2026 = scalar(engine, "SELECT id FROM release WHERE source='icd10cm' AND label='FY2026'")
    fy2021 = scalar(engine, "SELECT id FROM release WHERE source='icd10cm' AND label='FY2021'")
    assert scalar(engine, "SELECT count(*) FROM icd10cm_code WHERE release_id=:r", r=fy2026) == 98186
    assert scalar(engine, "SELECT count(*) FROM icd10cm_code WHERE release_id=:r", r=fy2021) == 95358
    # The 7th-character forms written from the Tabular's definitions are exactly the order file's billable codes.
    assert scalar(engine, "SELECT count(*) FROM (SELECT code FROM icd10cm_code WHERE release_id=:r AND billable "
                          "EXCEPT SELECT code FROM icd10cm_order_code WHERE release_id=:r AND billable) x",
                  r=fy2021) == 0
    assert scalar(engine, "SELECT count(*) FROM (SELECT code FROM icd10cm_order_code WHERE release_id=:r AND billable "
                          "EXCEPT SELECT code FROM icd10cm_code WHERE release_id=:r AND billable) x",
                  r=fy2021) == 0
    mcd = current_release_id(engine, "mcd")
    assert scalar(engine, "SELECT count(*) FROM ncd WHERE release_id=:r", r=mcd) == 352
    assert scalar(engine, "SELECT count(*) FROM mcd_lcd_x_hcpc_code WHERE release_id=:r", r=mcd) == 2102


def test_provenance_is_kept(first_ingest, engine, cms_mirror) -> None:
    import hashlib

    with engine.connect() as conn:
        row = conn.execute(
            text("SELECT f.url, f.sha256, f.bytes, f.etag, f.last_modified, f.path FROM raw_file f "
                 "JOIN release r ON r.id = f.release_id WHERE r.source = 'hcpcs'")
        ).one()
    source_bytes = (cms_mirror.source_file("/files/zip/2019-alpha-numeric-hcpcs-file.zip")).read_bytes()
    assert row.sha256 == hashlib.sha256(source_bytes).hexdigest()
    assert row.bytes == len(source_bytes)
    assert row.etag and row.last_modified and Path(row.path).read_bytes() == source_bytes
    manifest = scalar(engine, "SELECT manifest FROM release WHERE source = 'hcpcs'")
    assert manifest["files"][0]["sha256"] == row.sha256


def _raw_hcpcs_long_description(cms_dir: Path, code: str) -> str:
    """Long description straight from the fixed-width bytes: columns 12-91 of the record and its continuations."""
    lines = (cms_dir / "hcpcs" / "HCPC2019_CONTR_ANWEB.txt").read_bytes().decode("iso-8859-1").split("\r\n")
    pieces = [line[11:91].strip() for line in lines if line[:5].strip() == code and line[10:11] in "3478"]
    return " ".join(pieces)


def test_spot_checks_against_the_source_bytes(first_ingest, engine, cms_dir: Path) -> None:
    hcpcs = current_release_id(engine, "hcpcs")
    e0601 = scalar(engine, "SELECT long_description FROM hcpcs_code WHERE release_id=:r AND code='E0601'", r=hcpcs)
    assert e0601 == _raw_hcpcs_long_description(cms_dir, "E0601")
    assert "continuous positive airway pressure" in e0601.lower()
    ga = scalar(engine, "SELECT long_description FROM hcpcs_code WHERE release_id=:r AND code='GA'", r=hcpcs)
    assert ga == _raw_hcpcs_long_description(cms_dir, "GA")
    assert "waiver of liability" in ga.lower()

    fy2026 = current_release_id(engine, "icd10cm")
    with engine.connect() as conn:
        code = conn.execute(
            text("SELECT parent_code, billable FROM icd10cm_code WHERE release_id=:r AND code='E11.621'"), {"r": fy2026}
        ).one()
        ncd = conn.execute(
            text("SELECT title, indications_limitations FROM ncd WHERE release_id=:r AND section='240.2'"),
            {"r": current_release_id(engine, "mcd")},
        ).one()
    assert (code.parent_code, code.billable) == ("E11.62", True)
    assert ncd.title == "Home Use of Oxygen"
    assert "<p>" not in ncd.indications_limitations and "â€" not in ncd.indications_limitations
    raw_ncd = (cms_dir / "mcd/ncd/ncd_csv/ncd_trkg.csv").read_bytes().decode("cp1252")
    assert "patient\u2019s" in raw_ncd  # the curly apostrophe is in the source ...
    assert "patient\u2019s" in ncd.indications_limitations  # ... and survives the load


def test_missing_member_is_reported_not_fatal(first_ingest, engine) -> None:
    with engine.connect() as conn:
        status, detail = conn.execute(text("SELECT status, status_detail FROM release WHERE source='mcd'")).one()
    assert status == "partial"
    assert "lcd.csv" in detail["missing_members"]
    assert detail["rows"]["mcd_lcd_x_contractor"] > 0


def test_releases_side_by_side_and_diff(first_ingest, engine) -> None:
    with engine.connect() as conn:
        current = conn.execute(text("SELECT label FROM release WHERE source='icd10cm' AND is_current")).scalar()
        changes = {row["code"]: row for row in diff_releases(conn, "icd10cm", "FY2021", "FY2026")}
    assert current == "FY2026"
    assert changes["M54.5"]["change"] == "changed"
    assert (changes["M54.5"]["old_billable"], changes["M54.5"]["new_billable"]) == (True, False)
    assert {changes[c]["change"] for c in ("M54.50", "M54.51", "M54.59")} == {"added"}


# -- the same release again: nothing downloaded, nothing written ------------------------------------------------------


def test_second_run_downloads_nothing_and_writes_nothing(first_ingest, settings, engine, cms_mirror) -> None:
    def snapshot() -> dict[str, object]:
        with engine.connect() as conn:
            return {
                table: conn.execute(text(f"SELECT count(*), sum(xmin::text::bigint) FROM {table}")).one()
                for table in ("release", "raw_file", "hcpcs_code", "icd10cm_code", "ncd", "iom_section")
            }

    before = snapshot()
    seen = len(cms_mirror.requests)
    outcomes = []
    for source, release in (("hcpcs", "2019"), ("icd10cm", "all"), ("mcd", None), ("iom", None)):
        for fetched in pipeline.fetch_source(settings, source, release=release):
            assert fetched.downloaded_bytes == 0
            outcomes.append(pipeline.load_fetched(engine, settings, fetched).status)
    file_requests = [r for r in cms_mirror.requests[seen:] if r.path.endswith((".zip", ".pdf"))]
    assert file_requests and {r.status for r in file_requests} == {304}
    assert sum(r.body_bytes for r in file_requests) == 0
    assert set(outcomes) == {"unchanged"}
    assert snapshot() == before


# -- bad input: a clear error naming the file, non-zero exit, previous release untouched ------------------------------


def _write_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _hcpcs_page(folder: Path, zip_name: str) -> str:
    page = folder / "quarterly.html"
    page.write_text(f'<a href="{zip_name}">2020 Alpha-Numeric HCPCS File (ZIP)</a>')
    return page.as_uri()


def run_cli(args: list[str], settings, **env: str) -> subprocess.CompletedProcess[str]:
    environment = dict(os.environ) | {
        "DATABASE_URL": settings.database_url, "MEDRAG_HOME": str(settings.home), "MEDRAG_HTTP_RETRIES": "0",
    } | env
    return subprocess.run([sys.executable, "-m", "medrag", *args], capture_output=True, text=True, env=environment,
                          timeout=300)


def _bad_hcpcs_zips(folder: Path, cms_dir: Path) -> dict[str, tuple[Path, str]]:
    real_zip = cms_dir / "hcpcs" / "2019-Alpha-Numeric-HCPCS-File.zip"
    real = real_zip.read_bytes()
    with zipfile.ZipFile(real_zip) as archive:
        member = next(info for info in archive.infolist() if info.filename.endswith("CONTR_ANWEB.txt"))
    middle = member.header_offset + 100 + member.compress_size // 2  # inside the record file's deflated bytes
    corrupt = bytearray(real)
    corrupt[middle: middle + 4096] = bytes(255 - b for b in real[middle: middle + 4096])
    record = (cms_dir / "hcpcs" / "HCPC2019_CONTR_ANWEB.txt").read_bytes()
    (folder / "truncated.zip").write_bytes(real[: len(real) // 2])
    (folder / "corrupt.zip").write_bytes(bytes(corrupt))
    return {
        "truncated": (folder / "truncated.zip", "truncated.zip"),
        "corrupt": (folder / "corrupt.zip", "corrupt.zip"),
        "missing member": (_write_zip(folder / "nomember.zip", {"README.txt": b"no records"}), "CONTR_ANWEB"),
        "zip slip": (_write_zip(folder / "slip.zip", {"../../evil/HCPC2020_CONTR_ANWEB.txt": record}), "slip.zip"),
        "bad encoding": (_write_zip(folder / "badrec.zip", {"HCPC2020_CONTR_ANWEB.txt": b"E0601" + b"\x00" * 400}),
                         "badrec.zip"),
    }


@pytest.mark.parametrize("case", ["truncated", "corrupt", "missing member", "zip slip", "bad encoding"])
def test_bad_release_file_fails_clearly_and_keeps_the_previous_release(
    case: str, first_ingest, settings, engine, cms_dir: Path, tmp_path: Path
) -> None:
    bad_zip, named = _bad_hcpcs_zips(tmp_path, cms_dir)[case]
    current = current_release_id(engine, "hcpcs")
    before = (current, scalar(engine, "SELECT count(*) FROM hcpcs_code WHERE release_id = :r", r=current))
    result = run_cli(["ingest", "--source", "hcpcs"], settings, MEDRAG_HCPCS_URL=_hcpcs_page(tmp_path, bad_zip.name))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    error_line = [line for line in result.stderr.splitlines() if line.startswith("medrag: error:")][0]
    assert named in error_line and "previous release is unchanged" in error_line
    after = (current_release_id(engine, "hcpcs"),
             scalar(engine, "SELECT count(*) FROM hcpcs_code WHERE release_id = :r", r=before[0]))
    assert after == before
    assert not list(Path(settings.home, "releases", "hcpcs", "incoming").glob("*.part"))


def test_xml_bomb_in_icd10cm_zip_is_rejected(first_ingest, settings, engine, tmp_path: Path) -> None:
    bomb = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
            b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
            b"<ICD10CM.tabular>&lol2;</ICD10CM.tabular>")
    _write_zip(tmp_path / "2027-code-tables.zip", {"icd10cm_tabular_2027.xml": bomb})
    page = tmp_path / "icd.html"
    page.write_text('<a href="2027-code-tables.zip">2027 Code Tables and Index (ZIP)</a>')
    result = run_cli(["ingest", "--source", "icd10cm"], settings, MEDRAG_ICD10CM_URL=page.as_uri())
    assert result.returncode == 2 and "icd10cm_tabular_2027.xml" in result.stderr
    assert scalar(engine, "SELECT label FROM release WHERE source='icd10cm' AND is_current") == "FY2026"
    assert scalar(engine, "SELECT status FROM release WHERE source='icd10cm' AND label='FY2027'") == "failed"


def test_wrong_encoding_in_mcd_csv_names_file_and_line(first_ingest, settings, engine, cms_dir, tmp_path) -> None:
    ncd_dir = cms_dir / "mcd" / "ncd" / "ncd_csv"
    members = {p.name: p.read_bytes() for p in ncd_dir.glob("*.csv")}
    members["ncd_pblctn_ref.csv"] = members["ncd_pblctn_ref.csv"].replace(b"Coverage Issues", b"Coverage \x81ssues", 1)
    inner = _write_zip(tmp_path / "ncd_csv.zip", members)
    outer = _write_zip(tmp_path / "ncd.zip", {"ncd_csv.zip": inner.read_bytes()})
    _write_zip(tmp_path / "all_data.zip", {"ncd.zip": outer.read_bytes()})
    page = tmp_path / "downloads.html"
    page.write_text('<a href="all_data.zip">Download All Data</a>')
    mcd_before = current_release_id(engine, "mcd")
    result = run_cli(["ingest", "--source", "mcd", "--release", "2030Q1"], settings, MEDRAG_MCD_URL=page.as_uri())
    assert result.returncode == 2
    assert "ncd_pblctn_ref.csv" in result.stderr and "line 2" in result.stderr
    assert current_release_id(engine, "mcd") == mcd_before
    assert scalar(engine, "SELECT count(*) FROM ncd WHERE release_id = :r", r=mcd_before) == 352


def test_database_dropping_mid_load_keeps_the_previous_release(first_ingest, settings, engine, db_url: str) -> None:
    (fy2021,) = pipeline.fetched_releases(settings, "icd10cm", "FY2021")
    release = scalar(engine, "SELECT id FROM release WHERE source='icd10cm' AND label='FY2021'")
    errors: list[BaseException] = []

    def forced_reload() -> None:
        try:
            pipeline.load_fetched(engine, settings, fy2021, force=True)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            errors.append(exc)

    worker = threading.Thread(target=forced_reload)
    worker.start()
    deadline = time.monotonic() + 60
    killed = 0
    with psycopg.connect(libpq_url(db_url), autocommit=True) as admin:
        while worker.is_alive() and not killed and time.monotonic() < deadline:
            # Wait until the reload is inside its transaction (rows deleted, COPY running), then cut it off.
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND state <> 'idle' AND query ILIKE 'COPY%'"
            ).fetchone()[0]
            time.sleep(0.05)
    worker.join(120)
    assert killed, "the load finished before it could be interrupted"
    assert errors and isinstance(errors[0], LoadError) and "previous release is unchanged" in str(errors[0])
    engine.dispose()  # the pool holds the killed connection
    assert scalar(engine, "SELECT count(*) FROM icd10cm_code WHERE release_id = :r", r=release) == 95358
    assert scalar(engine, "SELECT status FROM release WHERE id = :r", r=release) == "loaded"
    # and re-running completes it
    assert pipeline.load_fetched(engine, settings, fy2021, force=True).rows["icd10cm_code"] == 95358
