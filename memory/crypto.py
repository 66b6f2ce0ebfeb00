"""Encryption at rest of the secrets the service must use in clear (provider API keys): AES-256-GCM.

A stored secret reads ``enc:v1:<key id>:<base64url(nonce ‖ ciphertext ‖ tag)>``. The associated data
binds it to its place: the version, the key id, and the row's table, id and field. A ciphertext copied
into another row, another field or another table fails to decrypt (:class:`SecretUnreadable`) instead
of handing that row the other row's secret.

The master key (32 bytes) is ``MEMORY_ENCRYPTION_KEY`` (or the file named by
``MEMORY_ENCRYPTION_KEY_FILE``), base64 or hex. Without one, a key is generated at first use into
``<data dir>/encryption.key`` (mode 0600): encryption is on by default, and the key lives beside the
database but in its own file, so a backup of the database alone holds no readable secret. The key id
(an HMAC of the key) is stored in each ciphertext so that key rotation can tell old ciphertexts from
new ones. During a rotation ``MEMORY_ENCRYPTION_KEY_PREVIOUS`` (or ``…_FILE``) names the old key: it
still opens what it wrote, and ``manage.py rotate_encryption_key`` rewrites that under the current
key (``memory.services.encryption.rotate_master_key``). A ciphertext of a key that is neither is
refused with the ids named.

The same master key wraps the per-owner data keys of the encrypted memories
(``memory.backends.encrypted``, ``memory.services.encryption``).

Values written before encryption existed (no ``enc:v1:`` prefix) are read as they are:
``gateway/migrations/0002`` encrypts them, and every later write stores ciphertext.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import os
import secrets
import threading
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.models.query_utils import DeferredAttribute
from django.db.models.signals import post_save, pre_save

logger = logging.getLogger("memory.crypto")

PREFIX = "enc:v1:"
NONCE_BYTES = 12
LOCAL_KEY_NAME = "encryption.key"
# The metadata field of a memory sealed by ``memory.backends.encrypted``: its ciphertext. Here, not in
# that module, because the native indexing (``memory.services.indexing``) must recognise sealed rows
# and cannot import the backends (they import it).
SEALED_METADATA_FIELD = "_sealed"


class SecretUnreadable(Exception):
    """A stored secret that the configured key cannot open: another key's, moved, or altered."""


@dataclass(frozen=True)
class MasterKey:
    """The 32-byte key every secret is encrypted with, and its public id."""

    key: bytes

    @cached_property
    def key_id(self) -> str:
        # An HMAC, not a hash of the key: the id is public (stored in every ciphertext).
        return hmac.new(self.key, b"omniroute-memory key id", hashlib.sha256).hexdigest()[:16]

    @cached_property
    def aead(self) -> AESGCM:
        return AESGCM(self.key)


_local_keys: dict[Path, MasterKey] = {}
_local_lock = threading.Lock()


def local_key_path() -> Path:
    """Where the generated key lives when none is configured."""
    return Path(settings.DATA_DIR) / LOCAL_KEY_NAME


def master_key() -> MasterKey:
    """The configured key, or the data directory's generated one (created on first use)."""
    configured: bytes | None = settings.MEMORY_ENCRYPTION_KEY
    if configured is not None:
        return MasterKey(configured)
    path = local_key_path()
    with _local_lock:
        if path not in _local_keys:
            _local_keys[path] = MasterKey(_read_or_create_local_key(path))
        return _local_keys[path]


def previous_master_key() -> MasterKey | None:
    """The key being rotated away from (``MEMORY_ENCRYPTION_KEY_PREVIOUS``), or None: it only opens."""
    previous: bytes | None = getattr(settings, "MEMORY_ENCRYPTION_KEY_PREVIOUS", None)
    return None if previous is None else MasterKey(previous)


def master_keys() -> list[MasterKey]:
    """Every key that may open a ciphertext: the current one first, then the previous one."""
    keys = [master_key()]
    previous = previous_master_key()
    if previous is not None and previous.key_id != keys[0].key_id:
        keys.append(previous)
    return keys


def master_key_by_id(key_id: str) -> MasterKey | None:
    """The configured key (current or previous) whose id is ``key_id``, or None."""
    return next((key for key in master_keys() if key.key_id == key_id), None)


def _read_or_create_local_key(path: Path) -> bytes:
    if not path.exists():
        # Written aside and linked into place: two processes starting together both end up reading
        # the one key that won the link, never a half-written file.
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, base64.b64encode(secrets.token_bytes(32)) + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
            logger.warning("Created the encryption key %s: back it up apart from the database.", path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    try:
        key = base64.b64decode(path.read_text().strip(), validate=True)
    except (OSError, binascii.Error) as exc:
        raise ImproperlyConfigured(f"the encryption key file {path} cannot be read: {exc}") from exc
    if len(key) != 32:
        raise ImproperlyConfigured(f"the encryption key file {path} does not hold a 32-byte key (base64)")
    return key


def is_encrypted(value: object) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def key_id_of(stored: str) -> str:
    """The id of the master key that wrote ``stored`` (an ``enc:v1:`` value)."""
    return stored.removeprefix(PREFIX).partition(":")[0]


def _associated_data(key_id: str, table: str, row_id: object, field: str) -> bytes:
    return "\x1f".join((PREFIX, key_id, table, str(row_id), field)).encode()


def encrypt_field(value: str, *, table: str, row_id: object, field: str) -> str:
    """``value`` encrypted for the field ``field`` of row ``row_id`` in ``table`` (a fresh nonce each
    call, so the same secret never gives the same text twice)."""
    key = master_key()
    nonce = secrets.token_bytes(NONCE_BYTES)
    sealed = key.aead.encrypt(nonce, value.encode(), _associated_data(key.key_id, table, row_id, field))
    return f"{PREFIX}{key.key_id}:{base64.urlsafe_b64encode(nonce + sealed).decode()}"


def decrypt_field(stored: str, *, table: str, row_id: object, field: str) -> str:
    """The clear value of what :func:`encrypt_field` returned for the same table, row and field.

    A value without the ``enc:v1:`` prefix was written before encryption and is returned unchanged.
    Raises :class:`SecretUnreadable` for another key's ciphertext, one of another row or field, or
    one that was altered."""
    if not is_encrypted(stored):
        return stored
    key_id, _, payload = stored.removeprefix(PREFIX).partition(":")
    key = master_key_by_id(key_id)
    where = f"{table}.{field} of row {row_id}"
    if key is None:
        configured = " and ".join(k.key_id for k in master_keys())
        raise SecretUnreadable(
            f"The secret in {where} was encrypted with key {key_id}; the configured key is {configured}. "
            "Configure the key it was written with (MEMORY_ENCRYPTION_KEY, MEMORY_ENCRYPTION_KEY_FILE "
            "or the data directory's encryption.key; during a rotation, MEMORY_ENCRYPTION_KEY_PREVIOUS)."
        )
    try:
        raw = base64.urlsafe_b64decode(payload.encode())
        if len(raw) <= NONCE_BYTES:
            raise ValueError("too short")
        clear = key.aead.decrypt(
            raw[:NONCE_BYTES], raw[NONCE_BYTES:], _associated_data(key_id, table, row_id, field)
        )
    except (InvalidTag, ValueError, binascii.Error) as exc:
        raise SecretUnreadable(
            f"The secret in {where} does not open: it was written for another row or field, or altered."
        ) from exc
    return clear.decode()


class _DecryptingAttribute(DeferredAttribute):
    """Opens the stored ciphertext on first access, with the row's id (unknown to ``from_db_value``).

    A data descriptor (it has ``__set__``): Django's plain ``DeferredAttribute`` is bypassed once the
    value is in the instance's ``__dict__``, and this one must see every read."""

    field: EncryptedTextField

    def __set__(self, instance: Any, value: Any) -> None:
        instance.__dict__[self.field.attname] = value

    def __get__(self, instance: Any, cls: Any = None) -> Any:
        if instance is None:
            return self
        value = super().__get__(instance, cls)
        if is_encrypted(value):
            value = decrypt_field(value, **self.field.binding(instance.pk))
            instance.__dict__[self.field.attname] = value
        return value


class EncryptedTextField(models.TextField):
    """A text column stored encrypted by :func:`encrypt_field`, bound to its row; the attribute holds
    the clear value.

    Writes go through ``Model.save()``: the ciphertext names the row's id, so an insert without an id
    stores an empty value first and the ciphertext right after (in ``post_save``; in one transaction
    when the save is atomic, as ``UpstreamProvider.save`` is). ``bulk_create`` of a row without an id and ``QuerySet.update(field="clear")`` are
    refused (``ValueError``) rather than writing the secret in clear. Filtering on the field is
    meaningless (every write has a new nonce).

    Serialisation (``dumpdata``, ``django.core.serializers``) writes the ciphertext, never the clear
    value: a dump is as safe to keep as the database. A raw save (``loaddata``) stores a ciphertext
    as it is (it opens again because the dump keeps the row's id) and encrypts a clear value.
    """

    descriptor_class = _DecryptingAttribute
    _saving = "_encrypted_fields_saving"

    def binding(self, row_id: object) -> dict[str, Any]:
        return {"table": self.model._meta.db_table, "row_id": row_id, "field": self.column}

    def contribute_to_class(self, cls: type[models.Model], name: str, private_only: bool = False) -> None:
        super().contribute_to_class(cls, name, private_only=private_only)
        if not cls._meta.abstract:
            uid = f"encrypted-field-{cls._meta.label}-{name}-{id(cls)}"
            pre_save.connect(self._mark_saving, sender=cls, weak=False, dispatch_uid=uid)
            post_save.connect(self._seal_inserted, sender=cls, weak=False, dispatch_uid=uid)

    def _mark_saving(
        self, sender: type[models.Model], instance: models.Model, raw: bool = False, **kwargs: Any
    ) -> None:
        instance.__dict__[self._saving] = True
        stored = instance.__dict__.get(self.attname)
        if raw and stored:
            # A raw save writes getattr(), which the descriptor would open into clear text: the
            # column is written empty here and the sealed value right after, in post_save.
            instance.__dict__[f"_pending_{self.attname}"] = stored
            instance.__dict__[self.attname] = ""

    def _seal_inserted(
        self, sender: type[models.Model], instance: models.Model, raw: bool = False, **kwargs: Any
    ) -> None:
        instance.__dict__.pop(self._saving, None)
        pending = instance.__dict__.pop(f"_pending_{self.attname}", None)
        if pending:
            if raw and is_encrypted(pending):
                sealed = pending
            else:
                sealed = encrypt_field(pending, **self.binding(instance.pk))
            sender._base_manager.using(kwargs.get("using")).filter(pk=instance.pk).update(
                **{self.attname: sealed}
            )
            if raw:
                instance.__dict__[self.attname] = sealed

    def _held(self, obj: models.Model) -> Any:
        """What the instance holds, without opening it: the stored ciphertext until the attribute is
        first read, the clear value after that (or after an assignment)."""
        if self.attname not in obj.__dict__:
            obj.refresh_from_db(fields=[self.attname])
        return obj.__dict__.get(self.attname)

    def value_from_object(self, obj: models.Model) -> Any:
        """The clear value; for a secret the configured key cannot open, its stored text.

        Serialisers and ``model_to_dict`` call this for every row. It leaves the instance holding the
        ciphertext (so :meth:`value_to_string` can write it as stored), and one unreadable secret must
        not abort a whole dump, which then carries that ciphertext unchanged."""
        held = self._held(obj)
        if not is_encrypted(held):
            return held
        try:
            return decrypt_field(held, **self.binding(obj.pk))
        except SecretUnreadable:
            return held

    def value_to_string(self, obj: models.Model) -> str:
        """The stored ciphertext (what ``dumpdata`` writes): as read from the database, or sealed again
        (with a fresh nonce, for the same row) when the instance holds the clear value."""
        stored = self._held(obj) or ""
        if not stored or is_encrypted(stored):
            return stored
        if obj.pk is None:
            raise ValueError(
                f"{self.model.__name__}.{self.name} is encrypted with the row's id: save the row first"
            )
        return encrypt_field(stored, **self.binding(obj.pk))

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        clear = getattr(model_instance, self.attname)
        if not clear:
            return clear
        if model_instance.pk is None:
            if not model_instance.__dict__.get(self._saving):
                raise ValueError(
                    f"{self.model.__name__}.{self.name} is encrypted with the row's id: save() each row "
                    "(bulk_create cannot encrypt rows that have no id yet)."
                )
            model_instance.__dict__[f"_pending_{self.attname}"] = clear
            return ""
        return encrypt_field(clear, **self.binding(model_instance.pk))

    def get_db_prep_save(self, value: Any, connection: Any) -> Any:
        if value and not is_encrypted(value):
            raise ValueError(
                f"{self.model.__name__}.{self.name} is stored encrypted: set it on the instance and save()"
            )
        return super().get_db_prep_save(value, connection)
