"""QdrantStore against qdrant-client's local mode: the VectorStore contract, filters inside Qdrant,
one collection per embedding signature, quantisation, the write-path mirror (memory.services.vectorsync)."""

import logging
from datetime import timedelta

import pytest
from django.utils import timezone
from qdrant_client import models

from memory.models import Memory
from memory.qdrant_conf import QdrantSettings, get_qdrant_settings, update_qdrant_settings
from memory.services import vectorsync
from memory.vectorstores import qdrant
from memory.vectorstores.base import VectorItem
from memory.vectorstores.qdrant import client
from memory.visibility import Visibility
from tests.factories import expired, hash_embed, make_memory
from tests.memory.qdrant.conftest import DIM, HashSource, items_for, store_memories

pytestmark = pytest.mark.django_db


def _seqs(hits):
    return [h.seq for h in hits]


def test_ensure_creates_the_collection_once(qdrant_on, source):
    store = qdrant.QdrantStore()
    assert store.ensure(signature=source.signature, dim=DIM) is True
    assert store.ensure(signature=source.signature, dim=DIM) is False
    assert qdrant.QdrantStore().ensure(signature=source.signature, dim=DIM) is False
    assert store.collection.startswith("omniroute_memory_hash_sha256_16_")
    assert store.collections() == [store.collection]
    assert store.count() == 0


def test_upsert_search_delete_count(qdrant_on, source, alice):
    a = make_memory(alice, "I prefer dark mode")
    b = make_memory(alice, "We deploy on Fridays")
    store = store_memories(source, a, b)
    assert store.count() == 2
    hits = store.search(
        vector=hash_embed(a.content, DIM), k=10, visibility=Visibility(owner_ids=[alice.pk.hex])
    )
    assert _seqs(hits)[0] == a.seq and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert set(_seqs(hits)) == {a.seq, b.seq}
    store.upsert(items_for(a))  # idempotent: replaces, never duplicates
    assert store.count() == 2
    store.delete([a.seq, 999_999])
    assert store.count() == 1
    assert _seqs(
        store.search(vector=hash_embed(a.content, DIM), k=10, visibility=Visibility(owner_ids=[alice.pk.hex]))
    ) == [b.seq]


def test_k_is_not_capped_at_20(qdrant_on, source, alice):
    memories = [make_memory(alice, f"fact number {i}") for i in range(30)]
    store = store_memories(source, *memories)
    assert (
        len(store.search(vector=hash_embed("x", DIM), k=25, visibility=Visibility(owner_ids=[str(alice.pk)])))
        == 25
    )


def test_owners_are_filtered_inside_qdrant(qdrant_on, source, alice, bob):
    mine = make_memory(alice, "kiwi alice")
    theirs = make_memory(bob, "kiwi bob")
    store = store_memories(source, mine, theirs)
    query = hash_embed(theirs.content, DIM)
    assert _seqs(store.search(vector=query, k=1, visibility=Visibility(owner_ids=[str(alice.pk)]))) == [
        mine.seq
    ]
    assert _seqs(store.search(vector=query, k=10, visibility=Visibility(owner_ids=[bob.pk.hex]))) == [
        theirs.seq
    ]
    assert store.search(vector=query, k=10, visibility=Visibility(owner_ids=[])) == []
    assert set(_seqs(store.search(vector=query, k=10, visibility=Visibility(owner_ids=None)))) == {
        mine.seq,
        theirs.seq,
    }


def test_a_superseded_memory_is_filtered_inside_qdrant(qdrant_on, source, alice):
    old = make_memory(alice, "I love cats")
    new = make_memory(alice, "I hate cats")
    old.refresh_from_db()
    assert old.superseded_by_id == new.seq
    store = store_memories(source, old, new)
    query = hash_embed(old.content, DIM)
    assert _seqs(store.search(vector=query, k=10, visibility=Visibility(owner_ids=[alice.pk.hex]))) == [
        new.seq
    ]
    history = Visibility(owner_ids=[alice.pk.hex], include_superseded=True)
    assert set(_seqs(store.search(vector=query, k=10, visibility=history))) == {old.seq, new.seq}


def test_expiry_is_filtered_inside_qdrant(qdrant_on, source, alice):
    gone = make_memory(alice, "old secret", expires_at=expired())
    later = make_memory(alice, "still valid", expires_at=timezone.now() + timedelta(hours=1))
    never = make_memory(alice, "forever")
    store = store_memories(source, gone, later, never)
    assert store.count() == 3
    query = hash_embed(gone.content, DIM)
    # k=1: the expired nearest point is not even a candidate
    assert _seqs(store.search(vector=query, k=1, visibility=Visibility(owner_ids=[alice.pk.hex]))) != [
        gone.seq
    ]
    assert set(_seqs(store.search(vector=query, k=10, visibility=Visibility(owner_ids=[alice.pk.hex])))) == {
        later.seq,
        never.seq,
    }
    in_two_hours = timezone.now() + timedelta(hours=2)
    assert _seqs(
        store.search(vector=query, k=10, visibility=Visibility(owner_ids=[alice.pk.hex], now=in_two_hours))
    ) == [never.seq]


def test_session_and_creation_time_are_filtered_inside_qdrant(qdrant_on, source, alice):
    here = make_memory(alice, "in session s1", session_id="s1")
    there = make_memory(alice, "in session s2", session_id="s2")
    old = make_memory(alice, "old one", session_id="s1", created_at=timezone.now() - timedelta(days=40))
    store = store_memories(source, here, there, old)
    query = hash_embed(there.content, DIM)
    assert set(
        _seqs(
            store.search(vector=query, k=10, visibility=Visibility(owner_ids=[alice.pk.hex], session_id="s1"))
        )
    ) == {
        here.seq,
        old.seq,
    }
    recent = store.search(
        vector=query,
        k=10,
        visibility=Visibility(owner_ids=[alice.pk.hex], created_after=timezone.now() - timedelta(days=30)),
    )
    assert set(_seqs(recent)) == {here.seq, there.seq}


def test_the_payload_carries_owner_session_expiry_type_and_key(qdrant_on, source, alice):
    until = timezone.now() + timedelta(days=1)
    memory = make_memory(
        alice, "Use tabs", key="style:tabs", type="procedural", session_id="s9", expires_at=until
    )
    store = store_memories(source, memory)
    with store.conn.guard() as client:
        (point,) = client.retrieve(store.collection, ids=[memory.seq], with_payload=True)
    assert point.payload == {
        "owner": alice.pk.hex,
        "session_id": "s9",
        "type": "procedural",
        "key": "style:tabs",
        "expires_at": int(until.timestamp()),
        "created_at": int(memory.created_at.timestamp()),
        "valid_to": None,
    }
    assert "content" not in point.payload


def test_upserting_a_deleted_memory_is_skipped(qdrant_on, source, alice):
    memory = make_memory(alice, "short-lived")
    items = items_for(memory)
    Memory.objects.filter(seq=memory.seq).delete()
    store = qdrant.QdrantStore()
    store.ensure(signature=source.signature, dim=DIM)
    store.upsert(items)
    assert store.count() == 0


def test_a_new_signature_gets_its_own_collection_and_the_old_one_still_searches(qdrant_on, alice):
    memory = make_memory(alice, "I prefer dark mode")
    small, large = HashSource(dim=DIM, model="v1"), HashSource(dim=32, model="v2")
    first = store_memories(small, memory)
    second = qdrant.QdrantStore()
    assert second.ensure(signature=large.signature, dim=32) is True
    assert second.collection != first.collection and second.count() == 0
    assert len(first.collections()) == 2
    hits = first.search(
        vector=hash_embed(memory.content, DIM), k=5, visibility=Visibility(owner_ids=[alice.pk.hex])
    )
    assert _seqs(hits) == [memory.seq]
    second.upsert(items_for(memory, dim=32))
    assert _seqs(
        second.search(
            vector=hash_embed(memory.content, 32), k=5, visibility=Visibility(owner_ids=[alice.pk.hex])
        )
    ) == [memory.seq]
    second.delete([memory.seq])  # every signature's collection
    assert first.count() == 0 and second.count() == 0


def test_a_collection_with_another_dimension_is_refused(qdrant_on):
    store = qdrant.QdrantStore()
    store.ensure(signature="x:y:16", dim=16)
    store.conn.ensured.clear()  # as another process would see it
    with pytest.raises(ValueError, match="16-d"):
        store.ensure(signature="x:y:16", dim=8)


@pytest.mark.parametrize("kind", ["int8", "binary"])
def test_quantised_collections_are_created_with_their_config_and_search(
    qdrant_on, source, alice, kind, monkeypatch
):
    update_qdrant_settings({"quantization": kind})
    store = qdrant.QdrantStore()
    calls = []
    create = store.conn.client.create_collection
    monkeypatch.setattr(
        store.conn.client, "create_collection", lambda *a, **kw: calls.append(kw) or create(*a, **kw)
    )
    memory = make_memory(alice, "quantised fact")
    assert store.ensure(signature=source.signature, dim=DIM) is True
    config = calls[0]["quantization_config"]
    expected = models.ScalarQuantization if kind == "int8" else models.BinaryQuantization
    assert isinstance(config, expected)
    store.upsert(items_for(memory))
    assert _seqs(
        store.search(
            vector=hash_embed(memory.content, DIM), k=3, visibility=Visibility(owner_ids=[alice.pk.hex])
        )
    ) == [memory.seq]


def test_quantisation_configs_match_the_reference():
    int8 = qdrant.quantization_config("int8")
    assert (int8.scalar.type, int8.scalar.quantile, int8.scalar.always_ram) == (
        models.ScalarType.INT8,
        0.99,
        True,
    )
    assert qdrant.quantization_config("binary").binary.always_ram is True
    assert qdrant.quantization_config("none") is None
    assert qdrant.search_params("none") is None
    assert qdrant.search_params("int8").quantization.rescore is True
    assert qdrant.search_params("binary").quantization.oversampling == 2.0


def test_collection_names_are_safe_and_distinct():
    a = qdrant.collection_name("base", "remote:text-embedding-3-small:1536")
    b = qdrant.collection_name("base", "remote:text.embedding.3.small:1536")
    assert a.startswith("base_remote_text_embedding_3_small_1536_") and a != b
    assert all(c.isalnum() or c in "_-" for c in a)


# -- module functions: choice, health, mirror


def test_choice_and_health_when_disabled(db):
    choice = qdrant.qdrant_choice()
    assert choice.store is None and choice.reason == "qdrant disabled"
    assert qdrant.qdrant_health() == {"enabled": False, "healthy": None, "latencyMs": None, "error": None}


def test_choice_when_enabled_without_a_host(db):
    update_qdrant_settings({"enabled": True})
    assert qdrant.qdrant_choice().reason == "qdrant enabled but no host configured"


def test_choice_and_health_in_local_mode(qdrant_on):
    choice = qdrant.qdrant_choice()
    assert isinstance(choice.store, qdrant.QdrantStore) and choice.name == "qdrant"
    health = qdrant.qdrant_health()
    assert health["enabled"] is True and health["healthy"] is True and health["error"] is None


def test_an_unreachable_server_is_not_chosen(db):
    update_qdrant_settings({"enabled": True, "host": "http://127.0.0.1:1", "timeoutSeconds": 1})
    choice = qdrant.qdrant_choice()
    assert choice.store is None and choice.reason.startswith("qdrant unreachable at http://127.0.0.1:1")
    health = qdrant.qdrant_health()
    assert health["healthy"] is False and health["error"]


def test_the_registry_falls_back_when_qdrant_is_unreachable(db, settings):
    from memory.conf import get_memory_settings
    from memory.vectorstores.registry import active_store

    settings.VECTOR_STORE_DISABLE_VEC = True
    update_qdrant_settings({"enabled": True, "host": "http://127.0.0.1:1", "timeoutSeconds": 1})
    choice = active_store(get_memory_settings())
    assert choice.store is None and "qdrant unreachable" in choice.reason


def test_the_registry_picks_qdrant_when_enabled(qdrant_on):
    from memory.conf import get_memory_settings
    from memory.vectorstores.registry import active_store

    assert active_store(get_memory_settings()).name == "qdrant"


def test_mirror_functions_are_no_ops_when_disabled(db, alice):
    memory = make_memory(alice)
    assert vectorsync.mirror_upsert(items_for(memory), signature="hash:sha256:16") == 0
    assert vectorsync.mirror_delete([memory.seq]) == 0
    assert vectorsync.mirror_refresh([memory.seq]) == 0
    assert client._connections == {}


def test_mirror_upsert_delete_and_payload_refresh(qdrant_on, source, alice):
    memory = make_memory(alice, "mirrored", session_id="a")
    assert vectorsync.mirror_upsert(items_for(memory), signature=source.signature) == 1
    store = qdrant.QdrantStore()
    store.ensure(signature=source.signature, dim=DIM)
    assert store.count() == 1
    Memory.objects.filter(seq=memory.seq).update(session_id="b")
    assert vectorsync.mirror_refresh([memory.seq]) == 1
    assert _seqs(
        store.search(
            vector=hash_embed("q", DIM), k=5, visibility=Visibility(owner_ids=[alice.pk.hex], session_id="b")
        )
    ) == [memory.seq]
    assert vectorsync.mirror_delete([memory.seq]) == 1
    assert store.count() == 0


def test_mirror_failures_are_logged_not_raised_and_pause_mirroring(
    qdrant_on, source, alice, monkeypatch, caplog, settings
):
    settings.MEMORY_BREAKER_FAILURES = 1  # the circuit opens at the first failure
    memory = make_memory(alice, "doomed")
    calls = []

    def upsert(*args, **kwargs):
        calls.append(args)
        raise RuntimeError("boom")

    # qdrant-client's call fails (inside the connection's breaker), not our store's code.
    monkeypatch.setattr(client.connection_for(get_qdrant_settings()).client, "upsert", upsert)
    with caplog.at_level(logging.WARNING, logger="memory.vectorsync"):
        assert vectorsync.mirror_upsert(items_for(memory), signature=source.signature) == 0
    assert "qdrant upsert of 1 memories" in caplog.text and "boom" in caplog.text
    assert "local :memory:" in caplog.text
    assert vectorsync.mirror_upsert(items_for(memory), signature=source.signature) == 0
    assert len(calls) == 1  # the second write skipped Qdrant after the failure
    assert qdrant.qdrant_choice().store is None


def test_a_delete_the_mirror_missed_schedules_a_sweep(qdrant_on, source, alice, monkeypatch):
    memory = make_memory(alice, "doomed")
    scheduled = []
    monkeypatch.setattr(vectorsync, "schedule_sweep", lambda: scheduled.append(True))

    def delete(self, seqs):
        raise RuntimeError("boom")

    monkeypatch.setattr(qdrant.QdrantStore, "delete", delete)
    assert vectorsync.mirror_delete([memory.seq]) == 0
    assert vectorsync.mirror_delete([memory.seq]) == 0  # skipped after the failure: missed too
    assert scheduled == [True, True]


def test_the_sweep_is_scheduled_once_for_a_while(monkeypatch):
    from memory.tasks.indexing import sweep_mirrors_task

    delays = []
    monkeypatch.setattr(sweep_mirrors_task, "schedule", lambda **kw: delays.append(kw["delay"]))
    vectorsync.forget_sweep_requests()
    vectorsync.schedule_sweep()
    vectorsync.schedule_sweep()
    vectorsync.forget_sweep_requests()
    assert delays == [vectorsync.SWEEP_DELAY_SECONDS]


def test_the_sweep_removes_what_the_mirror_missed(qdrant_on, source, alice):
    kept, gone = make_memory(alice, "kept"), make_memory(alice, "gone")
    store = store_memories(source, kept, gone)
    Memory.objects.filter(seq=gone.seq).delete()  # as if the mirror had been away
    assert vectorsync.sweep_mirrors(retention_days=30) == {"qdrant": 1}
    assert store.count() == 1


def test_errors_never_show_the_api_key():
    cfg = QdrantSettings(host="h", apiKey="secret-key-1234")
    assert client.sanitise(RuntimeError("401 for api-key secret-key-1234"), cfg) == "401 for api-key ***"


# -- maintenance


def test_cleanup_deletes_gone_expired_and_old_points_and_never_touches_sqlite(qdrant_on, source, alice):
    live = make_memory(alice, "live")
    gone = make_memory(alice, "gone", expires_at=expired())
    old = make_memory(alice, "old", created_at=timezone.now() - timedelta(days=60))
    deleted = make_memory(alice, "deleted")
    store = store_memories(source, live, gone, old, deleted)
    Memory.objects.filter(seq=deleted.seq).delete()
    before = list(Memory.objects.order_by("seq").values_list("seq", "content", "expires_at", "created_at"))
    assert qdrant.cleanup_expired(30) == 3
    assert (
        list(Memory.objects.order_by("seq").values_list("seq", "content", "expires_at", "created_at"))
        == before
    )
    with store.conn.guard() as client:
        remaining = {int(p.id) for p in client.scroll(store.collection, limit=10)[0]}
    assert remaining == {live.seq}
    assert qdrant.cleanup_expired(30) == 0


def test_cleanup_clamps_retention_days(qdrant_on, source, alice):
    ancient = make_memory(alice, "ancient", created_at=timezone.now() - timedelta(days=3000))
    store_memories(source, ancient)
    assert qdrant.cleanup_expired(99_999) == 0  # clamped to 3650 days
    assert qdrant.cleanup_expired(0) == 1  # clamped to 1 day


def test_cleanup_when_disabled_raises_unavailable(db):
    with pytest.raises(qdrant.QdrantUnavailable):
        qdrant.cleanup_expired(30)


def test_backfill_writes_missing_live_memories_once(qdrant_on, source, alice, bob):
    first = make_memory(alice, "one")
    make_memory(bob, "two")
    make_memory(alice, "expired", expires_at=expired())
    make_memory(alice, "too old", created_at=timezone.now() - timedelta(days=90))
    store_memories(source, first)
    assert qdrant.backfill(batch_size=1, retention_days=30) == {"upserted": 1, "errors": 0, "reason": None}
    assert qdrant.QdrantStore().count() == 2
    assert qdrant.backfill(retention_days=30)["upserted"] == 0


def test_backfill_without_an_embedding_source_reports_why(qdrant_on, monkeypatch):
    from memory.embeddings import runtime
    from memory.embeddings.runtime import Resolution

    monkeypatch.setattr(runtime, "get_source", lambda s: (None, Resolution(None, None, "auto: nothing")))
    assert qdrant.backfill() == {"upserted": 0, "errors": 0, "reason": "auto: nothing"}


def test_vector_items_for_a_store_with_no_collection_are_refused(qdrant_on, alice):
    with pytest.raises(RuntimeError, match="ensure"):
        qdrant.QdrantStore().upsert([VectorItem(1, alice.pk.hex, hash_embed("x", DIM))])


def test_local_mode_in_a_directory_persists_across_clients(db, source, alice, tmp_path):
    update_qdrant_settings({"enabled": True, "host": str(tmp_path / "qdrant")})
    memory = make_memory(alice, "kept on disk")
    store_memories(source, memory)
    qdrant.reset_clients()  # closes the client and releases the directory lock
    store = qdrant.QdrantStore()
    assert store.ensure(signature=source.signature, dim=DIM) is False
    assert _seqs(
        store.search(
            vector=hash_embed(memory.content, DIM), k=3, visibility=Visibility(owner_ids=[alice.pk.hex])
        )
    ) == [memory.seq]


def test_a_settings_change_closes_clients_it_no_longer_uses(qdrant_on, django_capture_on_commit_callbacks):
    old = qdrant.connection_for(get_qdrant_settings())
    with django_capture_on_commit_callbacks(execute=True):
        update_qdrant_settings({"host": "http://127.0.0.1:1"})
    assert old not in client._connections.values()
