"""The MCP tools on a key whose memories live with a provider: add, search and clear work in the
provider (never in this database's rows), through the tool handlers and over the real /mcp transport."""

from __future__ import annotations

import asyncio

import pytest
from django.utils import timezone

from memory import store
from memory.conf import update_memory_settings
from memory.exceptions import DomainError
from memory.mcp.tools import ADD_TOOL, CLEAR_TOOL, SEARCH_TOOL, add_memory, clear_memories, search_memories
from memory.models import AuditAction, AuditEvent, Memory, TokenScope
from memory.principals import Principal
from tests.lifecycle import test_mcp as mcp_fixtures
from tests.lifecycle.test_mcp import error_text, http_client, payload, token
from tests.memory.providers import provider_keys
from tests.memory.providers.provider_keys import manager

providers = provider_keys.providers  # the fixture
mcp_url = mcp_fixtures.mcp_url  # omniroute.asgi served by uvicorn on a free port

TYPES = ["inmemory", "redis", "lancedb"]


def writer(*keys) -> Principal:
    return Principal(scope=TokenScope.WRITE, owner_ids=frozenset(k.pk for k in keys), label="mcp-test")


@pytest.mark.django_db
@pytest.mark.parametrize("provider_type", TYPES)
def test_add_search_and_clear_work_in_the_keys_provider(providers, provider_type):
    update_memory_settings({"enabled": True, "strategy": "hybrid"})
    alice, _ = providers.key(providers.provider(provider_type))
    principal = writer(alice)

    added = add_memory(principal, type="long_term", key=" pref:editor ", content="Prefers vim for TypeScript")
    again = add_memory(principal, type="long_term", key="pref:editor", content="Prefers helix for TypeScript")
    add_memory(principal, type="episodic", key="trip", content="Went hiking in the Alps last summer")

    assert added["data"]["created"] is True and again["data"]["created"] is False
    assert again["data"]["memory"]["id"] == added["data"]["memory"]["id"]
    assert again["data"]["memory"]["key"] == "pref:editor"
    assert not Memory.objects.exists()
    assert manager(alice).count(alice.pk) == 2

    found = search_memories(principal, query="which editor for typescript?", type="long_term")["data"]
    assert [m["content"] for m in found["memories"]] == ["Prefers helix for TypeScript"]
    assert found["resolution"]["provider"] == alice.provider.name
    assert found["count"] == 1 and found["totalTokens"] == found["memories"][0]["tokens"]

    dry = clear_memories(principal, type="episodic", dry_run=True)["data"]
    assert (dry["matched"], dry["deletedCount"]) == (1, 0)
    cleared = clear_memories(principal, type="episodic")["data"]
    assert (cleared["matched"], cleared["deletedCount"]) == (1, 1)
    assert [r.type for r in store.all_records(manager(alice), alice.pk)] == ["long_term"]
    event = AuditEvent.objects.get(action=AuditAction.MEMORY_CLEAR)
    assert (event.owner_id, event.count, event.via) == (alice.pk, 1, "mcp")


@pytest.mark.django_db
def test_a_token_never_reaches_another_keys_provider_memories(providers):
    shared = providers.provider("inmemory")
    alice, _ = providers.key(shared, name="alice")
    bob, _ = providers.key(shared, name="bob")
    add_memory(writer(bob), type="factual", key="secret", content="Bob's locker code is 1234")

    found = search_memories(writer(alice), query="locker code")["data"]
    assert found["memories"] == []
    with pytest.raises(DomainError):
        search_memories(writer(alice), api_key_id=str(bob.pk), query="locker code")
    assert clear_memories(writer(alice))["data"]["deletedCount"] == 0
    assert manager(bob).count(bob.pk) == 1


@pytest.mark.django_db
def test_a_provider_down_is_a_clear_tool_error(providers):
    alice, _ = providers.key(providers.down_redis())
    with pytest.raises(DomainError) as failure:
        add_memory(writer(alice), type="factual", key="k", content="Alice likes tea")
    assert failure.value.status == 503
    assert not Memory.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_tools_over_http_use_the_keys_provider(mcp_url, providers):
    update_memory_settings({"enabled": True, "strategy": "recent"})
    alice, _ = providers.key(providers.provider("redis"))
    secret = token("write", alice)

    async def scenario():
        async with http_client(mcp_url, secret) as client:
            added = payload(
                await client.call_tool(
                    ADD_TOOL, {"type": "factual", "key": "pet", "content": "Alice has a cat"}
                )
            )
            found = payload(await client.call_tool(SEARCH_TOOL, {"query": "pet"}))
            cleared = payload(
                await client.call_tool(
                    CLEAR_TOOL, {"olderThan": (timezone.now().date().isoformat() + "T23:59:59Z")}
                )
            )
            bad = error_text(await client.call_tool(CLEAR_TOOL, {"olderThan": "soon"}))
            return added, found, cleared, bad

    added, found, cleared, bad = asyncio.run(scenario())
    assert added["data"]["memory"]["apiKeyId"] == str(alice.pk)
    assert [m["content"] for m in found["data"]["memories"]] == ["Alice has a cat"]
    assert found["data"]["resolution"]["providerType"] == "redis"
    assert cleared["data"]["deletedCount"] == 1
    assert "olderThan must be an ISO 8601 date" in bad
    assert manager(alice).count(alice.pk) == 0
    assert not Memory.objects.exists()
