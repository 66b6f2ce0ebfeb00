"""``export_instance``: every table of :data:`~memory.services.instance.tables.TABLES` and the vectors,
read in one snapshot, written as a stream, then the manifest."""

from __future__ import annotations

import base64
import contextlib
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from memory import crypto
from memory.backends.encrypted import sealed_key_id
from memory.models import VectorMeta
from memory.services.encryption import encryption_enabled
from memory.services.instance import vectors
from memory.services.instance.archive import (
    VECTORS_FILE,
    LineWriter,
    Manifest,
    TableEntry,
    VectorsEntry,
    write_manifest,
)
from memory.services.instance.tables import (
    MEMORY_TABLE,
    TABLES,
    NaturalKeys,
    TableSpec,
    Tally,
    TransferError,
    canonical,
    encode_row,
)

Progress = Callable[[str], Callable[[int, int], None]]


@contextlib.contextmanager
def read_snapshot() -> Iterator[None]:
    """One read transaction around the whole export, so that every table is read as of one instant
    (foreign keys agree) while the service keeps writing. Opened by hand, not by ``atomic()``: our
    SQLite transactions are IMMEDIATE (they take the write lock, which would stop every writer for the
    length of the export), and a deferred one takes none. Nothing inside may open an ``atomic()``
    block (SQLite refuses a nested BEGIN): the export only reads."""
    begin = {
        "sqlite": "BEGIN DEFERRED",
        "postgresql": "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    }.get(connection.vendor)
    if begin is None or connection.in_atomic_block:
        yield
        return
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute(begin)
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("COMMIT")


def migration_heads() -> dict[str, str]:
    """The last applied migration of each app (the schema the rows were read from)."""
    heads: dict[str, str] = {}
    for app, name in MigrationRecorder(connection).applied_migrations():
        heads[app] = max(heads.get(app, ""), name)
    return heads


class _Sealed:
    """What the rows need to be opened on the target, gathered while they are written."""

    def __init__(self) -> None:
        self.secret_keys: set[str] = set()
        self.data_keys: dict[str, set[str]] = {}

    def note(self, spec: TableSpec, obj: dict[str, Any]) -> None:
        for f in spec.fields:
            value = obj.get(f.attname)
            if isinstance(value, str) and crypto.is_encrypted(value):
                self.secret_keys.add(crypto.key_id_of(value))
        if spec.label == MEMORY_TABLE:
            key_id = sealed_key_id(obj.get("metadata") if isinstance(obj.get("metadata"), dict) else None)
            if key_id is not None:
                self.data_keys.setdefault(str(obj["owner_id"]), set()).add(key_id)

    def as_dict(self) -> dict[str, Any]:
        return {
            "secret_key_ids": sorted(self.secret_keys),
            "memory_encryption": encryption_enabled(),
            "sealed_data_keys": {owner: sorted(ids) for owner, ids in sorted(self.data_keys.items())},
        }


def _prepare_directory(directory: Path) -> None:
    if directory.exists() and any(directory.iterdir()):
        raise TransferError(f"{directory} is not empty: export into a new directory", field="directory")
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)


def export_instance(directory: Path, *, batch: int = 1000, progress: Progress | None = None) -> Manifest:
    """Write this instance into ``directory`` (new or empty) and return the manifest."""
    directory = Path(directory)
    _prepare_directory(directory)
    sealed = _Sealed()
    naturals = NaturalKeys()
    entries: list[TableEntry] = []
    with read_snapshot():
        heads = migration_heads()
        for spec in TABLES:
            entries.append(_export_table(directory, spec, batch, naturals, sealed, progress))
        vector_entry = _export_vectors(directory, progress)
    manifest = Manifest(
        export_id=str(uuid.uuid4()),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        vendor=connection.vendor,
        migrations=heads,
        tables=entries,
        vectors=vector_entry,
        encryption=sealed.as_dict(),
    )
    write_manifest(directory, manifest)
    return manifest


def _export_table(
    directory: Path,
    spec: TableSpec,
    batch: int,
    naturals: NaturalKeys,
    sealed: _Sealed,
    progress: Progress | None,
) -> TableEntry:
    total = spec.count()
    draw = progress(spec.label) if progress else None
    tally = Tally(unchecked=spec.unchecked)
    out = LineWriter(directory, spec.file)
    for page in spec.pages(batch):
        for row in page:
            obj = encode_row(spec, row, naturals)
            sealed.note(spec, obj)
            out.write(canonical(obj))
            tally.add(obj)
        if draw:
            draw(tally.rows, max(total, tally.rows))
    if draw and not tally.rows:
        draw(0, 0)
    return TableEntry(
        name=spec.label,
        file=spec.file,
        rows=tally.rows,
        checksum=tally.checksum,
        sha256=out.close(),
        unchecked=list(spec.unchecked),
    )


def _export_vectors(directory: Path, progress: Progress | None) -> VectorsEntry | None:
    store = vectors.source_store()
    if store is None:
        return None
    signature = store.signature()
    assert signature is not None  # source_store checked it
    draw = progress("vectors") if progress else None
    tally = Tally(unchecked=vectors.UNCHECKED)
    out = LineWriter(directory, VECTORS_FILE)
    dim = 0
    try:
        for line in vectors.vector_lines(store):
            out.write(canonical(line))
            tally.add(line)
            if not dim:  # base64 of float32 bytes: 4 bytes a component
                dim = len(base64.b64decode(line["vector"])) // 4
            if draw and tally.rows % 1000 == 0:
                draw(tally.rows, tally.rows)
    except LookupError:
        out.close()
        (directory / VECTORS_FILE).unlink()
        return None
    if draw:
        draw(tally.rows, tally.rows)
    return VectorsEntry(
        name="vectors",
        file=VECTORS_FILE,
        rows=tally.rows,
        checksum=tally.checksum,
        sha256=out.close(),
        signature=signature,
        dim=dim or VectorMeta.objects.filter(id=1).values_list("active_dim", flat=True).first() or 0,
    )
