"""IOM documents: one per manual section, keyed manual/chapter/section (e.g. 100-02/15/110)."""

from __future__ import annotations

from sqlalchemy import Connection

from medrag.sources.drafts import DocumentDraft, Section, TokenCounting, rows


def build_drafts(conn: Connection, release_id: int, counter: TokenCounting) -> list[DocumentDraft]:
    """One document per IOM section, keyed manual/chapter/section (e.g. 100-02/15/110), with its page range."""
    from medrag.sources.iom.release import chapter_from_file_name

    chapter_urls = {}
    for row in rows(conn, "SELECT url FROM raw_file WHERE release_id = :r", r=release_id):
        try:
            chapter_urls[chapter_from_file_name(row["url"])[:2]] = row["url"]
        except Exception:  # noqa: BLE001 - a file that is not a chapter PDF has no sections to link
            continue
    drafts = []
    for row in rows(conn, "SELECT * FROM iom_section WHERE release_id = :r "
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
