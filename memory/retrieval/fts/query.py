"""The FTS5 query language of our index: quoting user terms, MATCH expressions, bm25's weights and idf.

User text never reaches ``MATCH`` raw: it is tokenised with
:func:`memory.retrieval.relevance.query_terms` (stop-words dropped) and every term is double-quoted, so
punctuation, ``-``, ``:``, ``*`` or quotes in a question can neither break the query nor change its
meaning. Terms are OR-joined for recall; bm25 then ranks memories matching more (and rarer) terms first.
"""

from __future__ import annotations

import math
from collections.abc import Sized
from datetime import datetime

from memory.visibility import Visibility

MAX_TERMS = 32
MAX_QUERY_CHARS = 2048
# bm25 column weights: content, key, context (a conversation turn's previous turn,
# memory.services.turns), owner_id (the owner column only filters).
BM25_WEIGHTS = "1.0, 0.5, 0.5, 0.0"
TEXT_COLUMNS = "{content key context}"
# FTS5's bm25 (fts5_aux.c) uses k1 = 1.2: a term adds less than idf * (k1 + 1) to any memory's score.
TERM_BOUND = 1.2 + 1


def quote_term(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def marks(values: Sized) -> str:
    return ", ".join(["%s"] * len(values))


def any_of(terms: list[str]) -> str:
    return f"{TEXT_COLUMNS} : (" + " OR ".join(quote_term(t) for t in terms) + ")"


def term_count_sql() -> str:
    return "(SELECT count(*) FROM memory_fts WHERE memory_fts MATCH %s)"


def match_expression(
    terms: list[str], owner_ids: list[str] | None = None, *, selective: list[str] | None = None
) -> str:
    """The MATCH string OR-ing ``terms`` (each quoted; all of them score), limited to ``owner_ids``
    (hex) when given. With ``selective`` (some of ``terms``), only the memories holding one of those
    match; their scores stay the full query's (the phrases under ``NOT`` have no positions in them)."""
    expression = any_of(terms)
    if selective is not None:
        common = [t for t in terms if t not in selective]
        expression = f"{expression} NOT ({any_of(common)} NOT {any_of(selective)})"
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
    alias: str,
    *,
    now: datetime,
    session_id: str | None = None,
    created_after: datetime | None = None,
    valid_at: datetime | None = None,
    include_superseded: bool = False,
) -> tuple[list[str], list]:
    """The SQL conditions (on the ``memories`` table as ``alias``) and parameters of the read filters
    other than the owner: not expired at ``now``, in ``session_id``, created from ``created_after``,
    current (or, with ``valid_at``, current at that moment; any with ``include_superseded``)."""
    return Visibility(
        owner_ids=None,
        now=now,
        session_id=session_id,
        created_after=created_after,
        valid_at=valid_at,
        include_superseded=include_superseded,
    ).sql(alias, owners=False)
