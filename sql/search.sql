-- Hybrid search for analysts and for medrag itself. Created by migration 0005 (every statement is CREATE OR
-- REPLACE); medrag's CLI calls medrag_search, so psql and the CLI rank the same rows.
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

-- Abbreviations and synonyms added to the full-text query (filled from medrag/data/code_synonyms.csv by every refresh).
CREATE TABLE IF NOT EXISTS medrag_synonym (
    term text NOT NULL,
    expansion text NOT NULL,
    PRIMARY KEY (term, expansion)
);

-- Does a document (with its release label) pass the filters? A one-expression SQL function, so it is inlined.
CREATE OR REPLACE FUNCTION medrag_document_matches(d document, release_label text, filters jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT (NOT filters ? 'source' OR filters -> 'source' @> to_jsonb(d.source))
       AND (NOT filters ? 'key' OR filters -> 'key' @> to_jsonb(d.key))
       AND CASE coalesce(filters ->> 'release', 'current')
               WHEN 'current' THEN d.is_current
               WHEN 'all' THEN true
               ELSE release_label = filters ->> 'release' END
       AND CASE WHEN filters ? 'as_of'
               -- A retired NCD's last version carries the retirement notice's date as its effective date (after
               -- its termination date): that date does not bound when the determination was in force.
               THEN (d.effective_date IS NULL OR d.effective_date <= (filters ->> 'as_of')::date
                     OR d.termination_date <= d.effective_date)
                    AND (d.termination_date IS NULL OR d.termination_date > (filters ->> 'as_of')::date)
               -- without a date, only the newest version of a determination
               ELSE coalesce(d.metadata ->> 'is_current_version', 'true') = 'true' END
       AND (NOT filters ? 'contractor' OR d.source NOT IN ('lcd', 'article')
            OR d.metadata -> 'contractors' @> to_jsonb(filters ->> 'contractor')
            OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(d.metadata -> 'contractor_names') AS name
                       WHERE name ILIKE '%' || (filters ->> 'contractor') || '%'))
       AND (NOT filters ? 'state' OR d.source NOT IN ('lcd', 'article')
            OR d.metadata -> 'states' @> to_jsonb(upper(filters ->> 'state')))
       AND (NOT filters ? 'manual' OR d.metadata ->> 'manual' = filters ->> 'manual')
       AND (NOT filters ? 'chapter' OR d.metadata ->> 'chapter' = filters ->> 'chapter')
$$;

-- Identifiers written in a query: HCPCS (E0601), ICD-10-CM (E11.621 or E11621), NCD sections (NCD 240.2),
-- LCDs (L33718, LCD 33718) and Articles (A52458), as (source, key) pairs that may exist.
CREATE OR REPLACE FUNCTION medrag_query_identifiers(query_text text)
RETURNS TABLE (source text, key text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    WITH token AS (
        SELECT m[1] AS t
        FROM regexp_matches(upper(coalesce(query_text, '')), '(?:^|[^A-Z0-9.])([A-Z][0-9][0-9A-Z](?:\.?[0-9A-Z]{1,4})?)(?![A-Z0-9])', 'g') AS m
    )
    SELECT 'hcpcs', t FROM token WHERE t ~ '^[A-V][0-9]{4}$'
    UNION SELECT 'icd10cm', t FROM token WHERE t ~ '^[A-Z][0-9][0-9A-Z](\.[0-9A-Z]{1,4})?$'
    UNION SELECT 'icd10cm', left(t, 3) || '.' || substr(t, 4) FROM token WHERE t ~ '^[A-Z][0-9][0-9A-Z][0-9A-Z]{1,4}$'
    UNION SELECT 'ncd', m[1]
        FROM regexp_matches(upper(coalesce(query_text, '')), 'NCD\s*#?\s*([0-9]{1,3}(?:\.[0-9]{1,2}){0,2})', 'g') AS m
    UNION SELECT 'lcd', 'L' || m[2]
        FROM regexp_matches(upper(coalesce(query_text, '')), '(\mL|LCD\s*#?\s*L?)([0-9]{5})\M', 'g') AS m
    UNION SELECT 'article', m[1]
        FROM regexp_matches(upper(coalesce(query_text, '')), '\m(A5[0-9]{4})\M', 'g') AS m
$$;

-- The full-text query: the user's words (websearch syntax) OR-ed, plus expansions of known abbreviations.
CREATE OR REPLACE FUNCTION medrag_text_query(query_text text)
RETURNS tsquery
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    WITH words AS (
        -- websearch_to_tsquery ANDs every word; a natural question rarely has them all in one chunk, so the
        -- words are OR-ed and ts_rank_cd rewards chunks that cover more of them.
        SELECT CASE WHEN q::text = '' THEN q ELSE replace(q::text, ' & ', ' | ')::tsquery END AS tsq
        FROM websearch_to_tsquery('english', coalesce(query_text, '')) AS q
    ),
    expansions AS (
        SELECT string_agg('(' || plainto_tsquery('english', s.expansion)::text || ')', ' | ') AS tsq_text
        FROM medrag_synonym s
        WHERE ' ' || regexp_replace(lower(coalesce(query_text, '')), '[^a-z0-9]+', ' ', 'g') || ' '
              LIKE '% ' || lower(s.term) || ' %'
          AND plainto_tsquery('english', s.expansion)::text <> ''
    )
    SELECT CASE WHEN expansions.tsq_text IS NULL THEN words.tsq
                ELSE words.tsq || expansions.tsq_text::tsquery END
    FROM words, expansions
$$;

-- Hybrid search in one statement: HNSW cosine neighbours, full text (ts_rank_cd), trigram title similarity for
-- misspellings and exact identifiers, fused by reciprocal rank fusion; exact identifiers rank first; at most two
-- chunks per document. query_embedding may be NULL (full text only).
CREATE OR REPLACE FUNCTION medrag_search(query_embedding vector, query_text text, k integer DEFAULT 10,
                                         filters jsonb DEFAULT '{}'::jsonb)
RETURNS TABLE (rank integer, score double precision, chunk_id bigint, document_id bigint, source text, key text,
               title text, heading text, text text, release text, url text, matched text)
LANGUAGE sql STABLE
-- relaxed_order: a selective filter keeps the HNSW scan going until enough rows pass (pgvector >= 0.8).
SET hnsw.iterative_scan = 'relaxed_order'
SET hnsw.ef_search = 100
AS $$
    WITH settings AS (
        SELECT greatest(coalesce(k, 10), 1) AS k, greatest(coalesce(k, 10), 1) * 5 + 20 AS pool,
               medrag_text_query(query_text) AS tsq, coalesce(filters, '{}'::jsonb) AS f
    ),
    vector_leg AS (
        SELECT hit.id, row_number() OVER (ORDER BY hit.distance, hit.id) AS r
        FROM (
            SELECT c.id, c.embedding <=> query_embedding AS distance
            FROM chunk c
            JOIN document d ON d.id = c.document_id
            JOIN release rel ON rel.id = d.release_id, settings
            WHERE query_embedding IS NOT NULL AND c.embedding IS NOT NULL
              AND medrag_document_matches(d, rel.label, settings.f)
            ORDER BY c.embedding <=> query_embedding
            LIMIT (SELECT pool FROM settings)
        ) hit
    ),
    text_leg AS (
        SELECT hit.id, row_number() OVER (ORDER BY hit.rank DESC, hit.id) AS r
        FROM (
            SELECT c.id, ts_rank_cd(c.tsv, settings.tsq) AS rank
            FROM chunk c
            JOIN document d ON d.id = c.document_id
            JOIN release rel ON rel.id = d.release_id, settings
            WHERE c.tsv @@ settings.tsq AND medrag_document_matches(d, rel.label, settings.f)
            ORDER BY rank DESC
            LIMIT (SELECT pool FROM settings)
        ) hit
    ),
    trigram_leg AS (
        SELECT hit.id, row_number() OVER (ORDER BY hit.similarity DESC, hit.id) AS r
        FROM (
            SELECT c.id, word_similarity(lower(query_text), lower(d.title)) AS similarity
            FROM document d
            JOIN release rel ON rel.id = d.release_id
            JOIN chunk c ON c.document_id = d.id AND c.ordinal = 0, settings
            WHERE lower(query_text) <% lower(d.title) AND medrag_document_matches(d, rel.label, settings.f)
            ORDER BY similarity DESC
            LIMIT (SELECT pool FROM settings)
        ) hit
    ),
    exact_leg AS (
        SELECT c.id, row_number() OVER (ORDER BY d.source, d.key, c.ordinal) AS r
        FROM medrag_query_identifiers(query_text) ident
        JOIN document d ON d.source = ident.source AND d.key = ident.key
        JOIN release rel ON rel.id = d.release_id
        JOIN chunk c ON c.document_id = d.id, settings
        WHERE medrag_document_matches(d, rel.label, settings.f)
    ),
    legs AS (
        SELECT id, r, 'vector' AS leg, 1.0 AS weight FROM vector_leg
        UNION ALL SELECT id, r, 'text', 1.0 FROM text_leg
        UNION ALL SELECT id, r, 'trigram', 1.0 FROM trigram_leg
        UNION ALL SELECT id, r, 'exact', 1.0 FROM exact_leg
    ),
    fused AS (
        SELECT id, sum(weight / (60 + r)) AS rrf, bool_or(leg = 'exact') AS exact,
               string_agg(leg, '+' ORDER BY leg) AS matched
        FROM legs GROUP BY id
    ),
    per_document AS (
        SELECT f.*, c.document_id,
               row_number() OVER (PARTITION BY c.document_id ORDER BY f.exact DESC, f.rrf DESC, f.id) AS nth
        FROM fused f JOIN chunk c ON c.id = f.id
    )
    SELECT (row_number() OVER (ORDER BY p.exact DESC, p.rrf DESC, p.id))::integer AS rank,
           (p.rrf + CASE WHEN p.exact THEN 1 ELSE 0 END)::double precision AS score,
           c.id, d.id, d.source, d.key, d.title, c.heading, c.text, rel.label, d.url, p.matched
    FROM per_document p
    JOIN chunk c ON c.id = p.id
    JOIN document d ON d.id = c.document_id
    JOIN release rel ON rel.id = d.release_id
    WHERE p.nth <= 2
    ORDER BY rank
    LIMIT (SELECT k FROM settings)
$$;

-- Full-text-only search for analysts without an embedding model (same filters, same ranking minus vectors).
CREATE OR REPLACE FUNCTION medrag_search_text(query_text text, k integer DEFAULT 10,
                                              filters jsonb DEFAULT '{}'::jsonb)
RETURNS TABLE (rank integer, score double precision, chunk_id bigint, document_id bigint, source text, key text,
               title text, heading text, text text, release text, url text, matched text)
LANGUAGE sql STABLE
AS $$
    SELECT * FROM medrag_search(NULL::vector, query_text, k, filters)
$$;
