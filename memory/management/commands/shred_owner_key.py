"""Crypto-shred one API key's memories: delete its data key, then its memories in this database."""

import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.backends.registry import build_backend
from memory.management.cli import owner_option
from memory.services.encryption import shred_owner


class Command(BaseCommand):
    help = (
        "Delete an API key's memory data key, so that none of its encrypted memories can be read again, "
        "in this database, its backups or another provider; then delete its memories in this database. "
        "Irreversible. Copies of the keyring file (its backups) must be destroyed too."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", type=owner_option, required=True, help="the API key id")
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    def handle(self, *args: Any, owner: uuid.UUID, yes: bool, **options: Any) -> None:
        if not yes:
            answer = input(f"Shred every memory of API key {owner}? This cannot be undone. Type 'shred': ")
            if answer.strip() != "shred":
                raise CommandError("not confirmed; nothing was changed")
        result = shred_owner(owner, backend=build_backend("native"))
        keys = ", ".join(result.key_ids) or "none (this key had no data key)"
        self.stdout.write(f"data keys shredded: {keys}; {result.deleted} memories deleted from this database")
