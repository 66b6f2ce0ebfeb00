"""Encryption at rest for any memory backend: a decorator that seals what it stores in the backend it wraps.

:class:`EncryptedBackend` implements the contract of :mod:`memory.backends.base` over another backend
(native, in-memory, Redis, …) and passes the same conformance suite. What the wrapped backend receives:

* ``content``: a **blind index**, not the text. Every word of the content and of the key (the words of
  :func:`memory.retrieval.relevance.words`, stop-words dropped, in order, repeats kept) becomes a
  keyed HMAC-SHA256 of the word, written as 14 letters of a 16-consonant alphabet and separated by
  spaces. :meth:`EncryptedBackend.search` blinds the query's terms the same way and asks the wrapped
  backend, so its own keyword ranking (FTS5 bm25 for native, BM25 for the others) still ranks: equal
  words give equal tokens, and term frequencies and lengths are kept. The alphabet has no vowel, no
  ``y`` and no ``s``, so the Porter stemmer of the native FTS5 table leaves every token as it is
  (no rule of Porter's algorithm applies to a word without a vowel that does not end in ``s``).
* ``key``: a keyed HMAC of the key (64 hex digits), so the upsert on ``(owner, key)`` and the key
  conflicts of ``update`` still work; ``session_id``: a keyed HMAC as well (32 hex digits; blank stays
  blank), so session filters still work.
* ``metadata``: the reserved field ``_sealed`` holds an AES-256-GCM ciphertext of the content, the key
  and the session; each of the caller's metadata fields is a field ``_sealed:<HMAC of its name>``
  holding a ciphertext of its name and value. One ciphertext per field is what lets the wrapped
  backend merge metadata shallowly on an upsert, as the contract says, without reading it. Callers may
  not write metadata fields whose name starts with ``_sealed`` (``BackendInputError``).
* ``type``, timestamps, expiry, importance and the **vectors** stay clear: filters and ordering need
  them, and a vector index needs vectors (as in the Orkeon seed). A vector reveals something of the
  text it was made from; see docs/backends.md.

Every ciphertext is ``v1:<data key id>:<base64url(nonce ‖ ciphertext ‖ tag)>``: the id of the owner's data
key is stored with every record, so a rotation can find what a key wrote. The associated data binds
it to its owner and its record: the record's id, or for a keyed record its (blinded) key, because on an
upsert the wrapped backend decides which record a keyed draft lands in. A ciphertext copied to another
record, owner or field does not open (:class:`SealedRecordUnreadable`).

The data keys come from a :class:`Keyring` (``memory.services.encryption.FileKeyring``): one random
32-byte key per owner, from which HKDF derives the AES key and the HMAC key. A record whose data key
was shredded reads as gone; one whose key is missing for another reason is an error (a 503).

Records without ``_sealed`` (written before encryption was switched on) are returned as they are. They
are not found by keyword search or session filters until ``manage.py encrypt_memories`` seals them.

The decorator cannot embed: :meth:`EncryptedBackend.store_with_embedding` passes the caller's vector
through and :meth:`EncryptedBackend.search_similar` passes the query vector through. It has no hybrid
search: the wrapped backend's would embed the blind tokens.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import dataclasses
import hashlib
import hmac
import json
import secrets
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from memory.backends.base import (
    NO_FILTERS,
    BackendInputError,
    BackendUnavailable,
    BackendUnsupported,
    Capabilities,
    Filters,
    Health,
    MemoryBackend,
    MemoryDraft,
    MemoryHit,
    MemoryRecord,
    Page,
    check_changes,
    check_draft,
    check_page,
)
from memory.crypto import SEALED_METADATA_FIELD
from memory.exceptions import Conflict
from memory.retrieval.relevance import STOP_WORDS, query_terms, words

SEALED = SEALED_METADATA_FIELD
FIELD_PREFIX = f"{SEALED}:"
VERSION = "v1"
NONCE_BYTES = 12
# Sixteen consonants: 4 bits a letter. Porter's rules all need a vowel (a, e, i, o, u, or y after a
# consonant) in the word, except the one removing a final "s"; none of these letters is one of those.
ALPHABET = "bcdfghjklmnpqrtv"
WORD_TOKEN_BYTES = 7  # 14 letters, 56 bits: a collision is a false keyword match, not a lost record
KEY_TOKEN_BYTES = 32  # a key collision would upsert over another record: the whole HMAC
SESSION_TOKEN_BYTES = 16
FIELD_TOKEN_BYTES = 8


# -- errors


class DataKeyUnavailable(BackendUnavailable):
    """An owner's data key cannot be used: missing from the keyring, wrapped by a master key that is
    not configured, or the keyring file unreadable. Nothing was read or written."""


class DataKeyShredded(DataKeyUnavailable):
    """The data key was deleted on purpose (crypto-shredding): what it sealed is gone for good."""


class SealedRecordUnreadable(BackendUnavailable):
    """A sealed record that its data key does not open: altered, or copied from another record."""


# -- keys


@dataclass(frozen=True)
class DataKey:
    """One owner's data key: 32 random bytes and their public id. The AES-256-GCM key and the blind
    index's HMAC key are derived from it (HKDF-SHA256), so neither is the other."""

    id: str
    key: bytes = dataclasses.field(repr=False)

    def _derive(self, purpose: bytes) -> bytes:
        return HKDF(
            algorithm=hashes.SHA256(), length=32, salt=None, info=b"omniroute-memory " + purpose
        ).derive(self.key)

    @cached_property
    def aead(self) -> AESGCM:
        return AESGCM(self._derive(b"aead v1"))

    @cached_property
    def index_key(self) -> bytes:
        return self._derive(b"blind index v1")

    def seal(self, plaintext: bytes, associated: bytes) -> str:
        nonce = secrets.token_bytes(NONCE_BYTES)
        sealed = self.aead.encrypt(nonce, plaintext, associated)
        return f"{VERSION}:{self.id}:{base64.urlsafe_b64encode(nonce + sealed).decode()}"

    def open(self, stored: str, associated: bytes) -> bytes:
        """Raises ``InvalidTag`` or ``ValueError`` when ``stored`` does not open with ``associated``."""
        version, key_id, payload = stored.split(":", 2)
        if version != VERSION or key_id != self.id:
            raise ValueError(f"a {version} ciphertext of data key {key_id}")
        raw = base64.urlsafe_b64decode(payload.encode())
        if len(raw) <= NONCE_BYTES:
            raise ValueError("too short")
        return self.aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], associated)

    def _mac(self, domain: bytes, text: str) -> bytes:
        return hmac.new(self.index_key, domain + b"\x1f" + text.encode(), hashlib.sha256).digest()

    def word(self, word: str) -> str:
        """The blind token of one normalised word."""
        digest = self._mac(b"word", word)[:WORD_TOKEN_BYTES]
        return "".join(ALPHABET[b >> 4] + ALPHABET[b & 15] for b in digest)

    def key_token(self, key: str) -> str:
        return self._mac(b"key", key)[:KEY_TOKEN_BYTES].hex()

    def session_token(self, session_id: str) -> str:
        return self._mac(b"session", session_id)[:SESSION_TOKEN_BYTES].hex() if session_id else ""

    def field_token(self, name: str) -> str:
        return self._mac(b"field", name)[:FIELD_TOKEN_BYTES].hex()

    def filler(self) -> str:
        """The blind content of a text without searchable words (a backend refuses a blank content);
        no query word gives this token."""
        digest = self._mac(b"empty", "")[:WORD_TOKEN_BYTES]
        return "".join(ALPHABET[b >> 4] + ALPHABET[b & 15] for b in digest)


class Keyring(Protocol):
    """Where the owners' data keys live (``memory.services.encryption.FileKeyring``)."""

    def data_key(self, owner: uuid.UUID, *, create: bool) -> DataKey | None:
        """The owner's current data key; created when missing and ``create``, else None. Raises
        :class:`DataKeyUnavailable` when the keyring cannot be read or the key unwrapped."""
        ...

    def data_key_by_id(self, owner: uuid.UUID, key_id: str) -> DataKey:
        """The owner's data key ``key_id``. Raises :class:`DataKeyShredded` for a shredded key and
        :class:`DataKeyUnavailable` for one the keyring does not hold."""
        ...

    def describe(self) -> dict[str, Any]:
        """What health reports of the keyring (JSON-safe; no key material). Raises when unreadable."""
        ...


# -- sealing


def blind_text(data_key: DataKey, content: str, key: str | None) -> str:
    """The blind index of a record: a token per searchable word of its content and key, within the
    content limit of the wrapped backend (``MEMORY_MAX_CONTENT_BYTES``)."""
    text = content if not key else f"{content} {key}"
    tokens = [data_key.word(w) for w in words(text) if w not in STOP_WORDS] or [data_key.filler()]
    limit = settings.MEMORY_MAX_CONTENT_BYTES
    width = len(tokens[0]) + 1
    if len(tokens) * width > limit:
        # A text of many short words outgrows the limit once blinded: keep each word once (it is still
        # found, with a lower term frequency), then as many words as fit.
        tokens = list(dict.fromkeys(tokens))[: max(1, limit // width)]
    return " ".join(tokens)


def _binding(owner: uuid.UUID, inner_key: str | None, record_id: uuid.UUID | None) -> bytes:
    identity = f"key:{inner_key}" if inner_key else f"id:{record_id}"
    return "\x1f".join(("omniroute-memory record v1", owner.hex, identity)).encode()


@dataclass(frozen=True)
class Sealed:
    """A record's fields as the wrapped backend stores them."""

    content: str
    key: str | None
    session_id: str
    metadata: dict[str, Any]


def check_metadata(metadata: Mapping[str, Any]) -> None:
    """Refuse the reserved field names and values that are not JSON (``BackendInputError``)."""
    for name, value in metadata.items():
        if str(name).startswith(SEALED):
            raise BackendInputError(
                f"metadata field {name!r}: names starting with {SEALED!r} are reserved for encryption",
                field="metadata",
            )
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise BackendInputError(f"metadata field {name!r} is not JSON", field="metadata") from None


def seal(
    data_key: DataKey,
    *,
    owner: uuid.UUID,
    record_id: uuid.UUID | None,
    content: str,
    key: str | None,
    session_id: str,
    metadata: Mapping[str, Any],
) -> Sealed:
    """The sealed form of a record of ``owner``. ``record_id`` binds an unkeyed record (None only
    for a keyed one, whose blinded key binds it)."""
    inner_key = data_key.key_token(key) if key else None
    if inner_key is None and record_id is None:
        raise ValueError("an unkeyed record is sealed with its id")
    binding = _binding(owner, inner_key, record_id)
    sealed: dict[str, Any] = {}
    for name, value in metadata.items():
        token = data_key.field_token(str(name))
        item = json.dumps({"n": str(name), "v": value}, separators=(",", ":")).encode()
        sealed[FIELD_PREFIX + token] = data_key.seal(item, binding + b"\x1ffield:" + token.encode())
    payload = json.dumps({"c": content, "k": key, "s": session_id}, separators=(",", ":")).encode()
    sealed[SEALED] = data_key.seal(payload, binding + b"\x1frecord")
    return Sealed(blind_text(data_key, content, key), inner_key, data_key.session_token(session_id), sealed)


def sealed_key_id(metadata: Mapping[str, Any] | None) -> str | None:
    """The id of the data key that sealed a record with this metadata, or None for a clear record."""
    stored = (metadata or {}).get(SEALED)
    if not isinstance(stored, str):
        return None
    parts = stored.split(":", 2)
    return parts[1] if len(parts) == 3 else None


def open_record(keyring: Keyring, inner: MemoryRecord) -> MemoryRecord | None:
    """The clear record of what the wrapped backend returned; None when its data key was shredded.
    A record without ``_sealed`` is returned as it is (written before encryption)."""
    key_id = sealed_key_id(inner.metadata)
    if key_id is None:
        if SEALED in inner.metadata:
            raise SealedRecordUnreadable(f"memory {inner.id}: its {SEALED} field is not a ciphertext")
        return dataclasses.replace(inner, metadata=dict(inner.metadata))
    try:
        data_key = keyring.data_key_by_id(inner.owner, key_id)
    except DataKeyShredded:
        return None
    binding = _binding(inner.owner, inner.key, inner.id)
    try:
        payload = json.loads(data_key.open(inner.metadata[SEALED], binding + b"\x1frecord"))
        metadata: dict[str, Any] = {}
        for name, value in inner.metadata.items():
            if name == SEALED:
                continue
            if not name.startswith(FIELD_PREFIX):
                metadata[name] = value  # written in clear by something else than this decorator
                continue
            token = name[len(FIELD_PREFIX) :].encode()
            item = json.loads(data_key.open(value, binding + b"\x1ffield:" + token))
            metadata[item["n"]] = item["v"]
    except (InvalidTag, ValueError, TypeError, KeyError, binascii.Error) as exc:
        raise SealedRecordUnreadable(
            f"memory {inner.id} does not open with its data key {key_id}: altered, or copied from "
            "another record"
        ) from exc
    return dataclasses.replace(
        inner, content=payload["c"], key=payload["k"], session_id=payload["s"], metadata=metadata
    )


# -- the decorator


class EncryptedBackend(MemoryBackend):
    """``inner`` with every record sealed by its owner's data key from ``keyring``.

    It keeps the wrapped backend's ``type_name`` and ``name`` (a key's provider is still "redis" or
    "native" to the manager and the status pages); ``encrypted`` tells it apart, ``inner`` is the
    wrapped backend. Capabilities: the inner's keyword, vector and filters, never hybrid.
    """

    encrypted = True

    def __init__(self, inner: MemoryBackend, keyring: Keyring) -> None:
        super().__init__(name=inner.name)
        self.inner = inner
        self.keyring = keyring
        self.type_name = inner.type_name
        own = inner.capabilities
        self.capabilities = Capabilities(
            keyword=own.keyword, vector=own.vector, hybrid=False, filters=own.filters
        )

    def __repr__(self) -> str:
        return f"<EncryptedBackend over {self.inner!r}>"

    @property
    def vector_dimension(self) -> int | None:
        return self.inner.vector_dimension

    # -- helpers

    def _open(self, inner: MemoryRecord | None) -> MemoryRecord | None:
        return None if inner is None else open_record(self.keyring, inner)

    def _open_hits(self, hits: Sequence[MemoryHit]) -> builtins.list[MemoryHit]:
        opened = [(self._open(h.record), h) for h in hits]
        return [MemoryHit(record, h.score, h.ranking) for record, h in opened if record is not None]

    def _filters(self, owner: uuid.UUID, filters: Filters) -> Filters:
        if not filters.session_id:
            return filters
        data_key = self.keyring.data_key(owner, create=False)
        if data_key is None:
            return filters  # no sealed record exists: only clear sessions can match
        return dataclasses.replace(filters, session_id=data_key.session_token(filters.session_id))

    def _seal_draft(self, draft: MemoryDraft) -> MemoryDraft:
        check_draft(draft)
        check_metadata(draft.metadata)
        data_key = self.keyring.data_key(draft.owner, create=True)
        assert data_key is not None  # create=True
        record_id = draft.id if draft.key or draft.id else uuid.uuid4()
        sealed = seal(
            data_key,
            owner=draft.owner,
            record_id=record_id,
            content=draft.content,
            key=draft.key or None,
            session_id=draft.session_id,
            metadata=draft.metadata,
        )
        return dataclasses.replace(
            draft,
            id=record_id,
            content=sealed.content,
            key=sealed.key,
            session_id=sealed.session_id,
            metadata=sealed.metadata,
        )

    def _stored(self, result: tuple[MemoryRecord, bool]) -> tuple[MemoryRecord, bool]:
        record = self._open(result[0])
        if record is None:
            raise DataKeyShredded(
                f"memory {result[0].id} was sealed by a data key shredded meanwhile", backend=self.name
            )
        return record, result[1]

    # -- writes

    def store(self, draft: MemoryDraft) -> tuple[MemoryRecord, bool]:
        return self._stored(self.inner.store(self._seal_draft(draft)))

    def store_with_embedding(
        self, draft: MemoryDraft, embedding: Sequence[float] | np.ndarray
    ) -> tuple[MemoryRecord, bool]:
        if not self.capabilities.vector:
            raise BackendUnsupported(f"the {self.type_name} backend stores no vectors", backend=self.name)
        return self._stored(self.inner.store_with_embedding(self._seal_draft(draft), embedding))

    def update(
        self,
        owner: uuid.UUID,
        memory_id: uuid.UUID,
        changes: Mapping[str, Any],
        *,
        embedding: Sequence[float] | np.ndarray | None = None,
    ) -> MemoryRecord | None:
        """The contract's update. The record is read and opened first: metadata and the key change the
        binding, so every ciphertext of the record is written again."""
        checked = check_changes(changes)
        if "metadata" in checked:
            check_metadata(checked["metadata"])
        current = self._open(self.inner.get(owner, memory_id))
        if current is None:
            return None
        inner_changes = {
            name: checked[name] for name in ("type", "expires_at", "importance") if name in checked
        }
        if {"content", "key", "metadata"} & checked.keys():
            data_key = self.keyring.data_key(owner, create=True)
            assert data_key is not None  # create=True
            content = checked.get("content", current.content)
            key = checked.get("key", current.key)
            sealed = seal(
                data_key,
                owner=owner,
                record_id=memory_id,
                content=content,
                key=key,
                session_id=current.session_id,
                metadata=checked.get("metadata", current.metadata),
            )
            # The binding follows the key, so every ciphertext is written again; the blind content
            # only when the words changed (a new content drops the record's vector).
            inner_changes["metadata"] = sealed.metadata
            if "content" in checked or "key" in checked:
                inner_changes["content"] = sealed.content
            if "key" in checked:
                inner_changes["key"] = sealed.key
        # The caller's vector (of the clear content) passes through, as in store_with_embedding.
        vector = {} if embedding is None else {"embedding": embedding}
        try:
            updated = self.inner.update(owner, memory_id, inner_changes, **vector)
        except Conflict:
            raise Conflict(
                f"another memory of this owner already uses key {checked.get('key')!r}", field="key"
            ) from None
        return self._open(updated)

    def delete(self, owner: uuid.UUID, memory_id: uuid.UUID) -> bool:
        return self.inner.delete(owner, memory_id)

    def clear(self, owner: uuid.UUID, *, type: str | None = None) -> int:
        return self.inner.clear(owner, type=type)

    # -- reads

    def get(self, owner: uuid.UUID, memory_id: uuid.UUID) -> MemoryRecord | None:
        return self._open(self.inner.get(owner, memory_id))

    def list(
        self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS, limit: int = 50, offset: int = 0
    ) -> Page:
        check_page(limit, offset)
        page = self.inner.list(owner, filters=self._filters(owner, filters), limit=limit, offset=offset)
        records = [self._open(r) for r in page.records]
        return Page([r for r in records if r is not None], page.total)

    def count(self, owner: uuid.UUID, *, filters: Filters = NO_FILTERS) -> int:
        return self.inner.count(owner, filters=self._filters(owner, filters))

    def search(
        self, owner: uuid.UUID, query: str, *, limit: int = 10, filters: Filters = NO_FILTERS
    ) -> builtins.list[MemoryHit]:
        if not self.capabilities.keyword:
            raise BackendUnsupported(f"the {self.type_name} backend has no keyword search", backend=self.name)
        check_page(limit, 0)
        terms = query_terms(query)
        if not terms:
            return []
        data_key = self.keyring.data_key(owner, create=False)
        # Without a data key the owner has no sealed record: the clear query finds its clear ones.
        blind = query if data_key is None else " ".join(data_key.word(t) for t in terms)
        hits = self.inner.search(owner, blind, limit=limit, filters=self._filters(owner, filters))
        return self._open_hits(hits)

    def search_similar(
        self,
        owner: uuid.UUID,
        vector: Sequence[float] | np.ndarray,
        *,
        limit: int = 10,
        filters: Filters = NO_FILTERS,
    ) -> builtins.list[MemoryHit]:
        if not self.capabilities.vector:
            raise BackendUnsupported(f"the {self.type_name} backend has no vector search", backend=self.name)
        hits = self.inner.search_similar(owner, vector, limit=limit, filters=self._filters(owner, filters))
        return self._open_hits(hits)

    def search_hybrid(
        self, owner: uuid.UUID, query: str, *, limit: int = 10, filters: Filters = NO_FILTERS
    ) -> builtins.list[MemoryHit]:
        raise BackendUnsupported(
            f"the encrypted {self.type_name} backend has no hybrid search: the wrapped backend would "
            "embed the blind index; embed the query and use search_similar",
            backend=self.name,
        )

    def health(self) -> Health:
        health = self.inner.health()
        started = time.perf_counter()
        try:
            keyring = self.keyring.describe()
        except Exception as exc:  # health never raises: the reason is the answer
            detail = {**health.detail, "encryption": {"cipher": "AES-256-GCM", "keyring": None}}
            latency = health.latency_ms + (time.perf_counter() - started) * 1000
            return Health(False, round(latency, 3), f"keyring: {type(exc).__name__}: {exc}", detail)
        detail = {
            **health.detail,
            "encryption": {
                "cipher": "AES-256-GCM",
                "keywordIndex": "blind (HMAC-SHA256 per word)",
                "vectors": "clear",
                "keyring": keyring,
            },
        }
        latency = health.latency_ms + (time.perf_counter() - started) * 1000
        return Health(health.ok, round(latency, 3), health.error, detail)
