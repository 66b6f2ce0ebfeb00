"""Huey task: learn facts from a finished chat exchange (thin wrapper over the extraction service)."""

from __future__ import annotations

import logging

from django.db import transaction
from huey.contrib.djhuey import db_task

from memory.extraction import MAX_EXTRACTION_TEXT_LENGTH
from memory.services.extraction import extraction_run
from memory.tasks.handoff import hand_off

logger = logging.getLogger("memory.extraction")


@db_task(retries=2, retry_delay=1)
def extract_from_exchange(owner_id: str, session_id: str, user_text: str, assistant_text: str) -> int:
    """Run :func:`memory.services.extraction.extraction_run`; return how many memories were written.

    Retried (twice, 1 s apart) only when the service lets a transient error through: the database
    busy, or the key's memory provider and all its fallbacks unavailable (``BackendUnavailable``). A
    retry rewrites the same upserts, so it duplicates nothing; when the retries are spent, Huey logs
    the error with the task's id (the exchange is then not learned from).
    """
    stored = extraction_run(
        owner_id=owner_id, session_id=session_id, user_text=user_text, assistant_text=assistant_text
    )
    return len(stored)


def enqueue_extraction(*, owner_id: str, session_id: str, user_text: str, assistant_text: str) -> None:
    """Enqueue :func:`extract_from_exchange` once the current transaction commits (at once in autocommit).

    The texts are cut to the tail extraction reads, so the queue never carries more. Nothing is
    enqueued when both are blank. Never raises: a queue failure is logged (and counted in the engine
    status's ``queue`` line), the chat is not affected; that exchange is not learned from.
    """
    user_text = (user_text or "")[-MAX_EXTRACTION_TEXT_LENGTH:]
    assistant_text = (assistant_text or "")[-MAX_EXTRACTION_TEXT_LENGTH:]
    if not user_text.strip() and not assistant_text.strip():
        return

    def enqueue() -> None:
        queued = hand_off(
            lambda: extract_from_exchange(str(owner_id), session_id, user_text, assistant_text),
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
