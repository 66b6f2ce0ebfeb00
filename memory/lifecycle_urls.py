"""Top-level routes outside /api/: /healthz (load balancers) and /mcp (MCP over HTTP)."""

urlpatterns: list = []
