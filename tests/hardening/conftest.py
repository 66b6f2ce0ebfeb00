"""Fixtures for the bad-input tests: the whole ASGI application served for real on a local port, and
the crafted inputs every interface must refuse with a 4xx (never a 500)."""

from __future__ import annotations

import pytest

from memory.models import ManagementToken

# The gateway's fixtures (a live gateway, a recording upstream, a provider pointing at it) and MCP's
# (omniroute.asgi in uvicorn with its lifespan), for the tests here.
from tests.gateway.conftest import gateway, gateway_server, provider, upstream, upstream_server  # noqa: F401
from tests.gateway.servers import ServerThread
from tests.lifecycle.test_mcp import mcp_url  # noqa: F401

# A lone surrogate as JSON writes it: valid JSON, but no UTF-8 text can hold the string it decodes to.
LONE = "\\ud800"
# Nested far beyond what the parser allows (and beyond what Python's json can recurse through).
DEEP_5000 = "[" * 5000 + "]" * 5000
# Nested beyond the parser's limit, yet within what Python's json can parse.
DEEP_150 = "[" * 150 + "]" * 150


@pytest.fixture(scope="session")
def app_server(django_db_setup):
    """``omniroute.asgi.application`` in uvicorn, on 127.0.0.1 (tests using it need transactional_db)."""
    from omniroute.asgi import application

    server = ServerThread(application, name="hardening-app").start()
    yield server
    server.stop()


@pytest.fixture
def live_url(app_server, transactional_db) -> str:
    return app_server.url


@pytest.fixture
def admin_secret(transactional_db) -> str:
    return ManagementToken.issue(name="hardening-admin", scope="admin")[1]
