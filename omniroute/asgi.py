"""ASGI entry point: /mcp through the MCP SDK, other HTTP through Django, websockets through Channels.

``/mcp`` (Streamable HTTP, see ``memory.mcp``) is routed before Channels'
``ProtocolTypeRouter``, which knows no ``lifespan`` scope: lifespan events go
to the MCP app, which starts and stops its session manager with the server.
Servers without lifespan support (daphne) are fine too: the manager then
starts on the first /mcp request.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omniroute.settings")

django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from dashboard.routing import websocket_urlpatterns  # noqa: E402
from memory.mcp import McpHttpApp  # noqa: E402

router = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
mcp_app = McpHttpApp()


async def application(scope, receive, send):
    if scope["type"] == "lifespan" or McpHttpApp.handles(scope):
        await mcp_app(scope, receive, send)
    else:
        await router(scope, receive, send)
