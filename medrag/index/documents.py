"""Retrievable documents and chunks from the relational tables of a loaded release (the text side of a refresh)."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection, Engine, text

from medrag.codes.synonyms import clinical_synonym_entries
from medrag.core import progress
from medrag.index.chunking import (
    Section,
    SectionChunk,
    TokenCounter,
    chunk_sections,
    content_hash,
    default_token_counter,
)
from medrag.index.enrichment import load_synonyms
from medrag.ingest.copy import copy_rows
from medrag.sources.registry import spec

_NON_WORD = re.compile(r"[^a-z0-9]+")

DOCUMENT_COLUMNS = [
    ("id", "bigint"), ("source", "text"), ("key", "text"), ("version", "text"), ("title", "text"), ("url", "text"),
    ("effective_date", "date"), ("termination_date", "date"), ("metadata", "jsonb"), ("content_hash", "text"),
    ("is_current", "boolean"),
]
CHUNK_COLUMNS = [
    ("document_id", "bigint"), ("ordinal", "integer"), ("text", "text"), ("heading", "text"), ("section", "text"),
    ("page_start", "integer"), ("page_end", "integer"), ("content_hash", "text"), ("embedding_text", "text"),
]


@dataclass
class DocumentDraft:
    """A document before it has an id: identity, dates, filter metadata and its titled sections."""

    source: str
    key: str
    title: str
    sections: list[Section]
    version: str = ""
    url: str | None = None
    effective_date: date | None = None
    termination_date: date | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # what a one-chunk document is embedded from when not its heading + text (see chunk.embedding_text)
    embedding_text: str | None = None


@dataclass
class DocumentStats:
    """What building documents for one release wrote."""

    source: str
    label: str
    documents: dict[str, int] = field(default_factory=dict)
    chunks: int = 0
    seconds: float = 0.0
    skipped: bool = False


def day(value: date | datetime | None) -> date | None:
    """A date column's value as a date (MCD exports give some as timestamps)."""
    return value.date() if isinstance(value, datetime) else value


def rows(conn: Connection, sql: str, **params: Any) -> list[dict[str, Any]]:
    """Every row of a query as a dict: what the source document builders read their tables with."""
    return [dict(row) for row in conn.execute(text(sql), params).mappings()]


def code_budget(counter: TokenCounter, heading: str) -> int:
    """Tokens left for a code document's text once its heading is in: codes stay one chunk each."""
    return counter.budget() - counter.count(heading) - 1


# -- writing --------------------------------------------------------------------------------------------------------


def _document_hash(chunk_hashes: Iterable[str], draft: DocumentDraft) -> str:
    digest = hashlib.sha256(f"{draft.title}\n{draft.effective_date}\n{draft.termination_date}".encode())
    for chunk_hash in chunk_hashes:
        digest.update(chunk_hash.encode())
    return digest.hexdigest()


def _chunk_hashes(pieces: list[SectionChunk], draft: DocumentDraft) -> list[str]:
    if draft.embedding_text is None:
        return [piece.content_hash for piece in pieces]
    if len(pieces) != 1:
        raise ValueError(f"{draft.source} {draft.key}: embedding_text is for one-chunk documents only")
    # vectors are shared by content hash: a chunk embedded from other words must not share one with its plain twin
    return [content_hash(pieces[0].heading, pieces[0].text, draft.embedding_text)]


def write_drafts(conn: Connection, release_id: int, drafts: list[DocumentDraft], counter: TokenCounter,
                 is_current: bool, source: str | None = None) -> int:
    """Chunk every draft and COPY documents + chunks (ids taken from the sequence up front); returns chunks."""
    if not drafts:
        return 0
    ids = conn.execute(text("SELECT nextval('document_id_seq') FROM generate_series(1, :n)"),
                       {"n": len(drafts)}).scalars().all()
    documents, chunks = [], []
    tracker = progress.track(f"{source or drafts[0].source}: documents", total=len(drafts), unit="documents")
    for document_id, draft in zip(ids, drafts, strict=True):
        tracker.advance()
        pieces = chunk_sections(draft.sections, counter=counter)
        hashes = _chunk_hashes(pieces, draft)
        documents.append({
            "id": document_id, "source": draft.source, "key": draft.key, "version": draft.version,
            "title": draft.title, "url": draft.url, "effective_date": draft.effective_date,
            "termination_date": draft.termination_date, "metadata": draft.metadata,
            "content_hash": _document_hash(hashes, draft), "is_current": is_current,
        })
        chunks += [{"document_id": document_id, "ordinal": p.ordinal, "text": p.text, "heading": p.heading,
                    "section": p.section, "page_start": p.page_start, "page_end": p.page_end,
                    "content_hash": chunk_hash, "embedding_text": draft.embedding_text}
                   for p, chunk_hash in zip(pieces, hashes, strict=True)]
    tracker.close()
    copy_rows(conn, "document", DOCUMENT_COLUMNS, documents, constants={"release_id": release_id})
    return copy_rows(conn, "chunk", CHUNK_COLUMNS, chunks)


def search_synonyms() -> set[tuple[str, str]]:
    """(term, expansion) pairs the full-text query adds: code-text abbreviations and clinical/lay/brand terms."""
    # medrag_text_queries matches terms in the lower-cased query: "hearing aids" must not expand to AIDS's wording
    pairs = {(term, expansion) for term, expansions in load_synonyms(exact_case=False).items()
             for expansion in expansions}
    pairs |= {(entry.term, expansion) for entry in clinical_synonym_entries() for expansion in entry.expansions}
    # terms as medrag_text_queries sees the query: lower case, runs of anything but letters and digits one space
    return {(_NON_WORD.sub(" ", term.lower()).strip(), expansion) for term, expansion in pairs}


def sync_synonyms(conn: Connection) -> int:
    """Make medrag_synonym (the full-text query's expansions) equal to the repo's tables; rows changed."""
    wanted = search_synonyms()
    stored = {tuple(row) for row in conn.execute(text("SELECT term, expansion FROM medrag_synonym"))}
    if wanted == stored:  # the usual case: a refresh rewrites nothing
        return 0
    conn.execute(text("DELETE FROM medrag_synonym"))
    conn.execute(text("INSERT INTO medrag_synonym (term, expansion) VALUES (:term, :expansion)"),
                 [{"term": term, "expansion": expansion} for term, expansion in sorted(wanted)])
    return len(wanted ^ stored)


def refresh_term_counts(conn: Connection) -> int:
    """Recount the current chunks' words for the full-text query (medrag_term, medrag_word); lexemes counted."""
    return conn.execute(text("SELECT medrag_refresh_terms()")).scalar_one()


def sync_current_documents(conn: Connection) -> int:
    """Documents are current exactly when their release is: one statement after any release changes."""
    return conn.execute(text(
        "UPDATE document d SET is_current = r.is_current FROM release r "
        "WHERE d.release_id = r.id AND d.is_current IS DISTINCT FROM r.is_current"
    )).rowcount


def make_current(engine: Engine, source: str, label: str) -> bool:
    """Make a loaded release current together with its documents, in one transaction.

    Its code tables (what `medrag codes` reads) and its documents (what search and answers read) become current in
    the same commit, so a reader never sees one release's codes beside another's documents. True when it changed.
    """
    from medrag.ingest.releases import promote_if_newest, release_id

    with engine.begin() as conn:
        before = conn.execute(text("SELECT id FROM release WHERE source = :s AND is_current"), {"s": source}).scalar()
        target = release_id(conn, source, label)
        if before == target:
            return False  # an unchanged refresh writes nothing here
        promote_if_newest(conn, source, target, label)
        if sync_current_documents(conn):
            sync_synonyms(conn)
            refresh_term_counts(conn)
    return True


# A rebuild (--force, or a new document format) keeps the vectors of the chunks whose content hash it writes again:
# only what changed goes back to the model (a forced ICD-10-CM rebuild would otherwise re-embed 47k chunks).
_KEEP_VECTORS = """
CREATE TEMP TABLE kept_vector ON COMMIT DROP AS
SELECT DISTINCT ON (c.content_hash) c.content_hash, v.embedding, v.model_id
FROM chunk c JOIN document d ON d.id = c.document_id JOIN chunk_vector v ON v.chunk_id = c.id
WHERE d.release_id = :r
"""
_RESTORE_VECTORS = """
INSERT INTO chunk_vector (chunk_id, source, model_id, embedding)
SELECT chunk.id, chunk.source, kept_vector.model_id, kept_vector.embedding
FROM kept_vector JOIN chunk ON chunk.content_hash = kept_vector.content_hash
JOIN document d ON d.id = chunk.document_id
WHERE d.release_id = :r
"""


def build_documents(
    engine: Engine, source: str, label: str, *, counter: TokenCounter | None = None, force: bool = False
) -> DocumentStats:
    """Documents + chunks for one loaded release in one transaction; skipped when today's format built them."""
    started = time.perf_counter()
    stats = DocumentStats(source, label)
    with engine.begin() as conn:
        release = conn.execute(
            text("SELECT id, is_current, documents_format FROM release WHERE source = :s AND label = :l "
                 "AND status IN ('loaded', 'partial')"), {"s": source, "l": label},
        ).one()
        existing = conn.execute(text("SELECT count(*) FROM document WHERE release_id = :r"), {"r": release.id})
        existing = existing.scalar()
        documents_changed = False
        source_spec = spec(source)
        if existing and release.documents_format == source_spec.documents_format and not force:
            stats.skipped = True
        else:
            conn.execute(text(_KEEP_VECTORS), {"r": release.id})
            conn.execute(text("DELETE FROM document WHERE release_id = :r"), {"r": release.id})
            counter = counter or default_token_counter()
            drafts = source_spec.drafts_builder()(conn, release.id, counter)
            stats.chunks = write_drafts(conn, release.id, drafts, counter, release.is_current, source)
            conn.execute(text(_RESTORE_VECTORS), {"r": release.id})
            conn.execute(text("UPDATE release SET documents_format = :f WHERE id = :r"),
                         {"f": source_spec.documents_format, "r": release.id})
            for draft in drafts:
                stats.documents[draft.source] = stats.documents.get(draft.source, 0) + 1
            # a release without documents (an IOM release whose PDFs hold no sections) is rebuilt every time
            documents_changed = bool(existing or drafts)
        currency_changed = sync_current_documents(conn)
        sync_synonyms(conn)
        # the counts are over current chunks: a release not current yet changes them when it becomes current
        if (documents_changed and release.is_current) or currency_changed:
            refresh_term_counts(conn)
    stats.seconds = time.perf_counter() - started
    return stats
