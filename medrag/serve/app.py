"""`medrag serve`: the HTTP API and the coders' page, over the same functions (and the same JSON) as the CLI.

Every route calls what the matching CLI command calls and returns its --json output; bad input is a 4xx with the
CLI's one-line message, an unreachable database a 503. Blocking work (SQL, the embedding model) runs in the
server's thread pool; the model, the engine and the code finder are loaded once per process (ServeState).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib import resources
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import DBAPIError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from medrag.codes.finder import DEFAULT_TOP, MAX_TOP
from medrag.core.config import Settings, load_settings
from medrag.core.db import DatabaseUnavailable, get_engine
from medrag.core.errors import MedragError, unreachable_message
from medrag.serve.guard import (
    MAX_BODY_BYTES,
    PROBLEM_TYPE,
    BodyLimit,
    RateLimiter,
    SharedRateLimiter,
    problem_body,
    token_matches,
)
from medrag.serve.metrics import ServerMetrics
from medrag.serve.schemas import (
    AskRequest,
    AskResponse,
    ChangesResponse,
    CheckRequest,
    CheckResponse,
    CodesResponse,
    ErrorResponse,
    Health,
    ReleaseChange,
    ReleaseRow,
    SearchResponse,
)
from medrag.serve.state import ServeState

log = logging.getLogger("medrag.serve")
# Routes anyone may call, token or not: the load balancer's probe and the page's own files (they hold no data;
# the page asks for the token when a data route answers 401).
OPEN_PATHS = ("/health", "/", "/favicon.ico", "/docs", "/openapi.json")
STATIC_PREFIX = ("/static/", "/docs-assets/")
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "content": {PROBLEM_TYPE: {}}} for code in (400, 401, 404, 413, 422, 429, 503)
}


def cli_text(value: Any) -> str:
    """The value as the CLI's --json prints it: `json.dumps(..., default=str)` (dates as str(), not ISO)."""
    return json.dumps(value, default=str)


def cli_response(value: Any) -> Response:
    """A JSON response whose body is exactly the CLI's --json text for the value."""
    return Response(cli_text(value), media_type="application/json")


def _one_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def error_status(error: Exception) -> tuple[int, str]:
    """The HTTP status and one-line message for an exception a route raised."""
    if isinstance(error, DatabaseUnavailable):
        return 503, _one_line(error)
    if isinstance(error, MedragError):
        return 400, _one_line(error)
    if isinstance(error, DBAPIError) and (error.connection_invalidated or _is_connection_error(error)):
        return 503, unreachable_message(error)
    return 500, f"internal error ({type(error).__name__}); the server log has the details"


def _is_connection_error(error: DBAPIError) -> bool:
    import psycopg

    return isinstance(error.orig, psycopg.OperationalError | psycopg.InterfaceError)


def problem(status: int, detail: str, instance: str, headers: dict[str, str] | None = None,
            errors: list[dict[str, str]] | None = None) -> JSONResponse:
    """An RFC 9457 problem details response (guard.problem_body); `errors` lists every invalid field of a 422."""
    body = problem_body(status, detail, instance)
    if errors is not None:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_TYPE)


def route_path(request: Request) -> str:
    """The request's path within the app: without MEDRAG_ROOT_PATH's prefix when the proxy passed it on."""
    root, path = request.scope.get("root_path", ""), request.url.path
    return path[len(root):] or "/" if root and path.startswith(root) else path


def _filters(raw: dict[str, Any]):  # noqa: ANN202 - SearchFilters, imported lazily with the retrieval stack
    from medrag.retrieval.search import SearchFilters

    return SearchFilters.from_json({name: value for name, value in raw.items() if value not in (None, [], "")})


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _rate_limiter(settings: Settings) -> RateLimiter | SharedRateLimiter | None:
    """The rate limit MEDRAG_API_RATE asks for, its buckets where MEDRAG_API_RATE_STORE says (none at rate 0)."""
    if not settings.api_rate:
        return None
    if settings.api_rate_store == "process":
        return RateLimiter(settings.api_rate)
    return SharedRateLimiter(get_engine(settings), settings.api_rate)


_LIMIT_UNREADABLE = "the rate limit cannot be read from the database; retry shortly"


async def _wait_seconds(limiter: RateLimiter | SharedRateLimiter, client: str) -> int:
    """The limiter's answer, off the event loop (the shared one is a database write); -1 when its database is
    unreachable, which the front door answers with a 503."""
    try:
        return await run_in_threadpool(limiter.wait_seconds, client)
    except (DatabaseUnavailable, DBAPIError) as error:
        log.warning("rate limit: %s", _one_line(error))
        return -1


def create_app(settings: Settings | None = None, state: ServeState | None = None) -> FastAPI:
    """The FastAPI application: routes, error handlers, token and rate limit, metrics, the page."""
    settings = settings or load_settings()
    state = state or ServeState(settings)
    metrics = ServerMetrics()
    limiter = _rate_limiter(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI):  # noqa: ANN202 - FastAPI's lifespan protocol
        await run_in_threadpool(state.load)
        yield
        state.close()

    # FastAPI's /docs and /redoc load their scripts from a CDN, which offline machines cannot reach: /docs is served
    # below from the swagger-ui-bundle package instead, /redoc left off.
    app = FastAPI(title="medrag", summary="Medicare reference data: search, cited answers, code lookup.",
                  version="1", docs_url=None, redoc_url=None, lifespan=lifespan)
    app.state.medrag = state
    app.state.metrics = metrics

    @app.middleware("http")
    async def front_door(request: Request, call_next: Callable) -> Response:
        started = time.perf_counter()
        path = route_path(request)
        response: Response | None = None
        try:
            guarded = not (path in OPEN_PATHS or path.startswith(STATIC_PREFIX))
            if guarded and settings.api_token and not token_matches(request.headers.get("authorization"),
                                                                    settings.api_token):
                response = problem(401, "a bearer token is required: Authorization: Bearer <token>", path,
                                   {"WWW-Authenticate": "Bearer"})
            elif guarded and limiter is not None and (wait := await _wait_seconds(limiter, _client(request))):
                response = (problem(429, f"rate limit of {settings.api_rate} requests per minute reached; "
                                         f"retry in {wait} s", path, {"Retry-After": str(wait)}) if wait > 0
                            else problem(503, _LIMIT_UNREADABLE, path))
            else:
                response = await call_next(request)
            return response
        finally:
            route = request.scope.get("route")
            label = getattr(route, "path", None) or ("unmatched" if guarded else path)
            metrics.observe_request(label, request.method, response.status_code if response else 500,
                                    time.perf_counter() - started)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError) -> JSONResponse:
        found = error.errors()
        first = found[0] if found else {}
        if first.get("type") == "json_invalid":
            return problem(400, f"the body is not valid JSON: {first.get('ctx', {}).get('error', '')}",
                           route_path(request))
        listed = [{"field": ".".join(str(part) for part in item.get("loc", ()) if part not in ("body", "query"))
                   or "request", "message": item.get("msg", "invalid")} for item in found]
        detail = "; ".join(f"{item['field']}: {item['message']}" for item in listed[:3])
        more = f" (and {len(listed) - 3} more)" if len(listed) > 3 else ""
        return problem(422, (detail or "request: invalid") + more, route_path(request), errors=listed)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> JSONResponse:
        message = error.detail if isinstance(error.detail, str) else json.dumps(error.detail)
        if error.status_code == 404 and message == "Not Found":
            message = f"no such route: {request.method} {route_path(request)}"
        return problem(error.status_code, message, route_path(request), getattr(error, "headers", None))

    # MedragError and DBAPIError are handled where the route raised them (a 4xx / 503 ends the request cleanly);
    # Exception reaches Starlette's last-resort handler, which answers and then re-raises for the server's log.
    @app.exception_handler(MedragError)
    @app.exception_handler(DBAPIError)
    @app.exception_handler(Exception)
    async def failure(request: Request, error: Exception) -> JSONResponse:
        status, message = error_status(error)
        if status == 500:
            # what the answer promises: the server log has the details (the client gets only the error's type)
            log.error("%s %s failed: %s: %s", request.method, request.url.path, message,
                      (str(error).strip().splitlines() or [type(error).__name__])[0])
        return problem(status, message, route_path(request))

    # -- the page --------------------------------------------------------------------------------------------

    static = resources.files("medrag.serve") / "static"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(str(static / "index.html"), media_type="text/html")

    # Swagger UI from the swagger-ui-bundle package: the interactive docs without a CDN.
    import swagger_ui_bundle

    app.mount("/docs-assets", StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def interactive_docs(request: Request) -> Response:
        from fastapi.openapi.docs import get_swagger_ui_html

        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(openapi_url=f"{root}/openapi.json", title="medrag API",
                                   swagger_js_url=f"{root}/docs-assets/swagger-ui-bundle.js",
                                   swagger_css_url=f"{root}/docs-assets/swagger-ui.css",
                                   swagger_favicon_url=f"{root}/docs-assets/favicon-32x32.png")

    # -- the API ---------------------------------------------------------------------------------------------

    @app.get("/health", response_model=Health, responses={503: {"model": Health}})
    def health() -> JSONResponse:
        """Database reachable, schema at head, current release per source, embedding model, vLLM (503: not ok)."""
        report = state.health()
        return JSONResponse(report, status_code=200 if report["status"] == "ok" else 503)

    @app.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
    def prometheus_metrics() -> Response:
        """Prometheus text: requests, latency histograms per route, refusals by reason, degraded answers, drops."""
        return Response(metrics.render(), media_type=metrics.content_type)

    @app.get("/search", response_model=SearchResponse, responses=ERRORS)
    def search_route(
        q: Annotated[str, Query(description="The query: words, a question, or identifiers (NCD 240.2, E0601).")],
        k: Annotated[int, Query(ge=1, le=200)] = 10,
        source: Annotated[list[str], Query(description="Only these sources (repeatable).")] = (),
        key: Annotated[list[str], Query(description="Only these document keys (repeatable).")] = (),
        release: Annotated[str, Query(description="'current', 'all' or a release label.")] = "current",
        as_of: Annotated[str | None, Query(description="Only documents in force on this date, YYYY-MM-DD.")] = None,
        contractor: str | None = None,
        state_code: Annotated[str | None, Query(alias="state", description="Two-letter state code.")] = None,
        manual: str | None = None,
        chapter: str | None = None,
    ) -> Response:
        """`medrag search --json`: hybrid retrieval with the CLI's filters."""
        from medrag.retrieval.search import search, validate_query

        validate_query(q)
        filters = _filters({"source": list(source), "key": list(key), "release": release, "as_of": as_of,
                            "contractor": contractor, "state": state_code, "manual": manual, "chapter": chapter})
        result = search(state.engine, q, k=k, filters=filters, embedder=state.embedder)
        return cli_response(result.as_json())

    @app.post("/ask", response_model=AskResponse, responses={
        **ERRORS, 200: {"content": {"text/event-stream": {}},
                        "description": "With ?stream=true: events `sentence` (one per validated sentence), then "
                                       "`final` (this object) or `error`."}})
    def ask_route(body: AskRequest, request: Request, stream: bool = False) -> Response:
        """`medrag ask --json`; with ?stream=true, Server-Sent Events sentence by sentence, then the whole answer."""
        from medrag.answer.checks import check_question
        from medrag.answer.pipeline import ask, choose_backend
        from medrag.retrieval.search import check_filters

        filters = _filters(body.filters.model_dump())
        backend = body.llm or "auto"

        def answer(on_sentence: Callable | None = None) -> dict[str, Any]:
            result = ask(state.engine, body.question, settings=settings, embedder=state.embedder, filters=filters,
                         k=body.k, backend=backend, stream=stream, on_sentence=on_sentence,
                         route="POST /ask", client_address=_client(request), log_engine=state.write_engine)
            payload = result.as_json()
            metrics.observe_answer(payload)
            return payload

        if not stream:
            return cli_response(answer())
        # ask() checks these itself; once the stream has started they could only be an `error` event, not a 4xx
        check_question(body.question)
        choose_backend(backend, settings)
        with state.engine.connect() as conn:
            check_filters(conn, filters)
        return StreamingResponse(stream_events(answer, settings.sse_keepalive, metrics), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.get("/codes", response_model=CodesResponse, responses=ERRORS)
    def codes_route(
        term: Annotated[str, Query(description="A clinical term, or a code.")],
        system: Annotated[list[str], Query(description="ICD-10-CM and/or HCPCS (repeatable); default: the systems "
                                                       "the term is about.")] = (),
        release: Annotated[str | None, Query(description="Release label; default: the current ones.")] = None,
        top: Annotated[int, Query(ge=1, le=MAX_TOP, description="Codes per system.")] = DEFAULT_TOP,
    ) -> Response:
        """`medrag codes --json`: codes for a term with confidence, tier, related LCDs and the trace."""
        from medrag.codes.finder import clean_term

        clean_term(term)
        search = state.finder().find(term, systems=tuple(system), release=release, top=top)
        return cli_response(search.as_json())

    @app.post("/check", response_model=CheckResponse, responses=ERRORS)
    def check_route(body: CheckRequest) -> Response:
        """`medrag check FILE --json` for up to 1,000 lines: each line's findings, and the counts."""
        from medrag.check.checker import Summary, check_lines

        lines = check_lines(state.engine, [line.model_dump() for line in body.lines])
        summary = Summary()
        for line in lines:
            summary.add(line)
        return cli_response({"lines": lines, "summary": summary.as_json()})

    @app.get("/changes", response_model=ChangesResponse, responses=ERRORS)
    def changes_route(
        source: Annotated[list[str], Query(description="Source(s); default: every source.")] = (),
        from_label: Annotated[str | None, Query(alias="from", description="The older release (with to).")] = None,
        to_label: Annotated[str | None, Query(alias="to", description="The newer release (with from).")] = None,
        since: Annotated[str | None, Query(description="Changes dated on or after YYYY-MM-DD.")] = None,
        codes: Annotated[list[str], Query(description="Codes (repeatable, or separated by commas or spaces): only "
                                                      "the changes that touch them.")] = (),
    ) -> Response:
        """`medrag changes --json`: the kept change sets asked for (a pair not computed yet is named in gaps)."""
        import datetime as dt

        from medrag.changes.codes import MAX_API_CODES, parse_code_list
        from medrag.changes.digest import read_digest
        from medrag.core.registry import spec

        for name in source:
            spec(name)
        if bool(from_label) != bool(to_label):
            raise MedragError("from and to go together")
        try:
            since_day = dt.date.fromisoformat(since) if since else None
        except ValueError as exc:
            raise MedragError(f"since {since!r} is not a date (YYYY-MM-DD)") from exc
        wanted = parse_code_list(" ".join(codes).replace(",", " ").split(), "codes") if codes else None
        if wanted is not None and len(wanted) > MAX_API_CODES:
            raise MedragError(f"{len(wanted):,} codes; at most {MAX_API_CODES:,} per request (the CLI takes more)")
        with state.engine.connect() as conn:
            digest = read_digest(conn, sources=list(source) or None, from_label=from_label, to_label=to_label,
                                 since=since_day, codes=wanted)
        return cli_response(digest.as_json())

    @app.get("/releases", response_model=list[ReleaseRow], responses=ERRORS)
    def releases_route(source: Annotated[str | None, Query(description="Only this source.")] = None) -> Response:
        """`medrag releases list --json`."""
        from medrag.core.registry import SOURCE_NAMES
        from medrag.ingest.releases import list_releases

        if source is not None and source not in SOURCE_NAMES:
            raise MedragError(f"unknown source {source!r}; choose from {', '.join(SOURCE_NAMES)}")
        with state.engine.connect() as conn:
            return cli_response(list_releases(conn, source))

    @app.get("/releases/diff", response_model=list[ReleaseChange], responses=ERRORS)
    def releases_diff_route(source: str, old: str, new: str) -> Response:
        """`medrag releases diff --json` (one object per line there, a list here)."""
        from medrag.ingest.releases import diff_releases

        with state.engine.connect() as conn:
            return cli_response(diff_releases(conn, source, old, new))

    # Added last, so it runs first: an oversized body is refused before anything reads it.
    app.add_middleware(BodyLimit, max_bytes=MAX_BODY_BYTES)
    if settings.root_path:
        app.add_middleware(RootPath, root_path=settings.root_path)
    return app


class RootPath:
    """Serves the app under MEDRAG_ROOT_PATH: the prefix every request's scope carries (a proxy that passes the
    prefix on, or strips it), so routing, the OpenAPI servers and /docs agree with the URLs the browser sees."""

    def __init__(self, app: Callable, root_path: str) -> None:
        self.app, self.root_path = app, root_path

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        """Set the scope's root_path unless the server already did."""
        if scope["type"] in ("http", "websocket") and not scope.get("root_path"):
            scope = {**scope, "root_path": self.root_path}
        await self.app(scope, receive, send)


class AnswerCancelled(Exception):
    """The client of a streamed answer hung up: the answer stops at its next sentence."""


async def stream_events(answer: Callable[[Callable], dict[str, Any]], keepalive_s: float,
                        metrics: ServerMetrics | None = None) -> AsyncIterator[str]:
    """Server-Sent Events of one answer: `sentence` per validated sentence as it passes, then `final` or `error`; a
    `: keep-alive` comment whenever `keepalive_s` pass without one, so proxies keep the connection open. When the
    client hangs up, the answer is cancelled at its next sentence (an LLM's stream is closed there)."""
    from medrag.answer.pipeline import cited_sentence

    loop = asyncio.get_running_loop()
    events: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()
    cancelled = threading.Event()
    count = 0

    def put(event: tuple[str, dict[str, Any]] | None) -> None:
        loop.call_soon_threadsafe(events.put_nowait, event)

    def on_sentence(check: Any) -> None:
        nonlocal count
        if cancelled.is_set():
            raise AnswerCancelled("the client hung up")
        put(("sentence", {"index": count, "text": cited_sentence(check), "sources": list(check.sources)}))
        count += 1

    def work() -> None:
        try:
            put(("final", answer(on_sentence)))
        except AnswerCancelled:
            if metrics is not None:
                metrics.cancelled.inc()
        except Exception as error:  # noqa: BLE001 - the stream has started: the failure becomes its last event
            status, message = error_status(error)
            if status == 500:
                log.exception("streamed answer failed")
            put(("error", {"error": message, "status": status}))
        finally:
            put(None)

    threading.Thread(target=work, name="medrag-answer", daemon=True).start()
    try:
        while True:
            try:
                event = await asyncio.wait_for(events.get(), keepalive_s)
            except TimeoutError:
                yield ": keep-alive\n\n"
                continue
            if event is None:
                return
            name, data = event
            yield f"event: {name}\ndata: {cli_text(data)}\n\n"
    finally:  # the stream ended, or the client left (the server cancels this generator)
        cancelled.set()
