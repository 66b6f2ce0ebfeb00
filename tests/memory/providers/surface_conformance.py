"""The conformance suite through the public surfaces (``test_surfaces.py`` runs it for every store).

Where ``tests/memory/backends/conformance.py`` drives a backend object, this suite drives what users
and clients drive: the REST API, the gateway's chat completions (injection and learning), the MCP
tools, ``manage.py summarize_memories`` and the Studio's memory page. A test takes ``target``: three
API keys made through ``POST /api/keys`` — alice and bob on the same store (the provider made through
``POST /api/memory/providers``, or the native store) and carol on the native store — and reads the
store itself (``Target.records``) to check where each write landed. Nothing here names an adapter:
what a store lacks (Pinecone has no keyword search, the HTTP service no vectors) is asserted from its
declared capabilities as the fallback the retrieval documents (``memory/retrieval/backend.py``),
never skipped.
"""

from __future__ import annotations

import io
import re
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from gateway.models import UpstreamProvider
from memory.backends.base import Capabilities, MemoryBackend, MemoryDraft, MemoryRecord
from memory.backends.native import NativeBackend
from memory.backends.selection import provider_backend
from memory.conf import update_memory_settings
from memory.exceptions import DomainError
from memory.mcp.server import principal_for_secret
from memory.mcp.tools import add_memory, clear_memories, search_memories
from memory.models import ApiKey, ManagementToken, Memory, MemoryProvider
from memory.retrieval.budget import estimate_tokens
from memory.services import audit
from memory.services.providers import key_create, provider_save
from tests.conftest import Api
from tests.gateway.conftest import sdk

# What each store declares (memory/backends/*.py); the suite checks the declaration first, so a
# change of capability is a failure here rather than a silently different expectation below.
CAPABILITIES = {
    "native": Capabilities(keyword=True, vector=True, hybrid=True, filters=True),
    "inmemory": Capabilities(keyword=True, vector=True, hybrid=False, filters=True),
    "redis": Capabilities(keyword=True, vector=True, hybrid=False, filters=True),
    "chromadb": Capabilities(keyword=True, vector=True, hybrid=False, filters=True),
    "lancedb": Capabilities(keyword=True, vector=True, hybrid=False, filters=True),
    "pinecone": Capabilities(keyword=False, vector=True, hybrid=False, filters=True),
    "http": Capabilities(keyword=True, vector=False, hybrid=False, filters=True),
}

DARK = "Prefers dark mode in the editor"
LISBON = "Lives in Lisbon near the river"
TEA = "Drinks green tea every morning"


@dataclass
class Key:
    """An API key made for the test, with its gateway secret and a write token bound to it alone."""

    key: ApiKey
    secret: str
    api: Api

    @property
    def id(self) -> str:
        return str(self.key.pk)


@dataclass
class Target:
    """The store under test and the three keys; ``provider`` is None for the native store itself."""

    kind: str
    type: str
    provider: str | None
    admin: Api
    alice: Key
    bob: Key
    carol: Key
    via_rest: bool
    setup_notes: list[str] = field(default_factory=list)

    @property
    def stores_natively(self) -> bool:
        """Whether alice's memories are this database's rows (the native store, named or not)."""
        return self.type == "native"

    def backend(self) -> MemoryBackend:
        """The store alice and bob use, as the service reaches it (the provider's backend, encryption
        decorator included; the native store's adapter for keys without a provider)."""
        if self.provider is None:
            return NativeBackend()
        return provider_backend(MemoryProvider.objects.get(name=self.provider))

    def capabilities(self) -> Capabilities:
        return self.backend().capabilities

    def records(self, key: Key) -> list[MemoryRecord]:
        """Every live record of ``key`` read from the store itself, newest first."""
        backend = NativeBackend() if key is self.carol else self.backend()
        found: list[MemoryRecord] = []
        while True:
            page = backend.list(key.key.pk, limit=100, offset=len(found))
            found.extend(page.records)
            if not page.records or len(found) >= page.total:
                return found

    def seed(self, owner: Key, content: str, **fields: Any) -> MemoryRecord:
        """A record written on ``owner``'s store directly (for what no surface can write: old dates)."""
        backend = NativeBackend() if owner is self.carol else self.backend()
        record, _ = backend.store(MemoryDraft(owner=owner.key.pk, content=content, **fields))
        return record

    def assert_no_native_rows(self, *keys: Key) -> None:
        """A key on a provider other than the native store has no row in this database."""
        if self.stores_natively:
            return
        for key in keys:
            rows = list(Memory.objects.filter(owner_id=key.key.pk).values_list("content", flat=True))
            assert rows == [], f"native rows written for {key.key.name} on {self.kind}: {rows}"


def bound_api(key: ApiKey) -> Api:
    return Api(ManagementToken.issue(name=f"write-{key.name}", scope="write", owners=[key])[1])


def create(owner: Key, content: str, **fields: Any) -> dict:
    """``POST /api/memory`` with ``owner``'s token; the created memory's JSON."""
    r = owner.api.post("/api/memory", {"content": content, **fields})
    assert r.status_code == 201, r.content
    return r.json()["memory"]


def listed(api: Api, **params: Any) -> dict:
    r = api.get("/api/memory", params)
    assert r.status_code == 200, r.content
    return r.json()


def contents(memories: list[dict]) -> list[str]:
    return [m["content"] for m in memories]


def expected_ranking(caps: Capabilities, strategy: str) -> tuple[list[str], str, bool]:
    """What ``memory.retrieval.backend`` ranks a provider's records with for ``strategy``: the rankings,
    the strategy it reports, and whether it says it went without vectors."""
    if strategy == "hybrid" and caps.hybrid:
        return ["hybrid"], "hybrid", False
    if strategy == "keyword" and caps.keyword:
        return ["keyword"], "keyword", False
    if not caps.keyword:  # no full text: the vector ranking answers every strategy
        return ["vector"], "semantic", False
    if not caps.vector:  # no vectors: the keyword ranking answers, and the resolution says why
        return ["keyword"], "keyword", True
    if strategy == "hybrid":
        return ["keyword", "vector"], "hybrid", False
    return ["vector"], "semantic", False


class SurfaceConformance:
    # -- setup through the API

    def test_the_provider_and_keys_are_made_and_shown_through_rest(self, target: Target) -> None:
        assert target.via_rest, "; ".join(target.setup_notes)
        assert target.capabilities() == CAPABILITIES[target.type]
        create(target.alice, TEA, key="pref:tea")
        r = target.admin.get(f"/api/keys/{target.alice.id}")
        assert r.status_code == 200, r.content
        shown = r.json()
        shown = shown.get("key", shown)
        assert (shown["id"], shown["provider"], shown["fallbacks"]) == (
            target.alice.id,
            target.provider,
            [],
        )
        assert shown["memoryCount"] == 1
        if target.provider is None:
            return
        r = target.admin.get(f"/api/memory/providers/{target.provider}")
        assert r.status_code == 200, r.content
        provider = r.json()
        provider = provider.get("provider", provider)
        assert (provider["name"], provider["type"]) == (target.provider, target.type)
        assert provider["capabilities"] == CAPABILITIES[target.type].as_dict()
        users = {(u["id"], u["role"]) for u in provider["usedBy"]}
        assert users == {(target.alice.id, "primary"), (target.bob.id, "primary")}

    # -- REST: writes

    def test_rest_create_then_upsert_on_key(self, target: Target) -> None:
        alice = target.alice
        r = alice.api.post(
            "/api/memory",
            {
                "content": DARK,
                "key": "pref:theme",
                "type": "procedural",
                "sessionId": "s-1",
                "metadata": {"source": "test"},
            },
        )
        assert r.status_code == 201, r.content
        first = r.json()
        assert first["created"] is True
        memory = first["memory"]
        assert (
            memory["apiKeyId"],
            memory["content"],
            memory["key"],
            memory["type"],
            memory["sessionId"],
        ) == (
            alice.id,
            DARK,
            "pref:theme",
            "procedural",
            "s-1",
        )
        assert memory["metadata"] == {"source": "test"}

        r = alice.api.post(
            "/api/memory",
            {
                "content": "Prefers light mode in the editor",
                "key": "pref:theme",
                "metadata": {"tone": "calm"},
            },
        )
        assert r.status_code == 200, r.content
        second = r.json()
        assert second["created"] is False and second["id"] == first["id"]
        assert second["memory"]["content"] == "Prefers light mode in the editor"
        # Merged shallowly; the upsert records the surface that wrote it (README: metadata.source).
        assert second["memory"]["metadata"] == {"source": "api", "tone": "calm"}

        (record,) = target.records(alice)
        assert (str(record.id), record.content, record.key) == (
            first["id"],
            "Prefers light mode in the editor",
            "pref:theme",
        )
        assert record.metadata == {"source": "api", "tone": "calm"}
        assert target.records(target.bob) == [] and target.records(target.carol) == []
        target.assert_no_native_rows(alice, target.bob)

    def test_rest_bulk_creates_and_upserts_in_input_order(self, target: Target) -> None:
        items = [
            {"content": DARK, "key": "pref:theme"},
            {"content": LISBON, "key": "home"},
            {"content": "Prefers light mode in the editor", "key": "pref:theme"},
        ]
        r = target.alice.api.post("/api/memory/bulk", {"memories": items})
        assert r.status_code == 200, r.content
        body = r.json()
        # Items sharing a key are folded into one memory first (memory.services.memories.
        # memory_bulk_create, the reference): two memories made, none that existed before updated.
        assert (body["created"], body["updated"]) == (2, 0), body
        ids = body["ids"]
        assert len(ids) == 3 and ids[0] == ids[2] != ids[1]
        records = {str(r.id): (r.key, r.content) for r in target.records(target.alice)}
        assert records == {
            ids[0]: ("pref:theme", "Prefers light mode in the editor"),
            ids[1]: ("home", LISBON),
        }
        target.assert_no_native_rows(target.alice)

    def test_rest_clear_deletes_the_keys_memories_by_type_and_age(self, target: Target) -> None:
        alice = target.alice
        old = target.seed(alice, "Used Python 2 at school", created_at=timezone.now() - timedelta(days=40))
        facts = [create(alice, text) for text in (LISBON, TEA)]
        episode = create(alice, "Moved house last spring", type="episodic")
        bobs, carols = create(target.bob, "Bob's fact"), create(target.carol, "Carol's fact")

        r = target.bob.api.post("/api/memory/clear", {"apiKeyId": alice.id})
        assert r.status_code == 404, r.content
        dry = alice.api.post("/api/memory/clear", {"apiKeyId": alice.id, "type": "factual", "dryRun": True})
        assert dry.status_code == 200, dry.content
        assert (dry.json()["matched"], dry.json()["deletedCount"], dry.json()["dryRun"]) == (3, 0, True)
        assert len(target.records(alice)) == 4

        cutoff = (timezone.now() - timedelta(days=10)).isoformat()
        aged = alice.api.post("/api/memory/clear", {"apiKeyId": alice.id, "createdBefore": cutoff}).json()
        assert (aged["matched"], aged["deletedCount"], aged["ids"]) == (1, 1, [str(old.id)])
        typed = alice.api.post("/api/memory/clear", {"apiKeyId": alice.id, "type": "factual"}).json()
        assert (typed["matched"], typed["deletedCount"]) == (2, 2)
        assert set(typed["ids"]) == {m["id"] for m in facts}
        assert [str(r.id) for r in target.records(alice)] == [episode["id"]]
        rest = alice.api.post("/api/memory/clear", {"apiKeyId": alice.id}).json()
        assert (rest["deletedCount"], rest["ids"]) == (1, [episode["id"]])
        assert target.records(alice) == []
        assert [str(r.id) for r in target.records(target.bob)] == [bobs["id"]]
        assert [str(r.id) for r in target.records(target.carol)] == [carols["id"]]

    # -- REST: reads

    def test_rest_list_pages_newest_first_and_filters_by_type_and_session(self, target: Target) -> None:
        alice = target.alice
        plan = [
            ("factual", "a", "Uses PostgreSQL at work"),
            ("episodic", "a", "Moved house last spring"),
            ("factual", "b", LISBON),
            ("episodic", "b", "Visited Porto in May"),
            ("factual", "a", TEA),
        ]
        made = [create(alice, text, type=type_, sessionId=session) for type_, session, text in plan]
        newest = [m["id"] for m in reversed(made)]
        create(target.bob, "Bob's own fact")
        create(target.carol, "Carol's own fact")

        pages = [listed(alice.api, limit=2, page=page) for page in (1, 2, 3)]
        assert [[m["id"] for m in p["data"]] for p in pages] == [newest[0:2], newest[2:4], newest[4:5]]
        assert {(p["total"], p["totalPages"]) for p in pages} == {(5, 3)}
        assert pages[0]["stats"]["byType"] == {"episodic": 2, "factual": 3}
        assert [m["id"] for m in listed(alice.api, limit=2, offset=1)["data"]] == newest[1:3]

        episodic = listed(alice.api, type="episodic")
        assert contents(episodic["data"]) == ["Visited Porto in May", "Moved house last spring"]
        assert episodic["total"] == 2
        session_a = listed(alice.api, sessionId="a")
        assert contents(session_a["data"]) == [TEA, "Moved house last spring", "Uses PostgreSQL at work"]
        both = listed(alice.api, type="factual", sessionId="a")
        assert contents(both["data"]) == [TEA, "Uses PostgreSQL at work"] and both["total"] == 2
        assert contents(listed(alice.api, q="Lisbon")["data"]) == [LISBON]

        assert contents(listed(target.bob.api)["data"]) == ["Bob's own fact"]
        assert contents(listed(target.carol.api)["data"]) == ["Carol's own fact"]
        assert listed(target.admin, apiKeyId=alice.id)["total"] == 5

    def test_rest_get_put_delete_one_memory(self, target: Target) -> None:
        alice, bob = target.alice, target.bob
        memory = create(alice, DARK, key="pref:theme")
        path = f"/api/memory/{memory['id']}"

        r = alice.api.get(path)
        assert r.status_code == 200 and r.json()["memory"]["content"] == DARK
        for other in (bob, target.carol):
            assert other.api.get(path).status_code == 404
            assert other.api.put(path, {"content": "hijacked"}).status_code == 404
            assert other.api.delete(path).status_code == 404

        r = alice.api.put(path, {"content": "Prefers dark mode in every editor", "importance": 0.9})
        assert r.status_code == 200, r.content
        updated = r.json()["memory"]
        assert (updated["id"], updated["content"], updated["key"]) == (
            memory["id"],
            "Prefers dark mode in every editor",
            "pref:theme",
        )
        assert alice.api.get(path).json()["memory"]["content"] == "Prefers dark mode in every editor"
        (record,) = target.records(alice)
        assert (record.content, record.importance) == ("Prefers dark mode in every editor", 0.9)

        assert alice.api.delete(path).json() == {"success": True}
        assert alice.api.get(path).status_code == 404
        assert target.records(alice) == []
        target.assert_no_native_rows(alice)

    # -- REST: retrieval

    @pytest.mark.parametrize("strategy", ["hybrid", "keyword", "semantic"])
    def test_retrieve_preview_ranks_with_what_the_store_can_and_says_so(
        self, target: Target, strategy: str
    ) -> None:
        dark = create(target.alice, DARK, key="pref:theme")
        create(target.alice, LISBON)
        create(target.alice, TEA)
        create(target.bob, "Prefers dark mode in the terminal too")
        create(target.carol, "Prefers dark mode in the browser")

        r = target.alice.api.post(
            "/api/memory/retrieve-preview", {"query": "dark mode editor", "strategy": strategy}
        )
        assert r.status_code == 200, r.content
        body = r.json()
        hits, resolution = body["memories"], body["resolution"]
        assert hits and hits[0]["id"] == dark["id"] and hits[0]["content"] == DARK
        assert {h["apiKeyId"] for h in hits} == {target.alice.id}
        assert resolution["strategyRequested"] == strategy
        if target.provider is None:
            assert resolution.get("provider") is None
            assert resolution["strategyUsed"] == strategy, resolution
            return
        rankings, used, no_vectors = expected_ranking(target.capabilities(), strategy)
        assert (resolution["provider"], resolution["providerType"]) == (target.provider, target.type)
        assert (resolution["rankings"], resolution["strategyUsed"]) == (rankings, used), resolution
        assert resolution["backendFallbacks"] == []
        if no_vectors:
            assert f"{target.provider} stores no vectors" in resolution["fallbackReason"]
        if used == "keyword":
            assert contents(hits) == [DARK]  # the other two share no word with the query

    def test_engine_status_shows_the_provider(self, target: Target) -> None:
        r = target.admin.get("/api/memory/engine-status")
        assert r.status_code == 200, r.content
        section = r.json()["providers"]
        providers = section["providers"] if isinstance(section, dict) else section
        names = {p["name"]: p for p in providers}
        if target.provider is None:
            assert names == {}
            return
        assert set(names) == {target.provider}
        assert names[target.provider]["type"] == target.type
        assert names[target.provider]["health"]["ok"] is True, names[target.provider]
        # A token bound to keys sees the providers its keys use, and no other.
        for key, seen in ((target.bob, {target.provider}), (target.carol, set())):
            section = key.api.get("/api/memory/engine-status").json()["providers"]
            providers = section["providers"] if isinstance(section, dict) else section
            assert {p["name"] for p in providers} == seen, key.key.name

    # -- the gateway

    def test_the_gateway_injects_each_keys_own_memory(
        self, target: Target, gateway: str, upstream: Any, upstream_provider: UpstreamProvider
    ) -> None:
        update_memory_settings({"enabled": True, "strategy": "recent"})
        create(target.alice, "Alice drinks green tea")
        create(target.bob, "Bob drinks black coffee")
        create(target.carol, "Carol drinks water")
        hello = [{"role": "user", "content": "Hello"}]
        for key, fact in (
            (target.alice, "Alice drinks green tea"),
            (target.bob, "Bob drinks black coffee"),
            (target.carol, "Carol drinks water"),
        ):
            answer = sdk(gateway, key.secret).chat.completions.create(model="stub-large", messages=hello)
            assert answer.choices[0].message.content == "Hello from upstream."
            assert upstream.last.messages == [
                {"role": "system", "content": f"Memory context: {fact}"},
                *hello,
            ], key.key.name

    def test_the_gateway_learns_into_the_keys_store(
        self,
        target: Target,
        gateway: str,
        upstream: Any,
        upstream_provider: UpstreamProvider,
        extractions: Any,
    ) -> None:
        update_memory_settings({"enabled": True, "strategy": "recent"})
        client = sdk(gateway, target.alice.secret)
        said = [{"role": "user", "content": "I prefer dark mode in my editor."}]
        client.chat.completions.create(model="stub-large", messages=said)
        extractions.wait()

        (record,) = target.records(target.alice)
        assert (record.key, record.content) == (
            "preference:dark_mode_in_my_editor",
            "Prefers dark mode in my editor",
        )
        assert record.metadata["source"] == "user_message"
        target.assert_no_native_rows(target.alice)

        ask = [{"role": "user", "content": "Set up my editor."}]
        client.chat.completions.create(model="stub-large", messages=ask)
        assert upstream.last.messages == [
            {"role": "system", "content": "Memory context: Prefers dark mode in my editor"},
            *ask,
        ]
        for other in (target.bob, target.carol):
            sdk(gateway, other.secret).chat.completions.create(model="stub-large", messages=ask)
            assert upstream.last.messages == ask, other.key.name
            assert target.records(other) == []

    # -- MCP

    def test_the_mcp_tools_add_search_and_clear_in_the_keys_store(self, target: Target) -> None:
        alice = principal_for_secret(
            ManagementToken.issue(name="mcp-alice", scope="write", owners=[target.alice.key])[1]
        )
        bob = principal_for_secret(
            ManagementToken.issue(name="mcp-bob", scope="write", owners=[target.bob.key])[1]
        )

        added = add_memory(alice, type="long_term", key="pref:editor", content="Prefers vim for TypeScript")
        memory = added["data"]["memory"]
        assert added["data"]["created"] is True
        assert (memory["apiKeyId"], memory["type"], memory["key"]) == (
            target.alice.id,
            "long_term",
            "pref:editor",
        )
        again = add_memory(
            alice, type="long_term", key="pref:editor", content="Prefers neovim for TypeScript"
        )
        assert again["data"]["created"] is False and again["data"]["memory"]["id"] == memory["id"]
        add_memory(bob, type="factual", key="pref:editor", content="Prefers emacs for TypeScript")

        found = search_memories(alice, query="typescript editor")["data"]
        assert [(m["id"], m["content"]) for m in found["memories"]] == [
            (memory["id"], "Prefers neovim for TypeScript")
        ]
        if target.provider is not None:
            assert found["resolution"]["provider"] == target.provider
        with pytest.raises(DomainError, match="not found"):
            search_memories(bob, api_key_id=target.alice.id, query="typescript")
        with pytest.raises(DomainError, match="not found"):
            clear_memories(bob, api_key_id=target.alice.id)

        cleared = clear_memories(alice)["data"]
        assert (cleared["deletedCount"], cleared["matched"], cleared["ids"]) == (1, 1, [memory["id"]])
        assert target.records(target.alice) == []
        assert [r.content for r in target.records(target.bob)] == ["Prefers emacs for TypeScript"]
        target.assert_no_native_rows(target.alice, target.bob)

    # -- summarisation

    def test_summarize_memories_replaces_a_keys_old_memories_by_one_summary(self, target: Target) -> None:
        old = timezone.now() - timedelta(days=40)
        first = target.seed(target.alice, "Used Python 2 at school.", key="lang:first", created_at=old)
        second = target.seed(
            target.alice, "Worked in Paris. Then in Rome.", created_at=old + timedelta(hours=1)
        )
        recent = create(target.alice, TEA)
        bobs = target.seed(target.bob, "Bob's old fact.", created_at=old)

        out = io.StringIO()
        call_command("summarize_memories", "--api-key", target.alice.id, stdout=out)

        after = {str(r.id): r for r in target.records(target.alice)}
        summary_id = next(i for i in after if i != recent["id"])
        tokens = estimate_tokens(first.content) + estimate_tokens(second.content)
        assert out.getvalue().splitlines() == [
            f"{target.alice.id} ({target.alice.key.name}): summarised 2 memories older than 30 days "
            f"({tokens} tokens) into {summary_id}; deleted 2"
        ]
        assert set(after) == {recent["id"], summary_id}
        summary = after[summary_id]
        assert summary.type == "semantic"
        assert summary.metadata["summarizedIds"] == [str(first.id), str(second.id)]
        assert summary.content == (
            "Summary of 2 memories older than 30 days:\n"
            "[factual] lang:first: Used Python 2 at school.\n"
            "[factual] Worked in Paris. Then in Rome."
        )
        assert [r.id for r in target.records(target.bob)] == [bobs.id]
        target.assert_no_native_rows(target.alice, target.bob)

    def test_summarize_memories_condenses_to_a_token_budget(self, target: Target) -> None:
        memory = create(target.alice, "First point. Second point. Third point. Fourth point.")
        out = io.StringIO()
        call_command("summarize_memories", "--api-key", target.alice.id, "--budget-tokens", "0", stdout=out)
        saved = estimate_tokens(memory["content"]) - estimate_tokens(
            "First point. Second point. Third point."
        )
        assert out.getvalue().splitlines() == [
            f"{target.alice.id} ({target.alice.key.name}): condensed 1 of 1 memories to fit 0 tokens, "
            f"saving {saved} tokens"
        ]
        (record,) = target.records(target.alice)
        assert (str(record.id), record.content) == (memory["id"], "First point. Second point. Third point.")

    # -- the Studio

    def test_the_studio_memory_page_lists_the_keys_memories(self, target: Target, studio: Any) -> None:
        create(target.alice, DARK, key="pref:theme")
        create(target.alice, TEA, key="pref:tea")
        create(target.bob, "Bob keeps a secret", key="bob:secret")
        create(target.carol, "Carol keeps a secret", key="carol:secret")

        r = studio.get("/dashboard/memory", {"owner": target.alice.id})
        assert r.status_code == 200
        html = r.content.decode()
        assert DARK in html and TEA in html and "pref:theme" in html and "pref:tea" in html
        assert html.index(TEA) < html.index(DARK)  # newest first
        assert "bob:secret" not in html and "carol:secret" not in html
        assert 'data-stat="total">2<' in html
        assert "Page 1 of 1 (2 total)" in html

        html = studio.get("/dashboard/memory", {"owner": target.bob.id}).content.decode()
        assert "bob:secret" in html and "pref:theme" not in html and "carol:secret" not in html

    # -- isolation, route by route

    def test_no_route_shows_one_keys_memories_to_another(self, target: Target, studio: Any) -> None:
        keys = {"alice": target.alice, "bob": target.bob, "carol": target.carol}
        own = {
            name: create(key, f"{name} marker zebra fact", key=f"{name}:marker") for name, key in keys.items()
        }
        for name, key in keys.items():
            others = [own[n]["id"] for n in keys if n != name]
            assert [m["id"] for m in listed(key.api)["data"]] == [own[name]["id"]]
            assert [m["id"] for m in listed(key.api, q="zebra")["data"]] == [own[name]["id"]]
            for memory_id in others:
                assert key.api.get(f"/api/memory/{memory_id}").status_code == 404
            preview = key.api.post("/api/memory/retrieve-preview", {"query": "zebra marker"}).json()
            assert [m["id"] for m in preview["memories"]] == [own[name]["id"]], (name, preview["resolution"])
            principal = principal_for_secret(
                ManagementToken.issue(name=f"mcp-{name}", scope="read", owners=[key.key])[1]
            )
            found = search_memories(principal, query="zebra marker")["data"]["memories"]
            assert [m["id"] for m in found] == [own[name]["id"]]
            html = studio.get("/dashboard/memory", {"owner": key.id}).content.decode()
            assert f"{name}:marker" in html
            assert not any(f"{n}:marker" in html for n in keys if n != name)
        for name, key in keys.items():
            assert [str(r.id) for r in target.records(key)] == [own[name]["id"]]


# -- setup helpers for the fixture (test_surfaces.py)


def _no_route(response: Any) -> bool:
    """The API does not have the route yet: a 404 for the route itself (not for a resource), or a
    405 from the route it falls into (``/api/memory/providers`` is ``/api/memory/<id>`` without it)."""
    if response.status_code == 405:
        return True
    if response.status_code != 404:
        return False
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return False
    return bool(re.match(r"No route for ", message))


def make_target(kind: str, type_: str, config: dict[str, Any] | None) -> Target:
    """Create the provider (``config`` None: none, the native store) and the three keys through the
    REST API; while helper routes are missing, through the services they call, noted in
    ``setup_notes`` (``test_the_provider_and_keys_are_made_and_shown_through_rest`` then fails)."""
    admin = Api(ManagementToken.issue(name="surface-admin", scope="admin")[1])
    notes: list[str] = []
    name = None
    if config is not None:
        name = f"{kind}-{uuid.uuid4().hex[:8]}"
        r = admin.post("/api/memory/providers", {"name": name, "type": type_, "config": config})
        if _no_route(r):
            notes.append("POST /api/memory/providers is missing: provider made by provider_save")
            provider_save(name=name, type=type_, config=config, actor=audit.SYSTEM)
        else:
            assert r.status_code == 201, r.content
    keys = []
    for persona, provider in (("alice", name), ("bob", name), ("carol", None)):
        r = admin.post("/api/keys", {"name": persona, "provider": provider})
        if _no_route(r):
            notes.append(f"POST /api/keys is missing: {persona} made by key_create")
            key, secret = key_create(name=persona, provider=provider, actor=audit.SYSTEM)
        else:
            assert r.status_code == 201, r.content
            body = r.json()
            shown = body.get("key", body)
            assert shown["provider"] == provider
            key, secret = ApiKey.objects.get(pk=shown["id"]), body["secret"]
        keys.append(Key(key=key, secret=secret, api=bound_api(key)))
    alice, bob, carol = keys
    return Target(
        kind=kind,
        type=type_,
        provider=name,
        admin=admin,
        alice=alice,
        bob=bob,
        carol=carol,
        via_rest=not notes,
        setup_notes=notes,
    )
