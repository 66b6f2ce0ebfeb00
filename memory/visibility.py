"""Which memories a read may see: the one definition, rendered for each engine that filters.

A memory is visible under a :class:`Visibility` when it belongs to one of the owners (``None``: every
owner), has not expired at ``now`` (no expiry, or an expiry after ``now``), is in ``session_id`` (when
given), was created at or after ``created_after`` (the retention window, when given) and is current:
not superseded by a later memory (``valid_to`` null; memory.services.cognitive), or, with ``valid_at``,
still current at that moment (``valid_to`` null or after it). ``include_superseded`` drops that last
condition, for the reads that show history (a list asked for it, a memory fetched by its id). The same
rule is rendered as a queryset (selectors, the chronological tier, backfills), as SQL conditions on
``memories`` (the hot paths that skip the ORM) and as a Qdrant filter over the payload that
``memory.vectorstores.qdrant.store`` writes (``owner``, ``session_id``, ``expires_at``,
``created_at``, ``valid_to``).

One difference is inherent: Qdrant's payload keeps instants as whole unix seconds, so within the
second of an expiry or of the retention cutoff Qdrant may decide otherwise than SQLite. Retrieval
checks the rows of every vector hit in SQLite again (``engine.Filters.live``), so such a hit is never shown.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone

from memory.models import Memory

if TYPE_CHECKING:
    # qdrant-client is imported by qdrant_filter, where it runs (see there)
    from qdrant_client import models as qdrant_models


def owner_hex(owner_id: uuid.UUID | str) -> str:
    """An owner id as stored in the ``owner_id`` columns (SQLite, FTS5, vec0) and in Qdrant payloads:
    32 lower-case hex digits, without dashes."""
    if isinstance(owner_id, uuid.UUID):
        return owner_id.hex
    return str(owner_id).replace("-", "").lower()


def unix_seconds(value: datetime | None) -> int | None:
    """An instant as Qdrant's payload keeps it: whole unix seconds (None stays None)."""
    return None if value is None else int(value.timestamp())


def _as_uuid(value: uuid.UUID | str) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


@dataclass(frozen=True, kw_only=True)
class Visibility:
    """The read filters: owners (``None`` = every owner), not expired at ``now``, the session, the
    retention window, current (not superseded; at ``valid_at`` when given; any with
    ``include_superseded``). Owner ids may be given as UUIDs or as hex strings, with or without dashes;
    they are kept as a frozenset of UUIDs."""

    owner_ids: Collection[uuid.UUID | str] | None
    now: datetime = field(default_factory=timezone.now)
    session_id: str | None = None
    created_after: datetime | None = None
    include_superseded: bool = False
    valid_at: datetime | None = None
    _owner_hex: tuple[str, ...] | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        owners = self.owner_ids
        if owners is not None:
            owners = frozenset(_as_uuid(o) for o in owners)
            object.__setattr__(self, "owner_ids", owners)
            object.__setattr__(self, "_owner_hex", tuple(sorted(o.hex for o in owners)))
        object.__setattr__(self, "session_id", self.session_id or None)

    @classmethod
    def within(
        cls,
        *,
        owner_ids: Collection[uuid.UUID | str] | None,
        retention_days: int | None = None,
        session_id: str | None = None,
        now: datetime | None = None,
    ) -> Visibility:
        """The visibility of a read that keeps ``retention_days`` days (none: no window)."""
        now = now or timezone.now()
        return cls(
            owner_ids=owner_ids,
            now=now,
            session_id=session_id,
            created_after=now - timedelta(days=retention_days) if retention_days else None,
        )

    @property
    def owner_hex(self) -> list[str] | None:
        """The owners as stored (:func:`owner_hex`), sorted; None for every owner."""
        return None if self._owner_hex is None else list(self._owner_hex)

    @property
    def nobody(self) -> bool:
        """True when no owner is allowed (an empty owner set): nothing is visible."""
        return self._owner_hex == ()

    # -- renderings

    def queryset(self, qs: QuerySet[Memory] | None = None) -> QuerySet[Memory]:
        """The visible rows of ``qs`` (default: every memory)."""
        qs = Memory.objects.all() if qs is None else qs
        qs = qs.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=self.now))
        if self.owner_ids is not None:
            qs = qs.filter(owner_id__in=list(self.owner_ids))
        if self.session_id:
            qs = qs.filter(session_id=self.session_id)
        if self.created_after is not None:
            qs = qs.filter(created_at__gte=self.created_after)
        if not self.include_superseded:
            current = Q(valid_to__isnull=True)
            qs = qs.filter(current if self.valid_at is None else current | Q(valid_to__gt=self.valid_at))
        return qs

    def sql(self, alias: str, *, owners: bool = True) -> tuple[list[str], list[Any]]:
        """SQL conditions on the ``memories`` table as ``alias`` (to be AND-ed) and their parameters.
        ``owners=False`` leaves out the owner condition, for a query that filters owners itself (FTS5
        puts the owner in its MATCH expression)."""
        dt = connection.ops.adapt_datetimefield_value
        conditions = [f"({alias}.expires_at IS NULL OR {alias}.expires_at > %s)"]
        params: list[Any] = [dt(self.now)]
        if self.session_id:
            conditions.append(f"{alias}.session_id = %s")
            params.append(self.session_id)
        if self.created_after is not None:
            conditions.append(f"{alias}.created_at >= %s")
            params.append(dt(self.created_after))
        if not self.include_superseded:
            if self.valid_at is None:
                conditions.append(f"{alias}.valid_to IS NULL")
            else:
                conditions.append(f"({alias}.valid_to IS NULL OR {alias}.valid_to > %s)")
                params.append(dt(self.valid_at))
        if owners and self._owner_hex == ():
            conditions.append("1 = 0")  # nobody: PostgreSQL has no empty ``IN ()``
        elif owners and self._owner_hex is not None:
            marks = ", ".join(["%s"] * len(self._owner_hex))
            conditions.append(f"{alias}.owner_id IN ({marks})")
            params.extend(self._owner_hex)
        return conditions, params

    def qdrant_filter(self) -> qdrant_models.Filter:
        """The same rule over the Qdrant payload (whole seconds; see the module docstring)."""
        # optional: qdrant-client (about a second to import) is imported only once a Qdrant store asks
        from qdrant_client import models

        must: list[Any] = []
        if self._owner_hex is not None:
            must.append(models.FieldCondition(key="owner", match=models.MatchAny(any=list(self._owner_hex))))
        if self.session_id:
            must.append(
                models.FieldCondition(key="session_id", match=models.MatchValue(value=self.session_id))
            )
        if self.created_after is not None:
            must.append(
                models.FieldCondition(
                    key="created_at", range=models.Range(gte=unix_seconds(self.created_after))
                )
            )
        # Not expired: no expiry (null or missing) or an expiry after now.
        must.append(
            models.Filter(
                should=[
                    models.IsEmptyCondition(is_empty=models.PayloadField(key="expires_at")),
                    models.FieldCondition(key="expires_at", range=models.Range(gt=unix_seconds(self.now))),
                ]
            )
        )
        if not self.include_superseded:
            # Current: no ``valid_to`` (null or missing: a point written before it existed), or, at
            # ``valid_at``, one after it.
            current: list[Any] = [models.IsEmptyCondition(is_empty=models.PayloadField(key="valid_to"))]
            if self.valid_at is not None:
                current.append(
                    models.FieldCondition(key="valid_to", range=models.Range(gt=unix_seconds(self.valid_at)))
                )
            must.append(models.Filter(should=current))
        return models.Filter(must=must)
