"""The Contradictions page: the conflicts found on write, for review, and consolidation.

``/dashboard/contradictions`` lists the contradictions of the selected key (all keys by default),
open ones first by default, each with both memories, the verdict, its confidence and its reason, and the buttons
keep old / keep new / keep both / merge, which call ``memory.services.contradictions``'s resolve (the
same as ``POST /api/memory/contradictions/<id>/resolve``). Below, consolidation
(``memory.services.consolidation``, as ``POST /api/memory/consolidate``): a dry run previews the groups
of near-duplicates of the selected key, a second button merges them, and each recent run can be
undone. Every button is a form (the page works without JavaScript); htmx swaps the one region.
"""

from __future__ import annotations

import uuid
from urllib.parse import urlencode

from django import forms
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from dashboard.views.base import studio_view
from memory.exceptions import DomainError
from memory.models import ApiKey
from memory.principals import Principal
from memory.services.audit import user_actor
from memory.services.auth import principal_for_staff
from memory.services.consolidation import (
    consolidate,
    consolidation_get,
    consolidation_runs,
    consolidation_undo,
)
from memory.services.contradictions import (
    RESOLUTIONS,
    contradiction_get,
    contradiction_list,
    contradiction_resolve,
)

PAGE = "dashboard/contradictions.html"
PER_PAGE = 50
RESOLUTION_LABELS = {
    "keep_old": "Keep old",
    "keep_new": "Keep new",
    "keep_both": "Keep both",
    "merge": "Merge",
}
VERDICT_HELP = {
    "supersedes": "The new memory replaced the old one on write (the old one is history).",
    "contradicts": "They conflict, and their dates do not say which holds.",
    "ambiguous": "The new memory may change the old one: flagged for review.",
}


class FilterForm(forms.Form):
    key = forms.UUIDField(required=False)
    status = forms.ChoiceField(choices=[("open", "Open"), ("resolved", "Resolved")], required=False)


class ResolveForm(forms.Form):
    resolution = forms.ChoiceField(choices=[(r, r) for r in RESOLUTIONS])


class ConsolidateForm(forms.Form):
    key = forms.UUIDField()
    apply = forms.BooleanField(required=False)


def _filters(request) -> tuple[str | None, str]:
    form = FilterForm(request.GET or request.POST)
    if not form.is_valid():
        return None, "open"
    key = form.cleaned_data["key"]
    return (str(key) if key else None), form.cleaned_data["status"] or "open"


def page_url(key: str | None, status: str = "open") -> str:
    query = {name: value for name, value in (("key", key), ("status", status)) if value}
    return f"{reverse('dashboard:contradictions')}?{urlencode(query)}"


def _rows(principal: Principal, key: str | None, status: str) -> tuple[list[dict], int]:
    page = contradiction_list(principal, api_key_id=key, status=status, limit=PER_PAGE)
    names = {str(k.pk): k.name for k in ApiKey.objects.only("id", "name")}
    rows = [
        {
            "item": item,
            "key_name": names.get(str(item.owner_id), str(item.owner_id)),
            "verdict_help": VERDICT_HELP.get(item.verdict, ""),
        }
        for item in page["data"]
    ]
    return rows, page["total"]


def _context(request, *, key: str | None, status: str, **extra) -> dict:
    principal = principal_for_staff(request.user)
    rows, total = _rows(principal, key, status)
    owner_ids = [uuid.UUID(key)] if key else list(ApiKey.objects.values_list("pk", flat=True))
    return {
        "keys": ApiKey.objects.order_by("name", "created_at"),
        "key": key,
        "status": status,
        "rows": rows,
        "total": total,
        "resolutions": list(RESOLUTION_LABELS.items()),
        "runs": consolidation_runs(owner_ids, limit=10),
        "list_url": page_url(key, status),
        **extra,
    }


@studio_view
@require_GET
def contradictions_page(request):
    """The page; an htmx request for ``contradiction-list`` (the filters) gets that region only."""
    key, status = _filters(request)
    context = _context(request, key=key, status=status)
    if request.htmx and request.htmx.target == "contradiction-list":
        return render(request, f"{PAGE}#contradiction-list", context)
    return render(request, PAGE, context)


@studio_view
@require_POST
def contradiction_resolve_view(request, contradiction_id: uuid.UUID):
    """Resolve one contradiction; htmx gets the list again (the resolved row leaves the open list)."""
    key, status = _filters(request)
    form = ResolveForm(request.POST)
    if not form.is_valid():
        return HttpResponse("resolution must be one of " + ", ".join(RESOLUTIONS), status=400)
    principal = principal_for_staff(request.user)
    item = contradiction_get(principal, str(contradiction_id))
    resolved = contradiction_resolve(
        item, form.cleaned_data["resolution"], actor=user_actor(request.user, via="studio")
    )
    if not request.htmx:
        return redirect(page_url(key, status))
    notice = f"Resolved: {RESOLUTION_LABELS[resolved.resolution]}."
    return render(
        request, f"{PAGE}#contradiction-list", _context(request, key=key, status=status, notice=notice)
    )


@studio_view
@require_POST
def consolidate_view(request):
    """A dry run of the selected key's consolidation (the preview), or, with ``apply``, the run."""
    key, status = _filters(request)
    form = ConsolidateForm(request.POST)
    extra: dict = {}
    if not form.is_valid():
        extra["consolidate_error"] = "Choose a key to consolidate."
    else:
        owner = ApiKey.objects.filter(pk=form.cleaned_data["key"]).first()
        if owner is None:
            extra["consolidate_error"] = "No such API key."
        else:
            try:
                plan = consolidate(
                    owner,
                    dry_run=not form.cleaned_data["apply"],
                    actor=user_actor(request.user, via="studio"),
                )
            except DomainError as exc:
                extra["consolidate_error"] = exc.message
            else:
                extra["plan"] = plan
    context = _context(request, key=key, status=status, **extra)
    if request.htmx:
        return _consolidation_region(request, context, changed=bool(extra.get("plan") and extra["plan"].run))
    return render(request, PAGE, context, status=400 if "consolidate_error" in extra else 200)


def _consolidation_region(request, context: dict, *, changed: bool) -> HttpResponse:
    """The consolidation card; after a write, the list too, out of band (contradictions it settled)."""
    html = render_to_string(f"{PAGE}#consolidation", context, request=request)
    if changed:
        html += render_to_string(f"{PAGE}#contradiction-list", {**context, "oob": True}, request=request)
    return HttpResponse(html)


@studio_view
@require_POST
def consolidation_undo_view(request, run_id: uuid.UUID):
    key, status = _filters(request)
    principal = principal_for_staff(request.user)
    extra: dict = {}
    try:
        run = consolidation_undo(
            consolidation_get(principal, str(run_id)), actor=user_actor(request.user, via="studio")
        )
    except DomainError as exc:
        if exc.status == 404:
            raise
        extra["consolidate_error"] = exc.message
    else:
        extra["undone"] = run
    if not request.htmx and "undone" in extra:
        return redirect(page_url(key, status))
    context = _context(request, key=key, status=status, **extra)
    if request.htmx:
        return _consolidation_region(request, context, changed="undone" in extra)
    return render(request, PAGE, context, status=409)
