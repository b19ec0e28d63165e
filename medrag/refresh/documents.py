"""The documents stage of a refresh: a loaded release's drafts built into documents, and a release made current."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine, text

from medrag.core.registry import spec
from medrag.index.chunking import TokenCounter, default_token_counter
from medrag.index.documents import write_drafts
from medrag.ingest.releases import promote_if_newest, release_id
from medrag.sources.handlers import drafts_builder


@dataclass
class DocumentStats:
    """What building documents for one release wrote."""

    source: str
    label: str
    documents: dict[str, int] = field(default_factory=dict)
    chunks: int = 0
    seconds: float = 0.0
    skipped: bool = False


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
    with engine.begin() as conn:
        before = conn.execute(text("SELECT id FROM release WHERE source = :s AND is_current"), {"s": source}).scalar()
        target = release_id(conn, source, label)
        if before == target:
            return False  # an unchanged refresh writes nothing here
        promote_if_newest(conn, source, target, label)
        if sync_current_documents(conn):
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
            text("SELECT id, is_current, documents_format FROM medrag_usable_release "
                 "WHERE source = :s AND label = :l"), {"s": source, "l": label},
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
            drafts = drafts_builder(source)(conn, release.id, counter)
            stats.chunks = write_drafts(conn, release.id, drafts, counter, release.is_current, source)
            conn.execute(text(_RESTORE_VECTORS), {"r": release.id})
            conn.execute(text("UPDATE release SET documents_format = :f WHERE id = :r"),
                         {"f": source_spec.documents_format, "r": release.id})
            for draft in drafts:
                stats.documents[draft.source] = stats.documents.get(draft.source, 0) + 1
            # a release without documents (an IOM release whose PDFs hold no sections) is rebuilt every time
            documents_changed = bool(existing or drafts)
        currency_changed = sync_current_documents(conn)
        # the counts are over current chunks: a release not current yet changes them when it becomes current
        if (documents_changed and release.is_current) or currency_changed:
            refresh_term_counts(conn)
    stats.seconds = time.perf_counter() - started
    return stats
