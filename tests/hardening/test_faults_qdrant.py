"""A Qdrant server that hangs or answers junk, and where Qdrant may point.

Qdrant is a loopback HTTP server (``FaultServer``) standing in for a real one: it lists no collections
and hangs on everything else, or hangs on everything, or answers 401/500 with a body that must never be
shown. The memory embeddings come from the same kind of server, answering; nothing of ours is patched.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

# Imported before anything is timed: its first import takes seconds on a busy machine.
import qdrant_client  # noqa: F401

from memory.conf import update_memory_settings
from memory.qdrant_conf import get_qdrant_settings, update_qdrant_settings
from memory.retrieval.chat import retrieve_for_chat
from memory.services.indexing import index_by_seqs
from memory.vectorstores import qdrant
from memory.vectorstores.qdrant.client import connection_for
from tests.factories import database_store, make_memory
from tests.hardening.test_faults_remote import SECRET_BODY, FaultServer

pytestmark = pytest.mark.django_db
SETTINGS = "/api/settings/qdrant"


@pytest.fixture(autouse=True)
def fresh_clients() -> Iterator[None]:
    qdrant.reset_clients()
    yield
    qdrant.reset_clients()


@pytest.fixture
def embeddings(settings) -> Iterator[FaultServer]:
    """Memory embeddings from a loopback server that answers (private URLs allowed)."""
    settings.MEMORY_ALLOW_PRIVATE_URLS = True
    settings.MEMORY_BREAKER_FAILURES = 2
    settings.MEMORY_BREAKER_COOLDOWN_SECONDS = 60.0
    server = FaultServer().start()
    update_memory_settings(
        {"embeddingSource": "remote", "customBaseUrl": f"{server.url}/v1", "customModelId": "hash-8"}
    )
    yield server
    server.stop()


@pytest.fixture
def qdrant_server() -> Iterator[FaultServer]:
    server = FaultServer().start()
    yield server
    server.stop()


@pytest.fixture
def indexed(embeddings, alice):
    """Alice's memories, embedded into the database's vector store while Qdrant is still off."""
    memories = [make_memory(alice, "kiwi smoothie recipe with mint"), make_memory(alice, "deploys on Friday")]
    assert index_by_seqs([m.seq for m in memories]) == 2
    return memories


def enable_qdrant(server: FaultServer) -> None:
    update_qdrant_settings({"enabled": True, "host": server.url, "timeoutSeconds": 1})


def timed_chat(owner) -> tuple[float, dict, list[str]]:
    started = time.perf_counter()
    result = retrieve_for_chat(api_key=owner, query="kiwi smoothie", touch=False)
    return time.perf_counter() - started, result.resolution, [m.content for m in result.memories]


# -- a hung Qdrant


def test_a_hung_qdrant_is_left_out_after_two_timeouts_and_every_chat_says_why(indexed, qdrant_server, alice):
    qdrant_server.mode = "hang"
    enable_qdrant(qdrant_server)
    chats, asked = [], []
    for _ in range(10):
        chats.append(timed_chat(alice))
        asked.append(len(qdrant_server.requests))

    # One hung probe each for the first two chats (each waits its 1 s timeout once), then the circuit
    # opens and no chat asks Qdrant again, so none waits. Counted requests, not wall time, say "once":
    # a loaded machine stretches the rest of a chat, never the number of calls.
    assert asked == [1, 2] + [2] * 8
    assert all(elapsed >= 0.9 for elapsed, _, _ in chats[:2])
    assert all(elapsed < 0.9 for elapsed, _, _ in chats[2:])
    for _, resolution, found in chats:
        assert found == ["kiwi smoothie recipe with mint"]
        assert resolution["vectorStore"] == database_store().name and resolution["strategyUsed"] == "hybrid"
        assert "qdrant" in resolution["fallbackReason"]
        assert resolution["fallbackReason"].endswith(f"— searching {database_store().name}")
    assert "timed out after 1 s" in chats[0][1]["fallbackReason"]
    assert "circuit open after 2 failures in a row" in chats[-1][1]["fallbackReason"]


def test_a_qdrant_whose_searches_hang_stops_costing_chats_their_timeout(indexed, qdrant_server, alice):
    # The health probe (GET /collections) answers; every other call hangs.
    qdrant_server.reply = lambda method, path: (
        (200, {"result": {"collections": []}, "status": "ok", "time": 0}) if path == "/collections" else None
    )
    enable_qdrant(qdrant_server)

    def hung() -> int:
        return sum(path != "/collections" for _, path in qdrant_server.requests)

    first, resolution, found = timed_chat(alice)
    assert first >= 0.9 and hung() == 1 and found == ["kiwi smoothie recipe with mint"]
    assert (
        "qdrant search failed" in resolution["fallbackReason"]
        and resolution["vectorStore"] == database_store().name
    )
    second, _, _ = timed_chat(alice)
    assert second >= 0.9 and hung() == 2

    for _ in range(4):
        elapsed, resolution, found = timed_chat(alice)
        assert hung() == 2 and elapsed < 0.9 and found == ["kiwi smoothie recipe with mint"]
        assert "circuit open" in resolution["fallbackReason"]


def test_engine_status_shows_qdrants_open_circuit_and_the_store_in_use(
    indexed, qdrant_server, alice, read_api, admin_client
):
    read_api.get("/api/memory/engine-status")  # its first call self-checks the int8 kernel: not timed
    qdrant_server.mode = "hang"
    enable_qdrant(qdrant_server)
    timed_chat(alice)
    timed_chat(alice)

    started = time.perf_counter()
    status = read_api.get("/api/memory/engine-status").json()
    assert time.perf_counter() - started < 0.5
    assert status["qdrant"]["healthy"] is False and status["qdrant"]["fallback"] == database_store().name
    assert status["qdrant"]["circuit"]["state"] == "open" and status["qdrant"]["circuit"]["failures"] == 2
    assert status["vectorStore"]["backend"] == database_store().name

    page = admin_client.get(
        "/dashboard/memory", {"tab": "engine"}, headers={"HX-Request": "true", "HX-Target": "engine-status"}
    ).content.decode()
    assert "Circuit open: timed out after 1 s" in page and f"Searches use {database_store().name}" in page


def test_the_probe_brings_qdrant_back_without_a_chat_waiting(indexed, qdrant_server, alice, settings):
    settings.MEMORY_BREAKER_COOLDOWN_SECONDS = 0.3
    qdrant_server.mode = "hang"
    enable_qdrant(qdrant_server)
    timed_chat(alice)
    timed_chat(alice)
    breaker = connection_for(get_qdrant_settings()).breaker
    assert breaker.state == "open"

    qdrant_server.mode = "ok"
    time.sleep(0.35)
    elapsed, resolution, _ = timed_chat(alice)
    assert elapsed < 0.9 and "circuit half-open" in resolution["fallbackReason"]
    deadline = time.monotonic() + 5
    while breaker.state != "closed" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert breaker.state == "closed"
    # Qdrant is searched again (its collection is missing here, so the database store still answers).
    _, resolution, _ = timed_chat(alice)
    assert "qdrant returned 0 results" in resolution["fallbackReason"]


# -- the outbound URL policy


@pytest.mark.parametrize(
    "host",
    [
        "http://169.254.169.254",
        "http://metadata.google.internal",
        "http://[fd00:ec2::254]",
        "http://127.0.0.1:6333",
        "http://localhost:6333",
        "http://[::ffff:127.0.0.1]:6333",
        "http://10.0.0.5:6333",
    ],
)
def test_saving_a_host_the_policy_refuses_is_a_400_naming_host(admin_api, host):
    r = admin_api.put(SETTINGS, {"enabled": True, "host": host})
    assert r.status_code == 400
    details = r.json()["error"]["details"]
    assert [d["field"] for d in details] == ["host"] and "outbound URL policy" in details[0]["message"]
    assert get_qdrant_settings().host == ""


def test_loopback_and_private_hosts_need_the_one_private_switch(admin_api, settings):
    settings.MEMORY_ALLOW_PRIVATE_URLS = True
    assert admin_api.put(SETTINGS, {"host": "http://127.0.0.1:6333"}).status_code == 200
    assert admin_api.put(SETTINGS, {"host": "http://10.0.0.5:6333"}).status_code == 200
    # Metadata addresses stay refused whatever the switch says.
    assert admin_api.put(SETTINGS, {"host": "http://169.254.169.254"}).status_code == 400


def test_a_refused_host_from_the_environment_is_never_contacted(admin_api, qdrant_server, alice):
    # Not through the API (as QDRANT_HOST would set it): the client checks before it connects.
    update_qdrant_settings({"enabled": True, "host": qdrant_server.url})
    r = admin_api.get(SETTINGS + "/health")
    assert r.status_code == 200 and r.json()["ok"] is False
    assert "outbound URL policy" in r.json()["error"] and "loopback" in r.json()["error"]
    make_memory(alice, "kiwi smoothie recipe")
    _, resolution, found = timed_chat(alice)
    assert found == ["kiwi smoothie recipe"] and "outbound URL policy" in resolution["fallbackReason"]
    assert qdrant_server.requests == []


# -- never a remote body


@pytest.mark.parametrize("status", [401, 500, 200])
def test_health_and_status_never_echo_what_the_server_sent(admin_api, qdrant_server, settings, status):
    settings.MEMORY_ALLOW_PRIVATE_URLS = True
    # 200 with a body that is not Qdrant's API: its parse error would quote it.
    qdrant_server.reply = lambda method, path: (status, f"token={SECRET_BODY}")
    update_qdrant_settings({"enabled": True, "host": qdrant_server.url, "apiKey": "qk-123456789"})
    health = admin_api.get(SETTINGS + "/health")
    assert health.json()["ok"] is False
    if status != 200:
        assert health.json()["error"].startswith(f"HTTP {status}")
    status_page = admin_api.get("/api/memory/engine-status")
    search = admin_api.post(SETTINGS + "/search", {"query": "kiwi"})
    for response in (health, status_page, search):
        assert SECRET_BODY.encode() not in response.content and b"qk-123456789" not in response.content
    assert qdrant_server.requests  # it was asked: the body came back and was not shown
