"""The Sandbox tab: what the gateway would recall for a query, and what it would send upstream for a chat
request. Nothing is stored and no access counter moves."""

from __future__ import annotations

import json

from django.shortcuts import render
from django.views.decorators.http import require_POST

from dashboard.forms import DEFAULT_CHAT_REQUEST, STRATEGY_LABELS, InjectionForm, SandboxForm
from dashboard.owners import OwnerScope, owner_scope, write_owner
from dashboard.views.base import PAGE, render_page, studio_view
from gateway.chat import GatewayError, route_and_inject, validate_body
from memory import selectors
from memory.conf import get_memory_settings
from memory.exceptions import DomainError
from memory.models import ApiKey
from memory.retrieval.preview import gateway_floor, gateway_preview

TIER_BADGES = {
    "fts5": "info",
    "vector": "success",
    "hybrid": "warning",
    "hybrid-rrf": "warning",
    "qdrant": "neutral",
    "recent": "neutral",
}


def sandbox_context(request, scope: OwnerScope) -> dict:
    """The Sandbox tab; with ``?query=`` the gateway's retrieval for it (``sandbox-results``)."""
    bound = "query" in request.GET
    form = SandboxForm(request.GET if bound else None, auto_id="sandbox_%s")
    settings = get_memory_settings()
    # Unbound, or a field left empty: the gateway's own value is shown (and used).
    strategy = form.data.get("strategy") or settings.retrieval_strategy
    budget = form.data.get("budget") or settings.maxTokens
    context = {
        "scope": scope,
        "sandbox_form": form,
        "strategy_labels": STRATEGY_LABELS,
        "sandbox_strategy": strategy,
        "sandbox_budget": budget,
        "gateway_strategy": settings.retrieval_strategy,
        "gateway_budget": settings.maxTokens,
        "vec_min_score": gateway_floor(settings),
    }
    if bound and not scope.is_empty and form.is_valid():
        context.update(_preview(scope, form.cleaned_data))
    query = form.data.get("query", "") if bound else ""
    sample = json.loads(json.dumps(DEFAULT_CHAT_REQUEST))
    if query:
        sample["messages"][-1]["content"] = query
    context["injection_form"] = InjectionForm(
        initial={"request_json": json.dumps(sample, indent=2)}, auto_id="inject_%s"
    )
    return context


def _preview(scope: OwnerScope, data: dict) -> dict:
    """The gateway's retrieval for the selected key, widened only where the form asks."""
    try:
        preview = gateway_preview(
            principal=scope.principal,
            api_key=scope.selected,
            query=data["query"],
            session_id=data["session_id"] or None,
            strategy=data["strategy"],
            max_tokens=data["budget"],
            below_floor=data["below_floor"],
        )
    except DomainError as exc:
        return {"preview_error": exc.message}
    used, budget = preview.get("totalTokensUsed") or 0, preview.get("budgetMaxTokens") or 0
    selected = scope.selected.pk if scope.selected is not None else None
    for item in preview["memories"]:
        item["badge"] = TIER_BADGES.get(item.get("tier"), "neutral")
        owner = _uuid_or_none(item.get("apiKeyId"))
        # The global scope reads other owners' memories too: say whose each one is.
        item["owner_name"] = scope.name_of(owner) if owner != selected else ""
    return {
        "preview": preview,
        "resolution": preview.get("resolution") or {},
        "budget_pct": f"{min(100.0, used / max(1, budget) * 100):.1f}",
    }


def _uuid_or_none(value):
    try:
        return selectors.parse_memory_id(value)
    except DomainError:
        return value


def injection_preview(*, owner: ApiKey, request_body, session_id: str | None) -> dict:
    """The body the gateway would send upstream for ``request_body`` from ``owner``'s key.

    The gateway's own validation, routing and injection (``gateway.chat.route_and_inject``), with
    access counters left alone: nothing is stored. Raises ``gateway.chat.GatewayError`` when the
    gateway would refuse the request (its message says why).
    """
    routed = route_and_inject(
        api_key=owner, body=validate_body(request_body), session_id=session_id, touch=False
    )
    return {
        "injected": routed.injected,
        "recalled": routed.recalled,
        "memoryOn": routed.memory_on,
        "provider": routed.target,
        "routedTo": routed.provider.name,
        "query": routed.query,
        "memories": routed.memories,
        "resolution": routed.resolution,
        "request": routed.body,
    }


@studio_view
@require_POST
def sandbox_inject(request):
    """The messages the gateway would send upstream for this chat request (nothing is stored)."""
    scope = owner_scope(request)
    form = InjectionForm(request.POST, auto_id="inject_%s")
    context = {"scope": scope, "injection_form": form}
    if form.is_valid():
        body = form.cleaned_data["request_json"]
        try:
            owner = write_owner(request, scope)
            outcome = injection_preview(
                owner=owner, request_body=body, session_id=form.cleaned_data["session_id"] or None
            )
        except (DomainError, GatewayError) as exc:
            context["injection_error"] = exc.message
        else:
            context["injection"] = {
                **outcome,
                "owner_name": owner.name,
                "sent_json": json.dumps(outcome["request"], indent=2, ensure_ascii=False),
            }
    if not request.htmx:
        tab = {k: v for k, v in sandbox_context(request, scope).items() if k != "injection_form"}
        return render_page(request, scope, "sandbox", {**context, **tab})
    return render(request, f"{PAGE}#injection-result", context)
