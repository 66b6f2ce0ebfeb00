"""Learning from a chat exchange: extract facts from both sides and store them under the caller's key.

Runs in the Huey task :func:`memory.tasks.extraction.extract_from_exchange`, enqueued by the gateway
after the response is complete; never on the request path.

Differences from the original, deliberate:

* the owner must be an existing, unrevoked key (the original stored facts for any id it was given);
* a fact found in both the user's message and the assistant's answer is stored once, from the user's
  side (the original stored it twice, the answer's copy overwriting the user's ``source``);
* the facts of an exchange are written in one transaction, each in its own savepoint: a failing one is
  logged with its context and skipped, except a transient database error (``OperationalError``: the database is locked or busy), which is re-raised so
  the task is retried — the writes are upserts on ``(owner, key)``, so a retry cannot duplicate anything.

Every write goes through :mod:`memory.store`, so a key whose memories live with a provider learns into
that provider (never into this database's rows), and the facts it already knows are read from there
(:func:`memory.store.all_records`). There is no transaction across a provider's writes: each fact is
its own upsert. A provider that cannot take a write (``BackendUnavailable``: it and every fallback are
down) is transient too: logged and re-raised, so the task queue retries the exchange. With a fallback
configured, the manager keeps the write there and replays it to the provider when it is back.

The extraction itself (rules, polarity, what is not a statement of the user's fact, 64 KiB tail) is
:func:`memory.extraction.extract_facts`.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import ValidationError
from django.db import OperationalError, transaction
from django.utils import timezone

from memory import store
from memory.backends.base import BackendUnavailable
from memory.backends.selection import manager_for
from memory.chatbody import assistant_text, last_user_text
from memory.conf import get_memory_settings
from memory.extraction import MAX_EXTRACTION_TEXT_LENGTH, Fact, extract_facts
from memory.models import ApiKey, Memory
from memory.services.memories import MemoryInput

__all__ = ["assistant_text_from_response", "extraction_run", "user_text_from_request"]

logger = logging.getLogger("memory.extraction")


def _tail(text: str) -> str:
    # Characters, not UTF-16 units: never shorter than the 64 KiB tail extract_facts reads.
    return text[-MAX_EXTRACTION_TEXT_LENGTH:]


def user_text_from_request(body: Any) -> str:
    """The text of the last user message of a chat request (``memory.chatbody``), its parts joined by
    a line break, capped to the 64 KiB tail."""
    return _tail(last_user_text(body, joiner="\n"))


def assistant_text_from_response(data: Any) -> str:
    """The assistant's text in a non-streaming answer (``memory.chatbody``), capped to the 64 KiB tail."""
    return _tail(assistant_text(data))


def _facts(user_text: str, assistant_text: str) -> list[Fact]:
    facts = extract_facts(user_text, source="user_message")
    # An assistant saying "I prefer …" speaks of itself, not of the user:
    # operators can turn this source off; the metadata always says where a fact came from.
    if not get_memory_settings().extractFromAssistant:
        return facts
    seen = {fact.key for fact in facts}
    facts.extend(f for f in extract_facts(assistant_text, source="llm_response") if f.key not in seen)
    return facts


MAX_SESSIONS_RECORDED = 50


def _sessions_seen(first: str, metadata: object, session_id: str) -> list[str]:
    """The sessions a fact was seen in, by when it was last seen there, the latest last (at most
    ``MAX_SESSIONS_RECORDED``)."""
    known = metadata.get("sessions") if isinstance(metadata, dict) else None
    sessions = [s for s in known if isinstance(s, str)] if isinstance(known, list) else [first]
    sessions = [s for s in sessions if s != session_id] + [session_id]
    return [s for s in sessions if s][-MAX_SESSIONS_RECORDED:]


def extraction_run(*, owner_id: str, session_id: str, user_text: str, assistant_text: str) -> list[Memory]:
    """Extract facts from ``user_text`` (source ``user_message``) and ``assistant_text`` (source
    ``llm_response``) and upsert each as a memory of ``owner_id`` in ``session_id``.

    Returns the memories written (created or updated), in fact order: rows, or a provider's records as
    unsaved ``Memory`` objects. An unknown or revoked owner gives ``[]``. Never raises, except
    ``OperationalError`` and ``BackendUnavailable`` (transient: the caller may retry, see the module
    docstring).
    """
    facts = _facts(user_text or "", assistant_text or "")
    if not facts:
        return []
    context = {"owner_id": owner_id, "session_id": session_id}
    try:
        owner = ApiKey.objects.filter(pk=owner_id, revoked_at__isnull=True).first()
    except (ValidationError, ValueError):
        owner = None
    if owner is None:
        logger.info("memory.extraction.skipped", extra={**context, "reason": "unknown_or_revoked_owner"})
        return []

    keys = [fact.key for fact in facts]
    known: dict[str | None, tuple[str, object]]  # the keys the owner already has: session, metadata
    manager = manager_for(owner)
    if manager is not None:
        try:
            records = store.all_records(manager, owner.pk)
        except BackendUnavailable:
            logger.warning("memory.extraction.transient_failure", extra=context, exc_info=True)
            raise
        known = {r.key: (r.session_id, r.metadata) for r in records if r.key in keys}
        stored = _write_facts(owner, facts, known, session_id, context)
    else:
        # One transaction for the exchange (one commit instead of one per fact); each fact is its own
        # savepoint inside memory_create, so a failing one is rolled back alone.
        with transaction.atomic():
            known = {
                key: (session, metadata)
                for key, session, metadata in Memory.objects.filter(owner=owner, key__in=keys).values_list(
                    "key", "session_id", "metadata"
                )
            }
            stored = _write_facts(owner, facts, known, session_id, context)
    logger.info("memory.extraction.done", extra={**context, "facts": len(facts), "stored": len(stored)})
    return stored


def _write_facts(
    owner: ApiKey,
    facts: list[Fact],
    seen_before: dict[str | None, tuple[str, object]],
    session_id: str,
    context: dict[str, str],
) -> list[Memory]:
    """Upsert each fact through :mod:`memory.store`; ``seen_before`` maps the keys the owner already
    has to their session and metadata. Transient failures are re-raised (see the module docstring)."""
    now = timezone.now()
    stored: list[Memory] = []
    for fact in facts:
        session, metadata = session_id or "", fact.metadata(now)
        if fact.key in seen_before:
            # Seen again (the original's upsert moved the row into the newer session): the fact stays
            # in the session it was learned in, and every session it was seen in is recorded.
            session, known = seen_before[fact.key]
            metadata["sessions"] = _sessions_seen(session, known, session_id or "")
        item = MemoryInput(
            owner=owner,
            content=fact.content,
            key=fact.key,
            type=fact.type,
            session_id=session,
            metadata=metadata,
        )
        try:
            memory, _ = store.memory_create(item)
        except (OperationalError, BackendUnavailable):
            logger.warning(
                "memory.extraction.transient_failure",
                extra={**context, "key": fact.key, "source": fact.source},
                exc_info=True,
            )
            raise
        except Exception:
            logger.exception(
                "memory.extraction.failed", extra={**context, "key": fact.key, "source": fact.source}
            )
            continue
        stored.append(memory)
    return stored
