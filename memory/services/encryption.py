"""Encryption at rest of the memories: when it is on, where the owners' data keys live, shredding, rotation,
and sealing the native rows written before it was switched on.

**On or off.** :func:`encryption_enabled` is true when the master key is configured explicitly:
``MEMORY_ENCRYPTION_KEY`` or ``MEMORY_ENCRYPTION_KEY_FILE`` (``omniroute/settings.py`` reads both into
``settings.MEMORY_ENCRYPTION_KEY``). The key that ``memory.crypto`` generates into the data directory for
the secret settings when none is configured does not switch it on: a key generated beside the database
would protect the memories from nothing, and switching on changes how the memories are searched.
:func:`wrap` is what builds each API key's backends: the :class:`~memory.backends.encrypted.EncryptedBackend`
over the backend when on, the backend itself when off.

**The keyring.** :class:`FileKeyring` keeps one data key per owner in a JSON file
(``MEMORY_KEYRING_PATH``, default ``<data dir>/memory-keyring.json``, mode 0600), each wrapped by the
master key (AES-256-GCM, bound to its owner and key id) with the master key's id beside it. It is a file
and not a table on purpose: a copy of the database (a backup) holds no data key, so the master key alone
cannot open it, and deleting an owner's key from the file (:func:`shred_owner`) leaves every copy of
that owner's memories sealed for good, backups included. Hence the operator's duties: back up the
keyring apart from the database (without it no memory can be read), and to shred, make sure the old
copies of the keyring (its backups) are gone too. A shredded key leaves its id behind, so the records
it sealed read as deleted rather than as a missing key.

**Rotation.** :func:`rotate_master_key` re-wraps every data key (and re-encrypts the secret settings and
provider keys of ``memory.crypto``) under the current master key, reading the old ones with
``MEMORY_ENCRYPTION_KEY_PREVIOUS``. Memories are not touched: their data keys stay the same.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import fcntl
import json
import logging
import os
import secrets
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from django.apps import apps
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q

from memory import crypto, dialect
from memory.backends.base import MemoryBackend
from memory.backends.encrypted import (
    SEALED,
    DataKey,
    DataKeyShredded,
    DataKeyUnavailable,
    EncryptedBackend,
    seal,
)
from memory.exceptions import DomainError
from memory.models import Contradiction, Memory, MemorySlot, PendingProviderWrite, Setting
from memory.services import vectorsync
from memory.services.indexing import index_by_seqs

logger = logging.getLogger("memory.encryption")

KEYRING_FORMAT = "omniroute-memory-keyring"
KEYRING_VERSION = 1
DATA_KEY_BYTES = 32


class EncryptionDisabled(DomainError):
    """An operation that needs memory encryption on (a master key configured explicitly)."""

    status = 400


class KeyShared(DomainError):
    """A clear row and a sealed row of one owner hold the same key: sealing the clear one would make
    two records with one key."""

    status = 409
    type = "conflict_error"


def encryption_enabled() -> bool:
    """Whether the memories are sealed: a master key set in ``MEMORY_ENCRYPTION_KEY`` or
    ``MEMORY_ENCRYPTION_KEY_FILE`` (never the data directory's generated key)."""
    return settings.MEMORY_ENCRYPTION_KEY is not None


# -- the keyring file


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _wrapping_data(owner: str, key_id: str) -> bytes:
    return "\x1f".join(("omniroute-memory data key v1", owner, key_id)).encode()


def _empty() -> dict[str, Any]:
    return {"format": KEYRING_FORMAT, "version": KEYRING_VERSION, "owners": {}, "shredded": {}}


class FileKeyring:
    """The owners' data keys in one JSON file, safe for several threads and processes.

    Reads take no lock: writes replace the file atomically (written aside, fsynced, renamed), and
    each read checks the file's identity (inode, mtime, size) so that a key shredded or created by
    another process is seen at once. Writes hold an exclusive ``flock`` on ``<file>.lock`` while they
    read, change and replace the file, so two processes creating an owner's first key agree on one.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._stamp: tuple[int, int, int] | None = None
        self._doc: dict[str, Any] = _empty()
        # Unwrapped keys by (owner, key id), with the wrapped text they came from.
        self._open: dict[tuple[str, str], tuple[str, DataKey]] = {}

    def __repr__(self) -> str:
        return f"<FileKeyring {self.path}>"

    # -- the file

    def _read(self) -> dict[str, Any]:
        with self._lock:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                self._stamp, self._doc = None, _empty()
                return self._doc
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
            if stamp != self._stamp:
                try:
                    doc = json.loads(self.path.read_text())
                except (OSError, ValueError) as exc:
                    raise DataKeyUnavailable(f"the keyring {self.path} cannot be read: {exc}") from exc
                if not isinstance(doc, dict) or doc.get("format") != KEYRING_FORMAT:
                    raise DataKeyUnavailable(f"{self.path} is not a memory keyring")
                doc.setdefault("owners", {})
                doc.setdefault("shredded", {})
                self._stamp, self._doc = stamp, doc
            return self._doc

    def _write(self, doc: dict[str, Any]) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, json.dumps(doc, indent=1, sort_keys=True).encode() + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)  # the rename itself must survive a crash before the database commits
        finally:
            os.close(directory)

    @contextlib.contextmanager
    def _changing(self) -> Iterator[dict[str, Any]]:
        """The file's current document, to change in place; written back when the block ends."""
        with self._lock:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            lock_path = self.path.with_name(self.path.name + ".lock")
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                doc = copy.deepcopy(self._read())
                yield doc
                self._write(doc)
                self._read()
            finally:
                os.close(fd)  # releases the flock

    # -- keys

    def _unwrap(self, owner: str, key_id: str, entry: dict[str, Any], *, cached: bool = True) -> DataKey:
        wrapped = entry.get("wrapped", "")
        held = self._open.get((owner, key_id)) if cached else None
        if held is not None and held[0] == wrapped:
            return held[1]
        master = crypto.master_key_by_id(str(entry.get("master")))
        if master is None:
            raise DataKeyUnavailable(
                f"data key {key_id} of owner {owner} is wrapped by master key {entry.get('master')}, which is "
                "not configured (MEMORY_ENCRYPTION_KEY; during a rotation, MEMORY_ENCRYPTION_KEY_PREVIOUS)"
            )
        try:
            raw = base64.urlsafe_b64decode(str(wrapped).encode())
            key = master.aead.decrypt(
                raw[: crypto.NONCE_BYTES], raw[crypto.NONCE_BYTES :], _wrapping_data(owner, key_id)
            )
        except (InvalidTag, ValueError, binascii.Error) as exc:
            raise DataKeyUnavailable(
                f"data key {key_id} of owner {owner} does not open: the keyring {self.path} was altered"
            ) from exc
        data_key = DataKey(key_id, key)
        self._open[(owner, key_id)] = (wrapped, data_key)
        return data_key

    @staticmethod
    def _wrap(master: crypto.MasterKey, owner: str, key_id: str, key: bytes) -> dict[str, Any]:
        nonce = secrets.token_bytes(crypto.NONCE_BYTES)
        sealed = master.aead.encrypt(nonce, key, _wrapping_data(owner, key_id))
        return {"master": master.key_id, "wrapped": base64.urlsafe_b64encode(nonce + sealed).decode()}

    def data_key(self, owner: uuid.UUID, *, create: bool) -> DataKey | None:
        name = str(owner)
        with self._lock:
            entry = self._read()["owners"].get(name)
            if entry is not None:
                return self._unwrap(name, entry["current"], entry["keys"][entry["current"]])
            if not create:
                return None
            with self._changing() as doc:
                entry = doc["owners"].get(name)
                if entry is None:
                    key_id = secrets.token_hex(8)
                    wrapped = self._wrap(
                        crypto.master_key(), name, key_id, secrets.token_bytes(DATA_KEY_BYTES)
                    )
                    entry = {"current": key_id, "keys": {key_id: {**wrapped, "created": _now()}}}
                    doc["owners"][name] = entry
            return self._unwrap(name, entry["current"], entry["keys"][entry["current"]])

    def data_key_by_id(self, owner: uuid.UUID, key_id: str) -> DataKey:
        name = str(owner)
        with self._lock:
            doc = self._read()
            entry = doc["owners"].get(name)
            if entry is not None and key_id in entry["keys"]:
                return self._unwrap(name, key_id, entry["keys"][key_id])
            if key_id in doc["shredded"].get(name, {}).get("keys", []):
                raise DataKeyShredded(f"data key {key_id} of owner {name} was shredded")
            raise DataKeyUnavailable(
                f"a memory of owner {name} was sealed by data key {key_id}, which is not in the keyring "
                f"{self.path}: restore the keyring that goes with this database"
            )

    def shred(self, owner: uuid.UUID) -> list[str]:
        """Delete the owner's data keys; returns their ids. Their ids stay listed as shredded."""
        name = str(owner)
        with self._lock, self._changing() as doc:
            entry = doc["owners"].pop(name, None)
            removed = sorted(entry["keys"]) if entry else []
            if removed:
                tomb = doc["shredded"].setdefault(name, {"keys": []})
                tomb["keys"] = sorted({*tomb["keys"], *removed})
                tomb["at"] = _now()
            for key_id in removed:
                self._open.pop((name, key_id), None)
        return removed

    def rewrap(self) -> dict[str, Any]:
        """Wrap every data key that another master key wrapped with the current one; returns
        ``{rewrapped, dataKeys, masterKey}``. Raises :class:`DataKeyUnavailable` (nothing changed)
        when a key's master key is not configured."""
        current = crypto.master_key()
        rewrapped = total = 0
        with self._lock, self._changing() as doc:
            for owner, entry in doc["owners"].items():
                for key_id, item in entry["keys"].items():
                    total += 1
                    if item.get("master") == current.key_id:
                        continue
                    # From the file, not this process's cache: a rotation proves the old key is there.
                    key = self._unwrap(owner, key_id, item, cached=False)
                    item.update(self._wrap(current, owner, key_id, key.key))
                    rewrapped += 1
        return {"rewrapped": rewrapped, "dataKeys": total, "masterKey": current.key_id}

    def describe(self) -> dict[str, Any]:
        doc = self._read()
        masters: dict[str, int] = {}
        for entry in doc["owners"].values():
            for item in entry["keys"].values():
                masters[str(item.get("master"))] = masters.get(str(item.get("master")), 0) + 1
        current = crypto.master_key().key_id
        return {
            "owners": len(doc["owners"]),
            "dataKeys": sum(masters.values()),
            "masterKey": current,
            "wrappedBy": masters,
            "rotationPending": any(master != current for master in masters),
        }


_keyrings: dict[Path, FileKeyring] = {}
_keyrings_lock = threading.Lock()


def keyring() -> FileKeyring:
    """The process's keyring for ``MEMORY_KEYRING_PATH`` (one object per path, so its cache is shared)."""
    path = Path(settings.MEMORY_KEYRING_PATH)
    with _keyrings_lock:
        if path not in _keyrings:
            _keyrings[path] = FileKeyring(path)
        return _keyrings[path]


# -- the business rules


def wrap(backend: MemoryBackend) -> MemoryBackend:
    """``backend`` sealed by the owners' data keys when encryption is on, else ``backend`` itself."""
    if not encryption_enabled() or isinstance(backend, EncryptedBackend):
        return backend
    return EncryptedBackend(backend, keyring())


@dataclass(frozen=True)
class Shredded:
    """What :func:`shred_owner` did: the data key ids deleted, and how many records it deleted from
    the backend it was given (None without one)."""

    key_ids: list[str]
    deleted: int | None


def shred_owner(owner: uuid.UUID, *, backend: MemoryBackend | None = None) -> Shredded:
    """Crypto-shred ``owner``: delete its data keys, so that no copy of what they sealed (the live
    database, its backups, another backend's copies) can be opened again; then, with ``backend``,
    delete the owner's records there (now unreadable; this frees their space). The vectors, which are
    stored in clear, go with the records, but not from backups."""
    key_ids = keyring().shred(owner)
    logger.warning("memory data keys of owner %s shredded: %s", owner, ", ".join(key_ids) or "none held")
    # Copies kept under the master key, not the data key: writes waiting for a replay hold memory text.
    PendingProviderWrite.objects.filter(owner=owner).delete()
    deleted = None if backend is None else backend.clear(owner)
    return Shredded(key_ids, deleted)


def rotate_master_key() -> dict[str, Any]:
    """Re-wrap every data key under the current master key and re-encrypt the secrets of
    ``memory.crypto`` (provider keys, secret settings) with it, reading what the previous key wrote
    with ``MEMORY_ENCRYPTION_KEY_PREVIOUS``. Safe to run while serving and to run again: a reader finds
    each key wrapped by one key or the other, both configured. Returns what it did."""
    result = keyring().rewrap()
    result["secrets"] = _reseal_secrets(crypto.master_key())
    logger.info("master key rotation: %s", result)
    return result


def _reseal_secrets(current: crypto.MasterKey) -> int:
    """Re-encrypt under ``current`` every ``EncryptedTextField`` value and secret setting that another
    key wrote; returns how many."""
    done = 0
    ours = f"{crypto.PREFIX}{current.key_id}:"
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if not isinstance(field, crypto.EncryptedTextField):
                continue
            rows = model._base_manager.filter(**{f"{field.attname}__startswith": crypto.PREFIX}).exclude(
                **{f"{field.attname}__startswith": ours}
            )
            for pk, stored in rows.values_list("pk", field.attname):
                clear = crypto.decrypt_field(stored, **field.binding(pk))
                sealed = crypto.encrypt_field(clear, **field.binding(pk))
                done += model._base_manager.filter(pk=pk, **{field.attname: stored}).update(
                    **{field.attname: sealed}
                )
    for key, value in Setting.objects.values_list("key", "value"):
        if (
            isinstance(value, str)
            and crypto.is_encrypted(value)
            and crypto.key_id_of(value) != current.key_id
        ):
            # The binding of memory.conf.StoredSettings: the settings table, the row's key, "value".
            binding = {"table": Setting._meta.db_table, "row_id": key, "field": "value"}
            sealed = crypto.encrypt_field(crypto.decrypt_field(value, **binding), **binding)
            done += Setting.objects.filter(key=key, value=value).update(value=sealed)
    return done


# -- sealing the native rows written in clear


def encrypt_native_rows(
    *,
    owner: uuid.UUID | None = None,
    batch: int = 256,
    progress: Callable[[int, int], None] | None = None,
    scrub: bool = True,
) -> dict[str, int]:
    """Seal in place the native rows written before encryption was on (of ``owner``, or all),
    ``batch`` rows per transaction; resumable (sealed rows are skipped), safe while serving.

    A row still waiting for its vector is embedded from its clear text first, so encryption keeps
    vector search for it; one that cannot be (no embedding source) is sealed without a vector. Rows
    keep their id, timestamps and vector; their FTS entries become the blind index (by the table's
    triggers), and the mirrors refresh their blinded session. With ``scrub``, the FTS index is then
    merged and the database vacuumed, so that neither old index segments nor freed pages keep the
    clear text in the file. Returns ``{sealed, withoutVector, total}``."""
    if not encryption_enabled():
        raise EncryptionDisabled(
            "memory encryption is off: set MEMORY_ENCRYPTION_KEY or MEMORY_ENCRYPTION_KEY_FILE first"
        )
    ring = keyring()
    clear = Memory.objects.exclude(metadata__has_key=SEALED)
    if owner is not None:
        clear = clear.filter(owner_id=owner)
    total = clear.count()
    done = without_vector = 0
    if progress is not None:
        progress(0, total)
    while True:
        seqs = list(clear.order_by("seq").values_list("seq", flat=True)[:batch])
        if not seqs:
            break
        pending = list(Memory.objects.filter(seq__in=seqs, needs_reindex=True).values_list("seq", flat=True))
        if pending:
            index_by_seqs(pending)  # while the text is still clear
        with transaction.atomic():
            rows = list(clear.filter(seq__in=seqs))
            for row in rows:
                data_key = ring.data_key(row.owner_id, create=True)
                assert data_key is not None  # create=True
                sealed = seal(
                    data_key,
                    owner=row.owner_id,
                    record_id=row.uuid,
                    content=row.content,
                    key=row.key,
                    session_id=row.session_id,
                    metadata=row.metadata or {},
                )
                twin = (
                    Memory.objects.filter(owner_id=row.owner_id, key=sealed.key).exclude(seq=row.seq).first()
                )
                if sealed.key is not None and twin is not None:
                    # Written through the encrypted backend before this row was sealed: two records, one key.
                    raise KeyShared(
                        f"memory {row.uuid} (in clear) and memory {twin.uuid} (encrypted) of API key "
                        f"{row.owner_id} share the key {row.key!r}: delete or re-key one, then run again",
                        field="key",
                    )
                Memory.objects.filter(seq=row.seq).update(
                    content=sealed.content,
                    key=sealed.key,
                    session_id=sealed.session_id,
                    metadata=sealed.metadata,
                    # What the cognitive analysis read from the clear text names it too.
                    entities=[],
                    category="",
                )
                without_vector += int(row.needs_reindex)
            seqs_done = [row.seq for row in rows]
            MemorySlot.objects.filter(memory_id__in=seqs_done).delete()
            Contradiction.objects.filter(Q(old_id__in=seqs_done) | Q(new_id__in=seqs_done)).update(
                subject="", reason=""
            )
            vectorsync.after_update([row.seq for row in rows])
        done += len(rows)
        if progress is not None:
            progress(done, total)
    if scrub and done:
        scrub_database()
    return {"sealed": done, "withoutVector": without_vector, "total": total}


def scrub_database() -> None:
    """Leave no clear text of rewritten rows in the database file: merge the FTS5 index (its old
    segments keep deleted terms until merged), vacuum (freed pages keep their bytes) and truncate the
    write-ahead log (its frames hold old pages)."""
    if dialect.is_postgres():
        _scrub_postgres()
        return
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')")
        cursor.execute("VACUUM")
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _scrub_postgres() -> None:
    """PostgreSQL keeps old row versions until a vacuum frees them: vacuum the tables that held the
    clear text (outside a transaction, as VACUUM must run). The WAL segments and the freed space
    inside pages are PostgreSQL's to recycle; docs/deployment.md says what that leaves."""
    if connection.in_atomic_block:
        logger.warning("scrub_database inside a transaction: VACUUM skipped (run it after commit)")
        return
    with connection.cursor() as cursor:
        for table in ("memories", "memory_fts", "memory_slots", "memory_contradictions"):
            cursor.execute(f"VACUUM {table}")
