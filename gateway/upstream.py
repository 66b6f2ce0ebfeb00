"""The HTTP client to upstream providers (httpx, async).

Contract of :func:`send_chat` (and :func:`send_embeddings`, to ``{base_url}/embeddings``): it POSTs the
body to ``{base_url}/chat/completions`` with the provider's
key and returns the upstream response whatever its status (errors are the caller's to pass through); it
raises :class:`UpstreamFailure` only when no response arrived: 504 on a timeout, 502 on a connection or
protocol error, 503 (:class:`ProviderKeyUnreadable`) when the provider's stored key cannot be decrypted
and nothing was sent. Non-streaming responses are read in full; streaming ones are returned open (the
caller must ``aclose()`` them).

One ``httpx.AsyncClient`` (and so one connection pool) is kept per event loop: a client's pool is bound
to the loop it first ran on, and the Django test client or a WSGI server may run each request on a new
loop. Under an ASGI server there is one loop, so connections to the upstream are reused.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref

import httpx

from gateway.models import UpstreamProvider
from memory.crypto import SecretUnreadable

logger = logging.getLogger("gateway.upstream")

# Upstream response headers worth passing to the client (rate limits, request ids, retry hints).
PASSED_HEADERS = ("retry-after", "x-request-id", "openai-processing-ms", "openai-model", "openai-version")
PASSED_HEADER_PREFIXES = ("x-ratelimit-",)

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


class UpstreamFailure(Exception):
    """No usable response came from the upstream. ``status`` is 504 (timeout) or 502 (anything else)."""

    def __init__(self, message: str, *, status: int, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code

    @property
    def type(self) -> str:
        return "timeout_error" if self.status == 504 else "upstream_error"


class ProviderKeyUnreadable(UpstreamFailure):
    """The provider's stored API key cannot be decrypted with the configured master key (it was
    written under another ``MEMORY_ENCRYPTION_KEY``, or altered), so nothing was sent upstream.

    503 Service Unavailable, not 502 Bad Gateway: 502 says the upstream answered badly, and would send
    the operator to look at an upstream that was never contacted; the fault is this service's
    configuration, and the service cannot serve this model until an operator restores the key or
    enters the provider's key again. No ``Retry-After``: waiting does not fix it. Not 500: the cause
    is known and named, and the error body says what to change.
    """

    type = "server_error"

    def __init__(self, provider: UpstreamProvider) -> None:
        super().__init__(
            f"The stored API key of upstream provider {provider.name!r} cannot be read with the current "
            "MEMORY_ENCRYPTION_KEY (it was encrypted with another key). An operator must configure the "
            "key it was written with, or enter the provider's API key again.",
            status=503,
            code="provider_key_unreadable",
        )


_reported: set[tuple[object, str]] = set()
_reported_lock = threading.Lock()


def provider_api_key(provider: UpstreamProvider) -> str:
    """The provider's clear API key; :class:`ProviderKeyUnreadable` when it cannot be decrypted.

    The cause (both key ids) is logged once per provider and cause, not once per request: every
    request routed to the provider meets it until an operator acts."""
    try:
        return provider.api_key
    except SecretUnreadable as exc:
        with _reported_lock:
            first = (provider.pk, str(exc)) not in _reported
            _reported.add((provider.pk, str(exc)))
        if first:
            logger.error(
                "gateway.upstream.key_unreadable",
                extra={"provider": provider.name, "error": str(exc)},
            )
        raise ProviderKeyUnreadable(provider) from exc


def get_client() -> httpx.AsyncClient:
    """The client of the running event loop (created on first use)."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
            follow_redirects=False,
        )
        _clients[loop] = client
    return client


def _headers(provider: UpstreamProvider, *, stream: bool) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if stream:
        # A compressed event stream would be buffered by the decoder: ask for it as is.
        headers.update({"Accept": "text/event-stream", "Accept-Encoding": "identity"})
    api_key = provider_api_key(provider)
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def failure_from(exc: Exception, provider: UpstreamProvider) -> UpstreamFailure:
    """Map an httpx exception to the error the client gets."""
    if isinstance(exc, httpx.TimeoutException):
        return UpstreamFailure(
            f"Upstream provider {provider.name!r} did not answer within {provider.timeout_seconds:g} s",
            status=504,
            code="upstream_timeout",
        )
    return UpstreamFailure(
        f"Upstream provider {provider.name!r} could not be reached: {type(exc).__name__}",
        status=502,
        code="upstream_unreachable",
    )


async def send_chat(provider: UpstreamProvider, payload: bytes, *, stream: bool) -> httpx.Response:
    """Send a chat completion request upstream (see the module docstring)."""
    return await _post(provider, provider.chat_completions_url, payload, stream=stream)


async def send_embeddings(provider: UpstreamProvider, payload: bytes) -> httpx.Response:
    """Send an embeddings request to ``{base_url}/embeddings``, read in full; the contract of
    :func:`send_chat` otherwise."""
    return await _post(provider, provider.embeddings_url, payload, stream=False)


async def _post(provider: UpstreamProvider, url: str, payload: bytes, *, stream: bool) -> httpx.Response:
    client = get_client()
    request = client.build_request(
        "POST",
        url,
        content=payload,
        headers=_headers(provider, stream=stream),
        timeout=httpx.Timeout(provider.timeout_seconds),
    )
    try:
        return await client.send(request, stream=stream)
    except (httpx.TransportError, httpx.InvalidURL) as exc:
        failure = failure_from(exc, provider)
        logger.warning(
            "gateway.upstream.failed",
            extra={"provider": provider.name, "status": failure.status, "error": repr(exc)},
        )
        raise failure from exc


async def list_models(provider: UpstreamProvider, *, timeout: float = 10.0) -> list[str]:
    """The model ids the upstream's ``GET /models`` reports; ``[]`` (logged) when it cannot say."""
    client = get_client()
    try:
        headers = _headers(provider, stream=False)
    except ProviderKeyUnreadable:  # logged once by provider_api_key; the listing goes on without it
        return []
    headers.pop("Content-Type")
    try:
        response = await client.get(
            provider.models_url, headers=headers, timeout=min(timeout, provider.timeout_seconds)
        )
        response.raise_for_status()
        data = response.json().get("data")
        return [item["id"] for item in data if isinstance(item, dict) and isinstance(item.get("id"), str)]
    except Exception as exc:  # a listing must never fail because one upstream is down or odd
        logger.warning(
            "gateway.upstream.models_failed", extra={"provider": provider.name, "error": repr(exc)}
        )
        return []


def passed_headers(response: httpx.Response) -> dict[str, str]:
    """The upstream headers relayed to the client."""
    return {
        name: value
        for name, value in response.headers.items()
        if name in PASSED_HEADERS or name.startswith(PASSED_HEADER_PREFIXES)
    }
