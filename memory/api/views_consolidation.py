"""``POST /api/memory/consolidate`` and ``POST /api/memory/consolidate/<run>/undo``: near-duplicates
merged into the richest copy (``memory.services.consolidation``), owner-scoped like every route (a
token bound to API keys reaches only theirs), with the write scope, audited. A dry run answers the
plan and writes nothing."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api import responses as r
from memory.api.serializers import ApiKeyIdField, StrictBooleanField, StrictSerializer
from memory.api.views import MemoryAPIView
from memory.models import ApiKey
from memory.services.audit import actor_for
from memory.services.consolidation import (
    consolidate_owners,
    consolidation_get,
    consolidation_undo,
    plan_json,
    run_json,
)
from memory.services.summarization import summarizable_owners


class ConsolidateSerializer(StrictSerializer):
    dryRun = StrictBooleanField(required=False, default=False, help_text="Answer the plan, change nothing.")
    apiKeyId = ApiKeyIdField(allow_null=True, help_text="Only this API key; left out: every key you reach.")


# -- the answers' shapes (memory.services.consolidation.plan_json, run_json)


class MergedMemorySerializer(serializers.Serializer):
    memory = r.MemorySerializer()
    reason = serializers.CharField(help_text="Which rule made it the same fact as the survivor.")
    cosine = serializers.FloatField(
        allow_null=True, help_text="The stored vectors' cosine; null without both."
    )


class ConsolidationGroupSerializer(serializers.Serializer):
    survivor = r.MemorySerializer(
        help_text="The richest copy, which is kept (and takes the others' metadata)."
    )
    merged = MergedMemorySerializer(many=True)


class ConsolidationPlanSerializer(serializers.Serializer):
    apiKeyId = serializers.UUIDField()
    dryRun = serializers.BooleanField()
    skipped = serializers.CharField(allow_null=True, help_text="Why this key was not consolidated.")
    considered = serializers.IntegerField(help_text="Current memories read.")
    withoutVector = serializers.IntegerField(help_text="Of those, how many had no stored vector.")
    groups = ConsolidationGroupSerializer(many=True)
    mergedCount = serializers.IntegerField()
    contradictionsResolved = serializers.IntegerField()
    runId = serializers.UUIDField(allow_null=True, help_text="The run to undo; null for a dry run.")


class ConsolidateResultSerializer(serializers.Serializer):
    dryRun = serializers.BooleanField()
    mergedCount = serializers.IntegerField()
    owners = ConsolidationPlanSerializer(
        many=True, help_text="One entry per API key, each consolidated apart."
    )


class ConsolidationRunSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    apiKeyId = serializers.UUIDField()
    createdAt = serializers.DateTimeField()
    actor = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=["applied", "undone"])
    undoneAt = serializers.DateTimeField(allow_null=True)
    groups = serializers.IntegerField()
    merged = serializers.IntegerField()
    contradictionsResolved = serializers.IntegerField()


class ConsolidateView(MemoryAPIView):
    @extend_schema(
        request=ConsolidateSerializer,
        responses={200: ConsolidateResultSerializer, **r.errors(400, 404)},
        operation_id="memory_consolidate",
        summary="Merge near-duplicate memories into the richest copy, per API key (undoable)",
    )
    def post(self, request: Request) -> Response:
        body = ConsolidateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        plans = consolidate_owners(
            self._owners(data.get("apiKeyId") or None),
            dry_run=data["dryRun"],
            actor=actor_for(self.principal, via="rest"),
        )
        return Response(
            {
                "dryRun": data["dryRun"],
                "mergedCount": sum(p.merged_count for p in plans if p.run is not None),
                "owners": [plan_json(p) for p in plans],
            }
        )

    def _owners(self, api_key_id: str | None) -> list[ApiKey]:
        if api_key_id is not None:
            return [self.principal.resolve_owner(api_key_id)]
        owners = summarizable_owners()
        if self.principal.owner_ids is not None:
            owners = owners.filter(pk__in=list(self.principal.owner_ids))
        return list(owners)


@extend_schema(parameters=[OpenApiParameter("run_id", OpenApiTypes.UUID, OpenApiParameter.PATH)])
class ConsolidationUndoView(MemoryAPIView):
    @extend_schema(
        request=None,
        responses={200: ConsolidationRunSerializer, **r.errors(404, 409)},
        operation_id="memory_consolidate_undo",
        summary="Put back every memory a consolidation run merged, exactly as it was",
    )
    def post(self, request: Request, run_id: str) -> Response:
        run = consolidation_get(self.principal, run_id)
        undone = consolidation_undo(run, actor=actor_for(self.principal, via="rest"))
        return Response(run_json(undone))
