"""The two transports of the MCP server.

* stdio — ``python manage.py mcp_server`` (:func:`build_stdio_server`): the
  token comes from the command line or ``OMNIROUTE_TOKEN`` and is checked
  again on every call, so revoking it takes effect at once;
* Streamable HTTP at ``/mcp`` — :class:`McpHttpApp`, mounted in front of
  Django by ``omniroute.asgi``: each HTTP request carries
  ``Authorization: Bearer <token>``, checked before the SDK sees the request,
  and a body of at most ``OMNIROUTE_MAX_BODY_BYTES`` (the REST API's limit;
  beyond it a 413 in the API's error envelope, naming ``body``). A POST must be
  ``application/json`` (else a 415 in the envelope) and strict JSON
  (:func:`memory.strictjson.loads`: no NaN or Infinity, no number beyond a
  double, no lone surrogate, no deep nesting), else a JSON-RPC parse error
  (400, code -32700) naming where, as the SDK answers other unparsable bodies.

The HTTP side runs the SDK's session manager in *stateless* mode with JSON
responses: no session state lives in the process, so any worker can answer
any request and nothing is lost on restart. The manager needs a running task
group, which the SDK expects from the ASGI ``lifespan`` startup; daphne (our
``runserver``) sends no lifespan events, so the manager is instead started
by the first ``/mcp`` request, in a background task of that event loop, and
stopped by :meth:`McpHttpApp.aclose` (called on lifespan shutdown by servers
that send one, such as uvicorn).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import weakref
from collections import deque
from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.http.request import split_domain_port, validate_host
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import PARSE_ERROR

from memory import strictjson
from memory.exceptions import PermissionDenied
from memory.mcp.server import build_server, principal_for_secret
from memory.principals import Principal
from memory.services.auth import Unauthenticated, bearer_secret
from memory.services.throttle import Throttled, scope_ip

# The API's one error envelope, so that a refused /mcp request reads like any other API error.
from memory.shapes import error_envelope as envelope

if TYPE_CHECKING:
    # The ASGI types of the SDK's session manager (Starlette's; it comes with the SDK).
    from starlette.types import Message, Receive, Scope, Send

logger = logging.getLogger("memory.mcp")

MCP_PATH = "/mcp"
PRINCIPAL_SCOPE_KEY = "omniroute.principal"


def build_stdio_server(secret: str) -> MCPServer:
    """The server of ``manage.py mcp_server``: every call re-checks ``secret``."""

    async def authenticate(ctx: Context) -> Principal:
        return await sync_to_async(principal_for_secret, thread_sensitive=True)(secret)

    return build_server(authenticate)


async def _principal_from_request(ctx: Context) -> Principal:
    request = ctx.request_context.request
    principal = request.scope.get(PRINCIPAL_SCOPE_KEY) if request is not None else None
    if not isinstance(principal, Principal):
        raise Unauthenticated("Authentication required")
    return principal


def build_http_server() -> MCPServer:
    """The server behind ``/mcp``: the principal was put in the ASGI scope by :class:`McpHttpApp`."""
    return build_server(_principal_from_request)


# -- Streamable HTTP inside the ASGI application --------------------------------------------------------


class _ManagerRunner:
    """Keeps one stateless session manager running in a background task of one event loop."""

    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.stop = asyncio.Event()
        self.manager: StreamableHTTPSessionManager | None = None
        self.error: BaseException | None = None
        self.task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        try:
            server = build_http_server()
            # Host checks are Django's (ALLOWED_HOSTS, in McpHttpApp); the SDK's own
            # DNS-rebinding guard only knows localhost and would refuse real host names.
            server.streamable_http_app(
                streamable_http_path=MCP_PATH,
                stateless_http=True,
                json_response=True,
                transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
                # The limit is McpHttpApp's (read per request, answered in our envelope); the SDK's
                # own, fixed when it starts, would answer a plain-text 413.
                max_request_body_size=sys.maxsize,
            )
            manager = server.session_manager
            async with manager.run():
                self.manager = manager
                self.ready.set()
                await self.stop.wait()
        except Exception as exc:
            self.error = exc
            logger.exception("the MCP session manager stopped")
            raise
        finally:
            self.manager = None
            self.ready.set()


# An answer of our own: status, raw ASGI headers, body.
RawResponse = tuple[int, list[tuple[bytes, bytes]], bytes]


def _json(
    status: int,
    message: str,
    headers: dict[str, str] | None = None,
    details: list[dict[str, str]] | None = None,
) -> RawResponse:
    return _raw_json(status, envelope(message, status_code=status, details=details), headers)


def _raw_json(status: int, payload: object, headers: dict[str, str] | None = None) -> RawResponse:
    body = json.dumps(payload).encode()
    raw_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw_headers += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    return status, raw_headers, body


async def _answer(send: Send, response: RawResponse) -> None:
    status, headers, body = response
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _too_large(limit: int) -> RawResponse:
    message = f"The request body is larger than {limit} bytes (OMNIROUTE_MAX_BODY_BYTES)"
    return _json(413, message, details=[{"field": "body", "message": message}])


def _not_json(scope: Scope) -> RawResponse | None:
    """The 415 for a POST that is not ``application/json`` (the SDK would answer it in plain text)."""
    if scope.get("method") != "POST":
        return None
    content_type = next((v for k, v in scope.get("headers", []) if k.lower() == b"content-type"), b"")
    if content_type.decode("latin-1").strip().lower().startswith("application/json"):
        return None
    message = "The request body must be JSON-RPC sent as Content-Type: application/json"
    return _json(415, message, details=[{"field": "Content-Type", "message": message}])


def _not_strict_json(scope: Scope, body: bytes) -> RawResponse | None:
    """The JSON-RPC parse error for a POST body that :func:`memory.strictjson.loads` refuses.

    The SDK's parser takes NaN, Infinity and 1e400 (as a float), which no tool can store or send
    back: the call then failed inside the tool with no word of where."""
    if scope.get("method") != "POST":
        return None
    try:
        strictjson.loads(body)
    except ValueError as exc:
        error = {"code": PARSE_ERROR, "message": f"Parse error: {exc}"}
        return _raw_json(400, {"jsonrpc": "2.0", "id": None, "error": error})
    return None


async def _bounded_body(scope: Scope, receive: Receive, limit: int) -> deque[Message] | RawResponse | None:
    """The request's body, read whole into one ``http.request`` message to hand to the SDK, or the
    413 to answer when it is (or says it is) over ``limit`` bytes; ``None`` when the client
    disconnected first. A declared ``Content-Length`` over the limit is refused before any read."""
    declared = next((v for k, v in scope.get("headers", []) if k.lower() == b"content-length"), b"")
    if declared.strip().isdigit() and int(declared) > limit:
        return _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return _too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return deque([{"type": "http.request", "body": b"".join(chunks), "more_body": False}])


class McpHttpApp:
    """ASGI app for ``/mcp``: checks the host, the bearer token and the body (size, type, strict
    JSON), then hands over to the SDK."""

    def __init__(self) -> None:
        self._runners: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _ManagerRunner] = (
            weakref.WeakKeyDictionary()
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        outcome = await self._authenticate(scope)
        if not isinstance(outcome, Principal):
            return await _answer(send, outcome)
        refused = _not_json(scope)
        if refused is not None:
            return await _answer(send, refused)
        replay = await _bounded_body(scope, receive, django_settings.OMNIROUTE_MAX_BODY_BYTES)
        if replay is None:  # the client went away before its body arrived
            return None
        if isinstance(replay, tuple):
            return await _answer(send, replay)
        refused = _not_strict_json(scope, replay[0]["body"])
        if refused is not None:
            return await _answer(send, refused)

        async def receive_again() -> Message:
            # The body once, as read; then the client's own messages (its disconnect).
            return replay.popleft() if replay else await receive()

        manager = await self._manager()
        await manager.handle_request({**scope, PRINCIPAL_SCOPE_KEY: outcome}, receive_again, send)

    async def _authenticate(self, scope: Scope) -> Principal | RawResponse:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        domain, _port = split_domain_port(headers.get("host", ""))
        allowed = django_settings.ALLOWED_HOSTS
        if django_settings.DEBUG and not allowed:
            allowed = [".localhost", "127.0.0.1", "[::1]"]
        if not domain or not validate_host(domain, allowed):
            return _json(400, "Invalid Host header")
        secret = bearer_secret(headers.get("authorization"))
        if secret is None:
            return _json(401, "Authentication required", {"WWW-Authenticate": 'Bearer realm="omniroute"'})
        try:
            return await sync_to_async(principal_for_secret, thread_sensitive=True)(secret, scope_ip(scope))
        except Unauthenticated as exc:
            return _json(401, exc.message, {"WWW-Authenticate": 'Bearer realm="omniroute"'})
        except Throttled as exc:
            return _json(429, exc.message, {"Retry-After": str(exc.retry_after)})
        except PermissionDenied as exc:  # a read/write token bound to no API key
            return _json(403, exc.message)

    async def _manager(self) -> StreamableHTTPSessionManager:
        loop = asyncio.get_running_loop()
        runner = self._runners.get(loop)
        if runner is None or (runner.task is not None and runner.task.done()):
            runner = _ManagerRunner()
            self._runners[loop] = runner
            runner.task = loop.create_task(runner.run())
        await runner.ready.wait()
        if runner.manager is None:
            raise RuntimeError("the MCP session manager is not running") from runner.error
        return runner.manager

    async def aclose(self) -> None:
        runner = self._runners.pop(asyncio.get_running_loop(), None)
        if runner is not None and runner.task is not None:
            runner.stop.set()
            await asyncio.gather(runner.task, return_exceptions=True)
