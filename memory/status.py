"""What the engine can do right now, from real probes (reference §5.4, B24 fixed)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.db import connection

from memory.conf import MemorySettings, get_memory_settings
from memory.models import Memory, VectorMeta
from memory.vectorstores import int8scan

if TYPE_CHECKING:
    # For annotations only: like engine_status, this module imports the indexing service where it runs.
    from memory.services.indexing import VectorContext

logger = logging.getLogger("memory.engine")


def _fts_status() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH %s", ['"__probe__"'])
            cursor.fetchone()
        return {"available": True, "backend": "FTS5", "reason": "memory_fts answers MATCH queries"}
    except Exception as exc:
        return {"available": False, "backend": "none", "reason": f"FTS5 probe failed: {exc}"}


def _dimensions(ctx: VectorContext, meta: VectorMeta) -> int | None:
    if ctx.source is None:
        return None
    if ctx.source.dim is not None:
        return ctx.source.dim
    built_for_source = (meta.embedding_signature or "").startswith(
        f"{ctx.resolution.source}:{ctx.resolution.model}:"
    )
    return meta.active_dim if built_for_source else None


def engine_status() -> dict:
    from memory.embeddings.runtime import cache_stats
    from memory.services.indexing import index_signature, reindex_needed, vector_context

    settings = get_memory_settings()
    ctx = vector_context(settings)
    meta = VectorMeta.load()
    index = index_signature(ctx)
    memories = Memory.objects.count()
    pending = reindex_needed(ctx, index)
    embedding = {
        "source": ctx.resolution.source,
        "model": ctx.resolution.model,
        # A remote source learns its dimension from its first answer; the vector
        # table, once built for this source, remembers it across restarts.
        "dimensions": _dimensions(ctx, meta),
        "signature": ctx.source.signature if ctx.source is not None else "null:null:null",
        "available": ctx.source is not None,
        "reason": ctx.resolution.reason,
        "cacheStats": cache_stats(),
    }
    vector_store = {
        "backend": ctx.store_name,
        "available": ctx.store is not None,
        "rowCount": 0,
        # All memories while the index is stale: none of its vectors can be searched.
        "needsReindex": pending,
        "activeDim": meta.active_dim,
        # What the vector table holds, and what the live source makes (dimension
        # ``null`` while a remote source has not answered yet).
        "signature": meta.embedding_signature,
        "expectedSignature": index.expected,
        "stale": index.stale,
        "reason": None,
    }
    if ctx.store is not None:
        try:
            vector_store["rowCount"] = ctx.store.count()
            vector_store["reason"] = f"{ctx.store_name} active, dim={meta.active_dim}"
        except Exception as exc:
            logger.warning("vector store stats failed: %s", exc)
            vector_store["reason"] = f"{ctx.store_name} active but stats failed"
    else:
        from memory.vectorstores.registry import active_store

        vector_store["reason"] = active_store(settings).reason
    if index.stale:
        vector_store["reason"] = (
            f"vector index holds {index.held}, the embedding source makes {index.expected}: "
            "keyword search only until the reindex rebuilds it"
        )
    # The int8 pre-scan of large owners' matrices, and whether this CPU's kernel passed its self-check.
    vector_store["int8Scan"] = int8scan.scan_status(meta.active_dim, int8scan.MIN_ROWS)
    return {
        "keyword": _fts_status(),
        "embedding": embedding,
        "vectorStore": vector_store,
        "qdrant": _qdrant_status(),
        "rerank": _rerank_status(settings),
        "memories": memories,
    }


def _qdrant_status() -> dict:
    try:
        from memory.services.qdrant import qdrant_status
    except ImportError:
        return {"enabled": False, "healthy": None, "latencyMs": None, "error": None}
    return qdrant_status()


def _rerank_status(settings: MemorySettings) -> dict:
    ref = settings.rerankProviderModel
    provider, model = ref.split("/", 1) if ref and "/" in ref else (None, ref)
    if not settings.rerankEnabled:
        reason, available = "rerank disabled", False
    elif not ref:
        reason, available = "rerank enabled but provider not configured", False
    else:
        from memory.retrieval.rerank import rerank_available

        available, reason = rerank_available(settings)
    return {
        "enabled": settings.rerankEnabled,
        "provider": provider,
        "model": model,
        "available": available,
        "reason": reason,
    }


# Known embedding models and dimensions (for the provider-model picker).
KNOWN_MODELS: dict[str, list[tuple[str, int | None]]] = {
    "openai": [
        ("text-embedding-3-small", 1536),
        ("text-embedding-3-large", 3072),
        ("text-embedding-ada-002", 1536),
    ],
    "mistral": [("mistral-embed", 1024)],
    "voyage": [("voyage-3", 1024), ("voyage-3-lite", 512)],
    "gemini": [("gemini-embedding-001", 768)],
    "nvidia": [("nv-embedqa-e5-v5", 1024)],
    "cohere": [("embed-english-v3.0", None), ("embed-multilingual-v3.0", None)],
}


def embedding_providers() -> list[dict]:
    """Configured upstream providers with the embedding models we know of, plus local ones."""
    from django.apps import apps

    from memory.embeddings.catalog import EMBEDDERS
    from memory.embeddings.runtime import local_model_built, static_built

    providers = []
    try:
        Provider = apps.get_model("gateway", "UpstreamProvider")
        rows = list(Provider.objects.all())
    except LookupError:
        rows = []
    for row in rows:
        family = next(
            (name for name in KNOWN_MODELS if name in row.name.lower() or name in row.base_url), None
        )
        models = KNOWN_MODELS[family] if family else []
        providers.append(
            {
                "provider": row.name,
                "hasKey": bool(row.api_key),
                "models": [{"id": f"{row.name}/{m}", "name": m, "dimensions": d} for m, d in models],
            }
        )
    providers.append(
        {
            "provider": "local",
            "hasKey": True,
            "models": [
                {
                    "id": "static/minilm-static-256",
                    "name": "Static (distilled MiniLM, 256-d)",
                    "dimensions": 256,
                    "built": static_built(),
                },
                *(
                    {
                        "id": f"transformers/{model.name}",
                        "name": f"{model.name} (ONNX)",
                        "dimensions": 384,
                        "built": local_model_built(model.name),
                    }
                    for model in EMBEDDERS.values()
                ),
            ],
        }
    )
    return providers
