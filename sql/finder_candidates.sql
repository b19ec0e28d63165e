-- Stage 2 of the code finder (sql/finder.sql): candidates per leg. Each lookup finds candidate codes one way and
-- ranks them: codes written in the term, description words, full text, trigrams, vectors, the ICD-10-CM Index and
-- the billable codes under a header. Each leg is one SQL statement, so a call is inlined and planned with its values.
-- A system is named by its documents' source ('icd10cm', 'hcpcs'); the release is the one searched.

-- The code finder's lookups (medrag_code_candidates below runs them round by round): each finds
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
-- trigram index answers LIKE one stem at a time, so each description is matched once per stem that reaches it
-- rather than once per stem for every description any stem reaches (thousands for "unspecifi"). The descriptions are
-- medrag_code_description's (revision 0048): lower-cased once, so a lower-cased stem matches exactly what ILIKE on
-- the Tabular's wording would, and narrow, so a common stem's thousands of codes are read from few pages. A
-- 7th-character form repeats its base code's words (the base code is ranked, its form chosen after) and has no row
-- there; a HCPCS record terminated before today is no longer a code to report.
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
            SELECT c.code, c.size FROM medrag_code_description c
            WHERE c.release_id = code_release AND c.description LIKE lower(p.pattern)
              AND (code_source = 'icd10cm' OR c.kind = ANY (kinds))
              AND (c.termination_date IS NULL OR c.termination_date >= current_date)
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

-- A tsquery matching what holds at least two of the lexemes (NULL for fewer than two), two forms of one typed word
-- (word_forms: a form's lexeme -> the typed word's, medrag_term_lookups) being one. Immutable, as above.
DROP FUNCTION IF EXISTS medrag_two_lexemes(text[]);
CREATE OR REPLACE FUNCTION medrag_two_lexemes(lexemes text[], word_forms jsonb DEFAULT '{}')
RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT to_tsquery('simple', string_agg(quote_literal(a.lexeme) || ' & ' || quote_literal(b.lexeme), ' | '
                                           ORDER BY a.lexeme, b.lexeme))
    FROM (SELECT DISTINCT unnest(lexemes) AS lexeme) a
    JOIN (SELECT DISTINCT unnest(lexemes) AS lexeme) b
      ON a.lexeme < b.lexeme
     AND coalesce(word_forms ->> a.lexeme, a.lexeme) <> coalesce(word_forms ->> b.lexeme, b.lexeme)
$$;

-- The columns of a table (the Neoplasm Table by default, or the Table of Drugs: 'drugs') a term names, by the names
-- the Index gives each (icd10cm_index_column_alias: "Cancer", "Metastasis, metastatic > spread"; "Suicide, suicidal",
-- "Homicide"). A name is said when the term says each of its levels, a level in one of the
-- ways it may be written, or, once some name is said whole, each level below its main term ("cancer that has spread":
-- Cancer, and spread, as "Metastasis, metastatic > spread" says; "embolus of lung" alone names no "Tumor > embolus").
-- The column whose said names hold the most of the term's words is named; of columns alike, the one with the longest
-- name said whole ("metastatic carcinoma": Carcinoma > metastatic, the secondary column, before Carcinoma; "carcinoma
-- in situ": Carcinoma-in-situ before Carcinoma); columns still alike name nothing. The index leg measures a cell of a
-- named column on its site, and a Table of Drugs cell on its substance.
DROP FUNCTION IF EXISTS medrag_index_named_columns(integer, text[]);
CREATE OR REPLACE FUNCTION medrag_index_named_columns(index_release integer, term_lexemes text[],
                                                      table_name text DEFAULT 'neoplasms')
RETURNS TABLE (column_name text)
LANGUAGE sql STABLE
AS $$
    WITH variant AS (
        SELECT c.column_name, c.alias_n, c.level_n, v.lexemes, v.lexemes <@ term_lexemes AS said
        FROM icd10cm_index_column_alias c
        -- a hyphenated word's parts are among its lexemes: the parts are asked for, not the whole
        CROSS JOIN LATERAL (SELECT ARRAY(SELECT x FROM unnest(c.lexemes) AS x WHERE x !~ '-') AS lexemes) v
        WHERE c.release_id = index_release AND c.index_name = table_name
    ),
    alias AS (
        -- per name: each level said (whole), and each level below its main term said (below)
        SELECT v.column_name, v.alias_n,
               count(DISTINCT v.level_n) = count(DISTINCT v.level_n) FILTER (WHERE v.said) AS whole,
               count(DISTINCT v.level_n) FILTER (WHERE v.level_n > 0) > 0
                   AND count(DISTINCT v.level_n) FILTER (WHERE v.level_n > 0)
                       = count(DISTINCT v.level_n) FILTER (WHERE v.level_n > 0 AND v.said) AS below
        FROM variant v
        GROUP BY v.column_name, v.alias_n
    ),
    said_alias AS (
        SELECT a.column_name, a.alias_n, a.whole
        FROM alias a
        WHERE a.whole OR (a.below AND EXISTS (SELECT 1 FROM alias w WHERE w.whole))
    ),
    said_word AS (
        SELECT a.column_name, a.alias_n, a.whole, w.lexeme
        FROM said_alias a
        JOIN variant v ON v.column_name = a.column_name AND v.alias_n = a.alias_n AND v.said
        CROSS JOIN LATERAL unnest(v.lexemes) AS w(lexeme)
    ),
    named AS (
        SELECT w.column_name, count(DISTINCT w.lexeme) AS words,
               coalesce(max(whole_name.words), 0) AS longest_whole
        FROM said_word w
        LEFT JOIN (SELECT column_name, alias_n, count(DISTINCT lexeme) AS words FROM said_word WHERE whole
                   GROUP BY column_name, alias_n) whole_name ON whole_name.column_name = w.column_name
        GROUP BY w.column_name
    )
    SELECT n.column_name
    FROM (SELECT p.column_name, p.place, count(*) FILTER (WHERE p.place = 1) OVER () AS first
          FROM (SELECT named.column_name,
                       rank() OVER (ORDER BY named.words DESC, named.longest_whole DESC) AS place
                FROM named) p) n
    -- two columns named alike ("metastatic tumor": Tumor > metastatic > of specified site, the primary column, and >
    -- to specified site, the secondary one) name neither
    WHERE n.place = 1 AND n.first = 1
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
-- modifier) says nothing by itself: the level above it counts too; so does the level a side qualifies ("Lump >
-- breast > subareolar > left" is a subareolar lump: "left" implies no site). So does a level a connective subterm
-- qualifies ("Alcohol > intoxication > with > dependence" is alcohol intoxication with dependence, F10.229, not the
-- alcohol dependence of "Dependence > alcohol", F10.20), and one a connective other than "without" introduces
-- ("Hernia > inguinal > bilateral > with > gangrene > recurrent", K40.11, says gangrene), and a level a connective
-- opens ("Gout, gouty > in renal impairment > knee", M10.36-, is gout due to renal impairment); the connectives are
-- the loader's (medrag_index_connectives).
--
-- A typed word's other forms (word_forms: a form's lexeme -> the typed word's) are that word: an entry saying both
-- ("Thrombosis > spleen, splenic") shares one of the term's words, not two.
DROP FUNCTION IF EXISTS medrag_code_index_leg(integer, integer, text[], integer, boolean);
CREATE OR REPLACE FUNCTION medrag_code_index_leg(code_release integer, index_release integer, term_lexemes text[],
                                                 n integer, two_tiers boolean DEFAULT true,
                                                 word_forms jsonb DEFAULT '{}')
RETURNS TABLE (code text, leg_rank integer, leg_score double precision, evidence text, lexemes text[],
               core_lexemes text[], negated text[])
LANGUAGE sql STABLE
-- planned once per session: every plan reads the entries through the same two GIN indexes, and planning this
-- statement for each call's values took longer than running it
SET plan_cache_mode = force_generic_plan
AS $$
    WITH term_query AS (
        -- one query per typed word, its forms OR-ed
        SELECT array_agg(w.query) AS queries,
               CASE WHEN two_tiers THEN medrag_two_lexemes(term_lexemes, word_forms) END AS pairs,
               -- the entries read: index_entries_per_code for each code returned
               (SELECT index_entries_per_code FROM medrag_settings()) * n AS entries
        FROM (SELECT to_tsquery('simple', string_agg(quote_literal(l.lexeme), ' | ' ORDER BY l.lexeme)) AS query
              FROM (SELECT DISTINCT unnest(term_lexemes) AS lexeme) l
              GROUP BY coalesce(word_forms ->> l.lexeme, l.lexeme)) w
    ),
    entry AS NOT MATERIALIZED (
        SELECT e.*, CASE e.index_name WHEN 'diseases' THEN 'Index' WHEN 'external_causes' THEN 'External Cause Index'
                                      WHEN 'drugs' THEN 'Table of Drugs' WHEN 'neoplasms' THEN 'Neoplasm Table'
                    END AS index_title,
               (SELECT count(DISTINCT coalesce(word_forms ->> c.lexeme, c.lexeme))
                FROM unnest(e.core_lexemes) AS c(lexeme)
                WHERE c.lexeme = ANY (term_lexemes))::float8 AS core_shared
        FROM icd10cm_index_entry e
        WHERE e.release_id = index_release AND e.code IS NOT NULL
    ),
    strong AS (
        SELECT e.index_name, e.entry_id, e.path, e.nemod, e.column_name, e.code, e.core_lexemes, e.search_vector,
               e.subterm_lexemes,
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
               e.subterm_lexemes,
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
               e.subterm_lexemes,
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
               m.column_name, m.core_lexemes, m.search_vector, m.index_title, m.code AS entry_code,
               -- the term's words a Neoplasm Table cell shares only through a subterm's reference to its column
               (SELECT count(*) FROM unnest(m.subterm_lexemes) AS x(lexeme)
                WHERE x.lexeme = ANY (term_lexemes) AND x.lexeme <> ALL (m.core_lexemes))::int AS through_subterm
        FROM matched m
        JOIN icd10cm_code c ON c.release_id = code_release AND c.code = rtrim(m.code, '.-')
    ),
    coded AS (
        SELECT DISTINCT ON (code) *, shared + precision AS score
        FROM entry_code
        -- among a code's entries that match alike, the one with the fewest levels (then the first listed) is shown
        ORDER BY code, shared DESC, precision DESC, through_subterm, levels, entry_id
    ),
    best AS (
        -- among cells that match alike, the one a main term's reference names first ("argentaffinoma of antrum":
        -- Uncertain Behavior, as "Argentaffinoma" says, before the Malignant Primary of "Argentaffinoma > malignant")
        SELECT *, (row_number() OVER (ORDER BY score DESC, through_subterm, code))::int AS leg_rank
        FROM coded
        ORDER BY leg_rank
        LIMIT n
    )
    -- what the scoring reads of an entry, for the entries shown only
    SELECT m.code, m.leg_rank, m.score::float8,
           m.index_title || ': ' || array_to_string(m.path, ' > ') || coalesce(', ' || m.column_name, '')
               || ' -> ' || m.entry_code,
           tsvector_to_array(m.search_vector),
           -- a cell of a Neoplasm Table column the term names is measured on its site's words only (the table's
           -- first row, "Neoplasm, neoplastic", names no site: the column's words stay), one of a Table of Drugs
           -- column on its substance's (its first name, as an entry's core is: "Cantharides, cantharidin, cantharis")
           CASE WHEN m.index_title = 'Neoplasm Table' AND cardinality(m.path) > 1
                     AND m.column_name IN (SELECT n.column_name
                                           FROM medrag_index_named_columns(index_release, term_lexemes) n)
                THEN medrag_lexemes(array_to_string(m.path[2:], ' '))
                WHEN m.index_title = 'Table of Drugs'
                     AND m.column_name IN (SELECT n.column_name
                                           FROM medrag_index_named_columns(index_release, term_lexemes, 'drugs') n)
                THEN medrag_lexemes(split_part(m.path[1], ',', 1) || ' ' || array_to_string(m.path[2:], ' '))
                WHEN m.path[2:cardinality(m.path) - 1] <> '{}'
                THEN medrag_lexemes(
                    split_part(m.path[1], ',', 1) || ' '
                    || coalesce((SELECT string_agg(m.path[i], ' ' ORDER BY i)
                                 FROM generate_subscripts(m.path, 1) AS i
                                 CROSS JOIN medrag_index_connectives() connective
                                 WHERE i > 1 AND i < cardinality(m.path)
                                   AND ((i < cardinality(m.path) - 1 AND m.path[i + 1] ~* connective.alone)
                                        OR (m.path[i - 1] ~* connective.alone AND m.path[i - 1] !~* '^without$')
                                        OR (m.path[i] ~* connective.opening AND m.path[i] !~* '^without\s'))) || ' ',
                             '')
                    || CASE WHEN length(to_tsvector('english', m.path[cardinality(m.path)])) = 0
                                 OR tsvector_to_array(to_tsvector('english', m.path[cardinality(m.path)]))
                                    <@ ARRAY(SELECT jsonb_object_keys(w.side_lexemes) FROM medrag_code_words() w)
                            THEN m.path[cardinality(m.path) - 1] || ' ' ELSE '' END
                    || m.path[cardinality(m.path)]
                    || coalesce(' ' || regexp_replace(m.column_name, '\([^)]*\)', ' ', 'g'), ''))
                ELSE m.core_lexemes END,
           medrag_without_lexemes(array_to_string(m.path || m.nemod, ', '))
    FROM best m
    ORDER BY m.leg_rank
$$;

-- One lookup (a leg above) as the finder runs it: {leg, system, codes?, hits: [{code, rank, score, and for the
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
    forms constant jsonb := coalesce(lookup -> 'forms', '{}');
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
        INTO hits FROM medrag_code_index_leg(code_release, index_release, lexemes, n, word_forms => forms) l;
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
                    set_config('hnsw.ef_search', settings ->> 'code_vector_ef_search', true);
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
                    set_config('hnsw.ef_search', coalesce(ef_search, '40'), true);  -- pgvector's default
        END IF;
    END IF;
    RETURN lookup || jsonb_build_object('hits', coalesce(hits, '[]'),
                                        'ms', medrag_elapsed_ms(started));
END
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

-- The headers the ICD-10-CM Index's best entries for the term give, each with the entry's code (header, entry): the
-- Index hits with the leg's top score whose code is a header ("Fracture, traumatic > tibia -> S82.20-" for "fracture of
-- left tibia"), and for one whose code is of unspecified side where the term names a side its siblings offer, the
-- code's parent ("Fracture, traumatic > ankle -> S82.899", Other fracture of unspecified lower leg, for "fracture of
-- right ankle": S82.89, whose S82.891 is the right one). A code under one is what that entry leads to, as a coder
-- completing the code reads it (medrag_code_candidates), and reflection narrows them. sides: the sides the term
-- names (medrag_term_sides).
DROP FUNCTION IF EXISTS medrag_index_best_headers(jsonb, jsonb);
CREATE OR REPLACE FUNCTION medrag_index_best_headers(best jsonb, details jsonb, code_release integer, sides text[])
RETURNS TABLE (header text, entry text)
LANGUAGE sql STABLE
AS $$
    WITH entry AS (
        SELECT h.value ->> 'code' AS code, (h.value ->> 'score')::float8 AS score
        FROM jsonb_each(best) h
        WHERE h.value ->> 'leg' = 'index' AND h.value ->> 'via' = '' AND h.value ->> 'system' = 'ICD-10-CM'
    ),
    top_entry AS (SELECT e.code FROM entry e WHERE e.score >= (SELECT max(score) FROM entry))
    SELECT DISTINCT ON (found.header) found.header, found.entry
    FROM (SELECT e.code AS header, e.code AS entry
          FROM top_entry e
          WHERE NOT coalesce((details -> ('ICD-10-CM|' || e.code) ->> 'billable')::boolean, true)
            AND coalesce((details -> ('ICD-10-CM|' || e.code) ->> 'has_children')::boolean, false)
          UNION ALL
          SELECT d.parent_code, e.code
          FROM top_entry e JOIN medrag_code_detail d ON d.release_id = code_release AND d.code = e.code
          WHERE d.unspecified_side_of && sides AND d.parent_code IS NOT NULL
            AND jsonb_typeof(details -> ('ICD-10-CM|' || e.code)) = 'object') found
    ORDER BY found.header, found.entry
$$;

-- The sides a term's affirmed concepts name (medrag_lexeme_sides of their wordings' lexemes).
CREATE OR REPLACE FUNCTION medrag_term_sides(concepts jsonb)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT medrag_lexeme_sides(ARRAY(
        SELECT l.value
        FROM jsonb_array_elements(concepts) c, jsonb_array_elements(c.value -> 'wordings') w,
             jsonb_array_elements_text(w.value -> 'lexemes') l
        WHERE NOT coalesce((c.value ->> 'negated')::boolean, false)))
$$;

-- The lookups a round of the finder runs, from its state: in the first round the codes written in the term and, for
-- a word or two, the trigram lookup; in every round the word lookups (description words, full text, the Index) of
-- each system whose concepts changed; in the first round the vector lookups, in a later one the billable codes under
-- the headers the last reflection narrows.
CREATE OR REPLACE FUNCTION medrag_code_round_lookups(state jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_column
DECLARE
    cfg constant jsonb := coalesce(state -> 'config', medrag_code_finder_config());  -- the analysis's settings
    round_no constant integer := (state ->> 'round')::int;
    searched constant text[] := ARRAY(SELECT jsonb_array_elements_text(state -> 'searched'));
    term_text constant text := state ->> 'term_text';
    lookups jsonb := '[]';
    item jsonb;
    sys text;
BEGIN
    IF round_no = 1 THEN
        SELECT coalesce(jsonb_agg(jsonb_build_object('leg', 'exact', 'system', x.value ->> 0, 'codes', x.value -> 1)
                                  ORDER BY x.n), '[]')
        INTO lookups
        FROM jsonb_array_elements(state -> 'classification' -> 'literal_codes') WITH ORDINALITY AS x(value, n)
        WHERE x.value ->> 0 = ANY (searched);
        IF term_text <> '' AND cardinality(medrag_words_of(term_text)) <= (cfg ->> 'trigram_max_words')::int THEN
            lookups := lookups || (SELECT jsonb_agg(jsonb_build_object('leg', 'trigram', 'system', s, 'text', term_text)
                                                    ORDER BY n)
                                   FROM unnest(searched) WITH ORDINALITY AS x(s, n));
        END IF;
    END IF;
    FOR sys IN SELECT jsonb_array_elements_text(state -> 'changed') LOOP
        SELECT to_jsonb(t) INTO item
        FROM medrag_term_lookups(state -> 'concepts', sys, (cfg ->> 'min_pattern')::int) t;
        IF jsonb_array_length(item -> 'patterns') > 0
           AND (item ->> 'searched')::int <= (cfg ->> 'words_leg_max_concepts')::int THEN
            lookups := lookups || jsonb_build_object('leg', 'words', 'system', sys, 'patterns', item -> 'patterns');
        END IF;
        IF coalesce(item ->> 'tsquery', '') <> '' AND (state -> 'releases' -> sys ->> 'is_current')::boolean THEN
            lookups := lookups || jsonb_build_object('leg', 'fulltext', 'system', sys, 'tsquery', item -> 'tsquery');
        END IF;
        IF sys = 'ICD-10-CM' AND state ->> 'index_release' IS NOT NULL AND jsonb_array_length(item -> 'lexemes') > 0 THEN
            lookups := lookups || jsonb_build_object('leg', 'index', 'system', sys, 'lexemes', item -> 'lexemes',
                                                     'forms', item -> 'forms');
        END IF;
    END LOOP;
    IF round_no = 1 THEN
        lookups := lookups || coalesce((SELECT jsonb_agg(jsonb_build_object('leg', 'vector', 'system', s.value) ORDER BY s.n)
                                        FROM jsonb_array_elements_text(state -> 'semantic_systems')
                                            WITH ORDINALITY AS s(value, n)), '[]');
    ELSIF jsonb_array_length(state -> 'headers') > 0 THEN
        lookups := lookups || jsonb_build_object('leg', 'children', 'system', 'ICD-10-CM', 'codes', state -> 'headers');
    END IF;
    RETURN lookups;
END
$$;

-- Stage 2, candidates per leg: the round's lookups run (medrag_code_lookup, one leg each) and what they found merged
-- into the state's pool: each lookup's best hit per code (a code the headers' Index entry led to inherits that
-- entry), each new code's details read once (a code the release lacks, or of a kind not searched, is forgotten) and,
-- for a system the vector lookup searched, each new candidate's cosine to the term. A later round with nothing new to
-- look up ends the search (done).
CREATE OR REPLACE FUNCTION medrag_code_candidates(state jsonb, query_embedding vector DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    cfg constant jsonb := coalesce(state -> 'config', medrag_code_finder_config());  -- the analysis's settings
    round_no constant integer := (state ->> 'round')::int;
    round_started constant timestamptz := clock_timestamp();
    searched constant text[] := ARRAY(SELECT jsonb_array_elements_text(state -> 'searched'));
    semantic_systems constant text[] := ARRAY(SELECT jsonb_array_elements_text(state -> 'semantic_systems'));
    headers constant text[] := ARRAY(SELECT jsonb_array_elements_text(state -> 'headers'));
    releases constant jsonb := state -> 'releases';
    kinds constant jsonb := state -> 'kinds';
    index_release constant integer := (state ->> 'index_release')::int;
    skipped constant text[] := CASE WHEN round_no = 1 THEN ARRAY(SELECT jsonb_array_elements_text(state -> 'skipped'))
                                    ELSE '{}' END;
    trace text[] := ARRAY(SELECT jsonb_array_elements_text(state -> 'trace'));
    timings jsonb := state -> 'timings';
    best jsonb := state -> 'best';
    details jsonb := state -> 'details';
    sims jsonb := state -> 'similarities';
    seq bigint := (state ->> 'seq')::bigint;
    joined bigint := (state ->> 'joined')::bigint;  -- codes read so far: a code's 'ord' says when it joined the pool
    stage_started timestamptz;
    lookups jsonb;
    lookup jsonb;
    results jsonb := '[]';
    new_hits jsonb;
    index_headers jsonb;  -- [[header, entry], ...] of medrag_index_best_headers
    codes text[];
    sys text;
BEGIN
    lookups := medrag_code_round_lookups(state);
    IF round_no > 1 THEN
        IF jsonb_array_length(lookups) = 0 THEN
            trace := trace || format('round %s: nothing new to look up', round_no);
            RETURN state || jsonb_build_object('trace', to_jsonb(trace), 'done', true);
        END IF;
        trace := trace || format('round %s: term as %s', round_no, medrag_term_describe(state -> 'concepts'));
    END IF;
    timings := medrag_add_elapsed(timings, 'analysis', round_started);
    stage_started := clock_timestamp();
    FOR lookup IN SELECT value FROM jsonb_array_elements(lookups) LOOP
        lookup := lookup || jsonb_build_object('kinds', kinds -> (lookup ->> 'system'));
        results := results || jsonb_build_array(medrag_code_lookup(lookup, (releases -> (lookup ->> 'system') ->> 'id')::int,
                                                                   index_release, query_embedding, cfg));
    END LOOP;
    timings := medrag_add_elapsed(timings, 'lookups', stage_started);

    stage_started := clock_timestamp();
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
                                         ELSE jsonb_build_object('ord', joined + c.n, 'billable', d.billable,
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
    -- a code any leg found under a header the Index's best entries give (S82.202 under "Fracture, traumatic > tibia
    -- -> S82.20-" for "fracture of left tibia") inherits that entry (the deepest such header's), as the billable codes
    -- under a header the reflection narrows do
    SELECT coalesce(jsonb_agg(jsonb_build_array(x.header, x.entry) ORDER BY x.header), '[]') INTO index_headers
    FROM medrag_index_best_headers(best, details, (releases -> 'ICD-10-CM' ->> 'id')::int,
                                   medrag_term_sides(state -> 'concepts')) x;
    SELECT coalesce(jsonb_agg(best -> ('ICD-10-CM|' || header.entry || '|index')
                              || jsonb_build_object('code', c.code, 'via', header.header, 'seq', seq + c.n)
                              ORDER BY c.n), '[]')
    INTO new_hits
    FROM (SELECT h.value ->> 'code' AS code, row_number() OVER (ORDER BY min((h.value ->> 'seq')::bigint)) AS n
          FROM jsonb_each(best) h
          WHERE h.value ->> 'system' = 'ICD-10-CM' AND NOT best ? ('ICD-10-CM|' || (h.value ->> 'code') || '|index')
            AND jsonb_typeof(details -> ('ICD-10-CM|' || (h.value ->> 'code'))) = 'object'
          GROUP BY 1) c
    CROSS JOIN LATERAL (SELECT x.value ->> 0 AS header, x.value ->> 1 AS entry
                        FROM jsonb_array_elements(index_headers) x
                        WHERE length(x.value ->> 0) < length(c.code)
                          AND left(c.code, length(x.value ->> 0)) = x.value ->> 0
                        ORDER BY length(x.value ->> 0) DESC LIMIT 1) header;
    seq := seq + jsonb_array_length(new_hits);
    best := medrag_best_hits(best, new_hits, details);
    FOREACH sys IN ARRAY semantic_systems LOOP
        codes := ARRAY(SELECT substr(d.key, length(sys || '|') + 1) FROM jsonb_each(details) d
                       WHERE left(d.key, length(sys || '|')) = sys || '|' AND jsonb_typeof(d.value) = 'object'
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
    timings := timings || jsonb_build_object('round_' || round_no, medrag_elapsed_ms(round_started));
    trace := trace || (format('round %s: ', round_no) || array_to_string(
        ARRAY(SELECT part FROM (
                  SELECT r.n, 'hits' AS k, 0 AS i, (r.value ->> 'leg') || ' ' || (r.value ->> 'system') || ' '
                         || (SELECT count(*) FROM jsonb_array_elements(r.value -> 'hits') AS h
                             WHERE jsonb_typeof(details -> ((r.value ->> 'system') || '|' || (h.value ->> 'code')))
                                   = 'object')
                         || ' (' || medrag_fixed((r.value ->> 'ms')::float8, 0) || ' ms)' AS part
                  FROM jsonb_array_elements(results) WITH ORDINALITY AS r(value, n)
                  UNION ALL
                  SELECT r.n, 'missing', 0, string_agg(c.code, ', ' ORDER BY c.i) || ' not in ' || (r.value ->> 'system')
                                             || ' ' || (releases -> (r.value ->> 'system') ->> 'label')
                  FROM jsonb_array_elements(results) WITH ORDINALITY AS r(value, n),
                       jsonb_array_elements_text(r.value -> 'codes') WITH ORDINALITY AS c(code, i)
                  WHERE r.value ->> 'leg' = 'exact'
                    AND jsonb_typeof(details -> ((r.value ->> 'system') || '|' || c.code)) IS DISTINCT FROM 'object'
                  GROUP BY r.n, r.value
                  UNION ALL
                  SELECT NULL, 'skipped', i, s || ' skipped' FROM unnest(skipped) WITH ORDINALITY AS x(s, i)) parts
              ORDER BY n NULLS LAST, k, i), '; ')
        || ' [' || medrag_fixed((timings ->> ('round_' || round_no))::float8, 0) || ' ms]');
    RETURN state || jsonb_build_object('best', best, 'details', details, 'similarities', sims, 'seq', seq,
                                       'joined', joined, 'trace', to_jsonb(trace), 'timings', timings);
END
$$;
