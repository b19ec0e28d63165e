"""Prometheus metrics of the server: requests and latency per route, refusals, degraded answers, drops.

With several server processes (`medrag serve --workers N`, or gunicorn's), PROMETHEUS_MULTIPROC_DIR names a folder
where each process writes its values (prometheus_client's multiprocess mode, set before the workers start), and
/metrics, whichever process answers it, sums them all.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest, multiprocess

MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"

# Latency buckets in seconds: search answers in tens of milliseconds, ask in hundreds, an LLM answer in seconds.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class ServerMetrics:
    """The counters and histograms /metrics exposes, in a registry of their own (one per app)."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("medrag_http_requests", "HTTP requests by route, method and status.",
                                ["route", "method", "status"], registry=self.registry)
        self.latency = Histogram("medrag_http_request_duration_seconds", "Time to the response's first byte.",
                                 ["route"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.refusals = Counter("medrag_answer_refusals", "Answers refused, by reason.", ["reason"],
                                registry=self.registry)
        self.degraded = Counter("medrag_answers_degraded", "Answers given by the extractive backend because the LLM "
                                "failed.", registry=self.registry)
        self.cancelled = Counter("medrag_answers_cancelled", "Streamed answers stopped because the client hung up.",
                                 registry=self.registry)
        self.dropped = Counter("medrag_validation_dropped_sentences", "Draft sentences the validation gates dropped.",
                               registry=self.registry)

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one request and its latency."""
        self.requests.labels(route, method, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def observe_answer(self, answer: dict[str, Any]) -> None:
        """Count an answer's refusal, degradation and dropped sentences (from its JSON)."""
        if answer.get("refused"):
            self.refusals.labels(answer.get("refusal_reason") or "unknown").inc()
        if answer.get("degraded"):
            self.degraded.inc()
        self.dropped.inc(int((answer.get("validation") or {}).get("dropped", 0)))

    def render(self) -> bytes:
        """The Prometheus text exposition: this process's metrics, or every worker's summed in multiprocess mode."""
        if os.environ.get(MULTIPROCESS_DIR):
            summed = CollectorRegistry()
            multiprocess.MultiProcessCollector(summed)
            return generate_latest(summed)
        return generate_latest(self.registry)
