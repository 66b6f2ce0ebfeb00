"""What every Studio view shares: staff-only access, the page's links and shell, and the htmx tail.

A Studio form view ends in one of two ways. After a write that worked,
:func:`form_reply`: a plain request is redirected (POST, then redirect: the
page works without JavaScript), an htmx request gets the one region of the
page it swaps. After a write that failed validation, the plain request gets
the whole page again (:func:`render_page`) with the errors in place.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from functools import wraps
from urllib.parse import urlencode

from django.conf import settings as django_settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect, trigger_client_event

from dashboard.owners import OwnerScope
from memory.conf import get_memory_settings
from memory.exceptions import DomainError
from memory.models import MemoryType
from memory.principals import Principal
from memory.services.auth import principal_for_staff
from omniroute.db.locking import RETRY_AFTER_SECONDS

logger = logging.getLogger("dashboard")

PAGE = "dashboard/memory.html"
TABS = (("memories", "Memories"), ("sandbox", "Sandbox"), ("engine", "Engine"), ("audit", "Audit"))
TYPE_HELP = {
    "factual": "Facts and preferences about the user",
    "episodic": "Events and experiences",
    "procedural": "How-to knowledge and habits",
    "semantic": "General knowledge and summaries",
    "short_term": "Short-lived context",
    "long_term": "Durable context",
    "entity": "People, places and things",
}
# Changing these event names means changing static/dashboard/studio.js and the templates too.
CHANGED_EVENT = "memory-changed"
ENGINE_CHANGED_EVENT = "engine-changed"


def studio_view(view):
    """Staff only; an htmx request whose session expired is sent to the login page.

    A domain error that a view did not turn into a message next to its form (a key's provider and
    every fallback down in the middle of a delete, say) is answered with its own status and message
    as plain text, never a 500: ``studio.js`` shows that text as a notice, a browser without
    JavaScript shows it as the page.
    """

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        user = request.user
        if not (user.is_authenticated and user.is_active and user.is_staff):
            if request.htmx:
                query = urlencode({"next": request.htmx.current_url_abs_path or reverse("dashboard:memory")})
                return HttpResponseClientRedirect(f"{django_settings.LOGIN_URL}?{query}")
            return redirect_to_login(request.get_full_path())
        try:
            return view(request, *args, **kwargs)
        except DomainError as exc:
            logger.warning("studio %s %s: %s", request.method, request.path, exc.message)
            response = HttpResponse(exc.message, status=exc.status, content_type="text/plain; charset=utf-8")
            if exc.status == 503:
                response["Retry-After"] = str(RETRY_AFTER_SECONDS)
            return response

    return wrapper


def int_param(value, default: int, *, lo: int, hi: int) -> int:
    """A page number from a link: out of range shows the nearest page, junk the default (a page, not a 400)."""
    try:
        return max(lo, min(hi, int(value)))
    except (TypeError, ValueError):
        return default


def can_change_settings(principal: Principal) -> bool:
    """Runtime settings are global: the same rule as ``PUT /api/settings/memory``."""
    return principal.is_global and principal.has_scope("admin")


def require_settings_admin(scope: OwnerScope) -> None:
    if not can_change_settings(scope.principal):
        raise PermissionDenied("Only administrators can change the memory settings.")


def require_admin(request) -> None:
    """Keys and providers are global, as on the API (the global admin token): superusers only."""
    if not can_change_settings(principal_for_staff(request.user)):
        raise PermissionDenied("Only administrators can change API keys and memory providers.")


def page_url(scope: OwnerScope, tab: str, **params) -> str:
    """The Memory page on ``tab`` for this scope's owner, with the non-empty ``params``."""
    query = {"tab": tab, "owner": scope.param, **{k: v for k, v in params.items() if v not in (None, "")}}
    return f"{reverse('dashboard:memory')}?{urlencode(query)}"


def shell_context(request, scope: OwnerScope, tab: str) -> dict:
    """What the page around every tab shows: the tabs, the owner selector, the enabled switch."""
    return {
        "scope": scope,
        "tab": tab,
        "tabs": [(name, label, page_url(scope, name)) for name, label in TABS],
        "memory_settings": get_memory_settings(),
        "can_change_settings": can_change_settings(scope.principal),
        "types": [(value, label, TYPE_HELP.get(value, "")) for value, label in MemoryType.choices],
        "dialog": request.GET.get("dialog", ""),
    }


def render_page(
    request, scope: OwnerScope, tab: str, tab_context: dict, *, status: int = 200
) -> HttpResponse:
    """The whole Memory page on ``tab``: the shell around ``tab_context``."""
    return render(request, PAGE, {**shell_context(request, scope, tab), **tab_context}, status=status)


def changed_events(*, close: str | None = None) -> dict[str, dict]:
    """The client events of a write: the lists and counters refresh; ``close`` names a dialog to close."""
    events: dict[str, dict] = {CHANGED_EVENT: {}}
    if close:
        events["close-dialog"] = {"id": close}
    return events


def form_reply(
    request,
    *,
    back: str,
    region: str | None,
    context: dict | Callable[[], dict] | None = None,
    events: Mapping[str, dict] | None = None,
    page: str = PAGE,
) -> HttpResponse:
    """The end of a Studio form view whose write went through.

    A plain request is redirected to ``back``. An htmx request gets
    ``"<page>#<region>"`` (the Memory page by default) rendered with ``context`` (an empty
    body when ``region`` is None: the swapped element goes away), with the
    client ``events`` triggered. ``context`` may be a function, called only
    for htmx, where building it costs work a redirect does not need.
    """
    if not request.htmx:
        return redirect(back)
    if region is None:
        response = HttpResponse("")
    else:
        response = render(request, f"{page}#{region}", context() if callable(context) else context or {})
    for name, detail in (events or {}).items():
        response = trigger_client_event(response, name, detail)
    return response


def rotation_reply(
    request,
    *,
    page: str,
    notice: str,
    changed_event: str,
    page_context: Callable[[object], dict],
    rotate: Callable[[], tuple[object, str]],
    kind: str,
) -> HttpResponse:
    """The reply of a Studio "rotate" button (API keys and management tokens): the new secret shown
    once in the page's ``notice`` fragment (htmx) or on the whole page, and the list told to refresh;
    a refusal (a revoked credential: 409) shown in the same place with its status."""
    try:
        credential, secret = rotate()
    except DomainError as exc:
        context: dict[str, object] = {"rotate_error": exc.message}
        if request.htmx:
            return render(request, f"{page}#{notice}", context)
        return render(request, page, {**page_context(request), **context}, status=exc.status)
    context = {"rotated": {kind: credential, "secret": secret}}
    if request.htmx:
        response = render(request, f"{page}#{notice}", context)
        response["HX-Trigger"] = changed_event
        return response
    return render(request, page, {**page_context(request), **context})
