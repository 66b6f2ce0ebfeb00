"""Lifecycle routes: clear, summarisation, the pipeline health check, the load-balancer probes
(liveness ``/healthz``, readiness ``/readyz``), and /mcp's fallback."""

from __future__ import annotations

import logging

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memory import store
from memory.api.errors import json_error
from memory.api.responses import (
    HealthReportSerializer,
    MemoryClearResultSerializer,
    SummarizeResultSerializer,
    errors,
)
from memory.api.serializers import (
    ApiKeyIdField,
    InstantField,
    StrictBooleanField,
    StrictIntegerField,
    StrictSerializer,
)
from memory.api.views import MemoryAPIView
from memory.models import ApiKey, MemoryType
from memory.services.audit import actor_for
from memory.services.health import run_health_check
from memory.services.readiness import RETRY_AFTER_SECONDS, liveness_problem, readiness
from memory.services.summarization import summarizable_owners, summarize_owners
from memory.shapes import memory_json

logger = logging.getLogger("memory.api")


class ClearSerializer(StrictSerializer):
    # Required, even where the caller has one key (then "" names it): a clear deletes, so its target
    # is said, and an empty body is refused rather than read as "everything".
    apiKeyId = ApiKeyIdField(required=True, help_text="The API key to clear ('': a bound caller's one key).")
    type = serializers.ChoiceField(choices=MemoryType.choices, required=False, help_text="Only this type.")
    createdBefore = InstantField(required=False, help_text="Only memories created before.")
    dryRun = StrictBooleanField(required=False, default=False)


class ClearView(MemoryAPIView):
    @extend_schema(
        request=ClearSerializer,
        responses={200: MemoryClearResultSerializer, **errors(400, 404)},
        operation_id="memory_clear",
        summary="Delete one API key's memories (of a type, created before a date), wherever they live",
    )
    def post(self, request: Request) -> Response:
        body = ClearSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        owner = self.principal.resolve_owner(data.get("apiKeyId") or None)
        result = store.memory_clear(
            owner=owner,
            type=data.get("type") or None,
            created_before=data.get("createdBefore"),
            dry_run=data["dryRun"],
            actor=actor_for(self.principal, via="rest"),
        )
        return Response({**result, "dryRun": data["dryRun"]})


class SummarizeSerializer(StrictSerializer):
    olderThanDays = StrictIntegerField(required=False, min_value=1, max_value=365, default=30)
    apiKeyId = ApiKeyIdField(allow_null=True)
    dryRun = StrictBooleanField(required=False, default=False)


class SummarizeView(MemoryAPIView):
    @extend_schema(
        request=SummarizeSerializer,
        responses={200: SummarizeResultSerializer, **errors(400, 404)},
        operation_id="memory_summarize",
        summary="Replace memories older than N days by one summary memory per API key",
    )
    def post(self, request: Request) -> Response:
        body = SummarizeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        owners = self._owners(data.get("apiKeyId") or None)
        results = summarize_owners(
            owners=owners,
            days=data["olderThanDays"],
            dry_run=data["dryRun"],
            actor=actor_for(self.principal, via="rest"),
        )
        summary_ids = [r.summary_id for r in results if r.summary_id]
        return Response(
            {
                "candidates": [memory_json(m) for r in results for m in r.candidates],
                "totalTokens": sum(r.total_tokens for r in results),
                "deletedCount": sum(r.deleted_count for r in results),
                # One summary per API key: ``summaryId`` is set when exactly one was made.
                "summaryId": summary_ids[0] if len(summary_ids) == 1 else None,
                "summaryIds": summary_ids,
                "dryRun": data["dryRun"],
                "owners": [
                    {
                        "apiKeyId": str(r.owner.pk),
                        "candidates": len(r.candidates),
                        "totalTokens": r.total_tokens,
                        "deletedCount": r.deleted_count,
                        "summaryId": r.summary_id,
                    }
                    for r in results
                    if r.candidates
                ],
            }
        )

    def _owners(self, api_key_id: str | None) -> list[ApiKey]:
        """The owners to summarise, each separately: the named one, or all this caller may reach."""
        if api_key_id is not None:
            return [self.principal.resolve_owner(api_key_id)]
        owners = summarizable_owners()
        owner_ids = self.principal.owner_ids
        if owner_ids is not None:
            owners = owners.filter(pk__in=list(owner_ids))
        return list(owners)


class HealthView(MemoryAPIView):
    @extend_schema(
        responses={200: HealthReportSerializer, **errors()},
        operation_id="memory_health",
        summary="Run write, FTS, vector, read and delete on a private probe owner",
    )
    def get(self, request: Request) -> Response:
        return Response(run_health_check())


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness, for load balancers: 200 when the database answers and is migrated, else 503. No auth,
    no data."""
    problem = liveness_problem()
    if problem is not None:
        return JsonResponse({"status": "unavailable", "reason": problem}, status=503)
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness of this process (``memory.services.readiness``): 200 with each check and the pid, or
    503 in the JSON error envelope, one detail per failed check, with ``Retry-After``. No auth; the
    answer holds fixed phrases only."""
    state = readiness()
    if state.ready:
        return JsonResponse({"status": "ready", "pid": state.pid, "checks": state.checks})
    response = json_error(
        "Not ready: " + "; ".join(f"{name}: {problem}" for name, problem in state.problems),
        status_code=503,
        details=[{"field": name, "message": problem} for name, problem in state.problems],
    )
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


@csrf_exempt
def mcp_without_asgi(request: HttpRequest) -> JsonResponse:
    """``/mcp`` reached Django itself: MCP over HTTP is answered by ``omniroute.asgi``, in front of Django,
    so this process serves Django without it (WSGI, or a test client)."""
    return json_error(
        "MCP over HTTP is served by the ASGI application (omniroute.asgi:application, e.g. uvicorn or "
        "manage.py runserver); this server runs Django without it. Use `manage.py mcp_server` for stdio.",
        status_code=501,
    )
