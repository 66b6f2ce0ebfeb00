"""The only place that builds FTS5 queries.

User text never reaches ``MATCH`` raw (reference B2): it is tokenised with
:func:`memory.retrieval.relevance.query_terms` (stop-words dropped) and every
term is double-quoted, so punctuation, ``-``, ``:``, ``*`` or quotes in a
question can neither break the query nor change its meaning. Terms are
OR-joined for recall; bm25 then ranks memories matching more (and rarer)
terms first.

The owner filter is part of the MATCH expression (the owner id is an indexed
column of ``memory_fts``) and the FTS search runs in a subquery, so SQLite
always starts from the full-text index: joining ``memories`` first and
filtering by owner made the planner scan the owner's rows (seconds at 1M).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from memory.retrieval.relevance import query_terms

MAX_TERMS = 32
MAX_QUERY_CHARS = 2048
# bm25 column weights: content, key, context (a conversation turn's previous turn,
# memory.services.turns), owner_id (the owner column only filters).
BM25_WEIGHTS = "1.0, 0.5, 0.5, 0.0"
TEXT_COLUMNS = "{content key context}"


@dataclass(frozen=True)
class FtsHit:
    seq: int
    rank: float  # bm25: more negative is better


def quote_term(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


class _DocFrequencies:
    """How many memories contain a term, cached per process (approximate by design).

    Used to leave out of a query the words that occur in a large share of all
    memories: bm25 gives them little weight, yet OR-ing them in makes FTS5
    score thousands of documents (32 ms at 100k memories per owner, against
    ~5 ms without them). Counts are refreshed after ``TTL`` seconds.
    """

    TTL = 600.0

    def __init__(self):
        self.lock = threading.Lock()
        self.terms: dict[str, tuple[float, int]] = {}
        self.total: tuple[float, int] | None = None

    def _count(self, expression: str) -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH %s", [expression])
            return int(cursor.fetchone()[0])

    def total_docs(self) -> int:
        now = time.monotonic()
        with self.lock:
            if self.total is not None and now - self.total[0] < self.TTL:
                return self.total[1]
        with connection.cursor() as cursor:
            cursor.execute("SELECT coalesce(max(seq), 0) - coalesce(min(seq), 0) + 1 FROM memories")
            total = int(cursor.fetchone()[0])
        with self.lock:
            self.total = (now, total)
        return total

    def df(self, term: str) -> int:
        now = time.monotonic()
        with self.lock:
            hit = self.terms.get(term)
            if hit is not None and now - hit[0] < self.TTL:
                return hit[1]
        count = self._count(f"{TEXT_COLUMNS} : " + quote_term(term))
        with self.lock:
            if len(self.terms) > 50_000:
                self.terms.clear()
            self.terms[term] = (now, count)
        return count

    def clear(self) -> None:
        with self.lock:
            self.terms.clear()
            self.total = None


DOC_FREQUENCIES = _DocFrequencies()


def selective_terms(terms: list[str]) -> list[str]:
    """``terms`` without those found in more than ``MEMORY_FTS_MAX_DF`` of all
    memories (and in at least ``MEMORY_FTS_MIN_DF_DOCS`` of them); the rarest
    term is always kept."""
    from django.conf import settings

    total = DOC_FREQUENCIES.total_docs()
    ceiling = max(settings.MEMORY_FTS_MIN_DF_DOCS, settings.MEMORY_FTS_MAX_DF * total)
    if len(terms) < 2 or total <= settings.MEMORY_FTS_MIN_DF_DOCS:
        return terms
    frequencies = {term: DOC_FREQUENCIES.df(term) for term in terms}
    kept = [term for term in terms if frequencies[term] <= ceiling]
    return kept or [min(terms, key=frequencies.__getitem__)]


def match_expression(
    text: str | None, owner_ids: Iterable[str] | None = None, *, prune: bool = False
) -> str | None:
    """The MATCH string for ``text`` limited to ``owner_ids`` (hex), or None when
    ``text`` has no searchable term. ``prune`` leaves out very common words."""
    terms = query_terms((text or "")[:MAX_QUERY_CHARS])[:MAX_TERMS]
    if not terms:
        return None
    if prune:
        terms = selective_terms(terms)
    expression = f"{TEXT_COLUMNS} : (" + " OR ".join(quote_term(t) for t in terms) + ")"
    if owner_ids is not None:
        owners = [quote_term(str(o).replace("-", "")) for o in owner_ids]
        if not owners:
            return None
        expression = "{owner_id} : (" + " OR ".join(owners) + ") AND " + expression
    return expression


def read_conditions(
    alias: str, *, now: datetime, session_id: str | None = None, created_after: datetime | None = None
) -> tuple[list[str], list]:
    """The SQL conditions (on the ``memories`` table as ``alias``) and parameters of the read filters
    other than the owner: not expired at ``now``, in ``session_id``, created from ``created_after``."""
    dt = connection.ops.adapt_datetimefield_value
    conditions = [f"({alias}.expires_at IS NULL OR {alias}.expires_at > %s)"]
    values: list = [dt(now)]
    if session_id:
        conditions.append(f"{alias}.session_id = %s")
        values.append(session_id)
    if created_after is not None:
        conditions.append(f"{alias}.created_at >= %s")
        values.append(dt(created_after))
    return conditions, values


def fts_search(
    *,
    query: str,
    owner_ids: Iterable[str] | None,
    limit: int,
    now: datetime,
    session_id: str | None = None,
    created_after: datetime | None = None,
    candidates: int | None = None,
) -> list[FtsHit]:
    """Live memories matching ``query``, best bm25 first, with every read filter
    (owner, expiry, session, retention) applied. Returns [] when the query has no term."""
    expression = match_expression(query, owner_ids, prune=True)
    if expression is None:
        return []
    conditions, values = read_conditions("m", now=now, session_id=session_id, created_after=created_after)
    sql = (
        "SELECT f.rowid, f.rank FROM ("
        f"  SELECT rowid, bm25(memory_fts, {BM25_WEIGHTS}) AS rank FROM memory_fts"
        "   WHERE memory_fts MATCH %s ORDER BY rank LIMIT %s"
        ") AS f JOIN memories AS m ON m.seq = f.rowid "
        f"WHERE {' AND '.join(conditions)} ORDER BY f.rank LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [expression, candidates or max(limit * 4, 100), *values, limit])
        return [FtsHit(seq=int(row[0]), rank=float(row[1])) for row in cursor.fetchall()]


def fts_optimize() -> None:
    """Merge the index's segments (run after large batches; also reclaims deletes)."""
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')")
