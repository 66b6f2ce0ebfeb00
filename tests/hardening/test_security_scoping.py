"""A token bound to some API keys reaches those keys only, on every route.

The routes are read from the URL conf (the REST API under /api/, the top-level routes, the Studio),
and the MCP tools from ``memory.mcp.tools.TOOL_NAMES``: a route or tool added without a case here fails
``test_every_route_has_a_case``. Each case drives its route with an admin token bound to alice (the
strongest bound credential) while bob owns most of the data, and checks the answer: no bob id, none of
bob's content, none of his or the global counts, and his rows left as they were. Operations that span
every owner (settings writes, a reindex, Qdrant cleanup, the audit log) answer 403 naming why.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from rest_framework.test import APIClient

from memory.exceptions import NotFound
from memory.mcp import tools
from memory.models import ApiKey, Contradiction, ManagementToken, Memory, MemoryProvider
from memory.retrieval.engine import Hit
from memory.services.audit import SYSTEM as SYSTEM_ACTOR
from memory.services.auth import authenticate_token
from memory.services.consolidation import consolidate
from memory.services.ledger import ledger_draft, write_entries
from memory.services.memories import MemoryInput, memory_bulk_create
from memory.services.providers import provider_save
from tests.factories import make_memory

ALICE_MEMORIES = 3
# Counts no answer carries by chance: bob's and the total appear only where a count leaks.
BOB_MEMORIES = 43
TOTAL = ALICE_MEMORIES + BOB_MEMORIES
BOB_MARK = "zebracorn"


@dataclass
class World:
    alice: ApiKey
    bob: ApiKey
    bob_memory: Memory
    api: APIClient
    secret: str

    def bob_rows(self) -> list[tuple[str, str, bool]]:
        return list(
            Memory.objects.filter(owner=self.bob)
            .order_by("seq")
            .values_list("key", "content", "needs_reindex")
        )


@pytest.fixture
def world(db, django_capture_on_commit_callbacks) -> World:
    alice = ApiKey.issue(name="alice")[0]
    bob = ApiKey.issue(name="bob")[0]
    # The indexing that follows a write's commit runs too: every memory has its vector.
    with django_capture_on_commit_callbacks(execute=True):
        for n in range(ALICE_MEMORIES):
            make_memory(alice, f"Alice likes tea number {n}", key=f"pref:tea-{n}")
        memory_bulk_create(
            [
                MemoryInput(owner=bob, content=f"Bob {BOB_MARK} secret {n}", key=f"fact:secret-{n}")
                for n in range(BOB_MEMORIES)
            ]
        )
    assert not Memory.objects.filter(needs_reindex=True).exists()
    # Some of bob's memories are old enough for a summary: a summarise that reached him would replace them.
    old = list(Memory.objects.filter(owner=bob).order_by("seq").values_list("seq", flat=True)[:10])
    Memory.objects.filter(seq__in=old).update(created_at=timezone.now() - timedelta(days=90))
    secret = ManagementToken.issue(name="alice-admin", scope="admin", owners=[alice])[1]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return World(
        alice=alice,
        bob=bob,
        bob_memory=Memory.objects.filter(owner=bob).order_by("seq").first(),
        api=api,
        secret=secret,
    )


# -- what a leak looks like --------------------------------------------------------------------------------


def _integers(value: Any) -> Iterator[int]:
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _integers(item)
    elif isinstance(value, list):
        for item in value:
            yield from _integers(item)


def assert_no_leak(world: World, body: bytes, *, sent: tuple[str, ...] = ()) -> None:
    """No id, content or count of bob's in ``body``; ``sent``: what the request itself named (an
    unknown and an unreachable id get the same answer, which may quote it)."""
    text = body.decode("utf-8", "replace")
    markers = (str(world.bob.pk), world.bob.pk.hex, BOB_MARK, str(world.bob_memory.uuid), world.bob.prefix)
    for marker in set(markers) - set(sent):
        assert marker not in text, f"{marker!r} (bob's) is in the answer: {text[:500]}"
    try:
        payload = json.loads(text)
    except ValueError:
        return
    leaked = {n for n in _integers(payload) if n in (BOB_MEMORIES, TOTAL)}
    assert not leaked, f"a count of bob's or of every owner ({leaked}) is in the answer: {text[:500]}"


# -- one case per route and method -------------------------------------------------------------------------

Case = Callable[[World], Any]


def _send(world: World, method: str, path: str, body: Any = None) -> Any:
    if body is None:
        return getattr(world.api, method.lower())(path)
    return getattr(world.api, method.lower())(path, data=json.dumps(body), content_type="application/json")


def _refused(status: int, reason: str) -> Callable[[World, str, str], None]:
    """A case whose route must refuse a bound token with ``status`` and a message containing ``reason``."""

    def case(world: World, method: str, path: str, body: Any = None) -> None:
        before = world.bob_rows()
        response = _send(world, method, path, body)
        assert response.status_code == status, response.content
        if reason:
            assert reason in response.json()["error"]["message"]
        assert world.bob_rows() == before
        assert_no_leak(world, response.content)

    return case


def _memory_list_get(world: World) -> None:
    response = world.api.get("/api/memory", {"limit": 100})
    assert response.status_code == 200
    body = response.json()
    assert {m["apiKeyId"] for m in body["data"]} == {str(world.alice.pk)}
    assert body["stats"]["total"] == ALICE_MEMORIES
    assert_no_leak(world, response.content)
    refused = world.api.get("/api/memory", {"apiKeyId": str(world.bob.pk)})
    assert refused.status_code == 403
    assert_no_leak(world, refused.content, sent=(str(world.bob.pk),))


def _memory_create(world: World) -> None:
    before = world.bob_rows()
    mine = _send(
        world, "POST", "/api/memory", {"type": "factual", "key": "pref:milk", "content": "Alice takes milk"}
    )
    assert mine.status_code == 201 and mine.json()["memory"]["apiKeyId"] == str(world.alice.pk)
    theirs = _send(
        world,
        "POST",
        "/api/memory",
        {"type": "factual", "key": "fact:secret-0", "content": "overwritten", "apiKeyId": str(world.bob.pk)},
    )
    assert theirs.status_code == 404
    assert world.bob_rows() == before
    assert_no_leak(world, mine.content)
    assert_no_leak(world, theirs.content, sent=(str(world.bob.pk),))


def _memory_bulk(world: World) -> None:
    before = world.bob_rows()
    items = [
        {"type": "factual", "key": "fact:secret-1", "content": "overwritten", "apiKeyId": str(world.bob.pk)}
    ]
    response = _send(world, "POST", "/api/memory/bulk", {"memories": items})
    assert response.status_code == 404
    assert world.bob_rows() == before
    assert_no_leak(world, response.content, sent=(str(world.bob.pk),))


def _memory_detail(method: str) -> Case:
    def case(world: World) -> None:
        before = world.bob_rows()
        body = {"content": "overwritten"} if method in ("PUT", "PATCH") else None
        response = _send(world, method, f"/api/memory/{world.bob_memory.uuid}", body)
        assert response.status_code == 404
        assert world.bob_rows() == before
        assert_no_leak(world, response.content, sent=(str(world.bob_memory.uuid),))

    return case


def _ok(
    path: str, method: str = "GET", body: Any = None, check: Callable[[World, Any], None] | None = None
) -> Case:
    def case(world: World) -> None:
        before = world.bob_rows()
        response = _send(world, method, path, body)
        assert response.status_code == 200, response.content
        if check is not None:
            check(world, response.json())
        assert world.bob_rows() == before
        assert_no_leak(world, response.content)

    return case


def _engine_counts(world: World, body: dict) -> None:
    assert body["memories"] == ALICE_MEMORIES
    assert body["indexes"]["memories"] == ALICE_MEMORIES
    assert body["indexes"]["fts"] == ALICE_MEMORIES
    assert body["indexes"]["pending"] == 0
    assert body["vectorStore"]["rowCount"] == ALICE_MEMORIES
    assert body["vectorStore"]["needsReindex"] == 0


def _summarize(world: World, body: dict) -> None:
    assert {o["apiKeyId"] for o in body["owners"]} <= {str(world.alice.pk)}


def _preview(world: World) -> None:
    response = _send(world, "POST", "/api/memory/retrieve-preview", {"query": f"{BOB_MARK} secret"})
    assert response.status_code == 200
    assert {m["apiKeyId"] for m in response.json()["memories"]} <= {str(world.alice.pk)}
    assert_no_leak(world, response.content)
    theirs = _send(
        world, "POST", "/api/memory/retrieve-preview", {"query": "secret", "apiKeyId": str(world.bob.pk)}
    )
    assert theirs.status_code == 403
    assert_no_leak(world, theirs.content, sent=(str(world.bob.pk),))


def _qdrant_search(world: World) -> None:
    mine = _send(world, "POST", "/api/settings/qdrant/search", {"query": BOB_MARK})
    assert mine.status_code == 200
    assert mine.json()["results"] == []
    theirs = _send(
        world, "POST", "/api/settings/qdrant/search", {"query": BOB_MARK, "apiKeyId": str(world.bob.pk)}
    )
    assert theirs.status_code == 403
    assert_no_leak(world, mine.content)
    assert_no_leak(world, theirs.content, sent=(str(world.bob.pk),))


def _healthz(world: World) -> None:
    response = world.api.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def _readyz(world: World) -> None:
    response = world.api.get("/readyz")
    assert response.status_code == 200 and response.json()["status"] == "ready"
    assert_no_leak(world, response.content)


def _mcp_fallback(world: World) -> None:
    response = _send(world, "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 501
    assert_no_leak(world, response.content)


def _global(path: str, method: str, reason: str, body: Any = None) -> Case:
    refused = _refused(403, reason)
    return lambda world: refused(world, method, path, body)


def _memory_clear(world: World) -> None:
    before = world.bob_rows()
    mine = _send(world, "POST", "/api/memory/clear", {"apiKeyId": "", "dryRun": True})
    assert mine.status_code == 200 and mine.json()["matched"] == ALICE_MEMORIES
    theirs = _send(world, "POST", "/api/memory/clear", {"apiKeyId": str(world.bob.pk)})
    assert theirs.status_code == 404
    assert world.bob_rows() == before
    assert_no_leak(world, mine.content)
    assert_no_leak(world, theirs.content, sent=(str(world.bob.pk),))


def _key_refused(method: str, detail: bool) -> Case:
    """The API keys are a global admin's: a bound token is refused, even for its own key."""

    def case(world: World) -> None:
        for key in (world.bob, world.alice):
            path = f"/api/keys/{key.pk}" if detail else "/api/keys"
            body = {"name": "taken"} if method in ("POST", "PATCH") else None
            response = _send(world, method, path, body)
            assert response.status_code == 403, response.content
            assert "API keys are credentials" in response.json()["error"]["message"]
            assert_no_leak(world, response.content, sent=(str(world.bob.pk),))
        assert ApiKey.objects.filter(name="taken").count() == 0 and ApiKey.objects.count() == 2

    return case


def _key_rotate_refused(world: World) -> None:
    """A bound token rotates no key, not even its own: the secrets stay as they were."""
    before = dict(ApiKey.objects.values_list("pk", "key_hash"))
    for key in (world.bob, world.alice):
        response = _send(world, "POST", f"/api/keys/{key.pk}/rotate", None)
        assert response.status_code == 403, response.content
        assert "API keys are credentials" in response.json()["error"]["message"]
        assert_no_leak(world, response.content, sent=(str(world.bob.pk),))
    assert dict(ApiKey.objects.values_list("pk", "key_hash")) == before


def _injection_of(owner: ApiKey, memory: Memory) -> str:
    """A ledger entry of ``owner``'s that injected ``memory`` (its text is the system message)."""
    draft = ledger_draft(
        api_key_id=owner.pk,
        session_id="s",
        model="stub-large",
        hits=[Hit(memory=memory, score=1.0, tier="recent", tokens=4)],
        resolution={"strategyUsed": "exact"},
        latency_ms=1.0,
        system_message=f"Memory context: {memory.content}",
    )
    assert draft is not None
    write_entries([draft])
    return str(draft.id)


def _injection_list(world: World) -> None:
    mine = _injection_of(world.alice, Memory.objects.filter(owner=world.alice).first())
    _injection_of(world.bob, world.bob_memory)
    response = world.api.get("/api/memory/injections")
    assert response.status_code == 200, response.content
    assert [e["id"] for e in response.json()["data"]] == [mine]
    assert_no_leak(world, response.content)
    by_memory = world.api.get("/api/memory/injections", {"memoryId": str(world.bob_memory.uuid)})
    assert by_memory.status_code == 200 and by_memory.json()["data"] == []
    assert_no_leak(world, by_memory.content, sent=(str(world.bob_memory.uuid),))
    refused = world.api.get("/api/memory/injections", {"apiKeyId": str(world.bob.pk)})
    assert refused.status_code == 403
    assert_no_leak(world, refused.content, sent=(str(world.bob.pk),))


def _contradiction_of(owner: ApiKey) -> str:
    """An open contradiction of ``owner``'s: a hedged move after a residence."""
    make_memory(owner, "I live in Leeds", created_at=timezone.now() - timedelta(days=2))
    make_memory(owner, "I might move to Rome")
    return str(Contradiction.objects.filter(owner=owner, status="open").latest("created_at").id)


def _contradiction_list(world: World) -> None:
    mine = _contradiction_of(world.alice)
    _contradiction_of(world.bob)
    response = world.api.get("/api/memory/contradictions")
    assert response.status_code == 200, response.content
    assert [c["id"] for c in response.json()["data"]] == [mine]
    assert_no_leak(world, response.content)
    refused = world.api.get("/api/memory/contradictions", {"apiKeyId": str(world.bob.pk)})
    assert refused.status_code == 403
    assert_no_leak(world, refused.content, sent=(str(world.bob.pk),))


def _contradiction_resolve(world: World) -> None:
    theirs = _contradiction_of(world.bob)
    response = world.api.post(
        f"/api/memory/contradictions/{theirs}/resolve", {"resolution": "keep_old"}, format="json"
    )
    assert response.status_code == 404
    assert_no_leak(world, response.content, sent=(theirs,))
    assert Contradiction.objects.get(pk=theirs).status == "open"


def _duplicates_of(owner: ApiKey) -> None:
    make_memory(owner, "I like tea")
    make_memory(owner, "The user likes tea")


def _consolidate(world: World) -> None:
    _duplicates_of(world.alice)
    _duplicates_of(world.bob)
    before = world.bob_rows()
    response = world.api.post("/api/memory/consolidate", {}, format="json")
    assert response.status_code == 200, response.content
    assert [o["apiKeyId"] for o in response.json()["owners"]] == [str(world.alice.pk)]
    assert response.json()["mergedCount"] == 1
    assert_no_leak(world, response.content)
    refused = world.api.post("/api/memory/consolidate", {"apiKeyId": str(world.bob.pk)}, format="json")
    assert refused.status_code in (403, 404)
    assert_no_leak(world, refused.content, sent=(str(world.bob.pk),))
    assert world.bob_rows() == before


def _consolidate_undo(world: World) -> None:
    _duplicates_of(world.bob)
    run = consolidate(world.bob, actor=SYSTEM_ACTOR).run
    assert run is not None
    response = world.api.post(f"/api/memory/consolidate/{run.id}/undo", {}, format="json")
    assert response.status_code == 404
    assert_no_leak(world, response.content, sent=(str(run.id),))
    run.refresh_from_db()
    assert run.status == "applied"


def _injection_detail(world: World) -> None:
    mine = _injection_of(world.alice, Memory.objects.filter(owner=world.alice).first())
    theirs = _injection_of(world.bob, world.bob_memory)
    response = world.api.get(f"/api/memory/injections/{theirs}")
    assert response.status_code == 404
    assert_no_leak(world, response.content, sent=(theirs,))
    own = world.api.get(f"/api/memory/injections/{mine}")
    assert own.status_code == 200 and own.json()["systemMessage"].startswith("Memory context: Alice")
    assert_no_leak(world, own.content)


def _provider_case(method: str, path: str, status: int, body: Any = None) -> Case:
    """A provider no key of alice's uses is invisible (404) to her token, and no write reaches it (403)."""

    def case(world: World) -> None:
        provider = provider_save(name="unused", type="inmemory", config={}, actor=SYSTEM_ACTOR)
        response = _send(world, method, path, body)
        assert response.status_code == status, response.content
        if method == "GET" and path == "/api/memory/providers":
            assert response.json()["data"] == []
        assert MemoryProvider.objects.get(pk=provider.pk).name == "unused"
        assert_no_leak(world, response.content)

    return case


SETTINGS_BODY = {"enabled": True}
CASES: dict[tuple[str, str], Case] = {
    ("memory-list", "GET"): _memory_list_get,
    ("memory-list", "POST"): _memory_create,
    ("memory-bulk", "POST"): _memory_bulk,
    ("memory-detail", "GET"): _memory_detail("GET"),
    ("memory-detail", "PUT"): _memory_detail("PUT"),
    ("memory-detail", "PATCH"): _memory_detail("PATCH"),
    ("memory-detail", "DELETE"): _memory_detail("DELETE"),
    ("settings-memory", "GET"): _ok("/api/settings/memory"),
    ("settings-memory", "PUT"): _global("/api/settings/memory", "PUT", "Settings are global", SETTINGS_BODY),
    ("settings-memory", "PATCH"): _global(
        "/api/settings/memory", "PATCH", "Settings are global", SETTINGS_BODY
    ),
    ("memory-summarize", "POST"): _ok("/api/memory/summarize", "POST", {"olderThanDays": 30}, _summarize),
    ("memory-health", "GET"): _ok("/api/memory/health"),
    ("memory-retrieve-preview", "POST"): _preview,
    ("memory-reindex", "POST"): _global("/api/memory/reindex", "POST", "every API key", {"force": True}),
    ("memory-engine-status", "GET"): _ok("/api/memory/engine-status", check=_engine_counts),
    ("memory-embedding-providers", "GET"): _ok("/api/memory/embedding-providers"),
    ("settings-qdrant", "GET"): _ok("/api/settings/qdrant"),
    ("settings-qdrant", "PUT"): _global("/api/settings/qdrant", "PUT", "Settings are global", SETTINGS_BODY),
    ("settings-qdrant", "PATCH"): _global(
        "/api/settings/qdrant", "PATCH", "Settings are global", SETTINGS_BODY
    ),
    ("settings-qdrant-health", "GET"): _ok("/api/settings/qdrant/health"),
    ("settings-qdrant-search", "POST"): _qdrant_search,
    ("settings-qdrant-cleanup", "POST"): _global("/api/settings/qdrant/cleanup", "POST", "every owner", {}),
    ("audit-list", "GET"): _global("/api/audit", "GET", "audit log is global"),
    ("memory-clear", "POST"): _memory_clear,
    ("keys", "GET"): _key_refused("GET", detail=False),
    ("keys", "POST"): _key_refused("POST", detail=False),
    ("key-detail", "GET"): _key_refused("GET", detail=True),
    ("key-detail", "PATCH"): _key_refused("PATCH", detail=True),
    ("key-detail", "DELETE"): _key_refused("DELETE", detail=True),
    ("key-rotate", "POST"): _key_rotate_refused,
    ("memory-providers", "GET"): _provider_case("GET", "/api/memory/providers", 200),
    ("memory-providers", "POST"): _provider_case(
        "POST", "/api/memory/providers", 403, {"name": "new", "type": "inmemory"}
    ),
    ("memory-provider", "GET"): _provider_case("GET", "/api/memory/providers/unused", 404),
    ("memory-provider", "PUT"): _provider_case(
        "PUT", "/api/memory/providers/unused", 403, {"type": "native", "config": {}}
    ),
    ("memory-provider", "DELETE"): _provider_case("DELETE", "/api/memory/providers/unused", 403),
    ("memory-provider-test", "POST"): _provider_case("POST", "/api/memory/providers/unused/test", 404),
    ("injection-list", "GET"): _injection_list,
    ("injection-detail", "GET"): _injection_detail,
    ("contradiction-list", "GET"): _contradiction_list,
    ("contradiction-resolve", "POST"): _contradiction_resolve,
    ("memory-consolidate", "POST"): _consolidate,
    ("memory-consolidate-undo", "POST"): _consolidate_undo,
    ("healthz", "GET"): _healthz,
    ("readyz", "GET"): _readyz,
    ("mcp", "POST"): _mcp_fallback,
}


# -- the routes of the URL conf ----------------------------------------------------------------------------


def _walk(patterns: list, prefix: str = "", namespace: str = "") -> Iterator[tuple[str, str, Any]]:
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from _walk(pattern.url_patterns, route, inner)
        elif isinstance(pattern, URLPattern):
            yield route, f"{namespace}{pattern.name}", pattern.callback


def _methods(callback: Any) -> list[str]:
    view_class = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    if view_class is not None:
        return [
            m.upper()
            for m in view_class.http_method_names
            if m not in ("options", "head") and hasattr(view_class, m)
        ]
    return ["POST"] if getattr(callback, "csrf_exempt", False) else ["GET"]


def _memory_routes() -> list[tuple[str, str]]:
    """(name, method) of every route of the API and the top level: all but the admin, the Studio, the
    schema documents, the favicon's redirect and the gateway (whose keys own one owner each and are
    tested in tests/gateway)."""
    left_out = ("admin/", "dashboard/", "api/schema/", "api/docs/", "v1/", "favicon.ico")
    routes = []
    for route, name, callback in _walk(get_resolver().url_patterns):
        if route.startswith(left_out):
            continue
        routes.extend((name, method) for method in _methods(callback))
    return routes


def _studio_routes() -> list[tuple[str, str]]:
    return [
        (route, name)
        for route, name, _ in _walk(get_resolver().url_patterns)
        if route.startswith(("dashboard/", "admin/"))
    ]


def test_every_route_has_a_case():
    missing = sorted(set(_memory_routes()) - set(CASES))
    assert not missing, f"routes with no bound-token case in this file: {missing}"
    assert len(_memory_routes()) >= 20


@pytest.mark.parametrize(("name", "method"), sorted(set(_memory_routes()) & set(CASES)))
def test_a_bound_admin_token_reaches_only_its_owners(world, name, method):
    CASES[(name, method)](world)


def test_a_bound_token_cannot_flag_other_owners_for_reindex(world):
    """The reindex the issue reported: a bound admin token re-flagged every owner's memories."""
    response = _send(world, "POST", "/api/memory/reindex", {"force": True})
    assert response.status_code == 403
    assert not Memory.objects.filter(owner=world.bob, needs_reindex=True).exists()


def test_a_global_token_still_sees_every_count(world):
    secret = ManagementToken.issue(name="global-admin", scope="admin")[1]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    body = api.get("/api/memory/engine-status").json()
    assert body["memories"] == TOTAL
    assert body["indexes"]["memories"] == TOTAL
    assert api.post("/api/memory/reindex", {"force": False}, format="json").status_code == 200


# -- the Studio and the admin: staff sessions only -----------------------------------------------------------


def _fill(route: str, world: World) -> str:
    path = "/" + route
    for converter in ("<uuid:memory_id>", "<str:memory_id>"):
        path = path.replace(converter, str(world.bob_memory.uuid))
    if "<" in path:  # the admin's own patterns (app labels, object ids, regexes): their index stands for them
        return "/admin/"
    return path.replace("^", "").replace("$", "")


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_the_studio_and_the_admin_ignore_a_bound_token(world, method):
    """The Studio answers staff sessions only: a bearer token, bound or not, is sent to the login page
    by every Studio and admin route and changes nothing."""
    before = world.bob_rows()
    paths = sorted({_fill(route, world) for route, _ in _studio_routes()})
    assert "/dashboard/memory/reindex" in paths
    for path in paths:
        response = getattr(world.api, method.lower())(path)
        if path.startswith("/admin/login"):
            assert response.status_code == 200, path  # the login page itself
            continue
        assert response.status_code in (302, 404, 405), (path, response.status_code)
        if response.status_code == 302:  # to the login page (logging out: to the admin, then the login)
            assert "/admin/login/" in response["Location"] or response["Location"] == "/admin/", path
        assert_no_leak(world, response.content)
    assert world.bob_rows() == before


# -- the MCP tools -------------------------------------------------------------------------------------------


def _tool_search(world: World, principal: Any) -> None:
    with pytest.raises(NotFound):
        tools.search_memories(principal, api_key_id=str(world.bob.pk), query=BOB_MARK)
    found = tools.search_memories(principal, query=f"{BOB_MARK} secret")
    assert {m["apiKeyId"] for m in found["data"]["memories"]} <= {str(world.alice.pk)}
    assert_no_leak(world, json.dumps(found, default=str).encode())


def _tool_add(world: World, principal: Any) -> None:
    with pytest.raises(NotFound):
        tools.add_memory(
            principal, api_key_id=str(world.bob.pk), type="factual", key="fact:secret-2", content="x"
        )
    added = tools.add_memory(principal, type="factual", key="pref:sugar", content="Alice takes no sugar")
    assert added["data"]["memory"]["apiKeyId"] == str(world.alice.pk)


def _tool_clear(world: World, principal: Any) -> None:
    with pytest.raises(NotFound):
        tools.clear_memories(principal, api_key_id=str(world.bob.pk))
    cleared = tools.clear_memories(principal)
    assert cleared["data"]["deletedCount"] == ALICE_MEMORIES
    assert_no_leak(world, json.dumps(cleared, default=str).encode())


TOOL_CASES = {tools.SEARCH_TOOL: _tool_search, tools.ADD_TOOL: _tool_add, tools.CLEAR_TOOL: _tool_clear}


def test_every_mcp_tool_has_a_case():
    assert set(tools.TOOL_NAMES) == set(TOOL_CASES)


@pytest.mark.parametrize("tool", sorted(TOOL_CASES))
def test_an_mcp_tool_with_a_bound_token_reaches_only_its_owners(world, tool):
    before = world.bob_rows()
    principal = authenticate_token(world.secret)[1]
    assert principal.owner_ids == frozenset({world.alice.pk})
    TOOL_CASES[tool](world, principal)
    assert world.bob_rows() == before
    assert not Memory.objects.filter(owner=world.bob, key__startswith="pref:").exists()
    assert uuid.UUID(str(world.bob.pk))  # bob's key still exists
    assert ApiKey.objects.filter(pk=world.bob.pk).exists()
