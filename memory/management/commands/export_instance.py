"""Write this whole instance into a directory (``memory.services.instance``), or, with ``--verify``,
check that this database still matches an export made before."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.bounds import int_option
from memory.management.cli import progress_bar
from memory.services.instance import TransferError, Verification, export_instance, verify_directory

MAX_BATCH = 10_000


def print_verification(command: BaseCommand, result: Verification) -> None:
    """One line per table, the notes, and a failure naming every table that differs."""
    for check in result.checks:
        state = "ok" if check.ok else "MISMATCH"
        command.stdout.write(f"{check.name}: {check.rows}/{check.expected_rows} rows, {state}")
    for note in result.notes:
        command.stdout.write(f"note: {note}")
    if not result.ok:
        raise CommandError("verification failed: " + "; ".join(result.problems))
    command.stdout.write("ok: every table matches the export")


class Command(BaseCommand):
    help = (
        "Export every table of this instance (API keys and token hashes, providers, memories with their "
        "history, settings, audit log, injection ledger, replay queue, Studio users) and its vectors into "
        "DIR, one newline-delimited JSON file per table and a manifest. --verify DIR: compare this "
        "database with an earlier export instead (exits 1 on any difference)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "directory", type=Path, help="a new (or empty) directory; with --verify, an export"
        )
        parser.add_argument(
            "--verify",
            action="store_true",
            help="compare this database with the export in DIR (writes nothing)",
        )
        parser.add_argument(
            "--batch",
            type=int_option(1, MAX_BATCH),
            default=1000,
            help=f"rows read per query (1..{MAX_BATCH}, default 1000)",
        )
        parser.add_argument("--json", action="store_true", dest="as_json", help="print the manifest as JSON")

    def handle(
        self, *args: Any, directory: Path, verify: bool, batch: int, as_json: bool, **options: Any
    ) -> None:
        def progress(label: str) -> Callable[[int, int], None]:
            return progress_bar(self.stderr, label)

        try:
            if verify:
                print_verification(self, verify_directory(directory, batch=batch, progress=progress))
                return
            manifest = export_instance(directory, batch=batch, progress=progress)
        except TransferError as exc:
            raise CommandError(exc.message) from exc
        if as_json:
            self.stdout.write(json.dumps(manifest.__dict__, default=lambda o: o.__dict__, indent=2))
            return
        rows = sum(entry.rows for entry in manifest.tables)
        vectors = (
            f"{manifest.vectors.rows} vectors ({manifest.vectors.signature})"
            if manifest.vectors
            else "no vectors (the target re-embeds)"
        )
        self.stdout.write(
            f"exported {rows} rows in {len(manifest.tables)} tables and {vectors} to {directory}"
        )
        self.stdout.write(f"export id {manifest.export_id}")
        keys = manifest.encryption
        if keys["secret_key_ids"]:
            self.stdout.write(
                "the target needs the master key "
                + ", ".join(keys["secret_key_ids"])
                + " (MEMORY_ENCRYPTION_KEY "
                "or MEMORY_ENCRYPTION_KEY_FILE, or a copy of this data directory's encryption.key)"
            )
        if keys["sealed_data_keys"] or keys["memory_encryption"]:
            self.stdout.write(
                "memories are encrypted at rest: copy the keyring file (MEMORY_KEYRING_PATH) too"
            )
