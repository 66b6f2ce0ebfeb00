"""The read side: every query that returns memories goes through here.

Every selector takes a :class:`~memory.principals.Principal` and never returns a
row of an owner the principal cannot reach, nor an expired row (the rule is
:class:`memory.visibility.Visibility`).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import BooleanField, Count, F, IntegerField, OrderBy, Q, QuerySet, Sum
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KT
from django.db.models.functions import Length, TruncDate
from django.utils import timezone

from memory import dialect
from memory.cognitive.entities import fold
from memory.conf import get_memory_settings
from memory.exceptions import NotFound, ValidationFailed
from memory.models import ApiKey, Memory
from memory.principals import Principal
from memory.retrieval.budget import estimate_tokens
from memory.retrieval.engine import Hit, retrieve
from memory.visibility import Visibility

DEFAULT_SEARCH_LIMIT = 20
# ``type`` filters the ranked list, so a filtered search ranks this many before filtering.
UNFILTERED_CANDIDATES = 100
# The default budget of a search while memory is disabled (the settings' maxTokens budgets injection).
BUDGET_WHEN_DISABLED = 2000


def live_memories(*, now: datetime | None = None) -> QuerySet[Memory]:
    """Memories that have not expired, superseded ones included (counts, retention, summaries: the
    history is still stored memory)."""
    return Visibility(owner_ids=None, now=now or timezone.now(), include_superseded=True).queryset()


def visible_memories(
    *,
    principal: Principal,
    owner_ids: Collection[uuid.UUID] | None = None,
    include_superseded: bool = True,
) -> QuerySet[Memory]:
    """Live memories limited to ``owner_ids`` (already checked against the principal)
    or, when ``None``, to everything the principal may reach. ``include_superseded=False`` keeps
    only the current ones (the list's default)."""
    limit = owner_ids if owner_ids is not None else principal.owner_ids
    return Visibility(owner_ids=limit, include_superseded=include_superseded).queryset()


def with_entity(qs: QuerySet[Memory], entity: str) -> QuerySet[Memory]:
    """The memories of ``qs`` that name ``entity``, compared folded ("Lyon", "lyon", "São Paulo" /
    "sao paulo") with the ``normalised`` form the analysis stored."""
    wanted = fold(entity)
    named = RawSQL(
        dialect.json_array_has("memories.entities", "normalised"), [wanted], output_field=BooleanField()
    )
    return qs.annotate(names_entity=named).filter(names_entity=True)


def parse_memory_id(value: object) -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        raise ValidationFailed("id must be a UUID", field="id") from None


def memory_get(*, principal: Principal, memory_id: str | uuid.UUID) -> Memory:
    """Return one visible memory; ``NotFound`` for unknown, expired or unreachable ids."""
    memory_uuid = parse_memory_id(memory_id)
    try:
        return visible_memories(principal=principal).select_related(None).get(uuid=memory_uuid)
    except Memory.DoesNotExist:
        raise NotFound("Memory not found", field="id") from None


def tokens_used(qs: QuerySet[Memory]) -> int:
    """Σ floor((len(content) + 3) / 4) per row, as the original's SQL aggregate."""
    expr = (Length("content") + 3) / 4
    total = qs.aggregate(total=Sum(expr, output_field=IntegerField()))["total"]
    return int(total or 0)


def _source_of(memory: Memory) -> str | None:
    value = memory.metadata.get("source") if isinstance(memory.metadata, dict) else None
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class ListOrder:
    """One ordering of the memory list: its column as SQL (``expression``) and as a value read from a
    ``Memory`` (``value``), for the lists a provider answers, which are sorted in memory. Both put a
    missing value (never used, no source) last when descending and first when ascending, as SQLite
    does for NULL, and break ties newest first."""

    name: str
    descending: bool
    expression: Any
    value: Callable[[Memory], Any]

    def order_by(self) -> list[OrderBy]:
        # Explicit, since PostgreSQL's default is the reverse (NULL counts as largest there).
        nulls = {"nulls_last": True} if self.descending else {"nulls_first": True}
        column = OrderBy(self.expression, descending=self.descending, **nulls)
        return [column, F("created_at").desc(), F("seq").desc()]

    def sort(self, memories: Iterable[Memory]) -> list[Memory]:
        rows = sorted(memories, key=lambda m: m.created_at, reverse=True)  # the ties, newest first
        if self.name == "created":
            return rows if self.descending else rows[::-1]
        present = [m for m in rows if self.value(m) is not None]
        missing = [m for m in rows if self.value(m) is None]
        present.sort(key=self.value, reverse=self.descending)
        return present + missing if self.descending else missing + present


# The orderings of the memory list, by the name ``memory_list`` takes (``-`` in front: descending).
LIST_ORDERINGS: dict[str, tuple[Any, Callable[[Memory], Any]]] = {
    "created": (F("created_at"), lambda m: m.created_at),
    "type": (F("type"), lambda m: m.type),
    "key": (F("key"), lambda m: m.key),
    "session": (F("session_id"), lambda m: m.session_id),
    "source": (KT("metadata__source"), _source_of),
    "importance": (F("importance"), lambda m: m.importance),
    "uses": (F("access_count"), lambda m: m.access_count),
    "lastUsed": (F("last_accessed_at"), lambda m: m.last_accessed_at),
}
DEFAULT_ORDERING = "-created"


def list_order(ordering: str | None) -> ListOrder:
    """The :class:`ListOrder` named ``ordering`` (``importance``, ``-uses``…; None: newest first);
    ``ValidationFailed`` (field ``ordering``) for any other name."""
    text = ordering or DEFAULT_ORDERING
    name = text.removeprefix("-")
    if not isinstance(ordering, str | None) or name not in LIST_ORDERINGS:
        names = ", ".join(LIST_ORDERINGS)
        raise ValidationFailed(
            f"ordering must be one of {names}, each optionally preceded by '-' (descending)",
            field="ordering",
        )
    expression, value = LIST_ORDERINGS[name]
    return ListOrder(name=name, descending=text.startswith("-"), expression=expression, value=value)


def memory_list(
    *,
    principal: Principal,
    api_key_id: str | uuid.UUID | None = None,
    type: str | None = None,
    session_id: str | None = None,
    q: str | None = None,
    page: int = 1,
    limit: int = 50,
    offset: int | None = None,
    ordering: str | None = None,
    entity: str | None = None,
    include_superseded: bool = False,
) -> dict[str, Any]:
    """A page of memories, newest first unless ``ordering`` names another column (see
    :data:`LIST_ORDERINGS`, :func:`list_order`), with totals over all pages.

    Only current memories are listed (not superseded by a later one) unless ``include_superseded``;
    ``entity`` keeps the memories naming it (:func:`with_entity`).

    ``offset`` wins over ``page``; the reported page is then
    ``offset // limit + 1``. ``stats.tokensUsed`` covers the owner filter only
    (not type, session or q), as in the original.
    """
    order = list_order(ordering)
    owner_ids = principal.owner_filter(api_key_id)
    base = visible_memories(principal=principal, owner_ids=owner_ids, include_superseded=include_superseded)
    qs = base
    if entity and entity.strip():
        qs = with_entity(qs, entity)
    if type:
        qs = qs.filter(type=type)
    if session_id:
        qs = qs.filter(session_id=session_id)
    if q and q.strip():
        needle = q.strip()
        qs = qs.filter(Q(content__icontains=needle) | Q(key__icontains=needle))
    if offset is not None:
        start = max(0, offset)
        page = start // limit + 1
    else:
        start = (page - 1) * limit
    by_type = {
        row["type"]: row["n"]
        for row in qs.order_by().values("type").annotate(n=Count("seq")).order_by("type")
    }
    total = sum(by_type.values())
    listed = qs.select_related("superseded_by") if include_superseded else qs
    rows = list(listed.order_by(*order.order_by())[start : start + limit])
    return {
        "data": rows,
        "total": total,
        "page": page,
        "limit": limit,
        "totalPages": math.ceil(total / limit) if limit else 0,
        "stats": {"total": total, "byType": by_type, "tokensUsed": tokens_used(base)},
    }


@dataclass(frozen=True)
class Activity:
    """Memories created per day (oldest first) and live memories per type."""

    days: list[tuple[date, int]]
    by_type: list[tuple[str, int]]

    @property
    def total_in_window(self) -> int:
        return sum(n for _, n in self.days)


def memory_activity(
    *, principal: Principal, owner_ids: Collection[uuid.UUID] | None, days: int = 30
) -> Activity:
    """Memories created per day over the last ``days`` days, and live memories per type (2 queries)."""
    today = timezone.localdate()
    start = today - timedelta(days=days - 1)
    qs = visible_memories(principal=principal, owner_ids=owner_ids)
    per_day = {
        row["day"]: row["n"]
        for row in qs.filter(created_at__date__gte=start)
        .annotate(day=TruncDate("created_at"))
        .order_by()
        .values("day")
        .annotate(n=Count("seq"))
    }
    by_type = [
        (row["type"], row["n"])
        for row in qs.order_by().values("type").annotate(n=Count("seq")).order_by("-n", "type")
    ]
    series = [(start + timedelta(days=i), per_day.get(start + timedelta(days=i), 0)) for i in range(days)]
    return Activity(days=series, by_type=by_type)


@dataclass(frozen=True)
class MemorySearch:
    """What :func:`memory_search` found: ``hits`` in rank order and the tokens of their contents.
    ``strategy`` is what ran (the configured one may degrade, e.g. to keyword); ``resolution`` says
    why, and is None when nothing ran (a zero budget)."""

    hits: list[Hit]
    total_tokens: int
    strategy: str
    resolution: dict[str, Any] | None


def memory_search(
    *,
    principal: Principal,
    owner: ApiKey,
    query: str | None = None,
    type: str | None = None,
    max_tokens: int | None = None,
    limit: int | None = None,
) -> MemorySearch:
    """Rank one owner's memories for ``query`` with the configured strategy (the MCP search tool).

    The budget is ``max_tokens`` or, by default, the settings' ``maxTokens`` when memory is enabled
    and ``BUDGET_WHEN_DISABLED`` otherwise (so a search works while injection is off). ``type``
    filters the ranked list, then ``limit`` (default ``DEFAULT_SEARCH_LIMIT``) cuts it. What is
    returned counts as accessed, as in the gateway's recall. An owner whose memories live with a
    provider is ranked there (``memory.store.retrieve``; its rows have no access counters).
    """
    if not principal.can_reach(owner.pk):
        raise NotFound(f"API key {owner.pk} not found", field="apiKeyId")
    settings = get_memory_settings()
    if max_tokens is not None:
        budget = max_tokens
    else:
        budget = settings.maxTokens if settings.enabled else BUDGET_WHEN_DISABLED
    wanted = limit or DEFAULT_SEARCH_LIMIT
    hits: list[Hit] = []
    resolution = None
    ranker = retrieve
    if owner.provider_id is not None:
        from memory.store import retrieve as ranker  # memory.store imports this module
    if budget > 0:
        result = ranker(
            owner_ids=frozenset({owner.pk}),
            query=query or "",
            strategy=settings.retrieval_strategy,
            max_tokens=budget,
            limit=UNFILTERED_CANDIDATES if type else wanted,
            touch=True,
        )
        hits, resolution = result.hits, dict(result.resolution)
    hits = [hit for hit in hits if not type or hit.memory.type == type][:wanted]
    return MemorySearch(
        hits=hits,
        total_tokens=sum(estimate_tokens(hit.memory.content) for hit in hits),
        strategy=resolution["strategyUsed"] if resolution else settings.retrieval_strategy,
        resolution=resolution,
    )
