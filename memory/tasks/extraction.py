"""Huey task: learn facts from a finished chat exchange (thin wrapper over the extraction service).

When the exchange's answer carried memory, the task gets its injection id and records in the
injection ledger what it learned, or the error that ended it once the retries are spent
(:func:`memory.services.ledger.ledger_mark_extraction`)."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from huey.contrib.djhuey import db_task

from memory.extraction import MAX_EXTRACTION_TEXT_LENGTH
from memory.services.extraction import extraction_run
from memory.services.ledger import ledger_mark_extraction
from memory.tasks.handoff import hand_off

logger = logging.getLogger("memory.extraction")


@db_task(retries=2, retry_delay=1, context=True)
def extract_from_exchange(
    owner_id: str,
    session_id: str,
    user_text: str,
    assistant_text: str,
    injection_id: str | None = None,
    task: Any = None,
) -> int:
    """Run :func:`memory.services.extraction.extraction_run`; return how many memories were written.

    Retried (twice, 1 s apart) only when the service lets a transient error through: the database
    busy, or the key's memory provider and all its fallbacks unavailable (``BackendUnavailable``). A
    retry rewrites the same upserts, so it duplicates nothing; when the retries are spent, Huey logs
    the error with the task's id (the exchange is then not learned from). With ``injection_id``, the
    ledger entry records the ids written, or (on the last attempt only) the error. ``task`` is Huey's
    (``context=True``): how many retries are left.
    """
    try:
        stored = extraction_run(
            owner_id=owner_id, session_id=session_id, user_text=user_text, assistant_text=assistant_text
        )
    except Exception as exc:
        if injection_id and (task is None or not task.retries):
            ledger_mark_extraction(injection_id, learned=[], error=f"{type(exc).__name__}: {exc}"[:500])
        raise
    if injection_id:
        ledger_mark_extraction(injection_id, learned=[str(memory.uuid) for memory in stored])
    return len(stored)


def worth_learning(user_text: str, assistant_text: str) -> bool:
    """Whether an exchange has any text extraction could read (blank exchanges are not enqueued)."""
    return bool((user_text or "").strip() or (assistant_text or "").strip())


def enqueue_extraction(
    *, owner_id: str, session_id: str, user_text: str, assistant_text: str, injection_id: str | None = None
) -> None:
    """Enqueue :func:`extract_from_exchange` once the current transaction commits (at once in autocommit).

    The texts are cut to the tail extraction reads, so the queue never carries more. Nothing is
    enqueued when both are blank. Never raises: a queue failure is logged (and counted in the engine
    status's ``queue`` line), the chat is not affected; that exchange is not learned from.
    """
    user_text = (user_text or "")[-MAX_EXTRACTION_TEXT_LENGTH:]
    assistant_text = (assistant_text or "")[-MAX_EXTRACTION_TEXT_LENGTH:]
    if not worth_learning(user_text, assistant_text):
        return

    def enqueue() -> None:
        queued = hand_off(
            lambda: extract_from_exchange(str(owner_id), session_id, user_text, assistant_text, injection_id),
            what="extraction",
        )
        if not queued:
            logger.error(
                "memory.extraction.enqueue_failed",
                extra={"owner_id": str(owner_id), "session_id": session_id},
            )

    try:
        transaction.on_commit(enqueue)
    except Exception:
        logger.exception("memory.extraction.enqueue_failed", extra={"owner_id": str(owner_id)})
