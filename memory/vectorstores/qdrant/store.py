"""The Qdrant store: one collection per embedding signature, point id = ``memories.seq``.

- the collection is ``<base>_<slug of signature>_<hash>``, so a model change opens a new, empty
  collection (backfilled by the reindex) instead of breaking search with dimension errors; an
  existing collection is never recreated;
- cosine distance; optional int8 scalar or binary quantisation, searched with rescoring (binary also
  oversamples) — qdrant-client's local mode ignores both, so they only matter on a server;
- the payload carries ``owner`` (hex), ``session_id``, ``expires_at``, ``created_at`` and ``valid_to``
  (unix seconds; ``expires_at`` null = never, ``valid_to`` null = still current), the real ``type`` and ``key``: the visibility filters
  (:meth:`memory.visibility.Visibility.qdrant_filter`) run inside Qdrant, and the content stays in
  SQLite only;
- every call has a timeout (the client's) and goes through the connection's circuit breaker
  (``Connection.guard``): after a few failures in a row Qdrant is left out of searches and writes,
  without a call, until a background probe finds it answering again.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memory.conf import get_memory_settings
from memory.embeddings import runtime
from memory.models import Memory
from memory.qdrant_conf import QdrantSettings, get_qdrant_settings
from memory.vectorstores.base import VectorHit, VectorItem, VectorStore
from memory.vectorstores.qdrant.client import (
    QdrantUnavailable,
    circuit_open,
    connection_for,
    recent_probe,
    sanitise,
)
from memory.vectorstores.registry import StoreChoice
from memory.visibility import Visibility, owner_hex, unix_seconds

if TYPE_CHECKING:
    # qdrant-client is imported where it runs (see below): a process without Qdrant never loads it
    from qdrant_client import QdrantClient, models

logger = logging.getLogger("memory.vectorstores.qdrant")

UPSERT_BATCH = 256
SCROLL_PAGE = 1000
SQL_CHUNK = 500


# --------------------------------------------------------------------------- naming


def signature_slug(signature: str) -> str:
    """A collection-safe, readable slug of ``signature`` plus a hash, so distinct
    signatures never share a collection even when their slugs coincide."""
    slug = re.sub(r"[^a-z0-9]+", "_", signature.lower()).strip("_")[:80] or "default"
    digest = hashlib.sha256(signature.encode()).hexdigest()[:8]
    return f"{slug}_{digest}"


def collection_name(base: str, signature: str) -> str:
    return f"{base}_{signature_slug(signature)}"


# --------------------------------------------------------------------------- quantisation


def quantization_config(kind: str) -> models.ScalarQuantization | models.BinaryQuantization | None:
    """The collection's ``quantization_config`` for ``none``/``int8``/``binary``: nothing, scalar int8
    (0.99 quantile) or binary, kept in RAM."""
    # optional: qdrant-client (about a second to import) is imported only once Qdrant is used
    from qdrant_client import models

    if kind == "int8":
        return models.ScalarQuantization(
            scalar=models.ScalarQuantizationConfig(
                type=models.ScalarType.INT8, quantile=0.99, always_ram=True
            )
        )
    if kind == "binary":
        return models.BinaryQuantization(binary=models.BinaryQuantizationConfig(always_ram=True))
    return None


def search_params(kind: str) -> models.SearchParams | None:
    """Rescore quantised candidates with the original vectors; binary loses more, so oversample."""
    # optional: qdrant-client (about a second to import) is imported only once Qdrant is used
    from qdrant_client import models

    if kind == "int8":
        return models.SearchParams(quantization=models.QuantizationSearchParams(rescore=True))
    if kind == "binary":
        return models.SearchParams(
            quantization=models.QuantizationSearchParams(rescore=True, oversampling=2.0)
        )
    return None


def _quantization_of(info: models.CollectionInfo) -> str:
    # optional: qdrant-client (about a second to import) is imported only once Qdrant is used
    from qdrant_client import models

    current = getattr(info.config, "quantization_config", None)
    if isinstance(current, models.ScalarQuantization):
        return "int8"
    if isinstance(current, models.BinaryQuantization):
        return "binary"
    return "none"


def _vector_size(info: models.CollectionInfo) -> int | None:
    vectors = info.config.params.vectors
    return getattr(vectors, "size", None)


# --------------------------------------------------------------------------- the store


class QdrantStore(VectorStore):
    """Vectors in Qdrant; ``ensure()`` picks (and creates) the collection of a signature.

    A store made without ``ensure()`` works on the collection of the live memory
    embedding source's signature (when its dimension is known).
    """

    name = "qdrant"
    in_database = False

    def __init__(self, cfg: QdrantSettings | None = None) -> None:
        self.cfg = cfg or get_qdrant_settings()
        self.conn = connection_for(self.cfg)
        self.base = self.cfg.collection
        self.quantization = self.cfg.quantization
        self.collection: str | None = None

    # -- collections

    def ensure(self, *, signature: str, dim: int) -> bool:
        """Use the collection of ``signature``, creating it (cosine, ``dim``) if missing.

        Returns True when it was created: it is empty, so every memory must be
        written to it again (:meth:`backfill`). An existing collection keeps its
        points; only its quantisation is changed when the setting changed.
        Raises ``ValueError`` if an existing collection has another dimension.
        """
        name = collection_name(self.base, signature)
        self.collection = name
        if self.conn.ensured.get(name) == self.quantization:
            return False
        # optional: qdrant-client (about a second to import) is imported only once Qdrant is used
        from qdrant_client import models
        from qdrant_client.http.exceptions import UnexpectedResponse

        wrong_size: int | None = None
        with self.conn.guard() as client:
            if client.collection_exists(name):
                info = client.get_collection(name)
                size = _vector_size(info)
                if size is not None and size != dim:
                    wrong_size = size
                else:
                    if not self.conn.local and _quantization_of(info) != self.quantization:
                        client.update_collection(
                            name,
                            quantization_config=quantization_config(self.quantization)
                            or models.Disabled.DISABLED,
                        )
                        logger.info("qdrant collection %s: quantization now %s", name, self.quantization)
                    self.conn.ensured[name] = self.quantization
                    return False
            else:
                try:
                    client.create_collection(
                        name,
                        vectors_config=models.VectorParams(size=int(dim), distance=models.Distance.COSINE),
                        quantization_config=quantization_config(self.quantization),
                    )
                except UnexpectedResponse as exc:
                    if exc.status_code != 409:  # 409: another process created it first
                        raise
                    self.conn.ensured[name] = self.quantization
                    return False
                if not self.conn.local:
                    self._create_payload_indexes(client, name)
        if wrong_size is not None:
            # Raised outside the guard: Qdrant answered, and the mismatch is not its failure.
            raise ValueError(f"Qdrant collection {name} holds {wrong_size}-d vectors, not {dim}-d")
        self.conn.ensured[name] = self.quantization
        logger.info(
            "qdrant collection %s created for %s (dim %s, quantization %s)",
            name,
            signature,
            dim,
            self.quantization,
        )
        return True

    def _create_payload_indexes(self, client: QdrantClient, name: str) -> None:
        """Indexes for the filters; ``owner`` is the tenant key. Local mode has no indexes."""
        # optional: qdrant-client (about a second to import) is imported only once Qdrant is used
        from qdrant_client import models

        specs: dict[str, models.KeywordIndexParams | models.PayloadSchemaType] = {
            "owner": models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
            "session_id": models.PayloadSchemaType.KEYWORD,
            "expires_at": models.PayloadSchemaType.INTEGER,
            "created_at": models.PayloadSchemaType.INTEGER,
            "valid_to": models.PayloadSchemaType.INTEGER,
        }
        for field_name, schema in specs.items():
            try:
                client.create_payload_index(name, field_name, field_schema=schema)
            except Exception as exc:  # an old server without is_tenant still works, only slower
                logger.warning("qdrant payload index %s.%s not created: %s", name, field_name, exc)

    def signature(self) -> str | None:
        """None: collections are per signature, so a query always meets vectors of its own model."""
        return None

    def _current(self) -> str | None:
        if self.collection is not None:
            return self.collection
        signature = live_signature()
        return collection_name(self.base, signature) if signature else None

    def collections(self) -> list[str]:
        """Every collection of this base (all signatures)."""
        prefix = self.base + "_"
        with self.conn.guard() as client:
            names = [c.name for c in client.get_collections().collections]
        return sorted(n for n in names if n.startswith(prefix))

    # -- points

    def upsert(self, items: Sequence[VectorItem], *, new: bool = False) -> None:
        """Write the points of ``items`` with payloads read from SQLite now.

        Items whose memory no longer exists are skipped (deleted meanwhile).
        """
        if not items:
            return
        name = self._require_collection()
        # optional: qdrant-client (about a second to import) is imported only once Qdrant is used
        from qdrant_client import models

        payloads = payloads_for([int(i.seq) for i in items])
        kept = [i for i in items if int(i.seq) in payloads]
        for start in range(0, len(kept), UPSERT_BATCH):
            chunk = kept[start : start + UPSERT_BATCH]
            batch = models.Batch(
                ids=[int(i.seq) for i in chunk],
                vectors=[np.asarray(i.vector, dtype=np.float32).tolist() for i in chunk],
                payloads=[payloads[int(i.seq)] for i in chunk],
            )
            with self.conn.guard() as client:
                client.upsert(name, points=batch, wait=True)

    def refresh(self, seqs: Iterable[int]) -> int:
        """Rewrite the payload of existing points from SQLite (no re-embedding), in every
        collection of this base; returns how many memories were found."""
        payloads = payloads_for([int(s) for s in seqs])
        if not payloads:
            return 0
        # optional: qdrant-client (about a second to import) is imported only once Qdrant is used
        from qdrant_client import models

        for name in self.collections():
            existing = self._existing_ids(name, list(payloads))
            ops = [
                models.SetPayloadOperation(set_payload=models.SetPayload(payload=payload, points=[seq]))
                for seq, payload in payloads.items()
                if seq in existing
            ]
            for start in range(0, len(ops), UPSERT_BATCH):
                with self.conn.guard() as client:
                    client.batch_update_points(name, update_operations=ops[start : start + UPSERT_BATCH])
        return len(payloads)

    def _existing_ids(self, name: str, seqs: list[int]) -> set[int]:
        # set_payload on a missing point is an error on a server: touch only existing points.
        found: set[int] = set()
        for start in range(0, len(seqs), SCROLL_PAGE):
            with self.conn.guard() as client:
                records = client.retrieve(
                    name, ids=seqs[start : start + SCROLL_PAGE], with_payload=False, with_vectors=False
                )
            found.update(int(r.id) for r in records)
        return found

    def delete(self, seqs: Iterable[int]) -> None:
        """Remove the points of ``seqs`` from every collection of this base (old signatures too)."""
        points: list[models.ExtendedPointId] = [int(s) for s in seqs]
        if not points:
            return
        # optional: qdrant-client (about a second to import) is imported only once Qdrant is used
        from qdrant_client import models

        for name in self.collections():
            for start in range(0, len(points), UPSERT_BATCH):
                with self.conn.guard() as client:
                    client.delete(
                        name,
                        points_selector=models.PointIdsList(points=points[start : start + UPSERT_BATCH]),
                        wait=True,
                    )

    def search(self, *, vector: np.ndarray, k: int, visibility: Visibility) -> list[VectorHit]:
        """The ``k`` nearest visible points: the visibility is a filter inside Qdrant, so ``k``
        counts only visible memories. No cap on ``k`` (the original's stopped at 20)."""
        if visibility.nobody:
            return []
        name = self._current()
        if name is None or k <= 0:
            return []
        with self.conn.guard() as client:
            if not self._exists(client, name):
                return []
            response = client.query_points(
                name,
                query=np.asarray(vector, dtype=np.float32).tolist(),
                query_filter=visibility.qdrant_filter(),
                limit=int(k),
                # local mode searches exactly and warns about params it ignores
                search_params=None if self.conn.local else search_params(self.quantization),
                with_payload=False,
                with_vectors=False,
            )
        return [VectorHit(seq=int(p.id), score=float(p.score or 0.0)) for p in response.points]

    def _exists(self, client: QdrantClient, name: str) -> bool:
        return name in self.conn.ensured or client.collection_exists(name)

    def count(self) -> int:
        name = self._current()
        if name is None:
            return 0
        with self.conn.guard() as client:
            if not self._exists(client, name):
                return 0
            return int(client.count(name, exact=True).count)

    def _require_collection(self) -> str:
        if self.collection is None:
            raise RuntimeError("QdrantStore.ensure() must be called before writing")
        return self.collection

    def point_ids(self, name: str) -> Iterator[list[int]]:
        """Every point id of collection ``name``, a page at a time."""
        offset = None
        while True:
            with self.conn.guard() as client:
                records, offset = client.scroll(
                    name, limit=SCROLL_PAGE, offset=offset, with_payload=False, with_vectors=False
                )
            if records:
                yield [int(r.id) for r in records]
            if offset is None:
                return

    # -- maintenance (memory.vectorstores.qdrant.maintenance)

    def backfill(self, *, retention_days: int | None, batch_size: int = 128) -> dict:
        # cycle: memory.vectorstores.qdrant.maintenance imports this module
        from memory.vectorstores.qdrant import maintenance

        return maintenance.backfill_store(self, retention_days=retention_days, batch_size=batch_size)

    def sweep(self, *, retention_days: int) -> int:
        # cycle: memory.vectorstores.qdrant.maintenance imports this module
        from memory.vectorstores.qdrant import maintenance

        return maintenance.sweep_store(self, retention_days=retention_days)

    def note_failure(self, exc: BaseException) -> str:
        """Forget the collection check (the next write checks it again) and say what failed where. The
        failure itself was counted by the circuit breaker, around the call (``Connection.guard``)."""
        if self.collection:
            self.conn.ensured.pop(self.collection, None)
        return f"{sanitise(exc, self.cfg)} (at {self.cfg.target})"


def payloads_for(seqs: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The Qdrant payload of each existing memory among ``seqs``, from SQLite."""
    out: dict[int, dict[str, Any]] = {}
    for start in range(0, len(seqs), SQL_CHUNK):
        rows = Memory.objects.filter(seq__in=seqs[start : start + SQL_CHUNK]).values_list(
            "seq", "owner_id", "session_id", "type", "key", "expires_at", "created_at", "valid_to"
        )
        for seq, owner_id, session_id, type_, key, expires_at, created_at, valid_to in rows:
            out[int(seq)] = {
                "owner": owner_hex(owner_id),
                "session_id": session_id or "",
                "type": type_,  # the real type (the original always wrote "semantic")
                "key": key,
                "expires_at": unix_seconds(expires_at),
                "created_at": unix_seconds(created_at),
                # Set once a later memory supersedes this one (Visibility.qdrant_filter).
                "valid_to": unix_seconds(valid_to),
            }
    return out


def live_signature() -> str | None:
    """The signature of the memory embedding source in use, when its dimension is known."""
    source, _ = runtime.get_source(get_memory_settings())
    if source is None or source.dim is None:
        return None
    return source.signature


# --------------------------------------------------------------------------- which store, now


def qdrant_choice() -> StoreChoice:
    """The Qdrant store when it is enabled, configured, allowed by the URL policy, its circuit closed
    and it answered recently; else why not (no call while the circuit is open)."""
    cfg = get_qdrant_settings()
    if not cfg.enabled:
        return StoreChoice(None, "qdrant", "qdrant disabled")
    if not cfg.configured:
        return StoreChoice(None, "qdrant", "qdrant enabled but no host configured")
    try:
        store = usable_store()
    except QdrantUnavailable as exc:
        return StoreChoice(None, "qdrant", str(exc))
    return StoreChoice(store, "qdrant", f"Qdrant configured at {cfg.target}")


def usable_store() -> QdrantStore:
    """The store for the current settings; raises ``QdrantUnavailable`` when it should not be used
    (disabled, no host, refused by the URL policy, circuit open, or not answering)."""
    cfg = get_qdrant_settings()
    if not cfg.enabled:
        raise QdrantUnavailable("disabled")
    if not cfg.configured:
        raise QdrantUnavailable("not_configured")
    try:
        store = QdrantStore(cfg)
    except QdrantUnavailable as exc:
        raise QdrantUnavailable(f"qdrant at {cfg.target} {exc}") from None
    if not store.conn.breaker.allow():
        raise QdrantUnavailable(store.conn.breaker.refusal())
    result = recent_probe(cfg)
    if not result.ok:
        raise QdrantUnavailable(f"qdrant unreachable at {cfg.target}: {result.error}")
    return store


def configured_store() -> QdrantStore:
    """The store of the current settings when Qdrant is on (enabled and configured), without asking
    it anything; raises ``QdrantUnavailable("not_configured")`` otherwise."""
    cfg = get_qdrant_settings()
    if not cfg.active:
        raise QdrantUnavailable("not_configured")
    return QdrantStore(cfg)


def mirror_store(*, paused_too: bool = False) -> QdrantStore | None:
    """The store that writes are mirrored to: Qdrant when on, unless its circuit is open
    (``paused_too``: even then; its calls are refused anyway until the probe succeeds) or the URL
    policy refuses it. Asks Qdrant nothing."""
    cfg = get_qdrant_settings()
    if not cfg.active or (not paused_too and circuit_open(cfg)):
        return None
    try:
        return QdrantStore(cfg)
    except QdrantUnavailable as exc:
        logger.warning("qdrant writes skipped: %s", exc)
        return None
