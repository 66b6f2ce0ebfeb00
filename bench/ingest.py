"""Bulk ingest: the HTTP bulk route with FTS (no embedding source), then the
service layer with FTS + static vectors (written inline by the bulk write)."""

from __future__ import annotations

import json
import time

from bench.corpus import memories

N = 10_000


def _http_bulk_fts_only(texts: list[str]) -> float:
    from rest_framework.test import APIClient

    from memory.models import ApiKey, ManagementToken

    key, _ = ApiKey.issue(name="bench-ingest-http")
    _, secret = ManagementToken.issue(name="bench", scope="admin")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    body = json.dumps(
        {"memories": [{"apiKeyId": str(key.pk), "key": f"k{i}", "content": t} for i, t in enumerate(texts)]}
    )
    started = time.perf_counter()
    response = client.post("/api/memory/bulk", data=body, content_type="application/json")
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.content[:300]
    return elapsed


def _service_bulk_with_vectors(texts: list[str]) -> tuple[float, int]:
    from memory.models import ApiKey, Memory
    from memory.services.memories import MemoryInput, memory_bulk_create

    owner, _ = ApiKey.issue(name="bench-ingest-vectors")
    items = [MemoryInput(owner=owner, key=f"k{i}", content=t) for i, t in enumerate(texts)]
    started = time.perf_counter()
    memory_bulk_create(items)
    elapsed = time.perf_counter() - started
    return elapsed, Memory.objects.filter(owner=owner, needs_reindex=True).count()


def run() -> dict:
    from memory.conf import update_memory_settings
    from memory.embeddings import runtime
    from memory.services.indexing import vector_context

    texts = memories(N, seed=1)

    # No embedding source: the bulk route's own cost (rows + FTS5).
    update_memory_settings({"embeddingSource": "static", "staticEnabled": False})
    runtime.reset()
    http_s = _http_bulk_fts_only(texts)
    http_rate = N / http_s
    print(
        f"POST /api/memory/bulk, {N} memories with FTS: {http_s:.2f} s = {http_rate:,.0f} memories/s (target ≥ 5,000)"
    )

    update_memory_settings({"embeddingSource": "static", "staticEnabled": True})
    runtime.reset()
    ctx = vector_context()
    ctx.source.embed(["warm-up"])  # load the table once, as a running server has
    service_s, pending = _service_bulk_with_vectors(memories(N, seed=2))
    rate = N / service_s
    print(
        f"memory_bulk_create, {N} memories with FTS + static vectors written inline: {service_s:.2f} s = "
        f"{rate:,.0f} memories/s (target ≥ 5,000); {pending} left without a vector"
    )
    return {"bulk_http_fts_per_s": round(http_rate), "ingest_fts_static_vectors_per_s": round(rate)}
