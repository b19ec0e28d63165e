-- The code finder's answers kept (medrag_code_cache): a term asked again costs one indexed lookup instead of a
-- search. medrag_search's code slots and the API's /codes ask through it; `medrag eval` does not (it measures the
-- finder itself). The key is everything the answer depends on, so nothing is ever invalidated by hand: a refresh, a
-- migration or a changed setting makes new keys, and the old entries age out past code_cache_rows.

-- The version of what the finder reads: every release (a load, a promotion or a failure rewrites its row), the
-- newest vector (the index stage adds them after a load), the SQL and the migration installed, the synonyms and the
-- embedding models.
CREATE OR REPLACE FUNCTION medrag_code_data_version()
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT md5(concat_ws('|',
        (SELECT string_agg(concat_ws(':', id, status, is_current, loaded_at), ',' ORDER BY id) FROM release),
        (SELECT max(chunk_id) FROM chunk_vector),
        (SELECT string_agg(sha256, ',' ORDER BY name) FROM medrag_sql_script),
        (SELECT string_agg(version_num, ',') FROM alembic_version),
        (SELECT md5(string_agg(s::text, ',' ORDER BY s.position)) FROM medrag_synonym s),
        (SELECT string_agg(concat_ws(':', id, name), ',' ORDER BY id) FROM embedding_model)))
$$;

-- The key of one call: its arguments, this session's settings (medrag_code_finder_config, but the cache's own size)
-- and the data version.
CREATE OR REPLACE FUNCTION medrag_code_cache_key(term text, systems text[], release_label text, top integer,
                                                 query_embedding vector)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT md5(jsonb_build_array(term, systems, release_label, top, md5(query_embedding::text),
                                 md5((medrag_code_finder_config() - 'code_cache_rows')::text), medrag_code_data_version())::text)
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
        INSERT INTO medrag_code_cache (cache_key, term, found) VALUES (key, term, found)
        ON CONFLICT (cache_key) DO NOTHING
        RETURNING id INTO kept;
        IF kept IS NOT NULL THEN
            DELETE FROM medrag_code_cache WHERE id <= kept - capacity;
        END IF;
    END IF;
    RETURN found;
END
$$;
