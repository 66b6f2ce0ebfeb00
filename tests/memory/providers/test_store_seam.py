"""The seam (memory/store.py) sends a provider-backed key's operations to its provider."""

from __future__ import annotations

import pytest

from memory import store
from memory.backends.selection import forget, manager_for
from memory.exceptions import NotFound
from memory.models import ApiKey, MemoryProvider
from memory.principals import Principal
from memory.services.memories import MemoryInput

pytestmark = pytest.mark.django_db


@pytest.fixture
def keys():
    forget()
    provider = MemoryProvider(name="ram", type="inmemory")
    provider.config = {}
    provider.save()
    on_provider, _ = ApiKey.issue(name="ram key", provider=provider)
    native_key, _ = ApiKey.issue(name="native key")
    yield on_provider, native_key
    forget()


def test_writes_and_reads_follow_the_keys_provider(keys):
    on_provider, native_key = keys
    memory, created = store.memory_create(
        MemoryInput(owner=on_provider, content="I live in Lisbon", key="city")
    )
    assert created and memory.seq is None
    native_memory, _ = store.memory_create(MemoryInput(owner=native_key, content="I live in Porto"))
    assert native_memory.seq is not None
    manager = manager_for(on_provider)
    assert manager is not None and manager.count(on_provider.pk) == 1
    assert on_provider.memories.count() == 0  # nothing in the native rows

    again, created = store.memory_create(MemoryInput(owner=on_provider, content="I live in Faro", key="city"))
    assert not created and again.uuid == memory.uuid

    everyone = Principal(scope="admin", owner_ids=None, label="test")
    listed = store.memory_list(principal=everyone)
    assert {m.content for m in listed["data"]} == {"I live in Faro", "I live in Porto"}
    assert listed["total"] == 2
    got = store.memory_get(principal=everyone, memory_id=memory.uuid)
    assert got.content == "I live in Faro"

    result = store.retrieve(
        owner_ids=frozenset({on_provider.pk}), query="where do I live, Faro?", strategy="hybrid"
    )
    assert [h.memory.content for h in result.hits] == ["I live in Faro"]
    assert result.resolution["provider"] == "ram"

    only_native = Principal(scope="admin", owner_ids=frozenset({native_key.pk}), label="bound")
    with pytest.raises(NotFound):
        store.memory_get(principal=only_native, memory_id=memory.uuid)

    updated = store.memory_update(got, content="I live in Braga")
    assert updated.content == "I live in Braga"
    store.memory_delete(updated)
    assert manager.count(on_provider.pk) == 0
