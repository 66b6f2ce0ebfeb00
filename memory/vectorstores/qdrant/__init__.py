"""The Qdrant vector store.

Where the original's Qdrant support fell short, this one: backfills existing memories and is rebuilt
by the reindex; opens a new collection when the embedding model changes instead of breaking the old
one; applies the owner, session, expiry and retention filters inside Qdrant; has no cap of 20 on
``k``; stores each memory's real ``type``; re-syncs a point when its memory is edited; gives every call
a timeout; and embeds with the memory embedding source (no separate Qdrant model setting to get wrong).

- ``client``: the qdrant-client per connection, probes and the health they report;
- ``store``: ``QdrantStore`` (one collection per embedding signature, the payload the visibility
  filters run on), and which store the current settings give;
- ``maintenance``: removing points no read may see any more, backfilling a collection.

Writes and deletes reach Qdrant through ``memory.services.vectorsync`` (the mirror of every write,
after commit), searches through the ``VectorStore`` contract; the Studio and API actions that are
about Qdrant itself are ``memory.services.qdrant``.
"""

from memory.vectorstores.qdrant.client import (
    Probe,
    QdrantUnavailable,
    connection_for,
    forget_stale_clients,
    probe,
    qdrant_health,
    reset_clients,
)
from memory.vectorstores.qdrant.maintenance import backfill, cleanup_expired
from memory.vectorstores.qdrant.store import (
    QdrantStore,
    collection_name,
    configured_store,
    mirror_store,
    qdrant_choice,
    quantization_config,
    search_params,
    usable_store,
)

__all__ = [
    "Probe",
    "QdrantStore",
    "QdrantUnavailable",
    "backfill",
    "cleanup_expired",
    "collection_name",
    "configured_store",
    "connection_for",
    "forget_stale_clients",
    "mirror_store",
    "probe",
    "qdrant_choice",
    "qdrant_health",
    "quantization_config",
    "reset_clients",
    "search_params",
    "usable_store",
]
