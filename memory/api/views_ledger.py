"""``GET /api/memory/injections`` and ``GET /api/memory/injections/<id>``: the injection ledger, owner-
scoped like every read (a token bound to API keys sees only their entries)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api import responses as r
from memory.api.serializers import ApiKeyIdField, BoundedIntegerField, InstantField
from memory.api.views import MemoryAPIView
from memory.services.ledger import deleted_memory_ids, entry_json, ledger_get, ledger_query


class InjectionQuerySerializer(serializers.Serializer):
    apiKeyId = ApiKeyIdField()
    sessionId = serializers.CharField(
        required=False, allow_blank=True, max_length=200, help_text="Only this session's entries."
    )
    model = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="Only the entries of this model (as requested).",
    )
    since = InstantField(required=False, help_text="Only entries at or after this instant.")
    until = InstantField(required=False, help_text="Only entries before this instant.")
    memoryId = serializers.UUIDField(required=False, help_text="Only the entries that injected this memory.")
    limit = BoundedIntegerField(required=False, min_value=1, max_value=500, default=50)
    offset = BoundedIntegerField(required=False, min_value=0, default=0)


class InjectionListView(MemoryAPIView):
    @extend_schema(
        parameters=[InjectionQuerySerializer],
        responses={200: r.InjectionListResponseSerializer, **r.errors(400)},
        operation_id="injection_list",
        summary="The injection ledger: what memory each gateway answer carried, newest first",
    )
    def get(self, request: Request) -> Response:
        query = InjectionQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        page = ledger_query(
            self.principal,
            api_key_id=params.get("apiKeyId") or None,
            session_id=params.get("sessionId") or None,
            model=params.get("model") or None,
            # An empty range (until before since) is not an error: it holds no entry.
            since=params.get("since"),
            until=params.get("until"),
            memory_id=params.get("memoryId"),
            limit=params["limit"],
            offset=params["offset"],
        )
        return Response(
            {
                "data": [entry_json(e, deleted_ids=page.deleted_ids) for e in page.entries],
                "total": page.total,
                "limit": page.limit,
                "offset": page.offset,
            }
        )


class InjectionDetailView(MemoryAPIView):
    @extend_schema(
        responses={200: r.InjectionDetailSerializer, **r.errors(404)},
        operation_id="injection_get",
        summary="One injection ledger entry, with the exact memory message that was sent",
    )
    def get(self, request: Request, injection_id: str) -> Response:
        entry = ledger_get(self.principal, injection_id)
        return Response(entry_json(entry, deleted_ids=deleted_memory_ids([entry]), detail=True))
