-- medrag_reader: may read the analyst views and call the search functions and the code finder, nothing else. A
-- repeatable script, run last (`medrag db migrate` runs every script again whenever one changes: re-created
-- functions lose these settings).
-- Roles are cluster-wide; with your own server, give it a password: ALTER ROLE medrag_reader PASSWORD '...'.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'medrag_reader') THEN
        CREATE ROLE medrag_reader LOGIN NOINHERIT;
    END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO medrag_reader;
GRANT SELECT ON v_chunk, v_hcpcs_current, v_icd10cm_current, v_ncd_current, v_lcd_hcpcs, v_release_history,
    v_icd10cm_history, v_hcpcs_history, v_icd10cm_index, v_icd10cm_drug, v_icd10cm_neoplasm, medrag_usable_release,
    medrag_synonym, medrag_search_synonym, medrag_finder_synonym, v_release_changes, release_change_set TO medrag_reader;

-- The search functions read base tables the reader cannot: they run with their owner's rights, on a fixed path.
ALTER FUNCTION medrag_search(vector, text, integer, jsonb) SECURITY DEFINER SET search_path = public, pg_temp;
ALTER FUNCTION medrag_search_text(text, integer, jsonb) SECURITY DEFINER SET search_path = public, pg_temp;
ALTER FUNCTION medrag_nearest(vector, integer, jsonb) SECURITY DEFINER SET search_path = public, pg_temp;
ALTER FUNCTION medrag_find_codes(text, text[], text, integer, vector, boolean) SECURITY DEFINER
    SET search_path = public, pg_temp;
ALTER FUNCTION medrag_find_codes_cached(text, text[], text, integer, vector) SECURITY DEFINER
    SET search_path = public, pg_temp;
ALTER FUNCTION medrag_check_lines(jsonb) SECURITY DEFINER SET search_path = public, pg_temp;
ALTER FUNCTION medrag_changes_for_codes(text[], integer[]) SECURITY DEFINER SET search_path = public, pg_temp;
REVOKE ALL ON FUNCTION medrag_search(vector, text, integer, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION medrag_search_text(text, integer, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION medrag_nearest(vector, integer, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION medrag_find_codes(text, text[], text, integer, vector, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION medrag_find_codes_cached(text, text[], text, integer, vector) FROM PUBLIC;
REVOKE ALL ON FUNCTION medrag_check_lines(jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION medrag_changes_for_codes(text[], integer[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION medrag_search(vector, text, integer, jsonb) TO medrag_reader;
GRANT EXECUTE ON FUNCTION medrag_search_text(text, integer, jsonb) TO medrag_reader;
GRANT EXECUTE ON FUNCTION medrag_nearest(vector, integer, jsonb) TO medrag_reader;
GRANT EXECUTE ON FUNCTION medrag_find_codes(text, text[], text, integer, vector, boolean) TO medrag_reader;
GRANT EXECUTE ON FUNCTION medrag_find_codes_cached(text, text[], text, integer, vector) TO medrag_reader;
GRANT EXECUTE ON FUNCTION medrag_check_lines(jsonb) TO medrag_reader;
GRANT EXECUTE ON FUNCTION medrag_changes_for_codes(text[], integer[]) TO medrag_reader;
