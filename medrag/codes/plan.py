"""The statements of a code search: lookups that find codes, and the one that reads what scoring needs.

A lookup finds candidate codes one way, one SQL statement each: exact code, description words through the
trigram index, full text of the code documents, trigram similarity for misspellings, vector neighbours, billable
codes under a header. Then one statement per system reads each new code's details from the chosen release's
table: description, inclusion terms (its own and those of the codes above it) with their lexemes as PostgreSQL's
english configuration stems them, billable flag, parent, LCD listing. A code the release does not have (or a
terminated HCPCS code) gets no details and is never returned.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, text

from medrag.codes.classify import HCPCS, ICD10CM
from medrag.core.errors import MedragError
from medrag.ingest.releases import release_sort_key

DOCUMENT_SOURCE = {ICD10CM: "icd10cm", HCPCS: "hcpcs"}
LEG_LIMIT = 50
# Minimum trigram similarity for a spelling correction ("tuberculosus" -> "tuberculosis" is 0.62, "pnuemonia"
# -> "pneumonia" 0.43).
SPELLING_MIN_SIMILARITY = 0.4
CHILDREN_LIMIT = 200


class ReleaseNotFound(MedragError):
    """The requested release label is not loaded for any requested code system."""


@dataclass(frozen=True)
class CodeRelease:
    """The release of one code system that a search reads."""

    system: str
    label: str
    release_id: int
    is_current: bool


@dataclass(frozen=True)
class IndexRelease:
    """The release whose ICD-10-CM Index the index leg reads (the searched release's own, else the newest loaded)."""

    label: str
    release_id: int


@dataclass(frozen=True)
class Term:
    """A wording of a code found outside its table rows (the Index entry that led to it), with the code it belongs
    to and its lexemes: the scoring weighs it with the code's own wordings (sql/codes.sql)."""

    text: str
    source: str
    lexemes: frozenset[str]
    core: frozenset[str]  # without nonessential modifiers: what precision is measured on
    negated: frozenset[str] = frozenset()  # what only its "without" clause names: covers nothing


@dataclass(frozen=True)
class SeventhCharacter:
    """One 7th-character form of a code: the full code, its description and what the character means."""

    code: str
    display: str
    character: str
    meaning: str


@dataclass(frozen=True)
class CodeRow:
    """One code as the finder shows it and reflects on it (PostgreSQL scores it: sql/codes.sql)."""

    system: str
    code: str
    display: str
    billable: bool | None
    parent: str | None
    parent_display: str | None
    kind: str
    has_children: bool
    lexemes: frozenset[str] = frozenset()  # every lexeme of its wordings and of the inclusion terms above it
    # The billable codes a 7th character makes of it (T39.1X1 -> T39.1X1A, D, S), in the Tabular's order.
    seventh: tuple[SeventhCharacter, ...] = ()


@dataclass(frozen=True)
class LegHit:
    """Where one lookup placed a code; the index leg adds the Index entry that gave it (its path and lexemes)."""

    leg: str
    rank: int
    score: float
    evidence: str = ""
    lexemes: frozenset[str] = frozenset()
    core: frozenset[str] = frozenset()
    negated: frozenset[str] = frozenset()  # what the entry names only after "without" ("Vomiting > without nausea")
    via: str = ""  # the header the Index gave, when this code is one of the billable codes under it


@dataclass(frozen=True)
class Lookup:
    """One candidate search: its leg, system and inputs."""

    leg: str
    system: str
    codes: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    tsquery: str = ""
    text: str = ""
    embedding: tuple[float, ...] | None = None
    kinds: tuple[str, ...] = ("procedure",)
    lexemes: tuple[str, ...] = ()
    index_release: IndexRelease | None = None

    def describe(self) -> str:
        """Short label for the trace."""
        return f"{self.leg} {self.system}"


@dataclass
class LookupResult:
    """The rows a lookup returned and how long it took."""

    lookup: Lookup
    hits: list[tuple[str, LegHit]] = field(default_factory=list)
    milliseconds: float = 0.0


# -- details: what the finder shows and reflects on of each code, read once per code ------------------------------

# medrag_code_details (sql/search.sql) reads medrag_code_detail, which the loaders write once per release
_DETAILS = text("SELECT * FROM medrag_code_details(:release_id, CAST(:codes AS text[]), CAST(:kinds AS text[]))")


# -- legs ----------------------------------------------------------------------------------------------------------

_TABLE = {ICD10CM: ("icd10cm_code", "description"), HCPCS: ("hcpcs_code", "long_description")}


# The release as the trigram indexes' first column reads it: psycopg sends a small int as smallint, which btree_gin's
# integer operator class does not compare, and the index would then read the matches of every loaded release.
_RELEASE = "CAST(:release_id AS integer)"


def _listed(system: str) -> str:
    # A 7th-character form repeats its base code's words; the base code is ranked and its form chosen after (and
    # the trigram index covers the listed codes only).
    return " AND c.seventh_character IS NULL" if system == ICD10CM else ""


def _row_filter(system: str) -> str:
    if system == ICD10CM:
        return _listed(system)
    return (" AND c.kind = ANY(CAST(:kinds AS text[]))"
            # A record terminated before today is no longer a valid code to report.
            " AND (c.termination_date IS NULL OR c.termination_date >= current_date)")


def _exact_hit(_system: str) -> str:
    return """
hit AS (
    SELECT t.code, t.n::int AS leg_rank, 1.0::float AS leg_score
    FROM unnest(CAST(:codes AS text[])) WITH ORDINALITY AS t(code, n)
)"""


def _words_hit(system: str) -> str:
    table, column = _TABLE[system]
    # The trigram index answers ILIKE '%stem%' one stem at a time, so each description is matched once per stem that
    # reaches it rather than once per stem for every description any stem reaches (thousands for "unspecifi");
    # codes matching more of the stems, then shorter ones, come first.
    return f"""
hit AS (
    SELECT m.code, (row_number() OVER (ORDER BY m.matched DESC, m.size, m.code))::int AS leg_rank,
           m.matched::float AS leg_score
    FROM (
        SELECT found.code, found.size, count(*) AS matched
        FROM unnest(CAST(:patterns AS text[])) AS p(pattern)
        CROSS JOIN LATERAL (
            SELECT c.code, length(c.{column}) AS size FROM {table} c
            WHERE c.release_id = {_RELEASE} AND c.{column} ILIKE p.pattern{_row_filter(system)}
        ) found
        GROUP BY found.code, found.size
    ) m
    ORDER BY m.matched DESC, m.size, m.code
    LIMIT :limit
)"""


def _fulltext_hit(_system: str) -> str:
    # The code documents' chunks carry descriptions, inclusion terms, short descriptions and categories, with a
    # GIN index; they exist for current releases, and codes are re-read from the chosen release's table.
    return """
hit AS (
    SELECT ranked.code, (row_number() OVER (ORDER BY ranked.rank DESC, ranked.code))::int AS leg_rank,
           ranked.rank::float AS leg_score
    FROM (
        SELECT d.key AS code, ts_rank_cd(c.tsv, q.tsq, 1) AS rank
        FROM chunk c
        JOIN document d ON d.id = c.document_id,
             (SELECT to_tsquery('simple', :tsquery) AS tsq) q
        WHERE d.source = :source AND d.is_current AND c.tsv @@ q.tsq
        ORDER BY rank DESC, d.key
        LIMIT :limit
    ) ranked
)"""


def _trigram_hit(system: str) -> str:
    table, column = _TABLE[system]
    return f"""
hit AS (
    SELECT c.code, (row_number() OVER (ORDER BY word_similarity(:text, c.{column}) DESC, c.code))::int AS leg_rank,
           word_similarity(:text, c.{column})::float AS leg_score
    FROM {table} c
    WHERE c.release_id = {_RELEASE} AND :text <% c.{column}{_row_filter(system)}
    ORDER BY leg_score DESC, c.code
    LIMIT :limit
)"""


def _vector_hit(system: str) -> str:
    # the source written as a constant, as in its partial HNSW index's predicate (migration 0009): a bound
    # parameter would not let the planner prove that the index covers the rows
    return f"""
hit AS (
    SELECT d.key AS code, (row_number() OVER (ORDER BY n.distance, d.key))::int AS leg_rank,
           (1 - n.distance)::float AS leg_score
    FROM (
        SELECT c.document_id, v.embedding <=> CAST(:embedding AS vector) AS distance
        FROM chunk_vector v
        JOIN chunk c ON c.id = v.chunk_id
        JOIN document d ON d.id = c.document_id
        WHERE v.source = '{DOCUMENT_SOURCE[system]}' AND d.is_current
        ORDER BY v.embedding <=> CAST(:embedding AS vector)
        LIMIT :limit
    ) n
    JOIN document d ON d.id = n.document_id
)"""


def _children_hit(_system: str) -> str:
    # Narrowing a header (E11) to the billable codes under it (or billable with a 7th character), in tabular order.
    return """
tree AS (
    SELECT c.code, c.billable, c.tabular_order FROM icd10cm_code c
    WHERE c.release_id = :release_id AND c.parent_code = ANY(CAST(:codes AS text[])) AND c.seventh_character IS NULL
    UNION ALL
    SELECT c.code, c.billable, c.tabular_order FROM icd10cm_code c
    JOIN tree t ON c.release_id = :release_id AND c.parent_code = t.code AND c.seventh_character IS NULL
),
hit AS (
    SELECT code, (row_number() OVER (ORDER BY tabular_order, code))::int AS leg_rank, 1.0::float AS leg_score
    FROM tree t
    WHERE t.billable OR EXISTS (SELECT 1 FROM icd10cm_code x WHERE x.release_id = :release_id
                                AND x.parent_code = t.code AND x.seventh_character IS NOT NULL)
    ORDER BY tabular_order
    LIMIT :limit
)"""


# What each index is called in a trace line.
INDEX_TITLES = {"diseases": "Index", "external_causes": "External Cause Index", "drugs": "Table of Drugs",
                "neoplasms": "Neoplasm Table"}
_INDEX_TITLE_SQL = "CASE e.index_name " + " ".join(
    f"WHEN '{name}' THEN '{title}'" for name, title in INDEX_TITLES.items()) + " END"


# What a wording from a deep Index entry is measured on: its main term and its last subterm ("Screening > neoplasm >
# breast > routine mammogram": screening, mammogram), the levels between being the way there, which the last one
# implies. A last subterm of stop words only ("Hypertension > portal > in", the derived CSV having dropped what
# followed a modifier) says nothing by itself: the level above it counts too. So does a level a connective subterm
# qualifies ("Alcohol > intoxication > with > dependence" is alcohol intoxication with dependence, F10.229, not the
# alcohol dependence of "Dependence > alcohol", F10.20).
_LAST = "m.path[cardinality(m.path)]"
_CONNECTIVE = "'^(with|without|in|due to|following|during)$'"
_QUALIFIED_LEVELS = ("coalesce((SELECT string_agg(m.path[i], ' ' ORDER BY i) FROM generate_subscripts(m.path, 1) AS i "
                     f"WHERE i > 1 AND i < cardinality(m.path) - 1 AND m.path[i + 1] ~* {_CONNECTIVE}) || ' ', '')")
_INDEX_ENDS = (f"split_part(m.path[1], ',', 1) || ' ' || {_QUALIFIED_LEVELS} "
               f"|| CASE WHEN length(to_tsvector('english', {_LAST})) = 0 "
               f"THEN m.path[cardinality(m.path) - 1] || ' ' ELSE '' END || {_LAST} "
               "|| coalesce(' ' || regexp_replace(m.column_name, '\\([^)]*\\)', ' ', 'g'), '')")


# How Index entries rank: the most of the term's lexemes shared, then the fewest words it leaves unexplained, then
# the shortest path; a total order, so the two reads of _index_hit and every run agree on it.
def _index_order(alias: str = "") -> str:
    return f"shared DESC, precision DESC, cardinality({alias}path), {alias}code, {alias}entry_id"


def _index_matches(name: str, condition: str, shared: str, precision: str) -> str:
    """The Index entries passing `condition`, with how many of the term's lexemes each shares, best first."""
    return f"""{name} AS (
    SELECT e.index_name, e.entry_id, e.path, e.nemod, e.column_name, e.code, e.core_lexemes, e.search_vector,
           {shared} AS shared, {precision} / greatest(cardinality(e.core_lexemes), 1) AS precision,
           {_INDEX_TITLE_SQL} AS index_title
    FROM icd10cm_index_entry e, term_query t
    WHERE e.release_id = :index_release_id AND e.code IS NOT NULL AND {condition}
    ORDER BY {_index_order("e.")}
    LIMIT 4 * :limit
)"""


# How many of the term's lexemes an entry shares, and how many of its core lexemes are the term's.
_SHARED = "(SELECT count(*) FROM unnest(t.queries) AS q(query) WHERE e.search_vector @@ q.query)::int"
_CORE_SHARED = ("(SELECT count(DISTINCT lexeme) FROM unnest(e.core_lexemes) AS c(lexeme) "
                "WHERE c.lexeme = ANY(CAST(:lexemes AS text[])))::float")
# An entry outside `strong` shares exactly one lexeme when there are pairs (every entry sharing two matches one), and
# its core lexemes, a subset of its lexemes, hold that one or none: both are known without counting, for the
# thousands of entries one common word ("leg") reaches.
_SHARED_ONE = f"CASE WHEN :pairs_tsquery IS NULL THEN {_SHARED} ELSE 1 END"
_CORE_SHARED_ONE = (f"CASE WHEN :pairs_tsquery IS NULL THEN {_CORE_SHARED} "
                    "ELSE (e.core_lexemes && CAST(:lexemes AS text[]))::int::float END")


def _index_hit(_system: str) -> str:
    # Index entries sharing most of the term's lexemes (their path, modifiers and the words of the references that
    # lead to them), then the fewest words the term does not explain. A code ending in "-" is the header to narrow.
    # Each of the term's lexemes is one tsquery, parsed once: counting the ones an entry's vector matches is much
    # cheaper than intersecting arrays for the thousands of entries a common word ("disease") reaches. The entries
    # sharing two or more lexemes (a tsquery of every pair) are scored first; only when they are too few are the
    # entries sharing one read too, so a common word's thousands are mostly never scored (the same codes and ranks
    # on 91 lookups of the retrieval dev questions; the lookup's p50 19 -> 13 ms). The orders are total, so the
    # same entry speaks for a code every time.
    return f"""
term_query AS (
    SELECT array_agg(to_tsquery('simple', quote_literal(lexeme))) AS queries
    FROM (SELECT DISTINCT unnest(CAST(:lexemes AS text[])) AS lexeme) l
),
{_index_matches("strong", "e.search_vector @@ to_tsquery('simple', :pairs_tsquery)", _SHARED, _CORE_SHARED)},
{_index_matches("weak", "e.search_vector @@ to_tsquery('simple', :tsquery) "
                "AND (SELECT count(*) FROM strong) < 4 * :limit AND e.entry_id NOT IN (SELECT entry_id FROM strong)",
                _SHARED_ONE, _CORE_SHARED_ONE)},
matched AS (
    SELECT * FROM (SELECT * FROM strong UNION ALL SELECT * FROM weak) found
    ORDER BY {_index_order()}
    LIMIT 4 * :limit
),
entry_code AS (
    SELECT c.code, m.shared, m.precision, cardinality(m.path) AS levels, m.entry_id,
           tsvector_to_array(m.search_vector) AS lexemes,
           CASE WHEN cardinality(m.path) > 2 THEN medrag_lexemes({_INDEX_ENDS}) ELSE m.core_lexemes END AS core_lexemes,
           medrag_without_lexemes(array_to_string(m.path || m.nemod, ', ')) AS negated,
           m.index_title || ': ' || array_to_string(m.path, ' > ') || coalesce(', ' || m.column_name, '')
               || ' -> ' || m.code AS evidence
    FROM matched m
    JOIN icd10cm_code c ON c.release_id = :release_id AND c.code = rtrim(m.code, '.-')
),
coded AS (
    SELECT DISTINCT ON (code) code, shared + precision AS score, lexemes, core_lexemes, negated, evidence
    FROM entry_code
    -- among a code's entries that match alike, the one with the fewest levels (then the first listed) is shown
    ORDER BY code, shared DESC, precision DESC, levels, entry_id
),
hit AS (
    SELECT code, (row_number() OVER (ORDER BY score DESC, code))::int AS leg_rank, score::float AS leg_score,
           evidence, lexemes, core_lexemes, negated
    FROM coded
    ORDER BY leg_rank
    LIMIT :limit
)"""


_LEGS = {"exact": _exact_hit, "words": _words_hit, "fulltext": _fulltext_hit, "trigram": _trigram_hit,
         "vector": _vector_hit, "children": _children_hit, "index": _index_hit}


def lookup_statement(leg: str, system: str) -> str:
    """The SQL of one leg for one system: codes with their rank and score in that leg."""
    extra = ", evidence, lexemes, core_lexemes, negated" if leg == "index" else ""
    return (f"WITH RECURSIVE {_LEGS[leg](system).lstrip()}\n"
            f"SELECT code, leg_rank, leg_score{extra} FROM hit ORDER BY leg_rank")


def pairs_tsquery(lexemes: Sequence[str]) -> str | None:
    """A tsquery matching what shares at least two of the lexemes, each quoted as quote_literal quotes it (None
    when there are fewer than two, or one quote_literal would write with E'' escapes)."""
    distinct = list(dict.fromkeys(lexemes))
    if len(distinct) < 2 or any("\\" in lexeme for lexeme in distinct):
        return None
    quoted = ["'" + lexeme.replace("'", "''") + "'" for lexeme in distinct]
    return " | ".join(f"({first} & {second})" for number, first in enumerate(quoted) for second in quoted[number + 1:])


def vector_literal(values: Sequence[float]) -> str:
    """pgvector's text form of a vector."""
    return "[" + ",".join(f"{value:.7g}" for value in values) + "]"


def run_lookup(engine: Engine, lookup: Lookup, release: CodeRelease, limit: int | None = None) -> LookupResult:
    """Run one lookup in its own connection (lookups run concurrently) and time it."""
    started = time.perf_counter()
    limit = limit or (CHILDREN_LIMIT if lookup.leg == "children" else LEG_LIMIT)
    params: dict[str, Any] = {
        "release_id": release.release_id, "limit": limit, "codes": list(lookup.codes),
        "patterns": list(lookup.patterns), "tsquery": lookup.tsquery, "text": lookup.text,
        "source": DOCUMENT_SOURCE[lookup.system], "kinds": list(lookup.kinds),
        "embedding": vector_literal(lookup.embedding) if lookup.embedding is not None else None,
        "lexemes": list(lookup.lexemes),
        "index_release_id": lookup.index_release.release_id if lookup.index_release else None,
        "pairs_tsquery": pairs_tsquery(lookup.lexemes),
    }
    statement = text(lookup_statement(lookup.leg, lookup.system))
    with engine.begin() as conn:
        if lookup.leg == "vector":
            # Keep the HNSW scan going until enough code chunks pass the source filter (pgvector >= 0.8).
            conn.execute(text("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                              "set_config('hnsw.ef_search', '100', true)"))
        rows = conn.execute(statement, params).all()
    if lookup.leg == "index":
        hits = [(row.code, LegHit(lookup.leg, row.leg_rank, float(row.leg_score or 0.0), row.evidence,
                                  frozenset(row.lexemes or ()), frozenset(row.core_lexemes or ()),
                                  frozenset(row.negated or ()))) for row in rows]
    else:
        hits = [(row.code, LegHit(lookup.leg, row.leg_rank, float(row.leg_score or 0.0))) for row in rows]
    return LookupResult(lookup, hits, (time.perf_counter() - started) * 1000)


def fetch_details(engine: Engine, release: CodeRelease, codes: Sequence[str], kinds: Sequence[str]
                  ) -> dict[str, CodeRow]:
    """CodeRows for the codes that exist in the release (and, for HCPCS, are active and of the given kinds)."""
    if not codes:
        return {}
    params = {"release_id": release.release_id, "codes": list(codes), "kinds": list(kinds)}
    with engine.connect() as conn:
        rows = conn.execute(_DETAILS, params).all()
    return {row.code: _code_row(release.system, row) for row in rows}


def _code_row(system: str, row: Any) -> CodeRow:
    return CodeRow(
        system=system, code=row.code, display=row.display or row.code, billable=row.billable,
        parent=row.parent_code, parent_display=row.parent_display, kind=row.kind, has_children=row.has_children,
        lexemes=frozenset(row.lexemes or ()), seventh=tuple(SeventhCharacter(*form) for form in (row.seventh or [])),
    )


# -- small statements around the legs ------------------------------------------------------------------------------


def load_releases(conn: Connection) -> dict[str, list[CodeRelease]]:
    """Loaded releases of each code system, current first, then newest label first."""
    rows = conn.execute(text(
        "SELECT source, label, id, is_current FROM release "
        "WHERE source IN ('icd10cm', 'hcpcs') AND status IN ('loaded', 'partial') "
        "ORDER BY source, is_current DESC, label DESC"
    )).all()
    systems = {source: system for system, source in DOCUMENT_SOURCE.items()}
    releases: dict[str, list[CodeRelease]] = {ICD10CM: [], HCPCS: []}
    for row in rows:
        releases[systems[row.source]].append(CodeRelease(systems[row.source], row.label, row.id, row.is_current))
    return releases


_INDEX_RELEASES = text(
    "SELECT r.id, r.label FROM release r WHERE r.source = 'icd10cm' AND r.status IN ('loaded', 'partial') "
    "AND EXISTS (SELECT 1 FROM icd10cm_index_entry e WHERE e.release_id = r.id)"
)


def index_release_for(conn: Connection, release: CodeRelease) -> IndexRelease | None:
    """The release whose Index the index leg reads for `release`: its own, else the newest with an Index."""
    found = {row.id: IndexRelease(row.label, row.id) for row in conn.execute(_INDEX_RELEASES)}
    if release.release_id in found:
        return found[release.release_id]
    return max(found.values(), key=lambda item: release_sort_key(item.label), default=None)


def pick_release(releases: dict[str, list[CodeRelease]], systems: list[str], label: str | None
                 ) -> dict[str, CodeRelease]:
    """The release each system reads: the current one, or the one labelled `label` (systems without it drop)."""
    chosen: dict[str, CodeRelease] = {}
    for system in systems:
        options = releases.get(system, [])
        if label is None:
            current = [release for release in options if release.is_current]
            if current:
                chosen[system] = current[0]
        else:
            labelled = [release for release in options if release.label.lower() == label.lower()]
            if labelled:
                chosen[system] = labelled[0]
    if label is not None and not chosen:
        known = sorted({release.label for system in systems for release in releases.get(system, [])})
        raise ReleaseNotFound(f"no {' or '.join(systems)} release labelled {label!r}; loaded: {', '.join(known)}")
    return chosen


_ANALYZE_WORDS = text(
    "SELECT w.word, tsvector_to_array(to_tsvector('english', w.word)) AS lexemes "
    "FROM unnest(CAST(:words AS text[])) WITH ORDINALITY AS w(word, ord) ORDER BY w.ord"
)


def analyze_words(engine: Engine, words: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each word's lexemes in PostgreSQL's english configuration (none for stop words)."""
    if not words:
        return {}
    with engine.connect() as conn:
        return {row.word: tuple(row.lexemes) for row in conn.execute(_ANALYZE_WORDS, {"words": list(words)})}


_COMPOUNDS = text("SELECT typed, compound, lexeme FROM medrag_compounds(CAST(:words AS text[])) "
                  "ORDER BY typed, compound")


def compound_words(engine: Engine, words: Sequence[str]) -> dict[str, tuple[tuple[str, str], ...]]:
    """The corpus's hyphenated words that each typed word writes joined, with their lexemes ("checkup":
    check-up), from sql/search.sql medrag_compounds."""
    if not words:
        return {}
    found: dict[str, list[tuple[str, str]]] = {}
    with engine.connect() as conn:
        for row in conn.execute(_COMPOUNDS, {"words": list(words)}):
            found.setdefault(row.typed, []).append((row.compound, row.lexeme))
    return {word: tuple(forms) for word, forms in found.items()}


_KNOWN_WORDS = text("SELECT w FROM unnest(CAST(:words AS text[])) AS w WHERE medrag_known_word(lower(w))")


def known_words(engine: Engine, words: Sequence[str]) -> frozenset[str]:
    """The words the corpus knows (sql/search.sql medrag_known_word): not misspelt, whatever a code system says."""
    if not words:
        return frozenset()
    with engine.connect() as conn:
        return frozenset(conn.execute(_KNOWN_WORDS, {"words": list(words)}).scalars())


_HAS_EMBEDDINGS = text(
    "SELECT EXISTS (SELECT 1 FROM document d JOIN chunk c ON c.document_id = d.id "
    "JOIN chunk_vector v ON v.chunk_id = c.id WHERE d.source = :source AND d.is_current)"
)


def has_code_embeddings(engine: Engine, system: str) -> bool:
    """Whether the current code documents of a system have vectors (they may be left unembedded)."""
    with engine.connect() as conn:
        return bool(conn.execute(_HAS_EMBEDDINGS, {"source": DOCUMENT_SOURCE[system]}).scalar())


_SIMILARITIES = text(
    "SELECT d.key AS code, max(1 - (v.embedding <=> CAST(:embedding AS vector)))::float AS similarity "
    "FROM document d JOIN chunk c ON c.document_id = d.id JOIN chunk_vector v ON v.chunk_id = c.id "
    "WHERE d.source = :source AND d.is_current AND d.key = ANY(CAST(:codes AS text[])) GROUP BY d.key"
)


def semantic_similarities(engine: Engine, system: str, codes: Sequence[str], embedding: Sequence[float]
                          ) -> dict[str, float]:
    """Cosine similarity between the query and each code's document (codes without a vector are left out)."""
    if not codes:
        return {}
    params = {"source": DOCUMENT_SOURCE[system], "codes": list(codes), "embedding": vector_literal(embedding)}
    with engine.connect() as conn:
        return {row.code: row.similarity for row in conn.execute(_SIMILARITIES, params)}


# The word of the release's descriptions (medrag_code_word) that corrects the typed word: among those similar enough
# by trigrams, the fewest edits away ("therepy": therapy, not "there", the nearer by trigrams), then the commonest
# ("tuberculosus": tuberculosis in 71 descriptions, not tuberculous in 13), then the most similar.
_SPELLING = text(f"""
SELECT w.word, similarity(w.word, :word)::float AS similarity
FROM medrag_code_word w
WHERE w.release_id = {_RELEASE} AND w.word % :word AND w.word <> :word
ORDER BY levenshtein(w.word, :word), w.ndoc DESC, similarity DESC, w.word
LIMIT 1
""")


def correct_spelling(engine: Engine, release: CodeRelease, word: str) -> tuple[str, float] | None:
    """The release's description word that corrects `word` (_SPELLING), when one is similar enough."""
    with engine.begin() as conn:
        # the threshold of _SPELLING's % operator: the candidates are the words at least this similar
        conn.execute(text("SELECT set_config('pg_trgm.similarity_threshold', :limit, true)"),
                     {"limit": str(SPELLING_MIN_SIMILARITY)})
        row = conn.execute(_SPELLING, {"release_id": release.release_id, "word": word}).first()
    return (row.word, row.similarity) if row is not None else None


# v_lcd_hcpcs without the states it also gathers: each current LCD listing a code, with its contractors.
_LCDS_FOR_CODES = text("""
SELECT x.hcpc_code_id AS code, 'L' || x.lcd_id AS lcd,
       coalesce(max(l.title), max(doc.title), 'LCD L' || x.lcd_id) AS title,
       coalesce(array_agg(DISTINCT c.contractor_bus_name) FILTER (WHERE c.contractor_bus_name IS NOT NULL), '{}')
           AS contractors
FROM mcd_lcd_x_hcpc_code x
JOIN release r ON r.id = x.release_id AND r.is_current
LEFT JOIN mcd_lcd l ON l.release_id = x.release_id AND l.lcd_id = x.lcd_id AND l.lcd_version = x.lcd_version
LEFT JOIN mcd_lcd_x_contractor lc ON lc.release_id = x.release_id AND lc.lcd_id = x.lcd_id
     AND lc.lcd_version = x.lcd_version
LEFT JOIN mcd_contractor c ON c.release_id = lc.release_id AND c.contractor_id = lc.contractor_id
     AND c.contractor_type_id = lc.contractor_type_id AND c.contractor_version = lc.contractor_version
LEFT JOIN LATERAL (
    SELECT d.title FROM document d WHERE d.source = 'lcd' AND d.key = 'L' || x.lcd_id AND d.is_current
    ORDER BY d.version DESC LIMIT 1
) doc ON true
WHERE x.hcpc_code_id = ANY(CAST(:codes AS text[]))
GROUP BY x.hcpc_code_id, x.lcd_id
ORDER BY x.hcpc_code_id, x.lcd_id
""")


def lcds_listing(engine: Engine, codes: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """For each HCPCS code, the current LCDs that list it, with their contractors."""
    if not codes:
        return {}
    listed: dict[str, list[dict[str, Any]]] = {}
    with engine.connect() as conn:
        for row in conn.execute(_LCDS_FOR_CODES, {"codes": list(codes)}):
            listed.setdefault(row.code, []).append(
                {"source": "lcd", "key": row.lcd, "title": row.title, "contractors": sorted(row.contractors)})
    return listed
