"""Serving as several processes: one rate limit shared by real server processes, /metrics summed across workers."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from api_server import metric  # tests/ is on sys.path: rootdir conftest, no __init__.py
from sqlalchemy import text


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def server_process(env: dict[str, str], *options: str) -> Iterator[str]:
    """`medrag serve` as its own process on a free port until the block ends; yields its base URL."""
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "medrag", "serve", "--port", str(port), *options],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"medrag serve exited: {process.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=5).status_code in (200, 503):
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("medrag serve did not start")
            time.sleep(0.25)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def serve_env(indexed_settings) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("MEDRAG_", "VLLM_", "PROMETHEUS_"))}
    return env | {"DATABASE_URL": indexed_settings.database_url, "MEDRAG_HOME": str(indexed_settings.home),
                  "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}


def test_two_server_processes_share_one_rate_limit(serve_env, indexed_engine) -> None:
    """30 a minute across two processes: about 30 requests of 60 pass (plus the refill while they run), not 60."""
    with indexed_engine.begin() as conn:
        conn.execute(text("DELETE FROM medrag_rate_bucket"))
    env = serve_env | {"MEDRAG_API_RATE": "30"}
    with server_process(env) as first, server_process(env) as second:
        started = time.monotonic()
        statuses = [httpx.get(f"{(first, second)[n % 2]}/releases", timeout=30).status_code for n in range(60)]
        elapsed = time.monotonic() - started
    allowed = statuses.count(200)
    expected = 30 + elapsed * 30 / 60  # the bucket starts full and refills at 30 a minute
    assert abs(allowed - expected) <= 0.1 * 30, (allowed, expected)
    assert statuses.count(429) == 60 - allowed
    assert {statuses[n] for n in range(0, 60, 2)} == {statuses[n] for n in range(1, 60, 2)} == {200, 429}


def test_the_shared_limit_answers_503_when_its_table_cannot_be_read(serve_env, indexed_engine) -> None:
    """A bucket that cannot be read is a clear 503, never a request let through nor a 500."""
    with indexed_engine.begin() as conn:  # a full bucket, whatever the test before took from it
        conn.execute(text("DELETE FROM medrag_rate_bucket"))
    env = serve_env | {"MEDRAG_API_RATE": "30"}
    with server_process(env) as url:
        assert httpx.get(f"{url}/releases").status_code == 200
        with indexed_engine.begin() as conn:
            conn.execute(text("ALTER TABLE medrag_rate_bucket RENAME TO medrag_rate_bucket_away"))
        try:
            gone = httpx.get(f"{url}/releases")
        finally:
            with indexed_engine.begin() as conn:
                conn.execute(text("ALTER TABLE medrag_rate_bucket_away RENAME TO medrag_rate_bucket"))
    assert gone.status_code == 503 and "rate limit" in gone.json()["detail"]


def test_metrics_sum_the_workers(serve_env, tmp_path: Path) -> None:
    """Two workers answer 40 requests between them; /metrics says 40 whichever worker answers it."""
    folder = tmp_path / "metrics"
    folder.mkdir()
    env = serve_env | {"PROMETHEUS_MULTIPROC_DIR": str(folder)}
    with server_process(env, "--workers", "2") as url:
        for _ in range(40):
            assert httpx.get(f"{url}/releases", headers={"Connection": "close"}).status_code == 200
        counted = [metric(httpx.get(f"{url}/metrics", headers={"Connection": "close"}).text,
                          "medrag_http_requests_total", route="/releases", method="GET", status="200")
                   for _ in range(6)]
    writers = {re.sub(r"\D", "", path.name) for path in folder.glob("counter_*.db")}
    assert counted == [40.0] * 6 and len(writers) == 2, (counted, writers)
