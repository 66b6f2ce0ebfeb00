"""OpenAI-format errors: ``{"error": {"message", "type", "param", "code"}}`` (what the SDKs parse).

Every ``/v1/`` answer the gateway makes itself has this shape: the views' own errors, an unknown
``/v1/`` route (``gateway.views.unknown_route``) and an unexpected failure inside a view
(:func:`guarded`), which would otherwise reach the project's 500 handler and its REST envelope.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.http.response import HttpResponseBase

logger = logging.getLogger("gateway.errors")


def error_body(message: str, *, type_: str, code: str | None = None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def openai_error(
    message: str,
    *,
    status: int,
    type_: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> JsonResponse:
    return JsonResponse(
        error_body(message, type_=type_, code=code, param=param), status=status, headers=headers
    )


View = Callable[..., Coroutine[Any, Any, HttpResponseBase]]


def guarded(view: View) -> View:
    """An async view whose unexpected exceptions are logged (with their traceback) and answered with
    an OpenAI-shaped 500 ``server_error``, as an OpenAI client expects from any ``/v1/`` route."""

    @functools.wraps(view)
    async def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            return await view(request, *args, **kwargs)
        except Exception:
            logger.exception("gateway.view.failed", extra={"path": request.path})
            return openai_error(
                "Internal server error", status=500, type_="server_error", code="internal_error"
            )

    return wrapper


def sse_error_event(message: str, *, type_: str, code: str | None = None) -> bytes:
    """An SSE ``data:`` event carrying an error, for failures after a stream has started (the status line
    is already sent); the OpenAI SDKs raise ``APIError`` on it."""
    return b"data: " + json.dumps(error_body(message, type_=type_, code=code)).encode() + b"\n\n"
