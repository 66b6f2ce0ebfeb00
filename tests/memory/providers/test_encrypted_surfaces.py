"""With memory encryption on, a native key's memories are sealed on every surface: what REST and the
gateway's learning write reaches the database file only as blind tokens and ciphertexts, while REST
search, retrieve-preview and the gateway's injection still find them by keyword and by meaning.

Real parts: the test database file on disk (and its WAL), FTS5, sqlite-vec, the ONNX embedder, the
gateway (omniroute.asgi) and the recording upstream of ``tests/gateway``.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest
from django.db import connection

from gateway.workers import wait_for_after_response_work
from memory import store
from memory.backends.selection import forget, served_natively
from memory.models import ApiKey, InjectionEntry, Memory
from memory.services.ledger import ledger_settle
from tests.conftest import Api, _token
from tests.gateway import conftest as gateway_fixtures
from tests.gateway.conftest import sdk

upstream_server = gateway_fixtures.upstream_server
upstream = gateway_fixtures.upstream
gateway_server = gateway_fixtures.gateway_server
gateway = gateway_fixtures.gateway
provider = gateway_fixtures.provider
memory_on = gateway_fixtures.memory_on

pytestmark = pytest.mark.django_db(transaction=True)

SECRET_WORDS = [b"Pickle", b"tangerine", b"zeppelin", b"Osei"]


@pytest.fixture
def sealed(settings, tmp_path: Path):
    settings.MEMORY_ENCRYPTION_KEY = secrets.token_bytes(32)
    settings.MEMORY_ENCRYPTION_KEY_PREVIOUS = None
    settings.MEMORY_KEYRING_PATH = tmp_path / "memory-keyring.json"
    forget()
    yield
    forget()


def _database_bytes() -> bytes:
    if connection.vendor == "postgresql":
        return _postgres_rows()
    database = Path(connection.settings_dict["NAME"])
    raw = b"".join(p.read_bytes() for p in (database, Path(f"{database}-wal")) if p.exists())
    assert raw.count(b"memories") > 0  # the file read is the database
    return raw


def _postgres_rows() -> bytes:
    """On PostgreSQL, every row of every table (the keyword index's documents included) as text,
    each table under its name: what the database holds, as a dump would write it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
        tables = [row[0] for row in cursor.fetchall()]
        parts = []
        for table in tables:
            cursor.execute(f"SELECT coalesce(string_agg(t::text, E'\\n'), '') FROM \"{table}\" AS t")
            parts.append(f"-- {table}\n{cursor.fetchone()[0]}")
    return "\n".join(parts).encode()


def test_rest_writes_are_sealed_and_still_found_by_keyword_and_meaning(sealed):
    alice = ApiKey.issue(name="alice")[0]
    assert not served_natively(alice)
    api = Api(_token("admin"))
    for content, key in [
        ("Maya adopted a tangerine cat named Pickle", "pet"),
        ("The zeppelin museum opens on Sundays; ask Dr Osei for tickets", "museum"),
    ]:
        answer = api.post("/api/memory", {"apiKeyId": str(alice.pk), "content": content, "key": key})
        assert answer.status_code == 201, answer.content

    raw = _database_bytes()
    for word in SECRET_WORDS:
        assert word not in raw, f"{word!r} is readable in the database file"
    assert Memory.objects.filter(owner=alice).count() == 2  # the rows are native, sealed

    first = api.get("/api/memory", {"apiKeyId": str(alice.pk)}).json()["data"][0]
    got = api.get(f"/api/memory/{first['id']}").json()["memory"]
    assert got["content"] == first["content"]  # opened, not the blind tokens stored
    edited = api.put(f"/api/memory/{first['id']}", {"content": first["content"], "importance": 0.9})
    assert edited.status_code == 200 and edited.json()["memory"]["importance"] == 0.9
    listed = api.get("/api/memory", {"apiKeyId": str(alice.pk)}).json()
    assert sorted(m["content"] for m in listed["data"]) == [
        "Maya adopted a tangerine cat named Pickle",
        "The zeppelin museum opens on Sundays; ask Dr Osei for tickets",
    ]
    keyword = api.post(
        "/api/memory/retrieve-preview",
        {"apiKeyId": str(alice.pk), "query": "zeppelin tickets", "strategy": "keyword"},
    ).json()
    assert [h["content"] for h in keyword["memories"]][0].startswith("The zeppelin museum")
    semantic = store.retrieve(owner_ids=frozenset({alice.pk}), query="an orange kitten", strategy="semantic")
    assert semantic.hits[0].memory.content == "Maya adopted a tangerine cat named Pickle"
    assert semantic.resolution["rankings"] == ["vector"]


def _ledger_entries(key: ApiKey) -> list[InjectionEntry]:
    """The key's ledger entries once the gateway's after-response work wrote them (an exchange not
    learned from joins the next batch: settled here)."""
    deadline = time.monotonic() + 5
    while True:
        assert wait_for_after_response_work()
        ledger_settle()
        found = list(InjectionEntry.objects.filter(api_key=key))
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def test_the_gateway_injects_sealed_memories(sealed, gateway, upstream, provider, memory_on):
    alice, secret = ApiKey.issue(name="alice")
    Api(_token("admin")).post(
        "/api/memory", {"apiKeyId": str(alice.pk), "content": "Maya adopted a tangerine cat named Pickle"}
    )
    sdk(gateway, secret).chat.completions.create(
        model="stub-large", messages=[{"role": "user", "content": "What is the name of Maya's cat Pickle?"}]
    )
    sent = str(upstream.last.messages)
    assert "Maya adopted a tangerine cat named Pickle" in sent
    # The ledger keeps which memories were injected, never their text: the shred must reach every copy.
    (entry,) = _ledger_entries(alice)
    assert (entry.system_message, entry.query, len(entry.memories)) == ("", "", 1)
    assert b"tangerine" not in _database_bytes()
