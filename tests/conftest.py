"""Shared fixtures: named personas (owners), tokens and an API client."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from memory.models import ApiKey, ManagementToken


class Api:
    """A thin JSON client for /api/* with a bearer token."""

    def __init__(self, secret: str | None):
        self.client = APIClient()
        if secret:
            self.client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")

    def _send(self, method: str, path: str, body=None, raw: bytes | str | None = None, **extra):
        kwargs = {}
        if raw is not None:
            kwargs = {"data": raw, "content_type": "application/json"}
        elif body is not None:
            kwargs = {"data": json.dumps(body), "content_type": "application/json"}
        return getattr(self.client, method)(path, **kwargs, **extra)

    def get(self, path, params=None):
        return self.client.get(path, params or {})

    def post(self, path, body=None, raw=None, **extra):
        return self._send("post", path, body, raw, **extra)

    def put(self, path, body=None, raw=None):
        return self._send("put", path, body, raw)

    def patch(self, path, body=None, raw=None):
        return self._send("patch", path, body, raw)

    def delete(self, path):
        return self.client.delete(path)


@pytest.fixture
def alice(db) -> ApiKey:
    return ApiKey.issue(name="alice")[0]


@pytest.fixture
def bob(db) -> ApiKey:
    return ApiKey.issue(name="bob")[0]


def _token(scope: str, owners=()):
    return ManagementToken.issue(name=f"{scope}-token", scope=scope, owners=owners)[1]


@pytest.fixture
def admin_api(db) -> Api:
    return Api(_token("admin"))


@pytest.fixture
def read_api(alice) -> Api:
    """A read token bound to alice only (only admin tokens may be bound to no API key)."""
    return Api(_token("read", owners=[alice]))


@pytest.fixture
def alice_api(alice) -> Api:
    """A write token bound to alice only."""
    return Api(_token("write", owners=[alice]))


@pytest.fixture
def anon_api(db) -> Api:
    return Api(None)


@pytest.fixture(autouse=True)
def _per_test_process_state():
    """Process-wide state does not leak between tests: the FTS document-frequency cache starts empty, a
    read that meets a stale vector index asks for its repair again, the int8 kernel is checked anew (a
    test may give it a wrong kernel), and access counters gathered by a test are written when it ends
    (not by a later test, nor at exit); the auth throttle's counts start empty (tests/settings.py gives
    the suite a cache of its own)."""
    from django.core.cache import cache

    from memory.retrieval.fts import DOC_FREQUENCIES
    from memory.services.indexing import forget_repair_requests
    from memory.services.usage import flush_accesses
    from memory.vectorstores.int8scan import reset_kernel_checks

    DOC_FREQUENCIES.clear()
    cache.clear()
    forget_repair_requests()
    reset_kernel_checks()
    yield
    flush_accesses()
    reset_kernel_checks()


def on_postgres() -> bool:
    """Whether the suite runs on PostgreSQL (``DATABASE_URL`` set; docs/deployment.md)."""
    from django.conf import settings

    return settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


def pytest_collection_modifyitems(config, items):
    """``@pytest.mark.sqlite_only(reason)``: a test of SQLite's own machinery (FTS5 shadow tables,
    vec0, WAL, the busy timeout, the sqlite3 module) is skipped on PostgreSQL, with its reason."""
    if not on_postgres():
        return
    for item in items:
        marker = item.get_closest_marker("sqlite_only")
        if marker is not None:
            reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "SQLite internals")
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {reason}"))


@pytest.fixture(scope="session", autouse=True)
def _postgres_test_database_released(request):
    """On PostgreSQL, the connections of the suite's other threads (served apps, background writers)
    are ended before the test database is dropped: PostgreSQL refuses to drop a database in use."""
    if not on_postgres():
        yield
        return
    request.getfixturevalue("django_db_setup")
    yield
    from django.db import connection

    with request.getfixturevalue("django_db_blocker").unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
