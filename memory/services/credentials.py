"""The life of a credential (API keys, management tokens): issuing a management token, rotating
either kind's secret, revoking and deleting. A rotated secret replaces the old one in the same row
(same id, same memories, same bindings): the old secret stops authenticating with the commit, as a
revoked one does. A deleted API key takes its memories with it. Each change is written to the audit
log in the same transaction.

API keys are created and changed in :mod:`memory.services.providers` (they carry a provider); the
rules here are those both kinds share."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory.exceptions import Conflict, NotFound, ValidationFailed
from memory.models import ApiKey, AuditAction, ManagementToken, Memory, TokenScope, hash_secret
from memory.services import audit
from memory.shapes import iso

# The secret formats of ``ApiKey.issue`` and ``ManagementToken.issue`` (a marker, then 256 random
# bits), and how much of each is kept as the displayed prefix. A rotated secret has the same shape,
# so that a client, a log filter or a secret scanner tells it from the other kind as before.
SECRET_FORMATS: dict[type[ApiKey] | type[ManagementToken], tuple[str, int]] = {
    ApiKey: ("sk-omr-", 12),
    ManagementToken: ("omt_", 10),
}
MAX_NAME_LENGTH = 200


@transaction.atomic
def credential_revoke(
    credential: ApiKey | ManagementToken, *, actor: audit.Actor, at: datetime | None = None
) -> bool:
    """Revoke ``credential`` as of ``at`` (default: now); returns whether it was active until now.

    Idempotent: revoking a revoked credential changes nothing and writes no event. An API key's
    event names the key as its owner; a token's, each API key it is bound to (one event with no
    owner for a global token).
    """
    at = at or timezone.now()
    model = type(credential)
    revoked = model.objects.filter(pk=credential.pk, revoked_at__isnull=True).update(revoked_at=at)
    if not revoked:
        return False
    credential.revoked_at = at
    for owner in _owners(credential):
        audit.record(
            actor=actor,
            action=AuditAction.CREDENTIAL_REVOKE,
            owner_id=owner,
            count=1,
            details=_details(credential),
        )
    return True


@transaction.atomic
def credential_delete(credential: ApiKey | ManagementToken, *, actor: audit.Actor) -> int:
    """Delete ``credential`` and return how many memories went with it (always 0 for a token).

    An API key's memories go by the cascade (and its vectors by ``memory.receivers``); its event,
    ``credential.delete``, names the key as owner and counts those memories, so the log still says
    what the key held once the key is gone. A token's event names each API key it was bound to (one
    event with no owner for a global token). The events and the delete commit together.
    """
    details = _details(credential)
    details["revoked"] = credential.revoked_at is not None
    memories = Memory.objects.filter(owner=credential).count() if isinstance(credential, ApiKey) else 0
    for owner in _owners(credential):
        audit.record(
            actor=actor,
            action=AuditAction.CREDENTIAL_DELETE,
            owner_id=owner,
            count=memories,
            details=details,
        )
    credential.delete()
    return memories


def _owners(credential: ApiKey | ManagementToken) -> list[uuid.UUID | None]:
    if isinstance(credential, ApiKey):
        return [credential.pk]
    return list(credential.owners.values_list("pk", flat=True)) or [None]


def _details(credential: ApiKey | ManagementToken) -> dict[str, str | bool]:
    return {
        "credential": "api_key" if isinstance(credential, ApiKey) else "management_token",
        "id": str(credential.pk),
        "name": credential.name,
        "prefix": credential.prefix,
    }


# -- rotation


def _new_secret(model: type[ApiKey] | type[ManagementToken]) -> tuple[str, str, str]:
    """A fresh secret for ``model``, with its displayed prefix and its stored hash."""
    marker, shown = SECRET_FORMATS[model]
    secret = marker + secrets.token_urlsafe(32)
    return secret, secret[:shown], hash_secret(secret)


@transaction.atomic
def credential_rotate(credential: ApiKey | ManagementToken, *, actor: audit.Actor) -> str:
    """Give ``credential`` a new secret and return it (it is not stored: only its hash is).

    The row keeps its id, so an API key keeps its memories, provider and tokens' bindings, and a
    token its scope and owners. The old secret stops authenticating when this commits: every request
    looks its secret's hash up afresh (``ApiKey.active_for_secret``,
    ``ManagementToken.with_owners_for_secret``), nothing caches it. A revoked credential is refused
    (``Conflict``, field ``revoked``): it stays revoked, and rotating must not hand out a secret that
    looks usable. Audited as ``credential.update`` with ``changes.secret`` naming the old and new
    prefixes (never a secret), one event per owner as for a revocation.
    """
    model = type(credential)
    secret, prefix, digest = _new_secret(model)
    old_prefix = credential.prefix
    hash_field = "key_hash" if isinstance(credential, ApiKey) else "token_hash"
    # Conditional on the row being active, so a revocation committed meanwhile is never undone.
    changed = model.objects.filter(pk=credential.pk, revoked_at__isnull=True).update(
        prefix=prefix, **{hash_field: digest}
    )
    if not changed:
        if not model.objects.filter(pk=credential.pk).exists():
            raise NotFound(f"{_kind_label(credential)} {credential.pk} not found", field="id")
        raise Conflict(
            f"{_kind_label(credential)} {credential.name!r} is revoked: it cannot be rotated "
            "(create a new one)",
            field="revoked",
        )
    credential.prefix = prefix
    setattr(credential, hash_field, digest)
    for owner in _owners(credential):
        audit.record(
            actor=actor,
            action=AuditAction.CREDENTIAL_UPDATE,
            owner_id=owner,
            count=1,
            details={**_details(credential), "changes": {"secret": {"from": old_prefix, "to": prefix}}},
        )
    return secret


def key_rotate(api_key: ApiKey, *, actor: audit.Actor) -> tuple[ApiKey, str]:
    """A new secret for ``api_key`` (:func:`credential_rotate`): the same id, memories and provider."""
    return api_key, credential_rotate(api_key, actor=actor)


def token_rotate(token: ManagementToken, *, actor: audit.Actor) -> tuple[ManagementToken, str]:
    """A new secret for ``token`` (:func:`credential_rotate`): the same scope and owners."""
    return token, credential_rotate(token, actor=actor)


def _kind_label(credential: ApiKey | ManagementToken) -> str:
    return "API key" if isinstance(credential, ApiKey) else "management token"


# -- management tokens


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValidationFailed("name must be a non-blank string", field="name")
    if len(name.strip()) > MAX_NAME_LENGTH:
        raise ValidationFailed(f"name must be at most {MAX_NAME_LENGTH} characters", field="name")
    return name.strip()


@transaction.atomic
def token_create(
    *, name: str, scope: str, owners: Iterable[ApiKey], actor: audit.Actor
) -> tuple[ManagementToken, str]:
    """Issue a management token of ``scope`` bound to ``owners`` (none: a global token, which only
    ``admin`` may be) and return it with its secret, which is not stored.

    ``ValidationFailed`` names ``name`` (blank, too long), ``scope`` (not read, write or admin) or
    ``owners`` (a read or write token with none, :meth:`ManagementToken.reach_problem`). Audited as
    ``credential.create``, one event per bound key (one with no owner for a global token).
    """
    name = _check_name(name)
    if scope not in TokenScope.values:
        raise ValidationFailed(f"scope must be one of {', '.join(TokenScope.values)}", field="scope")
    token, secret = ManagementToken.issue(name=name, scope=scope, owners=list(owners))
    for owner in _owners(token):
        audit.record(
            actor=actor,
            action=AuditAction.CREDENTIAL_CREATE,
            owner_id=owner,
            count=1,
            details={**_details(token), "scope": token.scope},
        )
    return token, secret


def token_get(token_id: str | uuid.UUID) -> ManagementToken:
    """The token ``token_id`` (``NotFound``, field ``id``, for an unknown or malformed id)."""
    try:
        wanted = token_id if isinstance(token_id, uuid.UUID) else uuid.UUID(str(token_id))
    except ValueError:
        raise NotFound(f"management token {token_id} not found", field="id") from None
    token = ManagementToken.objects.filter(pk=wanted).first()
    if token is None:
        raise NotFound(f"management token {token_id} not found", field="id")
    return token


def token_list() -> list[ManagementToken]:
    """Every management token, by name, with its bound keys loaded (two queries for the lot)."""
    return list(ManagementToken.objects.order_by("name", "created_at").prefetch_related("owners"))


def token_json(token: ManagementToken) -> dict[str, Any]:
    """A token as the Studio shows it (never its secret nor its hash); ``owners`` are the bound keys
    (empty: a global token)."""
    return {
        "id": str(token.pk),
        "name": token.name,
        "prefix": token.prefix,
        "scope": token.scope,
        "global": not token.owners.all(),
        "owners": [{"id": str(k.pk), "name": k.name, "prefix": k.prefix} for k in token.owners.all()],
        "createdAt": iso(token.created_at),
        "revokedAt": iso(token.revoked_at),
        "lastUsedAt": iso(token.last_used_at),
    }
