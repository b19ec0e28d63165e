"""What the code finder reads around its search: the loaded releases, whether code documents have vectors, and
the code systems' document sources.

The lookups themselves are SQL functions (medrag_code_*_leg in sql/finder_candidates.sql), which the
finder's candidates stage runs round by round; their limits are in medrag_settings() (medrag/core/tuning.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, text

from medrag.codes.classify import HCPCS, ICD10CM

DOCUMENT_SOURCE = {ICD10CM: "icd10cm", HCPCS: "hcpcs"}


@dataclass(frozen=True)
class CodeRelease:
    """A loaded release of one code system."""

    system: str
    label: str
    release_id: int
    is_current: bool


def load_releases(conn: Connection) -> dict[str, list[CodeRelease]]:
    """Loaded releases of each code system, current first, then newest label first."""
    rows = conn.execute(text(
        "SELECT source, label, id, is_current FROM medrag_usable_release "
        "WHERE source IN ('icd10cm', 'hcpcs') "
        "ORDER BY source, is_current DESC, label DESC"
    )).all()
    systems = {source: system for system, source in DOCUMENT_SOURCE.items()}
    releases: dict[str, list[CodeRelease]] = {ICD10CM: [], HCPCS: []}
    for row in rows:
        releases[systems[row.source]].append(CodeRelease(systems[row.source], row.label, row.id, row.is_current))
    return releases


# the rule the SQL finder applies too (sql/finder.sql)
_HAS_EMBEDDINGS = text("SELECT medrag_has_embeddings(:source)")


def has_code_embeddings(engine: Engine, system: str) -> bool:
    """Whether the current code documents of a system have vectors (they may be left unembedded)."""
    with engine.connect() as conn:
        return bool(conn.execute(_HAS_EMBEDDINGS, {"source": DOCUMENT_SOURCE[system]}).scalar())


def vector_literal(values: Sequence[float]) -> str:
    """pgvector's text form of a vector."""
    return "[" + ",".join(f"{value:.7g}" for value in values) + "]"
