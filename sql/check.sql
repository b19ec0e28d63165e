-- The claim-line check: is a line valid on its date of service, and which coverage rules apply to it. One statement
-- over all the lines at once, one CTE per rule; `medrag check`, POST /check and psql all call medrag_check_lines.
-- A repeatable script (every statement CREATE OR REPLACE): medrag.schema.migrate runs it whenever it changes.
-- docs/check.md says what each rule reads and what each verdict means.

-- The dates a release's data speaks for: a HCPCS release its year ('2019') or quarter ('2025Q1'), an ICD-10-CM
-- release its fiscal year, October 1 to September 30 ('FY2026': 2025-10-01 to 2026-09-30); NULL for another label.
CREATE OR REPLACE FUNCTION medrag_release_period(source text, label text)
RETURNS daterange
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN source = 'icd10cm' AND label ~ '^FY[0-9]{4}$'
            THEN daterange(make_date(substr(label, 3, 4)::int - 1, 10, 1), make_date(substr(label, 3, 4)::int, 10, 1))
        WHEN source <> 'icd10cm' AND label ~ '^[0-9]{4}Q[1-4]$'
            THEN daterange(make_date(left(label, 4)::int, substr(label, 6, 1)::int * 3 - 2, 1),
                           (make_date(left(label, 4)::int, substr(label, 6, 1)::int * 3 - 2, 1)
                            + interval '3 months')::date)
        WHEN source <> 'icd10cm' AND label ~ '^[0-9]{4}$'
            THEN daterange(make_date(label::int, 1, 1), make_date(label::int + 1, 1, 1))
    END
$$;

-- A period as people write it: '2025-01-01 to 2025-03-31'.
CREATE OR REPLACE FUNCTION medrag_period_text(period daterange)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT lower(period)::text || ' to ' || (upper(period) - 1)::text
$$;

-- The loaded releases of a source with the dates each speaks for, oldest first: what a 'not checked' names.
CREATE OR REPLACE FUNCTION medrag_loaded_periods(source text)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT coalesce(string_agg(r.label || ' (' || coalesce(medrag_period_text(medrag_release_period(r.source, r.label)),
                                                           'no period') || ')', ', '
                               ORDER BY lower(medrag_release_period(r.source, r.label)), r.label), 'none')
    FROM medrag_usable_release r WHERE r.source = medrag_loaded_periods.source
$$;

-- A list a claim line gives as a JSON array or as one string separated by ';', ',' or spaces, upper-cased.
CREATE OR REPLACE FUNCTION medrag_check_list(value jsonb)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(array_agg(upper(item) ORDER BY n) FILTER (WHERE item <> ''), '{}')
    FROM (SELECT btrim(part) AS item, n
          FROM (SELECT CASE jsonb_typeof(value)
                           WHEN 'array' THEN ARRAY(SELECT jsonb_array_elements_text(value))
                           WHEN 'string' THEN regexp_split_to_array(value #>> '{}', '[;,[:space:]]+')
                           ELSE '{}'::text[] END AS parts) p,
               unnest(p.parts) WITH ORDINALITY AS x(part, n)) items
$$;

-- Every claim line's findings. lines is a JSON array of objects: line_id, dos (YYYY-MM-DD), hcpcs, modifiers, dx
-- (each list a JSON array or a string separated by ';', ',' or spaces) and state; a line with a 'problem' (a file
-- line that could not be read) is an 'input' error. Returns a JSON array, a line per
-- line in order: the line as read and its findings, each {rule, verdict: ok | error | warning | not checked,
-- message, basis: the release row it rests on, candidates (a terminated code's)}.
CREATE OR REPLACE FUNCTION medrag_check_lines(lines jsonb)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
WITH raw AS (
    SELECT x.n::int AS line_no, x.line
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(lines) = 'array' THEN lines ELSE '[]'::jsonb END)
         WITH ORDINALITY AS x(line, n)
),
line AS (
    SELECT r.line_no,
           coalesce(nullif(btrim(r.line ->> 'line_id'), ''), r.line_no::text) AS line_id,
           nullif(btrim(r.line ->> 'dos'), '') AS dos_text,
           upper(nullif(btrim(r.line ->> 'hcpcs'), '')) AS hcpcs,
           medrag_check_list(r.line -> 'modifiers') AS modifiers,
           medrag_check_list(r.line -> 'dx') AS dx,
           upper(nullif(btrim(r.line ->> 'state'), '')) AS state,
           r.line ->> 'problem' AS problem,
           CASE WHEN nullif(btrim(r.line ->> 'dos'), '') ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'
                     AND pg_input_is_valid(btrim(r.line ->> 'dos'), 'date')
                THEN btrim(r.line ->> 'dos')::date END AS dos
    FROM raw r
),
-- 0. a line the reader could not take as a claim line (its problem, from medrag.check.lines)
input_finding AS (
    SELECT l.line_no, -1 AS ord, 'input' AS rule, 'error' AS verdict, l.problem AS message, NULL::jsonb AS basis,
           NULL::jsonb AS candidates
    FROM line l WHERE l.problem IS NOT NULL
),
-- 1. the date of service itself
dos_finding AS (
    SELECT l.line_no, 0 AS ord, 'date_of_service' AS rule,
           CASE WHEN l.dos IS NULL THEN 'error' ELSE 'ok' END AS verdict,
           CASE WHEN l.dos_text IS NULL THEN 'no date of service given'
                WHEN l.dos IS NULL THEN 'date of service ' || quote_literal(l.dos_text) || ' is not a date (YYYY-MM-DD)'
                ELSE 'date of service ' || l.dos END AS message,
           NULL::jsonb AS basis, NULL::jsonb AS candidates
    FROM line l WHERE l.problem IS NULL
),
-- the newest loaded HCPCS release whose period holds the date of service
hcpcs_release AS (
    SELECT l.line_no, r.id, r.label, medrag_release_period('hcpcs', r.label) AS period
    FROM line l
    CROSS JOIN LATERAL (
        SELECT r.id, r.label FROM medrag_usable_release r
        WHERE r.source = 'hcpcs' AND medrag_release_period('hcpcs', r.label) @> l.dos
        ORDER BY lower(medrag_release_period('hcpcs', r.label)) DESC LIMIT 1) r
    WHERE l.dos IS NOT NULL
),
-- 2. the HCPCS code and 3. each modifier: in the release for the date, added on or before it, not ended before it
hcpcs_item AS MATERIALIZED (
    SELECT l.line_no, i.kind, i.typed, i.ord, l.dos, hr.label, hr.period,
           CASE i.kind WHEN 'procedure' THEN i.typed ELSE 'modifier ' || i.typed END AS named,
           h.release_id, h.code, h.code_added_date, h.termination_date, h.short_description, h.long_description,
           h.cross_reference_codes, h.action_code
    FROM line l
    CROSS JOIN LATERAL (
        SELECT 'procedure' AS kind, l.hcpcs AS typed, 1 AS ord WHERE l.hcpcs IS NOT NULL
        UNION ALL
        SELECT 'modifier', x.code, 10 + x.n::int FROM unnest(l.modifiers) WITH ORDINALITY AS x(code, n)) i
    LEFT JOIN hcpcs_release hr ON hr.line_no = l.line_no
    LEFT JOIN hcpcs_code h ON h.release_id = hr.id AND h.code = i.typed AND h.kind = i.kind
),
hcpcs_finding AS (
    SELECT h.line_no, h.ord, CASE h.kind WHEN 'procedure' THEN 'hcpcs_valid' ELSE 'modifier_valid' END AS rule,
           CASE WHEN h.typed ~ CASE h.kind WHEN 'procedure' THEN '^[0-9]{4}[0-9A-Z]$' ELSE '^[0-9]{2}$' END
                    THEN 'not checked'
                WHEN h.typed !~ medrag_code_shape(CASE h.kind WHEN 'procedure' THEN 'hcpcs' ELSE 'modifier' END)
                    THEN 'error'
                WHEN h.dos IS NULL OR h.label IS NULL THEN 'not checked'
                WHEN h.code IS NULL OR h.code_added_date > h.dos OR h.termination_date < h.dos THEN 'error'
                ELSE 'ok' END AS verdict,
           CASE WHEN h.typed ~ CASE h.kind WHEN 'procedure' THEN '^[0-9]{4}[0-9A-Z]$' ELSE '^[0-9]{2}$' END
                    THEN 'not checked: ' || h.typed || ' is a CPT ' || CASE h.kind WHEN 'procedure' THEN 'code'
                         ELSE 'modifier' END || ' (HCPCS Level I), which the HCPCS Level II release does not hold'
                WHEN h.typed !~ medrag_code_shape(CASE h.kind WHEN 'procedure' THEN 'hcpcs' ELSE 'modifier' END)
                    THEN quote_literal(h.typed) || CASE h.kind
                         WHEN 'procedure' THEN ' is not a HCPCS Level II code (a letter A-V and four digits)'
                         ELSE ' is not a HCPCS modifier (two letters or digits)' END
                WHEN h.dos IS NULL THEN 'not checked: no valid date of service'
                WHEN h.label IS NULL
                    THEN 'not checked: no loaded HCPCS release covers ' || h.dos || '; loaded: '
                         || medrag_loaded_periods('hcpcs')
                WHEN h.code IS NULL THEN h.named || ' is not in HCPCS ' || h.label
                WHEN h.code_added_date > h.dos
                    THEN h.named || ' begins ' || h.code_added_date || ', after the date of service'
                WHEN h.termination_date < h.dos
                    THEN h.named || ' ended ' || h.termination_date || ', before the date of service'
                ELSE h.named || ' is valid on ' || h.dos || ' (' || coalesce(h.short_description, '') || ')' END,
           CASE WHEN h.label IS NOT NULL THEN jsonb_build_object(
               'source', 'hcpcs', 'release', h.label, 'code', h.code, 'period', medrag_period_text(h.period),
               'effective', h.code_added_date, 'termination', h.termination_date, 'action', h.action_code) END,
           CASE WHEN h.kind = 'procedure' AND h.termination_date < h.dos THEN (
               -- codes the same release added near the end, for the same drug or item: they hold a share of the
               -- ended description's words, each word weighted by how rare it is among the release's descriptions
               -- (J2919 holds "methylprednisolone" and "succinate", not just "injection"); a replacement only where
               -- the ended code's record cross-references it. The share and the days: medrag_settings().
               WITH ended AS MATERIALIZED (
                   SELECT w.word, ln(total.n::float8 / cw.ndoc) AS weight
                   FROM (SELECT DISTINCT unnest(medrag_words_of(h.long_description)) AS word) w
                   JOIN medrag_code_word cw ON cw.release_id = h.release_id AND cw.word = w.word
                   CROSS JOIN (SELECT count(*) AS n FROM hcpcs_code t WHERE t.release_id = h.release_id) total
               ),
               nearby AS MATERIALIZED (
                   SELECT c.code, c.long_description, c.code_added_date,
                          c.code = ANY (coalesce(h.cross_reference_codes, '{}')) AS cross_referenced
                   FROM hcpcs_code c, medrag_settings() s
                   WHERE c.release_id = h.release_id AND c.kind = 'procedure' AND c.code <> h.code
                     AND (c.code = ANY (coalesce(h.cross_reference_codes, '{}'))
                          OR c.code_added_date BETWEEN h.termination_date - s.check_candidate_days
                                                   AND h.termination_date + s.check_candidate_days)
               ),
               shared AS (
                   SELECT c.code, sum(e.weight) AS weight
                   FROM nearby c
                   CROSS JOIN LATERAL (SELECT DISTINCT unnest(medrag_words_of(c.long_description)) AS word) w
                   JOIN ended e ON e.word = w.word
                   GROUP BY c.code
               )
               SELECT jsonb_agg(jsonb_build_object(
                          'code', c.code, 'description', c.long_description, 'effective', c.code_added_date,
                          'relation', CASE WHEN c.cross_referenced THEN 'replacement' ELSE 'candidate' END)
                                ORDER BY c.code)
               FROM nearby c LEFT JOIN shared s ON s.code = c.code, medrag_settings() settings
               WHERE c.cross_referenced
                  OR s.weight / nullif((SELECT sum(weight) FROM ended), 0) >= settings.check_candidate_share)
           END
    FROM hcpcs_item h
),
-- 4. each diagnosis: present and billable in the ICD-10-CM release of the date's fiscal year
dx AS (
    SELECT l.line_no, x.typed, x.n, l.dos, replace(x.typed, '.', '') AS bare,
           CASE WHEN length(replace(x.typed, '.', '')) > 3
                THEN left(replace(x.typed, '.', ''), 3) || '.' || substr(replace(x.typed, '.', ''), 4)
                ELSE replace(x.typed, '.', '') END AS dotted,
           'FY' || extract(year FROM l.dos + interval '3 months')::int AS fiscal_year
    FROM line l
    CROSS JOIN LATERAL unnest(l.dx) WITH ORDINALITY AS x(typed, n)
),
dx_row AS MATERIALIZED (
    SELECT d.*, r.id AS release_id, r.label, medrag_release_period('icd10cm', d.fiscal_year) AS period,
           c.code, c.billable, c.requires_seventh_character, c.description, kids.children, kids.sevenths,
           -- the code a typed code without its X placeholders stands for (T36.01A: T36.0X1A)
           (SELECT min(k.code) FROM generate_series(4, greatest(length(d.bare), 4)) AS p
            CROSS JOIN LATERAL (SELECT left(d.bare, p - 1) || repeat('X', 7 - length(d.bare)) || substr(d.bare, p)
                                AS v) pv
            JOIN icd10cm_code k ON k.release_id = r.id AND k.billable AND k.code = left(pv.v, 3) || '.' || substr(pv.v, 4)
            WHERE c.code IS NULL AND length(d.bare) BETWEEN 4 AND 6) AS with_placeholder,
           -- the loaded releases that hold the code, when the year's does not (added or deleted since)
           (SELECT string_agg(o.label, ', ' ORDER BY o.label) FROM icd10cm_code oc
            JOIN medrag_usable_release o ON o.id = oc.release_id
            WHERE c.code IS NULL AND oc.code = d.dotted AND o.id <> r.id) AS elsewhere
    FROM dx d
    LEFT JOIN medrag_usable_release r ON r.source = 'icd10cm' AND r.label = d.fiscal_year
    LEFT JOIN icd10cm_code c ON c.release_id = r.id AND c.code = d.dotted
    -- a header's codes one level down (billable ones alone when it has any), and the 7-character codes a code
    -- shorter than 7 takes (X placeholders filled in): its children in the tabular
    LEFT JOIN LATERAL (
        SELECT coalesce(string_agg(k.code, ', ' ORDER BY k.code)
                            FILTER (WHERE k.billable AND length(replace(k.code, '.', '')) < 7),
                        string_agg(k.code, ', ' ORDER BY k.code) FILTER (WHERE length(replace(k.code, '.', '')) < 7))
                   AS children,
               string_agg(k.code, ', ' ORDER BY k.code)
                   FILTER (WHERE k.billable AND length(replace(k.code, '.', '')) = 7) AS sevenths
        FROM icd10cm_code k
        WHERE c.code IS NOT NULL AND NOT c.billable AND k.release_id = r.id AND k.parent_code = c.code) kids ON true
),
dx_finding AS (
    SELECT x.line_no, 100 + x.n::int AS ord, 'icd10cm_valid' AS rule,
           CASE WHEN x.typed !~ medrag_code_shape('icd10cm') THEN 'error'
                WHEN x.dos IS NULL OR x.label IS NULL THEN 'not checked'
                WHEN x.code IS NOT NULL AND x.billable THEN 'ok'
                ELSE 'error' END,
           CASE WHEN x.typed !~ medrag_code_shape('icd10cm')
                    THEN quote_literal(x.typed) || ' is not an ICD-10-CM code'
                WHEN x.dos IS NULL THEN 'not checked: no valid date of service'
                WHEN x.label IS NULL
                    THEN 'not checked: no ICD-10-CM ' || x.fiscal_year || ' release is loaded ('
                         || medrag_period_text(medrag_release_period('icd10cm', x.fiscal_year)) || '); loaded: '
                         || medrag_loaded_periods('icd10cm')
                WHEN x.code IS NOT NULL AND x.billable THEN x.code || ' is billable in ' || x.label || ' ('
                     || coalesce(x.description, '') || ')'
                WHEN x.sevenths IS NOT NULL AND x.children IS NULL
                    THEN x.code || ' needs a 7th character' || CASE WHEN length(x.bare) < 6
                         THEN ', after X placeholders' ELSE '' END || ', in ' || x.label || ': ' || x.sevenths
                WHEN x.code IS NOT NULL
                    THEN x.code || ' is a header in ' || x.label || ', not billable; code '
                         || coalesce('one of the codes below it: ' || x.children, 'a code below it')
                WHEN x.with_placeholder IS NOT NULL
                    THEN x.typed || ' lacks its X placeholder: ' || x.with_placeholder || ' in ' || x.label
                WHEN x.elsewhere IS NOT NULL
                    THEN x.dotted || ' is not in ICD-10-CM ' || x.label || ' (it is in ' || x.elsewhere || ')'
                ELSE x.dotted || ' is not in ICD-10-CM ' || x.label END,
           CASE WHEN x.label IS NOT NULL THEN jsonb_build_object(
               'source', 'icd10cm', 'release', x.label, 'code', x.code, 'period', medrag_period_text(x.period),
               'billable', x.billable) END,
           NULL::jsonb
    FROM dx_row x
),
-- 5. coverage to review: the LCDs that list the code, of a contractor serving the state
lcd_finding AS (
    SELECT l.line_no, 200 AS ord, 'lcd_coverage' AS rule,
           CASE WHEN l.state IS NULL THEN 'not checked' WHEN NOT known.state THEN 'error'
                WHEN lcd.lcd IS NULL THEN 'ok' ELSE 'warning' END,
           CASE WHEN l.state IS NULL THEN 'not checked: no state given'
                WHEN NOT known.state THEN 'unknown state ' || quote_literal(l.state) || ': the current MCD release '
                     || 'lists ' || (SELECT string_agg(DISTINCT s.state_abbrev, ', ') FROM mcd_state_lookup s
                                     JOIN medrag_usable_release r ON r.id = s.release_id AND r.is_current)
                WHEN lcd.lcd IS NULL THEN 'no current LCD of a contractor serving ' || l.state || ' lists ' || l.hcpcs
                ELSE 'review LCD ' || lcd.lcd || coalesce(' (' || lcd.lcd_title || ')', '') || ': it lists '
                     || l.hcpcs || ' and ' || array_to_string(lcd.contractors, ', ') || ' serves ' || l.state END,
           CASE WHEN lcd.lcd IS NOT NULL THEN jsonb_build_object(
               'source', 'mcd', 'release', lcd.release, 'id', lcd.lcd, 'title', lcd.lcd_title,
               'url', 'https://www.cms.gov/medicare-coverage-database/view/lcd.aspx?LCDId=' || lcd.lcd_id) END,
           NULL::jsonb
    FROM line l
    CROSS JOIN LATERAL (
        SELECT EXISTS (SELECT 1 FROM mcd_state_lookup s JOIN medrag_usable_release r ON r.id = s.release_id
                       AND r.is_current WHERE s.state_abbrev = l.state) AS state) known
    LEFT JOIN LATERAL (
        SELECT v.lcd, substr(v.lcd, 2) AS lcd_id, nullif(v.lcd_title, '') AS lcd_title, v.contractors, v.release
        FROM v_lcd_hcpcs v WHERE v.hcpcs_code = l.hcpcs AND l.state = ANY (v.states)) lcd ON true
    WHERE l.hcpcs IS NOT NULL
),
-- 6. the current NCDs whose text names the code
ncd_finding AS (
    SELECT l.line_no, 300 AS ord, 'ncd_coverage' AS rule,
           CASE WHEN n.key IS NULL THEN 'ok' ELSE 'warning' END,
           CASE WHEN n.key IS NULL THEN 'no current NCD names ' || l.hcpcs
                ELSE 'review NCD ' || n.key || ' (' || n.title || '): it names ' || l.hcpcs END,
           CASE WHEN n.key IS NOT NULL THEN jsonb_build_object(
               'source', 'mcd', 'release', n.release, 'id', 'NCD ' || n.key, 'title', n.title, 'url', n.url) END,
           NULL::jsonb
    FROM line l
    LEFT JOIN LATERAL (
        SELECT DISTINCT d.key, d.title, d.url, rel.label AS release
        FROM chunk c JOIN document d ON d.id = c.document_id JOIN release rel ON rel.id = d.release_id
        WHERE d.source = 'ncd' AND d.is_current AND c.tsv @@ plainto_tsquery('english', l.hcpcs)
          AND c.text ~ ('(^|[^A-Za-z0-9])' || l.hcpcs || '([^A-Za-z0-9]|$)')) n ON true
    WHERE l.hcpcs IS NOT NULL AND l.hcpcs ~ medrag_code_shape('hcpcs')
),
-- 7. the diagnoses support the procedure: the covered ICD-10-CM codes of the Articles that list the HCPCS code
article AS (
    SELECT a.release_id, a.article_id, a.article_version, a.hcpc_code_id, a.hcpc_code_group, r.label AS release
    FROM mcd_article_x_hcpc_code a JOIN medrag_usable_release r ON r.id = a.release_id AND r.is_current
),
article_loaded AS (
    SELECT EXISTS (SELECT 1 FROM mcd_article_x_icd10_covered v
                   JOIN medrag_usable_release r ON r.id = v.release_id AND r.is_current) AS loaded
),
article_finding AS (
    SELECT l.line_no, 400 AS ord, 'article_dx_support' AS rule,
           CASE WHEN NOT al.loaded OR a.article_id IS NULL OR l.dos IS NULL THEN 'not checked'
                WHEN cardinality(l.dx) = 0 THEN 'error'
                WHEN covered.codes IS NOT NULL THEN 'ok' ELSE 'error' END,
           CASE WHEN NOT al.loaded THEN 'not checked: no Article data loaded'
                WHEN a.article_id IS NULL THEN 'not checked: no loaded Article lists ' || l.hcpcs
                WHEN l.dos IS NULL THEN 'not checked: no valid date of service'
                WHEN cardinality(l.dx) = 0 THEN 'Article A' || a.article_id || ' covers ' || l.hcpcs
                     || ' for listed diagnoses only, and the line gives none'
                WHEN covered.codes IS NOT NULL THEN 'Article A' || a.article_id || ' covers ' || l.hcpcs || ' for '
                     || covered.codes
                ELSE 'no diagnosis of the line is among those Article A' || a.article_id || ' covers for '
                     || l.hcpcs END,
           CASE WHEN a.article_id IS NOT NULL THEN jsonb_build_object(
               'source', 'mcd', 'release', a.release, 'id', 'A' || a.article_id, 'group', a.hcpc_code_group,
               'url', 'https://www.cms.gov/medicare-coverage-database/view/article.aspx?articleId=' || a.article_id)
           END,
           NULL::jsonb
    FROM line l
    CROSS JOIN article_loaded al
    LEFT JOIN article a ON al.loaded AND a.hcpc_code_id = l.hcpcs
    LEFT JOIN LATERAL (
        SELECT string_agg(DISTINCT v.icd10_code_id, ', ') AS codes
        FROM mcd_article_x_icd10_covered v
        WHERE v.release_id = a.release_id AND v.article_id = a.article_id AND v.article_version = a.article_version
          AND v.icd10_covered_group = a.hcpc_code_group
          AND replace(upper(v.icd10_code_id), '.', '') = ANY (
              ARRAY(SELECT replace(d, '.', '') FROM unnest(l.dx) AS d))) covered ON true
    WHERE l.hcpcs IS NOT NULL
),
finding AS (
    SELECT * FROM input_finding UNION ALL SELECT * FROM dos_finding UNION ALL SELECT * FROM hcpcs_finding
    UNION ALL SELECT * FROM dx_finding UNION ALL SELECT * FROM lcd_finding UNION ALL SELECT * FROM ncd_finding
    UNION ALL SELECT * FROM article_finding
),
per_line AS (
    SELECT f.line_no, count(*) FILTER (WHERE f.verdict = 'error') AS errors,
           jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
               'rule', f.rule, 'verdict', f.verdict, 'message', f.message, 'basis', f.basis,
               'candidates', f.candidates)) ORDER BY f.ord, f.message) AS findings
    FROM finding f GROUP BY f.line_no
)
SELECT coalesce(jsonb_agg(jsonb_build_object(
           'line_no', l.line_no, 'line_id', l.line_id, 'dos', l.dos_text, 'hcpcs', l.hcpcs,
           'modifiers', to_jsonb(l.modifiers), 'dx', to_jsonb(l.dx), 'state', l.state,
           'errors', coalesce(p.errors, 0), 'findings', coalesce(p.findings, '[]'::jsonb)) ORDER BY l.line_no),
           '[]'::jsonb)
FROM line l LEFT JOIN per_line p ON p.line_no = l.line_no
$$;
