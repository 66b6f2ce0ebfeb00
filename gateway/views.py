"""The OpenAI-compatible endpoints: ``POST /v1/chat/completions`` and ``GET /v1/models``.

Async views (served by the ASGI server): the database work of a request is one hop to a database thread
(:func:`gateway.chat.prepare_chat` through :func:`gateway.workers.run_db`), the upstream call is async
httpx, and a stream is relayed chunk by chunk as it arrives. Extraction is handed to the after-response
thread from the response's ``close()``, which the server calls only after the last byte was sent — so it
never delays the answer, and an abandoned stream (the client went away) learns nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

import httpx
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from gateway.chat import ExtractionContext, GatewayError, authenticate, prepare_chat
from gateway.errors import openai_error
from gateway.providers import enabled_providers
from gateway.streaming import StreamRelay
from gateway.upstream import UpstreamFailure, failure_from, list_models, passed_headers, send_chat
from gateway.workers import after_response, run_db
from memory.services.extraction import assistant_text_from_response
from memory.services.throttle import request_ip
from memory.tasks.extraction import enqueue_extraction

logger = logging.getLogger("gateway.views")


class _AfterCloseMixin(HttpResponseBase):
    """Hands ``after_close`` to the after-response thread when the server closes the response (after the
    body was sent)."""

    after_close: Callable[[], None] | None = None

    def close(self) -> None:
        if self.after_close is not None:
            after_response(self.after_close)
            self.after_close = None
        super().close()


class _Response(_AfterCloseMixin, HttpResponse):
    pass


class _StreamingResponse(_AfterCloseMixin, StreamingHttpResponse):
    pass


def _error(exc: GatewayError | UpstreamFailure) -> JsonResponse:
    if isinstance(exc, UpstreamFailure):
        return openai_error(exc.message, status=exc.status, type_=exc.type, code=exc.code)
    headers = {**exc.headers, **({"WWW-Authenticate": "Bearer"} if exc.status == 401 else {})}
    return openai_error(
        exc.message, status=exc.status, type_=exc.type, code=exc.code, param=exc.param, headers=headers
    )


def _method_not_allowed(allowed: str) -> JsonResponse:
    return openai_error(
        f"Method not allowed; use {allowed}",
        status=405,
        code="method_not_allowed",
        headers={"Allow": allowed},
    )


def _extract_answer(ctx: ExtractionContext, content: bytes) -> None:
    try:
        assistant_text = assistant_text_from_response(json.loads(content))
    except ValueError:
        assistant_text = ""
    enqueue_extraction(
        owner_id=ctx.owner_id,
        session_id=ctx.session_id,
        user_text=ctx.user_text,
        assistant_text=assistant_text,
    )


def _extract_stream(ctx: ExtractionContext, relay: StreamRelay) -> None:
    if relay.completed:
        enqueue_extraction(
            owner_id=ctx.owner_id,
            session_id=ctx.session_id,
            user_text=ctx.user_text,
            assistant_text=relay.assistant_text,
        )


@csrf_exempt
async def chat_completions(request: HttpRequest) -> HttpResponseBase:
    """Proxy a chat completion, with the key's memories injected (see :mod:`gateway.chat`).

    Upstream statuses and bodies pass through unchanged; no upstream answer gives 504 (timeout) or 502.
    """
    if request.method != "POST":
        return _method_not_allowed("POST")
    try:
        raw_body = request.body
    except RequestDataTooBig:
        return openai_error("The request body is too large", status=413, code="request_too_large")
    try:
        plan = await run_db(
            prepare_chat,
            authorization=request.headers.get("Authorization"),
            raw_body=raw_body,
            headers=request.headers,
            client_ip=request_ip(request.META),
        )
        upstream = await send_chat(plan.provider, plan.payload, stream=plan.stream)
    except (GatewayError, UpstreamFailure) as exc:
        return _error(exc)

    content_type = upstream.headers.get("content-type", "application/json")
    extraction = plan.extraction
    if plan.stream and upstream.status_code == 200:
        relay = StreamRelay(upstream, plan.provider)
        streamed = _StreamingResponse(
            relay,
            content_type=content_type,
            headers={**passed_headers(upstream), "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
        if extraction is not None:
            streamed.after_close = lambda: _extract_stream(extraction, relay)
        return streamed

    if plan.stream:  # an error answer to a streaming request: relay it whole
        try:
            await upstream.aread()
        except httpx.TransportError as exc:
            return _error(failure_from(exc, plan.provider))
        finally:
            await upstream.aclose()
    content = upstream.content
    response = _Response(
        content, status=upstream.status_code, content_type=content_type, headers=passed_headers(upstream)
    )
    if extraction is not None and upstream.status_code == 200:
        response.after_close = lambda: _extract_answer(extraction, content)
    return response


@csrf_exempt
async def models(request: HttpRequest) -> JsonResponse:
    """``GET /v1/models``: each enabled provider's configured model ids, or, when it has none configured,
    what its upstream's ``/models`` reports (prefixed back when the provider strips its prefix; an upstream
    that cannot answer lists nothing). An id listed by several providers appears once, under the first
    provider in default-then-name order."""
    if request.method != "GET":
        return _method_not_allowed("GET")
    try:
        await run_db(authenticate, request.headers.get("Authorization"), request_ip(request.META))
    except GatewayError as exc:
        return _error(exc)
    providers = await run_db(enabled_providers)
    fetched = await asyncio.gather(*(list_models(p) for p in providers if not p.model_names))
    upstream_ids = iter(fetched)
    data, seen = [], set()
    for provider in providers:
        if provider.model_names:
            ids = provider.model_names
        else:
            prefix = provider.model_prefix if provider.strip_prefix else ""
            ids = [prefix + model_id for model_id in next(upstream_ids)]
        for model_id in ids:
            if model_id in seen:
                continue
            seen.add(model_id)
            data.append(
                {
                    "id": model_id,
                    "object": "model",
                    "created": int(provider.created_at.timestamp()),
                    "owned_by": provider.name,
                }
            )
    return JsonResponse({"object": "list", "data": data})
