"""``manage.py move_memories``: a key's memories moved between the native store, an in-memory provider
and Redis (the server at 127.0.0.1:6379 under a prefix of the test's own, or a redis-server of the
test's own where it is killed), losslessly and resumably, then the key switched and the source emptied.
"""

from __future__ import annotations

import io
import shutil
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.core.management import CommandError, call_command
from django.utils import timezone

from memory import store
from memory.backends.base import BackendUnavailable, MemoryDraft, MemoryRecord
from memory.backends.inmemory import InMemoryBackend
from memory.backends.native import NativeBackend
from memory.backends.selection import forget, manager_for, provider_backend
from memory.conf import get_memory_settings
from memory.embeddings.runtime import get_source
from memory.models import ApiKey, AuditEvent, Memory, MemoryProvider, PendingProviderWrite, ProviderFallback
from memory.services.memories import MemoryInput
from memory.services.moves import move_memories
from tests.memory.backends.redis_server import PersistentRedis

pytestmark = pytest.mark.django_db

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(autouse=True)
def _fresh_managers() -> Iterator[None]:
    forget()
    yield
    forget()


def _provider(name: str, type: str, config: dict | None = None) -> MemoryProvider:
    provider = MemoryProvider(name=name, type=type)
    provider.config = config or {}
    provider.save()
    return provider


@pytest.fixture
def shared_redis() -> Iterator[MemoryProvider]:
    """A provider on the machine's Redis, under a prefix removed afterwards."""
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.ConnectionError as exc:
        pytest.skip(f"no Redis server at {REDIS_URL}: {exc}")
    prefix = f"omr-test-move-{uuid.uuid4().hex[:10]}:"
    yield _provider("redis", "redis", {"url": REDIS_URL, "prefix": prefix, "retries": 0})
    for name in client.scan_iter(f"{prefix}*"):
        client.delete(name)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[PersistentRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = PersistentRedis(tmp_path)
    server.start()
    yield server
    server.kill()


def _seed_native(key: ApiKey, count: int = 5) -> list[MemoryRecord]:
    """Memories of every kind of field on the native store, created at distinct past times."""
    now = timezone.now()
    for i in range(count):
        memory, _ = store.memory_create(
            MemoryInput(
                owner=key,
                content=f"fact number {i}: I water the {['fern', 'cactus', 'orchid', 'basil', 'ivy'][i % 5]}",
                key=f"plant:{i}" if i % 2 == 0 else None,
                type=["factual", "episodic", "procedural"][i % 3],
                session_id=f"s-{i % 2}",
                metadata={"source": "chat", "n": i},
                expires_at=now + timedelta(days=30 + i) if i == 1 else None,
                importance=round(0.1 + i * 0.15, 2),
            )
        )
        Memory.objects.filter(seq=memory.seq).update(created_at=now - timedelta(days=10 - i))
    return _all(NativeBackend(name="native"), key)


def _all(backend, key: ApiKey) -> list[MemoryRecord]:
    return sorted(backend.list(key.pk, limit=1000).records, key=lambda r: r.created_at)


def _same(moved: list[MemoryRecord], original: list[MemoryRecord]) -> None:
    """Every field the contract keeps, kept (``updated_at`` is the move's time)."""
    fields = (
        "id",
        "content",
        "type",
        "key",
        "session_id",
        "metadata",
        "created_at",
        "expires_at",
        "importance",
    )
    assert [tuple(getattr(r, f) for f in fields) for r in moved] == [
        tuple(getattr(r, f) for f in fields) for r in original
    ]


def _move(key: ApiKey, to: str, *extra: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("move_memories", "--owner", str(key.pk), "--to", to, *extra, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_native_to_inmemory_to_redis_to_native_is_lossless(shared_redis: MemoryProvider) -> None:
    ram = _provider("ram", "inmemory")
    key, _ = ApiKey.issue(name="crew")
    original = _seed_native(key)
    assert len(original) == 5

    out, err = _move(key, "ram", "--batch", "2")
    key.refresh_from_db()
    assert key.provider_id == ram.pk
    assert "5 memories of crew moved from native to ram (5 copied now, 0 already there)" in out
    assert "moving [" in err and "5/5" in err  # the progress bar, on stderr
    assert Memory.objects.filter(owner=key).count() == 0  # the source's copies went after the switch
    _same(_all(provider_backend(ram), key), original)
    assert store.memory_count(key) == 5

    # Vectors were made with the service's embedding source for a destination that stores them.
    source, _ = get_source(get_memory_settings())
    assert source is not None
    (probe,) = source.embed([original[3].content])
    (hit,) = provider_backend(ram).search_similar(key.pk, probe, limit=1)
    assert hit.record.id == original[3].id and hit.score == pytest.approx(1.0, abs=1e-4)

    _move(key, "redis")
    key.refresh_from_db()
    assert key.provider_id == shared_redis.pk
    _same(_all(provider_backend(shared_redis), key), original)
    assert provider_backend(ram).count(key.pk) == 0

    _move(key, "native")
    key.refresh_from_db()
    assert key.provider_id is None and manager_for(key) is None
    _same(_all(NativeBackend(name="native"), key), original)
    assert provider_backend(shared_redis).count(key.pk) == 0
    assert (
        AuditEvent.objects.filter(action="memory.clear", owner_id=key.pk, actor_name="move_memories").count()
        == 3
    )


def test_an_interrupted_move_is_resumed_where_it_stopped(own_redis: PersistentRedis) -> None:
    target = _provider("redis", "redis", {"url": own_redis.url, "retries": 0, "timeout_seconds": 1})
    key, _ = ApiKey.issue(name="crew")
    original = _seed_native(key, count=7)
    steps: list[tuple[int, int]] = []

    def crash_after_the_first_batch(done: int, total: int) -> None:
        steps.append((done, total))
        if done >= 3:
            own_redis.kill()  # the destination goes away in the middle of the move

    with pytest.raises(BackendUnavailable):
        move_memories(api_key=key, to="redis", batch=3, progress=crash_after_the_first_batch)
    assert steps == [(0, 7), (3, 7)]
    key.refresh_from_db()
    assert key.provider_id is None  # not switched: the key still reads its native memories
    assert store.memory_count(key) == 7

    own_redis.start()  # it kept the three it acknowledged
    assert provider_backend(target).count(key.pk) == 3
    out, err = _move(key, "redis", "--batch", "3")
    assert "(4 copied now, 3 already there)" in out
    assert "3/7" in err and "7/7" in err
    key.refresh_from_db()
    assert key.provider_id == target.pk
    _same(_all(provider_backend(target), key), original)
    assert Memory.objects.filter(owner=key).count() == 0


def test_fallbacks_are_kept_less_the_destination_and_dropped_for_the_native_store() -> None:
    ram, spare, other = (
        _provider("ram", "inmemory"),
        _provider("spare", "inmemory"),
        _provider("other", "inmemory"),
    )
    key, _ = ApiKey.issue(name="crew", provider=ram)
    ProviderFallback.objects.create(api_key=key, provider=spare, position=0)
    ProviderFallback.objects.create(api_key=key, provider=other, position=1)
    store.memory_create(MemoryInput(owner=key, content="my bike is blue"))

    _move(key, "spare")
    key.refresh_from_db()
    assert key.provider_id == spare.pk
    assert list(key.fallback_links.order_by("position").values_list("provider__name", "position")) == [
        ("other", 0)
    ]
    assert [r.content for r in _all(provider_backend(spare), key)] == ["my bike is blue"]

    _move(key, "native")
    key.refresh_from_db()
    assert key.provider_id is None and key.fallback_links.count() == 0
    assert [m.content for m in Memory.objects.filter(owner=key)] == ["my bike is blue"]


def test_it_refuses_what_it_cannot_move_losslessly() -> None:
    ram = _provider("ram", "inmemory")
    key, _ = ApiKey.issue(name="crew")
    store.memory_create(MemoryInput(owner=key, content="a native memory"))

    with pytest.raises(CommandError, match="in native already"):
        _move(key, "native")
    with pytest.raises(CommandError, match="no memory provider named 'nowhere'"):
        _move(key, "nowhere")
    with pytest.raises(CommandError, match="no API key"):
        call_command("move_memories", "--owner", str(uuid.uuid4()), "--to", "ram")
    with pytest.raises(CommandError, match="must be an API key id"):
        call_command("move_memories", "--owner", "not-a-uuid", "--to", "ram")

    # The destination holds memories of the key that are not the source's: they would merge by key.
    provider_backend(ram).store(MemoryDraft(owner=key.pk, content="left over on ram"))
    with pytest.raises(CommandError, match="already holds 1 memories of this key"):
        _move(key, "ram")
    key.refresh_from_db()
    assert key.provider_id is None and Memory.objects.filter(owner=key).count() == 1


def test_it_waits_for_writes_a_fallback_still_holds() -> None:
    main, spare = _provider("main", "inmemory"), _provider("spare", "inmemory")
    _provider("next", "inmemory")
    key, _ = ApiKey.issue(name="crew", provider=main)
    ProviderFallback.objects.create(api_key=key, provider=spare, position=0)
    primary = provider_backend(main)
    assert isinstance(primary, InMemoryBackend)
    primary.fail("down")
    store.memory_create(MemoryInput(owner=key, content="kept by the fallback"))
    assert PendingProviderWrite.objects.filter(owner=key.pk).count() == 1

    with pytest.raises(CommandError, match="1 writes kept by a fallback still wait for main"):
        _move(key, "next")
    key.refresh_from_db()
    assert key.provider_id == main.pk

    primary.recover()  # the move replays them first, then moves everything
    out, _ = _move(key, "next")
    assert "1 memories of crew moved from main to next" in out
    assert PendingProviderWrite.objects.count() == 0
    assert [r.content for r in _all(provider_backend(MemoryProvider.objects.get(name="next")), key)] == [
        "kept by the fallback"
    ]
