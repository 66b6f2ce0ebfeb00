"""Moving an instance from SQLite to PostgreSQL (issue 15): ``export_instance`` on a SQLite data
directory, ``import_instance`` into this suite's PostgreSQL test database, each a real ``manage.py``
process as an operator runs them.

The source is filled through the services (``tests/memory/instance_data.py``: keys, tokens, providers,
memories with their history and supersession, the ledger, settings with a secret), its memories
embedded by ``reindex_memories``. The target is the test process's own database (skipped on SQLite),
reached by the target's processes with a ``DATABASE_URL`` of their own and the source's master key.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection

from tests.memory.test_instance_transfer import (
    MODELS_DIR,
    Site,
    Source,
    blank,  # noqa: F401 (the fixture, used by ``source``)
    import_report,
    recall,
    seeded,
    site_env,
)

EXTRA_MEMORIES = 40

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the target is PostgreSQL"),
    pytest.mark.skipif(
        not (MODELS_DIR / "bge-small-en-v1.5" / "model.onnx").exists(),
        reason="the local models are not built",
    ),
]


def database_url() -> str:
    """This process's test database, as a ``DATABASE_URL`` for the target's processes."""
    params = connection.settings_dict
    auth = quote(params["USER"] or "", safe="")
    if params["PASSWORD"]:
        auth += ":" + quote(params["PASSWORD"], safe="")
    host = params["HOST"] or "127.0.0.1"
    port = params["PORT"] or "5432"
    return f"postgres://{auth}@{host}:{port}/{params['NAME']}"


def postgres_target(source: Source, tmp_path_factory) -> Site:
    """A data directory (for its keys and queue) whose database is PostgreSQL, with the source's key."""
    data_dir = tmp_path_factory.mktemp("pg-target")
    shutil.copy(source.site.data_dir / "encryption.key", data_dir / "encryption.key")
    env = site_env(data_dir)
    env["DATABASE_URL"] = database_url()
    return Site(data_dir, env)


@pytest.fixture
def source(tmp_path_factory, blank: Path) -> Source:  # noqa: F811 (the imported fixture)
    return seeded(tmp_path_factory, blank, "sqlite-source", extra=EXTRA_MEMORIES)


def test_a_sqlite_instance_moves_to_postgresql_with_its_vectors_history_and_owners(source, tmp_path_factory):
    target = postgres_target(source, tmp_path_factory)
    assert (
        target.python("import json; from django.db import connection; print(json.dumps(connection.vendor))")
        == "postgresql"
    )
    assert (
        source.site.python(
            "import json; from django.db import connection; print(json.dumps(connection.vendor))"
        )
        == "sqlite"
    )
    total = EXTRA_MEMORIES + 6

    report = import_report(target, source.export)
    assert report["verification"]["ok"] and report["indexes"]["ok"]
    assert report["vectors_carried"] is True
    assert report["written"]["memory.memory"] == total
    assert report["written"]["vectors"] == total
    assert report["written"]["memory.apikey"] == 3

    # --verify: every table's count and checksum against the export's manifest.
    verified = target.manage("import_instance", str(source.export), "--verify")
    assert "ok: every table matches the export" in verified.stdout
    assert "memory.apikey: 3/3 rows, ok" in verified.stdout
    assert f"memory.memory: {total}/{total} rows, ok" in verified.stdout

    # What a user sees, secrets opened with the source's key, is the same on PostgreSQL.
    before, after = source.site.describe(), target.describe()
    assert after == before
    assert after["settings"] == [1234, "sk-remote-secret"]
    assert after["upstreams"] == [["openai", "sk-upstream-1"]]
    history = {m["content"]: m for m in after["memories"]}
    assert history["I love cats"]["superseded_by"] == history["I hate cats"]["uuid"]
    assert history["I love cats"]["valid_to"] == history["I hate cats"]["created"]
    assert after["contradictions"] == [["alice", "I love cats", "I hate cats", "supersedes", "resolved"]]

    # The vectors are in PostgreSQL's own table, one per memory, nothing left to embed.
    state = json.loads(target.manage("verify_indexes", "--json").stdout)["before"]
    assert state["ok"] and state["vectors"] == state["memories"] == total and state["pending"] == 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), count(DISTINCT owner_id) FROM memory_vec")
        assert cursor.fetchone() == (total, 2)

    # Hybrid retrieval answers on the copied vectors and PostgreSQL's keyword index, within each owner.
    alice_sees = recall(target, source.owners["alice"], "do I like cats")
    assert alice_sees[:1] == ["I hate cats"]
    bob_sees = recall(target, source.owners["bob"], "what do I drink in the morning")
    assert "I prefer green tea in the morning" in bob_sees
    assert not {"I hate cats", "I love cats", "I live in Leeds"} & set(bob_sees)
    assert "I live in Leeds" in recall(target, source.owners["alice"], "Leeds")
    assert "I live in Leeds" not in recall(target, source.owners["bob"], "Leeds")
    assert "I work as a carpenter in Porto" not in recall(target, source.owners["alice"], "carpenter Porto")

    # New rows on PostgreSQL are numbered after the imported ones (the sequences were reset).
    created = target.python(
        "import json, uuid; from memory import store; from memory.models import ApiKey, Memory\n"
        "from memory.services.memories import MemoryInput\n"
        f"owner = ApiKey.objects.get(pk=uuid.UUID({source.owners['alice']!r}))\n"
        "store.memory_create(MemoryInput(owner=owner, content='I moved to Postgres'))\n"
        "print(json.dumps(Memory.objects.count()))"
    )
    assert created == total + 1
