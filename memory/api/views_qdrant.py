"""Qdrant settings and utility routes: ``/api/settings/qdrant``, its ``health``, ``search``, ``cleanup``.

Differences from the original, on purpose: search is scoped to the caller's
owners (a bound token never sees another owner's points; a global caller may
name one with ``apiKeyId``) and does not cap ``topK`` at 20; there is no Qdrant embedding-model
setting or list: points always use the memory embedding source
(``GET /api/memory/embedding-providers`` lists its models).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memory import qdrant_conf
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
from memory.models import TokenScope
from memory.services.audit import actor_for
from memory.services.qdrant import qdrant_check, qdrant_cleanup, qdrant_search


class QdrantSettingsSerializer(StrictSerializer):
    enabled = StrictBooleanField(required=False)
    host = StrictCharField(required=False, allow_blank=True, max_length=500)
    port = StrictIntegerField(required=False, min_value=1, max_value=65535)
    collection = StrictCharField(required=False, max_length=100)
    quantization = serializers.ChoiceField(choices=qdrant_conf.QUANTIZATIONS, required=False)
    apiKey = StrictCharField(required=False, allow_blank=True, max_length=500)
    timeoutSeconds = StrictIntegerField(required=False, min_value=1, max_value=300)

    def validate_host(self, value: str) -> str:
        mode = qdrant_conf.host_mode(value)
        if mode == "path" and not qdrant_conf.local_path_allowed(value):
            raise serializers.ValidationError("A local Qdrant directory must be inside the data directory.")
        if mode == "server":
            problem = qdrant_conf.host_problem(value)
            if problem:
                raise serializers.ValidationError(problem)
        return value

    def validate_collection(self, value: str) -> str:
        if not qdrant_conf.COLLECTION_RE.match(value):
            raise serializers.ValidationError("Use 1-100 letters, digits, '_' or '-'.")
        return value


class QdrantSearchSerializer(StrictSerializer):
    query = StrictCharField(max_length=8000)
    topK = StrictIntegerField(required=False, min_value=1, max_value=50, default=5)
    apiKeyId = ApiKeyIdField(allow_null=True)


class QdrantCleanupSerializer(StrictSerializer):
    retentionDays = StrictIntegerField(required=False, min_value=1, max_value=3650)


class QdrantSettingsView(MemoryAPIView):
    required_scopes = {"PUT": TokenScope.ADMIN, "PATCH": TokenScope.ADMIN}

    @extend_schema(
        responses={200: r.QdrantSettingsResponseSerializer, **r.errors()}, operation_id="qdrant_settings_get"
    )
    def get(self, request: Request) -> Response:
        return Response(qdrant_conf.get_qdrant_settings().as_public_dict())

    @extend_schema(
        request=QdrantSettingsSerializer, responses={200: r.QdrantSettingsResponseSerializer, **r.errors(400)}
    )
    def put(self, request: Request) -> Response:
        if not self.principal.is_global:
            raise PermissionDenied("Settings are global: a token bound to API keys cannot change them")
        body = QdrantSettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        cfg = qdrant_conf.update_qdrant_settings(
            dict(body.validated_data), actor=actor_for(self.principal, via="rest")
        )
        return Response(cfg.as_public_dict())

    patch = put


class QdrantHealthView(MemoryAPIView):
    @extend_schema(responses={200: r.QdrantHealthSerializer, **r.errors()})
    def get(self, request: Request) -> Response:
        return Response(qdrant_check().as_dict())


class QdrantSearchView(MemoryAPIView):
    # A search is a read.
    required_scopes = {"POST": TokenScope.READ}

    @extend_schema(
        request=QdrantSearchSerializer, responses={200: r.QdrantSearchResultSerializer, **r.errors(400, 404)}
    )
    def post(self, request: Request) -> Response:
        body = QdrantSearchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        owners = self.principal.owner_filter(data.get("apiKeyId") or None)
        return Response(qdrant_search(query=data["query"], top_k=data["topK"], owner_ids=owners))


class QdrantCleanupView(MemoryAPIView):
    required_scopes = {"POST": TokenScope.ADMIN}

    @extend_schema(
        request=QdrantCleanupSerializer, responses={200: r.QdrantCleanupResultSerializer, **r.errors(400)}
    )
    def post(self, request: Request) -> Response:
        if not self.principal.is_global:
            raise PermissionDenied("Cleanup spans every owner: a token bound to API keys cannot run it")
        body = QdrantCleanupSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        result = qdrant_cleanup(retention_days=body.validated_data.get("retentionDays"))
        return Response(result.as_dict())
