"""The cognitive rules of the native write path (issue 14): every memory written is analysed, and
checked against its owner's current memories that state the same slot.

:func:`read_memory` gives a memory's :class:`Reading`: its importance, category and entities
(:func:`memory.cognitive.analyse`), the claim slots it states (``slots``, indexed in
:class:`~memory.models.MemorySlot`) and the slots it may conflict with (``lookups``).
:func:`reconcile` then runs :func:`memory.cognitive.check` against the current memories (``valid_to``
null) found through those slots, in one query per owner for a whole batch:

* ``supersedes``: the old memory stops being current (``valid_to`` = the new one's start,
  ``superseded_by`` = the new one) and a :class:`~memory.models.Contradiction` records it, resolved
  ``auto``. Its row stays: that is the history.
* ``contradicts`` or ``ambiguous``: an open :class:`~memory.models.Contradiction`; both stay current
  until someone resolves it (:mod:`memory.services.contradictions`).

Both run inside the caller's transaction, so a write and what it did to the history commit together.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from memory.cognitive import Statement, analyse, check
from memory.cognitive.claims import hedged, read_claims, tokens, tool_kind
from memory.models import (
    Contradiction,
    ContradictionResolution,
    ContradictionStatus,
    Memory,
    MemorySlot,
)
from memory.services import vectorsync

__all__ = ["MAX_CANDIDATES", "Reading", "apply_reading", "read_memory", "reconcile"]

# The current memories one new memory is checked against, newest first: each check costs about
# 0.8 ms on a bulk corpus (both statements are read again), and a slot that this many current
# memories state is a slot of many values, whose look-alikes are compatible anyway.
MAX_CANDIDATES = 8
# Slots a hedged statement may touch without naming their value ("Google might be laying me off"),
# and the diet, which food named in any statement may put in doubt (memory.cognitive.contradiction).
_HEDGE_CUE_SLOTS = ("residence", "employer", "role", "relationship")
_ALWAYS_LOOKED_UP = ("diet",)
# Words that join a value's parts ("tacos and celery for side projects"): never a thing two values share.
_JOINERS = frozenset("and or but for with in on at of to from the a an not no my our".split())
# A slot index row is at most this long (MemorySlot.slot).
_SLOT_MAX = 200
# The current memories read per slot for a batch, newest first: a slot that many memories state (a word
# of a bulk corpus's values) would otherwise load all of them on every chunk of an import, inside its
# transaction. A new memory only ever looks at the newest MAX_CANDIDATES of each slot; the prefix holds
# more, so that memories the batch itself supersedes leave enough behind, and a slot whose prefix runs
# short is read whole (``_Stored.current``): the checks are those of reading every row.
_SLOT_PREFIX = MAX_CANDIDATES * 4


@dataclass(frozen=True, slots=True)
class Reading:
    """What the analysis on write found in one memory: ``importance`` (used unless the caller gave
    one), ``category``, ``entities`` as stored (``[{"kind", "text", "normalised"}]``), the slots it
    states (``slots``) and the slots of the memories it may conflict with (``lookups``)."""

    importance: float
    category: str
    entities: list[dict[str, str]]
    slots: frozenset[str]
    lookups: frozenset[str]


def _family(slot: str) -> str:
    family = slot.split(":", 1)[0]
    return "tool" if family == "do" else family


def _claim_slots(content: str, key: str | None) -> set[str]:
    """The index entries of the claims ``content`` makes: the slot itself, each content word of its
    value in its family (``preference~tea``: two slots about one thing, "tea" and "green tea") and
    alone (``w~tea``, which only a hedged statement looks up), the exclusive tool kind (``kind:editor``: vim and VS Code), ``prefer`` for a comparative preference, and the key."""
    out: set[str] = set()
    for claim in read_claims(content, key):
        out.add(claim.slot)
        family = _family(claim.slot)
        for word in tokens(claim.value):
            if word not in _JOINERS:
                out.update((f"{family}~{word}", f"w~{word}"))
        kind = tool_kind(claim.text)
        if kind is not None:
            out.add(f"kind:{kind}")
        if _family(claim.slot) == "prefer":
            out.add("prefer")
    if key:
        out.add(f"key:{key}")
    return {slot[:_SLOT_MAX] for slot in out}


def read_memory(content: str, *, type: str, key: str | None, source: str | None) -> Reading:
    """The :class:`Reading` of a memory about to be written. Pure (no database)."""
    analysis = analyse(content, type=type, source=source, key=key)
    slots = _claim_slots(content, key)
    lookups = {slot for slot in slots if not slot.startswith("w~")} | set(_ALWAYS_LOOKED_UP)
    if hedged(content):
        lookups.update(_HEDGE_CUE_SLOTS)
        lookups.update(f"w~{word}" for word in tokens(content) if word not in _JOINERS)
    return Reading(
        importance=analysis.importance,
        category=analysis.category[:32],
        entities=[{"kind": e.kind, "text": e.text, "normalised": e.normalised} for e in analysis.entities],
        slots=frozenset(slots),
        lookups=frozenset(slot[:_SLOT_MAX] for slot in lookups),
    )


def source_of(metadata: object) -> str | None:
    """The surface a memory was written from (``metadata["source"]``), for the importance."""
    value = metadata.get("source") if isinstance(metadata, dict) else None
    return value if isinstance(value, str) else None


def apply_reading(memory: Memory, reading: Reading, *, importance_given: bool) -> None:
    """Set the analysed fields on ``memory`` (not saved); its importance only when the caller gave none."""
    memory.category = reading.category
    memory.entities = reading.entities
    if not importance_given:
        memory.importance = reading.importance


def _start(memory: Memory) -> datetime:
    return memory.valid_from or memory.created_at


def _statement(memory: Memory) -> Statement:
    return Statement(content=memory.content, key=memory.key, type=memory.type, created_at=_start(memory))


def reconcile(written: Sequence[tuple[Memory, Reading]], *, edited: bool = False) -> list[Contradiction]:
    """Index the slots of ``written`` (saved memories, in the order they were written) and check each
    against its owner's current memories that share a slot, then against the ones written before it
    in ``written``. ``edited``: these memories existed and their content changed, so their old slot
    rows and the open contradictions about their old content are replaced. Returns the contradictions
    recorded (resolved ``auto`` for a supersession, ``open`` otherwise)."""
    if not written:
        return []
    seqs = [memory.seq for memory, _ in written]
    if edited:
        MemorySlot.objects.filter(memory_id__in=seqs).delete()
        Contradiction.objects.filter(
            Q(old_id__in=seqs) | Q(new_id__in=seqs), status=ContradictionStatus.OPEN
        ).delete()
    by_owner: dict[uuid.UUID, list[tuple[Memory, Reading]]] = {}
    for memory, reading in written:
        by_owner.setdefault(memory.owner_id, []).append((memory, reading))
    now = timezone.now()
    found: list[Contradiction] = []
    retired: dict[int, Memory] = {}
    slot_rows: list[tuple[uuid.UUID, int, str]] = []
    for owner_id, items in by_owner.items():
        stored = _Stored(owner_id, {s for _, r in items for s in r.lookups}, exclude=seqs)
        # The batch's own memories become candidates for the ones written after them.
        batch: dict[str, list[Memory]] = {}
        for memory, reading in items:
            candidates: dict[int, Memory] = {}
            for slot in reading.lookups:
                for pool in (stored.current(slot), batch.get(slot, ())):
                    for old in pool:
                        if old.valid_to is None and old.seq != memory.seq:
                            candidates[old.seq] = old
            # The newest first ((start, seq) is unique: the same order as sorting them all).
            ranked = heapq.nlargest(MAX_CANDIDATES, candidates.values(), key=lambda m: (_start(m), m.seq))
            new_statement = _statement(memory)
            for old in ranked:
                verdict = check(_statement(old), new_statement)
                if verdict.kind == "compatible":
                    continue
                record = Contradiction(
                    owner_id=owner_id,
                    old=old,
                    new=memory,
                    verdict=verdict.kind,
                    subject=verdict.subject[:200],
                    reason=verdict.reason,
                    confidence=verdict.confidence,
                    created_at=now,
                )
                if verdict.kind == "supersedes":
                    old.valid_to = _start(memory)
                    old.superseded_by_id = memory.seq
                    retired[old.seq] = old
                    record.status = ContradictionStatus.RESOLVED
                    record.resolution = ContradictionResolution.AUTO
                    record.resolved_at = now
                found.append(record)
            for slot in reading.slots:
                batch.setdefault(slot, []).append(memory)
                slot_rows.append((owner_id, memory.seq, slot))
    _insert_slots(slot_rows)
    if retired:
        Memory.objects.bulk_update(list(retired.values()), ["valid_to", "superseded_by"], batch_size=500)
        # The mirrors (Qdrant) keep ``valid_to`` in their payload for their own filter.
        vectorsync.after_update(list(retired))
    Contradiction.objects.bulk_create(found, batch_size=500)
    return found


def _insert_slots(rows: Sequence[tuple[uuid.UUID, int, str]]) -> None:
    """INSERT slot index rows with one ``executemany``: a bulk write indexes several slots per memory,
    and building a model instance for each cost more than the rest of the write."""
    if not rows:
        return
    as_db = (lambda u: u) if connection.features.has_native_uuid_field else (lambda u: u.hex)
    table = MemorySlot._meta.db_table
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {table} (owner_id, memory_id, slot) VALUES (%s, %s, %s)",
            [(as_db(owner), seq, slot) for owner, seq, slot in rows],
        )


_STORED_FIELDS = (
    "seq",
    "owner_id",
    "content",
    "key",
    "type",
    "created_at",
    "valid_from",
    "valid_to",
    "superseded_by",
)


class _Stored:
    """An owner's current memories (``valid_to`` null) stating each of ``slots``, outside ``exclude``,
    for one batch of :func:`reconcile`: the newest ``_SLOT_PREFIX`` of each slot in two queries, and a
    slot read whole when the batch superseded so many of its prefix that fewer than MAX_CANDIDATES are
    left current there. One instance per memory row, so a supersession seen through one slot is seen
    through all."""

    def __init__(self, owner_id: uuid.UUID, slots: Iterable[str], *, exclude: Sequence[int]) -> None:
        self.owner_id = owner_id
        self.exclude = list(exclude)
        self.memories: dict[int, Memory] = {}
        self.by_slot: dict[str, list[Memory]] = {}
        self.truncated: set[str] = set()
        slots = list(slots)
        if not slots:
            return
        pairs = self._newest(slots)
        self._fill(pairs)
        counts: dict[str, int] = {}
        for slot, _ in pairs:
            counts[slot] = counts.get(slot, 0) + 1
        self.truncated = {slot for slot, n in counts.items() if n >= _SLOT_PREFIX}

    def _newest(self, slots: list[str]) -> list[tuple[str, int]]:
        """``(slot, seq)`` of the newest ``_SLOT_PREFIX`` current memories of each slot (by start, then
        seq, as :func:`reconcile` orders its candidates). Plain SQL, like :func:`_insert_slots`: the
        ORM's window expression cost more to build than the statement costs to run, in every write's
        transaction."""
        table, memories = MemorySlot._meta.db_table, Memory._meta.db_table
        owner = self.owner_id if connection.features.has_native_uuid_field else self.owner_id.hex
        params: list[str | int | uuid.UUID] = [owner, *slots, *self.exclude, _SLOT_PREFIX]
        excluded = f"AND s.memory_id NOT IN ({', '.join(['%s'] * len(self.exclude))})" if self.exclude else ""
        sql = (
            "SELECT slot, memory_id FROM ("
            " SELECT s.slot, s.memory_id, ROW_NUMBER() OVER (PARTITION BY s.slot"
            "  ORDER BY COALESCE(m.valid_from, m.created_at) DESC, s.memory_id DESC) AS newest"
            f" FROM {table} s JOIN {memories} m ON m.seq = s.memory_id"
            f" WHERE s.owner_id = %s AND s.slot IN ({', '.join(['%s'] * len(slots))})"
            f" AND m.valid_to IS NULL {excluded}"
            ") ranked WHERE newest <= %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return [(slot, seq) for slot, seq in cursor.fetchall()]

    def _slot_rows(self, slots: list[str]):  # noqa: ANN202 - a MemorySlot queryset
        return MemorySlot.objects.filter(
            owner_id=self.owner_id, slot__in=slots, memory__valid_to__isnull=True
        ).exclude(memory_id__in=self.exclude)

    def _fill(self, pairs: list[tuple[str, int]]) -> None:
        """Add ``(slot, seq)`` rows; a memory already loaded keeps its instance (and what the batch did
        to it)."""
        missing = {seq for _, seq in pairs if seq not in self.memories}
        if missing:
            for memory in Memory.objects.filter(seq__in=missing).only(*_STORED_FIELDS):
                self.memories[memory.seq] = memory
        for slot, seq in pairs:
            if seq in self.memories:
                self.by_slot.setdefault(slot, []).append(self.memories[seq])

    def current(self, slot: str) -> list[Memory]:
        """The memories of ``slot`` to consider now: every one still current among them holds at least
        the slot's MAX_CANDIDATES newest current memories."""
        rows = self.by_slot.get(slot, [])
        if slot in self.truncated and sum(m.valid_to is None for m in rows) < MAX_CANDIDATES:
            self.truncated.discard(slot)
            self.by_slot[slot] = []
            self._fill(list(self._slot_rows([slot]).values_list("slot", "memory_id")))
            rows = self.by_slot[slot]
        return rows
