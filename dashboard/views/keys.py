"""The Keys page: the API keys (memory count, where their memories live, a health dot, last use),
create (the secret shown once), rotate (a new secret shown once, the old one refused at once),
revoke, delete, and per key the provider and its ordered fallbacks with a "test connection".

Every write goes through ``memory.services.providers`` (``key_create``, ``key_set_provider``,
``key_update``, ``key_delete``: the rules of ``/api/keys``) or ``memory.services.credentials``
(``key_rotate``); this module parses the forms and shows the service's errors next to the field
they name. Superusers only for writes, as on the API.
"""

from __future__ import annotations

import uuid

from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard.forms import KeyCreateForm, add_domain_error
from dashboard.views.base import can_change_settings, form_reply, require_admin, rotation_reply, studio_view
from dashboard.views.providers import health_view
from memory.backends.registry import build_backend
from memory.backends.selection import selection_of
from memory.exceptions import DomainError, NotFound
from memory.models import ApiKey, MemoryProvider
from memory.services.audit import user_actor
from memory.services.auth import principal_for_staff
from memory.services.credentials import key_rotate
from memory.services.providers import (
    MAX_FALLBACKS,
    key_create,
    key_delete,
    key_get,
    key_json,
    key_set_provider,
    key_update,
    provider_health,
)

PAGE = "dashboard/keys.html"
# Client event of a key write: the list refreshes.
KEYS_CHANGED_EVENT = "keys-changed"
# The value of the "native store" choice in the selects: empty, since "native" may be a provider's name.
NATIVE = ""


def _key_or_404(key_id: uuid.UUID) -> ApiKey:
    try:
        return key_get(key_id)
    except NotFound:
        raise Http404("No such API key") from None


def _can_manage(request) -> bool:
    return can_change_settings(principal_for_staff(request.user))


def _row(key: ApiKey, **extra) -> dict:
    """A key as its row shows it: ``key_json`` (memory count, provider, fallbacks) and the model."""
    return {"key": key, **key_json(key), **extra}


def _providers() -> list[MemoryProvider]:
    return list(MemoryProvider.objects.order_by("name"))


def _storage_context(
    key: ApiKey,
    *,
    error: str | None = None,
    field: str | None = None,
    posted: tuple[str, list[str]] | None = None,
) -> dict:
    """The storage editor of one key: the provider select and one select per fallback position
    (``posted``: the choice that was refused, kept on screen with ``error``)."""
    row = _row(key)
    provider, fallbacks = row["provider"], list(row["fallbacks"])
    if posted is not None:
        provider, fallbacks = posted
    providers = _providers()
    slots = min(MAX_FALLBACKS, max(1, len(providers) - 1))
    fallbacks = (fallbacks + [""] * slots)[: max(slots, len(fallbacks))]
    return {
        "row": row,
        "providers": providers,
        "chosen_provider": provider or NATIVE,
        "chosen_fallbacks": fallbacks,
        "storage_error": error,
        "storage_error_field": field,
        "editing": True,
    }


def _page_context(request, *, form: KeyCreateForm | None = None, editing: uuid.UUID | None = None) -> dict:
    keys = ApiKey.objects.select_related("provider").order_by("name", "created_at")
    rows = []
    for key in keys:
        rows.append(_storage_context(key) if key.pk == editing else _row(key))
    return {
        "rows": rows,
        "form": form or KeyCreateForm(auto_id="key_%s"),
        "providers": _providers(),
        "can_manage": _can_manage(request),
    }


def _editing(request) -> uuid.UUID | None:
    try:
        return uuid.UUID(request.GET.get("edit", ""))
    except ValueError:
        return None


# ---------------------------------------------------------------- the page


@studio_view
@require_GET
def keys_page(request):
    """The list and the create form; ``?edit=<id>`` opens that key's storage editor in its row."""
    context = _page_context(request, editing=_editing(request))
    if request.htmx and request.htmx.target == "key-list":
        return render(request, f"{PAGE}#key-list", context)
    return render(request, PAGE, context)


@studio_view
@require_POST
def key_create_view(request):
    """Create a key. The secret is in this response only: it is not stored (a hash is), so a plain
    request gets the page itself rather than a redirect that would have to carry it."""
    require_admin(request)
    form = KeyCreateForm(request.POST, auto_id="key_%s")
    created = None
    if form.is_valid():
        data = form.cleaned_data
        provider = data["provider"] or None
        try:
            key, secret = key_create(
                name=data["name"],
                allow_global_scope=data["allow_global_scope"],
                provider=provider,
                actor=user_actor(request.user, via="studio"),
            )
        except DomainError as exc:
            add_domain_error(form, exc)
        else:
            created = {"key": key, "secret": secret}
            form = KeyCreateForm(auto_id="key_%s")
    context = {**_page_context(request, form=form), "created": created}
    if request.htmx:
        response = render(request, f"{PAGE}#key-create", context)
        if created:
            response["HX-Trigger"] = KEYS_CHANGED_EVENT
        return response
    return render(request, PAGE, context, status=200 if created or form.is_valid() else 400)


@studio_view
@require_GET
def key_row(request, key_id: uuid.UUID):
    """One row as the list shows it (the storage editor's Cancel)."""
    return render(
        request, f"{PAGE}#key-row", {"row": _row(_key_or_404(key_id)), "can_manage": _can_manage(request)}
    )


@studio_view
@require_http_methods(["GET", "POST"])
def key_storage(request, key_id: uuid.UUID):
    """Where the key's memories live. GET: the row's editor (a plain request: the page with it open);
    POST: ``key_set_provider`` with the chosen provider (empty: this database) and the
    non-empty fallbacks in order. A refusal (memories still in the current store, a provider named
    twice) is shown in the editor."""
    key = _key_or_404(key_id)
    if request.method == "GET":
        if not request.htmx:
            return redirect(f"{reverse('dashboard:keys')}?edit={key.pk}")
        return render(request, f"{PAGE}#key-row-edit", _storage_context(key))
    require_admin(request)
    chosen = request.POST.get("provider", NATIVE)
    fallbacks = [name for name in request.POST.getlist("fallback") if name]
    try:
        key_set_provider(
            key,
            provider=chosen or None,
            fallbacks=fallbacks,
            actor=user_actor(request.user, via="studio"),
        )
    except DomainError as exc:
        key = _key_or_404(key_id)  # the failed change rolled back: show what is saved
        field = exc.details[0].get("field") if exc.details else None
        context = _storage_context(key, error=exc.message, field=field, posted=(chosen, fallbacks))
        if request.htmx:
            return render(request, f"{PAGE}#key-row-edit", context)
        return render(
            request, PAGE, {**_page_context(request), "rows": _rows_with(key, context)}, status=exc.status
        )
    return form_reply(
        request,
        back=reverse("dashboard:keys"),
        region="key-row",
        context=lambda: {"row": _row(_key_or_404(key_id)), "can_manage": _can_manage(request)},
        page=PAGE,
    )


def _rows_with(key: ApiKey, editor: dict) -> list[dict]:
    keys = ApiKey.objects.select_related("provider").order_by("name", "created_at")
    return [editor if k.pk == key.pk else _row(k) for k in keys]


@studio_view
@require_POST
def key_test(request, key_id: uuid.UUID):
    """ "Test connection": probe every store the key's memories may go to, in the order they are
    tried (its provider, then each fallback; the native store for a key without a provider)."""
    key = _key_or_404(key_id)
    selection = selection_of(key)
    probes = []
    if selection.provider is None:
        health = build_backend("native", name="native").health()
        probes.append({"name": "native", "role": "provider", "health": health_view(health)})
    else:
        for role, provider in [
            ("provider", selection.provider),
            *(("fallback", p) for p in selection.fallbacks),
        ]:
            probes.append(
                {"name": provider.name, "role": role, "health": health_view(provider_health(provider))}
            )
    context = {"row": _row(key), "probes": probes}
    if request.htmx:
        return render(request, f"{PAGE}#key-test", context)
    page = _page_context(request)
    page["tested"] = context
    return render(request, PAGE, page)


@studio_view
@require_POST
def key_rotate_view(request, key_id: uuid.UUID):
    """A new secret for the key, shown once above the list (same id, memories and provider); the old
    secret is refused from now on. A revoked key is refused (409) with the reason there instead."""
    require_admin(request)
    key = _key_or_404(key_id)
    return rotation_reply(
        request,
        page=PAGE,
        notice="key-notice",
        changed_event=KEYS_CHANGED_EVENT,
        page_context=_page_context,
        rotate=lambda: key_rotate(key, actor=user_actor(request.user, via="studio")),
        kind="key",
    )


@studio_view
@require_POST
def key_revoke(request, key_id: uuid.UUID):
    """Revoke: the key authenticates nowhere from now on; its memories stay until it is deleted."""
    require_admin(request)
    key = _key_or_404(key_id)
    key_update(key, revoked=True, actor=user_actor(request.user, via="studio"))
    return form_reply(
        request,
        back=reverse("dashboard:keys"),
        region="key-row",
        context=lambda: {"row": _row(_key_or_404(key_id)), "can_manage": _can_manage(request)},
        page=PAGE,
    )


@studio_view
@require_http_methods(["GET", "POST"])
def key_delete_view(request, key_id: uuid.UUID):
    """GET: a confirmation page (no JavaScript); POST: delete the key and its memories, wherever
    they live (refused with a 503 when its provider cannot be reached: nothing is left behind)."""
    key = _key_or_404(key_id)
    if request.method == "GET":
        return render(request, "dashboard/confirm_delete_key.html", {"row": _row(key)})
    require_admin(request)
    try:
        key_delete(key, actor=user_actor(request.user, via="studio"))
    except DomainError as exc:
        if request.htmx:
            context = {"row": _row(key, row_error=exc.message), "can_manage": _can_manage(request)}
            return render(request, f"{PAGE}#key-row", context)
        context = {**_page_context(request), "page_error": exc.message}
        return render(request, PAGE, context, status=exc.status)
    return form_reply(request, back=reverse("dashboard:keys"), region=None, page=PAGE)
