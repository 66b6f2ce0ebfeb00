"""Redis gone (``REDIS_URL`` set, nothing listening): writes still answer 201/200 (before, the hand-off
to the queue after commit raised into the response: a 500 for a committed row, and a retrying client
made a duplicate), engine-status and the Studio show the queue down, and the memories left without
their vectors are indexed once the queue is back: by the first hand-off that works, or by the
consumer's start.

The real server (``manage.py serve``: uvicorn with the Huey consumer's threads) runs in a process of
its own, since the queue is chosen when Django starts; the Redis that comes back is a real
``redis-server`` on the port that was closed.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from memory.tasks.handoff import HEALTH, hand_off

REDIS_SERVER = shutil.which("redis-server")
pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


def free_port() -> int:
    with socket.socket() as probe:  # free a moment ago: nothing listens on it
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Instance:
    """A data directory, the environment of its processes, and a management token."""

    def __init__(self, data_dir: Path, redis_port: int, database_url: str | None = None) -> None:
        self.data_dir = data_dir
        self.redis_port = redis_port
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "omniroute.settings",
            "OMNIROUTE_DATA_DIR": str(data_dir),
            "OMNIROUTE_DB_PATH": str(data_dir / "omniroute.sqlite3"),
            "MEMORY_MODELS_DIR": str(settings.MEMORY_MODELS_DIR),
            "MEMORY_EMBEDDING_SOURCE": "static",
            "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "HUEY_IMMEDIATE": "false",
            "OMNIROUTE_LOG_LEVEL": "WARNING",
        }
        for name in ("OMNIROUTE_TEST_DB_PATH", "OMNIROUTE_TOKEN", "DATABASE_URL"):
            self.env.pop(name, None)
        if database_url:
            self.env["DATABASE_URL"] = database_url

    def manage(self, *args: str) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=settings.BASE_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    @contextmanager
    def serve(self) -> Iterator[httpx.Client]:
        port = free_port()
        log = open(self.data_dir / f"serve-{port}.log", "w")  # noqa: SIM115 -- closed below
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port), "--workers", "1"],
            cwd=settings.BASE_DIR,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
        try:
            deadline = time.monotonic() + 60
            while True:
                assert process.poll() is None, (self.data_dir / f"serve-{port}.log").read_text()
                try:
                    if client.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
            yield client
        finally:
            client.close()
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()

    def log_text(self) -> str:
        return "".join(p.read_text() for p in sorted(self.data_dir.glob("serve-*.log")))


class RedisServer:
    """A real, throw-away ``redis-server`` on ``port`` (no persistence), started and stopped at will."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        assert REDIS_SERVER is not None
        self.process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


def engine_status(client: httpx.Client, headers: dict) -> dict:
    reply = client.get("/api/memory/engine-status", headers=headers)
    assert reply.status_code == 200, reply.text
    return reply.json()


def wait_until_indexed(client: httpx.Client, headers: dict, *, seconds: float = 60) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        status = engine_status(client, headers)
        if status["vectorStore"]["needsReindex"] == 0:
            return status
        assert time.monotonic() < deadline, f"still pending: {status['vectorStore']} {status['queue']}"
        time.sleep(0.3)


@contextmanager
def database_of_its_own() -> Iterator[str | None]:
    """On PostgreSQL, a database made for this instance and dropped after it (the counts checked
    below are the whole database's); on SQLite, None: the instance's own file."""
    from django.db import connection

    if connection.vendor != "postgresql":
        yield None
        return
    import psycopg

    params = connection.settings_dict
    name = f"{params['NAME']}_queue_down"
    server = psycopg.connect(
        dbname="postgres",
        user=params["USER"],
        password=params["PASSWORD"] or None,
        host=params["HOST"] or None,
        port=params["PORT"] or None,
        autocommit=True,
    )
    server.execute(f'DROP DATABASE IF EXISTS "{name}"')
    server.execute(f'CREATE DATABASE "{name}"')
    try:
        auth = params["USER"] + (f":{params['PASSWORD']}" if params["PASSWORD"] else "")
        yield f"postgres://{auth}@{params['HOST'] or '127.0.0.1'}:{params['PORT'] or 5432}/{name}"
    finally:
        server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        server.close()


@pytest.fixture
def instance(tmp_path) -> Iterator[Instance]:
    with database_of_its_own() as database_url:
        result = Instance(tmp_path, free_port(), database_url)
        result.manage("migrate", "--noinput")
        yield result


@pytest.fixture
def redis(instance) -> Iterator[RedisServer]:
    server = RedisServer(instance.redis_port)
    yield server
    server.stop()


def test_writes_answer_while_redis_is_gone_and_are_indexed_when_it_is_back(instance, redis):
    # One process for both (each start of Django costs seconds).
    code = (
        "from memory.models import ApiKey, ManagementToken\n"
        "key, _ = ApiKey.issue(name='queue-owner')\n"
        "_, token = ManagementToken.issue(name='ops', scope='admin')\n"
        "print(key.pk, token)\n"
    )
    key, token = instance.manage("shell", "--no-imports", "-c", code).split()[-2:]
    auth = {"Authorization": f"Bearer {token}"}

    with instance.serve() as client:
        created = client.post(
            "/api/memory", json={"apiKeyId": key, "content": "I live in Lisbon"}, headers=auth
        )
        assert created.status_code == 201, created.text
        memory_id = created.json()["id"]
        updated = client.put(f"/api/memory/{memory_id}", json={"content": "I live in Porto"}, headers=auth)
        assert updated.status_code == 200, updated.text
        bulk = client.post(
            "/api/memory/bulk",
            json={"memories": [{"apiKeyId": key, "content": f"I like fruit number {i}"} for i in range(3)]},
            headers=auth,
        )
        assert bulk.status_code in (200, 201), bulk.text
        listed = client.get("/api/memory", params={"apiKeyId": key}, headers=auth).json()
        assert listed["total"] == 4  # each write once: nothing for a client to retry

        status = engine_status(client, auth)
        queue = status["queue"]
        assert (queue["backend"], queue["reachable"], queue["pending"]) == ("redis", False, None)
        assert queue["failedHandoffs"] >= 3 and "ConnectionError" in queue["lastError"]
        assert "does not answer" in queue["reason"]
        # The single write's row keeps its flag for the retry (the bulk's rows were embedded inline:
        # the static source is fast enough for the write path).
        assert status["vectorStore"]["needsReindex"] == 1

    # The Studio's engine panel says so too (rendered here from the same status).
    from dashboard.views.engine import status_rows

    (row,) = [r for r in status_rows(status) if r["name"].startswith("Task queue")]
    assert row["state"] == "error" and row["text"].startswith("Down: ")

    # The queue is back and a fresh consumer starts: its startup hook drains what was left pending.
    redis.start()
    with instance.serve() as client:
        status = wait_until_indexed(client, auth)
        assert status["queue"]["reachable"] is True and status["queue"]["failedHandoffs"] == 0
        assert status["indexes"]["vectors"] == 4

        # While serving: Redis goes away, a write still answers 201 and waits; Redis comes back, and
        # the next write's hand-off also queues the drain of the one written meanwhile.
        redis.stop()
        missed = client.post(
            "/api/memory", json={"apiKeyId": key, "content": "I drive a Volvo"}, headers=auth
        )
        assert missed.status_code == 201, missed.text
        status = engine_status(client, auth)
        assert status["queue"]["reachable"] is False and status["vectorStore"]["needsReindex"] == 1
        redis.start()
        after = client.post("/api/memory", json={"apiKeyId": key, "content": "I own a cat"}, headers=auth)
        assert after.status_code == 201, after.text
        status = wait_until_indexed(client, auth)
        assert status["indexes"]["vectors"] == 6
    assert "memory.tasks.handoff_failed" in instance.log_text()
    assert " 500 " not in instance.log_text()


def test_a_failed_hand_off_never_raises_and_the_next_one_retries_what_was_missed(db):
    HEALTH.reset()
    retried: list[str] = []
    from memory.tasks import handoff

    handoff.on_queue_back("test work")(lambda: retried.append("again"))
    try:

        def down() -> None:
            raise ConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused.")

        assert hand_off(down, what="test work") is False
        assert HEALTH.snapshot()["failedHandoffs"] == 1
        assert hand_off(lambda: None, what="something else") is True
        assert retried == ["again"]
        assert HEALTH.snapshot() == {
            "failedHandoffs": 0,
            "lastError": "ConnectionError: Error 111 connecting to 127.0.0.1:1. Connection refused.",
        }
    finally:
        handoff._recoveries.pop("test work", None)
        HEALTH.reset()


def test_a_redis_that_accepts_but_never_answers_holds_a_hand_off_only_its_socket_timeout(tmp_path):
    """Before, Huey's client had no socket timeout: the hand-off after a commit waited forever."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts (the kernel completes the handshake) and never answers
    port = silent.getsockname()[1]
    code = (
        "import time\n"
        "from huey.contrib.djhuey import HUEY\n"
        "from memory.tasks.handoff import hand_off\n"
        "started = time.monotonic()\n"
        "ok = hand_off(lambda: HUEY.storage.enqueue(b'probe'), what='probe')\n"
        "print(ok, round(time.monotonic() - started, 1))\n"
    )
    env = {
        **Instance(tmp_path, port).env,
        "REDIS_SOCKET_TIMEOUT_SECONDS": "1.5",
    }
    try:
        result = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", code],
            cwd=settings.BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        silent.close()
    assert result.returncode == 0, result.stderr
    ok, seconds = result.stdout.strip().splitlines()[-1].split()  # the log goes to the same stream
    assert ok == "False"  # logged and left to the retry, not raised
    assert float(seconds) < 15  # the timeout (1.5 s, perhaps once per retry of the client), not forever
    assert "TimeoutError" in result.stdout + result.stderr
