"""A digest written for people: markdown (the Prefect artifact, `--markdown`), CSV rows, and a short text summary."""

from __future__ import annotations

import csv
import io
from typing import Any

from medrag.changes.digest import ChangeSetDigest, Digest

CSV_COLUMNS = ("source", "from_label", "to_label", "item_kind", "item", "change", "field", "old_value", "new_value",
               "effective_date", "title", "codes", "your_codes")
# What a coder calls each kind of item.
ITEM_NAMES = {"hcpcs": "HCPCS", "icd10cm": "ICD-10-CM", "ncd": "NCD", "lcd": "LCD", "iom": "IOM"}
SOURCE_NAMES = {"hcpcs": "HCPCS Level II", "icd10cm": "ICD-10-CM", "mcd": "Medicare Coverage Database",
                "iom": "Internet-Only Manuals"}


def set_heading(change_set: ChangeSetDigest) -> str:
    """'HCPCS Level II: 2019 → 2025Q1', or for an export's own dates 'Medicare Coverage Database: 2026Q4, dated
    since 2025-04-01'."""
    name = SOURCE_NAMES.get(change_set.source, change_set.source)
    if change_set.from_label is None:
        since = f", dated on or after {change_set.since}" if change_set.since else ""
        return f"{name}: what export {change_set.to_label} dates itself{since}"
    since = f" (changes dated on or after {change_set.since})" if change_set.since else ""
    return f"{name}: {change_set.from_label} → {change_set.to_label}{since}"


def counts_line(counts: dict[str, int]) -> str:
    """'added 1,842, terminated 650' (or 'no changes')."""
    return ", ".join(f"{change.replace('_', ' ')} {count:,}" for change, count in counts.items()) or "no changes"


def _what(change: dict[str, Any]) -> str:
    """One change in words: the values that changed, the sentences gained and lost, the revision entry."""
    detail = change.get("detail") or {}
    parts = []
    if change.get("field") and (change.get("old_value") or change.get("new_value")):
        parts.append(f"{change['field']}: {change.get('old_value') or '—'} → {change.get('new_value') or '—'}")
    if change["item_kind"] == "lcd" and change["codes"]:
        parts.append("HCPCS " + ", ".join(change["codes"]))
    for key, sign in (("sentences_added", "+"), ("sentences_removed", "−")):
        parts += [f'{sign} "{sentence}"' for sentence in detail.get(key, [])]
    if detail.get("revision"):
        parts.append(f"revision history: {detail['revision']}")
    if change.get("your_codes"):
        parts.append("your codes: " + ", ".join(f"{item['code']} ({item['relation']})"
                                                for item in change["your_codes"]))
    return "; ".join(parts)


def _cell(value: object) -> str:
    return str(value if value is not None else "").replace("|", "\\|").replace("\n", " ")


def markdown(digest: Digest, limit: int = 25) -> str:
    """The digest as markdown: per change set a counts line, notes, then up to `limit` changes of each kind."""
    title = "What changed" + (f" for {len(digest.codes)} code(s)" if digest.codes is not None else "")
    out = [f"# {title}", ""]
    for change_set in digest.sets:
        out += [f"## {set_heading(change_set)}", "", counts_line(change_set.counts), ""]
        out += [f"> {note}" for note in change_set.notes] + ([""] if change_set.notes else [])
        by_change: dict[str, list[dict[str, Any]]] = {}
        for change in change_set.changes:
            by_change.setdefault(change["change"], []).append(change)
        for name, changes in by_change.items():
            out += [f"### {name.replace('_', ' ')} ({len(changes):,})", "",
                    "| item | title | effective | what changed |", "| --- | --- | --- | --- |"]
            for change in changes[:limit]:
                item = f"{ITEM_NAMES.get(change['item_kind'], change['item_kind'])} {change['item']}"
                out.append(f"| {_cell(item)} | {_cell(change['title'])} | {_cell(change['effective_date'])} | "
                           f"{_cell(_what(change))} |")
            if len(changes) > limit:
                out.append(f"| … and {len(changes) - limit:,} more | | | |")
            out.append("")
    if digest.gaps:
        out += ["## Not compared", ""] + [f"- {gap['message']}" for gap in digest.gaps] + [""]
    return "\n".join(out)


def csv_text(digest: Digest) -> str:
    """Every change as one CSV row (codes and your codes separated by ';')."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for change_set in digest.sets:
        for change in change_set.changes:
            writer.writerow({**change, "source": change_set.source, "from_label": change_set.from_label or "",
                             "to_label": change_set.to_label, "codes": ";".join(change["codes"]),
                             "your_codes": ";".join(f"{item['code']}:{item['relation']}"
                                                    for item in change.get("your_codes", []))})
    return buffer.getvalue()


def summary_text(digest: Digest, shown: int = 10) -> str:
    """Per change set: heading, counts, notes and its first `shown` changes; then what could not be compared."""
    out = []
    for change_set in digest.sets:
        out += [set_heading(change_set), f"  {counts_line(change_set.counts)}"]
        out += [f"  note: {note}" for note in change_set.notes]
        for change in change_set.changes[:shown]:
            item = f"{ITEM_NAMES.get(change['item_kind'], change['item_kind'])} {change['item']}"
            what = _what(change)
            out.append(f"  {change['change']:<14} {item:<22} {(change['title'] or '')[:60]}"
                       + (f"  [{what[:160]}]" if what else ""))
        if len(change_set.changes) > shown:
            out.append(f"  ... and {len(change_set.changes) - shown:,} more (--markdown, --csv or --json list all)")
    out += [gap["message"] for gap in digest.gaps]
    return "\n".join(out)
