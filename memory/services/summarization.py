"""Compaction of an owner's memories: to a token budget, or of those older than N days.

Two behaviours, always for one owner at a time:

* :func:`summarize_to_budget` keeps the newest memories that fit a token
  budget and condenses every other one, in place, to its first three
  sentences;
* :func:`summarize_older_than` replaces the memories older than N days (or N
  hours, or everything up to now) by a single ``semantic`` summary memory that lists them (their ids are kept in
  its metadata) and deletes them, in one transaction.

Nothing here ever merges two owners: with no owner given, callers use
:func:`summarize_owners`, which runs each owner in its own transaction (the
original merged every key's memories into one summary owned by ``""`` and
deleted the originals).

Ages are compared as datetimes, not as text (the original's string comparison
broke on rows written as ``YYYY-MM-DD HH:MM:SS``): see
:func:`memory.services.retention.older_than`.

An owner whose memories live with a provider (``ApiKey.provider``) is compacted
there, through :mod:`memory.store` and its manager: the same selection, texts,
results and audit events, with the records read from the provider. A provider
has no transaction: the summary is written before any original is deleted (a
failure part way leaves memories listed twice, never lost), and runs on one
owner are serialised in this process only (a lock), not across processes.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from memory import store
from memory.backends.base import Filters
from memory.backends.manager import MemoryManager
from memory.backends.native import to_memory
from memory.backends.selection import manager_for
from memory.models import ApiKey, AuditAction, Memory, MemoryType
from memory.retrieval.budget import estimate_tokens
from memory.selectors import live_memories
from memory.services import audit
from memory.services.memories import MemoryInput
from memory.services.retention import delete_rows, older_than
from memory.shapes import iso

logger = logging.getLogger("memory.summarization")

SENTENCE_END = re.compile(r"[.!?]+")
SUMMARY_SENTENCES = 3
# Marks a memory as a summary made here; summaries are never summarised again
# (a summary of summaries would cut each listed line to three sentences).
SUMMARY_IDS_KEY = "summarizedIds"

# A provider has no write transaction to serialise two compactions of one owner: this lock does, in
# this process (see the module docstring).
_PROVIDER_COMPACTION = threading.Lock()


def generate_summary(content: str) -> str:
    """The first three sentences of ``content``, or ``content`` itself when it has at most three.

    Sentences end at runs of ``.``, ``!`` or ``?``; the result ends them all
    with ``.``: ``"Wow! Really? Yes. No."`` gives ``"Wow. Really. Yes."``.
    """
    sentences = [part.strip() for part in SENTENCE_END.split(content)]
    sentences = [part for part in sentences if part]
    if len(sentences) <= SUMMARY_SENTENCES:
        return content
    return ". ".join(sentences[:SUMMARY_SENTENCES]) + "."


def is_summary(memory: Memory) -> bool:
    return isinstance(memory.metadata, dict) and SUMMARY_IDS_KEY in memory.metadata


# -- budget compaction: newest first within the budget, every other memory cut to three sentences ----


def summarize_to_budget(
    *,
    owner: ApiKey,
    session_id: str | None = None,
    max_tokens: int = 4000,
    dry_run: bool = False,
    actor: audit.Actor = audit.SYSTEM,
) -> dict:
    """Condense ``owner``'s memories that do not fit ``max_tokens``, newest kept first.

    Walks the memories newest to oldest keeping each one that still fits the
    running total (no early stop: a later, smaller one can still be kept);
    every other memory is rewritten to :func:`generate_summary` of itself,
    through :func:`memory.store.memory_update` (so it is re-embedded and the Studio hears
    of it). ``summarizedCount`` counts condensed memories even when the text
    was already short enough to stay unchanged. Summaries made by
    :func:`summarize_older_than` are never condensed. Returns
    ``{originalCount, summarizedCount, tokensSaved, dryRun}``. A real run that condensed memories is
    written to the audit log as ``actor``'s. A provider-backed owner's records are read from its
    provider and rewritten there.
    """
    manager = manager_for(owner)
    if manager is None:
        return _native_budget(owner, session_id, max_tokens, dry_run, actor)
    with _PROVIDER_COMPACTION:
        records = store.all_records(manager, owner.pk, Filters(session_id=session_id or None))
        return _condense([to_memory(r) for r in records], owner, session_id, max_tokens, dry_run, actor)


@transaction.atomic
def _native_budget(
    owner: ApiKey, session_id: str | None, max_tokens: int, dry_run: bool, actor: audit.Actor
) -> dict:
    qs = live_memories().filter(owner=owner)
    if session_id:
        qs = qs.filter(session_id=session_id)
    rows = list(qs.select_for_update().order_by(F("created_at").desc(), F("seq").desc()))
    return _condense(rows, owner, session_id, max_tokens, dry_run, actor)


def _condense(
    memories: list[Memory],
    owner: ApiKey,
    session_id: str | None,
    max_tokens: int,
    dry_run: bool,
    actor: audit.Actor,
) -> dict:
    """The budget walk of :func:`summarize_to_budget` over ``memories`` (newest first)."""
    total = summarized = saved = 0
    for memory in memories:
        tokens = estimate_tokens(memory.content)
        if total + tokens <= max_tokens:
            total += tokens
            continue
        if is_summary(memory):
            continue  # already a digest: cutting it to three sentences would drop most of its lines
        summary = generate_summary(memory.content)
        summarized += 1
        saved += tokens - estimate_tokens(summary)
        if summary != memory.content and not dry_run:
            store.memory_update(memory, content=summary)
    if summarized and not dry_run:
        audit.record(
            actor=actor,
            action=AuditAction.MEMORY_COMPACT,
            owner_id=owner.pk,
            count=summarized,
            details={"maxTokens": max_tokens, "sessionId": session_id or None, "tokensSaved": saved},
        )
    logger.info(
        "budget compaction of %s: %s memories, %s condensed, %s tokens saved%s",
        owner.pk,
        len(memories),
        summarized,
        saved,
        " (dry run)" if dry_run else "",
    )
    return {
        "originalCount": len(memories),
        "summarizedCount": summarized,
        "tokensSaved": saved,
        "dryRun": dry_run,
    }


# -- older-than compaction: the memories older than N days become one summary memory ---------------


@dataclass
class OlderThanResult:
    """What :func:`summarize_older_than` found and did for one owner."""

    owner: ApiKey
    older_than_days: int
    older_than_hours: int = 0
    candidates: list[Memory] = field(default_factory=list)
    total_tokens: int = 0
    deleted_count: int = 0
    summary: Memory | None = None
    dry_run: bool = False

    @property
    def summary_id(self) -> str | None:
        return str(self.summary.uuid) if self.summary is not None else None

    @property
    def age(self) -> str:
        """The age the candidates exceed, as the summary's header and the command's lines word it."""
        return age_text(self.older_than_days, self.older_than_hours)

    def cutoff(self, now: datetime) -> datetime:
        """The instant before which a memory is a candidate: ``now`` when both ages are zero."""
        return now - timedelta(days=self.older_than_days, hours=self.older_than_hours)

    def age_details(self) -> dict[str, int]:
        """The age for the summary's metadata and the audit event; hours only when they were given, so
        a run by days reads as it always has."""
        details = {"olderThanDays": self.older_than_days}
        if self.older_than_hours:
            details["olderThanHours"] = self.older_than_hours
        return details


def age_text(days: int, hours: int = 0) -> str:
    """``"30 days"``, ``"6 hours"`` or ``"1 days 6 hours"``: the unit stays plural, as it always read."""
    if not hours:
        return f"{days} days"
    return f"{hours} hours" if not days else f"{days} days {hours} hours"


def summary_text(candidates: list[Memory], age: str) -> str:
    header = f"Summary of {len(candidates)} memories older than {age}:"
    lines = [
        f"[{m.type}] {m.key}: {generate_summary(m.content)}"
        if m.key
        else f"[{m.type}] {generate_summary(m.content)}"
        for m in candidates
    ]
    return "\n".join([header, *lines])


def summarize_older_than(
    *,
    owner: ApiKey,
    days: int,
    hours: int = 0,
    dry_run: bool = False,
    now: datetime | None = None,
    actor: audit.Actor = audit.SYSTEM,
) -> OlderThanResult:
    """Replace ``owner``'s memories created more than ``days`` days and ``hours`` hours ago by one
    summary memory.

    ``hours`` lets an operator try compaction on fresh data; with both at zero the cutoff is ``now``,
    so every memory but earlier summaries is a candidate (the command asks for a confirmation first).

    Candidates are the owner's live memories older than the cutoff, oldest
    first, except earlier summaries. Unless ``dry_run`` (or there is nothing to
    do), one ``semantic`` memory is created whose content lists each candidate
    as ``[type] key: first three sentences`` under an English header, and
    whose metadata holds ``summarizedIds`` (the originals' ids), then every
    candidate is deleted (FTS and vectors with it), and ``actor``'s audit event written.

    Selection, creation and deletion run in one transaction. On SQLite the
    backend opens write transactions with ``BEGIN IMMEDIATE``, so two runs at
    the same time are serialised and the second finds nothing left to do;
    other databases lock the candidate rows (``SELECT … FOR UPDATE``). A
    provider-backed owner is summarised on its provider, in that order but
    without a transaction (see the module docstring).
    """
    now = now or timezone.now()
    result = OlderThanResult(owner=owner, older_than_days=days, older_than_hours=hours, dry_run=dry_run)
    manager = manager_for(owner)
    if manager is not None:
        with _PROVIDER_COMPACTION:
            _summarize_on_provider(manager, result, now)
            if result.summary is not None:
                _audit_summary(result, actor)
    else:
        with transaction.atomic():
            qs = live_memories(now=now).filter(owner=owner).exclude(metadata__has_key=SUMMARY_IDS_KEY)
            qs = older_than(qs, result.cutoff(now)).order_by("created_at", "seq")
            result.candidates = list(qs.select_for_update())
            result.total_tokens = sum(estimate_tokens(m.content) for m in result.candidates)
            if dry_run or not result.candidates:
                return result
            result.summary = _write_summary(result, now)
            result.deleted_count = delete_rows([(m.seq, m.owner_id) for m in result.candidates])
            _audit_summary(result, actor)
    if result.summary is not None:
        logger.info(
            "summarised %s memories (%s tokens) of %s older than %s into %s",
            result.deleted_count,
            result.total_tokens,
            owner.pk,
            result.age,
            result.summary_id,
        )
    return result


def _summarize_on_provider(manager: MemoryManager, result: OlderThanResult, now: datetime) -> None:
    """:func:`summarize_older_than`'s selection, summary and deletions on the owner's provider."""
    owner = result.owner
    cutoff = result.cutoff(now)
    records = [
        r
        for r in store.all_records(manager, owner.pk)
        if r.created_at < cutoff and SUMMARY_IDS_KEY not in r.metadata
    ]
    records.sort(key=lambda r: r.created_at)
    result.candidates = [to_memory(r) for r in records]
    result.total_tokens = sum(estimate_tokens(m.content) for m in result.candidates)
    if result.dry_run or not result.candidates:
        return
    # The summary first: an original is only deleted once what replaces it is stored.
    result.summary = _write_summary(result, now)
    result.deleted_count = sum(manager.delete(owner.pk, m.uuid) for m in result.candidates)


def _write_summary(result: OlderThanResult, now: datetime) -> Memory:
    summary, _ = store.memory_create(
        MemoryInput(
            owner=result.owner,
            type=MemoryType.SEMANTIC,
            # A random suffix: the key must never upsert over an earlier summary.
            key=f"summary_{iso(now)}_{uuid.uuid4().hex[:8]}",
            content=summary_text(result.candidates, result.age),
            metadata={
                "summarizedCount": len(result.candidates),
                **result.age_details(),
                "generatedAt": iso(now),
                "totalTokens": result.total_tokens,
                SUMMARY_IDS_KEY: [str(m.uuid) for m in result.candidates],
            },
        )
    )
    return summary


def _audit_summary(result: OlderThanResult, actor: audit.Actor) -> None:
    audit.record(
        actor=actor,
        action=AuditAction.MEMORY_SUMMARIZE,
        owner_id=result.owner.pk,
        count=result.deleted_count,
        details={**result.age_details(), "summaryId": result.summary_id},
    )


def summarizable_owners() -> QuerySet[ApiKey]:
    """Every owner (``ApiKey.objects`` leaves out the health check's probe), oldest first."""
    return ApiKey.objects.order_by("created_at", "pk")


def summarize_owners(
    *,
    owners: Iterable[ApiKey],
    days: int,
    dry_run: bool = False,
    now: datetime | None = None,
    actor: audit.Actor = audit.SYSTEM,
) -> list[OlderThanResult]:
    """:func:`summarize_older_than` for each owner separately (never merged), in order."""
    now = now or timezone.now()
    return [
        summarize_older_than(owner=owner, days=days, dry_run=dry_run, now=now, actor=actor)
        for owner in owners
    ]


def summarize_all_owners(
    *, days: int, dry_run: bool = False, actor: audit.Actor = audit.SYSTEM
) -> list[OlderThanResult]:
    """Every owner, one at a time, each in its own transaction (never one summary across owners)."""
    return summarize_owners(owners=summarizable_owners(), days=days, dry_run=dry_run, actor=actor)
