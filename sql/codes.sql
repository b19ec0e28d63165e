-- The code finder's scoring (medrag/codes/consolidate.py sends the candidates its lookups found; every statement is
-- CREATE OR REPLACE). A repeatable script like sql/search.sql: medrag.schema.migrate runs it whenever it changes. The
-- numbers it weighs evidence by are named in Python and rendered into generated.sql (medrag_code_settings); the
-- details it reads (medrag_code_detail) are written by the loaders (revision 0025 says what each column holds).
--
-- score = (lexical_weight x lexical + rank_weight x rank + specificity_weight x specificity + semantic_weight x
-- semantic) x routing prior, where
-- - lexical: coverage x (0.4 + 0.6 precision) of the code's best wording (its description, an inclusion term, a term
--   of a code above it, or the Index entry that led to it). Coverage is the share of the term's concepts found in the
--   wording (a word the wording names only after "without" does not count); precision the share of the wording's
--   content the term explains (nonessential modifiers in parentheses and filler such as "NOS" set aside; "Other ..."
--   residual codes and, through an inherited wording, what the code adds to that ancestor count as unexplained); a
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
-- side) scores 0, and a code written in the term 1.

-- Sides with "both" added when they hold left and right: the sides lexemes name, after medrag_code_settings()'s
-- side_lexemes. One expression, so it is inlined.
CREATE OR REPLACE FUNCTION medrag_with_both(sides text[])
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN sides @> ARRAY['left', 'right'] AND NOT 'both' = ANY (sides) THEN sides || 'both'::text
                ELSE sides END
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

-- A jsonb array of strings as a text[] (the two literals quote strings alike): a cast, not a sub-select per
-- element.
CREATE OR REPLACE FUNCTION medrag_text_array(strings jsonb)
RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE  -- as the text[] input it calls: so it is inlined
AS $$
    SELECT translate(strings::text, '[]', '{}')::text[]
$$;

-- The code finder's candidates of one code release scored for a term (see the head of this file): those the release
-- has, of the kinds asked for and, for HCPCS, not terminated. candidates: [{code, exact, similarity, hits: [[leg,
-- rank], ...] in the order the lookups reported them, index: [text, source, lexemes, core, negated] of the Index
-- entry that led to the code (source: the header it gave, when the code is under it) or null}]; term: {system,
-- focus, context, negations (each a list of concepts, a concept a list of its wordings' [weight, lexemes]), lexemes
-- (every lexeme the term affirms), explained (the lexemes a code's wording may hold and still be explained),
-- asks_other, wants_modifiers, prior (the routing prior of the system), semantic (whether the system's similarities
-- were read)}.
CREATE OR REPLACE FUNCTION medrag_score_codes(code_release integer, kinds text[], candidates jsonb, term jsonb)
RETURNS TABLE (code text, lexical double precision, coverage double precision, best_term text,
               rank double precision, specificity double precision, semantic double precision,
               score double precision, behind double precision, is_default boolean)
LANGUAGE sql STABLE
-- planned once per session: every call's statement is the same and only its values differ
SET plan_cache_mode = force_generic_plan
AS $$
    WITH cfg AS (SELECT * FROM medrag_settings(), medrag_code_words()),
    q AS MATERIALIZED (
        SELECT t.*, EXISTS (SELECT 1 FROM unnest(t.lexemes) l WHERE l ~ '^-*[0-9]+$') AS numbers_count,
               'without' = ANY (t.lexemes) AS asks_without,
               -- the sides the term names: a code of another side than the term's is another code ("Hearing aid,
               -- monaural" for "hearing aids for both ears", "... left knee" for "right knee")
               medrag_with_both(ARRAY(SELECT DISTINCT side.value
                                      FROM cfg, jsonb_each_text(cfg.side_lexemes) side
                                      WHERE side.key = ANY (t.explained))) AS asked_sides
        FROM (SELECT term ->> 'system' AS system,
                     ARRAY(SELECT jsonb_array_elements_text(term -> 'lexemes')) AS lexemes,
                     ARRAY(SELECT jsonb_array_elements_text(term -> 'explained')) AS explained,
                     (term ->> 'asks_other')::boolean AS asks_other,
                     (term ->> 'wants_modifiers')::boolean AS wants_modifiers,
                     (term ->> 'prior')::float8 AS prior, (term ->> 'semantic')::boolean AS semantic,
                     jsonb_array_length(term -> 'focus') AS n_focus,
                     jsonb_array_length(term -> 'context') AS n_context) t
    ),
    -- every lexeme of every wording of the term's concepts, by role (focus, context, negations)
    concept_lexeme AS MATERIALIZED (
        SELECT role, concept.n AS concept_n, wording.n AS wording_n, (wording.value ->> 0)::float8 AS weight,
               jsonb_array_length(wording.value -> 1) AS size, lexeme
        FROM unnest(ARRAY['focus', 'context', 'negations']) AS role,
             jsonb_array_elements(term -> role) WITH ORDINALITY AS concept(value, n),
             jsonb_array_elements(concept.value) WITH ORDINALITY AS wording(value, n),
             jsonb_array_elements_text(wording.value -> 1) AS lexeme
    ),
    candidate AS MATERIALIZED (
        SELECT d.code, coalesce((c.value ->> 'exact')::boolean, false) AS exact,
               (c.value ->> 'similarity')::float8 AS similarity, c.value -> 'hits' AS hits,
               nullif(c.value -> 'index', 'null') AS index_term, d.kind, d.billable, d.seventh,
               d.is_default, d.says_without, d.says_not_otherwise, d.says_accessory, d.medicare_valid,
               coalesce(d.head, t.lexemes) AS head,
               d.kind <> 'diagnosis' AND d.code IN (SELECT m.hcpc_code_id FROM mcd_lcd_x_hcpc_code m
                                                    JOIN release r ON r.id = m.release_id AND r.is_current)
                   AS listed_in_lcd,
               medrag_code_ancestors(d.code, d.kind) AS above, t.lexemes AS description_lexemes,
               coalesce(t.negated, '{}') AS excluded, t.says_other AS description_says_other,
               coalesce(ch.title_lexemes, '{}') || coalesce(s.title_lexemes, '{}') AS headings
        FROM jsonb_array_elements(candidates) c
        JOIN medrag_code_detail d ON d.release_id = code_release AND d.code = c.value ->> 'code'
        JOIN medrag_code_term t ON t.release_id = code_release AND t.code = d.code AND t.n = 0
        LEFT JOIN icd10cm_chapter ch ON ch.release_id = d.release_id AND ch.chapter = d.chapter
        LEFT JOIN icd10cm_section s ON s.release_id = d.release_id AND s.section_id = d.section_id
        WHERE d.kind = ANY (kinds) AND (d.termination_date IS NULL OR d.termination_date >= current_date)
    ),
    term_row AS MATERIALIZED (
        -- every wording of each candidate and of the codes above it, in one read per candidate
        SELECT c.code AS candidate, t.*
        FROM candidate c JOIN medrag_code_term t ON t.release_id = code_release AND t.code = ANY (c.code || c.above)
    ),
    wording AS MATERIALIZED (
        -- the code's wordings (description first), the inclusion terms of the codes above it, then the Index entry
        -- that led to it (a wording of the header it gave, when the code is under that header)
        SELECT t.candidate AS code, CASE WHEN t.code = t.candidate THEN 'own' ELSE 'inherited' END AS grp,
               t.code AS source, t.n, t.code <> t.candidate AS inherited, t.text, t.lexemes, coalesce(t.core, t.lexemes) AS core,
               coalesce(t.negated, '{}') AS negated, coalesce(t.filler, '{}') AS filler, t.says_other
        FROM term_row t WHERE t.code = t.candidate OR t.n > 0
        UNION ALL
        SELECT c.code, 'index', c.index_term ->> 1, 0, c.index_term ->> 1 <> c.code, c.index_term ->> 0,
               medrag_text_array(c.index_term -> 2), medrag_text_array(c.index_term -> 3),
               medrag_text_array(c.index_term -> 4),
               medrag_filler_lexemes(c.index_term ->> 0),
               medrag_says_other(c.index_term ->> 0)
        FROM candidate c WHERE c.index_term IS NOT NULL
    ),
    ancestor_lexeme AS MATERIALIZED (
        -- the lexemes of the descriptions of the codes above each candidate
        SELECT t.candidate AS code, t.code AS ancestor, x AS lexeme
        FROM term_row t CROSS JOIN LATERAL unnest(t.lexemes) AS x
        WHERE t.code <> t.candidate AND t.n = 0
    ),
    wording_key AS MATERIALIZED (
        -- each wording once more with a key, and what it is to the term
        SELECT row_number() OVER () AS id, w.*, w.grp = 'own' AND w.n = 0 AS is_description,
               CASE WHEN (w.grp = 'own' AND w.n = 0) OR w.inherited THEN c.description_says_other
                    ELSE w.says_other END AS says_other_word
        FROM wording w JOIN candidate c ON c.code = w.code
    ),
    coverage AS MATERIALIZED (
        -- the share of the term's focus concepts a wording holds, each concept by its best wording's share; a word
        -- the wording (or the description, whatever the wording) names only after "without" covers nothing,
        -- unless the term says "without" too
        SELECT id, sum(share ORDER BY concept_n) AS total
        FROM (SELECT id, concept_n, max(share) AS share
              FROM (SELECT w.id, l.concept_n, l.weight * count(*)::float8 / l.size AS share
                    FROM wording_key w JOIN candidate c ON c.code = w.code CROSS JOIN q
                    CROSS JOIN LATERAL unnest(w.lexemes) AS x
                    JOIN concept_lexeme l ON l.role = 'focus' AND l.lexeme = x
                    WHERE q.asks_without OR (x <> ALL (w.negated) AND x <> ALL (c.excluded))
                    GROUP BY w.id, l.concept_n, l.wording_n, l.weight, l.size) by_wording
              GROUP BY id, concept_n) by_concept
        GROUP BY id
    ),
    content AS MATERIALIZED (
        -- what a wording says once filler, neutral words and (unless the term has one) numbers are set aside,
        -- lexeme by lexeme, and whether the term explains it: only where it counts (a wording holding none of the
        -- term scores 0 whatever it says), for the wordings that cover some of the term, those that say "NOS", and
        -- the descriptions an inherited one is measured against
        SELECT w.id, w.code, w.is_description, x AS lexeme, x = ANY (q.explained) AS explained
        FROM wording_key w CROSS JOIN cfg CROSS JOIN q CROSS JOIN LATERAL unnest(w.core) AS x
        WHERE (w.id IN (SELECT id FROM coverage) OR 'nos' = ANY (w.lexemes)
               OR (w.is_description AND w.code IN (SELECT k.code FROM wording_key k JOIN coverage USING (id)
                                                   WHERE k.inherited)))
          AND x <> ALL (cfg.neutral_lexemes) AND x <> ALL (w.filler) AND (q.numbers_count OR x !~ '^-*[0-9]+$')
    ),
    content_count AS (
        SELECT id, count(*) AS size, count(*) FILTER (WHERE explained) AS explained FROM content GROUP BY id
    ),
    added AS (
        -- through an inherited wording, what the code's description adds to that ancestor's (and to the
        -- descriptions above it) is unexplained, unless the term explains it
        SELECT w.id, count(*) AS unexplained
        FROM wording_key w JOIN content d ON d.code = w.code AND d.is_description AND NOT d.explained
        WHERE w.inherited
          AND NOT EXISTS (SELECT 1 FROM ancestor_lexeme a
                          WHERE a.code = w.code AND a.lexeme = d.lexeme AND starts_with(w.source, a.ancestor))
        GROUP BY w.id
    ),
    wording_score AS MATERIALIZED (
        SELECT w.code, w.grp, w.source, w.n, w.text, w.lexemes, cov.coverage,
               coalesce(cc.size, 0) AS content_size, coalesce(cc.explained, 0) AS content_explained,
               cov.coverage * (cfg.precision_floor + (1.0 - cfg.precision_floor) * precision.value)
                   * CASE WHEN w.inherited THEN cfg.inherited_term_factor ELSE 1.0 END AS score
        FROM wording_key w
        LEFT JOIN content_count cc ON cc.id = w.id
        LEFT JOIN added ON added.id = w.id
        LEFT JOIN coverage wc ON wc.id = w.id
        CROSS JOIN cfg CROSS JOIN q,
             LATERAL (SELECT coalesce(wc.total, 0) / q.n_focus AS coverage) cov,
             LATERAL (SELECT coalesce(cc.explained, 0) AS explained,
                             coalesce(cc.size, 0) - coalesce(cc.explained, 0) + coalesce(added.unexplained, 0)
                             -- an "Other ..." residual code is what the term did not say, unless it says "other"
                             + CASE WHEN NOT q.asks_other AND w.says_other_word THEN 1 ELSE 0 END AS unexplained) u,
             LATERAL (SELECT CASE WHEN u.explained + u.unexplained > 0
                                  THEN u.explained::float8 / (u.explained + u.unexplained) ELSE 1.0 END AS value
                     ) precision
        WHERE q.n_focus > 0
    ),
    best AS (
        SELECT DISTINCT ON (code) code, score, coverage,
               CASE WHEN score > 0 OR coverage > 0 THEN text ELSE '' END AS text
        FROM wording_score
        ORDER BY code, score DESC, coverage DESC, array_position(ARRAY['own', 'inherited', 'index'], grp), source,
                 n
    ),
    nos AS (
        -- the term is a "... NOS" wording of the code or a code above it: the code is its default
        SELECT DISTINCT w.code FROM wording_score w
        WHERE 'nos' = ANY (w.lexemes) AND w.content_size > 0 AND w.content_explained = w.content_size
    ),
    lexical AS (
        SELECT c.code, coalesce(b.coverage, 0.0) AS coverage, coalesce(b.text, '') AS best_term,
               n.code IS NOT NULL AS nos_default, head.match AS head_match,
               -- the term's other half (a multi-intent term) named in the code's wordings adds a little
               CASE WHEN q.n_context > 0 AND b.coverage > 0
                    THEN least(1.0, head.score + cfg.context_concept_bonus * (
                                                         SELECT count(DISTINCT l.concept_n) FROM concept_lexeme l
                                                         WHERE l.role = 'context'
                                                           AND l.lexeme IN (SELECT unnest(w.lexemes) FROM wording w
                                                                            WHERE w.code = c.code AND w.grp <> 'index')
                                                         )::float8 / q.n_context)
                    ELSE head.score END AS lexical
        FROM candidate c CROSS JOIN q CROSS JOIN cfg
        LEFT JOIN best b ON b.code = c.code
        LEFT JOIN nos n ON n.code = c.code
        CROSS JOIN LATERAL (
            -- HCPCS descriptions name the item first ("External ambulatory infusion pump, insulin"): the term's last
            -- word, its head noun, there means the code is that item rather than something for it
            SELECT m.match, CASE WHEN m.match THEN least(1.0, coalesce(b.score, 0.0) + cfg.head_noun_bonus)
                                 ELSE coalesce(b.score, 0.0) END AS score
            FROM (SELECT coalesce(q.system = 'HCPCS' AND b.coverage > 0
                                  AND EXISTS (SELECT 1 FROM concept_lexeme l
                                              WHERE l.role = 'focus' AND l.concept_n = q.n_focus
                                                AND l.lexeme = ANY (c.head)), false) AS match) m
        ) head
    ),
    asks AS (
        -- what the term asks for that the specificity penalties below set aside
        SELECT coalesce(jsonb_object_agg(a.key, true) FILTER (WHERE EXISTS (
                   SELECT 1 FROM jsonb_array_elements_text(a.value) l WHERE l = ANY (q.lexemes))), '{}') AS what
        FROM cfg CROSS JOIN q CROSS JOIN jsonb_each(cfg.asks_for) a
    ),
    fused AS (
        -- the lookups' places fused: a code's rank is 1 / (1 + its place in that order / rank_places)
        SELECT c.code, sum((cfg.leg_weights ->> (h.value ->> 0))::float8 / (cfg.code_rrf_k + (h.value ->> 1)::int)
                           ORDER BY h.n) AS value
        FROM candidate c CROSS JOIN cfg CROSS JOIN LATERAL jsonb_array_elements(c.hits) WITH ORDINALITY AS h(value, n)
        GROUP BY c.code
    ),
    named AS (
        -- what a code's description names (not in its "without" clause), and the chapter and block it is in
        SELECT c.code, ARRAY(SELECT x FROM unnest(c.description_lexemes) x WHERE x <> ALL (c.excluded))
                       || c.headings AS lexemes
        FROM candidate c
    ),
    named_sides AS (
        -- the sides those words name, for a term that names one
        SELECT n.code, medrag_with_both(array_agg(DISTINCT side.value)) AS sides
        FROM named n CROSS JOIN LATERAL unnest(n.lexemes) AS x
        JOIN (SELECT s.key, s.value FROM cfg, jsonb_each_text(cfg.side_lexemes) s) side ON side.key = x
        WHERE (SELECT cardinality(asked_sides) FROM q) > 0
        GROUP BY n.code
    ),
    feature AS (
        SELECT c.code, c.exact, c.similarity, l.lexical, l.coverage, l.best_term, c.is_default,
               CASE WHEN q.system = 'ICD-10-CM' THEN
                        CASE WHEN NOT coalesce(c.billable, false)
                                  AND coalesce(jsonb_array_length(c.seventh), 0) = 0 THEN cfg.specificity_header
                             WHEN c.is_default OR l.nos_default THEN 1.0::float8
                             WHEN c.says_without THEN cfg.specificity_without
                             ELSE cfg.specificity_other_diagnosis END
                        * CASE WHEN (c.code LIKE 'O%' AND NOT asks.what ? 'maternity')
                                    OR (c.code LIKE 'P%' AND NOT asks.what ? 'newborn')
                               THEN cfg.specificity_unasked_chapter
                               ELSE 1.0::float8 END
                    WHEN c.kind = 'modifier' THEN CASE WHEN q.wants_modifiers THEN cfg.specificity_modifier_asked
                                                       ELSE cfg.specificity_modifier END
                    WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(cfg.reporting_ranges) range
                                 WHERE c.code COLLATE "C" BETWEEN range.value ->> 0 AND range.value ->> 1)
                         AND NOT asks.what ? 'reporting' THEN cfg.specificity_reporting
                    -- "Tubing, used with suction pump": something for the item, unless it starts with the item
                    WHEN c.says_accessory AND NOT l.head_match AND NOT asks.what ? 'accessory'
                    THEN cfg.specificity_accessory
                    ELSE CASE WHEN c.says_not_otherwise THEN cfg.specificity_not_otherwise
                              WHEN c.listed_in_lcd THEN 1.0::float8 ELSE cfg.specificity_not_in_lcd END
                         -- medrag answers Medicare's rules: a code Medicare does not pay at all (S0285, a private
                         -- payer's colonoscopy consultation) is not what a Medicare claim reports
                         * CASE WHEN c.medicare_valid THEN 1.0::float8 ELSE cfg.not_medicare_factor END
               END AS specificity,
               q.semantic AND c.similarity IS NOT NULL AS has_semantic,
               -- the description, or the chapter and block it is in, names what the term says is not so, or a side
               -- the term does not; what the description names only after "without" does not count
               EXISTS (SELECT 1 FROM unnest(ns.sides) side
                       WHERE NOT (side = ANY (q.asked_sides)
                                  OR (side = 'one' AND q.asked_sides && ARRAY['left', 'right'])
                                  OR (side IN ('left', 'right') AND 'one' = ANY (q.asked_sides))))
               OR EXISTS (SELECT 1 FROM concept_lexeme n
                          WHERE n.role = 'negations' AND n.lexeme = ANY (named.lexemes)) AS contradicted,
               fused.value AS fused
        FROM candidate c JOIN lexical l ON l.code = c.code JOIN named ON named.code = c.code
        LEFT JOIN named_sides ns ON ns.code = c.code
        JOIN fused ON fused.code = c.code
        CROSS JOIN q CROSS JOIN cfg CROSS JOIN asks
    ),
    ranked_feature AS (
        SELECT f.*, 1.0::float8 / (1.0::float8 + (row_number() OVER (ORDER BY f.fused DESC, f.code COLLATE "C") - 1)
                                                 ::float8 / cfg.rank_places) AS rank,
               CASE WHEN f.has_semantic
                    THEN greatest(0.0, least(1.0, (f.similarity - cfg.similarity_floor)
                                                  / (cfg.similarity_top - cfg.similarity_floor))) END AS semantic
        FROM feature f, cfg
    ),
    scored AS (
        SELECT f.*,
               CASE WHEN f.exact THEN 1.0
                    WHEN f.contradicted THEN 0.0
                    ELSE medrag_round3(capped.value) END AS score
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
           medrag_round3(behind.value), s.is_default
    FROM scored s, best_score, LATERAL (SELECT best_score.value - s.score AS value OFFSET 0) behind
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
                 WHERE t.release_id = d.release_id AND t.code = ANY (d.code || medrag_code_ancestors(d.code, d.kind))
                   AND (t.code = d.code OR t.n > 0))
    FROM unnest(codes) WITH ORDINALITY AS h(code, n)
    JOIN medrag_code_detail d ON d.release_id = code_release AND d.code = h.code
    JOIN medrag_code_term t ON t.release_id = d.release_id AND t.code = d.code AND t.n = 0
    LEFT JOIN medrag_code_term p ON p.release_id = d.release_id AND p.code = d.parent_code AND p.n = 0
    WHERE d.kind = ANY (kinds) AND (d.termination_date IS NULL OR d.termination_date >= current_date)
    ORDER BY h.n
$$;

-- The codes above an ICD-10-CM code that may exist (E11.621: E11, E11.6, E11.62); none for HCPCS. One expression,
-- so it is inlined.
CREATE OR REPLACE FUNCTION medrag_code_ancestors(code text, kind text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN kind = 'diagnosis'
                THEN ARRAY(SELECT left(code, i) FROM generate_series(1, length(code) - 1) AS i
                           WHERE left(code, i) ~ '^[A-Z][0-9][0-9A-Z](\.[0-9A-Z]*[0-9A-Z])?$' ORDER BY i)
                ELSE '{}'::text[] END
$$;


-- The code finder's lookups (medrag_find_codes in sql/finder.sql runs them round by round): each finds
-- candidate codes one way and ranks them. Each is one SQL statement, so a call is inlined and planned with its
-- values. A system is named by its documents' source ('icd10cm', 'hcpcs'); the release is the one searched.

-- Codes written in the term, in the order written.
CREATE OR REPLACE FUNCTION medrag_code_exact_leg(codes text[])
RETURNS TABLE (code text, leg_rank integer, leg_score double precision)
LANGUAGE sql IMMUTABLE
AS $$
    SELECT t.code, t.n::int, 1.0::float8 FROM unnest(codes) WITH ORDINALITY AS t(code, n) ORDER BY t.n
$$;

-- Descriptions holding the term's stems ('%injur%'): codes matching more of the stems, then shorter ones, first. The
-- trigram index answers ILIKE one stem at a time, so each description is matched once per stem that reaches it
-- rather than once per stem for every description any stem reaches (thousands for "unspecifi"). A 7th-character
-- form repeats its base code's words (the base code is ranked, its form chosen after); a HCPCS record terminated
-- before today is no longer a code to report.
CREATE OR REPLACE FUNCTION medrag_code_words_leg(code_release integer, code_source text, patterns text[],
                                                 kinds text[], n integer)
RETURNS TABLE (code text, leg_rank integer, leg_score double precision)
LANGUAGE sql STABLE
AS $$
    SELECT m.code, (row_number() OVER (ORDER BY m.matched DESC, m.size, m.code))::int, m.matched::float8
    FROM (
        SELECT found.code, found.size, count(*) AS matched
        FROM unnest(patterns) AS p(pattern)
        CROSS JOIN LATERAL (
            SELECT c.code, length(c.description) AS size FROM icd10cm_code c
            WHERE code_source = 'icd10cm' AND c.release_id = code_release AND c.description ILIKE p.pattern
              AND c.seventh_character IS NULL
            UNION ALL
            SELECT c.code, length(c.long_description) FROM hcpcs_code c
            WHERE code_source = 'hcpcs' AND c.release_id = code_release AND c.long_description ILIKE p.pattern
              AND c.kind = ANY (kinds) AND (c.termination_date IS NULL OR c.termination_date >= current_date)
        ) found
        GROUP BY found.code, found.size
    ) m
    ORDER BY m.matched DESC, m.size, m.code
    LIMIT n
$$;

-- The current code documents' chunks (descriptions, inclusion terms, short descriptions, categories) matching a
-- full-text query (to_tsquery's 'simple' syntax), best ranked first.
CREATE OR REPLACE FUNCTION medrag_code_text_leg(code_source text, text_query text, n integer)
RETURNS TABLE (code text, leg_rank integer, leg_score double precision)
LANGUAGE sql STABLE
AS $$
    SELECT ranked.code, (row_number() OVER (ORDER BY ranked.rank DESC, ranked.code))::int, ranked.rank::float8
    FROM (
        SELECT d.key AS code, ts_rank_cd(c.tsv, q.tsq, 1) AS rank
        FROM chunk c
        JOIN document d ON d.id = c.document_id,
             (SELECT to_tsquery('simple', text_query) AS tsq) q  -- parsed once, whatever the plan
        WHERE d.source = code_source AND d.is_current AND c.tsv @@ q.tsq
        ORDER BY rank DESC, d.key
        LIMIT n
    ) ranked
    ORDER BY 2
$$;

-- Descriptions that hold a word like the typed text (pg_trgm's word_similarity, for a misspelt word or two), most
-- similar first.
CREATE OR REPLACE FUNCTION medrag_code_trigram_leg(code_release integer, code_source text, typed text, kinds text[],
                                                   n integer)
RETURNS TABLE (code text, leg_rank integer, leg_score double precision)
LANGUAGE sql STABLE
-- planned once per session: a plan for the typed text estimates how many descriptions it is similar to by computing
-- its similarity to the column's statistics samples, long HCPCS descriptions among them (2.3 ms a call, a third of
-- running it); the generic plan reads the same trigram indexes
SET plan_cache_mode = force_generic_plan
AS $$
    SELECT hit.code, (row_number() OVER (ORDER BY hit.similarity DESC, hit.code))::int, hit.similarity
    FROM (
        SELECT c.code, word_similarity(typed, c.description)::float8 AS similarity FROM icd10cm_code c
        WHERE code_source = 'icd10cm' AND c.release_id = code_release AND typed <% c.description
          AND c.seventh_character IS NULL
        UNION ALL
        -- a description's first 256 characters, as its trigram index holds them (revision 0027)
        SELECT c.code, word_similarity(typed, left(c.long_description, 256))::float8 FROM hcpcs_code c
        WHERE code_source = 'hcpcs' AND c.release_id = code_release AND typed <% left(c.long_description, 256)
          AND c.kind = ANY (kinds) AND (c.termination_date IS NULL OR c.termination_date >= current_date)
        ORDER BY 2 DESC, 1
        LIMIT n
    ) hit
    ORDER BY 2
$$;

-- The current code documents nearest the term's embedding. Each system's branch names its source as a constant, as
-- its partial HNSW index's predicate does (revision 0020), so the index serves it whatever the plan; the caller sets
-- hnsw.iterative_scan so the scan goes on until enough chunks of that source are found.
CREATE OR REPLACE FUNCTION medrag_code_vector_leg(code_source text, query_embedding vector, n integer)
RETURNS TABLE (code text, leg_rank integer, leg_score double precision)
LANGUAGE sql STABLE
AS $$
    SELECT d.key, (row_number() OVER (ORDER BY near.distance, d.key))::int, (1 - near.distance)::float8
    FROM (
        (SELECT c.document_id, v.embedding <=> query_embedding AS distance
         FROM chunk_vector v JOIN chunk c ON c.id = v.chunk_id JOIN document d ON d.id = c.document_id
         WHERE code_source = 'icd10cm' AND v.source = 'icd10cm' AND d.is_current
         ORDER BY v.embedding <=> query_embedding
         LIMIT n)
        UNION ALL
        (SELECT c.document_id, v.embedding <=> query_embedding AS distance
         FROM chunk_vector v JOIN chunk c ON c.id = v.chunk_id JOIN document d ON d.id = c.document_id
         WHERE code_source = 'hcpcs' AND v.source = 'hcpcs' AND d.is_current
         ORDER BY v.embedding <=> query_embedding
         LIMIT n)
    ) near
    JOIN document d ON d.id = near.document_id
    ORDER BY 2
$$;

-- The billable ICD-10-CM codes under headers (E11), or those billable with a 7th character, in tabular order: what
-- narrowing a header to the codes to report reads.
CREATE OR REPLACE FUNCTION medrag_code_children_leg(code_release integer, headers text[], n integer)
RETURNS TABLE (code text, leg_rank integer, leg_score double precision)
LANGUAGE sql STABLE
AS $$
    WITH RECURSIVE tree AS (
        SELECT c.code, c.billable, c.tabular_order FROM icd10cm_code c
        WHERE c.release_id = code_release AND c.parent_code = ANY (headers) AND c.seventh_character IS NULL
        UNION ALL
        SELECT c.code, c.billable, c.tabular_order FROM icd10cm_code c
        JOIN tree t ON c.release_id = code_release AND c.parent_code = t.code AND c.seventh_character IS NULL
    )
    SELECT t.code, (row_number() OVER (ORDER BY t.tabular_order, t.code))::int, 1.0::float8
    FROM tree t
    WHERE t.billable OR EXISTS (SELECT 1 FROM icd10cm_code x WHERE x.release_id = code_release
                                AND x.parent_code = t.code AND x.seventh_character IS NOT NULL)
    ORDER BY t.tabular_order, t.code
    LIMIT n
$$;

-- A tsquery matching any of the lexemes. Immutable, so a call on a constant is evaluated once, as the plan is made:
-- the GIN index is then searched, and estimated, for its value.
CREATE OR REPLACE FUNCTION medrag_any_lexeme(lexemes text[])
RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT to_tsquery('simple', string_agg(quote_literal(l.lexeme), ' | ' ORDER BY l.lexeme))
    FROM (SELECT DISTINCT unnest(lexemes) AS lexeme) l
$$;

-- A tsquery matching what holds at least two of the lexemes (NULL for fewer than two). Immutable, as above.
CREATE OR REPLACE FUNCTION medrag_two_lexemes(lexemes text[])
RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT to_tsquery('simple', string_agg(quote_literal(a.lexeme) || ' & ' || quote_literal(b.lexeme), ' | '
                                           ORDER BY a.lexeme, b.lexeme))
    FROM (SELECT DISTINCT unnest(lexemes) AS lexeme) a
    JOIN (SELECT DISTINCT unnest(lexemes) AS lexeme) b ON a.lexeme < b.lexeme
$$;

-- Index entries (icd10cm_index_entry of index_release: the Index, the External Cause Index, the Tables of Drugs and
-- of Neoplasms) sharing most of the term's lexemes (their path, modifiers and the words of the references that lead
-- to them), then the fewest words the term does not explain, then the shortest path; a code ending in "-" is the
-- header to narrow. Each lexeme is one tsquery, parsed once: counting the ones an entry's vector matches is much
-- cheaper than intersecting arrays for the thousands of entries a common word ("disease") reaches. With two_tiers
-- the entries sharing two or more lexemes are scored first, and those sharing one are read only when they are too
-- few, so a common word's thousands are mostly never scored (false reads them all: the same rows). An entry outside
-- the first tier then shares exactly one lexeme, and its core lexemes hold that one or none: both known without
-- counting. Those whose core holds it rank first, and a GIN index on core_lexemes finds them, so the entries merely
-- mentioning a common word (30,000 for "leg" or "operation") are read only when these are too few. The orders are
-- total, so the same entry speaks for a code every time.
--
-- What a wording from a deep entry is measured on: its main term and its last subterm ("Screening > neoplasm > breast
-- > routine mammogram": screening, mammogram), the levels between being the way there, which the last one implies. A
-- last subterm of stop words only ("Hypertension > portal > in", the derived CSV having dropped what followed a
-- modifier) says nothing by itself: the level above it counts too. So does a level a connective subterm qualifies
-- ("Alcohol > intoxication > with > dependence" is alcohol intoxication with dependence, F10.229, not the alcohol
-- dependence of "Dependence > alcohol", F10.20).
CREATE OR REPLACE FUNCTION medrag_code_index_leg(code_release integer, index_release integer, term_lexemes text[],
                                                 n integer, two_tiers boolean DEFAULT true)
RETURNS TABLE (code text, leg_rank integer, leg_score double precision, evidence text, lexemes text[],
               core_lexemes text[], negated text[])
LANGUAGE sql STABLE
-- planned once per session: every plan reads the entries through the same two GIN indexes, and planning this
-- statement for each call's values took longer than running it
SET plan_cache_mode = force_generic_plan
AS $$
    WITH term_query AS (
        SELECT array_agg(to_tsquery('simple', quote_literal(l.lexeme))) AS queries,
               CASE WHEN two_tiers THEN medrag_two_lexemes(term_lexemes) END AS pairs,
               -- the entries read: index_entries_per_code for each code returned
               (SELECT index_entries_per_code FROM medrag_settings()) * n AS entries
        FROM (SELECT DISTINCT unnest(term_lexemes) AS lexeme) l
    ),
    entry AS NOT MATERIALIZED (
        SELECT e.*, CASE e.index_name WHEN 'diseases' THEN 'Index' WHEN 'external_causes' THEN 'External Cause Index'
                                      WHEN 'drugs' THEN 'Table of Drugs' WHEN 'neoplasms' THEN 'Neoplasm Table'
                    END AS index_title,
               (SELECT count(DISTINCT c.lexeme) FROM unnest(e.core_lexemes) AS c(lexeme)
                WHERE c.lexeme = ANY (term_lexemes))::float8 AS core_shared
        FROM icd10cm_index_entry e
        WHERE e.release_id = index_release AND e.code IS NOT NULL
    ),
    strong AS (
        SELECT e.index_name, e.entry_id, e.path, e.nemod, e.column_name, e.code, e.core_lexemes, e.search_vector,
               (SELECT count(*) FROM unnest(t.queries) AS q(query) WHERE e.search_vector @@ q.query)::int AS shared,
               e.core_shared / greatest(cardinality(e.core_lexemes), 1) AS precision, e.index_title
        FROM entry e, term_query t
        WHERE e.search_vector @@ t.pairs
        ORDER BY shared DESC, precision DESC, cardinality(e.path), e.code, e.entry_id
        LIMIT (SELECT entries FROM term_query)
    ),
    weak AS (
        -- an entry sharing one lexeme ranks by the share of its core lexemes that lexeme is: the entries whose core
        -- holds it (a GIN index on core_lexemes finds them) before all others, which are read only when those are
        -- too few
        SELECT e.index_name, e.entry_id, e.path, e.nemod, e.column_name, e.code, e.core_lexemes, e.search_vector,
               1 AS shared, 1.0::float8 / greatest(cardinality(e.core_lexemes), 1) AS precision, e.index_title
        FROM entry e, term_query t
        -- a core lexeme is a word of the searched text too (sources/icd10cm/index.py): no full-text test needed
        WHERE two_tiers AND e.core_lexemes && term_lexemes
          AND (SELECT count(*) FROM strong) < (SELECT entries FROM term_query)
          AND e.entry_id NOT IN (SELECT entry_id FROM strong)
        ORDER BY precision DESC, cardinality(e.path), e.code, e.entry_id
        LIMIT (SELECT entries FROM term_query)
    ),
    weakest AS (
        SELECT e.index_name, e.entry_id, e.path, e.nemod, e.column_name, e.code, e.core_lexemes, e.search_vector,
               CASE WHEN t.pairs IS NULL
                    THEN (SELECT count(*) FROM unnest(t.queries) AS q(query) WHERE e.search_vector @@ q.query)::int
                    ELSE 1 END AS shared,
               CASE WHEN t.pairs IS NULL THEN e.core_shared ELSE 0.0 END
                   / greatest(cardinality(e.core_lexemes), 1) AS precision,
               e.index_title
        FROM entry e, term_query t
        WHERE e.search_vector @@ medrag_any_lexeme(term_lexemes)
          AND NOT (two_tiers AND e.core_lexemes && term_lexemes)
          AND (SELECT count(*) FROM strong) + (SELECT count(*) FROM weak) < (SELECT entries FROM term_query)
          AND e.entry_id NOT IN (SELECT entry_id FROM strong)
        ORDER BY shared DESC, precision DESC, cardinality(e.path), e.code, e.entry_id
        LIMIT (SELECT entries FROM term_query)
    ),
    matched AS (
        SELECT * FROM (SELECT * FROM strong UNION ALL SELECT * FROM weak UNION ALL SELECT * FROM weakest) found
        ORDER BY shared DESC, precision DESC, cardinality(path), code, entry_id
        LIMIT (SELECT entries FROM term_query)
    ),
    entry_code AS (
        SELECT c.code, m.shared, m.precision, cardinality(m.path) AS levels, m.entry_id, m.path, m.nemod,
               m.column_name, m.core_lexemes, m.search_vector, m.index_title, m.code AS entry_code
        FROM matched m
        JOIN icd10cm_code c ON c.release_id = code_release AND c.code = rtrim(m.code, '.-')
    ),
    coded AS (
        SELECT DISTINCT ON (code) *, shared + precision AS score
        FROM entry_code
        -- among a code's entries that match alike, the one with the fewest levels (then the first listed) is shown
        ORDER BY code, shared DESC, precision DESC, levels, entry_id
    ),
    best AS (
        SELECT *, (row_number() OVER (ORDER BY score DESC, code))::int AS leg_rank
        FROM coded
        ORDER BY leg_rank
        LIMIT n
    )
    -- what the scoring reads of an entry, for the entries shown only
    SELECT m.code, m.leg_rank, m.score::float8,
           m.index_title || ': ' || array_to_string(m.path, ' > ') || coalesce(', ' || m.column_name, '')
               || ' -> ' || m.entry_code,
           tsvector_to_array(m.search_vector),
           CASE WHEN m.path[2:cardinality(m.path) - 1] <> '{}'
                THEN medrag_lexemes(
                    split_part(m.path[1], ',', 1) || ' '
                    || coalesce((SELECT string_agg(m.path[i], ' ' ORDER BY i)
                                 FROM generate_subscripts(m.path, 1) AS i
                                 WHERE i > 1 AND i < cardinality(m.path) - 1
                                   AND m.path[i + 1] ~* '^(with|without|in|due to|following|during)$') || ' ', '')
                    || CASE WHEN length(to_tsvector('english', m.path[cardinality(m.path)])) = 0
                            THEN m.path[cardinality(m.path) - 1] || ' ' ELSE '' END
                    || m.path[cardinality(m.path)]
                    || coalesce(' ' || regexp_replace(m.column_name, '\([^)]*\)', ' ', 'g'), ''))
                ELSE m.core_lexemes END,
           medrag_without_lexemes(array_to_string(m.path || m.nemod, ', '))
    FROM best m
    ORDER BY m.leg_rank
$$;
