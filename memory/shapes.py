"""The public JSON shape of a memory (reference §7.0): the one output shape, shared by every interface.

The REST API, the MCP tools, summarisation's candidates and the Studio's export all answer
:func:`memory_json`; ``memory.api.responses.MemorySerializer`` documents it for the OpenAPI schema
(``tests/memory/api/test_schema.py`` checks that the two name the same fields).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypedDict

from memory.models import Memory


class MemoryDict(TypedDict):
    id: str
    apiKeyId: str
    sessionId: str
    type: str
    key: str
    content: str
    metadata: dict[str, Any]
    createdAt: str | None
    updatedAt: str | None
    expiresAt: str | None
    accessCount: int
    lastAccessedAt: str | None
    importance: float
    needsReindex: bool


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def memory_json(memory: Memory) -> MemoryDict:
    return {
        "id": str(memory.uuid),
        "apiKeyId": str(memory.owner_id),
        "sessionId": memory.session_id or "",
        "type": memory.type,
        "key": memory.key or "",
        "content": memory.content,
        "metadata": memory.metadata if isinstance(memory.metadata, dict) else {},
        "createdAt": iso(memory.created_at),
        "updatedAt": iso(memory.updated_at),
        "expiresAt": iso(memory.expires_at),
        "accessCount": memory.access_count,
        "lastAccessedAt": iso(memory.last_accessed_at),
        "importance": memory.importance,
        "needsReindex": memory.needs_reindex,
    }
