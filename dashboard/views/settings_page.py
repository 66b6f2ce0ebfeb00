"""/dashboard/settings: the memory settings form; it writes what ``PUT /api/settings/memory`` writes."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from dashboard.forms import SettingsForm
from dashboard.owners import owner_scope
from dashboard.views.base import can_change_settings, studio_view
from memory.conf import get_memory_settings, update_memory_settings
from memory.services.audit import user_actor

SETTINGS_PAGE = "dashboard/settings.html"
SETTINGS_STRATEGIES = (
    ("recent", "Recent", "Newest memories first, within the budget. No search."),
    ("keyword", "Keyword", "Full-text search (FTS5 bm25) alone."),
    ("semantic", "Semantic", "Nearest memories by meaning (needs an embedding source)."),
    ("hybrid", "Hybrid", "Keywords and meaning fused by their normalised scores; falls back to keywords."),
    (
        "composite",
        "Composite",
        "Hybrid's candidates re-ordered by relevance, recency and importance (the weights below).",
    ),
)


@studio_view
@require_http_methods(["GET", "POST"])
def settings_page(request):
    """The form shows the stored settings; a POST from an administrator saves them. An htmx request
    gets the form alone, a plain one the page (400 when the form has errors)."""
    scope = owner_scope(request)
    can_change = can_change_settings(scope.principal)
    current = get_memory_settings()
    saved = False
    if request.method == "POST":
        if not can_change:
            raise PermissionDenied("Only administrators can change the memory settings.")
        form = SettingsForm(request.POST)
        if form.is_valid():
            current = update_memory_settings(
                dict(form.validated), actor=user_actor(request.user, via="studio")
            )
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
