"""The VectorStore contract, for every implementation: a search honours the visibility (owners,
expiry, session, retention), and ``k`` counts visible memories only, however many hidden memories
are nearer."""

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from memory.qdrant_conf import update_qdrant_settings
from memory.vectorstores import qdrant
from memory.vectorstores.base import VectorItem, VectorStore
from memory.visibility import Visibility
from tests.factories import database_store, expired, hash_embed, make_memory
from tests.memory.qdrant.conftest import QDRANT_DEFAULTS

pytestmark = pytest.mark.django_db

DIM = 16
SIGNATURE = "test:hash:16"
QUERY = hash_embed("the query", DIM)
# More hidden memories next to the query than a store's first over-fetch (k + 10, or 3k with a session).
DECOYS = 25


def _near_the_query(i: int) -> np.ndarray:
    vector = QUERY + 0.05 * hash_embed(f"noise {i}", DIM)
    return vector / np.linalg.norm(vector)


@pytest.fixture(params=["sqlite-vec", "sqlite-vec without its matrix cache", "qdrant"])
def store(request, db, settings) -> VectorStore:
    if request.param == "qdrant":
        for name, value in QDRANT_DEFAULTS.items():
            setattr(settings, name, value)
        qdrant.reset_clients()
        update_qdrant_settings({"enabled": True, "host": ":memory:"})
        request.addfinalizer(qdrant.reset_clients)
        made: VectorStore = qdrant.QdrantStore()
    else:
        settings.MEMORY_VEC_CACHE_MB = 0 if "without" in request.param else 1024
        made = database_store()
    made.ensure(signature=SIGNATURE, dim=DIM)
    return made


@pytest.fixture
def vectors(store, alice, bob) -> dict[int, np.ndarray]:
    """Memories hidden by each filter, most of them nearer the query than any visible one."""
    now = timezone.now()
    vectors: dict[int, np.ndarray] = {}
    items: list[VectorItem] = []

    def add(owner, content, vector, **fields):
        memory = make_memory(owner, content, **fields)
        vectors[memory.seq] = vector
        items.append(VectorItem(memory.seq, owner.pk.hex, vector))

    for i in range(6):
        add(alice, f"visible {i}", hash_embed(f"visible {i}", DIM), session_id="s1" if i % 2 else "")
    add(
        alice, "expires later", hash_embed("later", DIM), session_id="s1", expires_at=now + timedelta(hours=1)
    )
    for i in range(DECOYS):
        add(alice, f"expired {i}", _near_the_query(i), session_id="s1", expires_at=expired())
        add(alice, f"other session {i}", _near_the_query(100 + i), session_id="s2")
        add(bob, f"other owner {i}", _near_the_query(200 + i), session_id="s1")
        add(alice, f"old {i}", _near_the_query(300 + i), session_id="s1", created_at=now - timedelta(days=40))
    store.upsert(items)
    return vectors


def visibilities(alice, bob):
    now = timezone.now()
    month = now - timedelta(days=30)
    return [
        Visibility(owner_ids=[alice.pk], now=now),
        Visibility(owner_ids=[alice.pk], now=now, session_id="s1"),
        Visibility(owner_ids=[alice.pk], now=now, created_after=month),
        Visibility(owner_ids=[alice.pk], now=now, session_id="s1", created_after=month),
        Visibility(owner_ids=[alice.pk], now=now + timedelta(hours=2), created_after=month),
        Visibility(owner_ids=[alice.pk, bob.pk], now=now, session_id="s1", created_after=month),
        Visibility(owner_ids=None, now=now, created_after=month),
    ]


def nearest_visible(vectors: dict[int, np.ndarray], visibility: Visibility, k: int) -> list[int]:
    visible = set(visibility.queryset().values_list("seq", flat=True)) & set(vectors)
    return sorted(visible, key=lambda seq: -float(vectors[seq] @ QUERY))[:k]


@pytest.mark.parametrize("k", [1, 3, 100])
def test_a_search_returns_the_k_nearest_visible_memories_and_nothing_hidden(store, vectors, alice, bob, k):
    for visibility in visibilities(alice, bob):
        hits = store.search(vector=QUERY, k=k, visibility=visibility)
        visible = set(visibility.queryset().values_list("seq", flat=True))
        assert {h.seq for h in hits} <= visible, visibility
        # The k best (rows tied within float noise may come in any order).
        expected = [float(vectors[seq] @ QUERY) for seq in nearest_visible(vectors, visibility, k)]
        assert len(hits) == len(expected), visibility
        assert np.allclose([float(vectors[h.seq] @ QUERY) for h in hits], expected, atol=1e-5), visibility
        assert all(np.isclose(h.score, float(vectors[h.seq] @ QUERY), atol=1e-4) for h in hits)


def test_an_empty_owner_set_finds_nothing(store, vectors):
    assert store.search(vector=QUERY, k=10, visibility=Visibility(owner_ids=[])) == []


def test_the_nearest_hidden_memories_are_nearer_than_every_visible_one(vectors, alice):
    # What makes the contract test bite: a store that filtered after a fixed over-fetch would
    # find no visible memory at all in this session and retention window.
    everything = sorted(vectors, key=lambda seq: -float(vectors[seq] @ QUERY))
    window = Visibility.within(owner_ids=[alice.pk], session_id="s1", retention_days=30)
    visible = set(window.queryset().values_list("seq", flat=True))
    assert len(visible) == 4 and not visible & set(everything[: DECOYS * 4])
