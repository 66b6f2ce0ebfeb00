"""Retrieval: strategies, tiers and honest fallbacks.

Tiers, tried in order: the vector tier (Qdrant or sqlite-vec, chosen by
``memory.vectorstores.registry``) for ``semantic`` and, fused with FTS5
(``memory.retrieval.fusion``), for ``hybrid``; then FTS5 alone (also the
``keyword`` strategy); then chronological order. ``composite`` runs hybrid (with its fallbacks) and
re-orders its candidates by ``memory.retrieval.composite`` (relevance, recency, importance). Every tier
applies the same filters (owner, session, expiry, retention) — the original
skipped them on its vector tiers, so expired memories could be injected. ``resolution`` says which source,
store and strategy were really used, and why a fallback happened:

* ``strategyRequested``: the strategy asked for (``exact``, ``keyword``, ``semantic``, ``hybrid``,
  ``composite``);
* ``strategyUsed``: the one that ran — the requested ``semantic``/``hybrid``/``composite`` when
  the vector tier answered, ``keyword`` (FTS5 bm25 alone) when it degraded to
  FTS5, ``exact`` (newest first) for the chronological tier. The original
  echoed the request even when degraded. A degraded ``composite`` still re-orders what the
  fallback tier found (its hits' ``signals.semanticFrom`` says which relevance it used);
* ``vectorStore``: the store whose search produced the ranking (``qdrant`` or
  ``sqlite-vec``), ``none`` when no vector search did (no embedding source,
  embedding failed, index mismatch, empty query, FTS or chronological tiers).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Sized
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from django.conf import settings as django_settings
from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from memory.conf import MemorySettings, get_memory_settings
from memory.embeddings import catalog
from memory.embeddings.base import EmbeddingError
from memory.models import Memory
from memory.retrieval import composite, signals, successors, temporal
from memory.retrieval.budget import estimate_tokens, walk_budget
from memory.retrieval.fts import fts_search
from memory.retrieval.fts.search import FtsHit
from memory.retrieval.fusion import normalized, rrf
from memory.retrieval.parallel import FtsRequest
from memory.retrieval.relevance import query_terms, relevance_score
from memory.retrieval.rerank import rerank, rerank_depth
from memory.services.indexing import IndexMismatch, VectorContext, lazy_index, query_vector, vector_context
from memory.services.usage import record_access
from memory.vectorstores.base import VectorStore
from memory.visibility import Visibility

logger = logging.getLogger("memory.retrieval")

STRATEGIES = ("exact", "keyword", "semantic", "hybrid", "composite")
# How hybrid fuses its two lists (MEMORY_FUSION): "normalized", the mean of min-max normalised
# scores, or "rrf", reciprocal-rank fusion with k = RRF_K. Both weigh the lists equally
# unless the operator set weights (rrfWeights). Measured on both dev sets (docs/retrieval-quality.md),
# normalised fusion is the one that never loses to its better half with MiniLM; the former default
# (RRF with an FTS weight of 0.1, chosen on dev-recall alone) barely beat plain bm25 on conversations.
FUSION_TIERS = {"normalized": "hybrid", "rrf": "hybrid-rrf"}
# RRF's k, the value of Cormack et al. (2009), which they found robust across collections; it
# only matters with MEMORY_FUSION=rrf.
RRF_K = 60
CANDIDATES = 100
# Candidates each half of a semantic/hybrid query ranks, at least the caller's limit: room for fusion
# to lift a memory that one half ranks just below the limit (the gateway asks for
# MEMORY_CHAT_MAX_MEMORIES, 20 by default); each one more costs both halves work on every query.
VEC_TOP_K = 20
# Memories without a vector that one retrieval embeds before searching (after a write the indexing
# task usually got there first): a bound on the request's embedding time; the reindex does the rest.
LAZY_EMBED_PER_REQUEST = 16
# How deep each search reads when ranking as of a past date (``retrieve(as_of=...)``): the memories
# written after it are dropped from every list before fusion, so each list reads this many rows to
# keep its usual depth after the cut.
AS_OF_DEPTH = 100
# The relevance each tier's hits carry, for composite's semantic signal (memory.retrieval.composite).
SEMANTIC_FROM: dict[str, composite.SemanticFrom] = {
    "hybrid": "hybrid",
    "keyword": "keyword",
    "exact": "words",
}


@dataclass
class Hit:
    """One retrieved memory with how it was found."""

    memory: Memory
    score: float
    tier: str  # "vector" | "qdrant" | "hybrid-rrf" | "fts5" | "recent"
    tokens: int = 0
    vec_score: float | None = None
    fts_score: float | None = None
    # Hybrid only (memory.retrieval.signals): for a conversation turn, the best keyword score in its
    # session; whether it names a time, the answer a "when" question wants.
    session_score: float | None = None
    answer_type: bool = False
    # Hybrid only: the memory is about the period the question names (signals.period_list).
    in_period: bool = False
    # A match the gateway drops as noise (see ``_mark_weak``); kept only when
    # ``retrieve(filter_irrelevant=False)`` asked to see them.
    below_floor: bool = False
    # Composite only: the signals its score was made of (``score`` is then the composite score).
    signals: composite.Signals | None = None
    # The superseded memory whose match gave this one its place (memory.retrieval.successors).
    found_through: Memory | None = None


@dataclass
class RetrievalResult:
    hits: list[Hit]
    resolution: dict
    total_tokens: int
    budget_max_tokens: int
    timings_ms: dict = field(default_factory=dict)

    @property
    def memories(self) -> list[Memory]:
        return [hit.memory for hit in self.hits]


@dataclass(frozen=True, kw_only=True)
class Filters(Visibility):
    """The filters every tier applies: a :class:`~memory.visibility.Visibility` (owner, expiry,
    session, retention), which also renders them as a queryset, SQL and the vector stores' filters;
    and, for a ranking as of a past date, ``as_of``: memories created after it are not seen.

    ``as_of`` is applied by this class's SQL and queryset and by :meth:`fts_search`; the vector
    stores' own filters do not know it, so their hits are checked against :meth:`sql` (:meth:`live`).
    Expiry stays judged at ``now``: an expired memory is never shown, whatever the date asked."""

    as_of: datetime | None = None

    def with_history(self) -> Filters:
        """These filters with superseded memories visible: what the searches read, so that a match on
        an old value hands its place to the current one (:mod:`memory.retrieval.successors`)."""
        return replace(self, include_superseded=True)

    @property
    def clock(self) -> datetime:
        """The moment the ranking is for: ``as_of``, else now (recency, the periods a question names)."""
        return self.as_of if self.as_of is not None else self.now

    def sql(self, alias: str, *, owners: bool = True) -> tuple[list[str], list]:
        conditions, params = super().sql(alias, owners=owners)
        if self.as_of is not None:
            conditions.append(f"{alias}.created_at <= %s")
            params.append(connection.ops.adapt_datetimefield_value(self.as_of))
        return conditions, params

    def queryset(self, qs: QuerySet[Memory] | None = None) -> QuerySet[Memory]:
        qs = super().queryset(qs)
        return qs if self.as_of is None else qs.filter(created_at__lte=self.as_of)

    def live(self, seqs: Collection[int]) -> set[int]:
        """The ``seqs`` whose memories pass these filters (primary-key lookups, no ORM: on the hot
        path the query building cost more than the query)."""
        if not seqs:
            return set()
        ordered = sorted(seqs)
        conditions, params = self.sql("m")
        sql = f"SELECT m.seq FROM memories AS m WHERE m.seq IN ({_marks(ordered)}) AND {' AND '.join(conditions)}"
        with connection.cursor() as cursor:
            cursor.execute(sql, [*ordered, *params])
            return {row[0] for row in cursor.fetchall()}

    def fts_search(self, query: str, limit: int) -> list:
        """``fts_search`` with these filters (as of a past date: read deeper, then cut, see
        ``AS_OF_DEPTH``)."""
        hits = fts_search(
            query=query,
            owner_ids=self.owner_hex,
            limit=limit if self.as_of is None else max(limit, AS_OF_DEPTH),
            now=self.now,
            session_id=self.session_id,
            created_after=self.created_after,
            valid_at=self.valid_at,
            include_superseded=self.include_superseded,
        )
        if self.as_of is None:
            return hits
        live = self.live([h.seq for h in hits])
        return [h for h in hits if h.seq in live][:limit]


def _marks(values: Sized) -> str:
    return ", ".join(["%s"] * len(values))


class _Resolution(dict):
    def fallback(self, reason: str) -> None:
        self["fallbackReason"] = (
            f"{self['fallbackReason']}; {reason}" if self.get("fallbackReason") else reason
        )


def _vector_hits(
    ctx: VectorContext, store: VectorStore, filters: Filters, query: str, k: int, resolution: _Resolution
) -> list[tuple[int, float]]:
    """(seq, cosine) of the ``k`` nearest visible memories in ``store``, best first. Before searching
    the database store, a few memories still without a vector are embedded (a mirror is written after
    commit: a read does not wait for it). The query is embedded first: when the source fails, that
    one failure sends the request to keyword search, and no second call waits on the source."""
    vector = query_vector(ctx, query, store)
    lazy = lazy_index(filters.owner_ids, ctx, limit=LAZY_EMBED_PER_REQUEST) if store.in_database else None
    if lazy is not None and lazy.incomplete:
        # After a rebuild, or while the embedding source fails: those memories are only found by keyword.
        waiting = f"{lazy.left} memories could not be embedded yet" if lazy.left else "more memories may wait"
        resolution.fallback(f"{waiting} (reindex in progress): only keyword search finds them")
    raw = store.search(vector=vector, k=k, visibility=filters)
    return [(h.seq, h.score) for h in raw]


def retrieve(
    *,
    owner_ids: frozenset | None,
    query: str | None,
    strategy: str = "hybrid",
    max_tokens: int = 2000,
    limit: int = 20,
    session_id: str | None = None,
    retention_days: int | None = None,
    settings: MemorySettings | None = None,
    touch: bool = False,
    filter_irrelevant: bool = True,
    use_vectors: bool = True,
    as_of: datetime | None = None,
) -> RetrievalResult:
    """Rank the memories of ``owner_ids`` (``None`` = every owner) for ``query``.

    Returns at most ``limit`` hits within ``max_tokens`` (always at least one
    when anything matched). ``touch`` bumps the access counters of what is
    returned (the chat path), without rewriting the FTS index.
    ``filter_irrelevant=False`` keeps the matches the gateway drops (vector-only
    matches below the model's floor, ``vec_min_score``; recent memories sharing no
    query word), flagged ``below_floor``. ``use_vectors=False`` skips the vector tier
    (FTS-only evaluation). ``as_of`` ranks as if it were that moment: memories created after it
    are left out, and recency and the periods a question names ("last week") count from it.
    """
    started = time.perf_counter()
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}")
    settings = settings or get_memory_settings()
    now = timezone.now()
    filters = Filters(
        owner_ids=owner_ids,
        now=now,
        session_id=session_id or None,
        created_after=now - timedelta(days=retention_days) if retention_days else None,
        # A moment still to come hides nothing: ranking "as of" it is ranking now.
        as_of=as_of if as_of is not None and as_of < now else None,
        # As of a past moment, the memories current then: one superseded since is seen again.
        valid_at=as_of if as_of is not None and as_of < now else None,
    )
    # Composite re-orders hybrid's candidates: the tiers run as for hybrid.
    scored = strategy == "composite"
    search = "hybrid" if scored else strategy
    query = (query or "").strip()
    resolution = _Resolution(
        embeddingSource=None,
        embeddingModel=None,
        vectorStore="none",
        strategyRequested=strategy,
        strategyUsed=strategy,
        rerankApplied=False,
        fallbackReason=None,
    )
    hits: list[Hit] | None = None
    reranking = bool(query and settings.rerankEnabled and settings.rerankProviderModel)
    timings: dict[str, float] = {}
    # A local reranker reorders a fixed depth of candidates, whatever the caller keeps of them.
    candidates = max(limit, rerank_depth(settings)) if reranking else limit
    if scored:
        candidates = max(candidates, composite.DEPTH)

    if search in ("semantic", "hybrid") and use_vectors:
        hits = _vector_tier(search, settings, filters, query, candidates, resolution)
        if hits is not None:
            resolution["strategyUsed"] = strategy
    if hits is None and search != "exact":
        hits = _fts_tier(filters, query, candidates, resolution)
        if hits is not None:
            resolution["strategyUsed"] = "keyword"
    if hits is None:
        hits = _chronological_tier(filters, query, limit, resolution, filter_irrelevant=filter_irrelevant)
        resolution["strategyUsed"] = "exact"
    if filter_irrelevant:
        hits = [h for h in hits if not h.below_floor]

    if hits and reranking:
        rerank_started = time.perf_counter()
        outcome = rerank(hits, query, settings)
        timings["rerank"] = round((time.perf_counter() - rerank_started) * 1000, 3)
        hits = outcome.hits
        resolution["rerankApplied"] = outcome.applied
        if not outcome.applied and outcome.reason:
            resolution.fallback(f"rerank not applied: {outcome.reason}")

    if hits and scored:
        used = "hybrid" if resolution["strategyUsed"] == "composite" else resolution["strategyUsed"]
        semantic_from = SEMANTIC_FROM[used] if query_terms(query) else "none"
        hits = composite.rerank(
            hits,
            now=filters.clock,
            weights=settings.compositeWeights,
            half_life_days=settings.recencyHalfLifeDays,
            semantic_from=semantic_from,
        )

    for hit in hits:
        hit.tokens = estimate_tokens(hit.memory.content)
    kept, total = walk_budget(hits, max_tokens, limit=limit, content=lambda h: h.memory.content)
    if touch and kept:
        record_access([h.memory.seq for h in kept], now)
    return RetrievalResult(
        hits=kept,
        resolution=dict(resolution),
        total_tokens=total,
        budget_max_tokens=max_tokens,
        timings_ms={"total": round((time.perf_counter() - started) * 1000, 3), **timings},
    )


def vec_min_score(model: str | None) -> float:
    """The gateway's floor for memories found only by the vector search with ``model``:
    ``MEMORY_VEC_MIN_SCORE`` when the operator set it, else the model's calibrated floor
    (``memory.embeddings.catalog``; how each was calibrated: docs/retrieval-quality.md)."""
    override = django_settings.MEMORY_VEC_MIN_SCORE
    return float(override) if override is not None else catalog.min_score(model)


def _vector_tier(
    strategy: str,
    settings: MemorySettings,
    filters: Filters,
    query: str | None,
    limit: int,
    resolution: _Resolution,
) -> list[Hit] | None:
    if not query:
        resolution.fallback("empty query: no vector search")
        return None
    ctx = vector_context(settings)
    resolution["embeddingSource"] = ctx.resolution.source
    resolution["embeddingModel"] = ctx.resolution.model
    if ctx.store_fallback:
        then = f" — searching {ctx.store_name}" if ctx.store is not None else ""
        resolution.fallback(ctx.store_fallback + then)
    if not ctx.usable:
        resolution.fallback(ctx.reason or "no vector tier")
        return None
    k = max(limit, VEC_TOP_K)
    floor = vec_min_score(ctx.resolution.model)
    today = timezone.localdate(filters.clock)
    period = temporal.question_period(query, today=today) if strategy == "hybrid" else None
    # A question that names a period reads both searches deeper: the period list picks from them.
    depth = max(k, signals.PERIOD_DEPTH) if period is not None else k
    if filters.as_of is not None:
        depth = max(depth, AS_OF_DEPTH)
    searched = filters.with_history()
    fts = FtsRequest(lambda: searched.fts_search(query, depth)) if strategy == "hybrid" else None
    stores = ctx.search_stores()
    for store, fallback in zip(stores, [*stores[1:], None], strict=True):
        if not store.in_database:
            # A mirror is written after commit and may lag or be away: an empty answer or any
            # failure moves on to the next store (the database store), else to keyword search.
            then = fallback.name if fallback is not None else "keyword search"
            try:
                vec = _vector_hits(ctx, store, searched, query, depth, resolution)
                if not vec:
                    resolution.fallback(f"{store.name} returned 0 results — falling back to {then}")
            except EmbeddingError as exc:
                # The next store would ask the same source again: keyword search instead.
                resolution.fallback(f"embedding failed: {exc.message}")
                return None
            except Exception as exc:
                logger.warning("%s search failed: %s", store.name, exc)
                vec = []
                resolution.fallback(f"{store.name} search failed: {type(exc).__name__}")
            if vec:
                resolution["vectorStore"] = store.name
                name = store.name
                ranked = _rank(
                    strategy, settings, filters, fts, k, vec, name, limit, query, checked=False, period=period
                )
                return _mark_weak(ranked, floor)
            continue
        try:
            vec = _vector_hits(ctx, store, searched, query, depth, resolution)
        except EmbeddingError as exc:
            resolution.fallback(f"embedding failed: {exc.message}")
            return None
        except IndexMismatch as exc:
            resolution.fallback(f"{exc}; reindex pending")
            return None
        except Exception as exc:  # a broken store must degrade to FTS, never fail the request
            logger.exception("vector search failed (%s)", store.name)
            resolution.fallback(f"vector search failed: {type(exc).__name__}")
            return None
        resolution["vectorStore"] = store.name
        # The database store applied the filters in the same database: no second check, except
        # ``as_of``, which its filters do not hold.
        checked = filters.as_of is None
        ranked = _rank(
            strategy, settings, filters, fts, k, vec, "vector", limit, query, checked=checked, period=period
        )
        return _mark_weak(ranked, floor)
    return None


def _mark_weak(hits: list[Hit], floor: float) -> list[Hit]:
    """Mark the memories found only by a weak vector match (under ``floor``, ``vec_min_score``):
    noise in a prompt (they cost tokens and can mislead), so the gateway drops them. A turn
    whose session matched the keywords is not vector-only: its session is keyword evidence."""
    for hit in hits:
        hit.below_floor = hit.fts_score is None and hit.session_score is None and (hit.vec_score or 0) < floor
    return hits


def _rank(
    strategy: str,
    settings: MemorySettings,
    filters: Filters,
    fts_request: FtsRequest | None,
    k: int,
    vec: list[tuple[int, float]],
    tier: str,
    limit: int,
    query: str,
    *,
    checked: bool,
    period: temporal.Period | None = None,
) -> list[Hit]:
    """Semantic: the vector hits that pass the filters; hybrid: fused (``MEMORY_FUSION``) with FTS5 and
    the lists of ``memory.retrieval.signals`` (session, answer type) over the same candidates, and for a
    question that names a ``period`` the period list, read from the deeper searches (``vec`` and the
    FTS request then hold ``signals.PERIOD_DEPTH`` rows; the other lists keep their first ``k``).

    A mirror's hits (``checked=False``: its payloads may lag the rows) are checked for liveness
    (owner, expiry, session, retention) on ids first; the database store's are already visible. Only
    the ``limit`` best rows are loaded as models: building instances was most of the cost of a query.
    """
    if not checked:
        live = filters.with_history().live([seq for seq, _ in vec])
        vec = [(seq, score) for seq, score in vec if seq in live]
    deep_fts = fts_request.result() if fts_request is not None else []
    # The searches read superseded memories too: each hands its place to the current one.
    handed = successors.current_successors(filters, [seq for seq, _ in vec] + [h.seq for h in deep_fts])
    via: dict[int, int] = {}
    if handed:
        vec = successors.substitute(vec, handed, via)
        deep_fts = _substitute_fts(deep_fts, handed, via)
    deep_vec, vec = vec, vec[:k]
    if strategy == "semantic":
        top = vec[:limit]
        memories = Memory.by_seq([seq for seq, _ in top])
        nearest = [Hit(memories[seq], score, tier, vec_score=score) for seq, score in top if seq in memories]
        return _found_through(nearest, via)

    assert fts_request is not None  # hybrid: _vector_tier made one
    fts = deep_fts[:k]
    keyword = [(h.seq, -h.rank) for h in fts]  # bm25 ranks are negative, better first
    order = [seq for seq, _ in vec] + [seq for seq, _ in keyword]
    period_list: list[tuple[int, float]] = []
    if period is not None:
        deep_keyword = [(h.seq, -h.rank) for h in deep_fts]
        deep = order + [seq for seq, _ in deep_vec] + [seq for seq, _ in deep_keyword]
        found = signals.candidates(deep, question=query, period=period)
        period_list = signals.period_list(deep_vec, deep_keyword, found, limit=k)
        order += [seq for seq, _ in period_list]
    else:
        found = signals.candidates(order, question=query)
    session = signals.session_list(keyword, order, found)
    answer_type = signals.answer_type_list(order, found)
    rule = django_settings.MEMORY_FUSION
    lists = {"vector": vec, "fts": keyword}
    if session:
        lists["session"] = session
    if answer_type:
        lists["answerType"] = answer_type
    if period_list:
        lists["period"] = period_list
    if rule == "rrf":
        ranked = {name: [seq for seq, _ in scored] for name, scored in lists.items()}
        fused = rrf(ranked, k=RRF_K, weights=settings.rrfWeights)[:limit]
    else:
        fused = normalized(lists, weights=settings.rrfWeights)[:limit]
    # The deeper rows' scores too: a memory the period list admitted keeps its own evidence.
    vec_scores = dict(deep_vec)
    fts_scores = {h.seq: h.rank for h in deep_fts}
    session_scores = dict(session)
    timed = {seq for seq, _ in answer_type}
    memories = Memory.by_seq([f.item for f in fused])
    hits = [
        Hit(
            memories[f.item],
            f.score,
            FUSION_TIERS[rule],
            vec_score=vec_scores.get(f.item),
            fts_score=fts_scores.get(f.item),
            session_score=session_scores.get(f.item),
            answer_type=f.item in timed,
            in_period=f.item in found and found[f.item].in_period,
        )
        for f in fused
        if f.item in memories
    ]
    return _found_through(hits, via)


def _substitute_fts(hits: list[FtsHit], handed: dict[int, int | None], via: dict[int, int]) -> list[FtsHit]:
    """:func:`successors.substitute` over keyword hits."""
    return [
        FtsHit(seq, rank) for seq, rank in successors.substitute([(h.seq, h.rank) for h in hits], handed, via)
    ]


def _found_through(hits: list[Hit], via: dict[int, int]) -> list[Hit]:
    """Set each hit's ``found_through``: the superseded memory that handed it its place (its id only;
    one query, only when a place was handed on)."""
    wanted = {via[h.memory.seq] for h in hits if h.memory.seq in via}
    if wanted:
        old = Memory.objects.only("seq", "uuid").in_bulk(sorted(wanted))
        for hit in hits:
            hit.found_through = old.get(via.get(hit.memory.seq, -1))
    return hits


def _fts_tier(filters: Filters, query: str, limit: int, resolution: _Resolution) -> list[Hit] | None:
    if not query_terms(query):
        resolution.fallback("no searchable words in the query: chronological order")
        return None
    # As of a past date, later memories are already cut; superseded ones hand their place on.
    fts = filters.with_history().fts_search(query, limit)
    handed = successors.current_successors(filters, [h.seq for h in fts])
    via: dict[int, int] = {}
    if handed:
        fts = _substitute_fts(fts, handed, via)
    if not fts:
        resolution.fallback("FTS5 found no match")
        return []
    memories = Memory.by_seq([h.seq for h in fts])  # fts_search applied every filter
    hits = [Hit(memories[h.seq], -h.rank, "fts5", fts_score=h.rank) for h in fts if h.seq in memories]
    return _found_through(hits, via)


def _chronological_tier(
    filters: Filters, query: str | None, limit: int, resolution: _Resolution, *, filter_irrelevant: bool
) -> list[Hit]:
    rows = list(filters.queryset().order_by("-created_at", "-seq")[: max(limit, CANDIDATES)])
    if not query or not query_terms(query):
        return [Hit(m, 0.0, "recent") for m in rows]
    scored = [Hit(m, float(relevance_score(m, query)), "recent") for m in rows]
    for hit in scored:
        # No query word in common (relevance score 0): the gateway drops it.
        hit.below_floor = hit.score <= 0
    if filter_irrelevant:
        scored.sort(key=lambda h: h.score, reverse=True)
    return scored
