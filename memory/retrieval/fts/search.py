"""Keyword search: the exact result of one bm25 query, reached with less work.

What a search returns is always the result of one query: FTS5's bm25 of the
OR of every query term over the owners' memories, best first (ties by
``seq``), its best ``candidates`` rows filtered (expiry, session, retention),
the first ``limit`` kept. Two shortcuts reach that result with less work, and
both are exact:

* **Common words are scored only where they can matter** (MaxScore). A term's
  share of a memory's bm25 is ``idf * f*(k1+1) / (f + k1*(1-b+b*len/avgdl))``,
  always below ``idf * (k1+1)``. The first query matches only the memories
  holding a rarer (selective) term, yet scores them with every term:
  ``ALL NOT (COMMON NOT SELECTIVE)`` leaves ``ALL`` the only phrases with
  positions in a matched row (phrases under ``NOT`` add exactly 0.0), so the
  scores are the full query's, bit for bit. If the row where the result was
  complete scores at least the sum of the common terms' bounds, no memory
  holding only common words could have entered it. The bound allows any number
  of repeats of each word, so it is loose for short memories; when it does not
  settle the result, the best score the common words alone give any memory
  (their own bm25 query's top row: the same sum, in the same order, as in the
  full query) may: it is read once per snapshot. Otherwise the full query runs.
  Both checks use values of the query's own snapshot: counts and best scores
  are remembered with the stamp of the statement that read them
  (``STAMP_COLUMNS``) and used only by a statement with the same stamp, else
  read again; the ``seq`` range, read by the query itself, bounds the row count
  (the index holds exactly the rows of ``memories``: the triggers' invariant).
* **The owner filter.** bm25 counts the documents of every phrase in the
  query, the owner's too: an owner term ANDed into MATCH costs a pass over all
  of its memories (2.4 ms at 100k). When that costs more than scoring the other
  owners' matches, the query runs on the whole index and the owner is checked
  on the joined rows; the scores do not change (the owner column weighs 0, and
  the statistics bm25 uses are the whole table's either way). If the rows read
  do not settle the result, the owner-term query runs. Either way FTS5 runs in
  a subquery, so SQLite always starts from the full-text index: joining
  ``memories`` first and filtering by owner made the planner scan the owner's
  rows (seconds at 1M).

The counts that choose between these plans (``DOC_FREQUENCIES``) are
approximate by design: they change the cost of a search, never its result.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection

from memory.dialect import is_postgres
from memory.retrieval.fts import postgres
from memory.retrieval.fts.query import (
    BM25_WEIGHTS,
    MAX_QUERY_CHARS,
    MAX_TERMS,
    TERM_BOUND,
    common_terms_bound,
    fts5_idf,
    marks,
    match_expression,
    read_conditions,
)
from memory.retrieval.fts.statistics import DOC_FREQUENCIES, STAMP_COLUMNS, Moved, snapshot_stamp
from memory.retrieval.relevance import query_terms
from memory.visibility import owner_hex

# Relative costs measured at 100k memories per owner, in units of one doclist entry read while bm25
# counts a phrase's documents (~25 ns): a matched row scored by bm25 ~25, a row joined back and
# checked in Python ~40.
SCORED_ROW_COST = 25
JOINED_ROW_COST = 40
# A selective-first query is tried only when it will probably settle (``_settling_cost``: right for
# all but a few of the bench's queries); when it does not, the full query runs after it.
P_UNSETTLED = 0.1
# Reading the common words' best score serves the queries after this one too (the same words, the
# same snapshot): its cost counts as half.
BEST_SCORE_SHARE = 0.5
# Python and SQLite's fixed cost of one more statement, in the same units (~0.1 ms).
STATEMENT_COST = 4000


@dataclass(frozen=True)
class FtsHit:
    seq: int
    rank: float  # bm25: more negative is better


@dataclass
class _Walk:
    """The rows of one ranked query, read best first as the result is defined: the first
    ``candidates`` rows of the owners, of which the first ``limit`` that pass the filters."""

    hits: list[FtsHit]
    settled: bool  # the result is complete: ``limit`` hits, or ``candidates`` rows of the owners read
    last_rank: float | None  # the rank of the row where it was settled
    exhausted: bool  # the query had no more rows than were asked for
    extra: tuple  # the constant columns the statement added (first row)


def _selective(terms: list[str], counts: dict[str, int], total: int) -> list[str] | None:
    """The terms to match first, or None when no term is common: common words are those in more than
    ``MEMORY_FTS_COMMON_SHARE`` of all memories (and ``MEMORY_FTS_COMMON_MIN_DOCS``); the rarest term
    is always selective."""
    ceiling = max(settings.MEMORY_FTS_COMMON_MIN_DOCS, settings.MEMORY_FTS_COMMON_SHARE * total)
    common = {t for t in terms if counts[t] > ceiling}
    common.discard(min(terms, key=counts.__getitem__))
    return [t for t in terms if t not in common] if common else None


def selective_terms(terms: list[str]) -> list[str]:
    """The terms a selective-first query matches when it leaves every common word to the bound (all
    terms still score): ``terms`` without the common ones, or all of them when none is common."""
    return _selective(terms, DOC_FREQUENCIES.documents(terms), DOC_FREQUENCIES.total()) or terms


class _Search:
    """One :func:`fts_search`: picks the cheapest plan and checks that its result is the full query's."""

    def __init__(
        self,
        terms: list[str],
        owners: list[str] | None,
        *,
        limit: int,
        candidates: int,
        conditions: tuple[list[str], list],
    ) -> None:
        self.terms = terms
        self.owners = owners
        self.limit = limit
        self.candidates = candidates
        self.conditions = conditions
        self.total = DOC_FREQUENCIES.total()

    @functools.cached_property
    def owned(self) -> int:
        return self.total if self.owners is None else DOC_FREQUENCIES.owned(self.owners)

    def run(self) -> list[FtsHit]:
        if self.total <= settings.MEMORY_FTS_COMMON_MIN_DOCS:
            # No word can be common, and every plan costs next to nothing: no counting.
            return self._full(owner_in_match=self.owners is not None)
        counts = DOC_FREQUENCIES.documents(self.terms)
        plans: list[tuple[list[str] | None, bool, float]] = [
            (None, in_match, 0.0) for in_match in self._owner_choices()
        ]
        for split in self._splits(counts):
            settling = self._settling_cost(counts, split)
            if settling is not None:
                plans += [(split, in_match, settling) for in_match in self._owner_choices()]
        selective, owner_in_match, _ = min(
            plans, key=lambda plan: self._expected_cost(counts, plan[0], plan[1]) + plan[2]
        )
        if selective is not None:
            hits = self._selective_first(selective, owner_in_match=owner_in_match)
            if hits is not None:
                return hits
        return self._full(owner_in_match=owner_in_match)

    def _splits(self, counts: dict[str, int]) -> list[list[str]]:
        """The selective terms of the splits worth weighing: with every common word of ``_selective``
        left to the bound, then fewer of them, the rarer ones (the larger bounds) matched first."""
        selective = _selective(self.terms, counts, self.total)
        if selective is None:
            return []
        common = sorted((t for t in self.terms if t not in selective), key=counts.__getitem__, reverse=True)
        return [[t for t in self.terms if t not in common[:keep]] for keep in range(len(common), 0, -1)]

    def _settling_cost(self, counts: dict[str, int], selective: list[str]) -> float | None:
        """None when a selective-first query will probably not settle; else what settling it should
        add: nothing when the bound will do, the scoring of the common words' memories when their best
        score has to be read (nothing once read in the snapshot).

        The row that settles it is taken as a memory of average length holding a selective term, once,
        with every common word if the owners hold twice ``limit`` such memories (the selective term
        taken as independent of the common ones), else alone if they hold that many: it scores about
        the sum of the idfs of the words it holds. The bound counts ``k1 + 1`` times each common
        word's idf; the best score of the common words alone, until read, 1.2 times the sum."""
        common = [t for t in self.terms if t not in selective]
        common_idf = sum(fts5_idf(self.total, counts[t]) for t in common)
        share_common = DOC_FREQUENCIES.together(common) / self.total
        settling = [
            fts5_idf(self.total, counts[t]) + (common_idf if holders * share_common >= 2 * self.limit else 0)
            for t in selective
            if (holders := self.owned * counts[t] / self.total) >= 2 * self.limit
        ]
        if not settling:
            return None
        score = max(settling)
        if score >= TERM_BOUND * common_idf:
            return 0.0
        best = DOC_FREQUENCIES.known_best_score(common)
        if best is not None:
            return 0.0 if best < score else None
        if score <= 1.2 * common_idf:
            return None
        # The memories holding a common word (exact for two words), scored once for this snapshot and
        # every later query with these words: counted as half.
        holding = sum(counts[t] for t in common) - (len(common) - 1) * share_common * self.total
        return BEST_SCORE_SHARE * SCORED_ROW_COST * min(self.total, holding)

    def _owner_choices(self) -> tuple[bool, ...]:
        if self.owners is None:
            return (False,)
        return (True, False) if self.owned else (True,)

    def _expected_cost(
        self, counts: dict[str, int], selective: list[str] | None, owner_in_match: bool
    ) -> float:
        """The cost of a plan in doclist entries read (``SCORED_ROW_COST``): bm25 counts the documents
        of every phrase (the owner term's too) and scores every matched row (only the owners' when
        the owner is in MATCH); the whole-index plan joins back more rows. A selective-first plan
        adds its ``NOT`` phrases and, when the bound does not settle it (``P_UNSETTLED``), the full query."""
        share = self.owned / max(self.total, 1)
        cost = float(sum(counts.values()))
        if owner_in_match:
            cost += self.owned
        elif self.owners is not None:
            cost += JOINED_ROW_COST * self.limit * (1 / max(share, 1e-3) - 1)
        matched = self.terms if selective is None else selective
        scored = min(self.total, sum(counts[t] for t in matched)) * (share if owner_in_match else 1.0)
        cost += SCORED_ROW_COST * scored
        if selective is None:
            return cost
        common = [t for t in self.terms if t not in selective]
        cost += 2 * sum(counts[t] for t in common) + sum(counts[t] for t in selective) + STATEMENT_COST
        return cost + P_UNSETTLED * self._expected_cost(counts, None, owner_in_match)

    def _rows_asked(self, owner_in_match: bool) -> int:
        if self.owners is None or owner_in_match:
            return self.candidates
        share = self.owned / max(self.total, 1)
        return math.ceil(self.candidates / max(share, 1e-3) * 1.1) + self.limit

    def _walk(self, expression: str, *, owner_in_match: bool, extra: tuple[str, ...] = ()) -> _Walk:
        conditions, values = self.conditions
        mine, mine_values = "1", []
        if self.owners is not None and not owner_in_match:
            mine, mine_values = f"m.owner_id IN ({marks(self.owners)})", list(self.owners)
        asked = self._rows_asked(owner_in_match)
        columns = ", ".join(["f.rowid", "f.rank", mine, f"({' AND '.join(conditions)})", *extra])
        sql = (
            f"SELECT {columns} FROM ("
            f"  SELECT rowid, bm25(memory_fts, {BM25_WEIGHTS}) AS rank FROM memory_fts"
            "   WHERE memory_fts MATCH %s ORDER BY rank, rowid LIMIT %s"
            ") AS f JOIN memories AS m ON m.seq = f.rowid ORDER BY f.rank, f.rowid"
        )
        hits: list[FtsHit] = []
        read = owned = 0
        first: tuple = ()
        with connection.cursor() as cursor:
            # The subquery is ordered, so SQLite joins the rows one by one as they are read (no sort
            # of the join): reading stops joining once the result is settled.
            cursor.execute(sql, [*mine_values, *values, expression, asked])
            for row in cursor:
                if not read:
                    first = tuple(row[4:])
                read += 1
                if not row[2]:
                    continue
                owned += 1
                if row[3]:
                    hits.append(FtsHit(seq=int(row[0]), rank=float(row[1])))
                if len(hits) == self.limit or owned == self.candidates:
                    return _Walk(hits, True, float(row[1]), False, first)
        return _Walk(hits, False, None, read < asked, first)

    def _full(self, *, owner_in_match: bool) -> list[FtsHit]:
        owners = self.owners if owner_in_match else None
        walk = self._walk(match_expression(self.terms, owners), owner_in_match=owner_in_match)
        if walk.settled or walk.exhausted or owner_in_match or self.owners is None:
            return walk.hits
        return self._full(owner_in_match=True)  # the other owners' rows crowded this one's out

    def _selective_first(self, selective: list[str], *, owner_in_match: bool) -> list[FtsHit] | None:
        """The full query's result from the memories holding a selective term, or None when a memory
        holding only common words could have entered it (or the database changed under the check)."""
        common = [t for t in self.terms if t not in selective]
        owners = self.owners if owner_in_match else None
        expression = match_expression(self.terms, owners, selective=selective)
        extra = ("(SELECT max(seq) FROM memories)", "(SELECT min(seq) FROM memories)", *STAMP_COLUMNS)
        walk = self._walk(expression, owner_in_match=owner_in_match, extra=extra)
        if walk.last_rank is None:  # not settled
            return None
        score = -walk.last_rank
        highest, lowest, *values = walk.extra
        stamp = snapshot_stamp(values)
        try:
            documents = DOC_FREQUENCIES.exact_documents(common, stamp)
            if score >= common_terms_bound(int(highest) - int(lowest) + 1, documents):
                return walk.hits
            # The bound allows for any number of repeats of each word; the best score the common
            # words really give a memory is exact, and costs scoring their memories once per snapshot.
            if DOC_FREQUENCIES.best_score(common, stamp) < score:
                return walk.hits
        except Moved:
            pass
        return None


def fts_search(
    *,
    query: str,
    owner_ids: Iterable[str] | None,
    limit: int,
    now: datetime,
    session_id: str | None = None,
    created_after: datetime | None = None,
    candidates: int | None = None,
    valid_at: datetime | None = None,
    include_superseded: bool = False,
) -> list[FtsHit]:
    """Live memories matching ``query``, best bm25 first, with every read filter (owner, expiry,
    session, retention) applied: of the owners' ``candidates`` best matches (default
    ``max(limit * 4, 100)``), the first ``limit`` that pass the other filters. Returns [] when the
    query has no term. ``include_superseded`` reads superseded memories too."""
    terms = query_terms((query or "")[:MAX_QUERY_CHARS])[:MAX_TERMS]
    owners = None if owner_ids is None else [owner_hex(o) for o in owner_ids]
    if not terms or owners == [] or limit <= 0:
        return []
    conditions = read_conditions(
        "m",
        now=now,
        session_id=session_id,
        created_after=created_after,
        valid_at=valid_at,
        include_superseded=include_superseded,
    )
    depth = candidates or max(limit * 4, 100)
    if is_postgres():  # the one place that chooses the engine's keyword index
        found = postgres.search(
            terms=terms, owners=owners, limit=limit, candidates=depth, conditions=conditions
        )
        return [FtsHit(seq=seq, rank=rank) for seq, rank in found]
    return _Search(terms, owners, limit=limit, candidates=depth, conditions=conditions).run()


def fts_optimize() -> None:
    """Merge the index's segments (run after large batches; also reclaims deletes)."""
    if is_postgres():
        postgres.optimize()
        return
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')")
