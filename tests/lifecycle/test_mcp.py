"""The MCP server, through the SDK's own client, over Streamable HTTP (/mcp) and stdio (mcp_server)."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from contextlib import asynccontextmanager
from datetime import timedelta

import httpx2
import pytest
import uvicorn
from django.core.management import CommandError, call_command
from django.utils import timezone
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from memory.conf import update_memory_settings
from memory.mcp.tools import ADD_TOOL, CLEAR_TOOL, SEARCH_TOOL, TOOL_NAMES
from memory.models import ApiKey, ManagementToken, Memory, MemoryType
from tests.factories import make_memory, unbound_token
from tests.lifecycle.conftest import BASE_DIR
from tests.servers import free_port

ALL_TYPES = ["factual", "episodic", "procedural", "semantic", "short_term", "long_term", "entity"]


def payload(result) -> dict:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def error_text(result) -> str:
    assert result.is_error
    return result.content[0].text


# -- Streamable HTTP --------------------------------------------------------------------------------------


@pytest.fixture
def mcp_url(transactional_db):
    """omniroute.asgi in uvicorn, in a thread, on a free port (with the ASGI lifespan)."""
    from omniroute.asgi import application

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(application, host="127.0.0.1", port=port, lifespan="on", log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(timeout=20)


@asynccontextmanager
async def http_client(url: str, token: str | None, mode: str = "auto"):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


def token(scope: str, *owners: ApiKey) -> str:
    return ManagementToken.issue(name=f"{scope}-mcp", scope=scope, owners=owners)[1]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_http_lists_the_tools_with_the_reference_schemas(mcp_url, mode):
    secret = token("read", ApiKey.issue(name="alice")[0])

    async def scenario():
        async with http_client(mcp_url, secret, mode) as client:
            return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}

    schemas = asyncio.run(scenario())
    assert tuple(schemas) == TOOL_NAMES
    add = schemas[ADD_TOOL]
    assert sorted(add["required"]) == ["content", "key", "type"]
    assert add["properties"]["type"]["enum"] == ALL_TYPES == list(MemoryType.values)
    assert set(add["properties"]) == {"apiKeyId", "sessionId", "type", "key", "content", "metadata"}
    assert set(schemas[SEARCH_TOOL]["properties"]) == {"apiKeyId", "query", "type", "maxTokens", "limit"}
    assert set(schemas[CLEAR_TOOL]["properties"]) == {"apiKeyId", "type", "olderThan", "dryRun"}
    assert schemas[SEARCH_TOOL]["properties"]["maxTokens"]["anyOf"][0]["maximum"] == 8000


def test_http_add_search_clear_with_a_bound_token(mcp_url):
    alice = ApiKey.issue(name="alice")[0]
    secret = token("write", alice)
    update_memory_settings({"strategy": "recent"})
    for i in range(60):  # more than the reference's 50 (B12)
        make_memory(alice, f"old note {i}", created_at=timezone.now() - timedelta(days=400 + i))

    async def scenario():
        async with http_client(mcp_url, secret) as client:
            added = payload(
                await client.call_tool(
                    ADD_TOOL,
                    {"type": "long_term", "key": "pref:editor", "content": "Prefers vim for TypeScript"},
                )
            )
            found = payload(
                await client.call_tool(SEARCH_TOOL, {"query": "typescript editor", "type": "long_term"})
            )
            dry = payload(await client.call_tool(CLEAR_TOOL, {"olderThan": "2025-06-01", "dryRun": True}))
            cleared = payload(
                await client.call_tool(CLEAR_TOOL, {"olderThan": timezone.now().date().isoformat()})
            )
            bad_date = error_text(await client.call_tool(CLEAR_TOOL, {"olderThan": "last tuesday"}))
            return added, found, dry, cleared, bad_date

    added, found, dry, cleared, bad_date = asyncio.run(scenario())
    memory = added["data"]["memory"]
    assert added["success"] is True and added["data"]["message"] == "Memory created successfully"
    assert memory["apiKeyId"] == str(alice.pk) and memory["type"] == "long_term" and memory["sessionId"] == ""
    assert memory["metadata"] == {"source": "mcp"}  # where it was written from
    assert found["data"]["strategy"] == "exact" and found["data"]["count"] == 1
    assert found["data"]["memories"][0]["key"] == "pref:editor" and found["data"]["totalTokens"] == 7
    assert dry["data"]["dryRun"] is True and dry["data"]["deletedCount"] == 0
    assert cleared["data"] == {
        **cleared["data"],
        "deletedCount": 60,
        "matched": 60,
        "message": "Cleared 60 memories",
    }
    assert "olderThan must be an ISO 8601 date" in bad_date
    assert list(Memory.objects.filter(owner=alice).values_list("key", flat=True)) == ["pref:editor"]


def test_http_a_bound_token_never_reaches_another_owner(mcp_url):
    alice, bob = ApiKey.issue(name="alice")[0], ApiKey.issue(name="bob")[0]
    bobs = make_memory(bob, "bob's secret")
    secret = token("write", alice)

    async def scenario():
        async with http_client(mcp_url, secret) as client:
            return [
                error_text(await client.call_tool(SEARCH_TOOL, {"apiKeyId": str(bob.pk), "query": "secret"})),
                error_text(await client.call_tool(CLEAR_TOOL, {"apiKeyId": str(bob.pk)})),
                error_text(
                    await client.call_tool(
                        ADD_TOOL, {"apiKeyId": str(bob.pk), "type": "factual", "key": "k", "content": "x"}
                    )
                ),
                payload(await client.call_tool(SEARCH_TOOL, {"query": "secret"})),
            ]

    *errors, own = asyncio.run(scenario())
    assert all(f"API key {bob.pk} not found" in text for text in errors)
    assert own["data"]["count"] == 0
    assert Memory.objects.filter(owner=bob).get() == bobs


def test_http_an_ambiguous_owner_is_refused_and_scopes_are_enforced(mcp_url):
    alice, bob = ApiKey.issue(name="alice")[0], ApiKey.issue(name="bob")[0]
    make_memory(alice, "alice likes tea")
    two = token("write", alice, bob)
    everyone = token("admin")
    reader = token("read", alice)

    async def scenario():
        async with http_client(mcp_url, two) as client:
            ambiguous = error_text(await client.call_tool(SEARCH_TOOL, {"query": "tea"}))
            named = payload(await client.call_tool(SEARCH_TOOL, {"query": "tea", "apiKeyId": str(alice.pk)}))
        async with http_client(mcp_url, everyone) as client:
            global_ = error_text(await client.call_tool(CLEAR_TOOL, {}))
        async with http_client(mcp_url, reader) as client:
            readable = payload(await client.call_tool(SEARCH_TOOL, {"query": "tea"}))
            refused = error_text(
                await client.call_tool(ADD_TOOL, {"type": "factual", "key": "k", "content": "x"})
            )
        return ambiguous, named, global_, readable, refused

    ambiguous, named, global_, readable, refused = asyncio.run(scenario())
    assert "apiKeyId is required: this token reaches 2 API keys" in ambiguous
    assert named["data"]["count"] == 1
    assert "apiKeyId is required: this token is global" in global_
    assert readable["data"]["count"] == 1
    assert "This token lacks the 'write' scope" in refused
    assert Memory.objects.count() == 1


def test_http_rejects_requests_without_a_valid_token(mcp_url):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert httpx2.post(mcp_url, json=body).status_code == 401
    response = httpx2.post(mcp_url, json=body, headers={"Authorization": "Bearer omt_nope"})
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "Invalid management token"
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_http_refuses_a_read_token_bound_to_no_api_key(mcp_url):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    response = httpx2.post(mcp_url, json=body, headers={"Authorization": f"Bearer {unbound_token('read')}"})
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["type"] == "permission_error"
    assert error["message"].startswith("This read token is bound to no API key")


def test_http_checks_the_host_header(mcp_url, transactional_db):
    secret = token("read", ApiKey.issue(name="alice")[0])
    response = httpx2.post(
        mcp_url, json={}, headers={"Authorization": f"Bearer {secret}", "Host": "evil.example"}
    )
    assert response.status_code == 400


def test_mcp_through_django_itself_points_to_the_asgi_app(client):
    response = client.post("/mcp", data="{}", content_type="application/json")
    assert response.status_code == 501 and "ASGI" in response.json()["error"]["message"]


# -- stdio -----------------------------------------------------------------------------------------------


def stdio(instance, secret: str) -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp_server"],
        env={**instance.env, "OMNIROUTE_TOKEN": secret},
        cwd=str(BASE_DIR),
    )
    return Client(params)


SETUP = """
import json
from memory.models import ApiKey, ManagementToken
alice, bob = ApiKey.issue(name="stdio-alice")[0], ApiKey.issue(name="stdio-bob")[0]
print(json.dumps([
    str(alice.pk), str(bob.pk),
    ManagementToken.issue(name="bound", scope="write", owners=[alice])[1],
    ManagementToken.issue(name="two", scope="write", owners=[alice, bob])[1],
]))
"""


def test_stdio_serves_the_tools_to_a_bound_token(instance):
    alice, bob, bound, two = instance.python(SETUP)

    async def scenario():
        async with stdio(instance, bound) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            added = payload(
                await client.call_tool(
                    ADD_TOOL,
                    {
                        "type": "procedural",
                        "key": "deploy",
                        "content": "Deploy with make release",
                        "sessionId": "s1",
                    },
                )
            )
            updated = payload(
                await client.call_tool(
                    ADD_TOOL,
                    {
                        "type": "procedural",
                        "key": "deploy",
                        "content": "Deploy with make ship",
                        "metadata": {"v": 2},
                    },
                )
            )
            found = payload(await client.call_tool(SEARCH_TOOL, {"query": "deploy", "limit": 1}))
            other = error_text(await client.call_tool(SEARCH_TOOL, {"apiKeyId": bob, "query": "deploy"}))
            dry = payload(await client.call_tool(CLEAR_TOOL, {"dryRun": True}))
            cleared = payload(await client.call_tool(CLEAR_TOOL, {"type": "procedural"}))
        async with stdio(instance, two) as client:
            ambiguous = error_text(await client.call_tool(CLEAR_TOOL, {}))
        return names, added, updated, found, other, dry, cleared, ambiguous

    names, added, updated, found, other, dry, cleared, ambiguous = asyncio.run(scenario())
    assert tuple(names) == TOOL_NAMES
    assert added["data"]["memory"]["apiKeyId"] == alice and added["data"]["created"] is True
    assert updated["data"]["created"] is False and updated["data"]["memory"]["metadata"] == {
        "v": 2,
        "source": "mcp",
    }
    assert found["data"]["count"] == 1 and found["data"]["memories"][0]["content"] == "Deploy with make ship"
    assert f"API key {bob} not found" in other
    assert dry["data"]["matched"] == 1 and dry["data"]["deletedCount"] == 0
    assert cleared["data"]["deletedCount"] == 1 and cleared["data"]["message"] == "Cleared 1 memories"
    assert "this token reaches 2 API keys" in ambiguous


@pytest.mark.django_db
def test_stdio_refuses_to_start_without_a_valid_token(monkeypatch):
    monkeypatch.delenv("OMNIROUTE_TOKEN", raising=False)
    with pytest.raises(CommandError, match="no management token: pass --token or set OMNIROUTE_TOKEN"):
        call_command("mcp_server")
    with pytest.raises(CommandError, match="Invalid management token"):
        call_command("mcp_server", "--token", "omt_wrong")
    token_model = ManagementToken.issue(name="old", scope="read", owners=[ApiKey.issue(name="alice")[0]])
    ManagementToken.objects.filter(pk=token_model[0].pk).update(revoked_at=timezone.now())
    monkeypatch.setenv("OMNIROUTE_TOKEN", token_model[1])
    with pytest.raises(CommandError, match="revoked"):
        call_command("mcp_server")
    with pytest.raises(CommandError, match="This read token is bound to no API key"):
        call_command("mcp_server", "--token", unbound_token("read"))


def test_search_reports_the_strategy_that_ran_not_the_one_configured(db, settings):
    """Hybrid configured, no vector tier: the tool says keyword ran (and why), as retrieve-preview does."""
    from memory.mcp.tools import search_memories
    from memory.principals import Principal
    from tests.factories import make_memory

    settings.VECTOR_STORE_DISABLE_VEC = True
    alice = ApiKey.issue(name="alice")[0]
    make_memory(alice, "We run PostgreSQL 16 in production")
    update_memory_settings({"strategy": "hybrid"})
    principal = Principal(scope="read", owner_ids=frozenset({alice.pk}), label="test")
    data = search_memories(principal, query="postgresql")["data"]
    assert data["count"] == 1 and data["strategy"] == "keyword"
    assert data["resolution"]["strategyRequested"] == "hybrid" and data["resolution"]["fallbackReason"]


def test_add_checks_the_content_rule_and_trims_like_the_api(db, settings):
    """The tool schema cannot say "not blank" nor count UTF-8 bytes: the handler applies the API's rule."""
    from memory.exceptions import ValidationFailed
    from memory.mcp.tools import add_memory
    from memory.principals import Principal

    settings.MEMORY_MAX_CONTENT_BYTES = 8
    alice = ApiKey.issue(name="alice")[0]
    principal = Principal(scope="write", owner_ids=frozenset({alice.pk}), label="test")
    for content, problem in [("   ", "Must not be blank."), ("ééééé", "Must be at most 8 bytes (UTF-8).")]:
        with pytest.raises(ValidationFailed) as refused:
            add_memory(principal, type="factual", key="k", content=content)
        assert refused.value.message == f"Invalid arguments: content: {problem}"
    added = add_memory(principal, type="factual", key=" pref:tea ", content="tea", session_id=" s1 ")
    assert added["data"]["memory"]["key"] == "pref:tea" and added["data"]["memory"]["sessionId"] == "s1"
    assert Memory.objects.count() == 1
