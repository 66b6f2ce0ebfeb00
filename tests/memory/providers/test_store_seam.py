"""The seam (memory/store.py) sends a provider-backed key's operations to its provider."""

from __future__ import annotations

import uuid

import pytest

from memory import store
from memory.backends.selection import forget, manager_for, manager_for_owner
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


def test_a_keys_provider_is_read_by_id_for_the_one_owner_seam(keys):
    on_provider, native_key = keys
    found = ApiKey.provider_of(on_provider.pk)
    assert found is not None and found.pk == on_provider.pk and found.provider_id == on_provider.provider_id
    native = ApiKey.provider_of(native_key.pk)
    assert native is not None and native.provider_id is None
    assert ApiKey.provider_of(uuid.uuid4()) is None
    assert manager_for_owner(str(on_provider.pk)) is manager_for(on_provider)  # one manager per key
    assert manager_for_owner(native_key.pk) is None  # served natively
