"""The statements of a code search: lookups that find codes, and the one that reads what scoring needs.

A lookup finds candidate codes one way, one SQL function each (sql/codes.sql): exact code, description words
through the trigram index, full text of the code documents, trigram similarity for misspellings, vector neighbours,
the ICD-10-CM Index, billable codes under a header. Then one statement per system reads each new code's details
(medrag_code_details): description, billable flag, parent, 7th-character forms, lexemes. A code the release does
not have (or a terminated HCPCS code) gets no details and is never returned.
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


# -- legs: sql/codes.sql medrag_code_<leg>_leg, one statement each -------------------------------------------------

_LEG_CALLS = {
    "exact": "medrag_code_exact_leg(CAST(:codes AS text[]))",
    "words": "medrag_code_words_leg(:release_id, :source, CAST(:patterns AS text[]), CAST(:kinds AS text[]), :limit)",
    "fulltext": "medrag_code_text_leg(:source, :tsquery, :limit)",
    "trigram": "medrag_code_trigram_leg(:release_id, :source, :text, CAST(:kinds AS text[]), :limit)",
    "vector": "medrag_code_vector_leg(:source, CAST(:embedding AS vector), :limit)",
    "children": "medrag_code_children_leg(:release_id, CAST(:codes AS text[]), :limit)",
    "index": "medrag_code_index_leg(:release_id, :index_release_id, CAST(:lexemes AS text[]), :limit)",
}


def lookup_statement(leg: str) -> str:
    """The SQL of one leg: codes with their rank and score in that leg (and, for the index leg, its entry)."""
    return f"SELECT * FROM {_LEG_CALLS[leg]} ORDER BY leg_rank"


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
    }
    statement = text(lookup_statement(lookup.leg))
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


# The release as the trigram index's first column reads it: psycopg sends a small int as smallint, which btree_gin's
# integer operator class does not compare, and the index would then read the matches of every loaded release.
_RELEASE = "CAST(:release_id AS integer)"


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
