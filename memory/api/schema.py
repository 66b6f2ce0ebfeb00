"""OpenAPI descriptions of our authentication classes (drf-spectacular extensions)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ManagementTokenScheme(OpenApiAuthenticationExtension):
    target_class = "memory.api.auth.ManagementTokenAuthentication"
    name = "managementToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "Management token (omt_…)"}


class StaffSessionScheme(OpenApiAuthenticationExtension):
    target_class = "memory.api.auth.StaffSessionAuthentication"
    name = "staffSession"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "cookie", "name": "sessionid"}
