"""bootstrap prints the address the server is started on (serve's --host/--port, which make run passes
to both), not a placeholder; and serve words its address the same way."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.core.management import CommandError, call_command

from memory.management.commands.serve import DEFAULT_HOST, DEFAULT_PORT, base_url
from tests.servers import free_port

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def bootstrap(settings, tmp_path, *args: str) -> list[str]:
    settings.DATA_DIR = tmp_path
    out = io.StringIO()
    call_command("bootstrap", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue().splitlines()


def test_by_default_it_prints_serves_default_address(settings, tmp_path):
    lines = bootstrap(settings, tmp_path)
    studio = next(line for line in lines if line.startswith("Studio:"))
    assert studio.startswith("Studio:  http://127.0.0.1:8000/dashboard/memory  user=admin  password=")
    assert "Gateway: http://127.0.0.1:8000/v1  (OpenAI-compatible base URL)" in lines
    assert not any("HOST" in line or "PORT" in line for line in lines)
    # What is printed is also what the credentials file keeps.
    saved = (tmp_path / "first-run-credentials.txt").read_text().splitlines()
    assert studio in saved


def test_it_prints_the_host_and_port_it_is_given(settings, tmp_path):
    lines = bootstrap(settings, tmp_path, "--host", "memory.internal", "--port", "9000")
    assert any(line.startswith("Studio:  http://memory.internal:9000/dashboard/memory ") for line in lines)
    assert "Gateway: http://memory.internal:9000/v1  (OpenAI-compatible base URL)" in lines


def test_a_wildcard_bind_is_printed_as_an_address_a_browser_can_open(settings, tmp_path):
    lines = bootstrap(settings, tmp_path, "--host", "0.0.0.0", "--port", "8080")
    assert any(line.startswith("Studio:  http://127.0.0.1:8080/dashboard/memory ") for line in lines)


@pytest.mark.parametrize(
    ("host", "port", "url"),
    [
        ("127.0.0.1", 8000, "http://127.0.0.1:8000"),
        ("0.0.0.0", 80, "http://127.0.0.1:80"),
        ("::", 8000, "http://[::1]:8000"),
        ("::1", 8001, "http://[::1]:8001"),
        ("[::1]", 8001, "http://[::1]:8001"),
        ("localhost", 9000, "http://localhost:9000"),
    ],
)
def test_base_url(host, port, url):
    assert base_url(host, port) == url


def test_the_port_is_checked_like_serves(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    with pytest.raises(CommandError, match="argument --port: must be between 1 and 65535"):
        call_command("bootstrap", "--port", "70000", stdout=io.StringIO())


def test_make_run_gives_bootstrap_and_serve_the_same_address():
    # `make -n` prints the recipe without running it: both commands get HOST and PORT.
    recipe = subprocess.run(
        ["make", "-n", "-o", "models", "run", "HOST=10.1.2.3", "PORT=9123"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    commands = [line for line in recipe if "manage.py bootstrap" in line or "manage.py serve" in line]
    assert len(commands) == 2
    assert all(line.endswith("--host 10.1.2.3 --port 9123") for line in commands), commands


def test_the_printed_address_is_the_one_serve_answers_on(settings, tmp_path):
    """Start the real ``serve`` with the port bootstrap was given and open the Studio address printed."""
    assert (DEFAULT_HOST, DEFAULT_PORT) == ("127.0.0.1", 8000)  # serve's defaults, bootstrap's too
    port = free_port()
    lines = bootstrap(settings, tmp_path, "--port", str(port))
    studio = next(line for line in lines if line.startswith("Studio:")).split()[1]
    assert studio == f"http://127.0.0.1:{port}/dashboard/memory"
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port), "--no-worker"],
        cwd=ROOT,
        env=_instance_env(tmp_path / "serve"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        answer = _wait_for(studio, server)
        assert answer.status_code == 302 and answer.headers["location"].startswith("/admin/login/")
    finally:
        server.terminate()
        output = server.communicate(timeout=20)[0]
    assert f"Serving on http://127.0.0.1:{port}/  (Studio: http://127.0.0.1:{port}/dashboard/memory" in output


def _instance_env(data_dir: Path) -> dict[str, str]:
    """A separate install in ``data_dir`` (the test database lives in this process's memory)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "omniroute.settings",
        "OMNIROUTE_DATA_DIR": str(data_dir),
        "OMNIROUTE_DB_PATH": str(data_dir / "omniroute.sqlite3"),
        "MEMORY_MODELS_DIR": str(data_dir / "models"),
        "OMNIROUTE_LOG_LEVEL": "WARNING",
    }
    for name in ("OMNIROUTE_TEST_DB_PATH", "REDIS_URL", "OMNIROUTE_TOKEN"):
        env.pop(name, None)
    return env


def _wait_for(url: str, server: subprocess.Popen) -> httpx.Response:
    deadline = time.monotonic() + 60
    while True:
        try:
            return httpx.get(url, follow_redirects=False, timeout=2)
        except httpx.TransportError:
            if time.monotonic() > deadline or server.poll() is not None:
                raise
            time.sleep(0.2)
