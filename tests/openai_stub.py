"""A small, real OpenAI-compatible HTTP server on 127.0.0.1 for tests of medrag's LLM client and `medrag ask`.

It records every request body (so tests can check exactly what the client sends) and answers each chat
completion from a queue of scripted replies, else from a default responder: plain or streamed (server-sent
events) completions, HTTP errors, slow answers (timeouts), malformed bodies.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer to a chat completion request."""

    content: str | None = None
    status: int = 200
    delay: float = 0.0
    finish_reason: str = "stop"
    raw_body: str | None = None  # sent as is instead of a chat completion
    stream_break_after: int | None = None  # streamed replies: close the connection after this many pieces


Responder = Callable[[dict[str, Any]], Reply]


def json_reply(sentences: list[dict[str, Any]]) -> Reply:
    """A reply whose content is the structured answer {"sentences": [...]}."""
    return Reply(content=json.dumps({"sentences": sentences}))


class OpenAIStub:
    """The server: `url` is its OpenAI base URL (.../v1); `requests` holds each chat request body received."""

    def __init__(self, *, model: str = "stub-model", default: Responder | None = None) -> None:
        self.model = model
        self.default: Responder = default or (lambda body: json_reply([]))
        self.requests: list[dict[str, Any]] = []
        self.model_requests = 0
        self._queue: list[Reply | Responder] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """Base URL for the client, e.g. http://127.0.0.1:PORT/v1."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> OpenAIStub:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def queue(self, *replies: Reply | Responder) -> None:
        """Answer the next chat requests with these replies (or responders), in order."""
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        """Forget recorded requests and queued replies."""
        with self._lock:
            self.requests.clear()
            self._queue.clear()
            self.model_requests = 0

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            scripted = self._queue.pop(0) if self._queue else self.default
        return scripted if isinstance(scripted, Reply) else scripted(body)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass  # keep pytest output clean

            def _send_json(self, status: int, value: Any) -> None:
                payload = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path.rstrip("/") == "/v1/models":
                    with stub._lock:
                        stub.model_requests += 1
                    self._send_json(200, {"object": "list", "data": [{"id": stub.model, "object": "model"}]})
                else:
                    self._send_json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = stub._next_reply(body)
                if reply.delay:
                    time.sleep(reply.delay)
                try:
                    if reply.status != 200:
                        self._send_json(reply.status, {"error": {"message": f"stub error {reply.status}"}})
                    elif reply.raw_body is not None:
                        payload = reply.raw_body.encode()
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(payload)))
                        self.end_headers()
                        self.wfile.write(payload)
                    elif body.get("stream"):
                        self._stream(body, reply)
                    else:
                        self._send_json(200, {
                            "id": "chatcmpl-stub", "object": "chat.completion", "model": body.get("model"),
                            "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                                         "message": {"role": "assistant", "content": reply.content}}],
                        })
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def _stream(self, body: dict[str, Any], reply: Reply) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                content = reply.content or ""
                pieces = [content[i : i + 7] for i in range(0, len(content), 7)]
                for number, piece in enumerate(pieces):
                    if reply.stream_break_after is not None and number >= reply.stream_break_after:
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    event = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "model": body.get("model"),
                             "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                final = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "model": body.get("model"),
                         "choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]}
                self.wfile.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())
                self.wfile.flush()

        return Handler
