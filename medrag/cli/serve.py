"""`medrag serve`: the HTTP API and the coders' page on uvicorn."""

from __future__ import annotations

import os
import tempfile

import click

from medrag.core.errors import MedragError
from medrag.serve.metrics import MULTIPROCESS_DIR

DEFAULT_PORT = 8080


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every one).")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(1, 65535))
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Server processes; each loads the embedding model once.")
def serve_command(host: str, port: int, workers: int) -> None:
    """Serve the API (/search, /ask, /codes, /releases, /health, /metrics) and the web page at /."""
    import uvicorn

    from medrag.core.config import load_settings
    from medrag.core.db import get_engine

    settings = load_settings()  # a bad setting is one line before anything starts
    get_engine(settings)  # starts the embedded server when no DATABASE_URL is set
    if workers > 1:
        if settings.api_rate and settings.api_rate_store == "process":
            raise MedragError(f"MEDRAG_API_RATE_STORE=process keeps a limit per process: {workers} workers would "
                              f"allow {workers} x {settings.api_rate} requests a minute; use the default, database")
        # /metrics sums the workers: each writes its values under one folder (prometheus_client's multiprocess
        # mode), which must be set before they start and empty at the start
        if not os.environ.get(MULTIPROCESS_DIR):
            os.environ[MULTIPROCESS_DIR] = tempfile.mkdtemp(prefix="medrag-metrics-")
    click.echo(f"medrag: serving on http://{host}:{port}{settings.root_path}/ (API: /openapi.json, /docs)", err=True)
    # Client addresses (the rate limit, the query log) come from X-Forwarded-For only when MEDRAG_TRUSTED_PROXIES
    # names the proxy that sets it; the path prefix MEDRAG_ROOT_PATH is the app's own setting.
    uvicorn.run("medrag.serve.app:create_app", factory=True, host=host, port=port, workers=workers,
                log_level="info", access_log=False, proxy_headers=settings.trusted_proxies is not None,
                forwarded_allow_ips=settings.trusted_proxies or "")


COMMANDS = [serve_command]
