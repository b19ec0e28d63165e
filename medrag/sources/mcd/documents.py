"""MCD documents: NCDs (every version, a section per narrative), LCDs and Articles when the export has them."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import Connection

from medrag.sources.drafts import DocumentDraft, Section, TokenCounting, day, rows

NCD_URL = "https://www.cms.gov/medicare-coverage-database/view/ncd.aspx?NCDId={ncd_id}&ncdver={version}"
LCD_URL = "https://www.cms.gov/medicare-coverage-database/view/lcd.aspx?LCDId={lcd_id}"
ARTICLE_URL = "https://www.cms.gov/medicare-coverage-database/view/article.aspx?articleId={article_id}"
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
KEYWORDS_HEADING = "Keywords"

def _lcd_context(conn: Connection, release_id: int) -> dict[int, dict[str, Any]]:
    """Per LCD id (its newest version in the export): contractors, states, HCPCS codes, code-group notes, NCDs."""
    lcds: dict[int, dict[str, Any]] = defaultdict(lambda: {
        "version": 0, "contractors": [], "states": set(), "codes": [], "groups": [], "ncds": []})
    for row in rows(conn, """
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
    for row in rows(conn, """
        SELECT DISTINCT lcd_id, hcpc_code_id AS code, long_description FROM mcd_lcd_x_hcpc_code
        WHERE release_id = :r ORDER BY lcd_id, code""", r=release_id):
        lcds[row["lcd_id"]]["codes"].append((row["code"], row["long_description"] or ""))
    for row in rows(conn, """
        SELECT lcd_id, hcpc_code_group, paragraph FROM mcd_lcd_x_hcpc_code_group
        WHERE release_id = :r ORDER BY lcd_id, hcpc_code_group""", r=release_id):
        lcds[row["lcd_id"]]["groups"].append(row["paragraph"] or "")
    for row in rows(conn, """
        SELECT DISTINCT x.lcd_id, n.section, n.title FROM mcd_lcd_related_ncd_documents x
        JOIN ncd n ON n.release_id = x.release_id AND n.ncd_id = x.r_ncd_id AND n.is_current
        WHERE x.release_id = :r ORDER BY x.lcd_id, n.section""", r=release_id):
        lcds[row["lcd_id"]]["ncds"].append(f"NCD {row['section']} {row['title']}")
    return lcds


def _keywords(prefix: str, keywords: str | None) -> list[Section]:
    """CMS's curated search words for a determination ("Phacoemulsification cataract surgery" for NCD 80.10) as a
    section of their own: full text and the embedding both see them."""
    if not keywords or not keywords.strip():
        return []
    return [Section(heading=f"{prefix} > {KEYWORDS_HEADING}", text=keywords.strip(), section=KEYWORDS_HEADING)]


def build_drafts(conn: Connection, release_id: int, counter: TokenCounting) -> list[DocumentDraft]:
    """NCD documents (every version, sections per narrative) and LCD / Article documents when present."""
    from medrag.sources.htmltext import html_to_text

    drafts = []
    for row in rows(conn, "SELECT * FROM ncd WHERE release_id = :r ORDER BY section, version", r=release_id):
        prefix = f"NCD {row['section']} {row['title']}"
        drafts.append(DocumentDraft(
            source="ncd", key=row["section"], version=str(row["version"]), title=row["title"],
            url=NCD_URL.format(ncd_id=row["ncd_id"], version=row["version"]),
            effective_date=row["effective_date"], termination_date=row["termination_date"],
            sections=_keywords(prefix, row.get("keywords"))
            + [Section(heading=f"{prefix} > {heading}", text=row[column], section=heading)
               for column, heading in NCD_SECTIONS if row[column]],
            metadata={"ncd_id": row["ncd_id"], "coverage_level": row["coverage_level"], "authority": "national",
                      "is_current_version": row["is_current"]},
        ))
    lcd_text = {r["lcd_id"]: r for r in rows(conn, """
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
        sections = _keywords(prefix, (full or {}).get("keywords"))
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
            effective_date=day((full or {}).get("rev_eff_date") or (full or {}).get("orig_det_eff_date")),
            termination_date=day((full or {}).get("rev_end_date") or (full or {}).get("date_retired")),
            metadata={"lcd_id": lcd_id, "authority": "local", "states": states,
                      "contractors": [c["number"] for c in context["contractors"]],
                      "contractor_names": [c["name"] for c in context["contractors"]],
                      "hcpcs": [code for code, _ in context["codes"]]},
        ))
    for row in rows(conn, """
        SELECT DISTINCT ON (article_id) * FROM mcd_article WHERE release_id = :r
        ORDER BY article_id, article_version DESC""", r=release_id):
        key = f"A{row['article_id']}"
        sections = [Section(f"Article {key} {row['title']} > {heading}", html_to_text(row[column]), heading)
                    for column, heading in ARTICLE_SECTIONS if row.get(column)]
        if sections:
            drafts.append(DocumentDraft(
                source="article", key=key, version=str(row["article_version"]), title=row["title"],
                url=ARTICLE_URL.format(article_id=row["article_id"]), sections=sections,
                effective_date=day(row["article_eff_date"]), termination_date=day(row["article_end_date"]),
                metadata={"article_id": row["article_id"], "authority": "local"},
            ))
    return drafts
