"""Server-rendered SVG charts for the Engine tab (no JavaScript, no charting library), and the
activity they draw for owners wherever their memories live."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Collection
from datetime import timedelta

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
