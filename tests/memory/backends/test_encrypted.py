"""The encrypted backend beyond the conformance suite: what the wrapped store holds, the blind index under
FTS5's Porter tokenizer, tampering, shredding, the keyring, the native indexing rule, and the raw bytes
of the SQLite file and of a backup of it."""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
import uuid
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from memory.backends.base import BackendInputError, BackendUnsupported, Filters, MemoryDraft, MemoryRecord
from memory.backends.encrypted import (
    ALPHABET,
    FIELD_PREFIX,
    SEALED,
    DataKeyShredded,
    DataKeyUnavailable,
    EncryptedBackend,
    SealedRecordUnreadable,
    blind_text,
    open_record,
    sealed_key_id,
)
from memory.backends.inmemory import InMemoryBackend
from memory.backends.native import NativeBackend
from memory.models import ApiKey, Memory, PendingProviderWrite
from memory.services import encryption
from memory.services.indexing import flag_for_reindex, lazy_index, reindex_all, vector_context
from tests.factories import database_store, fts_match
from tests.memory.backends.conformance import unit_vectors

TOKEN = re.compile(rf"^[{ALPHABET}]{{14}}$")
# Words the tests store; none of them may appear in what the wrapped store or the database file holds.
SECRET_WORDS = ("pickle", "tangerine", "zeppelin", "osei", "chat-42", "pet:pickle")


@pytest.fixture
def encrypted_on(settings, tmp_path: Path) -> Path:
    """Encryption switched on as an operator does: an explicit master key and a keyring file."""
    settings.MEMORY_ENCRYPTION_KEY = secrets.token_bytes(32)
    settings.MEMORY_ENCRYPTION_KEY_PREVIOUS = None
    settings.MEMORY_KEYRING_PATH = tmp_path / "memory-keyring.json"
    return settings.MEMORY_KEYRING_PATH


def _pet_draft(owner: uuid.UUID, **fields: object) -> MemoryDraft:
    values: dict[str, object] = {
        "owner": owner,
        "content": "Maya adopted a tangerine cat named Pickle; Pickle hates the zeppelin noise",
        "key": "pet:pickle",
        "session_id": "chat-42",
        "metadata": {"vet": "Dr Osei", "age": 3},
    }
    values.update(fields)
    return MemoryDraft(**values)  # type: ignore[arg-type]


def _assert_no_secret_words(blob: bytes, where: str) -> None:
    lowered = blob.lower()
    found = [w for w in SECRET_WORDS if w.encode() in lowered]
    assert not found, f"{where} holds {found}"


# -- what the wrapped backend holds


def test_the_wrapped_store_holds_only_blind_tokens_and_ciphertexts(encrypted_on: Path) -> None:
    inner = InMemoryBackend()
    backend = encryption.wrap(inner)
    owner = uuid.uuid4()
    record, created = backend.store(_pet_draft(owner))
    assert created
    assert (record.content, record.key, record.session_id) == (
        "Maya adopted a tangerine cat named Pickle; Pickle hates the zeppelin noise",
        "pet:pickle",
        "chat-42",
    )
    assert record.metadata == {"vet": "Dr Osei", "age": 3}

    stored = inner.get(owner, record.id)
    assert stored is not None
    _assert_no_secret_words(json.dumps(stored.__dict__, default=str).encode(), "the wrapped record")
    tokens = stored.content.split()
    assert tokens and all(TOKEN.match(t) for t in tokens)
    # One token per searchable word (stop-words dropped, repeats kept), the key's words included: "pickle"
    # twice in the content and once in the key.
    assert len(tokens) == 12 and tokens.count(tokens[5]) == 3
    assert stored.key is not None and re.fullmatch(r"[0-9a-f]{64}", stored.key)
    assert re.fullmatch(r"[0-9a-f]{32}", stored.session_id)
    assert set(stored.metadata) == {SEALED, *(n for n in stored.metadata if n.startswith(FIELD_PREFIX))}
    assert len(stored.metadata) == 3  # the envelope and one ciphertext per metadata field
    # The data key's id is stored with the record (rotation finds what a key wrote).
    key_id = encryption.keyring().data_key(owner, create=False).id
    assert all(value.startswith(f"v1:{key_id}:") for value in stored.metadata.values())


def test_a_session_filter_and_an_upsert_by_key_work_on_the_blinded_values(encrypted_on: Path) -> None:
    backend = encryption.wrap(InMemoryBackend())
    owner = uuid.uuid4()
    first, _ = backend.store(_pet_draft(owner))
    second, created = backend.store(
        _pet_draft(owner, content="Pickle now likes the zeppelin", metadata={"b": 1})
    )
    assert (created, second.id) == (False, first.id)
    assert second.metadata == {"vet": "Dr Osei", "age": 3, "b": 1}  # merged shallowly by the inner store
    backend.store(MemoryDraft(owner=owner, content="another session", session_id="other"))
    assert [r.id for r in backend.list(owner, filters=Filters(session_id="chat-42")).records] == [first.id]
    assert backend.count(owner, filters=Filters(session_id="other")) == 1


def test_metadata_names_of_the_encryption_are_refused(encrypted_on: Path) -> None:
    backend = encryption.wrap(InMemoryBackend())
    owner = uuid.uuid4()
    for name in (SEALED, f"{FIELD_PREFIX}abc"):
        with pytest.raises(BackendInputError) as caught:
            backend.store(MemoryDraft(owner=owner, content="text", metadata={name: "x"}))
        assert caught.value.details[0]["field"] == "metadata"
    record, _ = backend.store(MemoryDraft(owner=owner, content="text"))
    with pytest.raises(BackendInputError) as caught:
        backend.update(owner, record.id, {"metadata": {SEALED: "forged"}})
    assert caught.value.details[0]["field"] == "metadata"
    assert backend.get(owner, record.id).metadata == {}


def test_it_declares_the_inner_capabilities_but_never_hybrid(encrypted_on: Path, db: None) -> None:
    native = NativeBackend()
    backend = encryption.wrap(native)
    assert native.capabilities.hybrid is True
    assert backend.capabilities.as_dict() == {
        "keyword": True,
        "vector": True,
        "hybrid": False,
        "filters": True,
    }
    with pytest.raises(BackendUnsupported):
        backend.search_hybrid(uuid.uuid4(), "python")
    assert (backend.type_name, backend.name) == ("native", "native")
    assert backend.health().detail["encryption"]["cipher"] == "AES-256-GCM"


def test_encryption_is_on_only_with_an_explicitly_configured_key(settings, tmp_path: Path) -> None:
    settings.MEMORY_ENCRYPTION_KEY = None  # the generated data-dir key protects secrets, not memories
    settings.MEMORY_KEYRING_PATH = tmp_path / "keyring.json"
    inner = InMemoryBackend()
    assert encryption.encryption_enabled() is False
    assert encryption.wrap(inner) is inner
    settings.MEMORY_ENCRYPTION_KEY = secrets.token_bytes(32)
    wrapped = encryption.wrap(inner)
    assert isinstance(wrapped, EncryptedBackend) and wrapped.inner is inner
    assert encryption.wrap(wrapped) is wrapped  # never sealed twice


# -- the blind index under FTS5's Porter tokenizer


@pytest.mark.sqlite_only("FTS5's porter tokenizer (PostgreSQL stems query and index alike)")
def test_porter_leaves_every_blind_token_as_it_is(encrypted_on: Path, db: None) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'memory_fts'")
        (ddl,) = cursor.fetchone()
    tokenizer = re.search(r"tokenize='([^']+)'", ddl).group(1)
    assert "porter" in tokenizer  # the native index stems: the property below is needed
    data_key = encryption.keyring().data_key(uuid.uuid4(), create=True)
    inflected = "running runs ran caresses ponies agreed happily relational generalization hopeful"
    text = " ".join([inflected, *(f"word{i}" for i in range(3000))])
    blind = blind_text(data_key, text, None)
    tokens = set(blind.split())
    assert len(tokens) == 3010
    db_ = sqlite3.connect(":memory:")
    db_.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{tokenizer}')")
    db_.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
    db_.execute("INSERT INTO t(x) VALUES (?), (?)", (blind, inflected))
    terms = {row[0] for row in db_.execute("SELECT term FROM v")}
    # The tokenizer does stem (the clear words lose their suffixes)...
    assert {"run", "caress", "poni"} <= terms and "running" not in terms
    # ...and every blind token comes out of it unchanged.
    assert tokens <= terms


def test_keyword_search_on_native_matches_blind_tokens_only(encrypted_on: Path, alice: ApiKey) -> None:
    backend = encryption.wrap(NativeBackend())
    record, _ = backend.store(_pet_draft(alice.pk))
    hits = backend.search(alice.pk, "Which ZEPPELIN does Pickle hate?")
    assert [h.record.id for h in hits] == [record.id]
    assert hits[0].record.content.startswith("Maya adopted")
    assert fts_match('"zeppelin"') == set()
    token = encryption.keyring().data_key(alice.pk, create=False).word("zeppelin")
    assert len(fts_match(f'"{token}"')) == 1


# -- tampering, shredding, the keyring


def test_a_ciphertext_copied_to_another_record_does_not_open(encrypted_on: Path) -> None:
    inner = InMemoryBackend()
    backend = encryption.wrap(inner)
    owner = uuid.uuid4()
    one, _ = backend.store(MemoryDraft(owner=owner, content="the first secret"))
    two, _ = backend.store(MemoryDraft(owner=owner, content="the second secret"))
    inner.update(owner, two.id, {"metadata": inner.get(owner, one.id).metadata})
    with pytest.raises(SealedRecordUnreadable) as caught:
        backend.get(owner, two.id)
    assert caught.value.status == 503
    assert backend.get(owner, one.id).content == "the first secret"
    # Another owner's ciphertext does not open either, even with the same record id.
    stolen = inner.get(owner, one.id)
    other = uuid.uuid4()
    backend.store(MemoryDraft(owner=other, content="to get a data key"))
    moved = type(stolen)(**{**stolen.__dict__, "owner": other})
    with pytest.raises(DataKeyUnavailable):
        open_record(encryption.keyring(), moved)


def test_shredding_an_owner_makes_its_records_gone_and_leaves_others(encrypted_on: Path, db: None) -> None:
    inner = InMemoryBackend()
    backend = encryption.wrap(inner)
    alice, bob = uuid.uuid4(), uuid.uuid4()
    kept, _ = backend.store(MemoryDraft(owner=bob, content="bob keeps this"))
    doomed, _ = backend.store(_pet_draft(alice))
    sealed = inner.get(alice, doomed.id)
    # A write a fallback kept for a replay holds the memory under the master key: the shred drops it.
    for owner in (alice, bob):
        PendingProviderWrite.objects.create(
            owner=owner, primary="p", fallback="f", operation="store", memory_id=uuid.uuid4(), payload="{}"
        )
    result = encryption.shred_owner(alice)  # no backend: the records stay, sealed for good
    assert list(PendingProviderWrite.objects.values_list("owner", flat=True)) == [bob]
    assert len(result.key_ids) == 1 and result.deleted is None
    assert backend.get(alice, doomed.id) is None
    assert backend.search(alice, "zeppelin") == []
    assert open_record(encryption.FileKeyring(encrypted_on), sealed) is None  # a fresh process: the same
    with pytest.raises(DataKeyShredded):
        encryption.FileKeyring(encrypted_on).data_key_by_id(alice, sealed_key_id(sealed.metadata))
    assert backend.get(bob, kept.id).content == "bob keeps this"
    # A new memory of alice gets a new data key; the shredded one stays shredded.
    fresh, _ = backend.store(MemoryDraft(owner=alice, content="a new start"))
    assert backend.get(alice, fresh.id).content == "a new start"
    assert encryption.keyring().data_key(alice, create=False).id not in result.key_ids
    with_backend = encryption.shred_owner(bob, backend=backend)
    assert with_backend.deleted == 1 and inner.count(bob) == 0


def test_a_keyring_lost_is_a_503_naming_it_never_an_empty_answer(encrypted_on: Path) -> None:
    backend = encryption.wrap(InMemoryBackend())
    owner = uuid.uuid4()
    record, _ = backend.store(MemoryDraft(owner=owner, content="needs its key"))
    encrypted_on.unlink()
    with pytest.raises(DataKeyUnavailable) as caught:
        backend.list(owner)
    assert caught.value.status == 503 and str(encrypted_on) in caught.value.message
    assert backend.health().ok is True  # an empty keyring is readable; the record is what lacks a key


def test_a_keyring_is_private_and_another_process_sees_a_shred_at_once(encrypted_on: Path) -> None:
    first = encryption.FileKeyring(encrypted_on)
    second = encryption.FileKeyring(encrypted_on)  # as another process would hold it
    owner = uuid.uuid4()
    created = first.data_key(owner, create=True)
    assert second.data_key(owner, create=False) == created
    assert encrypted_on.stat().st_mode & 0o777 == 0o600
    assert created.key.hex() not in encrypted_on.read_text()  # wrapped, never in clear
    second.shred(owner)
    assert first.data_key(owner, create=False) is None
    with pytest.raises(DataKeyShredded):
        first.data_key_by_id(owner, created.id)


def test_a_data_key_wrapped_by_an_unconfigured_master_key_is_refused(settings, encrypted_on: Path) -> None:
    owner = uuid.uuid4()
    encryption.keyring().data_key(owner, create=True)
    settings.MEMORY_ENCRYPTION_KEY = secrets.token_bytes(32)
    with pytest.raises(DataKeyUnavailable, match="MEMORY_ENCRYPTION_KEY_PREVIOUS"):
        encryption.FileKeyring(encrypted_on).data_key(owner, create=False)


# -- the native indexing never embeds a blind index


def _has_vector(seq: int) -> bool:
    return seq in database_store().seqs()


def test_the_native_indexing_never_embeds_sealed_rows(
    encrypted_on: Path, alice: ApiKey, django_capture_on_commit_callbacks
) -> None:
    backend = encryption.wrap(NativeBackend())
    dim = backend.vector_dimension
    with django_capture_on_commit_callbacks(execute=True):
        plain, _ = NativeBackend().store(MemoryDraft(owner=alice.pk, content="a clear memory of a zebra"))
    with django_capture_on_commit_callbacks(execute=True):
        bare, _ = backend.store(MemoryDraft(owner=alice.pk, content="sealed without a vector"))
    plain_row, bare_row = (Memory.objects.get(uuid=r.id) for r in (plain, bare))
    assert _has_vector(plain_row.seq)  # the per-write indexing ran
    assert not _has_vector(bare_row.seq) and bare_row.needs_reindex is False  # settled, not embedded

    vector = unit_vectors(1, dim, seed=5)[0]
    with django_capture_on_commit_callbacks(execute=True):
        given, _ = backend.store_with_embedding(
            MemoryDraft(owner=alice.pk, content="sealed with one"), vector
        )
    # A forced reindex re-embeds the clear rows and keeps the caller's vector of the sealed one.
    flag_for_reindex()
    assert Memory.objects.get(uuid=given.id).needs_reindex is False
    assert Memory.objects.get(uuid=plain.id).needs_reindex is True
    Memory.objects.filter(uuid=given.id).update(needs_reindex=True)  # flagged by something else
    lazy = lazy_index({alice.pk}, vector_context(), limit=10)
    assert lazy.indexed + lazy.left == 1  # a read embeds the clear row, never the sealed one
    assert _has_vector(Memory.objects.get(uuid=given.id).seq)
    Memory.objects.filter(uuid=given.id).update(needs_reindex=False)
    result = reindex_all()
    assert result["pending"] == 0
    (hit,) = backend.search_similar(alice.pk, vector, limit=1)
    assert (hit.record.id, hit.score) == (given.id, pytest.approx(1.0, abs=1e-4))

    # A new content without a vector: the old vector is dropped (it belonged to the old content).
    with django_capture_on_commit_callbacks(execute=True):
        backend.update(alice.pk, given.id, {"content": "a changed sealed text"})
    row = Memory.objects.get(uuid=given.id)
    assert not _has_vector(row.seq) and row.needs_reindex is False
    assert all(h.record.id != given.id for h in backend.search_similar(alice.pk, vector, limit=5))


# -- the database file and its backup


@pytest.mark.django_db(transaction=True)
@pytest.mark.sqlite_only("reads the SQLite database file's bytes")
def test_the_database_file_and_a_backup_hold_no_memory_text_and_shredding_seals_the_backup(
    encrypted_on: Path, tmp_path: Path
) -> None:
    owner = ApiKey.issue(name="carol")[0].pk
    backend = encryption.wrap(NativeBackend())
    source = vector_context().live_source()
    texts = [
        "Maya adopted a tangerine cat named Pickle",
        "The zeppelin museum opens on Sundays; ask Dr Osei for tickets",
    ]
    vectors = source.embed(texts)
    ids = [
        backend.store_with_embedding(_pet_draft(owner, content=text, key=f"pet:pickle{i}"), vector)[0].id
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
    ]
    # Keyword and semantic search still answer.
    assert [h.record.id for h in backend.search(owner, "zeppelin tickets")] == [ids[1]]
    query = source.embed(["an orange kitten was adopted"])[0]
    assert backend.search_similar(owner, query, limit=1)[0].record.id == ids[0]

    database = Path(connection.settings_dict["NAME"])
    raw = b"".join(p.read_bytes() for p in (database, Path(f"{database}-wal")) if p.exists())
    assert raw.count(b"memories") > 0  # the file that was read is the database
    _assert_no_secret_words(raw, "the database file")
    backup = tmp_path / "backup.sqlite3"
    with sqlite3.connect(database) as live, sqlite3.connect(backup) as copy:
        live.backup(copy)
    _assert_no_secret_words(backup.read_bytes(), "the backup")
    # No data key is in the backup, not even wrapped: the master key alone opens nothing there.
    for entry in json.loads(encrypted_on.read_text())["owners"].values():
        for item in entry["keys"].values():
            assert item["wrapped"].encode() not in backup.read_bytes()

    def backup_records() -> list[MemoryRecord]:
        with sqlite3.connect(backup) as copy:
            rows = copy.execute(
                "SELECT uuid, key, session_id, content, metadata FROM memories WHERE owner_id = ?",
                [owner.hex],
            ).fetchall()
        now = timezone.now()
        return [
            MemoryRecord(
                id=uuid.UUID(memory_uuid),
                owner=owner,
                content=content,
                type="factual",
                key=key,
                session_id=session_id,
                metadata=json.loads(metadata),
                created_at=now,
                updated_at=now,
                expires_at=None,
                importance=0.5,
            )
            for memory_uuid, key, session_id, content, metadata in rows
        ]

    # Before the shred, the keyring opens the backup's rows (so what follows is not vacuous)...
    opened = [open_record(encryption.keyring(), r) for r in backup_records()]
    assert sorted(r.content for r in opened if r is not None) == sorted(texts)
    result = encryption.shred_owner(owner, backend=backend)
    assert result.deleted == 2 and backend.count(owner) == 0
    # ...after it, the backup still holds the rows, and neither this process nor a fresh one opens them.
    records = backup_records()
    assert len(records) == 2
    for record in records:
        assert open_record(encryption.keyring(), record) is None  # a shredded record reads as gone
        with pytest.raises(DataKeyShredded):
            encryption.FileKeyring(encrypted_on).data_key_by_id(owner, sealed_key_id(record.metadata))
