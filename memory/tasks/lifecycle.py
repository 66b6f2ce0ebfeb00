"""Huey periodic task: the nightly pruning of the audit log and the injection ledger, and
summarisation (when ``autoSummarize`` is on).

The audit events older than ``MEMORY_AUDIT_RETENTION_DAYS`` and the injection ledger entries older
than ``MEMORY_LEDGER_RETENTION_DAYS`` (all of them when it is 0: no ledger) are deleted at the end of
each run, whether or not summarisation is on (a locked database makes Huey retry the whole run, which
is idempotent).

Runs :func:`memory.services.summarization.summarize_older_than` for each API
key separately, with ``retentionDays`` as the age. Idempotent: each key is
one transaction, and a run (or a retry) only finds what is still old and not
yet summarised. A locked database is transient: the task fails and Huey
retries it with backoff (60 s, 120 s, 240 s); any other error on one key is
logged and the other keys still run.
"""

from __future__ import annotations

import logging

from django.conf import settings as django_settings
from django.db import OperationalError
from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from memory.conf import get_memory_settings
from memory.services.audit import prune_audit_events, task_actor
from memory.services.ledger import ledger_prune
from memory.services.summarization import summarizable_owners, summarize_older_than

logger = logging.getLogger("memory.tasks")

# Every day at 03:30 (server time), when chat traffic is lowest.
SCHEDULE = crontab(minute="30", hour="3")
TASK_NAME = "memory.summarize_memories"


def is_transient(exc: BaseException) -> bool:
    """SQLite busy/locked errors clear up by themselves; retry those."""
    text = str(exc).lower()
    return isinstance(exc, OperationalError) and ("locked" in text or "busy" in text)


@db_periodic_task(SCHEDULE, retries=3, retry_delay=60, retry_backoff=2, name=TASK_NAME)
def summarize_memories_periodic() -> dict:
    settings = get_memory_settings()
    if not settings.autoSummarize:
        logger.info("summarize skipped: autoSummarize is off")
        _prune()
        return {"skipped": True}
    days = settings.retentionDays
    owners = list(summarizable_owners())
    logger.info("summarize start: %s API keys, memories older than %s days", len(owners), days)
    counts = {"owners": len(owners), "summaries": 0, "summarized": 0, "failed": 0}
    for owner in owners:
        try:
            result = summarize_older_than(owner=owner, days=days, actor=task_actor(TASK_NAME))
        except Exception as exc:
            if is_transient(exc):
                logger.warning("summarize interrupted at %s (%s); Huey will retry", owner.pk, exc)
                raise
            counts["failed"] += 1
            logger.exception("summarize failed for %s", owner.pk)
            continue
        counts["summarized"] += result.deleted_count
        counts["summaries"] += result.summary is not None
    logger.info(
        "summarize end: %(summarized)s memories into %(summaries)s summaries, %(failed)s keys failed", counts
    )
    _prune()
    return counts


def _prune() -> None:
    prune_audit_events(days=django_settings.MEMORY_AUDIT_RETENTION_DAYS)
    ledger_prune(django_settings.MEMORY_LEDGER_RETENTION_DAYS)
