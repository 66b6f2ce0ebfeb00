"""The Qdrant store: one collection per embedding signature, point id = ``memories.seq``.

Design (reference §9, with B6, B18, B21, B27, L8 and L16 fixed):

- the collection is ``<base>_<slug of signature>_<hash>``, so a model change
  opens a new, empty collection (backfilled by the reindex) instead of
  breaking search with dimension errors; an existing collection is never
  recreated;
- cosine distance; optional int8 scalar or binary quantisation, searched with
  rescoring (binary also oversamples) — qdrant-client's local mode ignores
  both, so they only matter on a server;
- the payload carries ``owner`` (hex), ``session_id``, ``expires_at`` and
  ``created_at`` (unix seconds; ``expires_at`` null = never), the real
  ``type`` and ``key``: owner, session, expiry and retention filters run
  inside Qdrant (L8), and the content stays in SQLite only;
- every call has a timeout; the module functions used by the write path
  (:func:`mirror_upsert`, :func:`mirror_delete`, :func:`mirror_payload`)
  never raise: they log and return, and skip Qdrant for a short while after
  it failed, so an outage costs one timeout, not one per write.

Clients are cached per connection (``QdrantSettings.connection_key``). Local
mode (``:memory:`` or a directory) is not thread-safe in qdrant-client, so its
calls are serialised by a lock; a directory can be opened by one process only.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
from django.utils import timezone

from memory.qdrant_conf import QdrantSettings, get_qdrant_settings
from memory.vectorstores.base import VectorHit, VectorItem, VectorStore
from memory.vectorstores.registry import StoreChoice

logger = logging.getLogger("memory.vectorstores.qdrant")

UPSERT_BATCH = 256
SCROLL_PAGE = 1000
SQL_CHUNK = 500
# How long a probe result is trusted by qdrant_choice() and the mirror functions.
HEALTHY_TTL = 30.0
UNHEALTHY_TTL = 10.0
ERROR_CHARS = 200


class QdrantUnavailable(Exception):
    """Qdrant is disabled, not configured, or failed recently (the message says which)."""


# --------------------------------------------------------------------------- naming


def signature_slug(signature: str) -> str:
    """A collection-safe, readable slug of ``signature`` plus a hash, so distinct
    signatures never share a collection even when their slugs coincide."""
    slug = re.sub(r"[^a-z0-9]+", "_", signature.lower()).strip("_")[:80] or "default"
    digest = hashlib.sha256(signature.encode()).hexdigest()[:8]
    return f"{slug}_{digest}"


def collection_name(base: str, signature: str) -> str:
    return f"{base}_{signature_slug(signature)}"


def owner_hex(owner_id) -> str:
    return str(owner_id).replace("-", "").lower()


def unix(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp())


# --------------------------------------------------------------------------- connections


@dataclass
class _Connection:
    """One qdrant-client, the collections it is known to have, and a lock for local mode."""

    client: object
    local: bool
    lock: threading.RLock = field(default_factory=threading.RLock)
    # collection name -> quantization it was checked/created with
    ensured: dict[str, str] = field(default_factory=dict)

    @contextlib.contextmanager
    def guard(self) -> Iterator[object]:
        if self.local:
            with self.lock:
                yield self.client
        else:
            yield self.client


_lock = threading.Lock()
_connections: dict[tuple, _Connection] = {}
# connection key -> (monotonic time, ok, latency ms, error)
_probes: dict[tuple, tuple[float, bool, float, str | None]] = {}


def _build_client(cfg: QdrantSettings):
    from qdrant_client import QdrantClient

    if cfg.mode == "memory":
        return QdrantClient(location=":memory:")
    if cfg.mode == "path":
        # Django serves requests from several threads; calls are serialised by _Connection.lock.
        return QdrantClient(path=cfg.host, force_disable_check_same_thread=True)
    # check_compatibility=False: no version request when the client is built (no I/O here).
    return QdrantClient(
        url=cfg.url,
        port=None,
        api_key=cfg.apiKey,
        timeout=cfg.timeoutSeconds,
        check_compatibility=False,
    )


def connection_for(cfg: QdrantSettings) -> _Connection:
    """The cached connection for ``cfg`` (built on first use; building does no I/O)."""
    if not cfg.configured:
        raise QdrantUnavailable("not_configured")
    key = cfg.connection_key()
    with _lock:
        conn = _connections.get(key)
        if conn is None:
            conn = _Connection(client=_build_client(cfg), local=cfg.mode != "server")
            _connections[key] = conn
        return conn


def _close(conn: _Connection) -> None:
    try:
        conn.client.close()
    except Exception:  # closing is best effort
        logger.debug("closing a Qdrant client failed", exc_info=True)


def forget_stale_clients() -> None:
    """Close the clients that the current settings no longer use (after a settings write)."""
    keep = get_qdrant_settings().connection_key()
    with _lock:
        stale = [key for key in _connections if key != keep]
        conns = [_connections.pop(key) for key in stale]
        for key in stale:
            _probes.pop(key, None)
    for conn in conns:
        _close(conn)


def reset_clients() -> None:
    """Close every client and forget probes (tests; an in-memory store is lost)."""
    with _lock:
        conns = list(_connections.values())
        _connections.clear()
        _probes.clear()
    for conn in conns:
        _close(conn)


def _sanitise(exc: BaseException, cfg: QdrantSettings) -> str:
    """An error text for operators: short, one line, never the API key."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if cfg.apiKey:
        text = text.replace(cfg.apiKey, "***")
    return text[:ERROR_CHARS]


# --------------------------------------------------------------------------- health


@dataclass(frozen=True)
class Probe:
    ok: bool
    latency_ms: float
    error: str | None


def probe(cfg: QdrantSettings | None = None) -> Probe:
    """Ask Qdrant for its collections (reachability *and* API key), now; the result is remembered."""
    cfg = cfg or get_qdrant_settings()
    if not cfg.configured:
        return Probe(False, 0, "not_configured")
    started = time.perf_counter()
    try:
        conn = connection_for(cfg)
        with conn.guard() as client:
            client.get_collections()
        result = Probe(True, _ms(started), None)
    except Exception as exc:
        result = Probe(False, _ms(started), _sanitise(exc, cfg))
    _remember(cfg, result)
    return result


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def _remember(cfg: QdrantSettings, result: Probe) -> None:
    with _lock:
        _probes[cfg.connection_key()] = (time.monotonic(), result.ok, result.latency_ms, result.error)


def _recent_probe(cfg: QdrantSettings) -> Probe:
    """The last probe if still fresh, else a new one."""
    with _lock:
        seen = _probes.get(cfg.connection_key())
    if seen is not None:
        at, ok, latency, error = seen
        if time.monotonic() - at < (HEALTHY_TTL if ok else UNHEALTHY_TTL):
            return Probe(ok, latency, error)
    return probe(cfg)


def _mark_failed(cfg: QdrantSettings, exc: BaseException) -> None:
    _remember(cfg, Probe(False, 0, _sanitise(exc, cfg)))


def qdrant_health() -> dict:
    """``{enabled, healthy, latencyMs, error}`` for the engine status (probes when enabled)."""
    cfg = get_qdrant_settings()
    if not cfg.enabled:
        return {"enabled": False, "healthy": None, "latencyMs": None, "error": None}
    result = probe(cfg)
    return {"enabled": True, "healthy": result.ok, "latencyMs": result.latency_ms, "error": result.error}


def qdrant_choice() -> StoreChoice:
    """The Qdrant store when it is enabled, configured and answered recently; else why not."""
    cfg = get_qdrant_settings()
    if not cfg.enabled:
        return StoreChoice(None, "qdrant", "qdrant disabled")
    if not cfg.configured:
        return StoreChoice(None, "qdrant", "qdrant enabled but no host configured")
    result = _recent_probe(cfg)
    if not result.ok:
        return StoreChoice(None, "qdrant", f"qdrant unreachable at {cfg.target}: {result.error}")
    return StoreChoice(QdrantStore(cfg), "qdrant", f"Qdrant configured at {cfg.target}")


def usable_store() -> QdrantStore:
    """The store for the current settings; raises ``QdrantUnavailable`` when it should not be used."""
    cfg = get_qdrant_settings()
    if not cfg.enabled:
        raise QdrantUnavailable("disabled")
    if not cfg.configured:
        raise QdrantUnavailable("not_configured")
    result = _recent_probe(cfg)
    if not result.ok:
        raise QdrantUnavailable(f"unreachable: {result.error}")
    return QdrantStore(cfg)


# --------------------------------------------------------------------------- the store


def quantization_config(kind: str):
    """The collection's ``quantization_config`` for ``none``/``int8``/``binary`` (reference §9.3)."""
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


def search_params(kind: str):
    """Rescore quantised candidates with the original vectors; binary loses more, so oversample."""
    from qdrant_client import models

    if kind == "int8":
        return models.SearchParams(quantization=models.QuantizationSearchParams(rescore=True))
    if kind == "binary":
        return models.SearchParams(
            quantization=models.QuantizationSearchParams(rescore=True, oversampling=2.0)
        )
    return None


def _quantization_of(info) -> str:
    from qdrant_client import models

    current = getattr(info.config, "quantization_config", None)
    if isinstance(current, models.ScalarQuantization):
        return "int8"
    if isinstance(current, models.BinaryQuantization):
        return "binary"
    return "none"


def _vector_size(info) -> int | None:
    vectors = info.config.params.vectors
    return getattr(vectors, "size", None)


class QdrantStore(VectorStore):
    """Vectors in Qdrant; ``ensure()`` picks (and creates) the collection of a signature.

    A store made without ``ensure()`` works on the collection of the live memory
    embedding source's signature (when its dimension is known).
    """

    name = "qdrant"

    def __init__(self, cfg: QdrantSettings | None = None):
        self.cfg = cfg or get_qdrant_settings()
        self.conn = connection_for(self.cfg)
        self.base = self.cfg.collection
        self.quantization = self.cfg.quantization
        self.collection: str | None = None

    # -- collections

    def ensure(self, *, signature: str, dim: int) -> bool:
        """Use the collection of ``signature``, creating it (cosine, ``dim``) if missing.

        Returns True when it was created: it is empty, so every memory must be
        written to it again (:func:`backfill`). An existing collection keeps its
        points; only its quantisation is changed when the setting changed.
        Raises ``ValueError`` if an existing collection has another dimension.
        """
        name = collection_name(self.base, signature)
        self.collection = name
        if self.conn.ensured.get(name) == self.quantization:
            return False
        from qdrant_client import models
        from qdrant_client.http.exceptions import UnexpectedResponse

        with self.conn.guard() as client:
            if client.collection_exists(name):
                info = client.get_collection(name)
                size = _vector_size(info)
                if size is not None and size != dim:
                    raise ValueError(f"Qdrant collection {name} holds {size}-d vectors, not {dim}-d")
                if not self.conn.local and _quantization_of(info) != self.quantization:
                    client.update_collection(
                        name,
                        quantization_config=quantization_config(self.quantization)
                        or models.Disabled.DISABLED,
                    )
                    logger.info("qdrant collection %s: quantization now %s", name, self.quantization)
                self.conn.ensured[name] = self.quantization
                return False
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
        self.conn.ensured[name] = self.quantization
        logger.info(
            "qdrant collection %s created for %s (dim %s, quantization %s)",
            name,
            signature,
            dim,
            self.quantization,
        )
        return True

    def _create_payload_indexes(self, client, name: str) -> None:
        """Indexes for the filters; ``owner`` is the tenant key. Local mode has no indexes."""
        from qdrant_client import models

        specs = {
            "owner": models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
            "session_id": models.PayloadSchemaType.KEYWORD,
            "expires_at": models.PayloadSchemaType.INTEGER,
            "created_at": models.PayloadSchemaType.INTEGER,
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

    def set_payloads(self, seqs: Iterable[int]) -> int:
        """Refresh the payload of existing points from SQLite (no re-embedding), in every
        collection of this base; returns how many memories were found."""
        payloads = payloads_for([int(s) for s in seqs])
        if not payloads:
            return 0
        from qdrant_client import models

        operations = [
            models.SetPayloadOperation(set_payload=models.SetPayload(payload=payload, points=[seq]))
            for seq, payload in payloads.items()
        ]
        for name in self.collections():
            existing = self._existing_ids(name, list(payloads))
            ops = [op for op in operations if op.set_payload.points[0] in existing]
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
        seqs = [int(s) for s in seqs]
        if not seqs:
            return
        from qdrant_client import models

        for name in self.collections():
            for start in range(0, len(seqs), UPSERT_BATCH):
                with self.conn.guard() as client:
                    client.delete(
                        name,
                        points_selector=models.PointIdsList(points=seqs[start : start + UPSERT_BATCH]),
                        wait=True,
                    )

    def search(
        self,
        *,
        owner_ids: Sequence[str] | None,
        vector: np.ndarray,
        k: int,
        session_id: str | None = None,
        now: datetime | None = None,
        created_after: datetime | None = None,
    ) -> list[VectorHit]:
        """The ``k`` nearest live points of ``owner_ids`` (None = every owner, for global callers).

        Owner, expiry (null or after ``now``), ``session_id`` and ``created_after``
        are filters inside Qdrant, so ``k`` counts only eligible memories. No cap
        on ``k`` (B21).
        """
        if owner_ids is not None and not owner_ids:
            return []
        name = self._current()
        if name is None or k <= 0:
            return []
        query_filter = search_filter(
            owner_ids=owner_ids, session_id=session_id, now=now, created_after=created_after
        )
        with self.conn.guard() as client:
            if not self._exists(client, name):
                return []
            response = client.query_points(
                name,
                query=np.asarray(vector, dtype=np.float32).tolist(),
                query_filter=query_filter,
                limit=int(k),
                # local mode searches exactly and warns about params it ignores
                search_params=None if self.conn.local else search_params(self.quantization),
                with_payload=False,
                with_vectors=False,
            )
        return [VectorHit(seq=int(p.id), score=float(p.score or 0.0)) for p in response.points]

    def _exists(self, client, name: str) -> bool:
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

    # -- maintenance

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


def search_filter(*, owner_ids, session_id=None, now=None, created_after=None):
    from qdrant_client import models

    now = now or timezone.now()
    must = []
    if owner_ids is not None:
        must.append(
            models.FieldCondition(key="owner", match=models.MatchAny(any=[owner_hex(o) for o in owner_ids]))
        )
    if session_id:
        must.append(models.FieldCondition(key="session_id", match=models.MatchValue(value=session_id)))
    if created_after is not None:
        must.append(models.FieldCondition(key="created_at", range=models.Range(gte=unix(created_after))))
    # Not expired: no expiry (null/missing) or an expiry after now.
    must.append(
        models.Filter(
            should=[
                models.IsEmptyCondition(is_empty=models.PayloadField(key="expires_at")),
                models.FieldCondition(key="expires_at", range=models.Range(gt=unix(now))),
            ]
        )
    )
    return models.Filter(must=must)


def payloads_for(seqs: Sequence[int]) -> dict[int, dict]:
    """The Qdrant payload of each existing memory among ``seqs``, from SQLite."""
    from memory.models import Memory

    out: dict[int, dict] = {}
    for start in range(0, len(seqs), SQL_CHUNK):
        rows = Memory.objects.filter(seq__in=seqs[start : start + SQL_CHUNK]).values_list(
            "seq", "owner_id", "session_id", "type", "key", "expires_at", "created_at"
        )
        for seq, owner_id, session_id, type_, key, expires_at, created_at in rows:
            out[int(seq)] = {
                "owner": owner_hex(owner_id),
                "session_id": session_id or "",
                "type": type_,  # the real type (B27: the reference always wrote "semantic")
                "key": key,
                "expires_at": unix(expires_at),
                "created_at": unix(created_at),
            }
    return out


def live_signature() -> str | None:
    """The signature of the memory embedding source in use, when its dimension is known."""
    from memory.conf import get_memory_settings
    from memory.embeddings.runtime import get_source

    source, _ = get_source(get_memory_settings())
    if source is None or source.dim is None:
        return None
    return source.signature


# --------------------------------------------------------------------------- write-path mirror


def _mirror_config() -> QdrantSettings | None:
    """The settings to mirror writes with, or None (disabled, or failed within UNHEALTHY_TTL)."""
    cfg = get_qdrant_settings()
    if not cfg.active:
        return None
    with _lock:
        seen = _probes.get(cfg.connection_key())
    if seen is not None and not seen[1] and time.monotonic() - seen[0] < UNHEALTHY_TTL:
        logger.debug("qdrant mirror skipped: failed %.0f s ago", time.monotonic() - seen[0])
        return None
    return cfg


def _mirror_failed(cfg: QdrantSettings, action: str, seqs: list[int], exc: BaseException) -> None:
    _mark_failed(cfg, exc)
    logger.warning(
        "qdrant %s of %s memories (seqs %s%s) at %s failed: %s",
        action,
        len(seqs),
        seqs[:5],
        "…" if len(seqs) > 5 else "",
        cfg.target,
        _sanitise(exc, cfg),
    )


def mirror_upsert(items: Sequence[VectorItem], *, signature: str | None = None) -> int:
    """Write ``items`` to Qdrant too; returns how many were sent (0 when skipped or failed).

    ``signature`` is the embedding signature of the vectors (pass the source's;
    default: the live source's). No-op when Qdrant is disabled. Never raises:
    errors are logged with context. Call it after the SQLite transaction
    commits, not inside it (a network call must not hold the write lock).
    """
    if not items:
        return 0
    cfg = _mirror_config()
    if cfg is None:
        return 0
    seqs = [int(i.seq) for i in items]
    store = None
    try:
        signature = signature or live_signature()
        if signature is None:
            logger.warning("qdrant mirror skipped for %s memories: no embedding signature", len(seqs))
            return 0
        store = QdrantStore(cfg)
        if store.ensure(signature=signature, dim=int(np.asarray(items[0].vector).shape[0])):
            logger.info("qdrant collection %s is new: a reindex backfills it", store.collection)
        store.upsert(items)
        return len(items)
    except Exception as exc:
        if store is not None and store.collection:
            store.conn.ensured.pop(store.collection, None)
        _mirror_failed(cfg, "upsert", seqs, exc)
        return 0


def mirror_delete(seqs: Iterable[int]) -> int:
    """Remove these memories' points from Qdrant (every signature's collection); returns
    how many ids were sent.

    No-op when Qdrant is disabled. Never raises. A point left behind by a
    failure is harmless (retrieval loads memories from SQLite, owner filters
    still hold) and :func:`cleanup_expired` removes it.
    """
    seqs = [int(s) for s in seqs]
    if not seqs:
        return 0
    cfg = _mirror_config()
    if cfg is None:
        return 0
    try:
        QdrantStore(cfg).delete(seqs)
        return len(seqs)
    except Exception as exc:
        _mirror_failed(cfg, "delete", seqs, exc)
        return 0


def mirror_payload(seqs: Iterable[int]) -> int:
    """Refresh the payload (session, expiry, type, key) of these memories' points without
    re-embedding, for updates that did not change the content (L16). Never raises."""
    seqs = [int(s) for s in seqs]
    if not seqs:
        return 0
    cfg = _mirror_config()
    if cfg is None:
        return 0
    try:
        return QdrantStore(cfg).set_payloads(seqs)
    except Exception as exc:
        _mirror_failed(cfg, "payload refresh", seqs, exc)
        return 0


# --------------------------------------------------------------------------- maintenance


def cleanup_expired(retention_days: int) -> int:
    """Delete the points of memories that are gone, expired, or older than ``retention_days``
    (clamped to 1..3650), in every collection of the base; returns how many were deleted.

    Only Qdrant points are removed: nothing in SQLite is touched. Raises
    ``QdrantUnavailable`` when Qdrant is disabled or not configured, and
    qdrant-client errors when it fails.
    """
    from qdrant_client import models

    from memory.models import Memory

    cfg = get_qdrant_settings()
    if not cfg.active:
        raise QdrantUnavailable("not_configured")
    days = max(1, min(3650, int(retention_days)))
    now = timezone.now()
    stale = models.Filter(
        should=[
            models.FieldCondition(key="expires_at", range=models.Range(lte=unix(now))),
            models.FieldCondition(key="created_at", range=models.Range(lt=unix(now - timedelta(days=days)))),
        ]
    )
    store = QdrantStore(cfg)
    deleted = 0
    for name in store.collections():
        with store.conn.guard() as client:
            matched = int(client.count(name, count_filter=stale, exact=True).count)
            if matched:
                client.delete(name, points_selector=models.FilterSelector(filter=stale), wait=True)
        deleted += matched
        orphans: list[int] = []
        for page in store.point_ids(name):
            alive = set(Memory.objects.filter(seq__in=page).values_list("seq", flat=True))
            orphans.extend(seq for seq in page if seq not in alive)
        for start in range(0, len(orphans), UPSERT_BATCH):
            with store.conn.guard() as client:
                client.delete(
                    name,
                    points_selector=models.PointIdsList(points=orphans[start : start + UPSERT_BATCH]),
                    wait=True,
                )
        deleted += len(orphans)
        if matched or orphans:
            logger.info(
                "qdrant cleanup %s: %s stale and %s orphan points deleted", name, matched, len(orphans)
            )
    return deleted


def backfill(*, batch_size: int = 128, retention_days: int | None = None) -> dict:
    """Write every live memory that has no point in the current signature's collection.

    Vectors come from the live memory embedding source (its cache helps).
    Memories that are expired, or older than ``retention_days`` when given
    (what :func:`cleanup_expired` would remove again), are skipped. Returns
    ``{upserted, errors, reason}``; raises ``QdrantUnavailable`` when Qdrant is
    not usable. Embedding failures are counted, not raised.
    """
    from django.db.models import Q

    from memory.conf import get_memory_settings
    from memory.embeddings.base import EmbeddingError
    from memory.embeddings.runtime import get_source
    from memory.models import Memory

    store = usable_store()
    source, resolution = get_source(get_memory_settings())
    if source is None:
        return {"upserted": 0, "errors": 0, "reason": resolution.reason}
    now = timezone.now()
    qs = Memory.objects.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
    if retention_days:
        qs = qs.filter(created_at__gte=now - timedelta(days=retention_days))
    upserted = errors = 0
    present: set[int] | None = None
    last = 0
    while True:
        page = list(qs.filter(seq__gt=last).order_by("seq").only("seq", "owner_id", "content")[:batch_size])
        if not page:
            break
        last = page[-1].seq
        if present is not None:
            page = [m for m in page if m.seq not in present]
        if not page:
            continue
        try:
            vectors = source.embed([m.content for m in page])
        except EmbeddingError as exc:
            errors += len(page)
            logger.warning("qdrant backfill: embedding %s memories failed: %s", len(page), exc)
            continue
        store.ensure(signature=source.signature, dim=int(vectors.shape[1]))
        if present is None:
            present = {seq for ids in store.point_ids(store.collection) for seq in ids}
            todo = [(m, v) for m, v in zip(page, vectors, strict=True) if m.seq not in present]
        else:
            todo = list(zip(page, vectors, strict=True))
        store.upsert([VectorItem(m.seq, str(m.owner_id), v) for m, v in todo])
        upserted += len(todo)
    logger.info("qdrant backfill into %s: %s upserted, %s errors", store.collection, upserted, errors)
    return {"upserted": upserted, "errors": errors, "reason": None}


def search_memories(*, query: str, top_k: int, owner_ids) -> dict:
    """The Qdrant search behind ``POST /api/settings/qdrant/search``.

    ``owner_ids`` (None = every owner) limits the search inside Qdrant and
    again when the memories are loaded. Returns ``{ok, results, …}``; a
    failure gives ``ok: false`` with an ``error`` and no results.
    """
    from memory.conf import get_memory_settings
    from memory.embeddings.base import EmbeddingError
    from memory.embeddings.runtime import get_source
    from memory.models import Memory
    from memory.shapes import iso

    cfg = get_qdrant_settings()
    if not cfg.active:
        return {"ok": False, "results": [], "error": "not_configured"}
    source, resolution = get_source(get_memory_settings())
    if source is None:
        return {"ok": False, "results": [], "error": f"no embedding source: {resolution.reason}"}
    started = time.perf_counter()
    try:
        store = usable_store()
        vector = source.embed([query])[0]
        store.ensure(signature=source.signature, dim=int(vector.shape[0]))
        hits = store.search(owner_ids=None if owner_ids is None else list(owner_ids), vector=vector, k=top_k)
    except QdrantUnavailable as exc:
        return {"ok": False, "results": [], "error": str(exc)}
    except EmbeddingError as exc:
        return {"ok": False, "results": [], "error": f"embedding failed: {exc.message}"}
    except Exception as exc:
        _mark_failed(cfg, exc)
        logger.warning("qdrant search at %s failed: %s", cfg.target, _sanitise(exc, cfg))
        return {"ok": False, "results": [], "error": _sanitise(exc, cfg)}
    qs = Memory.objects.filter(seq__in=[h.seq for h in hits])
    if owner_ids is not None:
        qs = qs.filter(owner_id__in=list(owner_ids))
    memories = {m.seq: m for m in qs}
    results = [
        {
            "id": str(m.uuid),
            "score": hit.score,
            "payload": {
                "apiKeyId": str(m.owner_id),
                "sessionId": m.session_id or "",
                "type": m.type,
                "key": m.key or "",
                "content": m.content,
                "createdAt": iso(m.created_at),
                "expiresAt": iso(m.expires_at),
            },
        }
        for hit in hits
        if (m := memories.get(hit.seq)) is not None
    ]
    return {"ok": True, "latencyMs": _ms(started), "collection": store.collection, "results": results}
