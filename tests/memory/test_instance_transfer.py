"""Moving an instance (issue 15): ``export_instance`` on one data directory, ``import_instance`` on
another, each a real ``manage.py`` process on its own SQLite file, as an operator runs them.

The source is filled through the services (``tests/memory/instance_data.py``: users, keys, tokens,
providers, memories with their history, the ledger, the replay queue, settings with a secret), its
memories embedded by ``reindex_memories``. Each target starts as a copy of one freshly migrated
database.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.apps import apps

from memory.services.instance.tables import NOT_MOVED, TABLES

BASE_DIR = Path(__file__).resolve().parents[2]
MODELS_DIR = BASE_DIR / "data" / "models"
EXTRA_MEMORIES = 240

pytestmark = pytest.mark.skipif(
    not (MODELS_DIR / "bge-small-en-v1.5" / "model.onnx").exists(), reason="the local models are not built"
)


@dataclass
class Site:
    """One instance: a data directory and the environment its ``manage.py`` runs with."""

    data_dir: Path
    env: dict

    def manage(self, *args: str, check: bool = True, timeout: int = 300) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=BASE_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def popen(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "manage.py", *args],
            cwd=BASE_DIR,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def python(self, code: str):
        """Run ``code`` in this instance's shell; its last printed line is JSON, returned here."""
        out = self.manage("shell", "--no-imports", "-c", code).stdout.strip().splitlines()
        return json.loads(out[-1])

    def describe(self) -> dict:
        return self.python(
            "import json; from tests.memory.instance_data import describe; print(json.dumps(describe()))"
        )

    def sql(self, statement: str) -> None:
        self.python(
            "from django.db import connection\n"
            f"with connection.cursor() as c: c.execute({statement!r})\n"
            "print('null')"
        )


def site_env(data_dir: Path, **extra: str) -> dict:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "omniroute.settings",
        "OMNIROUTE_DATA_DIR": str(data_dir),
        "OMNIROUTE_DB_PATH": str(data_dir / "omniroute.sqlite3"),
        "MEMORY_MODELS_DIR": str(MODELS_DIR),
        "MEMORY_TRANSFORMERS_MODEL": "bge-small-en-v1.5",
        "OMNIROUTE_LOG_LEVEL": "WARNING",
        **extra,
    }
    for name in ("OMNIROUTE_TEST_DB_PATH", "REDIS_URL", "OMNIROUTE_TOKEN", "DATABASE_URL"):
        env.pop(name, None)
    return env


@pytest.fixture(scope="module")
def blank(tmp_path_factory) -> Path:
    """A freshly migrated database, copied for each target (migrating each one would take minutes)."""
    data_dir = tmp_path_factory.mktemp("blank")
    Site(data_dir, site_env(data_dir)).manage("migrate", "--noinput")
    return data_dir / "omniroute.sqlite3"


def new_site(tmp_path_factory, blank: Path, name: str, **env: str) -> Site:
    data_dir = tmp_path_factory.mktemp(name)
    shutil.copy(blank, data_dir / "omniroute.sqlite3")
    return Site(data_dir, site_env(data_dir, **env))


@dataclass
class Source:
    site: Site
    export: Path
    owners: dict[str, str]


def seeded(tmp_path_factory, blank: Path, name: str, *, extra: int = 0, **env: str) -> Source:
    site = new_site(tmp_path_factory, blank, name, **env)
    owners = site.python(
        f"import json; from tests.memory.instance_data import seed; print(json.dumps(seed(extra_memories={extra})))"
    )
    site.manage("reindex_memories")
    export = tmp_path_factory.mktemp(f"{name}-export") / "out"
    site.manage("export_instance", str(export))
    return Source(site, export, owners)


@pytest.fixture(scope="module")
def source(tmp_path_factory, blank) -> Source:
    return seeded(tmp_path_factory, blank, "source", extra=EXTRA_MEMORIES)


def target_for(source: Source, tmp_path_factory, blank: Path, name: str, **env: str) -> Site:
    """A blank target with the source's master key (the one its data directory generated)."""
    site = new_site(tmp_path_factory, blank, name, **env)
    shutil.copy(source.site.data_dir / "encryption.key", site.data_dir / "encryption.key")
    return site


def import_report(site: Site, export: Path, *args: str) -> dict:
    return json.loads(site.manage("import_instance", str(export), "--json", *args).stdout)


def recall(site: Site, owner: str, query: str) -> list[str]:
    return site.python(
        "import json, uuid; from memory.store import retrieve\n"
        f"found = retrieve(owner_ids=frozenset({{uuid.UUID({owner!r})}}), query={query!r}, strategy='hybrid')\n"
        "print(json.dumps([m.content for m in found.memories]))"
    )


def test_every_installed_model_either_moves_or_is_named_as_staying_behind():
    moved = {spec.label for spec in TABLES}
    installed = {model._meta.label_lower for model in apps.get_models(include_auto_created=True)}
    assert installed - moved - set(NOT_MOVED) == set()
    assert moved & set(NOT_MOVED) == set()
    assert moved <= installed


def test_every_table_moves_with_its_secrets_readable_and_each_owner_keeps_its_own(
    source, tmp_path_factory, blank
):
    target = target_for(source, tmp_path_factory, blank, "target")
    report = import_report(target, source.export)
    assert report["verification"]["ok"] and report["indexes"]["ok"]
    assert report["vectors_carried"] is True
    assert report["written"]["memory.memory"] == EXTRA_MEMORIES + 6
    assert report["written"]["vectors"] == EXTRA_MEMORIES + 6

    before, after = source.site.describe(), target.describe()
    assert after == before
    # Hashes, never secrets; the secrets open with the source's key on the target.
    assert after["users"][0][0] == "operator" and after["users"][0][1].startswith("pbkdf2_sha256$")
    assert after["upstreams"] == [["openai", "sk-upstream-1"]]
    assert after["settings"] == [1234, "sk-remote-secret"]
    assert ["scratch", {"note": "provider secret"}] in after["providers"]
    assert after["ledger"] == [["alice", "Known about the user: I hate cats", "do I like cats"]]
    history = {m["content"]: m for m in after["memories"]}
    assert history["I love cats"]["superseded_by"] == history["I hate cats"]["uuid"]
    assert history["I love cats"]["valid_to"] == history["I hate cats"]["created"]
    assert after["contradictions"] == [["alice", "I love cats", "I hate cats", "supersedes", "resolved"]]

    indexes = target.manage("verify_indexes", "--json")
    state = json.loads(indexes.stdout)["before"]
    assert (
        state["ok"] and state["vectors"] == state["memories"] == EXTRA_MEMORIES + 6 and state["pending"] == 0
    )
    # Retrieval works on the copied vectors, and stays within each owner.
    assert recall(target, source.owners["alice"], "do I like cats")[:1] == ["I hate cats"]
    bob_sees = recall(target, source.owners["bob"], "what do I drink in the morning")
    assert "I prefer green tea in the morning" in bob_sees
    assert not {"I hate cats", "I love cats", "I live in Leeds"} & set(bob_sees)


def test_a_file_changed_after_the_export_is_refused_before_anything_is_written(
    source, tmp_path_factory, blank
):
    tampered = tmp_path_factory.mktemp("tampered") / "out"
    shutil.copytree(source.export, tampered)
    path = tampered / "memory.memory.ndjson"
    path.write_text(path.read_text().replace("I prefer green tea", "I prefer black coffee"))
    target = target_for(source, tmp_path_factory, blank, "tampered-target")

    result = target.manage("import_instance", str(tampered), check=False)
    assert result.returncode == 1
    assert "memory.memory.ndjson was changed after the export" in result.stderr
    assert (
        target.python(
            "from memory.models import ApiKey, Memory; print(Memory.objects.count() + ApiKey.objects.count())"
        )
        == 0
    )


def test_verify_names_the_table_whose_rows_differ_on_either_side(source, tmp_path_factory, blank):
    target = target_for(source, tmp_path_factory, blank, "verified-target")
    import_report(target, source.export)
    assert (
        "ok: every table matches the export"
        in target.manage("import_instance", str(source.export), "--verify").stdout
    )

    target.sql("UPDATE memories SET importance = 0.11 WHERE content = 'I live in Leeds'")
    result = target.manage("import_instance", str(source.export), "--verify", check=False)
    assert result.returncode == 1
    assert "memory.memory: the rows differ from the export's" in result.stderr
    assert "memory.apikey: 3/3 rows, ok" in result.stdout

    target.sql("DELETE FROM memory_injections")
    result = target.manage("import_instance", str(source.export), "--verify", check=False)
    assert "memory.injectionentry: 0 rows here, 1 in the export" in result.stderr

    assert source.site.manage("export_instance", "--verify", str(source.export)).returncode == 0
    source.site.sql("UPDATE memory_injections SET total_tokens = 99")
    try:
        result = source.site.manage("export_instance", "--verify", str(source.export), check=False)
        assert result.returncode == 1
        assert "memory.injectionentry: the rows differ from the export's" in result.stderr
    finally:
        source.site.sql("UPDATE memory_injections SET total_tokens = 12")
    assert source.site.manage("export_instance", "--verify", str(source.export)).returncode == 0


def _checkpoint(site: Site) -> Path:
    found = list(site.data_dir.glob("import-*.checkpoint.json"))
    return found[0] if found else site.data_dir / "none"


def _kill_midway(site: Site, export: Path) -> dict:
    """Start an import (small batches) and kill -9 it once some memories, not all, are in."""
    process = site.popen("import_instance", str(export), "--batch", "5")
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and process.poll() is None:
            try:
                done = json.loads(_checkpoint(site).read_text())["done"].get("memory.memory", 0)
            except (OSError, ValueError, KeyError):
                done = 0
            if done >= 20:
                process.send_signal(signal.SIGKILL)
                process.wait()
                break
            time.sleep(0.005)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL, "the import finished before it could be interrupted"
    state = json.loads(_checkpoint(site).read_text())
    assert 20 <= state["done"]["memory.memory"] < EXTRA_MEMORIES + 6 and not state["finished"]
    return state


def test_an_import_killed_midway_goes_on_from_its_checkpoint(source, tmp_path_factory, blank):
    target = target_for(source, tmp_path_factory, blank, "killed-target")
    state = _kill_midway(target, source.export)

    report = import_report(target, source.export)
    assert report["resumed"] is True
    assert report["skipped"]["memory.memory"] == state["done"]["memory.memory"]
    assert report["skipped"]["memory.memory"] + report["written"]["memory.memory"] == EXTRA_MEMORIES + 6
    assert report["verification"]["ok"] and report["indexes"]["ok"]
    assert target.describe() == source.site.describe()
    # Run again once finished: nothing is written twice, the check still passes.
    again = import_report(target, source.export)
    assert again["written"] == {} and again["verification"]["ok"]


def test_a_checkpoint_cut_short_starts_over_and_the_upserts_leave_one_copy(source, tmp_path_factory, blank):
    target = target_for(source, tmp_path_factory, blank, "truncated-target")
    _kill_midway(target, source.export)
    path = _checkpoint(target)
    path.write_bytes(path.read_bytes()[:25])

    report = import_report(target, source.export)
    assert report["resumed"] is True and report["skipped"]["memory.memory"] == 0
    assert report["written"]["memory.memory"] == EXTRA_MEMORIES + 6
    assert report["verification"]["ok"] and report["indexes"]["ok"]
    assert target.describe() == source.site.describe()


def test_another_embedding_model_on_the_target_re_embeds_instead_of_copying(source, tmp_path_factory, blank):
    target = target_for(
        source, tmp_path_factory, blank, "minilm-target", MEMORY_TRANSFORMERS_MODEL="all-MiniLM-L6-v2"
    )
    report = import_report(target, source.export)
    assert report["vectors_carried"] is False
    assert "all-MiniLM-L6-v2" in report["vectors_reason"] and "bge-small" in report["vectors_reason"]
    assert report["verification"]["ok"] and report["indexes"]["ok"]
    assert report["indexes"]["pending"] == EXTRA_MEMORIES + 6

    target.manage("reindex_memories")
    state = json.loads(target.manage("verify_indexes", "--json").stdout)["before"]
    assert state["ok"] and state["pending"] == 0 and state["vectors"] == EXTRA_MEMORIES + 6
    assert recall(target, source.owners["alice"], "do I like cats")[:1] == ["I hate cats"]


def test_a_target_that_is_not_empty_is_refused(source, tmp_path_factory, blank):
    target = target_for(source, tmp_path_factory, blank, "busy-target")
    target.manage("create_api_key", "--name", "already-here")
    result = target.manage("import_instance", str(source.export), check=False)
    assert result.returncode == 1
    assert "this database is not empty: memory.apikey (1)" in result.stderr


def test_memories_sealed_at_rest_stay_sealed_and_open_on_the_target_with_the_same_keys(
    tmp_path_factory, blank
):
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    source = seeded(tmp_path_factory, blank, "sealed", MEMORY_ENCRYPTION_KEY=key)
    clear = "SELECT count(*) FROM memories WHERE content LIKE '%cats%' OR content LIKE '%Leeds%'"
    count_clear = (
        "from django.db import connection\n"
        f"with connection.cursor() as c: c.execute({clear!r}); print(c.fetchone()[0])"
    )
    assert source.site.python(count_clear) == 0
    read_alice = (
        "import json, uuid; from memory.models import ApiKey; from memory.store import all_records\n"
        "from memory.backends.selection import manager_for\n"
        f"key = ApiKey.objects.get(pk=uuid.UUID({source.owners['alice']!r}))\n"
        "print(json.dumps(sorted(r.content for r in all_records(manager_for(key), key.pk))))"
    )
    sealed_before = source.site.python(read_alice)
    assert "I live in Leeds" in sealed_before

    target = new_site(tmp_path_factory, blank, "sealed-target", MEMORY_ENCRYPTION_KEY=key)
    refused = target.manage("import_instance", str(source.export), check=False)
    assert refused.returncode == 1
    assert "not in the keyring" in refused.stderr and "memory-keyring.json" in refused.stderr

    shutil.copy(source.site.data_dir / "memory-keyring.json", target.data_dir / "memory-keyring.json")
    report = import_report(target, source.export)
    assert report["verification"]["ok"] and report["indexes"]["ok"] and report["vectors_carried"]
    assert target.python(count_clear) == 0
    assert target.python(read_alice) == sealed_before
