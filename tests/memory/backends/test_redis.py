"""The Redis adapter against a Redis server of its own (``redis-server`` on a free port), killed and
restarted: what a write does while the server is away, with and without a fallback."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import override_settings
from django.utils import timezone

from memory.backends.base import BackendUnavailable, MemoryDraft
from memory.backends.inmemory import InMemoryBackend
from memory.backends.manager import FallbackEvent, MemoryManager
from memory.backends.registry import build_backend
from tests.memory.backends.redis_server import RedisServer

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")

OWNER = uuid.uuid4()


@pytest.fixture(autouse=True)
def _loopback_allowed(db: None) -> Iterator[None]:
    """The test servers listen on loopback, which the outbound URL policy refuses unless allowed."""
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        yield


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    running = RedisServer(tmp_path)
    running.start()
    yield running
    running.stop()


def test_a_write_while_the_server_is_down_is_refused_and_health_says_why(server: RedisServer) -> None:
    backend = build_backend(
        "redis", {"url": server.url, "retries": 1, "backoff_seconds": 0.01, "timeout_seconds": 1}
    )
    kept, _ = backend.store(MemoryDraft(owner=OWNER, content="before the outage"))
    server.stop()
    with pytest.raises(BackendUnavailable) as caught:
        backend.store(MemoryDraft(owner=OWNER, content="during the outage"))
    assert caught.value.status == 503 and caught.value.backend == "redis"
    health = backend.health()
    assert health.ok is False and "ConnectionError" in health.error
    server.start()  # a fresh, empty server (no persistence): the client reconnects by itself
    assert backend.health().ok is True
    assert backend.get(OWNER, kept.id) is None
    assert backend.count(OWNER) == 0


def test_with_a_fallback_no_acknowledged_write_is_lost(server: RedisServer) -> None:
    backend = build_backend(
        "redis", {"url": server.url, "retries": 1, "backoff_seconds": 0.01, "timeout_seconds": 1}
    )
    spare = InMemoryBackend(name="spare")
    manager = MemoryManager(backend, [spare])
    server.stop()
    events: list[FallbackEvent] = []
    acknowledged = [
        manager.store(MemoryDraft(owner=OWNER, content=f"note {i}"), events=events)[0] for i in range(3)
    ]
    assert [e.used for e in events] == ["spare"] * 3
    assert manager.replay().replayed == 0
    server.start()
    report = manager.replay()
    assert (report.replayed, report.pending) == (3, 0)
    for record in acknowledged:
        replayed = backend.get(OWNER, record.id)
        assert replayed is not None  # same id, content and creation time; updated_at is the replay's
        assert (replayed.content, replayed.created_at, replayed.type) == (
            record.content,
            record.created_at,
            "factual",
        )
    assert spare.count(OWNER) == 0


def test_health_reports_the_bounded_scan_and_redisearch(server: RedisServer) -> None:
    backend = build_backend("redis", {"url": server.url, "scan_limit": 500})
    health = backend.health()
    assert health.ok is True
    assert health.detail["redisearch"] is False  # a plain redis-server has no modules
    assert "500 newest" in health.detail["vectorSearch"]


def test_searches_read_only_the_newest_records_up_to_the_scan_limit(server: RedisServer) -> None:
    backend = build_backend("redis", {"url": server.url, "scan_limit": 2})
    now = timezone.now()
    backend.store(MemoryDraft(owner=OWNER, content="python oldest", created_at=now - timedelta(hours=3)))
    newer = [
        backend.store(
            MemoryDraft(owner=OWNER, content=f"python newer {i}", created_at=now - timedelta(hours=i))
        )[0]
        for i in range(2)
    ]
    assert {h.record.id for h in backend.search(OWNER, "python")} == {r.id for r in newer}
    assert backend.count(OWNER) == 3  # counts and lists stay exact
