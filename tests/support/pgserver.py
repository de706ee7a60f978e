"""A throwaway PostgreSQL server on loopback, from the distribution's packages (apt package ``postgresql``):
``initdb`` into a temporary folder, ``pg_ctl start`` on a free port with its unix socket in that folder.
PostgreSQL refuses to run as root: as root, the server runs as the ``postgres`` user the package creates.
Used by the store's tests and ``benchmarks.store``."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["Server", "Unavailable", "postgres_control", "postgres_server"]


class Unavailable(Exception):
    """No PostgreSQL server can be had here (the message says why)."""


def _binaries() -> Path:
    initdb = shutil.which("initdb")
    if initdb is not None:
        return Path(initdb).resolve().parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise Unavailable("no initdb: install PostgreSQL (apt-get install postgresql)")
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """A running throwaway server: ``url``; ``stop()`` and ``start()`` it again on the same port and data."""

    def __init__(
        self, url: str, run: Callable[..., None], data: Path, log: Path, options: str, bin_dir: Path
    ) -> None:
        self.url = url
        self._run, self._data, self._log, self._options, self._bin = run, data, log, options, bin_dir

    def start(self) -> None:
        self._run(
            str(self._bin / "pg_ctl"),
            "-D",
            str(self._data),
            "-l",
            str(self._log),
            "-o",
            self._options,
            "-w",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self._bin / "pg_ctl"), "-D", str(self._data), "-m", mode, "-w", "stop")


@contextmanager
def postgres_server(*, durable: bool = False) -> Iterator[str]:
    """Start a server; yield its URL (``postgresql://USER@127.0.0.1:PORT/postgres``); stop and remove it.
    Without ``durable``, fsync is off (tests); the benchmarks keep PostgreSQL's defaults."""
    with postgres_control(durable=durable) as server:
        yield server.url


@contextmanager
def postgres_control(*, durable: bool = False) -> Iterator[Server]:
    """``postgres_server``, yielding the ``Server`` to stop and start again."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise Unavailable("psycopg is not installed: pip install 'streamfsm[store-postgres]'") from None
    bin_dir = _binaries()
    as_user: list[str] = []
    user = os.environ.get("USER") or "postgres"
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            raise Unavailable("running as root without runuser: cannot start PostgreSQL as another user")
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            raise Unavailable("running as root and no postgres user to run the server as") from None
        as_user, user = ["runuser", "-u", "postgres", "--"], "postgres"
    folder = Path(tempfile.mkdtemp(prefix="streamfsm-pg-"))
    data, sockets = folder / "data", folder / "sockets"
    sockets.mkdir()
    if as_user:
        shutil.chown(folder, "postgres")
        shutil.chown(sockets, "postgres")
    port = _free_port()

    def run(*args: str) -> None:
        proc = subprocess.run([*as_user, *args], capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            raise Unavailable(f"{Path(args[0]).name} failed: {(proc.stderr or proc.stdout)[-500:]}")

    try:
        run(str(bin_dir / "initdb"), "-D", str(data), "-U", user, "--auth=trust", "-E", "UTF8", "--no-sync")
        options = f"-h 127.0.0.1 -p {port} -k {sockets}"
        if not durable:
            options += " -F -c full_page_writes=off"
        server = Server(
            f"postgresql://{user}@127.0.0.1:{port}/postgres", run, data, folder / "log", options, bin_dir
        )
        server.start()
        try:
            yield server
        finally:
            subprocess.run(
                [*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                timeout=60,
                check=False,
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
