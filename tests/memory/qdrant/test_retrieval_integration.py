"""Qdrant in the real write and read paths: mirrored writes, Qdrant-first search, fallback."""

import pytest

from memory.embeddings import runtime
from memory.qdrant_conf import update_qdrant_settings
from memory.retrieval.engine import retrieve
from memory.services.indexing import reindex_all
from memory.services.memories import memory_delete
from memory.vectorstores import qdrant
from tests.factories import database_store, expired, make_memory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        not runtime.static_built(), reason="run `manage.py build_embedding_models` (make test does)"
    ),
]


@pytest.fixture
def static_and_qdrant(qdrant_on):
    from memory.conf import update_memory_settings

    update_memory_settings({"embeddingSource": "static"})
    yield
    runtime.reset()


def test_writes_go_to_both_stores_and_search_uses_qdrant_first(alice, bob, static_and_qdrant):
    mine = make_memory(alice, content="My dog is a golden retriever puppy")
    make_memory(alice, content="golden retriever, expired", expires_at=expired())
    make_memory(bob, content="Bob's golden retriever puppy")
    reindex_all()
    assert len(database_store().seqs()) == 3
    assert qdrant.QdrantStore().count() == 3
    result = retrieve(owner_ids=frozenset({alice.pk}), query="my pet", strategy="semantic")
    assert [h.memory.seq for h in result.hits] == [mine.seq]
    assert result.hits[0].tier == "qdrant" and result.resolution["vectorStore"] == "qdrant"


def test_deletes_remove_the_qdrant_point(alice, static_and_qdrant, django_capture_on_commit_callbacks):
    memory = make_memory(alice, content="a fact to forget")
    reindex_all()
    with django_capture_on_commit_callbacks(execute=True):
        memory_delete(memory)
    assert qdrant.QdrantStore().count() == 0


def test_an_empty_qdrant_falls_back_to_sqlite_vec_and_says_why(alice, static_and_qdrant):
    memory = make_memory(alice, content="My dog is a golden retriever puppy")
    reindex_all()
    qdrant.QdrantStore().delete([memory.seq])  # Qdrant lost the point
    result = retrieve(owner_ids=frozenset({alice.pk}), query="my pet", strategy="hybrid")
    assert result.hits[0].memory.seq == memory.seq and result.hits[0].tier == "hybrid"
    assert result.resolution["vectorStore"] == database_store().name
    assert f"falling back to {database_store().name}" in result.resolution["fallbackReason"]


def test_disabling_qdrant_returns_to_sqlite_vec(alice, static_and_qdrant):
    make_memory(alice, content="My dog is a golden retriever puppy")
    reindex_all()
    update_qdrant_settings({"enabled": False})
    result = retrieve(owner_ids=frozenset({alice.pk}), query="my pet", strategy="semantic")
    assert result.resolution["vectorStore"] == database_store().name and result.hits[0].tier == "vector"
