-- Stage 1 of the code finder (sql/finder.sql): analyse the term. The classification and the concepts themselves are
-- rendered from Python into generated.sql (medrag_classify_code_term, medrag_code_concepts); here is what the other
-- stages read of them, the one check of a query, and the stage that starts the finder's state.

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
-- searched concepts (what the Index leg matches), how many concepts are searched, and each lexeme of a typed word's
-- other forms with the typed word's lexeme (forms: the Index leg counts the forms of one word once).
DROP FUNCTION IF EXISTS medrag_term_lookups(jsonb, text, integer);
CREATE OR REPLACE FUNCTION medrag_term_lookups(concepts jsonb, code_system text, min_pattern integer)
RETURNS TABLE (patterns text[], tsquery text, lexemes text[], searched integer, forms jsonb)
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
           (SELECT count(*)::int FROM searched),
           (SELECT coalesce(jsonb_object_agg(f.lexeme, t.lexeme), '{}')
            FROM searched s
            CROSS JOIN LATERAL (SELECT w.value -> 'lexemes' ->> 0 AS lexeme FROM jsonb_array_elements(s.wordings) AS w
                                WHERE w.value ->> 'origin' = 'typed' AND jsonb_array_length(w.value -> 'lexemes') = 1) t
            CROSS JOIN LATERAL (SELECT w.value -> 'lexemes' ->> 0 AS lexeme FROM jsonb_array_elements(s.wordings) AS w
                                WHERE w.value ->> 'origin' = medrag_code_finder_names() ->> 'word_form') f)
$$;

-- What medrag_score_codes reads of a term's current concepts for the codes of one system: its focus concepts (to
-- cover), context (another system's half of a multi-intent term), negations, and the lexemes that explain a code's
-- words (synonyms included; "non" + a negated word), and what it says is absent the way ICD-10-CM words it.
CREATE OR REPLACE FUNCTION medrag_term_json(concepts jsonb, code_system text, term_text text, wants_modifiers boolean,
                                            prior double precision, semantic boolean, origin_weights jsonb)
RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
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
    -- a typed word's other form (word_form) explains a code's word, but the term does not say it: "epileptic" is
    -- not "status epilepticus", which a code "without status epilepticus" would then contradict
    affirmed AS (
        SELECT DISTINCT l
        FROM c, jsonb_array_elements(c.wordings) AS w(value), jsonb_array_elements_text(w.value -> 'lexemes') AS l
        WHERE NOT c.negated AND w.value ->> 'origin' <> medrag_code_finder_names() ->> 'word_form'
    ),
    -- what the term says is absent, and what the Index calls it ("without inflammation of the esophagus": without
    -- esophagitis, a concept's index_name wording whose words are all in the absence)
    stated_absences AS (SELECT medrag_absences(term_text) AS value),
    absences AS (
        SELECT s.value || coalesce((
                   SELECT jsonb_agg(jsonb_build_array(x.cue, x.words, x.lexemes) ORDER BY x.first_at)
                   FROM (SELECT a.value ->> 0 AS cue, w.value -> 'words' AS words, w.value -> 'lexemes' AS lexemes,
                                min(ARRAY[a.n, c.n, w.n]) AS first_at
                         FROM jsonb_array_elements(s.value) WITH ORDINALITY AS a(value, n), c,
                              jsonb_array_elements(c.wordings) WITH ORDINALITY AS w(value, n)
                         WHERE w.value ->> 'origin' = medrag_code_finder_names() ->> 'index_name'
                           AND c.words <@ ARRAY(SELECT jsonb_array_elements_text(a.value -> 1))
                         GROUP BY 1, 2, 3) x), '[]') AS value
        FROM stated_absences s
    ),
    absent AS (
        -- the lexemes said absent: the absences' own, and their concepts' as corrected and expanded ("without
        -- complicatons": complic)
        SELECT l FROM absences, jsonb_array_elements(absences.value) a, jsonb_array_elements_text(a.value -> 2) l
        UNION
        SELECT l
        FROM absences, c, unnest(c.lexemes) AS l
        WHERE c.words <@ ARRAY(SELECT jsonb_array_elements_text(a.value -> 1)
                               FROM jsonb_array_elements(absences.value) a)
    )
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
                      -- every wording's lexemes, the other forms' too (what the term affirms is among them)
                      FROM (SELECT l FROM c, unnest(c.lexemes) AS l WHERE NOT c.negated
                            UNION SELECT e FROM c, unnest(c.explains) AS e WHERE NOT c.negated
                            UNION SELECT 'non' || l FROM c, unnest(c.lexemes) AS l WHERE c.negated) x(l)),
        'asks_other', 'other' = ANY (regexp_split_to_array(lower(term_text), '\s+')),
        'absences', (SELECT value FROM absences),
        'absent', (SELECT coalesce(jsonb_agg(l ORDER BY l COLLATE "C"), '[]') FROM absent),
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

-- The concepts with a wording (its words, stemmed as the full-text index stems) added to concept n (from 1), or NULL
-- when it adds nothing: no lexemes, or those of a wording the concept has.
DROP FUNCTION IF EXISTS medrag_add_wording(jsonb, integer, jsonb, text[], text);
CREATE OR REPLACE FUNCTION medrag_add_wording(concepts jsonb, n integer, words text[], origin text)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN cardinality(x.lexemes) = 0
                  OR EXISTS (SELECT 1 FROM jsonb_array_elements(concepts -> (n - 1) -> 'wordings') AS w(value)
                             WHERE ARRAY(SELECT DISTINCT l COLLATE "C"
                                         FROM jsonb_array_elements_text(w.value -> 'lexemes') AS l ORDER BY 1)
                                   = x.lexemes)
                THEN NULL
                ELSE jsonb_set(concepts, ARRAY[(n - 1)::text, 'wordings'],
                               (concepts -> (n - 1) -> 'wordings')
                               || jsonb_build_array(jsonb_build_object('words', to_jsonb(words), 'origin', origin,
                                                                       'lexemes', to_jsonb(x.lexemes)))) END
    FROM (SELECT ARRAY(SELECT DISTINCT l COLLATE "C" FROM unnest(words) AS w,
                              unnest(tsvector_to_array(to_tsvector('english', w))) AS l ORDER BY 1) AS lexemes) x
$$;

-- Each searched-for concept of a term (not dropped) with its words and the lexemes of its wording as typed.
CREATE OR REPLACE FUNCTION medrag_typed_concepts(concepts jsonb)
RETURNS TABLE (n integer, words text[], lexemes text[])
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT c.n::int, c.words,
           ARRAY(SELECT DISTINCT l COLLATE "C" FROM jsonb_array_elements(c.wordings) AS w(value),
                        jsonb_array_elements_text(w.value -> 'lexemes') AS l
                 WHERE w.value ->> 'origin' = 'typed' ORDER BY 1)
    FROM medrag_term_concepts(concepts) c
    WHERE NOT c.dropped
$$;

-- What the ICD-10-CM Index calls a run of the term's concepts said absent. An Index entry that refers elsewhere with a
-- "see" ("Inflammation > esophagus - see Esophagitis", "Blood > in urine - see Hematuria") says its words are another
-- name for the entry it names. So a run of consecutive concepts whose typed words are that entry's words, no more and
-- no fewer, and whose first concept starts with a word of `starts`, is also worded as the named entry: "without
-- inflammation of the esophagus" says what "Gastro-esophageal reflux disease without esophagitis" does. `starts`
-- holds the first word of each clause the term says is absent (medrag_absences): a "without" clause ends at "of",
-- the Index's phrase may not, and a clause that runs on to other words is renamed only from its head. A reference
-- to a generic entry ("Esophagus - see condition", whose referrers name no alias of it) names nothing. Rows [first
-- concept n, last concept n, the entry's words, the named entry's words].
CREATE OR REPLACE FUNCTION medrag_index_names(concepts jsonb, index_release integer, starts text[])
RETURNS TABLE (first_n integer, last_n integer, entry_words text, named_words text[])
LANGUAGE plpgsql STABLE PARALLEL SAFE
-- planned for each call's lexemes: a generic plan reads the Index whole (30 ms) where the GIN index on the referring
-- entries' core lexemes answers in 1 ms
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    typed_lexemes text[];
BEGIN
    IF index_release IS NULL OR coalesce(cardinality(starts), 0) = 0 THEN
        RETURN;
    END IF;
    typed_lexemes := ARRAY(SELECT DISTINCT l FROM medrag_typed_concepts(concepts) c, unnest(c.lexemes) AS l);
    IF cardinality(typed_lexemes) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH c AS MATERIALIZED (SELECT * FROM medrag_typed_concepts(concepts)),
    entry AS (
        SELECT DISTINCT ON (e.core_lexemes, t.core_text) array_remove(e.core_lexemes, 'nec') AS lexemes,
               e.core_text, ARRAY(SELECT w FROM unnest(medrag_words_of(lower(t.core_text))) AS w WHERE w <> 'nec')
                   AS named_words
        FROM icd10cm_index_entry e
        JOIN icd10cm_index_entry t
          ON t.release_id = e.release_id AND t.index_name = e.index_name AND t.entry_id = e.see_entry_id
         AND t.column_name IS NULL AND cardinality(t.aliases) > 0
        WHERE e.release_id = index_release AND e.index_name = 'diseases' AND e.see IS NOT NULL
          AND e.see_entry_id IS NOT NULL AND e.core_lexemes <@ typed_lexemes
        ORDER BY e.core_lexemes, t.core_text, e.entry_id
    ),
    run AS (
        SELECT a.n AS first_n, b.n AS last_n,
               ARRAY(SELECT DISTINCT l FROM c x, unnest(x.lexemes) AS l WHERE x.n BETWEEN a.n AND b.n) AS lexemes
        FROM c a JOIN c b ON b.n >= a.n
        -- consecutive concepts, each with words of its own, from the head of a clause said absent
        WHERE a.words[1] = ANY (starts)
          AND (SELECT count(*) FROM c x WHERE x.n BETWEEN a.n AND b.n AND cardinality(x.lexemes) > 0)
              = b.n - a.n + 1
    )
    SELECT r.first_n, r.last_n, e.core_text, e.named_words
    FROM run r JOIN entry e ON r.lexemes @> e.lexemes AND r.lexemes <@ e.lexemes
    WHERE cardinality(e.named_words) > 0
    ORDER BY r.first_n, r.last_n, e.core_text;
END
$$;

-- Stage 1, analyse the term: the finder's state before any lookup (the state medrag_find_codes hands from stage to
-- stage, as jsonb, so psql can call each stage on its own). The classification and the term's concepts, the routing
-- priors, the systems searched and the release each reads (the current one, or the one labelled release_label), the
-- release whose Index serves ICD-10-CM, the systems the vector lookup can search (with_vectors: the caller has the
-- term's embedding) and the words the corpus knows; trace and timings start here. Bad input raises SQLSTATE 22023
-- (medrag_check_code_query).
DROP FUNCTION IF EXISTS medrag_code_analysis(text, text[], text, integer, boolean);
CREATE FUNCTION medrag_code_analysis(term text, systems text[] DEFAULT NULL, release_label text DEFAULT NULL,
                                     top integer DEFAULT NULL, with_vectors boolean DEFAULT false)
RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_column
DECLARE
    cfg constant jsonb := medrag_code_finder_config();
    all_systems constant text[] := ARRAY(SELECT jsonb_array_elements_text(cfg -> 'systems'));
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
    priors jsonb;
    semantic_systems text[] := '{}';
    skipped text[] := '{}';
    known text[] := '{}';
    absent_starts text[];
    named record;
    named_absent text[] := '{}';
    sys text;
    txt text;
BEGIN
    top := coalesce(top, (cfg ->> 'default_top')::int);
    requested := medrag_check_code_query(term, top, systems);
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
    -- what the term says is absent, also as the Index names it ("without inflammation of the esophagus": esophagitis)
    absent_starts := ARRAY(SELECT a.value -> 1 ->> 0 FROM jsonb_array_elements(medrag_absences(term_text)) AS a(value));
    IF index_release IS NOT NULL AND cardinality(absent_starts) > 0 THEN
        -- each run the Index names is a wording of every concept of it (origin index_name); one lookup, read once
        FOR named IN SELECT * FROM medrag_index_names(concepts, index_release, absent_starts) LOOP
            named_absent := named_absent
                            || (lower(named.entry_words) || ' = ' || array_to_string(named.named_words, ' '));
            FOR concept_n IN named.first_n .. named.last_n LOOP
                concepts := coalesce(medrag_add_wording(concepts, concept_n, named.named_words, cfg ->> 'index_name'),
                                     concepts);
            END LOOP;
        END LOOP;
        IF cardinality(named_absent) > 0 THEN
            trace := trace || ('absent as the Index names it: ' || array_to_string(named_absent, ', '));
        END IF;
    END IF;
    IF term_text <> '' THEN
        -- the systems the vector lookup searches: those whose code documents have embeddings, given the term's
        FOREACH sys IN ARRAY searched LOOP
            IF NOT medrag_has_embeddings(cfg -> 'sources' ->> sys) THEN
                skipped := skipped || ('vector ' || sys || ' (its code documents have no embeddings)');
            ELSIF with_vectors THEN
                semantic_systems := semantic_systems || sys;
            ELSIF NOT 'vector (no query embedder)' = ANY (skipped) THEN
                skipped := skipped || 'vector (no query embedder)'::text;
            END IF;
        END LOOP;
        SELECT string_agg(c.text, ', ' ORDER BY c.n) INTO txt
        FROM medrag_term_concepts(concepts) c WHERE c.negated;
        IF txt IS NOT NULL THEN
            trace := trace || ('negation: not ' || txt || ' (not searched; a code whose description names it '
                               || 'is left out)');
        END IF;
        -- the words searched as typed and another way: as the corpus writes them, in the Index's other forms, then
        -- as HCPCS abbreviations
        trace := trace || ARRAY(
            SELECT o.label || string_agg(c.text || ' = ' || (w.value -> 'words' ->> 0), ', ' ORDER BY c.n, w.n)
                   || ' (searched both ways)'
            FROM unnest(ARRAY['compound', 'word_form', 'abbreviation'],
                        ARRAY['as the corpus writes it: ', 'the Index''s other form: ', 'HCPCS abbreviation: '])
                     WITH ORDINALITY AS o(origin, label, position)
            JOIN (medrag_term_concepts(concepts) c
                  CROSS JOIN LATERAL jsonb_array_elements(c.wordings) WITH ORDINALITY AS w(value, n))
              ON w.value ->> 'origin' = o.origin
            GROUP BY o.position, o.label
            ORDER BY o.position);
        -- a word of the corpus that no code's wording holds ("medicare", "cover") is no misspelling
        known := ARRAY(SELECT w FROM unnest(medrag_words_of(term_text)) AS w WHERE medrag_known_word(lower(w)));
    END IF;
    RETURN jsonb_build_object(
        'term', term, 'top', top, 'started', started, 'round', 1,
        'classification', cls, 'term_text', term_text, 'wants_modifiers', wants_modifiers, 'kinds', kinds,
        'concepts', concepts, 'priors', priors, 'all_systems', to_jsonb(all_systems), 'searched', to_jsonb(searched),
        'releases', releases, 'index_release', index_release, 'semantic_systems', to_jsonb(semantic_systems),
        'skipped', to_jsonb(skipped), 'known', to_jsonb(known),
        -- the systems whose word lookups the round runs: every one in the first round (none for a term of codes only)
        'changed', CASE WHEN term_text <> '' THEN to_jsonb(searched) ELSE '[]'::jsonb END, 'headers', '[]'::jsonb,
        'best', '{}'::jsonb, 'details', '{}'::jsonb, 'similarities', '{}'::jsonb,
        'pool', '[]'::jsonb, 'seq', 0, 'joined', 0,
        'synonyms_tried', '[]'::jsonb, 'spelling_tried', '[]'::jsonb, 'headers_expanded', '[]'::jsonb,
        'trace', to_jsonb(trace), 'timings', medrag_add_elapsed('{}', 'analysis', started), 'done', false,
        -- the names and numbers every stage works by, read once: a stage called alone reads them again
        'config', cfg);
END
$$;
