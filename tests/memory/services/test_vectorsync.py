"""memory.services.vectorsync: every way of deleting memories leaves no vector in any store, with
sqlite-vec (the database store) and Qdrant (a mirror, in qdrant-client's local mode) both active."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.conf import update_memory_settings
from memory.embeddings import runtime
from memory.models import Memory
from memory.qdrant_conf import update_qdrant_settings
from memory.services.indexing import reindex_all, vector_context
from memory.services.memories import memory_delete, memory_update
from memory.services.retention import delete_memories, memory_clear
from memory.services.summarization import summarize_older_than
from memory.vectorstores import qdrant
from memory.visibility import Visibility
from tests.factories import database_store, make_memory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        not runtime.static_built(), reason="run `manage.py build_embedding_models` (make test does)"
    ),
]


@pytest.fixture
def both_stores(settings):
    settings.QDRANT_HOST = ""
    qdrant.reset_clients()
    update_memory_settings({"embeddingSource": "static"})
    update_qdrant_settings({"enabled": True, "host": ":memory:"})
    yield
    qdrant.reset_clients()
    runtime.reset()


def qdrant_points() -> set[int]:
    store = qdrant.QdrantStore()
    return {seq for name in store.collections() for page in store.point_ids(name) for seq in page}


def vectors_everywhere() -> tuple[set[int], set[int]]:
    return database_store().seqs(), qdrant_points()


@pytest.fixture
def memories(both_stores, alice, bob):
    made = {
        "old": make_memory(
            alice, "We moved to Lisbon in 2019", created_at=timezone.now() - timedelta(days=60)
        ),
        "tea": make_memory(alice, "I drink green tea every morning"),
        "tabs": make_memory(alice, "Always indent with tabs", type="procedural"),
        "bob": make_memory(bob, "Bob's dog is a golden retriever"),
    }
    reindex_all()
    everything = {m.seq for m in made.values()}
    assert vectors_everywhere() == (everything, everything)
    return made


def _single(alice, memories):
    memory_delete(memories["tea"])
    return {memories["tea"].seq}


def _bulk(alice, memories):
    delete_memories(Memory.objects.filter(owner=alice))
    return {memories[name].seq for name in ("old", "tea", "tabs")}


def _summarise(alice, memories):
    result = summarize_older_than(owner=alice, days=30)
    assert result.deleted_count == 1
    return {memories["old"].seq}


def _clear(alice, memories):
    assert memory_clear(owner=alice, type="procedural")["deletedCount"] == 1
    return {memories["tabs"].seq}


def _key_deletion(alice, memories):
    alice.delete()
    return {memories[name].seq for name in ("old", "tea", "tabs")}


def _admin(alice, memories):
    from django.contrib.admin.sites import site

    site._registry[Memory].delete_queryset(None, Memory.objects.filter(seq=memories["tabs"].seq))
    site._registry[Memory].delete_model(None, memories["tea"])
    return {memories["tabs"].seq, memories["tea"].seq}


@pytest.mark.parametrize("path", [_single, _bulk, _summarise, _clear, _key_deletion, _admin])
def test_every_delete_path_leaves_no_vector_in_any_store(
    path, memories, alice, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        deleted = path(alice, memories)
    assert not Memory.objects.filter(seq__in=deleted).exists()
    in_database, in_qdrant = vectors_everywhere()
    assert not deleted & in_database and not deleted & in_qdrant
    left = {m.seq for m in memories.values()} - deleted
    assert left <= in_database and left <= in_qdrant  # only the deleted ones went


def test_an_update_that_keeps_the_content_refreshes_what_the_mirror_filters_on(
    memories, alice, django_capture_on_commit_callbacks
):
    tea = memories["tea"]
    vector = vector_context().source.embed([tea.content])[0]
    visible = Visibility(owner_ids=[alice.pk])
    assert tea.seq in {h.seq for h in qdrant.QdrantStore().search(vector=vector, k=10, visibility=visible)}
    with django_capture_on_commit_callbacks(execute=True):
        memory_update(tea, expires_at=timezone.now() - timedelta(minutes=1))
    hits = qdrant.QdrantStore().search(vector=vector, k=10, visibility=Visibility(owner_ids=[alice.pk]))
    assert tea.seq not in {h.seq for h in hits}  # the payload says it expired: filtered inside Qdrant
