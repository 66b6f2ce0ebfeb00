"""Server-rendered SVG charts (no JavaScript, no charting library): the Engine tab's memory activity,
for owners wherever their memories live, and the Ledger's injected tokens per day per key."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from datetime import date, timedelta

from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from memory import selectors, store
from memory.backends.selection import manager_for, provider_owners
from memory.principals import Principal
from memory.selectors import Activity

TYPE_COLOURS = {
    "factual": "#2563eb",
    "episodic": "#059669",
    "procedural": "#d97706",
    "semantic": "#dc2626",
    "short_term": "#7c3aed",
    "long_term": "#0891b2",
    "entity": "#db2777",
}


def owner_activity(
    *, principal: Principal, owner_ids: Collection[uuid.UUID] | None, days: int = 30
) -> Activity:
    """``memory.selectors.memory_activity`` for owners of which some keep their memories with a provider.

    Without a provider-backed owner in ``owner_ids`` (None: every owner) it is exactly the native
    selector (two SQL queries). A provider-backed owner's records are read from its provider
    (``memory.store.all_records``) and counted here: providers have no per-day aggregate.
    """
    providers = provider_owners(owner_ids)
    if not providers:
        return selectors.memory_activity(principal=principal, owner_ids=owner_ids, days=days)
    provider_ids = {key.pk for key in providers}
    native_ids = None if owner_ids is None else [o for o in owner_ids if o not in provider_ids]
    if native_ids is None or native_ids:
        base = selectors.memory_activity(principal=principal, owner_ids=native_ids, days=days)
    else:
        today = timezone.localdate()
        base = Activity(days=[(today - timedelta(days=days - 1 - i), 0) for i in range(days)], by_type=[])
    start = base.days[0][0]
    per_day: Counter = Counter(dict(base.days))
    by_type: Counter = Counter(dict(base.by_type))
    for key in providers:
        manager = manager_for(key)
        if manager is None:
            continue
        for record in store.all_records(manager, key.pk):
            by_type[record.type] += 1
            day = timezone.localdate(record.created_at)
            if day >= start:
                per_day[day] += 1
    return Activity(
        days=[(day, per_day[day]) for day, _ in base.days],
        by_type=sorted(by_type.items(), key=lambda item: (-item[1], item[0])),
    )


def _n(value: float) -> str:
    """Coordinates with one decimal (format_html escapes its arguments to strings first)."""
    return f"{value:.1f}"


def _nice_max(value: int) -> int:
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000):
        if value <= step * 4:
            return max(4, step * 4)
    return value


def per_day_svg(activity: Activity, *, width: int = 640, height: int = 200) -> SafeString:
    """A bar chart of memories created per day."""
    left, right, top, bottom = 36, 8, 12, 28
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = _nice_max(max((n for _, n in activity.days), default=0))
    slot = plot_w / max(1, len(activity.days))
    bar_w = max(2.0, slot * 0.7)
    grid = format_html_join(
        "",
        '<line x1="{}" x2="{}" y1="{}" y2="{}" class="grid"/>'
        '<text x="{}" y="{}" class="axis" text-anchor="end">{}</text>',
        (
            (
                left,
                width - right,
                _n(top + plot_h * (1 - f)),
                _n(top + plot_h * (1 - f)),
                left - 6,
                _n(top + plot_h * (1 - f) + 4),
                round(peak * f),
            )
            for f in (0, 0.25, 0.5, 0.75, 1)
        ),
    )
    bars = format_html_join(
        "",
        '<rect x="{}" y="{}" width="{}" height="{}" rx="2" class="bar"><title>{}: {} memor{}</title></rect>',
        (
            (
                _n(left + i * slot + (slot - bar_w) / 2),
                _n(top + plot_h - plot_h * n / peak),
                _n(bar_w),
                _n(plot_h * n / peak),
                day.isoformat(),
                n,
                "y" if n == 1 else "ies",
            )
            for i, (day, n) in enumerate(activity.days)
        ),
    )
    labels = format_html_join(
        "",
        '<text x="{}" y="{}" class="axis" text-anchor="middle">{}</text>',
        (
            (_n(left + i * slot + slot / 2), height - 8, day.strftime("%b %d"))
            for i, (day, _) in enumerate(activity.days)
            if (len(activity.days) - 1 - i) % 7 == 0
        ),
    )
    return format_html(
        '<svg class="chart" viewBox="0 0 {w} {h}" width="100%" role="img" aria-labelledby="chart-days-title">'
        '<title id="chart-days-title">Memories created per day, last {n} days ({total} in total)</title>'
        "{grid}{bars}{labels}</svg>",
        w=width,
        h=height,
        n=len(activity.days),
        total=activity.total_in_window,
        grid=grid,
        bars=bars,
        labels=labels,
    )


def per_type_svg(activity: Activity, *, width: int = 640) -> SafeString:
    """Horizontal bars: live memories per type."""
    if not activity.by_type:
        return mark_safe('<p class="muted">No memories for this owner yet.</p>')  # noqa: S308 (constant)
    row_h, label_w, count_w = 26, 96, 56
    height = row_h * len(activity.by_type) + 4
    peak = max(n for _, n in activity.by_type) or 1
    span = width - label_w - count_w
    rows = format_html_join(
        "",
        '<text x="{lx}" y="{ty}" class="axis label" text-anchor="end">{name}</text>'
        '<rect x="{x}" y="{y}" width="{bw}" height="16" rx="3" fill="{colour}">'
        "<title>{name}: {n}</title></rect>"
        '<text x="{cx}" y="{ty}" class="axis count">{n}</text>',
        (
            {
                "lx": label_w - 8,
                "ty": i * row_h + 17,
                "name": name,
                "x": label_w,
                "y": i * row_h + 4,
                "bw": _n(max(2.0, span * n / peak)),
                "colour": TYPE_COLOURS.get(name, "#64748b"),
                "cx": _n(label_w + max(2.0, span * n / peak) + 6),
                "n": n,
            }
            for i, (name, n) in enumerate(activity.by_type)
        ),
    )
    return format_html(
        '<svg class="chart" viewBox="0 0 {w} {h}" width="100%" role="img" aria-labelledby="chart-types-title">'
        '<title id="chart-types-title">Memories per type</title>{rows}</svg>',
        w=width,
        h=height,
        rows=rows,
    )


# Colours of the keys in the tokens chart, in order of their total (the biggest spender first).
KEY_COLOURS = ("#2f5bea", "#059669", "#d97706", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#65a30d")
OTHER_KEYS_COLOUR = "#9aa3af"


@dataclass(frozen=True)
class KeySeries:
    """One key's line in the tokens chart's legend: its colour and its total over the window."""

    key_id: str
    name: str
    colour: str
    total: int


@dataclass(frozen=True)
class TokensChart:
    """The injected tokens per day per key (oldest day first), ready to draw."""

    days: list[date]
    series: list[KeySeries]
    per_day: dict[date, dict[str, int]]  # day -> key id (or "other") -> tokens

    @property
    def total(self) -> int:
        return sum(s.total for s in self.series)

    def last(self, days: int) -> TokensChart:
        """The same chart over its last ``days`` days, the keys keeping their colours (a phone's)."""
        kept = self.days[-days:]
        return TokensChart(days=kept, series=self.series, per_day={d: self.per_day[d] for d in kept})


def tokens_chart(
    rows: list[tuple[date, object, int]], *, names: dict[str, str], days: int = 30
) -> TokensChart:
    """Shape ``memory.services.ledger.tokens_per_day``'s rows for :func:`tokens_per_day_svg`.

    Beyond ``len(KEY_COLOURS)`` keys, the smallest spenders are summed as "other keys": a chart with
    twenty colours says nothing. ``names`` maps key ids to names (a deleted key shows its id).
    """
    today = timezone.localdate()
    window = [today - timedelta(days=days - 1 - i) for i in range(days)]
    totals: Counter = Counter()
    raw: dict[date, Counter] = {day: Counter() for day in window}
    for day, key_id, tokens in rows:
        if day in raw:
            raw[day][str(key_id)] += int(tokens)
            totals[str(key_id)] += int(tokens)
    ranked = sorted(totals, key=lambda k: (-totals[k], names.get(k, k)))
    shown, rest = ranked[: len(KEY_COLOURS)], ranked[len(KEY_COLOURS) :]
    if len(rest) == 1:  # one more key fits better than an "other keys" entry holding only it
        shown, rest = ranked, []
    series = [
        KeySeries(k, names.get(k, k), KEY_COLOURS[i % len(KEY_COLOURS)], totals[k])
        for i, k in enumerate(shown)
    ]
    if rest:
        series.append(
            KeySeries("other", f"{len(rest)} other keys", OTHER_KEYS_COLOUR, sum(totals[k] for k in rest))
        )
    kept = set(shown)
    per_day: dict[date, dict[str, int]] = {}
    for day, counts in raw.items():
        row = {k: n for k, n in counts.items() if k in kept}
        other = sum(n for k, n in counts.items() if k not in kept)
        if other:
            row["other"] = other
        per_day[day] = row
    return TokensChart(days=window, series=series, per_day=per_day)


def _nice_ceiling(value: int) -> int:
    """The smallest 4 × (1, 2, 2.5 or 5 × 10^k) at or above ``value``: four round grid steps at any
    size (a day of tokens runs into the millions, past ``_nice_max``'s table)."""
    magnitude = 1
    while True:
        for step in (1, 2, 2.5, 5):
            if value <= step * magnitude * 4:
                return max(4, int(step * magnitude * 4))
        magnitude *= 10


def tokens_per_day_svg(
    chart: TokensChart, *, width: int = 640, height: int = 200, title_id: str = "chart-tokens-title"
) -> SafeString:
    """Stacked bars: the memory tokens the gateway injected each day, one colour per key
    (``title_id``: the id of its title, unique on the page)."""
    left, right, top, bottom = 48, 8, 12, 28
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = _nice_ceiling(max((sum(v.values()) for v in chart.per_day.values()), default=0))
    slot = plot_w / max(1, len(chart.days))
    bar_w = max(2.0, slot * 0.7)
    grid = format_html_join(
        "",
        '<line x1="{}" x2="{}" y1="{}" y2="{}" class="grid"/>'
        '<text x="{}" y="{}" class="axis" text-anchor="end">{}</text>',
        (
            (
                left,
                width - right,
                _n(top + plot_h * (1 - f)),
                _n(top + plot_h * (1 - f)),
                left - 6,
                _n(top + plot_h * (1 - f) + 4),
                f"{round(peak * f):,}",
            )
            for f in (0, 0.25, 0.5, 0.75, 1)
        ),
    )
    segments = []
    for i, day in enumerate(chart.days):
        base = top + plot_h
        counts = chart.per_day.get(day, {})
        for serie in chart.series:
            n = counts.get(serie.key_id, 0)
            if not n:
                continue
            h = plot_h * n / peak
            base -= h
            segments.append(
                (
                    _n(left + i * slot + (slot - bar_w) / 2),
                    _n(base),
                    _n(bar_w),
                    _n(h),
                    serie.colour,
                    serie.key_id,
                    day.isoformat(),
                    serie.name,
                    f"{n:,}",
                )
            )
    bars = format_html_join(
        "",
        '<rect x="{}" y="{}" width="{}" height="{}" fill="{}" data-key="{}">'
        "<title>{}, {}: {} tokens</title></rect>",
        segments,
    )
    labels = format_html_join(
        "",
        '<text x="{}" y="{}" class="axis" text-anchor="middle">{}</text>',
        (
            (_n(left + i * slot + slot / 2), height - 8, day.strftime("%b %d"))
            for i, day in enumerate(chart.days)
            if (len(chart.days) - 1 - i) % 7 == 0
        ),
    )
    return format_html(
        '<svg class="chart" viewBox="0 0 {w} {h}" width="100%" role="img" aria-labelledby="{title_id}">'
        '<title id="{title_id}">Memory tokens injected per day and key, last {n} days '
        "({total} in total)</title>{grid}{bars}{labels}</svg>",
        title_id=title_id,
        w=width,
        h=height,
        n=len(chart.days),
        total=f"{sum(sum(v.values()) for v in chart.per_day.values()):,}",
        grid=grid,
        bars=bars,
        labels=labels,
    )
