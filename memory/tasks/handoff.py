"""Handing work to the Huey queue, best effort: a queue that is down never fails the request.

Every enqueue after a write runs after commit (:func:`after_commit`), when the rows are already
durable; an exception there (Redis gone: ``ConnectionError``) used to reach the client as a 500 for a
write that had succeeded, so a retrying client made duplicates. :func:`hand_off` logs the failure and
returns; the work itself is not lost, because what it would have done is recorded in the database:

* vectors: the rows keep ``needs_reindex``; the reindex drain is queued again by the first hand-off
  that works after the failure (:func:`on_queue_back`), and by the consumer's start
  (``memory.tasks.indexing.resume_pending_indexing``);
* the sweep of the mirrors: queued again by the first hand-off that works;
* extraction (``memory.tasks.extraction``): the chat exchange is not stored, so a lost exchange is
  lost (logged as ``memory.extraction.enqueue_failed``).

:func:`queue_status` is the ``queue`` line of the engine status.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import redis
from django.db import transaction
from huey.contrib.djhuey import HUEY

logger = logging.getLogger("memory.tasks")

# A status probe of a Redis queue never waits longer than this (seconds).
PROBE_TIMEOUT_SECONDS = 1.0


class QueueHealth:
    """What this process saw of its hand-offs: how many failed since the last one that worked, the
    last error, and which kinds of work (``what``) were missed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.failures = 0
        self.last_error: str | None = None
        self.last_failure_at: float | None = None
        self.missed: set[str] = set()

    def failed(self, what: str, exc: BaseException) -> None:
        with self._lock:
            self.failures += 1
            self.last_error = f"{type(exc).__name__}: {exc}"[:300]
            self.last_failure_at = time.time()
            self.missed.add(what)

    def succeeded(self) -> set[str]:
        """Record a hand-off that worked; returns the kinds of work missed before it (now to retry)."""
        with self._lock:
            missed, self.missed = self.missed, set()
            self.failures = 0
            return missed

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"failedHandoffs": self.failures, "lastError": self.last_error}

    def reset(self) -> None:
        """Forget every failure (tests)."""
        with self._lock:
            self.failures, self.last_error, self.last_failure_at, self.missed = 0, None, None, set()


HEALTH = QueueHealth()
_recoveries: dict[str, Callable[[], object]] = {}


def on_queue_back(what: str) -> Callable[[Callable[[], object]], Callable[[], object]]:
    """Register the retry of a kind of work: run (through :func:`hand_off`) by the first hand-off
    that works after one of kind ``what`` failed."""

    def register(retry: Callable[[], object]) -> Callable[[], object]:
        _recoveries[what] = retry
        return retry

    return register


def hand_off(enqueue: Callable[[], object], *, what: str) -> bool:
    """Call ``enqueue`` (a task call, which puts the task on the queue); returns whether it worked.

    Never raises: a failure is logged with its traceback and counted (:data:`HEALTH`). The first
    hand-off that works after failures runs the retries registered for what was missed."""
    try:
        enqueue()
    except Exception as exc:
        HEALTH.failed(what, exc)
        logger.exception("memory.tasks.handoff_failed: %s not queued; it stays pending for a retry", what)
        return False
    for missed in sorted(HEALTH.succeeded()):
        retry = _recoveries.get(missed)
        if retry is not None:
            logger.info("the queue answers again: retrying the %s missed meanwhile", missed)
            hand_off(retry, what=missed)
    return True


def after_commit(enqueue: Callable[[], object], *, what: str) -> None:
    """:func:`hand_off` once the current transaction commits (at once in autocommit)."""
    transaction.on_commit(lambda: hand_off(enqueue, what=what))


def queue_status() -> dict[str, Any]:
    """The queue's backend, whether it answers a probe now, how many tasks wait in it, and the
    hand-offs this process saw fail."""
    storage = HUEY.storage
    backend = "redis" if type(storage).__name__.startswith("Redis") else "sqlite"
    status: dict[str, Any] = {
        "backend": backend,
        "immediate": bool(HUEY.immediate),
        "reachable": False,
        "pending": None,
        **HEALTH.snapshot(),
    }
    try:
        status["pending"] = (
            _probe_redis(storage) if backend == "redis" and not HUEY.immediate else HUEY.pending_count()
        )
        status["reachable"] = True
    except Exception as exc:
        logger.warning("queue probe failed: %s", exc)
        status["reason"] = (
            f"the {backend} queue does not answer ({type(exc).__name__}: {exc}); writes are kept and their indexing is retried when it is back"[
                :500
            ]
        )
        return status
    if status["failedHandoffs"]:
        status["reason"] = (
            f"the queue answers again; {status['failedHandoffs']} hand-offs failed before "
            "(retried by the next one, and at start)"
        )
    else:
        status["reason"] = (
            "tasks run inline (HUEY_IMMEDIATE)" if HUEY.immediate else f"{backend} queue answers"
        )
    return status


def _probe_redis(storage: Any) -> int:
    """``LLEN`` of the queue through a connection of its own with short timeouts: Huey's client has
    none, so a hung server would hang the status page."""
    pool = storage.conn.connection_pool
    kwargs = {
        **pool.connection_kwargs,
        "socket_timeout": PROBE_TIMEOUT_SECONDS,
        "socket_connect_timeout": PROBE_TIMEOUT_SECONDS,
    }
    probe = redis.Redis(
        connection_pool=redis.ConnectionPool(connection_class=pool.connection_class, **kwargs)
    )
    try:
        return int(probe.llen(storage.queue_key))
    finally:
        probe.close()
