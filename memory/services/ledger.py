"""The injection ledger: for every gateway answer that carried memory, what was injected and why.

The gateway builds a :class:`LedgerDraft` while it recalls (:func:`ledger_draft`: the memories with
their rank, tier, per-signal scores and tokens, the strategy and tiers really used, the retrieval
latency, the exact memory message) and hands it to :func:`ledger_record` once the answer is sent.
A ledger entry is a statistic of a chat, and a chat must never become a SQLite write transaction
for it: entries go through a :class:`memory.services.deferred.DeferredWriter` (the pattern of the
access counters), gathered in memory and written in one batch by a background thread
``MEMORY_ACCESS_FLUSH_SECONDS`` after the oldest. Where nothing can be deferred (inside a
transaction, ``MEMORY_ACCESS_FLUSH_SECONDS=0``) an entry is written at once.

The extraction task of the same exchange records what it learned (:func:`ledger_mark_extraction`),
so the gateway writes the entry (:func:`ledger_settle`) before it enqueues the task: a worker in
another process must find the row. ``MEMORY_LEDGER_RETENTION_DAYS`` bounds how long entries are
kept (:func:`ledger_prune`, run by the nightly lifecycle task); 0 keeps no ledger.

Entries hold memory ids, never memory text: a memory deleted since shows ``"deleted": true`` in
:func:`entry_json` and is not brought back. The text that was sent is the entry's system message,
encrypted at rest and gone with the entry when it is pruned.
"""

from __future__ import annotations

import atexit
import logging
import math
import threading
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.db.models import BooleanField, Q, QuerySet, Sum
from django.db.models.expressions import RawSQL
from django.db.models.functions import TruncDate
from django.utils import timezone

from memory import dialect
from memory.backends.base import BackendUnavailable
from memory.backends.selection import manager_for
from memory.exceptions import NotFound, ValidationFailed
from memory.models import ApiKey, InjectionEntry, Memory
from memory.principals import Principal
from memory.services.deferred import DeferredWriter
from memory.services.encryption import encryption_enabled
from memory.signals import injection_recorded

if TYPE_CHECKING:
    from memory.retrieval.engine import Hit

__all__ = [
    "LedgerDraft",
    "LedgerPage",
    "deleted_memory_ids",
    "entry_json",
    "ledger_draft",
    "ledger_enabled",
    "ledger_get",
    "ledger_mark_extraction",
    "ledger_prune",
    "ledger_query",
    "ledger_record",
    "ledger_settle",
    "tokens_per_day",
]

logger = logging.getLogger("memory.ledger")

REQUEST_ID_MAX = 64  # InjectionEntry.request_id
# The entries of a list are checked for deleted memories in chunks (SQLite's bound-parameter limit).
_ID_CHUNK = 500


def ledger_enabled() -> bool:
    """Whether the ledger keeps anything (``MEMORY_LEDGER_RETENTION_DAYS`` > 0)."""
    return settings.MEMORY_LEDGER_RETENTION_DAYS > 0


# -- the write side -----------------------------------------------------------------------------------


@dataclass
class LedgerDraft:
    """An entry not yet written: the fields of :class:`~memory.models.InjectionEntry`."""

    id: uuid.UUID
    at: datetime
    api_key_id: uuid.UUID
    session_id: str
    model: str
    strategy: str
    tiers: list[str]
    memories: list[dict[str, Any]]
    total_tokens: int
    latency_ms: float
    system_message: str
    query: str = ""
    request_id: str = ""
    extraction: dict[str, Any] | None = None

    def row(self) -> InjectionEntry:
        return InjectionEntry(
            id=self.id,
            at=self.at,
            api_key_id=self.api_key_id,
            session_id=self.session_id[:200],
            model=self.model[:200],
            strategy=self.strategy[:16],
            tiers=self.tiers,
            memories=self.memories,
            total_tokens=self.total_tokens,
            latency_ms=self.latency_ms,
            system_message=self.system_message,
            query=self.query,
            extraction=self.extraction,
            request_id=self.request_id[:REQUEST_ID_MAX],
        )


def _number(value: float | None) -> float | None:
    # JSON has no NaN or infinity; a score that is not a number says nothing.
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def memory_refs(hits: Sequence[Hit]) -> list[dict[str, Any]]:
    """The compact form of injected hits, in injection order: ids, never text. ``signals`` holds the
    scores behind the rank: ``vec`` (cosine), ``fts`` (BM25), ``session`` (the best keyword score of
    the turn's session), ``answerType`` and ``inPeriod`` (1.0 or 0.0: hybrid's lifts for "when"
    questions and named periods); null where the tier did not compute it."""
    return [
        {
            "id": str(hit.memory.uuid),
            "rank": rank,
            "tier": hit.tier,
            "score": _number(hit.score) or 0.0,
            "signals": {
                "vec": _number(hit.vec_score),
                "fts": _number(hit.fts_score),
                "session": _number(hit.session_score),
                "answerType": 1.0 if hit.answer_type else 0.0,
                "inPeriod": 1.0 if hit.in_period else 0.0,
            },
            "tokens": int(hit.tokens),
        }
        for rank, hit in enumerate(hits, start=1)
    ]


def ledger_draft(
    *,
    api_key_id: uuid.UUID,
    session_id: str | None,
    model: str,
    hits: Sequence[Hit],
    resolution: dict[str, Any],
    latency_ms: float,
    system_message: str,
    query: str = "",
) -> LedgerDraft | None:
    """The entry of a recall that injected ``hits`` as ``system_message``; None when the ledger is off
    or nothing was injected. The strategy is the one really used (``resolution["strategyUsed"]``), the
    tiers those the injected hits came from, in rank order."""
    if not ledger_enabled() or not hits or not system_message:
        return None
    if encryption_enabled():
        # Sealed memories are crypto-shredded with their owner's data key; a copy of their text here,
        # under the master key, would outlive the shred (in backups too). The entry keeps ids only.
        system_message = query = ""
    tiers = list(dict.fromkeys(hit.tier for hit in hits))
    return LedgerDraft(
        id=uuid.uuid4(),
        at=timezone.now(),
        api_key_id=api_key_id,
        session_id=session_id or "",
        model=model,
        strategy=str(resolution.get("strategyUsed") or resolution.get("strategyRequested") or ""),
        tiers=tiers,
        memories=memory_refs(hits),
        total_tokens=sum(int(hit.tokens) for hit in hits),
        latency_ms=round(float(latency_ms), 3),
        system_message=system_message,
        query=query,
    )


def _extraction(*, ran: bool, learned: Iterable[str] = (), error: str | None = None) -> dict[str, Any]:
    return {"ran": ran, "learned": [str(i) for i in learned], "error": error}


NOT_EXTRACTED = _extraction(ran=False)  # learning off, nothing to learn from, or no complete answer


def _notify(rows: Iterable[InjectionEntry]) -> None:
    for row in rows:
        results = injection_recorded.send_robust(
            sender=InjectionEntry, entry_id=row.id, owner_id=row.api_key_id
        )
        for receiver, result in results:
            if isinstance(result, Exception):
                logger.error(
                    "memory.ledger.signal_failed",
                    extra={"receiver": getattr(receiver, "__name__", repr(receiver))},
                    exc_info=result,
                )


def write_entries(drafts: Iterable[LedgerDraft]) -> int:
    """Insert ``drafts`` in one transaction on this thread's connection; :data:`injection_recorded`
    is sent for each once it commits. Returns how many rows were written."""
    rows = [draft.row() for draft in drafts]
    if not rows:
        return 0
    with transaction.atomic():
        # The ids are set: bulk_create encrypts each system message bound to its row.
        InjectionEntry.objects.bulk_create(rows)
        transaction.on_commit(lambda: _notify(rows))
    return len(rows)


class LedgerWriter(DeferredWriter[uuid.UUID, LedgerDraft]):
    """Gathers drafts by injection id and writes them in batches on its own thread.

    A flush holds ``_writing`` from taking the batch until it is committed, so that
    :meth:`wait_for_writes` (and so :func:`ledger_mark_extraction`) can tell "not written yet" from
    "being written"."""

    thread_name = "memory-ledger"
    failure_event = "memory.ledger.flush_failed"

    def __init__(self) -> None:
        super().__init__()
        self._writing = threading.Lock()

    def merge(self, old: LedgerDraft, new: LedgerDraft) -> LedgerDraft:
        return new

    def write(self, batch: dict[uuid.UUID, LedgerDraft]) -> int:
        return write_entries(batch.values())

    def flush(self) -> int:
        with self._writing:
            return super().flush()

    def wait_for_writes(self) -> None:
        """Return once no flush is under way."""
        with self._writing:
            pass

    def amend(self, injection_id: uuid.UUID, extraction: dict[str, Any]) -> bool:
        """Set the extraction of a draft still waiting here; False when none waits under that id."""
        with self._lock:
            draft = self._pending.get(injection_id)
            if draft is None:
                return False
            draft.extraction = extraction
            return True

    def record(self, draft: LedgerDraft) -> None:
        if not self.deferrable():
            write_entries([draft])
            return
        self.gather({draft.id: draft})


WRITER = LedgerWriter()


@atexit.register
def _flush_at_exit() -> None:
    # Entries gathered but not yet written when the process exits would be lost.
    WRITER.flush()


def ledger_record(
    draft: LedgerDraft, *, request_id: str = "", extraction: dict[str, Any] | None = None
) -> None:
    """Record ``draft`` (see the module docstring: deferred, or at once where nothing can be).
    ``request_id`` is the upstream's ``x-request-id``; ``extraction`` is :data:`NOT_EXTRACTED` when
    the exchange will not be learned from, None while it may be."""
    draft.request_id = (request_id or "")[:REQUEST_ID_MAX]
    draft.extraction = extraction
    WRITER.record(draft)


def ledger_settle() -> int:
    """Write what is gathered now, on the calling thread, and wait for a write under way; returns how
    many entries this call wrote. The gateway calls it before enqueueing an extraction."""
    written = WRITER.flush()
    WRITER.wait_for_writes()
    return written


def ledger_mark_extraction(
    injection_id: uuid.UUID | str, *, learned: Iterable[str], error: str | None = None
) -> bool:
    """Record that the extraction of an entry's exchange ran: the ids of the memories it wrote, or
    the error that ended it. Returns False (logged) when the entry does not exist: pruned, its key
    deleted, the ledger off, or its write failed."""
    try:
        entry_id = uuid.UUID(str(injection_id))
    except ValueError:
        logger.warning("memory.ledger.bad_injection_id", extra={"injection_id": str(injection_id)})
        return False
    value = _extraction(ran=True, learned=learned, error=error)
    for _attempt in range(2):
        if InjectionEntry.objects.filter(pk=entry_id).update(extraction=value):
            return True
        if WRITER.amend(entry_id, value):
            return True
        WRITER.wait_for_writes()  # the draft may be in a batch being written right now
    logger.warning("memory.ledger.entry_missing", extra={"injection_id": str(entry_id)})
    return False


def ledger_prune(days: int, *, now: datetime | None = None) -> int:
    """Delete the entries older than ``days`` days (every entry for 0: no ledger); returns how many."""
    entries = InjectionEntry.objects.all()
    if days > 0:
        entries = entries.filter(at__lt=(now or timezone.now()) - timedelta(days=days))
    deleted, _ = entries.delete()
    if deleted:
        logger.info("ledger: pruned %s entries older than %s days", deleted, days)
    return deleted


# -- the read side ------------------------------------------------------------------------------------


@dataclass
class LedgerPage:
    entries: list[InjectionEntry]
    total: int
    limit: int
    offset: int
    deleted_ids: set[str] = field(default_factory=set)


def _visible(principal: Principal) -> QuerySet[InjectionEntry]:
    entries = InjectionEntry.objects.all()
    if principal.owner_ids is not None:
        entries = entries.filter(api_key_id__in=list(principal.owner_ids))
    return entries


def ledger_query(
    principal: Principal,
    *,
    api_key_id: uuid.UUID | str | None = None,
    session_id: str | None = None,
    model: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    memory_id: uuid.UUID | str | None = None,
    limit: int,
    offset: int = 0,
) -> LedgerPage:
    """The entries ``principal`` may see, newest first, narrowed by key, session, model, the instants
    ``since`` ≤ at < ``until`` and the id of a memory they injected; one page of them, with the ids of
    the memories they name that are deleted since. ``api_key_id`` of a key the caller cannot reach is
    a ``PermissionDenied`` (as on the memory list)."""
    owners = principal.owner_filter(api_key_id)
    entries = InjectionEntry.objects.all()
    if owners is not None:
        entries = entries.filter(api_key_id__in=list(owners))
    if session_id:
        entries = entries.filter(session_id=session_id)
    if model:
        entries = entries.filter(model=model)
    if since is not None:
        entries = entries.filter(at__gte=since)
    if until is not None:
        entries = entries.filter(at__lt=until)
    if memory_id:
        try:
            wanted = str(uuid.UUID(str(memory_id)))
        except ValueError:
            raise ValidationFailed("memoryId must be a UUID", field="memoryId") from None
        entries = entries.filter(
            RawSQL(
                dialect.json_array_has("memory_injections.memories", "id"),
                [wanted],
                output_field=BooleanField(),
            )
        )
    entries = entries.order_by("-at", "-id")
    page = list(entries[offset : offset + limit])
    return LedgerPage(
        entries=page,
        total=entries.count(),
        limit=limit,
        offset=offset,
        deleted_ids=deleted_memory_ids(page),
    )


def ledger_get(principal: Principal, id: uuid.UUID | str) -> InjectionEntry:
    """One entry ``principal`` may see; ``NotFound`` for an unknown, unreachable or malformed id (the
    same answer: ids of other tenants say nothing)."""
    try:
        entry_id = uuid.UUID(str(id))
    except ValueError:
        raise NotFound(f"Injection {id} not found", field="id") from None
    try:
        return _visible(principal).get(pk=entry_id)
    except InjectionEntry.DoesNotExist:
        raise NotFound(f"Injection {id} not found", field="id") from None


def deleted_memory_ids(entries: Iterable[InjectionEntry]) -> set[str]:
    """The ids named by ``entries`` whose memory no longer exists: no row for a key served by this
    database, unknown to the provider for a key whose memories live with one (a provider that cannot
    be reached is asked nothing: its memories are not called deleted)."""
    by_owner: dict[uuid.UUID, set[str]] = {}
    for entry in entries:
        by_owner.setdefault(entry.api_key_id, set()).update(m["id"] for m in entry.memories)
    if not by_owner:
        return set()
    keys = {k.pk: k for k in ApiKey.all_objects.filter(pk__in=list(by_owner)).only("id", "provider_id")}
    native = set().union(
        *(ids for owner, ids in by_owner.items() if owner not in keys or not keys[owner].provider_id)
    )
    deleted = set()
    ordered = sorted(native)
    for start in range(0, len(ordered), _ID_CHUNK):
        chunk = ordered[start : start + _ID_CHUNK]
        alive = {str(u) for u in Memory.objects.filter(uuid__in=chunk).values_list("uuid", flat=True)}
        deleted.update(set(chunk) - alive)
    for owner, ids in by_owner.items():
        key = keys.get(owner)
        if key is None or not key.provider_id:
            continue
        manager = manager_for(key)
        if manager is None:
            continue
        try:
            deleted.update(i for i in ids if manager.get(owner, uuid.UUID(i)) is None)
        except BackendUnavailable:
            logger.warning("memory.ledger.provider_unavailable", extra={"api_key": str(owner)})
    return deleted


def _iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def entry_json(entry: InjectionEntry, *, deleted_ids: set[str], detail: bool = False) -> dict[str, Any]:
    """An entry as the API and the Studio show it; ``detail`` adds the system message that was sent.
    A memory in ``deleted_ids`` is flagged ``"deleted": true``."""
    shown: dict[str, Any] = {
        "id": str(entry.id),
        "at": _iso(entry.at),
        "apiKeyId": str(entry.api_key_id),
        "sessionId": entry.session_id,
        "model": entry.model,
        "strategy": entry.strategy,
        "tiers": list(entry.tiers),
        "memories": [{**m, "deleted": m["id"] in deleted_ids} for m in entry.memories],
        "totalTokens": entry.total_tokens,
        "latencyMs": entry.latency_ms,
        "extraction": entry.extraction,
        "requestId": entry.request_id,
    }
    if detail:
        shown["systemMessage"] = entry.system_message
        shown["query"] = entry.query
    return shown


def tokens_per_day(principal: Principal, days: int = 30) -> list[tuple[date, uuid.UUID, int]]:
    """The memory tokens injected per day (local date) and key over the last ``days`` days, oldest
    first: what memory costs in prompt tokens."""
    start = timezone.localdate() - timedelta(days=days - 1)
    since = timezone.make_aware(datetime.combine(start, datetime.min.time()))
    rows = (
        _visible(principal)
        .filter(Q(at__gte=since))
        .annotate(day=TruncDate("at"))
        .values("day", "api_key_id")
        .annotate(tokens=Sum("total_tokens"))
        .order_by("day", "api_key_id")
    )
    return [(row["day"], row["api_key_id"], int(row["tokens"] or 0)) for row in rows]
