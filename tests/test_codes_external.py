"""The optional NLM Clinical Tables connector against a local server answering in that API's documented format."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from click.testing import CliRunner

from medrag.cli import main
from medrag.codes.clinical_tables import TABLES, ExternalCode, parse_search_response, search_clinical_tables

# Responses as https://clinicaltables.nlm.nih.gov/api/{table}/v3/search returns them:
# [total, [codes], {extra field: [values per code]} | null, [[display fields per code]]].
ANSWERS = {
    "loinc_items": [2, ["4548-4", "17856-6"], None,
                    [["4548-4", "Hemoglobin A1c/Hemoglobin.total in Blood"],
                     ["17856-6", "Hemoglobin A1c/Hemoglobin.total in Blood by HPLC"]]],
    "rxterms": [1, ["ZOFRAN (Oral Pill)"], {"RXCUIS": [["104894", "104895"]]}, [["ZOFRAN (Oral Pill)"]]],
    "ucum": [1, ["mg"], None, [["mg", "milligram"]]],
    "hpo": [1, ["HP:0001250"], None, [["HP:0001250", "Seizure"]]],
}


class _Server:
    """Counts requests and concurrency; `fail` maps a table to how many 503s it answers first, `slow` delays."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        self.fail: dict[str, int] = {}
        self.slow: dict[str, float] = {}
        self.active = 0
        self.peak = 0
        self.lock = threading.Lock()


@pytest.fixture
def server() -> Iterator[tuple[_Server, str]]:
    state = _Server()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            url = urlparse(self.path)
            table = url.path.split("/")[2]
            with state.lock:
                state.requests.append((table, parse_qs(url.query)))
                state.active += 1
                state.peak = max(state.peak, state.active)
                failing = state.fail.get(table, 0)
                if failing:
                    state.fail[table] = failing - 1
            # A call stops counting as active before its answer is sent: once the client has the answer it may
            # start the next call before this thread runs again.
            try:
                time.sleep(state.slow.get(table, 0.05))
            finally:
                with state.lock:
                    state.active -= 1
            if failing:
                self.send_response(503)
                self.end_headers()
                return
            body = json.dumps(ANSWERS[table]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield state, f"http://127.0.0.1:{httpd.server_address[1]}/api"
    httpd.shutdown()
    httpd.server_close()


def test_all_four_tables_are_searched_concurrently(server) -> None:
    state, base_url = server
    lookup = search_clinical_tables("a1c", base_url=base_url)
    assert lookup.errors == {}
    assert ExternalCode("LOINC", "4548-4", "Hemoglobin A1c/Hemoglobin.total in Blood") in lookup.codes
    assert ExternalCode("RxTerms", "ZOFRAN (Oral Pill)", "ZOFRAN (Oral Pill)", ("104894", "104895")) in lookup.codes
    assert ExternalCode("UCUM", "mg", "milligram") in lookup.codes
    assert ExternalCode("HPO", "HP:0001250", "Seizure") in lookup.codes
    assert {table for table, _ in state.requests} == {"loinc_items", "rxterms", "ucum", "hpo"}
    params = dict(state.requests)["loinc_items"]
    assert params["terms"] == ["a1c"] and params["maxList"] == ["5"] and params["df"] == ["LOINC_NUM,text"]
    assert 2 <= state.peak <= 5
    assert "LOINC 2" in lookup.describe()


def test_server_errors_are_retried_twice(server) -> None:
    state, base_url = server
    state.fail = {"hpo": 2}
    lookup = search_clinical_tables("seizure", systems=["HPO"], base_url=base_url)
    assert lookup.errors == {} and lookup.codes == [ExternalCode("HPO", "HP:0001250", "Seizure")]
    assert len(state.requests) == 3
    state.requests.clear()
    state.fail = {"hpo": 3}
    lookup = search_clinical_tables("seizure", systems=["HPO"], base_url=base_url)
    assert lookup.codes == [] and lookup.errors == {"HPO": "HTTP 503"}
    assert len(state.requests) == 3


def test_a_slow_table_times_out_without_failing_the_others(server) -> None:
    state, base_url = server
    state.slow = {"ucum": 1.0}
    lookup = search_clinical_tables("mg", systems=["UCUM", "HPO"], base_url=base_url, timeout=0.3, retries=1)
    assert lookup.errors == {"UCUM": "ReadTimeout"}
    assert [code.system for code in lookup.codes] == ["HPO"]
    assert sum(1 for table, _ in state.requests if table == "ucum") == 2


def test_concurrency_is_capped(server) -> None:
    state, base_url = server
    state.slow = dict.fromkeys(("loinc_items", "rxterms", "ucum", "hpo"), 0.3)
    # A generous timeout: a retry after a timeout on a loaded machine would be a third call in flight.
    lookup = search_clinical_tables("a1c", base_url=base_url, max_concurrent=2, timeout=30)
    assert lookup.errors == {}
    assert state.peak == 2


def test_unreachable_server_is_reported_not_raised() -> None:
    lookup = search_clinical_tables("a1c", systems=["LOINC"], base_url="http://127.0.0.1:9/api", retries=0)
    assert lookup.codes == [] and "LOINC" in lookup.errors


def test_malformed_payloads_are_rejected() -> None:
    for payload in ({"error": "x"}, [1, ["a"], None], [1, ["a", "b"], None, [["a"]]]):
        with pytest.raises(ValueError, match="not a Clinical Tables search response"):
            parse_search_response(TABLES["LOINC"], payload)


def test_codes_command_lists_external_codes_apart(server, indexed_engine, indexed_settings, monkeypatch) -> None:
    _, base_url = server
    monkeypatch.setenv("DATABASE_URL", indexed_settings.database_url)
    monkeypatch.setenv("MEDRAG_HOME", str(indexed_settings.home))
    outcome = CliRunner().invoke(main, ["codes", "zofran", "--json", "--external", "--external-url", base_url])
    assert outcome.exit_code == 0, outcome.stderr
    printed = json.loads(outcome.stdout)
    assert {"system": "LOINC", "code": "4548-4", "display": "Hemoglobin A1c/Hemoglobin.total in Blood"} \
        in printed["external"]
    assert all(result["system"] in ("ICD-10-CM", "HCPCS") for result in printed["results"])
    assert any(step.startswith("external (NLM Clinical Tables): LOINC 2") for step in printed["trace"])
    without = CliRunner().invoke(main, ["codes", "zofran", "--json"])
    assert "external" not in json.loads(without.stdout)
