"""The Memory page itself: the tab it opens on, the region an htmx request asks for, and the
memory-enabled switch in its header."""

from __future__ import annotations

from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from dashboard.owners import owner_scope
from dashboard.views.audit import audit_context
from dashboard.views.base import (
    PAGE,
    TABS,
    form_reply,
    page_url,
    render_page,
    require_settings_admin,
    shell_context,
    studio_view,
)
from dashboard.views.engine import engine_context, status_context
from dashboard.views.memories import memories_context, render_list
from dashboard.views.sandbox import sandbox_context
from memory.conf import get_memory_settings, update_memory_settings
from memory.services.audit import user_actor

TAB_CONTEXTS = {
    "memories": memories_context,
    "sandbox": sandbox_context,
    "engine": engine_context,
    "audit": audit_context,
}


@studio_view
@require_GET
def index(request):
    return redirect("dashboard:memory")


@studio_view
@require_GET
def memory_page(request):
    """The Studio. ``?tab=memories|sandbox|engine|audit`` (unknown → memories), ``?owner=<id|all>``.

    An htmx request names the region it swaps (``HX-Target``): the memory list, the sandbox results,
    the engine status or the whole tab panel; anything else gets the page.
    """
    scope = owner_scope(request)
    tab = request.GET.get("tab", "memories")
    if tab not in dict(TABS):
        tab = "memories"
    target = request.htmx.target if request.htmx else None
    if target == "memory-list" and tab == "memories":
        return render_list(request, scope)
    if target == "sandbox-results" and tab == "sandbox":
        return render(request, f"{PAGE}#sandbox-results", sandbox_context(request, scope))
    if target == "engine-status" and tab == "engine":
        return render(request, f"{PAGE}#engine-status", status_context())
    if target == "tab-panel":
        context = {**shell_context(request, scope, tab), **TAB_CONTEXTS[tab](request, scope)}
        return render(request, f"{PAGE}#tab-panel", context)
    return render_page(request, scope, tab, TAB_CONTEXTS[tab](request, scope))


@studio_view
@require_POST
def memory_enabled(request):
    """The "Memory enabled" switch: flips ``enabled`` (the same write as ``PUT /api/settings/memory``)."""
    scope = owner_scope(request)
    require_settings_admin(scope)
    update_memory_settings(
        {"enabled": not get_memory_settings().enabled}, actor=user_actor(request.user, via="studio")
    )
    return form_reply(
        request,
        back=request.POST.get("next") or page_url(scope, "memories"),
        region="enabled-switch",
        context=lambda: {
            "scope": scope,
            "memory_settings": get_memory_settings(),
            "can_change_settings": True,
        },
    )
