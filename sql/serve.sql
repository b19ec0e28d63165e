-- What the API server (medrag serve) keeps in PostgreSQL so that every process and replica shares it. A repeatable
-- script like sql/search.sql; the table is revision 0030's.

-- An interval in seconds, as the bucket's arithmetic counts time. One expression, so it is inlined.
CREATE OR REPLACE FUNCTION medrag_seconds(span interval)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT extract(epoch FROM span)::float8
$$;

-- Takes one of a client's tokens: 0 when the request may go ahead, else the whole seconds until a token is there.
-- A client's bucket holds per_minute tokens and refills at per_minute a minute; a new client's starts full. One
-- statement, the bucket's row locked while it runs, so concurrent requests of a client from several processes take
-- tokens one after the other. EXCLUDED.seen is the statement's one "now".
CREATE OR REPLACE FUNCTION medrag_take_token(client text, per_minute integer)
RETURNS integer
LANGUAGE sql VOLATILE
AS $$
    INSERT INTO medrag_rate_bucket AS b (client, tokens, seen, granted)
    VALUES (client, per_minute - 1, clock_timestamp(), true)
    ON CONFLICT ON CONSTRAINT medrag_rate_bucket_pkey DO UPDATE
    -- the bucket refilled since its last request (per_minute a minute, up to per_minute), a token taken if one is there
    SET (granted, tokens, seen) = (
        SELECT refill.tokens >= 1, refill.tokens - CASE WHEN refill.tokens >= 1 THEN 1 ELSE 0 END, EXCLUDED.seen
        FROM (SELECT least(per_minute, b.tokens + greatest(0, medrag_seconds(EXCLUDED.seen - b.seen))
                                                  * per_minute / medrag_seconds(interval '1 minute')) AS tokens) refill)
    RETURNING CASE WHEN b.granted THEN 0
                   ELSE greatest(1, ceil((1 - b.tokens) * medrag_seconds(interval '1 minute') / per_minute))::integer END
$$;

-- Forgets the buckets of clients idle for a minute or more (full again by then: forgetting changes nothing).
CREATE OR REPLACE FUNCTION medrag_forget_idle_buckets()
RETURNS integer
LANGUAGE sql VOLATILE
AS $$
    WITH gone AS (DELETE FROM medrag_rate_bucket WHERE seen < clock_timestamp() - interval '1 minute' RETURNING 1)
    SELECT count(*)::integer FROM gone
$$;
