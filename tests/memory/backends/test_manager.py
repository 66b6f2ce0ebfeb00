"""The manager's per-operation rules, fallbacks, events and replay, over real in-memory backends that
are taken down and brought back (``InMemoryBackend.fail`` / ``recover``)."""

from __future__ import annotations

import logging
import uuid

import numpy as np
import pytest

from memory.backends.base import BackendInputError, BackendUnavailable, MemoryDraft
from memory.backends.inmemory import InMemoryBackend
from memory.backends.manager import FallbackEvent, MemoryManager

OWNER = uuid.uuid4()


def draft(content: str, **fields: object) -> MemoryDraft:
    return MemoryDraft(owner=OWNER, content=content, **fields)  # type: ignore[arg-type]


@pytest.fixture
def primary() -> InMemoryBackend:
    return InMemoryBackend(name="primary", dimension=4)


@pytest.fixture
def spare() -> InMemoryBackend:
    return InMemoryBackend(name="spare", dimension=4)


@pytest.fixture
def manager(primary: InMemoryBackend, spare: InMemoryBackend) -> MemoryManager:
    return MemoryManager(primary, [spare])


def test_names_must_be_distinct() -> None:
    with pytest.raises(ValueError, match="distinct"):
        MemoryManager(InMemoryBackend(name="a"), [InMemoryBackend(name="a")])


def test_a_write_goes_to_the_primary_only(manager: MemoryManager, primary, spare) -> None:
    events: list[FallbackEvent] = []
    record, created = manager.store(draft("hello"), events=events)
    assert created and primary.get(OWNER, record.id) == record
    assert spare.count(OWNER) == 0
    assert events == [] and manager.pending() == []


def test_without_fallbacks_a_write_the_primary_cannot_take_is_refused(primary) -> None:
    manager = MemoryManager(primary)
    primary.fail("connection refused")
    with pytest.raises(BackendUnavailable) as caught:
        manager.store(draft("lost?"))
    assert caught.value.status == 503
    assert "connection refused" in caught.value.message
    primary.recover()
    assert primary.count(OWNER) == 0
    assert manager.pending() == []


def test_with_a_fallback_the_write_is_kept_there_and_replayed(manager, primary, spare, caplog) -> None:
    primary.fail("redis went away")
    events: list[FallbackEvent] = []
    with caplog.at_level(logging.WARNING, logger="memory.backends"):
        record, _ = manager.store(draft("kept while the primary is down", key="k"), events=events)
    assert spare.get(OWNER, record.id) == record
    assert [(e.operation, e.failed, e.used) for e in events] == [("store", "primary", "spare")]
    assert events[0].as_dict()["reason"] == "primary is unavailable: redis went away"
    assert manager.recent_events() == events
    assert "store on primary failed" in caplog.text
    assert [w.memory_id for w in manager.pending()] == [record.id]
    # Readable meanwhile, through the fallback.
    assert manager.get(OWNER, record.id) == record

    report = manager.replay()  # still down: nothing moves
    assert (report.replayed, report.pending) == (0, 1)
    assert "redis went away" in report.stopped

    primary.recover()
    report = manager.replay()
    assert (report.replayed, report.pending, report.stopped) == (1, 0, None)
    replayed = primary.get(OWNER, record.id)
    assert replayed is not None
    assert (replayed.content, replayed.key, replayed.created_at) == (record.content, "k", record.created_at)
    assert spare.get(OWNER, record.id) is None  # the fallback's copy is released
    assert manager.pending() == []


def test_a_replay_carries_the_vector(manager, primary, spare) -> None:
    primary.fail()
    vector = np.array([0.0, 1.0, 0.0, 0.0], dtype=np.float32)
    record, _ = manager.store_with_embedding(draft("with a vector"), vector)
    primary.recover()
    assert manager.replay().replayed == 1
    (hit,) = primary.search_similar(OWNER, vector)
    assert hit.record.id == record.id and hit.score == pytest.approx(1.0)


def test_changes_to_a_record_waiting_for_replay_are_replayed_in_order(manager, primary, spare) -> None:
    primary.fail()
    record, _ = manager.store(draft("first version"))
    events: list[FallbackEvent] = []
    updated = manager.update(OWNER, record.id, {"content": "second version"}, events=events)
    assert updated is not None and updated.content == "second version"
    assert [e.operation for e in events] == ["update"]
    doomed, _ = manager.store(draft("to delete"))
    assert manager.delete(OWNER, doomed.id) is True
    assert [w.action for w in manager.pending()] == ["store", "update", "store", "delete"]
    primary.recover()
    assert manager.replay().replayed == 4
    assert primary.get(OWNER, record.id).content == "second version"
    assert primary.get(OWNER, doomed.id) is None
    assert spare.count(OWNER) == 0


def test_update_and_delete_are_mirrored_best_effort(manager, primary, spare) -> None:
    record, _ = primary.store(draft("on both", key="both"))
    spare.store(draft("on both", key="both", id=record.id))
    assert manager.update(OWNER, record.id, {"content": "changed"}).content == "changed"
    assert spare.get(OWNER, record.id).content == "changed"
    spare.fail("spare is down")
    events: list[FallbackEvent] = []
    assert manager.delete(OWNER, record.id, events=events) is True  # the spare's failure is not the caller's
    assert events == []
    assert primary.get(OWNER, record.id) is None
    spare.recover()
    assert spare.get(OWNER, record.id) is not None  # best effort: it missed the delete


def test_an_update_the_primary_misses_is_its_answer(manager, primary, spare) -> None:
    assert manager.update(OWNER, uuid.uuid4(), {"content": "x"}) is None
    primary.fail()
    with pytest.raises(BackendUnavailable, match="no fallback holds"):
        manager.update(OWNER, uuid.uuid4(), {"content": "x"})
    assert manager.pending() == []


def test_get_falls_back_on_a_miss(manager, primary, spare) -> None:
    only_there, _ = spare.store(draft("only on the spare"))
    events: list[FallbackEvent] = []
    assert manager.get(OWNER, only_there.id, events=events) == only_there
    assert [(e.operation, e.used, e.reason) for e in events] == [("get", "spare", "not found")]
    assert manager.get(OWNER, uuid.uuid4()) is None


def test_search_falls_back_on_error_not_on_an_empty_answer(manager, primary, spare) -> None:
    spare.store(draft("python on the spare"))
    assert manager.search(OWNER, "python") == []  # the primary answered: empty is an answer
    primary.fail("timeout")
    events: list[FallbackEvent] = []
    hits = manager.search(OWNER, "python", events=events)
    assert [h.record.content for h in hits] == ["python on the spare"]
    assert [(e.operation, e.used) for e in events] == [("search", "spare")]
    spare.fail("also down")
    events = []
    with pytest.raises(BackendUnavailable, match="also down"):
        manager.search(OWNER, "python", events=events)
    assert [(e.operation, e.used) for e in events] == [("search", None)]


def test_list_and_count_answer_from_a_fallback_while_the_primary_is_down(manager, primary, spare) -> None:
    primary.store(draft("on the primary"))
    spare.store(draft("on the spare"))
    primary.fail()
    events: list[FallbackEvent] = []
    assert [r.content for r in manager.list(OWNER, events=events).records] == ["on the spare"]
    assert manager.count(OWNER, events=events) == 1
    assert [e.operation for e in events] == ["list", "count"]


def test_bad_input_never_moves_to_a_fallback(manager, primary, spare) -> None:
    with pytest.raises(BackendInputError) as caught:
        manager.store_with_embedding(draft("wrong size"), np.ones(5))
    assert caught.value.details[0]["field"] == "embedding"
    assert spare.count(OWNER) == 0 and manager.recent_events() == []


def test_clear_is_refused_while_the_primary_is_down_and_drops_moot_writes(manager, primary, spare) -> None:
    primary.fail()
    manager.store(draft("queued"))
    with pytest.raises(BackendUnavailable):
        manager.clear(OWNER)
    primary.recover()
    assert manager.clear(OWNER) == 0
    assert manager.pending() == [] and spare.count(OWNER) == 0
    assert manager.replay().replayed == 0


def test_health_of_all(manager, primary, spare) -> None:
    spare.fail("maintenance")
    health = manager.health_all()
    assert list(health) == ["primary", "spare"]
    assert health["primary"].ok is True
    assert (health["spare"].ok, health["spare"].error) == (False, "unavailable: maintenance")
