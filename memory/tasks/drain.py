"""Tasks a stopping consumer could not finish go back on the queue instead of being lost.

Huey takes a task off the queue when a worker starts it, so a consumer that stops while a task runs
would lose it. A graceful stop (``manage.py serve``'s shutdown, ``run_huey`` on SIGTERM: see
``HUEY_CONSUMER``) waits up to ``OMNIROUTE_SHUTDOWN_TIMEOUT_SECONDS`` for running tasks; the consumer
then sends ``SIGNAL_INTERRUPTED`` for each task still in flight (``Huey.notify_interrupted_tasks``),
and :func:`requeue_interrupted` enqueues it again for the next consumer.

A task put back may also finish in the stopping process before it exits, and then runs twice: every
task here is idempotent (extraction rewrites the same upserts, indexing and replays skip what is
done), so past the deadline a task runs at least once rather than at most once. Periodic tasks are not
put back: the next schedule runs them.
"""

from __future__ import annotations

import logging
import threading

from huey.api import PeriodicTask, Task
from huey.contrib.djhuey import HUEY
from huey.signals import SIGNAL_INTERRUPTED

logger = logging.getLogger("memory.tasks")


class DrainCounter:
    """How many interrupted tasks this process put back on the queue (reported by ``serve``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requeued = 0

    def add(self) -> None:
        with self._lock:
            self.requeued += 1


DRAIN = DrainCounter()


@HUEY.signal(SIGNAL_INTERRUPTED)
def requeue_interrupted(signal: str, task: Task) -> None:
    """Put an interrupted task back on the queue (never raises: a queue that is down is logged)."""
    if isinstance(task, PeriodicTask):
        return
    try:
        HUEY.enqueue(task)
    except Exception:
        logger.exception("memory.tasks.requeue_failed: %s (%s) is lost", task.name, task.id)
        return
    DRAIN.add()
    logger.warning("memory.tasks.requeued: %s (%s) did not finish before shutdown", task.name, task.id)
