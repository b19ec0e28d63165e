"""Optional, off by default: LOINC, RxTerms (RxNorm), UCUM and HPO codes from the NLM Clinical Tables API.

These code systems are not loaded locally, so `medrag codes --external` asks the NLM Clinical Table Search Service
(https://clinicaltables.nlm.nih.gov) and lists its answers apart from the ICD-10-CM / HCPCS results, which still
come only from the local tables. The search API answers `GET {base}/{table}/v3/search?terms=...&maxList=...` with
a JSON array: [total, [codes], {extra field: [values per code]} or null, [[display fields per code]], ...].
Each call has a 3 s timeout and 2 retries (timeouts, connection errors, 429 and 5xx); at most 5 run at once. A
table that fails is reported in the trace, never fatal.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

DEFAULT_BASE_URL = "https://clinicaltables.nlm.nih.gov/api"
TIMEOUT_S = 3.0
RETRIES = 2
MAX_CONCURRENT = 5
BACKOFF_S = 0.2


@dataclass(frozen=True)
class ClinicalTable:
    """One searchable table: its path and the fields asked for (df: display fields, ef: extra fields)."""

    system: str
    path: str
    params: dict[str, str]
    code_field: int | None  # index of the code among the display fields; None: the list code itself
    extra_field: str | None = None


TABLES = {
    "LOINC": ClinicalTable("LOINC", "loinc_items/v3/search", {"type": "question", "df": "LOINC_NUM,text"}, 0),
    # RxTerms lists drug names; their RxNorm concept ids (one per strength and form) come as an extra field.
    "RxTerms": ClinicalTable("RxTerms", "rxterms/v3/search", {"df": "DISPLAY_NAME", "ef": "RXCUIS"}, None, "RXCUIS"),
    "UCUM": ClinicalTable("UCUM", "ucum/v3/search", {"df": "cs_code,name"}, 0),
    "HPO": ClinicalTable("HPO", "hpo/v3/search", {"df": "id,name"}, 0),
}


@dataclass(frozen=True)
class ExternalCode:
    """A code an external table returned for the term."""

    system: str
    code: str
    display: str
    extra: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """{"system", "code", "display"} plus "rxcuis" for an RxTerms drug."""
        item: dict[str, Any] = {"system": self.system, "code": self.code, "display": self.display}
        if self.extra:
            item["rxcuis"] = list(self.extra)
        return item


@dataclass
class ExternalLookup:
    """Codes from every table asked, and the tables that failed with why."""

    codes: list[ExternalCode] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    milliseconds: float = 0.0

    def describe(self) -> str:
        """One trace line."""
        counts: dict[str, int] = {}
        for code in self.codes:
            counts[code.system] = counts.get(code.system, 0) + 1
        parts = [f"{system} {count}" for system, count in counts.items()]
        parts += [f"{system} failed ({reason})" for system, reason in self.errors.items()]
        return f"external (NLM Clinical Tables): {'; '.join(parts) or 'nothing'} [{self.milliseconds:.0f} ms]"


class _Retryable(Exception):
    """A failure worth another try (timeout, connection error, 429, 5xx)."""


def parse_search_response(table: ClinicalTable, payload: Any) -> list[ExternalCode]:
    """ExternalCodes from a v3 search response; ValueError when the payload does not have the documented shape."""
    if not (isinstance(payload, list) and len(payload) >= 4 and isinstance(payload[1], list)
            and isinstance(payload[3], list) and len(payload[1]) == len(payload[3])):
        raise ValueError("not a Clinical Tables search response")
    extras = payload[2] if isinstance(payload[2], dict) else {}
    extra_values = extras.get(table.extra_field, []) if table.extra_field else []
    codes = []
    for index, (code, fields) in enumerate(zip(payload[1], payload[3], strict=True)):
        fields = [str(value) for value in (fields or [])]
        display = fields[-1] if fields else str(code)
        chosen = fields[table.code_field] if table.code_field is not None and fields else str(code)
        extra = extra_values[index] if index < len(extra_values) else None
        codes.append(ExternalCode(table.system, chosen, display, tuple(str(value) for value in (extra or []))))
    return codes


def _get(client: httpx.Client, url: str, params: dict[str, str]) -> Any:
    try:
        response = client.get(url, params=params)
    except (httpx.TimeoutException, httpx.TransportError) as error:
        raise _Retryable(type(error).__name__) from error
    if response.status_code == 429 or response.status_code >= 500:
        raise _Retryable(f"HTTP {response.status_code}")
    if response.status_code != 200:
        raise ValueError(f"HTTP {response.status_code}")
    return response.json()


def _search_table(client: httpx.Client, base_url: str, table: ClinicalTable, term: str, max_list: int,
                  retries: int) -> list[ExternalCode]:
    url = f"{base_url.rstrip('/')}/{table.path}"
    params = {"terms": term, "maxList": str(max_list), **table.params}
    for attempt in range(retries + 1):
        try:
            return parse_search_response(table, _get(client, url, params))
        except _Retryable:
            if attempt == retries:
                raise
            time.sleep(BACKOFF_S * (attempt + 1))
    raise AssertionError("unreachable")


def search_clinical_tables(
    term: str,
    *,
    systems: Sequence[str] = tuple(TABLES),
    base_url: str = DEFAULT_BASE_URL,
    max_list: int = 5,
    timeout: float = TIMEOUT_S,
    retries: int = RETRIES,
    max_concurrent: int = MAX_CONCURRENT,
) -> ExternalLookup:
    """Ask each table for the term, concurrently (at most max_concurrent calls at once), failures recorded."""
    started = time.perf_counter()
    lookup = ExternalLookup()
    tables = [TABLES[system] for system in systems]
    with httpx.Client(timeout=timeout, limits=httpx.Limits(max_connections=max_concurrent)) as client, \
            ThreadPoolExecutor(max_workers=max(1, min(max_concurrent, len(tables)))) as pool:
        futures = {table.system: pool.submit(_search_table, client, base_url, table, term, max_list, retries)
                   for table in tables}
        for system, future in futures.items():
            try:
                lookup.codes += future.result()
            except (_Retryable, ValueError) as error:
                lookup.errors[system] = str(error) or type(error).__name__
    lookup.milliseconds = (time.perf_counter() - started) * 1000
    return lookup
