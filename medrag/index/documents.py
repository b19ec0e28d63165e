"""Retrievable documents and chunks from the relational tables of a loaded release (the text side of a refresh)."""

from __future__ import annotations

import hashlib
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection, Engine, text

from medrag.codes.synonyms import clinical_synonym_entries
from medrag.index.chunking import (
    Section,
    SectionChunk,
    TokenCounter,
    chunk_sections,
    content_hash,
    default_token_counter,
)
from medrag.index.enrichment import (
    hcpcs_category,
    hcpcs_document_text,
    hcpcs_embedding_text,
    icd10cm_document_text,
    load_synonyms,
)
from medrag.ingest.copy import copy_rows

NCD_URL = "https://www.cms.gov/medicare-coverage-database/view/ncd.aspx?NCDId={ncd_id}&ncdver={version}"
LCD_URL = "https://www.cms.gov/medicare-coverage-database/view/lcd.aspx?LCDId={lcd_id}"
ARTICLE_URL = "https://www.cms.gov/medicare-coverage-database/view/article.aspx?articleId={article_id}"
_NON_WORD = re.compile(r"[^a-z0-9]+")

# NCD narrative columns and the heading each becomes ("NCD 240.2 Home Use of Oxygen > Indications and Limitations").
NCD_SECTIONS = (
    ("description", "Item/Service Description"),
    ("indications_limitations", "Indications and Limitations of Coverage"),
    ("cross_reference", "Cross Reference"),
    ("other", "Other"),
)
# LCD narrative columns of lcd.csv (present in full exports), in the order the MCD web page shows them.
LCD_SECTIONS = (
    ("cms_cov_policy", "CMS National Coverage Policy"),
    ("indication", "Coverage Indications, Limitations, and/or Medical Necessity"),
    ("summary_of_evidence", "Summary of Evidence"),
    ("analysis_of_evidence", "Analysis of Evidence"),
    ("coding_guidelines", "Coding Guidelines"),
    ("doc_reqs", "Documentation Requirements"),
    ("util_guide", "Utilization Guidelines"),
)
ARTICLE_SECTIONS = (("description", "Article Text"), ("other_comments", "Other Comments"))

DOCUMENT_COLUMNS = [
    ("id", "bigint"), ("source", "text"), ("key", "text"), ("version", "text"), ("title", "text"), ("url", "text"),
    ("effective_date", "date"), ("termination_date", "date"), ("metadata", "jsonb"), ("content_hash", "text"),
    ("is_current", "boolean"),
]
CHUNK_COLUMNS = [
    ("document_id", "bigint"), ("ordinal", "integer"), ("text", "text"), ("heading", "text"), ("section", "text"),
    ("page_start", "integer"), ("page_end", "integer"), ("content_hash", "text"), ("embedding_text", "text"),
]
# The way each source's documents are built, as a number: a release whose documents were built by an older one is
# rebuilt by the next refresh (its text or what it is embedded from changed). 2: HCPCS embedding_text.
DOCUMENT_FORMATS = {"hcpcs": 2, "icd10cm": 1, "mcd": 1, "iom": 1}


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


def _day(value: date | datetime | None) -> date | None:
    return value.date() if isinstance(value, datetime) else value


def _rows(conn: Connection, sql: str, **params: Any) -> list[dict[str, Any]]:
    return [dict(row) for row in conn.execute(text(sql), params).mappings()]


# -- builders, one per release source ---------------------------------------------------------------------------


def _code_budget(counter: TokenCounter, heading: str) -> int:
    """Tokens left for a code document's text once its heading is in: codes stay one chunk each."""
    return counter.budget() - counter.count(heading) - 1


def hcpcs_drafts(conn: Connection, release_id: int, counter: TokenCounter) -> list[DocumentDraft]:
    """One document per HCPCS code, enriched with its category and the current LCDs that list it."""
    lcds: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for row in _rows(
        conn,
        "SELECT DISTINCT x.hcpc_code_id AS code, x.lcd_id, l.title FROM mcd_lcd_x_hcpc_code x "
        "JOIN release r ON r.id = x.release_id AND r.is_current "
        "LEFT JOIN mcd_lcd l ON l.release_id = x.release_id AND l.lcd_id = x.lcd_id "
        "ORDER BY x.lcd_id",
    ):
        lcds[row["code"]].append((f"L{row['lcd_id']}", row["title"] or ""))
    drafts = []
    for row in _rows(conn, "SELECT * FROM hcpcs_code WHERE release_id = :r ORDER BY kind, code", r=release_id):
        category = hcpcs_category(row["code"], row["kind"])
        listed = lcds.get(row["code"], [])
        heading = f"HCPCS {row['code']}"
        body = hcpcs_document_text(row, category, listed, counter=counter, max_tokens=_code_budget(counter, heading))
        drafts.append(DocumentDraft(
            source="hcpcs", key=row["code"], title=row["long_description"] or row["short_description"] or row["code"],
            sections=[Section(heading=heading, text=body)], embedding_text=hcpcs_embedding_text(row),
            effective_date=row["action_effective_date"] or row["code_added_date"],
            termination_date=row["termination_date"],
            metadata={"kind": row["kind"], "category": category.section, "subcategory": category.category,
                      "betos": row["betos_code"], "coverage_code": row["coverage_code"],
                      "lcds": [lcd_id for lcd_id, _ in listed]},
        ))
    return drafts


def icd10cm_drafts(conn: Connection, release_id: int, counter: TokenCounter) -> list[DocumentDraft]:
    """One document per ICD-10-CM code with its chapter, section and parents' descriptions."""
    chapters = {r["chapter"]: r["description"] for r in
                _rows(conn, "SELECT chapter, description FROM icd10cm_chapter WHERE release_id = :r", r=release_id)}
    sections = {r["section_id"]: r["description"] for r in
                _rows(conn, "SELECT section_id, description FROM icd10cm_section WHERE release_id = :r", r=release_id)}
    codes = _rows(conn, "SELECT * FROM icd10cm_code WHERE release_id = :r ORDER BY tabular_order", r=release_id)
    by_code = {row["code"]: row for row in codes}
    drafts = []
    for row in codes:
        parents, parent = [], row["parent_code"]
        while parent in by_code:
            parents.insert(0, by_code[parent]["description"])
            parent = by_code[parent]["parent_code"]
        heading = f"ICD-10-CM {row['code']}"
        definer = by_code.get(row["seven_chr_def_from"] or "")
        body = icd10cm_document_text(row, chapters.get(row["chapter"], ""), sections.get(row["section_id"], ""),
                                     parents, seventh_characters=definer["seven_chr_def"] if definer else None,
                                     counter=counter, max_tokens=_code_budget(counter, heading))
        drafts.append(DocumentDraft(
            source="icd10cm", key=row["code"], title=row["description"],
            sections=[Section(heading=heading, text=body)],
            metadata={"billable": row["billable"], "parent": row["parent_code"], "chapter": row["chapter"],
                      "section": row["section_id"]},
        ))
    return drafts


def _lcd_context(conn: Connection, release_id: int) -> dict[int, dict[str, Any]]:
    """Per LCD id (its newest version in the export): contractors, states, HCPCS codes, code-group notes, NCDs."""
    lcds: dict[int, dict[str, Any]] = defaultdict(lambda: {
        "version": 0, "contractors": [], "states": set(), "codes": [], "groups": [], "ncds": []})
    for row in _rows(conn, """
        SELECT x.lcd_id, max(x.lcd_version) AS version, c.contractor_bus_name AS name, c.contractor_number AS number,
               t.description AS type, array_remove(array_agg(DISTINCT s.state_abbrev), NULL) AS states
        FROM mcd_lcd_x_contractor x
        JOIN mcd_contractor c USING (release_id, contractor_id, contractor_type_id, contractor_version)
        LEFT JOIN mcd_contractor_type_lookup t USING (release_id, contractor_type_id)
        LEFT JOIN mcd_contractor_jurisdiction j USING (release_id, contractor_id, contractor_type_id,
                                                       contractor_version)
        LEFT JOIN mcd_state_lookup s ON s.release_id = j.release_id AND s.state_id = j.state_id
        WHERE x.release_id = :r
        GROUP BY x.lcd_id, c.contractor_bus_name, c.contractor_number, t.description
        ORDER BY x.lcd_id, c.contractor_number""", r=release_id):
        lcd = lcds[row["lcd_id"]]
        lcd["version"] = max(lcd["version"], row["version"])
        lcd["contractors"].append({"name": row["name"], "number": row["number"], "type": row["type"]})
        lcd["states"].update(row["states"])
    for row in _rows(conn, """
        SELECT DISTINCT lcd_id, hcpc_code_id AS code, long_description FROM mcd_lcd_x_hcpc_code
        WHERE release_id = :r ORDER BY lcd_id, code""", r=release_id):
        lcds[row["lcd_id"]]["codes"].append((row["code"], row["long_description"] or ""))
    for row in _rows(conn, """
        SELECT lcd_id, hcpc_code_group, paragraph FROM mcd_lcd_x_hcpc_code_group
        WHERE release_id = :r ORDER BY lcd_id, hcpc_code_group""", r=release_id):
        lcds[row["lcd_id"]]["groups"].append(row["paragraph"] or "")
    for row in _rows(conn, """
        SELECT DISTINCT x.lcd_id, n.section, n.title FROM mcd_lcd_related_ncd_documents x
        JOIN ncd n ON n.release_id = x.release_id AND n.ncd_id = x.r_ncd_id AND n.is_current
        WHERE x.release_id = :r ORDER BY x.lcd_id, n.section""", r=release_id):
        lcds[row["lcd_id"]]["ncds"].append(f"NCD {row['section']} {row['title']}")
    return lcds


def mcd_drafts(conn: Connection, release_id: int, counter: TokenCounter) -> list[DocumentDraft]:
    """NCD documents (every version, sections per narrative) and LCD / Article documents when present."""
    from medrag.sources.htmltext import html_to_text

    drafts = []
    for row in _rows(conn, "SELECT * FROM ncd WHERE release_id = :r ORDER BY section, version", r=release_id):
        prefix = f"NCD {row['section']} {row['title']}"
        drafts.append(DocumentDraft(
            source="ncd", key=row["section"], version=str(row["version"]), title=row["title"],
            url=NCD_URL.format(ncd_id=row["ncd_id"], version=row["version"]),
            effective_date=row["effective_date"], termination_date=row["termination_date"],
            sections=[Section(heading=f"{prefix} > {heading}", text=row[column], section=heading)
                      for column, heading in NCD_SECTIONS if row[column]],
            metadata={"ncd_id": row["ncd_id"], "coverage_level": row["coverage_level"], "authority": "national",
                      "is_current_version": row["is_current"]},
        ))
    lcd_text = {r["lcd_id"]: r for r in _rows(conn, """
        SELECT DISTINCT ON (lcd_id) * FROM mcd_lcd WHERE release_id = :r ORDER BY lcd_id, lcd_version DESC""",
        r=release_id)}
    for lcd_id, context in sorted(_lcd_context(conn, release_id).items()):
        full = lcd_text.get(lcd_id)
        key = f"L{lcd_id}"
        real_title = (full or {}).get("title")
        title = real_title or f"LCD {key}"
        prefix = f"LCD {key} {real_title}" if real_title else f"LCD {key}"
        contractors = "; ".join(f"{c['name']} ({c['type']} {c['number']})" for c in context["contractors"])
        states = sorted(context["states"])
        sections = []
        if contractors:
            sections.append(Section(f"{prefix} > Contractors and jurisdictions",
                                    f"Contractors: {contractors}.\nStates: {', '.join(states)}.", "Contractors"))
        if context["codes"]:
            listing = "\n".join(f"- {code} {description}".rstrip() for code, description in context["codes"])
            sections.append(Section(f"{prefix} > HCPCS codes", listing, "HCPCS codes"))
        for paragraph in context["groups"]:
            if paragraph.strip():
                sections.append(Section(f"{prefix} > Code group notes", html_to_text(paragraph), "Codes"))
        if context["ncds"]:
            sections.append(Section(f"{prefix} > Related NCDs", "\n".join(context["ncds"]), "Related NCDs"))
        for column, heading in LCD_SECTIONS if full else ():
            if full.get(column):
                sections.append(Section(f"{prefix} > {heading}", html_to_text(full[column]), heading))
        if not sections:
            continue
        drafts.append(DocumentDraft(
            source="lcd", key=key, version=str((full or {}).get("lcd_version") or context["version"]), title=title,
            url=LCD_URL.format(lcd_id=lcd_id), sections=sections,
            effective_date=_day((full or {}).get("rev_eff_date") or (full or {}).get("orig_det_eff_date")),
            termination_date=_day((full or {}).get("rev_end_date") or (full or {}).get("date_retired")),
            metadata={"lcd_id": lcd_id, "authority": "local", "states": states,
                      "contractors": [c["number"] for c in context["contractors"]],
                      "contractor_names": [c["name"] for c in context["contractors"]],
                      "hcpcs": [code for code, _ in context["codes"]]},
        ))
    for row in _rows(conn, """
        SELECT DISTINCT ON (article_id) * FROM mcd_article WHERE release_id = :r
        ORDER BY article_id, article_version DESC""", r=release_id):
        key = f"A{row['article_id']}"
        sections = [Section(f"Article {key} {row['title']} > {heading}", html_to_text(row[column]), heading)
                    for column, heading in ARTICLE_SECTIONS if row.get(column)]
        if sections:
            drafts.append(DocumentDraft(
                source="article", key=key, version=str(row["article_version"]), title=row["title"],
                url=ARTICLE_URL.format(article_id=row["article_id"]), sections=sections,
                effective_date=_day(row["article_eff_date"]), termination_date=_day(row["article_end_date"]),
                metadata={"article_id": row["article_id"], "authority": "local"},
            ))
    return drafts


def iom_drafts(conn: Connection, release_id: int, counter: TokenCounter) -> list[DocumentDraft]:
    """One document per IOM section, keyed manual/chapter/section (e.g. 100-02/15/110), with its page range."""
    from medrag.sources.iom.release import chapter_from_file_name

    chapter_urls = {}
    for row in _rows(conn, "SELECT url FROM raw_file WHERE release_id = :r", r=release_id):
        try:
            chapter_urls[chapter_from_file_name(row["url"])[:2]] = row["url"]
        except Exception:  # noqa: BLE001 - a file that is not a chapter PDF has no sections to link
            continue
    drafts = []
    for row in _rows(conn, "SELECT * FROM iom_section WHERE release_id = :r "
                           "ORDER BY manual, chapter, page_start, section_number", r=release_id):
        if not row["text"]:
            continue
        heading = f"IOM {row['manual']} " + " > ".join(row["heading_path"] or [row["title"] or ""])
        drafts.append(DocumentDraft(
            source="iom", key=f"{row['manual']}/{row['chapter']}/{row['section_number']}",
            title=f"{row['section_number']} - {row['title']}", url=chapter_urls.get((row["manual"], row["chapter"])),
            sections=[Section(heading, row["text"], row["section_number"], row["page_start"], row["page_end"])],
            metadata={"manual": row["manual"], "chapter": row["chapter"], "section": row["section_number"],
                      "authority": "manual"},
        ))
    return drafts


BUILDERS: dict[str, Callable[[Connection, int, TokenCounter], list[DocumentDraft]]] = {
    "hcpcs": hcpcs_drafts, "icd10cm": icd10cm_drafts, "mcd": mcd_drafts, "iom": iom_drafts,
}


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
                 is_current: bool) -> int:
    """Chunk every draft and COPY documents + chunks (ids taken from the sequence up front); returns chunks."""
    if not drafts:
        return 0
    ids = conn.execute(text("SELECT nextval('document_id_seq') FROM generate_series(1, :n)"),
                       {"n": len(drafts)}).scalars().all()
    documents, chunks = [], []
    for document_id, draft in zip(ids, drafts, strict=True):
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


# A rebuild (--force, or a new document format) keeps the vectors of the chunks whose content hash it writes again:
# only what changed goes back to the model (a forced ICD-10-CM rebuild would otherwise re-embed 47k chunks).
_KEEP_VECTORS = """
CREATE TEMP TABLE kept_vector ON COMMIT DROP AS
SELECT DISTINCT ON (c.content_hash) c.content_hash, c.embedding
FROM chunk c JOIN document d ON d.id = c.document_id
WHERE d.release_id = :r AND c.embedding IS NOT NULL
"""
_RESTORE_VECTORS = """
UPDATE chunk SET embedding = kept_vector.embedding
FROM kept_vector, document d
WHERE chunk.content_hash = kept_vector.content_hash AND d.id = chunk.document_id AND d.release_id = :r
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
        if existing and release.documents_format == DOCUMENT_FORMATS[source] and not force:
            stats.skipped = True
        else:
            conn.execute(text(_KEEP_VECTORS), {"r": release.id})
            conn.execute(text("DELETE FROM document WHERE release_id = :r"), {"r": release.id})
            counter = counter or default_token_counter()
            drafts = BUILDERS[source](conn, release.id, counter)
            stats.chunks = write_drafts(conn, release.id, drafts, counter, release.is_current)
            conn.execute(text(_RESTORE_VECTORS), {"r": release.id})
            conn.execute(text("UPDATE release SET documents_format = :f WHERE id = :r"),
                         {"f": DOCUMENT_FORMATS[source], "r": release.id})
            for draft in drafts:
                stats.documents[draft.source] = stats.documents.get(draft.source, 0) + 1
            # a release without documents (an IOM release whose PDFs hold no sections) is rebuilt every time
            documents_changed = bool(existing or drafts)
        currency_changed = sync_current_documents(conn)
        sync_synonyms(conn)
        if documents_changed or currency_changed:
            refresh_term_counts(conn)
    stats.seconds = time.perf_counter() - started
    return stats
