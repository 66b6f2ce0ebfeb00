"""The Providers page: the configured memory providers (type, capabilities, health, which keys use
them), add, edit, delete and "test connection".

Every write goes through ``memory.services.providers`` (the rules of the REST API and the admin:
name, type and configuration checks, masking, "in use" refusals); this module parses the form and
shows the service's errors next to the field they name. Superusers only for writes, as on the API.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from dataclasses import dataclass

from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard.forms import ProviderForm, add_domain_error
from dashboard.views.base import can_change_settings, form_reply, require_admin, studio_view
from memory.backends.base import Health
from memory.backends.registry import TYPES
from memory.exceptions import DomainError, NotFound
from memory.models import MemoryProvider
from memory.services.audit import user_actor
from memory.services.auth import principal_for_staff
from memory.services.providers import (
    provider_delete,
    provider_get,
    provider_health,
    provider_json,
    provider_save,
)

PAGE = "dashboard/providers.html"
# Client event of a provider write: the list refreshes (the keys page's selects are built per request).
PROVIDERS_CHANGED_EVENT = "providers-changed"


# ---------------------------------------------------------------- the types' help


@dataclass(frozen=True)
class ConfigField:
    name: str
    kind: str
    default: str | None  # None: required


@dataclass(frozen=True)
class TypeHelp:
    """What the form shows for a type: its summary, its config class's docstring, and its fields."""

    name: str
    summary: str
    doc: str
    fields: list[ConfigField]


def _default_text(spec_field: dataclasses.Field) -> str | None:
    if spec_field.default is not dataclasses.MISSING:
        return "null" if spec_field.default is None else repr(spec_field.default)
    if spec_field.default_factory is not dataclasses.MISSING:
        return repr(spec_field.default_factory())
    return None


def type_catalogue() -> list[TypeHelp]:
    """Every available type of ``memory.backends.registry.TYPES`` with its configuration fields (read
    from the config dataclass: the same fields ``parse_config`` accepts)."""
    found = []
    for name, spec in TYPES.items():
        if spec.config is None:
            continue  # planned, not available: the registry refuses it
        fields = [ConfigField(f.name, str(f.type), _default_text(f)) for f in dataclasses.fields(spec.config)]
        doc = (inspect.getdoc(spec.config) or "").replace("``", "")
        found.append(TypeHelp(name, spec.summary, doc, fields))
    return found


# ---------------------------------------------------------------- shared pieces


def health_view(health: Health) -> dict:
    """A probe as the dot and the sentence next to it."""
    if health.ok:
        text = f"Connected ({health.latency_ms:.0f} ms)"
        return {"state": "ok", "text": text, "title": text, "detail": health.detail}
    text = f"Unreachable: {health.error or 'no answer'}"
    return {"state": "error", "text": text, "title": text, "detail": health.detail}


def _provider_or_404(name: str) -> MemoryProvider:
    try:
        return provider_get(name)
    except NotFound:
        raise Http404("No such provider") from None


def _rows() -> list[dict]:
    return [{"provider": p, **provider_json(p)} for p in MemoryProvider.objects.order_by("name")]


def _page_context(
    request, *, form: ProviderForm | None = None, editing: MemoryProvider | None = None
) -> dict:
    catalogue = type_catalogue()
    if form is None:
        form = _blank_form(catalogue, editing)
    return {
        "rows": _rows(),
        "form": form,
        "editing": editing,
        "catalogue": catalogue,
        "can_manage": can_change_settings(principal_for_staff(request.user)),
    }


def _blank_form(catalogue: list[TypeHelp], editing: MemoryProvider | None) -> ProviderForm:
    types = [t.name for t in catalogue]
    if editing is None:
        return ProviderForm(types=types, initial={"type": "redis" if "redis" in types else types[0]})
    shown = provider_json(editing)
    config = shown["config"] if shown["config"] is not None else {}
    return ProviderForm(
        types=types,
        initial={"name": editing.name, "type": editing.type, "config": json.dumps(config, indent=2)},
    )


def _render_page(request, context: dict, *, status: int = 200):
    return render(request, PAGE, context, status=status)


# ---------------------------------------------------------------- the page


@studio_view
@require_GET
def providers_page(request):
    """The list and the add form; ``?edit=<name>`` shows that provider in the form instead."""
    editing = _provider_or_404(request.GET["edit"]) if request.GET.get("edit") else None
    context = _page_context(request, editing=editing)
    if request.htmx and request.htmx.target == "provider-list":
        return render(request, f"{PAGE}#provider-list", context)
    return _render_page(request, context)


def _save(request, editing: MemoryProvider | None):
    require_admin(request)
    catalogue = type_catalogue()
    form = ProviderForm(request.POST, types=[t.name for t in catalogue])
    if form.is_valid():
        data = form.cleaned_data
        try:
            provider_save(
                name=data["name"],
                type=data["type"],
                config=data["config"],
                actor=user_actor(request.user, via="studio"),
                existing=editing,
            )
        except DomainError as exc:
            add_domain_error(form, exc, fields={"config": "config", "name": "name", "type": "type"})
        else:
            return form_reply(
                request,
                back=reverse("dashboard:providers"),
                region="provider-form",
                context=lambda: {**_page_context(request), "saved": data["name"]},
                events={PROVIDERS_CHANGED_EVENT: {}},
                page=PAGE,
            )
    context = _page_context(request, form=form, editing=editing)
    if request.htmx:
        return render(request, f"{PAGE}#provider-form", context)
    return _render_page(request, context, status=400)


@studio_view
@require_POST
def provider_add(request):
    return _save(request, None)


@studio_view
@require_http_methods(["GET", "POST"])
def provider_edit(request, name: str):
    """GET: the page with this provider in the form (its secrets masked); POST: save it. A masked
    secret sent back unchanged keeps the stored one (``provider_save``)."""
    provider = _provider_or_404(name)
    if request.method == "GET":
        context = _page_context(request, editing=provider)
        if request.htmx:
            return render(request, f"{PAGE}#provider-form", context)
        return _render_page(request, context)
    return _save(request, provider)


@studio_view
@require_http_methods(["GET", "POST"])
def provider_delete_view(request, name: str):
    """GET: a confirmation page (no JavaScript); POST: delete, refused while a key uses it."""
    provider = _provider_or_404(name)
    if request.method == "GET":
        return render(
            request, "dashboard/confirm_delete_provider.html", {"provider": provider_json(provider)}
        )
    require_admin(request)
    try:
        provider_delete(provider, actor=user_actor(request.user, via="studio"))
    except DomainError as exc:
        context = {**_page_context(request), "list_error": exc.message}
        if request.htmx:
            return render(request, f"{PAGE}#provider-list", context)
        return _render_page(request, context, status=exc.status)
    return form_reply(
        request,
        back=reverse("dashboard:providers"),
        region="provider-list",
        context=lambda: _page_context(request),
        page=PAGE,
    )


@studio_view
@require_POST
def provider_test(request, name: str):
    """ "Test connection": probe the provider now and show the answer (and what the probe found)."""
    provider = _provider_or_404(name)
    result = {"provider": provider, "health": health_view(provider_health(provider))}
    if request.htmx:
        return render(request, f"{PAGE}#provider-test", result)
    return _render_page(request, {**_page_context(request), "tested": result})


@studio_view
@require_GET
def provider_health_dot(request, name: str):
    """The health dot of a list row, loaded after the page (a probe may take a while)."""
    provider = _provider_or_404(name)
    return render(
        request,
        f"{PAGE}#provider-dot",
        {"provider": provider, "health": health_view(provider_health(provider))},
    )
