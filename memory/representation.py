"""The public JSON shape of a memory (reference §7.0), shared by every interface."""

from __future__ import annotations

from datetime import datetime

from memory.models import Memory


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def memory_json(memory: Memory) -> dict:
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
