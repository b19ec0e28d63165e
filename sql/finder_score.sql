-- Stage 4 of the code finder (sql/finder.sql): score, with the confidence and tier of each score.
--
-- score = (lexical_weight x lexical + rank_weight x rank + specificity_weight x specificity + semantic_weight x
-- semantic) x routing prior, where
-- - lexical: coverage x (precision_floor + (1 - precision_floor) x precision) of the code's best wording (its description, an inclusion term, a term
--   of a code above it, or the Index entry that led to it). Coverage is the share of the term's concepts found in the
--   wording, a wording of a code above it with what the code adds to that code, a code taking a 7th character with
--   what its form says beyond the encounter (a word the wording names only after "without" does not count);
--   precision the share of the wording's content the term explains (nonessential modifiers in parentheses and filler
--   such as "NOS" set aside; "Other ..." residual codes count as unexplained, and, through an inherited wording, what
--   the code adds to that ancestor counts as the wording's own words do); a
--   HCPCS description that starts with the term's head noun, and a term's other half (a multi-intent term), add a
--   little;
-- - rank: the code's place after reciprocal-rank fusion of the lookups that found it;
-- - specificity: a billable leaf (the "unspecified" / "without" / NOS default above its siblings), a HCPCS code listed
--   in an LCD; against headers, pregnancy and newborn codes for a term that mentions neither, "not otherwise
--   classified" codes, accessories and quality-reporting codes nobody asked for, unrequested modifiers, HCPCS codes
--   Medicare does not pay at all (coverage code I: another payer's);
-- - semantic: the cosine similarity of the term and the code's document, from its floor (says nothing) to its top
--   (as good as it gets). Without vectors the other weights are scaled up to sum to one.
-- A code needs evidence: at least min_coverage of the term in its wording, or (without that) a strong similarity,
-- and then its score is capped; a code the term contradicts (it names what the term says is not so, or another
-- side) scores 0, and a code written in the term 1. A code without that evidence still has a guess: the score it would
-- have had, when its wording holds some of the term and the term does not contradict it; the choice lists the best
-- guesses only when no code of any system searched has evidence (medrag_code_choice).

-- Stage 4, score: each candidate's features (medrag_code_features) weighed into one score (see the head of this
-- file), times the system's routing prior; a code written in the term scores 1, one the term contradicts 0; and how
-- far each is behind the system's best. Rounded as Python rounds (medrag_round3).
DROP FUNCTION IF EXISTS medrag_score_codes(integer, text[], jsonb, jsonb);
CREATE OR REPLACE FUNCTION medrag_score_codes(code_release integer, kinds text[], candidates jsonb, term jsonb)
RETURNS TABLE (code text, lexical double precision, coverage double precision, best_term text,
               rank double precision, specificity double precision, semantic double precision,
               score double precision, behind double precision, is_default boolean, guess double precision)
LANGUAGE sql STABLE
-- planned once per session: every call's statement is the same and only its values differ
SET plan_cache_mode = force_generic_plan
AS $$
    WITH cfg AS (SELECT * FROM medrag_settings()),
    q AS (SELECT (term ->> 'prior')::float8 AS prior),
    ranked_feature AS (SELECT * FROM medrag_code_features(code_release, kinds, candidates, term)),
    scored AS (
        SELECT f.*,
               CASE WHEN f.exact THEN 1.0
                    WHEN f.contradicted THEN 0.0
                    ELSE medrag_round3(capped.value) END AS score,
               CASE WHEN f.exact OR f.contradicted OR f.coverage = 0 THEN 0.0
                    ELSE medrag_round3(least(1.0, total.value) * q.prior) END AS guess
        FROM ranked_feature f, cfg, q,
             LATERAL (SELECT CASE WHEN f.has_semantic
                                  THEN base.value + cfg.semantic_weight * coalesce(f.semantic, 0.0)
                                  ELSE base.value / (1.0 - cfg.semantic_weight) END AS value
                      FROM (SELECT cfg.lexical_weight * f.lexical + cfg.rank_weight * f.rank
                                   + cfg.specificity_weight * f.specificity AS value) base) total,
             -- less than min_coverage of the term in the code's wording is a guess, unless the embedding says the
             -- code means the term, and then a capped one
             LATERAL (SELECT least(1.0, CASE WHEN f.coverage >= cfg.min_coverage THEN total.value
                                             WHEN f.has_semantic AND f.similarity >= cfg.strong_similarity
                                             THEN least(total.value, cfg.semantic_only_cap)
                                             ELSE 0.0 END) * q.prior AS value
                      OFFSET 0) capped  -- a plain value for medrag_round3, which is then inlined
    ),
    best_score AS (SELECT max(score) AS value FROM scored)
    SELECT s.code, s.lexical, s.coverage, s.best_term, s.rank, s.specificity, s.semantic, s.score,
           medrag_round3(behind.value), s.is_default, s.guess
    FROM scored s, best_score, LATERAL (SELECT best_score.value - s.score AS value OFFSET 0) behind
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
               coalesce((c.features ->> 'guess')::float8, 0) AS guess,
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

-- When no system lists a code: a system's best guesses (medrag_score_codes), the candidates holding most of the term
-- first, a header left out when a code under it is a guess too.
CREATE OR REPLACE FUNCTION medrag_code_guesses(pool jsonb, code_system text)
RETURNS SETOF jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    WITH guessed AS (
        SELECT p.value AS c FROM jsonb_array_elements(pool) p
        WHERE p.value ->> 'system' = code_system AND (p.value ->> 'guess')::float8 > 0
    )
    SELECT g.c FROM guessed g
    WHERE NOT ((g.c ->> 'is_header')::boolean
               AND EXISTS (SELECT 1 FROM guessed h
                           WHERE h.c ->> 'code' <> g.c ->> 'code'
                             AND left(h.c ->> 'code', length(g.c ->> 'code')) = g.c ->> 'code'))
    ORDER BY (g.c ->> 'coverage')::float8 DESC, (g.c ->> 'guess')::float8 DESC, NOT (g.c ->> 'is_default')::boolean,
             g.c ->> 'code' COLLATE "C"
$$;

-- Stage 4 over the state: every candidate of the pool scored (its features, stage 3, weighed by medrag_score_codes,
-- one statement per system), then the pool as the rounds and the choice read it: each candidate with its legs,
-- score, calibrated confidence and tier (medrag_code_pool).
CREATE OR REPLACE FUNCTION medrag_code_scoring(state jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_column
DECLARE
    cfg constant jsonb := coalesce(state -> 'config', medrag_code_finder_config());  -- the analysis's settings
    stage_started constant timestamptz := clock_timestamp();
    semantic_systems constant text[] := ARRAY(SELECT jsonb_array_elements_text(state -> 'semantic_systems'));
    priors constant jsonb := state -> 'priors';
    -- every candidate is scored again each round (the term's concepts may have changed), so the pool, which holds
    -- each candidate's features and score, is the only copy the state keeps
    scores jsonb := '{}';
    item jsonb;
    sys text;
BEGIN
    FOR sys IN SELECT jsonb_array_elements_text(state -> 'all_systems') LOOP
        item := medrag_code_scoring_input(state -> 'best', state -> 'details', state -> 'similarities', sys);
        CONTINUE WHEN item IS NULL;
        scores := scores || (
            SELECT jsonb_object_agg(sys || '|' || s.code,
                                    to_jsonb(s) - 'code' || jsonb_build_object('prior', coalesce((priors ->> sys)::float8, 1.0)))
            FROM medrag_score_codes((state -> 'releases' -> sys ->> 'id')::int,
                                    ARRAY(SELECT jsonb_array_elements_text(cfg -> 'all_kinds' -> sys)), item,
                                    medrag_term_json(state -> 'concepts', sys, state ->> 'term_text',
                                                     (state ->> 'wants_modifiers')::boolean,
                                                     coalesce((priors ->> sys)::float8, 1.0),
                                                     sys = ANY (semantic_systems), cfg -> 'origin_weights')) s);
    END LOOP;
    RETURN state || jsonb_build_object(
        'pool', medrag_code_pool(state -> 'best', state -> 'details', scores, cfg),
        'timings', medrag_add_elapsed(state -> 'timings', 'scoring', stage_started));
END
$$;
