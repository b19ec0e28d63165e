"""Each registered source's code, imported plainly: its release handling and its document builder.

The registry (medrag.core.registry) says which sources exist; this module names the package of each, so what
runs a refresh reaches a source's parsers through ordinary imports. tests/test_registry.py checks that both list
the same sources.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from medrag.core.registry import spec
from medrag.sources.common import Source
from medrag.sources.hcpcs import changes as hcpcs_changes
from medrag.sources.hcpcs import documents as hcpcs_documents
from medrag.sources.hcpcs import release as hcpcs_release
from medrag.sources.icd10cm import changes as icd10cm_changes
from medrag.sources.icd10cm import documents as icd10cm_documents
from medrag.sources.icd10cm import release as icd10cm_release
from medrag.sources.iom import changes as iom_changes
from medrag.sources.iom import documents as iom_documents
from medrag.sources.iom import release as iom_release
from medrag.sources.mcd import changes as mcd_changes
from medrag.sources.mcd import documents as mcd_documents
from medrag.sources.mcd import release as mcd_release

RELEASES: dict[str, Source] = {
    "mcd": mcd_release.SOURCE,
    "hcpcs": hcpcs_release.SOURCE,
    "icd10cm": icd10cm_release.SOURCE,
    "iom": iom_release.SOURCE,
}
DRAFT_BUILDERS: dict[str, Callable[..., list[Any]]] = {
    "mcd": mcd_documents.build_drafts,
    "hcpcs": hcpcs_documents.build_drafts,
    "icd10cm": icd10cm_documents.build_drafts,
    "iom": iom_documents.build_drafts,
}

# Each source's change finder (medrag.sources.changes.ChangeFinder): FORMAT, between(), and within() where an export
# dates its own changes.
CHANGE_FINDERS: dict[str, ModuleType] = {
    "mcd": mcd_changes,
    "hcpcs": hcpcs_changes,
    "icd10cm": icd10cm_changes,
    "iom": iom_changes,
}


def release_handler(name: str) -> Source:
    """The source's release handling (discover, tables, load); an unknown name is a MedragError naming the choices."""
    return RELEASES[spec(name).name]


def drafts_builder(name: str) -> Callable[..., list[Any]]:
    """The function that turns a loaded release's tables into document drafts."""
    return DRAFT_BUILDERS[spec(name).name]


def change_finder(name: str) -> ModuleType:
    """The module that finds what changed between two releases of the source (and within one, where it can)."""
    return CHANGE_FINDERS[spec(name).name]
