"""The MCP tools over the memory services (reference §11), on the official ``mcp`` SDK.

Three tools, with the reference's argument schemas and these fixes:

* ``omniroute_memory_search`` ranks with the configured strategy (the
  Studio's "recent" is ``exact``) through :func:`memory.retrieval.engine.retrieve`;
* ``omniroute_memory_add`` accepts the full type set;
* ``omniroute_memory_clear`` deletes every match, not only the 50 newest
  (B12), reports what was really deleted, and has ``dryRun``.

Every call is authenticated by a management token (read scope for search,
write for add and clear) and limited to the owners the token reaches; a read
or write token bound to no API key is refused (only admin tokens are global).
A call without ``apiKeyId`` uses the token's only owner, and is refused with a
clear error when the token reaches several (or all) owners. ``limit`` and
``maxTokens`` are bounded in the tool schemas (1..100, 1..8000): the SDK
answers anything else with a tool error naming the argument.

Two transports:

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
that send one, such as uvicorn). Importing the SDK takes seconds, so
``omniroute.asgi`` imports this module on the first ``/mcp`` request only.

The tools only parse arguments and shape results; rules live in the
services and selectors. The ORM is synchronous, so each tool body runs
through ``sync_to_async``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, time
from typing import Annotated, Any, Literal

from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.http.request import split_domain_port, validate_host
from django.utils.dateparse import parse_date, parse_datetime
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import Field

from memory.exceptions import DomainError, PermissionDenied, ValidationFailed
from memory.models import ApiKey, TokenScope
from memory.principals import Principal
from memory.services.auth import Unauthenticated, authenticate_token, bearer_secret, require_scope

logger = logging.getLogger("memory.mcp")

MCP_PATH = "/mcp"
SERVER_NAME = "omniroute-memory"
PRINCIPAL_SCOPE_KEY = "omniroute.principal"
SEARCH_TOOL = "omniroute_memory_search"
ADD_TOOL = "omniroute_memory_add"
CLEAR_TOOL = "omniroute_memory_clear"
TOOL_NAMES = (SEARCH_TOOL, ADD_TOOL, CLEAR_TOOL)
DEFAULT_SEARCH_LIMIT = 20
UNFILTERED_CANDIDATES = 100

MemoryTypeName = Literal["factual", "episodic", "procedural", "semantic", "short_term", "long_term", "entity"]
ApiKeyIdArg = Annotated[
    str | None,
    Field(
        description="The API key (memory owner) id. Optional when the token is bound to exactly one API key.",
        max_length=64,
    ),
]

Authenticator = Callable[[Context], Awaitable[Principal]]


# -- the tool bodies (synchronous: they use the ORM) -------------------------------------------------


def owner_for(principal: Principal, api_key_id: str | None) -> ApiKey:
    """The one owner a tool call works on (see the module docstring); the health check's probe owner is
    not one (``ApiKey.objects`` hides it, so ``resolve_owner`` answers 404)."""
    if not api_key_id:
        if principal.owner_ids is None:
            raise ValidationFailed(
                "apiKeyId is required: this token is global, so name the API key whose memories to use",
                field="apiKeyId",
            )
        if len(principal.owner_ids) != 1:
            ids = ", ".join(sorted(str(o) for o in principal.owner_ids))
            raise ValidationFailed(
                f"apiKeyId is required: this token reaches {len(principal.owner_ids)} API keys ({ids}); name one",
                field="apiKeyId",
            )
    return principal.resolve_owner(api_key_id)


def search_memories(
    principal: Principal,
    *,
    api_key_id: str | None = None,
    query: str | None = None,
    type: str | None = None,
    max_tokens: int | None = None,
    limit: int | None = None,
) -> dict:
    """``omniroute_memory_search``: rank the owner's memories with the configured strategy.

    The budget is ``maxTokens`` or, by default, the settings' ``maxTokens``
    when memory is enabled and 2000 otherwise (so a search works while
    injection is off). ``type`` filters the ranked list, then ``limit`` cuts it.
    """
    from memory.conf import get_memory_settings
    from memory.representation import memory_json
    from memory.retrieval.budget import estimate_tokens
    from memory.retrieval.engine import retrieve

    require_scope(principal, TokenScope.READ)
    owner = owner_for(principal, api_key_id)
    settings = get_memory_settings()
    budget = max_tokens if max_tokens is not None else (settings.maxTokens if settings.enabled else 2000)
    wanted = limit or DEFAULT_SEARCH_LIMIT
    hits, resolution = [], None
    if budget > 0:
        result = retrieve(
            owner_ids=frozenset({owner.pk}),
            query=query or "",
            strategy=settings.retrieval_strategy,
            max_tokens=budget,
            limit=UNFILTERED_CANDIDATES if type else wanted,
            touch=True,
        )
        hits, resolution = result.hits, dict(result.resolution)
    hits = [hit for hit in hits if not type or hit.memory.type == type][:wanted]
    memories = [
        {**memory_json(hit.memory), "score": hit.score, "tier": hit.tier, "tokens": hit.tokens}
        for hit in hits
    ]
    return {
        "success": True,
        "data": {
            "memories": memories,
            "count": len(memories),
            "totalTokens": sum(estimate_tokens(hit.memory.content) for hit in hits),
            # What ran (the configured strategy may have degraded, e.g. to keyword); resolution says why.
            "strategy": resolution["strategyUsed"] if resolution else settings.retrieval_strategy,
            "resolution": resolution,
        },
    }


def add_memory(
    principal: Principal,
    *,
    api_key_id: str | None = None,
    session_id: str | None = None,
    type: str,
    key: str,
    content: str,
    metadata: dict | None = None,
) -> dict:
    """``omniroute_memory_add``: create, or upsert on ``(apiKeyId, key)`` like ``POST /api/memory``."""
    from memory.api.serializers import MemoryCreateSerializer
    from memory.representation import memory_json
    from memory.services.memories import MemoryInput, memory_create

    require_scope(principal, TokenScope.WRITE)
    body = MemoryCreateSerializer(
        data={
            "type": type,
            "key": key,
            "content": content,
            "sessionId": session_id or "",
            "metadata": metadata or {},
        }
    )
    if not body.is_valid():
        raise _validation_failed(body.errors)
    data = body.validated_data
    owner = owner_for(principal, api_key_id)
    memory, created = memory_create(
        MemoryInput(
            owner=owner,
            content=data["content"],
            key=data.get("key") or None,
            type=data["type"],
            session_id=data.get("sessionId") or "",
            metadata=data.get("metadata") or {},
        )
    )
    message = "Memory created successfully" if created else "Memory updated (same key)"
    return {"success": True, "data": {"memory": memory_json(memory), "created": created, "message": message}}


def clear_memories(
    principal: Principal,
    *,
    api_key_id: str | None = None,
    type: str | None = None,
    older_than: str | None = None,
    dry_run: bool = False,
) -> dict:
    """``omniroute_memory_clear``: delete every matching memory of the owner (or count them, dry run)."""
    from memory.services.retention import memory_clear

    require_scope(principal, TokenScope.WRITE)
    cutoff = parse_cutoff(older_than) if older_than else None
    owner = owner_for(principal, api_key_id)
    result = memory_clear(owner=owner, type=type, created_before=cutoff, dry_run=dry_run)
    count = result["matched"] if dry_run else result["deletedCount"]
    message = f"Would clear {count} memories (dry run)" if dry_run else f"Cleared {count} memories"
    return {
        "success": True,
        "data": {
            "deletedCount": result["deletedCount"],
            "matched": result["matched"],
            "ids": result["ids"],
            "dryRun": dry_run,
            "message": message,
        },
    }


def parse_cutoff(value: str) -> datetime:
    """An ISO 8601 date (midnight UTC) or datetime (UTC when naive)."""
    text = value.strip()
    try:
        parsed = parse_datetime(text)
        if parsed is None:
            day = parse_date(text)
            parsed = datetime.combine(day, time.min) if day is not None else None
    except ValueError:
        parsed = None
    if parsed is None:
        raise ValidationFailed(
            "olderThan must be an ISO 8601 date or datetime, e.g. 2025-01-01", field="olderThan"
        )
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _validation_failed(errors) -> ValidationFailed:
    from memory.api.errors import flatten_details

    details = flatten_details(errors)
    text = "; ".join(f"{d['field']}: {d['message']}" if d["field"] else d["message"] for d in details)
    return ValidationFailed(f"Invalid arguments: {text}", details=details)


# -- the MCP server ------------------------------------------------------------------------------------


async def _run(authenticate: Authenticator, ctx: Context, body: Callable[..., dict], **kwargs: Any) -> str:
    """Authenticate, run ``body`` off the event loop, and return the result as indented JSON.

    Anticipated failures (authentication, scope, validation, unknown owner)
    become a ``ToolError``: the call answers ``isError: true`` with the text
    ``Error executing tool <name>: <message>`` (the reference: ``Error: <message>``).
    """
    try:
        principal = await authenticate(ctx)
        result = await sync_to_async(body, thread_sensitive=True)(principal, **kwargs)
    except DomainError as exc:
        raise ToolError(exc.message) from exc
    return json.dumps(result, indent=2, default=str)


def build_server(authenticate: Authenticator) -> MCPServer:
    """An MCP server exposing the three memory tools; ``authenticate`` gives each call's principal."""
    server = MCPServer(
        SERVER_NAME,
        title="OmniRoute Memory",
        instructions=(
            "Persistent memory per API key. Search before answering questions about the user; "
            "add durable facts, preferences and decisions with a stable key (the same key updates)."
        ),
        version="0.1.0",
        log_level="WARNING",
    )

    @server.tool(
        name=SEARCH_TOOL,
        description=(
            "Search the memories of an API key with the configured retrieval strategy "
            "(recent, semantic or hybrid), within a token budget."
        ),
        structured_output=False,
    )
    async def omniroute_memory_search(
        ctx: Context,
        apiKeyId: ApiKeyIdArg = None,
        query: Annotated[str | None, Field(description="What to look for.", max_length=4000)] = None,
        type: Annotated[MemoryTypeName | None, Field(description="Only memories of this type.")] = None,
        maxTokens: Annotated[
            int | None, Field(ge=1, le=8000, description="Token budget of the result.")
        ] = None,
        limit: Annotated[int | None, Field(ge=1, le=100, description="At most this many memories.")] = None,
    ) -> str:
        return await _run(
            authenticate,
            ctx,
            search_memories,
            api_key_id=apiKeyId,
            query=query,
            type=type,
            max_tokens=maxTokens,
            limit=limit,
        )

    @server.tool(
        name=ADD_TOOL,
        description=(
            "Store a memory for an API key. A memory with the same key is updated "
            "(content replaced, metadata merged)."
        ),
        structured_output=False,
    )
    async def omniroute_memory_add(
        ctx: Context,
        type: Annotated[MemoryTypeName, Field(description="The kind of memory.")],
        key: Annotated[
            str, Field(min_length=1, max_length=255, description="A stable key, e.g. preference:editor.")
        ],
        content: Annotated[str, Field(min_length=1, description="The text to remember.")],
        apiKeyId: ApiKeyIdArg = None,
        sessionId: Annotated[
            str | None, Field(max_length=200, description="The session it belongs to.")
        ] = None,
        metadata: Annotated[dict[str, Any] | None, Field(description="Free-form JSON object.")] = None,
    ) -> str:
        return await _run(
            authenticate,
            ctx,
            add_memory,
            api_key_id=apiKeyId,
            session_id=sessionId,
            type=type,
            key=key,
            content=content,
            metadata=metadata,
        )

    @server.tool(
        name=CLEAR_TOOL,
        description=(
            "Delete an API key's memories, optionally only one type and/or those created before a date. "
            "Use dryRun to see how many would go."
        ),
        structured_output=False,
    )
    async def omniroute_memory_clear(
        ctx: Context,
        apiKeyId: ApiKeyIdArg = None,
        type: Annotated[MemoryTypeName | None, Field(description="Only memories of this type.")] = None,
        olderThan: Annotated[
            str | None, Field(description="Only memories created before this ISO 8601 date or datetime.")
        ] = None,
        dryRun: Annotated[bool, Field(description="Count the matches without deleting them.")] = False,
    ) -> str:
        return await _run(
            authenticate,
            ctx,
            clear_memories,
            api_key_id=apiKeyId,
            type=type,
            older_than=olderThan,
            dry_run=dryRun,
        )

    return server


def principal_for_secret(secret: str) -> Principal:
    """The principal of a management token secret (see :func:`memory.services.auth.authenticate_token`:
    raises ``Unauthenticated`` or, for a read/write token bound to no API key, ``PermissionDenied``)."""
    return authenticate_token(secret)[1]


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
        self.manager = None
        self.error: BaseException | None = None
        self.task: asyncio.Task | None = None

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


def _json(status: int, message: str, headers: dict[str, str] | None = None) -> tuple[int, list, bytes]:
    from memory.api.errors import envelope

    body = json.dumps(envelope(message, status_code=status)).encode()
    raw_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw_headers += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    return status, raw_headers, body


class McpHttpApp:
    """ASGI app for ``/mcp``: checks the host and the bearer token, then hands over to the SDK."""

    def __init__(self) -> None:
        self._runners: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    async def __call__(self, scope, receive, send) -> None:
        outcome = await self._authenticate(scope)
        if not isinstance(outcome, Principal):
            status, headers, body = outcome
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        manager = await self._manager()
        await manager.handle_request({**scope, PRINCIPAL_SCOPE_KEY: outcome}, receive, send)

    async def _authenticate(self, scope) -> Principal | tuple[int, list, bytes]:
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
            return await sync_to_async(principal_for_secret, thread_sensitive=True)(secret)
        except Unauthenticated as exc:
            return _json(401, exc.message, {"WWW-Authenticate": 'Bearer realm="omniroute"'})
        except PermissionDenied as exc:  # a read/write token bound to no API key
            return _json(403, exc.message)

    async def _manager(self):
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
