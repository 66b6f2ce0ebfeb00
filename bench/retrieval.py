"""Hybrid retrieval latency for one owner at 10k and 100k memories, next to a numpy scan."""

from __future__ import annotations

import os
import time

import numpy as np

from bench.corpus import memories, queries
from bench.stats import summary, time_ms

SIZES = tuple(int(x) for x in os.environ.get("BENCH_SIZES", "10000,100000").split(","))
QUERIES = 100


def _scan(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """The baseline: a brute-force top-10 over the owner's vectors."""
    scores = matrix @ vector
    top = np.argpartition(-scores, 10)[:10]
    return top[np.argsort(-scores[top])]


def _same_top10_as_numpy(store, owner_hex: str, matrix: np.ndarray, qvecs) -> int:
    """How many queries get the numpy scan's top-10 scores from the store (the int8 pre-scan of large
    owners must not change results)."""
    from memory.visibility import Visibility

    visible = Visibility(owner_ids=[owner_hex])
    same = 0
    for vector in qvecs:
        expected = np.sort(matrix @ vector)[::-1][:10]
        got = [hit.score for hit in store.search(vector=vector, k=10, visibility=visible)]
        same += bool(np.allclose(got, expected, atol=1e-5))
    return same


def _same_as_float_scan(store, owner_hex: str, qvecs) -> int:
    """How many queries get the same top 10 (rows and scores) from the store with and without the int8
    pre-scan (``int8scan.MIN_ROWS`` = 0 scans every row in float32)."""
    from memory.vectorstores import int8scan
    from memory.visibility import Visibility

    visible = Visibility(owner_ids=[owner_hex])
    threshold = int8scan.MIN_ROWS
    same = 0
    for vector in qvecs:
        try:
            int8scan.MIN_ROWS = 0
            expected = store.search(vector=vector, k=10, visibility=visible)
        finally:
            int8scan.MIN_ROWS = threshold
        got = store.search(vector=vector, k=10, visibility=visible)
        tie = expected[-1].score + 1e-6  # rows tied with the 10th may be any of the tied ones
        same += bool(
            np.allclose([h.score for h in got], [h.score for h in expected], atol=1e-6)
            and {h.seq for h in got if h.score > tie} == {h.seq for h in expected if h.score > tie}
        )
    return same


def _int8_scan(n: int, dim: int) -> str:
    """Whether the int8 pre-scan ran for this owner, and why not."""
    from memory.vectorstores import int8scan

    threshold = int8scan.MIN_ROWS
    if threshold <= 0 or n < threshold:
        return f"off (below int8scan.MIN_ROWS={threshold})"
    check = int8scan.kernel_check(dim)
    return f"on, kernel {check.detail}" if check.exact else f"OFF: {check.detail}"


def _plain_fts(owner, qs, *, selective: bool) -> dict:
    """The keyword floor: a bare FTS5 table of this owner's rows alone (same tokenizer), the query
    terms OR-ed, bm25 top 10 — what a 20-line keyword index does, with no owner filter or join.
    Every term by default (the ranking ours returns); ``selective``: without the common words (what
    the former document-frequency pruning searched), a floor no exact plan reaches."""
    from django.db import connection

    from memory.retrieval.fts import MAX_TERMS, quote_term, selective_terms
    from memory.retrieval.relevance import query_terms

    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS bench_plain_fts")
        cursor.execute(
            "CREATE VIRTUAL TABLE bench_plain_fts USING fts5(content, tokenize='porter unicode61 remove_diacritics 2')"
        )
        cursor.execute(
            "INSERT INTO bench_plain_fts(rowid, content) SELECT seq, content FROM memories WHERE owner_id = %s",
            [owner.pk.hex],
        )
        samples = []
        for q in qs:
            terms = query_terms(q)[:MAX_TERMS]
            if selective and terms:
                terms = selective_terms(terms)
            if not terms:
                continue
            expression = " OR ".join(quote_term(t) for t in terms)
            started = time.perf_counter()
            cursor.execute(
                "SELECT rowid, rank FROM bench_plain_fts WHERE bench_plain_fts MATCH %s ORDER BY rank LIMIT 10",
                [expression],
            )
            cursor.fetchall()
            samples.append((time.perf_counter() - started) * 1000)
        cursor.execute("DROP TABLE bench_plain_fts")
    return summary(samples)


def _full_query(owner_hex: str, query: str, limit: int, now) -> list[tuple[int, float]]:
    """What ``fts_search`` must return, by its definition: bm25 of every term over the owner's rows,
    the 100 best (ties by seq), the first ``limit`` not expired — one plain query."""
    from django.db import connection

    from memory.retrieval.fts.query import BM25_WEIGHTS, MAX_TERMS, match_expression
    from memory.retrieval.relevance import query_terms

    terms = query_terms(query)[:MAX_TERMS]
    sql = (
        f"SELECT f.rowid, f.rank FROM (SELECT rowid, bm25(memory_fts, {BM25_WEIGHTS}) AS rank FROM memory_fts "
        "WHERE memory_fts MATCH %s ORDER BY rank, rowid LIMIT %s) AS f JOIN memories AS m ON m.seq = f.rowid "
        "WHERE m.expires_at IS NULL OR m.expires_at > %s ORDER BY f.rank, f.rowid LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            [
                match_expression(terms, [owner_hex]),
                max(limit * 4, 100),
                connection.ops.adapt_datetimefield_value(now),
                limit,
            ],
        )
        return [(int(seq), float(rank)) for seq, rank in cursor.fetchall()]


def _keyword_half(owner_hex: str, qs) -> tuple[dict, dict, int]:
    """``fts_search`` alone (hybrid's keyword half, k = 20) and the same full query run plainly, with
    how many queries get exactly the full query's rows and scores from it."""
    from django.utils import timezone

    from memory.retrieval.fts import fts_search

    now = timezone.now()
    ours, full, same = [], [], 0
    for q in qs:
        started = time.perf_counter()
        hits = fts_search(query=q, owner_ids=[owner_hex], limit=20, now=now)
        ours.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        expected = _full_query(owner_hex, q, 20, now)
        full.append((time.perf_counter() - started) * 1000)
        same += [(h.seq, h.rank) for h in hits] == expected
    return summary(ours), summary(full), same


def _load_owner(n: int, seed: int):
    from memory.models import ApiKey
    from memory.services.indexing import reindex_all
    from memory.services.memories import MemoryInput, memory_bulk_create

    owner, _ = ApiKey.issue(name=f"bench-{n}")
    texts = memories(n, seed=seed)
    started = time.perf_counter()
    for i in range(0, n, 10_000):
        memory_bulk_create([MemoryInput(owner=owner, content=t) for t in texts[i : i + 10_000]])
    reindex_all()
    elapsed = time.perf_counter() - started
    # Steady state: the FTS term statistics are refreshed (a server does so within their TTL).
    from memory.retrieval.fts import DOC_FREQUENCIES

    DOC_FREQUENCIES.clear()
    return owner, elapsed


def run() -> dict:
    from django.db import connection

    from memory.conf import get_memory_settings, update_memory_settings
    from memory.embeddings import runtime
    from memory.retrieval.engine import retrieve
    from memory.services.indexing import vector_context

    update_memory_settings({"embeddingSource": "static"})
    runtime.reset()
    ctx = vector_context(get_memory_settings())
    if not ctx.usable:
        print(f"no vector tier ({ctx.reason}); run manage.py build_embedding_models")
        return {}
    # A second owner so per-owner search has neighbours to ignore.
    _load_owner(5_000, seed=99)
    results = {}
    qs = queries(QUERIES)
    for n in SIZES:
        owner, load_s = _load_owner(n, seed=n)
        owners = frozenset({owner.pk})
        retrieve(owner_ids=owners, query=qs[0], strategy="hybrid", limit=10)  # loads the owner's matrix
        lat = {}
        for strategy in ("hybrid", "semantic", "keyword"):
            samples = []
            for q in qs:
                started = time.perf_counter()
                retrieve(owner_ids=owners, query=q, strategy=strategy, limit=10)
                samples.append((time.perf_counter() - started) * 1000)
            lat[strategy] = summary(samples)
        # numpy brute force over the same vectors, queries embedded by the same source
        with connection.cursor() as cursor:
            cursor.execute("SELECT embedding FROM memory_vec WHERE owner_id = %s", [owner.pk.hex])
            matrix = np.stack([np.frombuffer(row[0], dtype=np.float32) for row in cursor.fetchall()])
        qvecs = ctx.source.embed(qs)

        plain = _plain_fts(owner, qs, selective=False)
        plain_selective = _plain_fts(owner, qs, selective=True)
        half, full_query, same_fts = _keyword_half(owner.pk.hex, qs)
        numpy_lat = summary([t for v in qvecs for t in time_ms(lambda v=v, m=matrix: _scan(m, v), 1)])
        same = _same_top10_as_numpy(ctx.store, owner.pk.hex, matrix, qvecs)
        same_float = _same_as_float_scan(ctx.store, owner.pk.hex, qvecs)
        int8 = _int8_scan(n, matrix.shape[1])
        embed_lat = summary([t for q in qs for t in time_ms(lambda q=q: ctx.source.embed([q + " x"]), 1)])
        target = 5.0 if n == 10_000 else 2 * numpy_lat["p50"] + 2
        results[n] = {
            "load_s": round(load_s, 1),
            **lat,
            "numpy_scan": numpy_lat,
            "plain_fts5_all_terms": plain,
            "plain_fts5_selective_terms": plain_selective,
            "keyword_half": half,
            "full_query": full_query,
            "keyword_top20_same_as_full_query": same_fts,
            "keyword_over_plain_fts5": round(lat["keyword"]["p50"] / plain["p50"], 2),
            "keyword_half_over_plain_fts5": round(half["p50"] / plain["p50"], 2),
            "query_embedding": embed_lat,
            "vector_top10_same_as_numpy": same,
            "vector_top10_same_as_float_scan": same_float,
            "int8_prescan": int8,
            "target_p50_ms": round(target, 2),
        }
        print(
            f"{n:>7,} memories/owner (loaded + indexed in {load_s:.1f} s): hybrid p50 {lat['hybrid']['p50']} ms "
            f"p95 {lat['hybrid']['p95']} ms | semantic p50 {lat['semantic']['p50']} | keyword p50 {lat['keyword']['p50']} "
            f"| numpy scan p50 {numpy_lat['p50']} ms p95 {numpy_lat['p95']} | query embedding p50 {embed_lat['p50']} ms "
            f"| target hybrid p50 ≤ {target:.2f} ms | vector top-10 scores equal to numpy's for {same}/{len(qvecs)} queries"
        )
        print(
            f"{'':>7}  int8 pre-scan {int8} | top-10 rows and scores equal to the store's float32 scan "
            f"for {same_float}/{len(qvecs)} queries"
        )
        print(
            f"{'':>7}  keyword p50 {lat['keyword']['p50']} ms (whole retrieve), its FTS half (fts_search, k=20) "
            f"{half['p50']} ms, against plain FTS5 on this owner's rows with every term {plain['p50']} ms: "
            f"{lat['keyword']['p50'] / plain['p50']:.2f}x and {half['p50'] / plain['p50']:.2f}x (target ≤ 1.5x); "
            f"plain FTS5 with the selective terms only {plain_selective['p50']} ms; "
            f"our full query run plainly {full_query['p50']} ms; FTS top-20 rows and scores equal to the full "
            f"query's for {same_fts}/{len(qs)} queries"
        )
    return results
