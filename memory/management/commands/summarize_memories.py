"""Summarise memories from cron: each API key separately, never merged.

    python manage.py summarize_memories [--older-than-days N | --older-than-hours N] [--api-key ID]
                                        [--dry-run] [--yes] [--budget-tokens N]

Without ``--budget-tokens`` it replaces memories older than N days (default
30) by one summary memory per API key; ``--older-than-hours`` counts in hours
instead, so that compaction can be tried on fresh data. An age of 0 (days or
hours) means every memory, however new: the command then asks for a typed
``yes`` on a terminal, and refuses without a terminal unless ``--yes`` is
given (``--dry-run`` needs neither). With ``--budget-tokens`` it condenses
each key's memories beyond the newest N tokens instead (and does both when
an age is given too). Prints one line per key; exits non-zero
when any key failed. Two runs at the same time do not compact twice: each
key is summarised in one write transaction, and the second run finds nothing.
A key whose memories live with a provider is summarised there
(``memory.services.summarization``); a provider that cannot be reached fails
that key only.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.bounds import MAX_POSITION, int_option
from memory.management.cli import for_each_owner, selected_owners
from memory.models import ApiKey
from memory.services.audit import command_actor
from memory.services.summarization import summarize_older_than, summarize_to_budget

# Who the audit log names for this command's deletions.
ACTOR = command_actor("summarize_memories")

DEFAULT_DAYS = 30
MAX_DAYS = 365
MAX_HOURS = MAX_DAYS * 24


class Command(BaseCommand):
    help = "Summarise old memories, one API key at a time (for cron). Exits non-zero on failure."

    def add_arguments(self, parser: CommandParser) -> None:
        age = parser.add_mutually_exclusive_group()
        age.add_argument(
            "--older-than-days",
            type=int_option(0, MAX_DAYS),
            default=None,
            metavar="N",
            help=(
                f"replace memories older than N days (0..{MAX_DAYS}, default {DEFAULT_DAYS}) by one summary "
                "per key; 0 means every memory and asks for a confirmation"
            ),
        )
        age.add_argument(
            "--older-than-hours",
            type=int_option(0, MAX_HOURS),
            default=None,
            metavar="N",
            help=f"the same, counted in hours (0..{MAX_HOURS}), to try compaction on fresh memories",
        )
        parser.add_argument("--api-key", default=None, metavar="ID", help="only this API key (its id)")
        parser.add_argument(
            "--dry-run", action="store_true", help="report what would be done, change nothing"
        )
        parser.add_argument(
            "--yes", action="store_true", help="summarise every memory (an age of 0) without asking"
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
        older_than_hours: int | None,
        api_key: str | None,
        dry_run: bool,
        yes: bool,
        budget_tokens: int | None,
        **options: Any,
    ) -> None:
        owners = selected_owners(api_key, "--api-key")
        age_given = older_than_days is not None or older_than_hours is not None
        run_older_than = budget_tokens is None or age_given
        if older_than_hours is not None:
            days, hours = 0, older_than_hours
        else:
            days, hours = (DEFAULT_DAYS if older_than_days is None else older_than_days), 0
        if run_older_than and days == hours == 0 and owners and not (dry_run or yes):
            self._confirm_everything(len(owners))
        for_each_owner(
            self,
            owners,
            lambda owner: self._summarize(owner, run_older_than, days, hours, budget_tokens, dry_run),
            verb="summarise",
            noun="summarisation",
        )

    def _summarize(
        self, owner: ApiKey, run_older_than: bool, days: int, hours: int, budget: int | None, dry_run: bool
    ) -> Iterator[str]:
        if run_older_than:
            yield self._older_than(owner, days, hours, dry_run)
        if budget is not None:
            yield self._budget(owner, budget, dry_run)

    def _confirm_everything(self, owner_count: int) -> None:
        """Ask for a typed ``yes`` before an age of 0 summarises every memory; without a terminal to
        ask on (cron, a pipe) refuse, so that an unattended run never does it by accident."""
        what = f"every memory of {owner_count} API key(s), however new,"
        if not sys.stdin.isatty():
            raise CommandError(
                f"an age of 0 summarises {what} and there is no terminal to confirm it on: pass --yes"
            )
        self.stdout.write(
            f"An age of 0 summarises {what} into one summary per key. Type 'yes' to go on: ", ending=""
        )
        self.stdout.flush()
        if sys.stdin.readline().strip().lower() != "yes":
            raise CommandError("not confirmed: nothing was summarised")

    @staticmethod
    def _older_than(owner: ApiKey, days: int, hours: int, dry_run: bool) -> str:
        result = summarize_older_than(owner=owner, days=days, hours=hours, dry_run=dry_run, actor=ACTOR)
        n, tokens, age = len(result.candidates), result.total_tokens, result.age
        if not n:
            return f"nothing older than {age}"
        if dry_run:
            return f"would summarise {n} memories older than {age} ({tokens} tokens) (dry run)"
        return (
            f"summarised {n} memories older than {age} ({tokens} tokens) into {result.summary_id}; "
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
