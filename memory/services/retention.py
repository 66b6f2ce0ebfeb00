"""Removing many memories at once: the MCP ``clear`` tool, bulk deletes (the admin) and summarisation.

Ages are compared as instants, not as text: SQLite stores datetimes as
strings, and rows written by other tools (``datetime('now')`` gives
``YYYY-MM-DD HH:MM:SS``, JavaScript ``…T…Z``) do not sort like Django's
format, so cutoffs go through ``julianday()``.

The original's clear looked only at the 50 newest matches and counted
attempts as deletions; here every match goes, in one transaction, and the
count is what the database deleted. FTS entries and sqlite-vec vectors
follow through the delete triggers, the other vector indexes after commit
(:mod:`memory.services.vectorsync`). The clear and the bulk delete write their audit events
(:mod:`memory.services.audit`) in the same transaction as the deletion.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import F, FloatField, Func, QuerySet

from memory.models import ApiKey, AuditAction, Memory
from memory.selectors import live_memories
from memory.services import audit, vectorsync
from memory.services.memories import notify_bulk_change

logger = logging.getLogger("memory.services")

DELETE_CHUNK = 500
UNIX_EPOCH_JULIAN_DAY = 2440587.5


def older_than(qs: QuerySet[Memory], cutoff: datetime) -> QuerySet[Memory]:
    """Rows of ``qs`` created strictly before ``cutoff``, compared as instants (not as strings)."""
    if connection.vendor != "sqlite":
        return qs.filter(created_at__lt=cutoff)
    julian_cutoff = cutoff.timestamp() / 86400.0 + UNIX_EPOCH_JULIAN_DAY
    created = Func(F("created_at"), function="julianday", output_field=FloatField())
    return qs.alias(created_jd=created).filter(created_jd__lt=julian_cutoff)


def delete_memories(qs: QuerySet[Memory]) -> int:
    """Delete the rows of ``qs``; returns how many were deleted (see :func:`delete_rows`)."""
    return delete_rows(list(qs.order_by().values_list("seq", "owner_id")))


def delete_rows(rows: Sequence[tuple[int, Any]]) -> int:
    """Delete memories given as ``(seq, owner_id)`` pairs, in chunks (SQLite bounds the
    number of query parameters); returns how many were deleted.

    Sends one ``memory_changed`` (action ``"bulk"``) per owner after commit
    instead of one per row, and has every vector index drop them.
    """
    seqs = [int(seq) for seq, _owner in rows]
    owners = list(dict.fromkeys(owner for _seq, owner in rows))
    deleted = 0
    with transaction.atomic():
        vectorsync.after_delete(seqs)
        for start in range(0, len(seqs), DELETE_CHUNK):
            count, _ = Memory.objects.filter(seq__in=seqs[start : start + DELETE_CHUNK]).delete()
            deleted += count
        notify_bulk_change(owners)
    return deleted


@transaction.atomic
def bulk_delete(qs: QuerySet[Memory], *, actor: audit.Actor) -> int:
    """Delete the rows of ``qs`` (any owners) on behalf of ``actor``: one audit event per owner with
    its count, in the same transaction. Returns how many were deleted."""
    rows = list(qs.order_by().values_list("seq", "owner_id"))
    deleted = delete_rows(rows)
    per_owner = Counter(owner for _seq, owner in rows)
    audit.record_per_owner(actor=actor, action=AuditAction.MEMORY_BULK_DELETE, counts=per_owner)
    return deleted


@transaction.atomic
def memory_clear(
    *,
    owner: ApiKey,
    type: str | None = None,
    created_before: datetime | None = None,
    dry_run: bool = False,
    actor: audit.Actor = audit.SYSTEM,
) -> dict:
    """Delete all of ``owner``'s live memories matching ``type`` and created before ``created_before``.

    Returns ``{"matched": n, "deletedCount": n (0 on a dry run), "ids": [uuid, …]}``;
    ``ids`` lists the matches (at most 1000 of them, oldest first). A real clear (not a dry run) is
    written to the audit log as ``actor``'s.
    """
    qs = live_memories().filter(owner=owner)
    if type:
        qs = qs.filter(type=type)
    if created_before is not None:
        qs = older_than(qs, created_before)
    qs = qs.select_for_update()
    matched = qs.count()
    ids = [str(u) for u in qs.order_by("created_at", "seq").values_list("uuid", flat=True)[:1000]]
    deleted = 0 if dry_run else delete_memories(qs)
    if not dry_run:
        audit.record(
            actor=actor,
            action=AuditAction.MEMORY_CLEAR,
            owner_id=owner.pk,
            count=deleted,
            details={
                "type": type or None,
                "createdBefore": created_before.isoformat() if created_before is not None else None,
                "matched": matched,
            },
        )
    logger.info(
        "clear of %s (type=%s, before=%s): %s matched, %s deleted",
        owner.pk,
        type,
        created_before,
        matched,
        deleted,
    )
    return {"matched": matched, "deletedCount": deleted, "ids": ids}
