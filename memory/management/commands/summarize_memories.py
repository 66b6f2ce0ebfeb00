"""Summarise memories from cron: each API key separately, never merged.

    python manage.py summarize_memories [--older-than-days N] [--api-key ID] [--dry-run] [--budget-tokens N]

Without ``--budget-tokens`` it replaces memories older than N days (default
30) by one summary memory per API key. With ``--budget-tokens`` it condenses
each key's memories beyond the newest N tokens instead (and does both when
``--older-than-days`` is given too). Prints one line per key; exits non-zero
when any key failed. Two runs at the same time do not compact twice: each
key is summarised in one write transaction, and the second run finds nothing.
A key whose memories live with a provider is summarised there
(``memory.services.summarization``); a provider that cannot be reached fails
that key only.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.bounds import MAX_POSITION, int_option
from memory.models import ApiKey
from memory.services.audit import command_actor
from memory.services.summarization import summarizable_owners, summarize_older_than, summarize_to_budget

# Who the audit log names for this command's deletions.
ACTOR = command_actor("summarize_memories")

DEFAULT_DAYS = 30


class Command(BaseCommand):
    help = "Summarise old memories, one API key at a time (for cron). Exits non-zero on failure."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than-days",
            type=int_option(1, 365),
            default=None,
            metavar="N",
            help=f"replace memories older than N days (1..365, default {DEFAULT_DAYS}) by one summary per key",
        )
        parser.add_argument("--api-key", default=None, metavar="ID", help="only this API key (its id)")
        parser.add_argument(
            "--dry-run", action="store_true", help="report what would be done, change nothing"
        )
        parser.add_argument(
            "--budget-tokens",
            type=int_option(0, MAX_POSITION),
            default=None,
            metavar="N",
            help=(
                f"condense each key's memories beyond its newest N tokens (0..{MAX_POSITION}) "
                "to their first three sentences"
            ),
        )

    def handle(
        self,
        *args: Any,
        older_than_days: int | None,
        api_key: str | None,
        dry_run: bool,
        budget_tokens: int | None,
        **options: Any,
    ) -> None:
        owners = self._owners(api_key)
        run_older_than = budget_tokens is None or older_than_days is not None
        days = older_than_days or DEFAULT_DAYS
        failures: list[str] = []
        for owner in owners:
            label = f"{owner.pk} ({owner.name})"
            try:
                if run_older_than:
                    self.stdout.write(f"{label}: {self._older_than(owner, days, dry_run)}")
                if budget_tokens is not None:
                    self.stdout.write(f"{label}: {self._budget(owner, budget_tokens, dry_run)}")
            except Exception as exc:
                failures.append(str(owner.pk))
                self.stderr.write(f"{label}: FAILED: {type(exc).__name__}: {exc}")
        if not owners:
            self.stdout.write("No API keys: nothing to summarise.")
        if failures:
            raise CommandError(f"summarisation failed for {len(failures)} API key(s): {', '.join(failures)}")

    def _owners(self, api_key: str | None) -> list[ApiKey]:
        if api_key is None:
            return list(summarizable_owners())
        try:
            owner_id = uuid.UUID(api_key)
        except ValueError:
            raise CommandError(f"--api-key {api_key!r} is not an API key id (a UUID)") from None
        owner = ApiKey.objects.filter(pk=owner_id).first()
        if owner is None:
            raise CommandError(f"--api-key {api_key}: no such API key")
        return [owner]

    @staticmethod
    def _older_than(owner: ApiKey, days: int, dry_run: bool) -> str:
        result = summarize_older_than(owner=owner, days=days, dry_run=dry_run, actor=ACTOR)
        n, tokens = len(result.candidates), result.total_tokens
        if not n:
            return f"nothing older than {days} days"
        if dry_run:
            return f"would summarise {n} memories older than {days} days ({tokens} tokens) (dry run)"
        return (
            f"summarised {n} memories older than {days} days ({tokens} tokens) into {result.summary_id}; "
            f"deleted {result.deleted_count}"
        )

    @staticmethod
    def _budget(owner: ApiKey, budget: int, dry_run: bool) -> str:
        result = summarize_to_budget(owner=owner, max_tokens=budget, dry_run=dry_run, actor=ACTOR)
        verb = "would condense" if dry_run else "condensed"
        return (
            f"{verb} {result['summarizedCount']} of {result['originalCount']} memories to fit {budget} tokens, "
            f"saving {result['tokensSaved']} tokens" + (" (dry run)" if dry_run else "")
        )
