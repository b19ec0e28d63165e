"""What an answer reads: each accepted document once, and the one or two the question is clearly about, whole.

Search ranks chunks, and a determination's criteria often sit in a chunk that did not rank (the LDCT question finds
the NCD's background paragraph; its age and pack-year criteria are two chunks further on). A document is "clearly
about" the question when it is named in it (E0601, NCD 240.2), or when it is a determination or manual whose best
chunk is as similar to the question as the best accepted one, within focus_margin; at most focus_documents of them
(medrag/core/tuning.py).
Those are read whole; the others through the chunks that were accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from itertools import groupby

from sqlalchemy import Engine, text

from medrag.answer.evidence import Evidence
from medrag.core import tuning
from medrag.core.registry import code_kind_names
from medrag.retrieval.search import vector_literal

CODE_SOURCES = code_kind_names()
# A shorter head shared by two chunks ("- A", "Note:") is as likely a coincidence as the chunker's overlap.
MIN_OVERLAP_CHARS = 12


@dataclass(frozen=True)
class ChunkRead:
    """A chunk of a document read, with its stored vector's similarity to the question (None without one)."""

    id: int
    text: str
    similarity: float | None

    @cached_property
    def words(self) -> str:
        """The text on single spaces: what a unit's first words are looked for in."""
        return " ".join(self.text.split())


@dataclass
class Reading:
    """One document as the answer reads it: its accepted evidence (best first) and its text by section."""

    document_id: int
    evidence: list[Evidence]
    whole: bool = False
    sections: list[tuple[str, str]] = field(default_factory=list)
    chunks: list[ChunkRead] = field(default_factory=list)

    @property
    def best(self) -> Evidence:
        """The document's best accepted chunk: what names it in the source list and the audit log."""
        return self.evidence[0]


def focus_documents(evidence: list[Evidence]) -> set[int]:
    """The documents the question is clearly about (see the module docstring)."""
    accepted = [item for item in evidence if item.accepted]
    named = {item.hit.document_id for item in accepted if item.exact}
    policy = [item for item in accepted if item.hit.source not in CODE_SOURCES and item.similarity is not None]
    if not policy:
        return named
    top = max(item.similarity for item in policy)
    near: list[int] = []
    for item in sorted(policy, key=lambda item: -item.similarity):
        if item.similarity >= top - tuning.value("focus_margin") and item.hit.document_id not in near:
            near.append(item.hit.document_id)
    return named | set(near[:tuning.value("focus_documents")])


_CHUNKS_SQL = text("""
    SELECT id, document_id, ordinal, coalesce(section, '') AS section, text,
           1 - (v.embedding <=> CAST(:query AS vector)) AS similarity
    FROM chunk LEFT JOIN chunk_vector v ON v.chunk_id = chunk.id
    WHERE document_id = ANY(:whole) OR id = ANY(:chunks)
    ORDER BY document_id, ordinal
""")


def merge_chunks(texts: list[str]) -> str:
    """Consecutive chunk texts as one text: the passage each chunk repeats of the one before it is read once."""
    merged = ""
    for piece in texts:
        piece = piece.strip()
        merged = piece if not merged else merged + _after_overlap(merged, piece)
    return merged


def _after_overlap(before: str, text_: str) -> str:
    """What text_ adds to before: the part after the longest head of text_ that before ends with."""
    # The probe stays within text_'s first line: a repeated lead-in shorter than the probe ("The team must include,
    # at a minimum:") ends the chunk before without the blank line and list that follow it in text_.
    probe = text_[:40].split("\n", 1)[0]
    if len(probe) < MIN_OVERLAP_CHARS:
        return "\n\n" + text_
    start = before.find(probe, max(0, len(before) - 3000))
    while start != -1:
        tail = before[start:]
        if text_.startswith(tail):
            rest = text_[len(tail):]
            return rest if rest[:1] in ("", "\n", " ") else "\n" + rest
        start = before.find(probe, start + 1)
    return "\n\n" + text_


def read_documents(engine: Engine, evidence: list[Evidence], query_vector: list[float] | None = None
                   ) -> list[Reading]:
    """One Reading per accepted document, in the order of its best chunk; focus documents read whole."""
    readings: dict[int, Reading] = {}
    for item in evidence:
        if item.accepted:
            readings.setdefault(item.hit.document_id, Reading(item.hit.document_id, [])).evidence.append(item)
    if not readings:
        return []
    whole = focus_documents(evidence)
    with engine.connect() as conn:
        rows = conn.execute(_CHUNKS_SQL, {
            "whole": sorted(whole), "query": vector_literal(query_vector) if query_vector is not None else None,
            "chunks": [item.hit.chunk_id for reading in readings.values() for item in reading.evidence]}).all()
    for document_id, chunks in groupby(rows, key=lambda row: row.document_id):
        reading = readings.get(document_id)
        if reading is None:
            continue
        chunks = list(chunks)
        reading.whole = document_id in whole
        reading.chunks = [ChunkRead(row.id, row.text, None if row.similarity is None else float(row.similarity))
                          for row in chunks]
        reading.sections = [(section, merge_chunks([row.text for row in part]))
                            for section, part in groupby(chunks, key=lambda row: row.section)]
    return list(readings.values())
