"""How the Redis backend keeps a record (one JSON string, camelCase fields, the vector as base64
float32) and what its errors may say; see :mod:`memory.backends.redis`."""

from __future__ import annotations

import base64
import json
import re
import uuid
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import redis

from memory.backends.base import MemoryRecord

# A Redis error reply starts with its code (WRONGTYPE, NOAUTH, ...): the only part of it shown.
ERROR_CODE = re.compile(r"[A-Z][A-Z_]{1,23}")


@dataclass
class Stored:
    """A record and its vector, as kept under one key."""

    record: MemoryRecord
    vector: np.ndarray | None


def error_text(exc: redis.RedisError) -> str:
    """What a Redis failure may say: its kind, the code of an error reply, a connection failure's own
    text (the OS's, naming host and port); never a reply's text, which is whatever answered."""
    kind = type(exc).__name__
    if isinstance(exc, redis.ResponseError):
        code = ERROR_CODE.match(str(exc))
        return f"the server refused the command ({kind}{' ' + code.group() if code else ''})"
    if isinstance(exc, redis.exceptions.InvalidResponse):
        return f"the answer is not the Redis protocol ({kind})"
    if isinstance(exc, redis.AuthenticationError):
        return f"authentication failed ({kind})"
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError) and str(exc).startswith(
        ("Error ", "Timeout")
    ):
        return f"{kind}: {exc}"
    return kind


def text(value: object) -> str:
    """A reply as text (the client decodes replies; the stubs cannot know it)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def _instant(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _parse_instant(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def encode(stored: Stored) -> str:
    r = stored.record
    vector = None
    if stored.vector is not None:
        vector = base64.b64encode(np.asarray(stored.vector, dtype="<f4").tobytes()).decode("ascii")
    return json.dumps(
        {
            "id": str(r.id),
            "owner": str(r.owner),
            "content": r.content,
            "type": r.type,
            "key": r.key,
            "sessionId": r.session_id,
            "metadata": r.metadata,
            "createdAt": _instant(r.created_at),
            "updatedAt": _instant(r.updated_at),
            "expiresAt": _instant(r.expires_at),
            "importance": r.importance,
            "embedding": vector,
        },
        ensure_ascii=False,
        default=str,
    )


def decode(raw: bytes | str) -> Stored:
    data = json.loads(raw)
    created = _parse_instant(data["createdAt"])
    updated = _parse_instant(data["updatedAt"])
    assert created is not None and updated is not None  # always written
    record = MemoryRecord(
        id=uuid.UUID(data["id"]),
        owner=uuid.UUID(data["owner"]),
        content=data["content"],
        type=data["type"],
        key=data["key"],
        session_id=data["sessionId"],
        metadata=dict(data["metadata"] or {}),
        created_at=created,
        updated_at=updated,
        expires_at=_parse_instant(data["expiresAt"]),
        importance=float(data["importance"]),
    )
    embedding = data.get("embedding")
    vector = None if embedding is None else np.frombuffer(base64.b64decode(embedding), dtype="<f4").copy()
    return Stored(record, vector)
