"""`medrag serve` through real HTTP on 127.0.0.1: the CLI's JSON per route, SSE, bad input, token, rate, metrics."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from http import HTTPStatus
from pathlib import Path

import httpx
import pytest
from api_server import metric, running_app  # tests/ is on sys.path: rootdir conftest, no __init__.py
from click.testing import CliRunner
from openai_stub import OpenAIStub, Reply, json_reply
from pydantic import TypeAdapter
from sqlalchemy import text

from medrag.cli import main
from medrag.core.embedded_pg import EmbeddedPostgres
from medrag.schema import migrate
from medrag.serve.app import create_app
from medrag.serve.guard import MAX_BODY_BYTES
from medrag.serve.schemas import (
    AskResponse,
    ChangesResponse,
    CheckResponse,
    CodesResponse,
    Health,
    ReleaseChange,
    ReleaseRow,
    SearchResponse,
)
from medrag.serve.state import ServeState

OXYGEN = "Who qualifies for home oxygen therapy?"


@pytest.fixture(scope="module")
def settings(indexed_settings):
    """The indexed corpus, extractive answers, no token, no rate limit."""
    return dataclasses.replace(indexed_settings, vllm_base_url=None, vllm_model=None, query_rewrite="expand",
                               api_token=None, api_rate=0, log_queries="full")


@pytest.fixture(scope="module")
def state(settings, indexed_engine):
    """One engine, embedder and code finder shared by the module's servers, as one process shares them."""
    shared = ServeState(settings, indexed_engine)
    yield shared
    shared.close()


@pytest.fixture(scope="module")
def api(settings, state):
    with running_app(create_app(settings, state)) as base_url, httpx.Client(base_url=base_url, timeout=120) as client:
        yield client


@pytest.fixture
def cli_env(monkeypatch, settings):
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    monkeypatch.setenv("MEDRAG_HOME", str(settings.home))
    for name in ("VLLM_BASE_URL", "VLLM_MODEL", "MEDRAG_LOG_QUERIES", "MEDRAG_QUERY_REWRITE", "MEDRAG_API_TOKEN",
                 "MEDRAG_API_RATE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def cli_json(*args: str) -> object:
    outcome = CliRunner().invoke(main, list(args))
    assert outcome.exit_code == 0, outcome.output
    return json.loads(outcome.stdout)


def cli_error(*args: str) -> str:
    outcome = CliRunner().invoke(main, list(args))
    assert outcome.exit_code == 2, outcome.output
    return outcome.stderr.strip().removeprefix("medrag: error: ")


def without_timings(payload: dict) -> dict:
    """The payload without what differs between two runs: timings_ms, the milliseconds in a code trace, and whether
    the code finder's answer came from its cache (the second of two equal calls reads what the first kept)."""
    out = {name: value for name, value in payload.items() if name not in ("timings_ms", "cached")}
    if "trace" in out:
        out["trace"] = [re.sub(r"\d+ ms", "N ms", step) for step in out["trace"]
                        if not step.startswith("cache: kept at ")]
    return out


# -- each route answers exactly what the CLI prints ----------------------------------------------------------------


def test_search_route_equals_the_cli_json(api, cli_env):
    response = api.get("/search", params={"q": "home oxygen therapy", "k": 5, "source": "ncd"})
    assert response.status_code == 200
    payload = response.json()
    SearchResponse.model_validate(payload)
    assert payload["hits"][0]["key"] == "240.2"
    expected = cli_json("search", "home oxygen therapy", "-k", "5", "--source", "ncd", "--json")
    assert without_timings(payload) == without_timings(expected)


def test_codes_route_equals_the_cli_json(api, cli_env):
    payload = api.get("/codes", params={"term": "cpap machine"}).json()
    CodesResponse.model_validate(payload)
    printed = cli_json("codes", "cpap machine", "--json")
    assert without_timings(payload) == without_timings(printed) and printed["cached"] is True  # the API's answer
    e0601 = next(result for result in payload["results"] if result["code"] == "E0601")
    assert "L33718" in [item["key"] for item in e0601["related"]]
    only = api.get("/codes", params={"term": "low back pain", "system": "ICD-10-CM", "top": 3}).json()
    assert without_timings(only) == without_timings(
        cli_json("codes", "low back pain", "--system", "ICD-10-CM", "--top", "3", "--json"))
    assert {result["system"] for result in only["results"]} == {"ICD-10-CM"}


def test_check_route_equals_the_cli_json(api, cli_env, tmp_path):
    lines = [{"line_id": "a", "dos": "2025-02-10", "hcpcs": "J2920", "modifiers": "KX", "dx": ["M54.5"],
              "state": "CA"},
             {"line_id": "b", "dos": "2025-02-30", "hcpcs": "E06O1"}]
    response = api.post("/check", json={"lines": lines})
    assert response.status_code == 200
    payload = response.json()
    CheckResponse.model_validate(payload)
    claims = tmp_path / "claims.jsonl"
    claims.write_text("".join(json.dumps(line) + "\n" for line in lines))
    outcome = CliRunner().invoke(main, ["check", str(claims), "--json"])
    assert outcome.exit_code == 1  # a line has an error
    assert payload == json.loads(outcome.stdout)
    first, second = payload["lines"]
    assert first["errors"] == 2 and second["errors"] == 2  # a bad line is findings, not a 4xx
    assert payload["summary"]["lines_with_errors"] == 2


@pytest.mark.parametrize(("body", "status", "fragment"), [
    (b'{"lines": [', 400, "not valid JSON"),
    (b'{"lines": []}', 422, "lines"),
    (b'{"lines": [{"dos": "2025-03-01", "code": "E0601"}]}', 422, "lines.0.code"),
    (json.dumps({"lines": [{"dos": "2025-03-01"}] * 1001}).encode(), 422, "lines"),
])
def test_a_malformed_check_body_is_a_4xx(api, body, status, fragment):
    response = api.post("/check", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == status
    assert fragment in response.json()["error"]


def test_ask_route_equals_the_cli_json_and_is_audited_with_route_and_client(api, cli_env, indexed_engine):
    response = api.post("/ask", json={"question": OXYGEN})
    assert response.status_code == 200
    payload = response.json()
    AskResponse.model_validate(payload)
    assert not payload["refused"] and "240.2" in [citation["key"] for citation in payload["citations"]]
    assert "national" in payload["citations"][0]["authority"]
    assert without_timings(payload) == without_timings(cli_json("ask", OXYGEN, "--json"))
    with indexed_engine.connect() as conn:
        rows = conn.execute(text("SELECT command, route, client, question FROM query_log "
                                 "ORDER BY id DESC LIMIT 2")).all()
    cli_row, api_row = rows
    assert (api_row.command, api_row.route, api_row.client, api_row.question) == ("ask", "POST /ask", "127.0.0.1",
                                                                                  OXYGEN)
    assert (cli_row.route, cli_row.client) == (None, None)
    tail = CliRunner().invoke(main, ["log", "tail", "-n", "2"]).stdout
    assert "ask via POST /ask from 127.0.0.1" in tail


def test_hashed_query_logging_applies_to_the_api(settings, state, indexed_engine):
    hashed = dataclasses.replace(settings, log_queries="hash")
    with running_app(create_app(hashed, state)) as base_url:
        assert httpx.post(f"{base_url}/ask", json={"question": OXYGEN}, timeout=60).status_code == 200
    with indexed_engine.connect() as conn:
        row = conn.execute(text("SELECT route, question, question_hash FROM query_log ORDER BY id DESC LIMIT 1")).one()
    assert row.route == "POST /ask" and row.question is None and len(row.question_hash) == 64


def test_changes_route_equals_the_cli_json(api, cli_env, tmp_path):
    params = [("codes", "J2920,m5450"), ("codes", "B88.09"), ("source", "hcpcs"), ("source", "icd10cm")]
    payload = api.get("/changes", params=params).json()
    ChangesResponse.model_validate(payload)
    codes = tmp_path / "codes.txt"
    codes.write_text("J2920\nm5450\nB88.09\n")
    assert payload == cli_json("changes", "--codes", str(codes), "--source", "hcpcs", "--source", "icd10cm", "--json")
    touched = {(change["item"], mine["relation"]) for change_set in payload["sets"] for change in change_set["changes"]
               for mine in change["your_codes"]}
    assert ("J2920", "code") in touched and ("B88.0", "parent") in touched
    everything = api.get("/changes").json()
    ChangesResponse.model_validate(everything)
    assert everything == cli_json("changes", "--json")
    assert {gap["source"] for gap in everything["gaps"]} == {"mcd", "iom"}


def test_releases_routes_equal_the_cli_json(api, cli_env):
    rows = api.get("/releases").json()
    TypeAdapter(list[ReleaseRow]).validate_python(rows)
    assert rows == cli_json("releases", "list", "--json")
    assert {row["source"] for row in api.get("/releases", params={"source": "icd10cm"}).json()} == {"icd10cm"}
    changes = api.get("/releases/diff", params={"source": "icd10cm", "old": "FY2021", "new": "FY2026"}).json()
    TypeAdapter(list[ReleaseChange]).validate_python(changes)
    outcome = CliRunner().invoke(main, ["releases", "diff", "icd10cm", "FY2021", "FY2026", "--json"])
    assert changes == [json.loads(line) for line in outcome.stdout.splitlines()]
    m545 = next(change for change in changes if change["code"] == "M54.5")
    assert m545["change"] == "changed"


def test_health_reports_schema_releases_model_and_vllm(api):
    response = api.get("/health")
    assert response.status_code == 200
    health = Health.model_validate(response.json())
    assert health.status == "ok" and health.database["schema_at_head"]
    assert health.database["schema_revision"] == migrate.head_revision()
    assert set(health.releases) == {"mcd", "iom", "hcpcs", "icd10cm"} and health.releases["icd10cm"] == "FY2026"
    assert health.embedding_model["loaded"] is True
    assert health.vllm == {"configured": False, "reachable": None}


def test_openapi_documents_every_route_and_the_page_needs_no_cdn(api):
    spec = api.get("/openapi.json").json()
    assert {"/search", "/ask", "/codes", "/check", "/changes", "/releases", "/releases/diff", "/health",
            "/metrics"} <= set(spec["paths"])
    schemas = spec["components"]["schemas"]
    assert {"rank", "score", "key", "title", "release", "url"} <= set(schemas["SearchHit"]["properties"])
    assert "authority" in schemas["Citation"]["properties"]
    docs = api.get("/docs")  # Swagger UI from the swagger-ui-bundle package, not FastAPI's CDN
    assert docs.status_code == 200 and "swagger-ui" in docs.text
    for asset in re.findall(r"""(?:src=|href=|url: |Url: )["']([^"']+)["']""", docs.text):
        assert asset.startswith(("/docs-assets/", "/openapi.json")), asset
        assert api.get(asset).status_code == 200, asset
    page = api.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    for asset in re.findall(r'(?:src|href)="([^"]+)"', page.text):
        assert asset.startswith("static/") or asset.startswith("data:"), asset  # relative: works under a sub-path
        if asset.startswith("data:"):
            continue
        body = api.get("/" + asset)
        assert body.status_code == 200
        assert not re.search(r"https?://", body.text), f"{asset} loads something from the network"


# -- streaming ---------------------------------------------------------------------------------------------------


def sse_events(response: httpx.Response) -> list[tuple[str, dict]]:
    events = []
    for block in response.text.split("\n\n"):
        if block.strip():
            name = re.search(r"^event: (.*)$", block, re.M).group(1)
            events.append((name, json.loads(re.search(r"^data: (.*)$", block, re.M).group(1))))
    return events


def test_streamed_answer_sends_sentences_in_order_then_the_same_final_answer(api):
    streamed = api.post("/ask", params={"stream": "true"}, json={"question": OXYGEN})
    assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
    events = sse_events(streamed)
    names = [name for name, _ in events]
    assert names[-1] == "final" and set(names[:-1]) == {"sentence"} and len(names) >= 2
    assert [data["index"] for _, data in events[:-1]] == list(range(len(events) - 1))
    final = events[-1][1]
    AskResponse.model_validate(final)
    assert " ".join(data["text"] for _, data in events[:-1]) == final["answer"]
    plain = api.post("/ask", json={"question": OXYGEN}).json()
    assert (final["answer"], final["citations"], final["refused"]) == (plain["answer"], plain["citations"],
                                                                      plain["refused"])


def test_streamed_vllm_answer_arrives_sentence_by_sentence_and_degrades_when_the_llm_fails(settings, state):
    sentences = [{"text": "Home oxygen is covered when the patient has hypoxemia.", "sources": [1]},
                 {"text": "A treating practitioner must order and evaluate the blood gas test.", "sources": [1]}]
    with OpenAIStub(model="stub-smol") as stub:
        llm_settings = dataclasses.replace(settings, vllm_base_url=stub.url, llm_timeout=5.0, query_rewrite="expand")
        with running_app(create_app(llm_settings, state)) as base_url:
            stub.queue(json_reply(sentences))
            response = httpx.post(f"{base_url}/ask", params={"stream": "true"}, json={"question": OXYGEN},
                                  timeout=60)
            events = sse_events(response)
            final = events[-1][1]
            assert final["backend"] == "vllm" and not final["degraded"]
            assert [name for name, _ in events] == ["sentence", "sentence", "final"]
            assert " ".join(data["text"] for _, data in events[:-1]) == final["answer"]
            stub.queue(Reply(status=500), Reply(status=500))  # the request and its one retry
            degraded = httpx.post(f"{base_url}/ask", json={"question": OXYGEN}, timeout=60).json()
            assert degraded["degraded"] and degraded["answer"] and "extractive" in degraded["backend"]
            metrics = httpx.get(f"{base_url}/metrics").text
    assert re.search(r"^medrag_answers_degraded_total 1\.0$", metrics, re.M)


# -- bad input: the CLI's one line, as a 4xx ---------------------------------------------------------------------


@pytest.mark.parametrize(("path", "params", "status", "cli_args"), [
    ("/search", {"q": ""}, 400, ["search", ""]),
    ("/search", {"q": "x" * 10_000}, 400, ["search", "x" * 10_000]),
    ("/search", {"q": "oxygen", "release": "1999"}, 400, ["search", "oxygen", "--release", "1999"]),
    ("/search", {"q": "oxygen", "state": "ZZ"}, 400, ["search", "oxygen", "--state", "ZZ"]),
    ("/search", {"q": "oxygen", "source": "nope"}, 400, None),
    ("/search", {"q": "oxygen", "as_of": "2024-02-30"}, 400, None),
    ("/search", {"q": "oxygen", "k": 0}, 422, None),
    ("/search", {}, 422, None),
    ("/codes", {"term": " "}, 400, ["codes", " "]),
    ("/codes", {"term": "cpap", "release": "1999"}, 400, ["codes", "cpap", "--release", "1999"]),
    ("/releases/diff", {"source": "hcpcs", "old": "2019", "new": "2031"}, 400,
     ["releases", "diff", "hcpcs", "2019", "2031"]),
    ("/releases", {"source": "nope"}, 400, None),
    ("/changes", {"source": "nope"}, 400, None),
    ("/changes", {"since": "2025-02-30"}, 400, None),
    ("/changes", {"codes": "J2920,not-a-code"}, 400, None),
    ("/changes", {"from": "FY2025"}, 400, None),
    ("/changes", {"codes": ",".join(f"J{n:04d}" for n in range(2001))}, 400, None),
])
def test_bad_query_input_is_a_4xx_with_the_cli_message(api, cli_env, path, params, status, cli_args):
    response = api.get(path, params=params)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["status"] == status and problem["instance"] == path and problem["type"] == "about:blank"
    assert problem["title"] == HTTPStatus(status).phrase
    message = problem["detail"]
    assert message == problem["error"]  # the earlier {"error": ...} clients read
    assert message and "\n" not in message and "Traceback" not in message
    if cli_args:
        assert message == cli_error(*cli_args)


def test_a_422_lists_every_invalid_field(api):
    response = api.get("/search", params={"k": 0, "as_of": "x"})  # q missing, k below 1
    problem = response.json()
    assert response.status_code == 422 and response.headers["content-type"] == "application/problem+json"
    fields = {item["field"] for item in problem["errors"]}
    assert {"q", "k"} <= fields and len(problem["errors"]) >= 2
    assert "q: " in problem["detail"] and "k: " in problem["detail"] and "\n" not in problem["detail"]


def test_a_streamed_answer_keeps_the_connection_alive_and_stops_when_the_client_hangs_up(settings, state):
    sentences = [{"text": "Home oxygen is covered when the patient has hypoxemia.", "sources": [1]}]
    with OpenAIStub(model="stub-smol") as stub:
        slow = dataclasses.replace(settings, vllm_base_url=stub.url, llm_timeout=30.0, sse_keepalive=0.3)
        with running_app(create_app(slow, state)) as base_url:
            stub.queue(Reply(content=json_reply(sentences).content, delay=3.0))  # the model thinks for 3 s
            with httpx.stream("POST", f"{base_url}/ask", params={"stream": "true"}, json={"question": OXYGEN},
                              timeout=30) as response:
                lines = response.iter_lines()
                assert next(line for line in lines if line) == ": keep-alive"  # before any sentence
            # hung up: when the model's first sentence arrives, the answer stops there
            def cancelled() -> bool:
                text_format = httpx.get(f"{base_url}/metrics").text
                return bool(re.search(r"^medrag_answers_cancelled_total 1\.0$", text_format, re.M))

            deadline = time.monotonic() + 20
            while not cancelled() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert cancelled()


def test_the_app_serves_under_a_root_path(settings, state):
    under = dataclasses.replace(settings, root_path="/medrag")
    with running_app(create_app(under, state)) as base_url:
        page = httpx.get(f"{base_url}/medrag/")
        assert page.status_code == 200 and 'href="static/app.css"' in page.text
        assert httpx.get(f"{base_url}/medrag/static/app.js").status_code == 200
        codes = httpx.get(f"{base_url}/medrag/codes", params={"term": "cpap machine"}, timeout=60)
        assert codes.status_code == 200 and codes.json()["results"]
        missing = httpx.get(f"{base_url}/medrag/nowhere")
        assert missing.status_code == 404 and missing.json()["instance"] == "/nowhere"
        assert httpx.get(f"{base_url}/medrag/openapi.json").json()["servers"] == [{"url": "/medrag"}]


def test_health_shows_no_filesystem_path(api):
    health = api.get("/health").json()
    assert "/" not in health["embedding_model"]["name"] and health["embedding_model"]["name"]
    assert str(Path.home()) not in json.dumps(health) and "/tmp" not in json.dumps(health)


@pytest.mark.parametrize(("body", "status", "fragment"), [
    (b'{"question": ', 400, "not valid JSON"),
    (b'{"question": " "}', 400, "the question is empty"),
    (b'{"question": "oxygen", "filters": {"as_of": "yesterday"}}', 400, "as_of must be a date"),
    (b'{"question": "oxygen", "filters": {"release": "1999"}}', 400, "no release labelled '1999'"),
    (b'{"question": "oxygen", "filters": {"colour": "red"}}', 422, "filters.colour"),
    (b'{"question": "oxygen", "llm": "vllm"}', 400, "VLLM_BASE_URL"),
    (b'{"text": "oxygen"}', 422, "question"),
    (json.dumps({"question": "x" * (MAX_BODY_BYTES + 4_000)}).encode(), 413, f"limit is {MAX_BODY_BYTES:,}"),
])
def test_bad_ask_bodies_are_4xx_streamed_or_not(api, body, status, fragment):
    for params in ({}, {"stream": "true"}):
        response = api.post("/ask", params=params, content=body, headers={"Content-Type": "application/json"})
        assert response.status_code == status, response.text
        assert fragment in response.json()["error"]


def test_a_chunked_body_over_the_limit_is_refused(api):
    def pieces():
        yield b'{"question": "'
        for _ in range(MAX_BODY_BYTES // 1024 + 16):
            yield b"x" * 1024
        yield b'"}'

    response = api.post("/ask", content=pieces(), headers={"Content-Type": "application/json"})
    assert response.status_code == 413 and "limit" in response.json()["error"]


# -- token, rate limit, metrics --------------------------------------------------------------------------------


def test_a_token_is_required_on_every_route_but_health_when_set(settings, state):
    secured = dataclasses.replace(settings, api_token="s3cret")
    with running_app(create_app(secured, state)) as base_url:
        for path in ("/search?q=oxygen", "/codes?term=cpap", "/releases", "/changes", "/metrics"):
            response = httpx.get(base_url + path)
            assert response.status_code == 401, path
            assert response.headers["WWW-Authenticate"] == "Bearer"
            wrong = httpx.get(base_url + path, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401
            assert httpx.get(base_url + path, headers={"Authorization": "Bearer s3cret"}, timeout=60).status_code == 200
        assert httpx.post(f"{base_url}/ask", json={"question": OXYGEN}).status_code == 401
        assert httpx.get(f"{base_url}/health").status_code == 200
        # the page, the API's description and its docs hold no data (the page asks for the token when it needs it)
        for path in ("/", "/openapi.json", "/docs", "/docs-assets/swagger-ui.css"):
            assert httpx.get(f"{base_url}{path}").status_code == 200, path


@pytest.mark.parametrize("store", ["database", "process"])
def test_the_rate_limit_answers_429_with_retry_after(settings, state, indexed_engine, store):
    with indexed_engine.begin() as conn:  # the shared buckets: this client's starts full
        conn.execute(text("DELETE FROM medrag_rate_bucket"))
    limited = dataclasses.replace(settings, api_rate=3, api_rate_store=store)
    with running_app(create_app(limited, state)) as base_url:
        statuses = [httpx.get(f"{base_url}/releases").status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        refused = httpx.get(f"{base_url}/releases")
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
        assert "3 requests per minute" in refused.json()["error"]
        assert httpx.get(f"{base_url}/health").status_code == 200  # probes are never limited


def test_metrics_count_what_was_sent(api):
    before = api.get("/metrics").text
    for _ in range(3):
        assert api.get("/search", params={"q": "wheelchair"}).status_code == 200
    assert api.get("/search", params={"q": ""}).status_code == 400
    refused = api.post("/ask", json={"question": "asdf qwerty zxcv uiop"}).json()
    assert refused["refused"]
    after = api.get("/metrics").text
    assert after.startswith("# HELP") and "text/plain" in api.get("/metrics").headers["content-type"]

    def grew(name: str, **labels: str) -> float:
        return metric(after, name, **labels) - metric(before, name, **labels)

    assert grew("medrag_http_requests_total", route="/search", method="GET", status="200") == 3
    assert grew("medrag_http_requests_total", route="/search", method="GET", status="400") == 1
    assert grew("medrag_http_request_duration_seconds_count", route="/search") == 4
    assert grew("medrag_answer_refusals_total", reason=refused["refusal_reason"]) == 1


# -- the database goes away and comes back -------------------------------------------------------------------------


def test_a_stopped_database_is_a_503_and_the_next_request_after_restart_succeeds(settings):
    home = Path(tempfile.mkdtemp(prefix="medrag-down-", dir=os.environ.get("MEDRAG_TEST_TMP", "/tmp")))
    home.chmod(0o755)
    server = EmbeddedPostgres(home / "pgdata")
    try:
        first = server.start()
        url = first.url()
        migrate.upgrade(url)
        own = dataclasses.replace(settings, database_url=url)
        with running_app(create_app(own, ServeState(own))) as base_url:
            assert httpx.get(f"{base_url}/releases").json() == []
            server.stop()
            down = httpx.get(f"{base_url}/releases")
            assert down.status_code == 503 and down.json()["error"].startswith("database unreachable:")
            health = httpx.get(f"{base_url}/health")
            assert health.status_code == 503 and health.json()["database"]["reachable"] is False
            asked = httpx.post(f"{base_url}/ask", json={"question": OXYGEN}, timeout=60)
            assert asked.status_code == 503
            assert server.start().port == first.port  # the server's URL stays right
            assert httpx.get(f"{base_url}/releases").status_code == 200
            assert httpx.get(f"{base_url}/health").status_code == 200
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


# -- the command itself ----------------------------------------------------------------------------------------


def test_medrag_serve_starts_and_a_bad_setting_is_one_line(settings, tmp_path):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "DATABASE_URL": settings.database_url, "MEDRAG_HOME": str(settings.home)}
    bad = subprocess.run([sys.executable, "-m", "medrag", "serve", "--port", str(port)], capture_output=True,
                         text=True, env={**env, "MEDRAG_API_RATE": "fast"}, timeout=60)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "medrag: error: MEDRAG_API_RATE must be a whole number, got 'fast'"
    process = subprocess.Popen([sys.executable, "-m", "medrag", "serve", "--port", str(port)], env=env,
                               stdout=subprocess.DEVNULL, stderr=(tmp_path / "serve.log").open("w"))
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
                time.sleep(0.5)
        assert health.status_code == 200 and health.json()["embedding_model"]["loaded"]
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_rate_limiter_refills_and_forgets_idle_clients():
    from medrag.serve import guard

    now = [0.0]
    limiter = guard.RateLimiter(2, clock=lambda: now[0])
    assert [limiter.wait_seconds("a") for _ in range(3)] == [0, 0, 30]
    now[0] = 30.0  # one token back after 30 s at 2 a minute
    assert limiter.wait_seconds("a") == 0 and limiter.wait_seconds("a") == 30
    for n in range(guard.MAX_TRACKED_CLIENTS + 1):
        limiter.wait_seconds(f"client-{n}")
    now[0] = 100.0
    limiter.wait_seconds("late")
    assert len(limiter._buckets) == 1  # every bucket idle for a minute was full again, so it was dropped
