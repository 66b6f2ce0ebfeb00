"""Dry runs of retrieval, with scores and tiers. Nothing is touched (no access counts).

Two of them: :func:`retrieve_preview` is ``POST /api/memory/retrieve-preview`` (the
strategy, budget and limit the caller names, every match shown); :func:`gateway_preview` is the
Studio's Sandbox, which runs the gateway's own retrieval plan (``memory.retrieval.chat.chat_retrieval``) for one
key and reports every departure from it that the operator asked for as ``widened``.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime

from memory.conf import MemorySettings, get_memory_settings
from memory.embeddings.runtime import resolve
from memory.models import ApiKey
from memory.principals import Principal
from memory.retrieval.chat import chat_retrieval
from memory.retrieval.engine import RetrievalResult, vec_min_score
from memory.shapes import hit_json
from memory.store import retrieve

STRATEGY_NAMES = {"exact": "recent"}  # the settings' name of an internal strategy


def retrieve_preview(
    *,
    principal: Principal,
    query: str,
    strategy: str,
    max_tokens: int,
    limit: int,
    api_key_id: str | uuid.UUID | None = None,
    as_of: datetime | None = None,
) -> dict:
    """The ``retrieve-preview`` response for ``query`` over the owners the principal may read: the
    memories with their scores, tokens and tier (and, for ``composite``, their signals), the
    resolution, and the budget used. ``as_of`` ranks as if it were that moment
    (``memory.retrieval.engine.retrieve``)."""
    owner_ids = principal.owner_filter(api_key_id)
    result = retrieve(
        owner_ids=owner_ids,
        query=query,
        strategy=strategy,
        max_tokens=max_tokens,
        limit=limit,
        touch=False,
        filter_irrelevant=False,
        as_of=as_of,
    )
    return _bundle(result)


def gateway_preview(
    *,
    principal: Principal,
    api_key: ApiKey | None,
    query: str,
    session_id: str | None = None,
    strategy: str | None = None,
    max_tokens: int | None = None,
    below_floor: bool = False,
) -> dict:
    """What the gateway would retrieve for ``query`` sent with ``api_key`` (one the principal may read).

    By default exactly the gateway's plan (strategy, ``maxTokens``, limit, scope, retention and the
    vector score floor). Each explicit widening — another ``strategy`` or ``max_tokens``,
    ``below_floor`` (keep the matches the gateway drops), ``api_key=None`` (every owner the
    principal may read, where the gateway reads one key's) — is listed in ``widened``.
    """
    settings = get_memory_settings()
    plan = chat_retrieval(api_key=api_key, query=query, session_id=session_id, settings=settings)
    gateway = {
        "strategy": settings.strategy,
        "maxTokens": settings.maxTokens,
        "limit": plan.limit,
        "scope": plan.scope if api_key else settings.scope,
        "minVecScore": gateway_floor(settings),
        "injectionEnabled": settings.injection_enabled,
    }
    widened: list[str] = []
    if api_key is None:
        plan = replace(plan, owner_ids=principal.owner_filter(None))
        widened.append("every owner's memories (the gateway reads the calling key's)")
    if strategy and strategy != plan.strategy:
        widened.append(
            f"strategy {STRATEGY_NAMES.get(strategy, strategy)} (the gateway uses {settings.strategy})"
        )
        plan = replace(plan, strategy=strategy)
    if max_tokens is not None and max_tokens != plan.max_tokens:
        widened.append(f"budget {max_tokens} tokens (the gateway's maxTokens is {plan.max_tokens})")
        plan = replace(plan, max_tokens=max_tokens)
    if below_floor:
        widened.append(
            f"matches below the gateway's floor included (vector-only score under {gateway['minVecScore']:g})"
        )
    result = plan.run(settings=settings, touch=False, filter_irrelevant=not below_floor)
    return {**_bundle(result), "gateway": gateway, "widened": widened}


def gateway_floor(settings: MemorySettings) -> float:
    """The floor the gateway applies to vector-only matches with the embedding model ``settings``
    resolve to (no I/O: ``memory.embeddings.runtime.resolve``)."""
    return vec_min_score(resolve(settings).model)


def _bundle(result: RetrievalResult) -> dict:
    return {
        "memories": [hit_json(hit) for hit in result.hits],
        "resolution": result.resolution,
        "totalTokensUsed": result.total_tokens,
        "budgetMaxTokens": result.budget_max_tokens,
        "latencyMs": result.timings_ms.get("total"),
    }
