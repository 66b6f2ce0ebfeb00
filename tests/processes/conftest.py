"""Real processes on one instance: ``manage.py serve`` (one or several web workers), ``run_huey``
consumers and Django shells, sharing one SQLite file and, where the test says so, Redis db 15.

Each instance is a data directory of its own, migrated once; its processes get the production settings
(``omniroute.settings``: a real queue, real caches), never the test settings of this process.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import redis

BASE_DIR = Path(__file__).resolve().parent.parent.parent
# The Redis database these tests own: emptied before and after each test that uses it (db 15 unless
# OMNIROUTE_TEST_REDIS_URL names another, for runs that share the Redis server).
REDIS_TEST_URL = os.environ.get("OMNIROUTE_TEST_REDIS_URL") or "redis://127.0.0.1:6379/15"


def free_port() -> int:
    with socket.socket() as probe:  # free a moment ago: nothing listens on it
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Served:
    """A running ``manage.py serve``: its process, its base URL and its log file."""

    process: subprocess.Popen
    url: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text()

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, then wait for the exit; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"serve did not stop within {timeout} s:\n{self.log()[-3000:]}") from None


@dataclass
class Instance:
    data_dir: Path
    env: dict[str, str]
    _running: list[subprocess.Popen] = field(default_factory=list)

    @property
    def db_path(self) -> Path:
        return self.data_dir / "omniroute.sqlite3"

    def manage(self, *args: str, env: dict | None = None, timeout: int = 180) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=BASE_DIR,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def python(self, code: str, env: dict | None = None):
        """Run ``code`` in a Django shell of this instance; it prints one JSON value, returned here."""
        result = self.manage("shell", "--no-imports", "-c", code, env=env)
        assert result.returncode == 0, result.stderr[-3000:]
        return json.loads(result.stdout.strip().splitlines()[-1])

    def popen(self, *args: str, log: str, env: dict | None = None) -> tuple[subprocess.Popen, Path]:
        log_path = self.data_dir / log
        with log_path.open("w") as out:
            process = subprocess.Popen(
                [sys.executable, "manage.py", *args],
                cwd=BASE_DIR,
                env={**self.env, **(env or {})},
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self._running.append(process)
        return process, log_path

    def serve(self, *args: str, env: dict | None = None, ready_timeout: float = 120) -> Served:
        """Start ``manage.py serve`` on a free port and wait until ``/readyz`` answers 200."""
        port = free_port()
        process, log_path = self.popen("serve", "--port", str(port), *args, log=f"serve-{port}.log", env=env)
        served = Served(process, f"http://127.0.0.1:{port}", log_path)
        deadline = time.monotonic() + ready_timeout
        while True:
            assert process.poll() is None, f"serve exited early:\n{served.log()[-3000:]}"
            try:
                if httpx.get(f"{served.url}/readyz", timeout=2).status_code == 200:
                    return served
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"serve was not ready in time:\n{served.log()[-3000:]}"
            time.sleep(0.2)

    def api_key(self, name: str) -> tuple[str, str]:
        """A new API key of this instance: (id, secret)."""
        out = self.python(
            "import json\nfrom memory.models import ApiKey\n"
            f"key, secret = ApiKey.issue(name={name!r})\nprint(json.dumps([str(key.pk), secret]))"
        )
        return out[0], out[1]

    def admin_token(self) -> str:
        return self.python(
            "import json\nfrom memory.models import ManagementToken\n"
            "print(json.dumps(ManagementToken.issue(name='admin', scope='admin')[1]))"
        )

    def close(self) -> None:
        for process in self._running:
            if process.poll() is None:
                process.kill()
                process.wait()


def make_instance(data_dir: Path, template: Path | None = None, **env: str) -> Instance:
    """An instance in ``data_dir``: a copy of the migrated ``template`` database, or migrated here."""
    data_dir.mkdir(parents=True, exist_ok=True)
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "omniroute.settings",
        "OMNIROUTE_DATA_DIR": str(data_dir),
        "OMNIROUTE_DB_PATH": str(data_dir / "omniroute.sqlite3"),
        "MEMORY_MODELS_DIR": str(data_dir / "models"),
        "HUEY_IMMEDIATE": "false",
        "OMNIROUTE_LOG_LEVEL": "INFO",
        **env,
    }
    # Always a SQLite file of its own, also on the PostgreSQL pass of CI: these processes share it.
    dropped = ("DATABASE_URL", "OMNIROUTE_TEST_DB_PATH", "OMNIROUTE_TOKEN")
    for name in (*dropped, *(() if "REDIS_URL" in env else ("REDIS_URL",))):
        environment.pop(name, None)
    instance = Instance(data_dir=data_dir, env=environment)
    if template is not None:
        with sqlite3.connect(template) as source, sqlite3.connect(instance.db_path) as target:
            source.backup(target)
    else:
        migrated = instance.manage("migrate", "--noinput")
        assert migrated.returncode == 0, migrated.stderr[-3000:]
    return instance


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory) -> Path:
    """One migrated database for the session; every instance starts from a copy (migrating takes
    seconds per instance)."""
    made = make_instance(tmp_path_factory.mktemp("template"))
    return made.db_path


@pytest.fixture
def instance(tmp_path, migrated_template) -> Iterator[Instance]:
    """A fresh instance on SQLite with the SQLite queue (no Redis)."""
    made = make_instance(tmp_path / "instance", migrated_template)
    yield made
    made.close()


@pytest.fixture
def redis_db() -> Iterator[redis.Redis]:
    """Redis db 15 (``REDIS_TEST_URL``), emptied before and after the test (skipped when no Redis answers)."""
    client = redis.Redis.from_url(REDIS_TEST_URL, socket_timeout=2, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError:
        pytest.skip("no Redis at 127.0.0.1:6379")
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def redis_instance(tmp_path, migrated_template, redis_db) -> Iterator[Instance]:
    """A fresh instance whose queue, channel layer and cache are Redis db 15 (``REDIS_TEST_URL``)."""
    made = make_instance(tmp_path / "instance", migrated_template, REDIS_URL=REDIS_TEST_URL)
    yield made
    made.close()
