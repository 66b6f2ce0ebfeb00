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
- ``composite``: what ``hybrid`` ranks (or its fallback), re-ordered by
  :mod:`memory.retrieval.composite` (relevance, recency, importance) as the native engine does.

``as_of`` (a past moment) leaves out the records created after it, and composite's recency counts
from it; the rankings read ``AS_OF_DEPTH`` deep so that the cut leaves them their usual depth.

The query is embedded by this service's embedding source (the one the native store uses), so a
provider's vectors must come from that source: writes through :mod:`memory.store` store each memory
with its embedding when the provider takes vectors. ``resolution`` names the provider, the rankings
used and every fallback the manager took (``backendFallbacks``).
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from memory.backends.base import BackendUnavailable, Filters, MemoryBackend, MemoryHit
from memory.backends.manager import FallbackEvent, MemoryManager
from memory.backends.native import to_memory
from memory.conf import MemorySettings, get_memory_settings
from memory.embeddings.runtime import get_source
from memory.retrieval import composite
from memory.retrieval.budget import estimate_tokens, walk_budget
from memory.retrieval.engine import AS_OF_DEPTH, RRF_K, Hit, RetrievalResult
from memory.retrieval.fusion import rrf
from memory.retrieval.relevance import query_terms

# Candidates each ranking reads before fusion (as the native engine's VEC_TOP_K floor).
CANDIDATES = 20
_TIERS = {"keyword": "fts5", "vector": "vector", "hybrid": "hybrid-rrf"}
# The relevance the ranking that ran gives its hits (by ``strategyUsed``), for composite's semantic
# signal. A provider's own hybrid search may tag single hits "keyword" or "vector": the ranking that
# ran, not a hit's tier, says what its scores are.
_SEMANTIC_FROM: dict[str, composite.SemanticFrom] = {
    "composite": "hybrid",
    "keyword": "keyword",
    "semantic": "vector",
    "exact": "none",
}


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
    as_of: datetime | None = None,
) -> RetrievalResult:
    """Rank ``owner``'s records on its provider for ``query`` (see the module docstring)."""
    started = time.perf_counter()
    settings = settings or get_memory_settings()
    now = timezone.now()
    # A moment still to come hides nothing: ranking "as of" it is ranking now.
    cut = as_of if as_of is not None and as_of < now else None
    scored = strategy == "composite"
    search = "hybrid" if scored else strategy
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
    if search != "exact" and query_terms(text):
        ranked = _rank(
            manager,
            owner,
            text,
            search,
            depth if cut is None else max(depth, AS_OF_DEPTH),
            filters,
            settings,
            events,
            resolution,
            reasons,
        )
        if cut is not None:
            ranked = [(h, tier) for h, tier in ranked if h.record.created_at <= cut][:depth]
    if not ranked:
        if search != "exact" and text:
            reasons.append("nothing ranked: newest memories")
        newest = limit if not scored and cut is None else max(limit, AS_OF_DEPTH if cut else CANDIDATES)
        page = manager.list(owner, filters=filters, limit=newest, events=events)
        records = [r for r in page.records if cut is None or r.created_at <= cut]
        ranked = [(MemoryHit(r, 0.0, "keyword"), "recent") for r in records]
        resolution["strategyUsed"] = "exact"
    hits = []
    for hit, tier in ranked:
        memory = to_memory(hit.record)
        hits.append(Hit(memory=memory, score=hit.score, tier=tier, tokens=estimate_tokens(memory.content)))
    if hits and scored:
        hits = composite.rerank(
            hits,
            now=cut or now,
            weights=settings.compositeWeights,
            half_life_days=settings.recencyHalfLifeDays,
            semantic_from=_SEMANTIC_FROM[resolution["strategyUsed"]],
        )
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
