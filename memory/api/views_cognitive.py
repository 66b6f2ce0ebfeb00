"""``GET /api/memory/contradictions`` and ``POST /api/memory/contradictions/<id>/resolve``: the
contradictions found on write, owner-scoped like every read (a token bound to API keys sees only
theirs); resolving needs the write scope and is audited (``memory.services.contradictions``)."""

from __future__ import annotations

import math
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api import responses as r
from memory.api.serializers import ApiKeyIdField, BoundedIntegerField
from memory.api.views import MemoryAPIView
from memory.services.audit import actor_for
from memory.services.contradictions import (
    RESOLUTIONS,
    contradiction_get,
    contradiction_json,
    contradiction_list,
    contradiction_resolve,
)


class ConfidenceField(serializers.FloatField):
    """A confidence in 0..1; NaN (which every comparison lets through) is refused too."""

    def to_internal_value(self, data: Any) -> float:
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            raise serializers.ValidationError("Must be a number between 0 and 1.")
        return value


class ContradictionQuerySerializer(serializers.Serializer):
    apiKeyId = ApiKeyIdField()
    status = serializers.ChoiceField(
        choices=["open", "resolved"], required=False, help_text="Only open (to review) or resolved ones."
    )
    minConfidence = ConfidenceField(
        required=False,
        min_value=0.0,
        max_value=1.0,
        help_text="Only contradictions the rules scored at least this confident (0..1).",
    )
    limit = BoundedIntegerField(required=False, min_value=1, max_value=500, default=50)
    offset = BoundedIntegerField(required=False, min_value=0, default=0)


class ResolveSerializer(serializers.Serializer):
    resolution = serializers.ChoiceField(
        choices=list(RESOLUTIONS),
        help_text="keep_old: the old memory is current again and the new one superseded; keep_new: the "
        "old one is superseded; keep_both: not a contradiction, both current; merge: one new memory "
        "holds both and supersedes the two.",
    )


class ContradictionListView(MemoryAPIView):
    @extend_schema(
        parameters=[ContradictionQuerySerializer],
        responses={200: r.ContradictionListResponseSerializer, **r.errors(400, 404)},
        operation_id="contradiction_list",
        summary="Contradictions found on write, newest first",
    )
    def get(self, request: Request) -> Response:
        query = ContradictionQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        page = contradiction_list(
            self.principal,
            api_key_id=params.get("apiKeyId") or None,
            status=params.get("status") or None,
            min_confidence=params.get("minConfidence"),
            limit=params["limit"],
            offset=params["offset"],
        )
        page["data"] = [contradiction_json(c) for c in page["data"]]
        return Response(page)


class ContradictionResolveView(MemoryAPIView):
    @extend_schema(
        request=ResolveSerializer,
        responses={200: r.ContradictionSerializer, **r.errors(400, 404)},
        operation_id="contradiction_resolve",
        summary="Resolve a contradiction: keep_old, keep_new, keep_both or merge",
    )
    def post(self, request: Request, contradiction_id: str) -> Response:
        # The body first, as every route of the API: a bad body is a 400 whatever the id.
        body = ResolveSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        item = contradiction_get(self.principal, contradiction_id)
        resolved = contradiction_resolve(
            item, body.validated_data["resolution"], actor=actor_for(self.principal, via="rest")
        )
        return Response(contradiction_json(resolved))
