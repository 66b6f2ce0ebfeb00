"""Liveness and readiness of one serving process (``/healthz``, ``/readyz``): cheap, unauthenticated, and
saying nothing an anonymous caller should not learn (no addresses, no exception text, no counts).

* **Live** (:func:`liveness_problem`): the database answers and every migration is applied.
* **Ready** (:func:`readiness`): live, the task queue answers when it is Redis (``REDIS_URL``; the
  SQLite queue is a local file the same checks cover), and the embedding model the settings choose is
  loadable: a local model (transformers, static) selected explicitly must be built. ``auto`` without any
  model is a keyword-only instance by design, and a remote source is not probed (readiness must not
  depend on a third party's uptime).

Each process answers for itself, with its pid, so a load balancer (or a test) sees which worker spoke.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memory.conf import get_memory_settings
from memory.embeddings.runtime import resolve
from memory.tasks.handoff import queue_status

logger = logging.getLogger("memory.readiness")

# What a load balancer is told to wait before it asks a process that is not ready again (seconds).
RETRY_AFTER_SECONDS = 5
_LOCAL_SOURCES = ("transformers", "static")

_migrations_applied = False


def pending_migrations() -> bool:
    """Whether migrations are unapplied. Once all are applied the answer is kept for the process
    (a deployment with new migrations restarts it); loading the graph costs tens of milliseconds."""
    global _migrations_applied
    if _migrations_applied:
        return False
    executor = MigrationExecutor(connection)
    pending = bool(executor.migration_plan(executor.loader.graph.leaf_nodes()))
    _migrations_applied = not pending
    return pending


def liveness_problem(probe: str = "healthz") -> str | None:
    """Why this process cannot serve at all (None when it can): the database, then the migrations.
    Failures are logged with their traceback, prefixed by ``probe``; the reason returned is a fixed
    phrase."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:
        logger.exception("%s: database unreachable", probe)
        return "database unreachable"
    try:
        pending = pending_migrations()
    except Exception:
        logger.exception("%s: migration state unknown", probe)
        return "migration state unknown"
    return "migrations pending" if pending else None


@dataclass(frozen=True)
class Readiness:
    """The answer of :func:`readiness`: each check ``ok`` or a fixed phrase, and this process's id."""

    checks: dict[str, str]
    pid: int = field(default_factory=os.getpid)

    @property
    def ready(self) -> bool:
        return all(value == "ok" for value in self.checks.values())

    @property
    def problems(self) -> list[tuple[str, str]]:
        return [(name, value) for name, value in self.checks.items() if value != "ok"]


def _queue_problem() -> str | None:
    if not settings.REDIS_URL:
        return None
    status = queue_status()  # a probe of its own with a 1 s timeout
    return None if status["reachable"] else "queue unreachable"


def _embeddings_problem() -> str | None:
    current = get_memory_settings()
    if current.embeddingSource not in _LOCAL_SOURCES:
        return None
    return None if resolve(current).available else "embedding model not built"


def readiness() -> Readiness:
    """Whether this process should be sent traffic (see the module docstring); later checks are not
    run once the database fails (they would all read it)."""
    live = liveness_problem("readyz")
    if live is not None:
        return Readiness({"database": live})
    checks = {"database": "ok"}
    for name, check in (("queue", _queue_problem), ("embeddings", _embeddings_problem)):
        try:
            problem = check()
        except Exception:
            logger.exception("readiness: the %s check failed", name)
            problem = f"{name} check failed"
        checks[name] = problem or "ok"
    return Readiness(checks)
