"""The production configuration of docs/deployment.md: ``check --deploy`` reports nothing, and the HTTPS
settings it derives redirect plain HTTP, send HSTS and mark cookies Secure on every stack (the Studio's
Django stack, /api/ and /v1/)."""

from __future__ import annotations

import asyncio
import os
import re
import runpy
import secrets
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.asgi import ASGIHandler
from django.test import override_settings

from omniroute.env import envbool, request_header
from omniroute.handlers import ApiASGIHandler

BASE_DIR = Path(__file__).resolve().parents[2]
HOST = "memory.example.com"


def documented_env(tmp_path: Path) -> dict[str, str]:
    """The ``env`` block of docs/deployment.md, its files made under ``tmp_path``."""
    text = (BASE_DIR / "docs" / "deployment.md").read_text()
    block = re.search(r"^```env\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert block, "docs/deployment.md has no ```env block"
    env = dict(line.split("=", 1) for line in block.group(1).splitlines() if line.strip())
    assert env["OMNIROUTE_ALLOWED_HOSTS"] == HOST
    secret_file = tmp_path / "secret_key"
    secret_file.write_text(secrets.token_urlsafe(50))
    key_file = tmp_path / "encryption.key"
    key_file.write_text(secrets.token_bytes(32).hex())
    return {
        **env,
        "OMNIROUTE_SECRET_KEY_FILE": str(secret_file),
        "MEMORY_ENCRYPTION_KEY_FILE": str(key_file),
        "OMNIROUTE_DATA_DIR": str(tmp_path / "data"),
    }


def _clean_environ() -> dict[str, str]:
    prefixes = ("OMNIROUTE_", "MEMORY_", "SECURE_", "DJANGO_SETTINGS_MODULE")
    return {name: value for name, value in os.environ.items() if not name.startswith(prefixes)}


def test_check_deploy_reports_no_issue_under_the_documented_configuration(tmp_path):
    env = {**_clean_environ(), "DJANGO_SETTINGS_MODULE": "omniroute.settings", **documented_env(tmp_path)}

    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


@pytest.fixture
def production(tmp_path, monkeypatch) -> dict[str, object]:
    """The settings omniroute/settings.py builds under the documented configuration."""
    for name in _clean_environ().keys() ^ os.environ.keys():
        monkeypatch.delenv(name)
    for name, value in documented_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    built = runpy.run_path(str(BASE_DIR / "omniroute" / "settings.py"))
    names = [name for name in built if name.startswith(("SECURE_", "SESSION_COOKIE_", "CSRF_COOKIE_"))]
    return {name: built[name] for name in names} | {"ALLOWED_HOSTS": built["ALLOWED_HOSTS"]}


def test_the_documented_configuration_turns_every_https_setting_on(production):
    assert production["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https")
    assert production["SESSION_COOKIE_SECURE"] is production["CSRF_COOKIE_SECURE"] is True
    assert production["SECURE_SSL_REDIRECT"] is True
    assert production["SECURE_HSTS_SECONDS"] == 31_536_000
    assert production["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is production["SECURE_HSTS_PRELOAD"] is True


def _get(app: object, path: str, *, https: bool, **headers: str) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=transport, base_url=f"http://{HOST}") as client:
            extra = {"X-Forwarded-Proto": "https"} if https else {}
            return await client.get(path, headers={**extra, **headers})

    return asyncio.run(go())


@pytest.mark.django_db(transaction=True)
def test_every_stack_redirects_plain_http_and_sends_hsts(production):
    hsts = "max-age=31536000; includeSubDomains; preload"
    with override_settings(**production):
        # Built here: each handler reads the settings into its middleware when it is created.
        stacks = {
            "/admin/login/": (ASGIHandler(), {}),
            "/v1/models": (ApiASGIHandler(), {}),
            "/api/memory": (ApiASGIHandler("REST_API_MIDDLEWARE"), {"Authorization": "Bearer sk-omr-wrong"}),
        }
        for path, (app, headers) in stacks.items():
            plain = _get(app, path, https=False, **headers)
            assert plain.status_code == 301, path
            assert plain.headers["location"] == f"https://{HOST}{path}"

            served = _get(app, path, https=True, **headers)
            assert served.status_code in (200, 401), path
            assert served.headers["strict-transport-security"] == hsts, path

        login = _get(stacks["/admin/login/"][0], "/admin/login/", https=True)
        assert re.search(r"csrftoken=[^;]+;.*\bSecure\b", login.headers["set-cookie"], re.IGNORECASE)
        # The load balancer's probe is answered over plain HTTP (it returns no data).
        assert _get(ASGIHandler(), "/healthz", https=False).status_code == 200


def test_junk_in_the_https_variables_stops_the_start():
    assert request_header("H", " ") is None
    with pytest.raises(ImproperlyConfigured, match="H='X Forwarded: https' is not an HTTP header name"):
        request_header("H", "X Forwarded: https")


def test_a_blank_boolean_takes_its_default(monkeypatch):
    # `.env.example` lists OMNIROUTE_SSL_REDIRECT= blank: it must mean "follow OMNIROUTE_HTTPS", not false.
    monkeypatch.setenv("SOME_FLAG", "")
    assert envbool("SOME_FLAG", True) is True
    monkeypatch.setenv("SOME_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="not a boolean"):
        envbool("SOME_FLAG", True)
