"""The clinical code finder: a term in, ICD-10-CM and HCPCS codes out, found and ranked in PostgreSQL.

    finder = CodeFinder(engine, embedder_factory=query_embedder)
    search = finder.find("diabetes a1c test strips", top=5)

PostgreSQL's medrag_find_codes (sql/finder.sql) does the search: the term's analysis, rounds of lookups, scoring,
reflection (broaden with synonyms, spelling, qualifiers left out; narrow a header to its billable codes) and the
choice of codes, so `medrag codes`, the API and psql's medrag_search rank codes one way. This module checks the
input, embeds the term (the model runs in Python), and reads the answer; the numbers the SQL works by are named
here and in the modules it imports, and rendered into generated.sql (finder_settings_sql).
"""

from __future__ import annotations

import json
import logging
import time
import unicodedata
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

from medrag.codes import plan
from medrag.codes.classify import HCPCS, ICD10CM, SYSTEMS
from medrag.codes.clinical_tables import search_clinical_tables
from medrag.codes.consolidate import GUESS
from medrag.codes.plan import CodeRelease
from medrag.codes.results import CodeMatch, CodeSearch, Related, ScoredCode, summarize
from medrag.codes.terms import AS_TYPED, INDEX_NAME, WORD_FORM
from medrag.core import tuning
from medrag.core.errors import MedragError

log = logging.getLogger(__name__)

# The finder's numbers are in the registry (medrag/core/tuning.py); the doors check top against these two.
DEFAULT_TOP = tuning.value("default_top")
MAX_TOP = tuning.value("max_top")
ALL_KINDS = {ICD10CM: ("diagnosis",), HCPCS: ("procedure", "modifier")}
SYSTEM_ALIASES = {"icd-10-cm": ICD10CM, "icd10cm": ICD10CM, "icd10": ICD10CM, "icd": ICD10CM, "hcpcs": HCPCS}
# The SQLSTATE medrag_find_codes raises for a term or option it cannot use (invalid_parameter_value).
BAD_INPUT = "22023"


def finder_names_sql() -> str:
    """medrag_code_finder_names(): the names medrag_find_codes (sql/finder.sql) works by (systems, their document
    sources and aliases, the kinds of code each lists, the wordings searched as typed), rendered into generated.sql;
    its numbers are medrag_settings()."""
    names = {
        "systems": list(SYSTEMS), "sources": plan.DOCUMENT_SOURCE, "aliases": SYSTEM_ALIASES,
        "kinds": {ICD10CM: ["diagnosis"], HCPCS: ["procedure"]}, "modifier_kinds": ["procedure", "modifier"],
        "all_kinds": {system: list(kinds) for system, kinds in ALL_KINDS.items()}, "as_typed": list(AS_TYPED),
        "word_form": WORD_FORM, "index_name": INDEX_NAME, "guess_tier": GUESS,
    }
    literal = json.dumps(names, sort_keys=True).replace("'", "''")
    return f"""
-- The names of the code finder (medrag_find_codes in sql/finder.sql), rendered by medrag/codes/finder.py; its numbers
-- are medrag_settings() (medrag/core/tuning.py).
DROP FUNCTION IF EXISTS medrag_code_finder_settings();
CREATE OR REPLACE FUNCTION medrag_code_finder_names()
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT '{literal}'::jsonb
$$;
"""


class CodeQueryError(MedragError):
    """The term or an option of a code search is not usable."""


class Embedder(Protocol):
    """Anything that turns a text into a unit vector (medrag.retrieval.query_embedding.QueryEmbedder)."""

    def embed(self, text: str) -> list[float]:
        """The text's embedding."""


def clean_term(term: str | None) -> str:
    """The term single-spaced; CodeQueryError when it holds control characters, which PostgreSQL cannot take.

    What else a query must be (a term neither empty nor too long, top within bounds, known code systems) is checked
    in one place, medrag_check_code_query (sql/finder_analysis.sql), which medrag_find_codes calls: psql, the CLI
    and the API get the same one-line messages from it.
    """
    cleaned = " ".join((term or "").split())
    if any(unicodedata.category(ch) == "Cc" for ch in cleaned):
        raise CodeQueryError("the term contains control characters")
    return cleaned


# What the lookups search: the term without the words that ask for a code or name the visit, and without the codes
# written in it. Its embedding is what the vector leg and the semantic feature compare codes with.
_SEARCHED_TEXT = text("SELECT medrag_classify_code_term(:term) ->> 'text'")
_FIND = text("SELECT medrag_find_codes(:term, CAST(:systems AS text[]), :release, :top, CAST(:embedding AS vector), "
             ":with_candidates)")
# The same call through the cache of answers (sql/finder_cache.sql), which keeps no candidates.
_FIND_CACHED = text("SELECT medrag_find_codes_cached(:term, CAST(:systems AS text[]), :release, :top, "
                    "CAST(:embedding AS vector))")


class CodeFinder:
    """Finds ICD-10-CM and HCPCS codes for clinical terms in the loaded code tables (medrag_find_codes).

    Whether code documents have embeddings is read once per finder: make a new finder after a refresh. The embedder
    is created on first need (only when code documents have embeddings). With cached (what `medrag codes` and the
    API ask for) a term asked again on the same data is answered from medrag_code_cache; the evaluations and
    benchmarks measure the finder itself.
    """

    def __init__(self, engine: Engine, *, embedder: Embedder | None = None,
                 embedder_factory: Callable[[], Embedder] | None = None, cached: bool = False) -> None:
        self.engine = engine
        self.cached = cached
        self._embedder = embedder
        self._embedder_factory = embedder_factory
        self._embedder_failed: str | None = None
        # NLM's Clinical Tables are asked while PostgreSQL searches
        self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="medrag-codes")
        self._releases: dict[str, list[CodeRelease]] | None = None
        self._has_embeddings: bool | None = None

    def close(self) -> None:
        """Stop the background threads."""
        self._executor.shutdown(wait=True)

    def __enter__(self) -> CodeFinder:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def releases(self) -> dict[str, list[CodeRelease]]:
        """Loaded releases per system (read once)."""
        if self._releases is None:
            with self.engine.connect() as conn:
                self._releases = plan.load_releases(conn)
        return self._releases

    @property
    def can_embed(self) -> bool:
        """Whether this finder has (or may make) a query embedder."""
        return (self._embedder is not None or self._embedder_factory is not None) and self._embedder_failed is None

    def _get_embedder(self) -> Embedder | None:
        if self._embedder is None and self._embedder_factory is not None and self._embedder_failed is None:
            try:
                self._embedder = self._embedder_factory()
            except Exception as error:  # noqa: BLE001 - the lexical lookups still answer without vectors
                self._embedder_failed = str(error).splitlines()[0] if str(error) else type(error).__name__
                log.warning("code search without vectors: %s", self._embedder_failed)
        return self._embedder

    def _embedding(self, conn: Connection, term: str) -> str | None:
        """The searched text's embedding in pgvector's text form, when code documents have vectors to compare."""
        if not self.can_embed:
            return None
        if self._has_embeddings is None:
            self._has_embeddings = any(plan.has_code_embeddings(self.engine, system) for system in SYSTEMS)
        if not self._has_embeddings:
            return None
        searched = conn.execute(_SEARCHED_TEXT, {"term": term}).scalar_one()
        embedder = self._get_embedder()
        if not searched or embedder is None:
            return None
        return plan.vector_literal(embedder.embed(searched))

    def find(self, term: str, *, systems: Sequence[str] | None = None, release: str | None = None,
             top: int = DEFAULT_TOP, external_url: str | None = None, with_candidates: bool = False) -> CodeSearch:
        """Codes for a clinical term (or a code), best first, at most `top` per system.

        With external_url (the NLM Clinical Tables API base, off by default), LOINC, RxTerms, UCUM and HPO codes
        are asked for at the same time and listed apart from the local results. with_candidates fills
        CodeSearch.candidates with every code scored and its features (the calibration's fit reads them).
        """
        started = time.perf_counter()
        term = clean_term(term)
        requested = list(systems or ()) or None
        self.releases()  # first: on a database never migrated, what is missing is its tables
        external = (self._executor.submit(search_clinical_tables, term, base_url=external_url)
                    if external_url else None)
        try:
            with self.engine.connect() as conn:
                embedding = self._embedding(conn, term)
                statement = _FIND_CACHED if self.cached and not with_candidates else _FIND
                found = conn.execute(statement, {"term": term, "systems": requested, "release": release,
                                                 "top": top, "embedding": embedding,
                                                 "with_candidates": with_candidates}).scalar_one()
                conn.commit()  # what the cache kept
        except DBAPIError as error:
            if getattr(error.orig, "sqlstate", None) == BAD_INPUT:
                raise CodeQueryError(str(error.orig.diag.message_primary)) from None
            raise
        search = search_from(term, found)
        if self._embedder_failed and embedding is None:
            search.trace.insert(-1, f"vector: no query embedder ({self._embedder_failed})")
        if external is not None:
            lookup = external.result()
            search.external = lookup.codes
            search.trace.insert(-1, lookup.describe())
        search.timings_ms["python"] = round((time.perf_counter() - started) * 1000 - search.timings_ms["total"], 2)
        return search


def search_from(term: str, found: dict[str, Any]) -> CodeSearch:
    """The CodeSearch medrag_find_codes's jsonb describes."""
    results = [CodeMatch(item["system"], item["code"], item["display"], item["confidence"], item["tier"],
                         item["billable"], tuple(Related(related["source"], related["key"], related["title"],
                                                         tuple(related.get("contractors", ())))
                                                 for related in item["related"]), scored=item["candidate"])
               for item in found["results"]]
    systems = list(found["systems"])
    candidates = [ScoredCode(item["system"], item["code"], item["exact"], item["score"], item["behind"],
                             item["confidence"], item["tier"], item["features"] or {})
                  for item in found.get("candidates", ())]
    return CodeSearch(term, systems, results, summarize(term, systems, results), list(found["trace"]),
                      {name: round(ms, 2) for name, ms in found["timings"].items()}, candidates=candidates,
                      encounter=found["encounter"], cached=bool(found.get("cached")))
