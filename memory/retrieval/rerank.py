"""Optional rerank stage: an OpenAI/Cohere-style ``POST {base}/rerank``, in-process.

Fail-open: any error (policy, network, timeout, bad response) keeps the input
order and is logged; ``applied`` says whether the order came from the reranker
(the original called itself over loopback and silently got 401s: B19).
"""

from __future__ import annotations

import logging

import httpx
from django.conf import settings as django_settings

from memory.conf import MemorySettings

logger = logging.getLogger("memory.retrieval")


def rerank_target(settings: MemorySettings) -> tuple[str, str, str | None] | None:
    """(base_url, model, api_key) for ``rerankProviderModel`` = ``provider/model``."""
    from memory.embeddings.runtime import provider_endpoint

    return provider_endpoint(settings.rerankProviderModel)


def rerank(hits: list, query: str, settings: MemorySettings) -> tuple[list, bool]:
    target = rerank_target(settings)
    if target is None or not hits:
        return hits, False
    base_url, model, api_key = target
    url = base_url.rstrip("/") + "/rerank"
    try:
        from memory.embeddings.urlpolicy import check_outbound_url

        check_outbound_url(
            url, allow_private=settings.allowPrivateUrls or django_settings.MEMORY_ALLOW_PRIVATE_URLS
        )
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
        return hits, False
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
    return ordered, True
