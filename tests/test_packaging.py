"""The distribution: a wheel holds the code, migrations, SQL and data, and works installed (not editable)."""

from __future__ import annotations

import os
import subprocess
import tomllib
import zipfile
from pathlib import Path

import psycopg
import pytest
from installed_wheel import build_wheel, install_wheel  # tests/ is on sys.path: rootdir conftest, no __init__.py

from medrag.core.db import libpq_url

REPO = Path(__file__).resolve().parents[1]
# The design card's top-level folders ship inside the distribution under these import names.
MAPPED = {"medrag.migrations": "migrations", "medrag.sql": "sql", "medrag_flows": "flows"}
# Folders of data files only, declared as packages so setuptools ships them quietly.
DATA_PACKAGES = {"medrag.data": "medrag/data", "medrag.serve.static": "medrag/serve/static",
                 "medrag.sql.examples": "sql/examples"}


def declared_packages() -> set[str]:
    return set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])


def test_every_package_in_the_tree_is_declared() -> None:
    found = {".".join(init.parent.relative_to(REPO).parts) for init in (REPO / "medrag").rglob("__init__.py")}
    for name, folder in MAPPED.items():
        found |= {name + "".join(f".{part}" for part in init.parent.relative_to(REPO / folder).parts)
                  for init in (REPO / folder).rglob("__init__.py")}
    assert found == declared_packages() - set(DATA_PACKAGES)
    for name, folder in DATA_PACKAGES.items():
        assert (REPO / folder).is_dir() and not (REPO / folder / "__init__.py").exists(), name


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_build_prints_no_setuptools_warning(wheel: Path) -> None:
    log = (wheel.parent / "build.log").read_text()
    warnings = [line for line in log.splitlines() if "Warning" in line or "is absent from the `packages`" in line]
    assert not warnings, warnings


def test_the_wheel_holds_migrations_sql_data_and_flows(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in ("medrag/migrations/env.py", "medrag/migrations/script.py.mako",
                     "medrag/migrations/versions/0001_core.py", "medrag/sql/search.sql", "medrag/sql/views.sql",
                     "medrag/sql/roles.sql", "medrag/sql/examples/01_lcds_listing_a_hcpcs_code.sql",
                     "medrag/data/synonyms.csv", "medrag_flows/quarterly_refresh.py", "medrag_flows/commands.py",
                     "medrag/core/registry.py", "medrag/cli/__init__.py"):
        assert expected in names
    assert not any(name.startswith(("flows/", "tests/", "migrations/", "sql/")) for name in names)


def test_installed_wheel_migrates_an_empty_database(wheel: Path, tmp_path: Path, empty_db_url: str) -> None:
    venv = tmp_path / "venv"
    site = install_wheel(wheel, venv)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env |= {"DATABASE_URL": empty_db_url, "MEDRAG_HOME": str(tmp_path / "home")}
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import medrag, medrag_flows; "
                            "print(medrag.__file__); print(medrag_flows.__file__)"], cwd=tmp_path, env=env,
                           check=True, capture_output=True, text=True).stdout.split()
    assert all(path.startswith(str(site)) for path in where)
    help_text = subprocess.run([str(venv / "bin" / "medrag"), "--help"], cwd=tmp_path, env=env, check=True,
                               capture_output=True, text=True, timeout=120).stdout
    assert "refresh" in help_text and "search" in help_text
    migrated = subprocess.run([str(venv / "bin" / "medrag"), "db", "migrate"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
    assert migrated.returncode == 0, migrated.stderr
    with psycopg.connect(libpq_url(empty_db_url)) as conn:
        assert conn.execute("SELECT count(*) FROM medrag_search_text('oxygen', 3, '{}')").fetchone() == (0,)
        assert conn.execute("SELECT to_regclass('v_chunk') IS NOT NULL").fetchone() == (True,)
