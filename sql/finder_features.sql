-- Stage 3 of the code finder (sql/finder.sql): one feature row per candidate. What a candidate is to the term:
-- lexical fit and coverage of its best wording, its rank after fusing the lookups, its specificity, its cosine to the
-- term, whether the term contradicts it. The details it reads (medrag_code_detail, medrag_code_term) are written by
-- the loaders (revision 0025 says what each column holds).

-- The codes above an ICD-10-CM code that may exist (E11.621: E11, E11.6, E11.62; QA0.01: QA0, QA0.0), as one row:
-- its prefixes that end at the category (before the dot) or after it; none for HCPCS. A table function, so a
-- LATERAL call is inlined into the caller's plan (a scalar SQL function holding a sub-select is called per row).
DROP FUNCTION IF EXISTS medrag_code_ancestors(text, text);
CREATE OR REPLACE FUNCTION medrag_code_ancestors(code text, kind text)
RETURNS TABLE (codes text[])
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ARRAY(SELECT left(code, i) FROM generate_series(strpos(code, '.') - 1, length(code) - 1) AS i
                 WHERE kind = 'diagnosis' AND strpos(code, '.') > 1 AND i <> strpos(code, '.') ORDER BY i)
$$;

-- The lexemes of what a 7th character's meaning says beyond the encounter that a term holds (open and fractur of
-- "initial encounter for open fracture type I or II" for "open fracture of the radius"; the encounter is the term's
-- visit, which picks the form first, not a word a code holds: "encounter for flu vaccination" is Z23): a code is
-- reported in the form holding the most of them (medrag_seventh_form), and holds what that form says.
CREATE OR REPLACE FUNCTION medrag_seventh_held(meaning text, lexemes text[])
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN cardinality(lexemes) > 0
                THEN ARRAY(SELECT x
                           FROM unnest(tsvector_to_array(to_tsvector(
                                    'english'::regconfig,
                                    regexp_replace(meaning, '^.*?\yencounter\y(\s+for\y)?', '', 'i')))) AS x
                           WHERE x = ANY (lexemes))
                ELSE '{}' END
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

-- Stage 3, one feature row per candidate: the code finder's candidates of one code release, described for a
-- term (see the head of this file): those the release
-- has, of the kinds asked for and, for HCPCS, not terminated. candidates: [{code, exact, similarity, hits: [[leg,
-- rank], ...] in the order the lookups reported them, index: [text, source, lexemes, core, negated] of the Index
-- entry that led to the code (source: the header it gave, when the code is under it) or null}]; term: {system,
-- focus, context, negations (each a list of concepts, a concept a list of its wordings' [weight, lexemes]), lexemes
-- (every lexeme the term affirms), explained (the lexemes a code's wording may hold and still be explained),
-- absences (what it says is absent the way ICD-10-CM words it: [cue, words, lexemes]), absent (their lexemes and
-- their concepts'), asks_other, wants_modifiers, prior (the routing prior of the system), semantic (whether the
-- system's similarities were read)}.
CREATE OR REPLACE FUNCTION medrag_code_features(code_release integer, kinds text[], candidates jsonb, term jsonb)
RETURNS TABLE (code text, exact boolean, contradicted boolean, similarity double precision, has_semantic boolean,
               lexical double precision, coverage double precision, best_term text, rank double precision,
               specificity double precision, semantic double precision, is_default boolean)
LANGUAGE sql STABLE
-- planned once per session: every call's statement is the same and only its values differ
SET plan_cache_mode = force_generic_plan
AS $$
    WITH cfg AS (SELECT * FROM medrag_settings(), medrag_code_words()),
    q AS MATERIALIZED (
        SELECT t.*, EXISTS (SELECT 1 FROM unnest(t.lexemes) l WHERE l ~ '^-*[0-9]+$') AS numbers_count,
               'without' = ANY (t.lexemes) AS asks_without,
               -- what the term says is so: not what it says is absent the way ICD-10-CM words it
               ARRAY(SELECT x FROM unnest(t.lexemes) x
                     WHERE x <> ALL (t.absent) AND x <> ALL ((SELECT neutral_lexemes FROM cfg)::text[])) AS affirmed,
               -- the sides the term names: a code of another side than the term's is another code ("Hearing aid,
               -- monaural" for "hearing aids for both ears", "... left knee" for "right knee")
               medrag_lexeme_sides(t.explained) AS asked_sides
        FROM (SELECT term ->> 'system' AS system,
                     ARRAY(SELECT jsonb_array_elements_text(term -> 'lexemes')) AS lexemes,
                     ARRAY(SELECT jsonb_array_elements_text(term -> 'explained')) AS explained,
                     (term ->> 'asks_other')::boolean AS asks_other, coalesce(term -> 'absences', '[]') AS absences,
                     ARRAY(SELECT jsonb_array_elements_text(coalesce(term -> 'absent', '[]'))) AS absent,
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
               d.unspecified_side_of,
               coalesce(d.head, t.lexemes) AS head,
               d.kind <> 'diagnosis' AND d.code IN (SELECT m.hcpc_code_id FROM mcd_lcd_x_hcpc_code m
                                                    JOIN release r ON r.id = m.release_id AND r.is_current)
                   AS listed_in_lcd,
               above.codes AS above, t.text AS description, t.lexemes AS description_lexemes,
               coalesce(t.negated, '{}') AS excluded, coalesce(t.filler, '{}') AS description_filler,
               t.says_other AS description_says_other,
               coalesce(ch.title_lexemes, '{}') || coalesce(s.title_lexemes, '{}') AS headings
        FROM jsonb_array_elements(candidates) c
        JOIN medrag_code_detail d ON d.release_id = code_release AND d.code = c.value ->> 'code'
        JOIN medrag_code_term t ON t.release_id = code_release AND t.code = d.code AND t.n = 0
        LEFT JOIN icd10cm_chapter ch ON ch.release_id = d.release_id AND ch.chapter = d.chapter
        LEFT JOIN icd10cm_section s ON s.release_id = d.release_id AND s.section_id = d.section_id
        CROSS JOIN LATERAL medrag_code_ancestors(d.code, d.kind) above
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
    seventh_form AS MATERIALIZED (
        SELECT c.code, f.value ->> 3 AS meaning, f.n
        FROM candidate c
        CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(c.seventh) = 'array' THEN c.seventh
                                                     ELSE '[]' END) WITH ORDINALITY AS f(value, n)
    ),
    seventh_held AS MATERIALIZED (
        -- what each meaning holds of the term, read once per meaning: the candidates of a fracture term share a few
        -- dozen meanings over hundreds of forms, and a join the planner flattens reads one per form
        SELECT m.meaning, medrag_seventh_held(m.meaning, q.lexemes) AS lexemes
        FROM (SELECT DISTINCT meaning FROM seventh_form) m CROSS JOIN q
    ),
    seventh_lexeme AS MATERIALIZED (
        -- a code taking a 7th character is reported completed: what the form holding the most of the term says is
        -- the code's too (S82.891A, "... initial encounter for closed fracture", for a closed fracture)
        SELECT DISTINCT ON (f.code) f.code, held.lexemes
        FROM seventh_form f JOIN seventh_held held USING (meaning)
        ORDER BY f.code, cardinality(held.lexemes) DESC, f.n
    ),
    added_lexeme AS MATERIALIZED (
        -- what a code's description adds to the code above it whose wording it inherits: a code reached through
        -- that wording is the wording and what the code adds ("Fracture, traumatic > radius" gives S52.9-; S52.91,
        -- "... of right forearm", adds the side)
        SELECT w.code, w.source, array_agg(DISTINCT x) AS lexemes
        FROM (SELECT DISTINCT code, source FROM wording WHERE inherited) w
        JOIN candidate c ON c.code = w.code
        CROSS JOIN LATERAL unnest(c.description_lexemes) AS x
        WHERE x <> ALL (c.excluded)
          AND NOT EXISTS (SELECT 1 FROM ancestor_lexeme a
                          WHERE a.code = w.code AND a.lexeme = x AND starts_with(w.source, a.ancestor))
        GROUP BY w.code, w.source
    ),
    coverage AS MATERIALIZED (
        -- the share of the term's focus concepts a wording holds (an inherited one with what the code adds to
        -- it), each concept by its best wording's share; a word the wording (or the description, whatever the
        -- wording) names only after "without" covers nothing, unless the term says "without" too, or states that
        -- it is not so as ICD-10-CM does
        SELECT id, sum(share ORDER BY concept_n) AS total
        FROM (SELECT id, concept_n, max(share) AS share
              FROM (SELECT w.id, l.concept_n, l.weight * count(DISTINCT x)::float8 / l.size AS share
                    FROM wording_key w JOIN candidate c ON c.code = w.code CROSS JOIN q
                    LEFT JOIN added_lexeme a ON w.inherited AND a.code = w.code AND a.source = w.source
                    LEFT JOIN seventh_lexeme s7 ON s7.code = w.code
                    CROSS JOIN LATERAL unnest(w.lexemes || coalesce(a.lexemes, '{}') || coalesce(s7.lexemes, '{}'))
                        AS x
                    JOIN concept_lexeme l ON l.role = 'focus' AND l.lexeme = x
                    -- ("no loss of consciousness": what a code's "without" clause says too)
                    WHERE q.asks_without OR x = ANY (q.absent)
                       OR (x <> ALL (w.negated) AND x <> ALL (c.excluded))
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
        -- descriptions above it) is the wording's content too: explained where the term says it, else unexplained
        SELECT w.id, count(*) FILTER (WHERE NOT d.explained) AS unexplained,
               count(*) FILTER (WHERE d.explained) AS explained
        FROM wording_key w JOIN content d ON d.code = w.code AND d.is_description
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
             LATERAL (SELECT coalesce(cc.explained, 0) + coalesce(added.explained, 0) AS explained,
                             coalesce(cc.size, 0) - coalesce(cc.explained, 0) + coalesce(added.unexplained, 0)
                             -- an "Other ..." or "NEC" residual is what the term did not say, unless it says "other"
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
    default_word AS (
        -- what the Tabular says a code is by default: the words of its description that a "... NOS" wording of it
        -- leaves out ("accidental" of "Poisoning by penicillins, accidental (unintentional)", which lists "Poisoning
        -- by penicillins NOS"), the NOS wording's other words all in the description
        SELECT DISTINCT d.candidate AS code, x AS lexeme
        FROM (SELECT candidate, lexemes FROM term_row
              WHERE code = candidate AND n > 0 AND 'nos' = ANY (lexemes)) nos_wording
        JOIN (SELECT candidate, lexemes FROM term_row WHERE code = candidate AND n = 0) d USING (candidate)
        CROSS JOIN LATERAL unnest(d.lexemes) AS x
        WHERE ARRAY(SELECT y FROM unnest(nos_wording.lexemes) y WHERE y <> 'nos') <@ d.lexemes
          AND x <> ALL (nos_wording.lexemes)
    ),
    nos AS (
        -- the term is a "... NOS" wording of the code or a code above it: the code is its default; so it is when a
        -- wording of the code ("Table of Drugs: Amoxicillin, Poisoning Accidental (unintentional)" for "amoxicillin
        -- poisoning") leaves unexplained only what the code is by default (not a wording of a code above it)
        SELECT DISTINCT w.code FROM wording_score w
        WHERE 'nos' = ANY (w.lexemes) AND w.content_size > 0 AND w.content_explained = w.content_size
        UNION
        SELECT d.code
        FROM content d JOIN wording_key w ON w.id = d.id AND NOT w.inherited
             LEFT JOIN default_word k ON k.code = d.code AND k.lexeme = d.lexeme
        WHERE d.code IN (SELECT code FROM default_word)
        GROUP BY d.id, d.code
        HAVING bool_or(d.explained) AND bool_or(NOT d.explained AND k.code IS NOT NULL)
           AND bool_and(d.explained OR k.code IS NOT NULL)
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
                             -- a term that says "other" asks for the Tabular's "Other ..." code, not the default
                             -- its siblings fall back on ("other scleritis, left eye": H15.092, not H15.002)
                             WHEN q.asks_other THEN CASE WHEN c.description_says_other THEN 1.0::float8
                                                         ELSE cfg.specificity_other_diagnosis END
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
               -- the term does not (or an unspecified side where the term names one its siblings offer: "glaucoma,
               -- both eyes" is not "glaucoma, unspecified eye"); what the description names only after "without"
               -- does not count
               c.unspecified_side_of && q.asked_sides
               OR EXISTS (SELECT 1 FROM unnest(ns.sides) side
                       WHERE NOT (side = ANY (q.asked_sides)
                                  OR (side = 'one' AND q.asked_sides && ARRAY['left', 'right'])
                                  OR (side IN ('left', 'right') AND 'one' = ANY (q.asked_sides))))
               OR EXISTS (SELECT 1 FROM concept_lexeme n
                          WHERE n.role = 'negations' AND n.lexeme = ANY (named.lexemes))
               -- or it names what the term says is absent ("not intractable", "without aura"), and none of its
               -- own wordings says that absent
               OR EXISTS (SELECT 1
                          FROM jsonb_array_elements(q.absences) a,
                               LATERAL (SELECT array_to_string(ARRAY(SELECT jsonb_array_elements_text(a.value -> 1)),
                                                               '\s+') AS words) absent
                          WHERE c.description ~* ('\y' || absent.words || '\y')
                            AND NOT EXISTS (SELECT 1 FROM term_row t
                                            WHERE t.candidate = c.code AND t.code = c.code
                                              AND t.text ~* ('\y(?:without|not|no)\s+' || absent.words || '\y')))
               -- or its description says absent ("without ...", "not ...") what the term says is so ("Migraine
               -- without aura, not intractable" for "migraine without aura, intractable")
               OR EXISTS (SELECT 1 FROM unnest(c.excluded) x WHERE x = ANY (q.affirmed))
               OR (c.description ~* '\ynot\s'
                   AND EXISTS (SELECT 1 FROM regexp_matches(c.description, '\ynot\s+([a-z]+)', 'gi') AS n(found),
                                             unnest(tsvector_to_array(to_tsvector('english', n.found[1]))) x
                               -- the Tabular's filler ("not elsewhere classified") says nothing is absent
                               WHERE x = ANY (q.affirmed) AND x <> ALL (c.description_filler)))
                   AS contradicted,
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
    )
    SELECT f.code, f.exact, f.contradicted, f.similarity, f.has_semantic, f.lexical, f.coverage, f.best_term, f.rank,
           f.specificity, f.semantic, f.is_default
    FROM ranked_feature f
$$;
