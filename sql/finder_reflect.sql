-- Stage 5 of the code finder (sql/finder.sql): reflect, deciding the next round.

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
                                            'expansions', medrag_code_synonyms() -> t.term -> 'expansions')
                         ORDER BY f.n) AS found
        -- the table's term a concept matched, which its words may inflect ("mini strokes": mini stroke)
        FROM focus f
        CROSS JOIN LATERAL (SELECT coalesce(concepts -> (f.n::int - 1) ->> 'synonym', f.text) AS term) t
        WHERE medrag_code_synonyms() ? t.term AND f.text <> ALL (synonyms_tried)
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

-- Stage 5, reflect: the next round, decided from the scored pool. A weak system the classifier favours (or any, when
-- nothing was found) is broadened (medrag_code_broaden: synonyms, else spelling, else its qualifiers left out); a
-- header among the best codes is narrowed to its billable codes. With nothing to do, or after max_rounds, the search
-- is done; otherwise the decisions are applied to the term's concepts (a synonym's wording, the spelling corrected to
-- a release's description word, then the routing priors of the corrected words) and the next round is set: the
-- systems whose concepts changed and the headers to narrow.
CREATE OR REPLACE FUNCTION medrag_code_reflect(state jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_column
DECLARE
    cfg constant jsonb := coalesce(state -> 'config', medrag_code_finder_config());  -- the analysis's settings
    stage_started timestamptz := clock_timestamp();
    round_no constant integer := (state ->> 'round')::int;
    searched constant text[] := ARRAY(SELECT jsonb_array_elements_text(state -> 'searched'));
    all_systems constant text[] := ARRAY(SELECT jsonb_array_elements_text(state -> 'all_systems'));
    releases constant jsonb := state -> 'releases';
    pool constant jsonb := state -> 'pool';
    known constant text[] := ARRAY(SELECT jsonb_array_elements_text(state -> 'known'));
    min_score constant float8 := (cfg ->> 'min_score')::float8;
    cls constant jsonb := state -> 'classification';
    concepts jsonb := state -> 'concepts';
    priors jsonb := state -> 'priors';
    trace text[] := ARRAY(SELECT jsonb_array_elements_text(state -> 'trace'));
    timings jsonb;
    synonyms_tried text[] := ARRAY(SELECT jsonb_array_elements_text(state -> 'synonyms_tried'));
    spelling_tried text[] := ARRAY(SELECT jsonb_array_elements_text(state -> 'spelling_tried'));
    headers_expanded text[] := ARRAY(SELECT jsonb_array_elements_text(state -> 'headers_expanded'));
    reasons text[] := '{}';
    expansions jsonb := '[]';
    misspelled jsonb := '{}';
    dropped boolean := false;
    headers text[] := '{}';
    changed text[] := '{}';
    favoured float8;
    nothing_found boolean;
    first_code jsonb;
    broaden jsonb;
    pool_lexemes text[];
    corrected record;
    fixed text[];
    added jsonb;
    cls2 jsonb;
    priors2 jsonb;
    item jsonb;
    typed_word text;
    sys text;
    txt text;
    n integer;
BEGIN
    SELECT max(coalesce((priors ->> s)::float8, 1.0)) INTO favoured FROM unnest(searched) AS s;
    nothing_found := NOT EXISTS (SELECT 1 FROM unnest(searched) AS s, LATERAL medrag_code_ranked(pool, cfg, s) r);
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
        -- and those the Index's best entries give, wherever they rank among the scores: their codes are what those
        -- entries lead to. A header needs at least min_score; the family of a code of unspecified side (which the
        -- side the term names contradicts) needs its entry to hold min_coverage of the term
        headers := headers || ARRAY(SELECT b.header
                                    FROM medrag_index_best_headers(state -> 'best', state -> 'details',
                                                                   (releases -> 'ICD-10-CM' ->> 'id')::int,
                                                                   medrag_term_sides(concepts)) b
                                    WHERE b.header <> ALL (headers_expanded) AND b.header <> ALL (headers)
                                      AND EXISTS (SELECT 1 FROM jsonb_array_elements(pool) p
                                                  WHERE p ->> 'system' = 'ICD-10-CM' AND p ->> 'code' = b.entry
                                                    AND CASE WHEN b.header = b.entry
                                                             THEN (p ->> 'score')::float8 >= min_score
                                                             ELSE (p ->> 'coverage')::float8
                                                                  >= (cfg ->> 'min_coverage')::float8 END)
                                    ORDER BY b.header);
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
    timings := medrag_add_elapsed(state -> 'timings', 'reflect', stage_started);
    IF jsonb_array_length(expansions) = 0 AND misspelled = '{}' AND NOT dropped AND cardinality(headers) = 0 THEN
        trace := trace || CASE WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(pool) p WHERE (p ->> 'score')::float8 > 0)
                               THEN 'reflect: enough' ELSE 'reflect: nothing to broaden' END;
        RETURN state || jsonb_build_object('trace', to_jsonb(trace), 'timings', timings, 'done', true);
    END IF;
    trace := trace || ARRAY(SELECT 'reflect: ' || r FROM unnest(reasons) AS r);
    IF round_no >= (cfg ->> 'max_rounds')::int THEN
        trace := trace || format('stop after %s rounds', round_no);
        RETURN state || jsonb_build_object('trace', to_jsonb(trace), 'timings', timings, 'done', true);
    END IF;

    -- the decisions applied for the next round: synonyms' wordings, then spelling corrections
    stage_started := clock_timestamp();
    FOR item IN SELECT value FROM jsonb_array_elements(expansions) LOOP
        n := (item ->> 'concept')::int;
        FOR txt IN SELECT jsonb_array_elements_text(item -> 'expansions') LOOP
            added := medrag_add_wording(concepts, n, medrag_words_of(txt), 'synonym');
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
            added := medrag_add_wording(concepts, n, fixed, 'spelling');
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
    RETURN state || jsonb_build_object(
        'round', round_no + 1, 'concepts', concepts, 'priors', priors, 'changed', to_jsonb(changed),
        'headers', to_jsonb(headers), 'synonyms_tried', to_jsonb(synonyms_tried),
        'spelling_tried', to_jsonb(spelling_tried), 'headers_expanded', to_jsonb(headers_expanded),
        'trace', to_jsonb(trace), 'timings', medrag_add_elapsed(timings, 'analysis', stage_started));
END
$$;
