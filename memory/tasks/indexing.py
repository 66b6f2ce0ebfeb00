"""Huey tasks for vectors: per-write embedding, the reindex drain, the sweep of the mirrors, and the
resumption at start of what a killed process left pending.

The services queue them through :func:`queue_indexing`, :func:`queue_reindex` and :func:`queue_sweep`
(best effort, :mod:`memory.tasks.handoff`): when the queue is down the memories keep
``needs_reindex`` and the drain is queued again by the first hand-off that works, or at start.
"""

import logging
import threading
from collections.abc import Sequence

from huey.contrib.djhuey import db_task, on_startup

from memory.services import indexing, vectorsync
from memory.tasks.handoff import after_commit, hand_off, on_queue_back

logger = logging.getLogger("memory.tasks")

# The kinds of work a failed hand-off leaves to retry (memory.tasks.handoff).
VECTORS = "vectors"
SWEEP = "sweep of the mirrors"


@db_task(retries=2, retry_delay=2)
def index_memories_task(seqs: list[int]) -> int:
    logger.info("index_memories start: %s memories", len(seqs))
    done = indexing.index_by_seqs(seqs)
    logger.info("index_memories end: %s indexed", done)
    return done


@db_task(retries=1, retry_delay=5)
def reindex_task() -> dict:
    logger.info("reindex start: %s pending", indexing.reindex_needed(indexing.vector_context()))
    result = indexing.reindex_all()
    logger.info("reindex end: %s", result)
    return result


@db_task(retries=1, retry_delay=60)
def sweep_mirrors_task() -> dict:
    """Remove from the mirrors (Qdrant) the vectors of memories that are gone, expired or past
    retention: scheduled when a mirror missed a delete."""
    result = vectorsync.sweep_mirrors()
    logger.info("sweep of the mirrors end: %s", result)
    return result


def queue_indexing(seqs: Sequence[int]) -> None:
    """After commit, embed these memories in the background (best effort: they keep ``needs_reindex``)."""
    seqs = [int(s) for s in seqs]
    after_commit(lambda: index_memories_task(seqs), what=VECTORS)


def queue_reindex() -> None:
    """After commit, drain the reindex queue in the background (best effort, as above)."""
    after_commit(lambda: reindex_task(), what=VECTORS)


def queue_sweep(delay: float) -> bool:
    """Queue the sweep of the mirrors in ``delay`` seconds, now; returns whether the queue took it
    (if not, the first hand-off that works queues it again)."""
    return hand_off(lambda: sweep_mirrors_task.schedule(delay=delay), what=SWEEP)


@on_queue_back(VECTORS)
def drain_if_pending() -> bool:
    """Queue the reindex drain when memories wait for their vectors; returns whether it did."""
    pending = indexing.pending_count()
    if pending:
        logger.info("queueing the reindex drain for %s memories left pending", pending)
        reindex_task()
    return bool(pending)


@on_queue_back(SWEEP)
def sweep_again() -> None:
    sweep_mirrors_task.schedule(delay=vectorsync.SWEEP_DELAY_SECONDS)


_resumed = threading.Lock()
_resume_done = False


@on_startup()
def resume_pending_indexing() -> bool:
    """When a consumer starts (``serve``'s workers, ``run_huey``), queue the reindex drain if memories
    are waiting for their vectors: work a killed process left behind (``kill -9`` during a reindex, a
    queue lost with its process, a hand-off that failed while the queue was down) resumes by itself.
    Runs once per process (each worker thread calls the startup hooks); returns whether it queued the
    drain (never raises: a queue still down is logged, the work stays pending)."""
    global _resume_done
    with _resumed:
        if _resume_done:
            return False
        _resume_done = True
    pending = indexing.pending_count()
    if not pending:
        return False
    logger.info("resuming the indexing left pending: %s memories", pending)
    return hand_off(lambda: reindex_task(), what=VECTORS)


def forget_resume() -> None:
    """Let :func:`resume_pending_indexing` run again in this process (tests)."""
    global _resume_done
    with _resumed:
        _resume_done = False
