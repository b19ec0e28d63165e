"""A small OpenAI-compatible chat client (httpx) for vLLM: structured JSON replies, streaming, timeouts, one retry.

Structured output is asked for with `response_format: {"type": "json_schema", ...}`, the OpenAI form that vLLM
enforces; vLLM's older `guided_*` request fields are ignored by current servers and so are never sent.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from medrag.core.config import Settings
from medrag.core.errors import MedragError

# Statuses worth a second try: the server is overloaded or restarting, not rejecting the request.
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class LlmError(MedragError):
    """The LLM server could not give a usable answer."""


class LlmUnavailable(LlmError):
    """The server is down, timed out, or kept failing (5xx) after the retry."""


class LlmBadReply(LlmError):
    """The server answered, but not with what was asked (HTTP 4xx, not JSON, wrong shape, cut off)."""


class LlmTruncated(LlmBadReply):
    """The reply stopped at max_tokens; `content` holds what was generated up to there."""

    def __init__(self, message: str, content: str = "") -> None:
        super().__init__(message)
        self.content = content


class LlmNotConfigured(LlmError):
    """`--llm vllm` was asked for without VLLM_BASE_URL."""


def normalize_base_url(base_url: str) -> str:
    """The OpenAI-style base URL ending in /v1 (a bare http://host:port gets /v1 added)."""
    url = base_url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise LlmNotConfigured(f"VLLM_BASE_URL must be an http(s) URL, not {base_url!r}")
    if httpx.URL(url).path in ("", "/"):
        url += "/v1"
    return url


def response_format(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """The `response_format` field asking for JSON that matches schema."""
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


class ChatClient:
    """Chat completions against one OpenAI-compatible server (vLLM), model from config or /v1/models."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        timeout: float = 120.0,
        retries: int = 1,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = normalize_base_url(base_url)
        self.timeout = timeout
        self.retries = max(0, retries)
        self._model = model
        self._http = httpx.Client(timeout=self._timeout(timeout), transport=transport)

    @classmethod
    def from_settings(cls, settings: Settings) -> ChatClient:
        """The client for VLLM_BASE_URL / VLLM_MODEL / MEDRAG_LLM_TIMEOUT / MEDRAG_LLM_RETRIES."""
        if not settings.vllm_base_url:
            raise LlmNotConfigured("no vLLM server configured: set VLLM_BASE_URL (e.g. http://127.0.0.1:8000/v1)")
        return cls(settings.vllm_base_url, model=settings.vllm_model, timeout=settings.llm_timeout,
                   retries=settings.llm_retries)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _timeout(seconds: float) -> httpx.Timeout:
        # A dead host should fail fast; generation itself may take the whole budget.
        return httpx.Timeout(seconds, connect=min(5.0, seconds))

    # -- requests with one retry -------------------------------------------------------------------------------

    def _send(self, method: str, path: str, *, body: dict[str, Any] | None, timeout: float, stream: bool
              ) -> httpx.Response:
        url = f"{self.base_url}{path}"
        last_error: LlmError | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(0.5 * attempt, 2.0))
            try:
                request = self._http.build_request(method, url, json=body, timeout=self._timeout(timeout))
                response = self._http.send(request, stream=stream)
            except httpx.TimeoutException:
                last_error = LlmUnavailable(f"the LLM server at {self.base_url} timed out after {timeout:g} s")
                continue
            except httpx.TransportError as error:
                last_error = LlmUnavailable(f"the LLM server at {self.base_url} is unreachable: "
                                            f"{type(error).__name__}: {error}")
                continue
            if response.status_code < 400:
                return response
            detail = _error_detail(response)
            response.close()
            if response.status_code in _RETRY_STATUSES:
                last_error = LlmUnavailable(f"the LLM server answered HTTP {response.status_code}: {detail}")
                continue
            raise LlmBadReply(f"the LLM server rejected the request (HTTP {response.status_code}): {detail}")
        assert last_error is not None
        raise last_error

    # -- the API --------------------------------------------------------------------------------------------------

    def model_name(self) -> str:
        """The configured model, else the first model the server lists at /v1/models."""
        if self._model:
            return self._model
        response = self._send("GET", "/models", body=None, timeout=min(self.timeout, 10.0), stream=False)
        try:
            self._model = str(response.json()["data"][0]["id"])
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise LlmBadReply(f"{self.base_url}/models lists no model; set VLLM_MODEL") from error
        return self._model

    def _chat_body(self, messages: list[dict[str, str]], schema: dict[str, Any] | None, schema_name: str,
                   max_tokens: int, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model_name(), "messages": messages, "temperature": 0.0,
                                "max_tokens": max_tokens, "stream": stream}
        if schema is not None:
            body["response_format"] = response_format(schema, schema_name)
        return body

    def chat_text(self, messages: list[dict[str, str]], *, schema: dict[str, Any] | None = None,
                  schema_name: str = "answer", max_tokens: int = 512, timeout: float | None = None) -> str:
        """The assistant message of one (non-streamed) completion."""
        timeout = timeout or self.timeout
        body = self._chat_body(messages, schema, schema_name, max_tokens, stream=False)
        response = self._send("POST", "/chat/completions", body=body, timeout=timeout, stream=False)
        try:
            choice = response.json()["choices"][0]
            content = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise LlmBadReply(f"the LLM reply is not a chat completion: {response.text[:200]!r}") from error
        if not isinstance(content, str):
            raise LlmBadReply("the LLM reply has no text content")
        if choice.get("finish_reason") == "length":
            raise LlmTruncated(f"the LLM reply was cut off at max_tokens={max_tokens}", content)
        return content

    def chat_json(self, messages: list[dict[str, str]], schema: dict[str, Any], *, schema_name: str = "answer",
                  max_tokens: int = 512, timeout: float | None = None) -> Any:
        """The JSON value of one completion constrained by `response_format` json_schema."""
        content = self.chat_text(messages, schema=schema, schema_name=schema_name, max_tokens=max_tokens,
                                 timeout=timeout)
        try:
            return json.loads(content)
        except ValueError as error:
            raise LlmBadReply(f"the LLM reply is not valid JSON: {content[:200]!r}") from error

    def stream_chat(self, messages: list[dict[str, str]], *, schema: dict[str, Any] | None = None,
                    schema_name: str = "answer", max_tokens: int = 512, timeout: float | None = None
                    ) -> Iterator[str]:
        """The assistant message as it is generated (server-sent events), piece by piece."""
        timeout = timeout or self.timeout
        deadline = time.monotonic() + timeout
        body = self._chat_body(messages, schema, schema_name, max_tokens, stream=True)
        response = self._send("POST", "/chat/completions", body=body, timeout=timeout, stream=True)
        try:
            for event in _sse_events(response):
                if time.monotonic() > deadline:
                    raise LlmUnavailable(f"the LLM server at {self.base_url} timed out after {timeout:g} s")
                if "error" in event:
                    raise LlmBadReply(f"the LLM server reported an error mid-stream: {str(event['error'])[:200]}")
                try:
                    choice = event["choices"][0]
                except (KeyError, IndexError, TypeError) as error:
                    raise LlmBadReply(f"unexpected stream event: {str(event)[:200]}") from error
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    yield piece
                if choice.get("finish_reason") == "length":
                    raise LlmTruncated(f"the LLM reply was cut off at max_tokens={max_tokens}")
        except httpx.TimeoutException as error:
            raise LlmUnavailable(f"the LLM server at {self.base_url} timed out mid-stream after {timeout:g} s") \
                from error
        except httpx.TransportError as error:
            raise LlmUnavailable(f"the LLM stream broke: {type(error).__name__}: {error}") from error
        finally:
            response.close()


def _sse_events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """The JSON payloads of `data:` lines until `data: [DONE]`."""
    for line in response.iter_lines():
        if not line.startswith("data:"):
            continue  # blank separators, comments (": keep-alive"), event names
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        try:
            yield json.loads(payload)
        except ValueError as error:
            raise LlmBadReply(f"a stream event is not JSON: {payload[:200]!r}") from error


def _error_detail(response: httpx.Response) -> str:
    try:
        response.read()
        text = response.text
    except httpx.HTTPError:
        return "(no body)"
    try:
        message = response.json().get("error", {})
        if isinstance(message, dict):
            message = message.get("message")
        if message:
            return str(message)[:300]
    except (ValueError, AttributeError):
        pass
    return text[:300] or "(no body)"
