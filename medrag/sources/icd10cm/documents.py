"""ICD-10-CM documents: one per code with its chapter, section and parents' descriptions."""

from __future__ import annotations

from sqlalchemy import Connection

from medrag.index.chunking import Section, TokenCounter
from medrag.index.documents import DocumentDraft, code_budget, rows
from medrag.index.enrichment import icd10cm_document_text


def build_drafts(conn: Connection, release_id: int, counter: TokenCounter) -> list[DocumentDraft]:
    """One document per ICD-10-CM code with its chapter, section and parents' descriptions."""
    chapters = {r["chapter"]: r["description"] for r in
                rows(conn, "SELECT chapter, description FROM icd10cm_chapter WHERE release_id = :r", r=release_id)}
    sections = {r["section_id"]: r["description"] for r in
                rows(conn, "SELECT section_id, description FROM icd10cm_section WHERE release_id = :r", r=release_id)}
    codes = rows(conn, "SELECT * FROM icd10cm_code WHERE release_id = :r ORDER BY tabular_order", r=release_id)
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
                                     counter=counter, max_tokens=code_budget(counter, heading))
        drafts.append(DocumentDraft(
            source="icd10cm", key=row["code"], title=row["description"],
            sections=[Section(heading=heading, text=body)],
            metadata={"billable": row["billable"], "parent": row["parent_code"], "chapter": row["chapter"],
                      "section": row["section_id"]},
        ))
    return drafts
