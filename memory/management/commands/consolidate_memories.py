"""Merge near-duplicate memories, one API key at a time (for cron), or undo a run.

    python manage.py consolidate_memories [--owner ID] [--dry-run]
    python manage.py consolidate_memories --undo RUN_ID

Prints one line per key (the groups found, the memories merged, the run id to undo it with) and,
with ``--dry-run``, each group: the survivor and what would be merged into it. Exits non-zero when
any key failed. The rules are :mod:`memory.services.consolidation`'s; each key is one transaction,
audited as this command's.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.exceptions import DomainError
from memory.management.cli import for_each_owner, selected_owners
from memory.models import ApiKey, ConsolidationRun
from memory.services.audit import command_actor
from memory.services.consolidation import ConsolidationPlan, consolidate, consolidation_undo

ACTOR = command_actor("consolidate_memories")


class Command(BaseCommand):
    help = "Merge each API key's near-duplicate memories into the richest copy (undoable with --undo)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", default=None, metavar="ID", help="only this API key (its id)")
        parser.add_argument("--dry-run", action="store_true", help="show the groups, change nothing")
        parser.add_argument("--undo", default=None, metavar="RUN_ID", help="put back what this run merged")

    def handle(self, *args: Any, owner: str | None, dry_run: bool, undo: str | None, **options: Any) -> None:
        if undo is not None:
            if owner is not None or dry_run:
                raise CommandError("--undo takes no --owner nor --dry-run")
            self._undo(undo)
            return
        for_each_owner(
            self,
            selected_owners(owner, "--owner"),
            lambda key: self._consolidate(key, dry_run),
            verb="consolidate",
            noun="consolidation",
        )

    def _consolidate(self, key: ApiKey, dry_run: bool) -> Iterator[str]:
        plan = consolidate(key, dry_run=dry_run, actor=ACTOR)
        yield self._summary(plan)
        if dry_run:
            for group in plan.groups:
                yield f"  keep {group.survivor.uuid}: {group.survivor.content[:80]!r}"
                for memory, reason in zip(group.merged, group.reasons, strict=True):
                    yield f"    merge {memory.uuid}: {memory.content[:80]!r} ({reason})"

    @staticmethod
    def _summary(plan: ConsolidationPlan) -> str:
        if plan.skipped:
            return f"skipped: {plan.skipped}"
        if not plan.groups:
            return f"no duplicates among {plan.considered} memories"
        what = f"{len(plan.groups)} group(s), {plan.merged_count} memories"
        if plan.run is None:
            return f"would merge {what} ({plan.resolvable} contradiction(s) settled) (dry run)"
        return f"merged {what}, {plan.resolvable} contradiction(s) settled; undo with --undo {plan.run.id}"

    def _undo(self, run_id: str) -> None:
        try:
            run = ConsolidationRun.objects.get(pk=uuid.UUID(run_id))
        except (ValueError, ConsolidationRun.DoesNotExist):
            raise CommandError(f"--undo {run_id}: no such consolidation run") from None
        try:
            consolidation_undo(run, actor=ACTOR)
        except DomainError as exc:
            raise CommandError(f"--undo {run_id}: {exc.message}") from None
        self.stdout.write(f"undone {run.id}: {run.merged} memories restored for {run.owner_id}")
