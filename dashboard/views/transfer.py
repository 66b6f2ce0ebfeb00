"""Export (the current filter, every page, streamed) and import (a JSON file into one owner)."""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from dashboard.forms import ImportForm
from dashboard.imports import ImportFileError, import_memories
from dashboard.owners import owner_scope, write_owner
from dashboard.views.base import changed_events, form_reply, page_url, studio_view
from dashboard.views.memories import list_filters
from memory import store
from memory.exceptions import DomainError
from memory.shapes import memory_json

EXPORT_PAGE_SIZE = 500


@studio_view
@require_GET
def memory_export(request):
    """The memories of the current filter, every page, as a streamed JSON array (API shape)."""
    scope = owner_scope(request)
    filters = list_filters(request)
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
        result = store.memory_list(page=page, **query)
        return [json.dumps(memory_json(m), indent=2, ensure_ascii=False) for m in result["data"]], (
            page < result["totalPages"]
        )

    # The first page is read before the response starts, so a store that cannot be read (a key's
    # provider down) is an error page with its status, not a download cut short.
    try:
        first_page = fetch(1)
    except DomainError as exc:
        return HttpResponse(exc.message, status=exc.status, content_type="text/plain; charset=utf-8")

    def sync_chunks():
        yield "["
        (items, more), page, first = first_page, 1, True
        while True:
            for item in items:
                yield ("\n" if first else ",\n") + _indent(item)
                first = False
            if not more:
                break
            page += 1
            items, more = fetch(page)
        yield "\n]\n"

    async def async_chunks():
        yield "["
        (items, more), page, first = first_page, 1, True
        while True:
            for item in items:
                yield ("\n" if first else ",\n") + _indent(item)
                first = False
            if not more:
                break
            page += 1
            items, more = await sync_to_async(fetch)(page)
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
    return form_reply(
        request,
        back=page_url(scope, "memories"),
        region="import-result",
        context=context,
        events=changed_events() if context.get("report") else None,
    )
