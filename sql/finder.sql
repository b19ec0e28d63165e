-- The code finder (medrag_find_codes): a term in, ICD-10-CM and HCPCS codes out, with confidence, tier and the
-- trace of how they were found. `medrag codes`, the API's /codes and the code slots of medrag_search all call it, so
-- there is one code ranking whichever door a question comes in by. The steps (docs/codes.md):
--   1. the term's analysis: medrag_classify_code_term and medrag_code_concepts (generated.sql);
--   2. rounds of lookups (medrag_code_*_leg in codes.sql), each code found once and read once;
--   3. scoring of the pool after each round (medrag_score_codes in codes.sql);
--   4. reflection: broaden a weak system (synonyms, spelling, qualifiers left out) or narrow a header to its billable
--      codes, at most medrag_code_finder_settings() ->> 'max_rounds' rounds;
--   5. the choice: each system's best codes, a calibrated confidence and a tier, the 7th character a code needs.
-- The numbers these steps use are named in medrag/codes/ (finder.py, consolidate.py, plan.py, terms.py) and
-- rendered into generated.sql as medrag_code_finder_settings().
--
-- The pool is kept as jsonb between the statements of one call: `best` holds each lookup's best hit per code
-- (system|code|leg -> hit), `details` each code read (system|code -> its details, or null where the release lacks
-- it), `scores` each candidate's features.

-- A number with a fixed count of decimals, as the trace prints it.
CREATE OR REPLACE FUNCTION medrag_fixed(x double precision, places integer)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT round(x::numeric, places)::text
$$;

-- Milliseconds since a moment, as the timings and the trace count them.
CREATE OR REPLACE FUNCTION medrag_elapsed_ms(since timestamptz)
RETURNS double precision
LANGUAGE sql VOLATILE
AS $$
    SELECT extract(epoch FROM clock_timestamp() - since)::float8 * 1000
$$;

-- A share (0-1) as the trace prints a percentage.
CREATE OR REPLACE FUNCTION medrag_percent(share double precision)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT round((share * 100)::numeric)::text
$$;

-- What medrag_find_codes works by, as one jsonb: its names (medrag_code_finder_names) and every number
-- (medrag_settings, each this session's override or its value).
CREATE OR REPLACE FUNCTION medrag_code_finder_config()
RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT medrag_code_finder_names() || to_jsonb(s) FROM medrag_settings() s
$$;

-- Substrings of a typed word that its lexemes stand for ("injuries": injur; "x-ray": x-ray, ray): what a
-- description holding the word holds. Snowball rewrites endings ("injuri"), so where a lexeme is not in the word,
-- the prefix they share is.
CREATE OR REPLACE FUNCTION medrag_stems_in_word(word text, lexemes text[], min_length integer)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
-- planned once per session: a plan for each call's values (the default, as its arrays' sizes make those look
-- cheaper) cost more than running it, for every word of every term
SET plan_cache_mode = force_generic_plan
AS $$
    SELECT coalesce(array_agg(s.stem ORDER BY s.n), '{}')
    FROM (SELECT x.n,
                 CASE WHEN strpos(word, x.lexeme) > 0 THEN x.lexeme
                      ELSE left(word, (SELECT coalesce(max(i), 0)
                                       FROM generate_series(1, least(length(word), length(x.lexeme))) AS i
                                       WHERE left(word, i) = left(x.lexeme, i))) END AS stem
          FROM unnest(lexemes) WITH ORDINALITY AS x(lexeme, n)) s
    WHERE length(s.stem) >= min_length AND s.stem ~ '^[[:alnum:]''-]+$'
$$;

-- A term's concepts (medrag_code_concepts) one row each, with what the lookups and the scoring read of them: the
-- systems it is focus for, whether it is searched (not negated, not a qualifier left out), the wordings searched
-- (a synonym or a correction once there is one, else the words as typed) and every lexeme.
CREATE OR REPLACE FUNCTION medrag_term_concepts(concepts jsonb)
RETURNS TABLE (n bigint, text text, words text[], systems text[], negated boolean, qualifier boolean,
               dropped boolean, explains text[], wordings jsonb, search_wordings jsonb, lexemes text[])
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT c.n, array_to_string(ARRAY(SELECT jsonb_array_elements_text(c.value -> 'words')), ' '),
           ARRAY(SELECT jsonb_array_elements_text(c.value -> 'words')),
           ARRAY(SELECT jsonb_array_elements_text(c.value -> 'systems')),
           (c.value ->> 'negated')::boolean, (c.value ->> 'qualifier')::boolean,
           coalesce((c.value ->> 'dropped')::boolean, false),
           ARRAY(SELECT jsonb_array_elements_text(c.value -> 'explains')),
           c.value -> 'wordings',
           coalesce((SELECT jsonb_agg(w.value ORDER BY w.n) FROM jsonb_array_elements(c.value -> 'wordings')
                         WITH ORDINALITY AS w(value, n)
                     WHERE w.value ->> 'origin' <> ALL (ARRAY(SELECT jsonb_array_elements_text(
                                                                  medrag_code_finder_names() -> 'as_typed')))),
                    c.value -> 'wordings'),
           ARRAY(SELECT DISTINCT l.value COLLATE "C" FROM jsonb_array_elements(c.value -> 'wordings') AS w(value),
                        jsonb_array_elements_text(w.value -> 'lexemes') AS l(value) ORDER BY 1)
    FROM jsonb_array_elements(concepts) WITH ORDINALITY AS c(value, n)
$$;

-- What a system's lookups search for: ILIKE patterns ('%stem%' per lexeme of each searched wording), the full-text
-- query (every searched concept, each by any of its wordings, lexemes AND-ed), every lexeme of every wording of the
-- searched concepts (what the Index leg matches) and how many concepts are searched.
CREATE OR REPLACE FUNCTION medrag_term_lookups(concepts jsonb, code_system text, min_pattern integer)
RETURNS TABLE (patterns text[], tsquery text, lexemes text[], searched integer)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
-- as medrag_stems_in_word: it reads no table, and planning it for each call's values cost 1 ms a call
SET plan_cache_mode = force_generic_plan
AS $$
    WITH searched AS (
        SELECT * FROM medrag_term_concepts(concepts) c
        WHERE code_system = ANY (c.systems) AND NOT c.negated AND NOT c.dropped
    ),
    search_wording AS (
        SELECT s.n, w.n AS wording_n, ARRAY(SELECT jsonb_array_elements_text(w.value -> 'words')) AS words,
               ARRAY(SELECT l COLLATE "C" FROM jsonb_array_elements_text(w.value -> 'lexemes') AS l ORDER BY 1)
                   AS lexemes
        FROM searched s, jsonb_array_elements(s.search_wordings) WITH ORDINALITY AS w(value, n)
    ),
    pattern AS (
        SELECT '%' || p.stem || '%' AS pattern, min(ARRAY[w.n, w.wording_n, x.n, p.n]) AS first_at
        FROM search_wording w, unnest(w.words) WITH ORDINALITY AS x(word, n),
             unnest(medrag_stems_in_word(x.word, w.lexemes, min_pattern)) WITH ORDINALITY AS p(stem, n)
        GROUP BY 1
    ),
    clause AS (
        SELECT w.n, '(' || string_agg('(' || (SELECT string_agg(quote_literal(l), ' & ' ORDER BY l COLLATE "C")
                                              FROM unnest(w.lexemes) AS l) || ')', ' | ' ORDER BY w.wording_n)
                    || ')' AS clause
        FROM search_wording w WHERE cardinality(w.lexemes) > 0
        GROUP BY w.n
    )
    SELECT ARRAY(SELECT pattern FROM pattern ORDER BY first_at),
           (SELECT string_agg(clause, ' & ' ORDER BY n) FROM clause),
           ARRAY(SELECT DISTINCT l COLLATE "C" FROM searched s, unnest(s.lexemes) AS l ORDER BY 1),
           (SELECT count(*)::int FROM searched)
$$;

-- What medrag_score_codes reads of a term's current concepts for the codes of one system: its focus concepts (to
-- cover), context (another system's half of a multi-intent term), negations, and the lexemes that explain a code's
-- words (synonyms included; "non" + a negated word).
CREATE OR REPLACE FUNCTION medrag_term_json(concepts jsonb, code_system text, term_text text, wants_modifiers boolean,
                                            prior double precision, semantic boolean, origin_weights jsonb)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    WITH c AS (SELECT * FROM medrag_term_concepts(concepts)),
    wordings AS (
        SELECT c.n, jsonb_agg(jsonb_build_array((origin_weights ->> (w.value ->> 'origin'))::float8,
                                                (SELECT coalesce(jsonb_agg(l ORDER BY l COLLATE "C"), '[]')
                                                 FROM jsonb_array_elements_text(w.value -> 'lexemes') AS l))
                              ORDER BY w.n) AS wordings
        FROM c, jsonb_array_elements(c.wordings) WITH ORDINALITY AS w(value, n)
        GROUP BY c.n
    ),
    affirmed AS (SELECT DISTINCT l FROM c, unnest(c.lexemes) AS l WHERE NOT c.negated)
    SELECT jsonb_build_object(
        'system', code_system,
        'focus', coalesce((SELECT jsonb_agg(w.wordings ORDER BY c.n) FROM c JOIN wordings w USING (n)
                           WHERE code_system = ANY (c.systems) AND NOT c.negated), '[]'),
        'context', coalesce((SELECT jsonb_agg(w.wordings ORDER BY c.n) FROM c JOIN wordings w USING (n)
                             WHERE code_system <> ALL (c.systems) AND NOT c.negated), '[]'),
        'negations', coalesce((SELECT jsonb_agg(w.wordings ORDER BY c.n) FROM c JOIN wordings w USING (n)
                               WHERE c.negated), '[]'),
        'lexemes', (SELECT coalesce(jsonb_agg(l ORDER BY l COLLATE "C"), '[]') FROM affirmed),
        'explained', (SELECT coalesce(jsonb_agg(DISTINCT l), '[]')
                      FROM (SELECT l FROM affirmed
                            UNION SELECT e FROM c, unnest(c.explains) AS e WHERE NOT c.negated
                            UNION SELECT 'non' || l FROM c, unnest(c.lexemes) AS l WHERE c.negated) x(l)),
        'asks_other', 'other' = ANY (regexp_split_to_array(lower(term_text), '\s+')),
        'wants_modifiers', wants_modifiers, 'prior', prior, 'semantic', semantic)
$$;

-- 'copd (= chronic obstructive pulmonary disease) + exacerbation': the term as its concepts stand, for the trace.
CREATE OR REPLACE FUNCTION medrag_term_describe(concepts jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT string_agg(CASE WHEN c.negated THEN 'not ' ELSE '' END || c.text
                      || coalesce(' (= ' || (SELECT string_agg(array_to_string(
                                                                  ARRAY(SELECT jsonb_array_elements_text(w.value -> 'words')),
                                                                  ' '), ' | ' ORDER BY w.n)
                                             FROM jsonb_array_elements(c.wordings) WITH ORDINALITY AS w(value, n)
                                             WHERE w.value ->> 'origin' <> 'typed') || ')', '')
                      || CASE WHEN c.dropped THEN ' [dropped]' ELSE '' END, ' + ' ORDER BY c.n)
    FROM medrag_term_concepts(concepts) c
$$;

-- 'classify: ICD-10-CM 0.95 (named code set "ICD-10-CM"); HCPCS 0.00 (no signal)': a classification for the trace.
CREATE OR REPLACE FUNCTION medrag_describe_classification(classification jsonb, systems text[])
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT 'classify: ' || string_agg(
        s.system || ' ' || medrag_fixed((classification -> 'scores' ->> s.system)::float8, 2) || ' ('
        || coalesce((SELECT string_agg(x.value ->> 1 || ' "' || (x.value ->> 2) || '"', ', ' ORDER BY x.n)
                     FROM (SELECT g.value, g.n
                           FROM jsonb_array_elements(classification -> 'signals') WITH ORDINALITY AS g(value, n)
                           WHERE g.value ->> 0 = s.system ORDER BY g.n
                           LIMIT (SELECT trace_signals_shown FROM medrag_settings())) x), 'no signal') || ')',
        '; ' ORDER BY s.n)
    FROM unnest(systems) WITH ORDINALITY AS s(system, n)
$$;

-- How much the classifier's signal for each system scales its codes' confidence (1.0: no doubt): a system heard
-- less than the strongest loses up to `weight` of it, in proportion; without any signal nothing is scaled.
CREATE OR REPLACE FUNCTION medrag_routing_priors(classification jsonb, weight double precision)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT jsonb_object_agg(s.key, CASE WHEN m.strongest <= 0 THEN 1.0
                                        ELSE 1.0 - weight * (1.0 - s.value::float8 / m.strongest) END)
    FROM jsonb_each_text(classification -> 'scores') s,
         (SELECT coalesce(max(value::float8), 0) AS strongest FROM jsonb_each_text(classification -> 'scores')) m
$$;

-- The probability that a coder accepts a code: 1 for a code written in the term, else the calibration (fitted by
-- `medrag eval fit-confidence`) of its score and its distance to its system's best; 0 without evidence.
CREATE OR REPLACE FUNCTION medrag_code_confidence(score double precision, behind double precision, exact boolean,
                                                  calibration jsonb)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN exact THEN 1.0
                WHEN score > 0 THEN round((1.0 / (1.0 + exp(-((calibration ->> 'score_weight')::float8 * score
                                                             + (calibration ->> 'behind_weight')::float8 * behind
                                                             + (calibration ->> 'best_weight')::float8
                                                                 * (behind = 0)::int
                                                             + (calibration ->> 'intercept')::float8))))::numeric,
                                          3)::float8
                ELSE 0.0 END
$$;

-- high / medium / possible (the first tier whose floor the confidence passes), or NULL below the score a code needs
-- to be listed at all.
CREATE OR REPLACE FUNCTION medrag_code_tier(score double precision, confidence double precision, settings jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT t.value ->> 1
    FROM jsonb_array_elements(settings -> 'tiers') WITH ORDINALITY AS t(value, n)
    WHERE score >= (settings ->> 'min_score')::float8
      AND (confidence > (t.value ->> 0)::float8
           OR (t.n = jsonb_array_length(settings -> 'tiers') AND confidence >= (t.value ->> 0)::float8))
    ORDER BY t.n
    LIMIT 1
$$;

-- One lookup (a leg of codes.sql) as the finder runs it: {leg, system, codes?, hits: [{code, rank, score, and for the
-- Index its entry}], ms}. EXECUTE plans each leg's statement with its values: the leg is inlined and its indexes
-- chosen for the term at hand (a generic plan cost the vector leg 20 ms a question). The Index and trigram legs plan
-- themselves once per session (medrag_code_index_leg, medrag_code_trigram_leg), and this function's own statements
-- read only its arguments.
CREATE OR REPLACE FUNCTION medrag_code_lookup(lookup jsonb, code_release integer, index_release integer,
                                              query_embedding vector, settings jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    leg constant text := lookup ->> 'leg';
    source constant text := settings -> 'sources' ->> (lookup ->> 'system');
    n constant integer := CASE WHEN leg = 'children' THEN (settings ->> 'children_limit')::int
                               ELSE (settings ->> 'leg_limit')::int END;
    kinds constant text[] := ARRAY(SELECT jsonb_array_elements_text(lookup -> 'kinds'));
    codes constant text[] := ARRAY(SELECT jsonb_array_elements_text(lookup -> 'codes'));
    patterns constant text[] := ARRAY(SELECT jsonb_array_elements_text(lookup -> 'patterns'));
    lexemes constant text[] := ARRAY(SELECT jsonb_array_elements_text(lookup -> 'lexemes'));
    typed constant text := lookup ->> 'text';
    text_query constant text := lookup ->> 'tsquery';
    started constant timestamptz := clock_timestamp();
    hits jsonb;
    iterative text;
    ef_search text;
BEGIN
    -- one statement per leg, its inputs plain values: a call with a subquery as argument is not inlined
    IF leg = 'index' THEN
        SELECT jsonb_agg(jsonb_build_object('code', l.code, 'rank', l.leg_rank, 'score', l.leg_score,
                                            'evidence', l.evidence, 'lexemes', to_jsonb(l.lexemes),
                                            'core', to_jsonb(l.core_lexemes), 'negated', to_jsonb(l.negated))
                         ORDER BY l.leg_rank)
        INTO hits FROM medrag_code_index_leg(code_release, index_release, lexemes, n) l;
    ELSIF leg = 'trigram' THEN
        SELECT jsonb_agg(jsonb_build_object('code', l.code, 'rank', l.leg_rank, 'score', l.leg_score)
                         ORDER BY l.leg_rank)
        INTO hits FROM medrag_code_trigram_leg(code_release, source, typed, kinds, n) l;
    ELSE
        IF leg = 'vector' THEN
            -- keep the HNSW scan going until enough code chunks pass the source filter (pgvector >= 0.8)
            iterative := current_setting('hnsw.iterative_scan', true);
            ef_search := current_setting('hnsw.ef_search', true);
            PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true),
                    set_config('hnsw.ef_search', '100', true);
        END IF;
        -- the other legs return (code, leg_rank, leg_score); EXECUTE plans the call with its values, as above
        EXECUTE 'SELECT jsonb_agg(jsonb_build_object(''code'', l.code, ''rank'', l.leg_rank, ''score'', l.leg_score) '
                'ORDER BY l.leg_rank) FROM '
                || CASE leg WHEN 'exact' THEN 'medrag_code_exact_leg($6)'
                            WHEN 'words' THEN 'medrag_code_words_leg($1, $2, $3, $4, $5)'
                            WHEN 'fulltext' THEN 'medrag_code_text_leg($2, $7, $5)'
                            WHEN 'vector' THEN 'medrag_code_vector_leg($2, $8, $5)'
                            WHEN 'children' THEN 'medrag_code_children_leg($1, $6, $5)' END
                || ' l'
        INTO hits USING code_release, source, patterns, kinds, n, codes, text_query, query_embedding;
        IF leg = 'vector' THEN
            PERFORM set_config('hnsw.iterative_scan', coalesce(iterative, 'off'), true),
                    set_config('hnsw.ef_search', coalesce(ef_search, '40'), true);
        END IF;
    END IF;
    RETURN lookup || jsonb_build_object('hits', coalesce(hits, '[]'),
                                        'ms', medrag_elapsed_ms(started));
END
$$;

-- The candidates of a finder's pool, as a jsonb array: each code some lookup found and the release has (details not
-- null), the legs that found it, how it scored and its confidence and tier. ord is the order codes joined the
-- pool (round, system, first found), which breaks ties among equal scores the same way every time.
CREATE OR REPLACE FUNCTION medrag_code_pool(best jsonb, details jsonb, scores jsonb, settings jsonb)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    WITH by_code AS (
        SELECT h.value ->> 'system' AS system, h.value ->> 'code' AS code,
               string_agg(h.value ->> 'leg', '+' ORDER BY h.value ->> 'leg' COLLATE "C") AS legs,
               bool_or(h.value ->> 'leg' = 'exact') AS exact,
               (array_agg(h.value) FILTER (WHERE h.value ->> 'leg' = 'index'))[1] AS index_hit
        FROM jsonb_each(best) h
        GROUP BY 1, 2
    ),
    candidate AS (
        SELECT b.*, details -> (b.system || '|' || b.code) AS detail, scores -> (b.system || '|' || b.code) AS features
        FROM by_code b
    ),
    scored AS (
        -- what the rounds and the choice read of a candidate: of its Index entry, the evidence and its words
        SELECT c.system, c.code, (c.detail ->> 'ord')::float8 AS ord, c.exact, c.legs, c.detail,
               CASE WHEN c.index_hit IS NOT NULL
                    THEN jsonb_build_object('evidence', c.index_hit -> 'evidence', 'lexemes', c.index_hit -> 'lexemes')
               END AS index_hit,
               coalesce((c.features ->> 'score')::float8, 0) AS score,
               coalesce((c.features ->> 'behind')::float8, 0) AS behind,
               coalesce((c.features ->> 'lexical')::float8, 0) AS lexical,
               coalesce((c.features ->> 'coverage')::float8, 0) AS coverage,
               coalesce((c.features ->> 'is_default')::boolean, false) AS is_default,
               c.system = 'ICD-10-CM' AND NOT coalesce((c.detail ->> 'billable')::boolean, false)
                   AND (c.detail ->> 'has_children')::boolean AS is_header,
               c.features
        FROM candidate c
        WHERE jsonb_typeof(c.detail) = 'object'
    )
    SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.ord), '[]')
    FROM (SELECT s.*, conf.value AS confidence, medrag_code_tier(s.score, conf.value, settings) AS tier
          FROM scored s
          CROSS JOIN LATERAL (SELECT medrag_code_confidence(s.score, s.behind, s.exact, settings -> 'calibration')
                                         AS value) conf) x
$$;

-- What medrag_score_codes reads of a system's candidates: each code the release has, whether it was written in the
-- term, its cosine to the term, the best rank it had in each leg and the Index entry that found it (its wording).
CREATE OR REPLACE FUNCTION medrag_code_scoring_input(best jsonb, details jsonb, similarities jsonb, code_system text)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT jsonb_agg(jsonb_build_object(
               'code', c.code, 'exact', c.exact, 'similarity', similarities -> (code_system || '|' || c.code),
               'hits', c.hits,
               'index', CASE WHEN jsonb_array_length(coalesce(c.index_hit -> 'lexemes', '[]')) > 0
                             THEN jsonb_build_array(c.index_hit -> 'evidence',
                                                    coalesce(nullif(c.index_hit ->> 'via', ''), c.code),
                                                    c.index_hit -> 'lexemes', c.index_hit -> 'core',
                                                    c.index_hit -> 'negated') END))
    FROM (SELECT h.value ->> 'code' AS code, bool_or(h.value ->> 'leg' = 'exact') AS exact,
                 jsonb_agg(jsonb_build_array(h.value ->> 'leg', (h.value ->> 'rank')::int)
                           ORDER BY h.value ->> 'leg' COLLATE "C") AS hits,
                 (array_agg(h.value) FILTER (WHERE h.value ->> 'leg' = 'index'))[1] AS index_hit
          FROM jsonb_each(best) h
          WHERE h.value ->> 'system' = code_system
          GROUP BY 1) c
    WHERE jsonb_typeof(details -> (code_system || '|' || c.code)) = 'object'
$$;

-- A system's candidates at or above the score a code needs to be listed, best first, a header left out when a code
-- under it made the list (the billable code is what gets reported).
CREATE OR REPLACE FUNCTION medrag_code_ranked(pool jsonb, settings jsonb, code_system text)
RETURNS SETOF jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    WITH passing AS (
        SELECT p.value AS c FROM jsonb_array_elements(pool) p
        WHERE p.value ->> 'system' = code_system AND (p.value ->> 'score')::float8 >= (settings ->> 'min_score')::float8
    )
    SELECT p.c FROM passing p
    WHERE NOT ((p.c ->> 'is_header')::boolean AND NOT (p.c ->> 'exact')::boolean
               AND EXISTS (SELECT 1 FROM passing q
                           WHERE q.c ->> 'code' <> p.c ->> 'code'
                             AND left(q.c ->> 'code', length(p.c ->> 'code')) = p.c ->> 'code'))
    ORDER BY (p.c ->> 'score')::float8 DESC, NOT (p.c ->> 'is_default')::boolean, p.c ->> 'code' COLLATE "C"
$$;

-- The trace's account of a candidate's score: '{code} {score} -> confidence {c} (lexical, rank, specificity,
-- semantic[, routing prior]; the legs that found it[; the Index entry])'.
CREATE OR REPLACE FUNCTION medrag_code_explain(candidate jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT candidate ->> 'code' || ' ' || medrag_fixed((candidate ->> 'score')::float8, 2) || ' -> confidence '
           || medrag_fixed((candidate ->> 'confidence')::float8, 2)
           || ' (lexical ' || medrag_fixed((f ->> 'lexical')::float8, 2)
           || ', rank ' || medrag_fixed((f ->> 'rank')::float8, 2)
           || ', specificity ' || medrag_fixed((f ->> 'specificity')::float8, 2)
           || ', semantic ' || coalesce(medrag_fixed((f ->> 'semantic')::float8, 2), 'n/a')
           || CASE WHEN (f ->> 'prior')::float8 = 1.0 THEN ''
                   ELSE ', routing prior ' || medrag_fixed((f ->> 'prior')::float8, 2) END
           || '; ' || (candidate ->> 'legs')
           || coalesce('; ' || (candidate -> 'index_hit' ->> 'evidence'), '') || ')'
    FROM (SELECT candidate -> 'features' AS f) x
$$;

-- A weak system's next step (reflect.py's rules): synonyms of its focus concepts, else the spelling of words no
-- candidate holds, else (nothing listed at all) its qualifiers left out. Returns the decision as jsonb:
-- {reason, expansions: [{concept, expansions}], misspelled: [word], dropped: [concept n]}.
CREATE OR REPLACE FUNCTION medrag_code_broaden(concepts jsonb, code_system text, pool_lexemes text[],
                                               nothing_listed boolean, synonyms_tried text[], spelling_tried text[],
                                               known_words text[], settings jsonb)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
-- as medrag_stems_in_word: a plan for each call's values cost 0.8 ms a call, more than running it
SET plan_cache_mode = force_generic_plan
AS $$
    WITH focus AS (
        SELECT c.* FROM medrag_term_concepts(concepts) c WHERE code_system = ANY (c.systems) AND NOT c.negated
    ),
    synonym AS (
        SELECT jsonb_agg(jsonb_build_object('concept', f.n, 'text', f.text,
                                            'expansions', medrag_code_synonyms() -> f.text -> 'expansions')
                         ORDER BY f.n) AS found
        FROM focus f
        WHERE medrag_code_synonyms() ? f.text AND f.text <> ALL (synonyms_tried)
          AND f.n = (SELECT min(o.n) FROM focus o WHERE o.text = f.text)  -- a concept said twice is broadened once
    ),
    -- typed words of concepts no candidate holds (a concept the synonym table knows is not misspelt; one matched or
    -- corrected needs nothing)
    unmatched AS (
        SELECT ARRAY(SELECT x.word FROM (SELECT w2.word, min(ARRAY[f2.n, w2.n]) AS first_at
                                         FROM focus f2, unnest(f2.words) WITH ORDINALITY AS w2(word, n)
                                         WHERE NOT (f2.lexemes && pool_lexemes)
                                           AND jsonb_array_length(f2.wordings) = 1
                                           AND f2.text <> ALL (synonyms_tried)
                                           AND length(w2.word) >= (settings ->> 'spelling_min_length')::int
                                           AND w2.word !~ '^[0-9]+$' AND w2.word <> ALL (known_words)
                                           AND code_system || '|' || w2.word <> ALL (spelling_tried)
                                         GROUP BY 1) x ORDER BY x.first_at) AS ordered
    ),
    qualifier AS (
        SELECT array_agg(f.n ORDER BY f.n) AS ns, string_agg(f.text, ', ' ORDER BY f.n) AS texts,
               (SELECT count(*) FROM focus) AS focus_count, count(*) AS qualifier_count
        FROM focus f WHERE f.qualifier AND NOT f.dropped
    )
    SELECT CASE
        WHEN s.found IS NOT NULL
        THEN jsonb_build_object('expansions', s.found, 'reason', 'broaden with synonyms: '
                                || (SELECT string_agg(e.value ->> 'text' || ' -> '
                                                      || (SELECT string_agg(x, ' | ' ORDER BY n)
                                                          FROM jsonb_array_elements_text(e.value -> 'expansions')
                                                              WITH ORDINALITY AS t(x, n)), '; ' ORDER BY e.n)
                                    FROM jsonb_array_elements(s.found) WITH ORDINALITY AS e(value, n)))
        WHEN cardinality(u.ordered) > 0
        THEN jsonb_build_object('misspelled', to_jsonb(u.ordered),
                                'reason', 'broaden: correct the spelling of ' || array_to_string(u.ordered, ', '))
        WHEN nothing_listed AND q.qualifier_count > 0 AND q.qualifier_count < q.focus_count
        THEN jsonb_build_object('dropped', to_jsonb(q.ns), 'reason', 'broaden: leave out ' || q.texts)
        ELSE '{}'::jsonb END
    FROM synonym s, unmatched u, qualifier q
$$;

-- The concepts with a wording added to concept n (from 1), or NULL when it adds nothing: no lexemes, or those of a
-- wording the concept has.
CREATE OR REPLACE FUNCTION medrag_add_wording(concepts jsonb, n integer, words jsonb, lexemes text[], origin text)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN cardinality(lexemes) = 0
                  OR EXISTS (SELECT 1 FROM jsonb_array_elements(concepts -> (n - 1) -> 'wordings') AS w(value)
                             WHERE ARRAY(SELECT DISTINCT l COLLATE "C"
                                         FROM jsonb_array_elements_text(w.value -> 'lexemes') AS l ORDER BY 1)
                                   = lexemes)
                THEN NULL
                ELSE jsonb_set(concepts, ARRAY[(n - 1)::text, 'wordings'],
                               (concepts -> (n - 1) -> 'wordings')
                               || jsonb_build_array(jsonb_build_object('words', words, 'origin', origin,
                                                                       'lexemes', to_jsonb(lexemes)))) END
$$;

-- Each lookup's best hit of each code (system|code|leg -> hit: the lowest rank, the first found on a tie), the new
-- hits merged in; a code read and found missing from the release (details null) is forgotten.
CREATE OR REPLACE FUNCTION medrag_best_hits(best jsonb, new_hits jsonb, details jsonb)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(jsonb_object_agg(x.k, x.hit), '{}')
    FROM (SELECT DISTINCT ON (h.k) h.k, h.hit
          FROM (SELECT b.key AS k, b.value AS hit FROM jsonb_each(best) b
                UNION ALL
                SELECT (n.value ->> 'system') || '|' || (n.value ->> 'code') || '|' || (n.value ->> 'leg'), n.value
                FROM jsonb_array_elements(new_hits) n) h
          WHERE jsonb_typeof(details -> ((h.hit ->> 'system') || '|' || (h.hit ->> 'code'))) IS DISTINCT FROM 'null'
          ORDER BY h.k, (h.hit ->> 'rank')::int, (h.hit ->> 'seq')::bigint) x
$$;

-- The 7th-character form to report for a candidate whose code needs one ([code, description, character, meaning]):
-- the first whose meaning is the encounter the term names ("first visit": initial), else the Tabular's first (A,
-- initial encounter; 0, unspecified); NULL when the code was typed as it is or needs none.
CREATE OR REPLACE FUNCTION medrag_seventh_form(candidate jsonb, encounter text)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN (candidate ->> 'exact')::boolean
                  OR jsonb_typeof(candidate -> 'detail' -> 'seventh') IS DISTINCT FROM 'array'
                  OR jsonb_array_length(candidate -> 'detail' -> 'seventh') = 0 THEN NULL
                ELSE coalesce((SELECT f.value
                               FROM jsonb_array_elements(candidate -> 'detail' -> 'seventh') WITH ORDINALITY AS f(value, n)
                               WHERE encounter IS NOT NULL AND strpos(lower(f.value ->> 3), encounter) > 0
                               ORDER BY f.n LIMIT 1),
                              candidate -> 'detail' -> 'seventh' -> 0) END
$$;

-- The trace line saying which 7th character was added, why, and which others the code takes.
CREATE OR REPLACE FUNCTION medrag_describe_seventh(candidate jsonb, form jsonb, encounter text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT '7th character: ' || (candidate ->> 'code') || ' -> ' || (form ->> 0) || ' (' || (form ->> 2) || ' '
           || (form ->> 3)
           || CASE WHEN encounter IS NOT NULL AND strpos(lower(form ->> 3), encounter) > 0
                   THEN '; the term names the ' || encounter || ' encounter' ELSE '' END
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

-- Whether a release has Index entries: one probe of the index on release_id. The statistics of a table holding one
-- release's Index make a scan look as cheap as the probe, and the scan reads every entry for a release without one.
CREATE OR REPLACE FUNCTION medrag_has_index(index_release integer)
RETURNS boolean
LANGUAGE sql STABLE
SET enable_seqscan = off
AS $$
    SELECT EXISTS (SELECT 1 FROM icd10cm_index_entry e WHERE e.release_id = index_release LIMIT 1)
$$;

-- Whether any chunk of a source's current documents has an embedding: the exact answer, a join over the source's
-- chunks, read by medrag_has_embeddings only when its probe finds none.
CREATE OR REPLACE FUNCTION medrag_has_embeddings_anywhere(source_name text)
RETURNS boolean
LANGUAGE sql STABLE
SET plan_cache_mode = force_custom_plan  -- the join's plan for one source's values: twice as fast as a generic one
AS $$
    SELECT EXISTS (SELECT 1 FROM document d JOIN chunk c ON c.document_id = d.id
                   JOIN chunk_vector v ON v.chunk_id = c.id
                   WHERE d.source = source_name AND d.is_current)
$$;

-- Whether a source's current documents have embeddings (the vector leg needs them). The first current documents are
-- probed one at a time, which answers at once where the source is embedded; the join is read only when those have
-- none (a source without vectors, a release waiting for them). The probe is planned once per session: planning it
-- for each call cost ten times what running it does, twice a finder call.
CREATE OR REPLACE FUNCTION medrag_has_embeddings(source_name text)
RETURNS boolean
LANGUAGE sql STABLE
SET plan_cache_mode = force_generic_plan
AS $$
    SELECT EXISTS (SELECT 1 FROM (SELECT d.id FROM document d
                                  WHERE d.source = source_name AND d.is_current
                                  LIMIT (SELECT embedding_probe_documents FROM medrag_settings())) d
                   WHERE (SELECT true FROM chunk c JOIN chunk_vector v ON v.chunk_id = c.id
                          WHERE c.document_id = d.id LIMIT 1))
        OR medrag_has_embeddings_anywhere(source_name)
$$;

-- A finder stage's time added to the call's timings: they add up by stage across the rounds, so a profile says where
-- a term's time went.
CREATE OR REPLACE FUNCTION medrag_add_elapsed(timings jsonb, stage text, since timestamptz)
RETURNS jsonb
LANGUAGE sql VOLATILE
AS $$
    SELECT timings || jsonb_build_object(stage, coalesce((timings ->> stage)::float8, 0)
                                                + medrag_elapsed_ms(since))
$$;

-- What a code query must be, checked here only (the Python door cleans a term's spaces and refuses control
-- characters PostgreSQL cannot take, nothing else): a term that is not empty nor too long, a top within bounds and
-- known code systems. Returns the systems asked for, in canonical form and first-asked order; a bad value raises
-- SQLSTATE 22023 with the one-line message medrag codes, the API and psql show.
CREATE OR REPLACE FUNCTION medrag_check_code_query(term text, top integer, systems text[])
RETURNS text[]
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
DECLARE
    cfg constant jsonb := medrag_code_finder_config();
    requested text[];
    unknown text;
BEGIN
    IF coalesce(btrim(term), '') = '' THEN
        RAISE EXCEPTION 'the term is empty; give a clinical term such as "type 2 diabetes" or a code such as E0601'
            USING ERRCODE = '22023';
    END IF;
    IF length(term) > (cfg ->> 'max_term_chars')::int THEN
        RAISE EXCEPTION 'the term is % characters; the limit is %', to_char(length(term), 'FM999,999,999'),
            cfg ->> 'max_term_chars' USING ERRCODE = '22023';
    END IF;
    IF top IS NULL OR top < 1 OR top > (cfg ->> 'max_top')::int THEN
        RAISE EXCEPTION 'top must be between 1 and %, not %', cfg ->> 'max_top', top USING ERRCODE = '22023';
    END IF;
    SELECT coalesce(array_agg(a.system ORDER BY a.first_at), '{}'),
           string_agg(a.name, ', ') FILTER (WHERE a.system IS NULL)
    INTO requested, unknown
    FROM (SELECT cfg -> 'aliases' ->> lower(btrim(x.name)) AS system, min(x.name) AS name, min(x.n) AS first_at
          FROM unnest(systems) WITH ORDINALITY AS x(name, n) GROUP BY 1) a;
    IF unknown IS NOT NULL THEN
        RAISE EXCEPTION 'unknown code system %; choose ICD-10-CM or HCPCS', quote_literal(unknown) USING ERRCODE = '22023';
    END IF;
    RETURN requested;
END
$$;

-- Codes for a clinical term (or a code written in it), best first, at most `top` per system: {systems, encounter,
-- results: [{system, code, display, confidence, tier, billable, related}], trace: [how they were found], timings,
-- and with with_candidates candidates: [every scored candidate and its features]}. systems: names as `medrag codes
-- --system` takes them (all when NULL); release_label: a release other than the current one; query_embedding: the
-- term's embedding (the vector leg and the semantic feature; without one the lexical legs answer alone).
-- another argument list is another function: a database migrated before with_candidates would keep the
-- five-argument finder beside this one
DROP FUNCTION IF EXISTS medrag_find_codes(text, text[], text, integer, vector);
CREATE OR REPLACE FUNCTION medrag_find_codes(term text, systems text[] DEFAULT NULL, release_label text DEFAULT NULL,
                                             top integer DEFAULT NULL, query_embedding vector DEFAULT NULL,
                                             with_candidates boolean DEFAULT false)
RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_column
DECLARE
    cfg constant jsonb := medrag_code_finder_config();
    all_systems constant text[] := ARRAY(SELECT jsonb_array_elements_text(cfg -> 'systems'));
    min_score constant float8 := (cfg ->> 'min_score')::float8;
    started constant timestamptz := clock_timestamp();
    cls jsonb;
    concepts jsonb;
    term_text text;
    wants_modifiers boolean;
    kinds jsonb;  -- system -> the kinds of code it lists
    requested text[];
    searched text[];
    releases jsonb := '{}';  -- system -> {id, label, is_current}
    index_release integer;
    trace text[] := '{}';
    timings jsonb := '{}';
    priors jsonb;
    best jsonb := '{}';
    details jsonb := '{}';
    sims jsonb := '{}';
    scores jsonb := '{}';
    pool jsonb := '[]';
    semantic_systems text[] := '{}';
    synonyms_tried text[] := '{}';
    spelling_tried text[] := '{}';
    headers_expanded text[] := '{}';
    known text[] := '{}';
    seq bigint := 0;
    joined bigint := 0;  -- codes read so far: a code's 'ord' says when it joined the pool
    round_no integer := 1;
    round_started timestamptz;
    stage_started timestamptz;
    lookups jsonb;
    skipped text[];
    results jsonb;
    new_hits jsonb;
    lookup jsonb;
    changed text[];
    -- the decision of a reflection
    reasons text[];
    expansions jsonb;
    misspelled jsonb;
    dropped boolean;
    headers text[];
    -- scratch
    sys text;
    n integer;
    item jsonb;
    typed_word text;
    txt text;
    codes text[];
    first_code jsonb;
    favoured float8;
    nothing_found boolean;
    weak jsonb;
    broaden jsonb;
    pool_lexemes text[];
    corrected record;
    fixed text[];
    lexemes text[];
    added jsonb;
    cls2 jsonb;
    priors2 jsonb;
    chosen jsonb;
    output jsonb;
    related_started timestamptz;
BEGIN
    top := coalesce(top, (cfg ->> 'default_top')::int);
    requested := medrag_check_code_query(term, top, systems);

    -- 1. the term's analysis
    cls := medrag_classify_code_term(term, NULL);
    term_text := cls ->> 'text';
    wants_modifiers := (cls ->> 'wants_modifiers')::boolean;
    -- the kinds of code each system lists: a HCPCS modifier only when the term asks for one
    kinds := cfg -> 'kinds' || CASE WHEN wants_modifiers THEN jsonb_build_object('HCPCS', cfg -> 'modifier_kinds')
                                    ELSE '{}' END;
    concepts := medrag_code_concepts(term_text, cls);
    priors := medrag_routing_priors(cls, (cfg ->> 'routing_prior_weight')::float8);
    -- every requested system is searched: the classifier's signal is a prior on the scores, never a filter
    searched := CASE WHEN cardinality(requested) > 0 THEN requested ELSE all_systems END;
    trace := trace || (medrag_describe_classification(cls, all_systems) || ' -> search '
                       || array_to_string(searched, ', '));
    trace := trace || ARRAY(SELECT 'not known: "' || p.phrase || '" searched as "unspecified" (the code for a detail '
                                   || 'not known)'
                            FROM (SELECT x.phrase, min(x.n) AS n
                                  FROM jsonb_array_elements_text(cls -> 'unspecified') WITH ORDINALITY AS x(phrase, n)
                                  GROUP BY 1) p
                            WHERE p.phrase <> 'unspecified' ORDER BY p.n);

    -- the release each system reads: the current one, or the one labelled release_label
    SELECT coalesce(jsonb_object_agg(s.system, to_jsonb(r)), '{}') INTO releases
    FROM unnest(searched) AS s(system)
    CROSS JOIN LATERAL (
        SELECT r.id, r.label, r.is_current FROM medrag_usable_release r
        WHERE r.source = cfg -> 'sources' ->> s.system
          AND CASE WHEN release_label IS NULL THEN r.is_current ELSE lower(r.label) = lower(release_label) END
        ORDER BY r.is_current DESC, r.label DESC
        LIMIT 1) r;
    IF release_label IS NOT NULL AND releases = '{}' THEN
        SELECT string_agg(DISTINCT r.label, ', ') INTO txt FROM medrag_usable_release r
        WHERE r.source IN (SELECT cfg -> 'sources' ->> s FROM unnest(searched) AS s);
        RAISE EXCEPTION 'no % release labelled %; loaded: %', array_to_string(searched, ' or '),
            quote_literal(release_label), coalesce(txt, '') USING ERRCODE = '22023';
    END IF;
    IF releases = '{}' THEN
        RAISE EXCEPTION 'no ICD-10-CM or HCPCS release is loaded; run `medrag ingest --source icd10cm --source hcpcs` '
                        'first' USING ERRCODE = '22023';
    END IF;
    searched := ARRAY(SELECT s FROM unnest(searched) WITH ORDINALITY AS x(s, n) WHERE releases ? s ORDER BY n);
    trace := trace || ('releases: ' || (SELECT string_agg(s || ' ' || (releases -> s ->> 'label')
                                                          || CASE WHEN (releases -> s ->> 'is_current')::boolean
                                                                  THEN '' ELSE ' (not current)' END, ', ' ORDER BY n)
                                        FROM unnest(searched) WITH ORDINALITY AS x(s, n)));
    -- the release whose Index serves ICD-10-CM: the searched release's own, else the newest loaded with one
    IF releases ? 'ICD-10-CM' THEN
        SELECT r.id INTO index_release FROM medrag_usable_release r
        WHERE r.source = 'icd10cm' AND medrag_has_index(r.id)
        ORDER BY r.id = (releases -> 'ICD-10-CM' ->> 'id')::int DESC,
                 coalesce(substring(regexp_replace(r.label, '[^0-9]', '', 'g') FROM '^[0-9]{1,4}')::int, 0) DESC,
                 r.label COLLATE "C" DESC
        LIMIT 1;
    END IF;

    timings := medrag_add_elapsed(timings, 'analysis', started);
    LOOP
        round_started := clock_timestamp();
        lookups := '[]';
        skipped := '{}';
        IF round_no = 1 THEN
            -- 2. the first round: codes written in the term, then every way of finding its words
            SELECT coalesce(jsonb_agg(jsonb_build_object('leg', 'exact', 'system', x.value ->> 0, 'codes', x.value -> 1)
                                      ORDER BY x.n), '[]')
            INTO lookups
            FROM jsonb_array_elements(cls -> 'literal_codes') WITH ORDINALITY AS x(value, n)
            WHERE x.value ->> 0 = ANY (searched);
            IF term_text <> '' THEN
                FOREACH sys IN ARRAY searched LOOP
                    IF NOT medrag_has_embeddings(cfg -> 'sources' ->> sys) THEN
                        skipped := skipped || ('vector ' || sys || ' (its code documents have no embeddings)');
                    ELSIF query_embedding IS NOT NULL THEN
                        semantic_systems := semantic_systems || sys;
                    ELSIF NOT 'vector (no query embedder)' = ANY (skipped) THEN
                        skipped := skipped || 'vector (no query embedder)'::text;
                    END IF;
                END LOOP;
                IF cardinality(medrag_words_of(term_text)) <= (cfg ->> 'trigram_max_words')::int THEN
                    lookups := lookups || (SELECT jsonb_agg(jsonb_build_object('leg', 'trigram', 'system', s,
                                                                               'text', term_text) ORDER BY n)
                                           FROM unnest(searched) WITH ORDINALITY AS x(s, n));
                END IF;
                SELECT string_agg(c.text, ', ' ORDER BY c.n) INTO txt
                FROM medrag_term_concepts(concepts) c WHERE c.negated;
                IF txt IS NOT NULL THEN
                    trace := trace || ('negation: not ' || txt || ' (not searched; a code whose description names it '
                                       || 'is left out)');
                END IF;
                SELECT string_agg(c.text || ' = ' || (w.value -> 'words' ->> 0), ', ' ORDER BY c.n, w.n) INTO txt
                FROM medrag_term_concepts(concepts) c,
                     jsonb_array_elements(c.wordings) WITH ORDINALITY AS w(value, n)
                WHERE w.value ->> 'origin' = 'compound';
                IF txt IS NOT NULL THEN
                    trace := trace || ('hyphenated: ' || txt || ' (searched both ways)');
                END IF;
                changed := searched;
                -- a word of the corpus that no code's wording holds ("medicare", "cover") is no misspelling
                known := ARRAY(SELECT w FROM unnest(medrag_words_of(term_text)) AS w WHERE medrag_known_word(lower(w)));
            END IF;
        ELSE
            -- a next round: what the last reflection decided
            changed := '{}';
            FOR item IN SELECT value FROM jsonb_array_elements(expansions) LOOP
                n := (item ->> 'concept')::int;
                FOR txt IN SELECT jsonb_array_elements_text(item -> 'expansions') LOOP
                    lexemes := ARRAY(SELECT DISTINCT l COLLATE "C" FROM unnest(medrag_words_of(txt)) AS w,
                                            unnest(tsvector_to_array(to_tsvector('english', w))) AS l ORDER BY 1);
                    added := medrag_add_wording(concepts, n, to_jsonb(medrag_words_of(txt)), lexemes, 'synonym');
                    IF added IS NOT NULL THEN
                        concepts := added;
                        changed := changed || ARRAY(SELECT s FROM jsonb_array_elements_text(concepts -> (n - 1) -> 'systems') s
                                                    WHERE s = ANY (searched));
                    END IF;
                END LOOP;
            END LOOP;
            FOR sys, typed_word IN SELECT x.s, w FROM unnest(searched) WITH ORDINALITY AS x(s, n),
                                                jsonb_array_elements_text(misspelled -> x.s) AS w ORDER BY x.n
            LOOP
                txt := current_setting('pg_trgm.similarity_threshold');
                PERFORM set_config('pg_trgm.similarity_threshold', cfg ->> 'spelling_min_similarity', true);
                SELECT w.word, similarity(w.word, typed_word)::float8 AS similarity INTO corrected
                FROM medrag_code_word w
                WHERE w.release_id = (releases -> sys ->> 'id')::int AND w.word % typed_word AND w.word <> typed_word
                -- the fewest edits away, then the commonest, then the most similar
                ORDER BY levenshtein(w.word, typed_word), w.ndoc DESC, similarity DESC, w.word
                LIMIT 1;
                PERFORM set_config('pg_trgm.similarity_threshold', txt, true);
                IF corrected IS NULL OR corrected.word IS NULL THEN
                    trace := trace || format('spelling: no close word for %s in %s',
                                             CASE WHEN strpos(typed_word, '''') > 0 THEN '"' || typed_word || '"'
                                                  ELSE quote_literal(typed_word) END, sys);
                    CONTINUE;
                END IF;
                trace := trace || format('spelling: %s -> %s (%s, trigram similarity %s)', typed_word, corrected.word, sys,
                                         medrag_fixed(corrected.similarity, 2));
                FOR n, fixed IN SELECT c.n, ARRAY(SELECT CASE WHEN w = typed_word THEN corrected.word ELSE w END
                                                  FROM unnest(c.words) WITH ORDINALITY AS x(w, i) ORDER BY i)
                                FROM medrag_term_concepts(concepts) c
                                WHERE sys = ANY (c.systems) AND NOT c.negated AND typed_word = ANY (c.words) ORDER BY c.n
                LOOP
                    lexemes := ARRAY(SELECT DISTINCT l COLLATE "C" FROM unnest(fixed) AS w,
                                            unnest(tsvector_to_array(to_tsvector('english', w))) AS l ORDER BY 1);
                    added := medrag_add_wording(concepts, n, to_jsonb(fixed), lexemes, 'spelling');
                    IF added IS NOT NULL THEN
                        concepts := added;
                        changed := changed || ARRAY(SELECT s FROM jsonb_array_elements_text(concepts -> (n - 1) -> 'systems') s
                                                    WHERE s = ANY (searched));
                    END IF;
                END LOOP;
            END LOOP;
            IF misspelled <> '{}' THEN
                -- classified again with the spelling corrected ("tuberculosus" had no signal, "tuberculosis" has): the
                -- routing priors follow the corrected words
                SELECT string_agg(array_to_string(coalesce(
                           (SELECT ARRAY(SELECT jsonb_array_elements_text(w.value -> 'words'))
                            FROM jsonb_array_elements(c.wordings) WITH ORDINALITY AS w(value, i)
                            WHERE w.value ->> 'origin' = 'spelling' ORDER BY w.i LIMIT 1), c.words), ' '), ' '
                           ORDER BY c.n)
                INTO txt FROM medrag_term_concepts(concepts) c;
                cls2 := medrag_classify_code_term(coalesce(txt, ''), cls ->> 'named');
                priors2 := medrag_routing_priors(cls2, (cfg ->> 'routing_prior_weight')::float8);
                IF priors2 <> priors THEN
                    trace := trace || ('re' || medrag_describe_classification(cls2, all_systems) || ' -> routing priors '
                                       || (SELECT string_agg(s || ' ' || medrag_fixed((priors2 ->> s)::float8, 2), ', '
                                                             ORDER BY n)
                                           FROM unnest(all_systems) WITH ORDINALITY AS x(s, n)));
                    priors := priors2;
                END IF;
            END IF;
            IF dropped THEN
                changed := searched;
            END IF;
            changed := ARRAY(SELECT s FROM unnest(searched) WITH ORDINALITY AS x(s, n) WHERE s = ANY (changed) ORDER BY n);
        END IF;
        -- the word lookups of each system whose concepts changed (all of them in the first round)
        FOREACH sys IN ARRAY coalesce(changed, '{}') LOOP
            SELECT to_jsonb(t) INTO item FROM medrag_term_lookups(concepts, sys, (cfg ->> 'min_pattern')::int) t;
            IF jsonb_array_length(item -> 'patterns') > 0
               AND (item ->> 'searched')::int <= (cfg ->> 'words_leg_max_concepts')::int THEN
                lookups := lookups || jsonb_build_object('leg', 'words', 'system', sys, 'patterns', item -> 'patterns');
            END IF;
            IF coalesce(item ->> 'tsquery', '') <> '' AND (releases -> sys ->> 'is_current')::boolean THEN
                lookups := lookups || jsonb_build_object('leg', 'fulltext', 'system', sys, 'tsquery', item -> 'tsquery');
            END IF;
            IF sys = 'ICD-10-CM' AND index_release IS NOT NULL AND jsonb_array_length(item -> 'lexemes') > 0 THEN
                lookups := lookups || jsonb_build_object('leg', 'index', 'system', sys, 'lexemes', item -> 'lexemes');
            END IF;
        END LOOP;
        IF round_no = 1 THEN
            lookups := lookups || coalesce((SELECT jsonb_agg(jsonb_build_object('leg', 'vector', 'system', s) ORDER BY n)
                                            FROM unnest(semantic_systems) WITH ORDINALITY AS x(s, n)), '[]');
        ELSE
            IF cardinality(headers) > 0 THEN
                lookups := lookups || jsonb_build_object('leg', 'children', 'system', 'ICD-10-CM', 'codes', to_jsonb(headers));
            END IF;
            IF jsonb_array_length(lookups) = 0 THEN
                trace := trace || format('round %s: nothing new to look up', round_no);
                EXIT;
            END IF;
            trace := trace || format('round %s: term as %s', round_no, medrag_term_describe(concepts));
        END IF;

        timings := medrag_add_elapsed(timings, 'analysis', round_started);
        -- run the round's lookups
        stage_started := clock_timestamp();
        results := '[]';
        FOR lookup IN SELECT value FROM jsonb_array_elements(lookups) LOOP
            lookup := lookup || jsonb_build_object('kinds', kinds -> (lookup ->> 'system'));
            results := results || jsonb_build_array(medrag_code_lookup(lookup, (releases -> (lookup ->> 'system') ->> 'id')::int,
                                                                       index_release, query_embedding, cfg));
        END LOOP;

        timings := medrag_add_elapsed(timings, 'lookups', stage_started);
        stage_started := clock_timestamp();
        -- the pool: each lookup's best hit per code; a code the headers' Index entry led to inherits that entry
        SELECT coalesce(jsonb_agg(h.hit ORDER BY h.seq), '[]') INTO new_hits
        FROM (SELECT jsonb_build_object('system', r.value ->> 'system', 'code', x.value ->> 'code',
                                        'leg', r.value ->> 'leg', 'rank', (x.value ->> 'rank')::int,
                                        'score', x.value -> 'score', 'evidence', x.value -> 'evidence',
                                        'lexemes', x.value -> 'lexemes', 'core', x.value -> 'core',
                                        'negated', x.value -> 'negated', 'via', '',
                                        'seq', seq + row_number() OVER (ORDER BY r.n, x.n)) AS hit,
                     seq + row_number() OVER (ORDER BY r.n, x.n) AS seq
              FROM jsonb_array_elements(results) WITH ORDINALITY AS r(value, n),
                   jsonb_array_elements(r.value -> 'hits') WITH ORDINALITY AS x(value, n)) h;
        seq := seq + jsonb_array_length(new_hits);
        best := medrag_best_hits(best, new_hits, details);
        IF cardinality(headers) > 0 AND round_no > 1 THEN
            SELECT coalesce(jsonb_agg(entry.value || jsonb_build_object('code', x.value ->> 'code', 'via', header.code,
                                                                        'seq', seq + x.n) ORDER BY x.n), '[]')
            INTO new_hits
            FROM jsonb_array_elements(results -> (jsonb_array_length(results) - 1) -> 'hits') WITH ORDINALITY AS x(value, n)
            CROSS JOIN LATERAL (SELECT h AS code FROM unnest(headers) AS h
                                WHERE left(x.value ->> 'code', length(h)) = h
                                ORDER BY length(h) DESC LIMIT 1) header
            JOIN LATERAL (SELECT best -> ('ICD-10-CM|' || header.code || '|index') AS value) entry
                ON entry.value IS NOT NULL AND entry.value ->> 'via' = ''
                   AND jsonb_typeof(details -> ('ICD-10-CM|' || header.code)) = 'object';
            seq := seq + jsonb_array_length(new_hits);
            best := medrag_best_hits(best, new_hits, details);
        END IF;
        -- each new code's details, read once; a code the release lacks (or of a kind not searched) is forgotten
        FOREACH sys IN ARRAY searched LOOP
            codes := ARRAY(SELECT h.value ->> 'code' FROM jsonb_each(best) h
                           WHERE h.value ->> 'system' = sys AND NOT details ? (sys || '|' || (h.value ->> 'code'))
                           GROUP BY 1 ORDER BY min((h.value ->> 'seq')::bigint));
            CONTINUE WHEN cardinality(codes) = 0;
            -- what the rounds read of a code: whether the release has it (of a kind searched, not terminated), when it
            -- joined the pool and whether it is a header; what results show is read for the codes chosen
            details := details || (
                SELECT jsonb_object_agg(sys || '|' || c.code,
                                        CASE WHEN d.code IS NULL THEN 'null'::jsonb
                                             ELSE jsonb_build_object('ord', joined + c.n,
                                                                     'billable', d.billable,
                                                                     'has_children', d.has_children) END)
                FROM unnest(codes) WITH ORDINALITY AS c(code, n)
                LEFT JOIN medrag_code_detail d
                    ON d.release_id = (releases -> sys ->> 'id')::int AND d.code = c.code
                   AND d.kind = ANY (ARRAY(SELECT jsonb_array_elements_text(kinds -> sys)))
                   AND (d.termination_date IS NULL OR d.termination_date >= current_date)
                   AND EXISTS (SELECT 1 FROM medrag_code_term t
                               WHERE t.release_id = d.release_id AND t.code = d.code AND t.n = 0));
            joined := joined + cardinality(codes);
        END LOOP;
        best := medrag_best_hits(best, '[]', details);
        -- the cosine of each new candidate of a system the vector leg searched
        FOREACH sys IN ARRAY semantic_systems LOOP
            codes := ARRAY(SELECT substr(d.key, length(sys || '|') + 1) FROM jsonb_each(details) d
                           WHERE left(d.key, length(sys) + 1) = sys || '|' AND jsonb_typeof(d.value) = 'object'
                             AND NOT sims ? d.key);
            CONTINUE WHEN cardinality(codes) = 0;
            sims := sims || (
                SELECT jsonb_object_agg(sys || '|' || c.code, s.similarity)
                FROM unnest(codes) AS c(code)
                LEFT JOIN (SELECT d.key AS code, max(1 - (v.embedding <=> query_embedding))::float8 AS similarity
                           FROM document d JOIN chunk ch ON ch.document_id = d.id
                           JOIN chunk_vector v ON v.chunk_id = ch.id
                           WHERE d.source = cfg -> 'sources' ->> sys AND d.is_current AND d.key = ANY (codes)
                           GROUP BY d.key) s ON s.code = c.code);
        END LOOP;
        timings := medrag_add_elapsed(timings, 'candidates', stage_started);
        timings := timings || jsonb_build_object('round_' || round_no,
                                                 medrag_elapsed_ms(round_started));
        trace := trace || (format('round %s: ', round_no) || array_to_string(
            ARRAY(SELECT part FROM (
                      SELECT r.n, 'hits' AS k, 0 AS i, (r.value ->> 'leg') || ' ' || (r.value ->> 'system') || ' '
                             || (SELECT count(*) FROM jsonb_array_elements(r.value -> 'hits') AS h
                                 WHERE jsonb_typeof(details -> ((r.value ->> 'system') || '|' || (h.value ->> 'code')))
                                       = 'object')
                             || ' (' || medrag_fixed((r.value ->> 'ms')::float8, 0) || ' ms)' AS part
                      FROM jsonb_array_elements(results) WITH ORDINALITY AS r(value, n)
                      UNION ALL
                      SELECT r.n, 'missing', 0, string_agg(c.code, ', ' ORDER BY c.i) || ' not in ' || (r.value ->> 'system') || ' '
                                     || (releases -> (r.value ->> 'system') ->> 'label')
                      FROM jsonb_array_elements(results) WITH ORDINALITY AS r(value, n),
                           jsonb_array_elements_text(r.value -> 'codes') WITH ORDINALITY AS c(code, i)
                      WHERE r.value ->> 'leg' = 'exact'
                        AND jsonb_typeof(details -> ((r.value ->> 'system') || '|' || c.code)) IS DISTINCT FROM 'object'
                      GROUP BY r.n, r.value
                      UNION ALL
                      SELECT NULL, 'skipped', i, s || ' skipped' FROM unnest(skipped) WITH ORDINALITY AS x(s, i)) parts
                  ORDER BY n NULLS LAST, k, i), '; ')
            || ' [' || medrag_fixed((timings ->> ('round_' || round_no))::float8, 0) || ' ms]');

        -- 3. score every candidate, one statement per system
        stage_started := clock_timestamp();
        FOREACH sys IN ARRAY all_systems LOOP
            item := medrag_code_scoring_input(best, details, sims, sys);
            CONTINUE WHEN item IS NULL;
            scores := scores || (
                SELECT jsonb_object_agg(sys || '|' || s.code,
                                        to_jsonb(s) - 'code' || jsonb_build_object('prior', coalesce((priors ->> sys)::float8, 1.0)))
                FROM medrag_score_codes((releases -> sys ->> 'id')::int,
                                        ARRAY(SELECT jsonb_array_elements_text(cfg -> 'all_kinds' -> sys)), item,
                                        medrag_term_json(concepts, sys, term_text, wants_modifiers,
                                                         coalesce((priors ->> sys)::float8, 1.0),
                                                         sys = ANY (semantic_systems), cfg -> 'origin_weights')) s);
        END LOOP;

        pool := medrag_code_pool(best, details, scores, cfg);
        timings := medrag_add_elapsed(timings, 'scoring', stage_started);
        stage_started := clock_timestamp();

        -- 4. reflect: a weak system the classifier favours (or any, when nothing was found) is broadened, a header
        -- among the best codes narrowed
        reasons := '{}';
        expansions := '[]';
        misspelled := '{}';
        dropped := false;
        headers := '{}';
        SELECT max(coalesce((priors ->> s)::float8, 1.0)) INTO favoured FROM unnest(searched) AS s;
        nothing_found := NOT EXISTS (SELECT 1 FROM unnest(searched) AS s,
                                     LATERAL medrag_code_ranked(pool, cfg, s) r);
        FOREACH sys IN ARRAY searched LOOP
            SELECT r INTO first_code FROM medrag_code_ranked(pool, cfg, sys) r LIMIT 1;
            IF first_code IS NULL THEN
                txt := sys || ': nothing at or above ' || (cfg ->> 'min_score');
            ELSIF (first_code ->> 'exact')::boolean OR (first_code ->> 'lexical')::float8 >= (cfg ->> 'good_lexical')::float8 THEN
                CONTINUE;
            ELSE
                txt := format('%s: best code %s covers %s%% of the term (lexical %s)', sys, first_code ->> 'code',
                              medrag_percent((first_code ->> 'coverage')::float8),
                              medrag_fixed((first_code ->> 'lexical')::float8, 2));
            END IF;
            CONTINUE WHEN NOT (coalesce((priors ->> sys)::float8, 1.0) >= favoured OR nothing_found);
            -- the words the system's candidates hold: their wordings (and those above them), the Index entries found
            pool_lexemes := ARRAY(
                SELECT DISTINCT x.l
                FROM (SELECT unnest(d.lexemes) AS l
                      FROM medrag_code_details((releases -> sys ->> 'id')::int,
                                               ARRAY(SELECT p ->> 'code' FROM jsonb_array_elements(pool) p
                                                     WHERE p ->> 'system' = sys),
                                               ARRAY(SELECT jsonb_array_elements_text(cfg -> 'all_kinds' -> sys))) d
                      UNION ALL
                      SELECT jsonb_array_elements_text(p -> 'index_hit' -> 'lexemes') FROM jsonb_array_elements(pool) p
                      WHERE p ->> 'system' = sys) x);
            broaden := medrag_code_broaden(concepts, sys, pool_lexemes, first_code IS NULL, synonyms_tried,
                                           spelling_tried, known, cfg);
            IF broaden ? 'expansions' THEN
                synonyms_tried := synonyms_tried || ARRAY(SELECT e ->> 'text' FROM jsonb_array_elements(broaden -> 'expansions') e);
                expansions := expansions || (broaden -> 'expansions');
            ELSIF broaden ? 'misspelled' THEN
                spelling_tried := spelling_tried || ARRAY(SELECT sys || '|' || w
                                                          FROM jsonb_array_elements_text(broaden -> 'misspelled') w);
                misspelled := misspelled || jsonb_build_object(sys, broaden -> 'misspelled');
            ELSIF broaden ? 'dropped' THEN
                FOR n IN SELECT jsonb_array_elements_text(broaden -> 'dropped')::int LOOP
                    concepts := jsonb_set(concepts, ARRAY[(n - 1)::text, 'dropped'], 'true');
                END LOOP;
                dropped := true;
            ELSE
                CONTINUE;
            END IF;
            reasons := reasons || (txt || '; ' || (broaden ->> 'reason'));
        END LOOP;
        IF 'ICD-10-CM' = ANY (searched) THEN
            -- headers among the best codes, before the ranking hides those with a code below them in the list
            headers := ARRAY(SELECT b.p ->> 'code'
                             FROM (SELECT p, (p ->> 'score')::float8 AS score, (p ->> 'ord')::float8 AS ord
                                   FROM jsonb_array_elements(pool) p
                                   WHERE p ->> 'system' = 'ICD-10-CM' AND (p ->> 'score')::float8 >= min_score
                                   ORDER BY 2 DESC, 3
                                   LIMIT (cfg ->> 'max_headers')::int) b
                             WHERE (b.p ->> 'is_header')::boolean AND NOT (b.p ->> 'exact')::boolean
                               AND b.p ->> 'code' <> ALL (headers_expanded)
                             ORDER BY b.score DESC, b.ord);
            IF cardinality(headers) > 0 THEN
                headers_expanded := headers_expanded || headers;
                reasons := reasons || ('ICD-10-CM: too general: narrow ' || array_to_string(headers, ', ')
                                       || ' to billable leaf codes');
            END IF;
        END IF;
        FOREACH sys IN ARRAY searched LOOP
            SELECT 'score ' || sys || ': ' || string_agg(medrag_code_explain(b.p), '; ' ORDER BY b.score DESC, b.ord)
            INTO txt
            FROM (SELECT p, (p ->> 'score')::float8 AS score, (p ->> 'ord')::float8 AS ord
                  FROM jsonb_array_elements(pool) p
                  WHERE p ->> 'system' = sys AND (p ->> 'score')::float8 > 0 ORDER BY 2 DESC, 3
                  LIMIT (cfg ->> 'trace_codes_shown')::int) b;
            IF txt IS NOT NULL THEN
                trace := trace || txt;
            END IF;
        END LOOP;
        timings := medrag_add_elapsed(timings, 'reflect', stage_started);
        IF jsonb_array_length(expansions) = 0 AND misspelled = '{}' AND NOT dropped AND cardinality(headers) = 0 THEN
            trace := trace || CASE WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(pool) p WHERE (p ->> 'score')::float8 > 0)
                                   THEN 'reflect: enough' ELSE 'reflect: nothing to broaden' END;
            EXIT;
        END IF;
        trace := trace || ARRAY(SELECT 'reflect: ' || r FROM unnest(reasons) AS r);
        IF round_no >= (cfg ->> 'max_rounds')::int THEN
            trace := trace || format('stop after %s rounds', round_no);
            EXIT;
        END IF;
        round_no := round_no + 1;
    END LOOP;

    -- 5. the choice: each system's best codes, merged by confidence; a code needing a 7th character reported in
    -- the form of the encounter the term names (else the Tabular's first)
    related_started := clock_timestamp();
    SELECT coalesce(jsonb_agg(c.value ORDER BY (c.value ->> 'confidence')::float8 DESC, (c.value ->> 'score')::float8 DESC,
                              NOT (c.value ->> 'is_default')::boolean, c.value ->> 'code' COLLATE "C"), '[]')
    INTO chosen
    FROM unnest(searched) AS s(system)
    CROSS JOIN LATERAL (SELECT r AS value FROM medrag_code_ranked(pool, cfg, s.system) r
                        LIMIT top) c;
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
        'seventh', coalesce(jsonb_agg(medrag_describe_seventh(c.value, f.form, cls ->> 'encounter') ORDER BY c.n)
                            FILTER (WHERE f.form IS NOT NULL), '[]'))
    INTO output
    FROM jsonb_array_elements(chosen) WITH ORDINALITY AS c(value, n)
    CROSS JOIN LATERAL (SELECT medrag_seventh_form(c.value, cls ->> 'encounter') AS form) f
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
