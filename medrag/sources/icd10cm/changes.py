"""ICD-10-CM changes between two releases: codes added, deleted, re-described (or only respelled: accents or case),
turned into headers (or billable), a seventh character or a placeholder newly required; cross-checked with the CDC
addenda a release carries."""

from __future__ import annotations

from sqlalchemy import Connection, text

FORMAT = 1  # raised whenever the rows below are computed differently: stored change sets are then recomputed

# Each change takes effect when the newer fiscal year starts (October 1).
_EFFECTIVE = "(SELECT lower(medrag_release_period(source, label)) FROM release WHERE id = :new_id)"

# A description with its accents and case folded: "Sjögren" and "Sjogren" are one name spelled two ways, which
# the order files (ASCII) and the tabular XML (with accents) often write differently.
_FOLDED = "lower(translate({column}, 'áàâäãåéèêëíìîïóòôöõúùûüçñÁÀÂÄÃÅÉÈÊËÍÌÎÏÓÒÔÖÕÚÙÛÜÇÑ', " \
          "'aaaaaaeeeeiiiiooooouuuucnaaaaaaeeeeiiiiooooouuuucn'))"

_BETWEEN = text(f"""
INSERT INTO release_change (change_set_id, item_kind, item, change, field, old_value, new_value, effective_date,
                            title, codes, detail)
SELECT :change_set_id, 'icd10cm', coalesce(n.code, o.code), c.change, c.field, c.old_value, c.new_value,
       {_EFFECTIVE}, coalesce(n.description, o.description), ARRAY[coalesce(n.code, o.code)],
       jsonb_strip_nulls(jsonb_build_object('parent', coalesce(n.parent_code, o.parent_code),
                                            'billable', coalesce(n.billable, o.billable)))
FROM (SELECT * FROM icd10cm_code WHERE release_id = :old_id) o
FULL JOIN (SELECT * FROM icd10cm_code WHERE release_id = :new_id) n ON n.code = o.code
-- only the pairs where something differs reach the rules below (a handful of the 98,000)
CROSS JOIN LATERAL (SELECT WHERE o.code IS NULL OR n.code IS NULL OR o.description IS DISTINCT FROM n.description
                           OR o.billable IS DISTINCT FROM n.billable
                           OR o.requires_seventh_character <> n.requires_seventh_character) differs
CROSS JOIN LATERAL (VALUES
    ('added', NULL, NULL, n.description, o.code IS NULL),
    ('deleted', NULL, o.description, NULL, n.code IS NULL),
    (CASE WHEN {_FOLDED.format(column='o.description')} = {_FOLDED.format(column='n.description')}
          THEN 'respelled' ELSE 'redescribed' END,
     'description', o.description, n.description, o.description IS DISTINCT FROM n.description),
    ('became_header', 'billable', 'billable', 'header', o.billable AND NOT n.billable),
    ('became_billable', 'billable', 'header', 'billable', NOT o.billable AND n.billable),
    -- NULL: the release does not say (codes loaded from an order file); only two known values are compared
    ('needs_seventh_character', 'requires_seventh_character', 'false', 'true',
     o.requires_seventh_character IS FALSE AND n.requires_seventh_character IS TRUE),
    ('no_longer_needs_seventh_character', 'requires_seventh_character', 'true', 'false',
     o.requires_seventh_character IS TRUE AND n.requires_seventh_character IS FALSE)
) AS c(change, field, old_value, new_value, applies)
WHERE c.applies AND (c.change IN ('added', 'deleted') OR (o.code IS NOT NULL AND n.code IS NOT NULL))
""")

# A code that now needs a placeholder: a deleted code and an added one that differ only by the X placeholders
# (T36.01A deleted, T36.0X1A added). Both keep their own rows; this one says how they relate.
_PLACEHOLDERS = text(f"""
WITH rows AS (
    SELECT item, change, title, detail, replace(item, 'X', '') AS bare,
           length(item) - length(replace(item, 'X', '')) AS placeholders
    FROM release_change WHERE change_set_id = :change_set_id AND change IN ('added', 'deleted')
), pairs AS (  -- grouped, not joined: the rows were just written, so the planner knows nothing of their numbers
    SELECT bare, array_agg(row(item, placeholders, title, detail)) FILTER (WHERE change = 'added') AS added,
           array_agg(row(item, placeholders)) FILTER (WHERE change = 'deleted') AS deleted
    FROM rows GROUP BY bare HAVING bool_or(change = 'added') AND bool_or(change = 'deleted')
)
INSERT INTO release_change (change_set_id, item_kind, item, change, field, old_value, new_value, effective_date,
                            title, codes, detail)
SELECT :change_set_id, 'icd10cm', a.item, 'needs_placeholder', 'code', d.item, a.item, {_EFFECTIVE}, a.title,
       ARRAY[a.item, d.item], a.detail
FROM pairs,
     unnest(pairs.added) AS a(item text, placeholders integer, title text, detail jsonb),
     unnest(pairs.deleted) AS d(item text, placeholders integer)
WHERE a.placeholders > d.placeholders
""")

_UNKNOWN_SEVENTH = text("""
SELECT r.label FROM release r
WHERE r.id IN (:old_id, :new_id)
  AND NOT EXISTS (SELECT 1 FROM icd10cm_code c WHERE c.release_id = r.id AND c.requires_seventh_character IS NOT NULL)
ORDER BY r.label
""")

# What the newer release's addenda say, one expectation per code: a code both deleted and added changed its
# header flag; one revised changed its description.
_ADDENDA_CHECK = text("""
WITH a AS (
    SELECT code, bool_or(action = 'add') AS added, bool_or(action = 'delete') AS deleted,
           bool_or(action IN ('revise_from', 'revise_to')) AS revised,
           bool_or(billable) FILTER (WHERE action = 'add') AS billable_now
    FROM icd10cm_addenda WHERE release_id = :new_id GROUP BY code
), expected AS (
    SELECT code, CASE WHEN revised THEN 'redescribed'
                      WHEN added AND deleted THEN CASE WHEN billable_now THEN 'became_billable' ELSE 'became_header' END
                      WHEN added THEN 'added' ELSE 'deleted' END AS change
    FROM a
)
SELECT e.change, count(*) AS listed,
       array_agg(e.code ORDER BY e.code) FILTER (WHERE NOT EXISTS (
           SELECT 1 FROM release_change c WHERE c.change_set_id = :change_set_id AND c.item = e.code
           AND (c.change = e.change OR (e.change = 'redescribed' AND c.change = 'respelled')))) AS missing
FROM expected e GROUP BY e.change ORDER BY e.change
""")

_LABELS = text("SELECT (SELECT label FROM release WHERE id = :old_id), (SELECT label FROM release WHERE id = :new_id)")


def between(conn: Connection, change_set_id: int, old_id: int, new_id: int) -> list[str]:
    """Write the code changes from release old_id to new_id; return what was not compared and the addenda check."""
    ids = {"change_set_id": change_set_id, "old_id": old_id, "new_id": new_id}
    conn.execute(_BETWEEN, ids)
    conn.execute(_PLACEHOLDERS, ids)
    old_label, new_label = conn.execute(_LABELS, ids).one()
    notes = [f"seventh-character requirements not compared: {label} was loaded from its order file, which does not "
             "say which codes need one" for label in conn.execute(_UNKNOWN_SEVENTH, ids).scalars()]
    return notes + addenda_notes(conn, ids, old_label, new_label)


def addenda_notes(conn: Connection, ids: dict[str, int], old_label: str, new_label: str) -> list[str]:
    """Sentences comparing the newer release's CDC addenda (changes from the year before it) with these changes."""
    rows = conn.execute(_ADDENDA_CHECK, ids).all()
    if not rows:
        return []
    consecutive = _year(new_label) - _year(old_label) == 1
    scope = ("the same two years" if consecutive else
             f"FY{_year(new_label) - 1} → {new_label}, a narrower span than {old_label} → {new_label}")
    notes = []
    for change, listed, missing in rows:
        if not missing:
            notes.append(f"addenda agree: all {listed} {change} codes of the {new_label} addenda ({scope}) are here")
            continue
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        notes.append(f"addenda disagree: {len(missing)} of {listed} {change} codes of the {new_label} addenda "
                     f"({scope}) are not {change} here: {shown}")
    return notes


def _year(label: str) -> int:
    digits = "".join(ch for ch in label if ch.isdigit())
    return int(digits[:4]) if digits else 0
