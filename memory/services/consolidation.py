"""Consolidation (``MemoryConsolidator``): one owner's near-duplicates merged into the richest copy,
with an undo record. The rules that decide what is a duplicate are
:mod:`memory.cognitive.consolidation`'s; this module reads the rows and the stored vectors and writes.

:func:`consolidation_plan` reads the owner's current memories (not expired, not superseded; neither
conversation turns, whose repetition is a conversation, nor summaries) and the vectors the database
store already holds (``VectorStore.owner_vectors``: nothing is embedded), proposes pairs whose cosine
passes the rules' thresholds, and groups them. A dry run stops there.

:func:`consolidate` applies a plan in one transaction per owner:

1. the rows are locked and checked again (a group whose rows changed since the plan is left out);
2. **the survivor is written first**: the union of the group's metadata (the survivor's values win),
   ``sessionsSeen`` (every session the fact was said in) and ``consolidatedFrom`` (the merged ids),
   the highest importance, the summed access count, the latest access, the longest expiry;
3. what pointed at a merged-away memory points at the survivor: history rows it superseded, and the
   sides of contradictions;
4. the merged-away rows are deleted (their FTS rows and vectors go with them, by the triggers);
5. the open contradictions it can settle are resolved ``consolidated``: both sides are now the same
   memory, or one side is no longer current;
6. the :class:`~memory.models.ConsolidationRun` and its :class:`~memory.models.ConsolidationMerge`
   rows record every row as it was (survivor, merged-away rows with their vectors, slot rows and
   links, contradictions), and the audit log gets ``memory.consolidate``.

Any failure rolls the whole owner back: no fact is ever lost, whatever step fails.

:func:`consolidation_undo` puts every row back as it was (same ``seq`` and ``uuid``; FTS by the
insert trigger; the stored vector when the index still has that signature, else the row is queued
for embedding), in one transaction, audited ``memory.consolidate_undo``. It refuses (409) a run
already undone, a survivor edited since, or a merged-away key taken since.

Only keys served natively (no provider, memories stored in clear) are consolidated; the others are
reported ``skipped`` with the reason.
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypedDict

import numpy as np
from django.db import connection, models, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory.backends.selection import served_natively
from memory.cognitive.consolidation import VECTOR_RELATED, Candidate, Group, plan_groups, proposed
from memory.exceptions import Conflict, NotFound
from memory.models import (
    ApiKey,
    AuditAction,
    ConsolidationMerge,
    ConsolidationRun,
    ConsolidationStatus,
    Contradiction,
    ContradictionResolution,
    ContradictionStatus,
    Memory,
    MemorySlot,
)
from memory.principals import Principal
from memory.services import audit, vectorsync
from memory.services.indexing import schedule_indexing, sealed_rows
from memory.services.memories import notify_bulk_change
from memory.services.retention import delete_rows
from memory.services.summarization import SUMMARY_IDS_KEY
from memory.shapes import MemoryDict, iso, memory_json
from memory.vectorstores.base import VectorItem, VectorStore
from memory.vectorstores.registry import database_choice

__all__ = [
    "ConsolidationPlan",
    "consolidate",
    "consolidate_owners",
    "consolidation_get",
    "consolidation_plan",
    "consolidation_runs",
    "consolidation_undo",
    "plan_json",
    "run_json",
]

logger = logging.getLogger("memory.consolidation")

# The rows a conversation turn starts with (memory.services.turns): a turn said twice is two events.
_TURN = r"^\([0-9]{4}-[0-9]{2}-[0-9]{2}\) [^:]+: "
# Rows of the similarity matrix computed at once: 1024 x 10,000 float32 is 40 MB.
_BLOCK = 1024
_PLAN_FIELDS = (
    "seq",
    "owner_id",
    "content",
    "key",
    "type",
    "created_at",
    "valid_from",
    "importance",
    "access_count",
    "entities",
)
_METADATA_SESSIONS = "sessionsSeen"
_METADATA_MERGED = "consolidatedFrom"


@dataclass
class PlannedGroup:
    survivor: Memory
    merged: list[Memory]
    reasons: list[str]
    cosines: list[float | None]


@dataclass
class ConsolidationPlan:
    """What a consolidation of ``owner`` does (or did): its groups, how many memories it read
    (``considered``), how many had no stored vector (``without_vector``: only their exact words can
    pair them), the open contradictions it settles, and ``skipped`` (why nothing was read) or the
    ``run`` it wrote."""

    owner: ApiKey
    groups: list[PlannedGroup] = field(default_factory=list)
    considered: int = 0
    without_vector: int = 0
    resolvable: int = 0
    skipped: str | None = None
    run: ConsolidationRun | None = None
    dry_run: bool = True

    @property
    def merged_count(self) -> int:
        return sum(len(g.merged) for g in self.groups)


# -- the plan


def _candidates_qs(owner: ApiKey) -> models.QuerySet[Memory]:
    now = timezone.now()
    return (
        Memory.objects.filter(owner=owner, valid_to__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .filter(context_seq__isnull=True)
        .exclude(content__regex=_TURN)
        .exclude(metadata__has_key=SUMMARY_IDS_KEY)
        .exclude(sealed_rows())
    )


def _skip_reason(owner: ApiKey) -> str | None:
    if owner.provider_id is not None:
        return "its memories live with a provider"
    if not served_natively(owner):
        return "memory encryption is on: the stored contents are sealed"
    return None


def _candidate(memory: Memory) -> Candidate:
    entities = frozenset(
        str(e.get("normalised", ""))
        for e in (memory.entities or [])
        if isinstance(e, dict) and e.get("normalised")
    )
    return Candidate(
        seq=memory.seq,
        content=memory.content,
        key=memory.key,
        type=memory.type,
        created_at=memory.valid_from or memory.created_at,
        importance=float(memory.importance),
        access_count=int(memory.access_count),
        entities=entities,
    )


class _Vectors:
    """The owner's stored vectors, normalised, by seq."""

    def __init__(self, store: VectorStore | None, owner: ApiKey, wanted: set[int]) -> None:
        listed = store.owner_vectors(owner.pk) if store is not None else None
        seqs, matrix = listed if listed is not None else (np.zeros(0, np.int64), np.zeros((0, 0), np.float32))
        keep = np.isin(seqs, np.fromiter(wanted, dtype=np.int64, count=len(wanted)))
        self.raw = matrix[keep]
        self.seqs = seqs[keep]
        norms = np.linalg.norm(self.raw, axis=1, keepdims=True) if len(self.raw) else np.zeros((0, 1))
        self.unit = (self.raw / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        self.row = {int(seq): i for i, seq in enumerate(self.seqs)}
        self.signature = store.signature() if store is not None and len(self.seqs) else None

    def cosine(self, a: int, b: int) -> float | None:
        i, j = self.row.get(a), self.row.get(b)
        if i is None or j is None:
            return None
        return float(self.unit[i] @ self.unit[j])

    def close_pairs(self) -> Iterable[tuple[int, int, float]]:
        """Every pair whose cosine is at least the rules' lowest threshold, in blocks of rows."""
        n = len(self.seqs)
        for start in range(0, n, _BLOCK):
            block = self.unit[start : start + _BLOCK] @ self.unit.T
            rows, cols = np.nonzero(block >= VECTOR_RELATED)
            for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
                if c > start + r:
                    yield int(self.seqs[start + r]), int(self.seqs[c]), float(block[r, c])

    def encoded(self, seq: int) -> str | None:
        i = self.row.get(seq)
        return None if i is None else base64.b64encode(self.raw[i].astype(np.float32).tobytes()).decode()


def _plan_rows(owner: ApiKey, store: VectorStore | None) -> tuple[list[Memory], list[Group], _Vectors]:
    # What the rules read (a 10,000-row owner loads in a fraction of the full rows' time); the groups'
    # rows are read again in full (_planned).
    rows = list(_candidates_qs(owner).order_by("seq").only(*_PLAN_FIELDS))
    vectors = _Vectors(store, owner, {m.seq for m in rows})
    candidates = {m.seq: _candidate(m) for m in rows}
    neighbours: dict[int, set[int]] = defaultdict(set)
    for a, b, cosine in vectors.close_pairs():
        if proposed(candidates[a], candidates[b], cosine):
            neighbours[a].add(b)
            neighbours[b].add(a)
    # The same content words propose a pair whatever the vectors say (and without vectors).
    by_words: dict[frozenset[str], list[int]] = defaultdict(list)
    for seq, candidate in candidates.items():
        if candidate.words:
            by_words[candidate.words].append(seq)
    for seqs in by_words.values():
        for i, a in enumerate(seqs):
            for b in seqs[i + 1 :]:
                if proposed(candidates[a], candidates[b], None):
                    neighbours[a].add(b)
                    neighbours[b].add(a)
    groups = plan_groups(list(candidates.values()), neighbours, vectors.cosine)
    return rows, groups, vectors


def _planned(groups: Sequence[Group]) -> list[PlannedGroup]:
    seqs = [c.seq for g in groups for c in (g.survivor, *g.merged)]
    by_seq = {m.seq: m for m in Memory.objects.filter(seq__in=seqs).select_related("superseded_by")}
    return [
        PlannedGroup(
            survivor=by_seq[g.survivor.seq],
            merged=[by_seq[m.seq] for m in g.merged],
            reasons=list(g.reasons),
            cosines=list(g.cosines),
        )
        for g in groups
    ]


def _resolvable(owner: ApiKey, groups: Sequence[PlannedGroup]) -> list[Contradiction]:
    """The owner's open contradictions a consolidation settles: both sides in one group, or a side
    no longer current."""
    group_of = {m.seq: i for i, g in enumerate(groups) for m in (g.survivor, *g.merged)}
    found = []
    for item in Contradiction.objects.filter(owner=owner, status=ContradictionStatus.OPEN).select_related(
        "old", "new"
    ):
        same = item.old_id in group_of and group_of.get(item.old_id) == group_of.get(item.new_id)
        if (
            same
            or item.old_id == item.new_id
            or item.old.valid_to is not None
            or item.new.valid_to is not None
        ):
            found.append(item)
    return found


def consolidation_plan(owner: ApiKey) -> ConsolidationPlan:
    """The dry run: the groups a consolidation of ``owner`` would merge, nothing written."""
    reason = _skip_reason(owner)
    if reason is not None:
        return ConsolidationPlan(owner=owner, skipped=reason)
    rows, groups, vectors = _plan_rows(owner, database_choice().store)
    planned = _planned(groups)
    return ConsolidationPlan(
        owner=owner,
        groups=planned,
        considered=len(rows),
        without_vector=len(rows) - len(vectors.row),
        resolvable=len(_resolvable(owner, planned)),
    )


# -- rows as JSON, exactly


def row_json(obj: models.Model) -> dict[str, Any]:
    """Every column of ``obj`` as JSON: datetimes in full ISO (microseconds kept), UUIDs as text."""
    out: dict[str, Any] = {}
    for f in obj._meta.concrete_fields:
        value = getattr(obj, f.attname)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, uuid.UUID):
            value = str(value)
        out[f.attname] = value
    return out


def row_from_json(model: type[models.Model], data: dict[str, Any]) -> models.Model:
    """The instance :func:`row_json` wrote (not saved)."""
    values: dict[str, Any] = {}
    for f in model._meta.concrete_fields:
        if f.attname not in data:
            continue
        value = data[f.attname]
        if value is not None and isinstance(f, models.DateTimeField):
            value = parse_datetime(value)
        elif value is not None and not isinstance(f, models.JSONField):
            value = f.to_python(value)
        values[f.attname] = value
    return model(**values)


# -- applying


def _merged_survivor(survivor: Memory, merged: Sequence[Memory], now: datetime) -> None:
    group = [survivor, *merged]
    metadata: dict[str, Any] = {}
    for memory in reversed(group):  # the survivor's own values win
        if isinstance(memory.metadata, dict):
            metadata.update(memory.metadata)
    sessions = set()
    for memory in group:
        if memory.session_id:
            sessions.add(memory.session_id)
        seen = memory.metadata.get(_METADATA_SESSIONS) if isinstance(memory.metadata, dict) else None
        if isinstance(seen, list):
            sessions.update(s for s in seen if isinstance(s, str))
    if sessions:
        metadata[_METADATA_SESSIONS] = sorted(sessions)
    before = metadata.get(_METADATA_MERGED)
    previous = [x for x in before if isinstance(x, str)] if isinstance(before, list) else []
    metadata[_METADATA_MERGED] = previous + [str(m.uuid) for m in merged]
    survivor.metadata = metadata
    survivor.importance = max(float(m.importance) for m in group)
    survivor.access_count = sum(int(m.access_count) for m in group)
    accessed = [m.last_accessed_at for m in group if m.last_accessed_at is not None]
    survivor.last_accessed_at = max(accessed) if accessed else None
    expiries = [m.expires_at for m in group]
    survivor.expires_at = None if any(e is None for e in expiries) else max(e for e in expiries if e)
    survivor.updated_at = now


def _links(
    merged_seqs: list[int],
) -> tuple[dict[int, list[int]], dict[int, list[list[Any]]], dict[int, list[str]]]:
    """What points at the merged-away rows: the memories each superseded, the turns whose context
    each is, and each one's slot index rows."""
    superseded: dict[int, list[int]] = defaultdict(list)
    for seq, by in Memory.objects.filter(superseded_by_id__in=merged_seqs).values_list(
        "seq", "superseded_by_id"
    ):
        superseded[int(by)].append(int(seq))
    contexts: dict[int, list[list[Any]]] = defaultdict(list)
    for seq, context, of in Memory.objects.filter(context_seq__in=merged_seqs).values_list(
        "seq", "context", "context_seq"
    ):
        if of is not None:
            contexts[int(of)].append([int(seq), context])
    slots: dict[int, list[str]] = defaultdict(list)
    for seq, slot in MemorySlot.objects.filter(memory_id__in=merged_seqs).values_list("memory_id", "slot"):
        slots[int(seq)].append(slot)
    return superseded, contexts, slots


def _contradiction_state(item: Contradiction) -> dict[str, Any]:
    return {
        "id": str(item.id),
        "old": item.old_id,
        "new": item.new_id,
        "status": item.status,
        "resolution": item.resolution,
        "resolvedAt": item.resolved_at.isoformat() if item.resolved_at else None,
    }


def _still_as_planned(group: PlannedGroup, locked: dict[int, Memory]) -> bool:
    for memory in (group.survivor, *group.merged):
        now = locked.get(memory.seq)
        if now is None or now.updated_at != memory.updated_at or now.valid_to is not None:
            return False
    return True


def consolidate(
    owner: ApiKey, *, dry_run: bool = False, actor: audit.Actor = audit.SYSTEM
) -> ConsolidationPlan:
    """Plan ``owner``'s consolidation and, unless ``dry_run``, apply it (see the module docstring).
    Returns the plan, with ``run`` set when something was merged."""
    plan = consolidation_plan(owner)
    if dry_run or plan.skipped or not plan.groups:
        return plan
    plan.dry_run = False
    store = database_choice().store
    with transaction.atomic():
        _apply(plan, store, actor)
    return plan


def _apply(plan: ConsolidationPlan, store: VectorStore | None, actor: audit.Actor) -> None:
    owner = plan.owner
    now = timezone.now()
    seqs = [m.seq for g in plan.groups for m in (g.survivor, *g.merged)]
    locked = {m.seq: m for m in Memory.objects.select_for_update().filter(seq__in=seqs)}
    groups = [
        PlannedGroup(locked[g.survivor.seq], [locked[m.seq] for m in g.merged], g.reasons, g.cosines)
        for g in plan.groups
        if _still_as_planned(g, locked)
    ]
    plan.groups = groups
    if not groups:
        return
    merged_seqs = [m.seq for g in groups for m in g.merged]
    survivor_of = {m.seq: g.survivor.seq for g in groups for m in g.merged}
    vectors = _Vectors(store, owner, set(merged_seqs))
    superseded, contexts, slots = _links(merged_seqs)
    run = ConsolidationRun.objects.create(owner=owner, actor=f"{actor.kind}:{actor.name or actor.id}"[:200])
    merges = []
    for group in groups:
        before = row_json(group.survivor)
        _merged_survivor(group.survivor, group.merged, now)
        group.survivor.save(
            update_fields=[
                "metadata",
                "importance",
                "access_count",
                "last_accessed_at",
                "expires_at",
                "updated_at",
            ]
        )
        merges.append(
            ConsolidationMerge(
                run=run,
                survivor=group.survivor.seq,
                survivor_uuid=group.survivor.uuid,
                survivor_before=before,
                survivor_written_at=now,
                reasons=[
                    {"id": str(m.uuid), "reason": reason, "cosine": None if c is None else round(c, 4)}
                    for m, reason, c in zip(group.merged, group.reasons, group.cosines, strict=True)
                ],
                removed=[
                    {
                        "row": row_json(m),
                        "vector": vectors.encoded(m.seq),
                        "signature": vectors.signature if m.seq in vectors.row else None,
                        "slots": slots.get(m.seq, []),
                        "contextOf": contexts.get(m.seq, []),
                        "superseded": superseded.get(m.seq, []),
                    }
                    for m in group.merged
                ],
            )
        )
    for by, rows in superseded.items():
        Memory.objects.filter(seq__in=rows).update(superseded_by_id=survivor_of[by])
    changed = _repoint_contradictions(owner, survivor_of)
    delete_rows([(seq, owner.pk) for seq in merged_seqs])
    _adopt_keys(groups)
    resolved = _resolve_contradictions(owner, groups, changed, now)
    ConsolidationMerge.objects.bulk_create(merges)
    run.groups = len(groups)
    run.merged = len(merged_seqs)
    run.resolved = resolved
    run.contradictions = list(changed.values())
    run.save(update_fields=["groups", "merged", "resolved", "contradictions"])
    vectorsync.after_update([g.survivor.seq for g in groups])
    audit.record(
        actor=actor,
        action=AuditAction.MEMORY_CONSOLIDATE,
        owner_id=owner.pk,
        count=len(merged_seqs),
        details={"run": str(run.id), "groups": len(groups), "contradictionsResolved": resolved},
    )
    plan.run = run
    plan.resolvable = resolved


def _repoint_contradictions(owner: ApiKey, survivor_of: dict[int, int]) -> dict[str, dict[str, Any]]:
    """Contradictions naming a merged-away memory name its survivor instead (the delete trigger
    would drop them otherwise); returns each changed row's state before, by id."""
    changed: dict[str, dict[str, Any]] = {}
    merged = list(survivor_of)
    for item in Contradiction.objects.filter(Q(old_id__in=merged) | Q(new_id__in=merged), owner=owner):
        changed[str(item.id)] = _contradiction_state(item)
        item.old_id = survivor_of.get(item.old_id, item.old_id)
        item.new_id = survivor_of.get(item.new_id, item.new_id)
        item.save(update_fields=["old", "new"])
    return changed


def _adopt_keys(groups: Sequence[PlannedGroup]) -> None:
    """A survivor without a key takes the key of the one merged-away memory that had one (after the
    delete: the key is unique per owner), so that a later upsert on it finds the survivor."""
    for group in groups:
        keys = [m.key for m in group.merged if m.key]
        if group.survivor.key is None and len(set(keys)) == 1:
            group.survivor.key = keys[0]
            group.survivor.save(update_fields=["key"])


def _resolve_contradictions(
    owner: ApiKey, groups: Sequence[PlannedGroup], changed: dict[str, dict[str, Any]], now: datetime
) -> int:
    resolved = 0
    for item in _resolvable(owner, groups):
        changed.setdefault(str(item.id), _contradiction_state(item))
        item.status = ContradictionStatus.RESOLVED
        item.resolution = ContradictionResolution.CONSOLIDATED
        item.resolved_at = now
        item.save(update_fields=["status", "resolution", "resolved_at"])
        resolved += 1
    return resolved


# -- undo


def consolidation_get(principal: Principal, run_id: str) -> ConsolidationRun:
    """One run the principal may reach; ``NotFound`` (field ``id``) otherwise, a malformed id too."""
    try:
        wanted = uuid.UUID(str(run_id))
    except ValueError:
        raise NotFound("Consolidation run not found", field="id") from None
    qs = ConsolidationRun.objects.filter(id=wanted)
    if principal.owner_ids is not None:
        qs = qs.filter(owner_id__in=list(principal.owner_ids))
    found = qs.select_related("owner").first()
    if found is None:
        raise NotFound("Consolidation run not found", field="id")
    return found


def _check_undoable(run: ConsolidationRun, merges: Sequence[ConsolidationMerge]) -> None:
    if run.status != ConsolidationStatus.APPLIED:
        raise Conflict("This consolidation was undone already", field="id")
    survivors = {m.seq: m for m in Memory.objects.filter(seq__in=[x.survivor for x in merges])}
    for merge in merges:
        survivor = survivors.get(merge.survivor)
        if survivor is None:
            raise Conflict(
                f"The survivor {merge.survivor_uuid} was deleted since: nothing to undo onto", field="id"
            )
        if survivor.updated_at != merge.survivor_written_at:
            raise Conflict(
                f"The survivor {merge.survivor_uuid} was edited since the consolidation", field="id"
            )
    removed = [entry["row"] for merge in merges for entry in merge.removed]
    uuids = [row["uuid"] for row in removed]
    if Memory.objects.filter(Q(seq__in=[row["seq"] for row in removed]) | Q(uuid__in=uuids)).exists():
        raise Conflict("A merged-away memory exists again", field="id")
    survivor_keys = {merge.survivor: merge.survivor_before.get("key") for merge in merges}
    keys = [row["key"] for row in removed if row.get("key")]
    taken = Memory.objects.filter(owner_id=run.owner_id, key__in=keys).values_list("seq", "key")
    for seq, key in taken:
        if not (
            seq in survivor_keys and survivor_keys[seq] != key
        ):  # the survivor gives back what it adopted
            raise Conflict(f"The key {key!r} belongs to another memory now", field="id")


@transaction.atomic
def consolidation_undo(run: ConsolidationRun, *, actor: audit.Actor = audit.SYSTEM) -> ConsolidationRun:
    """Put back every row ``run`` changed, exactly as it was (see the module docstring)."""
    run = ConsolidationRun.objects.select_for_update().get(pk=run.pk)
    merges = list(run.merges.all())
    _check_undoable(run, merges)
    store = database_choice().store
    signature = store.signature() if store is not None else None
    for merge in merges:
        row_from_json(Memory, merge.survivor_before).save()
    restored: list[Memory] = []
    vectors: list[VectorItem] = []
    for merge in merges:
        for entry in merge.removed:
            memory = row_from_json(Memory, entry["row"])
            assert isinstance(memory, Memory)
            exact = entry.get("vector") and entry.get("signature") == signature and store is not None
            if not exact:
                memory.needs_reindex = True
            memory.save(force_insert=True)
            restored.append(memory)
            if exact:
                raw = np.frombuffer(base64.b64decode(entry["vector"]), dtype=np.float32)
                vectors.append(VectorItem(memory.seq, str(memory.owner_id), raw))
            _restore_links(memory, entry)
    if vectors and store is not None and signature is not None:
        vectorsync.write_in_transaction(vectors, database=store, signature=signature)
    _restore_contradictions(run.contradictions)
    reindex = [m.seq for m in restored if m.needs_reindex]
    if reindex:
        transaction.on_commit(lambda: schedule_indexing(reindex))
    vectorsync.after_update([merge.survivor for merge in merges])
    notify_bulk_change([run.owner_id])
    run.status = ConsolidationStatus.UNDONE
    run.undone_at = timezone.now()
    run.save(update_fields=["status", "undone_at"])
    audit.record(
        actor=actor,
        action=AuditAction.MEMORY_CONSOLIDATE_UNDO,
        owner_id=run.owner_id,
        count=len(restored),
        details={"run": str(run.id)},
    )
    return run


def _restore_links(memory: Memory, entry: dict[str, Any]) -> None:
    slots = entry.get("slots") or []
    MemorySlot.objects.bulk_create(
        [MemorySlot(owner_id=memory.owner_id, memory_id=memory.seq, slot=s) for s in slots]
    )
    Memory.objects.filter(seq__in=entry.get("superseded") or []).update(superseded_by_id=memory.seq)
    # The delete trigger emptied the context of the turns that followed it (migration 0005).
    with connection.cursor() as cursor:
        for seq, context in entry.get("contextOf") or []:
            cursor.execute(
                "UPDATE memories SET context = %s, context_seq = %s WHERE seq = %s",
                [context, memory.seq, seq],
            )


def _restore_contradictions(states: Iterable[dict[str, Any]]) -> None:
    for state in states:
        Contradiction.objects.filter(id=state["id"]).update(
            old_id=state["old"],
            new_id=state["new"],
            status=state["status"],
            resolution=state["resolution"],
            resolved_at=parse_datetime(state["resolvedAt"]) if state["resolvedAt"] else None,
        )


# -- what the interfaces show


class MergedDict(TypedDict):
    memory: MemoryDict
    reason: str
    cosine: float | None


class GroupDict(TypedDict):
    survivor: MemoryDict
    merged: list[MergedDict]


class PlanDict(TypedDict):
    apiKeyId: str
    dryRun: bool
    skipped: str | None
    considered: int
    withoutVector: int
    groups: list[GroupDict]
    mergedCount: int
    contradictionsResolved: int
    runId: str | None


class RunDict(TypedDict):
    id: str
    apiKeyId: str
    createdAt: str | None
    actor: str
    status: str
    undoneAt: str | None
    groups: int
    merged: int
    contradictionsResolved: int


def plan_json(plan: ConsolidationPlan) -> PlanDict:
    """The one JSON shape of a consolidation (dry run or applied) of one owner."""
    return {
        "apiKeyId": str(plan.owner.pk),
        "dryRun": plan.run is None,
        "skipped": plan.skipped,
        "considered": plan.considered,
        "withoutVector": plan.without_vector,
        "groups": [
            {
                "survivor": memory_json(g.survivor),
                "merged": [
                    {"memory": memory_json(m), "reason": reason, "cosine": None if c is None else round(c, 4)}
                    for m, reason, c in zip(g.merged, g.reasons, g.cosines, strict=True)
                ],
            }
            for g in plan.groups
        ],
        "mergedCount": plan.merged_count,
        "contradictionsResolved": plan.resolvable,
        "runId": str(plan.run.id) if plan.run is not None else None,
    }


def run_json(run: ConsolidationRun) -> RunDict:
    return {
        "id": str(run.id),
        "apiKeyId": str(run.owner_id),
        "createdAt": iso(run.created_at),
        "actor": run.actor,
        "status": run.status,
        "undoneAt": iso(run.undone_at),
        "groups": run.groups,
        "merged": run.merged,
        "contradictionsResolved": run.resolved,
    }


def consolidate_owners(
    owners: Iterable[ApiKey], *, dry_run: bool = False, actor: audit.Actor = audit.SYSTEM
) -> list[ConsolidationPlan]:
    """:func:`consolidate` for each owner separately (never merged across owners), in order."""
    return [consolidate(owner, dry_run=dry_run, actor=actor) for owner in owners]


def consolidation_runs(owner_ids: Iterable[uuid.UUID], *, limit: int = 20) -> list[ConsolidationRun]:
    """The newest runs of these owners (the Studio's list of what can be undone)."""
    return list(ConsolidationRun.objects.filter(owner_id__in=list(owner_ids)).order_by("-created_at")[:limit])
