"""The composite ranking (``ScoredMemory``): how relevant, how recent and how important a memory is,
in one score.

``score = (w_semantic · semantic + w_recency · recency + w_importance · importance) / Σ w``, each
signal in 0..1; the default weights 0.5 / 0.3 / 0.2 sum to 1, so the score is the plain weighted sum.

- **semantic**: how relevant the memory is to the query, as the ranking that found the candidates
  scored it, divided by the best candidate's score (the best is 1). ``semanticFrom`` says which
  ranking that was: ``hybrid`` (the fused score of the hybrid strategy, which already holds the
  cosine of the vector search beside the keyword, session, answer-type and period lists), ``keyword``
  (bm25, when no vector search ran), ``vector`` (a provider's cosine, when it has no keyword search),
  ``words`` (the chronological tier's count of query words) or ``none`` (no query: every memory 0).
  The hybrid score is used rather than the bare cosine because it is the engine's best estimate of
  relevance: the cosine alone drops the keyword evidence hybrid found the candidates with.
- **recency**: ``0.5 ** (age / half-life)``, the age in days of the memory's ``created_at`` at the
  ranking's clock (now, or ``asOf``): 1 for a memory written at that moment, 0.5 one half-life earlier.
  A memory dated after the clock counts 1 (it is only ranked when the clock is now and rows were
  written a moment later).
- **importance**: the memory's ``importance`` (0..1; 0.5 unless something set it).

The candidates are those of the strategy that ran (hybrid's, for the ``composite`` strategy), which
this module only re-orders: it never adds or drops a memory.

**Per key.** An API key may have its own weights and half-life (``ApiKey.composite_weights``,
``ApiKey.recency_half_life_days``, set through ``PATCH /api/keys/<id>``); :func:`rerank` scores each
hit with its owner's (:func:`key_tuning`, one query for the hits' owners), and the settings'
``compositeWeights`` / ``recencyHalfLifeDays`` where the key sets none. Every score is a weighted mean
in 0..1, so hits of keys tuned differently (a chat with the global scope) still compare.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypedDict

from memory.models import ApiKey

if TYPE_CHECKING:  # for the hints only: the engine imports this module
    from memory.retrieval.engine import Hit

SIGNALS = ("semantic", "recency", "importance")
DEFAULT_WEIGHTS: Mapping[str, float] = {"semantic": 0.5, "recency": 0.3, "importance": 0.2}
# Two years: recency breaks ties between comparably relevant memories; it does not put a changed value
# first, which is the supersession's job (memory.services.cognitive, memory.retrieval.successors).
# It was a month, for that job, until the successors did it: measured afterwards, from 30 to 730 days
# every set we have is equal or better (current values 99 -> 100 of 105 and 55 -> 56 of 62; R@5 as of
# the newest memory, composite - hybrid, conversations -2.6 -> -0.3 and short facts -5.7 -> -1.0), and
# past 730 days nothing moves (3650: -1.0 on short facts, which is the importance signal's). The sweep
# is in docs/retrieval-quality.md ("Composite ranking"); keys and the settings can shorten it.
DEFAULT_HALF_LIFE_DAYS = 730.0
# Candidates composite re-orders at least: as deep as each list hybrid fuses (engine.VEC_TOP_K) and as
# many as the gateway keeps (MEMORY_CHAT_MAX_MEMORIES), so a recent memory hybrid ranks just below the
# caller's limit can still move up.
DEPTH = 20

SemanticFrom = Literal["hybrid", "keyword", "vector", "words", "none"]
SECONDS_PER_DAY = 86400.0


class SignalsDict(TypedDict):
    """A hit's signals as the API shows them (``retrieve-preview``'s ``signals``)."""

    semantic: float
    recency: float
    importance: float
    semanticFrom: str


@dataclass(frozen=True)
class Signals:
    """The three signals of one ranked memory, each in 0..1, and where ``semantic`` came from."""

    semantic: float
    recency: float
    importance: float
    semantic_from: SemanticFrom

    def as_dict(self) -> SignalsDict:
        return {
            "semantic": round(self.semantic, 6),
            "recency": round(self.recency, 6),
            "importance": round(self.importance, 6),
            "semanticFrom": self.semantic_from,
        }


def recency(created_at: datetime, *, now: datetime, half_life_days: float) -> float:
    """``0.5 ** (age / half_life_days)`` for a memory written at ``created_at``, seen at ``now``."""
    age_days = (now - created_at).total_seconds() / SECONDS_PER_DAY
    if age_days <= 0:
        return 1.0
    return float(0.5 ** (age_days / half_life_days))


def scored_memory(signals: Signals, weights: Mapping[str, float]) -> float:
    """The composite score: the weighted mean of the signals (``weights`` name each of ``SIGNALS``;
    the settings guarantee they are not negative and not all 0)."""
    total = sum(weights[name] for name in SIGNALS)
    return (
        weights["semantic"] * signals.semantic
        + weights["recency"] * signals.recency
        + weights["importance"] * signals.importance
    ) / total


def relative(scores: Sequence[float]) -> list[float]:
    """Each score divided by the best (higher is better; a negative score counts 0): the best is 1,
    the others keep how far behind it they are. All 0 when no score is positive."""
    best = max(scores, default=0.0)
    if best <= 0:
        return [0.0 for _ in scores]
    return [max(0.0, score) / best for score in scores]


@dataclass(frozen=True)
class KeyTuning:
    """One API key's own composite settings; ``None`` fields follow the settings."""

    weights: Mapping[str, float] | None
    half_life_days: float | None


def key_tuning(owner_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, KeyTuning]:
    """The keys among ``owner_ids`` that set their own weights or half-life (one query)."""
    owners = list(set(owner_ids))
    if not owners:
        return {}
    rows = ApiKey.all_objects.filter(pk__in=owners).exclude(
        composite_weights__isnull=True, recency_half_life_days__isnull=True
    )
    return {
        pk: KeyTuning(weights, half_life)
        for pk, weights, half_life in rows.values_list("pk", "composite_weights", "recency_half_life_days")
    }


def _usable(weights: object) -> bool:
    """Whether stored per-key weights can score (the API checks them on write; a row edited by hand
    may hold anything, and then the settings' weights are used)."""
    if not isinstance(weights, Mapping):
        return False
    values = [weights.get(name) for name in SIGNALS]
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0]
    return len(numbers) == len(SIGNALS) and sum(numbers) > 0


def rerank(
    hits: list[Hit],
    *,
    now: datetime,
    weights: Mapping[str, float],
    half_life_days: float,
    semantic_from: SemanticFrom,
) -> list[Hit]:
    """``hits`` ordered by the composite score, best first (ties keep their order). Each hit's
    ``score`` becomes the composite score and ``signals`` its three signals; the relevance score it
    had is kept in ``signals.semantic`` (relative to the best). ``weights`` and ``half_life_days``
    are the settings'; a hit whose key has its own (:func:`key_tuning`) is scored with those."""
    semantic = [0.0] * len(hits) if semantic_from == "none" else relative([hit.score for hit in hits])
    tuned = key_tuning(hit.memory.owner_id for hit in hits)
    for hit, relevance in zip(hits, semantic, strict=True):
        own = tuned.get(hit.memory.owner_id)
        hit_weights = weights
        if own is not None and own.weights is not None and _usable(own.weights):
            hit_weights = own.weights
        half_life = own.half_life_days if own is not None and own.half_life_days else half_life_days
        importance = min(1.0, max(0.0, float(hit.memory.importance)))
        hit.signals = Signals(
            semantic=relevance,
            recency=recency(hit.memory.created_at, now=now, half_life_days=half_life),
            importance=importance,
            semantic_from=semantic_from,
        )
        hit.score = scored_memory(hit.signals, hit_weights)
    return sorted(hits, key=lambda hit: hit.score, reverse=True)
