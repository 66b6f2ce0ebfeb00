"""ASGI entry point: /mcp through the MCP SDK, /v1/ (and /api/ with a bearer token and no cookie) through
Django's lean API handler (``omniroute.handlers``), other HTTP through Django, websockets through Channels.

``/mcp`` (Streamable HTTP, see ``memory.mcp.transport``) is routed before Channels'
``ProtocolTypeRouter``, which knows no ``lifespan`` scope. The MCP app is
built on the first /mcp request (importing the SDK takes seconds, and a
deployment that never uses MCP should not pay for it); its session manager
starts with it, which works under servers without lifespan support (daphne,
our ``runserver``). Lifespan events, where the server sends them (uvicorn),
are acknowledged here, and shutdown stops the MCP session manager and writes the statistics gathered in
memory (:func:`finish_background_work`).
"""

import logging
import os

from django.conf import settings
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omniroute.settings")

django_asgi_app = get_asgi_application()

from omniroute.handlers import ApiASGIHandler  # noqa: E402

api_asgi_app = ApiASGIHandler()
rest_asgi_app = ApiASGIHandler("REST_API_MIDDLEWARE")

from asgiref.sync import sync_to_async  # noqa: E402
from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from dashboard.routing import websocket_urlpatterns  # noqa: E402
from gateway.workers import wait_for_after_response_work  # noqa: E402
from memory.services.auth import flush_last_uses  # noqa: E402
from memory.services.usage import flush_accesses  # noqa: E402

MCP_PATH = "/mcp"
API_PREFIX = "/v1/"
REST_PREFIX = "/api/"


def bearer_without_cookie(scope) -> bool:
    """A machine client of the REST API: a bearer token and no cookie (so no session, no CSRF to check)."""
    bearer = cookie = False
    for name, value in scope["headers"]:
        if name == b"cookie":
            cookie = True
        elif name == b"authorization":
            bearer = value[:7].lower() == b"bearer "
    return bearer and not cookie


router = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
_mcp_app = None


def mcp_app():
    global _mcp_app
    if _mcp_app is None:
        # heavy: the MCP SDK takes about a second to import; only a deployment that serves /mcp pays for it
        from memory.mcp.transport import McpHttpApp

        _mcp_app = McpHttpApp()
    return _mcp_app


def finish_background_work() -> None:
    """Let the after-response work of the answers already sent run (it enqueues their extraction),
    within ``OMNIROUTE_SHUTDOWN_TIMEOUT_SECONDS``, then write the access counters and credential uses
    gathered in memory. A web process of ``serve --workers N`` ends by the signal uvicorn re-raises
    after its shutdown, so its exit hooks (``atexit``) never run: the lifespan shutdown is the last
    moment that is sure to come."""
    if not wait_for_after_response_work(timeout=settings.OMNIROUTE_SHUTDOWN_TIMEOUT_SECONDS):
        logging.getLogger("omniroute.asgi").error("after-response work still running at shutdown")
    flush_accesses()
    flush_last_uses()


async def lifespan(scope, receive, send):
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            if _mcp_app is not None:
                await _mcp_app.aclose()
            await sync_to_async(finish_background_work, thread_sensitive=True)()
            await send({"type": "lifespan.shutdown.complete"})
            return


async def application(scope, receive, send):
    if scope["type"] == "lifespan":
        await lifespan(scope, receive, send)
    elif scope["type"] == "http" and scope["path"].rstrip("/") == MCP_PATH:
        await mcp_app()(scope, receive, send)
    elif scope["type"] == "http" and scope["path"].startswith(API_PREFIX):
        await api_asgi_app(scope, receive, send)
    elif scope["type"] == "http" and scope["path"].startswith(REST_PREFIX) and bearer_without_cookie(scope):
        await rest_asgi_app(scope, receive, send)
    else:
        await router(scope, receive, send)
