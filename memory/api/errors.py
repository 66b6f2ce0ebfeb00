"""One JSON error envelope for every API route.

``{"error": {"message": str, "type": str, "details": [{"field": str, "message": str}]}}``
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, JsonResponse, UnreadablePostError
from rest_framework import exceptions, status
from rest_framework.response import Response

from memory.api.parsers import PayloadTooLarge
from memory.exceptions import DomainError
from memory.shapes import error_envelope as envelope
from omniroute.db.locking import BUSY_MESSAGE, RETRY_AFTER_SECONDS, is_lock_error

logger = logging.getLogger("memory.api")


def flatten_details(detail: object, prefix: str = "") -> list[dict[str, str]]:
    """Turn DRF's nested ``ValidationError.detail`` into ``[{field, message}]``."""
    out: list[dict[str, str]] = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = prefix if key == "non_field_errors" else (f"{prefix}.{key}" if prefix else str(key))
            out.extend(flatten_details(value, name))
    elif isinstance(detail, list):
        if detail and all(not isinstance(item, (dict, list)) for item in detail):
            out.extend({"field": prefix, "message": str(item)} for item in detail)
        else:
            for index, item in enumerate(detail):
                if item:
                    out.extend(flatten_details(item, f"{prefix}[{index}]" if prefix else f"[{index}]"))
    else:
        out.append({"field": prefix, "message": str(detail)})
    return out


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    if is_lock_error(exc):
        # Another write held SQLite's lock past this one's deadline: transient, so 503 and when to retry.
        return Response(
            envelope(BUSY_MESSAGE, status_code=503, type_="service_unavailable_error"),
            status=503,
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    if isinstance(exc, DomainError):
        # A 503 (a memory provider and its fallbacks unreachable) is transient: say when to retry.
        retry = {"Retry-After": str(RETRY_AFTER_SECONDS)} if exc.status == 503 else None
        return Response(
            envelope(exc.message, status_code=exc.status, type_=exc.type, details=exc.details),
            status=exc.status,
            headers=retry,
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, RequestDataTooBig):
        # Django's request.body, which DRF's JSON parsing reads, measures the body against
        # DATA_UPLOAD_MAX_MEMORY_SIZE (= OMNIROUTE_MAX_BODY_BYTES) before any parser sees it.
        exc = PayloadTooLarge(f"Request body exceeds {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes")
    elif isinstance(exc, UnreadablePostError):
        exc = exceptions.ParseError("The request body could not be read to its end")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, exceptions.ValidationError):
        details = flatten_details(exc.detail)
        first = details[0] if details else {"field": "", "message": "Invalid request"}
        message = (
            f"Invalid request: {first['field']}: {first['message']}"
            if first["field"]
            else f"Invalid request: {first['message']}"
        )
        return Response(envelope(message, status_code=400, details=details), status=400)
    if isinstance(exc, exceptions.APIException):
        # Set on the exception by DRF's views (a 401's challenge) and by Throttled.
        headers: dict[str, str] = {}
        auth_header = getattr(exc, "auth_header", None)
        if auth_header:
            headers["WWW-Authenticate"] = auth_header
        wait = getattr(exc, "wait", None)
        if wait:
            headers["Retry-After"] = str(int(wait))
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        return Response(
            envelope(str(detail), status_code=exc.status_code), status=exc.status_code, headers=headers
        )
    view = context.get("view")
    logger.exception("unhandled error in %s", type(view).__name__ if view else "api")
    return Response(
        envelope("Internal server error", status_code=500, type_="api_error"),
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )


def json_error(
    message: str, *, status_code: int, details: list[dict[str, str]] | None = None
) -> JsonResponse:
    """The same envelope for plain Django views (404/500 handlers, middleware)."""
    return JsonResponse(envelope(message, status_code=status_code, details=details), status=status_code)
