-- The code finder's answers kept (medrag_code_cache): a term asked again costs one indexed lookup instead of a
-- search. medrag_search's code slots and the API's /codes ask through it; `medrag eval` does not (it measures the
-- finder itself). The key is everything the answer depends on, so nothing is ever invalidated by hand: a refresh, a
-- migration or a changed setting makes new keys, and the old entries age out past code_cache_rows.

-- The version of what the finder reads: every release (a load, a promotion or a failure rewrites its row), the
-- newest vector (the index stage adds them after a load), the SQL and the migration installed (generated.sql holds
-- the synonym table's rows and the finder reads them as its constants) and the embedding models with how many of
-- their words are stored (medrag_known_word reads them: a model's words stored later change answers). Read on every
-- search, so no table is read whole: hashing medrag_synonym's rows cost 0.5 ms of a 0.65 ms call.
CREATE OR REPLACE FUNCTION medrag_code_data_version()
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT md5(concat_ws('|',
        (SELECT string_agg(concat_ws(':', id, status, is_current, loaded_at), ',' ORDER BY id) FROM release),
        (SELECT max(chunk_id) FROM chunk_vector),
        (SELECT string_agg(sha256, ',' ORDER BY name) FROM medrag_sql_script),
        (SELECT string_agg(version_num, ',') FROM alembic_version),
        (SELECT string_agg(concat_ws(':', id, name, whole_words), ',' ORDER BY id) FROM embedding_model)))
$$;

-- The settings an answer depends on: this session's (medrag_code_finder_config), but the cache's own size.
CREATE OR REPLACE FUNCTION medrag_code_cache_settings()
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT md5((medrag_code_finder_config() - 'code_cache_rows')::text)
$$;

-- The key of one call: its arguments, the settings (medrag_code_cache_settings) and the data version it is read with.
CREATE OR REPLACE FUNCTION medrag_code_cache_key(term text, systems text[], release_label text, top integer,
                                                 query_embedding vector, settings_hash text, data_version text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT md5(jsonb_build_array(term, systems, release_label, top, md5(query_embedding::text), settings_hash,
                                 data_version)::text)
$$;

-- The key of one call made now: this session's settings, the current data.
CREATE OR REPLACE FUNCTION medrag_code_cache_key(term text, systems text[], release_label text, top integer,
                                                 query_embedding vector)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT medrag_code_cache_key(term, systems, release_label, top, query_embedding, medrag_code_cache_settings(),
                                 medrag_code_data_version())
$$;

-- medrag_find_codes, answered from the cache when the same call on the same data was answered before; a new answer
-- is kept unless the transaction is read-only (a streaming replica reads what its primary kept) or
-- code_cache_rows is 0. A kept answer says `"cached": true`, times the lookup alone and heads its trace with when
-- it was kept.
CREATE OR REPLACE FUNCTION medrag_find_codes_cached(term text, systems text[] DEFAULT NULL,
                                                    release_label text DEFAULT NULL, top integer DEFAULT NULL,
                                                    query_embedding vector DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_variable
DECLARE
    started constant timestamptz := clock_timestamp();
    capacity constant integer := (SELECT code_cache_rows FROM medrag_settings());
    key text;
    found jsonb;
    kept_at timestamptz;
    kept bigint;
BEGIN
    IF capacity < 1 THEN
        RETURN medrag_find_codes(term, systems, release_label, top, query_embedding);
    END IF;
    -- one statement, one snapshot: the key names the data the answer was read from (coalesce runs the finder
    -- only on a miss)
    SELECT k.key, coalesce(c.found, medrag_find_codes(medrag_find_codes_cached.term, systems, release_label, top,
                                                      query_embedding)), c.created_at
    INTO key, found, kept_at
    FROM medrag_code_cache_key(medrag_find_codes_cached.term, systems, release_label, top, query_embedding) k(key)
    LEFT JOIN medrag_code_cache c ON c.cache_key = k.key;
    IF kept_at IS NOT NULL THEN  -- the timings are this lookup's; the trace says the answer's own came with it
        RETURN found || jsonb_build_object(
            'cached', true,
            'timings', jsonb_build_object('cache', medrag_elapsed_ms(started), 'total', medrag_elapsed_ms(started)),
            'trace', jsonb_build_array(format('cache: kept at %s (medrag_code_cache)', kept_at)) || (found -> 'trace'));
    END IF;
    IF NOT current_setting('transaction_read_only')::boolean THEN
        INSERT INTO medrag_code_cache (cache_key, term, found, systems, release_label, top, query_embedding,
                                       settings_hash)
        VALUES (key, term, found, systems, release_label, top, query_embedding, medrag_code_cache_settings())
        ON CONFLICT (cache_key) DO NOTHING
        RETURNING id INTO kept;
        IF kept IS NOT NULL THEN
            DELETE FROM medrag_code_cache WHERE id <= kept - capacity;
        END IF;
    END IF;
    RETURN found;
END
$$;

-- The most recent distinct calls kept under this session's settings that the current data has not answered yet:
-- what a refresh asks again (medrag.codes.cache, `medrag db warm`) so that users' next asks of them are lookups.
-- Newest first; rows kept before revision 0032 hold no call and are left to age out.
CREATE OR REPLACE FUNCTION medrag_code_cache_stale(most integer)
RETURNS TABLE (term text, systems text[], release_label text, top integer, query_embedding vector)
LANGUAGE sql STABLE
AS $$
    WITH now_ AS MATERIALIZED (  -- once, not once per call
        SELECT medrag_code_cache_settings() AS settings_hash, medrag_code_data_version() AS data_version
    )
    SELECT call.term, call.systems, call.release_label, call.top, call.query_embedding
    FROM now_,
         LATERAL (SELECT DISTINCT ON (c.term, c.systems, c.release_label, c.top, md5(c.query_embedding::text))
                         c.id, c.term, c.systems, c.release_label, c.top, c.query_embedding
                  FROM medrag_code_cache c
                  WHERE c.settings_hash = now_.settings_hash
                  ORDER BY c.term, c.systems, c.release_label, c.top, md5(c.query_embedding::text), c.id DESC) call
    WHERE NOT EXISTS (SELECT 1 FROM medrag_code_cache k
                      WHERE k.cache_key = medrag_code_cache_key(call.term, call.systems, call.release_label, call.top,
                                                                call.query_embedding, now_.settings_hash,
                                                                now_.data_version))
    ORDER BY call.id DESC
    LIMIT most
$$;
