"""A refresh while 8 clients query the API: no errors, every answer from one release, the switch made once."""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from collections import defaultdict

import httpx
from api_server import running_app  # tests/ is on sys.path: rootdir conftest, no __init__.py

from medrag.core.db import get_engine
from medrag.refresh import fetch_and_load as pipeline
from medrag.refresh import refresh_source
from medrag.refresh.documents import build_documents
from medrag.serve.app import create_app

CLIENTS = 8
OLD, NEW = "FY2021", "FY2026"


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

    def client(number: int, base_url: str) -> None:
        with httpx.Client(base_url=base_url, timeout=120) as http:
            turn = number
            # Every client keeps going until it has made a round of all three routes after the refresh ended.
            while after_refresh[number] < len(requests):
                name, method, path, arguments = requests[turn % len(requests)]
                turn += 1
                done = refreshed.is_set()
                response = getattr(http, method)(path, **arguments)
                if response.status_code != 200:
                    errors.append(f"{name}: {response.status_code} {response.text[:200]}")
                    return
                releases = _releases_of(name, response.json())
                if len(releases) > 1:
                    errors.append(f"{name} mixed releases {sorted(releases)}")
                seen[number].extend((name, release) for release in releases)
                if done:
                    after_refresh[number] += 1

    with running_app(create_app(settings)) as base_url:
        threads = [threading.Thread(target=client, args=(n, base_url)) for n in range(CLIENTS)]
        for thread in threads:
            thread.start()
        time.sleep(2)  # the clients are querying the old release when the refresh starts
        result = refresh_source(settings, engine, "icd10cm", release=NEW)
        refreshed.set()
        for thread in threads:
            thread.join(timeout=600)

    assert [outcome.label for outcome in result.loaded] == [NEW]
    assert not errors, errors[:5]
    # One switch for every route: once a client has seen the new release anywhere, it never sees the old one again.
    for number, observed in seen.items():
        releases = [release for _name, release in observed]
        assert releases[0] == OLD, f"client {number} never saw the old release"
        switched = releases.index(NEW)
        assert set(releases[switched:]) == {NEW}, f"client {number} saw {OLD} again after {NEW}: {observed}"
        assert {name for name, _release in observed[switched:]} == {"search", "codes", "ask"}
