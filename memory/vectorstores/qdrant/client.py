"""Qdrant connections: one cached qdrant-client per connection, and what each was last seen to do.

Clients are cached per connection (``QdrantSettings.connection_key``); building one does no I/O.
Local mode (``:memory:`` or a directory) is not thread-safe in qdrant-client, so its calls are
serialised by a lock; a directory can be opened by one process only.

Each connection has a circuit breaker (``memory.breaker``): every call goes through
``Connection.guard``, which counts it. After ``MEMORY_BREAKER_FAILURES`` failures in a row the circuit
opens: Qdrant is left out of searches (the database's vector store answers, and the retrieval's
``fallbackReason`` says why) and of writes, with no call and so no timeout, until a background probe
finds it answering again (one try per ``MEMORY_BREAKER_COOLDOWN_SECONDS``). A successful probe is
trusted for ``HEALTHY_TTL`` seconds by the store choice.

A server's URL passes the outbound URL policy (``memory.urlpolicy``) before a client is used, with
the one private-network switch (``MemorySettings.private_urls_allowed``). Errors shown to people
(health, status, fallback reasons) name the status or the kind of failure, never the body Qdrant
or whatever answers in its place sent back (:func:`sanitise`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from django.conf import settings

from memory.breaker import CircuitBreaker
from memory.conf import get_memory_settings
from memory.qdrant_conf import QdrantSettings, get_qdrant_settings
from memory.urlpolicy import UrlPolicyError, check_outbound_url

logger = logging.getLogger("memory.vectorstores.qdrant")

# How long a successful probe is trusted by the store choice.
HEALTHY_TTL = 30.0
ERROR_CHARS = 200


class QdrantUnavailable(Exception):
    """Qdrant is disabled, not configured, refused by the URL policy, or its circuit is open (the
    message says which)."""


@dataclass
class Connection:
    """One qdrant-client, the collections it is known to have, a lock for local mode and the circuit
    breaker of every call made through :meth:`guard`."""

    client: Any
    local: bool
    cfg: QdrantSettings
    lock: threading.RLock = field(default_factory=threading.RLock)
    # collection name -> quantization it was checked/created with
    ensured: dict[str, str] = field(default_factory=dict)
    breaker: CircuitBreaker = field(init=False)

    def __post_init__(self) -> None:
        self.breaker = CircuitBreaker(
            f"qdrant at {self.cfg.target}",
            threshold=settings.MEMORY_BREAKER_FAILURES,
            cooldown=settings.MEMORY_BREAKER_COOLDOWN_SECONDS,
            probe=self._probe,
            describe=lambda exc: sanitise(exc, self.cfg),
        )

    @contextlib.contextmanager
    def _client(self) -> Iterator[Any]:
        if self.local:
            with self.lock:
                yield self.client
        else:
            yield self.client

    @contextlib.contextmanager
    def guard(self) -> Iterator[Any]:
        """The client, for the calls of one block. Raises ``QdrantUnavailable`` at once while the circuit
        is open; a block that raises counts as a failed call (the exception goes on), one that ends
        as a success. Only Qdrant calls belong in the block: an error of ours would count too."""
        if not self.breaker.allow():
            raise QdrantUnavailable(self.breaker.refusal())
        try:
            with self._client() as client:
                yield client
        except Exception as exc:
            self.breaker.record_failure(sanitise(exc, self.cfg))
            raise
        self.breaker.record_success()

    def call_now(self) -> None:
        """List the collections (reachability and API key) even while the circuit is open: an
        operator's explicit test. The outcome is counted like any call."""
        try:
            self._probe()
        except Exception as exc:
            self.breaker.record_failure(sanitise(exc, self.cfg))
            raise
        self.breaker.record_success()

    def _probe(self) -> None:
        # The half-open trial (the breaker runs it on its own thread): the policy may have changed too.
        if not self.local:
            check_policy(self.cfg)
        with self._client() as client:
            client.get_collections()


_lock = threading.Lock()
_connections: dict[tuple, Connection] = {}
# connection key -> (monotonic time, ok, latency ms, error)
_probes: dict[tuple, tuple[float, bool, float, str | None]] = {}


def check_policy(cfg: QdrantSettings) -> None:
    """Raise ``QdrantUnavailable`` when the server's URL is refused by the outbound URL policy (names
    are resolved now); local mode is not a URL."""
    if cfg.mode != "server":
        return
    try:
        check_outbound_url(cfg.url, allow_private=get_memory_settings().private_urls_allowed)
    except UrlPolicyError as exc:
        raise QdrantUnavailable(f"refused by the outbound URL policy: {exc}") from None


def _build_client(cfg: QdrantSettings) -> Any:
    # optional: qdrant-client (about a second to import) is imported only once Qdrant is used
    from qdrant_client import QdrantClient

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
    """The cached connection for ``cfg`` (built on first use; building does no I/O). Raises
    ``QdrantUnavailable`` when Qdrant has no host, or when the outbound URL policy refuses it (checked
    every time: the answer of the DNS, or the private-network switch, may have changed)."""
    if not cfg.configured:
        raise QdrantUnavailable("not_configured")
    check_policy(cfg)
    key = cfg.connection_key()
    with _lock:
        conn = _connections.get(key)
        if conn is None:
            conn = Connection(client=_build_client(cfg), local=cfg.mode != "server", cfg=cfg)
            _connections[key] = conn
        return conn


def connection_if_built(cfg: QdrantSettings) -> Connection | None:
    """The connection for ``cfg`` if one was built (no policy check, no I/O): for status reads."""
    with _lock:
        return _connections.get(cfg.connection_key())


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
    """An error text for operators: short, one line, never the API key nor a remote body.

    What came back from the server is reduced to its status (``HTTP 401 Unauthorized``), a transport
    failure to its kind; qdrant-client's own texts quote up to 200 bytes of the body, which may be
    anything the host answers (a metadata service's token, another service's page)."""
    # optional: qdrant-client (about a second to import) is imported only once Qdrant is used
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    cause: BaseException = exc.source if isinstance(exc, ResponseHandlingException) else exc
    if isinstance(cause, UnexpectedResponse):
        text = f"HTTP {cause.status_code} {cause.reason_phrase}".strip()
    elif isinstance(cause, httpx.TimeoutException):
        text = f"timed out after {cfg.timeoutSeconds} s ({type(cause).__name__})"
    elif isinstance(cause, httpx.TransportError):
        # Connection errors carry the OS's text ("[Errno 111] Connection refused"), never a body.
        text = f"{type(cause).__name__}: {cause}"
    elif isinstance(exc, ResponseHandlingException):
        # An answer that is not Qdrant's API: its parse error quotes the body.
        text = f"an answer Qdrant's API does not give ({type(cause).__name__})"
    else:
        text = str(exc) or type(exc).__name__
    text = " ".join(text.split())
    if cfg.apiKey:
        text = text.replace(cfg.apiKey, "***")
    return text[:ERROR_CHARS]


# --------------------------------------------------------------------------- health


@dataclass(frozen=True)
class Probe:
    ok: bool
    latency_ms: float
    error: str | None


def probe(cfg: QdrantSettings | None = None, *, force: bool = False) -> Probe:
    """Ask Qdrant for its collections (reachability *and* API key), now. While the circuit is open
    the answer is its refusal, without a call, unless ``force`` (an operator's explicit test, whose
    success closes the circuit). The result is remembered."""
    cfg = cfg or get_qdrant_settings()
    if not cfg.configured:
        return Probe(False, 0, "not_configured")
    started = time.perf_counter()
    try:
        conn = connection_for(cfg)
        if force:
            conn.call_now()
        else:
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
    """The last probe if it succeeded within ``HEALTHY_TTL``, else a new one (failures are the
    breaker's to remember: a closed circuit tries again, an open one refuses at once)."""
    with _lock:
        seen = _probes.get(cfg.connection_key())
    if seen is not None:
        at, ok, latency, error = seen
        if ok and time.monotonic() - at < HEALTHY_TTL:
            return Probe(ok, latency, error)
    return probe(cfg)


def circuit_open(cfg: QdrantSettings) -> bool:
    """Whether calls to Qdrant are refused now (its circuit is open): writes then skip it. Asks
    Qdrant nothing (a cooled-down circuit starts its background probe)."""
    conn = connection_if_built(cfg)
    return conn is not None and not conn.breaker.allow()


def qdrant_health() -> dict:
    """``{enabled, healthy, latencyMs, error}`` for the engine status, and when enabled ``circuit``
    (:meth:`memory.breaker.CircuitBreaker.snapshot`). Probes when enabled, unless the circuit is open:
    then ``error`` is why, with no call."""
    cfg = get_qdrant_settings()
    if not cfg.enabled:
        return {"enabled": False, "healthy": None, "latencyMs": None, "error": None}
    result = probe(cfg)
    conn = connection_if_built(cfg)
    return {
        "enabled": True,
        "healthy": result.ok,
        "latencyMs": result.latency_ms,
        "error": result.error,
        "circuit": conn.breaker.snapshot() if conn is not None else None,
    }
