"""The two transports of the MCP server.

* stdio — ``python manage.py mcp_server`` (:func:`build_stdio_server`): the
  token comes from the command line or ``OMNIROUTE_TOKEN`` and is checked
  again on every call, so revoking it takes effect at once;
* Streamable HTTP at ``/mcp`` — :class:`McpHttpApp`, mounted in front of
  Django by ``omniroute.asgi``: each HTTP request carries
  ``Authorization: Bearer <token>``, checked before the SDK sees the request.

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
import weakref
from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.http.request import split_domain_port, validate_host
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from memory.exceptions import PermissionDenied
from memory.mcp.server import build_server, principal_for_secret
from memory.principals import Principal
from memory.services.auth import Unauthenticated, bearer_secret
from memory.services.throttle import Throttled, scope_ip

# The API's one error envelope, so that a refused /mcp request reads like any other API error.
from memory.shapes import error_envelope as envelope

if TYPE_CHECKING:
    # The ASGI types of the SDK's session manager (Starlette's; it comes with the SDK).
    from starlette.types import Receive, Scope, Send

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


def _json(status: int, message: str, headers: dict[str, str] | None = None) -> RawResponse:
    body = json.dumps(envelope(message, status_code=status)).encode()
    raw_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw_headers += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    return status, raw_headers, body


class McpHttpApp:
    """ASGI app for ``/mcp``: checks the host and the bearer token, then hands over to the SDK."""

    def __init__(self) -> None:
        self._runners: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _ManagerRunner] = (
            weakref.WeakKeyDictionary()
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        outcome = await self._authenticate(scope)
        if not isinstance(outcome, Principal):
            status, headers, body = outcome
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        manager = await self._manager()
        await manager.handle_request({**scope, PRINCIPAL_SCOPE_KEY: outcome}, receive, send)

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
