"""The code finder's synonyms in SQL: its part of the one synonym table (medrag.core.synonyms), rendered into
generated.sql so that the term's analysis in PostgreSQL matches the same terms as the Python rules.
"""

from __future__ import annotations

import json

from medrag.core.synonyms import finder_synonyms


def synonyms_sql() -> str:
    """medrag_code_synonyms() and medrag_code_synonym_matches(words): the finder's part of the synonym table, for
    the term analysis in SQL, rendered into generated.sql."""
    table = finder_synonyms()
    entries = {term: {"expansions": list(entry.expansions), "kind": entry.kind, "systems": list(entry.systems)}
               for term, entry in table.entries.items()}
    literal = json.dumps(entries, sort_keys=True).replace("'", "''")
    return f"""
-- The code finder's part of the synonym table (medrag/data/synonyms.csv, read by medrag/core/synonyms.py): term ->
-- expansions, kind and the systems it hints at. Rendered by medrag/codes/synonyms.py.
CREATE OR REPLACE FUNCTION medrag_code_synonyms()
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT '{literal}'::jsonb
$$;

-- Where the table's terms occur in a term's words, scanning left to right and preferring the longest term, without
-- overlaps; a hyphenated word is also its words apart ("behind-the-ear" is the term "behind the ear"). start_at is
-- the first word's index from 0 and end_at the index after the last, as Python slices.
CREATE OR REPLACE FUNCTION medrag_code_synonym_matches(words text[])
RETURNS TABLE (term text, start_at integer, end_at integer)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    entries constant jsonb := medrag_code_synonyms();
    longest constant integer := {table.longest};
    total constant integer := coalesce(cardinality(words), 0);
    i integer := 1;
    length integer;
    phrase text;
BEGIN
    WHILE i <= total LOOP
        term := NULL;
        FOR length IN REVERSE least(longest, total - i + 1) .. 1 LOOP
            phrase := array_to_string(words[i:i + length - 1], ' ');
            IF entries ? phrase THEN
                term := phrase;
            ELSIF length = 1 AND entries ? replace(phrase, '-', ' ') THEN
                term := replace(phrase, '-', ' ');
            END IF;
            IF term IS NOT NULL THEN
                start_at := i - 1;
                end_at := i - 1 + length;
                RETURN NEXT;
                i := i + length;
                EXIT;
            END IF;
        END LOOP;
        IF term IS NULL THEN
            i := i + 1;
        END IF;
    END LOOP;
END
$$;
"""
