"""The code finder's synonyms in SQL: its view of the one synonym table (medrag_synonym, written from
medrag.core.synonyms), and the term matching the term's analysis runs over it, rendered into generated.sql.
"""

from __future__ import annotations

from medrag.codes.classify import sql_regex
from medrag.core.words import TERM


def synonyms_sql() -> str:
    """medrag_finder_synonym, medrag_code_synonyms() and medrag_code_synonym_matches(words): the finder's part of the
    synonym table, for the term analysis in SQL, rendered into generated.sql."""
    return f"""
-- The code finder's part of the synonym table: the lower-case query terms (rows that do not expand code documents),
-- plus the abbreviations code documents expand in any case that no query term defines, lower-cased (an exact-case
-- one, AIDS / aids, is an ordinary word in a lower-cased term).
CREATE OR REPLACE VIEW medrag_finder_synonym AS
SELECT s.position, lower(s.term) AS term, s.expansion, s.kind, s.systems
FROM medrag_synonym s
WHERE s.documents = ''
   OR (s.documents = 'any_case' AND lower(s.term) ~ '^(?:{sql_regex(TERM.pattern)})$'
       AND NOT EXISTS (SELECT 1 FROM medrag_synonym q WHERE q.documents = '' AND q.term = lower(s.term)));

-- The finder's synonyms as one jsonb (term -> expansions in the table's order, kind and the systems it hints at), and
-- the most words a term has. Both are built from medrag_finder_synonym while this script runs, the only writer of
-- medrag_synonym, and kept as constants: the term's analysis reads them on every call, and a function reading the
-- table is computed again whenever a statement is planned (3 ms more a classification, measured).
DO $build$
BEGIN
    EXECUTE format($function$
CREATE OR REPLACE FUNCTION medrag_code_synonyms()
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $body$ SELECT %L::jsonb $body$
$function$, (
        SELECT coalesce(jsonb_object_agg(f.term, jsonb_build_object('expansions', f.expansions, 'kind', f.kind,
                                                                   'systems', f.systems)), '{{}}')
        FROM (SELECT term, jsonb_agg(expansion ORDER BY position) AS expansions,
                     (array_agg(kind ORDER BY position))[1] AS kind,
                     jsonb_agg(to_jsonb(systems) ORDER BY position) -> 0 AS systems
              FROM medrag_finder_synonym GROUP BY term) f));
    EXECUTE format($function$
CREATE OR REPLACE FUNCTION medrag_code_synonym_longest()
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $body$ SELECT %s $body$
$function$, (SELECT coalesce(max(cardinality(string_to_array(term, ' '))), 0) FROM medrag_finder_synonym));
END
$build$;

-- Where the table's terms occur in a term's words, scanning left to right and preferring the longest term, without
-- overlaps; a hyphenated word is also its words apart ("behind-the-ear" is the term "behind the ear"). start_at is
-- the first word's index from 0 and end_at the index after the last, as Python slices.
CREATE OR REPLACE FUNCTION medrag_code_synonym_matches(words text[])
RETURNS TABLE (term text, start_at integer, end_at integer)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    entries constant jsonb := medrag_code_synonyms();
    longest constant integer := medrag_code_synonym_longest();
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
