"""Who is asking, and which owners they may reach.

Every read and write in ``memory`` takes a :class:`Principal`; this is the one
place where owner isolation is decided, whatever the interface (REST, Studio,
MCP, gateway). Credentials become principals in :mod:`memory.services.auth`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from memory.exceptions import NotFound, PermissionDenied, ValidationFailed
from memory.models import SCOPE_RANK, ApiKey, TokenScope


@dataclass(frozen=True)
class Principal:
    """An authenticated caller.

    ``owner_ids`` is ``None`` for a global caller (an admin token bound to no
    API key, staff, the system), else the only owners it may read or write.
    ``scope`` is ``read``, ``write`` or ``admin`` (cumulative).
    """

    scope: str
    owner_ids: frozenset[uuid.UUID] | None
    label: str = ""

    @property
    def is_global(self) -> bool:
        return self.owner_ids is None

    def has_scope(self, needed: str) -> bool:
        return SCOPE_RANK[TokenScope(self.scope)] >= SCOPE_RANK[TokenScope(needed)]

    def can_reach(self, owner_id: uuid.UUID | str) -> bool:
        if self.owner_ids is None:
            return True
        return _as_uuid(owner_id) in self.owner_ids

    def resolve_owner(self, api_key_id: str | uuid.UUID | None, *, field: str = "apiKeyId") -> ApiKey:
        """Return the owner a write should go to.

        With no ``api_key_id`` a bound caller's single owner is used; otherwise
        the id must name an existing key this caller may reach. Unknown and
        unreachable keys give the same 404, so ids of other tenants leak nothing.
        """
        if api_key_id in (None, ""):
            if self.owner_ids is not None and len(self.owner_ids) == 1:
                (only,) = self.owner_ids
                return ApiKey.objects.get(pk=only)
            raise ValidationFailed("apiKeyId is required: every memory belongs to an API key", field=field)
        owner_uuid = _parse_uuid(api_key_id, field=field)
        if not self.can_reach(owner_uuid):
            raise NotFound(f"API key {api_key_id} not found", field=field)
        try:
            return ApiKey.objects.get(pk=owner_uuid)
        except ApiKey.DoesNotExist:
            raise NotFound(f"API key {api_key_id} not found", field=field) from None

    def owner_filter(
        self, api_key_id: str | uuid.UUID | None, *, field: str = "apiKeyId"
    ) -> frozenset[uuid.UUID] | None:
        """The owner ids a read is limited to: ``None`` means all (global callers only)."""
        if api_key_id not in (None, ""):
            owner_uuid = _parse_uuid(api_key_id, field=field)
            if not self.can_reach(owner_uuid):
                raise PermissionDenied("this token cannot read that API key's memories", field=field)
            return frozenset({owner_uuid})
        return self.owner_ids


def _as_uuid(value: object) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def _parse_uuid(value: object, *, field: str) -> uuid.UUID:
    try:
        return _as_uuid(value)
    except (ValueError, TypeError, AttributeError):
        raise ValidationFailed(f"{field} must be a UUID", field=field) from None


SYSTEM = Principal(scope=TokenScope.ADMIN, owner_ids=None, label="system")


def for_api_key(key: ApiKey) -> Principal:
    """The principal of a gateway client: its own memories only."""
    return Principal(scope=TokenScope.WRITE, owner_ids=frozenset({key.pk}), label=f"apikey:{key.pk}")
