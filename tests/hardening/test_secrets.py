"""Secrets at rest: provider keys and secret settings encrypted (bound to their row), the data directory
private to its user (0700, files 0600, SQLite's -wal/-shm included), old installs fixed at start."""

from __future__ import annotations

import base64
import json
import logging
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.test import override_settings

from gateway.models import UpstreamProvider
from memory.conf import get_memory_settings, update_memory_settings
from memory.crypto import SecretUnreadable, decrypt_field, encrypt_field, master_key
from memory.qdrant_conf import get_qdrant_settings, update_qdrant_settings
from omniroute.datadir import tighten
from omniroute.env import key_bytes
from tests.gateway.conftest import sdk

BASE_DIR = Path(__file__).resolve().parents[2]
PROVIDER_KEY = "sk-provider-4b1d9e0f7a2c"
EMBEDDING_KEY = "sk-embedding-88e01c4f6d"
QDRANT_KEY = "qdrant-key-5f3e2a1b9c"
KEY_A = base64.b64encode(b"A" * 32).decode()
KEY_B = bytes(range(32)).hex()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _raw_database_bytes() -> bytes:
    name = Path(connection.settings_dict["NAME"])
    return b"".join(p.read_bytes() for p in (name, name.with_name(name.name + "-wal")) if p.exists())


# --- encryption at rest -----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.sqlite_only("the SQLite database file in the data directory: its bytes and mode")
def test_the_raw_database_holds_no_provider_key_nor_secret_setting():
    provider = UpstreamProvider.objects.create(
        name="openai", base_url="https://api.openai.test/v1", api_key=PROVIDER_KEY
    )
    update_memory_settings({"customApiKey": EMBEDDING_KEY})
    update_qdrant_settings({"apiKey": QDRANT_KEY})
    connection.close()  # everything committed reaches the file (and its WAL)

    raw = _raw_database_bytes()
    for secret in (PROVIDER_KEY, EMBEDDING_KEY, QDRANT_KEY):
        assert secret.encode() not in raw
    assert raw.count(b"enc:v1:" + master_key().key_id.encode()) >= 3
    # ... while every reader gets the clear value.
    assert UpstreamProvider.objects.get(pk=provider.pk).api_key == PROVIDER_KEY
    assert get_memory_settings().customApiKey == EMBEDDING_KEY
    assert get_qdrant_settings().apiKey == QDRANT_KEY


def test_the_gateway_sends_the_decrypted_key_upstream(gateway, upstream, alice_secret):
    UpstreamProvider.objects.create(
        name="stub", base_url=upstream.base_url, api_key=PROVIDER_KEY, is_default=True
    )
    stored = UpstreamProvider.objects.values_list("api_key", flat=True).get()
    assert stored.startswith("enc:v1:") and PROVIDER_KEY not in stored

    sdk(gateway, alice_secret).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )

    assert upstream.last.headers["authorization"] == f"Bearer {PROVIDER_KEY}"


@pytest.fixture
def alice_secret(transactional_db) -> str:
    from memory.models import ApiKey

    return ApiKey.issue(name="alice")[1]


@pytest.mark.django_db(transaction=True)
def test_a_provider_key_moved_to_another_row_does_not_open():
    first = UpstreamProvider.objects.create(name="a", base_url="https://a.test/v1", api_key=PROVIDER_KEY)
    second = UpstreamProvider.objects.create(
        name="b", base_url="https://b.test/v1", api_key="sk-other-key-123"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE gateway_upstreamprovider SET api_key = (SELECT api_key FROM gateway_upstreamprovider"
            " WHERE id = %s) WHERE id = %s",
            [first.pk, second.pk],
        )

    moved = UpstreamProvider.objects.get(pk=second.pk)
    with pytest.raises(SecretUnreadable, match=f"gateway_upstreamprovider.api_key of row {second.pk}"):
        moved.api_key  # noqa: B018
    assert UpstreamProvider.objects.get(pk=first.pk).api_key == PROVIDER_KEY


@pytest.mark.django_db(transaction=True)
def test_a_secret_setting_moved_to_another_setting_reads_as_unset_and_is_logged(caplog):
    update_qdrant_settings({"apiKey": QDRANT_KEY})
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO memory_settings (key, value, updated_at) SELECT 'memory.customApiKey', value,"
            " updated_at FROM memory_settings WHERE key = 'qdrant.apiKey'"
        )

    with caplog.at_level(logging.ERROR, logger="memory.conf"):
        current = get_memory_settings()

    assert current.customApiKey is None
    assert "memory.customApiKey ignored" in caplog.text
    assert get_qdrant_settings().apiKey == QDRANT_KEY


def test_a_ciphertext_opens_only_for_its_table_row_and_field():
    stored = encrypt_field("s3cret", table="t", row_id=7, field="api_key")

    assert decrypt_field(stored, table="t", row_id=7, field="api_key") == "s3cret"
    assert encrypt_field("s3cret", table="t", row_id=7, field="api_key") != stored  # a fresh nonce
    for place in (
        {"table": "u", "row_id": 7, "field": "api_key"},
        {"table": "t", "row_id": 8, "field": "api_key"},
    ):
        with pytest.raises(SecretUnreadable, match="another row or field"):
            decrypt_field(stored, **place)
    tampered = stored[:-2] + ("A" if stored[-2] != "A" else "B") + stored[-1]
    with pytest.raises(SecretUnreadable):
        decrypt_field(tampered, table="t", row_id=7, field="api_key")


def test_a_ciphertext_of_another_key_is_refused_with_both_key_ids():
    with override_settings(MEMORY_ENCRYPTION_KEY=key_bytes("K", KEY_A)):
        stored = encrypt_field("s3cret", table="t", row_id=1, field="f")
        id_a = master_key().key_id
    with override_settings(MEMORY_ENCRYPTION_KEY=key_bytes("K", KEY_B)):
        id_b = master_key().key_id
        with pytest.raises(SecretUnreadable, match=f"key {id_a}; the configured key is {id_b}"):
            decrypt_field(stored, table="t", row_id=1, field="f")
    assert stored.startswith(f"enc:v1:{id_a}:")


def test_a_value_written_before_encryption_is_read_as_it_is():
    assert decrypt_field("sk-legacy-clear", table="t", row_id=1, field="f") == "sk-legacy-clear"


def test_the_master_key_is_hex_or_base64_of_32_bytes():
    assert key_bytes("K", KEY_A) == b"A" * 32
    assert key_bytes("K", KEY_B) == bytes(range(32))
    assert key_bytes("K", base64.urlsafe_b64encode(b"\xfb" * 32).decode()) == b"\xfb" * 32
    assert key_bytes("K", "  ") is None
    for junk in ("short", base64.b64encode(b"x" * 31).decode(), "zz" * 32):
        with pytest.raises(ImproperlyConfigured, match="K must be 32 bytes"):
            key_bytes("K", junk)


def test_without_a_configured_key_one_is_generated_once_into_the_data_dir(tmp_path):
    with override_settings(DATA_DIR=tmp_path, MEMORY_ENCRYPTION_KEY=None):
        stored = encrypt_field("s3cret", table="t", row_id=1, field="f")
        key_file = tmp_path / "encryption.key"
        assert _mode(key_file) == 0o600
        assert len(base64.b64decode(key_file.read_text().strip())) == 32
        assert decrypt_field(stored, table="t", row_id=1, field="f") == "s3cret"
        assert master_key().key_id == encrypt_field("x", table="t", row_id=1, field="f").split(":")[2]


@pytest.mark.django_db
def test_writes_that_would_store_a_key_in_clear_are_refused():
    # (each in a savepoint: the refusal aborts the surrounding transaction)
    with pytest.raises(ValueError, match="save\\(\\) each row"), transaction.atomic():
        UpstreamProvider.objects.bulk_create(
            [UpstreamProvider(name="x", base_url="https://x.test", api_key="k")]
        )
    provider = UpstreamProvider.objects.create(name="y", base_url="https://y.test", api_key="sk-kept-1")
    with pytest.raises(ValueError, match="stored encrypted"), transaction.atomic():
        UpstreamProvider.objects.filter(pk=provider.pk).update(api_key="sk-clear")
    assert UpstreamProvider.objects.get(pk=provider.pk).api_key == "sk-kept-1"


@pytest.mark.django_db
def test_secrets_are_still_masked_on_read(admin_api):
    update_memory_settings({"customApiKey": EMBEDDING_KEY})
    update_qdrant_settings({"apiKey": QDRANT_KEY})

    memory = admin_api.get("/api/settings/memory").content.decode()
    qdrant = admin_api.get("/api/settings/qdrant").content.decode()

    assert EMBEDDING_KEY not in memory and "enc:v1" not in memory and EMBEDDING_KEY[-4:] in memory
    assert QDRANT_KEY not in qdrant and "enc:v1" not in qdrant and json.loads(qdrant)["hasApiKey"] is True


# --- an install on disk, driven through manage.py -----------------------------------------------------


def _manage(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``manage.py`` for an install in ``data_dir``, started with the usual umask 022 (the service
    must make its files private by itself)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "omniroute.settings",
        "OMNIROUTE_DATA_DIR": str(data_dir),
        "MEMORY_MODELS_DIR": str(data_dir / "models"),
        "OMNIROUTE_LOG_LEVEL": "INFO",
    }
    for name in ("OMNIROUTE_DB_PATH", "OMNIROUTE_TEST_DB_PATH", "REDIS_URL", "MEMORY_ENCRYPTION_KEY"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        preexec_fn=lambda: os.umask(0o022),
    )


# Run inside the instance: a write with the connection still open, so SQLite's -wal and -shm exist.
_MODES_WHILE_OPEN = """
import json, os, stat
from django.conf import settings
from django.db import connection, transaction
from gateway.models import UpstreamProvider
UpstreamProvider.objects.create(name="p", base_url="https://p.test/v1", api_key="sk-open-1")
with connection.cursor() as cursor:
    cursor.execute("PRAGMA journal_mode")
    journal = cursor.fetchone()[0]
root = settings.DATA_DIR
print(json.dumps({"journal": journal, "umask": os.umask(0o077), "modes": {
    str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")]}}))
"""


@pytest.fixture(scope="module")
def install(tmp_path_factory) -> Path:
    data_dir = tmp_path_factory.mktemp("install")
    _manage(data_dir, "migrate", "--noinput")
    return data_dir


@pytest.mark.sqlite_only("the SQLite database file in the data directory: its bytes and mode")
def test_a_fresh_install_is_private_to_its_user(install):
    report = json.loads(
        _manage(install, "shell", "--no-imports", "-c", _MODES_WHILE_OPEN).stdout.splitlines()[-1]
    )
    modes = report["modes"]

    assert report["journal"] == "wal" and report["umask"] == 0o077
    assert modes["."] == 0o700
    for name in (
        "omniroute.sqlite3-wal",
        "omniroute.sqlite3-shm",
        "huey.sqlite3",
        "secret_key",
        "encryption.key",
    ):
        assert name in modes
    assert {name: mode for name, mode in modes.items() if mode not in (0o600, 0o700)} == {}


@pytest.mark.sqlite_only("the SQLite database file in the data directory: its bytes and mode")
def test_an_old_install_is_tightened_at_start_with_a_log_line(install):
    install.chmod(0o755)
    for name in ("omniroute.sqlite3", "huey.sqlite3"):
        (install / name).chmod(0o644)
    (install / "staticfiles").chmod(0o755)

    result = _manage(install, "bootstrap")

    assert "Data directory permissions tightened on 4 path(s)" in result.stderr
    assert "omniroute.sqlite3 0644→0600" in result.stderr
    assert (_mode(install), _mode(install / "omniroute.sqlite3"), _mode(install / "huey.sqlite3")) == (
        0o700,
        0o600,
        0o600,
    )
    assert _mode(install / "staticfiles") == 0o700
    assert tighten(install) == []  # nothing left to fix


# Run inside an install migrated to the end: back to gateway 0001, clear secrets written as an older
# release wrote them, read (legacy values work), migrated forward, read again.
_MIGRATE_LEGACY = """
import json
from django.core.management import call_command
from django.db import connection
from gateway.models import UpstreamProvider
from memory.conf import get_memory_settings
from memory.qdrant_conf import get_qdrant_settings
call_command("migrate", "gateway", "0001", verbosity=0)
with connection.cursor() as cursor:
    cursor.execute(
        "INSERT INTO gateway_upstreamprovider (name, base_url, api_key, model_prefix, strip_prefix, model_ids,"
        " is_default, system_role, timeout_seconds, enabled, created_at, updated_at) VALUES ('legacy',"
        " 'https://l.test/v1', %s, '', 0, '', 1, 'auto', 5, 1, '2026-01-01', '2026-01-01')", [PROVIDER_KEY])
    cursor.executemany("INSERT INTO memory_settings (key, value, updated_at) VALUES (%s, %s, '2026-01-01')",
        [("memory.customApiKey", json.dumps(EMBEDDING_KEY)), ("qdrant.apiKey", json.dumps(QDRANT_KEY))])
read = lambda: [UpstreamProvider.objects.get(name='legacy').api_key, get_memory_settings().customApiKey, get_qdrant_settings().apiKey]
before = read()
call_command("migrate", verbosity=0)
print(json.dumps({"before": before, "after": read()}))
connection.close()
"""


@pytest.mark.sqlite_only("the SQLite database file in the data directory: its bytes and mode")
def test_the_migration_encrypts_clear_secrets_and_leaves_no_clear_bytes(install, tmp_path):
    tmp_path = Path(shutil.copytree(install, tmp_path / "copy"))  # a migrated install of its own
    script = _MIGRATE_LEGACY.replace("PROVIDER_KEY", repr(PROVIDER_KEY))
    script = script.replace("EMBEDDING_KEY", repr(EMBEDDING_KEY)).replace("QDRANT_KEY", repr(QDRANT_KEY))

    report = json.loads(_manage(tmp_path, "shell", "--no-imports", "-c", script).stdout.splitlines()[-1])

    assert report["before"] == report["after"] == [PROVIDER_KEY, EMBEDDING_KEY, QDRANT_KEY]
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("omniroute.sqlite3*"))
    for secret in (PROVIDER_KEY, EMBEDDING_KEY, QDRANT_KEY):
        assert secret.encode() not in raw
    db = tmp_path / "omniroute.sqlite3"
    with sqlite3.connect(db) as conn:
        stored = [
            row[0]
            for row in conn.execute("SELECT api_key FROM gateway_upstreamprovider WHERE name = 'legacy'")
        ]
        stored += [
            json.loads(row[0])
            for row in conn.execute("SELECT value FROM memory_settings WHERE key LIKE '%apiKey'")
        ]
    conn.close()
    assert len(stored) == 3 and all(value.startswith("enc:v1:") for value in stored)
    # The migration reverses to the clear values.
    _manage(tmp_path, "migrate", "gateway", "0001")
    with sqlite3.connect(db) as conn:
        query = "SELECT api_key FROM gateway_upstreamprovider WHERE name = 'legacy'"
        assert conn.execute(query).fetchone()[0] == PROVIDER_KEY
    conn.close()
