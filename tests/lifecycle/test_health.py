"""GET /api/memory/health (the pipeline on a private probe owner) and GET /healthz.

The embedding source is a remote endpoint answered at the HTTP level (respx), and each failure is a
real state of the system: a source that answers 500, one that is selected but not configured, no usable
vector store, a database trigger that expires the probe at once or refuses inserts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
import respx
from django.db import connection

from memory.conf import update_memory_settings
from memory.models import HEALTH_PROBE_ID, ApiKey, Memory
from memory.services import health
from tests.factories import hash_embed

pytestmark = pytest.mark.django_db
URL = "/api/memory/health"
EMBEDDINGS = "http://127.0.0.1:9/v1/embeddings"


def hash_vectors(request: httpx.Request) -> httpx.Response:
    texts = json.loads(request.content)["input"]
    data = [{"index": i, "embedding": hash_embed(text).tolist()} for i, text in enumerate(texts)]
    return httpx.Response(200, json={"data": data})


@pytest.fixture
def embeddings():
    """A remote embedding source whose endpoint answers deterministic 8-d vectors (the route's
    ``side_effect`` may be changed by a test)."""
    update_memory_settings(
        {
            "embeddingSource": "remote",
            "customBaseUrl": "http://127.0.0.1:9/v1",
            "customModelId": "hash-test",
            "allowPrivateUrls": True,
        }
    )
    with respx.mock(assert_all_called=False) as mock:
        yield mock.post(EMBEDDINGS).mock(side_effect=hash_vectors)


@pytest.fixture
def no_embedding_source():
    update_memory_settings({"embeddingSource": "auto", "staticEnabled": False, "transformersEnabled": False})


def probe_rows():
    return Memory.objects.filter(owner_id=HEALTH_PROBE_ID).count()


def test_green_with_vectors(admin_api, embeddings):
    response = admin_api.get(URL)
    assert response.status_code == 200
    body = response.json()
    assert body["working"] is True and "error" not in body and body["latencyMs"] >= 0
    assert list(body["stages"]) == ["write", "fts", "vector", "read", "delete"]
    for stage in body["stages"].values():
        assert stage["ok"] is True and not stage.get("skipped") and stage["latencyMs"] >= 0
    assert embeddings.called and probe_rows() == 0


def test_the_vector_stage_is_skipped_without_an_embedding_source(admin_api, no_embedding_source):
    body = admin_api.get(URL).json()
    assert body["working"] is True
    assert body["stages"]["vector"]["skipped"] is True
    assert body["stages"]["vector"]["reason"] == "auto: no embedding source available"


def test_red_when_the_embedding_source_fails(admin_api, embeddings):
    """B8: the reference stayed green while vectorisation was broken."""
    embeddings.side_effect = None
    embeddings.return_value = httpx.Response(500, text="upstream said 500")
    body = admin_api.get(URL).json()
    assert body["working"] is False
    error = "Embedding provider 127.0.0.1 returned HTTP 500"  # never the body it sent back
    assert body["stages"]["vector"] == {
        "ok": False,
        "latencyMs": body["stages"]["vector"]["latencyMs"],
        "error": error,
    }
    assert body["error"] == f"vector: {error}"
    assert body["stages"]["delete"]["ok"] is True and probe_rows() == 0


def test_red_when_a_selected_source_is_unavailable(admin_api):
    update_memory_settings({"embeddingSource": "remote"})  # no endpoint, no provider/model
    body = admin_api.get(URL).json()
    assert body["working"] is False and body["error"].startswith("vector: embedding source 'remote'")


def test_red_when_a_source_is_configured_but_no_vector_store_is_usable(admin_api, embeddings, settings):
    settings.VECTOR_STORE_DISABLE_VEC = True
    update_memory_settings({"vectorStore": "qdrant"})  # selected, but Qdrant is not enabled
    body = admin_api.get(URL).json()
    assert body["working"] is False and "no vector store" in body["stages"]["vector"]["error"]


def test_vectors_disabled_on_purpose_are_skipped(admin_api, embeddings, settings):
    settings.VECTOR_STORE_DISABLE_VEC = True
    body = admin_api.get(URL).json()
    assert body["working"] is True and body["stages"]["vector"]["skipped"] is True


def database_trigger(name: str, timing: str, sqlite_body: str, pg_body: str) -> None:
    """A row trigger on ``memories`` (``timing``: ``AFTER INSERT``, …), dropped with the test's
    transaction: SQLite's body is SQL statements, PostgreSQL's a PL/pgSQL function (made in the same
    transaction, so dropped with it too)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {pg_body}; "
                "RETURN NEW; END $$"
            )
            cursor.execute(
                f"CREATE TRIGGER {name} {timing} ON memories FOR EACH ROW EXECUTE FUNCTION {name}()"
            )
        else:
            cursor.execute(f"CREATE TRIGGER {name} {timing} ON memories BEGIN {sqlite_body}; END")


def test_it_cleans_up_when_a_stage_fails(admin_api, no_embedding_source):
    """A memory that expires as soon as it is written is indexed but filtered out of keyword search."""
    expire = "UPDATE memories SET expires_at = '2000-01-01 00:00:00' WHERE seq = new.seq"
    database_trigger("expire_at_once", "AFTER INSERT", expire, expire.replace("new.", "NEW."))
    body = admin_api.get(URL).json()
    assert body["working"] is False
    assert body["error"] == "fts: the probe memory was not found by full-text search"
    assert body["stages"]["read"]["ok"] is True and body["stages"]["delete"]["ok"] is True
    assert probe_rows() == 0


def test_it_cleans_up_even_when_a_stage_crashes_the_run(embeddings):
    def interrupted(request):
        raise KeyboardInterrupt  # not an Exception: escapes the run

    embeddings.side_effect = interrupted
    with pytest.raises(KeyboardInterrupt):
        health.run_health_check()
    assert probe_rows() == 0


def test_skipped_stages_after_a_failed_write(admin_api, no_embedding_source):
    # Not a constraint (an IntegrityError is an upsert): an error the write cannot recover from.
    database_trigger("refuse_inserts", "BEFORE INSERT", "DELETE FROM gone", "DELETE FROM gone")
    body = admin_api.get(URL).json()
    # One line on either engine: PostgreSQL's QUERY and CONTEXT lines are left out.
    missing = (
        'relation "gone" does not exist' if connection.vendor == "postgresql" else "no such table: main.gone"
    )
    assert body["working"] is False and body["error"] == f"write: {missing}"
    assert body["stages"]["fts"]["skipped"] is True and body["stages"]["read"]["skipped"] is True


def test_the_probe_owner_is_private(admin_api, alice, no_embedding_source):
    admin_api.get(URL)
    probe = ApiKey.all_objects.get(pk=HEALTH_PROBE_ID)
    assert probe.revoked_at is not None and probe.name == health.PROBE_OWNER_NAME
    assert list(ApiKey.objects.all()) == [alice]
    assert admin_api.post("/api/memory/summarize", {"apiKeyId": str(probe.pk)}).status_code == 404
    write = admin_api.post("/api/memory", {"apiKeyId": str(probe.pk), "key": "k", "content": "x"})
    assert write.status_code == 404


def test_stale_probes_left_by_a_dead_run_are_removed(admin_api, no_embedding_source):
    from datetime import timedelta

    from django.utils import timezone

    from tests.factories import make_memory

    make_memory(
        health.probe_owner(),
        "left over",
        key="__health_probe__:old",
        created_at=timezone.now() - timedelta(hours=1),
    )
    assert admin_api.get(URL).json()["working"] is True
    assert probe_rows() == 0


def test_health_needs_a_token(anon_api, read_api, no_embedding_source):
    assert anon_api.get(URL).status_code == 401
    assert read_api.get(URL).status_code == 200


# -- /healthz -------------------------------------------------------------------------------------------


def test_healthz_is_ok_without_authentication(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


HEALTHZ = """
import json
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
response = Client().get("/healthz")
print(json.dumps([response.status_code, response.json()]))
"""


FORGET_LATEST_MIGRATION = (
    "DELETE FROM django_migrations WHERE id = (SELECT max(id) FROM django_migrations WHERE app = 'memory')"
)


@contextmanager
def copy_with_a_pending_migration(instance, tmp_path) -> Iterator[dict]:
    """A copy of the instance's migrated database whose latest migration is not recorded as applied;
    yields the environment that points a process at it. SQLite: a backup of the file. PostgreSQL: a
    database made from the instance's as a template (nothing is connected to it between commands),
    dropped afterwards."""
    url = instance.env.get("DATABASE_URL", "").strip()
    if not url:
        import sqlite3

        copy = tmp_path / "omniroute.sqlite3"
        with sqlite3.connect(instance.db_path) as source, sqlite3.connect(copy) as target:
            source.backup(target)
            target.execute(FORGET_LATEST_MIGRATION)
        yield {"OMNIROUTE_DB_PATH": str(copy)}
        return
    import psycopg

    server, name = url.rsplit("/", 1)
    copy = f"{name}_pending"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{copy}"')
        admin.execute(f'CREATE DATABASE "{copy}" TEMPLATE "{name}"')
    try:
        with psycopg.connect(f"{server}/{copy}", autocommit=True) as target:
            target.execute(FORGET_LATEST_MIGRATION)
        yield {"DATABASE_URL": f"{server}/{copy}"}
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{copy}" WITH (FORCE)')


def test_healthz_is_503_when_migrations_are_pending(instance, tmp_path):
    """A copy of a migrated database whose latest migration is not recorded as applied, served by a
    fresh process (a process that has seen every migration applied keeps that answer)."""
    with copy_with_a_pending_migration(instance, tmp_path) as env:
        pending = instance.manage("shell", "--no-imports", "-c", HEALTHZ, env=env)
    assert json.loads(pending.stdout.splitlines()[-1]) == [
        503,
        {"status": "unavailable", "reason": "migrations pending"},
    ]
    served = instance.manage("shell", "--no-imports", "-c", HEALTHZ)  # the database it was copied from
    assert json.loads(served.stdout.splitlines()[-1]) == [200, {"status": "ok"}]


@pytest.mark.django_db(transaction=True)
def test_healthz_is_503_when_the_database_is_unreachable(client, tmp_path, caplog):
    from tests.faults import database_unreachable

    with database_unreachable(tmp_path / "missing"), caplog.at_level("ERROR", logger="memory.api"):
        response = client.get("/healthz")
    assert response.status_code == 503 and response.json() == {
        "status": "unavailable",
        "reason": "database unreachable",
    }
    (record,) = [r for r in caplog.records if r.getMessage() == "healthz: database unreachable"]
    assert "unable to open database file" in str(record.exc_info[1])
    assert client.get("/healthz").status_code == 200  # the real database again
