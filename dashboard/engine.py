"""The Studio's calls into the parts of ``memory`` and ``gateway`` that a tab depends on.

Some parts (health, summarisation, Qdrant) may not be installed in a given
build; each call here then raises :class:`NotAvailable` with a sentence the
tab shows as it is, instead of faking a result. No business rule lives here:
every function delegates to the module that owns the behaviour.
"""

from __future__ import annotations

import importlib
from typing import Any

from memory.access import Principal
from memory.models import ApiKey


class NotAvailable(Exception):
    """The backend of a Studio feature is not part of this build (yet)."""


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
    return {
        "hits": stats.get("hits", 0),
        "misses": stats.get("misses", 0),
        "hitRate": stats.get("hitRate", 0),
    }


HEALTH_FUNCTIONS = ("run_health_check",)


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


def gateway_preview(**kwargs) -> dict:
    """The gateway's retrieval for one key, widened only where asked (``memory.retrieval.preview``)."""
    function = _attr("memory.retrieval.preview", "gateway_preview", "The retrieval preview")
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
    """``{candidates: [keys or ids], totalTokens, deletedCount, summaryId, dryRun}`` for one owner."""
    function = _attr("memory.services.summarization", "summarize_older_than", "Compaction")
    result = function(owner=owner, days=days, dry_run=dry_run)
    return {
        "candidates": [m.key or str(m.uuid) for m in result.candidates],
        "totalTokens": result.total_tokens,
        "deletedCount": result.deleted_count,
        "summaryId": result.summary_id,
        "dryRun": result.dry_run,
    }


def without_probe(qs):
    """Owner lists leave out the health check's private probe owner."""
    try:
        from memory.services.health import exclude_probe
    except ImportError:
        return qs
    return exclude_probe(qs)


def upstream_providers() -> list:
    """The gateway's configured upstream providers (the rerank picker lists these)."""
    from django.apps import apps

    try:
        provider_model = apps.get_model("gateway", "UpstreamProvider")
    except LookupError:
        return []
    return list(provider_model.objects.all())


def qdrant_settings() -> dict:
    """The public Qdrant settings (API key masked) and the models offered in the quick-select."""
    get = _attr("memory.qdrant_conf", "get_qdrant_settings", "Qdrant")
    cfg = get()
    models = ["auto"] + sorted(
        {model["id"] for provider in embedding_providers() for model in provider.get("models", [])}
    )
    return {**cfg.as_public_dict(), "active": cfg.active, "models": models}


def qdrant_update(changes: dict) -> tuple[dict | None, dict]:
    """Validate ``changes`` with the API's serializer and store them: ``(settings, errors)``."""
    serializer_class = _attr("memory.api.views_qdrant", "QdrantSettingsSerializer", "Qdrant")
    update = _attr("memory.qdrant_conf", "update_qdrant_settings", "Qdrant")
    serializer = serializer_class(data=changes)
    if not serializer.is_valid():
        return None, {name: [str(m) for m in messages] for name, messages in serializer.errors.items()}
    update(dict(serializer.validated_data))
    return qdrant_settings(), {}


def qdrant_probe() -> dict:
    """``{ok, latencyMs, error?}`` as ``GET /api/settings/qdrant/health``."""
    get = _attr("memory.qdrant_conf", "get_qdrant_settings", "Qdrant")
    probe = _attr("memory.vectorstores.qdrant", "probe", "Qdrant")
    cfg = get()
    if not cfg.active:
        return {"ok": False, "latencyMs": 0, "error": "not configured (enable Qdrant and set a host)"}
    result = probe(cfg)
    return {"ok": result.ok, "latencyMs": result.latency_ms, "error": result.error}


def qdrant_search(*, query: str, top_k: int, owner_ids) -> dict:
    return _attr("memory.vectorstores.qdrant", "search_memories", "Qdrant")(
        query=query, top_k=top_k, owner_ids=owner_ids
    )


def qdrant_cleanup() -> dict:
    """Remove Qdrant points older than the retention period: ``{ok, deletedCount, retentionDays, error?}``."""
    from memory.conf import get_memory_settings

    cleanup = _attr("memory.vectorstores.qdrant", "cleanup_expired", "Qdrant")
    unavailable = _attr("memory.vectorstores.qdrant", "QdrantUnavailable", "Qdrant")
    days = get_memory_settings().retentionDays
    try:
        return {"ok": True, "deletedCount": cleanup(days), "retentionDays": days}
    except unavailable as exc:
        return {"ok": False, "deletedCount": 0, "retentionDays": days, "error": str(exc)}
    except Exception as exc:
        return {"ok": False, "deletedCount": 0, "retentionDays": days, "error": f"cleanup failed: {exc}"}


def injection_preview(*, owner: ApiKey, request_body: Any, session_id: str | None) -> dict:
    """The body the gateway would send upstream for ``request_body`` from ``owner``'s key.

    The gateway's own validation, routing and injection (``gateway.chat.route_and_inject``), with
    access counters left alone: nothing is stored. Raises ``gateway.chat.GatewayError`` when the
    gateway would refuse the request (its message says why).
    """
    from gateway.chat import route_and_inject, validate_body

    routed = route_and_inject(
        api_key=owner, body=validate_body(request_body), session_id=session_id, touch=False
    )
    return {
        "injected": routed.injected,
        "recalled": routed.recalled,
        "memoryOn": routed.memory_on,
        "provider": routed.target,
        "routedTo": routed.provider.name,
        "query": routed.query,
        "memories": routed.memories,
        "resolution": routed.resolution,
        "request": routed.body,
    }


def principal_can_change_settings(principal: Principal) -> bool:
    """Runtime settings are global: the same rule as ``PUT /api/settings/memory``."""
    return principal.is_global and principal.has_scope("admin")
