-- The code finder (medrag_find_codes): a term in, ICD-10-CM and HCPCS codes out, with confidence, tier and the
-- trace of how they were found. `medrag codes`, the API's /codes and the code slots of medrag_search all call it, so
-- there is one code ranking whichever door a question comes in by. It composes six stages, each a function psql can
-- call on its own, each in its own file, handing one jsonb state from stage to stage (docs/codes.md):
--   1. analyse the term            medrag_code_analysis      sql/finder_analysis.sql
--   2. candidates per leg          medrag_code_candidates    sql/finder_candidates.sql (medrag_code_*_leg)
--   3. one feature row per candidate  medrag_code_features   sql/finder_features.sql
--   4. score                       medrag_score_codes, medrag_code_scoring   sql/finder_score.sql
--   5. reflect (the next round)    medrag_code_reflect       sql/finder_reflect.sql
--   6. choose and tier             medrag_code_choice        sql/finder_choice.sql
-- Stages 2 to 5 repeat, at most max_rounds rounds. Every number they work by is medrag_settings() (the registry,
-- medrag/core/tuning.py); the names (systems, sources, kinds) are medrag_code_finder_names().
--
-- This file holds what the stages share (the settings as one jsonb, the code details, the probes of what a release
-- has, timings and how the trace prints numbers) and the composition itself. The state: the term's analysis
-- (classification, concepts, priors, systems searched, releases), the pool (`best`: each lookup's best hit per code,
-- system|code|leg -> hit; `details`: each code read, system|code -> its details or null where the release lacks it;
-- `similarities`; `pool`: the scored candidates, each with its features and score), the round and what
-- it looks up (`changed` systems, `headers` to narrow), trace and timings, and `done`.

-- What medrag_find_codes works by, as one jsonb: its names (medrag_code_finder_names) and every number
-- (medrag_settings, each this session's override or its value).
CREATE OR REPLACE FUNCTION medrag_code_finder_config()
RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT medrag_code_finder_names() || to_jsonb(s) FROM medrag_settings() s
$$;

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

-- A finder stage's time added to the call's timings: they add up by stage across the rounds, so a profile says where
-- a term's time went.
CREATE OR REPLACE FUNCTION medrag_add_elapsed(timings jsonb, stage text, since timestamptz)
RETURNS jsonb
LANGUAGE sql VOLATILE
AS $$
    SELECT timings || jsonb_build_object(stage, coalesce((timings ->> stage)::float8, 0)
                                                + medrag_elapsed_ms(since))
$$;

-- x rounded to 3 decimals exactly as Python's round(x, 3) rounds it (the float's exact binary value, ties to even):
-- scores are compared and shown rounded, and a cast to numeric would round 0.4125 (0.41249999...) up. |x| x 2^62 is
-- an exact integer for every x from 2^-10 up (smaller ones round to 0 or 0.001 alike): the thousandths are that x
-- 1000 / 2^62, rounded half to even by the remainder. One expression, so it is inlined.
CREATE OR REPLACE FUNCTION medrag_round3(x double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT sign(x) * ((div((abs(x) * 4611686018427387904::float8)::int8::numeric * 1000,
                           4611686018427387904)
                       + CASE WHEN 2 * mod((abs(x) * 4611686018427387904::float8)::int8::numeric * 1000,
                                           4611686018427387904) > 4611686018427387904
                                   OR (2 * mod((abs(x) * 4611686018427387904::float8)::int8::numeric * 1000,
                                               4611686018427387904) = 4611686018427387904
                                       AND mod(div((abs(x) * 4611686018427387904::float8)::int8::numeric * 1000,
                                                   4611686018427387904), 2) = 1)
                              THEN 1 ELSE 0 END) / 1000.0)::float8
$$;

-- Sides with "both" added when they hold left and right: the sides lexemes name, after medrag_code_settings()'s
-- side_lexemes. One expression, so it is inlined.
CREATE OR REPLACE FUNCTION medrag_with_both(sides text[])
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN sides @> ARRAY['left', 'right'] AND NOT 'both' = ANY (sides) THEN sides || 'both'::text
                ELSE sides END
$$;

-- The sides lexemes name (medrag_code_words()'s side_lexemes: right, left, both, one), "both" as well when they name
-- right and left: the sides a term asks for, which a code's sides and unspecified_side_of are compared with.
CREATE OR REPLACE FUNCTION medrag_lexeme_sides(lexemes text[])
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT medrag_with_both(ARRAY(SELECT DISTINCT side.value
                                  FROM medrag_code_words() w, jsonb_each_text(w.side_lexemes) side
                                  WHERE side.key = ANY (lexemes)
                                  ORDER BY 1))
$$;

-- A jsonb array of strings as a text[] (the two literals quote strings alike): a cast, not a sub-select per
-- element.
CREATE OR REPLACE FUNCTION medrag_text_array(strings jsonb)
RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE  -- as the text[] input it calls: so it is inlined
AS $$
    SELECT translate(strings::text, '[]', '{}')::text[]
$$;

-- What the code finder shows and reflects on of each of a release's codes (medrag_code_detail and medrag_code_term,
-- written as the release loads): the codes that exist, are of the kinds asked for and, for HCPCS, are not
-- terminated; lexemes are those of the code's wordings and of the inclusion terms of the codes above it.
CREATE OR REPLACE FUNCTION medrag_code_details(code_release integer, codes text[], kinds text[])
RETURNS TABLE (code text, display text, billable boolean, parent_code text, parent_display text, kind text,
               has_children boolean, seventh jsonb, lexemes text[])
LANGUAGE sql STABLE
AS $$
    SELECT d.code, t.text, d.billable, d.parent_code, p.text, d.kind, d.has_children, d.seventh,
           ARRAY(SELECT DISTINCT unnest(t.lexemes) FROM medrag_code_term t
                 WHERE t.release_id = d.release_id AND t.code = ANY (d.code || above.codes)
                   AND (t.code = d.code OR t.n > 0))
    FROM unnest(codes) WITH ORDINALITY AS h(code, n)
    JOIN medrag_code_detail d ON d.release_id = code_release AND d.code = h.code
    JOIN medrag_code_term t ON t.release_id = d.release_id AND t.code = d.code AND t.n = 0
    LEFT JOIN medrag_code_term p ON p.release_id = d.release_id AND p.code = d.parent_code AND p.n = 0
    CROSS JOIN LATERAL medrag_code_ancestors(d.code, d.kind) above
    WHERE d.kind = ANY (kinds) AND (d.termination_date IS NULL OR d.termination_date >= current_date)
    ORDER BY h.n
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

-- Codes for a clinical term (or a code written in it), best first, at most `top` per system: {systems, encounter,
-- results: [{system, code, display, confidence, tier, billable, related}], trace: [how they were found], timings,
-- and with with_candidates candidates: [every scored candidate and its features]}. systems: names as `medrag codes
-- --system` takes them (all when NULL); release_label: a release other than the current one; query_embedding: the
-- term's embedding (the vector leg and the semantic feature; without one the lexical legs answer alone). The stages,
-- in order: analyse, then rounds of candidates, scoring (features and score) and reflection until one is done, then
-- the choice.
-- another argument list is another function: a database migrated before with_candidates would keep the
-- five-argument finder beside this one
DROP FUNCTION IF EXISTS medrag_find_codes(text, text[], text, integer, vector);
CREATE OR REPLACE FUNCTION medrag_find_codes(term text, systems text[] DEFAULT NULL, release_label text DEFAULT NULL,
                                             top integer DEFAULT NULL, query_embedding vector DEFAULT NULL,
                                             with_candidates boolean DEFAULT false)
RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    state jsonb;
BEGIN
    state := medrag_code_analysis(term, systems, release_label, top, query_embedding IS NOT NULL);
    LOOP
        state := medrag_code_candidates(state, query_embedding);
        EXIT WHEN (state ->> 'done')::boolean;
        state := medrag_code_reflect(medrag_code_scoring(state));
        EXIT WHEN (state ->> 'done')::boolean;
    END LOOP;
    RETURN medrag_code_choice(state, with_candidates);
END
$$;
