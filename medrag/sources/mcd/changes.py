"""Medicare Coverage Database changes: NCDs added, retired or revised between two exports (each revision with the
sentences its indications and limitations gained and lost), the HCPCS codes LCDs added or dropped, and the dates an
export gives its own NCDs (took effect, revised, retired, record updated) with their revision-history entries."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, text

from medrag.sources.changes import CODES_NAMED_IN, revision_entries, sentence_changes

FORMAT = 1  # raised whenever the rows below are computed differently: stored change sets are then recomputed

# The narrative fields of an NCD; a revision that changes any of them is reported, with sentences for indctn_lmtn.
NARRATIVE_FIELDS = ("itm_srvc_desc", "indctn_lmtn", "xref_txt", "othr_txt")
_NCD_COLUMNS = ("ncd_id, ncd_vrsn_num, ncd_mnl_sect, ncd_mnl_sect_title, ncd_efctv_dt::date AS effective, "
                "ncd_trmntn_dt::date AS terminated, trnsmtl_issnc_dt::date AS transmittal_date, trnsmtl_num, "
                "trnsmtl_url, last_updt_tmstmp::date AS updated, rev_hstry, " + ", ".join(NARRATIVE_FIELDS))
# Each NCD's newest version in one export (a full export may hold several versions of one NCD).
_NEWEST_NCDS = text(f"SELECT DISTINCT ON (ncd_id) {_NCD_COLUMNS} FROM mcd_ncd_trkg WHERE release_id = :release_id "
                    "ORDER BY ncd_id, ncd_vrsn_num DESC")

_INSERT = text(f"""
INSERT INTO release_change (change_set_id, item_kind, item, change, field, old_value, new_value, effective_date,
                            title, codes, detail)
VALUES (:change_set_id, :item_kind, :item, :change, :field, :old_value, :new_value, :effective_date, :title,
        {CODES_NAMED_IN.format(text=':named_text')}, CAST(:detail AS jsonb))
""")

# HCPCS codes each LCD (its newest version) lists, compared between the exports; an LCD in one export only is
# reported once, with every code it lists.
_LCD_CODES = text("""
WITH listed AS (
    SELECT x.release_id, x.lcd_id, x.hcpc_code_id AS code
    FROM mcd_lcd_x_hcpc_code x
    WHERE x.release_id IN (:old_id, :new_id)
      AND x.lcd_version = (SELECT max(y.lcd_version) FROM mcd_lcd_x_hcpc_code y
                           WHERE y.release_id = x.release_id AND y.lcd_id = x.lcd_id)
    GROUP BY 1, 2, 3
), o AS (SELECT * FROM listed WHERE release_id = :old_id), n AS (SELECT * FROM listed WHERE release_id = :new_id),
lcds AS (
    SELECT lcd_id, bool_or(release_id = :old_id) AS in_old, bool_or(release_id = :new_id) AS in_new
    FROM listed GROUP BY lcd_id
), changed AS (
    SELECT coalesce(n.lcd_id, o.lcd_id) AS lcd_id, coalesce(n.code, o.code) AS code,
           CASE WHEN o.code IS NULL THEN 'code_added' ELSE 'code_removed' END AS change
    FROM o FULL JOIN n ON n.lcd_id = o.lcd_id AND n.code = o.code
    WHERE o.code IS NULL OR n.code IS NULL
)
INSERT INTO release_change (change_set_id, item_kind, item, change, field, old_value, new_value, title, codes)
SELECT :change_set_id, 'lcd', 'L' || c.lcd_id,
       CASE WHEN l.in_old AND l.in_new THEN c.change WHEN l.in_new THEN 'added' ELSE 'retired' END,
       'hcpcs_codes', NULL, NULL,
       (SELECT t.title FROM mcd_lcd t WHERE t.release_id IN (:old_id, :new_id) AND t.lcd_id = c.lcd_id
        ORDER BY t.release_id = :new_id DESC, t.lcd_version DESC LIMIT 1),
       array_agg(c.code ORDER BY c.code)
FROM changed c JOIN lcds l USING (lcd_id)
GROUP BY c.lcd_id, c.change, l.in_old, l.in_new
""")


def between(conn: Connection, change_set_id: int, old_id: int, new_id: int) -> list[str]:
    """Write the NCD and LCD changes from export old_id to export new_id; return what could not be compared."""
    old = {row.ncd_id: row for row in conn.execute(_NEWEST_NCDS, {"release_id": old_id})}
    new = {row.ncd_id: row for row in conn.execute(_NEWEST_NCDS, {"release_id": new_id})}
    rows = []
    for ncd_id in sorted(old.keys() | new.keys()):
        before, after = old.get(ncd_id), new.get(ncd_id)
        if before is None:
            rows.append(_ncd_row(change_set_id, after, "added", after.effective))
        elif after is None:
            rows.append(_ncd_row(change_set_id, before, "retired", before.terminated, field="absent"))
        else:
            if after.terminated and after.terminated != before.terminated:
                rows.append(_ncd_row(change_set_id, after, "retired", after.terminated))
            revision = _revision(before, after)
            if revision:
                rows.append(_ncd_row(change_set_id, after, "revised", after.transmittal_date, **revision))
    if rows:
        conn.execute(_INSERT, rows)
    conn.execute(_LCD_CODES, {"change_set_id": change_set_id, "old_id": old_id, "new_id": new_id})
    lcd_text = conn.execute(text("SELECT count(*) FROM mcd_lcd WHERE release_id IN (:o, :n) GROUP BY release_id"),
                            {"o": old_id, "n": new_id}).all()
    return [] if len(lcd_text) == 2 else [
        "LCD texts not compared: lcd.csv is missing from an export; LCD code lists were compared"]


def within(conn: Connection, change_set_id: int, release_id: int) -> list[str]:
    """Write the dated changes one export gives its NCDs: took effect, revised (the version's transmittal), retired
    and record updated, each with the revision-history entry of that month (else of the transmittal's)."""
    rows = []
    for ncd in conn.execute(_NEWEST_NCDS, {"release_id": release_id}):
        for change, day in (("took_effect", ncd.effective), ("revised", ncd.transmittal_date),
                            ("retired", ncd.terminated), ("updated", ncd.updated)):
            if day is not None:
                rows.append(_ncd_row(change_set_id, ncd, change, day, revision=_entry_for(ncd, day)))
    if rows:
        conn.execute(_INSERT, rows)
    return []


def _revision(before: Any, after: Any) -> dict[str, Any] | None:
    """What a revised NCD changed (a new version, or narrative text that differs); None when nothing did."""
    fields = [name for name in NARRATIVE_FIELDS if getattr(before, name) != getattr(after, name)]
    if after.ncd_vrsn_num == before.ncd_vrsn_num and not fields:
        return None
    added, removed = sentence_changes(before.indctn_lmtn, after.indctn_lmtn)
    return {"field": "ncd_vrsn_num", "old_value": str(before.ncd_vrsn_num), "new_value": str(after.ncd_vrsn_num),
            "fields": fields, "sentences_added": added, "sentences_removed": removed,
            "revision": _entry_for(after, after.transmittal_date)}


def _entry_for(ncd: Any, day: Any) -> str | None:
    """The revision-history entry of the month of `day`, else that of the version's transmittal, else None."""
    entries = dict(reversed(revision_entries(ncd.rev_hstry)))  # the first (newest) entry of a month wins
    months = [f"{d:%Y-%m}" for d in (day, ncd.transmittal_date) if d is not None]
    return next((entries[month] for month in months if month in entries), None)


def _ncd_row(change_set_id: int, ncd: Any, change: str, day: Any, *, field: str | None = None,
             old_value: str | None = None, new_value: str | None = None, **detail: Any) -> dict[str, Any]:
    """One NCD change as the parameters of _INSERT; the codes it touches are those its text names."""
    detail = {"ncd_id": ncd.ncd_id, "version": ncd.ncd_vrsn_num, "transmittal": ncd.trnsmtl_num,
              "transmittal_url": ncd.trnsmtl_url, **detail}
    return {"change_set_id": change_set_id, "item_kind": "ncd", "item": ncd.ncd_mnl_sect or str(ncd.ncd_id),
            "change": change, "field": field, "old_value": old_value, "new_value": new_value, "effective_date": day,
            "title": ncd.ncd_mnl_sect_title,
            "named_text": " ".join(getattr(ncd, name) or "" for name in NARRATIVE_FIELDS),
            "detail": json.dumps({key: value for key, value in detail.items() if value not in (None, [], "")},
                                 default=str)}
