"""``/api/memory/providers``: the memory providers API keys may keep their memories in.

Reads need the read scope and show a caller bound to API keys only the providers its keys use (as
provider or fallback), with only its keys in ``usedBy``; another provider is a 404, as an unknown
one. Writes (create, change, delete) need a global admin: a provider's configuration reaches a
server, and one provider serves many keys. ``POST …/<name>/test`` probes the provider's store (a
read: the probe writes nothing). Secrets are masked on every read
(``memory.services.providers.mask_config``).
"""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.fields import empty
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api import responses as r
from memory.api.serializers import JSONObjectField, StrictCharField, StrictSerializer
from memory.api.views import MemoryAPIView
from memory.backends.registry import TYPES
from memory.exceptions import PermissionDenied
from memory.models import TokenScope
from memory.principals import Principal
from memory.services import providers as svc
from memory.services.audit import actor_for

NAME_FIELD: dict[str, Any] = {
    "max_length": 64,
    "validators": [RegexValidator(r"^[a-z0-9][a-z0-9_-]*$", "Lowercase letters, digits, '_' and '-'.")],
    "help_text": "1-64 characters of [a-z0-9_-], starting with a letter or digit; unique.",
}
CONFIG_HELP = (
    "The type's configuration (docs/providers.md). A secret read back as ******** keeps the stored one."
)


# The schema names this enum ProviderTypeEnum (SPECTACULAR_SETTINGS' ENUM_NAME_OVERRIDES): the
# memory types' ``type`` enum would otherwise collide with it.
TYPE_NAMES = sorted(TYPES)


class ProviderTypeField(serializers.ChoiceField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", "The backend type (memory.backends.registry).")
        super().__init__(choices=TYPE_NAMES, **kwargs)


class ProviderCreateSerializer(StrictSerializer):
    name = StrictCharField(**NAME_FIELD)
    type = ProviderTypeField()
    config = JSONObjectField(required=False, default=dict, help_text=CONFIG_HELP)


class ProviderUpdateSerializer(StrictSerializer):
    name = StrictCharField(required=False, **NAME_FIELD)
    type = ProviderTypeField()
    config = JSONObjectField(help_text=CONFIG_HELP)


class QueryBooleanField(serializers.BooleanField):
    """A query parameter that is ``true`` or ``false``: anything else, an empty value included, is
    refused (DRF's own reads an empty value as the default, and takes ``1``, ``no``, …)."""

    def get_value(self, dictionary: Any) -> Any:
        return dictionary.get(self.field_name, empty)

    def to_internal_value(self, data: Any) -> bool:
        if data not in ("true", "false"):
            raise serializers.ValidationError("Must be true or false.")
        return data == "true"


class ProviderQuerySerializer(serializers.Serializer):
    health = QueryBooleanField(
        required=False, default=False, help_text="Probe each provider's store (slower)."
    )


def require_global_admin(principal: Principal, what: str) -> None:
    """Refuse a caller bound to API keys (the scope itself is checked by ``HasScope``)."""
    if not principal.is_global:
        raise PermissionDenied(f"{what}: a token bound to API keys cannot do this")


NAME_PARAM = OpenApiParameter("name", OpenApiTypes.STR, OpenApiParameter.PATH)


class ProviderCollectionView(MemoryAPIView):
    required_scopes = {"POST": TokenScope.ADMIN}

    @extend_schema(
        parameters=[ProviderQuerySerializer],
        responses={200: r.ProviderListSerializer, **r.errors(400)},
        operation_id="memory_providers_list",
        summary="The memory providers (those the caller's API keys use, for a bound token)",
    )
    def get(self, request: Request) -> Response:
        query = ProviderQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        owner_ids = self.principal.owner_ids
        return Response(
            {
                "data": [
                    svc.provider_json(p, health=query.validated_data["health"], owner_ids=owner_ids)
                    for p in svc.visible_providers(owner_ids)
                ]
            }
        )

    @extend_schema(
        request=ProviderCreateSerializer,
        responses={201: r.ProviderSerializer, **r.errors(400, 409)},
        operation_id="memory_providers_create",
        summary="Configure a memory provider (a global admin only)",
    )
    def post(self, request: Request) -> Response:
        require_global_admin(self.principal, "Providers are global")
        body = ProviderCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        provider = svc.provider_save(
            name=data["name"],
            type=data["type"],
            config=data["config"],
            actor=actor_for(self.principal, via="rest"),
        )
        return Response(svc.provider_json(provider), status=status.HTTP_201_CREATED)


@extend_schema(parameters=[NAME_PARAM])
class ProviderDetailView(MemoryAPIView):
    required_scopes = {"PUT": TokenScope.ADMIN, "DELETE": TokenScope.ADMIN}

    @extend_schema(
        parameters=[ProviderQuerySerializer],
        responses={200: r.ProviderSerializer, **r.errors(400, 404)},
        operation_id="memory_providers_get",
    )
    def get(self, request: Request, name: str) -> Response:
        query = ProviderQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        owner_ids = self.principal.owner_ids
        provider = svc.provider_get(name, owner_ids=owner_ids)
        return Response(
            svc.provider_json(provider, health=query.validated_data["health"], owner_ids=owner_ids)
        )

    @extend_schema(
        request=ProviderUpdateSerializer,
        responses={200: r.ProviderSerializer, **r.errors(400, 404, 409)},
        operation_id="memory_providers_update",
        summary="Change a provider's type, configuration or name (a global admin only)",
    )
    def put(self, request: Request, name: str) -> Response:
        require_global_admin(self.principal, "Providers are global")
        body = ProviderUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        provider = svc.provider_get(name)
        provider = svc.provider_save(
            name=data.get("name", provider.name),
            type=data["type"],
            config=data["config"],
            actor=actor_for(self.principal, via="rest"),
            existing=provider,
        )
        return Response(svc.provider_json(provider))

    @extend_schema(
        responses={200: r.SuccessSerializer, **r.errors(404, 409)},
        operation_id="memory_providers_delete",
        summary="Delete a provider no API key uses (a global admin only)",
    )
    def delete(self, request: Request, name: str) -> Response:
        require_global_admin(self.principal, "Providers are global")
        provider = svc.provider_get(name)
        svc.provider_delete(provider, actor=actor_for(self.principal, via="rest"))
        return Response({"success": True})


@extend_schema(parameters=[NAME_PARAM])
class ProviderTestView(MemoryAPIView):
    # A probe writes nothing: the read scope is enough.
    required_scopes = {"POST": TokenScope.READ}

    @extend_schema(
        request=None,
        responses={200: r.ProviderTestSerializer, **r.errors(404)},
        operation_id="memory_providers_test",
        summary="Probe a provider's store (test the connection)",
    )
    def post(self, request: Request, name: str) -> Response:
        provider = svc.provider_get(name, owner_ids=self.principal.owner_ids)
        return Response({"name": provider.name, "health": svc.health_json(svc.provider_health(provider))})
