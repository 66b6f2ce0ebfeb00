"""numpy's BLAS thread pool, limited for the process (``MEMORY_BLAS_THREADS``, default 1).

numpy's OpenBLAS runs a matrix product on one thread per core, and its threads then spin, waiting
for more work, for a while after each product. In this service the products are small (a query
against an owner's matrix: 0.1 ms at 10k rows, 4 ms at 100k), and what runs next is onnxruntime
embedding a query on its own threads, the FTS5 search on a pool thread, or other requests: the
spinning threads take their cores. Measured on 2 cores (10k memories per owner, bge-small, a new
question each time): one hybrid retrieval 26.0 ms p50 with OpenBLAS's default, 10.6 ms with one
BLAS thread, of which the query's embedding 14.7 → 5.7 ms; the 100k scan alone costs 18 % more
on one thread (4.1 → 4.8 ms). docs/operations.md ("Performance") has the figures.

threadpoolctl sets the limit on the BLAS libraries already loaded, whatever the import order, so
it is applied when the app is ready (``memory.apps``); 0 leaves the libraries' own defaults
(``OPENBLAS_NUM_THREADS`` and the like then decide).
"""

from __future__ import annotations

from django.conf import settings


def limit_blas_threads() -> int | None:
    """Limit the loaded BLAS libraries to ``MEMORY_BLAS_THREADS`` threads; return the limit set, or
    ``None`` when the setting is 0 (left as it is)."""
    threads = int(settings.MEMORY_BLAS_THREADS)
    if threads == 0:
        return None
    import numpy  # noqa: F401  (loads numpy's BLAS, so that threadpoolctl finds it)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="blas")
    return threads


def blas_threads() -> list[int]:
    """The thread count of each loaded BLAS library (what the limit left; the tests read it)."""
    from threadpoolctl import threadpool_info

    return [int(info["num_threads"]) for info in threadpool_info() if info.get("user_api") == "blas"]
