"""Import of an exported JSON file into one owner.

The file is a JSON array of memories or a single memory object (the shape
``GET /api/memory`` and the Studio's export produce). Each entry is validated
by the API's create serializer; valid entries are written through
``memory.store.memory_bulk_create`` (upsert on key; one transaction for a native key, one write
per entry, in order, for a key with a provider), invalid ones are skipped with
the reason. ``id``, ``apiKeyId`` and the timestamps are ignored: the owner is
the one chosen in the Studio (never none: the original stored imports ownerless, injected nowhere).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from rest_framework import serializers

from memory import strictjson
from memory.api.serializers import MemoryCreateSerializer
from memory.models import ApiKey
from memory.services.memories import MemoryInput
from memory.store import memory_bulk_create

IMPORTED_FIELDS = ("type", "key", "content", "metadata", "sessionId", "expiresAt", "importance")
MAX_REASONS = 50


class ImportFileError(Exception):
    """The file as a whole cannot be imported (not JSON, wrong shape, too large)."""


@dataclass
class ImportReport:
    imported: int = 0
    created: int = 0
    updated: int = 0
    skipped: int = 0
    reasons: list[str] = field(default_factory=list)

    @property
    def more_reasons(self) -> int:
        return max(0, self.skipped - len(self.reasons))


def _entries(upload) -> list:
    if upload.size > settings.OMNIROUTE_MAX_BODY_BYTES:
        raise ImportFileError(
            f"Failed to import file: larger than {settings.OMNIROUTE_MAX_BODY_BYTES} bytes."
        )
    try:
        data = strictjson.loads(upload.read().decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError):
        raise ImportFileError("Failed to import file: it is not valid JSON.") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ImportFileError(
            "Failed to import file: expected a JSON array of memories or one memory object."
        )
    if len(data) > settings.MEMORY_BULK_MAX_ITEMS:
        raise ImportFileError(f"Failed to import file: more than {settings.MEMORY_BULK_MAX_ITEMS} entries.")
    return data


def _reason(index: int, entry, detail) -> str:
    where = f"entry {index + 1}"
    if isinstance(entry, dict) and isinstance(entry.get("key"), str) and entry["key"].strip():
        where += f" ({entry['key'].strip()[:60]})"
    if isinstance(detail, dict):
        parts = [f"{name}: {' '.join(str(m) for m in messages)}" for name, messages in detail.items()]
        return f"{where}: {'; '.join(parts)}"
    return f"{where}: {detail}"


def import_memories(*, owner: ApiKey, upload) -> ImportReport:
    report = ImportReport()
    validator = MemoryCreateSerializer()
    inputs: list[MemoryInput] = []
    for index, entry in enumerate(_entries(upload)):
        if not isinstance(entry, dict):
            report.skipped += 1
            report.reasons.append(_reason(index, entry, "not a JSON object"))
            continue
        payload = {name: entry[name] for name in IMPORTED_FIELDS if name in entry and entry[name] is not None}
        if payload.get("key") == "":
            payload.pop("key")
        try:
            data = validator.run_validation(payload)
        except serializers.ValidationError as exc:
            report.skipped += 1
            report.reasons.append(_reason(index, entry, exc.detail))
            continue
        inputs.append(MemoryInput.from_fields(data, owner=owner, source="import"))
    report.reasons = report.reasons[:MAX_REASONS]
    if inputs:
        result = memory_bulk_create(inputs)
        report.imported = len(inputs)
        report.created, report.updated = result["created"], result["updated"]
    return report
