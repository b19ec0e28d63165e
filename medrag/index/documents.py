"""Documents and chunks written from a release's document drafts: each draft chunked, documents and chunks COPYed."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from sqlalchemy import Connection, text

from medrag.core import progress
from medrag.index.chunking import SectionChunk, TokenCounter, chunk_sections, content_hash
from medrag.ingest.copy import copy_rows
from medrag.sources.drafts import DocumentDraft

DOCUMENT_COLUMNS = [
    ("id", "bigint"), ("source", "text"), ("key", "text"), ("version", "text"), ("title", "text"), ("url", "text"),
    ("effective_date", "date"), ("termination_date", "date"), ("metadata", "jsonb"), ("content_hash", "text"),
    ("is_current", "boolean"),
]
CHUNK_COLUMNS = [
    ("document_id", "bigint"), ("ordinal", "integer"), ("text", "text"), ("heading", "text"), ("section", "text"),
    ("page_start", "integer"), ("page_end", "integer"), ("content_hash", "text"), ("embedding_text", "text"),
]


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
