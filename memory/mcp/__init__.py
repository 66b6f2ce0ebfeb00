"""The MCP tools over the memory services (search, add, clear), on the official ``mcp`` SDK.

* :mod:`memory.mcp.tools` — the three tools: their argument schemas and the
  handlers, which parse arguments, call memory's services and selectors and
  shape the result;
* :mod:`memory.mcp.server` — the MCP server: each tool call is authenticated,
  run off the event loop, and a domain error becomes a tool error;
* :mod:`memory.mcp.transport` — stdio (``manage.py mcp_server``) and
  Streamable HTTP at ``/mcp`` (:class:`~memory.mcp.transport.McpHttpApp`,
  mounted in front of Django by ``omniroute.asgi``).

Every call is authenticated by a management token (read scope for search,
write for add and clear) and limited to the owners the token reaches; a read
or write token bound to no API key is refused (only admin tokens are global).

Importing the SDK takes seconds: this package imports nothing, and
``omniroute.asgi`` imports :mod:`memory.mcp.transport` on the first ``/mcp``
request only. The tools and the server import nothing of DRF: they share the
domain's input mapping (``MemoryInput.from_fields``), content rule
(``content_problem``) and output shape (``memory_json``) with the REST API,
not its serializers. The HTTP transport answers a refused request with the
API's error envelope (``memory.api.errors.envelope``).
"""
