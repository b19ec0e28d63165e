"""Which retrieved chunks count as evidence: cosine similarity to the question over a threshold, or an exact id.

medrag_search's score is a reciprocal-rank fusion: it orders hits but says nothing about whether the best one is
any good. The similarity here does: the cosine between the query vector and the chunk's stored vector (a chunk
without one, such as a code document that was never embedded, is embedded on the spot with the same model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Engine, text

from medrag.index.embedding import EMBED_TEXT_SQL
from medrag.retrieval.search import Hit, vector_literal

BELOW_THRESHOLD = "below_threshold"
BEYOND_MAX_SOURCES = "beyond_max_sources"

# a chunk without a vector comes with the text the indexer would embed, to be embedded here the same way
_SIMILARITY_SQL = text(f"""
    SELECT id, 1 - (v.embedding <=> CAST(:query AS vector)) AS similarity,
           CASE WHEN v.embedding IS NULL THEN {EMBED_TEXT_SQL} END AS embedding_input
    FROM chunk LEFT JOIN chunk_vector v ON v.chunk_id = chunk.id WHERE id = ANY(:ids)
""")


@dataclass
class Evidence:
    """A retrieved chunk, its similarity to the question, and whether it is used as a source."""

    hit: Hit
    similarity: float | None
    exact: bool
    accepted: bool = False
    reason: str | None = None

    def as_log(self) -> dict[str, Any]:
        """The query_log form: chunk id, document, scores and the verdict."""
        return {"chunk_id": self.hit.chunk_id, "source": self.hit.source, "key": self.hit.key,
                "rank": self.hit.rank, "score": round(self.hit.score, 6),
                "similarity": None if self.similarity is None else round(self.similarity, 4),
                "exact": self.exact, **({"reason": self.reason} if self.reason else {})}


class QueryVector:
    """Hands search() the vector of the rewritten query, whatever text it is asked to embed, and keeps it.

    search() embeds and full-text-searches one string. The full-text leg gets the question as asked (medrag_search
    expands abbreviations itself; spelled-out synonyms there would match tens of thousands of code documents and
    slow it down), while the vector leg, and the similarity threshold, use the rewritten query.
    """

    def __init__(self, embedder: Any, text: str) -> None:
        self.embedder = embedder
        self.text = text
        self.last: list[float] | None = None

    def embed(self, _query: str) -> list[float]:
        """The rewritten query's vector (computed once)."""
        if self.last is None:
            self.last = list(self.embedder.embed(self.text))
        return self.last


def similarities(engine: Engine, hits: list[Hit], query_vector: list[float] | None, embedder: Any = None
                 ) -> dict[int, float]:
    """Cosine similarity of the query vector to each hit's chunk (chunk id -> similarity)."""
    if query_vector is None or not hits:
        return {}
    with engine.connect() as conn:
        rows = conn.execute(_SIMILARITY_SQL, {"query": vector_literal(query_vector),
                                              "ids": [hit.chunk_id for hit in hits]}).all()
    found = {row.id: float(row.similarity) for row in rows if row.similarity is not None}
    query = np.asarray(query_vector, dtype=np.float32)
    for row in rows:
        if row.similarity is None and embedder is not None:
            vector = np.asarray(embedder.embed(row.embedding_input))
            found[row.id] = float(np.dot(query, vector) / max(np.linalg.norm(vector), 1e-12))
    return found


def select_evidence(hits: list[Hit], similarity: dict[int, float], *, threshold: float, max_sources: int
                    ) -> list[Evidence]:
    """Every hit with its verdict: exact identifiers and chunks at or over the threshold are accepted, in rank
    order, up to max_sources."""
    items = []
    accepted = 0
    for hit in hits:
        exact = "exact" in (hit.matched or "").split("+")
        item = Evidence(hit, similarity.get(hit.chunk_id), exact)
        if not exact and (item.similarity is None or item.similarity < threshold):
            item.reason = BELOW_THRESHOLD
        elif accepted >= max_sources:
            item.reason = BEYOND_MAX_SOURCES
        else:
            item.accepted = True
            accepted += 1
        items.append(item)
    return items
