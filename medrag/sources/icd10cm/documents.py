"""ICD-10-CM documents: one per code with its chapter, section and parents' descriptions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection

from medrag.sources.drafts import DocumentDraft, Part, Section, TokenCounting, code_budget, fit_lines, non_empty, rows


def build_drafts(conn: Connection, release_id: int, counter: TokenCounting) -> list[DocumentDraft]:
    """One document per ICD-10-CM code with its chapter, section and parents' descriptions."""
    chapters = {r["chapter"]: r["description"] for r in
                rows(conn, "SELECT chapter, description FROM icd10cm_chapter WHERE release_id = :r", r=release_id)}
    sections = {r["section_id"]: r["description"] for r in
                rows(conn, "SELECT section_id, description FROM icd10cm_section WHERE release_id = :r", r=release_id)}
    # A 7th-character form (T39.1X1A) is its base code's document, which lists the 7th characters.
    codes = rows(conn, "SELECT * FROM icd10cm_code WHERE release_id = :r AND seventh_character IS NULL "
                       "ORDER BY tabular_order", r=release_id)
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


# Instructional notes in the order they are shown, with their trimming priority (lower is dropped first).
_ICD_NOTES: tuple[tuple[str, str, int], ...] = (
    ("inclusion_terms", "Inclusion terms", 9),
    ("includes", "Includes", 8),
    ("notes", "Notes", 4),
    ("code_first", "Code first", 7),
    ("use_additional_code", "Use additional code", 6),
    ("code_also", "Code also", 5),
    ("excludes1", "Excludes1", 2),
    ("excludes2", "Excludes2", 1),
)


def _billable_text(code_row: Mapping[str, Any]) -> str:
    if code_row.get("billable"):
        return "billable"
    if code_row.get("requires_seventh_character"):
        return "not billable without a 7th character"
    return "not billable: a header, code to a more specific child"


def icd10cm_document_text(
    code_row: Mapping[str, Any],
    chapter_title: str,
    section_title: str,
    parent_descriptions: Sequence[str],
    *,
    seventh_characters: Mapping[str, str] | None = None,
    counter: TokenCounting,
    max_tokens: int | None = None,
) -> str:
    """Embeddable text of one ICD-10-CM code: description, billability, parents, chapter, section, notes."""
    max_tokens = counter.budget() if max_tokens is None else max_tokens
    description = code_row["description"]
    lines: list[str | Part] = [f"ICD-10-CM {code_row['code']}: {description} ({_billable_text(code_row)})"]
    parents = non_empty(parent_descriptions)
    if parents:
        lines.append(Part("Hierarchy", [" > ".join([*parents, description])], priority=12))
    chapter = f"Chapter {code_row['chapter']}" if code_row.get("chapter") is not None else "Chapter"
    if chapter_title:
        lines.append(Part(chapter, [chapter_title], priority=11))
    if section_title:
        lines.append(Part("Section", [section_title], priority=10))
    for column, label, priority in _ICD_NOTES:
        lines.append(Part(label, non_empty(code_row.get(column)), priority=priority, count_dropped=True))
    characters = seventh_characters or code_row.get("seven_chr_def") or {}
    if characters:
        meanings = [f"{character} {meaning}" for character, meaning in characters.items()]
        lines.append(Part("7th character", meanings, priority=3))
    return fit_lines(lines, counter, max_tokens)


def icd10cm_parent_descriptions(code: str, codes_by_code: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Descriptions of a code's ancestors, outermost first (E11.621 -> Type 2 diabetes mellitus, ...)."""
    descriptions: list[str] = []
    seen = {code}
    parent = codes_by_code[code].get("parent_code")
    while parent and parent in codes_by_code and parent not in seen:
        seen.add(parent)
        descriptions.append(codes_by_code[parent]["description"])
        parent = codes_by_code[parent].get("parent_code")
    return descriptions[::-1]
