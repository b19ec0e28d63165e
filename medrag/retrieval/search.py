"""Hybrid retrieval as a Python function: validate the query, embed it, call the SQL function medrag_search."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import time
import unicodedata
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, text

from medrag.core.errors import MedragError
from medrag.core.registry import code_kind_names, document_kind_names

log = logging.getLogger(__name__)

SOURCES = document_kind_names()
SEARCH_RANKED, CODES_RANKED = "search", "codes"
CODE_SOURCES = code_kind_names()
MAX_QUERY_CHARS = 2000
MAX_K = 200


class QueryError(MedragError):
    """The query or a filter is not usable (empty, too long, unknown source, bad date...)."""


@dataclass(frozen=True)
class SearchFilters:
    """Metadata filters applied inside the search statement (see sql/search.sql for their meaning)."""

    sources: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    release: str = "current"
    as_of: dt.date | None = None
    contractor: str | None = None
    state: str | None = None
    manual: str | None = None
    chapter: str | None = None

    def __post_init__(self) -> None:
        unknown = [source for source in self.sources if source not in SOURCES]
        if unknown:
            raise QueryError(f"unknown source {unknown[0]!r}; choose from {', '.join(SOURCES)}")
        if self.state is not None and not (len(self.state) == 2 and self.state.isalpha()):
            raise QueryError(f"state must be a two-letter code such as CA, not {self.state!r}")

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> SearchFilters:
        """The inverse of as_json: a question file's "filters" object (source and key: one value or a list)."""
        unknown = sorted(set(raw) - {"source", "key", "release", "as_of", "contractor", "state", "manual", "chapter"})
        if unknown:
            raise QueryError(f"unknown filter {unknown[0]!r}")
        sources, keys, as_of = raw.get("source", ()), raw.get("key", ()), raw.get("as_of")
        try:
            as_of_date = dt.date.fromisoformat(as_of) if as_of else None
        except (TypeError, ValueError) as error:
            raise QueryError(f"as_of must be a date such as 2024-01-01, not {as_of!r}") from error
        return cls(
            sources=tuple([sources] if isinstance(sources, str) else sources),
            keys=tuple([keys] if isinstance(keys, str) else keys),
            release=raw.get("release", "current"), as_of=as_of_date, contractor=raw.get("contractor"),
            state=raw.get("state"), manual=raw.get("manual"), chapter=raw.get("chapter"),
        )

    def as_json(self) -> dict[str, Any]:
        """The filters jsonb that medrag_search takes (only the keys that are set)."""
        out: dict[str, Any] = {"release": self.release}
        if self.sources:
            out["source"] = list(self.sources)
        if self.keys:
            out["key"] = list(self.keys)
        if self.as_of:
            out["as_of"] = self.as_of.isoformat()
        for name in ("contractor", "state", "manual", "chapter"):
            value = getattr(self, name)
            if value:
                out[name] = value.upper() if name == "state" else value
        return out


@dataclass
class Hit:
    """One ranked chunk with its document's identity."""

    rank: int
    score: float
    source: str
    key: str
    title: str
    heading: str
    text: str
    chunk_id: int
    document_id: int
    release: str
    url: str | None
    matched: str = ""
    ranked_by: str = SEARCH_RANKED  # CODES_RANKED: the code finder chose the code for this slot; score its confidence


@dataclass
class SearchResult:
    """The query, the filters as applied, the ranked hits and where the time went."""

    query: str
    filters: dict[str, Any]
    hits: list[Hit] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The `medrag search --json` object."""
        hits = []
        for hit in self.hits:
            item = asdict(hit)
            item.pop("matched")
            hits.append(item)
        return {"query": self.query, "filters": self.filters, "hits": hits, "timings_ms": self.timings_ms}


def validate_query(query: str | None) -> str:
    """The query stripped, or QueryError when it is empty, too long or holds control characters."""
    cleaned = (query or "").strip()
    if not cleaned:
        raise QueryError("the query is empty")
    if len(cleaned) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is {len(cleaned):,} characters; the limit is {MAX_QUERY_CHARS:,}")
    if any(unicodedata.category(ch) == "Cc" and ch not in "\t\n\r" for ch in cleaned):
        raise QueryError("the query contains control characters")
    return " ".join(cleaned.split())


def vector_literal(vector: list[float]) -> str:
    """pgvector's text form '[0.1,0.2,...]' (also what `medrag embed` prints for psql)."""
    return "[" + ",".join(f"{value:.7g}" for value in vector) + "]"


_SEARCH_SQL = text(
    "SELECT rank, score, chunk_id, document_id, source, key, title, heading, text, release, url, matched "
    "FROM medrag_search(CAST(:embedding AS vector), :query, :k, CAST(:filters AS jsonb))"
)


_SPELLING_SQL = text("SELECT typed, corrected FROM medrag_spelling(:query)")
# The states the current MCD export knows (its state_lookup member); empty when no MCD release is loaded.
_KNOWN_STATES_SQL = text(
    "SELECT s.state_abbrev FROM mcd_state_lookup s JOIN release r ON r.id = s.release_id AND r.is_current "
    "ORDER BY 1"
)


def check_state(conn: Connection, state: str | None) -> None:
    """QueryError for a state filter the current MCD release does not list (a typo would silently match nothing)."""
    if state is None:
        return
    known = conn.execute(_KNOWN_STATES_SQL).scalars().all()
    if known and state.upper() not in known:
        raise QueryError(f"unknown state {state!r}: the current MCD release lists {', '.join(known)}")


_RELEASE_LABELS_SQL = text("SELECT DISTINCT label FROM medrag_usable_release ORDER BY 1")


def check_release(conn: Connection, release: str) -> None:
    """QueryError for a release label no loaded release has ('current' and 'all' always pass)."""
    if release in ("current", "all"):
        return
    labels = conn.execute(_RELEASE_LABELS_SQL).scalars().all()
    if release not in labels:
        raise QueryError(f"no release labelled {release!r}; loaded: {', '.join(labels) or 'none'}")


def check_filters(conn: Connection, filters: SearchFilters) -> None:
    """QueryError for a filter that names what the database does not hold (a typo would silently match nothing)."""
    check_state(conn, filters.state)
    check_release(conn, filters.release)


def embedding_text(conn: Connection, query: str, embedder: Any) -> str:
    """The query as it is embedded: its misspelt words corrected (medrag_spelling), a misspelling embeds as noise.

    A word the embedding model has as a token of its own stays as typed: the corpus lacks "look" or "tiny" too,
    and their nearest corpus words ("loop", "tint") would change what the question means.
    """
    knows_word = getattr(embedder, "knows_word", None)
    if knows_word is None:  # an embedder of its own text (the answer pipeline's rewritten question)
        return query
    corrections = {row.typed: row.corrected for row in conn.execute(_SPELLING_SQL, {"query": query})
                   if not knows_word(row.typed)}
    if not corrections:
        return query
    return re.sub(r"[A-Za-z]+", lambda word: corrections.get(word.group(0).lower(), word.group(0)), query)


def search(
    engine: Engine,
    query: str,
    *,
    k: int = 10,
    filters: SearchFilters | None = None,
    embedder: Any = None,
) -> SearchResult:
    """Ranked hits for a query: exact identifiers first, then RRF of vector, full-text and trigram matches.

    The code documents among the hits are the code finder's (medrag_search in sql/search.sql): a search lists codes
    as `medrag codes` ranks them.
    """
    started = time.perf_counter()
    query = validate_query(query)
    if not 1 <= k <= MAX_K:
        raise QueryError(f"k must be between 1 and {MAX_K}, not {k}")
    filters = filters or SearchFilters()
    timings: dict[str, float] = {}
    embedding = None
    with engine.connect() as conn:
        check_filters(conn, filters)
        if embedder is not None:
            embed_started = time.perf_counter()
            embedding = vector_literal(embedder.embed(embedding_text(conn, query, embedder)))
            timings["embed"] = (time.perf_counter() - embed_started) * 1000
        sql_started = time.perf_counter()
        rows = conn.execute(
            _SEARCH_SQL, {"embedding": embedding, "query": query, "k": k, "filters": json.dumps(filters.as_json())}
        ).mappings().all()
        conn.commit()  # the code finder's answers it kept (medrag_find_codes_cached)
        timings["sql"] = (time.perf_counter() - sql_started) * 1000
    hits = [Hit(**{name: row[name] for name in row.keys()},  # noqa: SIM118 - RowMapping
                ranked_by=CODES_RANKED if CODES_RANKED in (row["matched"] or "").split("+") else SEARCH_RANKED)
            for row in rows]
    timings["total"] = (time.perf_counter() - started) * 1000
    return SearchResult(query, filters.as_json(), hits, {name: round(ms, 2) for name, ms in timings.items()})
