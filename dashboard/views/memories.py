"""The Memories tab: the list (search, type filter, sortable columns, pages), add, inline edit, delete,
the pipeline health dot and compaction."""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard.forms import CompactForm, MemoryForm
from dashboard.owners import OwnerScope, owner_scope, write_owner
from dashboard.views.base import (
    PAGE,
    TYPE_HELP,
    changed_events,
    form_reply,
    int_param,
    page_url,
    render_page,
    studio_view,
)
from memory import selectors, store
from memory.backends.base import BackendError
from memory.bounds import MAX_POSITION
from memory.embeddings.runtime import cache_stats
from memory.exceptions import Conflict, DomainError, NotFound, ValidationFailed
from memory.models import MemoryType
from memory.services.audit import user_actor
from memory.services.health import run_health_check
from memory.services.memories import SOURCE_FIELD, MemoryInput, changes_from_fields
from memory.services.summarization import is_summary, summarize_older_than

logger = logging.getLogger("dashboard")

PAGE_SIZE = 20
# How the Source column names where a memory came from (``metadata.source``, see
# memory.services.memories.WRITE_SOURCES and memory.extraction.rules.FACT_SOURCES); another value is
# shown as it is, none as a dash.
SOURCE_LABELS = {
    "user_message": "user",
    "llm_response": "assistant",
    "import": "import",
    "api": "API",
    "mcp": "MCP",
    "studio": "Studio",
}
# The sortable columns: the ``ordering`` name (memory.selectors.LIST_ORDERINGS), its header, and the
# direction of a first click (numbers and dates: highest or newest first).
SORTABLE_COLUMNS = (
    ("type", "Type", ""),
    ("key", "Key", ""),
    ("session", "Session", ""),
    ("source", "Source", ""),
    ("importance", "Importance", "-"),
    ("uses", "Uses", "-"),
    ("lastUsed", "Last used", "-"),
    ("created", "Created", "-"),
)


# ---------------------------------------------------------------- the list


def list_filters(request) -> dict:
    """The list's ``q``, ``type``, ``ordering`` and ``page`` (``q`` and ``type`` are also the
    export's filter). An unknown ordering, like a junk page number in a link, shows the default."""
    q = (request.GET.get("q") or "").strip()[:1000]
    type_ = request.GET.get("type") or ""
    if type_ not in MemoryType.values:
        type_ = ""
    ordering = request.GET.get("ordering") or selectors.DEFAULT_ORDERING
    try:
        selectors.list_order(ordering)
    except ValidationFailed:
        ordering = selectors.DEFAULT_ORDERING
    page = int_param(request.GET.get("page"), 1, lo=1, hi=MAX_POSITION)
    return {"q": q, "type": type_, "ordering": ordering, "page": page}


def _query_list(scope: OwnerScope, filters: dict) -> dict:
    return store.memory_list(
        principal=scope.principal,
        api_key_id=scope.api_key_id,
        type=filters["type"] or None,
        q=filters["q"] or None,
        page=filters["page"],
        limit=PAGE_SIZE,
        ordering=filters["ordering"],
    )


def _columns(scope: OwnerScope, filters: dict) -> list[dict]:
    """The sortable headers: each links to the list sorted by it (a click on the sorted column
    reverses it), back on page 1, keeping the search and type."""
    current = filters["ordering"]
    columns = []
    for name, label, first in SORTABLE_COLUMNS:
        if current.removeprefix("-") == name:
            sort = "descending" if current.startswith("-") else "ascending"
            wanted = name if current.startswith("-") else f"-{name}"
        else:
            sort, wanted = None, f"{first}{name}"
        url = page_url(scope, "memories", q=filters["q"], type=filters["type"], ordering=wanted)
        numeric = name in ("importance", "uses")
        columns.append({"name": name, "label": label, "sort": sort, "url": url, "numeric": numeric})
    return columns


def _list_context(request, scope: OwnerScope, *, editing=None) -> dict:
    filters = list_filters(request)
    context = {"scope": scope, "filters": filters, "editing": editing, "type_help": TYPE_HELP}
    if scope.is_empty:
        return context
    try:
        result = _query_list(scope, filters)
        if result["totalPages"] and filters["page"] > result["totalPages"]:
            filters["page"] = result["totalPages"]
            result = _query_list(scope, filters)
    except BackendError as exc:
        # A key's provider (and every fallback) down: the page says so where the list would be.
        context["list_error"] = _store_error(exc)
        result = {"data": [], "page": 1, "totalPages": 0, "total": 0}
        result["stats"] = {"total": 0, "byType": {}, "tokensUsed": 0}
    return _finish_list_context(scope, filters, context, result)


def _store_error(exc: BackendError) -> str:
    where = f"{exc.backend}: " if exc.backend else ""
    return f"The memory store cannot be read ({where}{exc.message})."


def _finish_list_context(scope, filters, context, result) -> dict:
    for memory in result["data"]:
        _decorate(scope, memory)
    page, total_pages = result["page"], max(1, result["totalPages"])
    link = {"q": filters["q"], "type": filters["type"]}
    paging = {
        **link,
        "ordering": "" if filters["ordering"] == selectors.DEFAULT_ORDERING else filters["ordering"],
    }
    cache = cache_stats()
    lookups = cache["hits"] + cache["misses"]
    context.update(
        {
            "result": result,
            "rows": result["data"],
            "total_pages": total_pages,
            "prev_url": page_url(scope, "memories", page=page - 1, **paging) if page > 1 else None,
            "next_url": page_url(scope, "memories", page=page + 1, **paging) if page < total_pages else None,
            "columns": _columns(scope, filters),
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


def memories_context(request, scope: OwnerScope) -> dict:
    """The Memories tab as a whole: the list (and the row being edited), the add and compact forms."""
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


def render_list(request, scope: OwnerScope, *, status: int = 200) -> HttpResponse:
    """The list region plus the counters and the export link, swapped out of band."""
    context = _list_context(request, scope)
    html = render_to_string(f"{PAGE}#memory-list", context, request)
    if not scope.is_empty:
        html += render_to_string(f"{PAGE}#memory-stats", {**context, "oob": True}, request)
        html += render_to_string(f"{PAGE}#export-link", {**context, "oob": True}, request)
    return HttpResponse(html, status=status)


# ---------------------------------------------------------------- one memory


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
            try:
                saved, created = store.memory_create(
                    MemoryInput.from_fields(form.validated, owner=owner, source="studio")
                )
            except DomainError as exc:
                # A provider down (503) or refusing the input (400): said in the form, kept as typed.
                form.add_error(None, exc.message)
        if saved is not None:
            return form_reply(
                request,
                back=page_url(scope, "memories"),
                region="add-form",
                context={
                    "scope": scope,
                    "add_form": MemoryForm(auto_id="add_%s"),
                    "saved": saved,
                    "created": created,
                },
                events=changed_events(close="add-dialog"),
            )
    if not request.htmx:
        tab = {**memories_context(request, scope), "add_form": form, "dialog": "add"}
        return render_page(request, scope, "memories", tab, status=400)
    return render(request, f"{PAGE}#add-form", {"scope": scope, "add_form": form, "saved": saved})


def _memory_or_404(scope: OwnerScope, memory_id):
    try:
        memory = store.memory_get(principal=scope.principal, memory_id=memory_id)
    except NotFound:
        raise Http404("Memory not found") from None
    return _decorate(scope, memory)


def _decorate(scope: OwnerScope, memory):
    """What a row shows besides the model fields: the owner's name, the type's description and where
    the memory came from (``source_label``; a compaction's summary says so)."""
    memory.owner_name = scope.name_of(memory.owner_id)
    memory.type_help = TYPE_HELP.get(memory.type, "")
    memory.source_label = source_label(memory)
    return memory


def source_label(memory) -> str:
    """The Source column's word for ``memory`` (:data:`SOURCE_LABELS`); "" when none is recorded."""
    source = memory.metadata.get(SOURCE_FIELD) if isinstance(memory.metadata, dict) else None
    if isinstance(source, str) and source:
        return SOURCE_LABELS.get(source, source)
    return "summary" if is_summary(memory) else ""


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
            return redirect(page_url(scope, "memories", edit=str(memory.uuid)))
        form = MemoryForm.for_memory(memory)
        form.auto_id = f"edit_{memory.uuid.hex}_%s"
        return render(request, f"{PAGE}#memory-row-edit", _row_context(scope, memory, form=form))
    form = MemoryForm.for_memory(memory, data=request.POST)
    form.auto_id = f"edit_{memory.uuid.hex}_%s"
    if form.is_valid():
        try:
            memory = store.memory_update(memory, **changes_from_fields(form.validated))
        except Conflict as exc:
            form.add_error("key", exc.message)
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            return form_reply(
                request,
                back=page_url(scope, "memories"),
                region="memory-row",
                context=_row_context(scope, _decorate(scope, memory)),
                events=changed_events(),
            )
    if not request.htmx:
        tab = {**memories_context(request, scope), "editing": memory.uuid, "form": form}
        return render_page(request, scope, "memories", tab, status=400)
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
            {"scope": scope, "m": memory, "back": page_url(scope, "memories")},
        )
    store.memory_delete(memory, actor=user_actor(request.user, via="studio"))
    return form_reply(request, back=page_url(scope, "memories"), region=None, events=changed_events())


# ---------------------------------------------------------------- the toolbar: health, compaction


@studio_view
@require_GET
def memory_health(request):
    """The health dot: the write → search → read → delete round trip of ``GET /api/memory/health``."""
    try:
        report = run_health_check()
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
            result = summarize_older_than(
                owner=owner, days=days, dry_run=not confirm, actor=user_actor(request.user, via="studio")
            )
        except DomainError as exc:
            context["compact_error"] = exc.message
        else:
            candidates = [m.key or str(m.uuid) for m in result.candidates]
            context.update(
                {
                    "days": days,
                    "done": confirm,
                    "result": {
                        "candidates": candidates,
                        "totalTokens": result.total_tokens,
                        "deletedCount": result.deleted_count,
                        "summaryId": result.summary_id,
                        "dryRun": result.dry_run,
                    },
                    "candidates": candidates,
                    "owner_name": owner.name,
                }
            )
    return form_reply(
        request,
        back=page_url(scope, "memories"),
        region="compact-result",
        context=context,
        events=changed_events() if context.get("done") else None,
    )
