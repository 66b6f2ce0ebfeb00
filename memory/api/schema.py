"""OpenAPI descriptions of our authentication classes (drf-spectacular extensions)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

if TYPE_CHECKING:
    # For annotations only: this module is loaded by AppConfig.ready(), and drf_spectacular.openapi imports
    # DRF's views, which read DRF's settings (and import our authentication classes) as they load.
    from drf_spectacular.openapi import AutoSchema


class ManagementTokenScheme(OpenApiAuthenticationExtension):
    target_class = "memory.api.auth.ManagementTokenAuthentication"
    name = "managementToken"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer", "description": "Management token (omt_…)"}


class StaffSessionScheme(OpenApiAuthenticationExtension):
    target_class = "memory.api.auth.StaffSessionAuthentication"
    name = "staffSession"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, Any]:
        return {"type": "apiKey", "in": "cookie", "name": "sessionid"}
