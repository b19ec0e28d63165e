"""A refresh while 8 clients query the API: no errors, every answer from one release, the switch made once."""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from collections import defaultdict

import httpx
from api_server import running_app  # tests/ is on sys.path: rootdir conftest, no __init__.py
from sqlalchemy import text

from medrag.core.db import get_engine
from medrag.refresh import fetch_and_load as pipeline
from medrag.refresh import refresh_source
from medrag.refresh.documents import build_documents
from medrag.serve.app import create_app

CLIENTS = 8
OLD, NEW = "FY2021", "FY2026"
# A bound for a server that stopped answering, not for a slow one: how fast a loaded machine answers is the
# benchmarks' question (benchmarks/serve.py); a per-request limit would fail this test on a busy machine for what
# it does not check.
HUNG_SERVER_S = 600
# Statements of the test's database waiting longer than this are listed beside any failure: what held them.
WAITED_S = 30
_WAITING = text(
    "SELECT pid, wait_event_type, wait_event, pg_blocking_pids(pid) AS blockers, "
    "round(extract(epoch FROM clock_timestamp() - query_start)) AS seconds, left(query, 120) AS query "
    "FROM pg_stat_activity WHERE datname = current_database() AND state <> 'idle' AND pid <> pg_backend_pid() "
    "AND clock_timestamp() - query_start > make_interval(secs => :waited)")


def _releases_of(route: str, payload: dict) -> set[str]:
    """The releases one response drew on: search hits, an answer's citations, the code finder's release."""
    if route == "search":
        return {hit["release"] for hit in payload["hits"]}
    if route == "ask":
        return {citation["release"] for citation in payload["citations"]}
    return set(re.findall(r"ICD-10-CM (FY\d{4})", next(step for step in payload["trace"]
                                                          if step.startswith("releases:"))))


def test_a_refresh_under_load_switches_every_route_from_one_release_to_the_next(indexed_settings, db_url,
                                                                                 indexed_engine):
    # indexed_engine: the session's mirror downloads are already in indexed_settings.home, so fetching is local.
    settings = dataclasses.replace(indexed_settings, database_url=db_url, vllm_base_url=None, api_token=None,
                                   api_rate=0)
    engine = get_engine(url=db_url)
    for fetched in pipeline.fetch_source(settings, "icd10cm", release=OLD):
        pipeline.load_fetched(engine, settings, fetched)
    build_documents(engine, "icd10cm", OLD)

    requests = [("search", "get", "/search", {"params": {"q": "low back pain", "source": "icd10cm", "k": 5}}),
                ("codes", "get", "/codes", {"params": {"term": "low back pain", "system": "ICD-10-CM"}}),
                ("ask", "post", "/ask", {"json": {"question": "What is the ICD-10-CM code for low back pain?",
                                                  "filters": {"source": "icd10cm"}}})]
    seen: dict[int, list[tuple[str, str]]] = defaultdict(list)
    errors: list[str] = []
    refreshed = threading.Event()
    after_refresh: dict[int, int] = defaultdict(int)

    waited: list[str] = []
    finished = threading.Event()

    def watch() -> None:
        """Note every statement that waits long, and on what, while the clients run."""
        with engine.connect() as conn:
            while not finished.wait(5):
                waited.extend(str(dict(row)) for row in conn.execute(_WAITING, {"waited": WAITED_S}).mappings())
                conn.commit()

    def client(number: int, base_url: str) -> None:
        with httpx.Client(base_url=base_url, timeout=HUNG_SERVER_S) as http:
            turn = number
            # Every client keeps going until it has made a round of all three routes after the refresh ended.
            while after_refresh[number] < len(requests):
                name, method, path, arguments = requests[turn % len(requests)]
                turn += 1
                done = refreshed.is_set()
                asked = time.monotonic()
                try:
                    response = getattr(http, method)(path, **arguments)
                except httpx.HTTPError as error:
                    errors.append(f"{name}: {type(error).__name__} after {time.monotonic() - asked:.0f} s")
                    return
                if response.status_code != 200:
                    errors.append(f"{name}: {response.status_code} {response.text[:200]}")
                    return
                releases = _releases_of(name, response.json())
                if len(releases) > 1:
                    errors.append(f"{name} mixed releases {sorted(releases)}")
                seen[number].extend((name, release) for release in releases)
                if done:
                    after_refresh[number] += 1

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        with running_app(create_app(settings)) as base_url:
            threads = [threading.Thread(target=client, args=(n, base_url)) for n in range(CLIENTS)]
            for thread in threads:
                thread.start()
            time.sleep(2)  # the clients are querying the old release when the refresh starts
            result = refresh_source(settings, engine, "icd10cm", release=NEW)
            refreshed.set()
            for thread in threads:
                thread.join(timeout=HUNG_SERVER_S)
    finally:
        # a refresh that raised must not leave the watcher holding a connection to the module's database
        refreshed.set()
        finished.set()
        watcher.join()

    assert [outcome.label for outcome in result.loaded] == [NEW]
    assert not errors, f"{errors[:5]}; statements that waited over {WAITED_S} s: {waited[:5]}"
    assert not any(thread.is_alive() for thread in threads), f"a client never finished; waited: {waited[:5]}"
    # One switch for every route: once a client has seen the new release anywhere, it never sees the old one again.
    for number, observed in seen.items():
        releases = [release for _name, release in observed]
        assert releases[0] == OLD, f"client {number} never saw the old release"
        switched = releases.index(NEW)
        assert set(releases[switched:]) == {NEW}, f"client {number} saw {OLD} again after {NEW}: {observed}"
        assert {name for name, _release in observed[switched:]} == {"search", "codes", "ask"}
