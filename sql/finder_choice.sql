-- Stage 6 of the code finder (sql/finder.sql): choose and tier.

-- The 7th-character form to report for a candidate whose code needs one ([code, description, character, meaning]):
-- the first whose meaning is the encounter the term names ("first visit": initial), and of those the one whose
-- meaning holds the most of the term's lexemes (medrag_seventh_held: "open fracture ..., initial encounter" is B,
-- "initial encounter for open fracture type I or II", not A, "... for closed fracture"), else the Tabular's first (A,
-- initial encounter; 0, unspecified); NULL when the code was typed as it is or needs none.
DROP FUNCTION IF EXISTS medrag_seventh_form(jsonb, text);
CREATE OR REPLACE FUNCTION medrag_seventh_form(candidate jsonb, encounter text, lexemes text[] DEFAULT '{}')
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN (candidate ->> 'exact')::boolean
                  OR jsonb_typeof(candidate -> 'detail' -> 'seventh') IS DISTINCT FROM 'array'
                  OR jsonb_array_length(candidate -> 'detail' -> 'seventh') = 0 THEN NULL
                ELSE (SELECT f.value
                      FROM jsonb_array_elements(candidate -> 'detail' -> 'seventh') WITH ORDINALITY AS f(value, n)
                      ORDER BY encounter IS NOT NULL AND strpos(lower(f.value ->> 3), encounter) > 0 DESC,
                               cardinality(medrag_seventh_held(f.value ->> 3, lexemes)) DESC, f.n
                      LIMIT 1) END
$$;

-- The trace line saying which 7th character was added, why, and which others the code takes.
DROP FUNCTION IF EXISTS medrag_describe_seventh(jsonb, jsonb, text);
CREATE OR REPLACE FUNCTION medrag_describe_seventh(candidate jsonb, form jsonb, encounter text,
                                                   lexemes text[] DEFAULT '{}')
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT '7th character: ' || (candidate ->> 'code') || ' -> ' || (form ->> 0) || ' (' || (form ->> 2) || ' '
           || (form ->> 3)
           || CASE WHEN encounter IS NOT NULL AND strpos(lower(form ->> 3), encounter) > 0
                   THEN '; the term names the ' || encounter || ' encounter' ELSE '' END
           || CASE WHEN form <> medrag_seventh_form(candidate, encounter)
                   THEN '; its meaning holds the most of the term' ELSE '' END
           || coalesce('; also ' || (SELECT string_agg((f.value ->> 2) || ' ' || (f.value ->> 3), ', ' ORDER BY f.n)
                                     FROM jsonb_array_elements(candidate -> 'detail' -> 'seventh')
                                         WITH ORDINALITY AS f(value, n)
                                     WHERE f.value <> form), '') || ')'
$$;

-- The current LCDs listing each HCPCS code, with their contractors (v_lcd_hcpcs without the states it gathers).
CREATE OR REPLACE FUNCTION medrag_code_lcds(codes text[])
RETURNS TABLE (code text, lcd text, title text, contractors text[])
LANGUAGE sql STABLE
AS $$
    SELECT x.hcpc_code_id, 'L' || x.lcd_id,
           coalesce(max(l.title), max(doc.title), 'LCD L' || x.lcd_id),
           coalesce(array_agg(DISTINCT c.contractor_bus_name COLLATE "C" ORDER BY c.contractor_bus_name COLLATE "C")
                        FILTER (WHERE c.contractor_bus_name IS NOT NULL), '{}')
    FROM mcd_lcd_x_hcpc_code x
    JOIN release r ON r.id = x.release_id AND r.is_current
    LEFT JOIN mcd_lcd l ON l.release_id = x.release_id AND l.lcd_id = x.lcd_id AND l.lcd_version = x.lcd_version
    LEFT JOIN mcd_lcd_x_contractor lc ON lc.release_id = x.release_id AND lc.lcd_id = x.lcd_id
         AND lc.lcd_version = x.lcd_version
    LEFT JOIN mcd_contractor c ON c.release_id = lc.release_id AND c.contractor_id = lc.contractor_id
         AND c.contractor_type_id = lc.contractor_type_id AND c.contractor_version = lc.contractor_version
    LEFT JOIN LATERAL (
        SELECT d.title FROM document d WHERE d.source = 'lcd' AND d.key = 'L' || x.lcd_id AND d.is_current
        ORDER BY d.version DESC LIMIT 1
    ) doc ON true
    WHERE x.hcpc_code_id = ANY (codes)
    GROUP BY x.hcpc_code_id, x.lcd_id
    ORDER BY x.hcpc_code_id, x.lcd_id
$$;

-- Stage 6, choose and tier: each system's best codes (at most top, at or above min_score, a header left out under
-- its own code), merged by confidence; a code needing a 7th character reported in the form of the encounter the term
-- names (else the Tabular's first); what each shows (description, parent, LCDs listing a HCPCS code) read for the
-- chosen codes only. The finder's answer: {systems, encounter, classification, results, trace, timings} and, with
-- with_candidates, every scored candidate and its features.
CREATE OR REPLACE FUNCTION medrag_code_choice(state jsonb, with_candidates boolean DEFAULT false)
RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_column
DECLARE
    cfg constant jsonb := coalesce(state -> 'config', medrag_code_finder_config());  -- the analysis's settings
    top constant integer := (state ->> 'top')::int;
    started constant timestamptz := (state ->> 'started')::timestamptz;
    searched constant text[] := ARRAY(SELECT jsonb_array_elements_text(state -> 'searched'));
    releases constant jsonb := state -> 'releases';
    pool constant jsonb := state -> 'pool';
    cls constant jsonb := state -> 'classification';
    trace text[] := ARRAY(SELECT jsonb_array_elements_text(state -> 'trace'));
    timings jsonb := state -> 'timings';
    related_started constant timestamptz := clock_timestamp();
    -- what the term says is so, which picks a 7th character among those of its encounter
    affirmed constant text[] := ARRAY(SELECT DISTINCT l FROM medrag_term_concepts(state -> 'concepts') c,
                                                             unnest(c.lexemes) AS l
                                      WHERE NOT c.negated);
    chosen jsonb;
    output jsonb;
BEGIN
    SELECT coalesce(jsonb_agg(c.value ORDER BY (c.value ->> 'confidence')::float8 DESC, (c.value ->> 'score')::float8 DESC,
                              NOT (c.value ->> 'is_default')::boolean, c.value ->> 'code' COLLATE "C"), '[]')
    INTO chosen
    FROM unnest(searched) AS s(system)
    CROSS JOIN LATERAL (SELECT r AS value FROM medrag_code_ranked(pool, cfg, s.system) r
                        LIMIT top) c;
    IF jsonb_array_length(chosen) = 0
       AND medrag_words_of(state ->> 'term_text') <@ ARRAY(SELECT jsonb_array_elements_text(state -> 'known')) THEN
        -- no code holds enough of the term: its best partial matches, said to be guesses, rather than nothing; not
        -- for a term with a word nobody knows ("xyzzy plugh"), which may be what the term is about
        SELECT coalesce(jsonb_agg(c.value || jsonb_build_object('tier', cfg ->> 'guess_tier')
                                  ORDER BY (c.value ->> 'coverage')::float8 DESC, (c.value ->> 'guess')::float8 DESC,
                                           s.n, c.n), '[]')
        INTO chosen
        FROM unnest(searched) WITH ORDINALITY AS s(system, n)
        CROSS JOIN LATERAL (SELECT g.value, g.n FROM medrag_code_guesses(pool, s.system) WITH ORDINALITY AS g(value, n)
                            ORDER BY g.n LIMIT top) c;
        IF jsonb_array_length(chosen) > 0 THEN
            trace := trace || format('no code holds enough of the term: %s guesses, those holding the most of it first',
                                     jsonb_array_length(chosen));
        END IF;
    END IF;
    -- what the chosen codes show: description, parent, 7th-character forms
    SELECT coalesce(jsonb_agg(c.value || jsonb_build_object('detail', c.value -> 'detail'
                                                                      || (to_jsonb(d) - 'system' - 'code' - 'lexemes'))
                              ORDER BY c.n), '[]')
    INTO chosen
    FROM jsonb_array_elements(chosen) WITH ORDINALITY AS c(value, n)
    LEFT JOIN (SELECT s.system, x.*
               FROM unnest(searched) AS s(system)
               -- one read per system: a call per code cost a third of a millisecond each
               CROSS JOIN LATERAL medrag_code_details(
                   (releases -> s.system ->> 'id')::int,
                   ARRAY(SELECT ch ->> 'code' FROM jsonb_array_elements(chosen) ch WHERE ch ->> 'system' = s.system),
                   ARRAY(SELECT jsonb_array_elements_text(cfg -> 'all_kinds' -> s.system))) x) d
        ON d.system = c.value ->> 'system' AND d.code = c.value ->> 'code';
    SELECT jsonb_build_object(
        'systems', to_jsonb(searched), 'encounter', cls -> 'encounter', 'classification', cls,
        'results', coalesce(jsonb_agg(jsonb_build_object(
            'system', c.value ->> 'system', 'code', coalesce(f.form ->> 0, c.value ->> 'code'), 'candidate', c.value ->> 'code',
            'display', coalesce(f.form ->> 1, c.value -> 'detail' ->> 'display', c.value ->> 'code'),
            'confidence', (c.value ->> 'confidence')::float8, 'tier', coalesce(c.value ->> 'tier', ''),
            'billable', CASE WHEN f.form IS NOT NULL THEN 'true'::jsonb
                             WHEN c.value ->> 'system' = 'ICD-10-CM' THEN (c.value -> 'detail' -> 'billable') END,
            'related', CASE WHEN f.form IS NOT NULL
                            THEN jsonb_build_array(jsonb_build_object('source', 'icd10cm', 'key', c.value ->> 'code',
                                                                      'title', c.value -> 'detail' ->> 'display'))
                            ELSE '[]' END
                       || CASE WHEN c.value ->> 'system' = 'ICD-10-CM' AND c.value -> 'detail' ->> 'parent_code' IS NOT NULL
                               THEN jsonb_build_array(jsonb_build_object(
                                   'source', 'icd10cm', 'key', c.value -> 'detail' ->> 'parent_code',
                                   'title', coalesce(c.value -> 'detail' ->> 'parent_display',
                                                     c.value -> 'detail' ->> 'parent_code')))
                               ELSE '[]' END
                       || coalesce(lcds.listed, '[]'))
            ORDER BY c.n), '[]'),
        'seventh', coalesce(jsonb_agg(medrag_describe_seventh(c.value, f.form, cls ->> 'encounter', affirmed)
                                      ORDER BY c.n)
                            FILTER (WHERE f.form IS NOT NULL), '[]'))
    INTO output
    FROM jsonb_array_elements(chosen) WITH ORDINALITY AS c(value, n)
    -- OFFSET 0: one form per code; a sub-select the planner pulls up is computed again at each of its uses
    CROSS JOIN LATERAL (SELECT medrag_seventh_form(c.value, cls ->> 'encounter', affirmed) AS form OFFSET 0) f
    LEFT JOIN LATERAL (
        SELECT jsonb_agg(jsonb_build_object('source', 'lcd', 'key', l.lcd, 'title', l.title,
                                            'contractors', to_jsonb(l.contractors))
                         ORDER BY substring(l.lcd FROM '[0-9]+')::int) AS listed
        FROM medrag_code_lcds(ARRAY[c.value ->> 'code']) l
        WHERE c.value ->> 'system' = 'HCPCS' AND c.value -> 'detail' ->> 'kind' = 'procedure') lcds ON true;
    trace := trace || ARRAY(SELECT jsonb_array_elements_text(output -> 'seventh'));
    timings := timings || jsonb_build_object('related', medrag_elapsed_ms(related_started),
                                             'total', medrag_elapsed_ms(started));
    trace := trace || format('consolidate: %s candidates -> %s codes (top %s per system, tiers %s) in %s ms',
                             jsonb_array_length(pool),
                             jsonb_array_length(output -> 'results'), top,
                             coalesce((SELECT string_agg(t.tier || ' ' || t.count, ', ' ORDER BY t.first_at)
                                       FROM (SELECT r.value ->> 'tier' AS tier, count(*) AS count, min(r.n) AS first_at
                                             FROM jsonb_array_elements(output -> 'results') WITH ORDINALITY AS r(value, n)
                                             GROUP BY 1) t), 'none'),
                             medrag_fixed((timings ->> 'total')::float8, 0));
    -- every scored candidate only when asked (the calibration's fit reads them): building and sending them is
    -- about 3 ms of a call that lists a handful of codes
    RETURN output - 'seventh' || jsonb_build_object('trace', to_jsonb(trace), 'timings', timings)
        || CASE WHEN with_candidates THEN jsonb_build_object(
        'candidates', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                           'system', p ->> 'system', 'code', p ->> 'code',
                           'exact', p -> 'exact', 'score', p -> 'score', 'behind', p -> 'behind',
                           'confidence', p -> 'confidence', 'tier', p -> 'tier', 'features', p -> 'features',
                           'legs', p -> 'legs') ORDER BY s.n, (p ->> 'ord')::float8), '[]')
                       FROM unnest(searched) WITH ORDINALITY AS s(system, n)
                       JOIN jsonb_array_elements(pool) p ON p ->> 'system' = s.system)) ELSE '{}' END;
END
$$;
