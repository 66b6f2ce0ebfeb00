"""A real Chroma server for the tests: ``chroma run`` (the ``chromadb`` package, pinned in
requirements.txt) on a free port with a throw-away data directory, which a test can stop and start."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.servers import free_port, shared_server


def chroma_binary() -> str | None:
    """The ``chroma`` command of this interpreter's environment, else the one on PATH."""
    beside = Path(sys.executable).parent / "chroma"
    return str(beside) if beside.exists() else shutil.which("chroma")


class ChromaServer:
    """``chroma run`` on 127.0.0.1:``port``, its data under ``directory`` (kept across restarts)."""

    def __init__(self, directory: Path) -> None:
        binary = chroma_binary()
        if binary is None:
            pytest.skip("the chroma command is missing: install requirements.txt (chromadb)")
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "run",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--path",
                str(self.directory / "data"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1).is_success:
                    return
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self.process.returncode}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("chroma run did not answer its heartbeat within 30 s")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    def delete_collection(self, name: str) -> None:
        delete_collection(self.url, name)


def delete_collection(url: str, name: str) -> None:
    """Delete collection ``name`` of the default database of the server at ``url`` (gone already: fine)."""
    base = f"{url}/api/v2/tenants/default_tenant/databases/default_database/collections"
    response = httpx.delete(f"{base}/{name}", timeout=10)
    # A missing collection is a 404 on 1.x servers, a 400 saying so on 0.6.
    missing = response.status_code in (400, 404) and "does not exist" in response.text
    assert response.is_success or missing, response.text


def shared_chroma(config: pytest.Config) -> ChromaServer:
    """One server for the whole test run (each test uses its own collections), stopped at its end."""
    return shared_server(config, "chroma", ChromaServer)
