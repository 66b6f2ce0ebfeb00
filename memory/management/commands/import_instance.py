"""Import an export into this (empty) instance, resumable, verified at the end; ``--verify`` only
compares (``memory.services.instance``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.bounds import int_option
from memory.management.cli import progress_bar
from memory.management.commands.export_instance import MAX_BATCH, print_verification
from memory.services.instance import TransferError, import_instance, verify_database
from memory.services.instance.archive import check_files, read_manifest


class Command(BaseCommand):
    help = (
        "Import the export in DIR (made by export_instance) into this instance, which must be empty and "
        "migrated. Resumable: run it again after an interruption and it goes on from its checkpoint. Ends "
        "by comparing every table with the export and the indexes with the memories (exits 1 on any "
        "difference). --verify: compare only."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", type=Path, help="the export's directory")
        parser.add_argument(
            "--verify", action="store_true", help="compare this database with the export only"
        )
        parser.add_argument(
            "--checkpoint",
            type=Path,
            help="the checkpoint file (default: <data dir>/import-<export id>.checkpoint.json)",
        )
        parser.add_argument(
            "--batch",
            type=int_option(1, MAX_BATCH),
            default=1000,
            help=f"rows written per transaction (1..{MAX_BATCH}, default 1000)",
        )
        parser.add_argument(
            "--into-non-empty",
            action="store_true",
            help="write although this database holds rows and no checkpoint names them (ids that meet are overwritten)",
        )
        parser.add_argument("--json", action="store_true", dest="as_json", help="print the report as JSON")

    def handle(
        self,
        *args: Any,
        directory: Path,
        verify: bool,
        checkpoint: Path | None,
        batch: int,
        into_non_empty: bool,
        as_json: bool,
        **options: Any,
    ) -> None:
        def progress(label: str) -> Callable[[int, int], None]:
            return progress_bar(self.stderr, label)

        try:
            if verify:
                manifest = read_manifest(directory)
                check_files(directory, manifest)
                print_verification(self, verify_database(manifest, batch=batch, progress=progress))
                return
            report = import_instance(
                directory,
                checkpoint=checkpoint,
                batch=batch,
                progress=progress,
                into_non_empty=into_non_empty,
            )
        except TransferError as exc:
            raise CommandError(exc.message) from exc
        if as_json:
            self.stdout.write(json.dumps(report.as_dict(), indent=2, default=str))
            return
        if report.resumed:
            self.stdout.write(
                f"resumed from {report.checkpoint}: {sum(report.skipped.values())} rows were in already"
            )
        self.stdout.write(f"imported {sum(report.written.values())} rows of export {report.export_id}")
        self.stdout.write(f"vectors: {report.vectors_reason}")
        if not report.vectors_carried:
            self.stdout.write(
                "the memories are re-embedded by the reindex queue (or now: manage.py reindex_memories)"
            )
        print_verification(self, report.verification)
        self.stdout.write("ok: every index agrees with the memories (verify_indexes)")
