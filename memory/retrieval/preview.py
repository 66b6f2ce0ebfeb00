"""The Sandbox's dry run: what retrieval would return, with scores and tiers. Nothing is touched."""

from __future__ import annotations

from memory.access import Principal
from memory.retrieval.engine import retrieve


def retrieve_preview(
    *, principal: Principal, query: str, strategy: str, max_tokens: int, limit: int, api_key_id=None
) -> dict:
    """The reference §7.8 response for ``query`` over the owners the principal may read."""
    owner_ids = principal.owner_filter(api_key_id)
    result = retrieve(
        owner_ids=owner_ids,
        query=query,
        strategy=strategy,
        max_tokens=max_tokens,
        limit=limit,
        touch=False,
        filter_irrelevant=False,
    )
    return {
        "memories": [
            {
                "id": str(hit.memory.uuid),
                "apiKeyId": str(hit.memory.owner_id),
                "type": hit.memory.type,
                "key": hit.memory.key or "",
                "content": hit.memory.content,
                "score": hit.score,
                "tokens": hit.tokens,
                "tier": hit.tier,
                "vecScore": hit.vec_score,
                "ftsScore": hit.fts_score,
            }
            for hit in result.hits
        ],
        "resolution": result.resolution,
        "totalTokensUsed": result.total_tokens,
        "budgetMaxTokens": result.budget_max_tokens,
        "latencyMs": result.timings_ms.get("total"),
    }
