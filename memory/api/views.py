"""REST views: parse input, call memory's services/selectors, shape the output.

The memory routes read and write through ``memory.store``, which sends each API key's memories to
where they live (the native store, or the key's provider); a provider that cannot be reached is a 503
with ``Retry-After``."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import conf, store
from memory.api import responses as r
from memory.api import serializers as s
from memory.api.openapi import MemoryAutoSchema
from memory.api.parsers import BodyRequest
from memory.embeddings.runtime import cache_stats
from memory.exceptions import PermissionDenied
from memory.models import ApiKey, TokenScope
from memory.principals import Principal
from memory.services.audit import actor_for
from memory.services.memories import MemoryInput, changes_from_fields
from memory.shapes import memory_json


class MemoryAPIView(APIView):
    schema = MemoryAutoSchema()

    def initialize_request(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Request:
        # APIView's, with the request class that also reads a chunked body.
        return BodyRequest(
            request,
            parsers=self.get_parsers(),
            authenticators=self.get_authenticators(),
            negotiator=self.get_content_negotiator(),
            parser_context=self.get_parser_context(request),
        )

    @property
    def principal(self) -> Principal:
        # HasScope has already refused a request without one; this says so to the type checker too.
        auth = self.request.auth
        if not isinstance(auth, Principal):
            raise exceptions.NotAuthenticated("Authentication required")
        return auth


class MemoryCollectionView(MemoryAPIView):
    @extend_schema(
        parameters=[s.MemoryListQuerySerializer],
        responses={200: r.MemoryListResponseSerializer, **r.errors(400, 404)},
        operation_id="memory_list",
        summary="List memories (newest first) with totals",
    )
    def get(self, request: Request) -> Response:
        query = s.MemoryListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        result = store.memory_list(
            principal=self.principal,
            api_key_id=params.get("apiKeyId") or None,
            type=params.get("type") or None,
            session_id=params.get("sessionId") or None,
            q=params.get("q") or None,
            page=params["page"],
            limit=params["limit"],
            offset=params.get("offset"),
            entity=params.get("entity") or None,
            include_superseded=params["includeSuperseded"],
        )
        result["data"] = [memory_json(m) for m in result["data"]]
        result["stats"].update(_cache_stats())
        return Response(result)

    @extend_schema(
        request=s.MemoryCreateSerializer,
        responses={200: r.MemoryCreatedSerializer, 201: r.MemoryCreatedSerializer, **r.errors(400, 404, 413)},
        summary="Create a memory, or update the one with the same key (200)",
    )
    def post(self, request: Request) -> Response:
        body = s.MemoryCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        owner = self.principal.resolve_owner(data.get("apiKeyId"))
        memory, created = store.memory_create(MemoryInput.from_fields(data, owner=owner, source="api"))
        return Response(
            {"success": True, "id": str(memory.uuid), "created": created, "memory": memory_json(memory)},
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


def _cache_stats() -> dict[str, Any]:
    """Embedding-cache statistics for ``stats``: the shared cache's real counters (the original's were
    always 0)."""
    stats = cache_stats()
    return {"hitRate": stats["hitRate"], "cacheStats": {"hits": stats["hits"], "misses": stats["misses"]}}


class MemoryBulkView(MemoryAPIView):
    @extend_schema(
        request=s.BulkSerializer,
        responses={200: r.MemoryBulkResultSerializer, **r.errors(400, 404, 413)},
        summary="Create or upsert many memories, committed in chunks of 500",
    )
    def post(self, request: Request) -> Response:
        envelope = s.BulkSerializer(data=request.data)
        envelope.is_valid(raise_exception=True)
        # One serializer instance validates every item: DRF deep-copies its
        # fields per instance, which dominated the cost of 10k-item batches.
        validator = s.MemoryCreateSerializer()
        errors: dict[str, list[Any] | dict[str, Any]] = {}
        validated: list[dict[str, Any]] = []
        for index, raw in enumerate(envelope.validated_data["memories"]):
            try:
                validated.append(validator.run_validation(raw))
            except serializers.ValidationError as exc:
                errors[f"memories[{index}]"] = exc.detail
        if errors:
            raise serializers.ValidationError(errors)
        owners: dict[str | None, ApiKey] = {}
        inputs: list[MemoryInput] = []
        for index, data in enumerate(validated):
            owner_ref = data.get("apiKeyId") or None
            if owner_ref not in owners:
                owners[owner_ref] = self.principal.resolve_owner(
                    owner_ref, field=f"memories[{index}].apiKeyId"
                )
            inputs.append(MemoryInput.from_fields(data, owner=owners[owner_ref], source="api"))
        return Response(store.memory_bulk_create(inputs))


@extend_schema(parameters=[OpenApiParameter("memory_id", OpenApiTypes.UUID, OpenApiParameter.PATH)])
class MemoryDetailView(MemoryAPIView):
    @extend_schema(responses={200: r.MemoryReplySerializer, **r.errors(400, 404)}, operation_id="memory_get")
    def get(self, request: Request, memory_id: str) -> Response:
        memory = store.memory_get(principal=self.principal, memory_id=memory_id)
        return Response({"memory": memory_json(memory)})

    @extend_schema(
        request=s.MemoryUpdateSerializer,
        responses={200: r.MemoryUpdatedSerializer, **r.errors(400, 404, 409, 413)},
    )
    def put(self, request: Request, memory_id: str) -> Response:
        body = s.MemoryUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        memory = store.memory_get(principal=self.principal, memory_id=memory_id)
        memory = store.memory_update(memory, **changes_from_fields(body.validated_data))
        return Response({"success": True, "memory": memory_json(memory)})

    patch = put

    @extend_schema(responses={200: r.SuccessSerializer, **r.errors(400, 404)})
    def delete(self, request: Request, memory_id: str) -> Response:
        memory = store.memory_get(principal=self.principal, memory_id=memory_id)
        store.memory_delete(memory, actor=actor_for(self.principal, via="rest"))
        return Response({"success": True})


class MemorySettingsView(MemoryAPIView):
    required_scopes = {"PUT": TokenScope.ADMIN, "PATCH": TokenScope.ADMIN}

    @extend_schema(responses={200: r.MemorySettingsResponseSerializer, **r.errors()})
    def get(self, request: Request) -> Response:
        return Response(conf.get_memory_settings().as_dict())

    @extend_schema(
        request=s.MemorySettingsSerializer,
        responses={200: r.MemorySettingsResponseSerializer, **r.errors(400)},
    )
    def put(self, request: Request) -> Response:
        if not self.principal.is_global:
            raise PermissionDenied("Settings are global: a token bound to API keys cannot change them")
        body = s.MemorySettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return Response(
            conf.update_memory_settings(
                dict(body.validated_data), actor=actor_for(self.principal, via="rest")
            ).as_dict()
        )

    patch = put
