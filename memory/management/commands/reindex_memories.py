"""Embed every memory whose vector is missing or stale, with a progress bar."""

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.bounds import MAX_POSITION, int_option
from memory.services.indexing import flag_for_reindex, reindex_all, vector_context


class Command(BaseCommand):
    help = "Drain the reindex queue now (in this process), showing progress."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--force", action="store_true", help="re-embed every memory, not only pending ones"
        )
        parser.add_argument(
            "--batch",
            type=int_option(1, MAX_POSITION),
            default=256,
            help=f"memories per batch (1..{MAX_POSITION}, default 256)",
        )

    def handle(self, *args: Any, force: bool, batch: int, **options: Any) -> None:
        ctx = vector_context()
        if not ctx.usable:
            raise CommandError(f"no vector tier: {ctx.reason}")
        if force:
            flag_for_reindex()
        tty = sys.stdout.isatty()

        def progress(done: int, total: int) -> None:
            width = 30
            filled = int(width * done / total) if total else width
            bar = "#" * filled + "-" * (width - filled)
            line = f"[{bar}] {done}/{total}"
            if tty:
                self.stdout.write("\r" + line, ending="")
                self.stdout.flush()
            else:
                self.stdout.write(line)

        result = reindex_all(progress=progress, batch=batch)
        if tty:
            self.stdout.write("")
        self.stdout.write(
            f"{result['processed']} indexed, {result['errors']} errors, {result['pending']} still pending "
            f"({ctx.resolution.source}:{ctx.resolution.model} → {ctx.store_name})"
        )
        if result["errors"] and not result["processed"]:
            raise CommandError("embedding failed for every batch; see the log")
