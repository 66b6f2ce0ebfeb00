"""The export directory: one newline-delimited JSON file per table and a ``manifest.json``.

The manifest is written last, so a directory holds a whole export exactly when it has one. It names
the format version, the source's schema (the last migration of each app), and for each table its
file, row count, row checksum (:class:`~memory.services.instance.tables.Tally`) and the SHA-256 of
the file, which the import checks before it writes anything: a file changed after the export (by
accident or on purpose) is refused, never half imported.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memory.services.instance.tables import TransferError

FORMAT = "omniroute-instance"
VERSION = 1
MANIFEST = "manifest.json"
VECTORS_FILE = "vectors.ndjson"


@dataclass
class TableEntry:
    """What the manifest says of one file."""

    name: str
    file: str
    rows: int
    checksum: str
    sha256: str
    unchecked: list[str] = field(default_factory=list)


@dataclass
class VectorsEntry(TableEntry):
    """The vectors' file, with what made them: the signature the store recorded (``source:model:dim``,
    ``:int8`` for an int8 table) and the dimension."""

    signature: str = ""
    dim: int = 0


@dataclass
class Manifest:
    export_id: str
    created_at: str
    vendor: str
    migrations: dict[str, str]
    tables: list[TableEntry]
    vectors: VectorsEntry | None
    # What the target needs to open what travels sealed: the ids of the master keys that encrypted
    # the secrets, whether memory encryption was on, and each owner's data key ids of sealed rows.
    encryption: dict[str, Any]
    format: str = FORMAT
    version: int = VERSION

    def entry(self, name: str) -> TableEntry:
        return next(entry for entry in self.tables if entry.name == name)

    def files(self) -> list[TableEntry]:
        return [*self.tables, *([self.vectors] if self.vectors else [])]


def write_manifest(directory: Path, manifest: Manifest) -> None:
    write_json_atomically(directory / MANIFEST, asdict(manifest))


def read_manifest(directory: Path) -> Manifest:
    path = Path(directory) / MANIFEST
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise TransferError(f"{directory} holds no {MANIFEST}: not a finished export") from None
    except (OSError, ValueError) as exc:
        raise TransferError(f"{path} cannot be read: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise TransferError(f"{path} is not an instance export manifest")
    if doc.get("version") != VERSION:
        raise TransferError(f"{path}: format version {doc.get('version')!r}; this release reads {VERSION}")
    try:
        vectors = doc.pop("vectors")
        tables = [TableEntry(**entry) for entry in doc.pop("tables")]
        return Manifest(
            **doc, tables=tables, vectors=VectorsEntry(**vectors) if vectors is not None else None
        )
    except (KeyError, TypeError) as exc:
        raise TransferError(f"{path} is incomplete: {exc}") from exc


def write_json_atomically(path: Path, doc: dict[str, Any]) -> None:
    """Written aside, fsynced and renamed: a reader sees the old file or the new one, never half."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as out:
        json.dump(doc, out, indent=2, sort_keys=True)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


class LineWriter:
    """A table file being written (as ``<file>.partial``, renamed by :meth:`close`) and hashed."""

    def __init__(self, directory: Path, name: str) -> None:
        self.path = directory / name
        self._partial = directory / f"{name}.partial"
        self._out = open(self._partial, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self._hash = hashlib.sha256()

    def write(self, line: str) -> None:
        data = line + "\n"
        self._out.write(data)
        self._hash.update(data.encode())

    def close(self) -> str:
        """Flush, rename into place; returns the file's SHA-256."""
        self._out.flush()
        os.fsync(self._out.fileno())
        self._out.close()
        os.replace(self._partial, self.path)
        return self._hash.hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_files(directory: Path, manifest: Manifest) -> None:
    """Every file the manifest names is there, with the SHA-256 it recorded."""
    for entry in manifest.files():
        path = Path(directory) / entry.file
        if not path.is_file():
            raise TransferError(f"{path} is missing", field=entry.name)
        found = file_sha256(path)
        if found != entry.sha256:
            raise TransferError(
                f"{path} was changed after the export (SHA-256 {found}, the manifest says {entry.sha256})",
                field=entry.name,
            )


def read_lines(path: Path, *, skip: int = 0) -> Iterator[dict[str, Any]]:
    """The objects of a table file, one per line, after the first ``skip`` (read as a stream)."""
    with open(path, encoding="utf-8") as data:
        for number, line in enumerate(data, start=1):
            if number <= skip:
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise TransferError(f"{path}, line {number}: not JSON ({exc})") from exc
            if not isinstance(obj, dict):
                raise TransferError(f"{path}, line {number}: not a JSON object")
            yield obj
