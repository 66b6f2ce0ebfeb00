"""The only place that builds FTS5 queries.

User text never reaches ``MATCH`` raw (reference B2): it is tokenised with
:func:`memory.retrieval.relevance.query_terms` (stop-words dropped) and every
term is double-quoted, so punctuation, ``-``, ``:``, ``*`` or quotes in a
question can neither break the query nor change its meaning. Terms are
OR-joined for recall; bm25 then ranks memories matching more (and rarer)
terms first.

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
import time
from collections.abc import Iterable, Sized
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection

from memory.retrieval.relevance import query_terms
from memory.visibility import Visibility, owner_hex

MAX_TERMS = 32
MAX_QUERY_CHARS = 2048
# bm25 column weights: content, key, context (a conversation turn's previous turn,
# memory.services.turns), owner_id (the owner column only filters).
BM25_WEIGHTS = "1.0, 0.5, 0.5, 0.0"
TEXT_COLUMNS = "{content key context}"
# FTS5's bm25 (fts5_aux.c) uses k1 = 1.2: a term adds less than idf * (k1 + 1) to any memory's score.
TERM_BOUND = 1.2 + 1
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


def quote_term(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


class _Statistics:
    """How many memories hold a term (text columns, every owner), belong to some owners, exist.

    For choosing a query plan (which words are common, whether the owner goes into MATCH) they are
    approximate by design: remembered ``TTL`` seconds, shared by the process's threads. A term's count
    is also kept with the *stamp* of the snapshot it was read in (``STAMP_COLUMNS``, on one
    connection): a later statement on that connection with the same stamp sees the same rows, so the
    count is exact for it.
    """

    TTL = 600.0
    MAX_ENTRIES = 50_000

    def __init__(self) -> None:
        # Reads and writes of single keys: atomic under the GIL, no lock needed.
        self.values: dict = {}

    def _known(self, key: tuple) -> Any:
        hit = self.values.get(key)
        return hit[1] if hit is not None and time.monotonic() - hit[0] < self.TTL else None

    def remember(self, key: tuple, value: Any, stamp: tuple | None = None) -> None:
        values = self.values
        if len(values) >= self.MAX_ENTRIES:
            values.clear()
        values[key] = (time.monotonic(), value, stamp)

    def documents(self, terms: list[str]) -> dict[str, int]:
        """Approximate document counts of ``terms`` (for plans)."""
        known = {term: self._known(("term", term)) for term in terms}
        missing = [term for term, count in known.items() if count is None]
        if missing:
            known.update(self.count_documents(missing))
        return known

    def exact_documents(self, terms: list[str], stamp: tuple) -> list[int]:
        """The document counts of ``terms`` in the snapshot stamped ``stamp``; raises ``_Moved``
        when they cannot be read in that snapshot any more."""
        values = self.values
        hits = [values.get(("exact", id(stamp[0]), term)) for term in terms]
        known = [hit[1] for hit in hits if hit is not None and _same_stamp(hit[2], stamp)]
        if len(known) == len(terms):
            return known
        counts = self.count_documents(terms, stamp=stamp)
        return [counts[term] for term in terms]

    def count_documents(self, terms: list[str], *, stamp: tuple | None = None) -> dict[str, int]:
        """Count (one statement, one snapshot) and remember the documents of ``terms``. With ``stamp``,
        raises ``_Moved`` when the statement's snapshot is not that one."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT " + ", ".join([*(_term_count_sql() for _ in terms), *STAMP_COLUMNS]),
                [_any_of([t]) for t in terms],
            )
            row = cursor.fetchone()
            read = _stamp(row[len(terms) :])
        if stamp is not None and not _same_stamp(read, stamp):
            raise _Moved
        counts = dict(zip(terms, (int(n) for n in row[: len(terms)]), strict=True))
        for term, count in counts.items():
            self.remember(("term", term), count)
            # Kept per connection; the entry holds the connection, so no other can get its id.
            self.remember(("exact", id(read[0]), term), count, read)
        return counts

    def best_score(self, terms: list[str], stamp: tuple) -> float:
        """The best bm25 any memory (of any owner) gets from ``terms`` alone, in the snapshot stamped
        ``stamp`` (0.0 when none holds them), remembered with that stamp; raises ``_Moved`` when it
        cannot be read in that snapshot any more."""
        exact = ("best", id(stamp[0]), *terms)
        hit = self.values.get(exact)
        if hit is not None and _same_stamp(hit[2], stamp):
            return hit[1]
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT (SELECT bm25(memory_fts, {BM25_WEIGHTS}) AS rank FROM memory_fts "
                "WHERE memory_fts MATCH %s ORDER BY rank LIMIT 1), " + ", ".join(STAMP_COLUMNS),
                [_any_of(terms)],
            )
            rank, *values = cursor.fetchone()
        read = _stamp(values)
        if not _same_stamp(read, stamp):
            raise _Moved
        best = 0.0 if rank is None else -float(rank)
        self.remember(("best", *terms), best)
        self.remember(exact, best, read)
        return best

    def known_best_score(self, terms: list[str]) -> float | None:
        """The last best score read for ``terms`` (for plans), if any."""
        return self._known(("best", *terms))

    def _count(self, key: tuple, sql: str, params: list) -> int:
        count = self._known(key)
        if count is None:
            with connection.cursor() as cursor:
                cursor.execute(sql, params)
                count = int(cursor.fetchone()[0])
            self.remember(key, count)
        return count

    def together(self, terms: list[str]) -> int:
        """Approximately how many memories hold every one of ``terms`` (for plans)."""
        if len(terms) == 1:
            return self.documents(terms)[terms[0]]
        expression = " AND ".join(_any_of([t]) for t in terms)
        return self._count(("together", *sorted(terms)), f"SELECT {_term_count_sql()}", [expression])

    def total(self) -> int:
        return self._count(("total",), "SELECT count(*) FROM memories", [])

    def owned(self, owners: list[str]) -> int:
        return self._count(
            ("owners", *sorted(owners)),
            f"SELECT count(*) FROM memories WHERE owner_id IN ({_marks(owners)})",
            owners,
        )

    def clear(self) -> None:
        self.values.clear()


class _Moved(Exception):
    """The database changed between two statements that had to see the same rows."""


# What identifies a snapshot on one connection: commits by any other connection change
# ``data_version``, this connection's own changes (pending ones too) change ``total_changes()``.
STAMP_COLUMNS = ("(SELECT data_version FROM pragma_data_version)", "total_changes()")


def _stamp(values: Iterable[Any]) -> tuple:
    """The stamp of the statement that read ``values`` (the STAMP_COLUMNS) on this thread's connection."""
    return (connection.connection, *values)


def _same_stamp(a: tuple | None, b: tuple) -> bool:
    # The connection is compared by identity: a new connection starts its counters again.
    return a is not None and a[0] is b[0] and a[1:] == b[1:]


DOC_FREQUENCIES = _Statistics()


def _marks(values: Sized) -> str:
    return ", ".join(["%s"] * len(values))


def _any_of(terms: list[str]) -> str:
    return f"{TEXT_COLUMNS} : (" + " OR ".join(quote_term(t) for t in terms) + ")"


def _term_count_sql() -> str:
    return "(SELECT count(*) FROM memory_fts WHERE memory_fts MATCH %s)"


def match_expression(
    terms: list[str], owner_ids: list[str] | None = None, *, selective: list[str] | None = None
) -> str:
    """The MATCH string OR-ing ``terms`` (each quoted; all of them score), limited to ``owner_ids``
    (hex) when given. With ``selective`` (some of ``terms``), only the memories holding one of those
    match; their scores stay the full query's (the phrases under ``NOT`` have no positions in them)."""
    expression = _any_of(terms)
    if selective is not None:
        common = [t for t in terms if t not in selective]
        expression = f"{expression} NOT ({_any_of(common)} NOT {_any_of(selective)})"
    if owner_ids is not None:
        owners = " OR ".join(quote_term(o) for o in owner_ids)
        expression = "{owner_id} : (" + owners + ") AND (" + expression + ")"
    return expression


def fts5_idf(rows: int, documents: int) -> float:
    """bm25's idf in FTS5 (fts5_aux.c) for a term in ``documents`` of ``rows`` rows; it grows with
    ``rows``."""
    idf = math.log(max(rows - documents + 0.5, 0.5) / (documents + 0.5))
    return idf if idf > 0 else 1e-6


def common_terms_bound(row_count_bound: int, documents: list[int]) -> float:
    """More than any memory can score from terms found in ``documents`` memories each, when the table
    has at most ``row_count_bound`` rows: the sum of ``idf * (k1 + 1)``."""
    return sum(fts5_idf(row_count_bound, n) for n in documents) * TERM_BOUND * (1 + 1e-9)


def read_conditions(
    alias: str, *, now: datetime, session_id: str | None = None, created_after: datetime | None = None
) -> tuple[list[str], list]:
    """The SQL conditions (on the ``memories`` table as ``alias``) and parameters of the read filters
    other than the owner: not expired at ``now``, in ``session_id``, created from ``created_after``."""
    return Visibility(owner_ids=None, now=now, session_id=session_id, created_after=created_after).sql(
        alias, owners=False
    )


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
            mine, mine_values = f"m.owner_id IN ({_marks(self.owners)})", list(self.owners)
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
        stamp = _stamp(values)
        try:
            documents = DOC_FREQUENCIES.exact_documents(common, stamp)
            if score >= common_terms_bound(int(highest) - int(lowest) + 1, documents):
                return walk.hits
            # The bound allows for any number of repeats of each word; the best score the common
            # words really give a memory is exact, and costs scoring their memories once per snapshot.
            if DOC_FREQUENCIES.best_score(common, stamp) < score:
                return walk.hits
        except _Moved:
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
) -> list[FtsHit]:
    """Live memories matching ``query``, best bm25 first, with every read filter (owner, expiry,
    session, retention) applied: of the owners' ``candidates`` best matches (default
    ``max(limit * 4, 100)``), the first ``limit`` that pass the other filters. Returns [] when the
    query has no term."""
    terms = query_terms((query or "")[:MAX_QUERY_CHARS])[:MAX_TERMS]
    owners = None if owner_ids is None else [owner_hex(o) for o in owner_ids]
    if not terms or owners == [] or limit <= 0:
        return []
    conditions = read_conditions("m", now=now, session_id=session_id, created_after=created_after)
    search = _Search(
        terms, owners, limit=limit, candidates=candidates or max(limit * 4, 100), conditions=conditions
    )
    return search.run()


def fts_optimize() -> None:
    """Merge the index's segments (run after large batches; also reclaims deletes)."""
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')")
