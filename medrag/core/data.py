"""The data tables packaged with medrag (medrag/data/): synonyms, HCPCS categories."""

from __future__ import annotations

from importlib import resources

from medrag.core.errors import MedragError


class DataFileError(MedragError):
    """A packaged data table (synonyms, HCPCS categories) is malformed."""


def data_text(name: str) -> str:
    """A data file packaged with medrag (medrag/data/), as text."""
    return resources.files("medrag").joinpath("data", name).read_text(encoding="utf-8")
