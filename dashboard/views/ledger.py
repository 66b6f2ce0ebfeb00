"""The Ledger page: every gateway answer that carried memory (``memory.services.ledger``), live.

``/dashboard/ledger`` lists the entries, newest first, filtered by key, session, model, date range
and the id of a memory they injected, with a chart of the memory tokens injected per day per key;
the list reloads itself when the websocket says that an entry was written. ``/dashboard/ledger/<id>``
shows one entry: the exact system message that was sent, each injected memory with its scores and a
link to it (a memory deleted since is shown as deleted, never brought back), what extraction learned
afterwards, and a replay of the gateway's retrieval as of now beside what was injected then.

Staff sessions are global (``memory.services.auth.principal_for_staff``): every key's entries are
shown, and the filters narrow them. The replay runs the entry's own query (the text retrieval
ranked for, kept encrypted with the entry) unless the operator types another; the Sandbox link
carries it on.
"""

from __future__ import annotations

import math
import uuid
from datetime import date, datetime, time, timedelta
from urllib.parse import urlencode

from django import forms
from django.conf import settings as django_settings
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard.charts import tokens_chart, tokens_per_day_svg
from dashboard.views.base import int_param, studio_view
from memory import store
from memory.backends.base import BackendError
from memory.bounds import MAX_POSITION
from memory.exceptions import DomainError, NotFound
from memory.models import ApiKey, InjectionEntry, Memory
from memory.principals import Principal
from memory.retrieval.preview import STRATEGY_NAMES, gateway_preview
from memory.services.auth import principal_for_staff
from memory.services.ledger import deleted_memory_ids, entry_json, ledger_get, ledger_query, tokens_per_day

PAGE = "dashboard/ledger.html"
DETAIL = "dashboard/ledger_detail.html"
PER_PAGE = 50
CHART_DAYS = 30
PHONE_CHART_DAYS = 14
# Signals in the order the detail shows them, with the label of each (memory.services.ledger.memory_refs).
SIGNALS = (("vec", "vec"), ("fts", "fts"), ("session", "session"))
FLAGS = (("answerType", "names a time"), ("inPeriod", "in the period asked about"))
TIER_BADGES = {"fts5": "info", "vector": "success", "hybrid": "warning", "hybrid-rrf": "warning"}


class LedgerFilterForm(forms.Form):
    """The list's filters, all optional; the dates are local days, ``until`` included."""

    key = forms.UUIDField(required=False)
    session = forms.CharField(max_length=200, required=False, strip=True)
    model = forms.CharField(max_length=200, required=False, strip=True)
    since = forms.DateField(required=False)
    until = forms.DateField(required=False)
    memory = forms.UUIDField(required=False, label="Memory id")

    def clean(self):
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and until < since:
            self.add_error("until", "The end of the range is before its start.")
        return data


class ReplayForm(forms.Form):
    query = forms.CharField(max_length=8000, strip=True)


def _start_of(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def strategy_name(strategy: str) -> str:
    """The settings' name of the strategy an entry records (the engine calls "recent" "exact")."""
    return STRATEGY_NAMES.get(strategy, strategy)


def _key_names() -> dict[str, str]:
    return {str(key.pk): key.name for key in ApiKey.objects.only("id", "name")}


def _list_query(filters: dict) -> dict:
    """The non-empty filters as URL parameters (links of pages and of the detail's "filter by")."""
    return {name: str(value) for name, value in filters.items() if value not in (None, "")}


def _rows(page, names: dict[str, str]) -> list[dict]:
    rows = []
    for entry in page.entries:
        shown = entry_json(entry, deleted_ids=page.deleted_ids)
        shown["key_name"] = names.get(shown["apiKeyId"], shown["apiKeyId"])
        shown["at_dt"] = entry.at
        shown["deleted_count"] = sum(1 for m in shown["memories"] if m["deleted"])
        shown["url"] = reverse("dashboard:ledger-entry", args=[entry.id])
        shown["strategy_name"] = strategy_name(entry.strategy)
        # A tier that only repeats the strategy's name ("recent · recent") says nothing.
        shown["other_tiers"] = [tier for tier in shown["tiers"] if tier != shown["strategy_name"]]
        rows.append(shown)
    return rows


def _chart_context(principal: Principal, names: dict[str, str], key_id: str | None) -> dict:
    rows = tokens_per_day(principal, days=CHART_DAYS)
    if key_id:
        rows = [row for row in rows if str(row[1]) == key_id]
    chart = tokens_chart(rows, names=names, days=CHART_DAYS)
    return {
        "chart": chart,
        "chart_svg": tokens_per_day_svg(chart, width=960, height=220),
        # A phone gets the last two weeks, drawn narrower, rather than a month too small to read.
        "chart_svg_narrow": tokens_per_day_svg(
            chart.last(PHONE_CHART_DAYS), width=420, height=200, title_id="chart-tokens-narrow-title"
        ),
        "chart_narrow_days": PHONE_CHART_DAYS,
    }


def list_context(request) -> tuple[dict, int]:
    """The page's filters, entries and chart; the status is 400 when a filter does not parse."""
    principal = principal_for_staff(request.user)
    names = _key_names()
    form = LedgerFilterForm(request.GET, auto_id="ledger_%s")
    context: dict = {
        "form": form,
        "keys": ApiKey.objects.order_by("name", "created_at"),
        "retention_days": django_settings.MEMORY_LEDGER_RETENTION_DAYS,
        "page": 1,
        "pages": 1,
        "total": 0,
        "rows": [],
    }
    if not form.is_valid():
        context.update(_chart_context(principal, names, None))
        return context, 400
    data = form.cleaned_data
    key_id = str(data["key"]) if data["key"] else None
    filters = {
        "key": key_id,
        "session": data["session"],
        "model": data["model"],
        "since": data["since"].isoformat() if data["since"] else None,
        "until": data["until"].isoformat() if data["until"] else None,
        "memory": str(data["memory"]) if data["memory"] else None,
    }
    number = int_param(request.GET.get("page"), 1, lo=1, hi=MAX_POSITION)

    def query(number: int):
        return ledger_query(
            principal,
            api_key_id=key_id,
            session_id=data["session"] or None,
            model=data["model"] or None,
            since=_start_of(data["since"]) if data["since"] else None,
            until=_start_of(data["until"] + timedelta(days=1)) if data["until"] else None,
            memory_id=data["memory"],
            limit=PER_PAGE,
            offset=(number - 1) * PER_PAGE,
        )

    page = query(number)
    pages = max(1, math.ceil(page.total / PER_PAGE))
    if number > pages:
        number = pages
        page = query(number)
    link = _list_query(filters)

    def url(n: int) -> str | None:
        if not 1 <= n <= pages:
            return None
        return f"{reverse('dashboard:ledger')}?{urlencode({**link, 'page': n} if n > 1 else link)}"

    context.update(
        {
            "filters": filters,
            "filtered": bool(link),
            "rows": _rows(page, names),
            "total": page.total,
            "page": number,
            "pages": pages,
            "prev_url": url(number - 1),
            "next_url": url(number + 1),
            **_chart_context(principal, names, key_id),
        }
    )
    return context, 200


@studio_view
@require_GET
def ledger_page(request):
    """The page; an htmx request for ``ledger-list`` (the filters, a page link, a live refresh) gets
    the list and, out of band, the chart."""
    context, status = list_context(request)
    if request.htmx and request.htmx.target == "ledger-list":
        # Errors are shown in the list region: htmx swaps only 2xx answers.
        html = render_to_string(f"{PAGE}#ledger-list", context, request=request)
        html += render_to_string(f"{PAGE}#ledger-chart", {**context, "oob": True}, request=request)
        return HttpResponse(html)
    return render(request, PAGE, context, status=status)


# ---------------------------------------------------------------- one entry


def _memory_url(memory: Memory) -> str:
    """The Memories tab on the memory's key, searched down to it, its edit row open."""
    query = {
        "tab": "memories",
        "owner": str(memory.owner_id),
        "q": memory.key or memory.content[:60],
        "edit": str(memory.uuid),
    }
    return f"{reverse('dashboard:memory')}?{urlencode(query)}"


def _current(principal: Principal, memory_id: str) -> Memory | None:
    """The memory as it is now; None when it cannot be shown (expired, or its store cannot be read)."""
    try:
        return store.memory_get(principal=principal, memory_id=memory_id)
    except (NotFound, BackendError):
        # Not deleted (deleted_memory_ids says so), but not readable now: the page still shows the rest.
        return None


def _injected(principal: Principal, shown: dict) -> list[dict]:
    """The entry's memories, each with its signals and, unless deleted since, what it says now."""
    items = []
    for ref in shown["memories"]:
        signals = ref.get("signals") or {}
        item = {
            **ref,
            "badge": TIER_BADGES.get(ref.get("tier"), "neutral"),
            "signal_list": [
                (label, signals[name]) for name, label in SIGNALS if signals.get(name) is not None
            ],
            "flag_list": [label for name, label in FLAGS if signals.get(name)],
            "memory": None,
            "url": None,
        }
        if not ref["deleted"]:
            memory = _current(principal, ref["id"])
            if memory is not None:
                item["memory"], item["url"] = memory, _memory_url(memory)
        items.append(item)
    return items


def _learned(principal: Principal, extraction: dict | None, deleted: set[str]) -> list[dict]:
    items = []
    for memory_id in (extraction or {}).get("learned") or []:
        memory = None if memory_id in deleted else _current(principal, memory_id)
        items.append(
            {
                "id": memory_id,
                "deleted": memory_id in deleted,
                "memory": memory,
                "url": _memory_url(memory) if memory else None,
            }
        )
    return items


def _entry_or_404(principal: Principal, entry_id: uuid.UUID) -> InjectionEntry:
    try:
        return ledger_get(principal, entry_id)
    except NotFound:
        raise Http404("No such ledger entry") from None


def _sandbox_url(entry: InjectionEntry, query: str) -> str:
    params = {"tab": "sandbox", "owner": str(entry.api_key_id)}
    if query:
        params["query"] = query
    if entry.session_id:
        params["session_id"] = entry.session_id
    return f"{reverse('dashboard:memory')}?{urlencode(params)}"


def _replay(principal: Principal, entry: InjectionEntry, injected: list[dict], query: str) -> dict:
    """The gateway's retrieval for ``query`` with the entry's key and session, now, compared with
    what the entry injected: each memory of either side says where it ranks on the other."""
    try:
        preview = gateway_preview(
            principal=principal, api_key=entry.api_key, query=query, session_id=entry.session_id or None
        )
    except DomainError as exc:
        return {"replay_error": exc.message}
    then_rank = {item["id"]: item["rank"] for item in injected}
    now = []
    for rank, hit in enumerate(preview["memories"], start=1):
        now.append(
            {
                **hit,
                "rank": rank,
                "then_rank": then_rank.get(hit["id"]),
                "badge": TIER_BADGES.get(hit.get("tier"), "neutral"),
            }
        )
    now_rank = {hit["id"]: hit["rank"] for hit in now}
    then = [{**item, "now_rank": now_rank.get(item["id"])} for item in injected]
    return {
        "replay": {
            "then": then,
            "now": now,
            "total_now": preview["totalTokensUsed"],
            "budget": preview["budgetMaxTokens"],
            "strategy_now": strategy_name((preview.get("resolution") or {}).get("strategyUsed") or ""),
            "same": [item["id"] for item in then] == [hit["id"] for hit in now],
            "injection_enabled": preview["gateway"]["injectionEnabled"],
        }
    }


def entry_context(request, entry: InjectionEntry) -> dict:
    principal = principal_for_staff(request.user)
    deleted = deleted_memory_ids([entry])
    shown = entry_json(entry, deleted_ids=deleted, detail=True)
    injected = _injected(principal, shown)
    asked = request.GET if "query" in request.GET else ({"query": entry.query} if entry.query else None)
    replay_form = ReplayForm(asked, auto_id="replay_%s")
    query = replay_form.data.get("query", "").strip() if replay_form.is_bound else ""
    context = {
        "entry": entry,
        "shown": shown,
        "key_name": entry.api_key.name,
        "strategy_name": strategy_name(entry.strategy),
        "injected": injected,
        "learned": _learned(principal, shown["extraction"], deleted),
        "replay_form": replay_form,
        "sandbox_url": _sandbox_url(entry, query),
        "list_url": reverse("dashboard:ledger"),
        "key_url": f"{reverse('dashboard:ledger')}?{urlencode({'key': str(entry.api_key_id)})}",
        "session_url": (
            f"{reverse('dashboard:ledger')}?{urlencode({'session': entry.session_id})}"
            if entry.session_id
            else None
        ),
    }
    if replay_form.is_bound and replay_form.is_valid():
        context.update(_replay(principal, entry, injected, replay_form.cleaned_data["query"]))
    return context


@studio_view
@require_GET
def ledger_entry(request, entry_id: uuid.UUID):
    """One entry; ``?query=`` replays the retrieval now (an htmx request gets the replay region)."""
    entry = _entry_or_404(principal_for_staff(request.user), entry_id)
    context = entry_context(request, entry)
    if request.htmx and request.htmx.target == "ledger-replay":
        return render(request, f"{DETAIL}#ledger-replay", context)
    status = 400 if context["replay_form"].is_bound and not context["replay_form"].is_valid() else 200
    return render(request, DETAIL, context, status=status)
