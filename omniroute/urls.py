from django.contrib import admin
from django.urls import include, path
from django.views.defaults import page_not_found, server_error
from django.views.generic.base import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from dashboard.login import studio_login
from memory.api.errors import json_error

urlpatterns = [
    # The Studio's own sign-in page (LOGIN_URL), throttled; placed before the admin's URLs so that the
    # admin signs in here too.
    path("admin/login/", studio_login, name="studio-login"),
    # Browsers ask for /favicon.ico on pages that do not link ours (the admin, the API docs).
    path("favicon.ico", RedirectView.as_view(url="/static/favicon.svg", permanent=True)),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/", include("memory.api.urls")),
    path("v1/", include("gateway.urls")),
    path("dashboard/", include("dashboard.urls")),
    path("", include("memory.api.urls_root")),
]

JSON_PREFIXES = ("/api/", "/v1/", "/mcp")


def _wants_json(request) -> bool:
    return request.path.startswith(JSON_PREFIXES)


def handler404(request, exception=None):
    if _wants_json(request):
        return json_error(f"No route for {request.path}", status_code=404)
    return page_not_found(request, exception)


def handler500(request):
    if _wants_json(request):
        return json_error("Internal server error", status_code=500)
    return server_error(request)
