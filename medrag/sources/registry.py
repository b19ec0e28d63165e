"""The one list of CMS sources, in refresh order: what needs to know which sources or document kinds exist asks here.

A source is a package `medrag.sources.<name>` whose `__init__` declares `SPEC` (a SourceSpec), with `release.py`
(SOURCE: discover, tables, load) and `documents.py` (build_drafts). Adding a source is that package, its name below,
one migration for its tables (and a vector index per new document kind) and its line in pyproject's packages.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from medrag.core.errors import MedragError

if TYPE_CHECKING:
    from medrag.sources.common import Source

# MCD first: HCPCS documents name the current LCDs that list each code.
SOURCE_NAMES: tuple[str, ...] = ("mcd", "hcpcs", "icd10cm", "iom")

CODE_GROUP = "code"
POLICY_GROUP = "policy"


@dataclass(frozen=True)
class DocumentKind:
    """A kind of document (document.source): its search group, how people name it, and its weight as authority."""

    name: str
    group: str  # CODE_GROUP (code sets) or POLICY_GROUP (determinations, manuals): ranked apart by the search
    label: str  # "NCD" in "NCD 240.2": how an answer's source list names the document
    authority_rank: int  # lower outranks higher: an answer prefers an NCD to a manual, a manual to an LCD


@dataclass(frozen=True)
class ReleaseDiff:
    """What `medrag releases diff` compares between two releases of a code set: a table's rows by key."""

    table: str
    key: str
    compared: tuple[str, ...]


@dataclass(frozen=True)
class SourceSpec:
    """What a source package declares: its name, the document kinds it builds, and how its documents are built.

    documents_format is a number raised whenever the source's documents are built differently (their text or what
    they are embedded from): a release whose documents an older format built is rebuilt by the next refresh.
    """

    name: str
    kinds: tuple[DocumentKind, ...]
    page_url: str  # the CMS page its releases are discovered from (MEDRAG_<NAME>_URL overrides it)
    documents_format: int = 1
    diff: ReleaseDiff | None = None  # code sets: what changes between releases

    def release(self) -> Source:
        """The source's release handling (discover, tables, load): imported on first use, it pulls in parsers."""
        return importlib.import_module(f"medrag.sources.{self.name}.release").SOURCE

    def drafts_builder(self) -> Callable[..., list[Any]]:
        """The function that turns a loaded release's tables into document drafts."""
        return importlib.import_module(f"medrag.sources.{self.name}.documents").build_drafts


@cache
def spec(name: str) -> SourceSpec:
    """The registered source called `name`; any other name is a MedragError naming the choices."""
    if name not in SOURCE_NAMES:
        raise MedragError(f"unknown source {name!r}; choose from {', '.join(SOURCE_NAMES)}")
    return importlib.import_module(f"medrag.sources.{name}").SPEC


def specs() -> tuple[SourceSpec, ...]:
    """Every registered source, in refresh order."""
    return tuple(spec(name) for name in SOURCE_NAMES)


def document_kinds() -> tuple[DocumentKind, ...]:
    """Every kind of document the sources build, source by source in refresh order."""
    return tuple(kind for source in specs() for kind in source.kinds)


def document_kind_names() -> tuple[str, ...]:
    """The values document.source (and the search's source filter) can take."""
    return tuple(kind.name for kind in document_kinds())


def code_kind_names() -> tuple[str, ...]:
    """The document kinds that are code sets (the search's code group)."""
    return tuple(kind.name for kind in document_kinds() if kind.group == CODE_GROUP)
