"""The public JSON shapes: a memory (camelCase fields, ISO dates), the one output shape of every
interface, and the error envelope of the API and the MCP HTTP transport.

The REST API, the MCP tools, summarisation's candidates and the Studio's export all answer
:func:`memory_json`; ``memory.api.responses.MemorySerializer`` documents it for the OpenAPI schema
(``tests/memory/api/test_schema.py`` checks that the two name the same fields). The two other shapes
that show a memory are cut from it: a retrieval hit (:func:`hit_json`: the memory's identity and
content with how it was found) and a Qdrant search result (:func:`qdrant_result_json`: the payload a
Qdrant point carries).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from memory.models import Memory

if TYPE_CHECKING:  # for the hint only: shaping a hit needs no retrieval code at run time
    from memory.retrieval.composite import SignalsDict
    from memory.retrieval.engine import Hit


class MemoryRefDict(TypedDict):
    """What every shape that shows a memory says of it."""

    id: str
    apiKeyId: str
    type: str
    key: str
    content: str


class MemoryDict(MemoryRefDict):
    sessionId: str
    metadata: dict[str, Any]
    createdAt: str | None
    updatedAt: str | None
    expiresAt: str | None
    accessCount: int
    lastAccessedAt: str | None
    importance: float
    needsReindex: bool
    category: str
    entities: list[EntityDict]
    supersededBy: str | None
    validFrom: str | None
    validTo: str | None


class EntityDict(TypedDict):
    kind: str
    text: str
    normalised: str


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def memory_ref_json(memory: Memory) -> MemoryRefDict:
    return {
        "id": str(memory.uuid),
        "apiKeyId": str(memory.owner_id),
        "type": memory.type,
        "key": memory.key or "",
        "content": memory.content,
    }


def memory_json(memory: Memory) -> MemoryDict:
    return {
        **memory_ref_json(memory),
        "sessionId": memory.session_id or "",
        "metadata": memory.metadata if isinstance(memory.metadata, dict) else {},
        "createdAt": iso(memory.created_at),
        "updatedAt": iso(memory.updated_at),
        "expiresAt": iso(memory.expires_at),
        "accessCount": memory.access_count,
        "lastAccessedAt": iso(memory.last_accessed_at),
        "importance": memory.importance,
        "needsReindex": memory.needs_reindex,
        "category": memory.category or "",
        "entities": _entities(memory.entities),
        # Loaded only for a superseded memory (a list of the history selects it with the row).
        "supersededBy": _uuid_of(memory.superseded_by) if memory.superseded_by_id is not None else None,
        "validFrom": iso(memory.valid_from or memory.created_at),
        "validTo": iso(memory.valid_to),
    }


def _uuid_of(memory: Memory | None) -> str | None:
    return None if memory is None else str(memory.uuid)


def _entities(value: object) -> list[EntityDict]:
    if not isinstance(value, list):
        return []
    return [
        {
            "kind": str(e.get("kind", "")),
            "text": str(e.get("text", "")),
            "normalised": str(e.get("normalised", "")),
        }
        for e in value
        if isinstance(e, dict)
    ]


class HitDict(MemoryRefDict):
    """A retrieved memory (``retrieve-preview``, the Studio's Sandbox): see
    ``memory.api.views_retrieval.PreviewHitSerializer`` for each score's meaning."""

    score: float
    tokens: int
    tier: str
    vecScore: float | None
    ftsScore: float | None
    sessionScore: float | None
    answerType: bool
    belowFloor: bool
    signals: SignalsDict | None
    foundThrough: str | None


def hit_json(hit: Hit) -> HitDict:
    return {
        **memory_ref_json(hit.memory),
        "score": hit.score,
        "tokens": hit.tokens,
        "tier": hit.tier,
        "vecScore": hit.vec_score,
        "ftsScore": hit.fts_score,
        "sessionScore": hit.session_score,
        "answerType": hit.answer_type,
        "belowFloor": hit.below_floor,
        "signals": hit.signals.as_dict() if hit.signals is not None else None,
        "foundThrough": None if hit.found_through is None else str(hit.found_through.uuid),
    }


class QdrantPayloadDict(TypedDict):
    apiKeyId: str
    sessionId: str
    type: str
    key: str
    content: str
    createdAt: str | None
    expiresAt: str | None


class QdrantResultDict(TypedDict):
    id: str
    score: float
    payload: QdrantPayloadDict


def qdrant_result_json(memory: Memory, score: float) -> QdrantResultDict:
    """A Qdrant search result: the memory's id and score, and the payload its point carries."""
    shown = memory_json(memory)
    return {
        "id": shown["id"],
        "score": score,
        "payload": {
            "apiKeyId": shown["apiKeyId"],
            "sessionId": shown["sessionId"],
            "type": shown["type"],
            "key": shown["key"],
            "content": shown["content"],
            "createdAt": shown["createdAt"],
            "expiresAt": shown["expiresAt"],
        },
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
