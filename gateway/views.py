"""The OpenAI-compatible endpoints: ``POST /v1/chat/completions``, ``POST /v1/embeddings``,
``GET /v1/models`` and ``GET /v1/models/<id>``; any other ``/v1/`` path is an OpenAI-shaped 404.

Async views (served by the ASGI server): the database work of a request is one hop to a database thread
(:func:`gateway.chat.prepare_chat` through :func:`gateway.workers.run_db`), the upstream call is async
(aiohttp, :mod:`gateway.upstream`), and a stream is relayed chunk by chunk as it arrives. Extraction is
handed to the after-response thread from the response's ``close()``, which the server calls only after
the last byte was sent — so it never delays the answer, and an abandoned stream (the client went away)
learns nothing.

An answer whose request carried memory has an injection ledger entry (``memory.services.ledger``),
recorded on the same after-response thread, and says so in ``x-omniroute-injection-id`` (streamed
or not): the entry's id, so a client can look up what its answer was given.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from gateway.chat import ChatPlan, GatewayError, authenticate, prepare_chat, prepare_embeddings
from gateway.errors import guarded, openai_error
from gateway.models import UpstreamProvider
from gateway.providers import enabled_providers
from gateway.streaming import StreamRelay
from gateway.upstream import (
    TRANSPORT_ERRORS,
    UpstreamFailure,
    failure_from,
    list_models,
    passed_headers,
    send_chat,
    send_embeddings,
)
from gateway.workers import after_response, run_db
from memory.services.extraction import assistant_text_from_response
from memory.services.ledger import NOT_EXTRACTED, ledger_record, ledger_settle
from memory.services.throttle import request_ip
from memory.tasks.extraction import enqueue_extraction, worth_learning

logger = logging.getLogger("gateway.views")

INJECTION_HEADER = "x-omniroute-injection-id"


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


def _answer_text(content: bytes) -> str:
    try:
        return assistant_text_from_response(json.loads(content))
    except ValueError:
        return ""


def _after_answer(plan: ChatPlan, *, learn: bool, request_id: str, answer: Callable[[], str]) -> None:
    """The after-response work of a chat: its ledger entry, then its extraction (``learn``: the
    upstream answered 200 and, streamed, to the end). The entry is written before the extraction is
    enqueued, so the task finds it to record what it learned."""
    ctx = plan.extraction if learn else None
    assistant_text = answer() if ctx is not None else ""
    learns = ctx is not None and worth_learning(ctx.user_text, assistant_text)
    if plan.ledger is not None:
        ledger_record(plan.ledger, request_id=request_id, extraction=None if learns else NOT_EXTRACTED)
        if learns:
            ledger_settle()
    if ctx is not None and learns:
        enqueue_extraction(
            owner_id=ctx.owner_id,
            session_id=ctx.session_id,
            user_text=ctx.user_text,
            assistant_text=assistant_text,
            injection_id=str(plan.ledger.id) if plan.ledger is not None else None,
        )


def _ledger_headers(plan: ChatPlan) -> dict[str, str]:
    return {INJECTION_HEADER: str(plan.ledger.id)} if plan.ledger is not None else {}


@csrf_exempt
@guarded
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
    request_id = upstream.headers.get("x-request-id", "")
    keeps_after = plan.extraction is not None or plan.ledger is not None
    if plan.stream and upstream.status_code == 200:
        relay = StreamRelay(upstream, plan.provider)
        streamed = _StreamingResponse(
            relay,
            content_type=content_type,
            headers={
                **passed_headers(upstream),
                **_ledger_headers(plan),
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            },
        )
        if keeps_after:
            streamed.after_close = lambda: _after_answer(
                plan, learn=relay.completed, request_id=request_id, answer=lambda: relay.assistant_text
            )
        return streamed

    if plan.stream:  # an error answer to a streaming request: relay it whole
        try:
            await upstream.aread()
        except TRANSPORT_ERRORS as exc:
            return _error(failure_from(exc, plan.provider))
        finally:
            await upstream.aclose()
    content = upstream.content
    response = _Response(
        content,
        status=upstream.status_code,
        content_type=content_type,
        headers={**passed_headers(upstream), **_ledger_headers(plan)},
    )
    if keeps_after:
        response.after_close = lambda: _after_answer(
            plan,
            learn=upstream.status_code == 200,
            request_id=request_id,
            answer=lambda: _answer_text(content),
        )
    return response


@csrf_exempt
@guarded
async def embeddings(request: HttpRequest) -> HttpResponseBase:
    """``POST /v1/embeddings``, proxied to the provider that serves the model (routed as a chat's
    model is, renamed for the provider); no memory applies. Upstream statuses and bodies pass through;
    no upstream answer gives 504 (timeout) or 502."""
    if request.method != "POST":
        return _method_not_allowed("POST")
    try:
        raw_body = request.body
    except RequestDataTooBig:
        return openai_error("The request body is too large", status=413, code="request_too_large")
    try:
        plan = await run_db(
            prepare_embeddings,
            authorization=request.headers.get("Authorization"),
            raw_body=raw_body,
            client_ip=request_ip(request.META),
        )
        upstream = await send_embeddings(plan.provider, plan.payload)
    except (GatewayError, UpstreamFailure) as exc:
        return _error(exc)
    return HttpResponse(
        upstream.content,
        status=upstream.status_code,
        content_type=upstream.headers.get("content-type", "application/json"),
        headers=passed_headers(upstream),
    )


def _model_json(model_id: str, provider: UpstreamProvider) -> dict:
    return {
        "id": model_id,
        "object": "model",
        "created": int(provider.created_at.timestamp()),
        "owned_by": provider.name,
    }


async def _listed_models() -> list[dict]:
    """Each enabled provider's configured model ids, or, when it has none configured, what its
    upstream's ``/models`` reports (prefixed back when the provider strips its prefix; an upstream that
    cannot answer lists nothing). An id listed by several providers appears once, under the first
    provider in default-then-name order."""
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
            if model_id not in seen:
                seen.add(model_id)
                data.append(_model_json(model_id, provider))
    return data


@csrf_exempt
@guarded
async def models(request: HttpRequest) -> JsonResponse:
    """``GET /v1/models``: the models of the configured providers (see :func:`_listed_models`)."""
    if request.method != "GET":
        return _method_not_allowed("GET")
    try:
        await run_db(authenticate, request.headers.get("Authorization"), request_ip(request.META))
    except GatewayError as exc:
        return _error(exc)
    return JsonResponse({"object": "list", "data": await _listed_models()})


@csrf_exempt
@guarded
async def model_detail(request: HttpRequest, model_id: str) -> JsonResponse:
    """``GET /v1/models/<id>``: one model of :func:`models`' list; an OpenAI 404 for any other id."""
    if request.method != "GET":
        return _method_not_allowed("GET")
    try:
        await run_db(authenticate, request.headers.get("Authorization"), request_ip(request.META))
    except GatewayError as exc:
        return _error(exc)
    for model in await _listed_models():
        if model["id"] == model_id:
            return JsonResponse(model)
    return openai_error(
        f"The model {model_id!r} does not exist", status=404, code="model_not_found", param="model"
    )


@csrf_exempt
@guarded
async def unknown_route(request: HttpRequest, path: str = "") -> JsonResponse:
    """Any other ``/v1/`` path: an OpenAI-shaped 404 (the SDKs raise ``NotFoundError`` on it), not the
    REST API's envelope."""
    return openai_error(f"Unknown route: {request.method} {request.path}", status=404, code="unknown_url")
