"""HCPCS documents: one per code, enriched with its category and the current LCDs that list it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection

from medrag.core.synonyms import expand_abbreviations
from medrag.sources.drafts import DocumentDraft, Part, Section, TokenCounting, code_budget, fit_lines, rows
from medrag.sources.hcpcs.categories import HcpcsCategory, hcpcs_category


def build_drafts(conn: Connection, release_id: int, counter: TokenCounting) -> list[DocumentDraft]:
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


def hcpcs_document_text(
    row: Mapping[str, Any],
    category: HcpcsCategory,
    lcds: Sequence[tuple[str, str]],
    *,
    counter: TokenCounting,
    max_tokens: int | None = None,
) -> str:
    """Embeddable text of one HCPCS record: descriptions, category, expanded abbreviations, LCDs listing it."""
    max_tokens = counter.budget() if max_tokens is None else max_tokens
    code = row["code"]
    long_description = (row.get("long_description") or "").strip()
    short_description = (row.get("short_description") or "").strip()
    noun = "HCPCS modifier" if row.get("kind") == "modifier" else "HCPCS"
    lines: list[str | Part] = [f"{noun} {code}: {long_description or short_description}"]
    if row.get("termination_date"):
        lines.append(f"Terminated: {row['termination_date']}")
    described = f"{long_description}\n{short_description}"
    if short_description and short_description.lower() != long_description.lower():
        lines.append(Part("Short description", [short_description], priority=3))
    lines.append(Part("Category", [category.text], priority=4))
    abbreviations = [f"{abbreviation} = {expansion}" for abbreviation, expansion in expand_abbreviations(described)]
    lines.append(Part("Abbreviations", abbreviations, priority=2))
    listed = list(dict.fromkeys(" ".join(part for part in (lcd_id, title) if part) for lcd_id, title in lcds))
    listed = [entry for entry in listed if entry]
    lines.append(Part("Listed in LCDs", listed, priority=1, count_dropped=True))
    return fit_lines(lines, counter, max_tokens)


def hcpcs_embedding_text(row: Mapping[str, Any]) -> str:
    """What an HCPCS code's vector is computed from: its long and short descriptions, the item in its own words."""
    # The category path and the LCD titles of hcpcs_document_text are words a lay description of the item never
    # says; embedded with them, "standard manual wheelchair" found K0001 180th among the HCPCS vectors, without
    # them first (plain-words HCPCS questions, HCPCS vectors alone: dev MRR 0.49 -> 0.68, holdout 0.70 -> 0.67).
    long_description = (row.get("long_description") or "").strip()
    short_description = (row.get("short_description") or "").strip()
    if not long_description or short_description.lower() == long_description.lower():
        return long_description or short_description or row["code"]
    return f"{long_description}\n{short_description}" if short_description else long_description
