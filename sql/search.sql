-- Hybrid search for analysts and for medrag itself (every statement is CREATE OR REPLACE); medrag's CLI calls
-- medrag_search, so psql and the CLI rank the same rows.
--
-- filters (jsonb, every key optional):
--   source      "ncd" | ["ncd","lcd"]   document source: ncd, lcd, article, iom, hcpcs, icd10cm
--   key         "240.2" | ["E0601"]      document key (NCD section, LCD id L33718, code, IOM 100-02/15/110)
--   release     "current" (default) | "all" | a release label such as "FY2021"
--   as_of       "2024-01-01"             effective on that date (effective <= as_of < termination)
--   contractor  "Noridian" | "19003"     LCDs/Articles of that contractor (name substring or number)
--   state       "CA"                     LCDs/Articles in force in that state
--   manual      "100-02", chapter "15"   IOM manual / chapter
-- Contractor and state narrow local determinations only: national NCDs, manuals and code sets apply everywhere.

-- A repeatable script: medrag.schema.migrate runs it (after sql/views.sql and the generated script, before
-- sql/roles.sql) whenever it changes, so it holds functions only; the tables it reads (medrag_synonym, through medrag_search_synonym, medrag_term,
-- medrag_word, medrag_code_wording, medrag_code_word) are made by the revisions in migrations/versions/, which say
-- what each holds.
-- Rendered from Python into generated.sql (medrag/schema/generated_sql.py), because Python reads the same rules:
-- medrag_query_identifiers (identifier shapes, medrag/core/identifiers.py), medrag_settings (every ranking
-- number, medrag/core/tuning.py), medrag_document_group and medrag_nearest (the document kinds and their
-- groups, medrag/sources/registry.py).

-- A release's label, read only for a search filtered to a release by its label: every other filter needs no join
-- to release (a join costs a lookup per candidate row: 0.76 ms of a search statement, paired, docs/search.md).
CREATE OR REPLACE FUNCTION medrag_release_label(release_id bigint)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT r.label FROM release r WHERE r.id = release_id
$$;

-- Does a document pass the filters? One expression over plain columns, without sub-selects, declared STABLE like
-- the casts it uses, so the planner inlines it: otherwise it is a function call per candidate row (tens of ms on a
-- thousand full-text matches).
DROP FUNCTION IF EXISTS medrag_document_matches(text, text, boolean, date, date, jsonb, text, jsonb);
CREATE OR REPLACE FUNCTION medrag_document_matches(source text, key text, is_current boolean, effective_date date,
                                                   termination_date date, metadata jsonb, release_id bigint,
                                                   filters jsonb)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT (NOT filters ? 'source' OR filters -> 'source' @> to_jsonb(source))
       AND (NOT filters ? 'key' OR filters -> 'key' @> to_jsonb(key))
       AND CASE coalesce(filters ->> 'release', 'current')
               WHEN 'current' THEN is_current
               WHEN 'all' THEN true
               ELSE medrag_release_label(release_id) = filters ->> 'release' END
       AND CASE WHEN filters ? 'as_of'
               -- A retired NCD's last version carries the retirement notice's date as its effective date (after
               -- its termination date): that date does not bound when the determination was in force.
               THEN (effective_date IS NULL OR effective_date <= (filters ->> 'as_of')::date
                     OR termination_date <= effective_date)
                    AND (termination_date IS NULL OR termination_date > (filters ->> 'as_of')::date)
               -- without a date, only the newest version of a determination
               ELSE coalesce(metadata ->> 'is_current_version', 'true') = 'true' END
       AND (NOT filters ? 'contractor' OR source NOT IN ('lcd', 'article')
            OR metadata -> 'contractors' @> to_jsonb(filters ->> 'contractor')
            -- the names array as text: a substring of one name is a substring of it
            OR (metadata ->> 'contractor_names') ILIKE '%' || (filters ->> 'contractor') || '%')
       AND (NOT filters ? 'state' OR source NOT IN ('lcd', 'article')
            OR metadata -> 'states' @> to_jsonb(upper(filters ->> 'state')))
       AND (NOT filters ? 'manual' OR metadata ->> 'manual' = filters ->> 'manual')
       AND (NOT filters ? 'chapter' OR metadata ->> 'chapter' = filters ->> 'chapter')
$$;

-- Refills the corpus statistics the search uses (medrag_term, medrag_word, medrag_code_wording, and the planner's of
-- document and chunk): run after every refresh that changes documents.
CREATE OR REPLACE FUNCTION medrag_refresh_terms()
RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    written integer;
BEGIN
    -- the planner's statistics of the rows the refresh wrote: until autovacuum gets to them, a fresh database plans
    -- on guesses (the answer scorer's probe read chunk_tsv_gin rather than the smaller chunk_policy_tsv_gin)
    ANALYZE document;
    ANALYZE chunk;
    -- DELETE rather than TRUNCATE: searches running meanwhile keep reading the old rows instead of waiting.
    DELETE FROM medrag_term;
    INSERT INTO medrag_term (lexeme, ndoc)
    SELECT word, ndoc FROM ts_stat(
        'SELECT c.tsv FROM chunk c JOIN document d ON d.id = c.document_id WHERE d.is_current');
    GET DIAGNOSTICS written = ROW_COUNT;
    DELETE FROM medrag_word;
    INSERT INTO medrag_word (word, ndoc)
    SELECT word, ndoc FROM ts_stat(
        'SELECT to_tsvector(''simple'', c.text) FROM chunk c JOIN document d ON d.id = c.document_id '
        'WHERE d.is_current')
    -- letters (accented ones too: "sjögren", "guillain-barré"), or hyphenated words of them; an accent is written
    -- on purpose, never a slip, so an accented word is known from one chunk
    WHERE (ndoc >= (SELECT known_word_min_documents FROM medrag_settings()) OR word ~ '[à-öø-ÿ]')
      AND (word ~ '^[a-zà-öø-ÿ]{4,}$' AND to_tsvector('english', word) <> ''::tsvector
           OR word ~ '^[a-zà-öø-ÿ]+(-[a-zà-öø-ÿ]+)+$');
    DELETE FROM medrag_code_wording;
    INSERT INTO medrag_code_wording (document_id, title_lexemes, short_lexemes, says_other, is_default, is_header,
                                     is_measure)
    SELECT d.id,
           tsvector_to_array(to_tsvector('english', regexp_replace(d.title,
               '(unspecified( organism| site| type| part| severity| stage| region| side| cause| laterality)?'
               '|site not specified|not elsewhere classified|not otherwise specified|\mNOS\M'
               '|without complications?)', ' ', 'gi'))),
           tsvector_to_array(to_tsvector('english',
               coalesce(substring(c.text FROM 'Short description: ([^\n]*)'), ''))),
           d.title ~* '\mother\M',
           d.source = 'icd10cm'
               AND d.title ~* '(unspecified|\mNOS\M|without complications?$|site not specified)',
           coalesce(d.metadata ->> 'billable', 'true') = 'false',
           coalesce(d.metadata ->> 'subcategory', '') ~* 'reporting'
    FROM document d JOIN chunk c ON c.document_id = d.id AND c.ordinal = 0
    WHERE medrag_document_group(d.source) = 'code';
    ANALYZE medrag_term;
    ANALYZE medrag_word;
    ANALYZE medrag_code_wording;
    RETURN written;
END
$$;

-- Rewrites the words of one code release's descriptions, with how many descriptions hold each (medrag_code_word:
-- what the code finder corrects a misspelt word to): the ICD-10-CM and HCPCS loaders run it as they load a release.
CREATE OR REPLACE FUNCTION medrag_refresh_code_words(code_release integer)
RETURNS integer
LANGUAGE sql
AS $$
    DELETE FROM medrag_code_word WHERE release_id = code_release;
    WITH written AS (
        INSERT INTO medrag_code_word (release_id, word, ndoc)
        SELECT code_release, word, count(*)
        FROM (SELECT DISTINCT c.code, w.word
              FROM (SELECT code, description FROM icd10cm_code
                    WHERE release_id = code_release AND seventh_character IS NULL
                    UNION ALL
                    SELECT code, long_description FROM hcpcs_code WHERE release_id = code_release) c
              CROSS JOIN LATERAL regexp_split_to_table(lower(c.description), '[^a-z0-9]+') AS w(word)
              WHERE length(w.word) >= (SELECT code_word_min_length FROM medrag_settings())) used
        GROUP BY word
        RETURNING 1
    )
    SELECT count(*)::integer FROM written;
$$;

-- Is a typed word (lower case) one the corpus knows, and so not misspelt: the word or its lexeme is in the corpus, or
-- it is a word of a known lay term or abbreviation ("underactive thyroid", "strep throat", "GERD": its expansion says
-- what it means, and its nearest corpus word, "interactive", "stress", "germ", would not), or the embedding model has
-- it as one token of its own (embedding_model_word: a real word the corpus never uses, "look", "premium", "catches",
-- is no misspelt "loop", "premix", "crutches"; the query embedder reads the same vocabulary), or the ICD-10-CM Index
-- leads from it to a code (a drug the Table of Drugs names, "zolpidem", "trospium", or a word only the Index uses,
-- "dysgeusia", "menarche": no code description holds them, yet a term naming them is no misspelling and the finder
-- may guess from them). Read by medrag_spelling and by the code finder before it corrects a word no code's wording
-- holds ("medicare" is no misspelt "medical"). Scalar sub-selects, not EXISTS over a join: the planner would hash the
-- whole vocabulary for a few words.
CREATE OR REPLACE FUNCTION medrag_known_word(typed_word text)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT (SELECT count(*) FROM medrag_word known WHERE known.word = typed_word) > 0
        OR (SELECT count(*) FROM medrag_term known
            WHERE known.lexeme = (tsvector_to_array(to_tsvector('english', typed_word)))[1]) > 0
        OR (SELECT count(*) FROM medrag_search_synonym known
            WHERE ' ' || known.term || ' ' LIKE '% ' || typed_word || ' %') > 0
        OR (SELECT count(*) FROM embedding_model_word known WHERE known.word = typed_word) > 0
        OR (SELECT count(*) FROM icd10cm_index_entry known
            WHERE known.code IS NOT NULL
              AND known.core_lexemes @> ARRAY[(tsvector_to_array(to_tsvector('english', typed_word)))[1]]) > 0
$$;

-- The corpus words each typed word spells without their hyphens or accents ("checkup": check-up, "xray": x-ray,
-- "sjogren's": sjögren), or in the singular of a Greek plural ("metastases": metastasis), with the corpus word's own lexeme (the hyphenated one of a hyphenated word): people leave the
-- hyphen and the accent out, CMS and the ICD-10-CM Index keep them, and PostgreSQL's parser keeps a hyphenated word
-- as one lexeme and an accented one apart from its plain letters. Read by medrag_text_queries and the code finder;
-- medrag_plain_word (migration 0039) and its index find them.
CREATE OR REPLACE FUNCTION medrag_compounds(typed_words text[])
RETURNS TABLE (typed text, compound text, lexeme text)
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT typed_word, known.word, written.lexeme
    FROM unnest(typed_words) AS typed_word
    JOIN medrag_word known ON medrag_plain_word(known.word) = regexp_replace(typed_word, '''s$', '')
                          AND known.word ~ '[^a-z]'
    CROSS JOIN LATERAL (SELECT l AS lexeme FROM unnest(tsvector_to_array(to_tsvector('english', known.word))) AS l
                        ORDER BY l LIKE '%-%' DESC, length(l) DESC, l LIMIT 1) written
    WHERE typed_word ~ '^[a-z0-9'']+$'
    UNION ALL
    -- a Greek plural, which the stemmer keeps apart from its singular ("metastases": metastas, "metastasis":
    -- metastasi), as the corpus writes the singular
    SELECT typed_word, known.word, (tsvector_to_array(to_tsvector('english', known.word)))[1]
    FROM unnest(typed_words) AS typed_word
    JOIN medrag_word known ON known.word = regexp_replace(typed_word, 'es$', 'is')
    WHERE typed_word ~ '^[a-z]+ses$'
$$;

-- The other forms the ICD-10-CM Index lists for each typed word ("pancreatic": pancreas; "testicular": testicle,
-- testis; icd10cm_word_form), with each form's lexeme: people write the adjective where the Tabular writes the noun,
-- and the stemmer keeps the two apart. A word in any inflection ("testicles") finds its forms by its lexeme; forms the
-- stemmer already joins add nothing. Read by medrag_text_queries and the code finder, as medrag_compounds is.
CREATE OR REPLACE FUNCTION medrag_word_forms(typed_words text[])
RETURNS TABLE (typed text, form text, lexeme text)
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT DISTINCT typed_word, f.form, f.form_lexeme
    FROM unnest(typed_words) AS typed_word
    JOIN icd10cm_word_form f ON f.lexeme = (tsvector_to_array(to_tsvector('english', typed_word)))[1]
    WHERE f.form_lexeme <> f.lexeme
$$;

-- The query's misspelt words with the corpus word each is corrected to: a word of spelling_min_length letters or more
-- that neither the corpus nor its stem is in, and its nearest corpus word by trigram similarity (close in length,
-- common words preferred). medrag_text_queries adds the corrections to the full-text query; the search's caller embeds
-- the corrected text (medrag/retrieval/search.py: only words the embedding model does not know whole).
DROP FUNCTION IF EXISTS medrag_spelling(text);
CREATE FUNCTION medrag_spelling(query_text text)
RETURNS TABLE (typed text, corrected text)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    cfg record;
    threshold text;
BEGIN
    SELECT * INTO cfg FROM medrag_settings();
    -- pg_trgm's % reads its threshold from this setting (the module loaded first, so that it exists): the
    -- registry's for the statement below, the session's again after it
    PERFORM similarity('', '');
    threshold := current_setting('pg_trgm.similarity_threshold');
    PERFORM set_config('pg_trgm.similarity_threshold', cfg.spelling_min_similarity::text, true);
    RETURN QUERY
    SELECT typed_word, nearest.word
    FROM regexp_split_to_table(lower(coalesce(query_text, '')), '[^a-z]+') AS typed_word
    CROSS JOIN LATERAL (
        SELECT w.word FROM medrag_word w
        WHERE w.word % typed_word AND abs(length(w.word) - length(typed_word)) <= cfg.spelling_max_length_difference
          AND w.word NOT LIKE '%-%'
        ORDER BY similarity(w.word, typed_word) + cfg.spelling_commonness_weight * log(w.ndoc) DESC, w.word
        LIMIT 1
    ) nearest
    WHERE length(typed_word) >= cfg.spelling_min_length AND to_tsvector('english', typed_word) <> ''::tsvector
      AND NOT medrag_known_word(typed_word);
    PERFORM set_config('pg_trgm.similarity_threshold', threshold, true);
END
$$;

-- The full-text queries for a user's text. Websearch syntax ("quoted phrases", -word) is taken as written. Otherwise
-- a natural question rarely has all its words in one chunk, so its words are OR-ed and ts_rank rewards the
-- chunks that hold more of them (rank_query); a word the corpus does not hold also brings its nearest corpus word
-- (medrag_spelling), a word written without its hyphens the corpus's hyphenated word (medrag_compounds) and a word
-- the other forms the ICD-10-CM Index lists for it (medrag_word_forms); and the rows ranked are only those holding
-- the rarer words, up to match_budget chunks by the corpus counts (match_query), which bounds the work whatever the
-- words. Known abbreviations and synonyms add their expansions to both (a phrase of two or more
-- words also when the query says it in other inflections: medrag_synonym_padded_keys).
CREATE OR REPLACE FUNCTION medrag_text_queries(query_text text, match_budget integer DEFAULT NULL)
RETURNS TABLE (match_query tsquery, rank_query tsquery, misspelt boolean)
LANGUAGE sql STABLE
ROWS 1  -- one row always; the default guess of 1000 makes the planner hash whole tables
AS $$
    WITH typed AS MATERIALIZED (
        -- padded_words: the query's words between single spaces, computed once, not again for each synonym row
        SELECT websearch_to_tsquery('english', coalesce(query_text, '')) AS tsq,
               coalesce(query_text, '') ~ '"|(^|\s)-\w' AS explicit,
               ' ' || regexp_replace(lower(coalesce(query_text, '')), '[^a-z0-9]+', ' ', 'g') || ' ' AS padded_words,
               -- the same words as a synonym phrase of two or more keyed words is also matched by: their stems
               medrag_synonym_padded_keys(regexp_split_to_array(lower(coalesce(query_text, '')), '[^a-z0-9]+'))
                   AS padded_keys
    ),
    correction AS (
        SELECT string_agg(corrected, ' ') AS words, count(*) > 0 AS misspelt FROM medrag_spelling(query_text)
    ),
    word AS (
        SELECT w.lexeme, t.ndoc
        FROM correction,
             unnest(to_tsvector('english', coalesce(query_text, '') || ' ' || coalesce(correction.words, ''))) AS w
        LEFT JOIN medrag_term t ON t.lexeme = w.lexeme
        UNION
        SELECT c.lexeme, t.ndoc
        FROM medrag_compounds(regexp_split_to_array(lower(coalesce(query_text, '')), '[^a-z]+')) AS c
        LEFT JOIN medrag_term t ON t.lexeme = c.lexeme
        UNION
        SELECT f.lexeme, t.ndoc
        FROM medrag_word_forms(regexp_split_to_array(lower(coalesce(query_text, '')), '[^a-z]+')) AS f
        LEFT JOIN medrag_term t ON t.lexeme = f.lexeme
    ),
    held AS MATERIALIZED (
        -- the synonyms the query holds, found first: a condition on the expansion's query would be pushed down into
        -- the scan and parse every synonym's expansion on every call (1 ms of ~3)
        SELECT s.expansion, plainto_tsquery('english', s.expansion) AS tsq
        FROM typed, medrag_search_synonym s
        WHERE typed.padded_words LIKE '% ' || s.term || ' %'
           OR typed.padded_keys LIKE '% ' || (medrag_search_synonym_keys() ->> s.term) || ' %'
    ),
    expansion AS (
        -- an expansion is AND-ed: it matches at most as many chunks as its rarest word
        SELECT held.tsq,
               (SELECT min(coalesce(t.ndoc, 0))
                FROM unnest(tsvector_to_array(to_tsvector('english', held.expansion))) AS part(lexeme)
                LEFT JOIN medrag_term t ON t.lexeme = part.lexeme) AS ndoc
        FROM held
        WHERE held.tsq::text <> ''
    ),
    unit AS (
        -- array_to_tsvector(...)::text quotes a lexeme exactly as tsquery input wants it
        SELECT array_to_tsvector(ARRAY[lexeme])::text AS tsq, coalesce(ndoc, 0) AS ndoc, false AS expanded
        FROM word
        UNION
        SELECT '(' || tsq::text || ')', coalesce(ndoc, 0), true FROM expansion
    ),
    by_rarity AS (
        SELECT tsq, expanded, row_number() OVER (ORDER BY ndoc, tsq) AS nth,
               sum(ndoc) OVER (ORDER BY ndoc, tsq) AS running
        FROM unit
    ),
    bag AS (
        SELECT string_agg(tsq, ' | ' ORDER BY nth)::tsquery AS all_units,
               string_agg(tsq, ' | ' ORDER BY nth) FILTER (WHERE nth = 1 OR running <= (
                   SELECT coalesce(medrag_text_queries.match_budget, s.match_budget) FROM medrag_settings() s))::tsquery
                   AS rare_units,
               string_agg(tsq, ' | ' ORDER BY nth) FILTER (WHERE expanded)::tsquery AS expansions
        FROM by_rarity
    )
    SELECT coalesce(CASE WHEN typed.explicit THEN typed.tsq || bag.expansions ELSE bag.rare_units END,
                    typed.tsq),
           coalesce(CASE WHEN typed.explicit THEN typed.tsq || bag.expansions ELSE bag.all_units END,
                    typed.tsq),
           correction.misspelt
    FROM typed, bag, correction
$$;

-- What a query asks for: 'code' (it says code, HCPCS or billing), 'policy' (coverage, payment, eligibility,
-- criteria, a determination) or NULL (neither: the stronger results lead).
CREATE OR REPLACE FUNCTION medrag_query_intent(query_text text)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN words @@ to_tsquery('english', 'code | codes | hcpcs | billing') THEN 'code'
        WHEN words @@ to_tsquery('english', 'cover | coverage | covered | pay | paid | payment | eligible | '
                                            'eligibility | qualify | criteria | requirement | policy | ncd | lcd | '
                                            'determination | benefit') THEN 'policy'
    END
    FROM to_tsvector('english', coalesce(query_text, '')) AS words
$$;

-- What kind of answer a question wants (medrag ask): 'amount' (a premium, deductible, copay, price or fee: a sum
-- of money), 'frequency' (how often, how many sessions), 'code' (what a code describes, which codes or contractors an
-- LCD lists), 'eligibility' (who qualifies, criteria, when or for which conditions something is covered), 'coverage'
-- (a yes / no: is X covered?) or NULL. The first that applies.
CREATE OR REPLACE FUNCTION medrag_question_type(query_text text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN q ~ '\m(premiums?|deductibles?|coinsurance|co-?pays?|copayments?|out-of-pocket|prices?|fee schedule|income limits?|how much (does|do|will|would|is|are|can) ([a-z-]+ ){0,4}(cost|pay|charge|reimburse|owe))\M'
            THEN 'amount'
        WHEN q ~ '\m(how often|how frequently|frequency|how many ([a-z-]+ ){0,5}(times|sessions|visits|treatments|tests|screenings)|intervals?|every [0-9]+|(per|each) (year|month)|times a (year|month))\M'
            THEN 'frequency'
        WHEN q ~ '\m(codes?|hcpcs|icd-10-cm|icd-10|icd|describes?|contractors?|states?)\M' THEN 'code'
        WHEN q ~ '\m(eligible|eligibility|qualif[a-z]*|criteria|requirements?|require[ds]?|who|when|which)\M'
                  OR q ~ '(^|[.?!]\s+)what\M[a-z -]{0,60}\m(tests|conditions|patients|services|indications|procedures|devices)\M'
            THEN 'eligibility'
        -- any sentence of the question may ask it: a coder's question often states the case first
        WHEN q ~ '(^|[.?!]\s+)(is|are|does|do|can|will|would)\M' THEN 'coverage'
    END
    FROM lower(coalesce(query_text, '')) AS q
$$;

-- The n nearest chunks of one graph's kinds that pass the filters: a branch of medrag_nearest, which says when each
-- graph is searched. Called with the kinds written as a constant, it is inlined into the caller, and the constant is
-- what lets the planner use that graph's partial HNSW index (migrations 0009, 0020, 0034). Keep it a plain SQL
-- function (no SET, no SECURITY DEFINER): otherwise it is not inlined and every call scans the whole table.
DROP FUNCTION IF EXISTS medrag_nearest_in(text, vector, integer, jsonb);
CREATE OR REPLACE FUNCTION medrag_nearest_in(kinds text[], query_embedding vector, n integer, filters jsonb)
RETURNS TABLE (chunk_id bigint, distance double precision)
LANGUAGE sql STABLE
AS $$
    SELECT c.id, v.embedding <=> query_embedding
    FROM chunk_vector v JOIN chunk c ON c.id = v.chunk_id
         JOIN document d ON d.id = c.document_id,
         -- the filters behind OFFSET 0: seen as constants, they get selectivity guesses (0.5% of the documents
         -- for no filter at all) that make a sort of every distance look cheaper than the index
         (SELECT filters OFFSET 0) opaque(f)
    WHERE v.source = ANY (kinds) AND query_embedding IS NOT NULL
      -- row-independent: a one-time filter (named keys get exact distances in medrag_nearest)
      AND NOT filters ? 'key'
      AND medrag_document_matches(d.source, d.key, d.is_current, d.effective_date, d.termination_date, d.metadata,
                                  d.release_id, opaque.f)
    ORDER BY v.embedding <=> query_embedding
    LIMIT n
$$;

-- Could a chunk of this source pass the filters at all? An iterative index scan of a source that cannot would walk
-- its whole graph looking for one row (manual and chapter are IOM-only filters).
CREATE OR REPLACE FUNCTION medrag_source_wanted(source text, filters jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT (NOT filters ? 'source' OR filters -> 'source' ? source)
       AND (source = 'iom' OR NOT (filters ? 'manual' OR filters ? 'chapter'))
$$;

-- How much of a code's own wording the query's lexemes explain (medrag_search's fit leg): the share of the
-- description's lexemes the query holds ("other" counting as one more it does not), or of the HCPCS short
-- description's; less for a category header or a quality-measure code; more for the code that says what the query
-- says is not known or absent (default_cue 'unspecified' / 'uncomplicated'), a little for an ICD-10-CM default.
DROP FUNCTION IF EXISTS medrag_code_fit(medrag_code_wording, text, text[], text);
CREATE OR REPLACE FUNCTION medrag_code_fit(wording medrag_code_wording, title text, query_lexemes text[],
                                           default_cue text, fit jsonb)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- a wording's lexemes the query holds: those ts_delete removes (the lexemes are distinct, from a tsvector), counted
    -- without a sub-select, so the function is inlined into the fit leg rather than run once per row; a query without
    -- lexemes (NULL) holds none
    SELECT greatest(
        (cardinality(wording.title_lexemes) - length(ts_delete(array_to_tsvector(wording.title_lexemes),
                                                               coalesce(query_lexemes, '{}'))))::float
            / nullif(cardinality(wording.title_lexemes) + wording.says_other::int, 0),
        -- an HCPCS short description is the long one cut to 28 characters and may say less than
        -- the code is ("Blood glucose test strips": for dialysis): a share of a description's fit
        (fit ->> 'short_share')::float8 * (cardinality(wording.short_lexemes) - length(ts_delete(array_to_tsvector(wording.short_lexemes),
                                                                      coalesce(query_lexemes, '{}'))))::float
            / nullif(cardinality(wording.short_lexemes), 0))
    * CASE WHEN wording.is_header THEN (fit ->> 'header_factor')::float8
           WHEN wording.is_measure THEN (fit ->> 'measure_factor')::float8 ELSE 1 END
    -- the code that says what the query says is not known or absent; else a default wins a tie
    + CASE WHEN CASE default_cue
                    WHEN 'uncomplicated' THEN title ~* 'without complications?$|uncomplicated'
                    WHEN 'unspecified' THEN title ~* 'unspecified|\mNOS\M|not specified' END
           THEN (fit ->> 'cue_bonus')::float8
           WHEN wording.is_default THEN (fit ->> 'default_bonus')::float8 ELSE 0 END
$$;

-- What a query's words ask for, beyond its terms: the default cue (the query says there is no complication, or that
-- a detail is not known: ICD-10-CM's rule is then the code that says so, "without complications", "unspecified"),
-- the group it asks for (medrag_query_intent; a query in a code's own terms, "not further specified", asks for the
-- code) and the kind of document it names, which comes first in its group ("diagnosis code", "ICD-10": ICD-10-CM;
-- "HCPCS"; "local coverage determination": LCDs; "NCD").
CREATE OR REPLACE FUNCTION medrag_query_cues(query_text text)
RETURNS TABLE (default_cue text, intent text, named_source text)
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT cue.default_cue,
           coalesce(medrag_query_intent(query_text), CASE WHEN cue.default_cue IS NOT NULL THEN 'code' END),
           coalesce(medrag_named_code_set(query_text),  -- the code sets' names: medrag/core/identifiers.py
                    CASE WHEN query_text ~* '\mlcds?\M|\mlocal\s+coverage\s+determinations?\M' THEN 'lcd'
                         WHEN query_text ~* '\mncds?\M|\mnational\s+coverage\s+determinations?\M' THEN 'ncd' END)
    -- the cue's phrases: medrag/core/identifiers.py (the code finder reads them too)
    FROM (SELECT medrag_default_cue(query_text) AS default_cue) cue
$$;

-- The legs of medrag_search, one function each, ranked per group (code / policy). Each is a plain SQL function (no
-- SET, no SECURITY DEFINER) called with the caller's columns as arguments, so the planner inlines it into
-- medrag_search's statement and plans the whole search at once, as when the legs were written inside it.

-- Vector leg: the pool nearest chunks of each group (medrag_nearest), ranked by distance.
CREATE OR REPLACE FUNCTION medrag_vector_leg(query_embedding vector, pool integer, filters jsonb)
RETURNS TABLE (id bigint, grp text, distance double precision, r bigint)
LANGUAGE sql STABLE
AS $$
    SELECT near.chunk_id, near.grp, near.distance,
           row_number() OVER (PARTITION BY near.grp ORDER BY near.distance, near.chunk_id)
    FROM medrag_nearest(query_embedding, pool, filters) near
$$;

-- Full-text leg: chunks matching the query's rarer words (match_query), ranked by ts_rank of all its words
-- (rank_query) over log length: ts_rank_cd ranked worse on the dev questions and costs several times more per row.
DROP FUNCTION IF EXISTS medrag_text_leg(tsquery, tsquery, integer, jsonb);
CREATE OR REPLACE FUNCTION medrag_text_leg(match_query tsquery, rank_query tsquery, pool integer, filters jsonb,
                                           max_rows integer)
RETURNS TABLE (id bigint, grp text, r bigint)
LANGUAGE sql STABLE
AS $$
    SELECT hit.id, hit.grp, hit.r
    FROM (
        SELECT matching.id, matching.grp,
               row_number() OVER (PARTITION BY matching.grp
                                  ORDER BY ts_rank(matching.tsv, rank_query, 1) DESC, matching.id) AS r
        FROM (
            -- ranking costs per row: a query whose rarest word is common ranks the first max_rows matches only
            SELECT c.id, c.tsv, medrag_document_group(d.source) AS grp
            FROM chunk c JOIN document d ON d.id = c.document_id
            WHERE c.tsv @@ match_query
              AND medrag_document_matches(d.source, d.key, d.is_current, d.effective_date, d.termination_date,
                                          d.metadata, d.release_id, filters)
            LIMIT max_rows
        ) matching
    ) hit
    WHERE hit.r <= pool
$$;

-- Trigram leg: document titles similar to the query, only for a short query with a word the corpus lacks (a long
-- question's many trigrams make this index scan the slowest part of the search, 20+ ms). A title's first 256
-- characters, as its trigram index holds them (revision 0027): a 4,500-character quality-measure description holds
-- most of any query's trigrams somewhere, and word_similarity over the whole of it costs more than the index scan.
CREATE OR REPLACE FUNCTION medrag_trigram_leg(query_text text, misspelt boolean, pool integer, max_chars integer,
                                              filters jsonb)
RETURNS TABLE (id bigint, grp text, r bigint)
LANGUAGE sql STABLE
AS $$
    SELECT hit.id, hit.grp, row_number() OVER (PARTITION BY hit.grp ORDER BY hit.similarity DESC, hit.id)
    FROM (
        SELECT c.id, medrag_document_group(d.source) AS grp,
               word_similarity(lower(query_text), lower(left(d.title, 256))) AS similarity
        FROM document d
        JOIN chunk c ON c.document_id = d.id AND c.ordinal = 0
        WHERE misspelt AND length(query_text) <= max_chars AND lower(query_text) <% lower(left(d.title, 256))
          AND medrag_document_matches(d.source, d.key, d.is_current, d.effective_date, d.termination_date,
                                      d.metadata, d.release_id, filters)
        ORDER BY similarity DESC
        LIMIT pool
    ) hit
$$;

-- Exact leg: the chunks of the documents the query names (medrag_query_identifiers).
CREATE OR REPLACE FUNCTION medrag_exact_leg(query_text text, filters jsonb)
RETURNS TABLE (id bigint, grp text, r bigint)
LANGUAGE sql STABLE
AS $$
    SELECT c.id, medrag_document_group(d.source), row_number() OVER (ORDER BY d.source, d.key, c.ordinal)
    FROM medrag_query_identifiers(query_text) ident
    JOIN document d ON d.source = ident.source AND d.key = ident.key
    JOIN chunk c ON c.document_id = d.id
    WHERE medrag_document_matches(d.source, d.key, d.is_current, d.effective_date, d.termination_date,
                                  d.metadata, d.release_id, filters)
$$;

-- Fit leg: how much of a code's own wording the query explains (medrag_code_fit over medrag_code_wording), for the
-- code chunks the other legs found. A lay term's right code is usually the sibling whose description adds nothing
-- the query did not say ("Hypothyroidism, unspecified" rather than "Congenital hypothyroidism without goiter");
-- "other" counts as a word not asked for, a category header or a quality-measure code is not what gets reported for
-- a condition or an item, and an ICD-10-CM default wins a tie. query_lexemes: every lexeme of the rank query (the
-- query's words, their spelling corrections and expansions).
DROP FUNCTION IF EXISTS medrag_fit_leg(bigint[], tsquery, text);
CREATE OR REPLACE FUNCTION medrag_fit_leg(chunk_ids bigint[], rank_query tsquery, default_cue text, fit jsonb)
RETURNS TABLE (id bigint, grp text, fit double precision)
LANGUAGE sql STABLE
AS $$
    SELECT hit.id, hit.grp, hit.fit
    FROM (
        SELECT c.id, medrag_document_group(d.source) AS grp,
               medrag_code_fit(w, d.title, ql.lexemes, default_cue, fit) AS fit
        FROM unnest(chunk_ids) AS pooled(id)
        JOIN chunk c ON c.id = pooled.id
        JOIN medrag_code_wording w ON w.document_id = c.document_id
        JOIN document d ON d.id = c.document_id
        CROSS JOIN (SELECT array_agg(DISTINCT m[1]) AS lexemes
                    FROM regexp_matches(rank_query::text, '''((?:[^'']|'''')+)''', 'g') AS m) ql
        OFFSET 0  -- fit computed once per row, not again for the filter and the ordering
    ) hit
    WHERE hit.fit > 0
$$;

-- Every leg of a search for one query (the legs above): each chunk a leg found, with its place there (per group),
-- and the vector leg's distance, the fit leg's fit. medrag_search_documents fuses them; medrag_search_leg_shares
-- gives them to the fusion's fit (medrag.retrieval.fusion). Inlined into its caller's statement, as the legs are.
CREATE OR REPLACE FUNCTION medrag_search_legs(query_embedding vector, query_text text, pool integer, filters jsonb)
RETURNS TABLE (id bigint, grp text, leg text, place bigint, distance double precision, fit double precision)
LANGUAGE sql STABLE
AS $$
    WITH settings AS (
        SELECT q.match_query, q.rank_query, q.misspelt, cue.default_cue, cfg.trigram_max_chars, cfg.text_leg_max_rows,
               cfg.fit, coalesce(filters, '{}'::jsonb) AS f
        FROM medrag_settings() cfg,
             medrag_text_queries(query_text, cfg.match_budget) q,
             medrag_query_cues(query_text) cue
    ),
    vector_leg AS (SELECT v.* FROM medrag_vector_leg(query_embedding, pool, filters) v),
    text_leg AS (SELECT t.* FROM settings s, LATERAL medrag_text_leg(s.match_query, s.rank_query, pool, s.f,
                                                                         s.text_leg_max_rows) t),
    trigram_leg AS (
        SELECT t.* FROM settings s, LATERAL medrag_trigram_leg(query_text, s.misspelt, pool, s.trigram_max_chars, s.f) t
    ),
    exact_leg AS (SELECT e.* FROM settings s, LATERAL medrag_exact_leg(query_text, s.f) e),
    fit_pool AS (
        -- the code group's candidates the vector and text legs found, gathered here: a sub-select written as the fit
        -- leg's argument would keep the planner from inlining the leg
        SELECT ARRAY(SELECT id FROM vector_leg WHERE grp = 'code' UNION SELECT id FROM text_leg WHERE grp = 'code')
                   AS ids
    ),
    fit_leg AS (
        SELECT f.* FROM settings s, fit_pool p, LATERAL medrag_fit_leg(p.ids, s.rank_query, s.default_cue, s.fit) f
    )
    SELECT id, grp, 'vector', r, distance, NULL::float8 FROM vector_leg
    UNION ALL SELECT id, grp, 'text', r, NULL, NULL FROM text_leg
    UNION ALL SELECT id, grp, 'trigram', r, NULL, NULL FROM trigram_leg
    UNION ALL SELECT id, grp, 'exact', r, NULL, NULL FROM exact_leg
    UNION ALL SELECT id, grp, 'fit', NULL, NULL, fit FROM fit_leg
$$;

-- What the fusion's fit reads (medrag.retrieval.fusion): for each document the legs found for a query, its best chunk's
-- unweighted share in each leg (1 / (rrf_k + place); the fit leg's fit), 0 where a leg did not find it. A search
-- weighs these shares (medrag_search_documents' legs) and ranks a group's documents by their sum.
CREATE OR REPLACE FUNCTION medrag_search_leg_shares(query_embedding vector, query_text text,
                                                    filters jsonb DEFAULT '{}'::jsonb)
RETURNS TABLE (document_id bigint, source text, key text, grp text, vector double precision, text double precision,
               trigram double precision, exact double precision, fit double precision)
LANGUAGE sql STABLE
AS $$
    WITH cfg AS (SELECT s.rrf_k, s.default_k * s.pool_per_k + s.pool_extra AS pool FROM medrag_settings() s),
    share AS (
        SELECT c.document_id, l.grp, l.leg,
               max(CASE WHEN l.leg = 'fit' THEN l.fit ELSE 1::numeric / (cfg.rrf_k + l.place) END)::float8 AS share
        FROM cfg, LATERAL medrag_search_legs(query_embedding, query_text, cfg.pool, filters) l
        JOIN chunk c ON c.id = l.id
        GROUP BY 1, 2, 3
    )
    SELECT s.document_id, d.source, d.key, min(s.grp),
           coalesce(max(s.share) FILTER (WHERE s.leg = 'vector'), 0), coalesce(max(s.share) FILTER (WHERE s.leg = 'text'), 0),
           coalesce(max(s.share) FILTER (WHERE s.leg = 'trigram'), 0),
           coalesce(max(s.share) FILTER (WHERE s.leg = 'exact'), 0), coalesce(max(s.share) FILTER (WHERE s.leg = 'fit'), 0)
    FROM share s JOIN document d ON d.id = s.document_id
    GROUP BY s.document_id, d.source, d.key
$$;

-- The documents of a hybrid search in one statement: the legs above (HNSW cosine neighbours, full text, trigram
-- title similarity when a word is misspelt, exact identifiers, and the fit of a code's wording), fused by reciprocal
-- rank fusion and grouped. Code documents (HCPCS, ICD-10-CM: 47k of the corpus's 57k chunks, short and word-dense)
-- would crowd determinations and manuals out of every list, so each leg ranks the two groups apart and the result
-- interleaves them, the group the query asks for (medrag_query_intent) or else the stronger one leading, with the
-- other group's first document second (or fourth when the lead is sure). Exact identifiers rank first; at most two
-- chunks per document, every second chunk after every first one; score is the document's fused RRF score (its best
-- chunk in each leg; a code's fit added, +1 for an exact identifier). query_embedding may be NULL (full text only).
-- medrag_search (below) calls it, then lets the code finder choose the codes of its code slots.
CREATE OR REPLACE FUNCTION medrag_search_documents(query_embedding vector, query_text text, k integer DEFAULT NULL,
                                                   filters jsonb DEFAULT '{}'::jsonb)
RETURNS TABLE (rank integer, score double precision, chunk_id bigint, document_id bigint, source text, key text,
               title text, heading text, text text, release text, url text, matched text)
LANGUAGE sql STABLE
-- as medrag_nearest: planned once per session; 6 ms of a 24 ms search (p50, dev questions) was planning
SET plan_cache_mode = force_generic_plan
AS $$
    WITH settings AS (
        SELECT greatest(coalesce(k, cfg.default_k), 1) AS k,
               greatest(coalesce(k, cfg.default_k), 1) * cfg.pool_per_k + cfg.pool_extra AS pool,
               cue.intent, cue.named_source, cfg.rrf_k, cfg.vector_leg_weight, cfg.text_leg_weight,
               cfg.trigram_leg_weight, cfg.fit_weight, cfg.hcpcs_vector_offset, cfg.sure_margin, cfg.sure_trailing_offset,
               cfg.unsure_trailing_offset, cfg.chunks_per_document, cfg.exact_bonus
        -- the tuned numbers (medrag/core/tuning.py), each overridable per session: SET medrag.rrf_k = 30
        FROM medrag_settings() cfg, medrag_query_cues(query_text) cue
    ),
    leg_hits AS (
        SELECT l.* FROM settings s, LATERAL medrag_search_legs(query_embedding, query_text, s.pool, filters) l
    ),
    legs AS (
        -- reciprocal rank fusion: a leg's place r adds its weight / (rrf_k + r); rrf_k 20, not the usual 60: a first
        -- place in one leg then outweighs middling places in two (with the documents-first ordering below: dev hit@5
        -- 0.846 -> 0.904; the blind holdout set unchanged). The fit adds fit_weight x the fit itself, not its rank:
        -- a rank makes a clear fit (1.3 against 1.1) worth 2/21 against 2/22, and the code the other legs liked
        -- better won. The weights are fitted (medrag eval fit-fusion; medrag/core/tuning.py says which are kept).
        SELECT f.id, f.grp, f.leg,
               CASE f.leg WHEN 'fit' THEN s.fit_weight * f.fit
                          ELSE CASE f.leg WHEN 'vector' THEN s.vector_leg_weight WHEN 'text' THEN s.text_leg_weight
                                          WHEN 'trigram' THEN s.trigram_leg_weight ELSE 1::numeric END / (s.rrf_k + f.place)
               END AS share
        FROM leg_hits f, settings s
    ),
    fused AS (
        SELECT id, grp, sum(share) AS rrf, sum(share) FILTER (WHERE leg <> 'fit') AS found,
               bool_or(leg = 'exact') AS exact,
               string_agg(leg, '+' ORDER BY leg) AS matched
        FROM legs GROUP BY id, grp
    ),
    document_score AS (
        -- a document's place in a leg is its best chunk's: fused chunk by chunk, a determination whose nearest
        -- passage is not the one its words match lost to one passage of a neighbour that both legs found (dev MRR
        -- 0.831 -> 0.838, holdout unchanged)
        SELECT document_id, sum(share) AS rrf
        FROM (SELECT c.document_id, l.leg, max(l.share) AS share
              FROM legs l JOIN chunk c ON c.id = l.id GROUP BY c.document_id, l.leg) best_per_leg
        GROUP BY document_id
    ),
    per_document AS (
        SELECT f.*, c.document_id, c.source, ds.rrf AS document_rrf,
               row_number() OVER (PARTITION BY c.document_id ORDER BY f.exact DESC, f.rrf DESC, f.id) AS nth
        FROM fused f JOIN chunk c ON c.id = f.id JOIN document_score ds ON ds.document_id = c.document_id
    ),
    in_group AS (
        -- every document's best chunk before any document's second one: ten hits name ten documents (a reader of
        -- the answer pipeline fetches a document's other passages itself: medrag/answer/evidence.py)
        SELECT p.*, row_number() OVER (PARTITION BY p.grp
                                       ORDER BY p.exact DESC, p.source = s.named_source DESC NULLS LAST,
                                                p.nth, p.document_rrf DESC, p.rrf DESC, p.id) AS group_rank
        FROM per_document p, settings s
        WHERE p.nth <= s.chunks_per_document
    ),
    nearest_by_group AS (
        -- An HCPCS vector is of a few words (chunk.embedding_text), nearer to any query than a passage is:
        -- hcpcs_vector_offset (0.08) is added to its distance. The leading group below is then the one the answer
        -- is in for 0.90 of the dev questions (nothing added: 0.81; holdout 0.93 and 0.89)
        SELECT v.grp, min(v.distance + CASE c.source WHEN 'hcpcs' THEN (SELECT hcpcs_vector_offset FROM settings)
                                                     ELSE 0 END) AS distance
        FROM leg_hits v JOIN chunk c ON c.id = v.id WHERE v.leg = 'vector' GROUP BY v.grp
    ),
    leader AS (
        -- the group the query asks for, else the group whose nearest chunk is closer (when both have vectors)
        SELECT coalesce((SELECT intent FROM settings),
                        (SELECT grp FROM nearest_by_group WHERE (SELECT count(*) FROM nearest_by_group) > 1
                         ORDER BY distance, grp LIMIT 1),
                        (SELECT grp FROM in_group ORDER BY exact DESC, found DESC NULLS LAST, id LIMIT 1)) AS grp,
               -- where the other group's documents come in: after the leader's third when the lead is sure, else
               -- after its first. Sure: the query says what it wants (the lead was right for 42 of 43 dev questions,
               -- 11 of 13 holdout), or one group is nearer by 0.1 or more (right for all 40 dev and 21 holdout
               -- questions with that margin). Dev MRR 0.794 -> 0.808, holdout hit@5 0.875 -> 0.896
               CASE WHEN (SELECT intent FROM settings) IS NOT NULL
                         OR (SELECT max(distance) - min(distance) FROM nearest_by_group HAVING count(*) > 1)
                            >= (SELECT sure_margin FROM settings)
                    THEN (SELECT sure_trailing_offset FROM settings)
                    ELSE (SELECT unsure_trailing_offset FROM settings) END AS trailing_offset
    ),
    ranked AS (
        -- the k hits first, then their texts: read for every grouped chunk, the texts cost more than the ranking
        SELECT g.id, g.exact, g.document_rrf, g.matched,
               row_number() OVER (ORDER BY g.exact DESC,
                                           g.group_rank
                                               + CASE WHEN g.grp = leader.grp THEN 0 ELSE leader.trailing_offset END,
                                           g.id) AS rank
        FROM in_group g
        CROSS JOIN leader
        ORDER BY rank
        LIMIT (SELECT k FROM settings)
    )
    SELECT r.rank::integer,
           (r.document_rrf + CASE WHEN r.exact THEN (SELECT exact_bonus FROM settings) ELSE 0 END)::double precision
               AS score,
           c.id, d.id, d.source, d.key, d.title, c.heading, c.text, rel.label, d.url, r.matched
    FROM ranked r
    JOIN chunk c ON c.id = r.id
    JOIN document d ON d.id = c.document_id
    JOIN release rel ON rel.id = d.release_id
    ORDER BY r.rank
$$;

-- Hybrid search (medrag_search_documents above) whose code documents are the code finder's: the search
-- decides how many codes a list holds and where they stand against determinations and manuals, medrag_find_codes
-- which codes fill those slots and in what order, so a search lists codes as `medrag codes` ranks them. A code the
-- query names (the exact leg) keeps its place; a slot the finder cannot fill (it found fewer codes, or only guesses)
-- keeps the search's own code. A code
-- slot's score is then the finder's confidence and its matched says +codes (codes alone for a code the search did
-- not find). No code slot, a filter that admits no code (a manual or chapter, other sources), no code release (or
-- none with the label asked for) or a query longer than a code term may be: the search's own order.
CREATE OR REPLACE FUNCTION medrag_search(query_embedding vector, query_text text, k integer DEFAULT NULL,
                                         filters jsonb DEFAULT '{}'::jsonb)
RETURNS TABLE (rank integer, score double precision, chunk_id bigint, document_id bigint, source text, key text,
               title text, heading text, text text, release text, url text, matched text)
LANGUAGE plpgsql VOLATILE  -- it keeps the finder's answers (medrag_find_codes_cached)
AS $$
#variable_conflict use_column
DECLARE
    cfg constant jsonb := medrag_code_finder_config();
    code_sources constant text[] := ARRAY(SELECT jsonb_array_elements_text(jsonb_path_query_array(cfg -> 'sources',
                                                                                                  '$.*')));
    f constant jsonb := coalesce(filters, '{}'::jsonb);
    hits jsonb;
    wanted_sources text[];
    systems text[];
    label text := nullif(nullif(f ->> 'release', 'current'), 'all');
    found jsonb;
BEGIN
    SELECT coalesce(jsonb_agg(to_jsonb(h) ORDER BY h.rank), '[]') INTO hits
    FROM medrag_search_documents(query_embedding, query_text, k, f) h;
    wanted_sources := CASE jsonb_typeof(f -> 'source')
                          WHEN 'array' THEN ARRAY(SELECT jsonb_array_elements_text(f -> 'source'))
                          WHEN 'string' THEN ARRAY[f ->> 'source']
                          ELSE code_sources END;
    systems := ARRAY(SELECT s.key FROM jsonb_each_text(cfg -> 'sources') s WHERE s.value = ANY (wanted_sources)
                     ORDER BY s.key DESC);
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(hits) h
               WHERE h ->> 'source' = ANY (code_sources)
                 AND 'exact' <> ALL (string_to_array(coalesce(h ->> 'matched', ''), '+')))
       AND cardinality(systems) > 0 AND coalesce(f ->> 'manual', '') = '' AND coalesce(f ->> 'chapter', '') = ''
       AND btrim(coalesce(query_text, '')) <> '' AND length(query_text) <= (cfg ->> 'max_term_chars')::int
       AND EXISTS (SELECT 1 FROM medrag_usable_release r
                   WHERE r.source IN (SELECT cfg -> 'sources' ->> s FROM unnest(systems) s)
                     AND CASE WHEN label IS NULL THEN r.is_current ELSE lower(r.label) = lower(label) END)
    THEN
        found := medrag_find_codes_cached(query_text, systems, label, least(greatest(coalesce(k, (cfg ->> 'default_k')::int), 1),
                                                                   (cfg ->> 'max_top')::int), query_embedding);
    END IF;
    RETURN QUERY
    WITH hit AS (
        SELECT h.value AS x, h.n FROM jsonb_array_elements(hits) WITH ORDINALITY AS h(value, n)
    ),
    slot AS (  -- none when the finder was not asked: the search's own order
        SELECT x, n, row_number() OVER (ORDER BY n) AS j FROM hit
        WHERE found IS NOT NULL AND x ->> 'source' = ANY (code_sources)
          AND 'exact' <> ALL (string_to_array(coalesce(x ->> 'matched', ''), '+'))
    ),
    placed AS (SELECT x ->> 'source' AS source, x ->> 'key' AS key FROM hit WHERE n NOT IN (SELECT n FROM slot)),
    own AS (  -- a document's best chunk among the slots
        SELECT DISTINCT ON (x ->> 'source', x ->> 'key') x ->> 'source' AS source, x ->> 'key' AS key, x
        FROM slot ORDER BY x ->> 'source', x ->> 'key', n
    ),
    ranked AS (
        SELECT DISTINCT ON (cfg -> 'sources' ->> (r.value ->> 'system'), r.value ->> 'code')
               cfg -> 'sources' ->> (r.value ->> 'system') AS source, r.value ->> 'code' AS key,
               (r.value ->> 'confidence')::float8 AS confidence, r.n
        FROM jsonb_array_elements(found -> 'results') WITH ORDINALITY AS r(value, n)
        -- a guess (no code held enough of the query) is no better than the search's own code for the slot
        WHERE r.value ->> 'tier' IS DISTINCT FROM cfg ->> 'guess_tier'
        ORDER BY 1, 2, r.n
    ),
    wanted AS (
        SELECT r.* FROM ranked r WHERE (r.source, r.key) NOT IN (SELECT source, key FROM placed)
    ),
    fetched AS (  -- a code the search did not find: its document's first chunk, where the filters admit it
        SELECT DISTINCT ON (d.source, d.key) d.source, d.key,
               jsonb_build_object('chunk_id', c.id, 'document_id', d.id, 'source', d.source, 'key', d.key,
                                  'title', d.title, 'heading', c.heading, 'text', c.text, 'release', rel.label,
                                  'url', d.url, 'matched', 'codes') AS x
        FROM wanted w
        JOIN document d ON d.source = w.source AND d.key = w.key
        JOIN release rel ON rel.id = d.release_id
        JOIN chunk c ON c.document_id = d.id
        WHERE (w.source, w.key) NOT IN (SELECT source, key FROM own)
          AND medrag_document_matches(d.source, d.key, d.is_current, d.effective_date, d.termination_date,
                                      d.metadata, d.release_id, f)
        ORDER BY d.source, d.key, d.is_current DESC, c.ordinal
    ),
    chosen AS (
        SELECT row_number() OVER (ORDER BY w.n) AS j,
               coalesce(o.x || jsonb_build_object('matched', (o.x ->> 'matched') || '+codes'), fe.x)
                   || jsonb_build_object('score', w.confidence) AS x
        FROM wanted w
        LEFT JOIN own o ON o.source = w.source AND o.key = w.key
        LEFT JOIN fetched fe ON fe.source = w.source AND fe.key = w.key
        WHERE o.x IS NOT NULL OR fe.x IS NOT NULL
        ORDER BY w.n
        LIMIT (SELECT count(*) FROM slot)
    ),
    kept AS (  -- slots the finder leaves: the search's own codes, in its order
        SELECT (SELECT count(*) FROM chosen) + row_number() OVER (ORDER BY s.n) AS j, s.x
        FROM slot s
        WHERE (s.x ->> 'source', s.x ->> 'key') NOT IN (SELECT c.x ->> 'source', c.x ->> 'key' FROM chosen c)
    ),
    filled AS (
        SELECT s.n, coalesce(c.x, k2.x, s.x) || jsonb_build_object('rank', s.x -> 'rank') AS x
        FROM slot s
        LEFT JOIN chosen c ON c.j = s.j
        LEFT JOIN kept k2 ON k2.j = s.j
    )
    SELECT (x ->> 'rank')::int, (x ->> 'score')::float8, (x ->> 'chunk_id')::bigint, (x ->> 'document_id')::bigint,
           x ->> 'source', x ->> 'key', x ->> 'title', x ->> 'heading', x ->> 'text', x ->> 'release', x ->> 'url',
           x ->> 'matched'
    FROM (SELECT n, x FROM hit WHERE n NOT IN (SELECT n FROM slot) UNION ALL SELECT n, x FROM filled) out
    ORDER BY n;
END
$$;

-- Full-text-only search for analysts without an embedding model (same filters, same ranking minus vectors).
CREATE OR REPLACE FUNCTION medrag_search_text(query_text text, k integer DEFAULT NULL,
                                              filters jsonb DEFAULT '{}'::jsonb)
RETURNS TABLE (rank integer, score double precision, chunk_id bigint, document_id bigint, source text, key text,
               title text, heading text, text text, release text, url text, matched text)
LANGUAGE sql VOLATILE
AS $$
    SELECT * FROM medrag_search(NULL::vector, query_text, k, filters)
$$;
