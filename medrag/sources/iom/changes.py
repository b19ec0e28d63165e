"""Internet-Only Manual changes between two releases: numbered sections added, removed, or whose text changed
(with the sentences it gained and lost)."""

from __future__ import annotations

import json

from sqlalchemy import Connection, text

from medrag.sources.changes import CODES_NAMED_IN, sentence_changes

FORMAT = 1  # raised whenever the rows below are computed differently: stored change sets are then recomputed

_SECTIONS = text("""
SELECT coalesce(n.manual, o.manual) AS manual, coalesce(n.chapter, o.chapter) AS chapter,
       coalesce(n.section_number, o.section_number) AS section_number, coalesce(n.title, o.title) AS title,
       o.text AS old_text, n.text AS new_text,
       CASE WHEN o.section_number IS NULL THEN 'added' WHEN n.section_number IS NULL THEN 'removed'
            ELSE 'changed' END AS change
FROM (SELECT * FROM iom_section WHERE release_id = :old_id) o
FULL JOIN (SELECT * FROM iom_section WHERE release_id = :new_id) n
  ON n.manual = o.manual AND n.chapter = o.chapter AND n.section_number = o.section_number
WHERE o.section_number IS NULL OR n.section_number IS NULL OR o.text IS DISTINCT FROM n.text
   OR o.title IS DISTINCT FROM n.title
ORDER BY 1, 2, 3
""")

_INSERT = text(f"""
INSERT INTO release_change (change_set_id, item_kind, item, change, title, codes, detail)
VALUES (:change_set_id, 'iom', :item, :change, :title, {CODES_NAMED_IN.format(text=':named_text')},
        CAST(:detail AS jsonb))
""")


def between(conn: Connection, change_set_id: int, old_id: int, new_id: int) -> list[str]:
    """Write the section changes from release old_id to new_id (chapters loaded in only one of them count as
    sections added or removed); IOM needs no notes."""
    rows = []
    for section in conn.execute(_SECTIONS, {"old_id": old_id, "new_id": new_id}):
        added, removed = sentence_changes(section.old_text, section.new_text)
        rows.append({
            "change_set_id": change_set_id, "item": f"{section.manual} ch. {section.chapter} §{section.section_number}",
            "change": section.change, "title": section.title,
            "named_text": section.new_text or section.old_text or "",
            "detail": json.dumps({"manual": section.manual, "chapter": section.chapter,
                                  "section": section.section_number, "sentences_added": added,
                                  "sentences_removed": removed}),
        })
    if rows:
        conn.execute(_INSERT, rows)
    return []
