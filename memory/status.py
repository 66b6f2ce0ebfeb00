"""What the engine can do right now, from real probes (FTS5 answers a MATCH, the vector store counts
its rows), never assumed (the original always reported FTS5 as available).

The engine's state (sources, stores, circuits) is the same for every caller; its counts are not: a
caller bound to some API keys is shown the memories, FTS documents and vectors of those keys only,
never the totals of the others (:func:`engine_status` ``owner_ids``)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection

from django.apps import apps
from django.db import connection

from memory import dialect
from memory.conf import MemorySettings, get_memory_settings
from memory.embeddings.catalog import EMBEDDERS
from memory.embeddings.remote import RemoteSource
from memory.embeddings.runtime import cache_stats, local_model_built, readable_provider_key, static_built
from memory.models import VectorMeta
from memory.retrieval.rerank import rerank_available
from memory.services.indexing import VectorContext, index_signature, vector_context
from memory.services.integrity import VEC_TABLE, index_counts
from memory.services.qdrant import qdrant_status
from memory.tasks.handoff import queue_status
from memory.vectorstores import int8scan
from memory.vectorstores.registry import active_store
from memory.visibility import owner_hex

logger = logging.getLogger("memory.engine")

# What a request does when its query cannot be embedded (memory.retrieval.engine).
EMBEDDING_FALLBACK = "keyword search (FTS5)"


def _fts_status() -> dict:
    if dialect.is_postgres():
        return _tsvector_status()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH %s", ['"__probe__"'])
            cursor.fetchone()
        return {"available": True, "backend": "FTS5", "reason": "memory_fts answers MATCH queries"}
    except Exception as exc:
        return {"available": False, "backend": "none", "reason": f"FTS5 probe failed: {exc}"}


def _tsvector_status() -> dict:
    # A lexeme no text produces (the index keeps alphanumerics only).
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM memory_fts WHERE document @@ %s::tsquery", ["'__probe__'"])
            cursor.fetchone()
        return {
            "available": True,
            "backend": "PostgreSQL tsvector",
            "reason": "memory_fts answers @@ queries",
        }
    except Exception as exc:
        return {"available": False, "backend": "none", "reason": f"tsvector probe failed: {exc}"}


def _dimensions(ctx: VectorContext, meta: VectorMeta) -> int | None:
    if ctx.source is None:
        return None
    if ctx.source.dim is not None:
        return ctx.source.dim
    built_for_source = (meta.embedding_signature or "").startswith(
        f"{ctx.resolution.source}:{ctx.resolution.model}:"
    )
    return meta.active_dim if built_for_source else None


def engine_status(*, owner_ids: Collection[uuid.UUID] | None = None) -> dict:
    """The engine's state and counts; with ``owner_ids`` (a bound caller's) the counts (``memories``,
    ``indexes``, ``vectorStore.rowCount`` and ``needsReindex``) are those of these owners' memories."""
    settings = get_memory_settings()
    ctx = vector_context(settings)
    meta = VectorMeta.load()
    index = index_signature(ctx)
    counts = index_counts() if owner_ids is None else owner_index_counts(owner_ids)
    memories = int(counts["memories"] or 0)
    # The pending count read with the others, before the vectors: a count read after them could miss
    # vectors committed in between (the flag and the vector commit together), and a status saying
    # nothing is pending would show fewer vectors than memories (PostgreSQL reads each statement's
    # own snapshot).
    pending = memories if index.stale else int(counts["pending"] or 0)
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
        **_embedding_circuit(ctx),
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
            vector_store["rowCount"] = ctx.store.count() if owner_ids is None else _owner_vectors(counts)
            vector_store["reason"] = f"{ctx.store_name} active, dim={meta.active_dim}"
        except Exception as exc:
            logger.warning("vector store stats failed: %s", exc)
            vector_store["reason"] = f"{ctx.store_name} active but stats failed"
    else:
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
        "qdrant": _qdrant_status(settings, ctx),
        "rerank": _rerank_status(settings),
        "memories": memories,
        # Memories against FTS documents and vectors (manage.py verify_indexes checks and repairs).
        "indexes": counts,
        # The background queue: whether it answers (writes never fail when it does not).
        "queue": queue_status(),
    }


def owner_index_counts(owner_ids: Collection[uuid.UUID]) -> dict[str, int | bool | None]:
    """:func:`memory.services.integrity.index_counts` for these owners' memories only: theirs, their
    FTS documents, their vectors in sqlite-vec (None without a vector table) and those waiting for one.
    Two queries, each through the owner index of ``memories``."""
    owners = [owner_hex(owner) for owner in sorted(owner_ids, key=str)]
    if not owners:
        return {"memories": 0, "fts": 0, "vectors": None, "pending": 0, "consistent": True}
    marks = ", ".join(["%s"] * len(owners))
    theirs = f"SELECT seq FROM memories WHERE owner_id IN ({marks})"
    docs, doc_seq = dialect.fts_documents()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*), count(*) FILTER (WHERE needs_reindex), "
            f"(SELECT count(*) FROM {docs} WHERE {doc_seq} IN ({theirs})), "
            f"{dialect.table_exists_sql()} "
            f"FROM memories WHERE owner_id IN ({marks})",
            [*owners, VEC_TABLE, *owners],
        )
        memories, pending, fts, has_vectors = (int(v) for v in cursor.fetchone())
        vectors = None
        if has_vectors:
            cursor.execute(
                f"SELECT count(*) FROM {dialect.vector_rowids()} WHERE rowid IN ({theirs})", owners
            )
            vectors = int(cursor.fetchone()[0])
    agree = fts == memories and (vectors is None or vectors + pending == memories)
    return {"memories": memories, "fts": fts, "vectors": vectors, "pending": pending, "consistent": agree}


def _owner_vectors(counts: dict[str, int | bool | None]) -> int:
    """A bound caller's ``rowCount``: its vectors in sqlite-vec; where there is no vector table (Qdrant
    alone holds them, and it counts only its whole collection), its memories not waiting for one."""
    if counts["vectors"] is not None:
        return int(counts["vectors"])
    return int(counts["memories"] or 0) - int(counts["pending"] or 0)


def _embedding_circuit(ctx: VectorContext) -> dict:
    """``circuit``: the remote endpoint's breaker (``memory.breaker``; null for a local source, which
    has none), and ``fallback``: what requests use instead while the last call failed or the circuit
    is open (null when the source answers)."""
    source = ctx.raw_source() if ctx.source is not None else None
    if not isinstance(source, RemoteSource):
        return {"circuit": None, "fallback": None}
    circuit = source.breaker.snapshot()
    failing = circuit["state"] != "closed" or circuit["failures"] > 0
    return {"circuit": circuit, "fallback": EMBEDDING_FALLBACK if failing else None}


def _qdrant_status(settings: MemorySettings, ctx: VectorContext) -> dict:
    """Qdrant's health (``memory.services.qdrant.qdrant_status``) and, when it is enabled, ``fallback``:
    the store searches use instead while Qdrant is selected but not usable (null when it is used)."""
    status = qdrant_status()
    if status.get("enabled"):
        passed_over = settings.vectorStore == "qdrant" and ctx.store_name != "qdrant"
        status["fallback"] = ctx.store_name if passed_over else None
    return status


def _rerank_status(settings: MemorySettings) -> dict:
    ref = settings.rerankProviderModel
    provider, model = ref.split("/", 1) if ref and "/" in ref else (None, ref)
    if not settings.rerankEnabled:
        reason, available = "rerank disabled", False
    elif not ref:
        reason, available = "rerank enabled but provider not configured", False
    else:
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
                "hasKey": readable_provider_key(row) is not None,
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
