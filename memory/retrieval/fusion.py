"""Reciprocal-rank fusion of ranked lists (hybrid retrieval)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field


@dataclass
class Fused:
    item: Hashable
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def rrf(
    lists: dict[str, Sequence[Hashable]], *, k: int = 60, weights: dict[str, float] | None = None
) -> list[Fused]:
    """Fuse named ranked lists: ``score = Σ weight / (k + rank)`` (ranks from 1).

    An item ranked first in two lists with ``k = 60`` scores 2/61 ≈ 0.03279;
    first in one list only, 1/61. Ties keep the order of first appearance.
    """
    weights = weights or {}
    fused: dict[Hashable, Fused] = {}
    for name, items in lists.items():
        weight = weights.get(name, 1.0)
        for rank, item in enumerate(items, start=1):
            entry = fused.get(item)
            if entry is None:
                entry = fused[item] = Fused(item=item, score=0.0)
            entry.score += weight / (k + rank)
            entry.ranks.setdefault(name, rank)
    return sorted(fused.values(), key=lambda f: f.score, reverse=True)
