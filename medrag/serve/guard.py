"""What stands before the routes: the bearer token, the per-client rate limit and the request body size limit."""

from __future__ import annotations

import hmac
import itertools
import json
import math
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from sqlalchemy import Engine, text

# A question with its filters is well under 16 KB, and the largest POST /check (1,000 claim lines of a code, three
# modifiers, twelve diagnoses and a state) about 250 KB; anything bigger is a mistake or an attack.
MAX_BODY_BYTES = 384 * 1024
# Buckets kept before idle ones are dropped (a bucket idle for a minute is full again: dropping it changes nothing).
MAX_TRACKED_CLIENTS = 10_000


def token_matches(header: str | None, token: str) -> bool:
    """Whether an Authorization header carries the bearer token (compared in constant time)."""
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


class RateLimiter:
    """Per-client token buckets: `per_minute` requests a minute, in bursts of at most `per_minute`."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def wait_seconds(self, client: str) -> int:
        """0 when the client may go ahead (and takes a token), else the whole seconds until it may retry."""
        rate = self.per_minute / 60.0
        now = self._clock()
        with self._lock:
            if len(self._buckets) > MAX_TRACKED_CLIENTS:
                self._buckets = {key: value for key, value in self._buckets.items() if now - value[1] < 60.0}
            tokens, seen = self._buckets.get(client, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - seen) * rate)
            if tokens >= 1.0:
                self._buckets[client] = (tokens - 1.0, now)
                return 0
            self._buckets[client] = (tokens, now)
            return max(1, math.ceil((1.0 - tokens) / rate))


class SharedRateLimiter:
    """The same buckets in PostgreSQL (medrag_take_token): one limit for every server process and replica."""

    # requests between two sweeps of the idle buckets (a bucket idle for a minute is full again)
    SWEEP_EVERY = 1000

    def __init__(self, engine: Engine, per_minute: int) -> None:
        self.per_minute = per_minute
        self._engine = engine
        self._taken = itertools.count()

    def wait_seconds(self, client: str) -> int:
        """0 when the client may go ahead (and takes a token), else the whole seconds until it may retry."""
        with self._engine.begin() as conn:
            wait = conn.execute(_TAKE_TOKEN, {"client": client, "per_minute": self.per_minute}).scalar_one()
            if next(self._taken) % self.SWEEP_EVERY == self.SWEEP_EVERY - 1:
                conn.execute(_FORGET_IDLE)
        return int(wait)


_TAKE_TOKEN = text("SELECT medrag_take_token(:client, :per_minute)")
_FORGET_IDLE = text("SELECT medrag_forget_idle_buckets()")


class BodyLimit:
    """ASGI middleware: a body announced or sent over max_bytes is refused (413) before a route reads any of it."""

    def __init__(self, app: Callable, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        """Check Content-Length, or count the bytes of a chunked body before the app sees it."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await _send_error(send, 413, self._message(int(declared)), scope.get("path", "/"))
            return
        if declared is not None or scope.get("method") in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        # A body without a length (chunked) is read here, at most max_bytes of it, then handed on as it came.
        messages, seen = [], 0
        while True:
            message = await receive()
            messages.append(message)
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                await _send_error(send, 413, self._message(seen), scope.get("path", "/"))
                return
            if message["type"] != "http.request" or not message.get("more_body"):
                break

        async def replay() -> dict:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    def _message(self, size: int) -> str:
        return f"the request body is {size:,} bytes; the limit is {self.max_bytes:,}"


PROBLEM_TYPE = "application/problem+json"


def problem_body(status: int, detail: str, instance: str) -> dict[str, Any]:
    """An RFC 9457 problem details body: type, title, status, detail (the CLI's one line), instance; `error` repeats
    `detail` for clients of the earlier `{"error": ...}`."""
    return {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status, "detail": detail,
            "instance": instance, "error": detail}


async def _send_error(send: Callable, status: int, message: str, path: str) -> None:
    """A problem-details response sent before the app sees the request."""
    body = json.dumps(problem_body(status, message, path)).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", PROBLEM_TYPE.encode()),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
