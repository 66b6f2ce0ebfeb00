"""The Redis adapter's RediSearch KNN path against a real Redis 8.2 with the search module
(search_redis.py): what the conformance suite cannot show — that the index answers beyond the scan
bound, that filters and owners are applied by it and checked after it, that mirrors follow every
write, back-fill, and the fall back to the scan when the index is gone."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta

import numpy as np
import pytest
import redis
from django.test import override_settings
from django.utils import timezone

from memory.backends.base import Filters, MemoryDraft
from memory.backends.redis import RedisBackend
from memory.backends.redis_knn import tag
from memory.backends.registry import build_backend
from tests.memory.backends.search_redis import shared_search_server

DIMENSION = 8
OWNER = uuid.uuid4()
OTHER = uuid.uuid4()


def _unit(count: int, seed: int = 7) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, DIMENSION)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture
def url(request: pytest.FixtureRequest, db: None) -> Iterator[str]:
    """The shared search server's URL; loopback needs the private-URL switch."""
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        yield shared_search_server(request.config).url


@pytest.fixture
def prefix(url: str) -> Iterator[str]:
    """A key prefix of this test's own; its keys and indexes are deleted after it."""
    chosen = f"omr-knn:{uuid.uuid4().hex}:"
    yield chosen
    client = redis.Redis.from_url(url)
    for index in client.execute_command("FT._LIST"):
        if index.decode().startswith(chosen):
            client.execute_command("FT.DROPINDEX", index)
    keys = list(client.scan_iter(match=f"{chosen}*"))
    if keys:
        client.delete(*keys)


def _backend(url: str, prefix: str, **config: object) -> RedisBackend:
    backend = build_backend("redis", {"url": url, "prefix": prefix, "retries": 0, **config})
    assert isinstance(backend, RedisBackend)
    return backend


def _raw(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, decode_responses=True)


def test_knn_ranks_records_the_bounded_scan_never_reads(url: str, prefix: str) -> None:
    backend = _backend(url, prefix, scan_limit=2)
    vectors = _unit(20)
    now = timezone.now()
    records = [
        backend.store_with_embedding(
            MemoryDraft(owner=OWNER, content=f"note {i}", created_at=now - timedelta(minutes=20 - i)),
            vectors[i],
        )[0]
        for i in range(20)
    ]
    oldest = records[0]
    hits = backend.search_similar(OWNER, vectors[0], limit=3)
    assert hits[0].record.id == oldest.id and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # The same data through the scan (vector_index none) sees only the two newest records.
    scanning = _backend(url, prefix, scan_limit=2, vector_index="none")
    assert {h.record.id for h in scanning.search_similar(OWNER, vectors[0], limit=3)} == {
        records[18].id,
        records[19].id,
    }
    health = backend.health()
    assert health.ok and health.detail["redisearch"] is True and health.detail["knn"] is True
    assert health.detail["vectorSearch"].startswith("RediSearch KNN (HNSW")
    assert "FT._LIST" not in health.detail["vectorSearch"]
    assert scanning.health().detail["knn"] is False
    info = _raw(url).ft(backend.knn.index_name(OWNER)).info()
    assert int(info["num_docs"]) == 20


def test_filters_and_expiry_are_applied_by_the_index_and_checked_after(url: str, prefix: str) -> None:
    backend = _backend(url, prefix, scan_limit=1)
    vector = _unit(1)[0]
    now = timezone.now()
    session = 'chat {42} | "tags" - @x:y'  # punctuation a TAG query would have to escape
    wanted = backend.store_with_embedding(
        MemoryDraft(owner=OWNER, content="wanted", type="episodic", session_id=session), vector
    )[0]
    other_session = backend.store_with_embedding(
        MemoryDraft(owner=OWNER, content="other session", type="episodic", session_id="s2"), vector
    )[0]
    other_type = backend.store_with_embedding(
        MemoryDraft(owner=OWNER, content="other type", type="factual", session_id=session), vector
    )[0]
    expired = backend.store_with_embedding(
        MemoryDraft(
            owner=OWNER, content="expired", session_id=session, expires_at=now + timedelta(minutes=1)
        ),
        vector,
    )[0]
    old = backend.store_with_embedding(
        MemoryDraft(
            owner=OWNER,
            content="old",
            type="episodic",
            session_id=session,
            created_at=now - timedelta(days=9),
        ),
        vector,
    )[0]
    by_session = {
        h.record.id for h in backend.search_similar(OWNER, vector, filters=Filters(session_id=session))
    }
    assert {wanted.id, other_type.id, old.id, expired.id} == by_session
    both = Filters(session_id=session, type="episodic")
    assert {h.record.id for h in backend.search_similar(OWNER, vector, filters=both)} == {wanted.id, old.id}
    recent = Filters(session_id=session, type="episodic", created_after=now - timedelta(days=1))
    assert [h.record.id for h in backend.search_similar(OWNER, vector, filters=recent)] == [wanted.id]
    assert other_session.id not in by_session
    # Once expired, a record is never ranked, though its mirror is still in the index.
    later = now + timedelta(minutes=2)
    hits = backend.knn.search(OWNER, vector, limit=10, filters=Filters(session_id=session), now=later)
    assert hits is not None and expired.id not in {h.record.id for h in hits}
    assert _raw(url).exists(backend.knn.mirror_key(OWNER, expired.id))
    assert tag(session) == tag(session) and len(tag(session)) == 32


def test_each_owner_has_an_index_of_its_own_and_sees_only_its_records(url: str, prefix: str) -> None:
    backend = _backend(url, prefix)
    vector = _unit(1)[0]
    mine = backend.store_with_embedding(MemoryDraft(owner=OWNER, content="mine"), vector)[0]
    backend.store_with_embedding(MemoryDraft(owner=OTHER, content="theirs"), vector)
    assert [h.record.id for h in backend.search_similar(OWNER, vector)] == [mine.id]
    assert [h.record.content for h in backend.search_similar(OTHER, vector)] == ["theirs"]
    indexes = {i for i in _raw(url).execute_command("FT._LIST") if i.startswith(prefix)}
    assert indexes == {backend.knn.index_name(OWNER), backend.knn.index_name(OTHER)}
    # A mirror planted under the owner's prefix for another owner's record is not returned.
    raw = _raw(url)
    planted = backend.knn.mirror_key(OWNER, uuid.uuid4())
    raw.hset(planted, mapping={"vec": vector.astype("<f4").tobytes(), "owner": OWNER.hex, "expires": 9e15})
    assert [h.record.id for h in backend.search_similar(OWNER, vector)] == [mine.id]


def test_mirrors_follow_updates_deletes_and_clears(url: str, prefix: str) -> None:
    backend = _backend(url, prefix)
    raw = _raw(url)
    a, b, c = _unit(3)
    first = backend.store_with_embedding(MemoryDraft(owner=OWNER, content="first", key="k1"), a)[0]
    second = backend.store_with_embedding(MemoryDraft(owner=OWNER, content="second"), b)[0]
    backend.store(MemoryDraft(owner=OWNER, content="no vector"))
    assert raw.exists(backend.knn.mirror_key(OWNER, first.id))
    # A new vector replaces the mirror's; a new content without one drops it.
    backend.update(OWNER, first.id, {"content": "first, again"}, embedding=c)
    assert backend.search_similar(OWNER, c, limit=1)[0].record.id == first.id
    backend.update(OWNER, first.id, {"content": "first, without a vector"})
    assert not raw.exists(backend.knn.mirror_key(OWNER, first.id))
    assert first.id not in {h.record.id for h in backend.search_similar(OWNER, c)}
    # The upsert on the key keeps the vector with the content and the mirror with the vector.
    backend.store_with_embedding(MemoryDraft(owner=OWNER, content="first, upserted", key="k1"), a)
    assert backend.search_similar(OWNER, a, limit=1)[0].record.content == "first, upserted"
    assert backend.delete(OWNER, second.id)
    assert not raw.exists(backend.knn.mirror_key(OWNER, second.id))
    assert backend.clear(OWNER) == 2
    assert not list(raw.scan_iter(match=f"{backend.knn.owner_prefix(OWNER)}*"))
    assert backend.search_similar(OWNER, a) == []


def test_records_without_mirrors_are_back_filled_when_the_index_is_made(url: str, prefix: str) -> None:
    backend = _backend(url, prefix, scan_limit=1)
    raw = _raw(url)
    vectors = _unit(4)
    records = [
        backend.store_with_embedding(MemoryDraft(owner=OWNER, content=f"n{i}"), v)[0]
        for i, v in enumerate(vectors)
    ]
    # As if written before mirrors existed: records only.
    raw.delete(*[backend.knn.mirror_key(OWNER, r.id) for r in records])
    fresh = _backend(url, prefix, scan_limit=1)
    assert fresh.search_similar(OWNER, vectors[0], limit=1)[0].record.id == records[0].id
    assert all(raw.exists(fresh.knn.mirror_key(OWNER, r.id)) for r in records)
    assert raw.exists(f"{prefix}{OWNER.hex}:knn-ready")


def test_a_stale_mirror_cannot_change_a_score(url: str, prefix: str) -> None:
    backend = _backend(url, prefix)
    a, b = _unit(2)
    record = backend.store_with_embedding(MemoryDraft(owner=OWNER, content="true vector a"), a)[0]
    # The mirror says b; the record's own vector (a) is what is scored.
    _raw(url).hset(backend.knn.mirror_key(OWNER, record.id), "vec", b.astype("<f4").tobytes())
    hits = backend.search_similar(OWNER, b, limit=1)
    assert hits[0].record.id == record.id
    assert hits[0].score == pytest.approx(float(a @ b), abs=1e-5)


def test_a_dropped_index_falls_back_to_the_scan_then_is_made_again(url: str, prefix: str) -> None:
    backend = _backend(url, prefix)
    vector = _unit(1)[0]
    record = backend.store_with_embedding(MemoryDraft(owner=OWNER, content="kept"), vector)[0]
    assert backend.search_similar(OWNER, vector)[0].record.id == record.id
    raw = _raw(url)
    raw.execute_command("FT.DROPINDEX", backend.knn.index_name(OWNER))
    # The search that meets the missing index is answered by the scan.
    assert [h.record.id for h in backend.search_similar(OWNER, vector)] == [record.id]
    assert not raw.exists(f"{prefix}{OWNER.hex}:knn-ready")
    # The next one makes the index again.
    assert [h.record.id for h in backend.search_similar(OWNER, vector)] == [record.id]
    assert backend.knn.index_name(OWNER) in raw.execute_command("FT._LIST")


def test_a_flat_index_when_configured(url: str, prefix: str) -> None:
    backend = _backend(url, prefix, vector_index="flat")
    vectors = _unit(5)
    for i, v in enumerate(vectors):
        backend.store_with_embedding(MemoryDraft(owner=OWNER, content=f"n{i}"), v)
    assert backend.search_similar(OWNER, vectors[3], limit=1)[0].record.content == "n3"
    info = _raw(url).execute_command("FT.INFO", backend.knn.index_name(OWNER))
    assert "FLAT" in str(info)
    assert backend.health().detail["vectorSearch"].startswith("RediSearch KNN (FLAT")
