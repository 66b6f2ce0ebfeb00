"""Ranking for the backends that rank in this process (in-memory, Redis without RediSearch).

Keyword: Okapi BM25 over the words of ``memory.retrieval.relevance`` (so these backends tokenise like
the native store's FTS5 query building: lower-cased Unicode words, stop-words dropped), with the
document = content + key. The collection statistics are those of the records being ranked (one
owner's, after the filters), as an index per owner would give. Vector: exact cosine similarity with
numpy, one matrix product.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from memory.backends.base import MemoryHit, MemoryRecord
from memory.retrieval.relevance import STOP_WORDS, query_terms, words

# BM25's usual constants (Robertson & Zaragoza 2009; also FTS5's bm25() defaults).
K1 = 1.2
B = 0.75


def document_terms(record: MemoryRecord) -> list[str]:
    """The words a record is found by: its content's and its key's, stop-words left out."""
    text = record.content if not record.key else f"{record.content} {record.key}"
    return [word for word in words(text) if word not in STOP_WORDS]


def bm25_rank(records: Sequence[MemoryRecord], query: str, *, limit: int) -> list[MemoryHit]:
    """The ``limit`` records sharing words with ``query``, by BM25, best first (ties: newest first)."""
    terms = query_terms(query)
    if not terms or not records or limit <= 0:
        return []
    documents = [Counter(document_terms(record)) for record in records]
    lengths = [sum(doc.values()) for doc in documents]
    average = (sum(lengths) / len(lengths)) or 1.0
    total = len(documents)
    frequency = {term: sum(1 for doc in documents if term in doc) for term in terms}
    idf = {term: math.log(1.0 + (total - df + 0.5) / (df + 0.5)) for term, df in frequency.items()}
    scored: list[tuple[float, MemoryRecord]] = []
    for record, doc, length in zip(records, documents, lengths, strict=True):
        score = 0.0
        for term in terms:
            tf = doc.get(term, 0)
            if tf:
                score += idf[term] * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        if score > 0:
            scored.append((score, record))
    scored.sort(key=lambda pair: (pair[0], pair[1].created_at), reverse=True)
    return [MemoryHit(record, score, "keyword") for score, record in scored[:limit]]


def cosine_rank(
    records: Sequence[MemoryRecord], vectors: Sequence[np.ndarray], query: np.ndarray, *, limit: int
) -> list[MemoryHit]:
    """The ``limit`` records nearest to ``query`` by exact cosine similarity, best first.
    ``vectors[i]`` is ``records[i]``'s vector; every vector and the query have the same dimension."""
    if not records or limit <= 0:
        return []
    matrix = np.vstack([np.asarray(v, dtype=np.float32) for v in vectors])
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    scores = (matrix @ (query / np.linalg.norm(query))) / norms
    order = np.argsort(-scores, kind="stable")[:limit]
    return [MemoryHit(records[i], float(scores[i]), "vector") for i in order]
