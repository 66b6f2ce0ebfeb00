"""Token estimate and the token-budget walk over ranked memories (what retrieval and its preview return).

Pure functions. The estimate is deliberately crude and provider-independent, because it must match
what the original reported (stats, previews) and what operators tuned ``maxTokens`` against.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

__all__ = ["estimate_tokens", "walk_budget"]

T = TypeVar("T")


def estimate_tokens(text: object) -> int:
    """Return ``ceil(len(text) / 4)``, with the length in UTF-16 code units (JavaScript's ``length``).

    Anything that is not a ``str`` (``None``, numbers, …) and ``""`` give 0. Never raises.
    """
    if not isinstance(text, str) or not text:
        return 0
    if text.isascii():
        units = len(text)
    else:
        # Astral characters (emoji, …) are two code units in JavaScript; "surrogatepass" because
        # JSON-decoded text may carry lone surrogates.
        units = len(text.encode("utf-16-le", "surrogatepass")) // 2
    return math.ceil(units / 4)


def _content_of(item: Any) -> object:
    """The ``content`` of a memory given as a mapping or as an object with a ``content`` attribute."""
    if isinstance(item, Mapping):
        return item.get("content")
    return getattr(item, "content", None)


def walk_budget(
    items: Iterable[T],
    max_tokens: int,
    *,
    limit: int | None = None,
    content: Callable[[T], object] = _content_of,
) -> tuple[list[T], int]:
    """Keep the longest prefix of ``items`` (already ranked) that fits ``max_tokens``.

    Returns ``(kept, total_tokens)`` where ``total_tokens`` is the sum of :func:`estimate_tokens` of
    the kept items' content. Walking in order, an item that would push the total over ``max_tokens``
    stops the walk (no skipping ahead to smaller items) — except when nothing is kept yet: the first
    item is always kept, however large, so a non-empty candidate list never yields an empty result.
    ``limit`` (the preview's item cap) stops the walk once that many items are kept.

    ``max_tokens <= 0`` is not special-cased: the original treats it as "memory disabled" before ever
    walking, and so must the caller. ``content`` extracts the text of an item; by default the
    ``content`` key of a mapping or the ``content`` attribute of an object.
    """
    kept: list[T] = []
    total = 0
    for item in items:
        if limit is not None and len(kept) >= limit:
            break
        tokens = estimate_tokens(content(item))
        if total + tokens > max_tokens and kept:
            break
        kept.append(item)
        total += tokens
        if total > max_tokens:
            # Only the oversized first item gets here: it was kept anyway, and nothing may follow it.
            break
    return kept, total
