"""Qdrant connections: one cached qdrant-client per connection, and what each was last seen to do.

Clients are cached per connection (``QdrantSettings.connection_key``); building one does no I/O.
Local mode (``:memory:`` or a directory) is not thread-safe in qdrant-client, so its calls are
serialised by a lock; a directory can be opened by one process only.

Health is remembered per connection: a probe result is trusted for ``HEALTHY_TTL`` seconds (or
``UNHEALTHY_TTL`` after a failure), and any failed call counts as a failed probe, so after an
outage Qdrant is left out of searches and writes for a short while: it costs one timeout, not one
per request.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from memory.qdrant_conf import QdrantSettings, get_qdrant_settings

logger = logging.getLogger("memory.vectorstores.qdrant")

# How long a probe result is trusted by the store choice and the write mirror.
HEALTHY_TTL = 30.0
UNHEALTHY_TTL = 10.0
ERROR_CHARS = 200


class QdrantUnavailable(Exception):
    """Qdrant is disabled, not configured, or failed recently (the message says which)."""


@dataclass
class Connection:
    """One qdrant-client, the collections it is known to have, and a lock for local mode."""

    client: Any
    local: bool
    lock: threading.RLock = field(default_factory=threading.RLock)
    # collection name -> quantization it was checked/created with
    ensured: dict[str, str] = field(default_factory=dict)

    @contextlib.contextmanager
    def guard(self) -> Iterator[Any]:
        if self.local:
            with self.lock:
                yield self.client
        else:
            yield self.client


_lock = threading.Lock()
_connections: dict[tuple, Connection] = {}
# connection key -> (monotonic time, ok, latency ms, error)
_probes: dict[tuple, tuple[float, bool, float, str | None]] = {}


def _build_client(cfg: QdrantSettings) -> Any:
    from qdrant_client import QdrantClient  # an optional dependency, imported when first used

    if cfg.mode == "memory":
        return QdrantClient(location=":memory:")
    if cfg.mode == "path":
        # Django serves requests from several threads; calls are serialised by Connection.lock.
        return QdrantClient(path=cfg.host, force_disable_check_same_thread=True)
    # check_compatibility=False: no version request when the client is built (no I/O here).
    return QdrantClient(
        url=cfg.url,
        port=None,
        api_key=cfg.apiKey,
        timeout=cfg.timeoutSeconds,
        check_compatibility=False,
    )


def connection_for(cfg: QdrantSettings) -> Connection:
    """The cached connection for ``cfg`` (built on first use; building does no I/O)."""
    if not cfg.configured:
        raise QdrantUnavailable("not_configured")
    key = cfg.connection_key()
    with _lock:
        conn = _connections.get(key)
        if conn is None:
            conn = Connection(client=_build_client(cfg), local=cfg.mode != "server")
            _connections[key] = conn
        return conn


def _close(conn: Connection) -> None:
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


def sanitise(exc: BaseException, cfg: QdrantSettings) -> str:
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
        result = Probe(True, elapsed_ms(started), None)
    except Exception as exc:
        result = Probe(False, elapsed_ms(started), sanitise(exc, cfg))
    _remember(cfg, result)
    return result


def elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def _remember(cfg: QdrantSettings, result: Probe) -> None:
    with _lock:
        _probes[cfg.connection_key()] = (time.monotonic(), result.ok, result.latency_ms, result.error)


def recent_probe(cfg: QdrantSettings) -> Probe:
    """The last probe if still fresh, else a new one."""
    with _lock:
        seen = _probes.get(cfg.connection_key())
    if seen is not None:
        at, ok, latency, error = seen
        if time.monotonic() - at < (HEALTHY_TTL if ok else UNHEALTHY_TTL):
            return Probe(ok, latency, error)
    return probe(cfg)


def mark_failed(cfg: QdrantSettings, exc: BaseException) -> str:
    """Remember that a call failed (as a failed probe); returns the sanitised error."""
    error = sanitise(exc, cfg)
    _remember(cfg, Probe(False, 0, error))
    return error


def failed_recently(cfg: QdrantSettings) -> bool:
    """Whether a call or probe failed within ``UNHEALTHY_TTL`` (writes then skip Qdrant)."""
    with _lock:
        seen = _probes.get(cfg.connection_key())
    if seen is None or seen[1]:
        return False
    ago = time.monotonic() - seen[0]
    if ago < UNHEALTHY_TTL:
        logger.debug("qdrant skipped: failed %.0f s ago", ago)
        return True
    return False


def qdrant_health() -> dict:
    """``{enabled, healthy, latencyMs, error}`` for the engine status (probes when enabled)."""
    cfg = get_qdrant_settings()
    if not cfg.enabled:
        return {"enabled": False, "healthy": None, "latencyMs": None, "error": None}
    result = probe(cfg)
    return {"enabled": True, "healthy": result.ok, "latencyMs": result.latency_ms, "error": result.error}
