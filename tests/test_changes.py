"""What each release changed, on the real releases: counts checked against the files, a coder's code list, the NCD
export's own dates, and two MCD exports where the test itself edits one NCD and one LCD's code list."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
import json
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import psycopg
import pytest
from sqlalchemy import text

from medrag.changes.codes import parse_code_list
from medrag.changes.compute import update_changes
from medrag.changes.digest import read_digest
from medrag.core.db import libpq_url
from medrag.core.errors import MedragError
from medrag.core.registry import SOURCE_NAMES
from medrag.refresh import fetch_and_load as pipeline

HCPCS_2019 = "hcpcs/2019-Alpha-Numeric-HCPCS-File.zip"
HCPCS_2025 = "hcpcs/january-2025-alpha-numeric-hcpcs-file.zip"
ICD_FY2025 = "icd10cm/fy2025/icd10cm-codes-2025.zip"
ICD_FY2026 = "icd10cm/icd10c-tabular-April-1-2026.xml"
NCD_CSV = "mcd/ncd/ncd_csv/ncd_trkg.csv"


@pytest.fixture(scope="module")
def computed(indexed_engine):
    """Every source's change sets on the session's corpus (all releases loaded)."""
    return {source: update_changes(indexed_engine, source) for source in SOURCE_NAMES}


def digest_json(cli, *args: str) -> dict:
    code, out, err = cli("changes", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def only_set(data: dict, source: str, from_label: str | None) -> dict:
    (found,) = [item for item in data["sets"] if item["source"] == source and item["from_label"] == from_label]
    return found


def items(change_set: dict, change: str) -> set[str]:
    return {item["item"] for item in change_set["changes"] if item["change"] == change}


# -- counts computed again from the files ------------------------------------------------------------------------


def hcpcs_records(cms_dir: Path, zip_name: str) -> dict[tuple[str, str], str]:
    """(code, procedure|modifier) -> termination date (YYYYMMDD or '') of a release's record file, read here."""
    with zipfile.ZipFile(cms_dir / zip_name) as archive:
        (member,) = [name for name in archive.namelist() if "ANWEB" in name and name.endswith(".txt")
                     and "Corrections" not in name]
        lines = archive.read(member).decode("latin-1").splitlines()
    records = {}
    for line in lines:
        if line[10:11] in ("3", "7"):  # record identification code of a code's first line
            kind = "procedure" if line[10] == "3" else "modifier"
            records[(line[0:5].strip(), kind)] = line[284:292].strip()
    return records


def test_hcpcs_2019_to_2025_agrees_with_the_record_files(computed, cli, cms_dir) -> None:
    old, new = hcpcs_records(cms_dir, HCPCS_2019), hcpcs_records(cms_dir, HCPCS_2025)
    hcpcs = only_set(digest_json(cli, "--source", "hcpcs"), "hcpcs", "2019")
    assert hcpcs["to_label"] == "2025Q1"
    assert items(hcpcs, "added") == {code for code, _kind in new.keys() - old.keys()}
    assert items(hcpcs, "removed") == {code for code, _kind in old.keys() - new.keys()}
    terminated = {code for (code, kind), ends in new.items() if ends and old.get((code, kind)) != ends}
    assert items(hcpcs, "terminated") == terminated
    j2920 = next(item for item in hcpcs["changes"] if item["item"] == "J2920" and item["change"] == "terminated")
    assert j2920["new_value"] == "2024-03-31" and j2920["effective_date"] == "2024-03-31"
    assert "J2919" in items(hcpcs, "added")


def icd10cm_fy2026_codes(path: Path) -> set[str]:
    """Every code of the FY2026 tabular, read here: each <diag>, and a childless one's 7th-character codes
    (placeholder X up to six characters), minus the one exception the Tabular states in prose (S06: 7th characters
    D and S do not apply with 6th character 7 or 8)."""
    codes: set[str] = set()

    def walk(diag: ElementTree.Element, extensions: list[str]) -> None:
        name = diag.findtext("name")
        definition = diag.find("sevenChrDef")
        if definition is not None:
            extensions = [extension.get("char") for extension in definition.findall("extension")]
        codes.add(name)
        children = diag.findall("diag")
        for child in children:
            walk(child, extensions)
        if not children:
            for char in extensions:
                full = name.replace(".", "").ljust(6, "X") + char
                if not (full.startswith("S06") and full[5] in "78" and char in "DS"):
                    codes.add(f"{full[:3]}.{full[3:]}")

    for section in ElementTree.parse(path).getroot().iter("section"):
        for diag in section.findall("diag"):
            walk(diag, [])
    return codes


def icd10cm_fy2025_codes(path: Path) -> set[str]:
    """Every code of the FY2025 order file, read here (code in columns 7-13, dotted after the third)."""
    with zipfile.ZipFile(path) as archive:
        member = next(name for name in archive.namelist() if name.endswith("order_2025.txt"))
        lines = archive.read(member).decode("ascii").splitlines()
    bare = [line[6:13].strip() for line in lines if line.strip()]
    return {code if len(code) <= 3 else f"{code[:3]}.{code[3:]}" for code in bare}


def test_icd10cm_fy2025_to_fy2026_added_and_deleted_agree_with_the_files(computed, cli, cms_dir) -> None:
    old, new = icd10cm_fy2025_codes(cms_dir / ICD_FY2025), icd10cm_fy2026_codes(cms_dir / ICD_FY2026)
    icd = only_set(digest_json(cli, "--source", "icd10cm"), "icd10cm", "FY2025")
    assert icd["to_label"] == "FY2026"
    assert items(icd, "added") == new - old and len(new - old) > 100
    assert items(icd, "deleted") == old - new
    assert icd["counts"]["added"] == len(new - old)
    # FY2025 came from its order file: which codes need a 7th character is unknown there, and the digest says so
    assert any("seventh-character requirements not compared: FY2025" in note for note in icd["notes"])
    assert all(item["effective_date"] == "2025-10-01" for item in icd["changes"])


def test_the_addenda_are_checked_and_a_disagreement_is_reported(computed, indexed_engine) -> None:
    (fy2025,) = [item for item in computed["icd10cm"] if item.to_label == "FY2025"]
    assert fy2025.from_label == "FY2021"
    agree = [note for note in fy2025.notes if note.startswith("addenda agree")]
    assert any("291 added codes" in note for note in agree)
    # G93.42 was added after FY2021 and revised in FY2025: across FY2021 -> FY2025 it is added, not revised
    assert any(note.startswith("addenda disagree") and "G93.42" in note for note in fy2025.notes)
    with indexed_engine.connect() as conn:
        addenda = conn.execute(text("SELECT action, count(*) FROM icd10cm_addenda a JOIN release r "
                                    "ON r.id = a.release_id WHERE r.label = 'FY2025' GROUP BY 1")).all()
    assert dict(addenda) == {"add": 324, "delete": 36, "revise_from": 14, "revise_to": 14}


def test_billable_codes_that_became_headers_name_their_new_children(computed, cli) -> None:
    data = digest_json(cli, "--source", "icd10cm", "--from", "FY2021", "--to", "FY2025")
    icd = only_set(data, "icd10cm", "FY2021")
    assert "M54.5" in items(icd, "became_header")
    assert {"M54.50", "M54.51", "M54.59"} <= items(icd, "added")


# -- a coder's code list ----------------------------------------------------------------------------------------


def test_codes_returns_only_what_touches_the_list(computed, cli, tmp_path) -> None:
    codes = tmp_path / "my-codes.txt"
    # affected: J2920 (terminated), j2919 (added), B88.09 (added under B88.0, which became a header);
    # unaffected: E11.9, A00.0, E0601 (in both releases, unchanged)
    codes.write_text("J2920\nj2919\n# a comment\n\nB8809\nE11.9\nA000\nE0601\n", encoding="utf-8")
    data = digest_json(cli, "--codes", str(codes))
    assert data["codes"] == ["J2920", "J2919", "B8809", "E11.9", "A000", "E0601"]
    touched = {(change["item"], mine["code"], mine["relation"])
               for change_set in data["sets"] for change in change_set["changes"] for mine in change["your_codes"]}
    assert ("J2920", "J2920", "code") in touched and ("J2919", "J2919", "code") in touched
    assert ("B88.09", "B8809", "code") in touched and ("B88.0", "B8809", "parent") in touched
    assert not {code for _item, code, _relation in touched} & {"E11.9", "A000", "E0601"}
    code, out, _err = cli("changes", "--codes", str(codes), "--csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and {row["item"] for row in rows} == {item for item, _code, _relation in touched}


@pytest.mark.parametrize(("content", "message"), [
    ("J2920\nnot a code\n", "entry 2 is not a HCPCS code or modifier or an ICD-10-CM code"),
    (b"\xff\xfeJ\x00", "not UTF-8 text"),
])
def test_a_bad_code_list_is_one_line(cli, tmp_path, content, message) -> None:
    codes = tmp_path / "codes.txt"
    codes.write_bytes(content.encode() if isinstance(content, str) else content)
    code, _out, err = cli("changes", "--codes", str(codes))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_spellings_of_one_code_count_once() -> None:
    assert parse_code_list(["m54.50", "M5450", " J2920 ,"]) == ["M54.50", "J2920"]
    with pytest.raises(MedragError, match="entry 1"):
        parse_code_list(["J2920;DROP TABLE"])


def test_the_reader_role_gets_the_same_matches_from_psql(computed, indexed_engine, indexed_settings) -> None:
    with indexed_engine.connect() as conn:
        set_ids = list(conn.execute(text("SELECT id FROM release_change_set")).scalars())
        expected = conn.execute(text("SELECT * FROM medrag_changes_for_codes(:c, :s) ORDER BY 1, 2"),
                                {"c": ["J2920", "M54.50"], "s": set_ids}).all()
    url = libpq_url(indexed_settings.database_url).replace("postgres@", "medrag_reader@")
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT * FROM medrag_changes_for_codes(%s, %s) ORDER BY 1, 2",
                            (["J2920", "M54.50"], set_ids)).fetchall()
        counted = conn.execute("SELECT count(*) FROM v_release_changes").fetchone()[0]
    assert [tuple(row) for row in expected] == rows and rows and counted > 0


# -- the NCD export's own dates ---------------------------------------------------------------------------------


def ncd_csv_rows(cms_dir: Path) -> list[dict[str, str]]:
    with (cms_dir / NCD_CSV).open(encoding="cp1252", newline="") as handle:
        return list(csv.DictReader(handle))


def _day(value: str) -> dt.date | None:
    return dt.date.fromisoformat(value[:10]) if value.strip() else None


def test_the_exports_own_dates_match_the_csv_for_a_period(computed, cli, cms_dir) -> None:
    since = dt.date(2024, 1, 1)
    mcd = only_set(digest_json(cli, "--source", "mcd", "--since", since.isoformat()), "mcd", None)
    assert mcd["scope"] == "within" and mcd["since"] == "2024-01-01"
    rows = ncd_csv_rows(cms_dir)
    for change, column in (("took_effect", "NCD_efctv_dt"), ("retired", "NCD_trmntn_dt"),
                           ("revised", "trnsmtl_issnc_dt")):
        expected = {row["NCD_mnl_sect"] for row in rows if (day := _day(row[column])) and day >= since}
        assert items(mcd, change) == expected, change
    prep = next(item for item in mcd["changes"] if item["item"] == "210.15" and item["change"] == "revised")
    assert prep["effective_date"] == "2024-12-05"
    assert prep["detail"]["revision"].startswith("12/2024 - ") and "(TN 12987) (CR13843)" in prep["detail"]["revision"]


def test_a_source_with_one_release_says_so_and_the_default_is_the_last_refresh(computed, cli) -> None:
    data = digest_json(cli)
    gaps = {gap["source"]: gap["message"] for gap in data["gaps"]}
    assert set(gaps) == {"mcd", "iom"} and "one loaded release" in gaps["iom"]
    pairs = {(item["source"], item["from_label"], item["to_label"]) for item in data["sets"]}
    assert pairs == {("hcpcs", "2019", "2025Q1"), ("icd10cm", "FY2025", "FY2026"), ("mcd", None, "2026Q4")}
    code, out, _err = cli("changes", "--markdown", "--limit", "3")
    assert code == 0 and "## HCPCS Level II: 2019 → 2025Q1" in out and "## Not compared" in out
    assert "| … and" in out


@pytest.mark.parametrize(("args", "message"), [
    (("--from", "FY2025"), "--from and --to go together"),
    (("--from", "FY2025", "--to", "FY2026"), "give one --source"),
    (("--source", "icd10cm", "--from", "FY2026", "--to", "FY2025"), "is not older than"),
    (("--source", "icd10cm", "--from", "FY2019", "--to", "FY2025"), "no loaded icd10cm release 'FY2019'"),
    (("--since", "2025-02-30"), "is not a date"),
    (("--json", "--csv"), "choose one of"),
])
def test_bad_options_are_one_line(cli, args, message) -> None:
    code, _out, err = cli("changes", *args)
    assert code == 2 and message in err


# -- two MCD exports: the test edits one NCD and one LCD's code list --------------------------------------------

EDITED_NCD = b"\r\n377,1,"  # 210.15, PrEP for HIV: version 1
OLD_SENTENCE = "b) Up to eight HIV screening tests every 12 months."
NEW_SENTENCES = ("b) Up to ten HIV screening tests every 12 months.", "Each test is billed once.")
DROPPED_LCD_ROW = b'"33312","37","A9900",'


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def mcd_export(cms_dir: Path, folder: Path, *, edited: bool) -> str:
    """An all_data.zip of the real NCD and LCD CSVs (edited: 210.15 revised, L33312's code list changed); its page."""
    ncd = {path.name: path.read_bytes() for path in (cms_dir / "mcd/ncd/ncd_csv").glob("*.csv")}
    lcd = {path.name: path.read_bytes() for path in (cms_dir / "mcd/current_lcd/current_lcd_csv").glob("*.csv")}
    if edited:
        trkg = ncd["ncd_trkg.csv"]
        start = trkg.index(EDITED_NCD)
        row_end = trkg.index(b"\r\n", trkg.index(OLD_SENTENCE.encode(), start))
        row = trkg[start:row_end].replace(EDITED_NCD, b"\r\n377,2,").replace(
            OLD_SENTENCE.encode(), " ".join(NEW_SENTENCES).encode())
        ncd["ncd_trkg.csv"] = trkg[:start] + row + trkg[row_end:]
        rows = lcd["lcd_x_hcpc_code.csv"].split(b"\n")
        dropped = next(line for line in rows if line.startswith(DROPPED_LCD_ROW))
        added = next(line for line in rows if line.startswith(b'"33312","37","E0953",')).replace(b"E0953", b"E0954")
        lcd["lcd_x_hcpc_code.csv"] = b"\n".join([line for line in rows if line != dropped] + [added])
    folder.mkdir()
    outer = {"ncd.zip": _zip_bytes({"ncd_csv.zip": _zip_bytes(ncd)}),
             "current_lcd.zip": _zip_bytes({"current_lcd_csv.zip": _zip_bytes(lcd)})}
    (folder / "all_data.zip").write_bytes(_zip_bytes(outer))
    (folder / "downloads.html").write_text('<a href="all_data.zip">Download All Data</a>')
    return (folder / "downloads.html").as_uri()


@pytest.fixture(scope="module")
def two_exports(engine, cms_dir, tmp_path_factory):
    """The module's own database with the real MCD export loaded as 2026Q3 and the edited copy as 2026Q4."""
    from medrag.core.config import load_settings

    home = tmp_path_factory.mktemp("two-exports")
    settings = dataclasses.replace(load_settings(), database_url=str(engine.url.render_as_string(False)),
                                   home=home / "home")
    for label, edited in (("2026Q3", False), ("2026Q4", True)):
        page = mcd_export(cms_dir, home / label, edited=edited)
        run = dataclasses.replace(settings, source_urls={**settings.source_urls, "mcd": page})
        for fetched in pipeline.fetch_source(run, "mcd", release=label):
            pipeline.load_fetched(engine, run, fetched)
    return update_changes(engine, "mcd")


def test_the_two_export_diff_shows_the_edited_sentences_and_nothing_else(two_exports, engine) -> None:
    (between,) = [item for item in two_exports if item.from_label == "2026Q3"]
    assert between.counts == {"code_added": 1, "code_removed": 1, "revised": 1}
    assert between.notes == ["LCD texts not compared: lcd.csv is missing from an export; LCD code lists were compared"]
    with engine.connect() as conn:
        digest = read_digest(conn, sources=["mcd"])
    (pair,) = [item for item in digest.sets if item.from_label == "2026Q3"]
    revised = next(change for change in pair.changes if change["change"] == "revised")
    assert (revised["item"], revised["old_value"], revised["new_value"]) == ("210.15", "1", "2")
    assert revised["detail"]["sentences_removed"] == [OLD_SENTENCE]
    assert revised["detail"]["sentences_added"] == list(NEW_SENTENCES)
    assert revised["detail"]["fields"] == ["indctn_lmtn"]
    lcd = {(change["item"], change["change"], tuple(change["codes"])) for change in pair.changes
           if change["item_kind"] == "lcd"}
    assert lcd == {("L33312", "code_removed", ("A9900",)), ("L33312", "code_added", ("E0954",))}
    assert not [gap for gap in digest.gaps if gap["source"] == "mcd"]


def test_a_kept_change_set_is_reused_and_recomputed_when_a_release_is_loaded_again(two_exports, engine) -> None:
    again = update_changes(engine, "mcd")
    assert not any(item.computed for item in again)
    with engine.begin() as conn:
        conn.execute(text("UPDATE release SET loaded_at = now() WHERE source = 'mcd' AND label = '2026Q4'"))
    recomputed = update_changes(engine, "mcd")
    assert all(item.computed for item in recomputed if item.to_label == "2026Q4")
    assert [item.counts for item in recomputed] == [item.counts for item in two_exports]


def test_manual_sections_added_removed_and_changed(engine) -> None:
    """Two IOM releases written straight into the tables (the chapter PDFs are not available offline)."""
    sections = {"2026Q1": [("20", "Coverage", "Medicare covers it. Use HCPCS G0008."), ("30", "Old", "Gone soon.")],
                "2026Q2": [("20", "Coverage", "Medicare covers it. Claims need modifier KX. Use HCPCS G0008."),
                           ("40", "New", "A new section.")]}
    with engine.begin() as conn:
        for label, rows in sections.items():
            release = conn.execute(text("INSERT INTO release (source, label, status, loaded_at) "
                                        "VALUES ('iom', :l, 'loaded', now()) RETURNING id"), {"l": label}).scalar()
            for number, title, body in rows:
                conn.execute(text("INSERT INTO iom_section (release_id, manual, chapter, section_number, title, text) "
                                  "VALUES (:r, '100-02', '15', :n, :t, :b)"), {"r": release, "n": number, "t": title,
                                                                               "b": body})
    (outcome,) = update_changes(engine, "iom")
    assert outcome.counts == {"added": 1, "changed": 1, "removed": 1}
    with engine.connect() as conn:
        digest = read_digest(conn, sources=["iom"], codes=["G0008"])
    (changed,) = digest.sets[0].changes
    assert changed["item"] == "100-02 ch. 15 §20"
    assert changed["detail"]["sentences_added"] == ["Claims need modifier KX."]
    assert changed["your_codes"] == [{"code": "G0008", "relation": "listed"}]
