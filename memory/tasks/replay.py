"""Huey tasks for the durable replay queue (``memory.backends.durable``): every minute, the writes a
fallback kept for a key's provider are replayed to it; at a consumer's start, pending writes are
resumed at once rather than at the next minute.

Both call :func:`memory.backends.durable.replay_all`, which is idempotent (a replayed write leaves
the queue; a store replayed twice finds its id and changes nothing) and serialised per key by the
queue's lease, so overlapping runs (two consumers, a slow run and the next minute's) are safe.
"""

from __future__ import annotations

import logging
import threading

from huey import crontab
from huey.contrib.djhuey import db_periodic_task, db_task, on_startup

from memory.backends.durable import replay_all
from memory.models import PendingProviderWrite
from memory.tasks.handoff import hand_off

logger = logging.getLogger("memory.tasks")

SCHEDULE = crontab(minute="*")
TASK_NAME = "memory.replay_provider_writes"
# The kind of work a failed hand-off leaves to retry (memory.tasks.handoff).
REPLAY = "replay of provider writes"


@db_periodic_task(SCHEDULE, name=TASK_NAME)
def replay_provider_writes_periodic() -> dict[str, int]:
    result = replay_all()
    if result["replayed"] or result["pending"] or result["failed"]:
        logger.info("replay of provider writes: %s", result)
    return result


@db_task(retries=1, retry_delay=30)
def replay_provider_writes_task() -> dict[str, int]:
    result = replay_all()
    logger.info("replay of provider writes (resumed): %s", result)
    return result


_resumed = threading.Lock()
_resume_done = False


@on_startup()
def resume_pending_replays() -> bool:
    """When a consumer starts, queue a replay if provider writes wait in the database: writes a
    stopped process left behind reach their provider as soon as it answers. Runs once per process
    (each worker thread calls the startup hooks); returns whether it queued the replay (never raises:
    a queue still down is logged, and the periodic task replays them anyway)."""
    global _resume_done
    with _resumed:
        if _resume_done:
            return False
        _resume_done = True
    pending = PendingProviderWrite.objects.count()
    if not pending:
        return False
    logger.info("resuming the replay of %s provider writes left pending", pending)
    return hand_off(lambda: replay_provider_writes_task(), what=REPLAY)


def forget_resume() -> None:
    """Let :func:`resume_pending_replays` run again in this process (tests)."""
    global _resume_done
    with _resumed:
        _resume_done = False
