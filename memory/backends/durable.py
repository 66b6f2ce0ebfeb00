"""The durable replay queue: the writes a fallback took for a key's provider, kept in the database.

:class:`DatabaseQueue` is the :class:`~memory.backends.manager.ReplayQueue` of every manager that
``memory.backends.selection`` builds for a saved provider. A write kept by a fallback is a
``PendingProviderWrite`` row committed before the caller's write is acknowledged, so it outlives the
process: after a restart, the new manager of the key reads the same rows, and the periodic replay
task (``memory.tasks.replay``) sends them to the provider once it is back. Each row holds the whole
write (the draft, the changes, the vector) in its encrypted ``payload``, so the replay does not need
the fallback's copy: a fallback that loses its records with the process (``inmemory``) loses nothing
that was acknowledged.

Two replayers never interleave one key's writes: a replay first leases every row of the key
(``claimed_by``/``claimed_until``, in one ``BEGIN IMMEDIATE`` transaction that finds no live lease of
another replayer), renews the lease after each write, and lets it go at the end. A lease left by a
killed process runs out after :data:`LEASE_SECONDS`.

:func:`pending_summary` is the engine status's view of the queue.
"""

from __future__ import annotations

import base64
import builtins
import json
import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Count, Exists, F, Max, Min, OuterRef
from django.utils import timezone

from memory.backends.base import MemoryDraft
from memory.backends.queue import PendingWrite, ReplayQueue
from memory.models import ApiKey, PendingProviderWrite

logger = logging.getLogger("memory.backends")

# How long a replayer's lease lasts without a renewal (it renews after every write).
LEASE_SECONDS = 300
# The longest error kept on a row.
ERROR_CHARS = 500
# How many keys the engine status lists one by one.
SUMMARY_KEYS = 20


def _instant(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _parse_instant(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _vector(values: np.ndarray | None) -> str | None:
    # float32 bytes in base64: exact, and a quarter of the JSON list's size.
    return None if values is None else base64.b64encode(np.asarray(values, np.float32).tobytes()).decode()


def _parse_vector(text: str | None) -> np.ndarray | None:
    return None if text is None else np.frombuffer(base64.b64decode(text), dtype=np.float32).copy()


def encode_payload(write: PendingWrite) -> str:
    """The write's draft, changes and vector as JSON text (what the row's ``payload`` holds)."""
    payload: dict[str, Any] = {"embedding": _vector(write.embedding)}
    if write.draft is not None:
        d = write.draft
        payload["draft"] = {
            "id": None if d.id is None else str(d.id),
            "content": d.content,
            "type": d.type,
            "key": d.key,
            "sessionId": d.session_id,
            "metadata": dict(d.metadata),
            "expiresAt": _instant(d.expires_at),
            "importance": d.importance,
            "createdAt": _instant(d.created_at),
        }
    if write.changes is not None:
        changes = dict(write.changes)
        if "expires_at" in changes:
            changes["expires_at"] = _instant(changes["expires_at"])
        payload["changes"] = changes
    return json.dumps(payload)


def decode_payload(row: PendingProviderWrite) -> PendingWrite:
    """The row as the manager's :class:`PendingWrite` (``ref`` is the row id)."""
    payload = json.loads(row.payload or "{}")
    draft = None
    if payload.get("draft") is not None:
        d = payload["draft"]
        draft = MemoryDraft(
            owner=row.owner,
            content=d["content"],
            type=d["type"],
            key=d["key"],
            session_id=d["sessionId"],
            metadata=d["metadata"],
            expires_at=_parse_instant(d["expiresAt"]),
            importance=d["importance"],
            id=None if d["id"] is None else uuid.UUID(d["id"]),
            created_at=_parse_instant(d["createdAt"]),
        )
    changes: dict[str, Any] | None = payload.get("changes")
    if changes is not None and "expires_at" in changes:
        changes["expires_at"] = _parse_instant(changes["expires_at"])
    return PendingWrite(
        action=row.operation,  # type: ignore[arg-type]  # the column's choices are the three actions
        owner=row.owner,
        memory_id=row.memory_id,
        holder=row.fallback,
        draft=draft,
        embedding=_parse_vector(payload.get("embedding")),
        changes=changes,
        primary=row.primary,
        ref=row.pk,
        attempts=row.attempts,
        last_error=row.last_error,
        queued_at=row.created_at,
    )


class DatabaseQueue(ReplayQueue):
    """One API key's queued writes, as ``PendingProviderWrite`` rows (see the module docstring)."""

    def __init__(self, owner: uuid.UUID | str) -> None:
        self.owner = owner if isinstance(owner, uuid.UUID) else uuid.UUID(str(owner))
        # This replayer's name in the lease: one per queue object, so per manager and process.
        self.token = uuid.uuid4().hex

    def _rows(self) -> Any:
        return PendingProviderWrite.objects.filter(owner=self.owner)

    def append(self, write: PendingWrite) -> None:
        if write.owner != self.owner:
            # A manager serves one key; a write of another owner here is a bug, not a queue entry.
            raise ValueError(f"the queue of {self.owner} cannot hold a write of {write.owner}")
        row = PendingProviderWrite(
            owner=write.owner,
            primary=write.primary,
            fallback=write.holder,
            operation=write.action,
            memory_id=write.memory_id,
        )
        row.payload = encode_payload(write)
        row.save()

    def pending(self) -> builtins.list[PendingWrite]:
        return [decode_payload(row) for row in self._rows().order_by("id")]

    def holds(self, owner: uuid.UUID, memory_id: uuid.UUID) -> bool:
        return owner == self.owner and self._rows().filter(memory_id=memory_id).exists()

    def remove(self, write: PendingWrite) -> None:
        self._rows().filter(pk=write.ref).delete()

    def failed(self, write: PendingWrite, error: str) -> None:
        self._rows().filter(pk=write.ref).update(attempts=F("attempts") + 1, last_error=error[:ERROR_CHARS])

    def drop(self, owner: uuid.UUID, *, type: str | None = None) -> int:
        if owner != self.owner:
            return 0
        if type is None:
            dropped, _ = self._rows().delete()
            return dropped
        moot = [
            w.ref
            for w in self.pending()
            if w.action == "store" and w.draft is not None and w.draft.type == type
        ]
        dropped, _ = self._rows().filter(pk__in=moot).delete()
        return dropped

    @contextmanager
    def lease(self) -> Iterator[bool]:
        """Lease every row of the key to this queue while no other replayer holds one (yields whether
        it did; with nothing queued there is nothing to hold, and the answer is True)."""
        with transaction.atomic():
            now = timezone.now()
            others = self._rows().filter(claimed_until__gt=now).exclude(claimed_by=self.token)
            if others.exists():
                held = False
            else:
                self._rows().update(
                    claimed_by=self.token, claimed_until=now + timedelta(seconds=LEASE_SECONDS)
                )
                held = True
        try:
            yield held
        finally:
            if held:
                self._rows().filter(claimed_by=self.token).update(claimed_by="", claimed_until=None)

    def renew(self) -> None:
        """Push this replayer's lease back (called after each replayed write)."""
        self._rows().filter(claimed_by=self.token).update(
            claimed_until=timezone.now() + timedelta(seconds=LEASE_SECONDS)
        )


def purge_orphans() -> int:
    """Delete the queued writes of API keys that no longer exist (nothing can replay them: the key's
    provider is gone with it). Returns how many went."""
    keys = ApiKey.all_objects.filter(pk=OuterRef("owner"))
    deleted, _ = PendingProviderWrite.objects.filter(~Exists(keys)).delete()
    return deleted


def pending_summary() -> dict[str, Any]:
    """The durable queue for the engine status: how many writes wait, for how many keys, the oldest,
    how many failed a replay at least once and the last error, and the first keys one by one
    (``apiKeyId``, ``primary``, ``pending``, ``oldest``, ``attempts``, ``lastError``), oldest first."""
    rows = PendingProviderWrite.objects.all()
    totals = rows.aggregate(pending=Count("id"), oldest=Min("created_at"))
    failing = rows.filter(attempts__gt=0)
    last = failing.exclude(last_error="").order_by("-id").values_list("last_error", flat=True).first()
    per_key = (
        rows.order_by()
        .values("owner", "primary")
        .annotate(pending=Count("id"), oldest=Min("created_at"), attempts=Max("attempts"), last=Max("id"))
        .order_by("oldest")[:SUMMARY_KEYS]
    )
    keys = []
    for entry in per_key:
        error = rows.filter(pk=entry["last"]).values_list("last_error", flat=True).first() or None
        keys.append(
            {
                "apiKeyId": str(entry["owner"]),
                "primary": entry["primary"],
                "pending": entry["pending"],
                "oldest": _instant(entry["oldest"]),
                "attempts": entry["attempts"],
                "lastError": error,
            }
        )
    return {
        "pending": totals["pending"],
        "keys": rows.values("owner").distinct().count(),
        "oldest": _instant(totals["oldest"]),
        "failing": failing.count(),
        "lastError": last,
        "byKey": keys,
    }


def replay_all() -> dict[str, int]:
    """Replay the queued writes of every key that has some (the periodic task and the resumption at
    start call this). A key whose replay fails for another reason than its provider being down is
    logged with its traceback and counted in ``failed``; the other keys still run. Writes of deleted
    keys are purged first."""
    from memory.backends.selection import manager_for, provider_owners  # selection imports this module

    totals = {"keys": 0, "replayed": 0, "pending": 0, "refused": 0, "failed": 0, "purged": purge_orphans()}
    if totals["purged"]:
        logger.warning("purged %s queued provider writes of deleted API keys", totals["purged"])
    owners = set(PendingProviderWrite.objects.values_list("owner", flat=True).distinct())
    if not owners:
        return totals
    for key in provider_owners(owners):
        manager = manager_for(key)
        if manager is None:
            # The key is served by the native code now: nothing can take its writes.
            logger.warning("API key %s has queued provider writes but no provider", key.pk)
            continue
        totals["keys"] += 1
        try:
            report = manager.replay()
        except Exception:
            totals["failed"] += 1
            logger.exception("replay of the provider writes of key %s failed", key.pk)
            continue
        totals["replayed"] += report.replayed
        totals["pending"] += report.pending
        totals["refused"] += report.refused
        if report.stopped:
            logger.info("replay for key %s stopped: %s (%s left)", key.pk, report.stopped, report.pending)
    return totals
