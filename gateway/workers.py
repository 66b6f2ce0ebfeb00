"""Long-lived threads for the gateway's database work.

Why: under ASGI, Django runs each request's synchronous code in a thread of its own and closes its
database connection at the end of the request. Other requests take a connection back from
``omniroute.db.pool``; the gateway's synchronous work runs in two small executors whose threads, and so
whose connections, outlive requests (not even the pool's take and give on the path):

* :func:`run_db` — the work before the upstream call (authentication, routing, recall, injection);
* :func:`after_response` — fire-and-forget work once a response is sent (enqueueing extraction), on one
  thread, in submission order, so it never holds up a request.

A connection that saw a database error is closed after the call (the next call reopens it).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections

from omniroute.serverloop import server_loop, serving

logger = logging.getLogger("gateway.workers")

P = ParamSpec("P")
R = TypeVar("R")

DB_THREADS = min(8, (os.cpu_count() or 1) + 2)

_lock = threading.Lock()
_executors: dict[str, ThreadPoolExecutor] = {}


def _executor(name: str, workers: int) -> ThreadPoolExecutor:
    with _lock:
        executor = _executors.get(name)
        if executor is None:
            executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"gateway-{name}")
            _executors[name] = executor
        return executor


def _close_broken_connections() -> None:
    for conn in connections.all(initialized_only=True):
        if conn.errors_occurred or conn.in_atomic_block:
            conn.close()


def _with_connection_care(fn: Callable[P, R]) -> Callable[P, R]:
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        finally:
            _close_broken_connections()

    return call


async def run_db(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Await ``fn(*args, **kwargs)`` run in a database thread; its exceptions propagate."""
    return await sync_to_async(
        _with_connection_care(fn), thread_sensitive=False, executor=_executor("db", DB_THREADS)
    )(*args, **kwargs)


def after_response(fn: Callable[[], object]) -> None:
    """Run ``fn()`` later on the after-response thread; its exceptions are logged, never raised.
    ``fn`` runs for the server loop of the request that handed it over (``omniroute.serverloop``):
    what it relays to the Studio's live views is handed to that loop, not sent through a new one."""
    loop = server_loop()

    def guarded() -> None:
        try:
            with serving(loop):
                fn()
        except Exception:
            logger.exception("gateway.after_response.failed")

    _executor("after", 1).submit(_with_connection_care(guarded))


def wait_for_after_response_work(timeout: float = 10.0) -> bool:
    """Block until the after-response work submitted so far is done (tests, graceful shutdown)."""
    done: Future = _executor("after", 1).submit(lambda: None)
    try:
        done.result(timeout=timeout)
    except TimeoutError:
        return False
    return True
