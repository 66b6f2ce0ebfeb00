"""Qdrant in qdrant-client's local mode, a deterministic embedder, and helpers."""

from __future__ import annotations

import numpy as np
import pytest

from memory.embeddings import runtime
from memory.embeddings.base import EmbeddingSource
from memory.embeddings.runtime import Resolution
from memory.qdrant_conf import update_qdrant_settings
from memory.vectorstores import qdrant
from memory.vectorstores.base import VectorItem
from tests.factories import hash_embed

DIM = 16
# The QDRANT_* settings as a fresh clone has them (whatever the environment of the test run).
QDRANT_DEFAULTS = {
    "QDRANT_HOST": "",
    "QDRANT_PORT": 6333,
    "QDRANT_API_KEY": "",
    "QDRANT_COLLECTION": "omniroute_memory",
    "QDRANT_TIMEOUT_SECONDS": 5,
}


class HashSource(EmbeddingSource):
    """Same text, same unit vector: enough to test storage and filters, not meaning."""

    name = "hash"

    def __init__(self, dim: int = DIM, model: str = "sha256"):
        self.dim = dim
        self.model = model

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([hash_embed(t, self.dim) for t in texts]) if texts else np.zeros((0, self.dim))


@pytest.fixture(autouse=True)
def clean_qdrant(settings):
    for name, value in QDRANT_DEFAULTS.items():
        setattr(settings, name, value)
    # The servers these tests stand up or expect to fail are on loopback: the URL policy's one switch.
    settings.MEMORY_ALLOW_PRIVATE_URLS = True
    qdrant.reset_clients()
    yield
    qdrant.reset_clients()


@pytest.fixture
def source(monkeypatch) -> HashSource:
    """The memory embedding source, replaced by the hash embedder."""
    fake = HashSource()
    monkeypatch.setattr(runtime, "get_source", lambda settings: (fake, Resolution("hash", "sha256", "test")))
    return fake


@pytest.fixture
def qdrant_on(db):
    """Qdrant enabled, in memory."""
    return update_qdrant_settings({"enabled": True, "host": ":memory:"})


def items_for(*memories, dim: int = DIM) -> list[VectorItem]:
    return [VectorItem(m.seq, str(m.owner_id), hash_embed(m.content, dim)) for m in memories]


def store_memories(source: HashSource, *memories) -> qdrant.QdrantStore:
    store = qdrant.QdrantStore()
    store.ensure(signature=source.signature, dim=source.dim)
    store.upsert(items_for(*memories, dim=source.dim))
    return store
