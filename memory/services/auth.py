"""Authentication: a credential in, a :class:`~memory.principals.Principal` out.

The one place where API keys, management tokens and staff sessions are checked. The interfaces only
shape the answer: the gateway (``gateway.chat.authenticate``: API keys, OpenAI-style errors), the REST
API (``memory.api.auth``: DRF's authentication and permission classes), the MCP tools (``memory.mcp``,
stdio and HTTP) and the Studio (``dashboard.owners``).

A secret is looked up by its SHA-256 (:func:`memory.models.hash_secret`): the hash column is unique, so
that is one indexed row, and the stored prefix adds nothing to the lookup (it only labels the credential
in lists). ``last_used_at`` follows one rule for both kinds of credential, :func:`touch_last_used`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db.models import Q
from django.utils import timezone

from memory.exceptions import DomainError, PermissionDenied
from memory.models import ApiKey, ManagementToken, TokenScope
from memory.principals import Principal, for_api_key

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

LAST_USED_RESOLUTION = timedelta(minutes=1)


class Unauthenticated(DomainError):
    """No usable credential: none sent, an unknown secret, or a revoked one (401)."""

    status = 401
    type = "authentication_error"


def bearer_secret(authorization: str | None) -> str | None:
    """The secret of an ``Authorization: Bearer <secret>`` value (the scheme in any case), or ``None``
    when there is none: no value, another scheme, or an empty secret."""
    scheme, _, secret = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return secret.strip() or None


def touch_last_used(credential: ApiKey | ManagementToken, *, now: datetime | None = None) -> bool:
    """Record that ``credential`` was just used, at most once per :data:`LAST_USED_RESOLUTION`.

    Every gateway request authenticates, so while the loaded ``last_used_at`` is fresh nothing is
    written at all; otherwise one conditional UPDATE, which a concurrent request that already wrote a
    fresh value turns into a no-op. Returns whether the row was written (and then sets the attribute).
    """
    now = now or timezone.now()
    cutoff = now - LAST_USED_RESOLUTION
    if credential.last_used_at is not None and credential.last_used_at >= cutoff:
        return False
    written = (
        type(credential)
        .objects.filter(pk=credential.pk)
        .filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=cutoff))
        .update(last_used_at=now)
    )
    if written:
        credential.last_used_at = now
    return bool(written)


def authenticate_api_key(secret: str, *, now: datetime | None = None) -> tuple[ApiKey, Principal]:
    """The gateway client whose key is ``secret``, and its principal (its own memories only).

    Raises :class:`Unauthenticated` for an unknown or a revoked key, with one message for both (one
    query finds only active keys). ``now`` is the time of use (defaults to the current time)."""
    key = ApiKey.active_for_secret(secret)
    if key is None:
        raise Unauthenticated("Incorrect or revoked API key")
    touch_last_used(key, now=now)
    return key, for_api_key(key)


def authenticate_token(secret: str, *, now: datetime | None = None) -> tuple[ManagementToken, Principal]:
    """The management token whose secret is ``secret``, and the principal it gives.

    Raises :class:`Unauthenticated` for an unknown or revoked token, and :class:`PermissionDenied`
    when :meth:`ManagementToken.reach_problem` refuses its reach: a read or write token bound to no API
    key (made before that rule, or its keys were deleted) is refused rather than widened to every owner.
    ``now`` is the time of use (defaults to the current time)."""
    found = ManagementToken.with_owners_for_secret(secret)
    if found is None:
        raise Unauthenticated("Invalid management token")
    token, owners = found
    if not token.is_active:
        raise Unauthenticated("This management token has been revoked")
    if ManagementToken.reach_problem(token.scope, bound=bool(owners)):
        raise PermissionDenied(
            f"This {token.scope} token is bound to no API key (none were given, or they were deleted), and "
            "only admin tokens may reach every API key. Bind it to API keys in the admin, or use a token "
            "created with --owner."
        )
    touch_last_used(token, now=now)
    return token, Principal(scope=token.scope, owner_ids=owners or None, label=f"token:{token.pk}")


def principal_for_staff(user: User | AnonymousUser) -> Principal:
    """The principal of a logged-in staff user (the Studio, or the API with a session): every owner,
    admin scope for a superuser, write otherwise. Raises :class:`Unauthenticated` for anyone else."""
    if not (user.is_authenticated and user.is_active and user.is_staff):
        raise Unauthenticated("Authentication required")
    scope = TokenScope.ADMIN if user.is_superuser else TokenScope.WRITE
    return Principal(scope=scope, owner_ids=None, label=f"user:{user.pk}")


def require_scope(principal: Principal, needed: str) -> None:
    """Raise :class:`PermissionDenied` unless ``principal`` has ``needed`` (scopes are cumulative)."""
    if not principal.has_scope(needed):
        raise PermissionDenied(f"This token lacks the '{needed}' scope")
