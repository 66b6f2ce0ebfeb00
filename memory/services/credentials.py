"""Revoking and deleting credentials (API keys, management tokens): a revoked one stops
authenticating at once, a deleted API key takes its memories with it; each is written to the audit
log in the same transaction."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.models import ApiKey, AuditAction, ManagementToken, Memory
from memory.services import audit


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
