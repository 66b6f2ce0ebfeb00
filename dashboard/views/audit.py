"""The Audit tab: the recent destructive operations (deletes, clears, summaries, revocations,
settings changes) of the selected owner, or of every owner and the global ones for "All owners";
filtered by action, newest first, paged."""

from __future__ import annotations

import math
import uuid

from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from dashboard.owners import OwnerScope, owner_scope
from dashboard.views.base import PAGE, int_param, page_url, studio_view
from memory.models import AuditAction
from memory.services.audit import audit_event_json, audit_events

PER_PAGE = 50


def audit_context(request, scope: OwnerScope) -> dict:
    """The events this scope shows: the selected owner's; with "All owners" (a global user), every
    owner's and the ownerless ones. Unknown ``action`` values show every action."""
    action = request.GET.get("action", "")
    if action not in AuditAction.values:
        action = ""
    events = audit_events(
        principal=scope.principal,
        owner_id=scope.selected.pk if scope.selected is not None else None,
        action=action or None,
    )
    total = events.count()
    pages = max(1, math.ceil(total / PER_PAGE))
    page = int_param(request.GET.get("page"), 1, lo=1, hi=pages)
    rows = [audit_event_json(e) for e in events[(page - 1) * PER_PAGE : page * PER_PAGE]]
    for row in rows:
        owner = row["apiKeyId"]
        row["owner_name"] = scope.names.get(uuid.UUID(owner), owner) if owner else "global"

    def url(number: int) -> str | None:
        return page_url(scope, "audit", action=action, page=number) if 1 <= number <= pages else None

    return {
        "audit_rows": rows,
        "audit_action": action,
        "audit_actions": AuditAction.choices,
        "audit_total": total,
        "audit_page": page,
        "audit_pages": pages,
        "audit_prev_url": url(page - 1),
        "audit_next_url": url(page + 1),
    }


@studio_view
@require_GET
def audit_list(request):
    """The event list region (the filter form's htmx target); a plain request gets the page."""
    scope = owner_scope(request)
    if not request.htmx:
        return redirect(page_url(scope, "audit", action=request.GET.get("action", "")))
    return render(request, f"{PAGE}#audit-list", {"scope": scope, **audit_context(request, scope)})
