"""``GET /api/audit``: the audit log of destructive operations, for global administrators."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api import responses as r
from memory.api.serializers import BoundedIntegerField, InstantField
from memory.api.views import MemoryAPIView
from memory.exceptions import PermissionDenied
from memory.models import AuditAction, TokenScope
from memory.services.audit import audit_event_json, audit_events


class AuditQuerySerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=AuditAction.choices, required=False, allow_blank=True)
    apiKeyId = serializers.UUIDField(
        required=False, help_text="Only this API key's events (it may be deleted)."
    )
    since = InstantField(required=False, help_text="Only events at or after this instant.")
    limit = BoundedIntegerField(required=False, min_value=1, max_value=500, default=100)
    offset = BoundedIntegerField(required=False, min_value=0, default=0)


class AuditListView(MemoryAPIView):
    required_scopes = {"GET": TokenScope.ADMIN}

    @extend_schema(
        parameters=[AuditQuerySerializer],
        responses={200: r.AuditListResponseSerializer, **r.errors(400)},
        operation_id="audit_list",
        summary="The audit log: deletes, clears, summaries, revocations and settings changes, newest first",
    )
    def get(self, request: Request) -> Response:
        if not self.principal.is_global:
            raise PermissionDenied("The audit log is global: a token bound to API keys cannot read it")
        query = AuditQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        events = audit_events(
            principal=self.principal,
            owner_id=params.get("apiKeyId"),
            action=params.get("action") or None,
            since=params.get("since"),
        )
        start, limit = params["offset"], params["limit"]
        page = list(events[start : start + limit])
        return Response(
            {
                "data": [audit_event_json(e) for e in page],
                "total": events.count(),
                "limit": limit,
                "offset": start,
            }
        )
