"""The Tokens page: the management tokens of ``/api/*`` and MCP (scope, bound keys, last use), create
(the secret shown once), rotate (a new secret shown once, the old one refused at once) and revoke.

Every write goes through ``memory.services.credentials`` (``token_create``, ``token_rotate``,
``credential_revoke``); this module parses the forms and shows the service's errors next to the field
they name. Superusers only for writes, as for API keys: a token is a credential of the whole service.
"""

from __future__ import annotations

import uuid

from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from dashboard.forms import TokenCreateForm, add_domain_error
from dashboard.views.base import can_change_settings, form_reply, require_admin, rotation_reply, studio_view
from memory.exceptions import DomainError, NotFound
from memory.models import ManagementToken
from memory.services.audit import user_actor
from memory.services.auth import principal_for_staff
from memory.services.credentials import (
    credential_revoke,
    token_create,
    token_get,
    token_json,
    token_list,
    token_rotate,
)

PAGE = "dashboard/tokens.html"
# Client event of a token write: the list refreshes.
TOKENS_CHANGED_EVENT = "tokens-changed"


def _token_or_404(token_id: uuid.UUID) -> ManagementToken:
    try:
        return token_get(token_id)
    except NotFound:
        raise Http404("No such management token") from None


def _can_manage(request) -> bool:
    return can_change_settings(principal_for_staff(request.user))


def _row(token: ManagementToken) -> dict:
    return {"token": token, **token_json(token)}


def _page_context(request, *, form: TokenCreateForm | None = None) -> dict:
    return {
        "rows": [_row(token) for token in token_list()],
        "form": form or TokenCreateForm(auto_id="token_%s"),
        "can_manage": _can_manage(request),
    }


@studio_view
@require_GET
def tokens_page(request):
    """The list and the create form (the list alone for the refresh after a write)."""
    context = _page_context(request)
    if request.htmx and request.htmx.target == "token-list":
        return render(request, f"{PAGE}#token-list", context)
    return render(request, PAGE, context)


@studio_view
@require_POST
def token_create_view(request):
    """Create a token. The secret is in this response only (a hash is stored), so a plain request
    gets the page itself rather than a redirect that would have to carry it."""
    require_admin(request)
    form = TokenCreateForm(request.POST, auto_id="token_%s")
    created = None
    if form.is_valid():
        data = form.cleaned_data
        try:
            token, secret = token_create(
                name=data["name"],
                scope=data["scope"],
                owners=data["owners"],
                actor=user_actor(request.user, via="studio"),
            )
        except DomainError as exc:
            add_domain_error(form, exc)
        else:
            created = {"token": token, "secret": secret}
            form = TokenCreateForm(auto_id="token_%s")
    context = {**_page_context(request, form=form), "created": created}
    if request.htmx:
        response = render(request, f"{PAGE}#token-create", context)
        if created:
            response["HX-Trigger"] = TOKENS_CHANGED_EVENT
        return response
    return render(request, PAGE, context, status=200 if created else 400)


@studio_view
@require_POST
def token_rotate_view(request, token_id: uuid.UUID):
    """A new secret, shown once above the list; the old one is refused from now on. A revoked token
    is refused (409) with the reason where the secret would be."""
    require_admin(request)
    token = _token_or_404(token_id)
    return rotation_reply(
        request,
        page=PAGE,
        notice="token-notice",
        changed_event=TOKENS_CHANGED_EVENT,
        page_context=_page_context,
        rotate=lambda: token_rotate(token, actor=user_actor(request.user, via="studio")),
        kind="token",
    )


@studio_view
@require_POST
def token_revoke_view(request, token_id: uuid.UUID):
    """Revoke: the token authenticates nowhere from now on (``/api/*`` and MCP)."""
    require_admin(request)
    token = _token_or_404(token_id)
    credential_revoke(token, actor=user_actor(request.user, via="studio"))
    return form_reply(
        request,
        back=reverse("dashboard:tokens"),
        region="token-row",
        context=lambda: {"row": _row(_token_or_404(token_id)), "can_manage": _can_manage(request)},
        page=PAGE,
    )
