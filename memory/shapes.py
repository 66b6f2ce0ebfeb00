"""The public JSON shapes: a memory (reference §7.0), the one output shape shared by every interface,
and the error envelope of the API and the MCP HTTP transport.

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


# The error types of the JSON error envelope, by HTTP status (any other status: "api_error").
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
}


def error_envelope(
    message: str,
    *,
    status_code: int,
    type_: str | None = None,
    details: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """The one JSON error shape of the API and the MCP HTTP transport:
    ``{"error": {"message": str, "type": str, "details": [{"field": str, "message": str}]}}``."""
    return {
        "error": {
            "message": message,
            "type": type_ or ERROR_TYPES.get(status_code, "api_error"),
            "details": details or [],
        }
    }
