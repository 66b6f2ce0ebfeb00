"""The encryption commands: ``encrypt_memories`` (sealing clear native rows in place, resumable, the file
left without their text), ``rotate_encryption_key`` (a master key rotation while serving) and
``shred_owner_key``."""

from __future__ import annotations

import io
import secrets
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from memory.backends.base import Filters, MemoryDraft
from memory.backends.encrypted import SEALED
from memory.backends.inmemory import InMemoryBackend
from memory.backends.native import NativeBackend
from memory.conf import get_memory_settings, update_memory_settings
from memory.crypto import key_id_of
from memory.models import ApiKey, Memory, MemoryProvider
from memory.services import encryption
from memory.services.indexing import vector_context

WORDS = (b"zeppelin", b"pickle", b"tangerine", b"osei")


@pytest.fixture
def encrypted_on(settings, tmp_path: Path) -> Path:
    settings.MEMORY_ENCRYPTION_KEY = secrets.token_bytes(32)
    settings.MEMORY_ENCRYPTION_KEY_PREVIOUS = None
    settings.MEMORY_KEYRING_PATH = tmp_path / "memory-keyring.json"
    return settings.MEMORY_KEYRING_PATH


def _database_bytes() -> bytes:
    database = Path(connection.settings_dict["NAME"])
    return b"".join(p.read_bytes() for p in (database, Path(f"{database}-wal")) if p.exists())


def _found(words: tuple[bytes, ...]) -> list[bytes]:
    raw = _database_bytes().lower()
    return [w for w in words if w in raw]


def _run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


# -- encrypt_memories


@pytest.mark.django_db(transaction=True)
@pytest.mark.sqlite_only("reads the SQLite database file's bytes")
def test_encrypt_memories_seals_clear_rows_in_place_and_keeps_search(encrypted_on: Path) -> None:
    carol, dave = (ApiKey.issue(name=name)[0].pk for name in ("carol", "dave"))
    clear = NativeBackend()  # written before encryption was switched on (committed, indexed from clear text)
    texts = {
        "turn1": "(2024-03-09) Tom: Did you see the zeppelin over the harbour?",
        "turn2": "(2024-03-09) Maya: Yes! And my cat Pickle hid under the bed.",
        "fruit": "Dr Osei says a tangerine a day is plenty",
    }
    before = {
        name: clear.store(
            MemoryDraft(owner=carol, content=text, key=f"note:{name}", session_id="s-1", metadata={"n": name})
        )[0]
        for name, text in texts.items()
    }
    theirs, _ = clear.store(MemoryDraft(owner=dave, content="dave's zeppelin ticket"))
    assert Memory.objects.filter(owner_id=carol).exclude(context=None).count() == 1  # a linked turn
    assert _found(WORDS) == list(WORDS)  # the check below reads the right bytes

    # One owner first (resumable: the rest stays clear), in batches of 2, a progress bar on stderr.
    out, err = _run("encrypt_memories", "--owner", str(carol), "--batch", "2")
    assert "3 memories encrypted (3 were in clear)" in out
    assert err.splitlines() == [
        "encrypting [------------------------------] 0/3",
        "encrypting [####################----------] 2/3",
        "encrypting [##############################] 3/3",
    ]
    assert Memory.objects.filter(owner_id=carol).exclude(metadata__has_key=SEALED).count() == 0
    assert Memory.objects.get(uuid=theirs.id).content == "dave's zeppelin ticket"
    out, _ = _run("encrypt_memories")
    assert "1 memories encrypted (1 were in clear)" in out
    out, _ = _run("encrypt_memories")
    assert "0 memories encrypted (0 were in clear)" in out

    assert _found(WORDS) == []  # no clear text left in the file: rows, FTS index, turn context, WAL
    backend = encryption.wrap(NativeBackend())
    for record in before.values():
        assert backend.get(carol, record.id) == record  # id, key, session, metadata, timestamps kept
    hits = backend.search(carol, "zeppelin harbour")
    assert [h.record.id for h in hits] == [before["turn1"].id, before["turn2"].id]  # turn2 via its context
    assert backend.count(carol, filters=Filters(session_id="s-1")) == 3
    # The vectors embedded from the clear text were kept.
    query = vector_context().live_source().embed([texts["fruit"]])[0]
    (hit,) = backend.search_similar(carol, query, limit=1)
    assert hit.record.id == before["fruit"].id and hit.score == pytest.approx(1.0, abs=1e-3)
    # Written through the encrypted backend now, a keyed upsert finds the sealed row.
    again, created = backend.store(MemoryDraft(owner=carol, content="Osei: two tangerines", key="note:fruit"))
    assert (again.id, created) == (before["fruit"].id, False)


def test_encrypt_memories_refuses_when_encryption_is_off_or_the_owner_is_unknown(settings, encrypted_on, db):
    with pytest.raises(CommandError, match="no API key"):
        _run("encrypt_memories", "--owner", str(uuid.uuid4()))
    with pytest.raises(CommandError, match="must be an API key id"):
        _run("encrypt_memories", "--owner", "not-a-uuid")
    settings.MEMORY_ENCRYPTION_KEY = None
    with pytest.raises(CommandError, match="memory encryption is off"):
        _run("encrypt_memories")


def test_encrypt_memories_stops_on_a_key_held_by_a_clear_and_a_sealed_row(encrypted_on, alice) -> None:
    clear, _ = NativeBackend().store(MemoryDraft(owner=alice.pk, content="likes tea", key="drink"))
    sealed, _ = encryption.wrap(NativeBackend()).store(
        MemoryDraft(owner=alice.pk, content="coffee", key="drink")
    )
    with pytest.raises(
        CommandError, match=f"memory {clear.id} .* memory {sealed.id} .* share the key 'drink'"
    ):
        _run("encrypt_memories", "--no-scrub")
    assert Memory.objects.get(uuid=clear.id).content == "likes tea"  # the batch rolled back


# -- rotate_encryption_key


def test_a_master_key_rotation_keeps_everything_readable_at_every_step(
    settings, encrypted_on: Path, db
) -> None:
    old, new = settings.MEMORY_ENCRYPTION_KEY, secrets.token_bytes(32)
    backend = encryption.wrap(InMemoryBackend())
    owners = [uuid.uuid4(), uuid.uuid4()]
    records = [
        backend.store(MemoryDraft(owner=o, content=f"memory of owner {i}"))[0] for i, o in enumerate(owners)
    ]
    provider = MemoryProvider(name="vault", type="inmemory")
    provider.config = {"dimension": 8}
    provider.save()
    update_memory_settings({"customApiKey": "sk-embedding-secret"})

    # Step 1: every process restarts with the new key and the old one as previous: all still reads.
    settings.MEMORY_ENCRYPTION_KEY, settings.MEMORY_ENCRYPTION_KEY_PREVIOUS = new, old
    assert [backend.get(o, r.id).content for o, r in zip(owners, records, strict=True)] == [
        "memory of owner 0",
        "memory of owner 1",
    ]
    with pytest.raises(CommandError, match="run without --check"):
        _run("rotate_encryption_key", "--check")
    fresh_owner = uuid.uuid4()
    backend.store(MemoryDraft(owner=fresh_owner, content="written during the rotation"))

    # Step 2: the command re-wraps the data keys and re-encrypts the secrets, while serving.
    out, _ = _run("rotate_encryption_key")
    assert "2 of 3 data keys re-wrapped and 2 secrets re-encrypted" in out
    state = encryption.keyring().describe()
    assert state["wrappedBy"] == {state["masterKey"]: 3} and state["rotationPending"] is False
    out, _ = _run("rotate_encryption_key", "--check")
    assert "3 data keys of 3 owners" in out

    # Step 3: the old key is removed; nothing needs it any more (a fresh process proves it).
    settings.MEMORY_ENCRYPTION_KEY_PREVIOUS = None
    reader = encryption.EncryptedBackend(backend.inner, encryption.FileKeyring(encrypted_on))
    assert reader.get(owners[1], records[1].id).content == "memory of owner 1"
    stored = MemoryProvider.objects.filter(pk=provider.pk).values_list("config_json", flat=True).get()
    assert key_id_of(stored) == state["masterKey"]
    assert MemoryProvider.objects.get(pk=provider.pk).config == {"dimension": 8}
    assert get_memory_settings().customApiKey == "sk-embedding-secret"
    out, _ = _run("rotate_encryption_key")
    assert "0 of 3 data keys re-wrapped and 0 secrets re-encrypted" in out


def test_a_rotation_without_the_previous_key_is_refused_and_changes_nothing(settings, encrypted_on, db):
    owner = uuid.uuid4()
    encryption.wrap(InMemoryBackend()).store(MemoryDraft(owner=owner, content="text"))
    before = encrypted_on.read_bytes()
    settings.MEMORY_ENCRYPTION_KEY = secrets.token_bytes(32)
    with pytest.raises(CommandError, match="MEMORY_ENCRYPTION_KEY_PREVIOUS"):
        _run("rotate_encryption_key")
    assert encrypted_on.read_bytes() == before


# -- shred_owner_key


def test_shred_owner_key_asks_then_deletes_the_key_and_the_rows(
    encrypted_on: Path, alice, bob, monkeypatch
) -> None:
    backend = encryption.wrap(NativeBackend())
    record, _ = backend.store(MemoryDraft(owner=alice.pk, content="alice's secret"))
    kept, _ = backend.store(MemoryDraft(owner=bob.pk, content="bob's note"))
    monkeypatch.setattr("builtins.input", lambda prompt: "no")
    with pytest.raises(CommandError, match="not confirmed"):
        _run("shred_owner_key", "--owner", str(alice.pk))
    assert backend.get(alice.pk, record.id).content == "alice's secret"
    monkeypatch.setattr("builtins.input", lambda prompt: "shred")
    out, _ = _run("shred_owner_key", "--owner", str(alice.pk))
    assert "1 memories deleted from this database" in out
    assert encryption.keyring().data_key(alice.pk, create=False) is None
    assert Memory.objects.filter(owner_id=alice.pk).count() == 0
    assert backend.get(bob.pk, kept.id).content == "bob's note"
    out, _ = _run("shred_owner_key", "--owner", str(alice.pk), "--yes")
    assert "none (this key had no data key); 0 memories deleted" in out
