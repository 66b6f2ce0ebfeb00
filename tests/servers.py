"""What the tests that start real servers (Redis, ChromaDB, PostgreSQL, our own) share: a free loopback
port, and one server of a kind for the whole run, started on first use and stopped when the run ends."""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

import pytest


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Startable(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...


S = TypeVar("S", bound=Startable)

_running: dict[str, Startable] = {}


def shared_server(config: pytest.Config, name: str, make: Callable[[Path], S]) -> S:
    """The run's server ``name``: made by ``make`` in a fresh temporary directory and started the first
    time it is asked for (each test then keeps to its own keys, prefixes or collections); stopped, and
    its directory removed, at the end of the run."""
    running = _running.get(name)
    if running is not None:
        return running  # type: ignore[return-value]  # stored under its name by this function
    directory = Path(tempfile.mkdtemp(prefix=f"omr-{name}-"))
    server = make(directory)
    server.start()
    _running[name] = server

    def cleanup() -> None:
        _running.pop(name, None)
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)

    config.add_cleanup(cleanup)
    return server
