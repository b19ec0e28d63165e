"""Reads from a real streaming replica: DATABASE_READ_URL serves search, codes and ask; writes go to the primary.

The replica is made as production makes one: pg_basebackup of the tests' embedded server (-R: a standby that streams
from it), started on its own port. A release switched on the primary, as a refresh ends, reaches the replica while
the API keeps answering from it.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from api_server import running_app  # tests/ is on sys.path: rootdir conftest, no __init__.py
from sqlalchemy import text
from sqlalchemy.engine import make_url

from medrag.core.db import get_engine
from medrag.core.embedded_pg import SERVICE_USER, SUPERUSER, EmbeddedPostgres, bin_dir
from medrag.serve.app import create_app
from medrag.serve.state import ServeState


@pytest.fixture(scope="module")
def replica_url(pg_server_url: str, indexed_engine) -> Iterator[str]:
    """A streaming standby of the tests' server, and the indexed database's URL on it."""
    if os.environ.get("DATABASE_URL"):
        pytest.skip("the replica is made by pg_basebackup of the tests' embedded server; DATABASE_URL names another")
    primary = make_url(pg_server_url)
    home = Path(tempfile.mkdtemp(prefix="medrag-replica-", dir=os.environ.get("MEDRAG_TEST_TMP", "/tmp")))
    home.chmod(0o755)
    data = home / "pgdata"
    data.mkdir(mode=0o700)
    run_as = SERVICE_USER if os.geteuid() == 0 else None
    if run_as:
        shutil.chown(data, run_as, run_as)
    subprocess.run([str(bin_dir() / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port), "-U", SUPERUSER,
                    "-D", str(data), "-R", "-X", "stream", "-c", "fast"],
                   check=True, capture_output=True, user=run_as, cwd="/", timeout=600)
    server = EmbeddedPostgres(data)
    status = server.start()
    try:
        database = make_url(indexed_engine.url).database
        yield status.url(database)
    finally:
        get_engine(url=status.url(make_url(indexed_engine.url).database)).dispose()
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


def test_the_replica_is_a_standby_that_reads_what_the_primary_holds(replica_url, indexed_engine) -> None:
    replica = get_engine(url=replica_url)
    with replica.connect() as conn, indexed_engine.connect() as primary:
        assert conn.execute(text("SELECT pg_is_in_recovery()")).scalar() is True
        count = "SELECT count(*) FROM chunk"
        assert conn.execute(text(count)).scalar() == primary.execute(text(count)).scalar() > 0


def test_the_replica_reads_the_code_finders_answers_the_primary_kept_and_keeps_none(
        replica_url, indexed_engine) -> None:
    call = text("SELECT medrag_find_codes_cached(:term, NULL, NULL, :top, NULL)")
    top = 6 + time.time_ns() % 40  # a call no earlier run of this test kept
    asked, unasked = {"term": "diabetes mellitus", "top": top}, {"term": "acute bronchitis", "top": top}
    with indexed_engine.begin() as primary:
        assert "cached" not in primary.execute(call, asked).scalar_one()
    deadline, found = time.monotonic() + 60, None
    with get_engine(url=replica_url).connect() as conn:
        while time.monotonic() < deadline:  # the standby replays the primary's write
            found = conn.execute(call, asked).scalar_one()
            conn.rollback()
            if found.get("cached"):
                break
            time.sleep(0.2)
        assert found["cached"] is True and found["results"]
        assert "cached" not in conn.execute(call, unasked).scalar_one()  # read-only: answered, not kept
        conn.commit()
        assert "cached" not in conn.execute(call, unasked).scalar_one()


def test_search_codes_and_ask_read_the_replica_and_the_query_log_is_written_on_the_primary(
        replica_url, indexed_settings, indexed_engine) -> None:
    settings = dataclasses.replace(indexed_settings, database_read_url=replica_url, vllm_base_url=None,
                                   vllm_model=None, api_rate=0)
    state = ServeState(settings)
    try:
        assert make_url(state.engine.url).port == make_url(replica_url).port
        assert make_url(state.write_engine.url).port == make_url(indexed_engine.url).port
        with running_app(create_app(settings, state)) as base_url, httpx.Client(base_url=base_url,
                                                                                 timeout=120) as client:
            assert client.get("/search", params={"q": "home oxygen therapy"}).json()["hits"]
            assert client.get("/codes", params={"term": "type 2 diabetes"}).json()["results"][0]["code"] == "E11.9"
            question = f"Does Medicare cover home oxygen therapy? ({time.time_ns()})"
            answer = client.post("/ask", json={"question": question})
            assert answer.status_code == 200, answer.text  # a write on the replica would fail: read-only
    finally:
        state.close()
    with indexed_engine.connect() as conn:
        logged = conn.execute(text("SELECT count(*) FROM query_log WHERE question = :q"), {"q": question}).scalar()
    assert logged == 1


def test_a_release_switched_on_the_primary_reaches_the_replica_while_it_answers(
        replica_url, indexed_settings, indexed_engine) -> None:
    """The refresh's last step, a release made current, is visible on the replica; no request fails meanwhile."""
    settings = dataclasses.replace(indexed_settings, database_read_url=replica_url, api_rate=0)
    with indexed_engine.connect() as conn:
        labels = conn.execute(text("SELECT label, is_current FROM release WHERE source = 'hcpcs' ORDER BY label")).all()
    current = next(label for label, is_current in labels if is_current)
    other = next(label for label, is_current in labels if not is_current)
    switch = ("UPDATE release SET is_current = false WHERE source = 'hcpcs' AND is_current",
              "UPDATE release SET is_current = true WHERE source = 'hcpcs' AND label = :label")
    state = ServeState(settings)
    failures: list[str] = []
    answered = [0]
    stop = threading.Event()
    try:
        with running_app(create_app(settings, state)) as base_url:
            def keep_searching() -> None:
                with httpx.Client(base_url=base_url, timeout=60) as client:
                    while not stop.is_set():
                        response = client.get("/search", params={"q": "wheelchair"})
                        if response.status_code != 200:
                            failures.append(response.text)
                        answered[0] += 1

            searcher = threading.Thread(target=keep_searching)
            searcher.start()
            try:
                ready = time.monotonic() + 60
                while answered[0] == 0 and not failures and time.monotonic() < ready:  # answering before the switch
                    time.sleep(0.1)
                with indexed_engine.begin() as conn:
                    for statement in switch:
                        conn.execute(text(statement), {"label": other})
                deadline, seen = time.monotonic() + 60, None
                while time.monotonic() < deadline:
                    releases = httpx.get(f"{base_url}/releases").json()
                    seen = next((r["label"] for r in releases if r["source"] == "hcpcs" and r["is_current"]), None)
                    if seen == other:
                        break
                    time.sleep(0.2)
            finally:
                with indexed_engine.begin() as conn:
                    for statement in switch:
                        conn.execute(text(statement), {"label": current})
                stop.set()
                searcher.join(timeout=60)
    finally:
        state.close()
    assert seen == other and failures == [] and answered[0] > 0
