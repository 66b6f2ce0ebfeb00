"""The audit log of destructive operations: who did what, when, to which owner, and how many rows.

Every destructive service (``memories.memory_delete``, ``retention.memory_clear`` and
``retention.bulk_delete``, ``summarization``, ``credentials.credential_revoke``, the settings writes
of ``memory.conf``) takes the caller as ``actor`` and calls :func:`record` inside its own
transaction: the event commits with the change, or neither does. The interfaces build the actor
(:func:`actor_for`: a REST or MCP token, a Studio user; :func:`command_actor`; :data:`SYSTEM`).

Events are read by :func:`audit_events` (owner-scoped like every read) and pruned by
:func:`prune_audit_events`, which the nightly lifecycle task runs with
``MEMORY_AUDIT_RETENTION_DAYS``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from memory.models import AuditAction, AuditEvent, ManagementToken
from memory.principals import Principal

logger = logging.getLogger("memory.audit")

VIAS = ("rest", "mcp", "studio", "admin", "command", "task")
# What an event stores for a secret setting's value (it says only whether one is set).
MASKED = "•••"


@dataclass(frozen=True)
class Actor:
    """Who asks for a destructive operation: ``kind`` (token, user, api_key, command, system), its id
    and name, and ``via``, the interface it came through."""

    kind: str
    id: str
    name: str
    via: str


SYSTEM = Actor(kind="system", id="", name="system", via="task")


def command_actor(command: str) -> Actor:
    """A management command run by an operator (``manage.py <command>``)."""
    return Actor(kind="command", id="", name=command, via="command")


def task_actor(task: str) -> Actor:
    """A periodic background task (the nightly summarisation)."""
    return Actor(kind="system", id="", name=task, via="task")


def actor_for(principal: Principal, *, via: str) -> Actor:
    """The actor behind an authenticated ``principal`` (its ``label``: ``token:<id>``, ``user:<pk>``,
    ``apikey:<id>``, ``system``), with the token's or user's name looked up."""
    kind, _, ident = principal.label.partition(":")
    name = ""
    token_id = _uuid_or_none(ident) if kind == "token" else None
    if token_id is not None:
        name = ManagementToken.objects.filter(pk=token_id).values_list("name", flat=True).first() or ""
    elif kind == "user":
        user_model = get_user_model()
        user = user_model.objects.filter(pk=ident).first() if ident.isdigit() else None
        name = user.get_username() if user is not None else ""
    elif not kind:
        kind = "unknown"
    return Actor(kind=kind, id=ident, name=name, via=via)


def user_actor(user: Any, *, via: str) -> Actor:
    """A logged-in staff user (the Studio, the Django admin)."""
    return Actor(kind="user", id=str(user.pk), name=user.get_username(), via=via)


def _uuid_or_none(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def record(
    *,
    actor: Actor,
    action: AuditAction | str,
    owner_id: uuid.UUID | str | None = None,
    count: int = 0,
    details: Mapping[str, Any] | None = None,
) -> AuditEvent:
    """Write one event, in the caller's transaction (a savepoint when it has one)."""
    with transaction.atomic():
        event = AuditEvent.objects.create(
            action=str(action),
            actor_kind=actor.kind,
            actor_id=actor.id[:64],
            actor_name=actor.name[:200],
            via=actor.via,
            owner_id=uuid.UUID(str(owner_id)) if owner_id is not None else None,
            count=max(0, int(count)),
            details=dict(details or {}),
        )
    logger.debug(
        "audit %s by %s:%s via %s, owner %s, %s rows",
        action,
        actor.kind,
        actor.name or actor.id,
        actor.via,
        owner_id,
        count,
    )
    return event


def record_per_owner(
    *,
    actor: Actor,
    action: AuditAction | str,
    counts: Mapping[Any, int],
    details: Mapping[str, Any] | None = None,
) -> list[AuditEvent]:
    """One event per owner of ``counts`` (``{owner id: rows}``), owners with no rows left out."""
    return [
        record(actor=actor, action=action, owner_id=owner, count=count, details=details)
        for owner, count in counts.items()
        if count
    ]


def settings_diff(
    before: Any, after: Any, names: Iterable[str], *, secret: Collection[str] = ()
) -> dict[str, dict[str, Any]]:
    """``{name: {"from": old, "to": new}}`` for the ``names`` whose value changed between the two
    settings objects; the values of the ``secret`` names are masked."""
    changed: dict[str, dict[str, Any]] = {}
    for name in names:
        old, new = getattr(before, name), getattr(after, name)
        if old == new:
            continue
        if name in secret:
            old, new = (MASKED if old else None), (MASKED if new else None)
        changed[name] = {"from": _jsonable(old), "to": _jsonable(new)}
    return changed


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


# -- the read side ----------------------------------------------------------------------------------


def audit_events(
    *,
    principal: Principal,
    owner_id: uuid.UUID | None = None,
    action: str | None = None,
    since: datetime | None = None,
) -> QuerySet[AuditEvent]:
    """The events this ``principal`` may see, newest first: a bound caller only those of its owners
    (never the global ones, such as settings changes); ``owner_id``, ``action`` and ``since`` narrow
    them."""
    qs = AuditEvent.objects.all()
    if principal.owner_ids is not None:
        qs = qs.filter(owner_id__in=list(principal.owner_ids))
    if owner_id is not None:
        qs = qs.filter(owner_id=owner_id)
    if action:
        qs = qs.filter(action=action)
    if since is not None:
        qs = qs.filter(at__gte=since)
    return qs.order_by("-at", "-id")


def audit_event_json(event: AuditEvent) -> dict[str, Any]:
    """An event as the API and the Studio show it."""
    return {
        "id": event.pk,
        "at": event.at.isoformat().replace("+00:00", "Z"),
        "action": event.action,
        "actor": {"kind": event.actor_kind, "id": event.actor_id, "name": event.actor_name, "via": event.via},
        "apiKeyId": str(event.owner_id) if event.owner_id is not None else None,
        "count": event.count,
        "details": event.details,
    }


def prune_audit_events(*, days: int, now: datetime | None = None) -> int:
    """Delete the events older than ``days`` days; returns how many."""
    cutoff = (now or timezone.now()) - timedelta(days=days)
    deleted, _ = AuditEvent.objects.filter(at__lt=cutoff).delete()
    if deleted:
        logger.info("audit: pruned %s events older than %s days", deleted, days)
    return deleted
