"""Revoking credentials (API keys, management tokens): they stop authenticating at once, and the
revocation is written to the audit log in the same transaction."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.models import ApiKey, AuditAction, ManagementToken
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
    kind = "api_key" if isinstance(credential, ApiKey) else "management_token"
    details = {
        "credential": kind,
        "id": str(credential.pk),
        "name": credential.name,
        "prefix": credential.prefix,
    }
    if isinstance(credential, ApiKey):
        owners: list[uuid.UUID | None] = [credential.pk]
    else:
        owners = list(credential.owners.values_list("pk", flat=True)) or [None]
    for owner in owners:
        audit.record(
            actor=actor, action=AuditAction.CREDENTIAL_REVOKE, owner_id=owner, count=1, details=details
        )
    return True
