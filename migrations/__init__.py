"""Alembic revisions of medrag's schema (versions/), and how a revision reads an earlier one's text."""

import importlib.util
from pathlib import Path
from types import ModuleType

VERSIONS_DIR = Path(__file__).with_name("versions")


def earlier_revision(filename: str) -> ModuleType:
    """An earlier revision's module, loaded from its file: a downgrade puts back the SQL text that revision wrote."""
    spec = importlib.util.spec_from_file_location(f"revision_{filename.split('_', 1)[0]}", VERSIONS_DIR / filename)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
