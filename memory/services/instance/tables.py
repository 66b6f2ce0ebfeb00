"""The tables an instance move carries, in the order they are written, and one row's canonical form.

A row travels as one JSON object keyed by the fields' attribute names (``owner_id``), with values in
a form every database gives back the same way: UUIDs hyphenated, instants in UTC ISO 8601, JSON
columns as JSON, encrypted columns as their stored ciphertext (``values_list`` never opens them).
The same form is what the checksums hash, on the source when exporting and on the target when
verifying, so "the same rows" means the same text on both sides, whatever the engine.

Rows are written with one engine-neutral statement per batch (``INSERT … ON CONFLICT (pk) DO UPDATE``,
the same text on SQLite and PostgreSQL): an upsert by primary key, so a batch written twice (an
import resumed after a crash between its commit and its checkpoint) leaves the same row. The ORM's
``bulk_create`` is not used because its ``pre_save`` would rewrite what must arrive unchanged: the
``auto_now`` instants, and the ciphertexts (re-encrypted with a fresh nonce).
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from decimal import Decimal
from functools import cached_property
from typing import Any

from django.apps import apps
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection, models

from memory.conf import STAMP_PREFIX
from memory.exceptions import DomainError
from memory.models import HEALTH_PROBE_ID


class TransferError(DomainError):
    """An export or import that cannot go on: a damaged or tampered archive, a target that is not
    ready for it (not empty, another schema, missing keys), or rows that do not match."""

    status = 400


@dataclass(frozen=True)
class TableSpec:
    """One table of the move: the model (``label``, as ``app.model``), the attribute of its owner (an
    API key id: the health probe's rows are left out, they are the health check's scratch rows), and
    the fields left out of its checksum because the import may set them (derived state), and the
    rows that stay behind."""

    label: str
    owner_field: str | None = None
    unchecked: tuple[str, ...] = ()
    # Rows left out (lookups, excluded): state of this instance's processes, not of its data.
    left_out: tuple[tuple[str, Any], ...] = ()

    @property
    def file(self) -> str:
        return f"{self.label}.ndjson"

    @cached_property
    def model(self) -> type[models.Model]:
        return apps.get_model(self.label)

    @cached_property
    def fields(self) -> list[models.Field]:
        # Generated columns are computed by the database, never written.
        return [f for f in self.model._meta.concrete_fields if not getattr(f, "generated", False)]

    @cached_property
    def attnames(self) -> list[str]:
        return [f.attname for f in self.fields]

    @cached_property
    def pk_index(self) -> int:
        return self.attnames.index(self.model._meta.pk.attname)

    def queryset(self) -> models.QuerySet:
        rows = self.model._base_manager.order_by("pk")
        if self.owner_field is not None:
            rows = rows.exclude(**{self.owner_field: HEALTH_PROBE_ID})
        for lookup, value in self.left_out:
            rows = rows.exclude(**{lookup: value})
        return rows

    def count(self) -> int:
        return self.queryset().count()

    def pages(self, batch: int) -> Iterator[list[tuple[Any, ...]]]:
        """Every row as a tuple of ``attnames``, ``batch`` at a time, by primary key (keyset pages:
        memory stays bounded whatever the table's size, on every engine)."""
        rows = self.queryset().values_list(*self.attnames)
        last = None
        while True:
            page = list((rows if last is None else rows.filter(pk__gt=last))[:batch])
            if not page:
                return
            yield page
            last = page[-1][self.pk_index]


# Parents before children (foreign keys are checked at each batch's commit).
TABLES: tuple[TableSpec, ...] = (
    TableSpec("auth.group"),
    TableSpec("auth.group_permissions"),
    TableSpec("auth.user"),
    TableSpec("auth.user_groups"),
    TableSpec("auth.user_user_permissions"),
    TableSpec("admin.logentry"),
    # The cache stamps (memory.conf) say when this instance's processes last saw a settings change.
    TableSpec("memory.setting", left_out=(("key__startswith", STAMP_PREFIX),)),
    TableSpec("memory.memoryprovider"),
    TableSpec("memory.apikey", owner_field="id"),
    TableSpec("memory.providerfallback", owner_field="api_key_id"),
    TableSpec("memory.managementtoken"),
    TableSpec("memory.managementtoken_owners", owner_field="apikey_id"),
    TableSpec("memory.memory", owner_field="owner_id", unchecked=("needs_reindex",)),
    TableSpec("memory.memoryslot", owner_field="owner_id"),
    TableSpec("memory.contradiction", owner_field="owner_id"),
    TableSpec("memory.consolidationrun", owner_field="owner_id"),
    TableSpec("memory.consolidationmerge", owner_field="run__owner_id"),
    TableSpec("memory.auditevent"),
    TableSpec("memory.pendingproviderwrite", owner_field="owner"),
    TableSpec("memory.injectionentry", owner_field="api_key_id"),
    TableSpec("gateway.upstreamprovider"),
)

# Every other model of the project, and why it does not travel (tests check that the two lists
# cover every installed model, so a new model cannot be forgotten).
NOT_MOVED: dict[str, str] = {
    "auth.permission": "created by migrate on the target; rows that name one carry its natural key",
    "contenttypes.contenttype": "created by migrate on the target; rows that name one carry its natural key",
    "sessions.session": "Studio sign-ins, signed with the source's SECRET_KEY: users sign in again",
    "memory.vectormeta": "the target's own vector table; the vectors travel with their signature",
}

MEMORY_TABLE = "memory.memory"


def spec_named(label: str) -> TableSpec:
    return next(spec for spec in TABLES if spec.label == label)


# -- the canonical form


def plain(value: Any) -> Any:
    """A column's value (as the ORM returns it) in its JSON form."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat() if value.tzinfo else value.isoformat()
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes | memoryview):
        return base64.b64encode(bytes(value)).decode()
    return value


def canonical(obj: dict[str, Any]) -> str:
    """The one text of a row: what a file line holds and what its checksum hashes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class NaturalKeys:
    """Foreign keys to permissions and content types, which migrate numbers on each instance in its
    own order, travel as natural keys (``[app_label, model]``, ``[app_label, model, codename]``)."""

    def __init__(self) -> None:
        self._types: dict[int, list[str]] | None = None
        self._perms: dict[int, list[str]] | None = None

    @staticmethod
    def applies(f: models.Field) -> bool:
        return f.is_relation and f.related_model in (ContentType, Permission)

    def encode(self, f: models.Field, value: int | None) -> list[str] | None:
        if value is None:
            return None
        if self._types is None:
            self._types = {ct.pk: [ct.app_label, ct.model] for ct in ContentType.objects.all()}
            self._perms = {
                p.pk: [*self._types[p.content_type_id], p.codename] for p in Permission.objects.all()
            }
        table = self._types if f.related_model is ContentType else self._perms
        assert table is not None
        return table[value]

    def decode(self, f: models.Field, value: list[str] | None) -> int | None:
        if value is None:
            return None
        try:
            if f.related_model is ContentType:
                return ContentType.objects.get_or_create(app_label=value[0], model=value[1])[0].pk
            return Permission.objects.get_by_natural_key(value[2], value[0], value[1]).pk
        except (Permission.DoesNotExist, IndexError, TypeError):
            raise TransferError(f"the permission {value!r} does not exist on this instance") from None


def encode_row(spec: TableSpec, row: tuple[Any, ...], naturals: NaturalKeys) -> dict[str, Any]:
    obj = {}
    for f, value in zip(spec.fields, row, strict=True):
        obj[f.attname] = naturals.encode(f, value) if NaturalKeys.applies(f) else plain(value)
    return obj


def decode_row(spec: TableSpec, obj: dict[str, Any], naturals: NaturalKeys) -> list[Any]:
    """A line's object as the parameters of :func:`upsert_sql`, in ``spec.fields`` order."""
    params = []
    for f in spec.fields:
        if f.attname not in obj:
            raise TransferError(f"{spec.file}: a row has no {f.attname!r}", field=f.attname)
        value = obj[f.attname]
        if NaturalKeys.applies(f):
            value = naturals.decode(f, value)
        try:
            params.append(f.get_db_prep_save(f.to_python(value), connection))
        except Exception as exc:  # Django's ValidationError, or ValueError for a clear secret
            raise TransferError(f"{spec.file}: {f.attname} = {value!r}: {exc}", field=f.attname) from exc
    return params


def upsert_sql(spec: TableSpec) -> str:
    """One row's upsert by primary key, in the SQL SQLite (3.24+) and PostgreSQL both take."""
    quote = connection.ops.quote_name
    # A concrete field is one with a column; the stubs type every field's column as optional.
    columns = [f.column for f in spec.fields if f.column]
    pk = str(spec.model._meta.pk.column)
    updates = ", ".join(f"{quote(c)} = excluded.{quote(c)}" for c in columns if c != pk)
    action = f"DO UPDATE SET {updates}" if updates else "DO NOTHING"
    return (
        f"INSERT INTO {quote(spec.model._meta.db_table)} ({', '.join(quote(c) for c in columns)}) "
        f"VALUES ({', '.join(['%s'] * len(columns))}) ON CONFLICT ({quote(pk)}) {action}"
    )


# -- checksums


@dataclass
class Tally:
    """A table's row count and checksum: the sum (mod 2**256) of its rows' SHA-256, so that the order
    in which each side lists its rows does not matter, while any changed, missing or extra row
    does."""

    rows: int = 0
    total: int = 0
    unchecked: tuple[str, ...] = field(default=())

    def add(self, obj: dict[str, Any]) -> None:
        if self.unchecked:
            obj = {k: v for k, v in obj.items() if k not in self.unchecked}
        digest = hashlib.sha256(canonical(obj).encode()).digest()
        self.rows += 1
        self.total = (self.total + int.from_bytes(digest, "big")) % (1 << 256)

    @property
    def checksum(self) -> str:
        return f"{self.total:064x}"
