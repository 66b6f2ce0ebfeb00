"""Huey periodic task: the nightly consolidation of near-duplicate memories, while
``consolidationEnabled`` is on (off by default).

Runs :func:`memory.services.consolidation.consolidate` for each API key separately (one transaction
each; a key served by a provider or sealed is skipped by the service). Idempotent: a second run
finds nothing left to merge. A locked database is transient: the task fails and Huey retries it with
backoff; any other error on one key is logged and the other keys still run.
"""

from __future__ import annotations

import logging

from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from memory.conf import get_memory_settings
from memory.services.audit import task_actor
from memory.services.consolidation import consolidate
from memory.services.summarization import summarizable_owners
from memory.tasks.lifecycle import is_transient

logger = logging.getLogger("memory.tasks")

# Every day at 04:00 (server time): after the 03:30 summarisation, when chat traffic is lowest.
SCHEDULE = crontab(minute="0", hour="4")
TASK_NAME = "memory.consolidate_memories"


@db_periodic_task(SCHEDULE, retries=3, retry_delay=60, retry_backoff=2, name=TASK_NAME)
def consolidate_memories_periodic() -> dict:
    if not get_memory_settings().consolidationEnabled:
        logger.info("consolidation skipped: consolidationEnabled is off")
        return {"skipped": True}
    counts = {"owners": 0, "groups": 0, "merged": 0, "failed": 0}
    for owner in summarizable_owners():
        counts["owners"] += 1
        try:
            plan = consolidate(owner, actor=task_actor(TASK_NAME))
        except Exception as exc:
            if is_transient(exc):
                logger.warning("consolidation interrupted at %s (%s); Huey will retry", owner.pk, exc)
                raise
            counts["failed"] += 1
            logger.exception("consolidation failed for %s", owner.pk)
            continue
        counts["groups"] += len(plan.groups) if plan.run else 0
        counts["merged"] += plan.merged_count if plan.run else 0
    logger.info("consolidation end: %(merged)s memories in %(groups)s groups, %(failed)s keys failed", counts)
    return counts
