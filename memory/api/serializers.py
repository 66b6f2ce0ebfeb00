"""Input serializers: every check on client input happens here (validate at the edge).

What the routes answer is documented by :mod:`memory.api.responses`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memory import conf
from memory.bounds import MAX_POSITION
from memory.models import MemoryType
from memory.services.memories import content_problem


class StrictSerializer(serializers.Serializer):
    """Rejects fields it does not declare, and non-object bodies, with a named field."""

    def to_internal_value(self, data: object) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError(
                {"non_field_errors": [f"Expected a JSON object, got {type(data).__name__}"]}
            )
        errors = {name: ["Unknown field."] for name in sorted(set(data) - set(self.fields))}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            # DRF reports a body's errors by field (a dict); anything else has nothing to merge with.
            if not isinstance(exc.detail, dict):
                raise
            raise serializers.ValidationError({**exc.detail, **errors}) from None
        if errors:
            raise serializers.ValidationError(errors)
        return value


class ContentField(serializers.CharField):
    """Memory text: non-blank, at most ``MEMORY_MAX_CONTENT_BYTES`` UTF-8 bytes."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            raise serializers.ValidationError("Must be a string.")
        value = super().to_internal_value(data)
        problem = content_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers and booleans instead of stringifying them."""

    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            raise serializers.ValidationError("Must be a string.")
        return super().to_internal_value(data)


@extend_schema_field({"type": "object", "additionalProperties": {}})
class JSONObjectField(serializers.JSONField):
    def to_internal_value(self, data: object) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        # JSONField refuses what does not serialise and gives a parsed value back as it came.
        super().to_internal_value(data)
        return data


class StrictFloatField(serializers.FloatField):
    """A JSON number: strings and booleans are refused rather than coerced (``"0.5"``, ``true``)."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, (bool, str)):
            raise serializers.ValidationError("Must be a number.")
        return super().to_internal_value(data)


# What every ``apiKeyId`` takes: an API key's id, or "" (and, where allowed, null) for none.
API_KEY_ID_SCHEMA = {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "string", "maxLength": 0}]}


@extend_schema_field(API_KEY_ID_SCHEMA)
class ApiKeyIdField(StrictCharField):
    """An API key's id, or "" for none. Any other text is refused later, by the owner lookup (400)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_blank", True)
        kwargs.setdefault("max_length", 64)
        super().__init__(**kwargs)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: object) -> bool:
        if not isinstance(data, bool):
            raise serializers.ValidationError("Must be true or false.")
        return data


class BoundedIntegerField(serializers.IntegerField):
    """An integer that is never open-ended: without a ``max_value`` of its own it stops at
    ``MAX_POSITION`` (SQLite's 64-bit integers would otherwise overflow in the query, a 500)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_value", MAX_POSITION)
        super().__init__(**kwargs)


class StrictIntegerField(BoundedIntegerField):
    """A JSON integer: strings, booleans and fractions are refused rather than coerced."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or (isinstance(data, float) and not data.is_integer()):
            raise serializers.ValidationError("Must be an integer.")
        if isinstance(data, str):
            raise serializers.ValidationError("Must be an integer, not a string.")
        return super().to_internal_value(data)


class InstantField(serializers.DateTimeField):
    """An ISO 8601 instant, stored in UTC. Every date-time the schema admits is accepted: one whose UTC
    form falls before year 1 or after 9999 (``0001-01-01T00:03:00+05:05``) is the first or last
    instant Python holds (an expiry that long past has expired; one that far ahead never comes), not
    the 400 "out of range" DRF answers."""

    def enforce_timezone(self, value: datetime) -> datetime:
        if timezone.is_aware(value):
            try:
                return value.astimezone(UTC)
            except OverflowError:
                return (datetime.min if value.year < 5000 else datetime.max).replace(tzinfo=UTC)
        return super().enforce_timezone(value)


class MemoryFieldsMixin(serializers.Serializer):
    type = serializers.ChoiceField(choices=MemoryType.choices, required=False)
    key = StrictCharField(max_length=255, required=False, allow_blank=True, allow_null=True)
    metadata = JSONObjectField(required=False)
    expiresAt = InstantField(required=False, allow_null=True)
    importance = StrictFloatField(required=False, min_value=0.0, max_value=1.0)


class MemoryCreateSerializer(StrictSerializer, MemoryFieldsMixin):
    content = ContentField()
    sessionId = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    apiKeyId = ApiKeyIdField(allow_null=True)


class MemoryUpdateSerializer(StrictSerializer, MemoryFieldsMixin):
    content = ContentField(required=False)
    schema_extra = {"minProperties": 1}  # see validate()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError({"non_field_errors": ["Give at least one field to change."]})
        return attrs


class RawListField(serializers.Field):
    """A non-empty JSON array of at most ``max_length`` items, items left as parsed.

    Each item is validated afterwards by its own serializer; a ``ListField`` of
    ``JSONField`` would re-serialise every item only to check it is JSON.
    """

    def __init__(self, *, max_length: int, **kwargs: Any) -> None:
        self.max_length = max_length
        super().__init__(**kwargs)

    def to_internal_value(self, data: object) -> list[Any]:
        if not isinstance(data, list):
            raise serializers.ValidationError("Must be a JSON array.")
        if not data:
            raise serializers.ValidationError("This list may not be empty.")
        if len(data) > self.max_length:
            raise serializers.ValidationError(
                f"Ensure this field has no more than {self.max_length} elements."
            )
        return data

    def to_representation(self, value: list[Any]) -> list[Any]:
        return value


@extend_schema_field(MemoryCreateSerializer(many=True))
class BulkItemsField(RawListField):
    """The memories of a bulk write: each one a ``MemoryCreate``, validated one by one by the view."""


class BulkSerializer(StrictSerializer):
    memories = BulkItemsField(max_length=settings.MEMORY_BULK_MAX_ITEMS)


class MemoryListQuerySerializer(serializers.Serializer):
    page = BoundedIntegerField(required=False, min_value=1, default=1)
    limit = BoundedIntegerField(required=False, min_value=1, max_value=200, default=50)
    offset = BoundedIntegerField(required=False, min_value=0, allow_null=True, default=None)
    q = serializers.CharField(required=False, allow_blank=True, max_length=1000)
    apiKeyId = ApiKeyIdField()
    type = serializers.ChoiceField(choices=MemoryType.choices, required=False, allow_blank=True)
    sessionId = serializers.CharField(required=False, allow_blank=True, max_length=200)
    entity = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="Only memories naming this entity (compared without case or accents: 'lyon', 'Sao Paulo').",
    )
    includeSuperseded = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Also list the memories a later one superseded (the history); default: current only.",
    )


class ProviderModelField(StrictCharField):
    """``provider/model`` or null; blank means null."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, allow_null=True, allow_blank=True, max_length=300, **kwargs)

    # The stubs type every CharField's value as str; this one's blank is None (allow_null).
    def to_internal_value(self, data: object) -> str | None:  # type: ignore[override]
        value = super().to_internal_value(data)
        return value.strip() or None


@extend_schema_field(
    {
        "type": "object",
        "properties": {name: {"type": "number", "minimum": 0, "maximum": 1} for name in conf.SIGNALS},
        "required": list(conf.SIGNALS),
        "additionalProperties": False,
        "description": "The composite strategy's weight of each signal; the score is their weighted "
        "mean (the defaults 0.5, 0.3 and 0.2 sum to 1). Not all 0.",
    }
)
class CompositeWeightsField(serializers.Field):
    """``{"semantic": w, "recency": w, "importance": w}``, each 0..1, not all 0
    (``memory.conf.composite_weights_problem``)."""

    def to_internal_value(self, data: object) -> dict[str, float]:
        problem = conf.composite_weights_problem(data)
        if problem is not None:
            raise serializers.ValidationError(problem)
        assert isinstance(data, dict)  # composite_weights_problem checked it
        return {name: float(data[name]) for name in conf.SIGNALS}

    def to_representation(self, value: dict[str, float]) -> dict[str, float]:
        return value


class MemorySettingsSerializer(StrictSerializer):
    """``PUT /api/settings/memory``: the fields of ``memory.conf.MemorySettings``, any other is refused
    ("Unknown field."), including the former ``skillsEnabled`` and backend fields."""

    enabled = StrictBooleanField(required=False)
    maxTokens = StrictIntegerField(required=False, min_value=0, max_value=16000)
    retentionDays = StrictIntegerField(required=False, min_value=1, max_value=365)
    strategy = serializers.ChoiceField(choices=conf.STRATEGIES, required=False)
    autoSummarize = StrictBooleanField(required=False)
    scope = serializers.ChoiceField(choices=conf.SCOPES, required=False)
    extractFromAssistant = StrictBooleanField(required=False)
    learningEnabled = StrictBooleanField(required=False)
    embeddingSource = serializers.ChoiceField(choices=conf.EMBEDDING_SOURCES, required=False)
    embeddingProviderModel = ProviderModelField()
    transformersEnabled = StrictBooleanField(required=False)
    transformersModel = serializers.ChoiceField(choices=conf.TRANSFORMERS_MODELS, required=False)
    staticEnabled = StrictBooleanField(required=False)
    rerankEnabled = StrictBooleanField(required=False)
    rerankProviderModel = ProviderModelField()
    vectorStore = serializers.ChoiceField(choices=conf.VECTOR_STORES, required=False)
    customBaseUrl = serializers.URLField(required=False, allow_null=True, allow_blank=True, max_length=500)
    customModelId = ProviderModelField()
    customApiKey = ProviderModelField()
    allowPrivateUrls = StrictBooleanField(required=False)
    rrfWeights = serializers.DictField(
        child=serializers.FloatField(min_value=0, max_value=10), required=False
    )
    compositeWeights = CompositeWeightsField(required=False)
    recencyHalfLifeDays = StrictFloatField(
        required=False,
        min_value=conf.HALF_LIFE_DAYS[0],
        max_value=conf.HALF_LIFE_DAYS[1],
        help_text="The composite strategy's recency half-life in days: a memory this old has half the "
        "recency of one written now.",
    )

    consolidationEnabled = StrictBooleanField(
        required=False, help_text="Merge each key's near-duplicate memories every night (undoable)."
    )

    def validate_customBaseUrl(self, value: str | None) -> str | None:
        return value or None

    def validate_rrfWeights(self, value: dict[str, float]) -> dict[str, float]:
        unknown = set(value) - set(conf.FUSION_LISTS)
        if unknown:
            raise serializers.ValidationError(
                f"Only {', '.join(repr(n) for n in conf.FUSION_LISTS)} weights exist, not {sorted(unknown)}."
            )
        return value
