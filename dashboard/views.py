"""The Memory Studio: thin views over memory's services and selectors.

One template per page (``dashboard/memory.html``, ``dashboard/settings.html``);
an htmx request for a region gets ``"page.html#region"`` only. Every link and
form also works without JavaScript (full page, POST then redirect).
"""

from __future__ import annotations

import json
import logging
from functools import wraps
from urllib.parse import urlencode

from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.handlers.asgi import ASGIRequest
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect, trigger_client_event

from dashboard import charts, engine
from dashboard.forms import (
    DEFAULT_CHAT_REQUEST,
    STRATEGY_LABELS,
    CompactForm,
    EngineSettingsForm,
    ImportForm,
    InjectionForm,
    MemoryForm,
    SandboxForm,
    SettingsForm,
)
from dashboard.imports import ImportFileError, import_memories
from dashboard.owners import OwnerScope, owner_scope, write_owner
from gateway.chat import GatewayError
from memory import selectors
from memory.bounds import MAX_POSITION
from memory.conf import get_memory_settings, update_memory_settings
from memory.exceptions import Conflict, DomainError, NotFound
from memory.models import MemoryType
from memory.representation import memory_json
from memory.services.memories import MemoryInput, memory_create, memory_delete, memory_update

logger = logging.getLogger("dashboard")

PAGE = "dashboard/memory.html"
SETTINGS_PAGE = "dashboard/settings.html"
TABS = (("memories", "Memories"), ("sandbox", "Sandbox"), ("engine", "Engine"))
PAGE_SIZE = 20
EXPORT_PAGE_SIZE = 500
TYPE_HELP = {
    "factual": "Facts and preferences about the user",
    "episodic": "Events and experiences",
    "procedural": "How-to knowledge and habits",
    "semantic": "General knowledge and summaries",
    "short_term": "Short-lived context",
    "long_term": "Durable context",
    "entity": "People, places and things",
}
TIER_BADGES = {
    "fts5": "info",
    "vector": "success",
    "hybrid": "warning",
    "hybrid-rrf": "warning",
    "qdrant": "neutral",
    "recent": "neutral",
}
SETTINGS_STRATEGIES = (
    ("recent", "Recent", "Newest memories first, within the budget. No search."),
    ("keyword", "Keyword", "Full-text search (FTS5 bm25) alone."),
    ("semantic", "Semantic", "Nearest memories by meaning (needs an embedding source)."),
    ("hybrid", "Hybrid", "Keywords and meaning fused by their normalised scores; falls back to keywords."),
)
# Changing this event name means changing static/dashboard/studio.js too.
CHANGED_EVENT = "memory-changed"


def studio_view(view):
    """Staff only; an htmx request whose session expired is sent to the login page."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        user = request.user
        if not (user.is_authenticated and user.is_active and user.is_staff):
            if request.htmx:
                query = urlencode({"next": request.htmx.current_url_abs_path or reverse("dashboard:memory")})
                return HttpResponseClientRedirect(f"{django_settings.LOGIN_URL}?{query}")
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapper


def _int(value, default: int, *, lo: int, hi: int) -> int:
    """A page number from a link: out of range shows the nearest page, junk the default (a page, not a 400)."""
    try:
        return max(lo, min(hi, int(value)))
    except (TypeError, ValueError):
        return default


def _require_settings_admin(scope: OwnerScope) -> None:
    if not engine.principal_can_change_settings(scope.principal):
        raise PermissionDenied("Only administrators can change the memory settings.")


def _page_url(scope: OwnerScope, tab: str, **params) -> str:
    query = {"tab": tab, "owner": scope.param, **{k: v for k, v in params.items() if v not in (None, "")}}
    return f"{reverse('dashboard:memory')}?{urlencode(query)}"


def _changed(response: HttpResponse, *, close: str | None = None) -> HttpResponse:
    response = trigger_client_event(response, CHANGED_EVENT, {})
    if close:
        response = trigger_client_event(response, "close-dialog", {"id": close})
    return response


# ---------------------------------------------------------------- the page


@studio_view
@require_GET
def index(request):
    return redirect("dashboard:memory")


@studio_view
@require_GET
def memory_page(request):
    """The Studio. ``?tab=memories|sandbox|engine`` (unknown → memories), ``?owner=<id|all>``."""
    scope = owner_scope(request)
    tab = request.GET.get("tab", "memories")
    if tab not in dict(TABS):
        tab = "memories"
    target = request.htmx.target if request.htmx else None
    if target == "memory-list" and tab == "memories":
        return _render_list(request, scope)
    if target == "sandbox-results" and tab == "sandbox":
        return render(request, f"{PAGE}#sandbox-results", _sandbox_context(request, scope))
    if target == "engine-status" and tab == "engine":
        return render(request, f"{PAGE}#engine-status", _status_context())
    context = _shell_context(request, scope, tab)
    context.update(_TAB_CONTEXT[tab](request, scope))
    if target == "tab-panel":
        return render(request, f"{PAGE}#tab-panel", context)
    return render(request, PAGE, context)


def _shell_context(request, scope: OwnerScope, tab: str) -> dict:
    return {
        "scope": scope,
        "tab": tab,
        "tabs": [(name, label, _page_url(scope, name)) for name, label in TABS],
        "memory_settings": get_memory_settings(),
        "can_change_settings": engine.principal_can_change_settings(scope.principal),
        "types": [(value, label, TYPE_HELP.get(value, "")) for value, label in MemoryType.choices],
        "dialog": request.GET.get("dialog", ""),
    }


# ---------------------------------------------------------------- Memories tab


def _filters(request) -> dict:
    q = (request.GET.get("q") or "").strip()[:1000]
    type_ = request.GET.get("type") or ""
    if type_ not in MemoryType.values:
        type_ = ""
    return {"q": q, "type": type_, "page": _int(request.GET.get("page"), 1, lo=1, hi=MAX_POSITION)}


def _query_list(scope: OwnerScope, filters: dict) -> dict:
    return selectors.memory_list(
        principal=scope.principal,
        api_key_id=scope.api_key_id,
        type=filters["type"] or None,
        q=filters["q"] or None,
        page=filters["page"],
        limit=PAGE_SIZE,
    )


def _list_context(request, scope: OwnerScope, *, editing=None) -> dict:
    filters = _filters(request)
    context = {"scope": scope, "filters": filters, "editing": editing, "type_help": TYPE_HELP}
    if scope.is_empty:
        return context
    result = _query_list(scope, filters)
    if result["totalPages"] and filters["page"] > result["totalPages"]:
        filters["page"] = result["totalPages"]
        result = _query_list(scope, filters)
    return _finish_list_context(scope, filters, context, result)


def _finish_list_context(scope, filters, context, result) -> dict:
    for memory in result["data"]:
        _decorate(scope, memory)
    page, total_pages = result["page"], max(1, result["totalPages"])
    link = {"q": filters["q"], "type": filters["type"]}
    cache = engine.cache_stats()
    lookups = cache["hits"] + cache["misses"]
    context.update(
        {
            "result": result,
            "rows": result["data"],
            "total_pages": total_pages,
            "prev_url": _page_url(scope, "memories", page=page - 1, **link) if page > 1 else None,
            "next_url": _page_url(scope, "memories", page=page + 1, **link) if page < total_pages else None,
            "export_url": f"{reverse('dashboard:memory-export')}?"
            + urlencode({"owner": scope.param, **{k: v for k, v in link.items() if v}}),
            "stats": {
                "total": result["stats"]["total"],
                "tokens": f"{result['stats']['tokensUsed']:,}",
                "by_type": sorted(result["stats"]["byType"].items()),
                "hit_rate": f"{cache['hitRate'] * 100:.1f}" if lookups else None,
                "hits": cache["hits"],
                "misses": cache["misses"],
            },
            "filtered": bool(filters["q"] or filters["type"]),
        }
    )
    return context


def _memories_context(request, scope: OwnerScope) -> dict:
    context = _list_context(request, scope, editing=_editing(request))
    for memory in context.get("rows", []):
        if memory.uuid == context["editing"]:
            context["form"] = MemoryForm.for_memory(memory)
            context["form"].auto_id = f"edit_{memory.uuid.hex}_%s"
    context.update(
        {
            "add_form": MemoryForm(auto_id="add_%s"),
            "compact_form": CompactForm(auto_id="compact_%s"),
            "health": {"state": "unknown", "label": "Checking…", "title": "Not checked yet"},
            "health_initial": True,
        }
    )
    return context


def _editing(request):
    value = request.GET.get("edit")
    if not value:
        return None
    try:
        return selectors.parse_memory_id(value)
    except DomainError:
        return None


def _render_list(request, scope: OwnerScope, *, status: int = 200) -> HttpResponse:
    """The list region plus the counters and the export link, swapped out of band."""
    context = _list_context(request, scope)
    html = render_to_string(f"{PAGE}#memory-list", context, request)
    if not scope.is_empty:
        html += render_to_string(f"{PAGE}#memory-stats", {**context, "oob": True}, request)
        html += render_to_string(f"{PAGE}#export-link", {**context, "oob": True}, request)
    return HttpResponse(html, status=status)


@studio_view
@require_POST
def memory_add(request):
    scope = owner_scope(request)
    form = MemoryForm(request.POST, auto_id="add_%s")
    saved = None
    if form.is_valid():
        try:
            owner = write_owner(request, scope)
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            data = form.validated
            saved, created = memory_create(
                MemoryInput(
                    owner=owner, type=data.get("type") or "factual", key=data["key"], content=data["content"]
                )
            )
            if not request.htmx:
                return redirect(_page_url(scope, "memories"))
            response = render(
                request,
                f"{PAGE}#add-form",
                {
                    "scope": scope,
                    "add_form": MemoryForm(auto_id="add_%s"),
                    "saved": saved,
                    "created": created,
                },
            )
            return _changed(response, close="add-dialog")
    if not request.htmx:
        context = _shell_context(request, scope, "memories")
        context.update(_memories_context(request, scope))
        context.update({"add_form": form, "dialog": "add"})
        return render(request, PAGE, context, status=400)
    return render(request, f"{PAGE}#add-form", {"scope": scope, "add_form": form, "saved": saved})


def _memory_or_404(scope: OwnerScope, memory_id):
    try:
        memory = selectors.memory_get(principal=scope.principal, memory_id=memory_id)
    except NotFound:
        raise Http404("Memory not found") from None
    return _decorate(scope, memory)


def _decorate(scope: OwnerScope, memory):
    """What a row shows besides the model fields: the owner's name and the type's description."""
    memory.owner_name = scope.name_of(memory.owner_id)
    memory.type_help = TYPE_HELP.get(memory.type, "")
    return memory


def _row_context(scope: OwnerScope, memory, **extra) -> dict:
    return {"scope": scope, "m": memory, "type_help": TYPE_HELP, **extra}


@studio_view
@require_GET
def memory_row(request, memory_id):
    scope = owner_scope(request)
    memory = _memory_or_404(scope, memory_id)
    return render(request, f"{PAGE}#memory-row", _row_context(scope, memory))


@studio_view
@require_http_methods(["GET", "POST"])
def memory_edit(request, memory_id):
    """Inline edit: GET gives the edit row, POST saves it (metadata JSON validated like the API)."""
    scope = owner_scope(request)
    memory = _memory_or_404(scope, memory_id)
    if request.method == "GET":
        if not request.htmx:
            return redirect(_page_url(scope, "memories", edit=str(memory.uuid)))
        form = MemoryForm.for_memory(memory)
        form.auto_id = f"edit_{memory.uuid.hex}_%s"
        return render(request, f"{PAGE}#memory-row-edit", _row_context(scope, memory, form=form))
    form = MemoryForm.for_memory(memory, data=request.POST)
    form.auto_id = f"edit_{memory.uuid.hex}_%s"
    if form.is_valid():
        try:
            memory = memory_update(memory, **form.validated)
        except Conflict as exc:
            form.add_error("key", exc.message)
        else:
            if not request.htmx:
                return redirect(_page_url(scope, "memories"))
            _decorate(scope, memory)
            return _changed(render(request, f"{PAGE}#memory-row", _row_context(scope, memory)))
    if not request.htmx:
        context = _shell_context(request, scope, "memories")
        context.update(_memories_context(request, scope))
        context.update({"editing": memory.uuid, "form": form})
        return render(request, PAGE, context, status=400)
    return render(request, f"{PAGE}#memory-row-edit", _row_context(scope, memory, form=form))


@studio_view
@require_http_methods(["GET", "POST"])
def memory_delete_view(request, memory_id):
    """GET: a confirmation page (no JavaScript); POST: delete."""
    scope = owner_scope(request)
    memory = _memory_or_404(scope, memory_id)
    if request.method == "GET":
        return render(
            request,
            "dashboard/confirm_delete.html",
            {"scope": scope, "m": memory, "back": _page_url(scope, "memories")},
        )
    memory_delete(memory)
    if not request.htmx:
        return redirect(_page_url(scope, "memories"))
    return _changed(HttpResponse(""))


@studio_view
@require_GET
def memory_health(request):
    try:
        report = engine.pipeline_health()
    except engine.NotAvailable as exc:
        health = {"state": "unknown", "label": "Unavailable", "title": str(exc)}
    except Exception as exc:  # the check itself failing is a red dot, not a 500
        logger.exception("pipeline health check failed")
        health = {"state": "error", "label": "Pipeline error", "title": str(exc)}
    else:
        latency = report.get("latencyMs")
        if report.get("working"):
            health = {"state": "ok", "label": "Pipeline OK", "title": f"Pipeline OK ({latency}ms)"}
        else:
            health = {
                "state": "error",
                "label": "Pipeline error",
                "title": report.get("error") or "Pipeline error",
            }
        health["stages"] = report.get("stages") or {}
    return render(request, f"{PAGE}#health", {"health": health})


@studio_view
@require_GET
def memory_export(request):
    """The memories of the current filter, every page, as a streamed JSON array (API shape)."""
    scope = owner_scope(request)
    filters = _filters(request)
    if scope.is_empty:
        raise Http404("No API key yet")
    query = {
        "principal": scope.principal,
        "api_key_id": scope.api_key_id,
        "type": filters["type"] or None,
        "q": filters["q"] or None,
        "limit": EXPORT_PAGE_SIZE,
    }

    def fetch(page: int) -> tuple[list[str], bool]:
        result = selectors.memory_list(page=page, **query)
        return [json.dumps(memory_json(m), indent=2, ensure_ascii=False) for m in result["data"]], (
            page < result["totalPages"]
        )

    def sync_chunks():
        yield "["
        first, page, more = True, 1, True
        while more:
            items, more = fetch(page)
            for item in items:
                yield ("\n" if first else ",\n") + _indent(item)
                first = False
            page += 1
        yield "\n]\n"

    async def async_chunks():
        yield "["
        first, page, more = True, 1, True
        while more:
            items, more = await sync_to_async(fetch)(page)
            for item in items:
                yield ("\n" if first else ",\n") + _indent(item)
                first = False
            page += 1
        yield "\n]\n"

    # Under ASGI a synchronous iterator would be buffered whole before sending.
    chunks = async_chunks() if isinstance(request, ASGIRequest) else sync_chunks()
    response = StreamingHttpResponse(chunks, content_type="application/json")
    stamp = timezone.now().strftime("%Y-%m-%dT%H-%M-%SZ")
    response["Content-Disposition"] = f'attachment; filename="memory-export-{stamp}.json"'
    return response


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


@studio_view
@require_POST
def memory_import(request):
    """A JSON array (or one object) of memories into one owner; each entry validated like the API."""
    scope = owner_scope(request)
    form = ImportForm(request.POST, request.FILES)
    context = {"scope": scope}
    if not form.is_valid():
        context["import_error"] = "Choose a JSON file to import."
    else:
        try:
            owner = write_owner(request, scope)
            context["report"] = import_memories(owner=owner, upload=form.cleaned_data["file"])
            context["owner_name"] = owner.name
        except DomainError as exc:
            context["import_error"] = exc.message
        except ImportFileError as exc:
            context["import_error"] = str(exc)
    if not request.htmx:
        return redirect(_page_url(scope, "memories"))
    response = render(request, f"{PAGE}#import-result", context)
    return _changed(response) if context.get("report") else response


@studio_view
@require_POST
def memory_compact(request):
    """Compact old memories of one owner: a dry run lists the candidates, ``confirm`` does it."""
    scope = owner_scope(request)
    form = CompactForm(request.POST, auto_id="compact_%s")
    context = {"scope": scope, "compact_form": form, "target_owner": request.POST.get("target_owner", "")}
    if form.is_valid():
        days, confirm = form.cleaned_data["days"], form.cleaned_data["confirm"]
        try:
            owner = write_owner(request, scope)
            result = engine.summarize_older_than(owner=owner, days=days, dry_run=not confirm)
        except (DomainError, engine.NotAvailable) as exc:
            context["compact_error"] = getattr(exc, "message", str(exc))
        else:
            candidates = result.get("candidates") or []
            context.update(
                {
                    "days": days,
                    "done": confirm,
                    "result": result,
                    "candidates": candidates,
                    "owner_name": owner.name,
                }
            )
    if not request.htmx:
        return redirect(_page_url(scope, "memories"))
    response = render(request, f"{PAGE}#compact-result", context)
    return _changed(response) if context.get("done") else response


@studio_view
@require_POST
def memory_enabled(request):
    """The "Memory enabled" switch: flips ``enabled`` (the same write as ``PUT /api/settings/memory``)."""
    scope = owner_scope(request)
    _require_settings_admin(scope)
    current = get_memory_settings()
    update_memory_settings({"enabled": not current.enabled})
    if not request.htmx:
        return redirect(request.POST.get("next") or _page_url(scope, "memories"))
    return render(
        request,
        f"{PAGE}#enabled-switch",
        {"scope": scope, "memory_settings": get_memory_settings(), "can_change_settings": True},
    )


# ---------------------------------------------------------------- Sandbox tab


def _sandbox_context(request, scope: OwnerScope) -> dict:
    bound = "query" in request.GET
    form = SandboxForm(request.GET if bound else None, auto_id="sandbox_%s")
    settings = get_memory_settings()
    # Unbound, or a field left empty: the gateway's own value is shown (and used).
    strategy = form.data.get("strategy") or settings.retrieval_strategy
    budget = form.data.get("budget") or settings.maxTokens
    context = {
        "scope": scope,
        "sandbox_form": form,
        "strategy_labels": STRATEGY_LABELS,
        "sandbox_strategy": strategy,
        "sandbox_budget": budget,
        "gateway_strategy": settings.retrieval_strategy,
        "gateway_budget": settings.maxTokens,
        "vec_min_score": django_settings.MEMORY_VEC_MIN_SCORE,
    }
    if bound and not scope.is_empty and form.is_valid():
        data = form.cleaned_data
        try:
            preview = engine.gateway_preview(
                principal=scope.principal,
                api_key=scope.selected,
                query=data["query"],
                session_id=data["session_id"] or None,
                strategy=data["strategy"],
                max_tokens=data["budget"],
                below_floor=data["below_floor"],
            )
        except (engine.NotAvailable, DomainError) as exc:
            context["preview_error"] = getattr(exc, "message", str(exc))
        else:
            used, budget = preview.get("totalTokensUsed") or 0, preview.get("budgetMaxTokens") or 0
            selected = scope.selected.pk if scope.selected is not None else None
            for item in preview["memories"]:
                item["badge"] = TIER_BADGES.get(item.get("tier"), "neutral")
                owner = _uuid_or_none(item.get("apiKeyId"))
                # The global scope reads other owners' memories too: say whose each one is.
                item["owner_name"] = scope.name_of(owner) if owner != selected else ""
            context.update(
                {
                    "preview": preview,
                    "resolution": preview.get("resolution") or {},
                    "budget_pct": f"{min(100.0, used / max(1, budget) * 100):.1f}",
                }
            )
    query = form.data.get("query", "") if bound else ""
    sample = json.loads(json.dumps(DEFAULT_CHAT_REQUEST))
    if query:
        sample["messages"][-1]["content"] = query
    context["injection_form"] = InjectionForm(
        initial={"request_json": json.dumps(sample, indent=2)}, auto_id="inject_%s"
    )
    return context


def _uuid_or_none(value):
    try:
        return selectors.parse_memory_id(value)
    except DomainError:
        return value


@studio_view
@require_POST
def sandbox_inject(request):
    """The messages the gateway would send upstream for this chat request (nothing is stored)."""
    scope = owner_scope(request)
    form = InjectionForm(request.POST, auto_id="inject_%s")
    context = {"scope": scope, "injection_form": form}
    if form.is_valid():
        body = form.cleaned_data["request_json"]
        try:
            owner = write_owner(request, scope)
            outcome = engine.injection_preview(
                owner=owner, request_body=body, session_id=form.cleaned_data["session_id"] or None
            )
        except (DomainError, GatewayError) as exc:
            context["injection_error"] = exc.message
        else:
            context["injection"] = {
                **outcome,
                "owner_name": owner.name,
                "sent_json": json.dumps(outcome["request"], indent=2, ensure_ascii=False),
            }
    if not request.htmx:
        context.update(_shell_context(request, scope, "sandbox"))
        context.update({k: v for k, v in _sandbox_context(request, scope).items() if k != "injection_form"})
        return render(request, PAGE, context)
    return render(request, f"{PAGE}#injection-result", context)


# ---------------------------------------------------------------- Engine tab


def _status_context() -> dict:
    try:
        status = engine.engine_status()
    except engine.NotAvailable as exc:
        return {"status_error": str(exc)}
    except Exception as exc:
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
        {
            "name": "Embedding",
            "state": "ok" if embedding.get("available") else "unknown",
            "text": (
                f"{embedding.get('source')} · {embedding.get('model')}"
                + (f" · {embedding['dimensions']}d" if embedding.get("dimensions") else "")
                if embedding.get("available")
                else embedding.get("reason") or "No embedding source"
            ),
            "hint": embedding.get("reason") if embedding.get("available") else None,
            "configure": None if embedding.get("available") else "embedding-card",
        },
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
    if not qdrant.get("enabled"):
        rows.append({"name": "Qdrant", "state": "unknown", "text": "Disabled", "configure": "qdrant-card"})
    elif qdrant.get("healthy"):
        rows.append({"name": "Qdrant", "state": "ok", "text": f"Healthy ({qdrant.get('latencyMs')}ms)"})
    else:
        rows.append(
            {
                "name": "Qdrant",
                "state": "error",
                "text": qdrant.get("error") or "Unhealthy",
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
    return rows


def _engine_context(request, scope: OwnerScope) -> dict:
    settings = get_memory_settings()
    providers = engine.embedding_providers()
    remote_models = [
        {**model, "label": f"{provider['provider']} · {model['name']} ({model.get('dimensions') or '?'}d)"}
        for provider in providers
        if provider.get("hasKey") and provider.get("provider") != "local"
        for model in provider.get("models", [])
    ]
    upstreams = engine.upstream_providers()
    rerank_provider, _, rerank_model = (settings.rerankProviderModel or "").partition("/")
    context = {
        "scope": scope,
        "memory_settings": settings,
        "can_change_settings": engine.principal_can_change_settings(scope.principal),
        "embedding_sources": [
            ("auto", "Automatic", "Remote provider › transformers › static"),
            ("remote", "Remote provider", "An OpenAI-compatible /embeddings endpoint"),
            ("static", "Static local", "Distilled lookup table, sub-millisecond"),
            ("transformers", "Transformers", "all-MiniLM-L6-v2 on ONNX Runtime"),
        ],
        "remote_models": remote_models,
        "rerank_upstreams": [p for p in upstreams if getattr(p, "api_key", "")],
        "rerank_provider": rerank_provider,
        "rerank_model": rerank_model,
        **_status_context(),
    }
    try:
        context["qdrant"] = engine.qdrant_settings()
    except engine.NotAvailable as exc:
        context["qdrant_error"] = str(exc)
    context["qdrant_healthy"] = bool(((context.get("status") or {}).get("qdrant") or {}).get("healthy"))
    if not scope.is_empty:
        activity = selectors.memory_activity(
            principal=scope.principal, owner_ids=scope.principal.owner_filter(scope.api_key_id)
        )
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
    _require_settings_admin(scope)
    force = request.POST.get("force") in ("1", "true", "on")
    context = {"scope": scope}
    try:
        context["reindex_pending"] = engine.reindex_start(force=force)
    except engine.NotAvailable as exc:
        context["reindex_error"] = str(exc)
    if not request.htmx:
        return redirect(_page_url(scope, "engine"))
    return render(request, f"{PAGE}#reindex-result", context)


@studio_view
@require_POST
def engine_settings(request):
    """Embedding source, local sources, rerank: each control saves at once."""
    scope = owner_scope(request)
    _require_settings_admin(scope)
    form = EngineSettingsForm(request.POST)
    error = None
    if form.is_valid():
        update_memory_settings(form.changes)
    else:
        error = " ".join(form.non_field_errors())
    if not request.htmx:
        return redirect(_page_url(scope, "engine"))
    context = _engine_context(request, scope)
    context["settings_error"] = error
    response = render(request, f"{PAGE}#engine-settings", context)
    return trigger_client_event(response, "engine-changed", {}) if error is None else response


QDRANT_FIELDS = ("host", "port", "collection", "embeddingModel", "quantization")


def _qdrant_changes(post) -> dict:
    """The fields a Qdrant save sends (the reference sends them all with every save)."""
    changes = {name: post.get(name, "").strip() for name in QDRANT_FIELDS if name in post}
    if "port" in changes:
        try:
            changes["port"] = int(changes["port"])
        except ValueError:
            pass  # the serializer reports it
    if post.get("apiKey"):
        changes["apiKey"] = post["apiKey"]
    return changes


@studio_view
@require_POST
def engine_qdrant(request):
    """The Qdrant card: save, enable, remove the key (admins); test, cleanup (admins); search (read)."""
    scope = owner_scope(request)
    action = request.POST.get("action", "save")
    context = {"scope": scope, "can_change_settings": engine.principal_can_change_settings(scope.principal)}
    try:
        if action == "search":
            query = (request.POST.get("query") or "").strip()[:8000]
            context["search"] = (
                engine.qdrant_search(
                    query=query, top_k=5, owner_ids=scope.principal.owner_filter(scope.api_key_id)
                )
                if query
                else {"ok": False, "results": [], "error": "Type something to search for."}
            )
            return render(request, f"{PAGE}#qdrant-search-result", context)
        _require_settings_admin(scope)
        if action == "test":
            context["probe"] = engine.qdrant_probe()
            return render(request, f"{PAGE}#qdrant-test-result", context)
        if action == "cleanup":
            context["cleanup"] = engine.qdrant_cleanup()
            return render(request, f"{PAGE}#qdrant-cleanup-result", context)
        changes = _qdrant_changes(request.POST)
        if action == "toggle":
            changes["enabled"] = request.POST.get("enabled") == "true"
        elif action == "remove-key":
            changes = {"apiKey": ""}
        qdrant, errors = engine.qdrant_update(changes)
    except engine.NotAvailable as exc:
        context["qdrant_error"] = str(exc)
        return render(request, f"{PAGE}#qdrant-card", context)
    if not request.htmx:
        return redirect(_page_url(scope, "engine"))
    if errors:
        context.update(
            {
                "qdrant": {**engine.qdrant_settings(), **{k: request.POST.get(k, "") for k in QDRANT_FIELDS}},
                "qdrant_errors": errors,
            }
        )
    else:
        context.update({"qdrant": qdrant, "qdrant_saved": True})
    if context["qdrant"].get("active"):
        context["qdrant_healthy"] = engine.qdrant_probe()["ok"]
    context["memory_settings"] = get_memory_settings()
    return trigger_client_event(render(request, f"{PAGE}#qdrant-card", context), "engine-changed", {})


# ---------------------------------------------------------------- Settings page


@studio_view
@require_http_methods(["GET", "POST"])
def settings_page(request):
    """The memory settings form; it writes what ``PUT /api/settings/memory`` writes."""
    scope = owner_scope(request)
    can_change = engine.principal_can_change_settings(scope.principal)
    current = get_memory_settings()
    saved = False
    if request.method == "POST":
        if not can_change:
            raise PermissionDenied("Only administrators can change the memory settings.")
        form = SettingsForm(request.POST)
        if form.is_valid():
            current = update_memory_settings(dict(form.validated))
            saved = True
            form = SettingsForm(initial=current.as_dict())
    else:
        form = SettingsForm(initial=current.as_dict())
    context = {
        "scope": scope,
        "form": form,
        "saved": saved,
        "can_change_settings": can_change,
        "memory_settings": current,
        "strategies": SETTINGS_STRATEGIES,
    }
    if request.htmx:
        return render(request, f"{SETTINGS_PAGE}#settings-form", context)
    return render(request, SETTINGS_PAGE, context, status=400 if form.errors else 200)


_TAB_CONTEXT = {"memories": _memories_context, "sandbox": _sandbox_context, "engine": _engine_context}
