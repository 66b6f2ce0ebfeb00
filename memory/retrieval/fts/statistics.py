"""Document counts and best scores of terms, remembered per snapshot, for choosing FTS query plans.

The counts that choose a plan are approximate by design (they change the cost of a search, never its
result); the values a plan's exactness rests on are read again unless they carry the stamp of the
query's own snapshot (``STAMP_COLUMNS``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from django.db import connection

from memory.retrieval.fts.query import BM25_WEIGHTS, any_of, marks, term_count_sql


class Statistics:
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
        """The document counts of ``terms`` in the snapshot stamped ``stamp``; raises ``Moved``
        when they cannot be read in that snapshot any more."""
        values = self.values
        hits = [values.get(("exact", id(stamp[0]), term)) for term in terms]
        known = [hit[1] for hit in hits if hit is not None and same_snapshot(hit[2], stamp)]
        if len(known) == len(terms):
            return known
        counts = self.count_documents(terms, stamp=stamp)
        return [counts[term] for term in terms]

    def count_documents(self, terms: list[str], *, stamp: tuple | None = None) -> dict[str, int]:
        """Count (one statement, one snapshot) and remember the documents of ``terms``. With ``stamp``,
        raises ``Moved`` when the statement's snapshot is not that one."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT " + ", ".join([*(term_count_sql() for _ in terms), *STAMP_COLUMNS]),
                [any_of([t]) for t in terms],
            )
            row = cursor.fetchone()
            read = snapshot_stamp(row[len(terms) :])
        if stamp is not None and not same_snapshot(read, stamp):
            raise Moved
        counts = dict(zip(terms, (int(n) for n in row[: len(terms)]), strict=True))
        for term, count in counts.items():
            self.remember(("term", term), count)
            # Kept per connection; the entry holds the connection, so no other can get its id.
            self.remember(("exact", id(read[0]), term), count, read)
        return counts

    def best_score(self, terms: list[str], stamp: tuple) -> float:
        """The best bm25 any memory (of any owner) gets from ``terms`` alone, in the snapshot stamped
        ``stamp`` (0.0 when none holds them), remembered with that stamp; raises ``Moved`` when it
        cannot be read in that snapshot any more."""
        exact = ("best", id(stamp[0]), *terms)
        hit = self.values.get(exact)
        if hit is not None and same_snapshot(hit[2], stamp):
            return hit[1]
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT (SELECT bm25(memory_fts, {BM25_WEIGHTS}) AS rank FROM memory_fts "
                "WHERE memory_fts MATCH %s ORDER BY rank LIMIT 1), " + ", ".join(STAMP_COLUMNS),
                [any_of(terms)],
            )
            rank, *values = cursor.fetchone()
        read = snapshot_stamp(values)
        if not same_snapshot(read, stamp):
            raise Moved
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
        expression = " AND ".join(any_of([t]) for t in terms)
        return self._count(("together", *sorted(terms)), f"SELECT {term_count_sql()}", [expression])

    def total(self) -> int:
        return self._count(("total",), "SELECT count(*) FROM memories", [])

    def owned(self, owners: list[str]) -> int:
        return self._count(
            ("owners", *sorted(owners)),
            f"SELECT count(*) FROM memories WHERE owner_id IN ({marks(owners)})",
            owners,
        )

    def clear(self) -> None:
        self.values.clear()


class Moved(Exception):
    """The database changed between two statements that had to see the same rows."""


# What identifies a snapshot on one connection: commits by any other connection change
# ``data_version``, this connection's own changes (pending ones too) change ``total_changes()``.
STAMP_COLUMNS = ("(SELECT data_version FROM pragma_data_version)", "total_changes()")


def snapshot_stamp(values: Iterable[Any]) -> tuple:
    """The stamp of the statement that read ``values`` (the STAMP_COLUMNS) on this thread's connection."""
    return (connection.connection, *values)


def same_snapshot(a: tuple | None, b: tuple) -> bool:
    # The connection is compared by identity: a new connection starts its counters again.
    return a is not None and a[0] is b[0] and a[1:] == b[1:]


DOC_FREQUENCIES = Statistics()
