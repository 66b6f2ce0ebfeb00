"""The Engine tab: the status panel (polled), reindex, the embedding and rerank controls, the Qdrant card
and the activity charts."""

from __future__ import annotations

import logging

from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.http import require_POST

from dashboard import charts
from dashboard.forms import EngineSettingsForm
from dashboard.owners import OwnerScope, owner_scope
from dashboard.views.base import (
    ENGINE_CHANGED_EVENT,
    PAGE,
    can_change_settings,
    form_reply,
    page_url,
    require_settings_admin,
    studio_view,
)
from gateway.models import UpstreamProvider
from memory.api.views_qdrant import QdrantSettingsSerializer
from memory.backends.base import BackendError
from memory.conf import get_memory_settings, update_memory_settings
from memory.embeddings.catalog import EMBEDDERS
from memory.embeddings.runtime import local_model_built, readable_provider_key, resolve
from memory.qdrant_conf import get_qdrant_settings, update_qdrant_settings
from memory.retrieval import cross_encoder
from memory.retrieval.rerank import LOCAL_RERANK, RERANK_DEPTH
from memory.services.audit import Actor, user_actor
from memory.services.indexing import reindex_start
from memory.services.qdrant import qdrant_check, qdrant_cleanup, qdrant_search
from memory.status import embedding_providers, engine_status

logger = logging.getLogger("dashboard")

EMBEDDING_SOURCES = (
    ("auto", "Automatic", "Remote provider › transformers › static"),
    ("remote", "Remote provider", "An OpenAI-compatible /embeddings endpoint"),
    ("static", "Static local", "Distilled lookup table, sub-millisecond"),
    ("transformers", "Transformers", "A local model on ONNX Runtime (bge-small or MiniLM)"),
)
QDRANT_FIELDS = ("host", "port", "collection", "quantization")


# ---------------------------------------------------------------- the status panel


def status_context() -> dict:
    """The status panel (``engine-status``): ``engine_status`` as rows, or why it failed."""
    try:
        status = engine_status()
    except Exception as exc:  # a failing probe is shown in the panel, not a 500
        logger.exception("engine status failed")
        return {"status_error": f"Engine status failed: {exc}"}
    return {
        "status": status,
        "status_rows": status_rows(status),
        "status_pending": (status.get("vectorStore") or {}).get("needsReindex", 0),
    }


def status_rows(status: dict) -> list[dict]:
    """The rows of the status panel: a dot state (ok / warn / error / unknown) and a sentence each."""
    keyword = status.get("keyword") or {}
    embedding = status.get("embedding") or {}
    store = status.get("vectorStore") or {}
    qdrant = status.get("qdrant") or {}
    rerank = status.get("rerank") or {}
    rows = [
        {
            "name": "Keyword (FTS5)",
            "state": "ok" if keyword.get("available") else "error",
            "text": "Keyword search available"
            if keyword.get("available")
            else keyword.get("reason", "unavailable"),
        },
        _embedding_row(embedding),
    ]
    backend = store.get("backend") or "none"
    pending = store.get("needsReindex") or 0
    warning = f"{pending} memor{'y needs' if pending == 1 else 'ies need'} reindexing" if pending else None
    if store.get("stale"):
        rows.append(
            {
                "name": "Vector store",
                "state": "warn",
                "text": f"{backend} · stale index: holds {store.get('signature')}, "
                f"should hold {store.get('expectedSignature')}",
                "hint": "Keyword search only until the reindex rebuilds it.",
                "warning": warning,
            }
        )
    else:
        rows.append(
            {
                "name": "Vector store",
                "state": "ok" if store.get("available") else ("unknown" if backend == "none" else "error"),
                "text": (
                    f"{backend} · {store.get('rowCount', 0)} vectors"
                    if store.get("available")
                    else store.get("reason") or backend
                ),
                "warning": warning,
            }
        )
    int8 = store.get("int8Scan") or {}
    if int8.get("exact") is not None:
        rows.append(
            {
                "name": "Int8 pre-scan",
                "state": "ok" if int8["exact"] else "warn",
                "text": f"Exact kernel, owners of {int8['minRows']:,}+ vectors"
                if int8["exact"]
                else "Off: this CPU's int8 kernel failed its self-check; vectors are scanned in float32",
                "hint": int8.get("reason"),
            }
        )
    circuit = qdrant.get("circuit") or {}
    if not qdrant.get("enabled"):
        rows.append({"name": "Qdrant", "state": "unknown", "text": "Disabled", "configure": "qdrant-card"})
    elif circuit.get("state") in ("open", "half_open"):
        rows.append(
            {
                "name": "Qdrant",
                "state": "error",
                "text": f"Circuit open: {circuit.get('lastFailure') or 'failing'}",
                "hint": _fallback_hint(qdrant.get("fallback"), circuit),
                "configure": "qdrant-card",
            }
        )
    elif qdrant.get("healthy"):
        rows.append({"name": "Qdrant", "state": "ok", "text": f"Healthy ({qdrant.get('latencyMs')}ms)"})
    else:
        rows.append(
            {
                "name": "Qdrant",
                "state": "error",
                "text": qdrant.get("error") or "Unhealthy",
                "hint": f"Searches use {qdrant['fallback']}." if qdrant.get("fallback") else None,
                "configure": "qdrant-card",
            }
        )
    if not rerank.get("enabled"):
        rows.append({"name": "Rerank", "state": "unknown", "text": "Disabled", "configure": "rerank-card"})
    else:
        rows.append(
            {
                "name": "Rerank",
                "state": "ok" if rerank.get("available") else "error",
                "text": rerank.get("reason") or "",
                "configure": None if rerank.get("available") else "rerank-card",
            }
        )
    queue = status.get("queue")
    if queue:
        rows.append(_queue_row(queue))
    return rows


def _queue_row(queue: dict) -> dict:
    """The background queue: down (writes are kept, their indexing waits), recovering, or fine."""
    name = f"Task queue ({queue.get('backend')})"
    if not queue.get("reachable"):
        return {"name": name, "state": "error", "text": "Down: " + (queue.get("reason") or "no answer")}
    pending = queue.get("pending") or 0
    text = f"{pending} task{'' if pending == 1 else 's'} waiting" if not queue.get("immediate") else "Inline"
    failed = queue.get("failedHandoffs") or 0
    return {
        "name": name,
        "state": "warn" if failed else "ok",
        "text": text,
        "warning": f"{failed} hand-offs failed: {queue.get('lastError')}" if failed else None,
    }


def _embedding_row(embedding: dict) -> dict:
    """The Embedding row: the source, and a remote source's circuit when its calls fail."""
    if not embedding.get("available"):
        return {
            "name": "Embedding",
            "state": "unknown",
            "text": embedding.get("reason") or "No embedding source",
            "configure": "embedding-card",
        }
    text = f"{embedding.get('source')} · {embedding.get('model')}" + (
        f" · {embedding['dimensions']}d" if embedding.get("dimensions") else ""
    )
    circuit = embedding.get("circuit") or {}
    if circuit.get("state") in ("open", "half_open"):
        return {
            "name": "Embedding",
            "state": "error",
            "text": f"{text} · circuit open: {circuit.get('lastFailure') or 'failing'}",
            "hint": _fallback_hint(embedding.get("fallback"), circuit),
            "configure": "embedding-card",
        }
    if circuit.get("failures"):
        return {
            "name": "Embedding",
            "state": "warn",
            "text": f"{text} · last call failed at {circuit.get('lastFailureAt')}: {circuit.get('lastFailure')}",
            "hint": f"That request used {embedding.get('fallback')}; the circuit opens after "
            f"{circuit.get('threshold')} failures in a row ({circuit.get('failures')} so far).",
        }
    return {"name": "Embedding", "state": "ok", "text": text, "hint": embedding.get("reason")}


def _fallback_hint(fallback: str | None, circuit: dict) -> str:
    """What an open circuit means for searches, in a sentence."""
    uses = f"Searches use {fallback}" if fallback else "Calls are refused"
    since = f"{circuit.get('failures')} failures in a row, since {circuit.get('openedAt')}"
    retry = f"; next try at {circuit['retryAt']}" if circuit.get("retryAt") else "; a trial is running"
    return f"{uses} ({since}){retry}."


# ---------------------------------------------------------------- the tab


def engine_context(request, scope: OwnerScope) -> dict:
    """The Engine tab as a whole."""
    settings = get_memory_settings()
    providers = embedding_providers()
    remote_models = [
        {**model, "label": f"{provider['provider']} · {model['name']} ({model.get('dimensions') or '?'}d)"}
        for provider in providers
        if provider.get("hasKey") and provider.get("provider") != "local"
        for model in provider.get("models", [])
    ]
    rerank_provider, _, rerank_model = (settings.rerankProviderModel or "").partition("/")
    context = {
        "scope": scope,
        "memory_settings": settings,
        "can_change_settings": can_change_settings(scope.principal),
        "embedding_sources": EMBEDDING_SOURCES,
        "remote_models": remote_models,
        "rerank_upstreams": [p for p in UpstreamProvider.objects.all() if readable_provider_key(p)],
        "rerank_provider": rerank_provider,
        "rerank_model": rerank_model,
        "transformers_models": [
            {"value": "auto", "label": "Automatic: the best local model built", "built": True},
            *(
                {"value": m.name, "label": m.label, "built": local_model_built(m.name)}
                for m in EMBEDDERS.values()
            ),
        ],
        "local_rerank": {"ref": LOCAL_RERANK, "depth": RERANK_DEPTH, "built": cross_encoder.built()},
        **status_context(),
    }
    context["qdrant"] = _qdrant_card_settings((context.get("status") or {}).get("embedding"))
    context["qdrant_healthy"] = bool(((context.get("status") or {}).get("qdrant") or {}).get("healthy"))
    if not scope.is_empty:
        try:
            activity = charts.owner_activity(
                principal=scope.principal, owner_ids=scope.principal.owner_filter(scope.api_key_id)
            )
        except BackendError as exc:  # a key's provider down: the charts say so, the tab still shows
            context["activity_error"] = exc.message
            return context
        context.update(
            {
                "activity": activity,
                "chart_days": charts.per_day_svg(activity),
                "chart_types": charts.per_type_svg(activity),
            }
        )
    return context


@studio_view
@require_POST
def engine_reindex(request):
    scope = owner_scope(request)
    require_settings_admin(scope)
    force = request.POST.get("force") in ("1", "true", "on")
    context = {"scope": scope, "reindex_pending": reindex_start(force=force)}
    return form_reply(request, back=page_url(scope, "engine"), region="reindex-result", context=context)


@studio_view
@require_POST
def engine_settings(request):
    """Embedding source, local sources, rerank: each control saves at once."""
    scope = owner_scope(request)
    require_settings_admin(scope)
    form = EngineSettingsForm(request.POST)
    error = None
    if form.is_valid():
        update_memory_settings(form.changes, actor=user_actor(request.user, via="studio"))
    else:
        error = " ".join(form.non_field_errors())
    response = form_reply(
        request,
        back=page_url(scope, "engine"),
        region="engine-settings",
        context=lambda: {**engine_context(request, scope), "settings_error": error},
        events={ENGINE_CHANGED_EVENT: {}} if error is None else None,
    )
    if request.htmx and error is None:
        # The Qdrant card's "Points embedded by" follows the embedding source: swapped out of band.
        context = {"qdrant": {"embedding": _points_embedding(None)}, "oob": True}
        response.content += render_to_string(f"{PAGE}#qdrant-embedding", context, request).encode()
    return response


# ---------------------------------------------------------------- the Qdrant card


def _qdrant_card_settings(embedding: dict | None = None) -> dict:
    """The public Qdrant settings (API key masked) and what embeds the points (``_points_embedding``)."""
    cfg = get_qdrant_settings()
    return {**cfg.as_public_dict(), "active": cfg.active, "embedding": _points_embedding(embedding)}


def _points_embedding(embedding: dict | None) -> dict:
    """What embeds Qdrant's points: the memory embedding source, there being no Qdrant model setting.

    ``embedding`` is the status panel's (``engine_status()["embedding"]``) when the page has it; a card
    re-rendered on its own resolves the source the same way, without the panel's probes.
    """
    if embedding is None:
        resolution = resolve(get_memory_settings())
        embedding = {
            "available": resolution.available,
            "source": resolution.source,
            "model": resolution.model,
            "reason": resolution.reason,
        }
    return {name: embedding.get(name) for name in ("available", "source", "model", "reason")}


def _qdrant_test() -> dict:
    """``GET /api/settings/qdrant/health``'s answer, in words for a person when Qdrant is not set up."""
    check = qdrant_check()
    if not check.configured:
        return {"ok": False, "latencyMs": 0, "error": "not configured (enable Qdrant and set a host)"}
    return check.as_dict()


def _qdrant_changes(post) -> dict:
    """The fields a Qdrant save sends (the original sends them all with every save)."""
    changes = {name: post.get(name, "").strip() for name in QDRANT_FIELDS if name in post}
    if "port" in changes:
        try:
            changes["port"] = int(changes["port"])
        except ValueError:
            pass  # the serializer reports it
    if post.get("apiKey"):
        changes["apiKey"] = post["apiKey"]
    return changes


def _qdrant_save(changes: dict, *, actor: Actor) -> dict:
    """Validate ``changes`` with the API's serializer and store them; the errors by field, if any."""
    serializer = QdrantSettingsSerializer(data=changes)
    if not serializer.is_valid():
        return {name: [str(m) for m in messages] for name, messages in serializer.errors.items()}
    update_qdrant_settings(dict(serializer.validated_data), actor=actor)
    return {}


def _qdrant_card_context(request, context: dict, errors: dict) -> dict:
    if errors:
        context.update(
            {
                "qdrant": {**_qdrant_card_settings(), **{k: request.POST.get(k, "") for k in QDRANT_FIELDS}},
                "qdrant_errors": errors,
            }
        )
    else:
        context.update({"qdrant": _qdrant_card_settings(), "qdrant_saved": True})
    if context["qdrant"].get("active"):
        context["qdrant_healthy"] = qdrant_check().ok
    context["memory_settings"] = get_memory_settings()
    return context


@studio_view
@require_POST
def engine_qdrant(request):
    """The Qdrant card: save, enable, remove the key (admins); test, cleanup (admins); search (read)."""
    scope = owner_scope(request)
    action = request.POST.get("action", "save")
    context = {"scope": scope, "can_change_settings": can_change_settings(scope.principal)}
    if action == "search":
        query = (request.POST.get("query") or "").strip()[:8000]
        context["search"] = (
            qdrant_search(query=query, top_k=5, owner_ids=scope.principal.owner_filter(scope.api_key_id))
            if query
            else {"ok": False, "results": [], "error": "Type something to search for."}
        )
        return render(request, f"{PAGE}#qdrant-search-result", context)
    require_settings_admin(scope)
    if action == "test":
        context["probe"] = _qdrant_test()
        return render(request, f"{PAGE}#qdrant-test-result", context)
    if action == "cleanup":
        context["cleanup"] = qdrant_cleanup().as_dict()
        return render(request, f"{PAGE}#qdrant-cleanup-result", context)
    changes = _qdrant_changes(request.POST)
    if action == "toggle":
        changes["enabled"] = request.POST.get("enabled") == "true"
    elif action == "remove-key":
        changes = {"apiKey": ""}
    errors = _qdrant_save(changes, actor=user_actor(request.user, via="studio"))
    return form_reply(
        request,
        back=page_url(scope, "engine"),
        region="qdrant-card",
        context=lambda: _qdrant_card_context(request, context, errors),
        events={ENGINE_CHANGED_EVENT: {}},
    )
