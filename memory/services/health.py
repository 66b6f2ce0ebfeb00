"""The memory health check: the real write → search → read → delete pipeline, on a private owner.

The original's check only wrote and listed a row, so it stayed green while
vectorisation was broken. Here each stage is timed and reported, the
vector stage runs whenever an embedding source and a vector store are
configured (and turns the check red when they fail), and the probe memory
is deleted whatever happens.

The probe owner is an ``ApiKey`` with a fixed id
(:data:`memory.models.HEALTH_PROBE_ID`), revoked from birth so its secret,
which nobody knows anyway, authenticates nowhere. ``ApiKey.objects`` hides it
from every owner list and lookup; this module alone reaches it, through
``ApiKey.all_objects``.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings as django_settings
from django.utils import timezone

from memory.conf import get_memory_settings
from memory.dialect import error_message
from memory.models import HEALTH_PROBE_ID, ApiKey, Memory, MemoryType, hash_secret
from memory.retrieval.fts import fts_search
from memory.services.indexing import index_memories, vector_context
from memory.services.memories import MemoryInput, memory_create
from memory.services.retention import delete_memories
from memory.visibility import Visibility

logger = logging.getLogger("memory.health")

PROBE_OWNER_NAME = "__health_probe__"
PROBE_KEY_PREFIX = "__health_probe__:"
STALE_PROBE_AGE = timedelta(minutes=10)
STAGES = ("write", "fts", "vector", "read", "delete")


class StageSkipped(Exception):
    """Raised by a stage that has nothing to check (the reason is reported)."""


def probe_owner() -> ApiKey:
    """The probe owner, created on first use (revoked, so it can never authenticate)."""
    owner, _ = ApiKey.all_objects.get_or_create(
        pk=HEALTH_PROBE_ID,
        defaults={
            "name": PROBE_OWNER_NAME,
            "prefix": "probe",
            "key_hash": hash_secret(secrets.token_urlsafe(32)),
            "revoked_at": timezone.now(),
        },
    )
    return owner


class _Probe:
    """State shared by the stages of one run."""

    def __init__(self, owner: ApiKey) -> None:
        self.owner = owner
        self.token = "probe" + secrets.token_hex(8)
        self.key = PROBE_KEY_PREFIX + self.token
        self.content = f"OmniRoute memory health check {self.token}."
        self.memory: Memory | None = None

    # -- stages: return None when fine, raise on failure, StageSkipped when not applicable --------

    def write(self) -> None:
        self.memory, _ = memory_create(
            MemoryInput(owner=self.owner, key=self.key, content=self.content, type=MemoryType.FACTUAL)
        )

    def fts(self) -> None:
        memory = self._need_memory()
        hits = fts_search(query=self.token, owner_ids=[self.owner.pk.hex], limit=5, now=timezone.now())
        if not any(hit.seq == memory.seq for hit in hits):
            raise RuntimeError("the probe memory was not found by full-text search")

    def vector(self) -> None:
        memory = self._need_memory()
        settings = get_memory_settings()
        ctx = vector_context(settings)
        if ctx.source is None:
            if settings.embeddingSource == "auto":
                raise StageSkipped(ctx.reason or "no embedding source available")
            raise RuntimeError(
                f"embedding source {settings.embeddingSource!r} is selected but unavailable: {ctx.reason}"
            )
        if ctx.store is None:
            if django_settings.VECTOR_STORE_DISABLE_VEC and settings.vectorStore != "qdrant":
                raise StageSkipped(ctx.reason or "vector store disabled")
            raise RuntimeError(
                f"an embedding source is configured but no vector store is usable: {ctx.reason}"
            )
        if index_memories([memory], ctx) != 1:
            raise RuntimeError("the probe memory could not be indexed")
        query = ctx.source.embed_one(self.content)
        hits = ctx.store.search(vector=query, k=3, visibility=Visibility(owner_ids=[self.owner.pk]))
        if not any(hit.seq == memory.seq for hit in hits):
            raise RuntimeError(f"the probe memory was not found by vector search ({ctx.store_name})")

    def read(self) -> None:
        memory = self._need_memory()
        row = Memory.objects.filter(seq=memory.seq).values_list("content", flat=True).first()
        if row != self.content:
            raise RuntimeError("the probe memory did not read back as written")

    def delete(self) -> None:
        self.cleanup()
        if self.memory is not None and Memory.objects.filter(seq=self.memory.seq).exists():
            raise RuntimeError("the probe memory is still there after deletion")

    def cleanup(self) -> None:
        """Remove this run's probe and any left by runs that died half-way."""
        stale = Memory.objects.filter(owner=self.owner, created_at__lt=timezone.now() - STALE_PROBE_AGE)
        delete_memories(Memory.objects.filter(owner=self.owner, key=self.key) | stale)

    def _need_memory(self) -> Memory:
        if self.memory is None:
            raise StageSkipped("the write stage failed")
        return self.memory


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


def run_health_check() -> dict:
    """Run every stage and report ``{working, latencyMs, stages: {name: {...}}, error?}``.

    Each stage reports ``{ok, latencyMs}`` plus ``error`` when it failed, or
    ``skipped: true`` and ``reason`` when it had nothing to check (the vector
    stage without an embedding source). ``working`` is true when no stage
    failed. The probe memory is deleted even when a stage fails or raises.
    """
    started = time.perf_counter()
    report: dict = {"working": False, "latencyMs": 0.0, "stages": {}}
    probe: _Probe | None = None
    try:
        probe = _Probe(probe_owner())
        for name in STAGES:
            report["stages"][name] = _run_stage(getattr(probe, name))
    except Exception as exc:  # the probe owner itself could not be loaded
        logger.exception("health check aborted")
        report["error"] = f"setup: {exc}"
    finally:
        if probe is not None:
            try:
                probe.cleanup()
            except Exception:
                logger.exception("health check could not delete its probe memory")
    failed = [(name, stage) for name, stage in report["stages"].items() if not stage["ok"]]
    if failed and "error" not in report:
        name, stage = failed[0]
        report["error"] = f"{name}: {stage['error']}"
    report["working"] = "error" not in report and len(report["stages"]) == len(STAGES)
    report["latencyMs"] = _ms(started)
    if not report["working"]:
        logger.warning("memory health check failed: %s", report.get("error"))
    return report


def _run_stage(stage: Callable[[], None]) -> dict:
    started = time.perf_counter()
    try:
        stage()
    except StageSkipped as skip:
        return {"ok": True, "skipped": True, "reason": str(skip), "latencyMs": _ms(started)}
    except Exception as exc:
        logger.info("health stage %s failed: %r", stage.__name__, exc)
        return {"ok": False, "latencyMs": _ms(started), "error": error_message(exc) or type(exc).__name__}
    return {"ok": True, "latencyMs": _ms(started)}
