-- ICD-10-CM and HCPCS codes for a term in plain words, as `medrag codes` finds them (the whole finder is SQL:
-- medrag_find_codes); without a vector its embedding leg is skipped. Its trace says how: jsonb -> 'trace'.
-- expect-first: N20.1
SELECT r.n AS rank, r.value ->> 'system' AS system, r.value ->> 'code' AS code, r.value ->> 'display' AS display,
       (r.value ->> 'confidence')::float8 AS confidence, r.value ->> 'tier' AS tier
FROM jsonb_array_elements(medrag_find_codes('stone stuck in the ureter') -> 'results') WITH ORDINALITY AS r(value, n)
ORDER BY r.n;
