"""The three MCP tools: argument schemas (what the SDK validates and lists) and their handlers.

The original's argument schemas, with these fixes:

* ``omniroute_memory_search`` ranks with the configured strategy (the
  Studio's "recent" is ``exact``) through :func:`memory.selectors.memory_search`;
* ``omniroute_memory_add`` accepts the full type set;
* ``omniroute_memory_clear`` deletes every match, not only the 50 newest,
  reports what was really deleted, and has ``dryRun``.

Every tool goes through :mod:`memory.store`, so a key whose memories live with a provider is searched,
written and cleared there, exactly as a native key is here.

A call without ``apiKeyId`` uses the token's only owner, and is refused with a
clear error when the token reaches several (or all) owners. ``limit`` and
``maxTokens`` are bounded in the tool schemas (1..100, 1..8000): the SDK
answers anything else with a tool error naming the argument.

The handlers are synchronous (they use the ORM) and take the call's
:class:`~memory.principals.Principal`; :mod:`memory.mcp.server` runs them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, time
from typing import Annotated, Any, Literal

from django.utils.dateparse import parse_date, parse_datetime
from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from memory.exceptions import ValidationFailed
from memory.models import ApiKey, TokenScope
from memory.principals import Principal
from memory.selectors import memory_search
from memory.services.audit import actor_for
from memory.services.auth import require_scope
from memory.services.memories import MemoryInput, content_problem
from memory.shapes import memory_json
from memory.store import memory_clear, memory_create

SEARCH_TOOL = "omniroute_memory_search"
ADD_TOOL = "omniroute_memory_add"
CLEAR_TOOL = "omniroute_memory_clear"
TOOL_NAMES = (SEARCH_TOOL, ADD_TOOL, CLEAR_TOOL)

MemoryTypeName = Literal["factual", "episodic", "procedural", "semantic", "short_term", "long_term", "entity"]
ApiKeyIdArg = Annotated[
    str | None,
    Field(
        description="The API key (memory owner) id. Optional when the token is bound to exactly one API key.",
        max_length=64,
    ),
]

#: Runs a handler for one call: ``await run(ctx, handler, **arguments)`` gives the tool's text.
Runner = Callable[..., Awaitable[str]]


# -- the handlers --------------------------------------------------------------------------------------


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
    """``omniroute_memory_search``: the owner's memories ranked by :func:`memory.selectors.memory_search`."""
    require_scope(principal, TokenScope.READ)
    owner = owner_for(principal, api_key_id)
    found = memory_search(
        principal=principal, owner=owner, query=query, type=type, max_tokens=max_tokens, limit=limit
    )
    memories = [
        {**memory_json(hit.memory), "score": hit.score, "tier": hit.tier, "tokens": hit.tokens}
        for hit in found.hits
    ]
    return {
        "success": True,
        "data": {
            "memories": memories,
            "count": len(memories),
            "totalTokens": found.total_tokens,
            "strategy": found.strategy,
            "resolution": found.resolution,
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
    """``omniroute_memory_add``: create, or upsert on ``(apiKeyId, key)`` like ``POST /api/memory``.

    The SDK has checked the arguments against the tool schema; the content rule, which a schema
    cannot state, is checked here, and ``key`` and ``sessionId`` are trimmed, as the API does.
    """
    require_scope(principal, TokenScope.WRITE)
    problem = content_problem(content)
    if problem:
        raise ValidationFailed(
            f"Invalid arguments: content: {problem}", details=[{"field": "content", "message": problem}]
        )
    owner = owner_for(principal, api_key_id)
    fields = {
        "type": type,
        "key": key.strip(),
        "content": content,
        "sessionId": (session_id or "").strip(),
        "metadata": metadata or {},
    }
    memory, created = memory_create(MemoryInput.from_fields(fields, owner=owner, source="mcp"))
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
    require_scope(principal, TokenScope.WRITE)
    cutoff = parse_cutoff(older_than) if older_than else None
    owner = owner_for(principal, api_key_id)
    result = memory_clear(
        owner=owner,
        type=type,
        created_before=cutoff,
        dry_run=dry_run,
        actor=actor_for(principal, via="mcp"),
    )
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


# -- the tool definitions ------------------------------------------------------------------------------


def register_tools(server: MCPServer, run: Runner) -> None:
    """Add the three tools to ``server``; each call goes through ``run`` to its handler."""

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
        return await run(
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
        return await run(
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
        return await run(
            ctx,
            clear_memories,
            api_key_id=apiKeyId,
            type=type,
            older_than=olderThan,
            dry_run=dryRun,
        )
