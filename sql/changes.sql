-- What each release changed (release_change_set, release_change: written by the refresh, medrag.changes.compute),
-- for analysts and for a coder's code list. A repeatable script.

-- Every change with its source and the labels of the two releases (from_label NULL: the export dates it itself).
CREATE OR REPLACE VIEW v_release_changes AS
SELECT c.id AS change_id, s.id AS change_set_id, s.source, f.label AS from_label, t.label AS to_label,
       c.item_kind, c.item, c.change, c.field, c.old_value, c.new_value, c.effective_date, c.title, c.codes,
       c.detail
FROM release_change c
JOIN release_change_set s ON s.id = c.change_set_id
JOIN release t ON t.id = s.to_release_id
LEFT JOIN release f ON f.id = s.from_release_id;

-- The ways a code may be written in the tables: upper case, no spaces, the dot dropped, and (four characters or
-- more) the dot after the third, as ICD-10-CM writes it. 'm5450', 'M54.50' -> {M5450, M54.50}.
CREATE OR REPLACE FUNCTION medrag_code_spellings(code text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN bare = '' THEN '{}'::text[]
                WHEN length(bare) > 3 THEN ARRAY[bare, left(bare, 3) || '.' || substr(bare, 4)]
                ELSE ARRAY[bare] END
    FROM (SELECT upper(regexp_replace(coalesce(code, ''), '[[:space:].]', '', 'g')) AS bare) b
$$;

-- The changes of the given change sets that touch a coder's codes, and how: 'code' (the code itself changed),
-- 'parent' (an ICD-10-CM header above it changed), 'child' (a code under it was added, deleted or changed),
-- 'listed' (a determination or manual section that names it changed, or an LCD added or dropped it).
CREATE OR REPLACE FUNCTION medrag_changes_for_codes(wanted text[], change_set_ids integer[])
RETURNS TABLE (change_id bigint, your_code text, relation text)
LANGUAGE sql STABLE
AS $$
    -- Set work throughout: every asked spelling is hashed against every code the changes touch, never looked up
    -- one by one (a thousand-code list costs one pass over the change sets).
    WITH asked AS (
        SELECT DISTINCT btrim(w) AS your_code, s AS spelling
        FROM unnest(wanted) AS w, unnest(medrag_code_spellings(w)) AS s
        WHERE btrim(w) <> ''
    ), touched AS (
        SELECT c.id, c.item_kind, c.item, code
        FROM release_change c, unnest(c.codes) AS code
        WHERE c.change_set_id = ANY (change_set_ids)
    ), icd AS (
        SELECT c.id, c.item, c.detail ->> 'parent' AS parent
        FROM release_change c
        WHERE c.change_set_id = ANY (change_set_ids) AND c.item_kind = 'icd10cm'
    ), releases AS (
        SELECT from_release_id AS id FROM release_change_set WHERE id = ANY (change_set_ids)
        UNION SELECT to_release_id FROM release_change_set WHERE id = ANY (change_set_ids)
    ), ancestors AS (
        -- each asked ICD-10-CM code's headers in the releases the sets compare
        WITH RECURSIVE up (your_code, release_id, code, parent_code) AS (
            SELECT a.your_code, c.release_id, c.code, c.parent_code
            FROM asked a JOIN icd10cm_code c ON c.code = a.spelling AND c.release_id IN (SELECT id FROM releases)
            UNION
            SELECT up.your_code, c.release_id, c.code, c.parent_code
            FROM up JOIN icd10cm_code c ON c.release_id = up.release_id AND c.code = up.parent_code
        )
        SELECT DISTINCT up.your_code, up.code FROM up
        WHERE NOT EXISTS (SELECT 1 FROM asked a WHERE a.your_code = up.your_code AND a.spelling = up.code)
    )
    SELECT t.id, a.your_code,
           CASE WHEN t.item_kind IN ('hcpcs', 'icd10cm') AND t.item = a.spelling THEN 'code' ELSE 'listed' END
    FROM asked a JOIN touched t ON t.code = a.spelling
    UNION
    SELECT i.id, an.your_code, 'parent' FROM ancestors an JOIN icd i ON i.item = an.code
    UNION
    SELECT i.id, a.your_code, 'child' FROM asked a JOIN icd i ON i.parent = a.spelling
$$;
