"""``/api/keys``: the API keys (gateway clients, memory owners) with their memory provider.

Every route needs a global admin token (or a superuser's session): keys are credentials, and a
token bound to keys must not list, mint or delete others. The secret is answered once, by the
create or a rotation; only its prefix is shown after. ``provider`` is a provider's name (null: the native store)
and ``fallbacks`` the ordered names tried when it is down.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api import responses as r
from memory.api.serializers import (
    CompositeWeightsField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictSerializer,
)
from memory.api.views import MemoryAPIView
from memory.api.views_providers import require_global_admin
from memory.conf import HALF_LIFE_DAYS
from memory.models import ApiKey, TokenScope
from memory.services import providers as svc
from memory.services.audit import actor_for
from memory.services.credentials import key_rotate

ADMIN_ONLY = {method: TokenScope.ADMIN for method in ("GET", "POST", "PATCH", "DELETE")}
PROVIDER_HELP = "A memory provider's name; null: the native store."
FALLBACKS_HELP = "Provider names tried in order when the provider cannot answer (a provider is needed)."


class ProviderNameField(StrictCharField):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(max_length=64, **kwargs)  # type: ignore[arg-type]


class KeyCreateSerializer(StrictSerializer):
    name = StrictCharField(max_length=200)
    allowGlobalScope = StrictBooleanField(required=False, default=False)
    provider = ProviderNameField(required=False, allow_null=True, default=None, help_text=PROVIDER_HELP)
    fallbacks = serializers.ListField(
        child=ProviderNameField(),
        required=False,
        default=list,
        max_length=svc.MAX_FALLBACKS,
        help_text=FALLBACKS_HELP,
    )


class KeyUpdateSerializer(StrictSerializer):
    name = StrictCharField(required=False, max_length=200)
    allowGlobalScope = StrictBooleanField(required=False)
    revoked = StrictBooleanField(required=False, help_text="true revokes the key (for good).")
    compositeWeights = CompositeWeightsField(
        required=False,
        allow_null=True,
        help_text="This key's own composite weights (semantic, recency, importance); null: the settings'.",
    )
    recencyHalfLifeDays = StrictFloatField(
        required=False,
        allow_null=True,
        min_value=HALF_LIFE_DAYS[0],
        max_value=HALF_LIFE_DAYS[1],
        help_text="This key's own recency half-life in days; null: the settings'.",
    )
    provider = ProviderNameField(required=False, allow_null=True, help_text=PROVIDER_HELP)
    fallbacks = serializers.ListField(
        child=ProviderNameField(),
        required=False,
        max_length=svc.MAX_FALLBACKS,
        help_text=FALLBACKS_HELP + " Left out: kept, unless provider becomes null.",
    )
    schema_extra = {"minProperties": 1}  # see validate()

    def validate(self, attrs: dict) -> dict:
        if not attrs:
            raise serializers.ValidationError({"non_field_errors": ["Give at least one field to change."]})
        return attrs


class KeyCollectionView(MemoryAPIView):
    required_scopes = ADMIN_ONLY

    @extend_schema(
        responses={200: r.ApiKeyListSerializer, **r.errors()},
        operation_id="keys_list",
        summary="Every API key with its provider (a global admin only)",
    )
    def get(self, request: Request) -> Response:
        require_global_admin(self.principal, "API keys are credentials")
        keys = [svc.key_json(k) for k in ApiKey.objects.select_related("provider")]
        return Response({"data": keys, "total": len(keys)})

    @extend_schema(
        request=KeyCreateSerializer,
        responses={201: r.ApiKeyCreatedSerializer, **r.errors(400, 409)},
        operation_id="keys_create",
        summary="Create an API key; its secret is answered once (a global admin only)",
    )
    def post(self, request: Request) -> Response:
        require_global_admin(self.principal, "API keys are credentials")
        body = KeyCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        key, secret = svc.key_create(
            name=data["name"],
            allow_global_scope=data["allowGlobalScope"],
            provider=data["provider"],
            fallbacks=data["fallbacks"],
            actor=actor_for(self.principal, via="rest"),
        )
        return Response({**svc.key_json(key), "secret": secret}, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[OpenApiParameter("key_id", OpenApiTypes.UUID, OpenApiParameter.PATH)])
class KeyDetailView(MemoryAPIView):
    required_scopes = ADMIN_ONLY

    @extend_schema(responses={200: r.ApiKeySerializer, **r.errors(404)}, operation_id="keys_get")
    def get(self, request: Request, key_id: str) -> Response:
        require_global_admin(self.principal, "API keys are credentials")
        return Response(svc.key_json(svc.key_get(key_id)))

    @extend_schema(
        request=KeyUpdateSerializer,
        responses={200: r.ApiKeySerializer, **r.errors(400, 404, 409)},
        operation_id="keys_update",
        summary="Rename, revoke or change the provider of an API key (a global admin only)",
    )
    def patch(self, request: Request, key_id: str) -> Response:
        require_global_admin(self.principal, "API keys are credentials")
        body = KeyUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        key = svc.key_get(key_id)
        fields = {
            "name": "name",
            "allowGlobalScope": "allow_global_scope",
            "revoked": "revoked",
            "provider": "provider",
            "fallbacks": "fallbacks",
            "compositeWeights": "composite_weights",
            "recencyHalfLifeDays": "recency_half_life_days",
        }
        changes = {field: data[name] for name, field in fields.items() if name in data}
        svc.key_update(key, actor=actor_for(self.principal, via="rest"), **changes)
        return Response(svc.key_json(key))

    @extend_schema(
        responses={200: r.ApiKeyDeletedSerializer, **r.errors(404)},
        operation_id="keys_delete",
        summary="Delete an API key and its memories, wherever they live (a global admin only)",
    )
    def delete(self, request: Request, key_id: str) -> Response:
        require_global_admin(self.principal, "API keys are credentials")
        key = svc.key_get(key_id)
        deleted = svc.key_delete(key, actor=actor_for(self.principal, via="rest"))
        return Response({"success": True, "deletedMemories": deleted})


@extend_schema(parameters=[OpenApiParameter("key_id", OpenApiTypes.UUID, OpenApiParameter.PATH)])
class KeyRotateView(MemoryAPIView):
    required_scopes = {"POST": TokenScope.ADMIN}

    @extend_schema(
        request=None,
        responses={200: r.ApiKeyCreatedSerializer, **r.errors(404, 409)},
        operation_id="keys_rotate",
        summary=(
            "Give an API key a new secret, answered once; the old one stops working at once "
            "(same id and memories; a global admin only; 409 for a revoked key)"
        ),
    )
    def post(self, request: Request, key_id: str) -> Response:
        require_global_admin(self.principal, "API keys are credentials")
        key, secret = key_rotate(svc.key_get(key_id), actor=actor_for(self.principal, via="rest"))
        return Response({**svc.key_json(key), "secret": secret})
