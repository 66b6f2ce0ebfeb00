"""The synchronous half of a chat request: authenticate, validate, route, recall and inject.

Everything here touches the database, so the async view runs :func:`prepare_chat` in one
``sync_to_async`` hop. The memory rules themselves live in ``memory`` (retrieval engine, injection,
extraction service); this module only wires them to the request.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction

from gateway.models import UpstreamProvider
from gateway.providers import enabled_providers, select_provider
from memory import strictjson
from memory.backends.base import BackendUnavailable
from memory.conf import get_memory_settings
from memory.injection import format_memories, inject_memory, last_user_query, should_inject_memory
from memory.models import ApiKey
from memory.retrieval.chat import retrieve_for_chat
from memory.services.auth import Unauthenticated, authenticate_api_key, bearer_secret
from memory.services.extraction import user_text_from_request
from memory.services.ledger import LedgerDraft, ledger_draft
from memory.services.throttle import Throttled

logger = logging.getLogger("gateway.chat")

NO_MEMORY_HEADER = "x-omniroute-no-memory"
NO_LEARN_HEADER = "x-omniroute-no-learn"  # inject what is known, learn nothing from this exchange
SESSION_HEADER = "x-omniroute-session-id"
NO_MEMORY_VALUES = frozenset({"true", "1", "yes"})


class GatewayError(Exception):
    """A request the gateway answers itself, with an OpenAI-format error."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        type_: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message, self.status, self.type, self.code, self.param = message, status, type_, code, param
        self.headers = headers or {}


@dataclass
class ExtractionContext:
    """What the extraction task needs once the answer is known."""

    owner_id: str
    session_id: str
    user_text: str


@dataclass
class ChatPlan:
    """A validated request, ready to forward."""

    api_key: ApiKey
    provider: UpstreamProvider
    payload: bytes
    stream: bool
    injected: int
    extraction: ExtractionContext | None
    # The injection ledger entry of this answer (None: nothing injected, or the ledger is off); its id
    # is the ``x-omniroute-injection-id`` header.
    ledger: LedgerDraft | None = None


def authenticate(authorization: str | None, client_ip: str = "") -> ApiKey:
    """The active key named by ``Authorization: Bearer <secret>``; :class:`GatewayError` 401 otherwise,
    429 with ``Retry-After`` while ``client_ip`` or the key's prefix is locked out after failures.

    The check and the once-a-minute ``last_used_at`` are :func:`memory.services.auth.authenticate_api_key`'s.
    """
    secret = bearer_secret(authorization)
    if secret is None:
        raise GatewayError(
            "Missing API key: send Authorization: Bearer <key>", status=401, code="invalid_api_key"
        )
    try:
        key, _principal = authenticate_api_key(secret, client_ip=client_ip)
    except Unauthenticated as exc:
        raise GatewayError(exc.message, status=401, code="invalid_api_key") from None
    except Throttled as exc:
        raise GatewayError(
            exc.message,
            status=429,
            type_=exc.type,
            code="rate_limit_exceeded",
            headers={"Retry-After": str(exc.retry_after)},
        ) from None
    return key


def parse_body(raw: bytes) -> dict[str, Any]:
    """The JSON request, checked for what the gateway relies on (see :func:`validate_body`)."""
    try:
        body = strictjson.loads(raw)
    except strictjson.NumberOutOfRange as exc:
        raise GatewayError(
            f"Invalid JSON: {exc}", status=400, code="invalid_value", param=exc.field
        ) from None
    except (strictjson.LoneSurrogate, strictjson.NestingTooDeep) as exc:
        # Either would fail later, unanswered: encoding the upstream request, or recursing through it.
        raise GatewayError(
            f"Invalid JSON: {exc}", status=400, code="invalid_value", param=exc.field or None
        ) from None
    except (ValueError, UnicodeDecodeError):
        raise GatewayError("The request body is not valid JSON", status=400, code="invalid_json") from None
    return validate_body(body)


def validate_body(body: Any) -> dict[str, Any]:
    """``body`` if it is an object with what the gateway relies on (``model``, ``messages``, ``stream``)."""
    if not isinstance(body, dict):
        raise GatewayError("The request body must be a JSON object", status=400, code="invalid_json")
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        code = "missing_required_parameter" if model is None else "invalid_type"
        raise GatewayError("'model' must be a non-empty string", status=400, code=code, param="model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        code = "missing_required_parameter" if messages is None else "invalid_type"
        raise GatewayError("'messages' must be a non-empty array", status=400, code=code, param="messages")
    if not all(isinstance(m, dict) for m in messages):
        raise GatewayError(
            "Each message must be an object", status=400, code="invalid_type", param="messages"
        )
    if not isinstance(body.get("stream", False), bool):
        raise GatewayError("'stream' must be a boolean", status=400, code="invalid_type", param="stream")
    return body


def _flag(headers: Mapping[str, str], name: str) -> bool:
    return (headers.get(name) or "").strip().lower() in NO_MEMORY_VALUES


@dataclass
class RoutedChat:
    """A chat request routed to its provider, with the key's memories injected when memory applies."""

    provider: UpstreamProvider
    body: dict[str, Any]  # what goes upstream: memories injected, model renamed for the provider
    memory_on: bool  # the settings enable memory (``enabled`` and a token budget)
    learning_on: bool  # memory on and the settings' ``learningEnabled``
    recalled: bool  # retrieval ran for this request (memory on, a conversation to inject into)
    injected: bool  # a memory message was really added (retrieval found something to inject)
    target: str  # the provider id whose role rules placed the memory message
    query: str
    memories: list = field(default_factory=list)
    resolution: dict = field(default_factory=dict)
    hits: list = field(default_factory=list)  # the retrieval's hits, in the order injected
    latency_ms: float = 0.0  # how long the recall took
    system_message: str = ""  # the memory message's text, exactly as injected ("" when none was)


def route_model(model: str) -> UpstreamProvider:
    """The enabled provider that serves ``model``; :class:`GatewayError` 503 when none is configured,
    404 when none serves it."""
    providers = enabled_providers()
    if not providers:
        raise GatewayError(
            "No upstream provider is configured: set UPSTREAM_BASE_URL or add one in the admin",
            status=503,
            type_="upstream_error",
            code="upstream_not_configured",
        )
    provider = select_provider(model, providers)
    if provider is None:
        raise GatewayError(
            f"No upstream provider serves the model {model!r}",
            status=404,
            code="model_not_found",
            param="model",
        )
    return provider


def route_and_inject(
    *,
    api_key: ApiKey,
    body: dict[str, Any],
    session_id: str | None,
    use_memory: bool = True,
    touch: bool = True,
) -> RoutedChat:
    """Choose the provider for ``body["model"]`` and inject ``api_key``'s memories:
    the part of a chat request that the gateway and the Studio's injection preview share.

    ``body`` must have passed :func:`validate_body`. Raises :class:`GatewayError` when no enabled
    provider serves the model. Memory never fails a chat: unreadable settings, a failing recall or a
    key's memory provider that is down (``resolution["provider"]`` names it) are logged and the request
    goes on without memory (``resolution["error"]`` says so).
    ``touch=False`` leaves access counters alone (previews).
    """
    model = body["model"]
    provider = route_model(model)
    upstream_model = provider.upstream_model(model)
    target, roles = provider.injection_target(upstream_model)
    routed = RoutedChat(
        provider=provider,
        body=body,
        memory_on=False,
        learning_on=False,
        recalled=False,
        injected=False,
        target=target,
        query=last_user_query(body),
    )
    settings = None
    if use_memory:
        try:
            settings = get_memory_settings()
        except Exception:
            logger.exception("gateway.memory.settings_failed")
            routed.resolution = {"error": "memory settings could not be read"}
    routed.memory_on = settings is not None and settings.injection_enabled
    routed.learning_on = settings is not None and settings.learning_active
    if routed.memory_on and should_inject_memory(body, enabled=True):
        try:
            started = time.perf_counter()
            # Inside a caller's transaction (the Studio's preview), a savepoint: on PostgreSQL a failed
            # query aborts the whole transaction, and the caller still has to answer. Not otherwise:
            # SQLite's write transactions take its one write lock.
            with transaction.atomic() if connection.in_atomic_block else nullcontext():
                result = retrieve_for_chat(
                    api_key=api_key, query=routed.query, session_id=session_id, settings=settings, touch=touch
                )
            routed.latency_ms = (time.perf_counter() - started) * 1000
            routed.body = inject_memory(body, result.memories, target, roles=roles)
            routed.memories, routed.resolution = list(result.memories), dict(result.resolution)
            routed.hits = list(result.hits)
            routed.recalled = True
            # inject_memory returns an unchanged copy when there is nothing to say.
            routed.injected = routed.body != body
            # The text inject_memory inserted (or, for system-first providers, put at the head of
            # the first system message): the same function of the same memories.
            routed.system_message = format_memories(result.memories) if routed.injected else ""
        except BackendUnavailable as exc:
            # The key's memory provider and its fallbacks are down: an outage, not a bug (no traceback).
            logger.warning(
                "gateway.memory.provider_unavailable",
                extra={"api_key": str(api_key.pk), "model": model, "backend": exc.backend},
            )
            routed.resolution = {
                "error": "recall skipped: the key's memory provider is unavailable",
                "provider": exc.backend or None,
            }
        except Exception as exc:
            logger.exception(
                "gateway.memory.recall_failed", extra={"api_key": str(api_key.pk), "model": model}
            )
            routed.resolution = {"error": f"recall failed: {type(exc).__name__}"}
    if upstream_model != model:
        routed.body = {**routed.body, "model": upstream_model}
    return routed


def prepare_chat(
    *, authorization: str | None, raw_body: bytes, headers: Mapping[str, str], client_ip: str = ""
) -> ChatPlan:
    """Authenticate, validate, choose the provider and inject memory; raise :class:`GatewayError`.

    Memory (recall and, later, extraction) applies when the key did not send ``x-omniroute-no-memory``
    and the settings enable it (``enabled`` and ``maxTokens > 0``); see :func:`route_and_inject`.
    Extraction also needs ``learningEnabled`` and no ``x-omniroute-no-learn`` header.
    """
    api_key = authenticate(authorization, client_ip)
    body = parse_body(raw_body)
    header_session = (headers.get(SESSION_HEADER) or "").strip() or None
    routed = route_and_inject(
        api_key=api_key, body=body, session_id=header_session, use_memory=not _flag(headers, NO_MEMORY_HEADER)
    )
    extraction = None
    if routed.learning_on and not _flag(headers, NO_LEARN_HEADER):
        # Without the session header each exchange gets its own session id, as in the original.
        extraction = ExtractionContext(
            owner_id=str(api_key.pk),
            session_id=header_session or str(uuid.uuid4()),
            # From the request as sent: an injected user-role memory message is not the user's text.
            user_text=user_text_from_request(body),
        )
    ledger = None
    if routed.injected:
        ledger = ledger_draft(
            api_key_id=api_key.pk,
            session_id=header_session,
            model=body["model"],
            hits=routed.hits,
            resolution=routed.resolution,
            latency_ms=routed.latency_ms,
            system_message=routed.system_message,
            query=routed.query,
        )
    return ChatPlan(
        api_key=api_key,
        provider=routed.provider,
        payload=json.dumps(routed.body, ensure_ascii=False).encode(),
        stream=routed.body.get("stream") is True,
        injected=len(routed.memories),
        extraction=extraction,
        ledger=ledger,
    )


@dataclass
class EmbeddingsPlan:
    """A validated embeddings request, ready to forward."""

    provider: UpstreamProvider
    payload: bytes


def _valid_embedding_input(value: Any) -> bool:
    # OpenAI's forms: a string, a list of strings, a list of token ids, a list of token id lists.
    if isinstance(value, str):
        return True
    if not isinstance(value, list) or not value:
        return False
    if all(isinstance(item, str) for item in value):
        return True
    if all(isinstance(item, int) and not isinstance(item, bool) for item in value):
        return True
    return all(
        isinstance(item, list) and item and all(isinstance(t, int) and not isinstance(t, bool) for t in item)
        for item in value
    )


def prepare_embeddings(*, authorization: str | None, raw_body: bytes, client_ip: str = "") -> EmbeddingsPlan:
    """Authenticate and validate ``POST /v1/embeddings`` and choose its provider (as a chat's model is
    routed); no memory applies. Raises :class:`GatewayError`."""
    authenticate(authorization, client_ip)
    try:
        body = strictjson.loads(raw_body)
    except (strictjson.NumberOutOfRange, strictjson.LoneSurrogate, strictjson.NestingTooDeep) as exc:
        raise GatewayError(
            f"Invalid JSON: {exc}", status=400, code="invalid_value", param=exc.field or None
        ) from None
    except (ValueError, UnicodeDecodeError):
        raise GatewayError("The request body is not valid JSON", status=400, code="invalid_json") from None
    if not isinstance(body, dict):
        raise GatewayError("The request body must be a JSON object", status=400, code="invalid_json")
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        code = "missing_required_parameter" if model is None else "invalid_type"
        raise GatewayError("'model' must be a non-empty string", status=400, code=code, param="model")
    if "input" not in body:
        raise GatewayError(
            "'input' is required", status=400, code="missing_required_parameter", param="input"
        )
    if not _valid_embedding_input(body["input"]):
        raise GatewayError(
            "'input' must be a string, an array of strings, or an array of token ids",
            status=400,
            code="invalid_type",
            param="input",
        )
    provider = route_model(model)
    upstream_model = provider.upstream_model(model)
    if upstream_model != model:
        body = {**body, "model": upstream_model}
    return EmbeddingsPlan(provider=provider, payload=json.dumps(body, ensure_ascii=False).encode())
