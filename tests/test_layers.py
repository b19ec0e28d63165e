"""Imports point down the layers of medrag.layers: every import in medrag/ and flows/, wherever it is written."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from medrag.layers import LAYERS, layer_of

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
# Modules of medrag/ that belong to no layer: the entry point (python -m medrag) and the layer list itself.
UNLAYERED = {"__main__", "layers", "__init__"}


def package_of(module: str) -> str | None:
    """The layer package an imported module belongs to, or None for what is not medrag's own."""
    parts = module.split(".")
    if parts[0] == "medrag_flows":
        return "flows"
    if parts[0] != "medrag" or len(parts) == 1:
        return None
    return parts[1]


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) for every import in a module, at the top, inside functions or under TYPE_CHECKING."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "medrag":  # from medrag import codes
                found += [(node.lineno, f"medrag.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
    return found


def layered_files() -> list[tuple[Path, str]]:
    """Every Python file of medrag/ and flows/ with the layer package it is part of."""
    files = [(path, "flows") for path in sorted((ROOT / "flows").rglob("*.py"))]
    for path in sorted((ROOT / "medrag").rglob("*.py")):
        relative = path.relative_to(ROOT / "medrag")
        if len(relative.parts) == 1 and relative.stem in UNLAYERED:
            continue
        if relative.parts[0] in ("migrations", "sql"):  # shipped data: revisions and scripts, not a layer
            continue
        files.append((path, relative.parts[0].removesuffix(".py")))
    return files


def upward_imports(files: list[tuple[Path, str]]) -> list[str]:
    """'file:line package -> module' for each import of a package in the importer's layer or above it."""
    problems = []
    for path, package in files:
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
        rank = layer_of(package)
        for line, module in imported_modules(ast.parse(path.read_text(), str(path))):
            target = package_of(module)
            if target is None or target == package:
                continue
            if layer_of(target) >= rank:
                problems.append(f"{where}:{line} {package} -> {module}")
    return problems


def test_every_package_of_medrag_has_a_layer() -> None:
    packages = {package for _path, package in layered_files()}
    named = {package for layer in LAYERS for package in layer}
    assert packages == named


def test_imports_point_down_the_layers() -> None:
    assert upward_imports(layered_files()) == []


def test_an_upward_import_is_found(tmp_path: Path) -> None:
    """The check fails where it should: an import of a higher layer, or of a peer, inside a function too."""
    core = tmp_path / "config.py"
    core.write_text("def load():\n    from medrag.sources.hcpcs import release\n")
    codes = tmp_path / "finder.py"
    codes.write_text("import medrag.answer.pipeline\nfrom medrag.core import errors\n")
    flows = tmp_path / "commands.py"
    flows.write_text("from medrag.cli import main\n")
    found = upward_imports([(core, "core"), (codes, "codes"), (flows, "flows")])
    assert [line.split(" ", 1)[1] for line in found] == [
        "core -> medrag.sources.hcpcs", "codes -> medrag.answer.pipeline"]
