"""Huey tasks for Qdrant: removing stale points, and backfilling a new collection.

Both only call :mod:`memory.vectorstores.qdrant`; neither touches a row in SQLite.
"""

import logging

from huey.contrib.djhuey import db_task

from memory.conf import get_memory_settings
from memory.vectorstores import qdrant

logger = logging.getLogger("memory.tasks")


@db_task(retries=1, retry_delay=30)
def qdrant_cleanup_task(retention_days: int | None = None) -> int:
    """Delete the points of gone, expired or out-of-retention memories (memory ``retentionDays``
    unless given). Does nothing when Qdrant is disabled."""
    days = retention_days or get_memory_settings().retentionDays
    try:
        deleted = qdrant.cleanup_expired(days)
    except qdrant.QdrantUnavailable as exc:
        logger.info("qdrant cleanup skipped: %s", exc)
        return 0
    logger.info("qdrant cleanup end: %s points deleted (retention %s days)", deleted, days)
    return deleted


@db_task(retries=1, retry_delay=30)
def qdrant_backfill_task() -> dict:
    """Write every live memory missing from the current collection. Does nothing when Qdrant
    is disabled or unreachable."""
    try:
        result = qdrant.backfill(retention_days=get_memory_settings().retentionDays)
    except qdrant.QdrantUnavailable as exc:
        logger.info("qdrant backfill skipped: %s", exc)
        return {"upserted": 0, "errors": 0, "reason": str(exc)}
    logger.info("qdrant backfill end: %s", result)
    return result
