"""The audit trail: one query_log row per ask (question or its hash, evidence, verdicts, model, timings)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, text

from medrag.core.errors import MedragError

LOG_MODES = ("full", "hash")


class AuditConfigError(MedragError):
    """MEDRAG_LOG_QUERIES names no known mode."""


@dataclass
class AuditRecord:
    """What one ask did, as query_log stores it."""

    command: str
    question: str
    filters: dict[str, Any] = field(default_factory=dict)
    retrieved: list[dict[str, Any]] = field(default_factory=list)
    threshold: float | None = None
    accepted: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    model: str | None = None
    refused: bool | None = None
    refusal_reason: str | None = None
    validation: dict[str, Any] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    route: str | None = None
    client: str | None = None


def question_hash(question: str) -> str:
    """SHA-256 of the question (hex): lets repeated questions be counted without storing them."""
    return hashlib.sha256(question.encode("utf-8")).hexdigest()


_INSERT = text("""
    INSERT INTO query_log (command, route, client, question, question_hash, filters, retrieved, threshold, accepted,
                           rejected, model, refused, refusal_reason, validation, timings_ms)
    VALUES (:command, :route, :client, :question, :question_hash, CAST(:filters AS jsonb), CAST(:retrieved AS jsonb),
            :threshold, CAST(:accepted AS jsonb), CAST(:rejected AS jsonb), :model, :refused, :refusal_reason,
            CAST(:validation AS jsonb), CAST(:timings_ms AS jsonb))
    RETURNING id
""")


def write_log(engine: Engine, record: AuditRecord, *, mode: str) -> int:
    """Insert the record into query_log (the question itself only when mode is 'full'); returns its id."""
    if mode not in LOG_MODES:
        raise AuditConfigError(f"MEDRAG_LOG_QUERIES must be one of {', '.join(LOG_MODES)}, not {mode!r}")
    params = {
        "command": record.command, "route": record.route, "client": record.client,
        "question": record.question if mode == "full" else None,
        "question_hash": question_hash(record.question),
        "threshold": record.threshold, "model": record.model, "refused": record.refused,
        "refusal_reason": record.refusal_reason,
    }
    for name in ("filters", "retrieved", "accepted", "rejected", "validation", "timings_ms"):
        params[name] = json.dumps(getattr(record, name), default=str)
    with engine.begin() as conn:
        return int(conn.execute(_INSERT, params).scalar_one())


_TAIL = text("""
    SELECT id, created_at, command, route, client, question, question_hash, filters, retrieved, threshold, accepted,
           rejected, model, refused, refusal_reason, validation, timings_ms
    FROM query_log ORDER BY id DESC LIMIT :n
""")


def recent_logs(engine: Engine, n: int = 10) -> list[dict[str, Any]]:
    """The n newest query_log rows, oldest first (as `tail` shows them)."""
    with engine.connect() as conn:
        rows = [dict(row) for row in conn.execute(_TAIL, {"n": n}).mappings()]
    return list(reversed(rows))
