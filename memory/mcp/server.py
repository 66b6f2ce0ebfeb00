"""The MCP server: the SDK's JSON-RPC dispatch, with our tools, our authentication and our errors.

Each transport (:mod:`memory.mcp.transport`) gives :func:`build_server` the
way to find a call's principal; every tool call is then authenticated anew,
so a revoked token stops working at once.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from asgiref.sync import sync_to_async
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from memory.exceptions import DomainError
from memory.mcp.tools import register_tools
from memory.principals import Principal
from memory.services.auth import authenticate_token
from omniroute.db.locking import BUSY_MESSAGE, DatabaseBusy

SERVER_NAME = "omniroute-memory"
INSTRUCTIONS = (
    "Persistent memory per API key. Search before answering questions about the user; "
    "add durable facts, preferences and decisions with a stable key (the same key updates)."
)

Authenticator = Callable[[Context], Awaitable[Principal]]


def principal_for_secret(secret: str, client_ip: str = "") -> Principal:
    """The principal of a management token secret (see :func:`memory.services.auth.authenticate_token`:
    raises ``Unauthenticated``, ``Throttled`` while ``client_ip`` or the prefix is locked out after
    failures, or, for a read/write token bound to no API key, ``PermissionDenied``)."""
    return authenticate_token(secret, client_ip=client_ip)[1]


async def _run(authenticate: Authenticator, ctx: Context, body: Callable[..., dict], **kwargs: Any) -> str:
    """Authenticate, run ``body`` off the event loop, and return the result as indented JSON.

    Anticipated failures (authentication, scope, validation, unknown owner)
    become a ``ToolError``: the call answers ``isError: true`` with the text
    ``Error executing tool <name>: <message>`` (the original: ``Error: <message>``).
    The ORM is synchronous, so ``body`` runs through ``sync_to_async``.
    """
    try:
        principal = await authenticate(ctx)
        result = await sync_to_async(body, thread_sensitive=True)(principal, **kwargs)
    except DomainError as exc:
        raise ToolError(exc.message) from exc
    except DatabaseBusy as exc:  # the write lock stayed taken past the deadline: the client may retry
        raise ToolError(BUSY_MESSAGE) from exc
    return json.dumps(result, indent=2, default=str)


def build_server(authenticate: Authenticator) -> MCPServer:
    """An MCP server exposing the three memory tools; ``authenticate`` gives each call's principal."""
    server = MCPServer(
        SERVER_NAME,
        title="OmniRoute Memory",
        instructions=INSTRUCTIONS,
        version="0.1.0",
        log_level="WARNING",
    )
    register_tools(server, partial(_run, authenticate))
    return server
