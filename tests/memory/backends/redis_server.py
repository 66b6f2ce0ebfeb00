"""A redis-server of a test's own on a free port, killed and started again by the test: without
persistence (``RedisServer``) or keeping what it acknowledged across a kill (``PersistentRedis``)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import redis

from tests.servers import free_port


class RedisServer:
    """A throw-away redis-server (no persistence: a kill loses everything)."""

    #: redis-server's persistence options.
    persistence: tuple[str, ...] = ("--appendonly", "no")

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.directory = directory
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def arguments(self) -> list[str]:
        """redis-server's options: the port, loopback only, the persistence, the directory."""
        return [
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            *self.persistence,
            "--dir",
            str(self.directory),
        ]

    def command(self) -> list[str]:
        return ["redis-server", *self.arguments()]

    def start(self) -> None:
        self.process = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except (redis.ConnectionError, redis.BusyLoadingError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    stop = kill


class PersistentRedis(RedisServer):
    """A redis-server that keeps what it acknowledged across a kill (``appendfsync always``)."""

    persistence = ("--appendonly", "yes", "--appendfsync", "always")
