"""Authentication: a credential in, a :class:`~memory.principals.Principal` out.

The one place where API keys, management tokens and staff sessions are checked. The interfaces only
shape the answer: the gateway (``gateway.chat.authenticate``: API keys, OpenAI-style errors), the REST
API (``memory.api.auth``: DRF's authentication and permission classes), the MCP tools (``memory.mcp``,
stdio and HTTP) and the Studio (``dashboard.owners``).

A secret is looked up by its SHA-256 (:func:`memory.models.hash_secret`): the hash column is unique, so
that is one indexed row, and the stored prefix adds nothing to the lookup (it only labels the credential
in lists). ``last_used_at`` follows one rule for both kinds of credential, :func:`touch_last_used`.

Failures are throttled (:mod:`memory.services.throttle`): each attempt names its client address, and
one that comes from an address, or with a credential prefix, locked out after too many failures is
refused with ``Throttled`` (429) before its secret is looked up. Successes are never counted.

Authenticating never writes to the database on the request's path: every request would otherwise queue
for SQLite's one write lock (behind a bulk import, say) to store a statistic. Uses are gathered in
memory and written by one background thread in one transaction, ``MEMORY_ACCESS_FLUSH_SECONDS`` after
the first (as the access counters of :mod:`memory.services.usage` are); what is left is written when the
process exits. With ``MEMORY_ACCESS_FLUSH_SECONDS=0``, inside a transaction, or on an in-memory
database, the use is written at once, and skipped when the lock is busy.
"""

from __future__ import annotations

import atexit
import logging
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from memory.exceptions import DomainError, PermissionDenied
from memory.models import ApiKey, ManagementToken, TokenScope
from memory.principals import Principal, for_api_key
from memory.services.deferred import DeferredWriter
from memory.services.throttle import AUTH_FAILURES, credential_prefix
from omniroute.db.locking import DatabaseBusy, write_deadline

LAST_USED_RESOLUTION = timedelta(minutes=1)
# How long a use written at once (not deferred) waits for the write lock before it is skipped (seconds).
WRITE_NOW_DEADLINE_SECONDS = 0.05

logger = logging.getLogger("memory.auth")

Credential = ApiKey | ManagementToken
# A credential in the pending uses: its model and primary key.
CredentialRef = tuple[type[ApiKey] | type[ManagementToken], Any]


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


def touch_last_used(credential: Credential, *, now: datetime | None = None) -> bool:
    """Record that ``credential`` was just used, at most once per :data:`LAST_USED_RESOLUTION`.

    Every gateway request authenticates, so while the loaded ``last_used_at`` is fresh nothing is
    recorded at all; otherwise the use is queued for the background writer (see the module docstring),
    or written at once where uses are not deferred. The write is one conditional UPDATE, which a
    concurrent writer that already stored a fresher value turns into a no-op. Returns whether a use
    was recorded (and then sets the attribute).
    """
    now = now or timezone.now()
    cutoff = now - LAST_USED_RESOLUTION
    if credential.last_used_at is not None and credential.last_used_at >= cutoff:
        return False
    ref: CredentialRef = (type(credential), credential.pk)
    if LAST_USES.deferrable():
        if not LAST_USES.record(ref, now):
            return False
    elif not _write_now(ref, now):
        return False
    credential.last_used_at = now
    return True


def _write_now(ref: CredentialRef, at: datetime) -> int:
    """The use written on the caller's connection. Outside a transaction it waits at most
    :data:`WRITE_NOW_DEADLINE_SECONDS` for the lock, and a busy lock skips it (logged): a statistic
    never holds up, or fails, an authentication; the next use records it."""
    if connection.in_atomic_block:  # the caller's transaction holds the lock already
        return write_last_uses({ref: at})
    try:
        with write_deadline(WRITE_NOW_DEADLINE_SECONDS), transaction.atomic():
            return write_last_uses({ref: at})
    except DatabaseBusy:
        logger.info("last use of %s %s not written: the database is busy", ref[0].__name__, ref[1])
        return 0


def write_last_uses(uses: dict[CredentialRef, datetime]) -> int:
    """Store these uses (one transaction for several); a row whose ``last_used_at`` is within
    :data:`LAST_USED_RESOLUTION` of the use is left alone. Returns how many rows were written."""
    if len(uses) > 1:
        with transaction.atomic():
            return sum(_write_last_use(ref, at) for ref, at in uses.items())
    return sum(_write_last_use(ref, at) for ref, at in uses.items())


def _write_last_use(ref: CredentialRef, at: datetime) -> int:
    model, pk = ref
    cutoff = at - LAST_USED_RESOLUTION
    return (
        model.objects.filter(pk=pk)
        .filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=cutoff))
        .update(last_used_at=at)
    )


class LastUseRecorder(DeferredWriter[CredentialRef, datetime]):
    """Gathers credential uses and writes them on its own thread (see the module docstring)."""

    thread_name = "memory-last-use"
    failure_event = "memory.auth.last_use_flush_failed"

    def __init__(self) -> None:
        super().__init__()
        # The last use queued for each credential, so that a credential in steady use is queued once a
        # minute, not once per request while its row still holds the old value.
        self._queued: dict[CredentialRef, datetime] = {}

    def merge(self, old: datetime, new: datetime) -> datetime:
        return max(old, new)

    def write(self, batch: dict[CredentialRef, datetime]) -> int:
        return write_last_uses(batch)

    def record(self, ref: CredentialRef, at: datetime) -> bool:
        """Queue a use; returns False when one within :data:`LAST_USED_RESOLUTION` is queued already."""
        with self._lock:
            queued = self._queued.get(ref)
            if queued is not None and at - queued < LAST_USED_RESOLUTION:
                return False
            self._queued[ref] = at
        self.gather({ref: at})
        return True


LAST_USES = LastUseRecorder()


def flush_last_uses() -> int:
    """Write the queued credential uses now (tests, shutdown, commands)."""
    return LAST_USES.flush()


@atexit.register
def _flush_at_exit() -> None:
    LAST_USES.flush()


def authenticate_api_key(
    secret: str, *, client_ip: str = "", now: datetime | None = None
) -> tuple[ApiKey, Principal]:
    """The gateway client whose key is ``secret``, and its principal (its own memories only).

    Raises :class:`Unauthenticated` for an unknown or a revoked key, with one message for both (one
    query finds only active keys), and ``Throttled`` while ``client_ip`` (the request's
    :func:`~memory.services.throttle.request_ip`; '' when there is none) or the key's prefix is locked
    out. ``now`` is the time of use (defaults to the current time)."""
    prefix = credential_prefix(secret)
    AUTH_FAILURES.check(ip=client_ip, credential=prefix)
    key = ApiKey.active_for_secret(secret)
    if key is None:
        AUTH_FAILURES.fail(ip=client_ip, credential=prefix)
        raise Unauthenticated("Incorrect or revoked API key")
    touch_last_used(key, now=now)
    return key, for_api_key(key)


def authenticate_token(
    secret: str, *, client_ip: str = "", now: datetime | None = None
) -> tuple[ManagementToken, Principal]:
    """The management token whose secret is ``secret``, and the principal it gives.

    Raises :class:`Unauthenticated` for an unknown or revoked token, ``Throttled`` while ``client_ip``
    ('' when there is none: stdio MCP) or the token's prefix is locked out, and
    :class:`PermissionDenied` when :meth:`ManagementToken.reach_problem` refuses its reach: a read or
    write token bound to no API key (made before that rule, or its keys were deleted) is refused rather
    than widened to every owner (not a failure the throttle counts: the secret was right).
    ``now`` is the time of use (defaults to the current time)."""
    prefix = credential_prefix(secret)
    AUTH_FAILURES.check(ip=client_ip, credential=prefix)
    found = ManagementToken.with_owners_for_secret(secret)
    if found is None or not found[0].is_active:
        AUTH_FAILURES.fail(ip=client_ip, credential=prefix)
        raise Unauthenticated(
            "Invalid management token" if found is None else "This management token has been revoked"
        )
    token, owners = found
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
