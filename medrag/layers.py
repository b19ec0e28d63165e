"""The layers of medrag, lowest first: a module imports only from its own package and from layers below its own.

Data flows one way, from source files to tables, documents, vectors, retrieval and answers or codes, and the
imports follow it down. Packages that share a layer (codes, answer, check and changes; schema and refresh) are peers
and import neither each other. `medrag` is the package medrag/, `medrag_flows` the Prefect flows in flows/. The rule
is checked by tests/test_layers.py and drawn in docs/architecture.md.
"""

from __future__ import annotations

LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),  # settings, database, errors, the registry of sources, identifiers and synonyms, progress
    ("ingest",),  # downloads, safe archives, COPY, release bookkeeping: what every source's loader uses
    ("sources",),  # one package per CMS source: discover, parse, load its tables, draft its documents
    ("index",),  # drafts chunked into documents and chunks, vectors computed
    ("retrieval",),  # the hybrid search
    ("codes", "answer", "check", "changes"),  # the code finder; cited answers; the claim-line check; release changes
    ("schema", "refresh"),  # the database surface (revisions, SQL scripts); the stages of a refresh
    ("serve",),  # the HTTP API and the page
    ("cli",),  # the medrag command
    ("flows",),  # the Prefect flows and the commands that run them (medrag_flows)
)


def layer_of(package: str) -> int:
    """The rank of a package of medrag (0 is the lowest); a package no layer names is a KeyError."""
    for rank, packages in enumerate(LAYERS):
        if package in packages:
            return rank
    raise KeyError(package)
