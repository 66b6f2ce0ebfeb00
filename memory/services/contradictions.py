"""Reading and resolving the contradictions found on write (:mod:`memory.services.cognitive`).

A reviewer (the REST API, the Studio) settles a contradiction in one of four ways, each one
transaction, audited (``contradiction.resolve``):

* ``keep_old``: the old memory is current again; the new one is superseded by it (``valid_to`` now).
* ``keep_new``: the old memory is superseded by the new one (``valid_to`` = the new one's start).
* ``keep_both``: not a contradiction: both are current, and neither points at the other any more.
* ``merge``: one new memory holds both contents (old first); the two are superseded by it.

A contradiction resolved ``auto`` (a supersession applied on write) can be resolved again: that is
how a reviewer undoes a supersession they disagree with.
"""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from memory.exceptions import NotFound, ValidationFailed
from memory.models import (
    AuditAction,
    Contradiction,
    ContradictionResolution,
    ContradictionStatus,
    Memory,
)
from memory.principals import Principal
from memory.services import audit, vectorsync
from memory.services.memories import MemoryInput, memory_create, notify_change
from memory.shapes import MemoryDict, iso, memory_json

__all__ = [
    "RESOLUTIONS",
    "contradiction_get",
    "contradiction_json",
    "contradiction_list",
    "contradiction_resolve",
]

RESOLUTIONS = ("keep_old", "keep_new", "keep_both", "merge")


class ContradictionDict(TypedDict):
    id: str
    apiKeyId: str
    verdict: str
    subject: str
    reason: str
    confidence: float | None
    status: str
    resolution: str | None
    createdAt: str | None
    resolvedAt: str | None
    old: MemoryDict
    new: MemoryDict


def contradiction_json(item: Contradiction) -> ContradictionDict:
    """The one JSON shape of a contradiction, with both memories in full."""
    return {
        "id": str(item.id),
        "apiKeyId": str(item.owner_id),
        "verdict": item.verdict,
        "subject": item.subject,
        "reason": item.reason,
        "confidence": item.confidence,
        "status": item.status,
        "resolution": item.resolution or None,
        "createdAt": iso(item.created_at),
        "resolvedAt": iso(item.resolved_at),
        "old": memory_json(item.old),
        "new": memory_json(item.new),
    }


def _visible(principal: Principal, owner_ids: frozenset[uuid.UUID] | None) -> QuerySet[Contradiction]:
    qs = Contradiction.objects.select_related("old__superseded_by", "new__superseded_by")
    limit = owner_ids if owner_ids is not None else principal.owner_ids
    return qs if limit is None else qs.filter(owner_id__in=list(limit))


def contradiction_list(
    principal: Principal,
    *,
    api_key_id: str | uuid.UUID | None = None,
    status: str | None = None,
    min_confidence: float | None = None,
    limit: int = 50,
    offset: int = 0,
) -> dict[str, Any]:
    """A page of the contradictions the principal may see, newest first, optionally by ``status`` and
    at least ``min_confidence`` (0..1; rows recorded before confidence was scored have none and are
    left out by it)."""
    qs = _visible(principal, principal.owner_filter(api_key_id))
    if status:
        qs = qs.filter(status=status)
    if min_confidence is not None:
        if not 0.0 <= min_confidence <= 1.0:
            raise ValidationFailed("minConfidence must be between 0 and 1", field="minConfidence")
        qs = qs.filter(confidence__gte=min_confidence)
    total = qs.count()
    rows = list(qs.order_by("-created_at", "-id")[offset : offset + limit])
    return {"data": rows, "total": total, "limit": limit, "offset": offset}


def contradiction_get(principal: Principal, contradiction_id: str) -> Contradiction:
    """One contradiction the principal may see; ``NotFound`` (field ``id``) otherwise, a malformed id
    included (the path names a resource: no such resource, as for an unknown one)."""
    try:
        wanted = uuid.UUID(str(contradiction_id))
    except ValueError:
        raise NotFound("Contradiction not found", field="id") from None
    found = _visible(principal, None).filter(id=wanted).first()
    if found is None:
        raise NotFound("Contradiction not found", field="id")
    return found


def _retire(memory: Memory, *, by: Memory, at: Any) -> None:
    memory.valid_to = at
    memory.superseded_by = by


def _restore(memory: Memory) -> None:
    memory.valid_to = None
    memory.superseded_by = None


@transaction.atomic
def contradiction_resolve(item: Contradiction, resolution: str, *, actor: audit.Actor) -> Contradiction:
    """Settle ``item`` as ``resolution`` (one of :data:`RESOLUTIONS`, see the module docstring)."""
    if resolution not in RESOLUTIONS:
        raise ValidationFailed(f"resolution must be one of {', '.join(RESOLUTIONS)}", field="resolution")
    now = timezone.now()
    old = Memory.objects.select_for_update().get(seq=item.old_id)
    new = Memory.objects.select_for_update().get(seq=item.new_id)
    merged: Memory | None = None
    if resolution == ContradictionResolution.KEEP_OLD:
        _restore(old)
        _retire(new, by=old, at=now)
    elif resolution == ContradictionResolution.KEEP_NEW:
        _restore(new)
        _retire(old, by=new, at=new.valid_from or new.created_at)
    elif resolution == ContradictionResolution.KEEP_BOTH:
        _restore(old)
        _restore(new)
    else:
        merged, _ = memory_create(
            MemoryInput(
                owner=new.owner,
                content=f"{old.content}\n{new.content}",
                type=new.type,
                session_id=new.session_id,
                metadata={"source": "merge", "merged": [str(old.uuid), str(new.uuid)]},
            )
        )
        # The merged memory states both: whatever its own check made of the two is replaced here.
        Contradiction.objects.filter(new=merged, old__in=[old, new]).delete()
        _retire(old, by=merged, at=merged.created_at)
        _retire(new, by=merged, at=merged.created_at)
    Memory.objects.bulk_update([old, new], ["valid_to", "superseded_by"])
    vectorsync.after_update([old.seq, new.seq])
    notify_change("updated", [old, new])
    item.status = ContradictionStatus.RESOLVED
    item.resolution = resolution
    item.resolved_at = now
    item.save(update_fields=["status", "resolution", "resolved_at"])
    item.old, item.new = old, new
    audit.record(
        actor=actor,
        action=AuditAction.CONTRADICTION_RESOLVE,
        owner_id=item.owner_id,
        count=1,
        details={
            "id": str(item.id),
            "resolution": resolution,
            "old": str(old.uuid),
            "new": str(new.uuid),
            "merged": str(merged.uuid) if merged is not None else None,
        },
    )
    return item
