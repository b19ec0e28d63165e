"""Hybrid retrieval as a Python function: validate the query, embed it, call the SQL function medrag_search."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import time
import unicodedata
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from sqlalchemy import Connection, Engine, text

from medrag.core.errors import MedragError
from medrag.sources.registry import code_kind_names, document_kind_names

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
    ranked_by: str = SEARCH_RANKED  # CODES_RANKED: the code ranker chose the code for this slot; score its confidence


@dataclass(frozen=True)
class RankedCode:
    """A code document as the code ranker placed it: its source (hcpcs, icd10cm), code and confidence."""

    source: str
    key: str
    confidence: float


class CodeRanker(Protocol):
    """Ranks the codes for a query (medrag.codes.finder.CodeFinder): the one code ranking of every result list."""

    def rank_codes(self, query: str, *, sources: Sequence[str], release: str | None,
                   limit: int) -> list[RankedCode]:
        """The codes of these sources for the query, best first, at most `limit` of each source."""


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


_RELEASE_LABELS_SQL = text("SELECT DISTINCT label FROM release WHERE status IN ('loaded', 'partial') ORDER BY 1")


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


_CODE_HITS_SQL = text(
    "SELECT DISTINCT ON (d.source, d.key) c.id AS chunk_id, d.id AS document_id, d.source, d.key, d.title, "
    "c.heading, c.text, rel.label AS release, d.url "
    "FROM unnest(CAST(:sources AS text[]), CAST(:keys AS text[])) AS wanted(source, key) "
    "JOIN document d ON d.source = wanted.source AND d.key = wanted.key "
    "JOIN release rel ON rel.id = d.release_id "
    "JOIN chunk c ON c.document_id = d.id "
    "WHERE medrag_document_matches(d.source, d.key, d.is_current, d.effective_date, d.termination_date, d.metadata, "
    "rel.label, CAST(:filters AS jsonb)) "
    "ORDER BY d.source, d.key, d.is_current DESC, c.ordinal"
)


# The code ranking runs beside the search statement (every dev question's top 10 holds codes), not after it.
_CODE_RANKING = ThreadPoolExecutor(max_workers=4, thread_name_prefix="medrag-code-ranking")


def start_code_ranking(ranker: CodeRanker, query: str, k: int, filters: SearchFilters) -> Future | None:
    """The ranker's codes for the query, computing in the background; None when the filters admit no code."""
    sources = [source for source in (filters.sources or CODE_SOURCES) if source in CODE_SOURCES]
    if not sources or filters.manual or filters.chapter:  # manual and chapter select manual sections only
        return None
    release = None if filters.release in ("current", "all") else filters.release
    return _CODE_RANKING.submit(ranker.rank_codes, query, sources=sources, release=release, limit=k)


def rank_code_slots(engine: Engine, hits: list[Hit], filters: SearchFilters, ranked: list[RankedCode]) -> list[Hit]:
    """The hits with their code slots filled in the code ranker's order, so a search lists codes as `medrag codes`.

    The slots are where the search put code documents: how many codes and where they stand against the policy
    documents is the search's call, which codes and in what order the ranker's. A code the query names (the exact
    leg) keeps its place. Slots the ranker cannot fill keep the search's own codes, in its order.
    """
    slots = [i for i, hit in enumerate(hits)
             if hit.source in CODE_SOURCES and "exact" not in (hit.matched or "").split("+")]
    if not slots:
        return hits
    slot_set = set(slots)
    placed = {(hit.source, hit.key) for i, hit in enumerate(hits) if i not in slot_set}
    own = {(hits[i].source, hits[i].key): hits[i] for i in reversed(slots)}  # a document's best chunk
    wanted = [code for code in dict.fromkeys((code.source, code.key) for code in ranked) if code not in placed]
    missing = [code for code in wanted if code not in own]
    fetched: dict[tuple[str, str], Hit] = {}
    if missing:
        with engine.connect() as conn:
            rows = conn.execute(_CODE_HITS_SQL, {"sources": [source for source, _ in missing],
                                                 "keys": [key for _, key in missing],
                                                 "filters": json.dumps(filters.as_json())}).mappings().all()
        fetched = {(row["source"], row["key"]): Hit(rank=0, score=0.0, matched="codes", **row) for row in rows}
    confidence = {(code.source, code.key): code.confidence for code in ranked}
    chosen = [replace(own.get(code) or fetched[code], score=confidence[code], ranked_by=CODES_RANKED)
              for code in wanted if code in own or code in fetched][:len(slots)]
    chosen_keys = {(hit.source, hit.key) for hit in chosen}
    chosen += [hits[i] for i in slots if (hits[i].source, hits[i].key) not in chosen_keys][:len(slots) - len(chosen)]
    out = list(hits)
    for i, hit in zip(slots, chosen, strict=False):
        out[i] = replace(hit, rank=hits[i].rank)
    return out


def search(
    engine: Engine,
    query: str,
    *,
    k: int = 10,
    filters: SearchFilters | None = None,
    embedder: Any = None,
    code_ranker: CodeRanker | None = None,
) -> SearchResult:
    """Ranked hits for a query: exact identifiers first, then RRF of vector, full-text and trigram matches.

    With a code ranker, the code documents among the hits are the ranker's (rank_code_slots).
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
        ranking = start_code_ranking(code_ranker, query, k, filters) if code_ranker is not None else None
        if embedder is not None:
            embed_started = time.perf_counter()
            embedding = vector_literal(embedder.embed(embedding_text(conn, query, embedder)))
            timings["embed"] = (time.perf_counter() - embed_started) * 1000
        sql_started = time.perf_counter()
        rows = conn.execute(
            _SEARCH_SQL, {"embedding": embedding, "query": query, "k": k, "filters": json.dumps(filters.as_json())}
        ).mappings().all()
        timings["sql"] = (time.perf_counter() - sql_started) * 1000
    hits = [Hit(**{name: row[name] for name in row.keys()}) for row in rows]  # noqa: SIM118 - RowMapping
    if ranking is not None:
        codes_started = time.perf_counter()
        try:
            hits = rank_code_slots(engine, hits, filters, ranking.result())
        except MedragError as error:  # a query the finder refuses (over its length limit): the search's order stands
            log.info("code slots keep the search's order: %s", error)
        timings["codes"] = (time.perf_counter() - codes_started) * 1000
    timings["total"] = (time.perf_counter() - started) * 1000
    return SearchResult(query, filters.as_json(), hits, {name: round(ms, 2) for name, ms in timings.items()})
