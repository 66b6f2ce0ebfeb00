"""Top-level routes outside /api/: /healthz and /readyz (load balancers) and /mcp (MCP over HTTP).

``/mcp`` is answered by the MCP ASGI application, which ``omniroute.asgi``
puts in front of Django; the route here only tells a WSGI deployment (or a
test client) where MCP lives instead of answering a bare 404.
"""

from django.urls import path, re_path

from memory.api import views_lifecycle

urlpatterns = [
    path("healthz", views_lifecycle.healthz, name="healthz"),
    path("readyz", views_lifecycle.readyz, name="readyz"),
    re_path(r"^mcp/?$", views_lifecycle.mcp_without_asgi, name="mcp"),
]
