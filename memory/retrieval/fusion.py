"""Fusion of the ranked lists of hybrid retrieval: by rank (RRF) or by normalised score."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

H = TypeVar("H", bound=Hashable)


@dataclass
class Fused(Generic[H]):
    item: H
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def rrf(
    lists: Mapping[str, Sequence[H]], *, k: int = 60, weights: dict[str, float] | None = None
) -> list[Fused[H]]:
    """Fuse named ranked lists: ``score = Σ weight / (k + rank)`` (ranks from 1).

    An item ranked first in two lists with ``k = 60`` scores 2/61 ≈ 0.03279;
    first in one list only, 1/61. Ties keep the order of first appearance.
    """
    weights = weights or {}
    fused: dict[H, Fused[H]] = {}
    for name, items in lists.items():
        weight = weights.get(name, 1.0)
        for rank, item in enumerate(items, start=1):
            entry = fused.get(item)
            if entry is None:
                entry = fused[item] = Fused(item=item, score=0.0)
            entry.score += weight / (k + rank)
            entry.ranks.setdefault(name, rank)
    return sorted(fused.values(), key=lambda f: f.score, reverse=True)


def normalized(
    lists: Mapping[str, Sequence[tuple[H, float]]], *, weights: dict[str, float] | None = None
) -> list[Fused[H]]:
    """Fuse named lists of ``(item, score)`` (higher is better) by their scores, not only their ranks.

    Each list's scores are min-max normalised over its own candidates (its best is 1, its worst 0;
    a list whose scores are all equal gives each 1), an item a list did not return counts 0 there,
    and the fused score is the weighted mean (equal weights by default). Unlike RRF it keeps how far
    ahead a list's best candidates are: a near-exact keyword match or a very close vector is not
    levelled with the runner-up. Ties keep the order of first appearance.
    """
    weights = weights or {}
    total = sum(weights.get(name, 1.0) for name in lists) or 1.0
    fused: dict[H, Fused[H]] = {}
    for name, scored in lists.items():
        if not scored:
            continue
        weight = weights.get(name, 1.0) / total
        values = [score for _, score in scored]
        low, high = min(values), max(values)
        span = high - low
        for rank, (item, score) in enumerate(scored, start=1):
            entry = fused.get(item)
            if entry is None:
                entry = fused[item] = Fused(item=item, score=0.0)
            entry.score += weight * ((score - low) / span if span > 0 else 1.0)
            entry.ranks.setdefault(name, rank)
    return sorted(fused.values(), key=lambda f: f.score, reverse=True)
