"""What one server process loads once and shares between requests: engine, query embedder, code finder."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine, text

from medrag.codes.finder import CodeFinder
from medrag.core.config import Settings
from medrag.core.db import get_engine, read_engine

# Which releases exist and which are current: a code finder reads release ids once, so a change of this means a
# refresh made another release current and the finder is renewed (one cheap statement per code request).
_RELEASES_FINGERPRINT_SQL = text(
    "SELECT coalesce(string_agg(id || ':' || is_current || ':' || status, ',' ORDER BY id), '') FROM release"
)
_CURRENT_RELEASES_SQL = text("SELECT source, label FROM release WHERE is_current ORDER BY source")
# Finders replaced after a refresh are closed only at shutdown, beyond this many: a request may still use one.
RETIRED_FINDERS_KEPT = 2
VLLM_PROBE_TIMEOUT_S = 2.0


class ServeState:
    """The engine, the query embedder (loaded once) and the code finder of the current releases."""

    def __init__(self, settings: Settings, engine: Engine | None = None) -> None:
        self.settings = settings
        self._engine = engine
        self._embedder: Any = None
        self._embedder_error: str | None = None
        self._lock = threading.Lock()
        self._finder: CodeFinder | None = None
        self._fingerprint: str | None = None
        self._retired: list[CodeFinder] = []

    @property
    def engine(self) -> Engine:
        """The pooled engine requests read through: DATABASE_READ_URL's replica when set, else medrag's database
        (the embedded server is started on first use when no DATABASE_URL is set)."""
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    self._engine = read_engine(self.settings)
        return self._engine

    @property
    def write_engine(self) -> Engine:
        """The engine requests write through (the query log): medrag's database, never a replica."""
        if self.settings.database_read_url is None:
            return self.engine
        return get_engine(self.settings)

    @property
    def embedder(self) -> Any:
        """The query embedder, loaded on first use and then shared by every request."""
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    from medrag.retrieval.query_embedding import QueryEmbedder

                    try:
                        self._embedder = QueryEmbedder.for_settings(self.settings)
                    except Exception as error:
                        self._embedder_error = str(error).splitlines()[0]
                        raise
                    self._embedder_error = None
        return self._embedder

    def load(self) -> None:
        """Load the embedding model now, so the first request does not pay for it."""
        self.embedder.embed("warm up")

    def finder(self) -> CodeFinder:
        """The code finder of the releases current now (a new one after a refresh changed them)."""
        with self.engine.connect() as conn:
            fingerprint = conn.execute(_RELEASES_FINGERPRINT_SQL).scalar_one()
        with self._lock:
            if self._finder is None or fingerprint != self._fingerprint:
                if self._finder is not None:
                    self._retired.append(self._finder)
                    while len(self._retired) > RETIRED_FINDERS_KEPT:
                        self._retired.pop(0).close()
                self._finder = CodeFinder(self.engine, embedder_factory=lambda: self.embedder, cached=True)
                self._fingerprint = fingerprint
            return self._finder

    def close(self) -> None:
        """Stop every finder's lookup threads."""
        with self._lock:
            for finder in [*self._retired, *([self._finder] if self._finder else [])]:
                finder.close()
            self._retired, self._finder = [], None

    def health(self) -> dict[str, Any]:
        """Database, schema, current releases, embedding model and vLLM, each reachable or not, and why."""
        from medrag.schema import migrate

        database: dict[str, Any] = {"reachable": False}
        releases: dict[str, str] = {}
        try:
            with self.engine.connect() as conn:
                releases = {row.source: row.label for row in conn.execute(_CURRENT_RELEASES_SQL)}
                revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
            head = migrate.head_revision()
            database = {"reachable": True, "schema_revision": revision, "schema_head": head,
                        "schema_at_head": revision == head}
        except Exception as error:  # noqa: BLE001 - health reports any failure as a reason, never raises
            database["error"] = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
        # the model's name, never its folder: /health is open to anyone
        embedding = {"loaded": self._embedder is not None, "name": Path(self.settings.embedding_model).name,
                     "backend": self.settings.embedding_backend}
        if self._embedder_error:
            embedding["error"] = self._embedder_error
        ok = bool(database.get("schema_at_head")) and self._embedder is not None
        return {"status": "ok" if ok else "unavailable", "database": database, "releases": releases,
                "embedding_model": embedding, "vllm": self._vllm_health()}

    def _vllm_health(self) -> dict[str, Any]:
        base_url = self.settings.vllm_base_url
        if not base_url:
            return {"configured": False, "reachable": None}
        try:
            response = httpx.get(base_url.rstrip("/") + "/models", timeout=VLLM_PROBE_TIMEOUT_S)
            response.raise_for_status()
        except httpx.HTTPError as error:
            return {"configured": True, "reachable": False, "base_url": base_url,
                    "error": str(error).splitlines()[0] if str(error) else type(error).__name__}
        return {"configured": True, "reachable": True, "base_url": base_url}
