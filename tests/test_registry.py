"""The source registry: one list of sources in core, each with its package of code named once in sources.handlers."""

from __future__ import annotations

from pathlib import Path

import pytest

from medrag.core import registry
from medrag.core.config import CMS_SOURCE_URLS
from medrag.core.errors import MedragError
from medrag.retrieval.search import SOURCES
from medrag.sources import handlers

SOURCES_DIR = Path(handlers.__file__).parent


def test_every_source_package_is_registered_once_in_refresh_order() -> None:
    packages = {path.parent.name for path in SOURCES_DIR.glob("*/__init__.py")}
    assert set(registry.SOURCE_NAMES) == packages
    assert registry.SOURCE_NAMES[0] == "mcd"  # HCPCS documents name the LCDs that list each code
    assert [spec.name for spec in registry.specs()] == list(registry.SOURCE_NAMES)
    assert (list(handlers.RELEASES) == list(handlers.DRAFT_BUILDERS) == list(handlers.CHANGE_FINDERS)
            == list(registry.SOURCE_NAMES))


def test_what_the_rest_of_medrag_reads_comes_from_the_registry() -> None:
    kinds = registry.document_kind_names()
    assert len(set(kinds)) == len(kinds)
    assert SOURCES == kinds and set(registry.code_kind_names()) == {"hcpcs", "icd10cm"}
    assert set(CMS_SOURCE_URLS) == set(registry.SOURCE_NAMES)
    for spec in registry.specs():
        assert handlers.release_handler(spec.name).name == spec.name
        assert callable(handlers.drafts_builder(spec.name)) and spec.documents_format >= 1
        assert {kind.group for kind in spec.kinds} <= {registry.CODE_GROUP, registry.POLICY_GROUP}


def test_an_unknown_source_is_a_one_line_error() -> None:
    for lookup in (registry.spec, handlers.release_handler, handlers.drafts_builder):
        with pytest.raises(MedragError, match="unknown source 'cpt'; choose from mcd, hcpcs, icd10cm, iom"):
            lookup("cpt")
