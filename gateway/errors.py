"""OpenAI-format errors: ``{"error": {"message", "type", "param", "code"}}`` (what the SDKs parse)."""

from __future__ import annotations

import json

from django.http import JsonResponse


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


def sse_error_event(message: str, *, type_: str, code: str | None = None) -> bytes:
    """An SSE ``data:`` event carrying an error, for failures after a stream has started (the status line
    is already sent); the OpenAI SDKs raise ``APIError`` on it."""
    return b"data: " + json.dumps(error_body(message, type_=type_, code=code)).encode() + b"\n\n"
