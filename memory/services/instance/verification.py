"""Do this database's rows match an export? Counts and checksums per table, both sides in one form.

Used three ways: ``export_instance --verify DIR`` (the source against its export, e.g. before the
source is switched off), ``import_instance --verify DIR`` and at the end of every import (the target
against the export it was filled from). The rows are encoded and hashed exactly as the export did
(:func:`~memory.services.instance.tables.encode_row`, :class:`~memory.services.instance.tables.Tally`),
so a row that differs in any column, a row missing or one too many, fails its table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from memory.services.instance import vectors
from memory.services.instance.archive import Manifest, TableEntry, check_files, read_manifest
from memory.services.instance.exporting import Progress, read_snapshot
from memory.services.instance.tables import TABLES, NaturalKeys, Tally, encode_row


@dataclass
class TableCheck:
    name: str
    expected_rows: int
    rows: int
    expected_checksum: str
    checksum: str

    @property
    def ok(self) -> bool:
        return self.rows == self.expected_rows and self.checksum == self.expected_checksum

    def problem(self) -> str:
        if self.rows != self.expected_rows:
            return f"{self.name}: {self.rows} rows here, {self.expected_rows} in the export"
        return f"{self.name}: the rows differ from the export's (checksum {self.checksum[:16]}…, export {self.expected_checksum[:16]}…)"


@dataclass
class Verification:
    """Each table's check; ``notes`` say what was not compared and why (vectors left to re-embed)."""

    checks: list[TableCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return [check.problem() for check in self.checks if not check.ok]

    @property
    def ok(self) -> bool:
        return not self.problems


EMPTY = Tally().checksum


def _entry(manifest: Manifest, name: str) -> TableEntry:
    """The manifest's entry for a table; an export made before the table existed had no rows of it."""
    try:
        return manifest.entry(name)
    except StopIteration:
        return TableEntry(name=name, file="", rows=0, checksum=EMPTY, sha256="")


def verify_database(
    manifest: Manifest, *, carried: bool | None = None, batch: int = 1000, progress: Progress | None = None
) -> Verification:
    """Compare this database with ``manifest``. ``carried``: whether the vectors must match too (None:
    when this database's store holds vectors of the export's signature)."""
    result = Verification()
    naturals = NaturalKeys()
    with read_snapshot():
        for spec in TABLES:
            entry = _entry(manifest, spec.label)
            tally = Tally(unchecked=tuple(entry.unchecked))
            draw = progress(f"verify {spec.label}") if progress else None
            for page in spec.pages(batch):
                for row in page:
                    tally.add(encode_row(spec, row, naturals))
                if draw:
                    draw(tally.rows, max(entry.rows, tally.rows))
            result.checks.append(
                TableCheck(spec.label, entry.rows, tally.rows, entry.checksum, tally.checksum)
            )
        _verify_vectors(manifest, carried, result)
    return result


def _verify_vectors(manifest: Manifest, carried: bool | None, result: Verification) -> None:
    entry = manifest.vectors
    if entry is None:
        result.notes.append("the export carries no vectors: the memories are re-embedded here")
        return
    store = vectors.target_store()
    held = store.signature() if store is not None else None
    if carried is None:
        carried = held == entry.signature
    if not carried:
        result.notes.append(
            f"vectors not compared: the export's ({entry.signature}) were not copied here "
            f"(this database holds {held or 'none'}); the memories are re-embedded"
        )
        return
    tally = vectors.stored_tally(store)
    result.checks.append(TableCheck("vectors", entry.rows, tally.rows, entry.checksum, tally.checksum))


def verify_directory(directory: Path, *, batch: int = 1000, progress: Progress | None = None) -> Verification:
    """``export_instance --verify``: the export's files are whole, and this database matches them
    (vectors included, when the export carries them)."""
    manifest = read_manifest(directory)
    check_files(directory, manifest)
    return verify_database(manifest, carried=manifest.vectors is not None, batch=batch, progress=progress)
