"""Retrieval for a key whose memories live with a provider: the manager's rankings, fused here.

The native store's engine (:mod:`memory.retrieval.engine`) ranks rows of this database; a provider
ranks its own records. This module asks the key's :class:`~memory.backends.manager.MemoryManager`
for what its primary can do (its :class:`~memory.backends.base.Capabilities`) and answers the
engine's :class:`~memory.retrieval.engine.RetrievalResult`, so every surface shapes the hits the same
way whatever the store:

- ``hybrid``: the backend's own fusion when it has one; else its keyword and vector rankings fused
  by RRF here (``k = 60``, equal weights); else the one it has.
- ``semantic``: its vector ranking; keyword when it has no vectors or no embedding source is live.
- ``keyword``: its keyword ranking; vector when it has no full-text search.
- ``exact`` or a query without words: the newest records.

The query is embedded by this service's embedding source (the one the native store uses), so a
provider's vectors must come from that source: writes through :mod:`memory.store` store each memory
with its embedding when the provider takes vectors. ``resolution`` names the provider, the rankings
used and every fallback the manager took (``backendFallbacks``).
"""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from typing import Any

from django.utils import timezone

from memory.backends.base import BackendUnavailable, Filters, MemoryBackend, MemoryHit
from memory.backends.manager import FallbackEvent, MemoryManager
from memory.backends.native import to_memory
from memory.conf import MemorySettings, get_memory_settings
from memory.embeddings.runtime import get_source
from memory.retrieval.budget import estimate_tokens, walk_budget
from memory.retrieval.engine import RRF_K, Hit, RetrievalResult
from memory.retrieval.fusion import rrf
from memory.retrieval.relevance import query_terms

# Candidates each ranking reads before fusion (as the native engine's VEC_TOP_K floor).
CANDIDATES = 20
_TIERS = {"keyword": "fts5", "vector": "vector", "hybrid": "hybrid-rrf"}


def query_embedding(text: str, settings: MemorySettings, backend: MemoryBackend) -> tuple[Any, str | None]:
    """The query's vector from the live embedding source, or None with the reason there is none."""
    if not backend.capabilities.vector:
        return None, f"{backend.name} stores no vectors"
    source, resolution = get_source(settings)
    if source is None:
        return None, resolution.reason
    try:
        dimension = backend.vector_dimension
    except BackendUnavailable:  # a primary that is down: the manager's fallbacks may still rank
        dimension = None
    vector = source.embed([text])[0]
    if dimension is not None and len(vector) != dimension:
        return (
            None,
            f"{backend.name} holds {dimension}-dimension vectors; the embedding source gives {len(vector)}",
        )
    return vector, None


def retrieve_from(
    manager: MemoryManager,
    *,
    owner: uuid.UUID,
    query: str | None,
    strategy: str = "hybrid",
    max_tokens: int = 2000,
    limit: int = 20,
    session_id: str | None = None,
    retention_days: int | None = None,
    settings: MemorySettings | None = None,
) -> RetrievalResult:
    """Rank ``owner``'s records on its provider for ``query`` (see the module docstring)."""
    started = time.perf_counter()
    settings = settings or get_memory_settings()
    now = timezone.now()
    filters = Filters(
        session_id=session_id or None,
        created_after=now - timedelta(days=retention_days) if retention_days else None,
    )
    text = (query or "").strip()
    primary = manager.primary
    events: list[FallbackEvent] = []
    resolution: dict[str, Any] = {
        "embeddingSource": None,
        "embeddingModel": None,
        "vectorStore": primary.name,
        "strategyRequested": strategy,
        "strategyUsed": strategy,
        "rerankApplied": False,
        "fallbackReason": None,
        "provider": primary.name,
        "providerType": primary.type_name,
        "rankings": [],
    }
    reasons: list[str] = []
    depth = max(limit, CANDIDATES)
    ranked: list[tuple[MemoryHit, str]] = []
    if strategy != "exact" and query_terms(text):
        ranked = _rank(manager, owner, text, strategy, depth, filters, settings, events, resolution, reasons)
    if not ranked:
        if strategy != "exact" and text:
            reasons.append("nothing ranked: newest memories")
        page = manager.list(owner, filters=filters, limit=limit, events=events)
        ranked = [(MemoryHit(r, 0.0, "keyword"), "recent") for r in page.records]
        resolution["strategyUsed"] = "exact"
    hits = []
    for hit, tier in ranked:
        memory = to_memory(hit.record)
        hits.append(Hit(memory=memory, score=hit.score, tier=tier, tokens=estimate_tokens(memory.content)))
    kept, total = walk_budget(hits, max_tokens, limit=limit, content=lambda h: h.memory.content)
    resolution["backendFallbacks"] = [event.as_dict() for event in events]
    if reasons:
        resolution["fallbackReason"] = "; ".join(reasons)
    return RetrievalResult(
        hits=kept,
        resolution=resolution,
        total_tokens=total,
        budget_max_tokens=max_tokens,
        timings_ms={"total": round((time.perf_counter() - started) * 1000, 3)},
    )


def _rank(
    manager: MemoryManager,
    owner: uuid.UUID,
    text: str,
    strategy: str,
    depth: int,
    filters: Filters,
    settings: MemorySettings,
    events: list[FallbackEvent],
    resolution: dict[str, Any],
    reasons: list[str],
) -> list[tuple[MemoryHit, str]]:
    caps = manager.primary.capabilities
    wants_vector = strategy in ("semantic", "hybrid")
    if strategy == "hybrid" and caps.hybrid:
        resolution["rankings"] = ["hybrid"]
        return [
            (h, _TIERS[h.ranking])
            for h in manager.search_hybrid(owner, text, limit=depth, filters=filters, events=events)
        ]
    vector = None
    if wants_vector or not caps.keyword:
        vector, why = query_embedding(text, settings, manager.primary)
        if vector is None:
            reasons.append(f"no vector ranking: {why}")
        else:
            source, res = get_source(settings)
            resolution["embeddingSource"], resolution["embeddingModel"] = res.source, res.model
    keyword: list[MemoryHit] = []
    similar: list[MemoryHit] = []
    if caps.keyword and (strategy in ("keyword", "hybrid") or vector is None):
        keyword = manager.search(owner, text, limit=depth, filters=filters, events=events)
        resolution["rankings"].append("keyword")
    if vector is not None and (wants_vector or not caps.keyword):
        try:
            similar = manager.search_similar(owner, vector, limit=depth, filters=filters, events=events)
            resolution["rankings"].append("vector")
        except BackendUnavailable:
            if not keyword:
                raise
            reasons.append("vector ranking unavailable")
    if strategy != "hybrid" or not keyword or not similar:
        used = similar if (similar and strategy == "semantic") or not keyword else keyword
        resolution["strategyUsed"] = "semantic" if used is similar and similar else "keyword"
        return [(h, _TIERS[h.ranking]) for h in used]
    by_id = {h.record.id: h.record for h in (*keyword, *similar)}
    fused = rrf(
        {"keyword": [h.record.id for h in keyword], "vector": [h.record.id for h in similar]}, k=RRF_K
    )
    return [(MemoryHit(by_id[f.item], f.score, "hybrid"), "hybrid-rrf") for f in fused]
