"""HCPCS Level II changes between two releases: codes added, removed, terminated, re-described, and the coverage,
pricing and BETOS fields of the record layout that changed."""

from __future__ import annotations

from sqlalchemy import Connection, text

FORMAT = 1  # raised whenever the rows below are computed differently: stored change sets are then recomputed

# One row per (code, change) that applies; a code re-described in both descriptions gets a row per field.
_BETWEEN = text("""
INSERT INTO release_change (change_set_id, item_kind, item, change, field, old_value, new_value, effective_date,
                            title, codes, detail)
SELECT :change_set_id, 'hcpcs', coalesce(n.code, o.code), c.change, c.field, c.old_value, c.new_value,
       c.effective_date, coalesce(n.long_description, o.long_description), ARRAY[coalesce(n.code, o.code)],
       jsonb_build_object('kind', coalesce(n.kind, o.kind), 'action_code', n.action_code)
FROM (SELECT * FROM hcpcs_code WHERE release_id = :old_id) o
FULL JOIN (SELECT * FROM hcpcs_code WHERE release_id = :new_id) n ON n.kind = o.kind AND n.code = o.code
CROSS JOIN LATERAL (VALUES
    ('added', NULL, NULL, n.short_description, coalesce(n.code_added_date, n.action_effective_date),
     o.code IS NULL),
    ('removed', NULL, o.short_description, NULL, o.termination_date, n.code IS NULL),
    ('terminated', 'termination_date', o.termination_date::text, n.termination_date::text, n.termination_date,
     n.termination_date IS NOT NULL AND (o.code IS NULL OR o.termination_date IS DISTINCT FROM n.termination_date)),
    ('redescribed', 'long_description', o.long_description, n.long_description, n.action_effective_date,
     o.long_description IS DISTINCT FROM n.long_description),
    ('redescribed', 'short_description', o.short_description, n.short_description, n.action_effective_date,
     o.short_description IS DISTINCT FROM n.short_description),
    ('coverage_changed', 'coverage_code', o.coverage_code, n.coverage_code, n.action_effective_date,
     o.coverage_code IS DISTINCT FROM n.coverage_code),
    ('pricing_changed', 'pricing_indicator_codes', array_to_string(o.pricing_indicator_codes, ' '),
     array_to_string(n.pricing_indicator_codes, ' '), n.action_effective_date,
     o.pricing_indicator_codes IS DISTINCT FROM n.pricing_indicator_codes),
    ('betos_changed', 'betos_code', o.betos_code, n.betos_code, n.action_effective_date,
     o.betos_code IS DISTINCT FROM n.betos_code)
) AS c(change, field, old_value, new_value, effective_date, applies)
WHERE c.applies AND (c.change IN ('added', 'removed', 'terminated') OR (o.code IS NOT NULL AND n.code IS NOT NULL))
""")


def between(conn: Connection, change_set_id: int, old_id: int, new_id: int) -> list[str]:
    """Write the code changes from release old_id to new_id; HCPCS needs no notes."""
    conn.execute(_BETWEEN, {"change_set_id": change_set_id, "old_id": old_id, "new_id": new_id})
    return []
