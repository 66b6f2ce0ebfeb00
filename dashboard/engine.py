"""The Studio's calls into the parts of ``memory`` and ``gateway`` that a tab depends on.

Some parts (health, summarisation, Qdrant) may not be installed in a given
build; each call here then raises :class:`NotAvailable` with a sentence the
tab shows as it is, instead of faking a result. No business rule lives here:
every function delegates to the module that owns the behaviour.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from django.db import transaction

from memory.access import Principal
from memory.models import ApiKey


class NotAvailable(Exception):
    """The backend of a Studio feature is not part of this build (yet)."""


class _RollBack(Exception):
    pass


def _attr(module: str, name: str, what: str):
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise NotAvailable(f"{what} is not available yet ({module}.{name} is missing).") from None


def cache_stats() -> dict:
    """``{hits, misses, hitRate}`` of the embedding cache; zeros before it exists."""
    try:
        stats = _attr("memory.embeddings.runtime", "cache_stats", "The embedding cache")()
    except NotAvailable:
        return {"hits": 0, "misses": 0, "hitRate": 0}
    return {"hits": stats.get("hits", 0), "misses": stats.get("misses", 0), "hitRate": stats.get("hitRate", 0)}


HEALTH_FUNCTIONS = ("pipeline_health", "verify_pipeline", "health_check", "check_health")


def pipeline_health() -> dict:
    """The extraction/retrieval round trip of ``GET /api/memory/health``:
    ``{working, latencyMs, stages, error?}``."""
    try:
        module = importlib.import_module("memory.services.health")
    except ImportError:
        raise NotAvailable("The pipeline health check is not available yet.") from None
    for name in HEALTH_FUNCTIONS:
        function = getattr(module, name, None)
        if callable(function):
            return function()
    raise NotAvailable("The pipeline health check is not available yet.")


def retrieve_preview(**kwargs) -> dict:
    function = _attr("memory.retrieval.preview", "retrieve_preview", "The retrieval preview")
    return function(**kwargs)


def engine_status() -> dict:
    return _attr("memory.engine_status", "engine_status", "The engine status")()


def embedding_providers() -> list[dict]:
    try:
        return _attr("memory.engine_status", "embedding_providers", "The embedding provider list")()
    except NotAvailable:
        return []


def reindex_start(*, force: bool) -> int:
    return _attr("memory.services.indexing", "reindex_start", "Reindexing")(force=force)


def summarize_older_than(*, owner: ApiKey, days: int, dry_run: bool) -> dict:
    function = _attr("memory.services.summarization", "summarize_older_than", "Compaction")
    return function(owner=owner, days=days, dry_run=dry_run)


def upstream_providers() -> list:
    """The gateway's configured upstream providers (the rerank picker lists these)."""
    from django.apps import apps

    try:
        provider_model = apps.get_model("gateway", "UpstreamProvider")
    except LookupError:
        return []
    return list(provider_model.objects.all())


def qdrant_settings() -> dict:
    return _attr("memory.vectorstores.qdrant", "qdrant_settings", "Qdrant")()


def injection_preview(
    *, owner: ApiKey, request_body: dict[str, Any], model: str, session_id: str | None
) -> dict:
    """What the gateway would send upstream for ``request_body`` from ``owner``'s key.

    Same code path as the gateway (provider routing, ``retrieve_for_chat``,
    ``inject_memory``); it runs inside a transaction that is always rolled
    back, so nothing is stored (not even access counts).
    """
    from memory.conf import get_memory_settings
    from memory.injection import DEFAULT_PROVIDER_ROLES, inject_memory, should_inject_memory

    retrieve_for_chat = _attr("memory.retrieval.engine", "retrieve_for_chat", "Chat retrieval")
    settings = get_memory_settings()
    provider_name, roles, routed = model, DEFAULT_PROVIDER_ROLES, None
    try:
        from gateway.providers import enabled_providers, select_provider

        routed = select_provider(model, enabled_providers())
    except ImportError:
        routed = None
    if routed is not None:
        provider_name, roles = routed.injection_target(routed.upstream_model(model))
    query = last_user_text(request_body)
    outcome: dict[str, Any] = {}
    try:
        with transaction.atomic():
            kwargs = {"api_key": owner, "query": query, "session_id": session_id, "settings": settings}
            if "touch" in inspect.signature(retrieve_for_chat).parameters:
                kwargs["touch"] = False
            result = retrieve_for_chat(**kwargs)
            memories = list(result.memories)
            outcome["memories"] = memories
            outcome["resolution"] = dict(getattr(result, "resolution", {}) or {})
            raise _RollBack
    except _RollBack:
        pass
    memories = outcome["memories"]
    enabled = should_inject_memory(request_body, enabled=settings.injection_enabled)
    sent = inject_memory(request_body, memories if enabled else [], provider_name, roles=roles)
    return {
        "enabled": enabled,
        "provider": provider_name,
        "routedTo": routed.name if routed is not None else None,
        "query": query,
        "memories": memories,
        "resolution": outcome["resolution"],
        "request": sent,
    }


def last_user_text(request_body: dict[str, Any]) -> str:
    """The text of the last user message (``messages`` or ``input``), parts joined."""
    conversation = request_body.get("messages") or request_body.get("input") or []
    if isinstance(conversation, str):
        return conversation
    for message in reversed(conversation if isinstance(conversation, list) else []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(
                    part.get("text", "") for part in content if isinstance(part, dict) and part.get("text")
                )
    return ""


def principal_can_change_settings(principal: Principal) -> bool:
    """Runtime settings are global: the same rule as ``PUT /api/settings/memory``."""
    return principal.is_global and principal.has_scope("admin")
