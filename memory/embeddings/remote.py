"""Any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint (the "remote" source)."""

from __future__ import annotations

import socket
import threading
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np

from memory.breaker import CircuitBreaker
from memory.embeddings.base import (
    REASON_BLOCKED_URL,
    REASON_NO_KEY,
    REASON_RATE_LIMITED,
    REASON_REQUEST_FAILED,
    REASON_TIMEOUT,
    EmbeddingError,
    EmbeddingSource,
    l2_normalize,
)
from memory.urlpolicy import Resolver, UrlPolicyError, check_outbound_url

# The endpoint's circuit is open: refused without a request (see ``RemoteSource.breaker``).
REASON_CIRCUIT_OPEN = "circuit_open"


class RemoteSource(EmbeddingSource):
    """Embeddings from an OpenAI-compatible HTTP API (OpenAI, TEI, vLLM, Ollama, LiteLLM, ...).

    Sends ``{"model": model, "input": [...]}`` in batches of ``batch_size`` with a bearer key and
    reads ``{"data": [{"embedding": [...], "index": i}, ...]}``, ordered by ``index``.

    ``dim`` may be given (a known model); otherwise it is probed from the first response and kept
    (the original never learnt the dimension of unknown models, so it never vectorised with them). Every
    later response must match it.

    Before every request the URL passes ``memory.urlpolicy.check_outbound_url`` (``allow_private``
    for a self-hosted server on the LAN). Redirects are not followed, so a redirect cannot lead past
    the policy. Error messages name the host and the status, never the key nor the body of the
    answer (it may quote the request or the key back, and messages reach API responses).

    Each request may take ``timeout`` seconds (connecting, and each read). ``breaker`` counts the
    failed requests: after ``breaker_failures`` in a row every call fails at once with reason
    ``circuit_open`` (the caller falls back) until, ``breaker_cooldown`` seconds later, a probe
    request on a background thread succeeds. A refusal by the URL policy is not counted: nothing was
    sent.
    """

    name = "remote"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        dim: int | None = None,
        timeout: float = 10.0,
        batch_size: int = 64,
        allow_private: bool = False,
        resolver: Resolver = socket.getaddrinfo,
        transport: httpx.BaseTransport | None = None,
        breaker_failures: int = 3,
        breaker_cooldown: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/embeddings"
        self.model = model
        self.dim = dim
        self.batch_size = batch_size
        self.allow_private = allow_private
        self._api_key = api_key or None
        self._resolver = resolver
        self.timeout = float(timeout)
        self._timeout = httpx.Timeout(self.timeout)
        self._transport = transport
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()
        self.breaker = CircuitBreaker(
            f"remote embeddings at {urlsplit(self.url).hostname or 'the endpoint'}",
            threshold=breaker_failures,
            cooldown=breaker_cooldown,
            probe=self._probe,
            describe=_describe,
        )

    def __repr__(self) -> str:
        # Never the key; the URL has no credentials (the policy rejects userinfo).
        return f"<RemoteSource {self.signature} at {self.base_url}>"

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(
                    timeout=self._timeout, follow_redirects=False, transport=self._transport
                )
            return self._client

    def close(self) -> None:
        """Close pooled connections; the source stays usable (a new client opens on demand)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _error(self, message: str, reason: str) -> EmbeddingError:
        if self._api_key:
            message = message.replace(self._api_key, "***")
        return self.error(message, reason=reason)

    def embed(self, texts: list[str]) -> np.ndarray:
        """See ``EmbeddingSource.embed``.

        Raises ``EmbeddingError`` with reason ``blocked_url`` (policy), ``timeout``, ``no_key``
        (401/403), ``rate_limited`` (429) or ``request_failed`` (any other status, network error,
        bad JSON, wrong count, wrong dimension).
        """
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        batches = [
            self._guarded(list(texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)
        ]
        return l2_normalize(np.concatenate(batches, axis=0))

    def _guarded(self, texts: list[str]) -> np.ndarray:
        """One request through the breaker: refused at once while it is open, counted otherwise."""
        if not self.breaker.allow():
            raise self._error(self.breaker.refusal(), REASON_CIRCUIT_OPEN)
        try:
            matrix = self._request(texts)
        except EmbeddingError as exc:
            if exc.reason != REASON_BLOCKED_URL:
                self.breaker.record_failure(exc.message)
            raise
        self.breaker.record_success()
        return matrix

    def _probe(self) -> None:
        """The half-open trial: one short request, as a query would send it."""
        self._request(["ping"])

    def _request(self, texts: list[str]) -> np.ndarray:
        try:
            check_outbound_url(self.url, allow_private=self.allow_private, resolver=self._resolver)
        except UrlPolicyError as exc:
            raise self._error(
                f"Embedding endpoint refused by the URL policy: {exc}", REASON_BLOCKED_URL
            ) from None
        # Messages name the host only: paths of some gateways embed tenant ids.
        host = urlsplit(self.url).hostname or "the endpoint"

        headers = {"Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        try:
            response = self._http().post(
                self.url, json={"model": self.model, "input": texts}, headers=headers
            )
        except httpx.TimeoutException as exc:
            raise self._error(
                f"Embedding request to {host} timed out ({type(exc).__name__})", REASON_TIMEOUT
            ) from None
        except httpx.HTTPError as exc:
            raise self._error(
                f"Embedding request to {host} failed: {type(exc).__name__}: {exc}", REASON_REQUEST_FAILED
            ) from None

        status = response.status_code
        if not 200 <= status < 300:
            reason = {401: REASON_NO_KEY, 403: REASON_NO_KEY, 429: REASON_RATE_LIMITED}.get(
                status, REASON_REQUEST_FAILED
            )
            raise self._error(f"Embedding provider {host} returned HTTP {status}", reason)
        try:
            payload = response.json()
        except ValueError:
            raise self._error(
                f"Embedding provider {host} returned invalid JSON", REASON_REQUEST_FAILED
            ) from None
        return self._parse(payload, len(texts), host)

    def _parse(self, payload: Any, expected: int, host: str) -> np.ndarray:
        def bad(detail: str) -> EmbeddingError:
            return self._error(f"Embedding provider {host} returned {detail}", REASON_REQUEST_FAILED)

        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise bad("no 'data' list")
        if len(data) != expected:
            raise bad(f"{len(data)} embeddings for {expected} inputs")
        rows: dict[int, list] = {}
        for position, item in enumerate(data):
            if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
                raise bad(f"an item without an 'embedding' list at position {position}")
            index = item.get("index", position)
            if (
                not isinstance(index, int)
                or isinstance(index, bool)
                or not 0 <= index < expected
                or index in rows
            ):
                raise bad(f"an invalid or duplicate index {index!r}")
            rows[index] = item["embedding"]
        try:
            matrix = np.array([rows[i] for i in range(expected)], dtype=np.float32)
        except (ValueError, TypeError):
            raise bad("embeddings of unequal length or with non-numeric values") from None
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise bad("empty embeddings")
        if not np.isfinite(matrix).all():
            raise bad("non-finite values")

        with self._lock:
            if self.dim is None:
                self.dim = int(matrix.shape[1])
            elif matrix.shape[1] != self.dim:
                raise bad(f"{matrix.shape[1]}-dimensional vectors; expected {self.dim}")
        return matrix


def _describe(exc: BaseException) -> str:
    """A failed probe as the breaker keeps it: our sanitised message, else the exception's type."""
    return exc.message if isinstance(exc, EmbeddingError) else type(exc).__name__
