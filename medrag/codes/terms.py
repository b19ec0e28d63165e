"""A term as concepts: the words typed, grouped by synonym phrases, each with the wordings it may be matched by.

"copd exacerbation" is two concepts; broadening gives "copd" a second wording ("chronic obstructive pulmonary
disease"), a spelling correction gives "tuberculosus" the wording "tuberculosis". A code covers a concept when
one of its wordings' lexemes is in the code's description or inclusion terms, so a term is measured against the
same concepts however it was broadened. Lexemes come from PostgreSQL's english configuration (the same stemming
the full-text index uses). PostgreSQL finds the concepts (medrag_code_concepts, rendered here) and works with them
(medrag_term_lookups, medrag_term_json in sql/finder_analysis.sql); analyze_term reads them into Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine, text

from medrag.codes.classify import (
    ICD10CM,
    QUALIFIER_WORDS,
    SYSTEMS,
    Classification,
    classification_from,
    sql_regex,
    sql_text_array,
)

TYPED = "typed"
COMPOUND = "compound"  # the typed word as the corpus writes it, hyphenated ("checkup": check-up)
WORD_FORM = "word_form"  # another form of the typed word the ICD-10-CM Index lists ("pancreatic": pancreas)
# what an Index entry that refers elsewhere calls a run of the typed words ("inflammation of the esophagus":
# esophagitis; medrag_index_names)
INDEX_NAME = "index_name"
# the word a typed abbreviation of the current HCPCS release's short descriptions stands for ("inj": injection)
ABBREVIATION = "abbreviation"
SYNONYM = "synonym"
SPELLING = "spelling"
# A corrected word is less certain than one the user typed.
# The origins of the words as typed: the lookups search another wording of a concept once it has one.
AS_TYPED = (TYPED, COMPOUND, WORD_FORM, ABBREVIATION)
# A negation ("fatty liver not caused by alcohol", "shoulder pain, no injury") reaches from its cue to the end of the
# clause: a comma or other stop, or a word that starts another clause. "without" is not a cue here: codes say it
# too ("Vomiting without nausea"), and their "without" clauses are matched as written (sql/finder_features.sql);
# nor is the "not" of the Tabular's own filler ("not elsewhere classified", "not otherwise specified"), nor a "not
# enough" (too little of something is a deficiency, which codes name: "anemia from not enough iron"). Run by
# PostgreSQL (medrag_negated_words), case-insensitive, with \b written \y. The clause is a greedy run of characters
# none of which starts a stop: PostgreSQL makes a whole expression greedy when its first quantified part is, so a
# lazy run ending where a stop comes would run on to the last stop. Group 1 is the cue, group 2 the clause. A
# negation ICD-10-CM states itself ("Galactorrhea not associated with childbirth", "Do not resuscitate", "...,
# not intractable", the Index's "Immunization > not done") is a code's own wording, not the user's denial: a clause
# that starts with one a release states after the same cue is searched as written (medrag_stated_clause).
_NEGATION = (r"\b(not(?!\s+(?:elsewhere|otherwise|specified|further|enough|sufficient|adequate))|no|"
             r"never|denies|denied|"
             r"negative for|(?:did|does|do|is|was|has|had)n't)\b"
             r"((?:(?!\b(?:but|and|with|or|who|which)\b)[^,;.:()])*)")
# A term's "without" clause, read as a description's is (medrag_without_lexemes): to a stop, "with" or "of".
_WITHOUT = r"\bwithout\b((?:(?!\b(?:with|of)\b)[^,;.:()])*)"
# What a term holds wherever a negation cue is (LIKE patterns): without one, the pattern is not run.
_NEGATION_NEEDS = ("%no%", "%never%", "%denie%", "%negative%", "%n't%")


@dataclass(frozen=True)
class Wording:
    """One way to say a concept: its words, their lexemes and where the wording came from."""

    words: tuple[str, ...]
    lexemes: frozenset[str]
    origin: str


@dataclass
class Concept:
    """A word or synonym phrase of the term, with its wordings and the systems it is about."""

    words: tuple[str, ...]
    wordings: list[Wording]
    systems: frozenset[str]
    qualifier: bool = False
    negated: bool = False  # said not to be so ("not caused by alcohol"): never searched for, contradicted by a code
    # Lexemes of the concept's synonyms: a code's "continuous positive airway pressure" is explained by "cpap"
    # even before the synonym is searched for.
    explains: frozenset[str] = frozenset()

    @property
    def text(self) -> str:
        """The concept as typed."""
        return " ".join(self.words)


@dataclass
class TermQuery:
    """A term's concepts as medrag_code_concepts gives them (medrag_find_codes derives its lookups from them)."""

    text: str
    concepts: list[Concept] = field(default_factory=list)


_ANALYZE = text("SELECT c, medrag_code_concepts(c ->> 'text', c) AS concepts "
                "FROM medrag_classify_code_term(:term) AS c")


def analyze_term(conn: Connection | Engine, term: str) -> tuple[Classification, TermQuery]:
    """A term's classification (medrag_classify_code_term) and concepts (medrag_code_concepts, rendered by
    term_query_sql: synonym phrases grouped, stop words left out, focus systems assigned, compounds and negations
    marked), in one statement."""
    if isinstance(conn, Engine):
        with conn.connect() as connection:
            return analyze_term(connection, term)
    row = conn.execute(_ANALYZE, {"term": term}).one()
    classification = classification_from(term, row.c)
    return classification, TermQuery(classification.text, [
        Concept(tuple(concept["words"]),
                [Wording(tuple(wording["words"]), frozenset(wording["lexemes"]), wording["origin"])
                 for wording in concept["wordings"]],
                frozenset(concept["systems"]), concept["qualifier"], negated=concept["negated"],
                explains=frozenset(concept["explains"]))
        for concept in row.concepts])


def term_query_sql() -> str:
    """medrag_negated_words(text) and medrag_code_concepts(text, classification): a term's concepts as analyze_term
    describes them, rendered into generated.sql from this module's rules (classify's qualifier words and systems)."""
    negation, needs, without = sql_regex(_NEGATION), sql_text_array(_NEGATION_NEEDS), sql_regex(_WITHOUT)
    systems, qualifiers = sql_text_array(SYSTEMS), sql_text_array(sorted(QUALIFIER_WORDS))
    icd10cm = f"'{ICD10CM}'"
    return f"""
-- Every negation a code release's Tabular descriptions and Index levels state, [cue, the words of its clause] as the
-- pattern above reads them ("not intractable", the Index level "not done" under Immunization): what a term's "not ..."
-- is compared with. Written when a release is loaded (write_code_lookups) and, for every release, below, whenever
-- these scripts change (the pattern may have).
CREATE OR REPLACE FUNCTION medrag_write_stated_negations(code_release integer)
RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    written integer;
BEGIN
    DELETE FROM icd10cm_stated_negation WHERE release_id = code_release;
    INSERT INTO icd10cm_stated_negation (release_id, cue, words)
    SELECT DISTINCT code_release, lower(m.found[1]), clause.words
    FROM (SELECT c.description AS wording FROM icd10cm_code c
          WHERE c.release_id = code_release AND c.seventh_character IS NULL
          UNION
          SELECT e.title FROM icd10cm_index_entry e WHERE e.release_id = code_release) w,
         regexp_matches(w.wording, '{negation}', 'gi') AS m(found),
         LATERAL (SELECT medrag_words_of(m.found[2]) AS words) clause
    WHERE w.wording ILIKE ANY ({needs}) AND cardinality(clause.words) > 0;
    GET DIAGNOSTICS written = ROW_COUNT;
    RETURN written;
END
$$;

SELECT medrag_write_stated_negations(id) FROM release WHERE source = 'icd10cm' ORDER BY id;

-- How many of a negation clause's first words ICD-10-CM states after the same cue (any loaded release's Tabular or
-- Index), 0 when it states none of them: "not intractable epilepsy" starts with the stated "not intractable" (1).
-- Such a negation is a code's wording, searched as written.
CREATE OR REPLACE FUNCTION medrag_stated_clause(cue text, clause text)
RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT coalesce(max(cardinality(s.words)), 0)::int
    FROM (SELECT medrag_words_of(clause) AS words) typed
    JOIN icd10cm_stated_negation s ON s.cue = lower(cue) AND s.words[1] = typed.words[1]
    WHERE typed.words[1:cardinality(s.words)] = s.words
$$;

-- A term with its slashed abbreviations spelled out as the current HCPCS release's short descriptions teach
-- (medrag.sources.hcpcs.abbreviations): "w/o" is "without", "w/c" "wheelchair", and "w/bag" "with bag". A term's
-- words split at a slash, so such an abbreviation is read here, before the term is split: a short description pasted
-- from a claim ("hosp bed var ht w/o mattr") then says what is absent as the long description does.
CREATE OR REPLACE FUNCTION medrag_slashes_spelled_out(term text)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN strpos(term, '/') = 0 THEN term ELSE (
        SELECT string_agg(coalesce(spelled.token, t.token), ' ' ORDER BY t.n)
        FROM regexp_split_to_table(btrim(term), '\\s+') WITH ORDINALITY AS t(token, n)
        LEFT JOIN LATERAL (
            -- the whole token, or its start where the abbreviation ends at the slash ("w/" of "w/bag")
            SELECT a.word || CASE WHEN right(a.abbreviation, 1) = '/' THEN ' ' ELSE '' END
                   || substr(t.token, length(a.abbreviation) + 1) AS token
            FROM hcpcs_abbreviation a JOIN release r ON r.id = a.release_id AND r.source = 'hcpcs' AND r.is_current
            WHERE strpos(a.abbreviation, '/') > 0 AND starts_with(lower(t.token), a.abbreviation)
              AND (right(a.abbreviation, 1) = '/' OR substr(lower(t.token), length(a.abbreviation) + 1) !~ '^[a-z0-9/]')
            ORDER BY length(a.abbreviation) DESC LIMIT 1) spelled ON true) END
$$;

-- What a term says is absent the way ICD-10-CM words it, each [its cue, the clause's words, their lexemes]: a
-- negation it states as the Tabular or Index does ("not intractable epilepsy": [not, [intractable], [intract]]) and
-- each "without" clause ("migraine without aura, intractable": [without, [aura], [aura]]). A code whose description
-- names those words, in order, when none of its own wordings says them after "without", "not" or "no", says the
-- opposite ("Epilepsy, unspecified, intractable", "Migraine with aura"); a code's "without" clause may cover a
-- stated negation's lexemes ("Concussion without loss of consciousness" for "concussion, no loss of
-- consciousness"). An Index path read innermost first runs its "without" clause over its main term ("without
-- refractory migraine migraine"): words no description says in that order.
CREATE OR REPLACE FUNCTION medrag_absences(term_text text)
RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_array(
               a.cue, to_jsonb(a.words),
               to_jsonb(tsvector_to_array(to_tsvector('english', array_to_string(a.words, ' '))))) ORDER BY a.n), '[]')
    FROM (SELECT 1 AS n, lower(m.found[1]) AS cue,
                 (medrag_words_of(m.found[2]))[1:medrag_stated_clause(m.found[1], m.found[2])] AS words
          FROM regexp_matches(term_text, '{negation}', 'gi') AS m(found)
          WHERE term_text ILIKE ANY ({needs})
          UNION ALL
          SELECT 2, 'without', medrag_words_of(w.found[1])
          FROM regexp_matches(term_text, '{without}', 'gi') AS w(found)
          WHERE term_text ~* 'without') a
    WHERE cardinality(a.words) > 0
$$;

-- Words a term says only inside a negation ("fatty liver not caused by alcohol": caused, by, alcohol): a cue reaches to
-- the end of its clause, unless ICD-10-CM states that negation itself (medrag_stated_clause; medrag/codes/terms.py
-- renders this script and says which cues count).
CREATE OR REPLACE FUNCTION medrag_negated_words(term_text text)
RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT coalesce(array_agg(DISTINCT w), '{{}}')
    FROM (SELECT unnest(medrag_words_of(m.found[2])) AS w
          FROM regexp_matches(term_text, '{negation}', 'gi') AS m(found)
          WHERE medrag_stated_clause(m.found[1], m.found[2]) = 0
          EXCEPT
          SELECT unnest(medrag_words_of(regexp_replace(term_text, '{negation}', ' ', 'gi')))) inside
    -- a session caches 32 compiled expressions, fewer than a code search uses: this one runs only where it may match
    WHERE term_text ILIKE ANY ({needs})
$$;

-- A classified term's concepts (medrag_classify_code_term gives the classification): each synonym phrase of the table
-- one concept, each other word one, stop words left out (a stop word the table gives a meaning, "both", is its
-- expansions, and so is a phrase it gives only sides for, "both ears"); a word that signals only one system is that
-- system's business when the classifier heard more than one (a service word the ICD-10-CM Index files a code under
-- with another of the term's words is both's); a one-word concept is also worded as the corpus writes it, with its
-- hyphens or accents ("checkup": check-up, "sjogren": sjögren). Lexemes are the english configuration's, as the
-- full-text index stems. One statement: a loop of small ones cost ten times more.
CREATE OR REPLACE FUNCTION medrag_code_concepts(term_text text, classification jsonb)
RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    WITH input AS (
        SELECT ARRAY(SELECT jsonb_array_elements_text(classification -> 'words')) AS words,
               medrag_code_synonyms() AS entries,
               medrag_negated_words(term_text) AS negated,
               -- more than one system heard: scoring classify_threshold or more (every system when none does)
               (SELECT count(*) FROM jsonb_each_text(classification -> 'scores') AS s(system, score)
                WHERE s.score::float8 >= (SELECT classify_threshold FROM medrag_settings())) <> 1 AS heard_more
    ),
    match AS (SELECT m.* FROM input, medrag_code_synonym_matches(input.words) AS m),
    span AS (
        SELECT m.start_at, m.end_at, m.term, input.entries -> m.term AS entry FROM match m, input
        UNION ALL
        SELECT i - 1, i, NULL, NULL FROM input, generate_subscripts(input.words, 1) AS i
        WHERE NOT EXISTS (SELECT 1 FROM match m WHERE i - 1 >= m.start_at AND i - 1 < m.end_at)
    ),
    expansion AS (
        SELECT s.start_at, e.n, medrag_words_of(e.expansion) AS words
        FROM span s, jsonb_array_elements_text(s.entry -> 'expansions') WITH ORDINALITY AS e(expansion, n)
    ),
    lexeme AS (
        SELECT w.word, tsvector_to_array(to_tsvector('english', w.word)) AS lexemes
        -- UNION ALL: a word twice is looked up twice, where a UNION's hash table (sized by guesses) cost milliseconds
        FROM (SELECT unnest(words) AS word FROM input UNION ALL SELECT unnest(words) FROM expansion) w
    ),
    compound AS MATERIALIZED (  -- once, not once per one-word concept: as the corpus writes it, the Index's forms
        SELECT c.typed, jsonb_agg(jsonb_build_object('words', jsonb_build_array(c.word),
                                                     'lexemes', jsonb_build_array(c.lexeme), 'origin', c.origin)
                                  ORDER BY c.origin, c.word) AS wordings
        FROM (SELECT k.typed, k.compound AS word, k.lexeme, '{COMPOUND}' AS origin
              FROM input, medrag_compounds(ARRAY(SELECT DISTINCT unnest(input.words))) AS k
              UNION ALL
              SELECT f.typed, f.form, f.lexeme, '{WORD_FORM}'
              FROM input, medrag_word_forms(ARRAY(SELECT DISTINCT unnest(input.words))) AS f) c
        GROUP BY c.typed
    ),
    abbreviation AS MATERIALIZED (  -- the current HCPCS release's (medrag.sources.hcpcs.abbreviations)
        SELECT a.abbreviation AS typed,
               jsonb_build_array(jsonb_build_object('words', jsonb_build_array(a.word), 'origin', '{ABBREVIATION}',
                                                    'lexemes', to_jsonb(tsvector_to_array(to_tsvector('english',
                                                                                                      a.word)))))
                   AS wordings
        FROM input, hcpcs_abbreviation a
        JOIN release r ON r.id = a.release_id AND r.source = 'hcpcs' AND r.is_current
        WHERE a.abbreviation = ANY (input.words)
    ),
    -- each word only one system's signals name, but for a service word the ICD-10-CM Index files a code under
    -- together with another word of the term: "Screening (for) > hypertension" (Z13.6) makes "screening" in
    -- "screening for hypertension" ICD-10-CM's concept too; no entry under "Test, tests, testing" names diabetes or
    -- strips, so "test" in "diabetes a1c test strips" stays HCPCS's. So for a drug the Table of Drugs names (or,
    -- for a brand, its generic) with a column's word: "Dilaudid, Poisoning Assault" (T40.2X3) makes the brand in
    -- "dilaudid overdose" ICD-10-CM's, and "Ondansetron" the one in "zofran overdose"
    exclusive AS (
        SELECT w.word, min(s.signal ->> 0) AS system
        FROM jsonb_array_elements(classification -> 'signals') AS s(signal),
             regexp_split_to_table(s.signal ->> 2, ' ') AS w(word)
        GROUP BY w.word
        HAVING count(DISTINCT s.signal ->> 0) = 1
           AND NOT (min(s.signal ->> 0) <> {icd10cm}
                    AND EXISTS (
                        SELECT 1 FROM lexeme own JOIN lexeme other ON other.word <> own.word
                        -- one entry is enough, each pair's read through the GIN index on core_lexemes (a join
                        -- the planner chose read the whole Index: 250 ms)
                        CROSS JOIN LATERAL (SELECT 1 FROM icd10cm_index_entry e
                                            WHERE e.code IS NOT NULL AND e.index_name = 'diseases'
                                              AND e.core_lexemes @> (own.lexemes || other.lexemes)
                                              AND regexp_split_to_array(lower(e.path[1]), ',\\s*') @> ARRAY[w.word]
                                            UNION ALL
                                            -- a row named by the word or, for a brand, its generic ("zofran":
                                            -- Ondansetron), and the words that lead to its column ("Overdose": see
                                            -- the Table, poisoning), through the GIN index on search_vector
                                            SELECT 1
                                            FROM (SELECT w.word AS name
                                                  UNION ALL
                                                  SELECT lower(x) FROM input, jsonb_array_elements_text(
                                                                   input.entries -> w.word -> 'expansions') AS x
                                                 ) row_name
                                            JOIN icd10cm_index_entry e
                                              ON e.code IS NOT NULL AND e.index_name = 'drugs'
                                             AND e.search_vector @@ to_tsquery('simple', array_to_string(ARRAY(
                                                     SELECT quote_literal(l)
                                                     FROM unnest(other.lexemes || tsvector_to_array(to_tsvector(
                                                                     'english', row_name.name))) AS l), ' & '))
                                             AND regexp_split_to_array(lower(e.path[1]), ',\\s*')
                                                 @> ARRAY[row_name.name]
                                            LIMIT 1) filed
                        WHERE own.word = w.word AND cardinality(own.lexemes) > 0 AND cardinality(other.lexemes) > 0
                          -- another word of the term, not the word's own expansion ("dilaudid": hydromorphone)
                          AND NOT EXISTS (SELECT 1 FROM input, jsonb_array_elements_text(
                                                                   input.entries -> w.word -> 'expansions') AS x
                                          WHERE other.word = ANY (medrag_words_of(x)))))
    ),
    concept AS (
        SELECT s.start_at, s.term, s.entry, input.words[s.start_at + 1:s.end_at] AS words,
               ARRAY(SELECT DISTINCT l FROM unnest(input.words[s.start_at + 1:s.end_at]) AS w
                     JOIN lexeme x ON x.word = w, unnest(x.lexemes) AS l ORDER BY 1) AS lexemes
        FROM span s, input
    ),
    expansion_wording AS (
        SELECT e.start_at, e.n, e.words,
               ARRAY(SELECT DISTINCT l FROM unnest(e.words) AS w JOIN lexeme x ON x.word = w, unnest(x.lexemes) AS l
                     ORDER BY 1) AS lexemes
        FROM expansion e
    ),
    side_phrase AS (
        -- a phrase the table gives only sides for ("both ears": binaural, bilateral) says a side, not a site: its
        -- other words ("ears") are what any wording of the site would cover
        SELECT x.start_at
        FROM expansion_wording x, unnest(x.lexemes) AS l
        GROUP BY x.start_at
        HAVING bool_and(l IN (SELECT jsonb_object_keys(w.side_lexemes) FROM medrag_code_words() w))
    ),
    described AS (
        -- a stop word the table gives a meaning ("both": bilateral), or a side phrase, is its expansions from the start
        SELECT c.start_at,
               jsonb_build_object('words', to_jsonb(c.words), 'wordings', w.wordings, 'systems', to_jsonb({systems}),
                                  'qualifier', true, 'negated', false, 'explains', '[]'::jsonb) AS concept
        FROM concept c
        CROSS JOIN LATERAL (
            SELECT jsonb_agg(jsonb_build_object('words', to_jsonb(x.words), 'lexemes', to_jsonb(x.lexemes),
                                                'origin', '{SYNONYM}') ORDER BY x.n) AS wordings
            FROM expansion_wording x WHERE x.start_at = c.start_at AND cardinality(x.lexemes) > 0) w
        WHERE (cardinality(c.lexemes) = 0 OR c.start_at IN (SELECT start_at FROM side_phrase))
          AND c.entry IS NOT NULL AND w.wordings IS NOT NULL
        UNION ALL
        SELECT c.start_at,
               jsonb_build_object(
                   'words', to_jsonb(c.words),
                   'wordings', jsonb_build_array(jsonb_build_object('words', to_jsonb(c.words), 'origin', '{TYPED}',
                                                                    'lexemes', to_jsonb(c.lexemes)))
                               || CASE WHEN cardinality(c.words) = 1
                                       THEN coalesce((SELECT k.wordings FROM compound k WHERE k.typed = c.words[1]),
                                                     '[]')
                                            || CASE WHEN c.entry IS NULL
                                                    THEN coalesce((SELECT a.wordings FROM abbreviation a
                                                                   WHERE a.typed = c.words[1]), '[]')
                                                    ELSE '[]' END
                                       ELSE '[]' END,
                   'systems', to_jsonb(CASE WHEN input.heard_more AND owner.systems IS NOT NULL THEN owner.systems
                                            ELSE {systems} END),
                   'qualifier', c.words <@ {qualifiers},
                   'negated', c.words <@ input.negated,
                   'explains', to_jsonb(ARRAY(SELECT DISTINCT l FROM expansion_wording x, unnest(x.lexemes) AS l
                                              WHERE x.start_at = c.start_at ORDER BY 1)))
               -- the table's term it matched, which its words may inflect ("mini strokes": mini stroke)
               || CASE WHEN c.entry IS NOT NULL THEN jsonb_build_object('synonym', c.term) ELSE '{{}}' END
        FROM concept c
        CROSS JOIN input
        -- the systems a word of it signals alone, in the systems' order
        CROSS JOIN LATERAL (
            SELECT array_agg(s.system ORDER BY s.n) AS systems
            FROM unnest({systems}) WITH ORDINALITY AS s(system, n)
            WHERE EXISTS (SELECT 1 FROM exclusive e WHERE e.word = ANY (c.words) AND e.system = s.system)) owner
        WHERE cardinality(c.lexemes) > 0  -- else stop words ("of", "the", "with")
          AND c.start_at NOT IN (SELECT start_at FROM side_phrase)
    )
    SELECT coalesce(jsonb_agg(concept ORDER BY start_at), '[]') FROM described
$$;
"""
