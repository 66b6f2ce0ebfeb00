"""Seal the native memories written before encryption at rest was switched on, with a progress bar."""

import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.bounds import MAX_POSITION, int_option
from memory.management.cli import owner_option, progress_bar
from memory.models import ApiKey
from memory.services.encryption import KeyShared, encrypt_native_rows, encryption_enabled


class Command(BaseCommand):
    help = (
        "Encrypt in place the native memories stored in clear (all, or one API key's). Resumable: "
        "memories already encrypted are skipped. Needs MEMORY_ENCRYPTION_KEY or MEMORY_ENCRYPTION_KEY_FILE."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", type=owner_option, help="only this API key's memories (its id)")
        parser.add_argument(
            "--batch",
            type=int_option(1, MAX_POSITION),
            default=256,
            help=f"memories per transaction (1..{MAX_POSITION}, default 256)",
        )
        parser.add_argument(
            "--no-scrub",
            action="store_true",
            help="skip merging the FTS index and VACUUM afterwards (the file may keep old clear text)",
        )

    def handle(self, *args: Any, owner: uuid.UUID | None, batch: int, no_scrub: bool, **options: Any) -> None:
        if not encryption_enabled():
            raise CommandError(
                "memory encryption is off: set MEMORY_ENCRYPTION_KEY or MEMORY_ENCRYPTION_KEY_FILE first "
                "(docs/backends.md, Encryption at rest)"
            )
        if owner is not None and not ApiKey.all_objects.filter(pk=owner).exists():
            raise CommandError(f"no API key {owner}")
        try:
            result = encrypt_native_rows(
                owner=owner, batch=batch, progress=progress_bar(self.stderr, "encrypting"), scrub=not no_scrub
            )
        except KeyShared as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(
            f"{result['sealed']} memories encrypted ({result['total']} were in clear); "
            f"{result['withoutVector']} had no vector and keep none"
        )
