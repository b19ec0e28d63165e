"""HCPCS documents: one per code, enriched with its category and the current LCDs that list it."""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import Connection

from medrag.index.chunking import Section, TokenCounter
from medrag.index.documents import DocumentDraft, code_budget, rows
from medrag.index.enrichment import hcpcs_category, hcpcs_document_text, hcpcs_embedding_text


def build_drafts(conn: Connection, release_id: int, counter: TokenCounter) -> list[DocumentDraft]:
    """One document per HCPCS code, enriched with its category and the current LCDs that list it."""
    lcds: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for row in rows(
        conn,
        "SELECT DISTINCT x.hcpc_code_id AS code, x.lcd_id, l.title FROM mcd_lcd_x_hcpc_code x "
        "JOIN release r ON r.id = x.release_id AND r.is_current "
        "LEFT JOIN mcd_lcd l ON l.release_id = x.release_id AND l.lcd_id = x.lcd_id "
        "ORDER BY x.lcd_id",
    ):
        lcds[row["code"]].append((f"L{row['lcd_id']}", row["title"] or ""))
    drafts = []
    for row in rows(conn, "SELECT * FROM hcpcs_code WHERE release_id = :r ORDER BY kind, code", r=release_id):
        category = hcpcs_category(row["code"], row["kind"])
        listed = lcds.get(row["code"], [])
        heading = f"HCPCS {row['code']}"
        body = hcpcs_document_text(row, category, listed, counter=counter, max_tokens=code_budget(counter, heading))
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
