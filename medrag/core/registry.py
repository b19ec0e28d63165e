"""The one list of CMS sources, in refresh order: what needs to know which sources or document kinds exist asks here.

Each entry declares a source's name, the page its releases are discovered from, the document kinds it builds and
how its releases differ. The code of a source is the package `medrag.sources.<name>` (release.py: discover, parse,
load its tables; documents.py: its document drafts), which `medrag.sources.handlers` names once. Adding a source is
its entry below, that package, its line in `medrag.sources.handlers`, one migration for its tables (and a vector
index per new document kind) and its line in pyproject's packages.
"""

from __future__ import annotations

from dataclasses import dataclass

from medrag.core.errors import MedragError

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
    """What a source declares: its name, the document kinds it builds, and how its documents are built.

    documents_format is a number raised whenever the source's documents are built differently (their text or what
    they are embedded from): a release whose documents an older format built is rebuilt by the next refresh.
    """

    name: str
    kinds: tuple[DocumentKind, ...]
    page_url: str  # the CMS page its releases are discovered from (MEDRAG_<NAME>_URL overrides it)
    documents_format: int = 1
    diff: ReleaseDiff | None = None  # code sets: what changes between releases


# MCD first: HCPCS documents name the current LCDs that list each code.
SOURCES: tuple[SourceSpec, ...] = (
    # The Medicare Coverage Database: NCD, LCD and Article CSV exports, one document per determination.
    # documents_format 2: an NCD's (or LCD's) CMS keywords are a section of its document
    SourceSpec(
        "mcd",
        page_url="https://www.cms.gov/medicare-coverage-database/downloads/downloads.aspx",
        kinds=(DocumentKind("ncd", POLICY_GROUP, "NCD", authority_rank=0),
               DocumentKind("lcd", POLICY_GROUP, "LCD", authority_rank=2),
               DocumentKind("article", POLICY_GROUP, "Article", authority_rank=2)),
        documents_format=2,
    ),
    # HCPCS Level II: the quarterly fixed-width release, one document per code.
    # documents_format 2: a code's vector is computed from its descriptions alone (chunk.embedding_text)
    SourceSpec(
        "hcpcs",
        page_url="https://www.cms.gov/medicare/coding-billing/healthcare-common-procedure-system/quarterly-update",
        kinds=(DocumentKind("hcpcs", CODE_GROUP, "HCPCS", authority_rank=3),),
        documents_format=2,
        diff=ReleaseDiff("hcpcs_code", "code",
                         ("long_description", "short_description", "termination_date", "coverage_code")),
    ),
    # ICD-10-CM: the CDC tabular XML and order files, one document per code.
    SourceSpec(
        "icd10cm",
        page_url="https://www.cms.gov/medicare/coding-billing/icd-10-codes/icd-10-cm-files",
        kinds=(DocumentKind("icd10cm", CODE_GROUP, "ICD-10-CM", authority_rank=3),),
        diff=ReleaseDiff("icd10cm_code", "code", ("description", "billable")),
    ),
    # The Internet-Only Manuals: chapter PDFs, one document per numbered section.
    SourceSpec(
        "iom",
        page_url="https://www.cms.gov/medicare/regulations-guidance/manuals/internet-only-manuals-ioms",
        kinds=(DocumentKind("iom", POLICY_GROUP, "IOM", authority_rank=1),),
    ),
)

SOURCE_NAMES: tuple[str, ...] = tuple(source.name for source in SOURCES)
_BY_NAME = {source.name: source for source in SOURCES}


def spec(name: str) -> SourceSpec:
    """The registered source called `name`; any other name is a MedragError naming the choices."""
    if name not in _BY_NAME:
        raise MedragError(f"unknown source {name!r}; choose from {', '.join(SOURCE_NAMES)}")
    return _BY_NAME[name]


def specs() -> tuple[SourceSpec, ...]:
    """Every registered source, in refresh order."""
    return SOURCES


def document_kinds() -> tuple[DocumentKind, ...]:
    """Every kind of document the sources build, source by source in refresh order."""
    return tuple(kind for source in SOURCES for kind in source.kinds)


def document_kind_names() -> tuple[str, ...]:
    """The values document.source (and the search's source filter) can take."""
    return tuple(kind.name for kind in document_kinds())


def document_groups() -> dict[str, tuple[str, ...]]:
    """Each search group with its document kinds, in refresh order: a group's kinds share one vector graph too."""
    groups: dict[str, tuple[str, ...]] = {}
    for kind in document_kinds():
        groups[kind.group] = (*groups.get(kind.group, ()), kind.name)
    return groups


def group_graphs() -> dict[str, tuple[str, ...]]:
    """The groups of more than one kind, each with one vector graph over all its kinds besides each kind's own: an
    unfiltered search scans one graph per group, not one per kind (medrag_nearest)."""
    return {group: kinds for group, kinds in document_groups().items() if len(kinds) > 1}


def vector_graphs() -> dict[str, tuple[str, ...]]:
    """Every HNSW graph over chunk_vector by its name part, with the kinds it holds: each kind's, then each group's."""
    return {**{kind: (kind,) for kind in document_kind_names()}, **group_graphs()}


def code_kind_names() -> tuple[str, ...]:
    """The document kinds that are code sets (the search's code group)."""
    return tuple(kind.name for kind in document_kinds() if kind.group == CODE_GROUP)
