"""``import_instance``: an export written into this (empty) instance, resumable, then verified.

Before anything is written, the files are checked against the manifest (a changed file is refused),
the schema against the export's (the same migrations), and the keys: every master key that sealed
a secret, and with encryption at rest every owner's data key, must open here. Then each table is
read as a stream and written in batches, one transaction each; after each commit the checkpoint
(a small JSON file, by default ``<data dir>/import-<export id>.checkpoint.json``) records how many
lines of the file are in. An import that stops (killed, a full disk) starts again from there when
run again; a batch whose commit landed but whose checkpoint did not is written a second time, which
the upserts by primary key make harmless. A checkpoint that cannot be read (cut short) starts the
import over from the first line, for the same reason. At the end the database is compared with the
export (:func:`~memory.services.instance.verification.verify_database`) and the indexes with the
rows (``verify_indexes``); either failing raises :class:`TransferError`.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.color import no_style
from django.db import connection, transaction

from memory import crypto
from memory.backends.encrypted import DataKeyShredded, DataKeyUnavailable
from memory.conf import invalidate_memory_settings_cache
from memory.qdrant_conf import invalidate_qdrant_settings_cache
from memory.services import integrity
from memory.services.encryption import encryption_enabled, keyring
from memory.services.indexing import schedule_reindex
from memory.services.instance import vectors
from memory.services.instance.archive import (
    Manifest,
    TableEntry,
    check_files,
    read_lines,
    read_manifest,
    write_json_atomically,
)
from memory.services.instance.exporting import Progress, migration_heads
from memory.services.instance.tables import (
    MEMORY_TABLE,
    TABLES,
    NaturalKeys,
    TableSpec,
    TransferError,
    decode_row,
    upsert_sql,
)
from memory.services.instance.verification import Verification, verify_database

logger = logging.getLogger("memory.instance")

SETTINGS_TABLE = "memory.setting"


@dataclass
class Checkpoint:
    """How far an import of one export got: the lines of each file that are committed, and what it
    decided for the vectors (kept, so that a resumed import does not change its mind)."""

    path: Path
    export_id: str
    done: dict[str, int] = field(default_factory=dict)
    vectors: dict[str, Any] | None = None
    finished: bool = False
    # The checkpoint file was there but could not be read: the import starts over, idempotently.
    damaged: bool = False

    @classmethod
    def load(cls, path: Path, export_id: str) -> Checkpoint | None:
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        try:
            doc = json.loads(text)
            if doc["export_id"] != export_id:
                raise TransferError(
                    f"{path} is the checkpoint of export {doc['export_id']}, not {export_id}: "
                    "give another --checkpoint",
                    field="checkpoint",
                )
            return cls(
                path=path,
                export_id=export_id,
                done={str(k): int(v) for k, v in dict(doc["done"]).items()},
                vectors=doc.get("vectors"),
                finished=bool(doc.get("finished")),
            )
        except (ValueError, KeyError, TypeError) as exc:
            logger.warning("checkpoint %s cannot be read (%s): the import starts over", path, exc)
            return cls(path=path, export_id=export_id, damaged=True)

    def save(self) -> None:
        doc = {
            "export_id": self.export_id,
            "done": self.done,
            "vectors": self.vectors,
            "finished": self.finished,
        }
        write_json_atomically(self.path, doc)


@dataclass
class ImportReport:
    """What the import did: rows written and skipped (already in, from a previous run) per file,
    whether it resumed, what it did with the vectors, and the two verifications."""

    export_id: str
    checkpoint: str
    resumed: bool
    written: dict[str, int]
    skipped: dict[str, int]
    vectors_carried: bool
    vectors_reason: str
    verification: Verification
    indexes: integrity.IndexReport

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["verification"] = {"ok": self.verification.ok, **data["verification"]}
        data["indexes"] = self.indexes.as_dict()
        return data


def default_checkpoint(manifest: Manifest) -> Path:
    return Path(settings.DATA_DIR) / f"import-{manifest.export_id}.checkpoint.json"


def import_instance(
    directory: Path,
    *,
    checkpoint: Path | None = None,
    batch: int = 1000,
    progress: Progress | None = None,
    into_non_empty: bool = False,
) -> ImportReport:
    """Import the export in ``directory``; see the module docstring. ``into_non_empty``: write even
    though this database already holds rows and no checkpoint says they are this export's (they
    are overwritten where the ids meet; the verification then fails on any row left over)."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    check_files(directory, manifest)
    path = Path(checkpoint) if checkpoint else default_checkpoint(manifest)
    state = Checkpoint.load(path, manifest.export_id)
    resumed = state is not None
    if state is None:
        if not into_non_empty:
            _require_empty()
        state = Checkpoint(path=path, export_id=manifest.export_id)
    _check_schema(manifest)
    _check_keys(manifest)
    written: dict[str, int] = {}
    skipped: dict[str, int] = {}
    if not state.finished:
        state.save()
        naturals = NaturalKeys()
        for spec in TABLES:
            if spec.label == MEMORY_TABLE:
                _plan_vectors(manifest, state)
            entry = _find(manifest, spec.label)
            if entry is not None:
                skipped[spec.label], written[spec.label] = _import_table(
                    directory, spec, entry, state, batch, naturals, progress
                )
            if spec.label == SETTINGS_TABLE:
                # Written by hand, not through StoredSettings: the caches must forget what they read.
                invalidate_memory_settings_cache()
                invalidate_qdrant_settings_cache()
        _reset_sequences()
        if manifest.vectors is not None and (state.vectors or {}).get("carry"):
            skipped["vectors"], written["vectors"] = _import_vectors(
                directory, manifest, state, batch, progress
            )
        state.finished = True
        state.save()
    carried = bool((state.vectors or {}).get("carry"))
    if not carried:
        schedule_reindex()
    verification = verify_database(manifest, carried=carried, batch=batch, progress=progress)
    indexes = integrity.verify()
    report = ImportReport(
        export_id=manifest.export_id,
        checkpoint=str(path),
        resumed=resumed,
        written=written,
        skipped=skipped,
        vectors_carried=carried,
        vectors_reason=str((state.vectors or {}).get("reason", "")),
        verification=verification,
        indexes=indexes,
    )
    problems = verification.problems + [f"indexes: {problem}" for problem in indexes.problems]
    if problems:
        raise TransferError("the imported instance does not match the export: " + "; ".join(problems))
    return report


def _find(manifest: Manifest, name: str) -> TableEntry | None:
    return next((entry for entry in manifest.tables if entry.name == name), None)


def _require_empty() -> None:
    filled = [f"{spec.label} ({n})" for spec in TABLES if (n := spec.count())]
    if filled:
        raise TransferError(
            "this database is not empty: "
            + ", ".join(filled)
            + ". Import into a fresh instance (a new data directory, migrated), or resume with the "
            "checkpoint of the import that wrote them",
            field="directory",
        )


def _check_schema(manifest: Manifest) -> None:
    here = migration_heads()
    different = {
        app: (name, here.get(app)) for app, name in manifest.migrations.items() if here.get(app) != name
    }
    if different:
        listed = ", ".join(
            f"{app}: export {name}, here {mine or 'none'}" for app, (name, mine) in different.items()
        )
        raise TransferError(
            f"this database's schema differs from the export's ({listed}): run the same release and "
            "`manage.py migrate` on both sides"
        )


def _check_keys(manifest: Manifest) -> None:
    """Every sealed value of the export must open here: refused before anything is written."""
    needed = manifest.encryption.get("secret_key_ids", [])
    missing = [key_id for key_id in needed if crypto.master_key_by_id(key_id) is None]
    if missing:
        configured = ", ".join(key.key_id for key in crypto.master_keys())
        raise TransferError(
            f"the export's secrets were encrypted with the master key {', '.join(missing)}; this instance "
            f"has {configured}. Give it the source's key: the same MEMORY_ENCRYPTION_KEY or "
            "MEMORY_ENCRYPTION_KEY_FILE, or, where the source generated one, a copy of its "
            f"<data dir>/{crypto.LOCAL_KEY_NAME} at {crypto.local_key_path()}",
            field="encryption",
        )
    sealed: dict[str, list[str]] = manifest.encryption.get("sealed_data_keys", {})
    if (sealed or manifest.encryption.get("memory_encryption")) and not encryption_enabled():
        raise TransferError(
            "the source encrypts memories at rest: set MEMORY_ENCRYPTION_KEY (or _FILE) to its master "
            "key here too",
            field="encryption",
        )
    ring = keyring()
    for owner, key_ids in sealed.items():
        for key_id in key_ids:
            try:
                ring.data_key_by_id(uuid.UUID(owner), key_id)
            except DataKeyShredded:
                continue  # shredded on the source too: those memories read as deleted on both sides
            except DataKeyUnavailable as exc:
                raise TransferError(
                    f"{exc}. Copy the source's keyring file to {ring.path} (MEMORY_KEYRING_PATH) first",
                    field="encryption",
                ) from exc


def _plan_vectors(manifest: Manifest, state: Checkpoint) -> None:
    """Decide once (the settings are in: they choose the embedding source) whether the vectors are
    copied, and build the vector table for them before any memory arrives."""
    if state.vectors is None:
        plan = vectors.plan_for(manifest.vectors)
        state.vectors = {"carry": plan.carry, "reason": plan.reason}
        state.save()
        logger.info("vectors: %s", plan.reason)
    if state.vectors["carry"] and manifest.vectors is not None:
        vectors.prepare(manifest.vectors)


def _batches(lines: Iterator[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    while chunk := list(islice(lines, size)):
        yield chunk


def _import_table(
    directory: Path,
    spec: TableSpec,
    entry: TableEntry,
    state: Checkpoint,
    batch: int,
    naturals: NaturalKeys,
    progress: Progress | None,
) -> tuple[int, int]:
    """Write the lines the checkpoint does not count yet; returns (skipped, written)."""
    skip = min(state.done.get(spec.label, 0), entry.rows)
    draw = progress(spec.label) if progress else None
    if draw:
        draw(skip, entry.rows)
    sql = upsert_sql(spec)
    reindex = spec.label == MEMORY_TABLE and not (state.vectors or {}).get("carry")
    done = skip
    for chunk in _batches(read_lines(directory / entry.file, skip=skip), batch):
        if reindex:
            for obj in chunk:
                obj["needs_reindex"] = True
        params = [decode_row(spec, obj, naturals) for obj in chunk]
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.executemany(sql, params)
        done += len(chunk)
        state.done[spec.label] = done
        state.save()
        if draw:
            draw(done, entry.rows)
    return skip, done - skip


def _import_vectors(
    directory: Path, manifest: Manifest, state: Checkpoint, batch: int, progress: Progress | None
) -> tuple[int, int]:
    entry = manifest.vectors
    assert entry is not None
    skip = min(state.done.get("vectors", 0), entry.rows)
    draw = progress("vectors") if progress else None
    done = skip
    for chunk in _batches(read_lines(directory / entry.file, skip=skip), batch):
        vectors.write(chunk)
        done += len(chunk)
        state.done["vectors"] = done
        state.save()
        if draw:
            draw(done, entry.rows)
    return skip, done - skip


def _reset_sequences() -> None:
    """Rows came with their ids: a database with sequences (PostgreSQL) must number new rows after
    them. SQLite's AUTOINCREMENT follows explicit ids by itself (no statements)."""
    statements = connection.ops.sequence_reset_sql(no_style(), [spec.model for spec in TABLES])
    if statements:
        with transaction.atomic(), connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
