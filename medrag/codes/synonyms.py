"""The code finder's synonyms in SQL: its view of the one synonym table (medrag_synonym, written from
medrag.core.synonyms), and the term matching the term's analysis runs over it, rendered into generated.sql.
"""

from __future__ import annotations

from medrag.codes.classify import sql_regex, sql_text_array
from medrag.core.constants_sql import constant_function
from medrag.core.synonyms import NEGATING_STOP_WORDS
from medrag.core.words import TERM

# What the finder's constants below hold (medrag.core.constants_sql; synonyms_sql says what each is).
_SYNONYMS = """(
        SELECT coalesce(jsonb_object_agg(f.term, jsonb_build_object('expansions', f.expansions, 'kind', f.kind,
                                                                   'systems', f.systems)), '{}')
        FROM (SELECT term, jsonb_agg(expansion ORDER BY position) AS expansions,
                     (array_agg(kind ORDER BY position))[1] AS kind,
                     jsonb_agg(to_jsonb(systems) ORDER BY position) -> 0 AS systems
              FROM medrag_finder_synonym GROUP BY term) f)"""
_LONGEST = "(SELECT coalesce(max(cardinality(string_to_array(term, ' '))), 0) FROM medrag_finder_synonym)"
_KEYS = """(
        SELECT coalesce(jsonb_object_agg(k.key, k.term), '{}')
        FROM (SELECT DISTINCT ON (key) key, term
              FROM (SELECT f.term, min(f.position) AS position, medrag_synonym_phrase_key(f.term) AS key
                    FROM medrag_finder_synonym f
                    GROUP BY f.term) t
              WHERE t.key IS NOT NULL
              ORDER BY key, position) k)"""


def synonyms_sql() -> str:
    """medrag_finder_synonym, medrag_code_synonyms() and medrag_code_synonym_matches(words): the finder's part of the
    synonym table, for the term analysis in SQL, rendered into generated.sql."""
    negating = sql_text_array(NEGATING_STOP_WORDS)
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
{constant_function("medrag_code_synonyms", "jsonb", _SYNONYMS)}
{constant_function("medrag_code_synonym_longest", "integer", _LONGEST)}
    -- the phrases of two or more keyed words by their keys (medrag_synonym_phrase_key; the first in the table's order
    -- where two share them)
{constant_function("medrag_code_synonym_keys", "jsonb", _KEYS)}
END
$build$;

-- Where the table's terms occur in a term's words, scanning left to right and preferring the longest term, without
-- overlaps; a hyphenated word is also its words apart ("behind-the-ear" is the term "behind the ear"). A phrase of
-- two or more keyed words also matches by its keys (medrag_synonym_word_key) across other stop words, though never a
-- negation; a stop word it spans that is a term of its own ("both") is matched too. start_at is the first word's
-- index from 0 and end_at the index after the last, as Python slices.
CREATE OR REPLACE FUNCTION medrag_code_synonym_matches(words text[])
RETURNS TABLE (term text, start_at integer, end_at integer)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    entries constant jsonb := medrag_code_synonyms();
    keyed_terms constant jsonb := medrag_code_synonym_keys();
    longest constant integer := medrag_code_synonym_longest();
    total constant integer := coalesce(cardinality(words), 0);
    keys constant text[] := ARRAY(SELECT medrag_synonym_word_key(w) FROM unnest(words) WITH ORDINALITY AS x(w, n)
                                  ORDER BY n);
    i integer := 1;
    j integer;
    phrase text;
    key text;
    keyed integer;
    keyed_term text;
    keyed_end integer;
    matched integer;
BEGIN
    WHILE i <= total LOOP
        term := NULL;
        matched := 0;
        -- the loop's own variable: what matched is kept in matched
        FOR length IN REVERSE least(longest, total - i + 1) .. 1 LOOP
            phrase := array_to_string(words[i:i + length - 1], ' ');
            IF entries ? phrase THEN
                term := phrase;
            ELSIF length = 1 AND entries ? replace(phrase, '-', ' ') THEN
                term := replace(phrase, '-', ' ');
            END IF;
            IF term IS NOT NULL THEN
                matched := length;
                EXIT;
            END IF;
        END LOOP;
        keyed_term := NULL;
        IF keys[i] <> '' THEN
            key := keys[i];
            keyed := 1;
            j := i + 1;
            WHILE j <= total AND keyed < longest LOOP
                IF keys[j] <> '' THEN
                    key := key || ' ' || keys[j];
                    keyed := keyed + 1;
                    IF keyed_terms ? key THEN
                        keyed_term := keyed_terms ->> key;
                        keyed_end := j;
                    END IF;
                -- a stop word that negates (a negation cue with a key, "never", ends the run by not matching)
                ELSIF words[j] = ANY ({negating}) THEN
                    EXIT;
                END IF;
                j := j + 1;
            END LOOP;
        END IF;
        IF keyed_term IS NOT NULL AND (term IS NULL OR keyed_end - i + 1 > matched) THEN
            term := keyed_term;
            matched := keyed_end - i + 1;
            FOR j IN i + 1 .. keyed_end - 1 LOOP
                IF keys[j] = '' AND entries ? words[j] THEN
                    RETURN QUERY SELECT words[j], j - 1, j;
                END IF;
            END LOOP;
        END IF;
        IF term IS NOT NULL THEN
            start_at := i - 1;
            end_at := i - 1 + matched;
            RETURN NEXT;
            i := i + matched;
        ELSE
            i := i + 1;
        END IF;
    END LOOP;
END
$$;
"""
