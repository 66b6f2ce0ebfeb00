"""The site's answer to a database that stayed busy: 503 with ``Retry-After``, never 500.

The REST API answers its own errors (``memory.api.errors``); this middleware is for the other views
of the site's stack, the Studio's pages and forms: JSON (our error envelope) for the JSON routes, a
short page for a browser. htmx leaves the page as it is on an error status, so a Studio action that
met a busy database can simply be sent again.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.deprecation import MiddlewareMixin
from django.utils.html import escape

from memory.shapes import error_envelope
from omniroute.db.locking import BUSY_MESSAGE, RETRY_AFTER_SECONDS, is_lock_error

JSON_PREFIXES = ("/api/", "/v1/", "/mcp")


class DatabaseBusyMiddleware(MiddlewareMixin):
    """Turns a lock error (``omniroute.db.locking.DatabaseBusy``) raised by a view into a 503."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_lock_error(exception):
            return None
        response: HttpResponse
        if request.path.startswith(JSON_PREFIXES):
            body = error_envelope(BUSY_MESSAGE, status_code=503, type_="service_unavailable_error")
            response = JsonResponse(body, status=503)
        else:
            response = HttpResponse(
                f"<!doctype html><title>Busy</title><p>{escape(BUSY_MESSAGE)}.</p>", status=503
            )
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
