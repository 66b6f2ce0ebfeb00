"""The durable replay queue (memory/backends/durable.py): writes a fallback kept for a key's provider
survive a restart and reach the provider when it is back.

The provider is a real ``redis-server`` of the test's own (a free port, append-only file synced at
every write, so a killed server restarts with what it acknowledged), killed in the middle of the
writes; every write goes through memory.store, as every surface does."""

from __future__ import annotations

import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from memory import store
from memory.backends.base import BackendUnavailable, MemoryDraft
from memory.backends.durable import DatabaseQueue, pending_summary, replay_all
from memory.backends.inmemory import InMemoryBackend
from memory.backends.manager import MemoryManager, PendingWrite
from memory.backends.registry import build_backend
from memory.backends.selection import forget, manager_for, provider_backend
from memory.exceptions import Conflict
from memory.models import ApiKey, ManagementToken, MemoryProvider, PendingProviderWrite, ProviderFallback
from memory.principals import Principal
from memory.services.memories import MemoryInput
from memory.tasks.replay import forget_resume, replay_provider_writes_periodic, resume_pending_replays
from tests.conftest import Api
from tests.memory.backends.redis_server import PersistentRedis

pytestmark = pytest.mark.django_db


@pytest.fixture
def server(tmp_path: Path) -> Iterator[PersistentRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    running = PersistentRedis(tmp_path)
    running.start()
    yield running
    running.kill()


@pytest.fixture(autouse=True)
def _fresh_managers() -> Iterator[None]:
    # The test's redis-server listens on loopback: the outbound URL policy needs the private switch.
    forget()
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        yield
    forget()


def _provider(name: str, type: str, config: dict) -> MemoryProvider:
    provider = MemoryProvider(name=name, type=type)
    provider.config = config
    provider.save()
    return provider


def _redis_provider(server: PersistentRedis) -> MemoryProvider:
    return _provider(
        "redis-main",
        "redis",
        {"url": server.url, "retries": 1, "backoff_seconds": 0.01, "timeout_seconds": 1},
    )


def _key(provider: MemoryProvider, *fallbacks: MemoryProvider) -> ApiKey:
    key, _ = ApiKey.issue(name=f"key on {provider.name}", provider=provider)
    for position, fallback in enumerate(fallbacks):
        ProviderFallback.objects.create(api_key=key, provider=fallback, position=position)
    return key


def _redis_record(server: PersistentRedis, key: ApiKey, memory_id: uuid.UUID):
    """The record as the provider itself holds it (a backend of its own, not the key's manager)."""
    return build_backend("redis", {"url": server.url}).get(key.pk, memory_id)


@pytest.mark.parametrize("fallback_type", ["inmemory", "native"])
def test_killing_redis_mid_write_loses_no_acknowledged_memory(
    server: PersistentRedis, fallback_type: str
) -> None:
    spare = _provider("spare", fallback_type, {})
    key = _key(_redis_provider(server), spare)
    before, _ = store.memory_create(MemoryInput(owner=key, content="written before the outage", key="before"))

    # Kill the server while the writes run: each write is acknowledged by redis or by the fallback.
    killer = threading.Timer(0.3, server.kill)
    killer.start()
    acknowledged = []
    after_kill = 0
    deadline = time.monotonic() + 20
    while after_kill < 4:
        after_kill += server.process is None
        memory, _ = store.memory_create(
            MemoryInput(owner=key, content=f"note {len(acknowledged)} about the outage", importance=0.7)
        )
        acknowledged.append(memory)
        assert time.monotonic() < deadline
    killer.join()
    queued = PendingProviderWrite.objects.filter(owner=key.pk)
    kept = set(queued.values_list("memory_id", flat=True))
    assert len(kept) >= 4  # the writes after the kill wait in the database
    assert set(queued.values_list("primary", "fallback").distinct()) == {("redis-main", "spare")}
    # Changes during the outage, to records the fallback holds: queued behind their stores.
    on_fallback = [m for m in acknowledged if m.uuid in kept]
    last, doomed = on_fallback[-1], on_fallback[-2]
    store.memory_update(store.memory_get(principal=_principal(key), memory_id=last.uuid), content="changed")
    store.memory_delete(store.memory_get(principal=_principal(key), memory_id=doomed.uuid))
    assert queued.count() == len(kept) + 2

    # A restart: every manager and backend is built again (an in-memory fallback starts empty).
    forget()
    assert replay_all()["replayed"] == 0  # still down: nothing moves, nothing is lost
    assert PendingProviderWrite.objects.filter(owner=key.pk).count() == queued.count()
    server.start()
    forget()
    result = replay_provider_writes_periodic.call_local()
    assert result["replayed"] >= 3 and result["pending"] == 0 and result["failed"] == 0
    assert PendingProviderWrite.objects.count() == 0

    assert _redis_record(server, key, before.uuid).content == "written before the outage"
    for memory in acknowledged:
        held = _redis_record(server, key, memory.uuid)
        if memory.uuid == doomed.uuid:
            assert held is None
            continue
        assert held is not None, f"acknowledged memory {memory.uuid} lost"
        assert (held.created_at, held.importance) == (memory.created_at, 0.7)
        assert held.content == ("changed" if memory.uuid == last.uuid else memory.content)
    manager = manager_for(key)
    assert manager is not None
    assert manager.fallbacks[0].count(key.pk) == 0  # the fallback's copies are released
    assert store.memory_count(key) == len(acknowledged)  # before + acknowledged - doomed


def _principal(key: ApiKey) -> Principal:
    return Principal(scope="write", owner_ids=frozenset({key.pk}), label="test")


def test_without_a_fallback_a_write_during_the_outage_is_refused_with_a_503(server: PersistentRedis) -> None:
    key = _key(_redis_provider(server))
    server.kill()
    with pytest.raises(BackendUnavailable) as caught:
        store.memory_create(MemoryInput(owner=key, content="nowhere to keep this"))
    assert caught.value.status == 503
    assert "ConnectionError" in caught.value.message
    assert PendingProviderWrite.objects.count() == 0
    server.start()
    assert build_backend("redis", {"url": server.url}).count(key.pk) == 0


def test_the_payload_is_the_whole_write_and_is_stored_encrypted(alice: ApiKey) -> None:
    queue = DatabaseQueue(alice.pk)
    expires = timezone.now() + timedelta(days=2)
    draft = MemoryDraft(
        owner=alice.pk,
        content="my locker code is 4417",
        type="procedural",
        key="locker",
        session_id="s-1",
        metadata={"source": "chat", "tags": ["x"]},
        expires_at=expires,
        importance=0.3,
        id=uuid.uuid4(),
        created_at=timezone.now() - timedelta(hours=1),
    )
    vector = np.linspace(-1, 1, 8, dtype=np.float32)
    writes = [
        PendingWrite("store", alice.pk, draft.id, "spare", draft=draft, embedding=vector, primary="main"),
        PendingWrite(
            "update",
            alice.pk,
            draft.id,
            "spare",
            changes={"content": "my locker code is 9001", "expires_at": None},
            embedding=vector[::-1].copy(),
            primary="main",
        ),
        PendingWrite("update", alice.pk, draft.id, "spare", changes={"expires_at": expires}, primary="main"),
        PendingWrite("delete", alice.pk, draft.id, "spare", primary="main"),
    ]
    for write in writes:
        queue.append(write)
    read = DatabaseQueue(alice.pk).pending()  # another queue object: what a restarted process reads
    assert read == writes  # every field compared but the vector, the ref and the time
    assert np.array_equal(read[0].embedding, vector)
    assert np.array_equal(read[1].embedding, vector[::-1])
    assert read[2].embedding is None and read[2].changes == {"expires_at": expires}
    assert [w.ref for w in read] == sorted(w.ref for w in read)
    with connection.cursor() as cursor:
        cursor.execute("SELECT payload FROM memory_pending_provider_writes")
        raw = [row[0] for row in cursor.fetchall()]
    assert all(text.startswith("enc:v1:") for text in raw)
    assert not any("locker" in text for text in raw)


def test_a_new_manager_replays_what_the_old_one_queued(alice: ApiKey) -> None:
    primary, spare = InMemoryBackend(name="main", dimension=4), InMemoryBackend(name="spare", dimension=4)
    old = MemoryManager(primary, [spare], queue=DatabaseQueue(alice.pk))
    primary.fail("down")
    vector = np.array([0, 0, 1, 0], dtype=np.float32)
    record, _ = old.store_with_embedding(MemoryDraft(owner=alice.pk, content="kept", key="k"), vector)
    new_vector = np.array([0, 1, 0, 0], dtype=np.float32)
    old.update(alice.pk, record.id, {"content": "kept, then changed"}, embedding=new_vector)
    assert [w.action for w in old.pending()] == ["store", "update"]
    assert PendingProviderWrite.objects.filter(owner=alice.pk).count() == 2

    primary.recover()
    new = MemoryManager(primary, [InMemoryBackend(name="spare", dimension=4)], queue=DatabaseQueue(alice.pk))
    report = new.replay()
    assert (report.replayed, report.pending, report.stopped) == (2, 0, None)
    assert primary.get(alice.pk, record.id).content == "kept, then changed"
    (hit,) = primary.search_similar(alice.pk, new_vector, limit=1)  # the update's vector came along
    assert hit.record.id == record.id and hit.score == pytest.approx(1.0)


def test_a_second_replayer_waits_for_the_lease(alice: ApiKey) -> None:
    primary, spare = InMemoryBackend(name="main"), InMemoryBackend(name="spare")
    first = MemoryManager(primary, [spare], queue=DatabaseQueue(alice.pk))
    second = MemoryManager(primary, [spare], queue=DatabaseQueue(alice.pk))
    primary.fail()
    first.store(MemoryDraft(owner=alice.pk, content="one"))
    primary.recover()
    with first.queue.lease() as held:
        assert held is True
        report = second.replay()
        assert (report.replayed, report.pending) == (0, 1)
        assert report.stopped == "another process is replaying this queue"
    assert PendingProviderWrite.objects.get().claimed_by == ""  # let go at the end
    # A lease left by a killed process runs out.
    PendingProviderWrite.objects.update(
        claimed_by="gone", claimed_until=timezone.now() - timedelta(seconds=1)
    )
    assert second.replay().replayed == 1


def test_a_write_the_primary_refuses_is_kept_and_holds_back_that_records_later_writes(alice: ApiKey) -> None:
    primary, spare = InMemoryBackend(name="main"), InMemoryBackend(name="spare")
    manager = MemoryManager(primary, [spare], queue=DatabaseQueue(alice.pk))
    primary.fail()
    record, _ = manager.store(MemoryDraft(owner=alice.pk, content="first", key="mine"))
    manager.update(alice.pk, record.id, {"key": "wanted"})
    manager.delete(alice.pk, record.id)
    other, _ = manager.store(MemoryDraft(owner=alice.pk, content="another record"))
    primary.recover()
    primary.store(MemoryDraft(owner=alice.pk, content="took the key meanwhile", key="wanted"))

    report = manager.replay()
    assert (report.replayed, report.refused, report.pending) == (2, 1, 2)
    assert primary.get(alice.pk, other.id).content == "another record"
    assert primary.get(alice.pk, record.id).key == "mine"  # the delete waits behind the refused update
    refused, waiting = PendingProviderWrite.objects.filter(owner=alice.pk)
    assert (refused.operation, refused.attempts) == ("update", 1)
    assert refused.last_error.startswith("Conflict: ")
    assert (waiting.operation, waiting.attempts) == ("delete", 0)
    summary = pending_summary()
    assert (summary["pending"], summary["keys"], summary["failing"]) == (2, 1, 1)
    assert summary["lastError"].startswith("Conflict: ")
    assert summary["byKey"][0]["apiKeyId"] == str(alice.pk) and summary["byKey"][0]["attempts"] == 1


def test_a_clear_drops_the_queued_writes_it_makes_moot(alice: ApiKey) -> None:
    primary, spare = InMemoryBackend(name="main"), InMemoryBackend(name="spare")
    manager = MemoryManager(primary, [spare], queue=DatabaseQueue(alice.pk))
    primary.fail()
    manager.store(MemoryDraft(owner=alice.pk, content="a fact", type="factual"))
    manager.store(MemoryDraft(owner=alice.pk, content="an episode", type="episodic"))
    primary.recover()
    manager.clear(alice.pk, type="episodic")
    assert [w.draft.type for w in manager.pending()] == ["factual"]
    manager.clear(alice.pk)
    assert PendingProviderWrite.objects.count() == 0


def test_writes_of_a_deleted_key_are_purged(alice: ApiKey, bob: ApiKey) -> None:
    for owner in (alice, bob):
        DatabaseQueue(owner.pk).append(
            PendingWrite("delete", owner.pk, uuid.uuid4(), "spare", primary="main")
        )
    ApiKey.objects.filter(pk=bob.pk).delete()
    assert replay_all()["purged"] == 1
    assert list(PendingProviderWrite.objects.values_list("owner", flat=True)) == [alice.pk]


def test_a_queue_holds_one_keys_writes_only(alice: ApiKey, bob: ApiKey) -> None:
    with pytest.raises(ValueError, match="cannot hold"):
        DatabaseQueue(alice.pk).append(PendingWrite("delete", bob.pk, uuid.uuid4(), "spare"))
    assert DatabaseQueue(bob.pk).pending() == []


def test_pending_writes_are_resumed_when_a_consumer_starts(server: PersistentRedis) -> None:
    spare = _provider("spare", "inmemory", {})
    key = _key(_redis_provider(server), spare)
    server.kill()
    memory, _ = store.memory_create(MemoryInput(owner=key, content="left pending by a stopped process"))
    server.start()
    forget()  # the process that queued it is gone
    forget_resume()
    try:
        assert resume_pending_replays() is True  # queued, and run at once (tests run tasks inline)
        assert resume_pending_replays() is False  # once per process
    finally:
        forget_resume()
    assert PendingProviderWrite.objects.count() == 0
    assert _redis_record(server, key, memory.uuid).content == "left pending by a stopped process"


def test_selection_builds_managers_on_the_database_queue(server: PersistentRedis) -> None:
    key = _key(_redis_provider(server), _provider("spare", "inmemory", {}))
    manager = manager_for(key)
    assert manager is not None and isinstance(manager.queue, DatabaseQueue)
    assert manager.queue.owner == key.pk
    assert manager.primary is provider_backend(key.provider)


def test_a_conflict_on_the_primary_is_the_callers_answer_not_a_queued_write(alice: ApiKey) -> None:
    primary, spare = InMemoryBackend(name="main"), InMemoryBackend(name="spare")
    manager = MemoryManager(primary, [spare], queue=DatabaseQueue(alice.pk))
    primary.store(MemoryDraft(owner=alice.pk, content="one", key="a"))
    second, _ = primary.store(MemoryDraft(owner=alice.pk, content="two", key="b"))
    with pytest.raises(Conflict):
        manager.update(alice.pk, second.id, {"key": "a"})
    assert PendingProviderWrite.objects.count() == 0


def _api_for(key: ApiKey) -> Api:
    return Api(ManagementToken.issue(name="writer", scope="write", owners=[key])[1])


def test_rest_without_a_fallback_answers_503_with_retry_after(server: PersistentRedis) -> None:
    key = _key(_redis_provider(server))
    api = _api_for(key)
    server.kill()
    response = api.post("/api/memory", {"content": "nowhere to keep this"})
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert response.json()["error"]["type"] == "service_unavailable_error"
    assert PendingProviderWrite.objects.count() == 0


def test_rest_with_a_fallback_acknowledges_the_write_and_replays_it(server: PersistentRedis) -> None:
    key = _key(_redis_provider(server), _provider("spare", "inmemory", {}))
    api = _api_for(key)
    server.kill()
    response = api.post("/api/memory", {"content": "kept through the outage", "key": "outage"})
    assert response.status_code == 201, response.json()
    memory_id = uuid.UUID(response.json()["id"])
    assert PendingProviderWrite.objects.get().memory_id == memory_id
    server.start()
    forget()
    assert replay_all()["replayed"] == 1
    assert _redis_record(server, key, memory_id).key == "outage"
    assert api.get(f"/api/memory/{memory_id}").json()["memory"]["content"] == "kept through the outage"
