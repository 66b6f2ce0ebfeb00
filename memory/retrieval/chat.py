"""The gateway's retrieval plan: which owners, strategy, budget, scope and retention a key's chat uses.

:func:`chat_retrieval` reads the settings once into a :class:`ChatRetrieval`; the gateway runs it
(:func:`retrieve_for_chat`), and the Studio's Sandbox runs the same plan with only the fields an operator
widened changed (``memory.retrieval.preview``).

A key whose memories live with a provider (``ApiKey.provider``) is ranked by that provider through
``memory.store.retrieve`` with the same budget, limit, session and retention; its ``resolution`` names
the provider and every fallback taken; so is every key while memory encryption is on (its memories
are sealed, ``memory.backends.encrypted``). A key on the native store runs the native engine directly:
the plan knows which from ``ApiKey.provider_id``, already on the row, so the gateway's hot path gains
no query.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings as django_settings

from memory import store
from memory.backends.selection import served_natively
from memory.conf import MemorySettings, get_memory_settings
from memory.models import ApiKey
from memory.retrieval.engine import RetrievalResult, retrieve


@dataclass(frozen=True)
class ChatRetrieval:
    """What the gateway retrieves with for one key, read from the settings once
    (:func:`chat_retrieval`). The Sandbox runs the same plan, changing only the
    fields an operator widened explicitly (``dataclasses.replace``)."""

    owner_ids: frozenset | None
    query: str | None
    strategy: str  # internal name: the settings' "recent" is "exact"
    max_tokens: int
    limit: int
    scope: str  # the scope that applies: "global" only for keys allowed it
    session_id: str | None
    retention_days: int
    # The one key read keeps its memories with a provider: ranked there (``memory.store.retrieve``).
    on_provider: bool = False

    def run(
        self, *, settings: MemorySettings, touch: bool, filter_irrelevant: bool = True
    ) -> RetrievalResult:
        # store.retrieve ranks one provider-backed owner there, and any wider plan natively.
        ranker = store.retrieve if self.on_provider else retrieve
        return ranker(
            owner_ids=self.owner_ids,
            # "recent" is purely newest-first within the budget: no query reaches the tiers.
            query=None if self.strategy == "exact" else self.query,
            strategy=self.strategy,
            max_tokens=self.max_tokens,
            limit=self.limit,
            session_id=self.session_id if self.scope == "session" else None,
            retention_days=self.retention_days,
            settings=settings,
            touch=touch,
            filter_irrelevant=filter_irrelevant,
        )


def chat_retrieval(
    *,
    api_key: ApiKey | None,
    query: str | None,
    session_id: str | None,
    settings: MemorySettings,
    scope: str | None = None,
) -> ChatRetrieval:
    """The gateway's retrieval plan for ``api_key``: the settings' strategy, ``maxTokens`` and
    retention, ``MEMORY_CHAT_MAX_MEMORIES`` memories at most, and the scope rule of
    :func:`retrieve_for_chat`. ``api_key=None`` plans over every owner (the Studio's
    all-owners view; the gateway always has a key)."""
    scope = scope or settings.scope
    if api_key is None:
        scope = "global"
    elif scope == "global" and not api_key.allow_global_scope:
        scope = "apiKey"
    key = None if scope == "global" else api_key  # the one key read, if any
    return ChatRetrieval(
        owner_ids=None if key is None else frozenset({key.pk}),
        query=query,
        strategy=settings.retrieval_strategy,
        max_tokens=settings.maxTokens,
        limit=django_settings.MEMORY_CHAT_MAX_MEMORIES,
        scope=scope,
        session_id=session_id or None,
        retention_days=settings.retentionDays,
        on_provider=key is not None and not served_natively(key),
    )


def retrieve_for_chat(
    *,
    api_key: ApiKey,
    query: str | None,
    session_id: str | None = None,
    settings: MemorySettings | None = None,
    scope: str | None = None,
    touch: bool = True,
) -> RetrievalResult:
    """The gateway's retrieval: the key's strategy, budget and retention.

    ``scope`` (default: the ``scope`` setting) is ``apiKey``, ``session`` (only
    this session's memories) or ``global`` (every owner — honoured only for keys granted
    ``allow_global_scope``; otherwise it falls back to the key's own).
    ``touch=False`` leaves access counters alone (previews).
    """
    settings = settings or get_memory_settings()
    plan = chat_retrieval(api_key=api_key, query=query, session_id=session_id, settings=settings, scope=scope)
    return plan.run(settings=settings, touch=touch)
