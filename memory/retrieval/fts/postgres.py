"""Keyword search on PostgreSQL: bm25 over the ``tsvector`` index of migration 0002, in one statement.

The contract is the FTS5 search's (:func:`memory.retrieval.fts.search.fts_search`): the OR of every
query term over the owners' memories, ranked by bm25 with FTS5's formula and constants (k1 = 1.2,
b = 0.75, idf ``ln((N - n + 0.5) / (n + 0.5))``, floored at 1e-6; column weights content 1.0, key 0.5,
context 0.5 from the ``tsvector`` weights A, B, C), best first and ties by ``seq``; of the owners'
``candidates`` best rows, the first ``limit`` that pass the other read filters. Ranks are negative,
as FTS5's: more negative is better.

Two differences, both measured by ``tests/postgres/test_keyword_parity.py``:

* the statistics (rows, average length, documents per term) are the *owners'*, not the whole
  table's: PostgreSQL counts them from the owners' rows through the owner index, where FTS5 keeps
  table-wide totals. A memory's rank then never depends on another owner's memories;
* words are stemmed by Snowball's English stemmer (Porter's second version), FTS5 by Porter's first,
  and diacritics are kept (FTS5 folds them): a few words stem or match differently.

The statement reads the query lexemes' postings (``memory_fts_terms``, migration 0017: one row per
document and lexeme with its weighted frequency and the document's length, kept by triggers on
``memory_fts``) from the btree index ``(owner_id, lexeme)`` alone: the owner filter is in the index,
and no matched ``tsvector`` is unnested (that cost 270 ms of a 334 ms hybrid search at 100k memories
of one owner; the postings take ~50 ms, the ranking unchanged). The owner's row count and average
length come from the index ``(owner_id, length)``. No plan shortcut of the FTS5 search (MaxScore,
owner-in-MATCH) is needed: the whole query is one statement, read once.
"""

from __future__ import annotations

import re
import uuid

from django.db import connection, transaction

from memory.retrieval.fts.query import marks

# FTS5's bm25 constants (fts5_aux.c). The column weights of memory/retrieval/fts/query.py
# BM25_WEIGHTS, by tsvector weight (A content 1.0, B key 0.5, C context 0.5), are in the postings'
# frequencies (migration 0017).
K1 = 1.2
B = 0.75

# FTS5 counts the owner column's token in a row's length (its weight is 0); so does this, for the
# same length normalisation.
# What memory_fts_words makes (alphanumerics, lower case): safe to quote into a tsquery as it is.
_LEXEME = re.compile(r"\w+")
# The query's lexemes, one row per term's lexeme (a word two terms stem to counts twice, as two
# FTS5 phrases do).
LEXEMES_SQL = (
    "SELECT w.lexeme FROM unnest(%s::text[]) AS t(term), LATERAL unnest(memory_fts_words(t.term)) AS w"
)
# The matched documents' frequencies are the query lexemes' postings (migration 0017), read from the
# index (owner_id, lexeme) alone. A memory's terms' shares are summed smallest first: two memories
# with the same shares then have the same float sum whatever the plan, and tie (broken by seq).
_SEARCH_SQL = """
WITH terms AS (
    SELECT unnest(%s::text[]) AS lexeme
), freq AS (
    SELECT p.seq, p.length, p.lexeme, p.tf FROM memory_fts_terms AS p
    WHERE p.lexeme = ANY(%s::text[]) {owner_postings}
), stats AS (
    SELECT count(*)::float8 AS n, coalesce(avg(length), 0)::float8 + 1 AS avgdl FROM memory_fts AS f
    {owner_where}
), df AS (
    SELECT lexeme, count(*)::float8 AS docs FROM freq GROUP BY lexeme
), parts AS (
    SELECT fr.seq, greatest(ln(greatest(s.n - df.docs + 0.5, 0.5) / (df.docs + 0.5)), 1e-6)
        * fr.tf * {k1_plus_1} / (fr.tf + {k1} * (1 - {b} + {b} * (fr.length + 1) / s.avgdl)) AS part
    FROM freq AS fr JOIN df USING (lexeme) JOIN terms USING (lexeme) CROSS JOIN stats AS s
), ranked AS (
    SELECT seq, -sum(part ORDER BY part) AS rank FROM parts GROUP BY seq ORDER BY rank, seq LIMIT %s
)
SELECT r.seq, r.rank FROM ranked AS r JOIN memories AS m ON m.seq = r.seq
WHERE {conditions} ORDER BY r.rank, r.seq LIMIT %s
"""


def search_sql(*, owners: bool, conditions: list[str]) -> str:
    """The statement: parameters the lexemes (one per term's), the distinct lexemes, [``owners``
    twice], ``candidates``, the conditions', ``limit``."""
    owner = "owner_id = ANY(%s::uuid[])"
    return _SEARCH_SQL.format(
        owner_postings=f"AND p.{owner}" if owners else "",
        owner_where=f"WHERE f.{owner}" if owners else "",
        k1=K1,
        k1_plus_1=K1 + 1,
        b=B,
        conditions=" AND ".join(conditions) or "true",
    )


def search(
    *,
    terms: list[str],
    owners: list[str] | None,
    limit: int,
    candidates: int,
    conditions: tuple[list[str], list],
) -> list[tuple[int, float]]:
    """``(seq, rank)`` of the best visible matches (see the module docstring); ``owners`` as hex."""
    where, values = conditions
    owner_ids = None if owners is None else [uuid.UUID(hex=o) for o in owners]
    with connection.cursor() as cursor:
        # The lexemes first, so that they reach the planner as constants: it then reads their
        # postings through the (owner_id, lexeme) index.
        cursor.execute(LEXEMES_SQL, [terms])
        lexemes = [lexeme for (lexeme,) in cursor.fetchall() if _LEXEME.fullmatch(lexeme)]
        if not lexemes:
            return []
        params: list = [lexemes, list(dict.fromkeys(lexemes))]
        if owner_ids is not None:
            params += [owner_ids, owner_ids]
        params += [candidates, *values, limit]
        cursor.execute(search_sql(owners=owner_ids is not None, conditions=where), params)
        return [(int(seq), float(rank)) for seq, rank in cursor.fetchall()]


# -- the index's upkeep (memory.services.integrity, memory.services.encryption)

_DOCUMENT = "memory_fts_document(m.content, m.key, m.context)"
_INDEX_ROWS = (
    "INSERT INTO memory_fts (seq, owner_id, document, length) "
    "SELECT m.seq, m.owner_id, d.document, memory_fts_length(d.document) FROM memories AS m, "
    f"LATERAL (SELECT {_DOCUMENT} AS document) AS d"
)


def document_count(owner_ids: list[str] | None = None) -> int:
    """How many memories the index holds (of these owners, hex, when given)."""
    with connection.cursor() as cursor:
        if owner_ids is None:
            cursor.execute("SELECT count(*) FROM memory_fts")
        else:
            cursor.execute(
                f"SELECT count(*) FROM memory_fts WHERE owner_id IN ({marks(owner_ids)})", list(owner_ids)
            )
        return int(cursor.fetchone()[0])


def index_missing() -> int:
    """Index the memories that have no document; returns how many."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"{_INDEX_ROWS} WHERE m.seq NOT IN (SELECT seq FROM memory_fts)")
        return cursor.rowcount


def rebuild() -> None:
    """Index every memory again from its row (drops documents of gone rows)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM memory_fts")
        cursor.execute(_INDEX_ROWS)


def integrity() -> str:
    """``ok`` when the index holds exactly one document per memory, each its memory's text and owner,
    and each document's postings its lexemes, owner and length; else what differs (a full scan, as FTS5's integrity-check against its content table)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FILTER (WHERE f.seq IS NULL), count(*) FILTER (WHERE m.seq IS NULL), "
            f"count(*) FILTER (WHERE f.document <> {_DOCUMENT} OR f.owner_id <> m.owner_id "
            f"OR f.length <> memory_fts_length({_DOCUMENT})) "
            "FROM memory_fts AS f FULL JOIN memories AS m ON m.seq = f.seq"
        )
        missing, orphans, stale = (int(n) for n in cursor.fetchone())
        # The postings: one per lexeme of each document, with its owner and length.
        cursor.execute(
            "SELECT count(*) FROM (SELECT seq, count(*) AS n, min(owner_id::text) AS owner, "
            "max(owner_id::text) AS other, min(length) AS length, max(length) AS longest "
            "FROM memory_fts_terms GROUP BY seq) AS p FULL JOIN memory_fts AS f ON f.seq = p.seq "
            "WHERE coalesce(p.n, 0) <> coalesce(length(f.document), 0) OR p.owner <> p.other "
            "OR p.owner <> f.owner_id::text OR p.length <> p.longest OR p.length <> f.length"
        )
        postings = int(cursor.fetchone()[0])
    found = [
        f"{n} {what}"
        for n, what in (
            (missing, "memories have no document"),
            (orphans, "documents belong to no memory"),
            (stale, "documents do not match their memories"),
            (postings, "documents do not match their postings"),
        )
        if n
    ]
    return "; ".join(found) or "ok"


def optimize() -> None:
    """Refresh the planner's statistics of the index (after large batches). PostgreSQL merges the
    GIN index's pending list itself; deleted entries are reclaimed by autovacuum."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_fts")
        cursor.execute("ANALYZE memory_fts_terms")
