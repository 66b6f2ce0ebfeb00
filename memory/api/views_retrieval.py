"""Retrieval and engine routes: retrieve-preview, reindex, engine-status, embedding-providers."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api import responses as r
from memory.api.serializers import (
    ApiKeyIdField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)
from memory.api.views import MemoryAPIView
from memory.exceptions import PermissionDenied
from memory.retrieval.preview import retrieve_preview
from memory.services.indexing import reindex_start
from memory.services.providers import providers_status
from memory.status import embedding_providers, engine_status

STRATEGIES = ["exact", "keyword", "semantic", "hybrid", "composite"]


@extend_schema_field(
    {
        "anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}],
        "description": "Rank as if it were this moment: memories created after it are left out, and "
        'recency (composite) and the periods a question names ("last week") count from it. A date '
        "alone means the end of that day, UTC; a date-time without an offset is UTC. A moment after "
        "now ranks now; one before 1900 ranks as of 1900 (no memory is older). Expired memories stay "
        "hidden whatever the date.",
    }
)
class AsOfField(serializers.Field):
    """An ISO date (the end of that day, UTC) or date-time (UTC when it names no offset)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data: object) -> datetime:
        if not isinstance(data, str) or len(data) > 64:
            raise serializers.ValidationError("Must be an ISO date (2026-05-01) or date-time string.")
        text = data.strip()
        try:
            day = parse_date(text)
            moment = None if day is not None else parse_datetime(text)
        except ValueError:  # well formed but impossible ("2026-02-30")
            day = moment = None
        if day is not None:
            return end_of_day(day)
        if moment is None:
            raise serializers.ValidationError("Must be an ISO date (2026-05-01) or date-time.")
        return as_of_moment(moment if timezone.is_aware(moment) else moment.replace(tzinfo=UTC))

    def to_representation(self, value: datetime) -> str:
        return value.isoformat()


# The earliest moment a ranking is asked for: no memory is older, and a date this far from
# datetime's bounds can be shifted to UTC and have the periods a question names counted back from it.
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)


def as_of_moment(moment: datetime) -> datetime:
    """``moment`` in UTC, from ``EARLIEST`` on; past datetime's last day it stays its largest value
    (later than now, which the engine ranks as now)."""
    try:
        utc = moment.astimezone(UTC)
    except OverflowError:  # a time zone's offset took it past datetime's first or last day
        return EARLIEST if moment.year < EARLIEST.year else datetime.max.replace(tzinfo=UTC)
    return max(utc, EARLIEST)


def end_of_day(day: date) -> datetime:
    """The last instant of ``day`` in UTC: "as of 1 May" includes what was written on 1 May."""
    if day == date.max:
        return datetime.max.replace(tzinfo=UTC)
    return as_of_moment(
        datetime.combine(day + timedelta(days=1), time.min, tzinfo=UTC) - timedelta(microseconds=1)
    )


class PreviewSerializer(StrictSerializer):
    query = StrictCharField(max_length=8000, trim_whitespace=True)
    strategy = serializers.ChoiceField(choices=STRATEGIES, default="hybrid")
    maxTokens = StrictIntegerField(min_value=1, max_value=16000, default=2000)
    limit = StrictIntegerField(min_value=1, max_value=100, default=20)
    apiKeyId = ApiKeyIdField(allow_null=True)
    asOf = AsOfField()


class FallbackUseSerializer(serializers.Serializer):
    operation = serializers.CharField()
    failed = serializers.CharField()
    used = serializers.CharField(allow_null=True)
    reason = serializers.CharField()
    at = serializers.DateTimeField()


class PreviewResolutionSerializer(serializers.Serializer):
    """How the preview was really answered (``memory.retrieval.engine``)."""

    embeddingSource = serializers.CharField(allow_null=True)
    embeddingModel = serializers.CharField(allow_null=True)
    vectorStore = serializers.CharField(
        help_text="The store whose search ranked the hits: qdrant, sqlite-vec or none for the native "
        "store; the provider's name for an API key on a memory provider."
    )
    # The request's ``strategy`` (its enum is documented there).
    strategyRequested = serializers.CharField()
    strategyUsed = serializers.ChoiceField(
        choices=STRATEGIES,
        help_text="What ran: keyword = FTS5 alone, exact = newest first (the degraded tiers). A "
        "degraded composite still re-orders what the fallback found (see each hit's signals).",
    )
    rerankApplied = serializers.BooleanField()
    fallbackReason = serializers.CharField(allow_null=True)
    provider = serializers.CharField(
        required=False, help_text="Only for an API key on a memory provider: the provider's name."
    )
    providerType = serializers.CharField(required=False, help_text="The provider's backend type.")
    rankings = serializers.ListField(
        child=serializers.ChoiceField(choices=["keyword", "vector", "hybrid"]),
        required=False,
        help_text="The provider's rankings used (fused by RRF when there are two).",
    )
    backendFallbacks = FallbackUseSerializer(
        many=True, required=False, help_text="Each operation a fallback provider answered (or none could)."
    )


class HitSignalsSerializer(serializers.Serializer):
    """The composite strategy's signals (``memory.retrieval.composite``); the hit's ``score`` is
    their weighted mean (``compositeWeights``)."""

    semantic = serializers.FloatField(
        help_text="Relevance, 0..1: the ranking's score divided by the best candidate's (see semanticFrom)."
    )
    recency = serializers.FloatField(
        help_text="0..1: 0.5 ** (age in days / recencyHalfLifeDays), counted from now or asOf."
    )
    importance = serializers.FloatField(help_text="The memory's importance, 0..1.")
    semanticFrom = serializers.ChoiceField(
        choices=["hybrid", "keyword", "vector", "words", "none"],
        help_text="Which ranking the relevance came from: hybrid (the fused score), keyword (bm25: no "
        "vector search ran), vector (a provider's cosine), words (query words, newest-first tier) or "
        "none (no query).",
    )


class PreviewHitSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    apiKeyId = serializers.UUIDField()
    type = serializers.CharField()
    key = serializers.CharField(allow_blank=True)
    content = serializers.CharField()
    score = serializers.FloatField()
    tokens = serializers.IntegerField()
    tier = serializers.ChoiceField(choices=["qdrant", "vector", "hybrid", "hybrid-rrf", "fts5", "recent"])
    vecScore = serializers.FloatField(allow_null=True)
    ftsScore = serializers.FloatField(allow_null=True)
    sessionScore = serializers.FloatField(
        allow_null=True, help_text="Hybrid, conversation turns: the best keyword score in the turn's session."
    )
    answerType = serializers.BooleanField(
        help_text="Hybrid: the memory names a time and the question asks when (it was lifted for it)."
    )
    belowFloor = serializers.BooleanField(help_text="A match the gateway drops (weak vector-only match).")
    signals = HitSignalsSerializer(
        allow_null=True, help_text="Composite only: the signals of the score; null for other strategies."
    )
    foundThrough = serializers.UUIDField(
        allow_null=True,
        help_text=(
            "The superseded memory the query matched, whose place this current memory took (its scores "
            "are that match's); null when the memory matched itself."
        ),
    )


class PreviewResponseSerializer(serializers.Serializer):
    memories = PreviewHitSerializer(many=True)
    resolution = PreviewResolutionSerializer()
    totalTokensUsed = serializers.IntegerField()
    budgetMaxTokens = serializers.IntegerField()
    latencyMs = serializers.FloatField(allow_null=True)


class RetrievePreviewView(MemoryAPIView):
    @extend_schema(
        request=PreviewSerializer, responses={200: PreviewResponseSerializer, **r.errors(400, 404)}
    )
    def post(self, request: Request) -> Response:
        body = PreviewSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        return Response(
            retrieve_preview(
                principal=self.principal,
                query=data["query"],
                strategy=data["strategy"],
                max_tokens=data["maxTokens"],
                limit=data["limit"],
                api_key_id=data.get("apiKeyId") or None,
                as_of=data.get("asOf"),
            )
        )

    # A preview is a read: it needs only the read scope.
    required_scopes = {"POST": "read"}


class ReindexSerializer(StrictSerializer):
    force = StrictBooleanField(required=False, default=False)


class ReindexView(MemoryAPIView):
    required_scopes = {"POST": "admin"}

    @extend_schema(
        request=ReindexSerializer,
        responses={200: r.ReindexStartedSerializer, **r.errors(400)},
        description="A global admin only: the vector index is shared by every API key, and a stale one "
        "is rebuilt whole, so a token bound to API keys is refused (403).",
    )
    def post(self, request: Request) -> Response:
        if not self.principal.is_global:
            raise PermissionDenied(
                "A reindex rebuilds the vector index of every API key: a token bound to API keys cannot start one"
            )
        body = ReindexSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        pending = reindex_start(force=body.validated_data["force"])
        return Response({"started": True, "pending": pending})


class EngineStatusView(MemoryAPIView):
    @extend_schema(
        responses={200: r.EngineStatusSerializer, **r.errors()},
        description="For a token bound to API keys, the counts are those of its keys' memories, and "
        "``providers`` lists only the providers and fallback events of its keys.",
    )
    def get(self, request: Request) -> Response:
        owner_ids = self.principal.owner_ids
        return Response({**engine_status(owner_ids=owner_ids), "providers": providers_status(owner_ids)})


class EmbeddingProvidersView(MemoryAPIView):
    @extend_schema(responses={200: r.EmbeddingProvidersSerializer, **r.errors()})
    def get(self, request: Request) -> Response:
        return Response({"providers": embedding_providers()})
