"""The store: upsert, update, delete, and the FTS/vector indexes following every write."""

import pytest
from django.db import connection

from memory.exceptions import Conflict
from memory.models import Memory
from memory.services.memories import (
    MemoryInput,
    memory_bulk_create,
    memory_create,
    memory_delete,
    memory_update,
)
from memory.vectorstores.base import VectorItem
from memory.visibility import Visibility
from tests.factories import database_store, fts_match, fts_rowids, hash_embed, make_memory

pytestmark = pytest.mark.django_db


def test_it_upserts_on_owner_and_key_and_merges_metadata_shallowly(alice):
    first, created = memory_create(
        MemoryInput(owner=alice, key="preference:editor", content="vim", metadata={"a": 1, "n": {"x": 1}})
    )
    second, created_again = memory_create(
        MemoryInput(owner=alice, key="preference:editor", content="emacs", metadata={"b": 2, "n": {"y": 2}})
    )
    assert created and not created_again
    assert second.uuid == first.uuid
    assert Memory.objects.filter(owner=alice).count() == 1
    row = Memory.objects.get(uuid=first.uuid)
    assert row.content == "emacs"
    assert row.metadata == {"a": 1, "b": 2, "n": {"y": 2}}
    assert row.created_at == first.created_at


def test_the_same_key_under_two_owners_is_two_memories(alice, bob):
    make_memory(alice, key="k", content="alice's")
    make_memory(bob, key="k", content="bob's")
    assert Memory.objects.count() == 2


def test_the_unique_constraint_backs_the_upsert(alice):
    from django.db import IntegrityError, transaction

    make_memory(alice, key="k", content="one")
    with pytest.raises(IntegrityError), transaction.atomic():
        Memory.objects.create(owner=alice, key="k", content="duplicate")


def test_memories_without_key_never_merge(alice):
    make_memory(alice, content="one")
    make_memory(alice, content="one")
    assert Memory.objects.filter(owner=alice).count() == 2


def test_fts_rows_follow_insert_update_and_delete(alice):
    memory = make_memory(alice, key="tool:db", content="We use PostgreSQL in production")
    assert fts_rowids() == {memory.seq}
    assert fts_match('"postgresql"') == {memory.seq}

    memory_update(memory, content="We moved to SQLite")
    assert fts_match('"postgresql"') == set()
    assert fts_match('"sqlite"') == {memory.seq}
    assert fts_rowids() == set(Memory.objects.values_list("seq", flat=True))

    memory_delete(memory)
    assert fts_rowids() == set()
    assert fts_match('"sqlite"') == set()


def _index_writes() -> object:
    """What changes when the keyword index is written: FTS5's data blocks; on PostgreSQL the row
    versions (``xmin``) of the index's rows."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT seq, xmin::text FROM memory_fts ORDER BY seq")
            return cursor.fetchall()
        cursor.execute("SELECT count(*) FROM memory_fts_data")
        return cursor.fetchone()[0]


def test_an_access_count_bump_does_not_rewrite_the_fts_index(alice):
    memory = make_memory(alice, content="I like tea")
    before = _index_writes()
    for _ in range(5):
        Memory.objects.filter(seq=memory.seq).update(access_count=memory.access_count + 1)
        memory.save()  # a full-row save with unchanged content must not fire the trigger either
    assert _index_writes() == before
    assert fts_match('"tea"') == {memory.seq}


def test_update_marks_reindex_only_when_content_or_key_change(alice):
    memory = make_memory(alice, key="k", content="text")
    Memory.objects.filter(seq=memory.seq).update(needs_reindex=False)
    memory.refresh_from_db()
    memory_update(memory, metadata={"x": 1})
    memory.refresh_from_db()
    assert memory.needs_reindex is False and memory.metadata == {"x": 1}
    memory_update(memory, content="new text")
    memory.refresh_from_db()
    assert memory.needs_reindex is True


def test_update_to_a_key_taken_by_another_memory_is_a_conflict(alice):
    make_memory(alice, key="taken", content="a")
    other = make_memory(alice, key="free", content="b")
    with pytest.raises(Conflict):
        memory_update(other, key="taken")


def test_vectors_follow_deletes(alice, bob):
    store = database_store()
    assert store.ensure(signature="test:hash:8", dim=8) is True
    a = make_memory(alice, content="alpha")
    b = make_memory(bob, content="beta")
    store.upsert([VectorItem(m.seq, m.owner_id, hash_embed(m.content)) for m in (a, b)])
    assert store.seqs() == {a.seq, b.seq}
    memory_delete(a)
    assert store.seqs() == {b.seq}
    bob.delete()  # a cascade deletes through SQL, the trigger still removes the vector
    assert store.count() == 0
    assert fts_rowids() == set()


def test_vector_search_never_crosses_owners(alice, bob):
    store = database_store()
    store.ensure(signature="test:hash:8", dim=8)
    mine = make_memory(alice, content="shared text")
    theirs = make_memory(bob, content="shared text")
    store.upsert([VectorItem(m.seq, m.owner_id, hash_embed(m.content)) for m in (mine, theirs)])
    hits = store.search(
        vector=hash_embed("shared text"), k=10, visibility=Visibility(owner_ids=[str(alice.pk)])
    )
    assert [h.seq for h in hits] == [mine.seq]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_upsert_replaces_a_vector(alice):
    store = database_store()
    store.ensure(signature="test:hash:8", dim=8)
    m = make_memory(alice, content="x")
    store.upsert([VectorItem(m.seq, m.owner_id, hash_embed("first"))])
    store.upsert([VectorItem(m.seq, m.owner_id, hash_embed("second"))])
    assert store.count() == 1
    hits = store.search(vector=hash_embed("second"), k=1, visibility=Visibility(owner_ids=[str(alice.pk)]))
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_a_new_signature_rebuilds_the_table_and_marks_everything_for_reindex(alice):
    store = database_store()
    store.ensure(signature="test:hash:8", dim=8)
    m = make_memory(alice, content="x")
    store.upsert([VectorItem(m.seq, m.owner_id, hash_embed("x"))])
    Memory.objects.update(needs_reindex=False)
    assert store.ensure(signature="test:hash:8", dim=8) is False
    assert store.count() == 1

    assert store.ensure(signature="test:hash:16", dim=16) is True
    assert store.count() == 0
    assert Memory.objects.filter(needs_reindex=False).count() == 0
    store.upsert([VectorItem(m.seq, m.owner_id, hash_embed("x", dim=16))])
    assert store.count() == 1


def test_int8_quantisation_stores_and_finds_vectors(alice, settings):
    store = database_store(quantization="int8")
    store.ensure(signature="test:hash:8", dim=8)
    from memory.models import VectorMeta

    assert VectorMeta.load().embedding_signature == "test:hash:8:int8"
    a = make_memory(alice, content="a")
    b = make_memory(alice, content="b")
    store.upsert([VectorItem(m.seq, m.owner_id, hash_embed(m.content)) for m in (a, b)])
    hits = store.search(vector=hash_embed("b"), k=2, visibility=Visibility(owner_ids=[str(alice.pk)]))
    assert hits[0].seq == b.seq


def test_bulk_create_upserts_in_input_order(alice, bob):
    existing = make_memory(alice, key="k1", content="old", metadata={"a": 1})
    result = memory_bulk_create(
        [
            MemoryInput(owner=alice, key="k1", content="new", metadata={"b": 2}),
            MemoryInput(owner=alice, content="no key"),
            MemoryInput(owner=bob, key="k1", content="bob's"),
            MemoryInput(owner=alice, key="k2", content="first"),
            MemoryInput(owner=alice, key="k2", content="second", metadata={"c": 3}),
        ]
    )
    assert result["created"] == 3 and result["updated"] == 1
    assert result["ids"][0] == str(existing.uuid)
    assert result["ids"][3] == result["ids"][4]
    row = Memory.objects.get(uuid=existing.uuid)
    assert (row.content, row.metadata) == ("new", {"a": 1, "b": 2})
    assert Memory.objects.get(owner=alice, key="k2").content == "second"
    assert fts_rowids() == set(Memory.objects.values_list("seq", flat=True))


@pytest.mark.parametrize("cache_mb", [1024, 0])
def test_search_sees_every_committed_write_with_or_without_the_matrix_cache(alice, settings, cache_mb):
    settings.MEMORY_VEC_CACHE_MB = cache_mb
    store = database_store()
    store.ensure(signature="test:hash:8", dim=8)
    a = make_memory(alice, content="a")
    store.upsert([VectorItem(a.seq, a.owner_id, hash_embed("a"))])
    owner = [str(alice.pk)]
    assert [
        h.seq for h in store.search(vector=hash_embed("a"), k=5, visibility=Visibility(owner_ids=owner))
    ] == [a.seq]

    b = make_memory(alice, content="b")
    store.upsert([VectorItem(b.seq, b.owner_id, hash_embed("b"))])
    assert store.search(vector=hash_embed("b"), k=1, visibility=Visibility(owner_ids=owner))[0].seq == b.seq

    store.upsert([VectorItem(a.seq, a.owner_id, hash_embed("b"))])  # a's vector replaced
    top = store.search(vector=hash_embed("b"), k=2, visibility=Visibility(owner_ids=owner))
    assert {h.seq for h in top} == {a.seq, b.seq} and min(h.score for h in top) > 0.999

    memory_delete(b)
    assert [
        h.seq for h in store.search(vector=hash_embed("b"), k=5, visibility=Visibility(owner_ids=owner))
    ] == [a.seq]
    store.delete([a.seq])
    assert store.search(vector=hash_embed("b"), k=5, visibility=Visibility(owner_ids=owner)) == []


def test_the_matrix_cache_matches_the_vec0_knn(alice, bob, settings):
    store = database_store()
    store.ensure(signature="test:hash:8", dim=8)
    memories = [make_memory(alice if i % 3 else bob, content=f"text {i}") for i in range(60)]
    store.upsert([VectorItem(m.seq, m.owner_id, hash_embed(m.content)) for m in memories])
    query = hash_embed("query")
    settings.MEMORY_VEC_CACHE_MB = 1024
    cached = store.search(vector=query, k=10, visibility=Visibility(owner_ids=[str(alice.pk)]))
    settings.MEMORY_VEC_CACHE_MB = 0
    knn = store.search(vector=query, k=10, visibility=Visibility(owner_ids=[str(alice.pk)]))
    assert [h.seq for h in cached] == [h.seq for h in knn]
    assert [round(h.score, 4) for h in cached] == [round(h.score, 4) for h in knn]
    assert all(Memory.objects.get(seq=h.seq).owner_id == alice.pk for h in cached)
