"""Keyword search over SQLite FTS5 (the only place that builds FTS5 queries).

- :mod:`.query`: the query language — quoted terms, MATCH expressions, bm25's weights and idf;
- :mod:`.statistics`: document counts and best scores per snapshot, which choose a plan;
- :mod:`.search`: :func:`fts_search`, the exact result of one bm25 query reached by the cheapest plan.
"""

from memory.retrieval.fts.query import BM25_WEIGHTS, MAX_TERMS, quote_term, read_conditions
from memory.retrieval.fts.search import FtsHit, fts_optimize, fts_search, selective_terms
from memory.retrieval.fts.statistics import DOC_FREQUENCIES

__all__ = [
    "BM25_WEIGHTS",
    "DOC_FREQUENCIES",
    "MAX_TERMS",
    "FtsHit",
    "fts_optimize",
    "fts_search",
    "quote_term",
    "read_conditions",
    "selective_terms",
]
