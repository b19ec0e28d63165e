"""A real uvicorn server on 127.0.0.1 (a free port) running a medrag API app in a thread, for the tests."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn


@contextmanager
def running_app(app: object) -> Iterator[str]:
    """Serve app until the block ends; yields its base URL (http://127.0.0.1:PORT)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the API server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def metric(text_format: str, name: str, **labels: str) -> float:
    """The value of one series in a Prometheus text exposition (0 when it is not there)."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    for line in text_format.splitlines():
        series, _, value = line.rpartition(" ")
        if series.split("{")[0] == name and ",".join(sorted(re.findall(r'\w+="[^"]*"', series))) == wanted:
            return float(value)
    return 0.0
