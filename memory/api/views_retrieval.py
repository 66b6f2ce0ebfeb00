"""Retrieval and engine routes: retrieve-preview, reindex, engine-status, embedding-providers."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
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


class PreviewSerializer(StrictSerializer):
    query = StrictCharField(max_length=8000, trim_whitespace=True)
    strategy = serializers.ChoiceField(choices=["exact", "keyword", "semantic", "hybrid"], default="hybrid")
    maxTokens = StrictIntegerField(min_value=1, max_value=16000, default=2000)
    limit = StrictIntegerField(min_value=1, max_value=100, default=20)
    apiKeyId = ApiKeyIdField(allow_null=True)


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
        choices=["exact", "keyword", "semantic", "hybrid"],
        help_text="What ran: keyword = FTS5 alone, exact = newest first (the degraded tiers).",
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
