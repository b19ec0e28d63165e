"""SQL rendered from the Python definitions it must agree with: `medrag db migrate` installs it with sql/*.sql.

One script, `generated.sql` in medrag_sql_script, hash-checked like the hand-written ones: every ranking and
threshold number (medrag.core.tuning), identifier shapes and the code sets' names (medrag.core.identifiers), the
code finder's word lists (medrag.codes.consolidate) and names (medrag.codes.finder), its synonym table
(medrag.codes.synonyms), classification (medrag.codes.classify) and term analysis (medrag.codes.terms), the ICD-10-CM
Index's connecting words (medrag.sources.icd10cm.index), and the
document kinds with their search groups and vector indexes (medrag.core.registry). A new document kind needs no SQL
edit here.
"""

from __future__ import annotations

from medrag.codes.classify import classification_sql
from medrag.codes.consolidate import code_words_sql
from medrag.codes.finder import finder_names_sql
from medrag.codes.synonyms import synonyms_sql
from medrag.codes.terms import term_query_sql
from medrag.core.identifiers import code_shapes_sql, default_cue_sql, identifiers_sql, named_code_set_sql
from medrag.core.registry import CODE_GROUP, POLICY_GROUP, document_kinds, group_graphs
from medrag.core.synonyms import synonym_rows_sql
from medrag.core.tuning import settings_sql
from medrag.sources.icd10cm.index import INDEX_CONNECTIVES

GENERATED_SCRIPT = "generated.sql"


def _quoted(values: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"'{value}'" for value in values)


def document_group_sql() -> str:
    """medrag_document_group(source): 'code' for a code set's documents, 'policy' for the rest (inlined by SQL)."""
    codes = [kind.name for kind in document_kinds() if kind.group == CODE_GROUP]
    return f"""
CREATE OR REPLACE FUNCTION medrag_document_group(source text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN source IN ({_quoted(codes)}) THEN '{CODE_GROUP}' ELSE '{POLICY_GROUP}' END
$$;
"""


def _nearest_branches() -> str:
    """medrag_nearest's branches: each group's graph while the filters admit every kind, else each admitted kind's."""
    graphs = group_graphs()
    branches = [(group, f"ARRAY[{_quoted(kinds)}]", "NOT (SELECT narrowed FROM settings)")
                for group, kinds in graphs.items()]
    for kind in document_kinds():
        gate = f"medrag_source_wanted('{kind.name}', filters)"
        if kind.group in graphs:
            gate = f"(SELECT narrowed FROM settings) AND {gate}"
        branches.append((kind.group, f"ARRAY['{kind.name}']", gate))
    return "\n        UNION ALL ".join(
        f"SELECT chunk_id, '{group}'{' AS grp' if i == 0 else ''}, distance "
        f"FROM medrag_nearest_in({kinds}, query_embedding, n, filters) WHERE {gate}"
        for i, (group, kinds, gate) in enumerate(branches))


def nearest_sql() -> str:
    """medrag_nearest: the n nearest chunks of each group, from each group's HNSW graph or each admitted kind's."""
    every_kind_wanted = "\n                    AND ".join(f"medrag_source_wanted('{kind.name}', filters)"
                                                   for kind in document_kinds())
    return f"""
-- The n nearest chunks of each group (medrag_document_group) that pass the filters, by cosine distance. The groups
-- are searched apart, so one never crowds the other out. Each group of several kinds has a partial HNSW index over
-- all of them, and each kind one of its own: while the filters admit every kind, one scan per group (half the time
-- of one per kind: migration 0034); a source filter, or a manual or chapter (IOM only), scans only the graphs of the
-- kinds it admits. Each branch names its kinds as a constant, which is what lets the planner use that graph's index
-- (medrag_nearest_in), and its gate is row-independent: a branch whose gate is false is never run. Named keys are
-- few chunks: exact distances.
CREATE OR REPLACE FUNCTION medrag_nearest(query_embedding vector, n integer DEFAULT 10,
                                          filters jsonb DEFAULT '{{}}'::jsonb)
RETURNS TABLE (chunk_id bigint, grp text, distance double precision)
LANGUAGE sql STABLE
-- relaxed_order: a selective filter keeps the HNSW scan going until enough rows pass (pgvector >= 0.8). ef_search
-- 300: the code group's graph (55k short texts, ICD-10-CM's near-duplicates among them; m 12, ef_construction 800)
-- finds 0.986 of the group's exact nearest 70 for the dev and holdout questions at 300 and 0.972 at 200, where the two
-- kinds' graphs found 0.983; the policy group's 0.984 at 200. (Each kind's graph alone, ICD-10-CM's recall@10: 0.84
-- at 100, 0.91 at 200, 0.95 at 400.)
SET hnsw.iterative_scan = 'relaxed_order'
SET hnsw.ef_search = 300
-- one plan per session (PostgreSQL 18 caches SQL functions' plans) instead of ~4 ms of planning per call: the
-- filters are never constants here, and the generic plan returned the same rows as custom ones on every filter tried
SET plan_cache_mode = force_generic_plan
AS $$
    WITH settings AS (
        SELECT coalesce(filters, '{{}}'::jsonb) AS f,
               CASE jsonb_typeof(filters -> 'key')
                   WHEN 'array' THEN ARRAY(SELECT jsonb_array_elements_text(filters -> 'key'))
                   WHEN 'string' THEN ARRAY[filters ->> 'key'] END AS keys,
               -- the filters leave a kind out: each admitted kind's graph is searched, not its group's
               NOT ({every_kind_wanted}) AS narrowed
    ),
    near AS (
        {_nearest_branches()}
        UNION ALL
        SELECT c.id, medrag_document_group(d.source), v.embedding <=> query_embedding
        FROM settings s
        JOIN document d ON d.key = ANY (s.keys)
        JOIN chunk c ON c.document_id = d.id
        JOIN chunk_vector v ON v.chunk_id = c.id
        -- a sub-select of settings: a one-time filter, so without keys this branch does not run
        WHERE (SELECT keys IS NOT NULL FROM settings) AND query_embedding IS NOT NULL
          AND medrag_document_matches(d.source, d.key, d.is_current, d.effective_date, d.termination_date,
                                      d.metadata, d.release_id, s.f)
    )
    SELECT ranked.chunk_id, ranked.grp, ranked.distance
    FROM (SELECT near.*, row_number() OVER (PARTITION BY near.grp ORDER BY near.distance, near.chunk_id) AS nth
          FROM near) ranked
    WHERE ranked.nth <= n
$$;
"""


def index_connectives_sql() -> str:
    """medrag_index_connectives(): the Index's connecting words as the loader reads them, for the Index leg."""
    words = "|".join(INDEX_CONNECTIVES)
    return f"""
-- The ICD-10-CM Index's connecting words (medrag.sources.icd10cm.index.INDEX_CONNECTIVES), as the patterns of a level
-- that is one alone ("with": it introduces the subterms under it) and of one that a connective opens ("in renal
-- impairment": a subterm like any other).
CREATE OR REPLACE FUNCTION medrag_index_connectives()
RETURNS TABLE (alone text, opening text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT '^({words})$', '^({words})\\s'
$$;
"""


def generated_script() -> str:
    """The whole generated script, in the order its functions are best read."""
    return "\n".join((settings_sql(), identifiers_sql(), code_shapes_sql(), named_code_set_sql(), default_cue_sql(),
                      document_group_sql(), nearest_sql(), code_words_sql(), synonym_rows_sql(), synonyms_sql(),
                      classification_sql(), term_query_sql(), finder_names_sql(), index_connectives_sql()))
