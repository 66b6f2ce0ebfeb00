"""Move an API key's memories to another store (a provider, or the native store), with a progress bar.

The rules are ``memory.services.moves``': lossless (ids, metadata, creation times, expiry, importance;
vectors re-embedded for a destination that takes them), resumable (run it again after a failure: what
is already on the destination is skipped), the key switched only once every memory is there, and the
source's copies deleted after the switch.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.bounds import int_option
from memory.exceptions import DomainError
from memory.management.cli import owner_option, progress_bar
from memory.models import ApiKey
from memory.services.audit import command_actor
from memory.services.moves import NATIVE, move_memories

MAX_BATCH = 10_000


class Command(BaseCommand):
    help = (
        "Move an API key's memories to a memory provider (by name) or to the native store "
        f"('{NATIVE}'), then use that store for the key. Resumable: run it again after a failure."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", type=owner_option, required=True, help="the API key's id")
        parser.add_argument(
            "--to", required=True, help=f"the destination: a memory provider's name, or '{NATIVE}'"
        )
        parser.add_argument(
            "--batch",
            type=int_option(1, MAX_BATCH),
            default=200,
            help=f"memories embedded and copied per step (1..{MAX_BATCH}, default 200)",
        )

    def handle(self, *args: Any, owner: uuid.UUID, to: str, batch: int, **options: Any) -> None:
        api_key = ApiKey.objects.filter(pk=owner).first()
        if api_key is None:
            raise CommandError(f"no API key {owner}")
        try:
            report = move_memories(
                api_key=api_key,
                to=to,
                batch=batch,
                progress=progress_bar(self.stderr, "moving"),
                actor=command_actor("move_memories"),
            )
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(
            f"{report.total} memories of {api_key.name} moved from {report.source} to {report.destination} "
            f"({report.copied} copied now, {report.skipped} already there); the key now uses "
            f"{report.destination}; {report.deleted} copies deleted from {report.source}"
        )
